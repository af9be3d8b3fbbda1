#include "cmd/loop_flags.h"

namespace hg::cmd {

void AddLoopFlags(CLI::App* app, LoopFlags* flags) {
  app->add_option("--interval", flags->interval, "Scheduling interval in seconds")
      ->capture_default_str();
  app->add_flag("--cycle-while-waiting", flags->cycle_while_waiting,
                "Run the scheduling loop on every interval tick while a job waits, as the server "
                "does, not only on ticks with an event (about three times the cycles)");
}

Result<void> ApplyLoopFlags(const LoopFlags& flags, sim::SimOptions* opt) {
  if (flags.interval <= 0) return tl::unexpected(Error{"--interval", "must be positive", {}, 0});
  opt->interval = Seconds(flags.interval);
  opt->cycle_while_waiting = flags.cycle_while_waiting;
  return {};
}

}  // namespace hg::cmd
