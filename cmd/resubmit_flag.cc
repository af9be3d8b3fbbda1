#include "cmd/resubmit_flag.h"

namespace hg::cmd {

void AddResubmitFlag(CLI::App* app, int64_t* seconds) {
  app->add_option("--resubmit-after", *seconds,
                  "Resubmit a killed job that is not resumable (preempted, or failed with a lost "
                  "node) this many seconds after it ended, as a new submission run from scratch "
                  "(-1: never)")
      ->capture_default_str();
}

Result<std::optional<Seconds>> ResubmitAfter(int64_t seconds) {
  if (seconds < -1)
    return tl::unexpected(
        Error{"--resubmit-after", "must be -1 (never) or a number of seconds >= 0", {}, 0});
  if (seconds == -1) return std::optional<Seconds>();
  return std::optional<Seconds>(Seconds(seconds));
}

}  // namespace hg::cmd
