#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <set>
#include <utility>

namespace hg::sim {

const char* ToString(StopCause c) {
  switch (c) {
    case StopCause::kUnfunded:
      return "unfunded";
    case StopCause::kFairShare:
      return "fair-share";
    case StopCause::kReservation:
      return "reservation";
    case StopCause::kOwnBudget:
      return "own-budget";
    case StopCause::kDrain:
      return "drain";
    case StopCause::kDrainForced:
      return "drain-forced";
    case StopCause::kPriority:
      return "priority";
    case StopCause::kNodeLost:
      return "node-lost";
    case StopCause::kMaxRuntime:
      return "max-runtime";
  }
  return "?";
}

namespace {

constexpr std::array<StopCause, 9> kAllCauses = {
    StopCause::kUnfunded,  StopCause::kFairShare, StopCause::kReservation,
    StopCause::kOwnBudget, StopCause::kDrain,     StopCause::kDrainForced,
    StopCause::kPriority,  StopCause::kNodeLost,  StopCause::kMaxRuntime};

std::optional<double> Ratio(double num, double den) {
  if (!(den > 0)) return std::nullopt;
  return num / den;
}

WaitStats Summarise(std::vector<int64_t> samples, int64_t never_started) {
  std::sort(samples.begin(), samples.end());
  WaitStats w;
  w.p50 = Percentile(samples, 50);
  w.p90 = Percentile(samples, 90);
  w.p99 = Percentile(samples, 99);
  w.count = static_cast<int64_t>(samples.size());
  w.never_started = never_started;
  return w;
}

}  // namespace

size_t SizeBucket(int32_t gpus) {
  if (gpus <= 1) return 0;
  if (gpus <= 8) return 1;
  if (gpus <= 64) return 2;
  if (gpus <= 256) return 3;
  return 4;
}

std::string SizeLabel(size_t i) {
  return fmt::format("{} GPU{}", kSizeBuckets[i], i == 0 ? "" : "s");
}

std::array<WaitSplit, kSizeBuckets.size()> FundedWaitBySize(const SimResult& r) {
  std::array<WaitSplit, kSizeBuckets.size()> by_size{};
  for (const auto& [gpus, w] : r.funded_wait_by_gpus) by_size[SizeBucket(gpus)] += w;
  return by_size;
}

std::optional<int64_t> Percentile(const std::vector<int64_t>& sorted, int percent) {
  assert(percent >= 1 && percent <= 100);
  assert(std::is_sorted(sorted.begin(), sorted.end()));
  if (sorted.empty()) return std::nullopt;
  const int64_t n = static_cast<int64_t>(sorted.size());
  const int64_t rank = (percent * n + 99) / 100;  // ceil(percent/100 * n), in 1..n
  return sorted[static_cast<size_t>(rank - 1)];
}

std::string ClassKey(const std::string& job_class) {
  if (job_class.empty()) return "unlabeled";
  if (job_class == "all") return "class:all";
  return job_class;
}

std::vector<std::map<std::string, WaitStats>> WaitsByBudget(const SimResult& r) {
  struct Samples {
    std::vector<int64_t> waits;
    int64_t never_started = 0;
  };
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < r.budgets.size(); ++i) index.emplace(r.budgets[i].path, i);
  std::vector<std::map<std::string, Samples>> samples(r.budgets.size());
  for (const JobRecord& j : r.jobs) {
    if (j.budget.empty()) continue;
    const std::string cls = ClassKey(j.job_class);
    const bool started = j.attempts > 0 || !j.waits.empty();
    // "a/b/c" counts for "a/b/c", "a/b" and "a".
    for (size_t end = 0; end != std::string::npos;) {
      end = j.budget.find('/', end + 1);
      const auto it = index.find(j.budget.substr(0, end));
      if (it == index.end()) continue;
      Samples& s = samples[it->second][cls];
      for (Seconds w : j.waits) s.waits.push_back(w.value());
      if (!started) ++s.never_started;
    }
  }
  std::vector<std::map<std::string, WaitStats>> out(r.budgets.size());
  for (size_t i = 0; i < out.size(); ++i)
    for (auto& [cls, s] : samples[i]) out[i][cls] = Summarise(std::move(s.waits), s.never_started);
  return out;
}

