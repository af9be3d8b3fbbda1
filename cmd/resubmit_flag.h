// `--resubmit-after SECONDS` of `hourglass sim` and `hourglass sim compare`: model users who
// submit again the jobs the cluster killed (sim::SimOptions::resubmit_after). Off by default, so
// the reports stay comparable with earlier runs; with it, a policy that kills work pays for it in
// the waits and the demand instead of seeing that work leave the queue.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

#include "core/error.h"
#include "core/types.h"

namespace hg::cmd {

void AddResubmitFlag(CLI::App* app, int64_t* seconds);

// The option's value: nullopt for -1 (never, the default); an error naming the option below -1.
Result<std::optional<Seconds>> ResubmitAfter(int64_t seconds);

}  // namespace hg::cmd
