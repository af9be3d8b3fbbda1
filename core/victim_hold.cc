#include "core/victim_hold.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace hg {

void HoldForVictims(std::span<const RunningJob> running, const std::map<int64_t, Shape>& waiting,
                    ClusterState& cs) {
  if (waiting.empty()) return;
  std::map<int64_t, std::map<int32_t, int64_t>> leaving;  // job id -> node -> GPUs freed there
  for (const RunningJob& r : running) {
    if (!r.stopping || !waiting.count(r.stop_for.value())) continue;
    for (const Slice& sl : r.placement)
      leaving[r.stop_for.value()][sl.node.value()] += sl.gpus.value();
  }
  std::vector<uint8_t> used(cs.size(), 0);  // nodes that hold a slice of the current job
  for (const auto& [id, shape] : waiting) {
    const std::map<int32_t, int64_t>& beside = leaving[id];
    // The victims' nodes, the most freed first (then by node).
    std::vector<std::pair<int64_t, int32_t>> order;
    for (const auto& [node, gpus] : beside) order.emplace_back(-gpus, node);
    std::sort(order.begin(), order.end());
    std::vector<int32_t> sizes(static_cast<size_t>(shape.count), shape.per_node);
    if (shape.rest > 0) sizes.push_back(shape.rest);
    std::vector<int32_t> taken_nodes;
    for (const int32_t size : sizes) {
      int32_t at = -1;
      int64_t hold = size;
      for (const auto& [minus_freed, node] : order) {
        const NodeId n(node);
        if (used[static_cast<size_t>(node)] || !cs.ready(n) || cs.free(n) - minus_freed < size)
          continue;
        at = node;
        hold = std::max<int64_t>(0, size + minus_freed);
        break;
      }
      if (at < 0) {  // best fit among the nodes without a victim of the job
        int32_t best = 0;
        for (size_t k = 0; k < cs.size(); ++k) {
          const NodeId n(static_cast<int32_t>(k));
          const int32_t f = cs.free(n);
          if (used[k] || !cs.ready(n) || f < size || beside.count(n.value())) continue;
          if (at < 0 || f < best) {
            at = n.value();
            best = f;
          }
        }
      }
      if (at < 0) continue;
      used[static_cast<size_t>(at)] = 1;
      taken_nodes.push_back(at);
      const NodeId n(at);
      const auto take = static_cast<int32_t>(std::min<int64_t>(hold, cs.free(n)));
      if (take <= 0) continue;
      const Slice held{n, Gpus(take)};
      cs.Take(std::span<const Slice>(&held, 1));
    }
    for (const int32_t node : taken_nodes) used[static_cast<size_t>(node)] = 0;
  }
}

void HoldForVictims(const Snapshot& snap, const std::map<int64_t, Seconds>& waiting,
                    ClusterState& cs) {
  if (waiting.empty()) return;
  std::map<int64_t, Shape> shapes;
  for (const PendingJob& p : snap.pending_funded)
    if (p.spec && waiting.count(p.spec->id.value()))
      shapes[p.spec->id.value()] = cs.ShapeOf(p.spec->gpus, p.spec->gpus_per_node);
  HoldForVictims(snap.running, shapes, cs);
}

}  // namespace hg
