#include "sim/trace.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "sim/generic_trace.h"
#include "sim/openb.h"
#include "sim/philly.h"
#include "sim/text_input.h"

namespace hg::sim {
namespace {

namespace fs = std::filesystem;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The first line that is neither blank nor a '#' comment, without a byte order mark.
std::string_view FirstLine(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string_view::npos || line[b] == '#') continue;
    return line.substr(b);
  }
  return {};
}

bool HasColumns(std::string_view header, std::initializer_list<std::string_view> cols) {
  for (std::string_view c : cols) {
    bool found = false;
    size_t pos = 0;
    while (pos <= header.size() && !found) {
      size_t end = header.find(',', pos);
      if (end == std::string_view::npos) end = header.size();
      std::string_view f = header.substr(pos, end - pos);
      while (!f.empty() && (f.front() == ' ' || f.front() == '"')) f.remove_prefix(1);
      while (!f.empty() && (f.back() == ' ' || f.back() == '"' || f.back() == '\r'))
        f.remove_suffix(1);
      found = f == c;
      pos = end + 1;
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace

Result<std::string> DetectTraceFormat(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return std::string("openb");
  const std::string name = fs::path(path).filename().string();
  if (name.find("openb") != std::string::npos) return std::string("openb");
  if (EndsWith(name, ".jsonl") || EndsWith(name, ".ndjson")) return std::string("jsonl");
  auto text = ReadTextFile(path);
  if (!text) return tl::unexpected(text.error());
  const std::string_view head = FirstLine(*text);
  if (!head.empty() && head.front() == '{') return std::string("jsonl");
  if (HasColumns(head, {"timestamp", "duration", "num_gpus", "cluster"}))
    return std::string("philly");
  if (HasColumns(head, {"name", "num_gpu", "gpu_milli"})) return std::string("openb");
  return std::string("csv");
}

Result<LoadedTrace> LoadTrace(const TraceOptions& opt) {
  if (opt.path.empty()) return Fail("--trace", "give the trace file");
  std::string format = opt.format.empty() ? "auto" : opt.format;
  if (format == "auto") {
    auto f = DetectTraceFormat(opt.path);
    if (!f) return tl::unexpected(f.error());
    format = *f;
  }
  const bool generic = format == "csv" || format == "jsonl";
  if (!generic && (!opt.map.empty() || !opt.cluster.empty() || !opt.budgets.empty()))
    return Fail(
        !opt.map.empty()       ? "--map"
        : !opt.cluster.empty() ? "--cluster"
                               : "--budgets",
        fmt::format("applies only to csv and jsonl traces; '{}' is read as {}", opt.path, format));
  LoadedTrace out;
  out.format = format;
  if (format == "philly") {
    PhillyOptions po;
    po.oversubscription = opt.oversubscription;
    po.seed = opt.seed;
    po.debug_max_minutes = opt.debug_max_minutes;
    po.unfunded_fraction = opt.unfunded_fraction;
    auto sc = LoadPhilly(opt.path, po);
    if (!sc) return tl::unexpected(sc.error());
    out.scenario = std::move(*sc);
    out.mapping = DescribeMapping(out.scenario, po);
  } else if (format == "openb") {
    OpenbOptions oo;
    oo.pods = opt.path;
    oo.seed = opt.seed;
    OpenbStats stats;
    auto sc = LoadOpenb(oo, &stats);
    if (!sc) return tl::unexpected(sc.error());
    out.scenario = std::move(*sc);
    out.mapping = DescribeOpenbMapping(out.scenario, oo, stats);
  } else if (generic) {
    GenericOptions go;
    go.map = opt.map;
    go.jsonl = format == "jsonl";
    go.delimiter = opt.delimiter;
    go.oversubscription = opt.oversubscription;
    go.name = fs::path(opt.path).filename().string();
    GenericStats stats;
    auto sc = LoadGenericTrace(opt.path, opt.cluster, opt.budgets, go, &stats);
    if (!sc) return tl::unexpected(sc.error());
    out.scenario = std::move(*sc);
    out.mapping = DescribeGenericMapping(out.scenario, go, stats);
  } else {
    return Fail("--format",
                fmt::format("unknown trace format '{}' (known: {})", opt.format, kTraceFormats));
  }
  return out;
}

}  // namespace hg::sim
