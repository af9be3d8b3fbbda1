#include "cli/jobs.h"

#include <fmt/format.h>

#include <random>

#include "cli/duration.h"
#include "cli/json_util.h"
#include "cli/table.h"

namespace hg::cli {
namespace {

CliResult<int64_t> Duration(const std::string& text, const std::string& flag) {
  auto d = ParseDuration(text, flag);
  if (!d) return tl::unexpected(UsageError(d.error()));
  return *d;
}

std::string JobPath(int64_t id) { return fmt::format("/v1/jobs/{}", id); }

// "n1[0,1] n2[2,3]" from [{"node": "n1", "gpus": [0, 1]}, ...].
std::string Placement(const Json& job) {
  if (!job.contains("placement") || !job["placement"].is_array()) return "-";
  std::string out;
  for (const Json& p : job["placement"]) {
    if (!out.empty()) out += " ";
    out += Text(p, "node") + "[";
    if (p.contains("gpus") && p["gpus"].is_array()) {
      bool first = true;
      for (const Json& g : p["gpus"]) {
        if (!first) out += ",";
        out += g.dump();
        first = false;
      }
    }
    out += "]";
  }
  return out.empty() ? "-" : out;
}

std::string Budget(const Json& job) {
  const std::string b = Text(job, "budget");
  return b == "-" ? "(unfunded)" : b;
}

std::string Gpus(const Json& job) {
  const int64_t per_node = Int(job, "gpus_per_node");
  std::string out = Text(job, "gpus");
  if (per_node > 0) out += fmt::format(" ({}/node)", per_node);
  return out;
}

std::string Seconds(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return "-";
  return FormatDuration(j[key].get<int64_t>());
}

}  // namespace

CliResult<Request> BuildSubmit(const SubmitArgs& a) {
  if (a.command.empty()) {
    return UsageError("command", "missing: put it after --, e.g. hourglass submit -- ./train.sh");
  }
  if (a.gpus < 1) return UsageError("--gpus", "must be at least 1");
  Json body = {{"gpus", a.gpus}, {"command", a.command}, {"cwd", a.cwd}};
  if (a.name) body["name"] = *a.name;
  body["budget"] = a.budget ? Json(*a.budget) : Json(nullptr);
  if (a.gpus_per_node) {
    if (*a.gpus_per_node < 0) return UsageError("--gpus-per-node", "must not be negative");
    body["gpus_per_node"] = *a.gpus_per_node;
  }
  if (a.min_runtime) {
    auto d = Duration(*a.min_runtime, "--min-runtime");
    if (!d) return tl::unexpected(d.error());
    body["min_runtime_s"] = *d;
  }
  if (a.max_runtime) {
    auto d = Duration(*a.max_runtime, "--max-runtime");
    if (!d) return tl::unexpected(d.error());
    body["max_runtime_s"] = *d;
  }
  if (a.lease) {
    auto d = Duration(*a.lease, "--lease");
    if (!d) return tl::unexpected(d.error());
    body["lease_s"] = *d;
  }
  if (a.grace) {
    auto d = Duration(*a.grace, "--grace");
    if (!d) return tl::unexpected(d.error());
    body["grace_s"] = *d;
  }
  // The server would refuse it too (ValidateJob); saying so here names the flag to add. A lease
  // of 0 is no lease.
  if (body.contains("lease_s") && body["lease_s"].get<int64_t>() > 0 &&
      !body.contains("max_runtime_s")) {
    return UsageError("--lease", "needs --max-runtime: a session's protection ends there");
  }
  if (body.contains("min_runtime_s") && body.contains("max_runtime_s") &&
      body["max_runtime_s"].get<int64_t>() < body["min_runtime_s"].get<int64_t>()) {
    return UsageError("--max-runtime", "is shorter than --min-runtime");
  }
  if (a.resumable) body["resumable"] = true;
  if (a.job_class) body["class"] = *a.job_class;
  if (a.priority) body["priority"] = *a.priority;
  if (!a.env.empty()) {
    Json env = Json::object();
    for (const std::string& kv : a.env) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        return UsageError("--env", "'" + kv + "' is not K=V");
      }
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    body["env"] = env;
  }
  Request r{"POST", "/v1/jobs", body, {}};
  if (!a.idempotency_key.empty()) r.headers["Idempotency-Key"] = a.idempotency_key;
  return r;
}

std::string RenderSubmitted(const Json& reply) {
  if (reply.value("replayed", false))
    return fmt::format("job {} was already submitted with this key ({})\n", Text(reply, "id"),
                       Text(reply, "state"));
  return fmt::format("submitted job {} ({})\n", Text(reply, "id"), Text(reply, "state"));
}

