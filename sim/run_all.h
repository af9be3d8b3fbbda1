// Runs of one scenario under several policies are independent of each other: this runs them on
// several threads. The policy library stays single-threaded (each run has its own engine and its
// own policy object); only whole runs overlap.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/error.h"
#include "core/policy.h"
#include "sim/engine.h"
#include "sim/progress.h"

namespace hg::sim {

// Simulates `sc` under each of `policies` on up to `threads` threads (at least one). Run i gets
// the options `options_for(i)` returns (its own progress and decision-log callbacks), called on
// the thread that runs it. Results come back in the policies' order, so a report built from them
// is the same bytes whatever the thread count. An exception inside a run becomes that run's error.
// `finished(i)`, when given, is called on run i's thread as soon as it has ended.
std::vector<Result<SimResult>> SimulateAll(const Scenario& sc,
                                           std::span<const std::unique_ptr<Policy>> policies,
                                           int threads,
                                           const std::function<SimOptions(size_t)>& options_for,
                                           const std::function<void(size_t)>& finished = {});

// SimulateAll as `hourglass sim` and `sim compare` run it: every run gets `base`, shows its
// progress on `progress` under its policy's name and leaves the line when it ends; `extra(i,
// options)`, when given, adds what else run i needs (a decision log). Ends the progress line.
std::vector<Result<SimResult>> SimulateAllShowingProgress(
    const Scenario& sc, std::span<const std::unique_ptr<Policy>> policies, int threads,
    const SimOptions& base, ProgressLine& progress,
    const std::function<void(size_t, SimOptions&)>& extra = {});

}  // namespace hg::sim
