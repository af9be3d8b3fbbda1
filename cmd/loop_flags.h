// `--interval SECONDS`, `--cycle-while-waiting` and `--timer SECONDS` of `hourglass sim` and
// `hourglass sim compare`: how the simulated scheduling loop is driven (sim::SimOptions::interval,
// cycle_while_waiting, timer and max_gap). The defaults, a 10 s tick, cycles on ticks after an
// event and at most 300 s apart while a job waits, are the loop `hourglass server` runs with its
// defaults; `--timer T` is the server's `--timer-ms` (T x 1000), `--max-gap G` its `--max-gap-ms`,
// and `--cycle-while-waiting` a timer on every tick (the server's loop in session 23), at about
// three times the cycles.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "sim/engine.h"

namespace hg::cmd {

struct LoopFlags {  // defaults: the simulator's (sim::SimOptions)
  int64_t interval = sim::SimOptions{}.interval.value();
  bool cycle_while_waiting = sim::SimOptions{}.cycle_while_waiting;
  int64_t timer = 0;  // --timer: the waiting timer's period; implies --cycle-while-waiting
  int64_t max_gap = sim::SimOptions{}.max_gap.value();  // --max-gap
};

void AddLoopFlags(CLI::App* app, LoopFlags* flags);

// Sets the options' loop, or leaves them as they were and names the flag (CheckTimedLoop).
Result<void> ApplyLoopFlags(const LoopFlags& flags, sim::SimOptions* opt);

// A line for the report when the loop is not the default, so that its figures are read with the
// loop that produced them (the loop's rhythm moves them); empty for the default loop.
std::string DescribeLoop(const LoopFlags& flags);

}  // namespace hg::cmd
