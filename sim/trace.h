// One entry point for every trace adapter: a trace file (or the openb directory) and a format name
// give a whole Scenario plus the text saying how the trace was mapped onto it, which must be shown
// next to every result computed from it. Formats: philly (sim/philly.h), openb (sim/openb.h),
// csv and jsonl with a column mapping (sim/generic_trace.h); docs/formats.md describes each.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "sim/scenario.h"

namespace hg::sim {

struct TraceOptions {
  std::string path;               // trace file; for openb also the directory of the three CSVs
  std::string format = "auto";    // auto|philly|openb|csv|jsonl
  double oversubscription = 2.5;  // philly, and csv/jsonl without `cluster`: load / cluster GPUs
  uint64_t seed = 1;              // seeded hashes that assign jobs to synthetic budgets
  // Philly only.
  int64_t debug_max_minutes = 30;
  double unfunded_fraction = 0;
  // csv/jsonl only: the column mapping ("submit=Submit,duration=Elapsed,gpus=AllocTRES:gres/gpu"),
  // an optional cluster CSV and budget tree TOML (else derived), and the CSV delimiter (0: '|'
  // when the header line holds one, else ',').
  std::string map;
  std::string cluster;
  std::string budgets;
  char delimiter = 0;
};

struct LoadedTrace {
  Scenario scenario;
  std::string format;   // the format actually read (never "auto")
  std::string mapping;  // lines ending in '\n': how the trace became the scenario
};

// The format names accepted by TraceOptions::format.
inline constexpr const char* kTraceFormats = "auto, philly, openb, csv, jsonl";

// Reads the trace. Errors name file, line and column (or the option at fault, e.g. "--map").
Result<LoadedTrace> LoadTrace(const TraceOptions& opt);

// The format `auto` picks for `path`: by name (a directory or a name containing "openb" is
// openb; .jsonl/.ndjson is jsonl), else by the header line (Philly's or openb's columns; a line
// starting with '{' is jsonl), else csv.
Result<std::string> DetectTraceFormat(const std::string& path);

}  // namespace hg::sim
