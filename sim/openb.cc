#include "sim/openb.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "core/budget_tree.h"
#include "sim/csv.h"
#include "sim/rng.h"
#include "sim/text_input.h"
#include "sim/trace.h"

namespace hg::sim {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxSeconds = 1'000'000'000'000;
constexpr int64_t kDebugMax = 30 * 60;         // a funded 1-GPU task this short is debug
constexpr int64_t kProtectCap = 30 * 60;       // min_runtime of funded non-debug tasks, at most
constexpr int64_t kResumableOver = 60 * 60;    // tasks longer than this checkpoint...
constexpr int64_t kCheckpointEvery = 30 * 60;  // ...this often

// A non-negative integer, or nullopt.
std::optional<int64_t> ToCount(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

class Table {
 public:
  Table(const CsvTable& t, const std::string& file) : t_(t), file_(file) {}

  Result<void> Require(std::initializer_list<const char*> cols, const char* what) const {
    for (const char* c : cols)
      if (t_.Column(c) < 0)
        return tl::unexpected(
            At(file_, t_.header_line, c,
               fmt::format("required column is missing from the header ({})", what)));
    return {};
  }
  bool Has(std::string_view col) const { return t_.Column(col) >= 0; }

  std::string_view Field(const CsvRecord& r, std::string_view col) const {
    const int i = t_.Column(col);
    assert(i >= 0);
    return r.fields[static_cast<size_t>(i)];
  }

  // A non-negative integer no larger than `max`.
  Result<int64_t> Count(const CsvRecord& r, const char* col, int64_t max) const {
    const std::string_view v = Field(r, col);
    const std::optional<int64_t> n = ToCount(v);
    if (!n)
      return tl::unexpected(
          At(file_, r.line, col, fmt::format("must be an integer >= 0, got '{}'", v)));
    if (*n > max)
      return tl::unexpected(
          At(file_, r.line, col, fmt::format("must be at most {}, got '{}'", max, v)));
    return *n;
  }

 private:
  const CsvTable& t_;
  const std::string& file_;
};

// 64-bit FNV-1a of the name mixed with the seed: the same task goes to the same project on every
// platform, whatever the other rows are.
uint64_t NameHash(uint64_t seed, std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ULL;
  }
  uint64_t s = seed ^ h;
  return SplitMix64(s);
}

std::string ProgramName(int i) { return fmt::format("prog{}", i); }
std::string ProjectName(int i) { return fmt::format("proj{}", i); }

Result<void> CheckOptions(const OpenbOptions& o) {
  if (o.programs < 1 || o.programs > 1000)
    return Fail("programs", fmt::format("must be an integer in 1..1000, got {}", o.programs));
  if (o.projects_per_program < 1 || o.projects_per_program > 1000)
    return Fail("projects_per_program",
                fmt::format("must be an integer in 1..1000, got {}", o.projects_per_program));
  return {};
}

}  // namespace

Result<OpenbNodes> ParseOpenbNodes(std::string_view text, const std::string& file_label) {
  auto table = ParseCsvTable(text, file_label);
  if (!table) return tl::unexpected(table.error());
  const Table t(*table, file_label);
  if (auto ok = t.Require({"sn", "gpu", "model"}, "an openb node list has sn,gpu,model"); !ok)
    return tl::unexpected(ok.error());
  OpenbNodes out;
  std::map<std::string, int, std::less<>> seen;
  for (const CsvRecord& r : table->records) {
    ++out.rows;
    const std::string_view sn = t.Field(r, "sn");
    if (sn.empty()) return tl::unexpected(At(file_label, r.line, "sn", "must name the node"));
    if (auto [it, fresh] = seen.emplace(std::string(sn), r.line); !fresh)
      return tl::unexpected(
          At(file_label, r.line, "sn",
             fmt::format("node '{}' is listed twice (first on line {})", sn, it->second)));
    auto gpus = t.Count(r, "gpu", 1024);
    if (!gpus) return tl::unexpected(gpus.error());
    if (*gpus == 0) {  // a CPU node: nothing for a GPU scheduler to place on
      ++out.no_gpu;
      continue;
    }
    out.nodes.push_back(NodeSpec{std::string(sn), static_cast<int32_t>(*gpus),
                                 std::string(t.Field(r, "model")), r.line});
  }
  if (out.nodes.empty())
    return tl::unexpected(At(file_label, table->header_line, "gpu", "no node with GPUs"));
  return out;
}

