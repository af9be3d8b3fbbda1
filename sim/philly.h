// Trace adapter for the Microsoft Philly GPU cluster trace in its per-job form (columns
// timestamp,duration,num_gpus,cluster[,gpu_time]; see ../shared/traces/README.md). The trace has
// jobs and virtual clusters (VCs) but no budgets, users, classes or cluster size, so the adapter
// invents them by fixed, documented rules (docs/formats.md, "Philly trace"); DescribeMapping says
// what it invented, and every result shown from such a run must carry that text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "sim/scenario.h"

namespace hg::sim {

inline constexpr const char* kPhillyName = "philly-dev";

struct PhillyOptions {
  // Mean offered load / cluster GPUs. The design targets demand 2-3x above supply.
  double oversubscription = 2.5;
  // A 1-GPU job of at most this many minutes is class "debug" (tier 2); the rest are "batch".
  int64_t debug_max_minutes = 30;
  // Synthetic researchers per VC; each job goes to one of them by a seeded hash.
  int researchers_per_vc = 4;
  // Share in [0, 1] of non-debug jobs, chosen by a seeded hash, made unfunded (class "sweep").
  double unfunded_fraction = 0;
  uint64_t seed = 1;
  // Projects (VCs) are dealt into this many programs.
  int programs = 3;
};

// Reads the trace file. A missing file or a malformed row is an error naming file, line and column.
Result<Scenario> LoadPhilly(const std::string& path, const PhillyOptions& opt);

// The same from text in memory; `file_label` goes into Error::file.
Result<Scenario> ParsePhilly(std::string_view text, const std::string& file_label,
                             const PhillyOptions& opt);

// Several lines (each ending in '\n') stating how the trace became this scenario: cluster size and
// the load it was derived from, the budget tree with shares, the synthetic researchers and the
// seeded hash that assigns jobs to them, the class rules and the contract fields chosen.
std::string DescribeMapping(const Scenario& sc, const PhillyOptions& opt);

}  // namespace hg::sim
