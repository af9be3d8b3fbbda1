#include "sim/generic_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "sim/civil_time.h"
#include "sim/csv.h"
#include "sim/scenario_io.h"
#include "sim/text_input.h"
#include "sim/trace.h"

namespace hg::sim {
namespace {

constexpr int32_t kGpusPerNode = 8;
constexpr size_t kNodesPerBlock = 16;
constexpr int64_t kMaxNodes = 1'000'000;
constexpr int64_t kMaxSeconds = 1'000'000'000'000;
constexpr const char* kProgram = "site";  // the one program of a derived budget tree

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The mapped fields, with the name a user writes in --map.
struct FieldDef {
  const char* name;
  ColumnRef ColumnMap::*ref;
};
constexpr FieldDef kFields[] = {
    {"submit", &ColumnMap::submit},
    {"duration", &ColumnMap::duration},
    {"end", &ColumnMap::end},
    {"start", &ColumnMap::start},
    {"gpus", &ColumnMap::gpus},
    {"gpus_per_node", &ColumnMap::gpus_per_node},
    {"budget", &ColumnMap::budget},
    {"class", &ColumnMap::cls},
    {"user", &ColumnMap::user},
    {"min_runtime", &ColumnMap::min_runtime},
    {"resumable", &ColumnMap::resumable},
};

// "cpu=8,gres/gpu=4,mem=64G" -> the value of `key`, or "" when absent.
std::string_view ListValue(std::string_view list, std::string_view key) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view item = list.substr(pos, end - pos);
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos && Trim(item.substr(0, eq)) == key)
      return Trim(item.substr(eq + 1));
    pos = end + 1;
  }
  return {};
}

// The rows of either file type as columns by name: CSV columns come from the header, JSONL keys
// from each object. Values are text; JSON numbers are written back as text.
class Source {
 public:
  struct Row {
    int line = 0;
    std::map<std::string, std::string, std::less<>> values;  // only the mapped columns
  };

  static Result<Source> Csv(std::string_view text, const std::string& file, char delimiter,
                            const std::vector<std::pair<std::string, std::string>>& wanted) {
    Source src;
    src.file_ = file;
    std::vector<std::string> header;
    std::vector<int> index;  // per wanted column: its header index
    TextLines lines(text);
    std::string_view line;
    while (lines.Next(&line)) {
      const int line_no = lines.number();
      const std::string_view trimmed = Trim(line);
      if (trimmed.empty() || (header.empty() && trimmed.front() == '#')) continue;
      if (header.empty() && delimiter == 0)
        delimiter = line.find('|') != std::string_view::npos ? '|' : ',';
      std::vector<std::string> fields;
      if (delimiter == ',') {
        auto split = SplitCsvLine(line);
        if (!split) {
          const size_t c = split.error().column;
          return tl::unexpected(
              At(file, line_no, c < header.size() ? header[c] : "", split.error().reason));
        }
        fields = std::move(*split);
      } else {
        // Exports with another delimiter (sacct --parsable2) do not quote: split plainly.
        size_t p = 0;
        while (true) {
          const size_t d = line.find(delimiter, p);
          fields.emplace_back(Trim(line.substr(p, d == std::string_view::npos ? d : d - p)));
          if (d == std::string_view::npos) break;
          p = d + 1;
        }
      }
      if (header.empty()) {
        header = std::move(fields);
        src.header_line_ = line_no;
        for (const auto& [column, field] : wanted) {
          auto it = std::find(header.begin(), header.end(), column);
          if (it == header.end())
            return tl::unexpected(
                At(file, line_no, "--map " + field,
                   fmt::format("column '{}' is not in the header (columns: {})", column,
                               fmt::join(header, std::string(1, delimiter)))));
          index.push_back(static_cast<int>(it - header.begin()));
        }
        continue;
      }
      // sacct --parsable2 ends no line with a delimiter, but --parsable does: one empty extra.
      if (fields.size() == header.size() + 1 && fields.back().empty()) fields.pop_back();
      if (fields.size() < header.size())
        return tl::unexpected(At(file, line_no, header[fields.size()],
                                 fmt::format("missing: the line has {} fields, the header {}",
                                             fields.size(), header.size())));
      if (fields.size() > header.size())
        return tl::unexpected(At(file, line_no, "",
                                 fmt::format("too many fields: the line has {}, the header {}",
                                             fields.size(), header.size())));
      Row row;
      row.line = line_no;
      for (size_t w = 0; w < wanted.size(); ++w)
        row.values.emplace(wanted[w].first, fields[static_cast<size_t>(index[w])]);
      src.rows_.push_back(std::move(row));
    }
    if (header.empty()) return tl::unexpected(At(file, 1, "", "no header line: the file is empty"));
    return src;
  }

