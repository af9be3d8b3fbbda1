// `--jobs N` of `hourglass sim` and `hourglass sim compare`: how many policies are simulated at
// once. Each run is single-threaded and independent of the others, so N runs take about the time
// of the longest on N cores; the report is the same bytes whatever N (sim::SimulateAll).
#pragma once

#include <CLI/CLI.hpp>

#include "core/error.h"

namespace hg::cmd {

void AddJobsFlag(CLI::App* app, int* jobs);

// The thread count for `jobs`: itself, or one per core for 0. Negative: an error naming --jobs.
Result<int> ThreadsFor(int jobs);

}  // namespace hg::cmd
