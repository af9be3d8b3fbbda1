#include "cli/budgets.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "cli/duration.h"
#include "cli/json_util.h"
#include "cli/table.h"

namespace hg::cli {
namespace {

// Depth in the tree: from the path ("ai/olmo/alice" is 2), else by walking `parent` links among
// the listed budgets (bounded, so a malformed answer cannot loop).
int Depth(const Json& b, const std::map<std::string, std::string>& parent_of) {
  const std::string path = Text(b, "path");
  if (path != "-") return static_cast<int>(std::count(path.begin(), path.end(), '/'));
  int depth = 0;
  std::string p = Text(b, "parent");
  while (p != "-" && !p.empty() && depth < 64) {
    ++depth;
    const auto it = parent_of.find(p);
    p = it == parent_of.end() ? "" : it->second;
  }
  return depth;
}

std::string Hours(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return "-";
  return FormatNumber(j[key].get<double>());
}

// Delivered as a percentage of owed, "-" when nothing was owed.
std::string DeliveredPercent(const Json& b) {
  const double owed = Number(b, "owed_7d_gpu_hours", 0);
  if (owed <= 0 || !b.contains("delivered_7d_gpu_hours")) return "-";
  return fmt::format(
      "{}%", static_cast<int64_t>(std::lround(100.0 * Number(b, "delivered_7d_gpu_hours") / owed)));
}

std::string Limit(const Json& b) {
  const std::string l = Text(b, "limit");
  return l == "-" ? "none" : l;
}

CliResult<double> ParseShare(const std::string& text, const std::string& flag) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end || !std::isfinite(v) || v <= 0) {
    return UsageError(flag, "'" + text + "' is not a positive number");
  }
  return v;
}

// Json for a limit: a GPU count >= 0, or null for "none".
CliResult<Json> ParseLimit(const std::string& text) {
  if (text == "none") return Json(nullptr);
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end || v < 0 || v > 1'000'000'000) {
    return UsageError("--limit", "'" + text + "' is not a GPU count or none");
  }
  return Json(v);
}

// Applies "+u" / "-u" / "u" edits to the list `key` of `current`.
CliResult<Json> EditList(const Json& current, const char* key, const std::string& flag,
                         const std::vector<std::string>& edits) {
  std::vector<std::string> names;
  if (current.contains(key) && current[key].is_array()) {
    for (const Json& n : current[key]) {
      if (n.is_string()) names.push_back(n.get<std::string>());
    }
  }
  for (const std::string& e : edits) {
    const bool remove = !e.empty() && e[0] == '-';
    const std::string name = (!e.empty() && (e[0] == '+' || e[0] == '-')) ? e.substr(1) : e;
    if (name.empty()) return UsageError(flag, "'" + e + "' names nobody (want +user or -user)");
    const auto it = std::find(names.begin(), names.end(), name);
    if (remove) {
      if (it == names.end()) {
        return UsageError(
            flag, fmt::format("{} is not in the {} of {}", name, key, Text(current, "name")));
      }
      names.erase(it);
    } else if (it == names.end()) {
      names.push_back(name);
    }
  }
  return Json(names);
}

// A line per take-back cool-down (the server's `take_back_cooldowns`): a lead whose budget
// waits although it is below its share learns which budget it may not stop, and until when.
std::string CooldownLines(const Json& budgets) {
  std::string out;
  for (const Json& b : budgets) {
    if (!b.is_object() || !b.contains("take_back_cooldowns") ||
        !b["take_back_cooldowns"].is_array())
      continue;
    for (const Json& c : b["take_back_cooldowns"]) {
      if (!c.is_object() || !c.contains("until") || !c["until"].is_number_integer()) continue;
      out += fmt::format("{} may not take GPUs back from {} until {} (take-back cool-down)\n",
                         Text(b, "name"), Text(c, "budget"), FormatTime(c["until"].get<int64_t>()));
    }
  }
  return out;
}

}  // namespace

Request BuildBudgets() { return Request{"GET", "/v1/budgets", std::nullopt}; }