  static Result<Source> Jsonl(std::string_view text, const std::string& file,
                              const std::vector<std::pair<std::string, std::string>>& wanted) {
    Source src;
    src.file_ = file;
    int line_no = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t eol = text.find('\n', pos);
      if (eol == std::string_view::npos) eol = text.size();
      const std::string_view line = Trim(text.substr(pos, eol - pos));
      pos = eol + 1;
      ++line_no;
      if (line.empty()) continue;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object())
        return tl::unexpected(At(file, line_no, "", "must be one JSON object on one line"));
      Row row;
      row.line = line_no;
      for (const auto& [column, field] : wanted) {
        auto it = j.find(column);
        if (it == j.end()) continue;  // absent: empty (required fields are checked later)
        std::string v;
        if (it->is_string()) {
          v = it->get<std::string>();
        } else if (it->is_number_integer() || it->is_number_unsigned() || it->is_object()) {
          v = it->dump();  // an object whole: a key inside it is looked up by Value
        } else if (it->is_number_float()) {
          v = fmt::format("{}", it->get<double>());
        } else if (it->is_boolean()) {
          v = it->get<bool>() ? "true" : "false";
        } else if (!it->is_null()) {
          return tl::unexpected(
              At(file, line_no, column, "must be a string, a number, a boolean or an object"));
        }
        row.values.emplace(column, std::move(v));
      }
      src.rows_.push_back(std::move(row));
    }
    return src;
  }

  const std::vector<Row>& rows() const { return rows_; }
  int header_line() const { return header_line_; }

 private:
  std::string file_;
  int header_line_ = 0;
  std::vector<Row> rows_;
};

// The value of a mapped field in a row: the column, or the key inside it.
std::string Value(const Source::Row& row, const ColumnRef& ref) {
  if (!ref.mapped()) return {};
  auto it = row.values.find(ref.column);
  if (it == row.values.end()) return {};
  const std::string& v = it->second;
  if (ref.key.empty()) return std::string(Trim(v));
  if (!v.empty() && v.front() == '{') {  // a JSON object
    const nlohmann::json j = nlohmann::json::parse(v, nullptr, false);
    auto k = j.find(ref.key);
    if (k == j.end() || k->is_null()) return {};
    return k->is_string() ? k->get<std::string>() : k->dump();
  }
  return std::string(ListValue(v, ref.key));
}

struct Parsed {
  int line = 0;
  int64_t submit = 0;  // Unix seconds (or seconds as given)
  int64_t duration = 0;
  int32_t gpus = 0;
  int32_t gpus_per_node = 0;
  std::string budget, cls, user;
  int64_t min_runtime = 0;
  bool resumable = false;
};

std::optional<bool> ToBool(std::string_view s) {
  const std::string l = Lower(s);
  if (l == "true" || l == "1" || l == "yes") return true;
  if (l == "false" || l == "0" || l == "no" || l.empty()) return false;
  return std::nullopt;
}

bool IsNone(std::string_view s) {
  const std::string l = Lower(s);
  return l.empty() || l == "none" || l == "unknown";
}

}  // namespace

