#include "sim/wait_split.h"

#include <algorithm>
#include <cassert>

namespace hg::sim {

RoomIndex::RoomIndex(std::span<const int32_t> avail) {
  int32_t most = 0;
  for (int32_t a : avail) most = std::max(most, a);
  at_least_.assign(static_cast<size_t>(most) + 1, 0);
  for (int32_t a : avail) {
    assert(a >= 0);
    ++at_least_[static_cast<size_t>(std::max(a, 0))];
    total_ += std::max(a, 0);
  }
  // From counts of nodes with exactly k to counts with at least k.
  for (size_t k = at_least_.size() - 1; k-- > 0;) at_least_[k] += at_least_[k + 1];
}

WaitRoom RoomIndex::Classify(const Shape& shape) const {
  const int64_t gpus = int64_t{shape.per_node} * shape.count + shape.rest;
  if (total_ < gpus) return WaitRoom::kShort;
  auto nodes_with = [&](int32_t k) -> int64_t {
    if (k <= 0) return at_least_.empty() ? 0 : at_least_[0];
    return static_cast<size_t>(k) < at_least_.size() ? at_least_[static_cast<size_t>(k)] : 0;
  };
  // A gang's slices go to distinct nodes: `count` nodes with per_node GPUs, and for the rest one
  // more node with at least `rest` (per_node >= rest, so the first nodes also count there).
  bool fits = nodes_with(shape.per_node) >= shape.count;
  if (shape.rest > 0) fits = fits && nodes_with(shape.rest) >= int64_t{shape.count} + 1;
  return fits ? WaitRoom::kPlaceable : WaitRoom::kFragmented;
}

void WaitSplitTracker::Add(Gpus gpus, Gpus gpus_per_node) {
  Entry& e = requests_[{gpus.value(), gpus_per_node.value()}];
  if (e.count++ == 0) stale_ = true;  // a request not classified since the last change
  ++waiting_;
}

void WaitSplitTracker::Remove(Gpus gpus, Gpus gpus_per_node) {
  auto it = requests_.find({gpus.value(), gpus_per_node.value()});
  assert(it != requests_.end() && it->second.count > it->second.awaiting);
  if (it == requests_.end() || it->second.count == 0) return;
  --it->second.count;
  --waiting_;
}

void WaitSplitTracker::Await(Gpus gpus, Gpus gpus_per_node, int delta) {
  auto it = requests_.find({gpus.value(), gpus_per_node.value()});
  assert(it != requests_.end());
  if (it == requests_.end()) return;
  it->second.awaiting += delta;
  assert(it->second.awaiting >= 0 && it->second.awaiting <= it->second.count);
}

void WaitSplitTracker::Reclassify(const RoomIndex& room) {
  for (auto& [key, e] : requests_) {
    if (e.count == 0) continue;
    e.room = room.Classify(ShapeFor(Gpus(key.first), Gpus(key.second), max_node_gpus_));
  }
  stale_ = false;
}

}  // namespace hg::sim
