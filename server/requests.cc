#include "server/requests.h"

#include "server/json_check.h"

namespace hg::server {
namespace {

using nlohmann::json;

// The end of every parser: fields nobody read are refused, then the first mistake wins.
template <class T>
Reply<T> Finish(JsonCheck& k, T value) {
  k.Done();
  if (!k.ok()) return tl::unexpected(*k.error());
  return value;
}

// An optional name that may also be null, meaning not set (the CLI sends a job's budget so);
// reading the null marks the field as known.
std::optional<std::string> NullableName(JsonCheck& k, const std::string& key) {
  if (k.Has(key) && !k.IsNull(key)) return k.Str(key, false, true);
  k.Str(key, false);
  return std::nullopt;
}

// Reads each object of the list `key` with `read`; its mistakes name the entry ("running[2].job")
// and become k's, and the first one ends the list.
template <class F>
void EachEntry(JsonCheck& k, const std::string& key, F read) {
  const json* list = k.Raw(key, "array");
  if (!list) return;
  for (size_t i = 0; i < list->size() && k.ok(); ++i) {
    JsonCheck e((*list)[i], key + "[" + std::to_string(i) + "].");
    read(e);
    e.Done();
    if (!e.ok()) k.Fail(e.error()->field, e.error()->reason);
  }
}

// The attempt an agent's entry is about: both fields are required.
AttemptRef ReadAttempt(JsonCheck& e) {
  AttemptRef a;
  a.job = e.Int("job", true, 1, INT64_MAX).value_or(0);
  a.attempt = static_cast<int32_t>(e.Int("attempt", true, 1, 1 << 30).value_or(0));
  return a;
}

// The attempts an agent says it runs; `pid` is accepted but not kept. With `cpu` (heartbeats
// only), each entry may give `cpu_s`: a finite number >= 0.
std::vector<AttemptRef> ReadRunning(JsonCheck& k, std::map<AttemptRef, double>* cpu = nullptr) {
  std::vector<AttemptRef> out;
  EachEntry(k, "running", [&](JsonCheck& e) {
    out.push_back(ReadAttempt(e));
    e.Int("pid", false, 0, INT64_MAX);
    if (!cpu) return;
    if (auto v = e.Number("cpu_s", false)) {
      if (*v < 0)
        e.Fail("cpu_s", "must be at least 0");
      else
        (*cpu)[out.back()] = *v;
    }
  });
  return out;
}

std::vector<ExitReport> ReadExited(JsonCheck& k) {
  std::vector<ExitReport> out;
  EachEntry(k, "exited", [&](JsonCheck& e) {
    const AttemptRef a = ReadAttempt(e);
    ExitReport x;
    x.job = a.job;
    x.attempt = a.attempt;
    if (auto v = e.Int("exit_code", false, -1000, 1000)) x.exit_code = static_cast<int32_t>(*v);
    if (auto v = e.Int("signal", false, 0, 1000)) x.signal = static_cast<int32_t>(*v);
    x.how = e.Str("how", false).value_or("exited");
    e.Int("at", false, 0, INT64_MAX);
    out.push_back(x);
  });
  return out;
}

// The fields a budget create and patch share, in the order their mistakes are reported; a
// create must give a share.
void ReadBudgetChange(JsonCheck& k, bool create, BudgetChange& ch) {
  ch.share = k.Number("share", create);
  if (ch.share && *ch.share <= 0) k.Fail("share", "must be greater than 0");
  if (k.Has("limit")) {
    ch.set_limit = true;
    if (!k.IsNull("limit")) {
      if (auto v = k.Int("limit", true, 0, 1 << 30)) ch.limit = static_cast<int32_t>(*v);
    } else
      k.Str("limit", false);
  }
  ch.leads = k.StrList("leads", false, true);
  ch.members = k.StrList("members", false, true);
}

}  // namespace

Reply<store::JobRecord> ParseJobRequest(const json& body) {
  JsonCheck k(body);
  store::JobRecord j;
  j.name = k.Str("name", false, true).value_or("job");
  j.budget = NullableName(k, "budget").value_or("");
  j.gpus = static_cast<int32_t>(k.Int("gpus", true, 1, 1 << 20).value_or(1));
  j.gpus_per_node = static_cast<int32_t>(k.Int("gpus_per_node", false, 0, 1 << 20).value_or(0));
  j.job_class = k.Str("class", false, true).value_or("batch");
  j.min_runtime_s = k.Int("min_runtime_s", false, 0, int64_t{1} << 40).value_or(0);
  j.max_runtime_s = k.Int("max_runtime_s", false, 1, int64_t{1} << 40);
  // Range only here; State refuses one above the cap or without max_runtime_s (ValidateJob).
  j.lease_s = k.Int("lease_s", false, 0, int64_t{1} << 40).value_or(0);
  j.resumable = k.Bool("resumable", false).value_or(false);
  j.grace_s = k.Int("grace_s", false, 0, int64_t{1} << 40).value_or(120);
  j.priority = static_cast<int32_t>(k.Int("priority", false, -1000000, 1000000).value_or(0));
  j.command = k.StrList("command", true, false, 1).value_or(std::vector<std::string>{});
  j.env = k.StrMap("env").value_or(std::map<std::string, std::string>{});
  j.cwd = k.Str("cwd", false).value_or("/tmp");
  return Finish(k, std::move(j));
}

json JobRequestBody(const store::JobRecord& j) {
  json b = {{"name", j.name},       {"budget", j.budget.empty() ? json(nullptr) : json(j.budget)},
            {"gpus", j.gpus},       {"gpus_per_node", j.gpus_per_node},
            {"class", j.job_class}, {"min_runtime_s", j.min_runtime_s},
            {"lease_s", j.lease_s}, {"resumable", j.resumable},
            {"grace_s", j.grace_s}, {"priority", j.priority},
            {"command", j.command}, {"env", j.env},
            {"cwd", j.cwd}};
  if (j.max_runtime_s) b["max_runtime_s"] = *j.max_runtime_s;
  return b;
}

Reply<NewBudget> ParseBudgetCreate(const json& body) {
  JsonCheck k(body);
  NewBudget b;
  b.name = k.Str("name", true, true).value_or("");
  b.change.parent = NullableName(k, "parent");
  ReadBudgetChange(k, true, b.change);
  return Finish(k, std::move(b));
}

Reply<BudgetChange> ParseBudgetPatch(const json& body) {
  JsonCheck k(body);
  BudgetChange ch;
  ReadBudgetChange(k, false, ch);
  return Finish(k, std::move(ch));
}

Reply<NewPrincipal> ParsePrincipalRequest(const json& body) {
  JsonCheck k(body);
  NewPrincipal p;
  p.name = k.Str("name", true, true).value_or("");
  p.role = k.Str("role", true).value_or("");
  return Finish(k, std::move(p));
}

Reply<DrainRequest> ParseDrainRequest(const json& body) {
  JsonCheck k(body);
  DrainRequest d;
  d.reason = k.Str("reason", false).value_or("operator drain");
  d.deadline_at = k.Int("deadline_at", false, 0, int64_t{1} << 40);
  return Finish(k, std::move(d));
}

Reply<Registration> ParseRegistration(const json& body) {
  JsonCheck k(body);
  Registration r;
  r.node = k.Str("node", true, true).value_or("");
  r.gpus = static_cast<int32_t>(k.Int("gpus", true, 0, 1024).value_or(0));
  r.labels = k.StrMap("labels").value_or(std::map<std::string, std::string>{});
  k.Str("gpu_source", false);  // accepted, not kept
  r.logs_url = k.Str("logs_url", false).value_or("");
  r.running = ReadRunning(k);
  return Finish(k, std::move(r));
}

Reply<Heartbeat> ParseHeartbeat(const json& body) {
  JsonCheck k(body);
  Heartbeat hb;
  hb.node = k.Str("node", true, true).value_or("");
  if (const json* h = k.Raw("health", "object")) {
    JsonCheck hc(*h, "health.");
    hb.health_ok = hc.Bool("ok", true).value_or(true);
    hb.health_detail = hc.Str("detail", false).value_or("");
    hc.Done();
    if (!hc.ok()) k.Fail(hc.error()->field, hc.error()->reason);
  }
  hb.running = ReadRunning(k, &hb.cpu_s);
  hb.exited = ReadExited(k);
  return Finish(k, std::move(hb));
}

Reply<void> ParseEmptyBody(const json& body) {
  JsonCheck k(body);
  k.Done();
  if (!k.ok()) return tl::unexpected(*k.error());
  return {};
}

}  // namespace hg::server
