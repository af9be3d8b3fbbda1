#include "core/running_index.h"

#include <algorithm>

namespace hg {

RunningIndex IndexRunning(const Snapshot& snap) {
  RunningIndex ix;
  ix.stopping.resize(snap.running.size());
  ix.on_node.resize(snap.nodes.size());
  for (size_t i = 0; i < snap.running.size(); ++i) {
    const RunningJob& r = snap.running[i];
    ix.stopping[i] = r.stopping;
    for (const Slice& s : r.placement) ix.on_node[static_cast<size_t>(s.node.value())].push_back(i);
    if (r.stopping && r.stop_for.value() != 0) {
      auto& t = ix.waiting[r.stop_for.value()];
      t = std::max(t, r.stop_at);
    }
  }
  return ix;
}

}  // namespace hg
