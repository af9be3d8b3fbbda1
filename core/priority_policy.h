// The baseline `priority`: the system Hourglass replaces. Three tiers (0 low .. 2 high); higher
// tiers go first and preempt lower tiers at once, whatever their age; no budgets, no fair share,
// no contract; within a tier, first come first served with backfill of whatever fits. Sick nodes
// are cleared at once, as an on-call engineer would.
#pragma once

#include "core/policy.h"

namespace hg {

class PriorityPolicy final : public Policy {
 public:
  explicit PriorityPolicy(PolicyConfig config) : config_(std::move(config)) {}
  std::string_view name() const override { return "priority"; }
  Decisions Cycle(const Snapshot& snap) const override;

 private:
  PolicyConfig config_;
};

}  // namespace hg
