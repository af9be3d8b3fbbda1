// Shapes that already failed to place in this cycle, so the rest of a long queue that cannot fit
// is skipped in O(1). Free GPUs only shrink during a cycle, so a failure stays a failure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>

#include "core/cluster_state.h"

namespace hg {

struct FailureCache {
  int32_t single = std::numeric_limits<int32_t>::max();  // smallest failed one-node request
  std::map<int32_t, int32_t> multi;                      // per_node -> fewest failed slices
  bool Known(const Shape& s) const {
    if (s.slices() == 1) return s.per_node >= single;
    auto it = multi.find(s.per_node);
    return it != multi.end() && s.slices() >= it->second;
  }
  void Add(const Shape& s) {
    if (s.slices() == 1) {
      single = std::min(single, s.per_node);
    } else {
      auto [it, inserted] = multi.emplace(s.per_node, s.slices());
      if (!inserted) it->second = std::min(it->second, s.slices());
    }
  }
};

}  // namespace hg
