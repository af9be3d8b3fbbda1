#include "core/policy.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/fifo_backfill_policy.h"
#include "core/hourglass_policy.h"
#include "core/kueue_quota_policy.h"
#include "core/priority_policy.h"
#include "core/slurm_multifactor_policy.h"

namespace hg {

std::vector<std::string> PolicyNames() {
  return {"hourglass", "priority", "fifo-backfill", "slurm-multifactor", "kueue-quota"};
}

PolicyConfig DeployedConfig() {
  PolicyConfig c;
  c.quick_headroom = 0.015;
  c.quick_headroom_quiet = 2;  // a debug job has 1 or 2 GPUs in lab-month, 1 in Philly
  c.sessions_use_headroom = true;
  c.whole_node_reservation_preempts = true;
  c.take_back_cooldown = Hours(1);
  return c;
}

Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyConfig& config) {
  if (name == "hourglass") return std::make_unique<HourglassPolicy>(config);
  if (name == "priority") return std::make_unique<PriorityPolicy>(config);
  if (name == "fifo-backfill") return std::make_unique<FifoBackfillPolicy>(config);
  if (name == "slurm-multifactor") return std::make_unique<SlurmMultifactorPolicy>(config);
  if (name == "kueue-quota") return std::make_unique<KueueQuotaPolicy>(config);
  std::string known;
  for (const auto& n : PolicyNames()) known += (known.empty() ? "" : ", ") + n;
  return Fail("policy", "unknown policy '" + std::string(name) + "' (known: " + known + ")");
}

namespace {
std::string Dur(Seconds s) {
  if (s.value() % 3600 == 0) return std::to_string(s.value() / 3600) + " h";
  return std::to_string(s.value()) + " s";
}
}  // namespace

NodeSizes::NodeSizes(std::span<const Node> nodes) : nodes_(nodes.size()) {
  std::map<Gpus, int64_t> count;
  for (const Node& n : nodes) {
    largest_ = std::max(largest_, n.gpus);
    total_ += n.gpus.value();
    ++count[n.gpus];
  }
  count_.assign(count.begin(), count.end());
}

int64_t NodeSizes::Slots(Gpus per) const {
  int64_t slots = 0;
  for (const auto& [gpus, n] : count_) slots += n * (gpus.value() / per.value());
  return slots;
}

Result<void> ValidateJob(const JobSpec& job, std::span<const Node> nodes,
                         const PolicyConfig& config) {
  return ValidateJob(job, NodeSizes(nodes), config);
}

Result<void> ValidateJob(const JobSpec& job, const NodeSizes& cluster, const PolicyConfig& config) {
  if (job.gpus.value() <= 0) return Fail("gpus", "must be at least 1");
  if (job.gpus_per_node.value() < 0) return Fail("gpus_per_node", "must not be negative");
  if (job.gpus_per_node.value() > 0 && job.gpus.value() % job.gpus_per_node.value() != 0)
    return Fail("gpus_per_node", "must divide gpus (" + std::to_string(job.gpus.value()) + ")");
  if (job.min_runtime.value() < 0) return Fail("min_runtime", "must not be negative");
  if (job.min_runtime > config.min_runtime_cap)
    return Fail("min_runtime", "exceeds the cap of " + Dur(config.min_runtime_cap) + " (got " +
                                   Dur(job.min_runtime) + ")");
  if (job.max_runtime && job.max_runtime->value() <= 0)
    return Fail("max_runtime", "must be positive");
  if (job.max_runtime && *job.max_runtime < job.min_runtime)
    return Fail("max_runtime", "must not be shorter than min_runtime");
  if (job.lease.value() < 0) return Fail("lease", "must not be negative");
  if (job.lease.value() > 0) {
    if (job.lease > config.lease_cap)
      return Fail("lease",
                  "exceeds the cap of " + Dur(config.lease_cap) + " (got " + Dur(job.lease) + ")");
    if (!job.max_runtime)
      return Fail("max_runtime", "is required with a lease: it ends the session's protection");
    if (*job.max_runtime > config.session_cap)
      return Fail("max_runtime", "exceeds the cap of " + Dur(config.session_cap) +
                                     " for a job with a lease (got " + Dur(*job.max_runtime) + ")");
    if (job.gpus.value() > config.session_max_gpus)
      return Fail("lease", "only jobs of at most " + std::to_string(config.session_max_gpus) +
                               " GPUs may hold one (got " + std::to_string(job.gpus.value()) + ")");
  }
  if (job.grace.value() < 0) return Fail("grace", "must not be negative");
  if (job.grace > config.grace_cap)
    return Fail("grace", "exceeds the cap of " + Dur(config.grace_cap));
  // Could the job ever fit, with every node in service and empty?
  int32_t per = job.gpus_per_node.value();
  const int32_t largest = cluster.largest().value();
  const int64_t total = cluster.total();
  if (per == 0) per = std::min(job.gpus.value(), largest);
  if (per > largest)
    return Fail("gpus_per_node", "no node has " + std::to_string(per) +
                                     " GPUs (largest: " + std::to_string(largest) + ")");
  const int64_t slots = per > 0 ? cluster.Slots(Gpus(per)) : 0;
  if (job.gpus.value() > total || (per > 0 && slots * per < job.gpus.value()))
    return Fail("gpus", "the job can never fit this cluster (" + std::to_string(total) +
                            " GPUs in " + std::to_string(cluster.nodes()) + " nodes)");
  return {};
}

}  // namespace hg
