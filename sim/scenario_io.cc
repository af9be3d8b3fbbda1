#include "sim/scenario_io.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>

#include "sim/csv.h"
#include "sim/text_input.h"

namespace hg::sim {

const char* ToString(EventKind k) {
  switch (k) {
    case EventKind::kHealthFail:
      return "health_fail";
    case EventKind::kNodeLost:
      return "node_lost";
    case EventKind::kRepair:
      return "repair";
    case EventKind::kDrain:
      return "drain";
    case EventKind::kUndrain:
      return "undrain";
    case EventKind::kBudgetShare:
      return "share";
    case EventKind::kBudgetLimit:
      return "limit";
  }
  return "?";
}

std::optional<EventKind> EventKindFromString(std::string_view s) {
  for (EventKind k :
       {EventKind::kHealthFail, EventKind::kNodeLost, EventKind::kRepair, EventKind::kDrain,
        EventKind::kUndrain, EventKind::kBudgetShare, EventKind::kBudgetLimit})
    if (s == ToString(k)) return k;
  return std::nullopt;
}

namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMinInt32 = std::numeric_limits<int32_t>::min();
// Times and durations stay far below kNever so that sums of them in the simulator cannot overflow.
constexpr int64_t kMaxSeconds = 1'000'000'000'000;  // about 31,700 years

constexpr const char* kKindList = "health_fail, node_lost, repair, drain, undrain, share, limit";

// Column names of a CSV format: which exist and which must be present in the header.
struct Columns {
  std::vector<std::string_view> known;
  std::vector<std::string_view> required;
};

std::string JoinNames(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

Result<void> CheckHeader(const CsvTable& t, const Columns& cols, const std::string& file) {
  for (const std::string& h : t.header)
    if (std::find(cols.known.begin(), cols.known.end(), h) == cols.known.end())
      return tl::unexpected(
          At(file, t.header_line, h, "unknown column; the columns are " + JoinNames(cols.known)));
  for (std::string_view r : cols.required)
    if (t.Column(r) < 0)
      return tl::unexpected(
          At(file, t.header_line, std::string(r), "required column is missing from the header"));
  return {};
}

// Reads the fields of one record by column name and turns bad values into located errors.
class Row {
 public:
  Row(const CsvTable& t, const CsvRecord& r, const std::string& file) : t_(t), r_(r), file_(file) {}

  int line() const { return r_.line; }
  // The field's text, or "" when the column is absent.
  std::string_view Raw(std::string_view col) const {
    const int i = t_.Column(col);
    return i < 0 ? std::string_view() : std::string_view(r_.fields[static_cast<size_t>(i)]);
  }
  bool Given(std::string_view col) const { return !Raw(col).empty(); }

  tl::unexpected<Error> Fail(std::string_view col, std::string reason) const {
    return tl::unexpected(At(file_, r_.line, std::string(col), std::move(reason)));
  }

  // An integer in [lo, hi]; `what` describes the allowed values, e.g. "a positive integer".
  Result<int64_t> Int(std::string_view col, int64_t lo, int64_t hi, std::string_view what) const {
    const std::string_view raw = Raw(col);
    const std::optional<int64_t> v = ToInt(raw);
    // Digits that overflow int64 are a number too large, not a malformed one.
    const bool huge =
        !v && !raw.empty() && raw.find_first_not_of("0123456789") == std::string_view::npos;
    if (huge) return Fail(col, fmt::format("must be at most {}, got '{}'", hi, raw));
    if (!v || *v < lo) return Fail(col, fmt::format("must be {}, got '{}'", what, raw));
    if (*v > hi) return Fail(col, fmt::format("must be at most {}, got '{}'", hi, raw));
    return *v;
  }
  // Like Int, but an empty field (or absent column) gives `fallback`.
  Result<int64_t> IntOr(std::string_view col, int64_t fallback, int64_t lo, int64_t hi,
                        std::string_view what) const {
    if (!Given(col)) return fallback;
    return Int(col, lo, hi, what);
  }

 private:
  const CsvTable& t_;
  const CsvRecord& r_;
  const std::string& file_;
};

// ---------------------------------------------------------------------------------------------
// Cluster

const Columns kClusterColumns{{"name", "gpus", "block"}, {"name", "gpus"}};

// ---------------------------------------------------------------------------------------------
// Workload

const Columns kWorkloadColumns{
    {"id", "submit", "duration", "gpus", "gpus_per_node", "budget", "class", "min_runtime",
     "max_runtime", "resumable", "checkpoint", "grace", "priority", "tier", "lease", "idle_after"},
    {"id", "submit", "duration", "gpus"}};

Result<bool> ParseBool(const Row& row, std::string_view col) {
  std::string v(row.Raw(col));
  std::transform(v.begin(), v.end(), v.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  if (v.empty() || v == "false" || v == "0") return false;
  if (v == "true" || v == "1") return true;
  return row.Fail(col, fmt::format("must be true, false, 1 or 0, got '{}'", row.Raw(col)));
}

Result<SimJob> ParseJob(const Row& row) {
  SimJob job;
  job.line = row.line();
  JobSpec& s = job.spec;
  auto id = row.Int("id", 1, std::numeric_limits<int64_t>::max(), "a positive integer");
  if (!id) return tl::unexpected(id.error());
  s.id = JobId(*id);
  auto submit = row.Int("submit", 0, kMaxSeconds, "an integer >= 0 (seconds)");
  if (!submit) return tl::unexpected(submit.error());
  s.submit = Seconds(*submit);
  auto duration = row.Int("duration", 1, kMaxSeconds, "a positive integer (seconds)");
  if (!duration) return tl::unexpected(duration.error());
  job.duration = Seconds(*duration);
  auto gpus = row.Int("gpus", 1, kMaxInt32, "a positive integer");
  if (!gpus) return tl::unexpected(gpus.error());
  s.gpus = Gpus(static_cast<int32_t>(*gpus));
  auto per_node = row.IntOr("gpus_per_node", 0, 0, kMaxInt32, "an integer >= 0");
  if (!per_node) return tl::unexpected(per_node.error());
  if (*per_node > 0 && *gpus % *per_node != 0)
    return row.Fail("gpus_per_node",
                    fmt::format("must divide gpus ({}) evenly, got {}", *gpus, *per_node));
  s.gpus_per_node = Gpus(static_cast<int32_t>(*per_node));
  job.budget = std::string(row.Raw("budget"));
  s.job_class = row.Given("class") ? std::string(row.Raw("class")) : "batch";
  auto min_rt = row.IntOr("min_runtime", 0, 0, kMaxSeconds, "an integer >= 0 (seconds)");
  if (!min_rt) return tl::unexpected(min_rt.error());
  s.min_runtime = Seconds(*min_rt);
  if (row.Given("max_runtime")) {
    auto max_rt =
        row.Int("max_runtime", 1, kMaxSeconds, "a positive integer (seconds) or empty for none");
    if (!max_rt) return tl::unexpected(max_rt.error());
    if (*max_rt < *min_rt)
      return row.Fail("max_runtime",
                      fmt::format("must be >= min_runtime ({}), got {}", *min_rt, *max_rt));
    s.max_runtime = Seconds(*max_rt);
  }
  auto resumable = ParseBool(row, "resumable");
  if (!resumable) return tl::unexpected(resumable.error());
  s.resumable = *resumable;
  auto checkpoint = row.IntOr("checkpoint", 0, 0, kMaxSeconds, "an integer >= 0 (seconds)");
  if (!checkpoint) return tl::unexpected(checkpoint.error());
  job.checkpoint_interval = Seconds(*checkpoint);
  auto grace = row.IntOr("grace", 120, 0, kMaxSeconds, "an integer >= 0 (seconds)");
  if (!grace) return tl::unexpected(grace.error());
  s.grace = Seconds(*grace);
  auto priority =
      row.IntOr("priority", 0, kMinInt32, kMaxInt32, "an integer in -2147483648..2147483647");
  if (!priority) return tl::unexpected(priority.error());
  s.priority = static_cast<int>(*priority);
  auto tier = row.IntOr("tier", 1, 0, 2, "0, 1 or 2");
  if (!tier) return tl::unexpected(tier.error());
  s.tier = static_cast<int>(*tier);
  auto lease = row.IntOr("lease", 0, 0, kMaxSeconds, "an integer >= 0 (seconds)");
  if (!lease) return tl::unexpected(lease.error());
  s.lease = Seconds(*lease);  // its bounds are the policy's (ValidateJob), as min_runtime's cap
  if (row.Given("idle_after")) {
    auto idle = row.Int("idle_after", 0, kMaxSeconds,
                        "an integer >= 0 (seconds) or empty for active throughout");
    if (!idle) return tl::unexpected(idle.error());
    job.idle_after = Seconds(*idle);
  }
  return job;
}

// ---------------------------------------------------------------------------------------------
// Events

const Columns kEventColumns{{"time", "kind", "target", "value", "deadline", "reason"},
                            {"time", "kind", "target"}};

Result<TimedEvent> ParseEvent(const Row& row) {
  TimedEvent e;
  e.line = row.line();
  auto time = row.Int("time", 0, kMaxSeconds, "an integer >= 0 (seconds)");
  if (!time) return tl::unexpected(time.error());
  e.at = Seconds(*time);
  const std::string_view kind_raw = row.Raw("kind");
  const std::optional<EventKind> kind = EventKindFromString(kind_raw);
  if (!kind)
    return row.Fail("kind",
                    fmt::format("unknown kind '{}'; the kinds are {}", kind_raw, kKindList));
  e.kind = *kind;
  const bool on_budget = e.kind == EventKind::kBudgetShare || e.kind == EventKind::kBudgetLimit;
  e.target = std::string(row.Raw("target"));
  if (e.target.empty())
    return row.Fail("target", fmt::format("must name a {} for kind '{}'",
                                          on_budget ? "budget" : "node", ToString(e.kind)));
  const std::string_view value = row.Raw("value");
  if (e.kind == EventKind::kBudgetShare) {
    const std::optional<double> v = ToNumber(value);
    if (!v || *v <= 0)
      return row.Fail("value", fmt::format("kind 'share' needs a number > 0, got '{}'", value));
    e.value = *v;
  } else if (e.kind == EventKind::kBudgetLimit) {
    const std::optional<int64_t> v = ToInt(value);
    if (!v)
      return row.Fail("value",
                      fmt::format("kind 'limit' needs an integer (GPUs; negative for no limit), "
                                  "got '{}'",
                                  value));
    if (*v > kMaxInt32 || *v < kMinInt32)
      return row.Fail("value",
                      fmt::format("limit must be at most {} GPUs, got '{}'", kMaxInt32, value));
    e.value = static_cast<double>(*v);
  } else if (!value.empty()) {
    return row.Fail("value", fmt::format("kind '{}' takes no value; leave it empty, got '{}'",
                                         ToString(e.kind), value));
  }
  if (row.Given("deadline")) {
    if (e.kind != EventKind::kDrain)
      return row.Fail("deadline", fmt::format("only kind 'drain' takes a deadline, not '{}'; "
                                              "leave it empty",
                                              ToString(e.kind)));
    auto d = row.Int("deadline", 0, kMaxSeconds, "an integer >= 0 (seconds after time)");
    if (!d) return tl::unexpected(d.error());
    e.deadline = Seconds(*d);
  }
  e.reason = std::string(row.Raw("reason"));
  return e;
}

// ---------------------------------------------------------------------------------------------
// Budgets

int LineOf(const toml::node& n) { return static_cast<int>(n.source().begin.line); }
int LineOf(const toml::key& k) { return static_cast<int>(k.source().begin.line); }

const char* TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

constexpr std::string_view kBudgetKeys[] = {"name", "parent", "share", "limit", "leads"};

Result<BudgetSpec> ParseBudget(const toml::table& t, const std::string& file) {
  BudgetSpec b;
  b.line = LineOf(t);
  // Unknown keys first: a misspelt key would otherwise surface as a confusing default.
  for (auto&& [key, node] : t) {
    if (std::find(std::begin(kBudgetKeys), std::end(kBudgetKeys), key.str()) ==
        std::end(kBudgetKeys))
      return tl::unexpected(At(file, LineOf(key), std::string(key.str()),
                               "unknown key; the keys are name, parent, share, limit, leads"));
  }
  auto wrong = [&](const toml::node& n, std::string_view key, std::string_view want) {
    return tl::unexpected(At(file, LineOf(n), std::string(key),
                             fmt::format("must be {}, got {}", want, TypeName(n))));
  };
  if (const toml::node* n = t.get("name")) {
    if (!n->is_string()) return wrong(*n, "name", "a string");
    b.name = n->as_string()->get();
  } else {
    return tl::unexpected(At(file, b.line, "name", "required key is missing"));
  }
  if (const toml::node* n = t.get("parent")) {
    if (!n->is_string()) return wrong(*n, "parent", "a string (the parent budget's name)");
    b.parent = n->as_string()->get();
  }
  if (const toml::node* n = t.get("share")) {
    if (n->is_integer()) {
      b.share = static_cast<double>(n->as_integer()->get());
    } else if (n->is_floating_point()) {
      b.share = n->as_floating_point()->get();
    } else {
      return wrong(*n, "share", "a number > 0");
    }
    if (!std::isfinite(b.share) || b.share <= 0)
      return tl::unexpected(
          At(file, LineOf(*n), "share", fmt::format("must be a number > 0, got {}", b.share)));
  }
  if (const toml::node* n = t.get("limit")) {
    if (!n->is_integer()) return wrong(*n, "limit", "an integer >= 0 (GPUs)");
    const int64_t v = n->as_integer()->get();
    if (v < 0 || v > kMaxInt32)
      return tl::unexpected(
          At(file, LineOf(*n), "limit",
             fmt::format("must be an integer in 0..{} (GPUs), got {}", kMaxInt32, v)));
    b.limit = static_cast<int32_t>(v);
  }
  if (const toml::node* n = t.get("leads")) {
    if (!n->is_array()) return wrong(*n, "leads", "an array of strings");
    for (const toml::node& el : *n->as_array()) {
      if (!el.is_string()) return wrong(el, "leads", "an array of strings");
      b.leads.push_back(el.as_string()->get());
    }
  }
  return b;
}

std::string TomlString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\u{:04X}", static_cast<unsigned>(u));
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

Result<void> CheckWritable(std::string_view value, std::string_view field, std::string_view what) {
  if (CsvFieldWritable(value)) return {};
  return Fail(std::string(field),
              fmt::format("{}: a line break cannot be written to a CSV field", what));
}

Result<void> WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (out) out.close();
  if (!out) return tl::unexpected(At(path.string(), 0, "", "cannot be written"));
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Parsers

Result<std::vector<NodeSpec>> ParseClusterCsv(std::string_view text,
                                              const std::string& file_label) {
  auto table = ParseCsvTable(text, file_label);
  if (!table) return tl::unexpected(table.error());
  if (auto ok = CheckHeader(*table, kClusterColumns, file_label); !ok)
    return tl::unexpected(ok.error());
  std::vector<NodeSpec> nodes;
  std::map<std::string, int, std::less<>> first_line;
  for (const CsvRecord& rec : table->records) {
    Row row(*table, rec, file_label);
    NodeSpec n;
    n.line = rec.line;
    n.name = std::string(row.Raw("name"));
    if (n.name.empty()) return row.Fail("name", "must not be empty");
    auto [it, fresh] = first_line.emplace(n.name, rec.line);
    if (!fresh)
      return row.Fail(
          "name", fmt::format("duplicate node name '{}' (first on line {})", n.name, it->second));
    auto gpus = row.Int("gpus", 1, kMaxInt32, "a positive integer");
    if (!gpus) return tl::unexpected(gpus.error());
    n.gpus = static_cast<int32_t>(*gpus);
    n.block = std::string(row.Raw("block"));
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Result<std::vector<BudgetSpec>> ParseBudgetsToml(std::string_view text,
                                                 const std::string& file_label) {
  toml::table doc;
  try {
    doc = toml::parse(text, std::string_view(file_label));
  } catch (const toml::parse_error& err) {
    return tl::unexpected(At(file_label, static_cast<int>(err.source().begin.line), "",
                             fmt::format("invalid TOML: {}", err.description())));
  }
  std::vector<BudgetSpec> specs;
  for (auto&& [key, node] : doc) {
    if (key.str() != "budget")
      return tl::unexpected(At(file_label, LineOf(key), std::string(key.str()),
                               "unknown key; the file holds only [[budget]] tables"));
    if (!node.is_array_of_tables())
      return tl::unexpected(
          At(file_label, LineOf(key), "budget",
             fmt::format("must be an array of tables ([[budget]]), got {}", TypeName(node))));
  }
  if (const toml::array* arr = doc["budget"].as_array()) {
    for (const toml::node& el : *arr) {
      auto spec = ParseBudget(*el.as_table(), file_label);
      if (!spec) return tl::unexpected(spec.error());
      specs.push_back(std::move(*spec));
    }
  }
  auto tree = BudgetTree::Build(specs);
  if (!tree) {
    Error e = tree.error();
    e.file = file_label;
    return tl::unexpected(std::move(e));
  }
  return specs;
}

Result<std::vector<SimJob>> ParseWorkloadCsv(std::string_view text, const std::string& file_label) {
  auto table = ParseCsvTable(text, file_label);
  if (!table) return tl::unexpected(table.error());
  if (auto ok = CheckHeader(*table, kWorkloadColumns, file_label); !ok)
    return tl::unexpected(ok.error());
  std::vector<SimJob> jobs;
  std::map<int64_t, int> first_line;
  for (const CsvRecord& rec : table->records) {
    Row row(*table, rec, file_label);
    auto job = ParseJob(row);
    if (!job) return tl::unexpected(job.error());
    auto [it, fresh] = first_line.emplace(job->spec.id.value(), rec.line);
    if (!fresh)
      return row.Fail("id", fmt::format("duplicate job id {} (first on line {})",
                                        job->spec.id.value(), it->second));
    jobs.push_back(std::move(*job));
  }
  std::sort(jobs.begin(), jobs.end(), [](const SimJob& a, const SimJob& b) {
    if (a.spec.submit != b.spec.submit) return a.spec.submit < b.spec.submit;
    return a.spec.id < b.spec.id;
  });
  return jobs;
}

Result<std::vector<TimedEvent>> ParseEventsCsv(std::string_view text,
                                               const std::string& file_label) {
  auto table = ParseCsvTable(text, file_label);
  if (!table) return tl::unexpected(table.error());
  if (auto ok = CheckHeader(*table, kEventColumns, file_label); !ok)
    return tl::unexpected(ok.error());
  std::vector<TimedEvent> events;
  for (const CsvRecord& rec : table->records) {
    auto e = ParseEvent(Row(*table, rec, file_label));
    if (!e) return tl::unexpected(e.error());
    events.push_back(std::move(*e));
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const TimedEvent& a, const TimedEvent& b) { return a.at < b.at; });
  return events;
}

Result<std::vector<NodeSpec>> ReadCluster(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text) return tl::unexpected(text.error());
  return ParseClusterCsv(*text, path);
}

Result<std::vector<BudgetSpec>> ReadBudgets(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text) return tl::unexpected(text.error());
  return ParseBudgetsToml(*text, path);
}

Result<std::vector<SimJob>> ReadWorkload(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text) return tl::unexpected(text.error());
  return ParseWorkloadCsv(*text, path);
}

Result<std::vector<TimedEvent>> ReadEvents(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text) return tl::unexpected(text.error());
  return ParseEventsCsv(*text, path);
}

