#include "cmd/loop_flags.h"

#include "core/timed_cycle.h"

namespace hg::cmd {

void AddLoopFlags(CLI::App* app, LoopFlags* flags) {
  app->add_option("--interval", flags->interval, "Scheduling interval in seconds")
      ->capture_default_str();
  app->add_flag("--cycle-while-waiting", flags->cycle_while_waiting,
                "Run the scheduling loop on every interval tick while a job waits, not only on "
                "ticks after an event (about three times the cycles; hourglass server "
                "--timer-ms equal to its --interval-ms)");
  app->add_option("--timer", flags->timer,
                  "Also cycle on the multiples of this many seconds while a job waits, events "
                  "still on the next --interval tick (a multiple of --interval; implies "
                  "--cycle-while-waiting; hourglass server --timer-ms)");
  app->add_option("--max-gap", flags->max_gap,
                  "While a job waits, run a cycle on the first tick this many seconds after the "
                  "last one if no event brought one sooner (0: no bound; hourglass server "
                  "--max-gap-ms)")
      ->capture_default_str();
}

Result<void> ApplyLoopFlags(const LoopFlags& flags, sim::SimOptions* opt) {
  sim::SimOptions loop = *opt;
  loop.interval = Seconds(flags.interval);
  loop.cycle_while_waiting = flags.cycle_while_waiting || flags.timer > 0;
  loop.timer = Seconds(flags.timer);
  loop.max_gap = Seconds(flags.max_gap);
  // The check sim::Simulate makes (and the server's), before the scenario is read, in the flags'
  // names.
  if (auto ok = CheckTimedLoop(loop.interval.value(), loop.timer.value(), loop.max_gap.value(),
                               {"--interval", "--timer", "--max-gap"});
      !ok)
    return ok;
  *opt = std::move(loop);
  return {};
}

std::string DescribeLoop(const LoopFlags& flags) {
  const LoopFlags defaults;
  const bool timer = flags.cycle_while_waiting || flags.timer > 0;
  if (flags.interval == defaults.interval && timer == defaults.cycle_while_waiting &&
      flags.max_gap == defaults.max_gap)
    return "";
  const std::string tick = std::to_string(flags.interval) + " s";
  std::string line = "simulated loop: a cycle on the first " + tick + " tick after an event";
  if (flags.timer > 0)
    line += ", and every " + std::to_string(flags.timer) + " s while a job waits";
  else if (timer)
    line += ", and on every tick while a job waits";
  // The bound matters only where the timer leaves longer gaps.
  const bool every_tick = timer && flags.timer == 0;
  if (flags.max_gap > 0 && !every_tick && (flags.timer == 0 || flags.timer > flags.max_gap))
    line += ", and at most " + std::to_string(flags.max_gap) + " s apart while a job waits";
  line += " (--interval " + std::to_string(flags.interval);
  if (flags.cycle_while_waiting) line += " --cycle-while-waiting";
  if (flags.timer > 0) line += " --timer " + std::to_string(flags.timer);
  if (flags.max_gap != defaults.max_gap) line += " --max-gap " + std::to_string(flags.max_gap);
  std::string usual =
      "a cycle on the first " + std::to_string(defaults.interval) + " s tick after an event";
  if (defaults.max_gap > 0)
    usual += ", and at most " + std::to_string(defaults.max_gap) + " s apart while a job waits";
  return line + "; the default is " + usual + ")";
}

}  // namespace hg::cmd