Measures Compute(const SimResult& r) {
  Measures m;
  m.policy = r.policy;
  m.capacity_gpu_hours = r.capacity_gpu_hours;
  m.allocated_gpu_hours = r.allocated_gpu_hours;
  m.unfunded_gpu_hours = r.unfunded_gpu_hours;
  m.occupancy = Ratio(r.allocated_gpu_hours, r.capacity_gpu_hours);
  m.unfunded_share = Ratio(r.unfunded_gpu_hours, r.allocated_gpu_hours);
  m.events = r.events;
  m.cycles = r.cycles;

  // Queue waits and job counts.
  struct Samples {
    std::vector<int64_t> waits;
    int64_t never_started = 0;
  };
  std::map<std::string, Samples> by_class;
  std::array<Samples, kSizeBuckets.size()> by_size;
  Samples all;
  std::map<std::string, std::vector<int64_t>> delays;
  for (const JobRecord& j : r.jobs) {
    Samples& c = by_class[ClassKey(j.job_class)];
    Samples& s = by_size[SizeBucket(j.gpus)];
    const bool started = j.attempts > 0 || !j.waits.empty();
    for (Seconds w : j.waits) {
      c.waits.push_back(w.value());
      s.waits.push_back(w.value());
      all.waits.push_back(w.value());
    }
    if (!started) {
      ++c.never_started;
      ++s.never_started;
      ++all.never_started;
    }
    ++m.jobs.submitted;
    if (started) ++m.jobs.started;
    m.jobs.resubmissions += j.resubmissions;
    if (j.delay) delays[ClassKey(j.job_class)].push_back(j.delay->value());
    switch (j.final_state) {
      case JobState::kPending:
        ++m.jobs.pending;
        break;
      case JobState::kRunning:
        ++m.jobs.running;
        break;
      case JobState::kSucceeded:
        ++m.jobs.succeeded;
        break;
      case JobState::kFailed:
        ++m.jobs.failed;
        break;
      case JobState::kCancelled:
        ++m.jobs.cancelled;
        break;
      case JobState::kPreempted:
        ++m.jobs.preempted;
        break;
    }
  }
  for (auto& [cls, s] : by_class)
    m.wait_by_class[cls] = Summarise(std::move(s.waits), s.never_started);
  m.funded_wait_split = FundedWaitBySize(r);
  for (const auto& [cls, w] : r.funded_wait_by_class)
    m.funded_wait_split_by_class[ClassKey(cls)] = w;
  for (size_t i = 0; i < by_size.size(); ++i) {
    m.wait_by_size[i] = Summarise(std::move(by_size[i].waits), by_size[i].never_started);
  }
  m.wait_all = Summarise(std::move(all.waits), all.never_started);
  for (auto& [cls, d] : delays) m.delay_by_class[cls] = Summarise(std::move(d), 0);

  // Preemptions. Every cause and every class of the workload appear, zeros included, so tools
  // see the same keys whichever policy ran.
  for (StopCause c : kAllCauses) m.preemptions_by_cause[ToString(c)] = 0;
  for (const auto& [cls, w] : m.wait_by_class) {
    m.preemptions_by_class[cls] = 0;
    m.lost_gpu_hours_by_class[cls] = 0;
    m.stopped_within_minute_by_class[cls] = 0;
  }
  // The last stop of a job of leaf A for a job of leaf B, by (A, B). Records come in time order.
  // Less than an hour after, as PolicyConfig::take_back_cooldown counts: an hour's cool-down
  // lapses at the hour.
  std::map<std::pair<int32_t, int32_t>, Seconds> last_stop;
  for (const PreemptionRecord& p : r.preemptions) {
    if (p.budget >= 0 && p.for_budget >= 0 && p.budget != p.for_budget) {
      const auto back = last_stop.find({p.for_budget, p.budget});
      if (back != last_stop.end() && p.at - back->second < Seconds(3600))
        ++m.taken_back_within_hour;
      last_stop[{p.budget, p.for_budget}] = p.at;
    }
    const std::string cls = ClassKey(p.job_class);
    ++m.preemptions;
    ++m.preemptions_by_cause[ToString(p.cause)];
    ++m.preemptions_by_class[cls];
    m.lost_gpu_hours += p.lost_gpu_hours;
    m.lost_gpu_hours_by_class[cls] += p.lost_gpu_hours;
    if (p.cause != StopCause::kMaxRuntime && p.run < Minutes(1)) {
      ++m.stopped_within_minute_by_class[cls];
      ++m.stopped_within_minute;
    }
    if (p.contract_violation) ++m.contract_violations;
    if (p.active_session) ++m.active_sessions_stopped;
  }

  // Entitlement: capped per budget so one budget's surplus cannot mask another's shortfall.
  double leaf_capped = 0, leaf_owed = 0;
  std::map<int, std::pair<double, double>> level;  // depth -> (capped delivered, owed)
  std::vector<std::map<std::string, WaitStats>> budget_waits = WaitsByBudget(r);
  for (size_t i = 0; i < r.budgets.size(); ++i) {
    const BudgetTotals& b = r.budgets[i];
    const double capped = std::min(b.delivered_gpu_hours, b.owed_gpu_hours);
    if (b.leaf) {
      leaf_capped += capped;
      leaf_owed += b.owed_gpu_hours;
      m.over_delivered_gpu_hours += b.delivered_gpu_hours - capped;
    }
    auto& [lc, lo] = level[b.depth];
    lc += capped;
    lo += b.owed_gpu_hours;
    m.budgets.push_back(
        BudgetMeasure{b.path, b.depth, b.leaf, b.owed_gpu_hours, b.delivered_gpu_hours,
                      Ratio(b.delivered_gpu_hours, b.owed_gpu_hours), std::move(budget_waits[i])});
  }
  m.entitlement_delivered = Ratio(leaf_capped, leaf_owed);
  m.owed_gpu_hours = leaf_owed;
  m.undelivered = r.undelivered;
  for (const auto& [depth, cd] : level) m.entitlement_by_level[depth] = Ratio(cd.first, cd.second);

  // Drains.
  std::vector<int64_t> latencies;
  std::map<std::string, std::vector<int64_t>> by_holder;
  for (const DrainRecord& d : r.drains) {
    ++m.drains.count;
    if (d.manual || d.lost) ++m.drains.manual_interventions;
    if (d.lost) continue;
    if (d.empty_at == kNever) {
      ++m.drains.still_draining;
    } else {
      latencies.push_back((d.empty_at - d.unhealthy_at).value());
      const std::string holder = d.holder_class.empty() ? "none" : d.holder_class;
      by_holder[holder].push_back(latencies.back());
      DrainMeasures::ByHolder& h = m.drains.by_holder[holder];
      ++h.count;
      if (d.holder_restarted) ++h.restarted;
    }
  }
  for (auto& [holder, l] : by_holder) {
    std::sort(l.begin(), l.end());
    m.drains.by_holder[holder].latency_p50 = Percentile(l, 50);
    m.drains.by_holder[holder].latency_p90 = Percentile(l, 90);
  }
  std::sort(latencies.begin(), latencies.end());
  m.drains.latency_p50 = Percentile(latencies, 50);
  m.drains.latency_p90 = Percentile(latencies, 90);
  m.drains.latency_max = Percentile(latencies, 100);
  return m;
}

