// Small, dependency-free SVG charts for the comparison report (sim/html_report.h): line charts
// and grouped "owed vs delivered" bars, each with a title, axes with units, tick labels and a
// legend. Output is a pure function of the input: numbers are printed with fixed precision, so the
// same data gives the same bytes on every run (the report's determinism rests on it).
//
// Markup contract (the Chromium test in cmd/compare_browser_test.sh relies on it):
// - the root is <svg class="chart" ...> with a <title>;
// - every data mark (a series' line, a bar) has class "mark";
// - every legend entry is a <g class="legend-entry" data-series="NAME"> (NAME escaped).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hg::sim::svg {

// Text safe inside XML/HTML element content and double-quoted attribute values.
std::string Escape(std::string_view s);

// A fixed palette keyed by position (colour-blind safe, Okabe-Ito order, then repeats): series i
// of every chart uses Colour(i), so one policy keeps one colour across all charts.
std::string Colour(size_t index);
// How many runs Colour tells apart; a report of more would give two runs one colour.
inline constexpr size_t kColours = 7;

// How tick labels read.
enum class TickFormat {
  kNumber,   // 0, 2.5, 1000
  kPercent,  // values are fractions: 0.25 -> "25%"
  kSeconds,  // values are seconds: "30s", "10m", "2h", "3d"
  kDays,     // values are seconds, shown as days since the start: "0", "7", "14"
};

struct Axis {
  std::string label;  // with its unit, e.g. "occupancy (% of capacity)"
  TickFormat format = TickFormat::kNumber;
  bool log = false;  // log10 scale; values <= 0 are drawn at the axis minimum
  // Fixed range when set (min < max); otherwise from the data (linear axes start at 0).
  bool fixed = false;
  double min = 0, max = 1;
};

// Ticks for a linear axis over [lo, hi]: a "nice" step (1, 2 or 5 times a power of ten) giving
// about `target` ticks, covering the range. Returns at least two ticks when hi > lo.
std::vector<double> LinearTicks(double lo, double hi, int target);

// Ticks for a log axis over [lo, hi] (both > 0): powers of ten, or for kSeconds the readable
// steps 1s, 10s, 1m, 10m, 1h, 10h, 1d, 10d... Always includes the ticks at or just beyond the
// ends, so the data range is covered.
std::vector<double> LogTicks(double lo, double hi, TickFormat format);

// One tick label, with precision enough to tell ticks `step` apart (linear axes).
std::string FormatTick(double v, TickFormat format, double step);

struct Point {
  double x = 0, y = 0;
};

struct LineSeries {
  std::string name;    // legend text
  std::string colour;  // CSS colour, e.g. Colour(i)
  std::vector<Point> points;
  bool step = false;  // draw as a step function (value holds until the next point)
};

struct LineChart {
  std::string id;  // the svg's id attribute
  std::string title;
  std::string note;  // optional line under the title (what is plotted, how)
  Axis x, y;
  std::vector<LineSeries> series;
  int width = 860, height = 340;
};

std::string Render(const LineChart& chart);

// Bars grouped by category: in each category one slot per series, an outlined bar for the
// reference value (e.g. owed GPU-hours) and a filled bar for the actual value (delivered).
struct BarSeries {
  std::string name;
  std::string colour;
  std::vector<double> outline;  // one per category
  std::vector<double> filled;   // one per category
};

struct BarChart {
  std::string id;
  std::string title;
  std::string note;
  std::vector<std::string> categories;
  Axis y;
  std::string outline_label = "outline";  // legend text for the outlined bar
  std::string filled_label = "filled";    // legend text for the filled bar
  std::vector<BarSeries> series;
  int width = 860, height = 360;
};

std::string Render(const BarChart& chart);

}  // namespace hg::sim::svg
