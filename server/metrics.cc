#include "server/metrics.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace hg::server {
namespace {

std::string Num(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

// Label values escape backslash, quote and newline (the exposition format's rule).
std::string Label(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

}  // namespace

void WaitHistogram::Observe(double seconds) {
  size_t b = 0;
  while (b < std::size(kQueueWaitBuckets) && seconds > kQueueWaitBuckets[b]) ++b;
  ++counts[b];
  sum += seconds;
  ++count;
}

void ObserveQueueWait(std::map<std::string, WaitHistogram>& by_class, const std::string& job_class,
                      double seconds) {
  auto it = by_class.find(job_class);
  if (it == by_class.end())
    it = by_class.try_emplace(by_class.size() < kMaxWaitClasses ? job_class : "other").first;
  it->second.Observe(seconds);
}

double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string RenderMetrics(MetricsInput in) {
  std::ostringstream o;
  o << "# HELP hourglass_queue_jobs Pending jobs.\n# TYPE hourglass_queue_jobs gauge\n";
  o << "hourglass_queue_jobs{funded=\"true\"} " << in.queue_funded << "\n";
  o << "hourglass_queue_jobs{funded=\"false\"} " << in.queue_unfunded << "\n";
  o << "# HELP hourglass_pending_jobs Pending jobs by why they wait (reason code).\n"
       "# TYPE hourglass_pending_jobs gauge\n";
  for (const auto& [reason, n] : in.pending_by_reason)
    o << "hourglass_pending_jobs{reason=\"" << Label(reason) << "\"} " << n << "\n";
  o << "# HELP hourglass_running_gpus GPUs held by running jobs.\n"
       "# TYPE hourglass_running_gpus gauge\n";
  o << "hourglass_running_gpus{funded=\"true\"} " << in.running_funded_gpus << "\n";
  o << "hourglass_running_gpus{funded=\"false\"} " << in.running_unfunded_gpus << "\n";
  o << "# HELP hourglass_capacity_gpus GPUs on ready nodes.\n"
       "# TYPE hourglass_capacity_gpus gauge\n";
  o << "hourglass_capacity_gpus " << Num(in.capacity_gpus) << "\n";
  o << "# HELP hourglass_cycle_seconds Scheduling cycle latency.\n"
       "# TYPE hourglass_cycle_seconds summary\n";
  for (double q : {0.5, 0.99})
    o << "hourglass_cycle_seconds{quantile=\"" << q << "\"} " << Num(Quantile(in.cycle_seconds, q))
      << "\n";
  o << "hourglass_cycle_seconds_sum " << Num(in.cycle_seconds_sum) << "\n";
  o << "hourglass_cycle_seconds_count " << in.cycle_count << "\n";
  o << "# HELP hourglass_cycles_total Scheduling cycles by what made the loop run them.\n"
       "# TYPE hourglass_cycles_total counter\n";
  for (const char* trigger : {"change", "wake", "timer"}) {
    const auto it = in.cycles_by_trigger.find(trigger);
    o << "hourglass_cycles_total{trigger=\"" << trigger << "\"} "
      << (it == in.cycles_by_trigger.end() ? 0 : it->second) << "\n";
  }
  o << "# HELP hourglass_preemptions_total Jobs stopped by the policy, by reason.\n"
       "# TYPE hourglass_preemptions_total counter\n";
  for (const auto& [reason, n] : in.preemptions)
    o << "hourglass_preemptions_total{reason=\"" << Label(reason) << "\"} " << n << "\n";
  o << "# HELP hourglass_queue_wait_seconds Queue wait of each start since the server started "
       "(submission or requeue to start), by job class.\n"
       "# TYPE hourglass_queue_wait_seconds histogram\n";
  for (const auto& [cls, h] : in.queue_wait) {
    const std::string label = "class=\"" + Label(cls) + "\"";
    int64_t cumulative = 0;
    for (size_t b = 0; b < h.counts.size(); ++b) {
      cumulative += h.counts[b];
      const std::string le = b < std::size(kQueueWaitBuckets) ? Num(kQueueWaitBuckets[b]) : "+Inf";
      o << "hourglass_queue_wait_seconds_bucket{" << label << ",le=\"" << le << "\"} " << cumulative
        << "\n";
    }
    o << "hourglass_queue_wait_seconds_sum{" << label << "} " << Num(h.sum) << "\n";
    o << "hourglass_queue_wait_seconds_count{" << label << "} " << h.count << "\n";
  }
  o << "# HELP hourglass_budget_owed_gpu_hours Owed GPU-hours in the 7-day window.\n"
       "# TYPE hourglass_budget_owed_gpu_hours gauge\n";
  for (const auto& [path, v] : in.owed_gpu_hours)
    o << "hourglass_budget_owed_gpu_hours{budget=\"" << Label(path) << "\"} " << Num(v) << "\n";
  o << "# HELP hourglass_budget_delivered_gpu_hours Delivered GPU-hours in the 7-day window.\n"
       "# TYPE hourglass_budget_delivered_gpu_hours gauge\n";
  for (const auto& [path, v] : in.delivered_gpu_hours)
    o << "hourglass_budget_delivered_gpu_hours{budget=\"" << Label(path) << "\"} " << Num(v)
      << "\n";
  o << "# HELP hourglass_nodes Nodes by state.\n# TYPE hourglass_nodes gauge\n";
  for (const auto& [st, n] : in.nodes) o << "hourglass_nodes{state=\"" << st << "\"} " << n << "\n";
  o << "# HELP hourglass_submissions_total Accepted submissions since the server started.\n"
       "# TYPE hourglass_submissions_total counter\n";
  o << "hourglass_submissions_total " << in.submissions << "\n";
  o << "# HELP hourglass_jobs_in_memory Jobs the server holds in memory: those still in the "
       "system and those that ended within --keep-ended-days.\n"
       "# TYPE hourglass_jobs_in_memory gauge\n";
  o << "hourglass_jobs_in_memory " << in.jobs_in_memory << "\n";
  o << "# HELP hourglass_activity_reports_total Session activity recorded since the server "
       "started, by source: a POST to the job's activity, or an agent's report of the job's CPU "
       "time growing.\n"
       "# TYPE hourglass_activity_reports_total counter\n";
  o << "hourglass_activity_reports_total{source=\"api\"} " << in.activity_reports << "\n";
  o << "hourglass_activity_reports_total{source=\"cpu\"} " << in.activity_cpu << "\n";
  return o.str();
}

}  // namespace hg::server
