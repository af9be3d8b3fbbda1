// A true sliding-window ledger of GPU-seconds per budget subtree. Time is cut into buckets
// (hourly by default); the oldest bucket is prorated by how much of it is still inside the
// window, so the window slides continuously rather than jumping a bucket at a time. A charge to a
// leaf is added to all its ancestors, so a subtree query is O(1).
#pragma once

#include <vector>

#include "core/budget_tree.h"
#include "core/types.h"

namespace hg {

class UsageLedger {
 public:
  UsageLedger(const BudgetTree& tree, Seconds window = Days(7), Seconds bucket = Hours(1));

  Seconds window() const { return window_; }
  // Adds `rate` GPUs held during [from, to) to `leaf` and its ancestors. Time moves forward to
  // `to`; the part of the interval already outside the window is dropped.
  void Charge(BudgetId leaf, Seconds from, Seconds to, double rate);
  // Moves the window's end to `now` (never backwards).
  void AdvanceTo(Seconds now);
  // GPU-seconds charged to the subtree of `b` within [now - window, now]; `now` is the time the
  // ledger was last advanced to.
  double Usage(BudgetId b) const;
  Seconds now() const { return now_; }

 private:
  double& Slot(size_t node, int64_t bucket) {
    return slots_[node * nslots_ + static_cast<size_t>(bucket % static_cast<int64_t>(nslots_))];
  }
  double SlotValue(size_t node, int64_t bucket) const {
    return slots_[node * nslots_ + static_cast<size_t>(bucket % static_cast<int64_t>(nslots_))];
  }

  std::vector<BudgetId> parent_;
  Seconds window_;
  Seconds bucket_;
  size_t nslots_;
  std::vector<double> slots_;  // node-major ring buffers
  std::vector<double> total_;  // sum of the live slots per node
  int64_t head_ = 0;           // bucket that contains now_
  Seconds now_{0};
};

}  // namespace hg
