// The funded and unfunded pending lists walked as one queue in (queued_since, id) order, for the
// policies that serve both kinds first come, first served. Each list is in that order already
// (Snapshot's promise), so the merge costs O(P) where sorting would cost O(P log P).
#pragma once

#include <cstddef>
#include <span>

#include "core/model.h"

namespace hg {

class MergedQueue {
 public:
  MergedQueue(std::span<const PendingJob> a, std::span<const PendingJob> b) : a_(a), b_(b) {}
  // The next job, skipping holes (entries whose spec is null); nullptr at the end.
  const PendingJob* Next() {
    while (i_ < a_.size() && !a_[i_].spec) ++i_;
    while (k_ < b_.size() && !b_[k_].spec) ++k_;
    if (i_ == a_.size() && k_ == b_.size()) return nullptr;
    if (k_ == b_.size() || (i_ < a_.size() && Before(a_[i_], b_[k_]))) return &a_[i_++];
    return &b_[k_++];
  }

 private:
  static bool Before(const PendingJob& x, const PendingJob& y) {
    if (x.queued_since != y.queued_since) return x.queued_since < y.queued_since;
    return x.spec->id < y.spec->id;
  }
  std::span<const PendingJob> a_, b_;
  size_t i_ = 0, k_ = 0;
};

}  // namespace hg