Result<ColumnMap> ParseColumnMap(std::string_view spec) {
  ColumnMap m;
  size_t pos = 0;
  std::map<std::string, bool> seen;
  while (pos <= spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string_view::npos) end = spec.size();
    const std::string_view item = Trim(spec.substr(pos, end - pos));
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return Fail("--map", fmt::format("'{}' must be FIELD=COLUMN (fields: {})", item, kMapFields));
    const std::string field(Trim(item.substr(0, eq)));
    std::string_view column = Trim(item.substr(eq + 1));
    const FieldDef* def = nullptr;
    for (const FieldDef& f : kFields)
      if (field == f.name) def = &f;
    if (def == nullptr)
      return Fail("--map", fmt::format("unknown field '{}' (fields: {})", field, kMapFields));
    if (!seen.emplace(field, true).second)
      return Fail("--map", fmt::format("field '{}' is mapped twice", field));
    ColumnRef ref;
    const size_t colon = column.find(':');
    ref.column = std::string(Trim(column.substr(0, colon)));
    if (colon != std::string_view::npos) {
      ref.key = std::string(Trim(column.substr(colon + 1)));
      if (ref.key.empty())
        return Fail("--map", fmt::format("'{}': nothing after ':' (COLUMN:KEY)", item));
    }
    if (ref.column.empty())
      return Fail("--map", fmt::format("field '{}' has no column name", field));
    m.*(def->ref) = std::move(ref);
  }
  if (!m.submit.mapped()) return Fail("--map", "map submit (required)");
  if (!m.gpus.mapped()) return Fail("--map", "map gpus (required)");
  if (m.duration.mapped() == m.end.mapped())
    return Fail("--map", "map exactly one of duration and end");
  if (m.start.mapped() && !m.end.mapped())
    return Fail("--map", "start is used only with end (duration = end - start)");
  return m;
}

std::optional<int64_t> ParseTraceTime(std::string_view s) {
  s = Trim(s);
  if (auto n = ToInt(s)) return *n >= 0 && *n <= kMaxSeconds ? n : std::nullopt;
  return ParseUtcDateTime(s, /*allow_t=*/true);
}

std::optional<int64_t> ParseTraceDuration(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  if (s.find(':') == std::string_view::npos) {
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0 ||
        v > static_cast<double>(kMaxSeconds))
      return std::nullopt;
    return static_cast<int64_t>(std::ceil(v));
  }
  int64_t days = 0;
  if (const size_t dash = s.find('-'); dash != std::string_view::npos) {
    auto d = ToInt(s.substr(0, dash));
    if (!d || *d < 0 || *d > 100'000'000) return std::nullopt;
    days = *d;
    s.remove_prefix(dash + 1);
  }
  std::vector<int64_t> parts;
  size_t p = 0;
  while (true) {
    const size_t c = s.find(':', p);
    const std::string_view part = s.substr(p, c == std::string_view::npos ? c : c - p);
    auto n = ToInt(part);
    if (!n || *n < 0 || part.size() > 9) return std::nullopt;
    parts.push_back(*n);
    if (c == std::string_view::npos) break;
    p = c + 1;
  }
  // HH:MM:SS, or MM:SS without days (as Slurm prints short times).
  if (parts.size() == 2 && days == 0) parts.insert(parts.begin(), 0);
  if (parts.size() != 3 || parts[1] > 59 || parts[2] > 59) return std::nullopt;
  return days * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2];
}

