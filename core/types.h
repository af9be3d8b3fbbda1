// Vocabulary types of the core. Time is integer seconds: since the simulation start in the
// simulator, since the Unix epoch in the server. The core never reads a clock.
#pragma once

#include <cstdint>
#include <limits>

#include "core/strong.h"

namespace hg {

using Seconds = Strong<struct SecondsTag, int64_t>;  // a time point or a duration
using Gpus = Strong<struct GpusTag, int32_t>;
using JobId = Strong<struct JobIdTag, int64_t>;
using NodeId = Strong<struct NodeIdTag, int32_t>;      // dense index into the cluster
using BudgetId = Strong<struct BudgetIdTag, int32_t>;  // dense index into the budget tree

inline constexpr BudgetId kUnfunded{-1};
inline constexpr BudgetId kRootBudget{0};
inline constexpr Seconds kNever{std::numeric_limits<int64_t>::max() / 4};

constexpr Seconds Minutes(int64_t m) { return Seconds(m * 60); }
constexpr Seconds Hours(int64_t h) { return Seconds(h * 3600); }
constexpr Seconds Days(int64_t d) { return Seconds(d * 86400); }

// GPU-seconds as a double: owed amounts are fractional shares of capacity.
inline double GpuSeconds(Gpus g, Seconds s) {
  return static_cast<double>(g.value()) * static_cast<double>(s.value());
}

}  // namespace hg