// ---------------------------------------------------------------------------------------------
// Writers

Result<std::string> FormatClusterCsv(const std::vector<NodeSpec>& nodes) {
  std::string out = "# Hourglass cluster: one node per line (docs/formats.md)\nname,gpus,block\n";
  for (const NodeSpec& n : nodes) {
    for (const std::string* f : {&n.name, &n.block})
      if (auto ok = CheckWritable(*f, f == &n.name ? "name" : "block", "node '" + n.name + "'");
          !ok)
        return tl::unexpected(ok.error());
    out += CsvJoin({n.name, std::to_string(n.gpus), n.block});
    out += '\n';
  }
  return out;
}

std::string FormatBudgetsToml(const std::vector<BudgetSpec>& budgets) {
  std::string out = "# Hourglass budget tree: one [[budget]] table per budget (docs/formats.md)\n";
  for (const BudgetSpec& b : budgets) {
    out += "\n[[budget]]\n";
    out += "name = " + TomlString(b.name) + "\n";
    if (!b.parent.empty()) out += "parent = " + TomlString(b.parent) + "\n";
    // fmt's shortest round-trip form; integral values print without a point and read back as
    // TOML integers, which the reader accepts as shares.
    out += fmt::format("share = {}\n", b.share);
    if (b.limit) out += fmt::format("limit = {}\n", *b.limit);
    if (!b.leads.empty()) {
      out += "leads = [";
      for (size_t i = 0; i < b.leads.size(); ++i) {
        if (i > 0) out += ", ";
        out += TomlString(b.leads[i]);
      }
      out += "]\n";
    }
  }
  return out;
}