std::string RenderBudgets(const Json& reply) {
  if (!reply.contains("budgets") || !reply["budgets"].is_array() || reply["budgets"].empty()) {
    return "no budgets\n";
  }
  std::map<std::string, std::string> parent_of;
  for (const Json& b : reply["budgets"]) parent_of[Text(b, "name")] = Text(b, "parent");
  Table t({"BUDGET", "SHARE", "LIMIT", "ENTITLED", "RUNNING", "PENDING", "USED_7D", "OWED_7D",
           "DELIVERED_7D", "DELIVERED%", "LEADS"});
  for (size_t c = 1; c <= 9; ++c) t.AlignRight(c);
  for (const Json& b : reply["budgets"]) {
    const int depth = std::min(Depth(b, parent_of), 32);
    t.Add({std::string(static_cast<size_t>(depth) * 2, ' ') + Text(b, "name"), Text(b, "share"),
           Limit(b), Hours(b, "entitled_gpus"), Text(b, "running_gpus"), Text(b, "pending_jobs"),
           Hours(b, "usage_7d_gpu_hours"), Hours(b, "owed_7d_gpu_hours"),
           Hours(b, "delivered_7d_gpu_hours"), DeliveredPercent(b), Joined(b, "leads")});
  }
  return t.Render() + "(GPU-hours over the last 7 days; ENTITLED in GPUs now)\n" +
         CooldownLines(reply["budgets"]);
}

CliResult<Request> BuildBudgetSet(const BudgetSetArgs& a, const Json& current) {
  if (!a.share && !a.limit && a.lead.empty() && a.member.empty()) {
    return UsageError("budget set",
                      "nothing to change (give --share, --limit, --lead or --member)");
  }
  if (current.is_null()) return UsageError("budget", "unknown budget '" + a.name + "'");
  Json body = Json::object();
  if (a.share) {
    auto s = ParseShare(*a.share, "--share");
    if (!s) return tl::unexpected(s.error());
    body["share"] = *s;
  }
  if (a.limit) {
    auto l = ParseLimit(*a.limit);
    if (!l) return tl::unexpected(l.error());
    body["limit"] = *l;
  }
  if (!a.lead.empty()) {
    auto l = EditList(current, "leads", "--lead", a.lead);
    if (!l) return tl::unexpected(l.error());
    body["leads"] = *l;
  }
  if (!a.member.empty()) {
    auto m = EditList(current, "members", "--member", a.member);
    if (!m) return tl::unexpected(m.error());
    body["members"] = *m;
  }
  return Request{"PATCH", "/v1/budgets/" + UrlEncode(a.name), body};
}

CliResult<Request> BuildBudgetAdd(const BudgetAddArgs& a) {
  if (a.name.empty()) return UsageError("name", "missing");
  auto share = ParseShare(a.share, "--share");
  if (!share) return tl::unexpected(share.error());
  Json body = {{"name", a.name}, {"share", *share}};
  if (a.parent) body["parent"] = *a.parent;
  if (a.limit) {
    auto l = ParseLimit(*a.limit);
    if (!l) return tl::unexpected(l.error());
    body["limit"] = *l;
  }
  if (!a.leads.empty()) body["leads"] = a.leads;
  if (!a.members.empty()) body["members"] = a.members;
  return Request{"POST", "/v1/budgets", body};
}

Request BuildBudgetDelete(const std::string& name) {
  return Request{"DELETE", "/v1/budgets/" + UrlEncode(name), std::nullopt};
}

Request BuildAudit(const std::optional<std::string>& budget) {
  return Request{"GET", budget ? "/v1/audit?budget=" + UrlEncode(*budget) : "/v1/audit",
                 std::nullopt};
}

std::string RenderAudit(const Json& reply) {
  if (!reply.contains("entries") || !reply["entries"].is_array() || reply["entries"].empty())
    return "no changes\n";
  Table t({"WHEN", "WHO", "BUDGET", "FIELD", "OLD", "NEW"});
  // A creation has no old value and a deletion no new one: "-".
  for (const Json& e : reply["entries"])
    t.Add({Time(e, "at"), Text(e, "who"), Text(e, "budget"), Text(e, "field"), Text(e, "old"),
           Text(e, "new")});
  return t.Render();
}

Request BuildUsage(const std::optional<std::string>& budget) {
  return Request{"GET", budget ? "/v1/usage?budget=" + UrlEncode(*budget) : "/v1/usage",
                 std::nullopt};
}

namespace {

// "debug 5s/12s, batch 2m/3h5m": each class's p50/p90 queue wait in the window; "-" for none.
std::string Waits(const Json& b) {
  if (!b.contains("wait_s") || !b["wait_s"].is_object() || b["wait_s"].empty()) return "-";
  std::string out;
  for (const auto& [cls, w] : b["wait_s"].items()) {
    if (!w.contains("p50") || !w["p50"].is_number() || !w.contains("p90") || !w["p90"].is_number())
      continue;
    out += (out.empty() ? "" : ", ") + cls + " " + FormatDuration(w["p50"].get<int64_t>()) + "/" +
           FormatDuration(w["p90"].get<int64_t>());
  }
  return out.empty() ? "-" : out;
}

}  // namespace

