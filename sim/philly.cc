#include "sim/philly.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "core/budget_tree.h"
#include "sim/civil_time.h"
#include "sim/csv.h"
#include "sim/rng.h"
#include "sim/text_input.h"

namespace hg::sim {
namespace {

namespace fs = std::filesystem;

constexpr int32_t kGpusPerNode = 8;
constexpr size_t kNodesPerBlock = 16;
// Beyond this the options or the trace are surely wrong; the simulator would only run out of
// memory.
constexpr int64_t kMaxNodes = 1'000'000;
// Same bound as the scenario files: sums of times cannot overflow in the simulator.
constexpr double kMaxSeconds = 1e12;
constexpr int64_t kProtectCap = 30 * 60;       // min_runtime of funded non-debug jobs, at most
constexpr int64_t kResumableOver = 60 * 60;    // jobs longer than this checkpoint...
constexpr int64_t kCheckpointEvery = 30 * 60;  // ...this often

// Hash streams: each decision draws from its own stream so one does not shift the other.
constexpr uint64_t kStreamResearcher = 1;
constexpr uint64_t kStreamUnfunded = 2;

// A well-mixed 64-bit value of (seed, stream, line): the same inputs give the same value on every
// platform, and no decision depends on the order rows are read in.
uint64_t Hash(uint64_t seed, uint64_t stream, int line) {
  uint64_t s = seed;
  uint64_t h = SplitMix64(s);
  s = h ^ (stream * 0xD1342543DE82EF95ULL);
  h = SplitMix64(s);
  s = h ^ static_cast<uint64_t>(line);
  return SplitMix64(s);
}

// Uniform in [0, 1) from the top 53 bits.
double Unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// One decimal, but a tiny non-zero share is not shown as 0.0% (philly-dev has a VC of 0.001%).
std::string Percent(double fraction) {
  const bool tiny = fraction > 0 && fraction < 0.0005;
  return tiny ? fmt::format("{:.3f}%", fraction * 100.0) : fmt::format("{:.1f}%", fraction * 100.0);
}

std::string ProgramName(int i) { return fmt::format("prog{}", i); }

// The offered load the cluster is sized from: total GPU-seconds over the arrival span.
struct Load {
  double gpu_seconds = 0;
  int64_t span = 0;              // seconds the load is spread over
  bool span_is_longest = false;  // all jobs arrived at one instant: span = the longest job
  int32_t largest_job = 0;       // GPUs