// ---------------------------------------------------------------------------------------------
// JSON

namespace {

// Rounded to 4 decimals so tiny floating-point differences do not change the bytes; -0 becomes 0
// and non-finite values null.
nlohmann::json Num(double x) {
  if (!std::isfinite(x)) return nullptr;
  const double v = std::round(x * 1e4) / 1e4;
  return v == 0 ? 0.0 : v;
}

nlohmann::json Num(const std::optional<double>& x) { return x ? Num(*x) : nlohmann::json(); }

nlohmann::json Int(const std::optional<int64_t>& x) { return x ? nlohmann::json(*x) : nullptr; }

nlohmann::json WaitJson(const WaitStats& w) {
  return {{"p50", Int(w.p50)},
          {"p90", Int(w.p90)},
          {"p99", Int(w.p99)},
          {"count", w.count},
          {"never_started", w.never_started}};
}

nlohmann::json SplitJson(const WaitSplit& w) {
  return {{"job_hours", Num(w.total())},
          {"short_of_gpus", Num(w.short_of_gpus)},
          {"fragmented", Num(w.fragmented)},
          {"placeable", Num(w.placeable)},
          {"victims_leaving", Num(w.victims_leaving)}};
}

nlohmann::json PolicyJson(const SimResult& r) {
  const Measures m = Compute(r);
  nlohmann::json p = nlohmann::json::object();
  p["occupancy"] = Num(m.occupancy);
  p["entitlement_delivered"] = Num(m.entitlement_delivered);
  p["unfunded_share"] = Num(m.unfunded_share);

  nlohmann::json wait = nlohmann::json::object();
  for (const auto& [cls, w] : m.wait_by_class) wait[cls] = WaitJson(w);
  wait["all"] = WaitJson(m.wait_all);
  p["wait_s"] = std::move(wait);
  nlohmann::json delay = nlohmann::json::object();
  for (const auto& [cls, w] : m.delay_by_class)
    delay[cls] = {{"p50", Int(w.p50)}, {"p90", Int(w.p90)}, {"p99", Int(w.p99)}, {"jobs", w.count}};
  p["delay_s"] = std::move(delay);
  nlohmann::json by_size = nlohmann::json::object();
  for (size_t i = 0; i < kSizeBuckets.size(); ++i)
    by_size[kSizeBuckets[i]] = WaitJson(m.wait_by_size[i]);
  p["wait_s_by_size"] = std::move(by_size);
  nlohmann::json split = nlohmann::json::object();
  for (size_t i = 0; i < kSizeBuckets.size(); ++i) {
    split[kSizeBuckets[i]] = SplitJson(m.funded_wait_split[i]);
  }
  p["funded_wait_job_hours_by_size"] = std::move(split);
  nlohmann::json split_class = nlohmann::json::object();
  for (const auto& [cls, w] : m.funded_wait_split_by_class) split_class[cls] = SplitJson(w);
  p["funded_wait_job_hours_by_class"] = std::move(split_class);

  p["preemptions"] = m.preemptions;
  p["preemptions_by_cause"] = m.preemptions_by_cause;
  p["preemptions_by_class"] = m.preemptions_by_class;
  p["stopped_within_1m_by_class"] = m.stopped_within_minute_by_class;
  p["lost_gpu_hours"] = Num(m.lost_gpu_hours);
  nlohmann::json lost = nlohmann::json::object();
  for (const auto& [cls, h] : m.lost_gpu_hours_by_class) lost[cls] = Num(h);
  p["lost_gpu_hours_by_class"] = std::move(lost);
  p["contract_violations"] = m.contract_violations;
  p["active_sessions_stopped"] = m.active_sessions_stopped;
  p["taken_back_within_1h"] = m.taken_back_within_hour;

  nlohmann::json levels = nlohmann::json::object();
  for (const auto& [depth, x] : m.entitlement_by_level) levels[std::to_string(depth)] = Num(x);
  p["entitlement_by_level"] = std::move(levels);
  const Undelivered& u = m.undelivered;
  p["shortfall"] = {
      {"owed_gpu_hours", Num(m.owed_gpu_hours)},
      {"over_delivered_gpu_hours", Num(m.over_delivered_gpu_hours)},
      {"undelivered_gpu_hours", Num(u.total())},
      {"at_capacity",
       {{"hours", Num(u.at_capacity_hours)},
        {"unfunded_alone_gpu_hours", Num(u.unfunded_alone)},
        {"unfunded_beside_funded_gpu_hours", Num(u.unfunded_beside_funded)},
        {"idle_gpu_hours", Num(u.idle)}}},
      {"below_capacity",
       {{"hours", Num(u.below_capacity_hours)}, {"waiting_gpu_hours", Num(u.waiting)}}}};
  nlohmann::json budgets = nlohmann::json::array();
  for (const BudgetMeasure& b : m.budgets) {
    budgets.push_back({{"path", b.path},
                       {"depth", b.depth},
                       {"owed_gpu_hours", Num(b.owed_gpu_hours)},
                       {"delivered_gpu_hours", Num(b.delivered_gpu_hours)},
                       {"ratio", Num(b.ratio)}});
    nlohmann::json budget_wait = nlohmann::json::object();
    for (const auto& [cls, w] : b.wait_by_class) budget_wait[cls] = WaitJson(w);
    budgets.back()["wait_s"] = std::move(budget_wait);
  }
  p["budgets"] = std::move(budgets);

  p["drains"] = {{"count", m.drains.count},
                 {"latency_s",
                  {{"p50", Int(m.drains.latency_p50)},
                   {"p90", Int(m.drains.latency_p90)},
                   {"max", Int(m.drains.latency_max)}}},
                 {"still_draining", m.drains.still_draining},
                 {"manual_interventions", m.drains.manual_interventions}};
  nlohmann::json holders = nlohmann::json::object();
  for (const auto& [holder, h] : m.drains.by_holder)
    holders[holder] = {{"count", h.count},
                       {"restarted", h.restarted},
                       {"latency_s", {{"p50", Int(h.latency_p50)}, {"p90", Int(h.latency_p90)}}}};
  p["drains"]["by_holder"] = std::move(holders);
  p["jobs"] = {{"submitted", m.jobs.submitted},
               {"started", m.jobs.started},
               {"succeeded", m.jobs.succeeded},
               {"failed", m.jobs.failed},
               {"preempted", m.jobs.preempted},
               {"cancelled", m.jobs.cancelled},
               {"pending", m.jobs.pending},
               {"running", m.jobs.running},
               {"resubmissions", m.jobs.resubmissions}};
  p["capacity_gpu_hours"] = Num(m.capacity_gpu_hours);
  p["allocated_gpu_hours"] = Num(m.allocated_gpu_hours);
  p["unfunded_gpu_hours"] = Num(m.unfunded_gpu_hours);

  nlohmann::json series = nlohmann::json::array();
  for (const SeriesPoint& s : r.series) {
    series.push_back({{"t", s.at.value()},
                      {"capacity", Num(s.capacity)},
                      {"allocated", Num(s.allocated)},
                      {"unfunded", Num(s.unfunded)},
                      {"largest_free", s.largest_free}});
  }
  p["series"] = std::move(series);
  p["events"] = m.events;
  p["cycles"] = m.cycles;
  return p;
}

}  // namespace