CliResult<Request> BuildJobs(const JobsArgs& a) {
  if (a.all && a.state) return UsageError("--state", "cannot be combined with --all");
  std::vector<std::string> query;
  if (a.all) query.push_back("state=all");
  if (a.state) {
    static const char* kStates[] = {"pending", "running", "done", "all"};
    bool known = false;
    for (const char* s : kStates) known = known || *a.state == s;
    if (!known) {
      return UsageError("--state", "'" + *a.state + "' is not one of pending, running, done, all");
    }
    query.push_back("state=" + *a.state);
  }
  if (a.user) query.push_back("user=" + UrlEncode(*a.user));
  if (a.limit) {
    if (*a.limit < 1) return UsageError("--limit", "must be at least 1");
    query.push_back(fmt::format("limit={}", *a.limit));
  }
  if (a.before) {
    if (*a.before < 1) return UsageError("--before", "must be a job id (1 or more)");
    query.push_back(fmt::format("before={}", *a.before));
  }
  std::string path = "/v1/jobs";
  for (size_t i = 0; i < query.size(); ++i) path += (i == 0 ? "?" : "&") + query[i];
  return Request{"GET", path, std::nullopt};
}

std::string RenderJobs(const Json& reply) {
  Table t({"ID", "NAME", "USER", "BUDGET", "GPUS", "CLASS", "STATE", "SUBMITTED", "REASON"});
  t.AlignRight(0).AlignRight(4);
  if (reply.contains("jobs") && reply["jobs"].is_array()) {
    for (const Json& j : reply["jobs"]) {
      t.Add({Text(j, "id"), Text(j, "name"), Text(j, "user"), Budget(j), Text(j, "gpus"),
             Text(j, "class"), Text(j, "state"), Time(j, "submitted_at"), Text(j, "reason")});
    }
  }
  if (t.rows() == 0) return "no jobs\n";
  std::string out = t.Render();
  // A --limit cut the list: say how many there are.
  if (reply.contains("total") && reply["total"].is_number_integer() &&
      reply["total"].get<int64_t>() > static_cast<int64_t>(t.rows()))
    out += fmt::format("({} of {} jobs shown)\n", t.rows(), reply["total"].get<int64_t>());
  return out;
}

Request BuildShow(int64_t id) { return Request{"GET", JobPath(id), std::nullopt}; }
Request BuildEvents(int64_t id) { return Request{"GET", JobPath(id) + "/events", std::nullopt}; }
Request BuildCancel(int64_t id) { return Request{"POST", JobPath(id) + "/cancel", Json::object()}; }
Request BuildTouch(int64_t id) {
  return Request{"POST", JobPath(id) + "/activity", Json::object()};
}

std::string RenderTouched(const Json& job) {
  return fmt::format("job {} active; protected until {}\n", Text(job, "id"),
                     Time(job, "protected_until"));
}

std::string RenderJob(const Json& job, const Json& events) {
  std::string exit = "-";
  if (job.contains("exit_code") && job["exit_code"].is_number()) {
    exit = "code " + Text(job, "exit_code");
  } else if (job.contains("exit_signal") && job["exit_signal"].is_number()) {
    exit = "signal " + Text(job, "exit_signal");
  }
  std::string command;
  if (job.contains("command") && job["command"].is_array()) {
    for (const Json& arg : job["command"]) {
      if (!command.empty()) command += " ";
      const std::string s = arg.is_string() ? arg.get<std::string>() : arg.dump();
      const bool plain = !s.empty() && s.find_first_of(" \t\n'\"$\\") == std::string::npos;
      command += plain ? s : arg.dump();  // JSON quoting makes spaces and quotes visible
    }
  }
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"job", Text(job, "id") + " " + Text(job, "name")},
      {"state", Text(job, "state")},
      {"reason", Text(job, "reason")},
      {"user", Text(job, "user")},
      {"budget", Budget(job)},
      {"gpus", Gpus(job)},
      {"class", Text(job, "class")},
      {"submitted", Time(job, "submitted_at")},
      {"queued since", Time(job, "queued_since")},
      {"estimated start", Time(job, "estimated_start_at")},
      {"started", Time(job, "started_at")},
      {"protected until", Time(job, "protected_until")},
      {"ended", Time(job, "ended_at")},
      {"min runtime", Seconds(job, "min_runtime_s")},
      {"max runtime", Seconds(job, "max_runtime_s")},
      {"lease", Int(job, "lease_s") > 0 ? Seconds(job, "lease_s") : "-"},
      {"last active", Time(job, "active_at")},
      {"grace", Seconds(job, "grace_s")},
      {"resumable", Text(job, "resumable")},
      {"attempts", Text(job, "attempts")},
      {"placement", Placement(job)},
      {"exit", exit},
      {"command", command.empty() ? "-" : command},
      {"cwd", Text(job, "cwd")},
  };
  std::string out;
  for (const auto& [k, v] : rows) out += fmt::format("{:<16} {}\n", k + ":", v);
  if (events.contains("events") && events["events"].is_array() && !events["events"].empty()) {
    Table t({"AT", "EVENT", "REASON"});
    for (const Json& e : events["events"]) {
      t.Add({Time(e, "at"), Text(e, "kind"), Text(e, "reason")});
    }
    out += "\nevents:\n" + t.Render();
  }
  return out;
}

