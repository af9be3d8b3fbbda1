#include "cli/admin.h"

#include <fmt/format.h>

#include "cli/duration.h"
#include "cli/json_util.h"
#include "cli/table.h"

namespace hg::cli {
namespace {

std::string NodePath(const std::string& node) { return "/v1/nodes/" + UrlEncode(node); }

// "operator: kernel update (until 2026-...), empty by 2026-... for job 17" or "-".
std::string Drain(const Json& n) {
  const std::string cause = Text(n, "drain_cause");
  const std::string reason = Text(n, "drain_reason");
  if (cause == "-" && reason == "-") return "-";
  std::string out = cause == "-" ? reason : cause + ": " + reason;
  if (n.contains("drain_deadline_at") && n["drain_deadline_at"].is_number()) {
    out += " (until " + Time(n, "drain_deadline_at") + ")";
  }
  if (n.contains("drain_empty_by") && n["drain_empty_by"].is_number()) {
    out += ", empty by " + Time(n, "drain_empty_by");
    if (n.contains("drain_waits_for") && n["drain_waits_for"].is_number())
      out += " for job " + Text(n, "drain_waits_for");
  }
  return out;
}

std::string Lines(const std::string& label, const Json& j, const char* key) {
  return fmt::format("{:<11} {}\n", label + ":", Joined(j, key) == "-" ? "(none)" : Joined(j, key));
}

}  // namespace

Request BuildNodes() { return Request{"GET", "/v1/nodes", std::nullopt}; }

std::string RenderNodes(const Json& reply) {
  if (!reply.contains("nodes") || !reply["nodes"].is_array() || reply["nodes"].empty()) {
    return "no nodes\n";
  }
  Table t({"NODE", "GPUS", "USED", "BLOCK", "STATE", "HEARTBEAT", "JOBS", "DRAIN"});
  t.AlignRight(1).AlignRight(2);
  for (const Json& n : reply["nodes"]) {
    t.Add({Text(n, "name"), Text(n, "gpus"), Text(n, "used_gpus"), Text(n, "block"),
           Text(n, "state"), Time(n, "last_heartbeat_at"), Joined(n, "jobs"), Drain(n)});
  }
  return t.Render();
}

CliResult<Request> BuildDrain(const DrainArgs& a, int64_t now_s) {
  if (a.node.empty()) return UsageError("node", "missing");
  Json body = Json::object();
  if (!a.reason.empty()) body["reason"] = a.reason;
  if (a.deadline) {
    auto d = ParseDuration(*a.deadline, "--deadline");
    if (!d) return tl::unexpected(UsageError(d.error()));
    body["deadline_at"] = now_s + *d;
  }
  return Request{"POST", NodePath(a.node) + "/drain", body};
}

Request BuildUndrain(const std::string& node) {
  return Request{"POST", NodePath(node) + "/undrain", Json::object()};
}

Request BuildWhoami() { return Request{"GET", "/v1/whoami", std::nullopt}; }

std::string RenderWhoami(const Json& reply) {
  return fmt::format("{:<11} {}\n{:<11} {}\n", "name:", Text(reply, "name"),
                     "role:", Text(reply, "role")) +
         Lines("member of", reply, "budgets") + Lines("leads", reply, "leads");
}

CliResult<Request> BuildPrincipalAdd(const PrincipalAddArgs& a) {
  if (a.name.empty()) return UsageError("name", "missing");
  if (a.role != "user" && a.role != "admin" && a.role != "agent") {
    return UsageError("--role", "'" + a.role + "' is not one of user, admin, agent");
  }
  return Request{"POST", "/v1/principals", Json{{"name", a.name}, {"role", a.role}}};
}

std::string RenderPrincipalAdded(const Json& reply) {
  return fmt::format(
      "principal {} created\ntoken: {}\n"
      "(shown once: the server keeps only its hash; give it to {} as HOURGLASS_TOKEN)\n",
      Text(reply, "name"), Text(reply, "token"), Text(reply, "name"));
}

Request BuildTokenNew(const std::string& name) {
  return Request{"POST", "/v1/principals/" + UrlEncode(name) + "/tokens", Json::object()};
}

Request BuildTokenList(const std::string& name) {
  return Request{"GET", "/v1/principals/" + UrlEncode(name) + "/tokens", std::nullopt};
}

Request BuildTokenRevoke(const std::string& name, const std::string& id) {
  return Request{"DELETE", "/v1/principals/" + UrlEncode(name) + "/tokens/" + UrlEncode(id),
                 std::nullopt};
}

std::string RenderTokenList(const Json& reply) {
  if (!reply.contains("tokens") || !reply["tokens"].is_array() || reply["tokens"].empty())
    return "no tokens\n";
  Table t({"ID", "CREATED", "IN USE"});
  for (const Json& k : reply["tokens"]) {
    t.Add({Text(k, "id"), Time(k, "created_at"), k.value("current", false) ? "this one" : ""});
  }
  return t.Render();
}

CliResult<void> RunTokenNew(Client& c, const std::string& name, bool json, std::ostream& out) {
  auto reply = c.Call(BuildTokenNew(name));
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n"
               : fmt::format("token: {}\n(shown once: the server keeps only its hash; give it "
                             "to {} as HOURGLASS_TOKEN)\n",
                             Text(*reply, "token"), name));
  return {};
}

CliResult<void> RunTokenList(Client& c, const std::string& name, bool json, std::ostream& out) {
  std::string who = name;
  if (who.empty()) {
    auto me = c.Call(BuildWhoami());
    if (!me) return tl::unexpected(me.error());
    who = Text(*me, "name");
  }
  auto reply = c.Call(BuildTokenList(who));
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderTokenList(*reply));
  return {};
}

CliResult<void> RunTokenRevoke(Client& c, const std::string& name, const std::string& id, bool json,
                               std::ostream& out) {
  auto reply = c.Call(BuildTokenRevoke(name, id));
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n"
               : fmt::format("token {} of {} revoked: it is refused from now on\n", id, name));
  return {};
}

CliResult<void> RunNodes(Client& c, bool json, std::ostream& out) {
  auto reply = c.Call(BuildNodes());
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderNodes(*reply));
  return {};
}

CliResult<void> RunDrain(Client& c, const DrainArgs& a, int64_t now_s, bool json,
                         std::ostream& out) {
  auto req = BuildDrain(a, now_s);
  if (!req) return tl::unexpected(req.error());
  auto reply = c.Call(*req);
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : fmt::format("node {} draining\n", a.node));
  return {};
}

CliResult<void> RunUndrain(Client& c, const std::string& node, bool json, std::ostream& out) {
  auto reply = c.Call(BuildUndrain(node));
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : fmt::format("node {} ready\n", node));
  return {};
}

CliResult<void> RunWhoami(Client& c, bool json, std::ostream& out) {
  auto reply = c.Call(BuildWhoami());
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderWhoami(*reply));
  return {};
}

CliResult<void> RunPrincipalAdd(Client& c, const PrincipalAddArgs& a, bool json,
                                std::ostream& out) {
  auto req = BuildPrincipalAdd(a);
  if (!req) return tl::unexpected(req.error());
  auto reply = c.Call(*req);
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderPrincipalAdded(*reply));
  return {};
}

}  // namespace hg::cli