  double mean() const { return span > 0 ? gpu_seconds / static_cast<double>(span) : 0; }
};

Load OfferedLoad(const std::vector<SimJob>& jobs) {
  Load l;
  if (jobs.empty()) return l;
  int64_t first = std::numeric_limits<int64_t>::max(), last = 0, longest = 0;
  for (const SimJob& j : jobs) {
    l.gpu_seconds += GpuSeconds(j.spec.gpus, j.duration);
    first = std::min(first, j.spec.submit.value());
    last = std::max(last, j.spec.submit.value());
    longest = std::max(longest, j.duration.value());
    l.largest_job = std::max(l.largest_job, j.spec.gpus.value());
  }
  l.span = last - first;
  // Load per second of an instant is undefined; spreading it over the longest job is what a
  // cluster finishing the burst as fast as its longest job allows would have to carry.
  if (l.span <= 0) {
    l.span = std::max<int64_t>(longest, 1);
    l.span_is_longest = true;
  }
  return l;
}

Result<void> CheckOptions(const PhillyOptions& o) {
  if (!std::isfinite(o.oversubscription) || o.oversubscription <= 0)
    return Fail("oversubscription",
                fmt::format("must be a number > 0, got {}", o.oversubscription));
  if (o.debug_max_minutes < 0 || o.debug_max_minutes > 100'000)
    return Fail(
        "debug_max_minutes",
        fmt::format("must be an integer in 0..100000 (minutes), got {}", o.debug_max_minutes));
  if (o.researchers_per_vc < 1 || o.researchers_per_vc > 10'000)
    return Fail("researchers_per_vc",
                fmt::format("must be an integer in 1..10000, got {}", o.researchers_per_vc));
  if (!(o.unfunded_fraction >= 0 && o.unfunded_fraction <= 1))
    return Fail("unfunded_fraction",
                fmt::format("must be a number in [0, 1], got {}", o.unfunded_fraction));
  if (o.programs < 1 || o.programs > 10'000)
    return Fail("programs", fmt::format("must be an integer in 1..10000, got {}", o.programs));
  return {};
}

// One row of the trace, before times are made relative and budgets assigned.
struct TraceJob {
  int line = 0;
  int64_t arrival = 0;  // Unix seconds
  int64_t duration = 0;
  int32_t gpus = 0;
  std::string vc;
};

class Rows {
 public:
  Rows(const CsvTable& t, const std::string& file) : t_(t), file_(file) {}

  Result<void> CheckHeader() const {
    for (const char* col : {"timestamp", "duration", "num_gpus", "cluster"})
      if (t_.Column(col) < 0)
        return tl::unexpected(At(file_, t_.header_line, col,
                                 "required column is missing from the header (a Philly trace "
                                 "has timestamp,duration,num_gpus,cluster)"));
    return {};
  }

  Result<TraceJob> Parse(const CsvRecord& r) const {
    TraceJob j;
    j.line = r.line;
    auto fail = [&](const char* col, std::string reason) {
      return tl::unexpected(At(file_, r.line, col, std::move(reason)));
    };
    const std::string_view ts = Field(r, "timestamp");
    const std::optional<int64_t> at = ParseUtcDateTime(ts, /*allow_t=*/false);
    if (!at)
      return fail("timestamp",
                  fmt::format("must be a UTC time 'YYYY-MM-DD HH:MM:SS', got '{}'", ts));
    j.arrival = *at;

    const std::string_view dur = Field(r, "duration");
    const std::optional<double> d = ToNumber(dur);
    if (!d || *d < 0)
      return fail("duration", fmt::format("must be a number >= 0 (seconds), got '{}'", dur));
    if (*d > kMaxSeconds)
      return fail("duration",
                  fmt::format("must be at most {:.0f} seconds, got '{}'", kMaxSeconds, dur));
    // Whole seconds, rounded up so no job gets less work than it did; a zero-length run still
    // occupies its GPUs for the one second the simulator can represent.
    j.duration = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(*d)));

    const std::string_view gp = Field(r, "num_gpus");
    const std::optional<double> g = ToNumber(gp);
    // "8.0" is accepted: some exports write integer columns as floats.
    if (!g || *g < 1 || *g != std::floor(*g))
      return fail("num_gpus", fmt::format("must be a positive integer, got '{}'", gp));
    if (*g > std::numeric_limits<int32_t>::max())
      return fail("num_gpus", fmt::format("must be at most {}, got '{}'",
                                          std::numeric_limits<int32_t>::max(), gp));
    j.gpus = static_cast<int32_t>(*g);

    j.vc = std::string(Field(r, "cluster"));
    if (j.vc.empty())
      return fail("cluster", "must name the virtual cluster (VC), got an empty field");
    if (j.vc.find_first_of("/~") != std::string::npos)
      return fail("cluster",
                  fmt::format("'{}' must not contain '/' or '~' (it becomes a budget name)", j.vc));
    return j;
  }

 private:
  std::string_view Field(const CsvRecord& r, std::string_view col) const {
    const int i = t_.Column(col);
    assert(i >= 0);
    return r.fields[static_cast<size_t>(i)];
  }

  const CsvTable& t_;
  const std::string& file_;
};

struct Vc {
  double gpu_seconds = 0;
  int first_line = 0;
};

// Programs > projects (one per VC) > researchers. Projects are dealt round-robin into programs in
// order of descending GPU-time, so each program gets a mix of large and small teams.
std::vector<BudgetSpec> MakeBudgets(const std::map<std::string, Vc>& vcs, double total,
                                    const PhillyOptions& opt) {
  std::vector<std::pair<std::string, Vc>> order(vcs.begin(), vcs.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second.gpu_seconds > b.second.gpu_seconds;  // ties stay in name order
  });
  const size_t programs = std::min(order.size(), static_cast<size_t>(opt.programs));
  std::vector<double> program_share(programs, 0.0);
  for (size_t i = 0; i < order.size(); ++i)
    program_share[i % programs] += order[i].second.gpu_seconds / total;
  std::vector<BudgetSpec> out;
  for (size_t p = 0; p < programs; ++p)
    out.push_back(
        BudgetSpec{ProgramName(static_cast<int>(p)), "", program_share[p], std::nullopt, {}, 0});
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& [name, vc] = order[i];
    out.push_back(BudgetSpec{name,
                             ProgramName(static_cast<int>(i % programs)),
                             vc.gpu_seconds / total,
                             std::nullopt,
                             {},
                             vc.first_line});
    for (int k = 0; k < opt.researchers_per_vc; ++k)
      out.push_back(
          BudgetSpec{fmt::format("{}.r{}", name, k), name, 1.0, std::nullopt, {}, vc.first_line});
  }
  return out;
}

std::string NodeName(size_t i) { return fmt::format("n{:03d}", i); }

}  // namespace

