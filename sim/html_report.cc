#include "sim/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "sim/report.h"
#include "sim/svg_chart.h"

namespace hg::sim {
namespace {

constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;
constexpr int kCdfSteps = 200;  // points per wait CDF (every 0.5% of starts)
// Budget bars: projects (level 2) when there are at most this many, else programs.
constexpr size_t kMaxBarBudgets = 16;

// Rounded to 4 decimals like the report (sim/report.cc), -0 as 0, non-finite as null.
nlohmann::json Num(double x) {
  if (!std::isfinite(x)) return nullptr;
  const double v = std::round(x * 1e4) / 1e4;
  return v == 0 ? 0.0 : v;
}
nlohmann::json Num(const std::optional<double>& x) { return x ? Num(*x) : nlohmann::json(); }

std::string Duration(int64_t s) {
  const double v = static_cast<double>(s);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{:.1f}m", v / 60.0);
  if (s < 86400) return fmt::format("{:.1f}h", v / 3600.0);
  return fmt::format("{:.1f}d", v / 86400.0);
}

// A column: how to read its value from the measures, and how it is shown. `display` maps the
// value to what is printed and ranked (rounded as shown).
struct ColumnDef {
  CompareColumn col;
  std::function<std::optional<double>(const Measures&)> get;
  enum Kind { kPct, kWait, kCount, kHours } kind;
};

std::optional<double> Shown(std::optional<double> v, ColumnDef::Kind kind) {
  if (!v) return v;
  switch (kind) {
    case ColumnDef::kPct:
      return std::round(*v * 1000.0) / 1000.0;
    case ColumnDef::kHours:
      return std::round(*v * 10.0) / 10.0;
    case ColumnDef::kWait:
      // Ranked as displayed: below a minute to the second, then to the printed tenth.
      if (*v < 60) return *v;
      if (*v < 3600) return std::round(*v / 6.0) * 6.0;
      if (*v < 86400) return std::round(*v / 360.0) * 360.0;
      return std::round(*v / 8640.0) * 8640.0;
    case ColumnDef::kCount:
      return *v;
  }
  return v;
}

std::string Cell(const std::optional<double>& v, ColumnDef::Kind kind) {
  if (!v) return "-";
  switch (kind) {
    case ColumnDef::kPct:
      return fmt::format("{:.1f}%", *v * 100.0);
    case ColumnDef::kHours:
      return fmt::format("{:.1f}", *v);
    case ColumnDef::kWait:
      return Duration(static_cast<int64_t>(*v));
    case ColumnDef::kCount:
      return fmt::format("{}", static_cast<int64_t>(*v));
  }
  return "-";
}

std::optional<double> Wait(const Measures& m, const std::string& cls, bool p90) {
  auto it = m.wait_by_class.find(cls);
  if (it == m.wait_by_class.end()) return std::nullopt;
  const auto& w = p90 ? it->second.p90 : it->second.p50;
  if (!w) return std::nullopt;
  return static_cast<double>(*w);
}

std::vector<ColumnDef> Columns(const std::vector<Measures>& ms) {
  std::vector<ColumnDef> cols;
  cols.push_back({{"occupancy", "occupancy", Better::kHigher},
                  [](const Measures& m) { return m.occupancy; },
                  ColumnDef::kPct});
  cols.push_back({{"entitlement_delivered", "entitled", Better::kHigher},
                  [](const Measures& m) { return m.entitlement_delivered; },
                  ColumnDef::kPct});
  // The entitlement gap in two parts (sim/report.h): time leaves got beyond what they were owed,
  // and owed time funded work did not hold.
  cols.push_back(
      {{"over_delivered_gpu_hours", "over owed GPU-h", Better::kLower},
       [](const Measures& m) -> std::optional<double> { return m.over_delivered_gpu_hours; },
       ColumnDef::kHours});
  cols.push_back({{"undelivered_gpu_hours", "owed unheld GPU-h", Better::kLower},
                  [](const Measures& m) -> std::optional<double> { return m.undelivered.total(); },
                  ColumnDef::kHours});
  cols.push_back({{"unfunded_share", "unfunded", Better::kNone},
                  [](const Measures& m) { return m.unfunded_share; },
                  ColumnDef::kPct});
  std::set<std::string> classes;
  for (const Measures& m : ms)
    for (const auto& [cls, w] : m.wait_by_class) classes.insert(cls);
  for (const std::string& cls : classes) {
    for (bool p90 : {false, true}) {
      const char* p = p90 ? "p90" : "p50";
      cols.push_back(
          {{fmt::format("wait_{}_s.{}", p, cls), fmt::format("{} {}", cls, p), Better::kLower},
           [cls, p90](const Measures& m) { return Wait(m, cls, p90); },
           ColumnDef::kWait});
    }
  }
  // Fragmentation as the largest waiting jobs met it: the job-hours funded jobs of the largest
  // size any run saw waiting spent with enough idle or unfunded GPUs in total, not where their
  // shape fits (sim/wait_split.h).
  size_t largest = kSizeBuckets.size();
  for (size_t i = kSizeBuckets.size(); i-- > 0 && largest == kSizeBuckets.size();)
    for (const Measures& m : ms)
      if (m.funded_wait_split[i].total() > 0) largest = i;
  if (largest < kSizeBuckets.size()) {
    cols.push_back({{fmt::format("fragmented_wait_job_hours.{}", kSizeBuckets[largest]),
                     fmt::format("frag. job-h {}", kSizeBuckets[largest]), Better::kLower},
                    [largest](const Measures& m) -> std::optional<double> {
                      return m.funded_wait_split[largest].fragmented;
                    },
                    ColumnDef::kHours});
  }
  // Jobs that ran to their end: a policy that kills work may still lead on the waits and the
  // entitlement (what it killed no longer asks for GPUs), and this column shows what it cost.
  cols.push_back({{"jobs_succeeded", "completed", Better::kHigher},
                  [](const Measures& m) -> std::optional<double> {
                    return static_cast<double>(m.jobs.succeeded);
                  },
                  ColumnDef::kCount});
  cols.push_back({{"never_started", "never started", Better::kLower},
                  [](const Measures& m) -> std::optional<double> {
                    return static_cast<double>(m.wait_all.never_started);
                  },
                  ColumnDef::kCount});
  cols.push_back({{"preemptions", "preempted", Better::kLower},
                  [](const Measures& m) -> std::optional<double> {
                    return static_cast<double>(m.preemptions);
                  },
                  ColumnDef::kCount});
  // Runs stopped within a minute of their start: each start ended a queue wait, so the wait
  // columns alone would hide a policy that starts work only to stop it at once.
  cols.push_back({{"stopped_within_1m", "stopped <1 min", Better::kLower},
                  [](const Measures& m) -> std::optional<double> {
                    return static_cast<double>(m.stopped_within_minute);
                  },
                  ColumnDef::kCount});
  cols.push_back({{"lost_gpu_hours", "lost GPU-h", Better::kLower},
                  [](const Measures& m) -> std::optional<double> { return m.lost_gpu_hours; },
                  ColumnDef::kHours});
  cols.push_back({{"contract_violations", "violations", Better::kLower},
                  [](const Measures& m) -> std::optional<double> {
                    return static_cast<double>(m.contract_violations);
                  },
                  ColumnDef::kCount});
  // A stop answered within the hour by a stop the other way between the same two leaves.
  cols.push_back({{"taken_back_within_1h", "taken back <1 h", Better::kLower},
                  [](const Measures& m) -> std::optional<double> {
                    return static_cast<double>(m.taken_back_within_hour);
                  },
                  ColumnDef::kCount});
  cols.push_back({{"active_sessions_stopped", "sessions cut", Better::kLower},
                  [](const Measures& m) -> std::optional<double> {
                    return static_cast<double>(m.active_sessions_stopped);
                  },
                  ColumnDef::kCount});
  cols.push_back({{"drain_latency_p90_s", "drain p90", Better::kLower},
                  [](const Measures& m) -> std::optional<double> {
                    if (!m.drains.latency_p90) return std::nullopt;
                    return static_cast<double>(*m.drains.latency_p90);
                  },
                  ColumnDef::kWait});
  cols.push_back({{"manual_interventions", "manual", Better::kLower},
                  [](const Measures& m) -> std::optional<double> {
                    return static_cast<double>(m.drains.manual_interventions);
                  },
                  ColumnDef::kCount});
  return cols;
}

// ---------------------------------------------------------------------------------------------
// Chart series, derived once and used by both the HTML and the JSON.

struct BudgetBars {
  int level = 0;
  std::vector<std::string> paths;
  std::vector<std::vector<double>> owed, delivered;  // [policy][budget]
  // Queue waits by class of each budget's jobs (WaitsByBudget), for the per-budget tables.
  std::vector<std::vector<std::map<std::string, WaitStats>>> waits;  // [policy][budget]
};

struct Series {
  std::vector<svg::Point> points;
};

struct ChartData {
  std::vector<std::string> policies;
  BudgetBars budgets;
  int64_t occupancy_bin = kHour;
  std::vector<Series> occupancy;  // [policy], fraction of capacity per bin
  std::vector<std::string> classes;
  std::vector<std::vector<Series>> wait_cdf;  // [class][policy]: (wait s, fraction of starts)
  int64_t preemption_bin = kHour;
  std::vector<Series> preemptions, lost;  // [policy]: per bin
  int64_t largest_bin = kHour;
  std::vector<Series> largest_free;  // [policy]: GPUs
  // Funded jobs' waiting per size bucket (sim/wait_split.h), as shares of its job-hours: with
  // room in idle or unfunded GPUs (fragmented + placeable + victims leaving), and fragmented.
  std::vector<std::string> wait_sizes;              // size buckets some funded job waited in
  std::vector<std::vector<double>> room, fragment;  // [policy][size]
};

// Time bins: a day for runs of a week or more (hourly lines of five policies over a month are
// unreadable), else an hour.
int64_t BinFor(const SimResult& r) { return (r.end - r.start).value() >= 7 * kDay ? kDay : kHour; }

BudgetBars MakeBudgetBars(const std::vector<SimResult>& runs) {
  BudgetBars b;
  std::vector<std::string> level2, level1;
  std::set<std::string> seen;
  for (const SimResult& r : runs) {
    for (const BudgetTotals& t : r.budgets) {
      if (t.depth != 1 && t.depth != 2) continue;
      if (!seen.insert(t.path).second) continue;
      (t.depth == 1 ? level1 : level2).push_back(t.path);
    }
  }
  b.level = !level2.empty() && level2.size() <= kMaxBarBudgets ? 2 : 1;
  b.paths = b.level == 2 ? level2 : level1;
  for (const SimResult& r : runs) {
    std::map<std::string, size_t> by_path;
    for (size_t i = 0; i < r.budgets.size(); ++i) by_path[r.budgets[i].path] = i;
    std::vector<std::map<std::string, WaitStats>> run_waits = WaitsByBudget(r);
    std::vector<double> owed, delivered;
    std::vector<std::map<std::string, WaitStats>> waits;
    for (const std::string& p : b.paths) {
      auto it = by_path.find(p);
      const BudgetTotals* t = it == by_path.end() ? nullptr : &r.budgets[it->second];
      owed.push_back(t ? t->owed_gpu_hours : 0.0);
      delivered.push_back(t ? t->delivered_gpu_hours : 0.0);
      waits.push_back(t ? std::move(run_waits[it->second]) : std::map<std::string, WaitStats>{});
    }
    b.owed.push_back(std::move(owed));
    b.delivered.push_back(std::move(delivered));
    b.waits.push_back(std::move(waits));
  }
  return b;
}

// Hourly samples grouped into bins starting at the run's start: occupancy = sum allocated / sum
// capacity (capacity-weighted), largest free = mean of the samples.
void SeriesBins(const SimResult& r, int64_t bin, Series& occupancy, Series& largest) {
  std::map<int64_t, std::array<double, 3>> acc;  // bin start -> (allocated, capacity, samples)
  std::map<int64_t, double> free_sum;
  for (const SeriesPoint& p : r.series) {
    const int64_t k = r.start.value() + (p.at - r.start).value() / bin * bin;
    auto& a = acc[k];
    a[0] += p.allocated;
    a[1] += p.capacity;
    a[2] += 1;
    free_sum[k] += p.largest_free;
  }
  for (const auto& [k, a] : acc) {
    const double x = static_cast<double>(k);
    if (a[1] > 0) occupancy.points.push_back({x, a[0] / a[1]});
    largest.points.push_back({x, free_sum[k] / a[2]});
  }
}

void PreemptionBins(const SimResult& r, int64_t bin, Series& count, Series& lost) {
  const int64_t n = std::max<int64_t>(1, ((r.end - r.start).value() + bin - 1) / bin);
  std::vector<double> c(static_cast<size_t>(n), 0), l(static_cast<size_t>(n), 0);
  for (const PreemptionRecord& p : r.preemptions) {
    const int64_t i = std::clamp<int64_t>((p.at - r.start).value() / bin, 0, n - 1);
    c[static_cast<size_t>(i)] += 1;
    l[static_cast<size_t>(i)] += p.lost_gpu_hours;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(r.start.value() + i * bin);
    count.points.push_back({x, c[static_cast<size_t>(i)]});
    lost.points.push_back({x, l[static_cast<size_t>(i)]});
  }
}

// The CDF of one class's waits, sampled every 1/kCdfSteps of the starts with the report's
// nearest-rank percentile (sim::Percentile), so each point is a real sample.
Series WaitCdf(const SimResult& r, const std::string& cls) {
  std::vector<int64_t> w;
  for (const JobRecord& j : r.jobs) {
    if (ClassKey(j.job_class) != cls) continue;
    for (Seconds s : j.waits) w.push_back(s.value());
  }
  Series s;
  if (w.empty()) return s;
  std::sort(w.begin(), w.end());
  const int64_t n = static_cast<int64_t>(w.size());
  for (int k = 0; k <= kCdfSteps; ++k) {
    const int64_t rank = std::max<int64_t>(1, (k * n + kCdfSteps - 1) / kCdfSteps);
    s.points.push_back({static_cast<double>(w[static_cast<size_t>(rank - 1)]),
                        static_cast<double>(k) / kCdfSteps});
  }
  return s;
}

ChartData MakeCharts(const std::vector<SimResult>& runs) {
  ChartData d;
  d.policies = UniqueNames(runs);
  d.budgets = MakeBudgetBars(runs);
  const int64_t bin = runs.empty() ? kHour : BinFor(runs.front());
  d.occupancy_bin = d.preemption_bin = d.largest_bin = bin;
  std::set<std::string> classes;
  for (const SimResult& r : runs) {
    Series occ, largest, count, lost;
    SeriesBins(r, bin, occ, largest);
    PreemptionBins(r, bin, count, lost);
    d.occupancy.push_back(std::move(occ));
    d.largest_free.push_back(std::move(largest));
    d.preemptions.push_back(std::move(count));
    d.lost.push_back(std::move(lost));
    for (const JobRecord& j : r.jobs)
      if (!j.waits.empty()) classes.insert(ClassKey(j.job_class));
  }
  std::vector<std::array<WaitSplit, kSizeBuckets.size()>> split;
  for (const SimResult& r : runs) split.push_back(FundedWaitBySize(r));
  std::vector<size_t> sizes;
  for (size_t i = 0; i < kSizeBuckets.size(); ++i) {
    bool waited = false;
    for (const auto& s : split) waited = waited || s[i].total() > 0;
    if (!waited) continue;
    sizes.push_back(i);
    d.wait_sizes.push_back(SizeLabel(i));
  }
  for (const auto& s : split) {
    std::vector<double> room, fragment;
    for (size_t i : sizes) {
      const WaitSplit& w = s[i];
      const double total = w.total();
      room.push_back(total > 0 ? (total - w.short_of_gpus) / total : 0.0);
      fragment.push_back(total > 0 ? w.fragmented / total : 0.0);
    }
    d.room.push_back(std::move(room));
    d.fragment.push_back(std::move(fragment));
  }
  d.classes.assign(classes.begin(), classes.end());
  for (const std::string& cls : d.classes) {
    std::vector<Series> per;
    for (const SimResult& r : runs) per.push_back(WaitCdf(r, cls));
    d.wait_cdf.push_back(std::move(per));
  }
  return d;
}

nlohmann::json PointsJson(const Series& s) {
  nlohmann::json a = nlohmann::json::array();
  for (const svg::Point& p : s.points) a.push_back({Num(p.x), Num(p.y)});
  return a;
}

std::string BinName(int64_t bin) { return bin == kDay ? "day" : "hour"; }

// ---------------------------------------------------------------------------------------------
// HTML

std::vector<svg::LineSeries> Lines(const ChartData& d, const std::vector<Series>& per_policy,
                                   bool step) {
  std::vector<svg::LineSeries> out;
  for (size_t i = 0; i < d.policies.size(); ++i)
    out.push_back({d.policies[i], svg::Colour(i), per_policy[i].points, step});
  return out;
}

std::string Figure(const std::string& chart, const std::string& body) {
  return fmt::format("<figure class=\"chart-figure\" data-chart=\"{}\">\n{}</figure>\n", chart,
                     body);
}

std::string ChartsHtml(const ChartData& d, const SimResult& first) {
  std::string out;
  const std::string per_bin = BinName(d.occupancy_bin);
  // 1. Owed vs delivered per budget.
  {
    svg::BarChart c;
    c.id = "chart-owed-delivered";
    c.title = fmt::format("Owed vs delivered GPU-hours per {}",
                          d.budgets.level == 2 ? "project" : "program");
    c.note = "Owed: the budget's water-filled fair share given its demand (DESIGN.md section 2).";
    c.categories = d.budgets.paths;
    c.y.label = "GPU-hours";
    c.outline_label = "owed (outline)";
    c.filled_label = "delivered (filled)";
    for (size_t i = 0; i < d.policies.size(); ++i)
      c.series.push_back(
          {d.policies[i], svg::Colour(i), d.budgets.owed[i], d.budgets.delivered[i]});
    out += Figure("owed-delivered", svg::Render(c));
  }
  // 2. Occupancy over time. The axis starts at the lowest tenth below the data: occupancy is
  // near 100% for good policies and differences would vanish on a 0-100% axis.
  {
    svg::LineChart c;
    c.id = "chart-occupancy";
    c.title = "Occupancy over time";
    double lo = 1;
    for (const Series& s : d.occupancy)
      for (const svg::Point& p : s.points) lo = std::min(lo, p.y);
    lo = std::max(0.0, std::floor(lo * 10 - 1e-9) / 10);
    c.note = fmt::format("Allocated / capacity GPU-seconds per {}; the axis starts at {:.0f}%.",
                         per_bin, lo * 100);
    c.x = {"time since start (days)",
           svg::TickFormat::kDays,
           false,
           true,
           static_cast<double>(first.start.value()),
           static_cast<double>(first.end.value())};
    c.y = {"occupancy (% of capacity)", svg::TickFormat::kPercent, false, true, lo, 1.0};
    c.series = Lines(d, d.occupancy, false);
    out += Figure("occupancy", svg::Render(c));
  }
  // 3. Queue-wait distribution per class.
  {
    std::string body;
    for (size_t k = 0; k < d.classes.size(); ++k) {
      svg::LineChart c;
      c.id = "chart-waits-" + std::to_string(k);
      c.title =
          fmt::format("Queue wait, class {}: share of starts waiting at most x", d.classes[k]);
      c.note =
          "Submission (or requeue) to start, log scale; waits under 1 s are drawn at 1 s. Jobs "
          "that never started are not in the curves (see the table).";
      c.x = {"queue wait (log scale)", svg::TickFormat::kSeconds, true, false, 1, 10};
      c.y = {"share of starts", svg::TickFormat::kPercent, false, true, 0, 1};
      c.height = 300;
      c.series = Lines(d, d.wait_cdf[k], false);
      body += svg::Render(c);
    }
    out += Figure("waits", body);
  }
  // 4. Preemptions and lost GPU-hours over time.
  {
    svg::LineChart c;
    c.id = "chart-preemptions";
    c.title = fmt::format("Preemptions per {}", per_bin);
    c.note = "Every stop by the scheduler or the cluster, whatever its cause.";
    c.x = {"time since start (days)",
           svg::TickFormat::kDays,
           false,
           true,
           static_cast<double>(first.start.value()),
           static_cast<double>(first.end.value())};
    c.y.label = fmt::format("preemptions per {}", per_bin);
    c.height = 300;
    c.series = Lines(d, d.preemptions, false);
    std::string body = svg::Render(c);
    c.id = "chart-lost";
    c.title = fmt::format("Lost GPU-hours per {}", per_bin);
    c.note = "Work since the last checkpoint (or the run's start) of the stopped jobs.";
    c.y.label = fmt::format("lost GPU-hours per {}", per_bin);
    c.series = Lines(d, d.lost, false);
    body += svg::Render(c);
    out += Figure("preemptions", body);
  }
  // 5. Fragmentation: the largest job that could start.
  {
    svg::LineChart c;
    c.id = "chart-largest-free";
    c.title = "Largest job that could start (whole free GPUs in one block)";
    c.note = fmt::format("Hourly samples{}; low values mean free GPUs are scattered or absent.",
                         d.largest_bin == kDay ? ", mean per day" : "");
    c.x = {"time since start (days)",
           svg::TickFormat::kDays,
           false,
           true,
           static_cast<double>(first.start.value()),
           static_cast<double>(first.end.value())};
    c.y.label = "largest startable job (GPUs)";
    c.series = Lines(d, d.largest_free, d.largest_bin == kHour);
    out += Figure("largest-free", svg::Render(c));
  }
  // 6. Fragmentation as the waiting jobs met it: of each size's waiting, the share with room.
  {
    svg::BarChart c;
    c.id = "chart-funded-wait";
    c.title = "Funded jobs' waiting by size: room on idle or unfunded GPUs, and fragmentation";
    // The rest of each bar up to 100% is time when funded work held the GPUs (docs/compare.md).
    c.note =
        "Outline: waiting with enough idle or unfunded GPUs in total; filled: of that, not where "
        "the job's shape fits.";
    c.categories = d.wait_sizes;
    c.y = {"share of waiting job-hours", svg::TickFormat::kPercent, false, true, 0, 1};
    c.outline_label = "room in total (outline)";
    c.filled_label = "fragmented (filled)";
    for (size_t i = 0; i < d.policies.size(); ++i)
      c.series.push_back({d.policies[i], svg::Colour(i), d.room[i], d.fragment[i]});
    out += Figure("funded-wait", svg::Render(c));
  }
  return out;
}

constexpr const char* kCss =
    R"(body{font-family:sans-serif;margin:24px auto;max-width:900px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
pre{background:#f6f6f6;padding:8px;font-size:12px;white-space:pre-wrap}
table{border-collapse:collapse;font-size:12px}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
td.best{font-weight:bold;background:#e6f4ea}
.swatch{display:inline-block;width:10px;height:10px;margin-right:5px}
.table-wrap{overflow-x:auto}
figure{margin:18px 0}
#policies{list-style:none;padding:0}#policies li{display:inline-block;margin-right:16px}
)";

// Runs on load in the browser: checks that every chart has size, a legend entry per policy and
// drawn marks, and writes the verdict into the page (data-rendered on each figure, a summary in
// #render-check, data-charts on <body>). cmd/compare_browser_test.sh reads them from the DOM.
constexpr const char* kCheckScript = R"(<script>
(function () {
  var expected = Array.prototype.map.call(
      document.querySelectorAll('#policies [data-policy]'), function (e) { return e.dataset.policy; });
  var charts = CHARTS;
  var lines = [], good = 0;
  charts.forEach(function (name) {
    var fig = document.querySelector('figure[data-chart="' + name + '"]');
    var why = '';
    if (!fig) { lines.push(name + ': FAIL missing'); return; }
    var svgs = fig.querySelectorAll('svg.chart');
    var drawnAny = {};
    if (!svgs.length) why = 'no svg';
    Array.prototype.forEach.call(svgs, function (svg) {
      if (why) return;
      var r = svg.getBoundingClientRect(), b = svg.getBBox();
      if (!(r.width > 0 && r.height > 0 && b.width > 0 && b.height > 0)) { why = svg.id + ' has no size'; return; }
      var legend = {};
      Array.prototype.forEach.call(svg.querySelectorAll('.legend-entry'), function (g) { legend[g.dataset.series] = 1; });
      var missing = expected.filter(function (p) { return !legend[p]; });
      if (missing.length) { why = svg.id + ' legend lacks ' + missing.join(','); return; }
      if (svg.querySelectorAll('text').length < 6) { why = svg.id + ' lacks title, ticks or axis labels'; return; }
      var drawn = 0;
      Array.prototype.forEach.call(svg.querySelectorAll('.mark'), function (m) {
        var bb = m.getBBox();
        if (bb.width + bb.height > 0) { drawn++; drawnAny[m.dataset.series] = 1; }
      });
      if (!drawn) why = svg.id + ' draws no marks';
    });
    if (!why) {
      var undrawn = expected.filter(function (p) { return !drawnAny[p]; });
      if (undrawn.length) why = 'nothing drawn for ' + undrawn.join(',');
    }
    fig.dataset.rendered = why ? 'fail' : 'ok';
    if (!why) good++;
    lines.push(name + ': ' + (why ? 'FAIL ' + why : 'ok (' + svgs.length + ' svg)'));
  });
  document.getElementById('render-check').textContent = lines.join('\n');
  document.body.dataset.charts = good + '/' + charts.length;
})();
</script>
)";

}  // namespace

const std::vector<std::string>& CompareChartIds() {
  static const std::vector<std::string> kIds = {"owed-delivered", "occupancy",    "waits",
                                                "preemptions",    "largest-free", "funded-wait"};
  return kIds;
}

CompareTable BuildCompareTable(const std::vector<SimResult>& runs) {
  std::vector<Measures> ms;
  for (const SimResult& r : runs) ms.push_back(Compute(r));
  const std::vector<ColumnDef> defs = Columns(ms);
  CompareTable t;
  t.policies = UniqueNames(runs);
  for (const ColumnDef& d : defs) t.columns.push_back(d.col);
  const size_t np = ms.size(), nc = defs.size();
  t.values.assign(np, std::vector<std::optional<double>>(nc));
  t.cells.assign(np, std::vector<std::string>(nc));
  t.best.assign(np, std::vector<bool>(nc, false));
  for (size_t p = 0; p < np; ++p) {
    for (size_t c = 0; c < nc; ++c) {
      t.values[p][c] = defs[c].get(ms[p]);
      t.cells[p][c] = Cell(t.values[p][c], defs[c].kind);
    }
  }
  for (size_t c = 0; c < nc; ++c) {
    if (defs[c].col.better == Better::kNone) continue;
    std::optional<double> best;
    std::set<double> distinct;
    for (size_t p = 0; p < np; ++p) {
      const auto v = Shown(t.values[p][c], defs[c].kind);
      if (!v) continue;
      distinct.insert(*v);
      if (!best || (defs[c].col.better == Better::kHigher ? *v > *best : *v < *best)) best = v;
    }
    if (distinct.size() < 2) continue;  // all equal (or one value): nothing wins
    for (size_t p = 0; p < np; ++p) t.best[p][c] = Shown(t.values[p][c], defs[c].kind) == best;
  }
  return t;
}

std::string RenderCompareText(const CompareTable& t) {
  const size_t nc = t.columns.size();
  std::vector<size_t> width(nc + 1, 6);
  for (const std::string& p : t.policies) width[0] = std::max(width[0], p.size());
  for (size_t c = 0; c < nc; ++c) {
    width[c + 1] = std::max(width[c + 1], t.columns[c].label.size());
    for (size_t p = 0; p < t.policies.size(); ++p)
      width[c + 1] = std::max(width[c + 1], t.cells[p][c].size() + 1);
  }
  auto trim = [](std::string s) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = fmt::format("{:<{}}", "policy", width[0]);
  for (size_t c = 0; c < nc; ++c) out += fmt::format("  {:>{}}", t.columns[c].label, width[c + 1]);
  out = trim(out);
  for (size_t p = 0; p < t.policies.size(); ++p) {
    std::string line = fmt::format("{:<{}}", t.policies[p], width[0]);
    for (size_t c = 0; c < nc; ++c) {
      // The mark sits after the number, so values stay aligned on their last digit.
      const std::string cell = t.cells[p][c] + (t.best[p][c] ? "*" : " ");
      line += fmt::format("  {:>{}}", cell, width[c + 1]);
    }
    out += trim(line);
  }
  out +=
      "* best in its column as shown (ties all marked; none when all equal). entitled = "
      "entitlement delivered; waits are nearest-rank percentiles of starts; unfunded share is "
      "not ranked.\n";
  return out;
}

std::string RenderCompareReport(const Comparison& c) {
  std::string out;
  if (!c.runs.empty()) {
    const SimResult& f = c.runs.front();
    out += fmt::format("scenario {}  ({:.1f} days simulated)\n", f.scenario,
                       static_cast<double>((f.end - f.start).value()) / 86400.0);
  }
  if (!c.mapping.empty()) out += "\n" + c.mapping;
  out += "\n" + RenderCompareText(BuildCompareTable(c.runs));
  return out;
}

nlohmann::json CompareJson(const Comparison& c) {
  const CompareTable t = BuildCompareTable(c.runs);
  const ChartData d = MakeCharts(c.runs);
  nlohmann::json j = nlohmann::json::object();
  j["scenario"] = c.runs.empty() ? std::string() : c.runs.front().scenario;
  j["start_s"] = c.runs.empty() ? int64_t{0} : c.runs.front().start.value();
  j["end_s"] = c.runs.empty() ? int64_t{0} : c.runs.front().end.value();
  j["mapping"] = c.mapping;
  j["policies"] = t.policies;
  nlohmann::json cols = nlohmann::json::array();
  for (const CompareColumn& col : t.columns) {
    cols.push_back({{"key", col.key},
                    {"label", col.label},
                    {"better", col.better == Better::kHigher  ? "higher"
                               : col.better == Better::kLower ? "lower"
                                                              : "none"}});
  }
  j["columns"] = std::move(cols);
  nlohmann::json table = nlohmann::json::object(), best = nlohmann::json::object();
  for (size_t ci = 0; ci < t.columns.size(); ++ci)
    best[t.columns[ci].key] = nlohmann::json::array();
  for (size_t p = 0; p < t.policies.size(); ++p) {
    nlohmann::json row = nlohmann::json::object();
    for (size_t ci = 0; ci < t.columns.size(); ++ci) {
      row[t.columns[ci].key] = Num(t.values[p][ci]);
      if (t.best[p][ci]) best[t.columns[ci].key].push_back(t.policies[p]);
    }
    table[t.policies[p]] = std::move(row);
  }
  j["table"] = std::move(table);
  j["best"] = std::move(best);

  nlohmann::json charts = nlohmann::json::object();
  {
    nlohmann::json b = {{"level", d.budgets.level}, {"budgets", d.budgets.paths}};
    nlohmann::json per = nlohmann::json::object();
    for (size_t i = 0; i < d.policies.size(); ++i) {
      nlohmann::json owed = nlohmann::json::array(), del = nlohmann::json::array();
      for (double v : d.budgets.owed[i]) owed.push_back(Num(v));
      for (double v : d.budgets.delivered[i]) del.push_back(Num(v));
      per[d.policies[i]] = {{"owed_gpu_hours", owed}, {"delivered_gpu_hours", del}};
    }
    b["policies"] = std::move(per);
    charts["owed_delivered"] = std::move(b);
  }
  auto per_policy = [&](const std::vector<Series>& s, int64_t bin, const char* what) {
    nlohmann::json o = {{"bin", BinName(bin)}, {"points", what}};
    nlohmann::json per = nlohmann::json::object();
    for (size_t i = 0; i < d.policies.size(); ++i) per[d.policies[i]] = PointsJson(s[i]);
    o["policies"] = std::move(per);
    return o;
  };
  charts["occupancy"] = per_policy(d.occupancy, d.occupancy_bin, "[bin start s, fraction]");
  charts["preemptions"] = per_policy(d.preemptions, d.preemption_bin, "[bin start s, count]");
  charts["lost_gpu_hours"] = per_policy(d.lost, d.preemption_bin, "[bin start s, GPU-hours]");
  charts["largest_free"] = per_policy(d.largest_free, d.largest_bin, "[bin start s, GPUs]");
  {
    nlohmann::json per = nlohmann::json::object();
    for (size_t i = 0; i < d.policies.size(); ++i) {
      nlohmann::json room = nlohmann::json::array(), fragment = nlohmann::json::array();
      for (double v : d.room[i]) room.push_back(Num(v));
      for (double v : d.fragment[i]) fragment.push_back(Num(v));
      per[d.policies[i]] = {{"room", room}, {"fragmented", fragment}};
    }
    charts["funded_wait"] = {{"sizes", d.wait_sizes},
                             {"points", "shares of the funded jobs' waiting job-hours"},
                             {"policies", std::move(per)}};
  }
  {
    nlohmann::json w = nlohmann::json::object();
    for (size_t k = 0; k < d.classes.size(); ++k) {
      nlohmann::json per = nlohmann::json::object();
      for (size_t i = 0; i < d.policies.size(); ++i)
        per[d.policies[i]] = PointsJson(d.wait_cdf[k][i]);
      w[d.classes[k]] = std::move(per);
    }
    charts["wait_cdf"] = {{"points", "[wait s, share of starts]"}, {"classes", std::move(w)}};
  }
  j["charts"] = std::move(charts);
  j["measures"] = ToJson(c.runs);
  return j;
}

std::string RenderCompareJson(const Comparison& c) { return CompareJson(c).dump(2) + "\n"; }

// One table per class: the budgets of the owed/delivered chart (projects, or programs when there
// are many) by policy, each cell the p50 / p90 wait of that budget's starts of that class. A lead
// sees whose users wait under each policy, where the measures above say only that someone does.
std::string BudgetWaitsHtml(const ChartData& d) {
  using svg::Escape;
  std::string h;
  for (const std::string& cls : d.classes) {
    h += fmt::format(
        "<h3>{}</h3>\n<div class=\"table-wrap\"><table class=\"budget-waits\" "
        "data-class=\"{}\">\n<tr><th>budget</th>",
        Escape(cls), Escape(cls));
    for (size_t i = 0; i < d.policies.size(); ++i)
      h += fmt::format("<th><span class=\"swatch\" style=\"background:{}\"></span>{}</th>",
                       svg::Colour(i), Escape(d.policies[i]));
    h += "</tr>\n";
    for (size_t bi = 0; bi < d.budgets.paths.size(); ++bi) {
      h += fmt::format("<tr><td>{}</td>", Escape(d.budgets.paths[bi]));
      for (const auto& policy_waits : d.budgets.waits) {
        const auto& by_class = policy_waits[bi];
        const auto w = by_class.find(cls);
        std::string cell = "-";
        if (w != by_class.end() && w->second.p50 && w->second.p90)
          cell = Duration(*w->second.p50) + " / " + Duration(*w->second.p90) + " (" +
                 std::to_string(w->second.count) + ")";
        h += fmt::format("<td>{}</td>", Escape(cell));
      }
      h += "</tr>\n";
    }
    h += "</table></div>\n";
  }
  return h;
}

std::string RenderCompareHtml(const Comparison& c) {
  using svg::Escape;
  const CompareTable t = BuildCompareTable(c.runs);
  const ChartData d = MakeCharts(c.runs);
  const std::string scenario = c.runs.empty() ? std::string() : c.runs.front().scenario;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += fmt::format("<title>Hourglass policy comparison: {}</title>\n", Escape(scenario));
  h += fmt::format("<style>\n{}</style>\n</head>\n<body>\n", kCss);
  h += fmt::format("<h1>Policy comparison: {}</h1>\n", Escape(scenario));
  if (!c.runs.empty()) {
    const SimResult& f = c.runs.front();
    h += fmt::format("<p>{:.1f} days simulated; every figure below comes from this run.</p>\n",
                     static_cast<double>((f.end - f.start).value()) / 86400.0);
  }
  h += "<ul id=\"policies\">\n";
  for (size_t i = 0; i < t.policies.size(); ++i) {
    h += fmt::format(
        "<li data-policy=\"{}\"><span class=\"swatch\" style=\"background:{}\"></span>{}</li>\n",
        Escape(t.policies[i]), svg::Colour(i), Escape(t.policies[i]));
  }
  h += "</ul>\n";
  if (!c.mapping.empty()) {
    h += fmt::format("<h2>How the input became a scenario</h2>\n<pre id=\"mapping\">{}</pre>\n",
                     Escape(c.mapping));
  }
  h += "<h2>Measures</h2>\n<div class=\"table-wrap\"><table "
       "id=\"compare-table\">\n<tr><th>policy</th>";
  for (const CompareColumn& col : t.columns) h += fmt::format("<th>{}</th>", Escape(col.label));
  h += "</tr>\n";
  for (size_t p = 0; p < t.policies.size(); ++p) {
    h += fmt::format(
        "<tr data-policy=\"{}\"><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>",
        Escape(t.policies[p]), svg::Colour(p), Escape(t.policies[p]));
    for (size_t ci = 0; ci < t.columns.size(); ++ci) {
      h += t.best[p][ci] ? fmt::format("<td class=\"best\">{}*</td>", Escape(t.cells[p][ci]))
                         : fmt::format("<td>{}</td>", Escape(t.cells[p][ci]));
    }
    h += "</tr>\n";
  }
  h += "</table></div>\n<p>* (bold) best in its column as shown; ties all marked, none when all "
       "equal. Entitled = entitlement delivered. Waits are nearest-rank percentiles of starts. "
       "Unfunded share is not ranked.</p>\n";
  h += "<h2>Charts</h2>\n";
  if (!c.runs.empty()) h += ChartsHtml(d, c.runs.front());
  if (!d.classes.empty() && !d.budgets.paths.empty()) {
    h += "<h2>Queue waits per budget</h2>\n<p>p50 / p90 wait of each budget's starts (and their "
         "count), by class and policy: whose users wait.</p>\n";
    h += BudgetWaitsHtml(d);
  }
  h += "<h2>Render check</h2>\n<pre id=\"render-check\">not run (scripts disabled?)</pre>\n";
  std::string ids = "[";
  for (const std::string& id : CompareChartIds())
    ids += fmt::format("{}'{}'", ids.size() > 1 ? ", " : "", id);
  ids += "]";
  std::string script = kCheckScript;
  script.replace(script.find("CHARTS"), 6, ids);
  h += script;
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace hg::sim
