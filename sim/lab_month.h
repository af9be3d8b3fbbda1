// The built-in seeded scenario `lab-month`: the design's reference workload, a contended month of
// an AI lab on 1,024 GPUs (see the comment block at the top of lab_month.cc for its make-up).
#pragma once

#include <cstdint>

#include "core/types.h"
#include "sim/scenario.h"

namespace hg::sim {

inline constexpr const char* kLabMonthName = "lab-month";
inline constexpr Seconds kLabMonthEnd = Days(30);

// What-if knobs on the scenario; the defaults give lab-month as documented.
struct LabMonthOptions {
  // Scales the funded offered load: the batch groups submitted per day and the training GPU-time
  // each program offers. Debug, interactive and sweep work stay as they are. Lets a study ask
  // whether a result holds under a lighter or heavier funded load (0.8 gives about the 18%
  // unfunded share of DESIGN.md's production report).
  double funded_scale = 1.0;
};

// Builds the scenario for `seed`. Pure function of the seed and the options: the same inputs give
// an identical Scenario on every platform; different seeds give different workloads and events
// on the same cluster and budget tree.
Scenario MakeLabMonth(uint64_t seed, const LabMonthOptions& options = {});

}  // namespace hg::sim
