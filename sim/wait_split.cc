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

void WaitSplitTracker::Add(Gpus gpus, Gpus gpus_per_node, const std::string& job_class) {
  auto [it, inserted] = requests_.try_emplace(Key{gpus.value(), gpus_per_node.value(), job_class});
  Entry& e = it->second;
  if (inserted) {
    e.by_gpus = &by_gpus_[gpus.value()];
    e.by_class = &by_class_[job_class];
  }
  if (e.count++ == 0) stale_ = true;  // a request not classified since the last change
  ++waiting_;
}

WaitSplitTracker::Entry* WaitSplitTracker::Find(Gpus gpus, Gpus gpus_per_node,
                                                const std::string& job_class) {
  auto it = requests_.find(Key{gpus.value(), gpus_per_node.value(), job_class});
  assert(it != requests_.end());
  return it == requests_.end() ? nullptr : &it->second;
}

void WaitSplitTracker::Remove(Gpus gpus, Gpus gpus_per_node, const std::string& job_class) {
  Entry* e = Find(gpus, gpus_per_node, job_class);
  assert(e != nullptr && e->count > e->awaiting);
  if (e == nullptr || e->count == 0) return;
  --e->count;
  --waiting_;
}

void WaitSplitTracker::Await(Gpus gpus, Gpus gpus_per_node, const std::string& job_class,
                             int delta) {
  Entry* e = Find(gpus, gpus_per_node, job_class);
  if (e == nullptr) return;
  e->awaiting += delta;
  assert(e->awaiting >= 0 && e->awaiting <= e->count);
}

void WaitSplitTracker::Reclassify(const RoomIndex& room) {
  for (auto& [key, e] : requests_) {
    if (e.count == 0) continue;
    e.room = room.Classify(ShapeFor(Gpus(key.gpus), Gpus(key.per_node), max_node_gpus_));
  }
  stale_ = false;
}

}  // namespace hg::sim