Request BuildLogs(const LogsArgs& a, int64_t offset) {
  std::string path = JobPath(a.id) + "/logs?stream=" + (a.stderr_stream ? "stderr" : "stdout");
  if (a.attempt) path += fmt::format("&attempt={}", *a.attempt);
  path += fmt::format("&offset={}", offset);
  return Request{"GET", path, std::nullopt};
}

namespace {

// 128 random bits in hex: a key no other submission will draw.
std::string NewIdempotencyKey() {
  std::random_device rd;  // the kernel's random source on Linux
  std::string key;
  for (int i = 0; i < 4; ++i) key += fmt::format("{:08x}", rd());
  return key;
}

}  // namespace

CliResult<void> RunSubmit(Client& c, const SubmitArgs& a, bool json, std::ostream& out) {
  SubmitArgs keyed = a;
  if (keyed.idempotency_key.empty()) keyed.idempotency_key = NewIdempotencyKey();
  auto req = BuildSubmit(keyed);
  if (!req) return tl::unexpected(req.error());
  auto reply = c.Call(*req);
  // No answer, or the server failed: the job may exist all the same. One more attempt under the
  // same key is safe (it finds the job if the first made one); then say how to retry.
  const auto lost = [](const CliError& e) {
    return e.exit_code == kExitUnreachable || e.field == "store";
  };
  if (!reply && lost(reply.error())) reply = c.Call(*req);
  if (!reply && lost(reply.error())) {
    CliError e = reply.error();
    e.reason += fmt::format(
        "; the job may exist: run the same command with --idempotency-key {} to submit it at "
        "most once",
        keyed.idempotency_key);
    return tl::unexpected(e);
  }
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderSubmitted(*reply));
  return {};
}

CliResult<void> RunJobs(Client& c, const JobsArgs& a, bool json, std::ostream& out) {
  auto req = BuildJobs(a);
  if (!req) return tl::unexpected(req.error());
  auto reply = c.Call(*req);
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderJobs(*reply));
  return {};
}

CliResult<void> RunShow(Client& c, int64_t id, bool json, std::ostream& out) {
  auto job = c.Call(BuildShow(id));
  if (!job) return tl::unexpected(job.error());
  if (json) {
    out << job->dump() << "\n";
    return {};
  }
  auto events = c.Call(BuildEvents(id));
  if (!events) return tl::unexpected(events.error());
  out << RenderJob(*job, *events);
  return {};
}

CliResult<void> RunCancel(Client& c, int64_t id, bool json, std::ostream& out) {
  auto res = c.Send(BuildCancel(id));
  if (!res) return tl::unexpected(res.error());
  if (json) {
    out << (res->body.empty() ? "{}" : res->body) << "\n";
  } else {
    out << fmt::format("cancelled job {}\n", id);
  }
  return {};
}

CliResult<void> RunTouch(Client& c, int64_t id, bool json, std::ostream& out) {
  auto reply = c.Call(BuildTouch(id));
  if (!reply) return tl::unexpected(reply.error());
  out << (json ? reply->dump() + "\n" : RenderTouched(*reply));
  return {};
}

CliResult<void> RunLogs(Client& c, const LogsArgs& a, std::ostream& out,
                        const std::function<void()>& pause) {
  int64_t offset = 0;
  while (true) {
    auto res = c.Send(BuildLogs(a, offset));
    if (!res) return tl::unexpected(res.error());
    out << res->body;
    out.flush();
    const std::string next = res->Header("X-Hourglass-Offset");
    // Without the offset header there is no way to ask for "the rest": one answer is all.
    if (next.empty()) return {};
    int64_t next_offset = 0;
    try {
      next_offset = std::stoll(next);
    } catch (const std::exception&) {
      return tl::unexpected(
          CliError{kExitRefused, "server", "bad X-Hourglass-Offset header '" + next + "'"});
    }
    const bool done = res->Header("X-Hourglass-Done") == "true";
    const bool got = next_offset > offset;
    offset = std::max(offset, next_offset);
    // Drain what is there now; when following, wait for more until the attempt has ended.
    if (got) continue;
    if (!a.follow || done) return {};
    pause();
  }
}

}  // namespace hg::cli
