// Decisions every policy makes the same way before placing work: jobs past their max_runtime
// end, draining nodes shed their jobs, and empty draining nodes become drained.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/decision.h"
#include "core/policy.h"

namespace hg {

struct HousekeepingOptions {
  // true: a draining node waits for funded jobs' protection to end (the contract); false: the
  // legacy system, where a person clears a sick node at once.
  bool honor_contract = true;
};

// Appends stops and node changes to `out` and marks the stopped jobs in `stopping` (indexed like
// snap.running; it must start as each job's `stopping` flag).
void Housekeeping(const Snapshot& snap, const HousekeepingOptions& opt, std::span<uint8_t> stopping,
                  Decisions& out);

// When job r, on node `draining`, has left it at the latest under Housekeeping's rule (give or
// take a cycle): a job already stopping at its kill time; otherwise unfunded work at once, funded
// work when its contract ends or the node's deadline passes, any run at its max_runtime; then its
// grace. What an operator waiting to repair the node asks, and what the simulator records.
Seconds LeavesDrainBy(const RunningJob& r, const Node& draining, Seconds now);

}  // namespace hg
