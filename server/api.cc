#include "server/api.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "server/auth.h"
#include "server/dashboard.h"
#include "server/requests.h"

namespace hg::server {
namespace {

using nlohmann::json;

struct Out {
  int status = 200;
  json body;
  bool is_text = false;
  std::string text;
  std::vector<std::pair<std::string, std::string>> headers;
};

enum class Access { kPublic, kUser, kAdmin, kAgent };

struct Ctx {
  const httplib::Request& req;
  store::PrincipalRecord who;
  json body;
  std::string token;  // the bearer token the request came with ("" on public routes)
};

using Handler = std::function<Reply<Out>(Ctx&)>;

std::string ErrorBody(const std::string& field, const std::string& reason) {
  return json{{"error", {{"field", field}, {"reason", reason}}}}.dump();
}

void SendError(httplib::Response& res, const Refusal& r) {
  res.status = r.status;
  res.set_content(ErrorBody(r.field, r.reason), "application/json");
}

Out Json(json body, int status = 200) {
  Out o;
  o.status = status;
  o.body = std::move(body);
  return o;
}

// Wraps a handler: authentication, the role's reach, the JSON body, errors as JSON.
httplib::Server::Handler Wrap(State& state, Access access, Handler h) {
  return [&state, access, h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
    Ctx ctx{req, {}, json::object(), {}};
    if (access != Access::kPublic) {
      const std::string header = req.get_header_value("Authorization");
      const auto token = BearerToken(header);
      if (!token || !IsWellFormedToken(*token))
        return SendError(res, {401, "authorization", "a bearer token is required"});
      auto who = state.Authenticate(std::string(*token));
      if (!who) return SendError(res, {503, "store", who.error().ToString()});
      if (!*who) return SendError(res, {401, "authorization", "unknown token"});
      ctx.who = **who;
      ctx.token = std::string(*token);
      if (access == Access::kAgent && !CanActAsAgent(ctx.who))
        return SendError(res, {403, "authorization", "only agents may call /v1/agents/*"});
      if (access != Access::kAgent && ctx.who.role == kRoleAgent)
        return SendError(res, {403, "authorization", "agent tokens may only call /v1/agents/*"});
      if (access == Access::kAdmin && !IsAdmin(ctx.who))
        return SendError(res, {403, "authorization", "only admins may do this"});
    }
    if (req.method == "POST" || req.method == "PATCH") {
      if (!req.body.empty()) {
        try {
          ctx.body = json::parse(req.body);
        } catch (const json::exception& e) {
          return SendError(res, {400, "body", std::string("invalid JSON: ") + e.what()});
        }
        if (!ctx.body.is_object()) return SendError(res, {400, "body", "must be a JSON object"});
      }
    }
    Reply<Out> out = [&]() -> Reply<Out> {
      try {
        return h(ctx);
      } catch (const std::exception& e) {
        // A library surprise (json access on a shape we did not check): a bug, not the user's.
        spdlog::error("{} {}: {}", req.method, req.path, e.what());
        return Refuse(500, "server", std::string("internal error: ") + e.what());
      }
    }();
    if (!out) return SendError(res, out.error());
    res.status = out->status;
    for (const auto& [k, v] : out->headers) res.set_header(k, v);
    if (out->is_text)
      res.set_content(out->text, "text/plain");
    else
      // Replace rather than throw on invalid UTF-8 (input JSON is validated by the parser; this
      // guards text from elsewhere, such as an agent's error message).
      res.set_content(out->body.dump(-1, ' ', false, json::error_handler_t::replace),
                      "application/json");
  };
}

std::optional<int64_t> ParseInt(const std::string& s) {
  int64_t v = 0;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

Reply<int64_t> PathId(const httplib::Request& req) {
  auto id = ParseInt(req.matches[1]);
  if (!id || *id <= 0) return Refuse(400, "id", "must be a positive integer");
  return *id;
}

Reply<int64_t> QueryInt(const httplib::Request& req, const std::string& key, int64_t dflt,
                        int64_t lo, int64_t hi) {
  if (!req.has_param(key)) return dflt;
  auto v = ParseInt(req.get_param_value(key));
  if (!v || *v < lo || *v > hi)
    return Refuse(400, key,
                  "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return *v;
}

// --- jobs -----------------------------------------------------------------------------------

Reply<Out> SubmitJob(State& state, Ctx& c) {
  auto j = ParseJobRequest(c.body);
  if (!j) return tl::unexpected(j.error());
  // A client that may retry names its submission, so that a retry after a lost answer finds the
  // job the first attempt made instead of making a second one (docs/api.md).
  const std::string key = c.req.get_header_value("Idempotency-Key");
  if (!key.empty() && (key.size() > 128 || std::any_of(key.begin(), key.end(), [](char ch) {
                         return ch <= 0x20 || ch >= 0x7f;
                       })))
    return Refuse(400, "Idempotency-Key",
                  "must be at most 128 printable ASCII characters without spaces");
  j->submit_key = key;
  auto done = state.Submit(c.who, std::move(*j));
  if (!done) return tl::unexpected(done.error());
  if (done->replayed) return Json({{"id", done->id}, {"state", done->state}, {"replayed", true}});
  return Json({{"id", done->id}, {"state", "pending"}}, 201);
}

// --- agents -----------------------------------------------------------------------------------

Reply<Out> RegisterAgent(State& state, Ctx& c) {
  auto r = ParseRegistration(c.body);
  if (!r) return tl::unexpected(r.error());
  r->token = std::string(BearerToken(c.req.get_header_value("Authorization")).value_or(""));
  auto out = state.Register(*r);
  if (!out) return tl::unexpected(out.error());
  return Json(*out);
}

Reply<Out> AgentHeartbeat(State& state, Ctx& c) {
  auto hb = ParseHeartbeat(c.body);
  if (!hb) return tl::unexpected(hb.error());
  hb->token = std::string(BearerToken(c.req.get_header_value("Authorization")).value_or(""));
  auto out = state.OnHeartbeat(*hb);
  if (!out) return tl::unexpected(out.error());
  return Json(*out);
}

// --- logs -------------------------------------------------------------------------------------

Reply<Out> JobLogs(State& state, const LogsOptions& opt, Ctx& c) {
  auto id = PathId(c.req);
  if (!id) return tl::unexpected(id.error());
  const std::string stream =
      c.req.has_param("stream") ? c.req.get_param_value("stream") : std::string("stdout");
  if (stream != "stdout" && stream != "stderr")
    return Refuse(400, "stream", "must be stdout or stderr");
  auto attempt = QueryInt(c.req, "attempt", 0, 0, 1 << 30);
  if (!attempt) return tl::unexpected(attempt.error());
  auto offset = QueryInt(c.req, "offset", 0, 0, INT64_MAX);
  if (!offset) return tl::unexpected(offset.error());
  auto src = state.LogsOf(c.who, *id, static_cast<int32_t>(*attempt));
  if (!src) return tl::unexpected(src.error());
  if (src->logs_url.empty()) return Refuse(404, "logs", "the agent has no log service");
  const bool https = src->logs_url.rfind("https://", 0) == 0;
  if (opt.https_only && !https)
    return Refuse(502, "logs",
                  "the agent's log service at " + src->logs_url +
                      " is plain HTTP, and this server sends agents' tokens over HTTPS only; "
                      "start the agent with --logs-tls-cert and --logs-tls-key");
  httplib::Client cli(src->logs_url);
  if (https && !opt.agents_ca_file.empty()) cli.set_ca_cert_path(opt.agents_ca_file);
  cli.set_connection_timeout(2, 0);
  cli.set_read_timeout(10, 0);
  if (!src->token.empty()) cli.set_bearer_token_auth(src->token);
  const std::string path = "/logs/" + std::to_string(*id) + "/" + std::to_string(src->attempt) +
                           "/" + stream + "?offset=" + std::to_string(*offset);
  auto res = cli.Get(path);
  if (!res) return Refuse(502, "logs", "the agent at " + src->logs_url + " did not answer");
  if (res->status != 200) {
    Refusal r{res->status == 404 ? 404 : 502, "logs",
              "the agent answered " + std::to_string(res->status)};
    try {
      const auto e = json::parse(res->body);
      r.reason = e.at("error").at("reason").get<std::string>();
    } catch (const std::exception&) {
    }
    return tl::unexpected(r);
  }
  Out o;
  o.is_text = true;
  o.text = res->body;
  const std::string next = res->has_header("X-Hourglass-Offset")
                               ? res->get_header_value("X-Hourglass-Offset")
                               : std::to_string(*offset + static_cast<int64_t>(res->body.size()));
  o.headers.push_back({"X-Hourglass-Offset", next});
  o.headers.push_back({"X-Hourglass-Done", src->done ? "true" : "false"});
  return o;
}

Reply<Out> Lift(Reply<json> r) {
  if (!r) return tl::unexpected(r.error());
  return Json(std::move(*r));
}

}  // namespace

void InstallRoutes(httplib::Server& svr, State& state, const LogsOptions& logs) {
  svr.set_payload_max_length(kMaxBodyBytes);
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413)
      res.set_content(ErrorBody("body", "larger than 1 MiB"), "application/json");
    else if (res.status == 404)
      res.set_content(ErrorBody("path", "no such endpoint"), "application/json");
    else
      res.set_content(ErrorBody("request", "refused (" + std::to_string(res.status) + ")"),
                      "application/json");
  });
  State* st = &state;
  InstallDashboard(svr);

