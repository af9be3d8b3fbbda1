// The trace adapters' options as command-line flags, shared by `hourglass sim` (--trace,
// --philly) and `hourglass sim compare` (--workload), so both offer the same defaults, check the
// values the same way and name them alike in errors.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "sim/philly.h"
#include "sim/trace.h"

namespace hg::cmd {

struct TraceFlags {
  std::string format = "auto";
  std::string map;  // csv/jsonl column mapping
  double oversubscription = sim::PhillyOptions{}.oversubscription;
  double unfunded_fraction = sim::PhillyOptions{}.unfunded_fraction;
  int64_t debug_max_minutes = sim::PhillyOptions{}.debug_max_minutes;
  // --format other than its default ("auto"), or --map: asks for a trace format.
  bool FormatGiven() const { return format != "auto" || !map.empty(); }
};

// The registered options whose defaults are valid values, to tell after parsing which were given.
struct TraceFlagOptions {
  CLI::Option* oversubscription = nullptr;
  CLI::Option* unfunded_fraction = nullptr;
  CLI::Option* debug_max_minutes = nullptr;
  // Any of --oversubscription, --unfunded-fraction, --debug-max-minutes given.
  bool LoadTuned() const;
};

TraceFlagOptions AddTraceFlags(CLI::App* app, TraceFlags* flags);

// The ranges the adapters accept; an error names the flag.
Result<void> CheckTraceFlags(const TraceFlags& flags);
// `--end-days`: 0 (the input's own end) or a later day.
Result<void> CheckEndDays(double end_days);

sim::TraceOptions TraceOptionsFrom(const TraceFlags& flags, const std::string& path, uint64_t seed);
sim::PhillyOptions PhillyOptionsFrom(const TraceFlags& flags, uint64_t seed);

// The adapters name their options as fields ("oversubscription"); the user knows them as flags.
Error WithFlagNames(Error e);

}  // namespace hg::cmd
