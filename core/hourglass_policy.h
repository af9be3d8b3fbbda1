// The Hourglass policy: GPU-time budgets, hierarchical fair share over a sliding window, the
// runtime contract, preemption without ping-pong, reservations against fragmentation, and a small
// headroom that keeps debug jobs starting within seconds.
#pragma once

#include "core/policy.h"

namespace hg {

class HourglassPolicy final : public Policy {
 public:
  explicit HourglassPolicy(PolicyConfig config) : config_(std::move(config)) {}
  std::string_view name() const override { return "hourglass"; }
  Decisions Cycle(const Snapshot& snap) const override;

 private:
  PolicyConfig config_;
};

}  // namespace hg
