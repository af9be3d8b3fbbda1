// The baseline `fifo-backfill`: first come, first served with EASY backfill, as Slurm's
// sched/backfill behaves when it holds one reservation. One queue of every pending job, funded or
// not, in submission order; budgets, tiers and user priorities are ignored. The first job that
// does not fit gets a reservation at the earliest time enough GPUs free up, judged by the running
// jobs' max_runtime alone (a job without one never ends as far as the scheduler knows, as with a
// Slurm time limit of INFINITE); later jobs start only on GPUs the reservation does not need, or
// on those GPUs if their own max_runtime ends before it is due. It never preempts: drains wait
// for protection to end, as at a site that drains nodes gracefully. See docs/baselines.md.
#pragma once

#include "core/policy.h"

namespace hg {

class FifoBackfillPolicy final : public Policy {
 public:
  explicit FifoBackfillPolicy(PolicyConfig config) : config_(std::move(config)) {}
  std::string_view name() const override { return "fifo-backfill"; }
  Decisions Cycle(const Snapshot& snap) const override;

 private:
  PolicyConfig config_;  // unused today; kept so every policy is built the same way
};

}  // namespace hg