nlohmann::json ToJson(const std::vector<SimResult>& runs) {
  nlohmann::json j = nlohmann::json::object();
  j["scenario"] = runs.empty() ? std::string() : runs.front().scenario;
  j["start_s"] = runs.empty() ? int64_t{0} : runs.front().start.value();
  j["end_s"] = runs.empty() ? int64_t{0} : runs.front().end.value();
  nlohmann::json policies = nlohmann::json::object();
  const std::vector<std::string> names = UniqueNames(runs);
  for (size_t i = 0; i < runs.size(); ++i) policies[names[i]] = PolicyJson(runs[i]);
  j["policies"] = std::move(policies);
  return j;
}

std::string RenderJson(const std::vector<SimResult>& runs) { return ToJson(runs).dump(2) + "\n"; }

// ---------------------------------------------------------------------------------------------
// Table

namespace {

std::string Pct(const std::optional<double>& x) {
  return x ? fmt::format("{:.1f}%", *x * 100.0) : std::string("-");
}

// "12s", "4.5m", "2.1h", "1.3d": a duration a person reads at a glance.
std::string Duration(const std::optional<int64_t>& s) {
  if (!s) return "-";
  const double v = static_cast<double>(*s);
  if (*s < 60) return fmt::format("{}s", *s);
  if (*s < 3600) return fmt::format("{:.1f}m", v / 60.0);
  if (*s < 86400) return fmt::format("{:.1f}h", v / 3600.0);
  return fmt::format("{:.1f}d", v / 86400.0);
}

std::string Hours(double h) { return fmt::format("{:.1f}", h); }

std::string Ratio2(const std::optional<double>& x) {
  return x ? fmt::format("{:.3f}", *x) : std::string("-");
}

// Rows of cells rendered with padded columns: the first left-aligned, the others right-aligned.
// A row with a single cell is a section heading.
class Grid {
 public:
  void Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void Heading(std::string title) { rows_.push_back({std::move(title)}); }