Result<Scenario> ParseGenericTrace(std::string_view text, const std::string& file_label,
                                   const GenericOptions& opt, GenericStats* stats) {
  auto map = ParseColumnMap(opt.map);
  if (!map) return tl::unexpected(map.error());
  if (!opt.cluster && (!std::isfinite(opt.oversubscription) || opt.oversubscription <= 0))
    return Fail("--oversubscription",
                fmt::format("must be a number > 0, got {}", opt.oversubscription));
  // The distinct columns the mapping reads, each with the first field that names it.
  std::vector<std::pair<std::string, std::string>> wanted;
  for (const FieldDef& f : kFields) {
    const ColumnRef& r = (*map).*(f.ref);
    if (!r.mapped()) continue;
    if (std::none_of(wanted.begin(), wanted.end(),
                     [&](const auto& w) { return w.first == r.column; }))
      wanted.emplace_back(r.column, f.name);
  }
  auto src = opt.jsonl ? Source::Jsonl(text, file_label, wanted)
                       : Source::Csv(text, file_label, opt.delimiter, wanted);
  if (!src) return tl::unexpected(src.error());

  GenericStats st;
  std::vector<Parsed> kept;
  for (const Source::Row& row : src->rows()) {
    ++st.rows;
    // The error names the column (or JSON key) and, in brackets, the mapped field.
    auto fail = [&](const ColumnRef& ref, const char* field, std::string reason) {
      return tl::unexpected(At(file_label, row.line, fmt::format("{} ({})", ref.ToString(), field),
                               std::move(reason)));
    };
    Parsed p;
    p.line = row.line;
    const std::string gpus = Value(row, map->gpus);
    if (gpus.empty()) {
      ++st.no_gpu;
      continue;
    }
    const std::optional<int64_t> g = ToInt(gpus);
    if (!g || *g < 0 || *g > std::numeric_limits<int32_t>::max())
      return fail(map->gpus, "gpus", fmt::format("must be an integer >= 0, got '{}'", gpus));
    if (*g == 0) {
      ++st.no_gpu;
      continue;
    }
    p.gpus = static_cast<int32_t>(*g);

    const std::string submit = Value(row, map->submit);
    const std::optional<int64_t> at = ParseTraceTime(submit);
    if (!at)
      return fail(
          map->submit, "submit",
          fmt::format("must be seconds or 'YYYY-MM-DD HH:MM:SS' (or with 'T'), got '{}'", submit));
    p.submit = *at;
    if (map->duration.mapped()) {
      const std::string d = Value(row, map->duration);
      const std::optional<int64_t> dur = ParseTraceDuration(d);
      if (!dur)
        return fail(map->duration, "duration",
                    fmt::format("must be seconds or '[D-]HH:MM:SS', got '{}'", d));
      p.duration = *dur;
    } else {
      const std::string e = Value(row, map->end);
      if (IsNone(e)) {  // still running or never started: no run time to replay
        ++st.unfinished;
        continue;
      }
      const std::optional<int64_t> end = ParseTraceTime(e);
      if (!end)
        return fail(map->end, "end",
                    fmt::format("must be seconds or 'YYYY-MM-DD HH:MM:SS', got '{}'", e));
      int64_t from = p.submit;
      if (map->start.mapped()) {
        const std::string s = Value(row, map->start);
        if (IsNone(s)) {
          ++st.unfinished;
          continue;
        }
        const std::optional<int64_t> start = ParseTraceTime(s);
        if (!start)
          return fail(map->start, "start",
                      fmt::format("must be seconds or 'YYYY-MM-DD HH:MM:SS', got '{}'", s));
        from = *start;
      }
      if (*end < from)
        return fail(
            map->end, "end",
            fmt::format("'{}' is before the {} ", e, map->start.mapped() ? "start" : "submit"));
      p.duration = *end - from;
    }
    p.duration = std::max<int64_t>(p.duration, 1);  // a run takes at least the one second
    if (map->gpus_per_node.mapped()) {
      const std::string v = Value(row, map->gpus_per_node);
      const std::optional<int64_t> n = v.empty() ? std::optional<int64_t>(0) : ToInt(v);
      if (!n || *n < 0 || (*n > 0 && p.gpus % *n != 0))
        return fail(map->gpus_per_node, "gpus_per_node",
                    fmt::format("must be 0 or an integer dividing gpus ({}), got '{}'", p.gpus, v));
      p.gpus_per_node = static_cast<int32_t>(*n);
    }
    p.budget = Value(row, map->budget);
    if (Lower(p.budget) == "none") p.budget.clear();
    if (!opt.budgets && p.budget.find_first_of("/~") != std::string::npos)
      return fail(
          map->budget, "budget",
          fmt::format("'{}' must not contain '/' or '~' (it becomes a budget name)", p.budget));
    p.cls = Value(row, map->cls);
    if (p.cls.empty()) p.cls = "batch";
    p.user = Value(row, map->user);
    if (p.user.find_first_of("/~") != std::string::npos)
      return fail(map->user, "user", fmt::format("'{}' must not contain '/' or '~'", p.user));
    if (map->min_runtime.mapped()) {
      const std::string v = Value(row, map->min_runtime);
      const std::optional<int64_t> m =
          v.empty() ? std::optional<int64_t>(0) : ParseTraceDuration(v);
      if (!m)
        return fail(map->min_runtime, "min_runtime",
                    fmt::format("must be seconds or '[D-]HH:MM:SS', got '{}'", v));
      p.min_runtime = *m;
    }
    if (map->resumable.mapped()) {
      const std::string v = Value(row, map->resumable);
      const std::optional<bool> b = ToBool(v);
      if (!b)
        return fail(map->resumable, "resumable",
                    fmt::format("must be true/false, yes/no or 1/0, got '{}'", v));
      p.resumable = *b;
    }
    kept.push_back(std::move(p));
  }
  if (kept.empty())
    return tl::unexpected(At(file_label, src->header_line(), "",
                             fmt::format("no GPU job to replay ({} rows: {} without GPUs, {} "
                                         "unfinished)",
                                         st.rows, st.no_gpu, st.unfinished)));

  Scenario sc;
  sc.name = opt.name;
  st.origin = std::numeric_limits<int64_t>::max();
  for (const Parsed& p : kept) st.origin = std::min(st.origin, p.submit);
  // Budgets: given, or one program "site" > a project per distinct budget value (> a leaf per
  // user of it, when users are mapped).
  std::map<std::string, int> projects;                        // name -> first line
  std::map<std::pair<std::string, std::string>, int> leaves;  // (project, user) -> first line
  for (const Parsed& p : kept) {
    if (p.budget.empty()) continue;
    projects.emplace(p.budget, p.line);
    if (map->user.mapped()) leaves.emplace(std::make_pair(p.budget, p.user), p.line);
  }
  auto leaf_name = [](const std::string& project, const std::string& user) {
    return fmt::format("{}.{}", project, user.empty() ? "nouser" : user);
  };
  if (opt.budgets) {
    sc.budgets = *opt.budgets;
  } else {
    st.derived_budgets = true;
    if (!projects.empty()) sc.budgets.push_back(BudgetSpec{kProgram, "", 1.0, std::nullopt, {}, 0});
    for (const auto& [name, line] : projects)
      sc.budgets.push_back(BudgetSpec{name, kProgram, 1.0, std::nullopt, {}, line});
    for (const auto& [key, line] : leaves)
      sc.budgets.push_back(
          BudgetSpec{leaf_name(key.first, key.second), key.first, 1.0, std::nullopt, {}, line});
    if (auto tree = BudgetTree::Build(sc.budgets); !tree)
      return tl::unexpected(At(file_label, tree.error().line, map->budget.ToString() + " (budget)",
                               tree.error().reason +
                                   " (the derived tree names the program 'site', projects by "
                                   "budget value and leaves '<budget>.<user>')"));
  }
  int64_t last = 0;
  int32_t largest = 0;
  double gpu_seconds = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    const Parsed& p = kept[i];
    SimJob j;
    j.line = p.line;
    JobSpec& s = j.spec;
    s.id = JobId(static_cast<int64_t>(i + 1));
    s.submit = Seconds(p.submit - st.origin);
    last = std::max(last, s.submit.value());
    j.duration = Seconds(p.duration);
    s.gpus = Gpus(p.gpus);
    largest = std::max(largest, p.gpus);
    gpu_seconds += static_cast<double>(p.gpus) * static_cast<double>(p.duration);
    s.gpus_per_node = Gpus(p.gpus_per_node);
    j.budget = p.budget.empty() || !st.derived_budgets || !map->user.mapped()
                   ? p.budget
                   : leaf_name(p.budget, p.user);
    s.job_class = p.cls;
    s.tier = p.budget.empty() ? 0 : p.cls == "debug" ? 2 : 1;
    s.min_runtime = Seconds(p.budget.empty() ? 0 : std::min(p.min_runtime, p.duration));
    s.resumable = p.resumable;
    sc.jobs.push_back(std::move(j));
  }
  std::stable_sort(sc.jobs.begin(), sc.jobs.end(),
                   [](const SimJob& a, const SimJob& b) { return a.spec.submit < b.spec.submit; });
  sc.end = Seconds(last) + Days(1);
  if (opt.cluster) {
    sc.nodes = *opt.cluster;
  } else {
    st.derived_cluster = true;
    // Over the window from the first submit to the last end, not just the arrivals: a short
    // export of long jobs would otherwise ask for a cluster far larger than its load.
    int64_t window = 1;
    for (const SimJob& j : sc.jobs)
      window = std::max(window, j.spec.submit.value() + j.duration.value());
    const double span = static_cast<double>(window);
    const double wanted_nodes = std::ceil(gpu_seconds / span / opt.oversubscription / kGpusPerNode);
    const double nodes =
        std::max({wanted_nodes, std::ceil(static_cast<double>(largest) / kGpusPerNode), 1.0});
    if (nodes > static_cast<double>(kMaxNodes))
      return tl::unexpected(
          At(file_label, 0, "--oversubscription",
             fmt::format("the load needs {:.0f} nodes, more than {}", nodes, kMaxNodes)));
    for (size_t i = 0; i < static_cast<size_t>(nodes); ++i)
      sc.nodes.push_back(NodeSpec{fmt::format("n{:03d}", i), kGpusPerNode,
                                  "b" + std::to_string(i / kNodesPerBlock), 0});
  }
  if (stats) *stats = st;
  return sc;
}

