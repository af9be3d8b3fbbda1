// The baseline `slurm-multifactor`: Slurm's priority/multifactor plugin with QOS preemption of a
// scavenger tier, as a typical GPU site configures it. A funded job's priority is
//   10000 * fairshare + 1000 * age + 1000 * size
// with fairshare = 2^(-U/S) (the classic formula: U the budget's share of the recent usage, S its
// normalised share), age = min(1, wait / 7 days) and size = GPUs / cluster GPUs. Unfunded jobs
// are the "scavenger" QOS: they come after every funded job, first come first served, and any
// funded job preempts them at once (PreemptMode=REQUEUE). Funded jobs are the "normal" QOS and
// are never preempted (PreemptExemptTime = min_runtime, and there is no funded-on-funded
// preemption at all). The first funded job that neither fits nor can preempt holds one EASY
// backfill reservation, planned from known max_runtimes only. See docs/baselines.md.
#pragma once

#include "core/policy.h"

namespace hg {

// Slurm's weights at a typical GPU site (PriorityWeightFairshare, PriorityWeightAge,
// PriorityWeightJobSize).
inline constexpr double kSlurmWeightFairshare = 10000.0;
inline constexpr double kSlurmWeightAge = 1000.0;
inline constexpr double kSlurmWeightSize = 1000.0;

// The fair-share factor 2^(-U/S): `usage` is the budget's fraction of all recent usage, `share`
// its normalised share. A budget with no share gets 0 (Slurm: a zero-share association).
double SlurmFairShareFactor(double usage, double share);

// The multifactor priority of a funded job pending since `queued_since`. Needs snap.tree and
// snap.delivered; `capacity` is the cluster's GPUs.
double SlurmPriority(const Snapshot& snap, const PendingJob& p, int64_t capacity);

class SlurmMultifactorPolicy final : public Policy {
 public:
  explicit SlurmMultifactorPolicy(PolicyConfig config) : config_(std::move(config)) {}
  std::string_view name() const override { return "slurm-multifactor"; }
  Decisions Cycle(const Snapshot& snap) const override;

 private:
  PolicyConfig config_;  // unused today; kept so every policy is built the same way
};

}  // namespace hg
