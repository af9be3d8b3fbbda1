// The simulation report: every measure of DESIGN.md section 2, derived from recorded results
// (sim/result.h) only, so the simulator records facts and this file alone decides how they are
// summarised. Rendered as a fixed-width table for people and as JSON for tools.
//
// Definitions (one place, so the README, the table and the JSON agree):
// - Percentiles use the nearest-rank method: the p-th percentile of n samples is the
//   ceil(p/100 * n)-th smallest (1-based), computed in integers so no rounding can move it. It is
//   always one of the samples, so a "p90 wait of 30 s" means a real job waited 30 s.
// - A queue-wait sample is one start: from submission (or requeue) to that start. A job started
//   three times gives three samples. Jobs that never started give none and are counted apart as
//   `never_started`, so a policy cannot look fast by never starting the jobs it keeps waiting.
// - Entitlement delivered sums min(delivered, owed) over leaf budgets and divides by their total
//   owed: over-delivery to one budget cannot hide under-delivery to another. Per level, the same
//   over the budgets of that depth (1 = programs). A ratio with nothing owed is null.
// - Every PreemptionRecord counts as a preemption, whatever its cause (max_runtime included, so
//   the cause breakdown always adds up to the total).
// - Drain latency covers drains that emptied (empty_at != kNever) and did not lose their node;
//   manual interventions count drains that force-killed a protected job plus lost nodes (a lost
//   node always needs a human).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/result.h"

namespace hg::sim {

// Job size buckets in GPUs: 1, 2-8, 9-64, 65-256, 257+.
inline constexpr std::array<const char*, 5> kSizeBuckets = {"1", "2-8", "9-64", "65-256", "257+"};
// Index into kSizeBuckets for a job of `gpus` GPUs.
size_t SizeBucket(int32_t gpus);

// "1 GPU", "2-8 GPUs", ...: bucket i as the table and the charts name it.
std::string SizeLabel(size_t i);

// The run's funded wait split (SimResult::funded_wait_by_gpus) summed per size bucket.
std::array<WaitSplit, kSizeBuckets.size()> FundedWaitBySize(const SimResult& r);

// Policy names made unique in run order: "a", "a#2", ... (a later run must not overwrite an
// earlier one of the same name). The table, the JSON and the HTML report all use these names.
std::vector<std::string> UniqueNames(const std::vector<SimResult>& runs);

// Nearest-rank percentile of ascending `sorted` samples; nullopt when there are none.
// `percent` is in 1..100.
std::optional<int64_t> Percentile(const std::vector<int64_t>& sorted, int percent);

struct WaitStats {
  std::optional<int64_t> p50, p90, p99;  // seconds; nullopt without samples
  int64_t count = 0;                     // samples (starts)
  int64_t never_started = 0;             // jobs with no start at all
};

struct BudgetMeasure {
  std::string path;
  int depth = 0;
  bool leaf = false;
  double owed_gpu_hours = 0;
  double delivered_gpu_hours = 0;
  std::optional<double> ratio;  // delivered / owed (not capped); nullopt when nothing is owed
  // Queue waits of the jobs charged to this budget or below it, by class: whose users wait, and
  // for how long, where the totals above say only how much each budget got.
  std::map<std::string, WaitStats> wait_by_class;
};

struct DrainMeasures {
  int64_t count = 0;  // every drain record, lost nodes included
  std::optional<int64_t> latency_p50, latency_p90, latency_max;  // seconds
  int64_t still_draining = 0;  // not lost and not empty when the run ended
  int64_t manual_interventions = 0;
  // Drains that ended (not lost, empty before the run's end), by the class of the job the contract
  // let stay longest (DrainRecord::holder_class; "none": the node was empty).
  struct ByHolder {
    int64_t count = 0;
    int64_t restarted = 0;  // whose holder's run was a restart
    std::optional<int64_t> latency_p50, latency_p90;
  };
  std::map<std::string, ByHolder> by_holder;
};

struct JobCounts {
  int64_t submitted = 0;
  int64_t started = 0;  // at least once
  int64_t succeeded = 0;
  int64_t failed = 0;
  int64_t preempted = 0;  // final state: preempted and not requeued
  int64_t cancelled = 0;
  int64_t pending = 0;  // still pending when the run ended
  int64_t running = 0;  // still running when the run ended
  // Submissions again of killed jobs by their users (SimOptions::resubmit_after); a job counts
  // once per resubmission, and its final state is its last attempt's.
  int64_t resubmissions = 0;
};

struct Measures {
  std::string policy;
  std::optional<double> occupancy;              // allocated / capacity
  std::optional<double> entitlement_delivered;  // over leaf budgets
  std::optional<double> unfunded_share;         // unfunded / allocated