  svr.Get("/healthz", Wrap(state, Access::kPublic, [](Ctx&) -> Reply<Out> {
            return Json({{"ok", true}, {"version", "0.1.0"}});
          }));
  svr.Get("/metrics", Wrap(state, Access::kPublic, [st](Ctx&) -> Reply<Out> {
            Out o;
            o.is_text = true;
            o.text = st->MetricsText();
            return o;
          }));

  // Principals.
  svr.Get("/v1/whoami", Wrap(state, Access::kUser,
                             [st](Ctx& c) -> Reply<Out> { return Json(st->WhoAmI(c.who)); }));
  svr.Get("/v1/principals", Wrap(state, Access::kAdmin,
                                 [st](Ctx&) -> Reply<Out> { return Lift(st->PrincipalsJson()); }));
  svr.Post("/v1/principals", Wrap(state, Access::kAdmin, [st](Ctx& c) -> Reply<Out> {
             auto p = ParsePrincipalRequest(c.body);
             if (!p) return tl::unexpected(p.error());
             auto token = st->CreatePrincipal(p->name, p->role);
             if (!token) return tl::unexpected(token.error());
             return Json({{"name", p->name}, {"role", p->role}, {"token", *token}}, 201);
           }));
  svr.Post(R"(/v1/principals/([A-Za-z0-9._-]+)/tokens)",
           Wrap(state, Access::kAdmin, [st](Ctx& c) -> Reply<Out> {
             if (auto ok = ParseEmptyBody(c.body); !ok) return tl::unexpected(ok.error());
             const std::string name = c.req.matches[1];
             auto token = st->NewTokenFor(name);
             if (!token) return tl::unexpected(token.error());
             return Json({{"name", name}, {"token", *token}}, 201);
           }));

