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
#include <string>
#include <utility>
#include <vector>

#include "core/cluster_state.h"
#include "sim/result.h"

namespace hg::sim {

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

// Counts the funded jobs waiting per request and class, and adds up their waiting time by
// WaitRoom, per requested GPU count and per class.
class WaitSplitTracker {
 public:
  explicit WaitSplitTracker(int32_t max_node_gpus) : max_node_gpus_(max_node_gpus) {}

  void Add(Gpus gpus, Gpus gpus_per_node, const std::string& job_class);
  void Remove(Gpus gpus, Gpus gpus_per_node, const std::string& job_class);
  // A counted job starts (+1) or stops (-1) waiting for victims stopped for it to leave.
  void Await(Gpus gpus, Gpus gpus_per_node, const std::string& job_class, int delta);
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
      const double t = seconds * static_cast<double>(e.count - e.awaiting);
      const double grace = seconds * static_cast<double>(e.awaiting);
      for (WaitSplit* w : {e.by_gpus, e.by_class}) {
        (e.room == WaitRoom::kShort        ? w->short_of_gpus
         : e.room == WaitRoom::kFragmented ? w->fragmented
                                           : w->placeable) += t;
        w->victims_leaving += grace;
      }
    }
  }
  // Job-seconds per requested GPU count and per class, for every one that ever had a job waiting.
  const std::map<int32_t, WaitSplit>& by_gpus() const { return by_gpus_; }
  const std::map<std::string, WaitSplit>& by_class() const { return by_class_; }

 private:
  struct Key {
    int32_t gpus = 0;
    int32_t per_node = 0;
    std::string job_class;
    friend auto operator<=>(const Key&, const Key&) = default;
  };
  struct Entry {
    int64_t count = 0;
    int64_t awaiting = 0;  // of count: waiting for victims to leave
    WaitRoom room = WaitRoom::kShort;
    WaitSplit* by_gpus = nullptr;  // the totals this request adds to (map nodes do not move)
    WaitSplit* by_class = nullptr;
  };
  void Reclassify(const RoomIndex& room);
  Entry* Find(Gpus gpus, Gpus gpus_per_node, const std::string& job_class);

  int32_t max_node_gpus_;
  std::map<Key, Entry> requests_;
  std::map<int32_t, WaitSplit> by_gpus_;
  std::map<std::string, WaitSplit> by_class_;
  int64_t waiting_ = 0;
  bool stale_ = true;
};

}  // namespace hg::sim
