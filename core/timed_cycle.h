// The loop's one cycle that no event asks for, shared by the simulator (sim/engine.cc, in
// seconds) and the server (State::Tick, in milliseconds), so that the two loops cannot drift
// apart: after a cycle at `now` that left a job waiting, the next one comes on the waiting
// timer's next multiple (`period` > 0), or on the first multiple of `tick` at least `max_gap`
// after `now` (`max_gap` > 0), whichever is sooner. Pure arithmetic; any unit that all four
// arguments share.
#pragma once

#include <cstdint>
#include <optional>

namespace hg {

// None when both period and max_gap are 0 (events only). tick > 0; a tick of 1 leaves the
// rounding to a caller whose own ticks do it.
std::optional<int64_t> NextTimedCycle(int64_t now, int64_t period, int64_t max_gap, int64_t tick);

}  // namespace hg
