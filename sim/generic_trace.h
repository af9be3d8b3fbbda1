// Trace adapter for a site's own accounting export, CSV (any one-character delimiter, e.g. '|'
// for Slurm's `sacct --parsable2`) or JSON lines, with a column mapping given on the command
// line. See docs/formats.md, "Generic CSV/JSONL trace".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/budget_tree.h"
#include "core/error.h"
#include "sim/scenario.h"

namespace hg::sim {

// One mapped field: the column (or JSON key) it is read from and, for a Slurm TRES-like list
// "cpu=8,gres/gpu=4", the key inside it ("AllocTRES:gres/gpu").
struct ColumnRef {
  std::string column;
  std::string key;  // empty: the whole value
  bool mapped() const { return !column.empty(); }
  std::string ToString() const { return key.empty() ? column : column + ":" + key; }
};

struct ColumnMap {
  ColumnRef submit, duration, end, start, gpus, gpus_per_node, budget, cls, user, min_runtime,
      resumable;
};

// The field names a mapping may set.
inline constexpr const char* kMapFields =
    "submit, duration, end, start, gpus, gpus_per_node, budget, class, user, min_runtime, "
    "resumable";

// "submit=Submit,duration=Elapsed,gpus=AllocTRES:gres/gpu,budget=Account". Errors (field
// "--map"): unknown field, field given twice, empty column, submit/gpus missing, neither or both
// of duration and end.
Result<ColumnMap> ParseColumnMap(std::string_view spec);

// Seconds since the Unix epoch (UTC) from an integer, "YYYY-MM-DD HH:MM:SS" or
// "YYYY-MM-DDTHH:MM:SS".
std::optional<int64_t> ParseTraceTime(std::string_view s);
// Seconds from a number ("3600", "3600.5" rounded up) or Slurm's "[D-]HH:MM:SS" / "MM:SS".
std::optional<int64_t> ParseTraceDuration(std::string_view s);

struct GenericOptions {
  std::string map;
  bool jsonl = false;
  char delimiter = 0;             // CSV: 0 = '|' if the header line holds one, else ','
  double oversubscription = 2.5;  // sizes the cluster when none is given
  // Given: used as they are (a job's budget value names a budget of this tree). Not given: the
  // cluster is sized from the load, and the tree derived from the budget values.
  std::optional<std::vector<NodeSpec>> cluster;
  std::optional<std::vector<BudgetSpec>> budgets;
  std::string name = "trace";  // scenario name
};

// What loading skipped, for DescribeGenericMapping.
struct GenericStats {
  int64_t rows = 0;
  int64_t no_gpu = 0;      // gpus 0 or empty: not GPU work
  int64_t unfinished = 0;  // end empty, "Unknown" or "None"
  int64_t origin = 0;      // Unix time of the first submit (shifted to 0)
  bool derived_cluster = false, derived_budgets = false;
};

Result<Scenario> ParseGenericTrace(std::string_view text, const std::string& file_label,
                                   const GenericOptions& opt, GenericStats* stats = nullptr);

// Reads the trace and, when given, the cluster CSV and budgets TOML.
Result<Scenario> LoadGenericTrace(const std::string& path, const std::string& cluster_path,
                                  const std::string& budgets_path, GenericOptions opt,
                                  GenericStats* stats = nullptr);

std::string DescribeGenericMapping(const Scenario& sc, const GenericOptions& opt,
                                   const GenericStats& stats);

}  // namespace hg::sim