Result<Scenario> ParsePhilly(std::string_view text, const std::string& file_label,
                             const PhillyOptions& opt) {
  if (auto ok = CheckOptions(opt); !ok) return tl::unexpected(ok.error());
  auto table = ParseCsvTable(text, file_label);
  if (!table) return tl::unexpected(table.error());
  const Rows rows(*table, file_label);
  if (auto ok = rows.CheckHeader(); !ok) return tl::unexpected(ok.error());
  if (table->records.empty())
    return tl::unexpected(At(file_label, table->header_line, "", "no jobs under the header"));

  std::vector<TraceJob> trace;
  trace.reserve(table->records.size());
  for (const CsvRecord& r : table->records) {
    auto j = rows.Parse(r);
    if (!j) return tl::unexpected(j.error());
    trace.push_back(std::move(*j));
  }

  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const TraceJob& t : trace) origin = std::min(origin, t.arrival);
  std::map<std::string, Vc> vcs;  // ordered: no hash order decides anything
  double total = 0;
  for (const TraceJob& t : trace) {
    const double gs = static_cast<double>(t.gpus) * static_cast<double>(t.duration);
    Vc& vc = vcs[t.vc];
    if (vc.first_line == 0) vc.first_line = t.line;
    vc.gpu_seconds += gs;
    total += gs;
  }

  Scenario sc;
  sc.name = kPhillyName;
  sc.budgets = MakeBudgets(vcs, total, opt);
  if (auto tree = BudgetTree::Build(sc.budgets); !tree) {
    // Only a VC whose name collides with a generated name ("prog0", "<vc>.r0") gets here.
    Error e = tree.error();
    return tl::unexpected(At(file_label, e.line, "cluster",
                             e.reason + " (budget names made from VC ids and the programs "
                                        "prog0, prog1, ... collide)"));
  }

  const int64_t debug_max = opt.debug_max_minutes * 60;
  sc.jobs.reserve(trace.size());
  int64_t last = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    const TraceJob& t = trace[i];
    SimJob j;
    j.line = t.line;
    JobSpec& s = j.spec;
    s.id = JobId(static_cast<int64_t>(i + 1));
    s.submit = Seconds(t.arrival - origin);
    last = std::max(last, s.submit.value());
    j.duration = Seconds(t.duration);
    s.gpus = Gpus(t.gpus);
    // Whole nodes for multi-node jobs that can fill them; other shapes are left to the engine.
    s.gpus_per_node = Gpus(t.gpus > kGpusPerNode && t.gpus % kGpusPerNode == 0 ? kGpusPerNode : 0);
    const bool debug = t.gpus == 1 && t.duration <= debug_max;
    const bool unfunded =
        !debug && Unit(Hash(opt.seed, kStreamUnfunded, t.line)) < opt.unfunded_fraction;
    const uint64_t who =
        Hash(opt.seed, kStreamResearcher, t.line) % static_cast<uint64_t>(opt.researchers_per_vc);
    j.budget = unfunded ? "" : fmt::format("{}.r{}", t.vc, who);
    s.job_class = debug ? "debug" : unfunded ? "sweep" : "batch";
    s.tier = debug ? 2 : unfunded ? 0 : 1;
    // Debug jobs and unfunded work carry no protection (unfunded work has none to claim); batch
    // jobs are protected for their first 30 minutes, like a typical site's PreemptExemptTime.
    s.min_runtime = Seconds(debug || unfunded ? 0 : std::min(t.duration, kProtectCap));
    s.resumable = t.duration > kResumableOver;
    j.checkpoint_interval = Seconds(s.resumable ? kCheckpointEvery : 0);
    s.grace = Seconds(debug ? 30 : 120);
    sc.jobs.push_back(std::move(j));
  }
  // Ids follow file order, so a stable sort by submit leaves the jobs sorted by (submit, id).
  std::stable_sort(sc.jobs.begin(), sc.jobs.end(),
                   [](const SimJob& a, const SimJob& b) { return a.spec.submit < b.spec.submit; });
  sc.end = Seconds(last) + Days(1);

  const Load load = OfferedLoad(sc.jobs);
  const double wanted = std::ceil(load.mean() / opt.oversubscription / kGpusPerNode);
  const double for_largest = std::ceil(static_cast<double>(load.largest_job) / kGpusPerNode);
  const double nodes = std::max({wanted, for_largest, 1.0});
  if (nodes > static_cast<double>(kMaxNodes))
    return tl::unexpected(
        At(file_label, 0, "oversubscription",
           fmt::format("a mean offered load of {:.0f} GPUs at oversubscription {} needs {:.0f} "
                       "nodes, more than {}",
                       load.mean(), opt.oversubscription, nodes, kMaxNodes)));
  const auto n = static_cast<size_t>(nodes);
  sc.nodes.reserve(n);
  for (size_t i = 0; i < n; ++i)
    sc.nodes.push_back(
        NodeSpec{NodeName(i), kGpusPerNode, "b" + std::to_string(i / kNodesPerBlock), 0});
  return sc;
}

