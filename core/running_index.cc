#include "core/running_index.h"

#include <algorithm>

namespace hg {

NodeJobs::NodeJobs(std::span<const RunningJob> running, size_t nodes) : start_(nodes + 1, 0) {
  // Count each node's slices, turn the counts into starts, then fill in index order. A job with
  // two slices on one node is listed twice, as it was with a vector per node.
  for (const RunningJob& r : running)
    for (const Slice& s : r.placement) ++start_[static_cast<size_t>(s.node.value()) + 1];
  for (size_t n = 0; n < nodes; ++n) start_[n + 1] += start_[n];
  jobs_.resize(start_[nodes]);
  std::vector<size_t> next(start_.begin(), start_.end() - 1);
  for (size_t i = 0; i < running.size(); ++i)
    for (const Slice& s : running[i].placement)
      jobs_[next[static_cast<size_t>(s.node.value())]++] = i;
}

RunningIndex IndexRunning(const Snapshot& snap) {
  RunningIndex ix;
  ix.stopping.resize(snap.running.size());
  ix.on_node = NodeJobs(snap.running, snap.nodes.size());
  for (size_t i = 0; i < snap.running.size(); ++i) {
    const RunningJob& r = snap.running[i];
    ix.stopping[i] = r.stopping;
    if (r.stopping && r.stop_for.value() != 0) {
      auto& t = ix.waiting[r.stop_for.value()];
      t = std::max(t, r.stop_at);
    }
  }
  return ix;
}

}  // namespace hg
