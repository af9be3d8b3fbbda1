// The simulator's options from the flags `hourglass sim` and `hourglass sim compare` share: the
// policy's tuning, users' resubmissions and the loop. One function, so the two commands cannot
// read the same flags two ways.
#pragma once

#include <cstdint>

#include "cmd/loop_flags.h"
#include "cmd/policy_flags.h"
#include "core/error.h"
#include "sim/engine.h"

namespace hg::cmd {

// The options, or the first flag that is wrong (named, with the reason).
Result<sim::SimOptions> SimOptionsFrom(const PolicyFlags& tuning, int64_t resubmit_after,
                                       const LoopFlags& loop);

}  // namespace hg::cmd
