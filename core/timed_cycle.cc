#include "core/timed_cycle.h"

#include <algorithm>
#include <cassert>

namespace hg {

std::optional<int64_t> NextTimedCycle(int64_t now, int64_t period, int64_t max_gap, int64_t tick) {
  assert(tick > 0 && period >= 0 && max_gap >= 0);
  std::optional<int64_t> at;
  if (period > 0) at = (now / period + 1) * period;
  if (max_gap > 0) {
    const int64_t gap = (now + max_gap + tick - 1) / tick * tick;
    at = at ? std::min(*at, gap) : gap;
  }
  return at;
}

}  // namespace hg
