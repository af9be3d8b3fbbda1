// A vector read in sorted order, sorted only as far as it is read. A policy that ranks its whole
// queue every cycle but stops at the first jobs on a full cluster pays O(n) instead of
// O(n log n): each step sorts the next chunk (partial_sort of the rest), doubling the chunk so a
// full read still costs O(n log n). With a strict total order (ties broken by a unique id) the
// sequence is exactly std::sort's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace hg {

template <typename T, typename Less>
class SortedOnDemand {
 public:
  SortedOnDemand(std::vector<T> items, Less less) : v_(std::move(items)), less_(less) {}
  // The next item in order, nullptr after the last.
  const T* Next() {
    if (next_ == v_.size()) return nullptr;
    if (next_ == sorted_) {
      const size_t end = std::min(v_.size(), sorted_ + chunk_);
      std::partial_sort(v_.begin() + static_cast<std::ptrdiff_t>(sorted_),
                        v_.begin() + static_cast<std::ptrdiff_t>(end), v_.end(), less_);
      sorted_ = end;
      chunk_ *= 2;
    }
    return &v_[next_++];
  }

 private:
  std::vector<T> v_;
  Less less_;
  size_t next_ = 0, sorted_ = 0, chunk_ = 64;
};

}  // namespace hg