  std::string Render() const {
    std::vector<size_t> width;
    for (const auto& row : rows_) {
      if (row.size() == 1) continue;
      if (width.size() < row.size()) width.resize(row.size(), 0);
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    std::string out;
    for (const auto& row : rows_) {
      if (row.size() == 1) {
        out += row[0];
      } else {
        std::string line;
        for (size_t i = 0; i < row.size(); ++i) {
          if (i == 0) {
            line += fmt::format("{:<{}}", row[i], width[i]);
          } else {
            line += fmt::format("  {:>{}}", row[i], width[i]);
          }
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line;
      }
      out += '\n';
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace

std::string RenderTable(const std::vector<SimResult>& runs) {
  std::vector<Measures> ms;
  for (const SimResult& r : runs) ms.push_back(Compute(r));
  const std::vector<std::string> names = UniqueNames(runs);

  // Every class any run saw, sorted.
  std::set<std::string> classes;
  for (const Measures& m : ms) {
    for (const auto& [cls, w] : m.wait_by_class) classes.insert(cls);
  }

  std::string out;
  if (!runs.empty()) {
    const SimResult& f = runs.front();
    out += fmt::format("scenario {}  ({:.1f} days simulated)\n\n", f.scenario,
                       static_cast<double>((f.end - f.start).value()) / 86400.0);
  }

  Grid g;
  auto row = [&](std::string label, auto cell) {
    std::vector<std::string> cells{std::move(label)};
    for (const Measures& m : ms) cells.push_back(cell(m));
    g.Row(std::move(cells));
  };
  {
    std::vector<std::string> header{"measure"};
    header.insert(header.end(), names.begin(), names.end());
    g.Row(std::move(header));
  }
  row("occupancy", [](const Measures& m) { return Pct(m.occupancy); });
  row("entitlement delivered", [](const Measures& m) { return Pct(m.entitlement_delivered); });
  std::set<int> depths;
  for (const Measures& m : ms) {
    for (const auto& [depth, x] : m.entitlement_by_level) depths.insert(depth);
  }
  for (int depth : depths) {
    row(fmt::format("  at level {}", depth), [&](const Measures& m) {
      auto it = m.entitlement_by_level.find(depth);
      return it == m.entitlement_by_level.end() ? std::string("-") : Pct(it->second);
    });
  }
  // The entitlement gap, split: what went to leaves beyond what they were owed, and owed time
  // funded work did not hold (Undelivered in sim/result.h).
  row("  over-delivered GPU-h",
      [](const Measures& m) { return Hours(m.over_delivered_gpu_hours); });
  row("  undelivered GPU-h", [](const Measures& m) { return Hours(m.undelivered.total()); });
  row("    demand >= GPUs: unfunded alone",
      [](const Measures& m) { return Hours(m.undelivered.unfunded_alone); });
  row("    demand >= GPUs: unfunded beside funded",
      [](const Measures& m) { return Hours(m.undelivered.unfunded_beside_funded); });
  row("    demand >= GPUs: idle", [](const Measures& m) { return Hours(m.undelivered.idle); });
  row("    demand < GPUs: funded waiting",
      [](const Measures& m) { return Hours(m.undelivered.waiting); });
  row("unfunded share", [](const Measures& m) { return Pct(m.unfunded_share); });
  auto wait_rows = [&](const std::string& label, auto stats) {
    row(label + " wait p50", [&](const Measures& m) { return Duration(stats(m).p50); });
    row(label + " wait p90", [&](const Measures& m) { return Duration(stats(m).p90); });
    row(label + " wait p99", [&](const Measures& m) { return Duration(stats(m).p99); });
    row(label + " starts", [&](const Measures& m) { return std::to_string(stats(m).count); });
    row(label + " never started",
        [&](const Measures& m) { return std::to_string(stats(m).never_started); });
  };
  static const WaitStats kNone;
  for (const std::string& cls : classes) {
    wait_rows(cls, [&](const Measures& m) -> const WaitStats& {
      auto it = m.wait_by_class.find(cls);
      return it == m.wait_by_class.end() ? kNone : it->second;
    });
  }
  wait_rows("all", [](const Measures& m) -> const WaitStats& { return m.wait_all; });
  // Submission to completion beyond the job's duration, over completed jobs (JobRecord::delay).
  for (const std::string& cls : classes) {
    auto delay = [&](const Measures& m) -> const WaitStats& {
      auto it = m.delay_by_class.find(cls);
      return it == m.delay_by_class.end() ? kNone : it->second;
    };
    row(cls + " delay p50", [&](const Measures& m) { return Duration(delay(m).p50); });
    row(cls + " delay p90", [&](const Measures& m) { return Duration(delay(m).p90); });
  }
  for (size_t i = 0; i < kSizeBuckets.size(); ++i) {
    const std::string label = SizeLabel(i);
    row(label + " wait p90", [&](const Measures& m) { return Duration(m.wait_by_size[i].p90); });
  }
  // Where the funded jobs' waiting went, per size (sim/wait_split.h): the share of their
  // waiting job-hours spent short of GPUs / fragmented / placeable / with victims leaving.
  auto shares = [](const WaitSplit& w) {
    if (!(w.total() > 0)) return std::string("-");
    auto pct = [&](double x) { return fmt::format("{:.0f}", 100.0 * x / w.total()); };
    return fmt::format("{}/{}/{}/{}%", pct(w.short_of_gpus), pct(w.fragmented), pct(w.placeable),
                       pct(w.victims_leaving));
  };
  for (size_t i = 0; i < kSizeBuckets.size(); ++i) {
    const std::string label = SizeLabel(i);
    row(label + " funded wait short/frag/place/grace",
        [&](const Measures& m) { return shares(m.funded_wait_split[i]); });
  }
  std::set<std::string> funded_classes;
  for (const Measures& m : ms)
    for (const auto& [cls, w] : m.funded_wait_split_by_class) funded_classes.insert(cls);
  for (const std::string& cls : funded_classes) {
    row(cls + " funded wait short/frag/place/grace", [&](const Measures& m) {
      auto it = m.funded_wait_split_by_class.find(cls);
      return it == m.funded_wait_split_by_class.end() ? std::string("-") : shares(it->second);
    });
  }

  row("preemptions", [](const Measures& m) { return std::to_string(m.preemptions); });
  for (StopCause c : kAllCauses) {
    const std::string cause = ToString(c);
    row("  by " + cause,
        [&](const Measures& m) { return std::to_string(m.preemptions_by_cause.at(cause)); });
  }
  row("lost GPU-h", [](const Measures& m) { return Hours(m.lost_gpu_hours); });
  for (const std::string& cls : classes) {
    row("  " + cls, [&](const Measures& m) {
      auto it = m.lost_gpu_hours_by_class.find(cls);
      return Hours(it == m.lost_gpu_hours_by_class.end() ? 0.0 : it->second);
    });
  }
  row("stopped within 1 min of start",
      [](const Measures& m) { return std::to_string(m.stopped_within_minute); });
  for (const std::string& cls : classes) {
    row("  " + cls, [&](const Measures& m) {
      auto it = m.stopped_within_minute_by_class.find(cls);
      return std::to_string(it == m.stopped_within_minute_by_class.end() ? 0 : it->second);
    });
  }
  row("contract violations",
      [](const Measures& m) { return std::to_string(m.contract_violations); });
  row("active sessions stopped",
      [](const Measures& m) { return std::to_string(m.active_sessions_stopped); });
  row("taken back within 1 h",
      [](const Measures& m) { return std::to_string(m.taken_back_within_hour); });
  row("drains", [](const Measures& m) { return std::to_string(m.drains.count); });
  row("drain latency p90", [](const Measures& m) { return Duration(m.drains.latency_p90); });
  row("still draining", [](const Measures& m) { return std::to_string(m.drains.still_draining); });
  row("manual interventions",
      [](const Measures& m) { return std::to_string(m.drains.manual_interventions); });
  row("jobs submitted", [](const Measures& m) { return std::to_string(m.jobs.submitted); });
  row("jobs succeeded", [](const Measures& m) { return std::to_string(m.jobs.succeeded); });
  row("jobs failed", [](const Measures& m) { return std::to_string(m.jobs.failed); });
  row("jobs preempted", [](const Measures& m) { return std::to_string(m.jobs.preempted); });
  row("jobs pending/running at end",
      [](const Measures& m) { return fmt::format("{}/{}", m.jobs.pending, m.jobs.running); });
  row("resubmissions of killed jobs",
      [](const Measures& m) { return std::to_string(m.jobs.resubmissions); });
  row("events", [](const Measures& m) { return std::to_string(m.events); });
  row("cycles", [](const Measures& m) { return std::to_string(m.cycles); });
  out += g.Render();

  // Programs and projects: owed, delivered and ratio per policy. Budgets in the order the first
  // run listed them (depth-first), then any only later runs know.
  std::vector<std::pair<std::string, int>> paths;
  std::set<std::string> seen;
  for (const Measures& m : ms) {
    for (const BudgetMeasure& b : m.budgets) {
      if (b.depth < 1 || b.depth > 2) continue;
      if (seen.insert(b.path).second) paths.emplace_back(b.path, b.depth);
    }
  }
  if (!paths.empty()) {
    Grid bg;
    std::vector<std::string> h1{""}, h2{"budget (GPU-h)"};
    for (const std::string& n : names) {
      h1.insert(h1.end(), {"", n, ""});
      h2.insert(h2.end(), {"owed", "delivered", "ratio"});
    }
    bg.Row(std::move(h1));
    bg.Row(std::move(h2));
    for (const auto& entry : paths) {
      // Named members, not a structured binding: clang 14 cannot capture one in a lambda.
      const std::string& path = entry.first;
      const int depth = entry.second;
      std::vector<std::string> cells{std::string(static_cast<size_t>(2 * (depth - 1)), ' ') + path};
      for (const Measures& m : ms) {
        auto it = std::find_if(m.budgets.begin(), m.budgets.end(),
                               [&](const BudgetMeasure& b) { return b.path == path; });
        if (it == m.budgets.end()) {
          cells.insert(cells.end(), {"-", "-", "-"});
        } else {
          cells.insert(cells.end(), {Hours(it->owed_gpu_hours), Hours(it->delivered_gpu_hours),
                                     Ratio2(it->ratio)});
        }
      }
      bg.Row(std::move(cells));
    }
    out += '\n';
    out += bg.Render();
  }
  return out;
}

std::vector<std::string> UniqueNames(const std::vector<SimResult>& runs) {
  std::vector<std::string> names;
  std::set<std::string> used;
  for (const SimResult& r : runs) {
    std::string name = r.policy;
    for (int k = 2; used.count(name) > 0; ++k) name = fmt::format("{}#{}", r.policy, k);
    used.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

}  // namespace hg::sim
