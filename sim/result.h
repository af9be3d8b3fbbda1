// What one simulation run records; the report (sim/report.h) derives every measure from it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/types.h"

namespace hg::sim {

struct JobRecord {
  JobId id{0};
  std::string job_class;
  int32_t gpus = 0;
  bool funded = false;
  std::string budget;  // its budget's path, as BudgetTotals::path names it; empty when unfunded
  std::vector<Seconds> waits;  // one per start: from submission or requeue to that start
  JobState final_state = JobState::kPending;  // kPending/kRunning if the run ended first
  int attempts = 0;                           // starts
  int resubmissions = 0;  // submitted again after it was killed (SimOptions::resubmit_after)
  // A job that completed: its end minus its submission minus its duration. What it spent not
  // making progress it kept: waits, runs lost to preemption, reloads after a requeue, and the
  // time until its user submitted it again.
  std::optional<Seconds> delay;
};

enum class StopCause {
  kUnfunded,     // unfunded work made room for funded work
  kFairShare,    // a budget further below its share needed the GPUs
  kReservation,  // a reservation for a large job became due
  kOwnBudget,    // a debug job of its own budget needed the GPUs (PolicyConfig::quick_stops_own)
  kDrain,        // the node drained (health or operator)
  kDrainForced,  // an operator deadline forced a protected job off
  kPriority,     // a higher tier preempted it (the `priority` baseline)
  kNodeLost,     // its node was lost
  kMaxRuntime,   // it reached its max_runtime
};
const char* ToString(StopCause c);

struct PreemptionRecord {
  Seconds at{0};
  JobId job{0};
  std::string job_class;
  int32_t gpus = 0;
  bool funded = false;
  StopCause cause = StopCause::kUnfunded;
  double lost_gpu_hours = 0;  // work since the last checkpoint (or the run's start)
  // How long the stopped run had lasted at the stop. A run stopped within a minute of its start
  // did nothing for its user, yet its start ended the job's queue wait.
  Seconds run{0};
  bool contract_violation = false;  // a protected job stopped by the policy before min_runtime
  // A session (a job with a lease) stopped while its user was active: within a lease of the last
  // activity. The cut the lease exists to prevent; counted for every policy and every cause but
  // max_runtime, so baselines, which know no lease, show what they cut.
  bool active_session = false;
  // The leaf budgets (ids in the scenario's tree) of the stopped job and of the job it was
  // stopped for; -1 for unfunded work, or a stop for no job. A stop one way answered soon after
  // by a stop the other way is the ping-pong DESIGN's preemption rule is there to prevent.
  int32_t budget = -1;
  int32_t for_budget = -1;
};

struct DrainRecord {
  std::string node;
  Seconds unhealthy_at{0};
  Seconds empty_at = kNever;  // kNever: still not empty when the run ended
  bool manual = false;        // a protected job had to be force-killed
  bool lost = false;          // the node vanished (no drain possible)
  // Of the jobs on the node when it began to drain, the one the contract let stay longest (its
  // protection, the deadline if sooner, or its max_runtime, plus its grace): what the drain
  // waited for at worst. Empty class: the node held no work.
  std::string holder_class;
  bool holder_restarted = false;  // its run was not its first (a requeue restarts protection)
  Seconds holder_bound{0};        // when that job had to be gone at the latest
};

struct BudgetTotals {
  std::string path;
  int depth = 0;  // 1 = program
  bool leaf = false;
  double owed_gpu_hours = 0;
  double delivered_gpu_hours = 0;
};

struct SeriesPoint {  // one sample per hour of simulated time
  Seconds at{0};
  double capacity = 0;       // GPUs on ready nodes (hourly mean)
  double allocated = 0;      // GPUs allocated (hourly mean)
  double unfunded = 0;       // GPUs allocated to unfunded work (hourly mean)
  int32_t largest_free = 0;  // largest gang (whole free GPUs in one block) at the sample
};

// Where the GPU time owed to funded work but not held by it went (the gap behind entitlement
// delivered: summed over the run it is the leaves' owed minus delivered GPU-hours, except that an
// instant where funded work on draining nodes held more than was owed counts as zero). While
// funded demand reached the ready GPUs, every ready GPU was owed, so the gap is the GPUs that
// unfunded work held or that stood idle; below that, every GPU asked for was owed, so the gap is
// GPUs of funded jobs that waited. GPU-hours, except the two durations.
struct Undelivered {
  double at_capacity_hours = 0;       // time during which funded demand >= ready GPUs
  double below_capacity_hours = 0;    // the rest
  double unfunded_alone = 0;          // at capacity: unfunded work on nodes with no funded work
  double unfunded_beside_funded = 0;  // at capacity: unfunded work beside funded work
  double idle = 0;                    // at capacity: free GPUs of ready nodes
  double waiting = 0;                 // below capacity: GPUs of funded jobs that waited
  double total() const { return unfunded_alone + unfunded_beside_funded + idle + waiting; }
};

// A funded wait split (sim/wait_split.h): waiting time by what the cluster held meanwhile.
struct WaitSplit {
  double short_of_gpus = 0;  // job-seconds (job-hours in SimResult)
  double fragmented = 0;
  double placeable = 0;
  double victims_leaving = 0;
  double total() const { return short_of_gpus + fragmented + placeable + victims_leaving; }
  WaitSplit& operator+=(const WaitSplit& o) {
    short_of_gpus += o.short_of_gpus;
    fragmented += o.fragmented;
    placeable += o.placeable;
    victims_leaving += o.victims_leaving;
    return *this;
  }
  WaitSplit Scaled(double f) const {
    return WaitSplit{short_of_gpus * f, fragmented * f, placeable * f, victims_leaving * f};
  }
};

struct SimResult {
  std::string policy;
  std::string scenario;
  Seconds start{0};
  Seconds end{0};
  double capacity_gpu_hours = 0;
  double allocated_gpu_hours = 0;
  double unfunded_gpu_hours = 0;
  std::vector<JobRecord> jobs;
  std::vector<PreemptionRecord> preemptions;
  std::vector<DrainRecord> drains;
  std::vector<BudgetTotals> budgets;  // depth-first order of the tree
  std::vector<SeriesPoint> series;
  Undelivered undelivered;
  // Funded jobs' waiting time split by what the cluster held meanwhile (sim/wait_split.h), in
  // job-hours, per requested GPU count.
  std::map<int32_t, WaitSplit> funded_wait_by_gpus;
  std::map<std::string, WaitSplit> funded_wait_by_class;  // the same, per job class
  int64_t events = 0;                                     // events processed
  int64_t cycles = 0;                                     // policy cycles run
};

}  // namespace hg::sim