Result<std::string> FormatWorkloadCsv(const std::vector<SimJob>& jobs) {
  std::vector<std::string> header(kWorkloadColumns.known.begin(), kWorkloadColumns.known.end());
  std::string out = "# Hourglass workload: one job per line (docs/formats.md)\n";
  out += CsvJoin(header) + "\n";
  for (const SimJob& j : jobs) {
    const JobSpec& s = j.spec;
    const std::string what = fmt::format("job {}", s.id.value());
    if (auto ok = CheckWritable(j.budget, "budget", what); !ok) return tl::unexpected(ok.error());
    if (auto ok = CheckWritable(s.job_class, "class", what); !ok) return tl::unexpected(ok.error());
    out += CsvJoin({
        std::to_string(s.id.value()),
        std::to_string(s.submit.value()),
        std::to_string(j.duration.value()),
        std::to_string(s.gpus.value()),
        std::to_string(s.gpus_per_node.value()),
        j.budget,
        s.job_class,
        std::to_string(s.min_runtime.value()),
        s.max_runtime ? std::to_string(s.max_runtime->value()) : "",
        s.resumable ? "true" : "false",
        std::to_string(j.checkpoint_interval.value()),
        std::to_string(s.grace.value()),
        std::to_string(s.priority),
        std::to_string(s.tier),
        std::to_string(s.lease.value()),
        j.idle_after ? std::to_string(j.idle_after->value()) : "",
    });
    out += '\n';
  }
  return out;
}