  // Keyed by class (see ClassKey); `wait_all` covers every class.
  std::map<std::string, WaitStats> wait_by_class;
  WaitStats wait_all;
  std::array<WaitStats, kSizeBuckets.size()> wait_by_size;
  // Per class, over jobs that completed: JobRecord::delay (count: completed jobs). Unlike the
  // wait, it sees a start that did not last: the lost run, and any resubmission, add to it.
  std::map<std::string, WaitStats> delay_by_class;
  // Funded jobs' waiting job-hours per size bucket, split by what the cluster held meanwhile
  // (sim/wait_split.h): short of GPUs, fragmented, or placeable.
  std::array<WaitSplit, kSizeBuckets.size()> funded_wait_split;
  std::map<std::string, WaitSplit> funded_wait_split_by_class;  // keyed by ClassKey

  int64_t preemptions = 0;
  std::map<std::string, int64_t> preemptions_by_cause;  // every cause, zeros included
  std::map<std::string, int64_t> preemptions_by_class;  // every class seen, zeros included
  double lost_gpu_hours = 0;
  std::map<std::string, double> lost_gpu_hours_by_class;
  // Runs stopped (for any cause but max_runtime) within their first minute, per class, zeros
  // included: their start ended a queue wait, yet their user got nothing from them.
  std::map<std::string, int64_t> stopped_within_minute_by_class;
  int64_t stopped_within_minute = 0;  // the sum over classes
  int64_t contract_violations = 0;
  int64_t active_sessions_stopped = 0;  // sessions stopped within a lease of their user's activity
  // Stops of a funded job of leaf A for a job of leaf B that come less than an hour after a stop
  // of a job of B for a job of A: GPUs taken back, the ping-pong DESIGN's preemption rule
  // forbids.
  int64_t taken_back_within_hour = 0;

  std::map<int, std::optional<double>> entitlement_by_level;  // depth -> delivered fraction
  // Over leaves: 1 - entitlement_delivered = (over_delivered + undelivered.total()) / owed, up to
  // instants where funded work on draining nodes held more than was owed (sim/result.h).
  double owed_gpu_hours = 0;
  double over_delivered_gpu_hours = 0;  // sum of max(0, delivered - owed)
  Undelivered undelivered;
  std::vector<BudgetMeasure> budgets;  // order of SimResult::budgets

  DrainMeasures drains;
  JobCounts jobs;

  double capacity_gpu_hours = 0;
  double allocated_gpu_hours = 0;
  double unfunded_gpu_hours = 0;
  int64_t events = 0;
  int64_t cycles = 0;
};

// The report key of a job class: the label itself, except that an empty label becomes
// "unlabeled" and a class literally named "all" becomes "class:all" so it cannot overwrite the
// overall row.
std::string ClassKey(const std::string& job_class);

Measures Compute(const SimResult& r);

// Queue waits by class of the jobs charged to each budget of r.budgets or below it, indexed like
// r.budgets (BudgetMeasure::wait_by_class; the comparison's per-budget tables).
std::vector<std::map<std::string, WaitStats>> WaitsByBudget(const SimResult& r);

// Policies side by side, one column per run, in the order given.
std::string RenderTable(const std::vector<SimResult>& runs);

// The JSON report. Keys are sorted; doubles are rounded to 4 decimals so the bytes are stable;
// unknown ratios are null. Scenario, start and end come from the first run. Two runs with the
// same policy name get keys "name", "name#2", ...
nlohmann::json ToJson(const std::vector<SimResult>& runs);
// ToJson(runs).dump(2) plus a final newline.
std::string RenderJson(const std::vector<SimResult>& runs);

}  // namespace hg::sim
