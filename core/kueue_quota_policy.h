// The baseline `kueue-quota`: Kueue's ClusterQueues in one cohort, as a site would configure them
// from the budget shares. Each project (a depth-2 budget; a top-level budget without children is
// its own project) is a ClusterQueue whose nominal quota is floor(capacity x its static
// entitlement). A funded job is admitted when its project's usage stays within nominal quota, or
// by borrowing when the cohort has at least its GPUs of nominal quota unused. Queues are
// StrictFIFO by (queued_since, id); across projects, jobs within nominal quota come first.
// Unfunded work is a lowest-priority queue with no quota: it uses idle GPUs and any funded
// admission preempts it. A job within nominal quota that does not fit reclaims: it preempts
// unfunded jobs and jobs of other projects that borrow, once their min_runtime (the protection a
// site configures) has passed. There is no usage history and no fair sharing. See
// docs/baselines.md.
#pragma once

#include "core/policy.h"

namespace hg {

// The project (ClusterQueue) a budget's jobs are queued in: its depth-2 ancestor, or the budget
// itself when it is at depth 1 or 2.
BudgetId KueueProjectOf(const BudgetTree& tree, BudgetId budget);

// A project's nominal quota: floor(capacity x static entitlement).
int64_t KueueNominalQuota(const BudgetTree& tree, BudgetId project, int64_t capacity);

class KueueQuotaPolicy final : public Policy {
 public:
  explicit KueueQuotaPolicy(PolicyConfig config) : config_(std::move(config)) {}
  std::string_view name() const override { return "kueue-quota"; }
  Decisions Cycle(const Snapshot& snap) const override;

 private:
  PolicyConfig config_;  // unused today; kept so every policy is built the same way
};

}  // namespace hg