Result<std::string> FormatEventsCsv(const std::vector<TimedEvent>& events) {
  std::string out = "# Hourglass timed events (docs/formats.md)\n";
  out += "time,kind,target,value,deadline,reason\n";
  for (const TimedEvent& e : events) {
    const std::string what = fmt::format("event at {} ({})", e.at.value(), ToString(e.kind));
    if (auto ok = CheckWritable(e.target, "target", what); !ok) return tl::unexpected(ok.error());
    if (auto ok = CheckWritable(e.reason, "reason", what); !ok) return tl::unexpected(ok.error());
    std::string value;
    if (e.kind == EventKind::kBudgetShare || e.kind == EventKind::kBudgetLimit)
      value = fmt::format("{}", e.value);
    out += CsvJoin({
        std::to_string(e.at.value()),
        ToString(e.kind),
        e.target,
        value,
        e.deadline ? std::to_string(e.deadline->value()) : "",
        e.reason,
    });
    out += '\n';
  }
  return out;
}

Result<void> WriteScenario(const Scenario& s, const std::string& dir) {
  // Format everything first so that a value no file can hold leaves nothing half-written.
  auto cluster = FormatClusterCsv(s.nodes);
  if (!cluster) return tl::unexpected(cluster.error());
  const std::string budgets = FormatBudgetsToml(s.budgets);
  auto workload = FormatWorkloadCsv(s.jobs);
  if (!workload) return tl::unexpected(workload.error());
  auto events = FormatEventsCsv(s.events);
  if (!events) return tl::unexpected(events.error());

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec))
    return tl::unexpected(At(dir, 0, "", "cannot create directory"));
  const fs::path base(dir);
  if (auto ok = WriteFile(base / "cluster.csv", *cluster); !ok) return ok;
  if (auto ok = WriteFile(base / "budgets.toml", budgets); !ok) return ok;
  if (auto ok = WriteFile(base / "workload.csv", *workload); !ok) return ok;
  if (auto ok = WriteFile(base / "events.csv", *events); !ok) return ok;
  return {};
}

}  // namespace hg::sim