Result<OpenbPods> ParseOpenbPods(std::string_view text, const std::string& file_label) {
  auto table = ParseCsvTable(text, file_label);
  if (!table) return tl::unexpected(table.error());
  const Table t(*table, file_label);
  if (auto ok = t.Require({"name", "num_gpu", "gpu_milli"},
                          "an openb pod list has name,num_gpu,gpu_milli");
      !ok)
    return tl::unexpected(ok.error());
  OpenbPods out;
  const int times = t.Has("creation_time") + t.Has("deletion_time") + t.Has("scheduled_time");
  if (times != 0 && times != 3)
    if (auto ok = t.Require({"creation_time", "deletion_time", "scheduled_time"},
                            "times come as creation_time,deletion_time,scheduled_time");
        !ok)
      return tl::unexpected(ok.error());
  out.has_times = times == 3;
  const bool has_qos = t.Has("qos");
  for (const CsvRecord& r : table->records) {
    ++out.rows;
    OpenbTask k;
    k.line = r.line;
    k.name = std::string(t.Field(r, "name"));
    if (k.name.empty()) return tl::unexpected(At(file_label, r.line, "name", "must name the pod"));
    auto num = t.Count(r, "num_gpu", 1024);
    if (!num) return tl::unexpected(num.error());
    auto milli = t.Count(r, "gpu_milli", 1000);
    if (!milli) return tl::unexpected(milli.error());
    k.num_gpu = static_cast<int32_t>(*num);
    k.gpu_milli = static_cast<int32_t>(*milli);
    k.best_effort = has_qos && t.Field(r, "qos") == "BE";
    k.has_times = out.has_times;
    if (out.has_times) {
      auto c = t.Count(r, "creation_time", kMaxSeconds);
      if (!c) return tl::unexpected(c.error());
      auto d = t.Count(r, "deletion_time", kMaxSeconds);
      if (!d) return tl::unexpected(d.error());
      k.creation = *c;
      k.deletion = *d;
      if (!t.Field(r, "scheduled_time").empty()) {
        auto s = t.Count(r, "scheduled_time", kMaxSeconds);
        if (!s) return tl::unexpected(s.error());
        k.scheduled = *s;
      }
    }
    if (k.num_gpu == 0) {
      ++out.non_gpu;
      continue;
    }
    // A fraction of a GPU cannot be shared here: the whole GPU is taken.
    if (k.gpu_milli < 1000) ++out.fractional;
    const int32_t per = std::max<int32_t>(1, (k.gpu_milli + 999) / 1000);
    k.gpus = std::max<int32_t>(1, k.num_gpu * per);
    out.tasks.push_back(std::move(k));
  }
  if (out.tasks.empty())
    return tl::unexpected(At(file_label, table->header_line, "num_gpu", "no GPU task"));
  return out;
}

OpenbPaths ResolveOpenbPaths(const OpenbOptions& opt) {
  OpenbPaths p;
  std::error_code ec;
  p.pods =
      fs::is_directory(opt.pods, ec) ? (fs::path(opt.pods) / kOpenbDefaultPods).string() : opt.pods;
  p.nodes =
      !opt.nodes.empty() ? opt.nodes : (fs::path(p.pods).parent_path() / kOpenbNodeFile).string();
  return p;
}