std::string RenderUsage(const Json& reply) {
  if (!reply.contains("budgets") || !reply["budgets"].is_array() || reply["budgets"].empty()) {
    return "no usage\n";
  }
  size_t days = 0;
  for (const Json& b : reply["budgets"]) {
    if (b.contains("daily") && b["daily"].is_array()) days = std::max(days, b["daily"].size());
  }
  std::vector<std::string> header = {"BUDGET", "OWED_7D", "DELIVERED_7D", "DELIVERED%"};
  for (size_t d = days; d > 0; --d) {
    header.push_back(d == 1 ? "LAST_24H" : fmt::format("DAY-{}", d - 1));
  }
  header.push_back("WAIT_P50/P90");
  Table t(header);
  for (size_t c = 1; c + 1 < header.size(); ++c) t.AlignRight(c);
  for (const Json& b : reply["budgets"]) {
    const std::string path = Text(b, "path");
    std::vector<std::string> row = {path == "-" ? Text(b, "name") : path,
                                    Hours(b, "owed_7d_gpu_hours"),
                                    Hours(b, "delivered_7d_gpu_hours"), DeliveredPercent(b)};
    if (b.contains("daily") && b["daily"].is_array()) {
      // Each day as delivered/owed GPU-hours, oldest first.
      for (const Json& d : b["daily"]) {
        row.push_back(Hours(d, "delivered_gpu_hours") + "/" + Hours(d, "owed_gpu_hours"));
      }
    }
    while (row.size() < 4 + days) row.push_back("-");  // a budget with fewer days than others
    row.push_back(Waits(b));
    t.Add(std::move(row));
  }
  return t.Render() +
         "(GPU-hours; daily columns are delivered/owed per 24 hours, oldest first; waits are the "
         "queue waits of the window's starts by class)\n";
}

CliResult<void> RunBudgets(Client& c, bool json, std::ostream& out) {
  auto reply = c.Call(BuildBudgets());
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderBudgets(*reply));
  return {};
}

CliResult<void> RunBudgetSet(Client& c, const BudgetSetArgs& a, bool json, std::ostream& out) {
  Json current = nullptr;
  if (!a.lead.empty() || !a.member.empty()) {
    // Lead and member edits are relative: read the lists they apply to.
    auto all = c.Call(BuildBudgets());
    if (!all) return tl::unexpected(all.error());
    if (all->contains("budgets") && (*all)["budgets"].is_array()) {
      for (const Json& b : (*all)["budgets"]) {
        if (Text(b, "name") == a.name) current = b;
      }
    }
  } else {
    current = Json{{"name", a.name}};  // share/limit only: the server checks the name
  }
  auto req = BuildBudgetSet(a, current);
  if (!req) return tl::unexpected(req.error());
  auto reply = c.Call(*req);
  if (!reply) return tl::unexpected(reply.error());
  if (json) {
    out << reply->dump() << "\n";
  } else {
    std::string changed;
    for (const auto& [k, v] : req->body->items()) {
      changed += fmt::format("{}{}={}", changed.empty() ? "" : " ", k,
                             v.is_null()     ? "none"
                             : v.is_string() ? v.get<std::string>()
                                             : v.dump());
    }
    out << fmt::format("budget {}: {}\n", a.name, changed);
  }
  return {};
}

CliResult<void> RunBudgetAdd(Client& c, const BudgetAddArgs& a, bool json, std::ostream& out) {
  auto req = BuildBudgetAdd(a);
  if (!req) return tl::unexpected(req.error());
  auto reply = c.Call(*req);
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n"
               : fmt::format("budget {} added under {}\n", a.name, a.parent.value_or("(top)")));
  return {};
}

CliResult<void> RunBudgetDelete(Client& c, const std::string& name, bool json, std::ostream& out) {
  auto reply = c.Call(BuildBudgetDelete(name));
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : fmt::format("budget {} deleted\n", name));
  return {};
}

CliResult<void> RunAudit(Client& c, const std::optional<std::string>& budget, bool json,
                         std::ostream& out) {
  auto reply = c.Call(BuildAudit(budget));
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderAudit(*reply));
  return {};
}

CliResult<void> RunUsage(Client& c, const std::optional<std::string>& budget, bool json,
                         std::ostream& out) {
  auto reply = c.Call(BuildUsage(budget));
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderUsage(*reply));
  return {};
}

}  // namespace hg::cli
