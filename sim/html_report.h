// The comparison report of `hourglass sim compare`: policies side by side on one workload, as a
// compact text table (rows = policies, columns = the measures of DESIGN.md section 2), as one
// self-contained HTML file with SVG charts (sim/svg_chart.h), and as JSON holding the same
// numbers. Every measure comes from sim::Compute (sim/report.h); this file only chooses columns,
// ranks them and derives the chart series (hourly samples and per-start waits of the runs).
//
// Determinism: the outputs are pure functions of the runs and the mapping text (no clock, no
// unordered containers, numbers printed with fixed precision), so the same input gives the same
// bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/result.h"

namespace hg::sim {

struct Comparison {
  std::vector<SimResult> runs;  // one per policy, same scenario, in the order asked for
  std::string mapping;          // how the input became a scenario (may be empty)
};

enum class Better { kHigher, kLower, kNone };

struct CompareColumn {
  std::string key;    // JSON key, e.g. "wait_p90_s.debug"
  std::string label;  // table header, e.g. "debug p90"
  Better better = Better::kNone;
};

// The table as data: values[p][c] is policy p's value in column c (nullopt: not defined, e.g. no
// drains), cells[p][c] its text, best[p][c] whether it is the best shown in that column.
// Ranking compares the values as displayed (rates to 0.1%, GPU-hours to 0.1, waits to the
// second), so a mark never rests on a difference the reader cannot see; all tied leaders are
// marked; a column where every policy shows the same value, or that has no direction (unfunded
// share: more is neither better nor worse), marks nothing.
struct CompareTable {
  std::vector<std::string> policies;  // unique names: "a", "a#2" for a repeat
  std::vector<CompareColumn> columns;
  std::vector<std::vector<std::optional<double>>> values;
  std::vector<std::vector<std::string>> cells;
  std::vector<std::vector<bool>> best;
};

CompareTable BuildCompareTable(const std::vector<SimResult>& runs);

// Fixed-width text: a header row, one row per policy, a '*' after each best value, and a key.
std::string RenderCompareText(const CompareTable& table);

// The whole report as text for the terminal: scenario line, mapping, table.
std::string RenderCompareReport(const Comparison& c);

// The JSON: {"scenario", "start_s", "end_s", "mapping", "columns", "table", "best", "charts",
// "measures"}; "measures" is sim::ToJson of the runs (every measure, per budget and per class),
// "charts" the exact series drawn in the HTML. Doubles rounded to 4 decimals.
nlohmann::json CompareJson(const Comparison& c);
std::string RenderCompareJson(const Comparison& c);  // dump(2) + "\n"

// One HTML document: inline CSS, inline SVG, and a small inline script that checks on load that
// every chart rendered (see the markup contract in sim/svg_chart.h and docs/compare.md). It loads
// nothing from anywhere.
std::string RenderCompareHtml(const Comparison& c);

// The ids (figure data-chart attributes) of the six charts, in page order.
const std::vector<std::string>& CompareChartIds();

}  // namespace hg::sim