Result<Scenario> LoadPhilly(const std::string& path, const PhillyOptions& opt) {
  if (auto ok = CheckOptions(opt); !ok) return tl::unexpected(ok.error());
  auto text = ReadTextFile(path);
  if (!text) return tl::unexpected(text.error());
  return ParsePhilly(*text, path, opt);
}

std::string DescribeMapping(const Scenario& sc, const PhillyOptions& opt) {
  std::string out =
      fmt::format("Mapping of the Philly trace to scenario '{}' (seed {}):\n", sc.name, opt.seed);
  std::map<std::string, size_t> classes;
  for (const SimJob& j : sc.jobs) ++classes[j.spec.job_class];
  out += fmt::format(
      "  jobs: {} = debug {} (1 GPU, at most {} min) + batch {} + sweep {} (unfunded: {} of "
      "non-debug jobs, chosen by a seeded hash of the line number)\n",
      sc.jobs.size(), classes["debug"], opt.debug_max_minutes, classes["batch"], classes["sweep"],
      Percent(opt.unfunded_fraction));
  const Load load = OfferedLoad(sc.jobs);
  int64_t gpus = 0;
  std::map<std::string, int> blocks;
  for (const NodeSpec& n : sc.nodes) {
    gpus += n.gpus;
    ++blocks[n.block];
  }
  out += fmt::format(
      "  cluster: {} nodes x {} GPUs = {} GPUs in {} blocks of up to {} nodes; mean offered load "
      "{:.1f} GPUs ({:.0f} GPU-hours over {:.1f} days of {}) / oversubscription {} "
      "(at least the largest job, {} GPUs)\n",
      sc.nodes.size(), kGpusPerNode, gpus, blocks.size(), kNodesPerBlock, load.mean(),
      load.gpu_seconds / 3600.0, static_cast<double>(load.span) / 86400.0,
      load.span_is_longest ? "the longest job (all arrived at once)" : "arrivals",
      opt.oversubscription, load.largest_job);
  out += fmt::format(
      "  time: submit = arrival - first arrival; duration = trace duration rounded up to whole "
      "seconds (at least 1); evaluation ends 1 day after the last arrival ({:.2f} days)\n",
      static_cast<double>(sc.end.value()) / 86400.0);
  out += fmt::format(
      "  budgets: each VC is a project whose share is its share of the trace's GPU-time; projects "
      "are dealt round-robin into {} programs by descending share; the trace has no users, so "
      "each project has {} synthetic researchers <vc>.r0..r{} (share 1) and each funded job is "
      "charged to one chosen by a seeded hash of (seed {}, line number)\n",
      std::count_if(sc.budgets.begin(), sc.budgets.end(),
                    [](const BudgetSpec& b) { return b.parent.empty(); }),
      opt.researchers_per_vc, opt.researchers_per_vc - 1, opt.seed);
  for (const BudgetSpec& p : sc.budgets) {
    if (!p.parent.empty()) continue;
    std::string projects;
    for (const BudgetSpec& b : sc.budgets)
      if (b.parent == p.name)
        projects += fmt::format("{}{} {}", projects.empty() ? "" : ", ", b.name, Percent(b.share));
    out += fmt::format("    {} {}: {}\n", p.name, Percent(p.share), projects);
  }
  out += fmt::format(
      "  contract (not in the trace, chosen here): debug: min_runtime 0, grace 30 s, tier 2; "
      "batch: min_runtime min(duration, 30 min), grace 120 s, tier 1; sweep: unfunded, "
      "min_runtime 0, grace 120 s, tier 0; jobs over 1 h are resumable with a checkpoint every "
      "30 min; jobs of more than 8 GPUs in multiples of 8 ask for 8 GPUs per node\n");
  return out;
}

}  // namespace hg::sim