Result<Scenario> ParseOpenb(std::string_view nodes_text, const std::string& nodes_label,
                            std::string_view pods_text, const std::string& pods_label,
                            const OpenbOptions& opt, OpenbStats* stats) {
  if (auto ok = CheckOptions(opt); !ok) return tl::unexpected(ok.error());
  auto nodes = ParseOpenbNodes(nodes_text, nodes_label);
  if (!nodes) return tl::unexpected(nodes.error());
  auto pods = ParseOpenbPods(pods_text, pods_label);
  if (!pods) return tl::unexpected(pods.error());
  if (!pods->has_times)
    return tl::unexpected(
        At(pods_label, 1, "creation_time",
           "this pod list has no times (creation_time, scheduled_time, deletion_time), so it "
           "cannot be simulated; it serves the placement study (`hourglass placement`)"));
  OpenbStats st;
  st.nodes_path = nodes_label;
  st.pods_path = pods_label;
  st.node_rows = nodes->rows;
  st.nodes_without_gpu = nodes->no_gpu;
  st.pod_rows = pods->rows;
  st.non_gpu = pods->non_gpu;
  st.fractional = pods->fractional;

  Scenario sc;
  sc.name = fs::path(pods_label).stem().string();
  sc.nodes = std::move(nodes->nodes);
  int32_t largest_node = 0;
  for (const NodeSpec& n : sc.nodes) largest_node = std::max(largest_node, n.gpus);
  const int projects = opt.programs * opt.projects_per_program;
  for (int p = 0; p < opt.programs; ++p)
    sc.budgets.push_back(BudgetSpec{ProgramName(p), "", 1.0, std::nullopt, {}, 0});
  for (int i = 0; i < projects; ++i)
    sc.budgets.push_back(BudgetSpec{
        ProjectName(i), ProgramName(i / opt.projects_per_program), 1.0, std::nullopt, {}, 0});

  int64_t origin = std::numeric_limits<int64_t>::max(), last = 0;
  for (const OpenbTask& k : pods->tasks) origin = std::min(origin, k.creation);
  int64_t next_id = 1;
  for (const OpenbTask& k : pods->tasks) {
    if (k.scheduled < 0) {
      ++st.never_scheduled;
      continue;
    }
    if (k.deletion <= k.scheduled) {
      ++st.not_positive;
      continue;
    }
    // A pod is placed on one node; one that no node can hold could never start.
    if (k.gpus > largest_node)
      return tl::unexpected(At(pods_label, k.line, "num_gpu",
                               fmt::format("a pod runs on one node, and this one needs {} GPUs; "
                                           "the largest node of {} has {}",
                                           k.gpus, nodes_label, largest_node)));
    SimJob j;
    j.line = k.line;
    JobSpec& s = j.spec;
    s.id = JobId(next_id++);
    s.submit = Seconds(k.creation - origin);
    last = std::max(last, s.submit.value());
    const int64_t duration = k.deletion - k.scheduled;
    j.duration = Seconds(duration);
    s.gpus = Gpus(k.gpus);
    const bool debug = !k.best_effort && k.gpus == 1 && duration <= kDebugMax;
    const uint64_t project = NameHash(opt.seed, k.name) % static_cast<uint64_t>(projects);
    j.budget = k.best_effort ? "" : ProjectName(static_cast<int>(project));
    s.job_class = debug ? "debug" : k.best_effort ? "sweep" : "batch";
    s.tier = debug ? 2 : k.best_effort ? 0 : 1;
    s.min_runtime = Seconds(debug || k.best_effort ? 0 : std::min(duration, kProtectCap));
    s.resumable = duration > kResumableOver;
    j.checkpoint_interval = Seconds(s.resumable ? kCheckpointEvery : 0);
    s.grace = Seconds(debug ? 30 : 120);
    sc.jobs.push_back(std::move(j));
  }
  if (sc.jobs.empty())
    return tl::unexpected(At(pods_label, 1, "scheduled_time", "no task ever ran"));
  std::stable_sort(sc.jobs.begin(), sc.jobs.end(),
                   [](const SimJob& a, const SimJob& b) { return a.spec.submit < b.spec.submit; });
  sc.end = Seconds(last) + Days(1);
  if (stats) *stats = st;
  return sc;
}