Result<Scenario> LoadGenericTrace(const std::string& path, const std::string& cluster_path,
                                  const std::string& budgets_path, GenericOptions opt,
                                  GenericStats* stats) {
  if (auto map = ParseColumnMap(opt.map); !map) return tl::unexpected(map.error());
  if (!cluster_path.empty()) {
    auto nodes = ReadCluster(cluster_path);
    if (!nodes) return tl::unexpected(nodes.error());
    opt.cluster = std::move(*nodes);
  }
  if (!budgets_path.empty()) {
    auto budgets = ReadBudgets(budgets_path);
    if (!budgets) return tl::unexpected(budgets.error());
    opt.budgets = std::move(*budgets);
  }
  auto text = ReadTextFile(path);
  if (!text) return tl::unexpected(text.error());
  return ParseGenericTrace(*text, path, opt, stats);
}

std::string DescribeGenericMapping(const Scenario& sc, const GenericOptions& opt,
                                   const GenericStats& st) {
  std::string out = fmt::format("Mapping of the {} trace to scenario '{}':\n",
                                opt.jsonl ? "JSONL" : "CSV", sc.name);
  out += fmt::format("  columns: --map {}\n", opt.map);
  size_t unfunded = 0;
  for (const SimJob& j : sc.jobs) unfunded += j.budget.empty();
  out += fmt::format(
      "  jobs: {} of {} rows ({} without GPUs and {} unfinished skipped); {} unfunded (empty or "
      "'none' budget)\n",
      sc.jobs.size(), st.rows, st.no_gpu, st.unfinished, unfunded);
  out += fmt::format(
      "  time: submit = submit - first submit ({}); durations at least 1 s; evaluation ends 1 day "
      "after the last submit ({:.2f} days)\n",
      st.origin, static_cast<double>(sc.end.value()) / 86400.0);
  int64_t gpus = 0;
  for (const NodeSpec& n : sc.nodes) gpus += n.gpus;
  if (st.derived_cluster)
    out += fmt::format(
        "  cluster (derived): {} nodes x {} GPUs = {} GPUs, sized as ceil(mean offered load / "
        "oversubscription {} / 8) and at least the largest job; mean offered load = GPU-seconds / "
        "(last end - first submit)\n",
        sc.nodes.size(), kGpusPerNode, gpus, opt.oversubscription);
  else
    out += fmt::format("  cluster (given): {} nodes, {} GPUs\n", sc.nodes.size(), gpus);
  if (st.derived_budgets) {
    size_t projects = 0;
    for (const BudgetSpec& b : sc.budgets) projects += b.parent == kProgram;
    out += fmt::format(
        "  budgets (derived): one program '{}' with {} projects of equal share, one per distinct "
        "budget value{}\n",
        kProgram, projects,
        sc.budgets.size() > projects + 1
            ? "; each user of a project is a leaf '<budget>.<user>' of share 1"
            : "");
  } else {
    out += fmt::format("  budgets (given): {} budgets; a job's budget value names one\n",
                       sc.budgets.size());
  }
  out +=
      "  contract: class from the mapping (default batch); tier 0 unfunded, 2 debug, else 1; "
      "min_runtime as mapped (default 0, at most the duration, 0 for unfunded work); grace "
      "120 s; resumable as mapped (default false), no checkpoints\n";
  return out;
}

}  // namespace hg::sim
