// What the cluster held while funded jobs waited: the measure that tells fragmentation apart from
// a full cluster (DESIGN's open problem of the largest jobs delayed by fragmentation).
//
// At every instant a funded job waits, the GPUs it could have at once are the free GPUs of ready
// nodes plus those unfunded work holds (unfunded work is preempted at any time). Its waiting time
// is counted in one of three parts:
// - short: those GPUs are fewer than the job asks for; funded work holds the rest (fair share,
//   protection and grace decide when it gets them);
// - fragmented: there are enough of them, but not on nodes where the job's shape fits (a gang
//   asking 8 GPUs per node finds 3 here and 5 there);
// - placeable: the job's shape fits on them, and the policy kept it waiting anyway (others came
//   first, a reservation or the debug headroom held the GPUs);
// - victims leaving: whatever the room, work was stopped for the job and is in its grace period.
// Policy-independent: every policy's run is split by the same rule, so the parts compare.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "core/cluster_state.h"

namespace hg::sim {

struct WaitSplit {
  double short_of_gpus = 0;  // job-seconds (job-hours in SimResult)
  double fragmented = 0;
  double placeable = 0;
  double victims_leaving = 0;
  double total() const { return short_of_gpus + fragmented + placeable + victims_leaving; }
};

enum class WaitRoom { kShort, kFragmented, kPlaceable };

// The GPUs a funded job could have at once, per ready node, indexed so that a shape is classified
// in O(1).
class RoomIndex {
 public:
  // `avail`: for each ready node, its free GPUs plus those unfunded work holds there.
  explicit RoomIndex(std::span<const int32_t> avail);
  WaitRoom Classify(const Shape& shape) const;

 private:
  std::vector<int32_t> at_least_;  // [k]: nodes with at least k GPUs available; [0] = all nodes
  int64_t total_ = 0;
};

// Counts the funded jobs waiting per request, and adds up their waiting time by WaitRoom.
class WaitSplitTracker {
 public:
  explicit WaitSplitTracker(int32_t max_node_gpus) : max_node_gpus_(max_node_gpus) {}

  void Add(Gpus gpus, Gpus gpus_per_node);
  void Remove(Gpus gpus, Gpus gpus_per_node);
  // A counted job starts (+1) or stops (-1) waiting for victims stopped for it to leave.
  void Await(Gpus gpus, Gpus gpus_per_node, int delta);
  // The cluster changed: the next Accumulate classifies every waiting request anew.
  void Invalidate() { stale_ = true; }
  // Adds `seconds` of waiting for every job counted now. `avail()` returns the argument of
  // RoomIndex; it is asked only after a change.
  template <typename Avail>
  void Accumulate(double seconds, Avail avail) {
    if (seconds <= 0 || waiting_ == 0) return;
    if (stale_) Reclassify(RoomIndex(avail()));
    for (auto& [key, e] : requests_) {
      if (e.count == 0) continue;
      WaitSplit& w = by_gpus_[key.first];
      const double t = seconds * static_cast<double>(e.count - e.awaiting);
      (e.room == WaitRoom::kShort        ? w.short_of_gpus
       : e.room == WaitRoom::kFragmented ? w.fragmented
                                         : w.placeable) += t;
      w.victims_leaving += seconds * static_cast<double>(e.awaiting);
    }
  }
  // Job-seconds per requested GPU count, for every count that ever waited.
  const std::map<int32_t, WaitSplit>& by_gpus() const { return by_gpus_; }

 private:
  struct Entry {
    int64_t count = 0;
    int64_t awaiting = 0;  // of count: waiting for victims to leave
    WaitRoom room = WaitRoom::kShort;
  };
  void Reclassify(const RoomIndex& room);

  int32_t max_node_gpus_;
  std::map<std::pair<int32_t, int32_t>, Entry> requests_;  // (gpus, gpus_per_node)
  std::map<int32_t, WaitSplit> by_gpus_;
  int64_t waiting_ = 0;
  bool stale_ = true;
};

}  // namespace hg::sim
