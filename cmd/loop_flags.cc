#include "cmd/loop_flags.h"

namespace hg::cmd {

void AddLoopFlags(CLI::App* app, LoopFlags* flags) {
  app->add_option("--interval", flags->interval, "Scheduling interval in seconds")
      ->capture_default_str();
  app->add_flag("--cycle-while-waiting", flags->cycle_while_waiting,
                "Run the scheduling loop on every interval tick while a job waits, as the server "
                "does (hourglass server --interval-ms), not only on ticks with an event (about "
                "three times the cycles)");
}

Result<void> ApplyLoopFlags(const LoopFlags& flags, sim::SimOptions* opt) {
  if (flags.interval <= 0) return tl::unexpected(Error{"--interval", "must be positive", {}, 0});
  opt->interval = Seconds(flags.interval);
  opt->cycle_while_waiting = flags.cycle_while_waiting;
  return {};
}

std::string DescribeLoop(const LoopFlags& flags) {
  const LoopFlags defaults;
  if (flags.interval == defaults.interval &&
      flags.cycle_while_waiting == defaults.cycle_while_waiting)
    return "";
  const std::string tick = std::to_string(flags.interval) + " s";
  std::string line = "simulated loop: a cycle on the first " + tick + " tick after an event";
  if (flags.cycle_while_waiting) line += ", and on every tick while a job waits";
  line += " (--interval " + std::to_string(flags.interval);
  if (flags.cycle_while_waiting) line += " --cycle-while-waiting";
  return line + "; the default is a cycle on the first " + std::to_string(defaults.interval) +
         " s tick after an event)";
}

}  // namespace hg::cmd
