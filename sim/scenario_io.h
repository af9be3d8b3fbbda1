// Readers and writers of the simulator's input files (formats in docs/formats.md): cluster CSV,
// budget tree TOML, workload CSV and timed events CSV. Each reader checks its own file only and
// returns the first mistake with file, line and field; checks across files (a job's budget exists,
// a job fits the cluster, an event names a known node) belong to whoever assembles the scenario.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/budget_tree.h"
#include "core/error.h"
#include "sim/scenario.h"

namespace hg::sim {

// From files. A missing or unreadable file is an error naming the file.
Result<std::vector<NodeSpec>> ReadCluster(const std::string& path);
Result<std::vector<BudgetSpec>> ReadBudgets(const std::string& path);  // BudgetTree::Build-valid
Result<std::vector<SimJob>> ReadWorkload(const std::string& path);     // sorted by (submit, id)
Result<std::vector<TimedEvent>> ReadEvents(const std::string& path);   // stable-sorted by time

// From text already in memory; `file_label` goes into Error::file.
Result<std::vector<NodeSpec>> ParseClusterCsv(std::string_view text, const std::string& file_label);
Result<std::vector<BudgetSpec>> ParseBudgetsToml(std::string_view text,
                                                 const std::string& file_label);
Result<std::vector<SimJob>> ParseWorkloadCsv(std::string_view text, const std::string& file_label);
Result<std::vector<TimedEvent>> ParseEventsCsv(std::string_view text,
                                               const std::string& file_label);

// The file text for each part; reading it back gives the same values (lines aside).
// Fails only on values no file can carry (a line break inside a CSV field).
Result<std::string> FormatClusterCsv(const std::vector<NodeSpec>& nodes);
std::string FormatBudgetsToml(const std::vector<BudgetSpec>& budgets);
Result<std::string> FormatWorkloadCsv(const std::vector<SimJob>& jobs);
Result<std::string> FormatEventsCsv(const std::vector<TimedEvent>& events);

// Writes cluster.csv, budgets.toml, workload.csv and events.csv into `dir` (created if needed).
// The scenario's name and end are not part of these files.
Result<void> WriteScenario(const Scenario& s, const std::string& dir);

// "health_fail", "node_lost", "repair", "drain", "undrain", "share", "limit".
std::optional<EventKind> EventKindFromString(std::string_view s);

}  // namespace hg::sim
