// The built-in seeded scenario `lab-month`: the design's reference workload, a contended month of
// an AI lab on 1,024 GPUs (see the comment block at the top of lab_month.cc for its make-up).
#pragma once

#include <cstdint>

#include "core/types.h"
#include "sim/scenario.h"

namespace hg::sim {

inline constexpr const char* kLabMonthName = "lab-month";
inline constexpr Seconds kLabMonthEnd = Days(30);

// Builds the scenario for `seed`. Pure function of the seed: the same seed gives an identical
// Scenario on every platform; different seeds give different workloads and events on the same
// cluster and budget tree.
Scenario MakeLabMonth(uint64_t seed);

}  // namespace hg::sim
