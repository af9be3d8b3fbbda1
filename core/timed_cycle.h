// The loop's one cycle that no event asks for, shared by the simulator (sim/engine.cc, in
// seconds) and the server (State::Tick, in milliseconds), so that the two loops cannot drift
// apart: after a cycle at `now` that left a job waiting, the next one comes on the waiting
// timer's next multiple (`period` > 0), or on the first multiple of `tick` at least `max_gap`
// after `now` (`max_gap` > 0), whichever is sooner. Pure arithmetic; any unit that all four
// arguments share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/error.h"

namespace hg {

// None when both period and max_gap are 0 (events only). tick > 0; a tick of 1 leaves the
// rounding to a caller whose own ticks do it.
std::optional<int64_t> NextTimedCycle(int64_t now, int64_t period, int64_t max_gap, int64_t tick);

// What each caller calls the loop's three settings (its flags), so that an error names what the
// user typed: "interval", "timer", "max-gap" for `hourglass sim`; "--interval-ms", ... for the
// server.
struct LoopSettingNames {
  std::string tick, period, max_gap;
};

// The settings NextTimedCycle needs, checked once for both loops: a positive tick, a waiting
// timer that is 0 or a multiple of the tick (its cycles fall on ticks), a max gap not negative.
// The error names the setting, with the values, in the caller's unit.
Result<void> CheckTimedLoop(int64_t tick, int64_t period, int64_t max_gap,
                            const LoopSettingNames& names);

}  // namespace hg