Result<Scenario> LoadOpenb(const OpenbOptions& opt, OpenbStats* stats) {
  if (auto ok = CheckOptions(opt); !ok) return tl::unexpected(ok.error());
  const OpenbPaths p = ResolveOpenbPaths(opt);
  auto nodes = ReadTextFile(p.nodes);
  if (!nodes) return tl::unexpected(nodes.error());
  auto pods = ReadTextFile(p.pods);
  if (!pods) return tl::unexpected(pods.error());
  return ParseOpenb(*nodes, p.nodes, *pods, p.pods, opt, stats);
}

std::string DescribeOpenbMapping(const Scenario& sc, const OpenbOptions& opt,
                                 const OpenbStats& st) {
  std::string out =
      fmt::format("Mapping of the openb trace to scenario '{}' (seed {}):\n", sc.name, opt.seed);
  std::map<std::string, std::pair<int, int64_t>> models;  // block -> nodes, GPUs
  std::map<int32_t, int> sizes;
  int64_t gpus = 0;
  for (const NodeSpec& n : sc.nodes) {
    models[n.block].first += 1;
    models[n.block].second += n.gpus;
    ++sizes[n.gpus];
    gpus += n.gpus;
  }
  std::string model_list, size_list;
  for (const auto& [m, v] : models)
    model_list +=
        fmt::format("{}{} {}x/{} GPUs", model_list.empty() ? "" : ", ", m, v.first, v.second);
  for (const auto& [g, n] : sizes)
    size_list += fmt::format("{}{} of {}", size_list.empty() ? "" : ", ", n, g);
  out += fmt::format(
      "  cluster: {} GPU nodes from {} ({} rows, {} without GPUs skipped), {} GPUs; nodes by "
      "GPUs: {}; each node's GPU model is its block, so a multi-node job stays on one model "
      "where it can: {}\n",
      sc.nodes.size(), st.nodes_path, st.node_rows, st.nodes_without_gpu, gpus, size_list,
      model_list);
  std::map<std::string, size_t> classes;
  for (const SimJob& j : sc.jobs) ++classes[j.spec.job_class];
  out += fmt::format(
      "  tasks: {} from {} ({} rows): skipped {} with num_gpu=0 (not GPU work), {} never "
      "scheduled (empty scheduled_time), {} with deletion_time <= scheduled_time; {} asked for a "
      "fraction of a GPU (gpu_milli < 1000) and were rounded UP to whole GPUs (num_gpu x "
      "ceil(gpu_milli/1000), at least 1)\n",
      sc.jobs.size(), st.pods_path, st.pod_rows, st.non_gpu, st.never_scheduled, st.not_positive,
      st.fractional);
  out += fmt::format(
      "  time: submit = creation_time - first creation_time; duration = deletion_time - "
      "scheduled_time (the time it held its GPUs); evaluation ends 1 day after the last "
      "submit ({:.2f} days)\n",
      static_cast<double>(sc.end.value()) / 86400.0);
  out += fmt::format(
      "  classes: qos BE = sweep (unfunded, preemptible); LS, Guaranteed, Burstable and others "
      "are funded: debug {} (1 GPU, at most 30 min), batch {}; sweep {}\n",
      classes["debug"], classes["batch"], classes["sweep"]);
  out += fmt::format(
      "  budgets (invented: the trace has none): {} programs prog0.. of equal share, each with "
      "{} projects of equal share (proj0..proj{}); each funded task is charged to the project "
      "picked by a seeded hash of (seed {}, task name)\n",
      opt.programs, opt.projects_per_program, opt.programs * opt.projects_per_program - 1,
      opt.seed);
  out +=
      "  contract (not in the trace, as for Philly): debug: min_runtime 0, grace 30 s, tier 2; "
      "batch: min_runtime min(duration, 30 min), grace 120 s, tier 1; sweep: min_runtime 0, "
      "grace 120 s, tier 0; tasks over 1 h are resumable with a checkpoint every 30 min\n";
  return out;
}

}  // namespace hg::sim
