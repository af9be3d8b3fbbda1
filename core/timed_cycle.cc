#include "core/timed_cycle.h"

#include <algorithm>
#include <cassert>
#include <string>

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

Result<void> CheckTimedLoop(int64_t tick, int64_t period, int64_t max_gap,
                            const LoopSettingNames& names) {
  if (tick <= 0) return Fail(names.tick, "must be positive, got " + std::to_string(tick));
  if (period < 0 || period % tick != 0)
    return Fail(names.period, "must be 0 or a multiple of " + names.tick + " (" +
                                  std::to_string(tick) + "), got " + std::to_string(period));
  if (max_gap < 0)
    return Fail(names.max_gap, "must not be negative, got " + std::to_string(max_gap));
  return {};
}

}  // namespace hg