  svr.Get(R"(/v1/principals/([A-Za-z0-9._-]+)/tokens)",
          Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
            return Lift(st->TokensJson(c.who, c.req.matches[1], c.token));
          }));
  svr.Delete(R"(/v1/principals/([A-Za-z0-9._-]+)/tokens/([^/]+))",
             Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
               return Lift(st->RevokeToken(c.who, c.req.matches[1], c.req.matches[2]));
             }));

  // Budgets.
  svr.Get("/v1/budgets",
          Wrap(state, Access::kUser, [st](Ctx&) -> Reply<Out> { return Json(st->BudgetsJson()); }));
  svr.Post("/v1/budgets", Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
             auto b = ParseBudgetCreate(c.body);
             if (!b) return tl::unexpected(b.error());
             auto out = st->CreateBudget(c.who, b->name, b->change);
             if (!out) return tl::unexpected(out.error());
             return Json(*out, 201);
           }));
  svr.Patch(R"(/v1/budgets/([A-Za-z0-9._-]+))",
            Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
              auto ch = ParseBudgetPatch(c.body);
              if (!ch) return tl::unexpected(ch.error());
              return Lift(st->PatchBudget(c.who, c.req.matches[1], *ch));
            }));
  svr.Delete(R"(/v1/budgets/([A-Za-z0-9._-]+))",
             Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
               return Lift(st->DeleteBudget(c.who, c.req.matches[1]));
             }));
  svr.Get("/v1/audit", Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
            return Lift(st->AuditJson(c.req.get_param_value("budget")));
          }));
  svr.Get("/v1/usage", Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
            return Lift(st->UsageJson(c.req.get_param_value("budget")));
          }));

  // Jobs.
  svr.Post("/v1/jobs", Wrap(state, Access::kUser, [st](Ctx& c) { return SubmitJob(*st, c); }));
  svr.Get("/v1/jobs", Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
            const std::string s = c.req.get_param_value("state");
            if (!s.empty() && s != "pending" && s != "running" && s != "done" && s != "all")
              return Refuse(400, "state", "must be pending, running, done or all");
            auto limit = QueryInt(c.req, "limit", 0, 0, 1000000);
            if (!limit) return tl::unexpected(limit.error());
            auto before = QueryInt(c.req, "before", 0, 0, INT64_MAX);
            if (!before) return tl::unexpected(before.error());
            const std::string order = c.req.get_param_value("order");
            if (!order.empty() && order != "newest" && order != "oldest")
              return Refuse(400, "order", "must be newest or oldest");
            return Lift(st->JobsJson(c.who, s, c.req.get_param_value("user"), *limit,
                                     order == "oldest", *before));
          }));
  svr.Get(R"(/v1/jobs/(\d+))", Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
            auto id = PathId(c.req);
            if (!id) return tl::unexpected(id.error());
            return Lift(st->JobJson(c.who, *id));
          }));
  svr.Get(R"(/v1/jobs/(\d+)/events)", Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
            auto id = PathId(c.req);
            if (!id) return tl::unexpected(id.error());
            return Lift(st->JobEventsJson(c.who, *id));
          }));
  svr.Post(R"(/v1/jobs/(\d+)/cancel)", Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
             if (auto ok = ParseEmptyBody(c.body); !ok) return tl::unexpected(ok.error());
             auto id = PathId(c.req);
             if (!id) return tl::unexpected(id.error());
             return Lift(st->Cancel(c.who, *id));
           }));
  svr.Post(R"(/v1/jobs/(\d+)/activity)", Wrap(state, Access::kUser, [st](Ctx& c) -> Reply<Out> {
             if (auto ok = ParseEmptyBody(c.body); !ok) return tl::unexpected(ok.error());
             auto id = PathId(c.req);
             if (!id) return tl::unexpected(id.error());
             return Lift(st->ReportActivity(c.who, *id));
           }));
  svr.Get(R"(/v1/jobs/(\d+)/logs)",
          Wrap(state, Access::kUser, [st, logs](Ctx& c) { return JobLogs(*st, logs, c); }));

  // Nodes.
  svr.Get("/v1/nodes",
          Wrap(state, Access::kUser, [st](Ctx&) -> Reply<Out> { return Json(st->NodesJson()); }));
  svr.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/drain)",
           Wrap(state, Access::kAdmin, [st](Ctx& c) -> Reply<Out> {
             auto d = ParseDrainRequest(c.body);
             if (!d) return tl::unexpected(d.error());
             return Lift(st->Drain(c.req.matches[1], d->reason, d->deadline_at));
           }));
  svr.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/undrain)",
           Wrap(state, Access::kAdmin, [st](Ctx& c) -> Reply<Out> {
             if (auto ok = ParseEmptyBody(c.body); !ok) return tl::unexpected(ok.error());
             return Lift(st->Undrain(c.req.matches[1]));
           }));

  // Agents.
  svr.Post("/v1/agents/register",
           Wrap(state, Access::kAgent, [st](Ctx& c) { return RegisterAgent(*st, c); }));
  svr.Post("/v1/agents/heartbeat",
           Wrap(state, Access::kAgent, [st](Ctx& c) { return AgentHeartbeat(*st, c); }));
}

}  // namespace hg::server
