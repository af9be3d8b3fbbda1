// The Prometheus text of GET /metrics (docs/api.md "Health and metrics") from plain numbers the
// state gathers under its lock; rendering happens here, apart from the domain.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hg::server {

// Queue waits (submission or requeue to start) of one job class, as a Prometheus histogram:
// counts per bucket of kQueueWaitBuckets (not cumulative; the last one is +Inf), their sum and
// count. DESIGN's queue wait, the simulator's wait_s, measured where the server starts jobs.
inline constexpr double kQueueWaitBuckets[] = {10, 30, 60, 300, 900, 3600, 14400, 43200, 86400};
struct WaitHistogram {
  std::vector<int64_t> counts = std::vector<int64_t>(std::size(kQueueWaitBuckets) + 1, 0);
  double sum = 0;
  int64_t count = 0;
  void Observe(double seconds);
};

// Adds a wait to its class's histogram. Job classes are the users' words: past kMaxWaitClasses of
// them, further classes count as "other", so a new word per job cannot grow the metric without
// bound.
inline constexpr size_t kMaxWaitClasses = 32;
void ObserveQueueWait(std::map<std::string, WaitHistogram>& by_class, const std::string& job_class,
                      double seconds);

struct MetricsInput {
  int64_t queue_funded = 0, queue_unfunded = 0;
  // Pending jobs by why they wait: the reason code the last explaining cycle gave each
  // ("submitted" before its first), so an operator sees fragmentation (wait_shape), reservations
  // (wait_reserved) or fair share (wait_gpus) grow.
  std::map<std::string, int64_t> pending_by_reason;
  int64_t running_funded_gpus = 0, running_unfunded_gpus = 0;
  double capacity_gpus = 0;
  std::vector<double> cycle_seconds;  // the last cycles (up to 1024), any order
  double cycle_seconds_sum = 0;
  int64_t cycle_count = 0;
  // Cycles by what made the loop run them (State::Tick): "change", "wake" (a protection, lease,
  // max_runtime or drain deadline ended) or "timer" (the waiting timer or max_gap).
  std::map<std::string, int64_t> cycles_by_trigger;
  std::map<std::string, int64_t> preemptions;                       // by reason code
  std::map<std::string, WaitHistogram> queue_wait;                  // by job class
  std::vector<std::pair<std::string, double>> owed_gpu_hours;       // by budget path
  std::vector<std::pair<std::string, double>> delivered_gpu_hours;  // by budget path
  std::map<std::string, int64_t> nodes;                             // by state
  int64_t submissions = 0;
  // Jobs the server holds in memory: those still in the system and those ended within
  // --keep-ended-days (the rest are in the store only).
  int64_t jobs_in_memory = 0;
  int64_t activity_reports = 0;  // by POST
  int64_t activity_cpu = 0;      // by an agent's CPU report
};

std::string RenderMetrics(MetricsInput in);

// Quantile q in [0, 1] of `v` (nearest rank); 0 when empty. Sorts `v`.
double Quantile(std::vector<double>& v, double q);

}  // namespace hg::server
