#include "core/housekeeping.h"

#include <algorithm>

namespace hg {

void Housekeeping(const Snapshot& snap, const HousekeepingOptions& opt, std::span<uint8_t> stopping,
                  Decisions& out) {
  const Seconds now = snap.now;
  std::vector<int> jobs_on(snap.nodes.size(), 0);
  for (size_t i = 0; i < snap.running.size(); ++i) {
    const RunningJob& r = snap.running[i];
    for (const Slice& s : r.placement) ++jobs_on[static_cast<size_t>(s.node.value())];
    if (stopping[i]) continue;
    if (r.spec->max_runtime && now >= r.started + *r.spec->max_runtime) {
      out.stops.push_back(
          StopDecision{r.spec->id, Reason{ReasonCode::kMaxRuntime, {}, {}, 0, 0}, JobId(0), false});
      stopping[i] = true;
      continue;
    }
    // A job on any draining node leaves under the contract.
    const Node* draining = nullptr;
    for (const Slice& s : r.placement) {
      const Node& n = snap.nodes[static_cast<size_t>(s.node.value())];
      if (n.state == NodeState::kDraining) {
        draining = &n;
        break;
      }
    }
    if (!draining) continue;
    // Drains wait for the contract (min_runtime), not a session's lease: a sick node is not
    // held for as long as someone keeps a session busy.
    const bool protected_now = r.spec->funded() && now < r.contract_until();
    if (!protected_now || !opt.honor_contract) {
      const bool violation = protected_now;  // only when the contract is not honoured
      out.stops.push_back(StopDecision{
          r.spec->id,
          Reason{violation ? ReasonCode::kPreemptDrainForced : ReasonCode::kPreemptDrain,
                 {},
                 {},
                 draining->id.value(),
                 0},
          JobId(0), violation});
      stopping[i] = true;
    } else if (draining->drain_deadline && now >= *draining->drain_deadline) {
      // An operator's deadline: a person decided; it counts as a manual intervention.
      out.stops.push_back(StopDecision{
          r.spec->id, Reason{ReasonCode::kPreemptDrainForced, {}, {}, draining->id.value(), 0},
          JobId(0), false});
      stopping[i] = true;
    }
  }
  for (const Node& n : snap.nodes) {
    if (n.state == NodeState::kDraining && jobs_on[static_cast<size_t>(n.id.value())] == 0)
      out.nodes.push_back(NodeDecision{n.id, NodeState::kDrained,
                                       Reason{ReasonCode::kNodeDrained, {}, {}, n.id.value(), 0}});
  }
}

Seconds LeavesDrainBy(const RunningJob& r, const Node& draining, Seconds now) {
  if (r.stopping) return r.stop_at;
  Seconds t = now;
  if (r.spec->funded()) {
    t = std::max(now, r.contract_until());
    if (draining.drain_deadline) t = std::min(t, std::max(now, *draining.drain_deadline));
  }
  if (r.spec->max_runtime) t = std::min(t, std::max(now, r.started + *r.spec->max_runtime));
  return t + r.spec->grace;
}

}  // namespace hg
