// Read-only views of the state: the JSON bodies of docs/api.md and the Prometheus text.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "core/housekeeping.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "server/requests.h"
#include "server/state.h"
#include "server/state_impl.h"

namespace hg::server {
namespace {

template <class T>
nlohmann::json Opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json State::Impl::JobView(const JobRt& j) const {
  const auto& r = j.rec;
  nlohmann::json placement = nlohmann::json::array();
  try {
    placement = nlohmann::json::parse(r.placement_json.empty() ? "[]" : r.placement_json);
  } catch (const std::exception&) {
  }
  nlohmann::json eta = nullptr;
  if (r.state == "pending" && j.estimated_start != kNever) eta = j.estimated_start.value();
  nlohmann::json prot = nullptr;
  if (j.active() && !r.budget.empty() && r.started_at) {
    // What the policy honours: the contract, extended by a session's lease unless the site turned
    // leases off.
    const RunningJob run = AsRunning(j);
    prot = (opt.config.leases ? run.protected_until() : run.contract_until()).value();
  }
  // The fields as submitted, then what the server knows of the job.
  nlohmann::json v = JobRequestBody(r);
  v.update({{"id", r.id},
            {"user", r.user},
            {"max_runtime_s", Opt(r.max_runtime_s)},
            {"state", r.state},
            {"reason", r.reason},
            {"reason_code", r.reason_code},
            {"submitted_at", r.submitted_at},
            {"queued_since", r.queued_since},
            {"started_at", Opt(r.started_at)},
            {"ended_at", Opt(r.ended_at)},
            {"attempts", r.attempts},
            {"exit_code", Opt(r.exit_code)},
            {"exit_signal", Opt(r.exit_signal)},
            {"placement", placement},
            {"estimated_start_at", eta},
            {"active_at", Opt(r.active_at)},
            {"protected_until", prot}});
  return v;
}

Reply<nlohmann::json> State::JobJson(const store::PrincipalRecord& who, int64_t id) {
  std::lock_guard lock(impl_->mu);
  auto found = impl_->ManagedJob(who, id);
  if (!found) return tl::unexpected(found.error());
  return impl_->JobView(**found);
}

Reply<nlohmann::json> State::JobsJson(const store::PrincipalRecord& who, const std::string& state,
                                      const std::string& user, int64_t limit, bool oldest_first,
                                      int64_t before_id) {
  // Users see their own jobs; admins everyone's (or one user's).
  const std::string only = IsAdmin(who) ? user : who.name;
  if (!IsAdmin(who) && !user.empty() && user != who.name)
    return Refuse(403, "user", "you may list only your own jobs");
  auto wanted = [&](int64_t id) { return before_id == 0 || id < before_id; };
  auto newer = [&](int64_t a, int64_t b) { return oldest_first ? a < b : a > b; };
  // The jobs still in the system, from memory: the queues and the running set, so a poll of
  // them (the dashboard's, every few seconds) costs what is active, however many jobs ended.
  std::vector<std::pair<int64_t, nlohmann::json>> live;
  if (state != "done") {
    std::lock_guard lock(impl_->mu);
    std::vector<int64_t> ids;
    if (state != "running")
      for (const auto* q : {&impl_->pending_funded, &impl_->pending_unfunded})
        for (const auto& [queued, id] : *q) ids.push_back(id);
    if (state != "pending") ids.insert(ids.end(), impl_->running.begin(), impl_->running.end());
    std::sort(ids.begin(), ids.end(), newer);
    for (int64_t id : ids) {
      const JobRt& j = impl_->jobs.at(id);
      if (!wanted(id) || (!only.empty() && j.rec.user != only)) continue;
      // Past the limit a match is only counted: no view is built for it.
      live.emplace_back(id, limit == 0 || static_cast<int64_t>(live.size()) < limit
                                ? impl_->JobView(j)
                                : nlohmann::json());
    }
  }
  // Ended jobs from the store, read after the live ones and outside the lock: a long history
  // does not hold the loop up, and a job that ended in between is in both lists, where the
  // store's (ended) view wins, never in neither (the store is written before memory).
  store::Store::EndedPage ended;
  if (state == "done" || state == "all") {
    auto page = impl_->store.EndedJobs(only, before_id, limit, oldest_first);
    if (!page) return Refuse(503, "store", page.error().ToString());
    ended = std::move(*page);
  }
  std::set<int64_t> ended_ids;
  for (const store::JobRecord& r : ended.jobs) ended_ids.insert(r.id);
  std::erase_if(live, [&](const auto& l) { return ended_ids.count(l.first) > 0; });
  nlohmann::json out = nlohmann::json::array();
  auto l = live.begin();
  auto e = ended.jobs.begin();
  while ((limit == 0 || static_cast<int64_t>(out.size()) < limit) &&
         (l != live.end() || e != ended.jobs.end())) {
    if (e == ended.jobs.end() || (l != live.end() && newer(l->first, e->id))) {
      // No view past the limit; one can come within it only when a job that ended meanwhile
      // left the live list: this page is one job short then.
      if (!l->second.is_null()) out.push_back(std::move(l->second));
      ++l;
    } else {
      JobRt j;
      j.rec = *e++;
      out.push_back(impl_->JobView(j));
    }
  }
  const auto total = static_cast<int64_t>(live.size()) + ended.total;
  return nlohmann::json{{"jobs", out}, {"total", total}};
}

Reply<nlohmann::json> State::JobEventsJson(const store::PrincipalRecord& who, int64_t id) {
  nlohmann::json out = nlohmann::json::array();
  {
    std::lock_guard lock(impl_->mu);
    auto found = impl_->ManagedJob(who, id);
    if (!found) return tl::unexpected(found.error());
    const JobRt& j = **found;
    out.push_back({{"at", j.rec.submitted_at},
                   {"kind", "submitted"},
                   {"reason", "submitted by " + j.rec.user}});
  }
  auto ev = impl_->store.JobEvents(id);
  if (!ev) return Refuse(503, "store", ev.error().ToString());
  for (const auto& e : *ev) out.push_back({{"at", e.at}, {"kind", e.kind}, {"reason", e.reason}});
  return nlohmann::json{{"events", out}};
}

Reply<State::LogSource> State::LogsOf(const store::PrincipalRecord& who, int64_t id,
                                      int32_t attempt) {
  std::lock_guard lock(impl_->mu);
  auto found = impl_->ManagedJob(who, id);
  if (!found) return tl::unexpected(found.error());
  const JobRt& j = **found;
  if (j.rec.attempts == 0) return Refuse(409, "attempt", "the job has not started yet");
  const int32_t a = attempt == 0 ? j.rec.attempts : attempt;
  if (a < 1 || a > j.rec.attempts)
    return Refuse(404, "attempt", "the job has " + std::to_string(j.rec.attempts) + " attempts");
  // The first node of the attempt: the current placement, or the last one stored (older
  // attempts' placements are not kept: they ran on the first node of the latest, commonly).
  std::string node;
  try {
    const auto p = nlohmann::json::parse(j.rec.placement_json);
    if (!p.empty()) node = p.at(0).at("node").get<std::string>();
  } catch (const std::exception&) {
  }
  const auto n = impl_->node_by_name.find(node);
  if (n == impl_->node_by_name.end()) return Refuse(404, "node", "no node holds these logs");
  LogSource src;
  src.logs_url = impl_->node_rt[n->second].rec.logs_url;
  src.token = impl_->node_rt[n->second].agent_token;
  src.attempt = a;
  src.done = !(j.active() && a == j.rec.attempts);
  return src;
}

nlohmann::json State::BudgetsJson() {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  s.Account(s.NowS());
  if (s.counts_dirty) s.Recount();
  const size_t nb = s.tree.size();
  std::vector<double> running(nb, 0.0), pending(nb, 0.0);
  for (int64_t id : s.running) {
    const JobRt& j = s.jobs.at(id);
    if (j.spec.funded()) running[static_cast<size_t>(j.spec.budget.value())] += j.rec.gpus;
  }
  for (const auto& [qs, id] : s.pending_funded) {
    const JobRt& j = s.jobs.at(id);
    if (j.spec.funded()) pending[static_cast<size_t>(j.spec.budget.value())] += 1;
  }
  // Parents have smaller ids than their children: one backward pass sums subtrees.
  for (size_t b = nb; b-- > 1;) {
    const auto p = static_cast<size_t>(s.tree.parent(BudgetId(static_cast<int32_t>(b))).value());
    running[p] += running[b];
    pending[p] += pending[b];
  }
  std::map<std::string, const store::BudgetRecord*> recs;
  for (const auto& r : s.budgets) recs[r.name] = &r;
  const auto cooled = s.recent_stops.CooledDown(s.NowS(), s.opt.config.take_back_cooldown.value());
  nlohmann::json out = nlohmann::json::array();
  for (BudgetId b : s.tree.Visible()) {
    if (b == kRootBudget) continue;
    const auto i = static_cast<size_t>(b.value());
    const std::string& name = s.tree.name(b);
    const auto* rec = recs.count(name) ? recs[name] : nullptr;
    const BudgetId parent = s.tree.parent(b);
    const double delivered = s.delivered->Usage(b) / 3600.0;
    out.push_back({{"path", s.tree.path(b)},
                   {"name", name},
                   {"parent", parent == kRootBudget ? nlohmann::json(nullptr)
                                                    : nlohmann::json(s.tree.name(parent))},
                   {"share", s.tree.share(b)},
                   {"limit", Opt(s.tree.limit(b))},
                   {"leads", s.tree.leads(b)},
                   {"members", rec ? rec->members : std::vector<std::string>{}},
                   {"entitled_gpus", i < s.owed_now.size() ? s.owed_now[i] : 0.0},
                   {"usage_7d_gpu_hours", delivered},
                   {"owed_7d_gpu_hours", s.owed->Usage(b) / 3600.0},
                   {"delivered_7d_gpu_hours", delivered},
                   {"running_gpus", static_cast<int64_t>(running[i])},
                   {"pending_jobs", static_cast<int64_t>(pending[i])}});
    nlohmann::json until = nlohmann::json::array();
    if (const auto c = cooled.find(name); c != cooled.end())
      for (const auto& [from, at] : c->second) until.push_back({{"budget", from}, {"until", at}});
    out.back()["take_back_cooldowns"] = until;
  }
  return nlohmann::json{{"budgets", out}};
}

Reply<nlohmann::json> State::UsageJson(const std::string& budget) {
  Impl& s = *impl_;
  std::unique_lock lock(s.mu);
  const int64_t now = s.NowS();
  s.Account(now);
  BudgetId top = kRootBudget;
  if (!budget.empty()) {
    auto b = s.tree.Find(budget);
    if (!b) return Refuse(404, "budget", "unknown budget '" + budget + "'");
    top = *b;
  }
  // Queue waits of the window's funded starts, by budget (counted for it and each budget above
  // it) and class, as the simulator's report gives them. Indexed by budget id, not looked up in a
  // map per start: the window may hold 200,000 starts, read under the state's lock.
  const size_t nb = s.tree.size();
  std::vector<std::map<std::string, std::vector<int64_t>>> waits(nb);
  std::map<std::string, std::optional<BudgetId>> found;
  for (const Impl::StartWait& w : s.start_waits) {
    if (w.at < now - s.opt.config.window.value()) continue;
    auto it = found.find(w.budget);
    if (it == found.end()) it = found.emplace(w.budget, s.tree.Find(w.budget)).first;
    if (!it->second) continue;  // a budget removed since
    for (BudgetId b = *it->second; b != kRootBudget; b = s.tree.parent(b)) {
      if (!s.tree.IsAncestorOrSelf(top, b)) break;  // above the budget asked about
      waits[static_cast<size_t>(b.value())][w.job_class].push_back(w.wait);
    }
  }
  // Daily totals: each budget's own from the name-keyed history, then every subtree's by one
  // pass from the leaves up (Visible() lists a parent before its children). Summing the
  // subtree's names for each budget instead cost O(budgets^2): 42 ms for 1,110 budgets
  // (bench/usage_bench.cc).
  const std::vector<BudgetId> visible = s.tree.Visible();
  constexpr int kDays = 7;
  // Day d (0: the oldest) covers [DayStart(d), DayStart(d + 1)).
  auto DayStart = [now](int d) { return now - static_cast<int64_t>(kDays - d) * 86400; };
  std::vector<std::array<double, kDays>> del(nb), owe(nb);
  for (BudgetId c : visible) {
    const auto i = static_cast<size_t>(c.value());
    const std::string& key = s.tree.name(c);
    for (int d = 0; d < kDays; ++d) {
      del[i][static_cast<size_t>(d)] = s.hist_delivered.Sum(key, DayStart(d), DayStart(d + 1));
      owe[i][static_cast<size_t>(d)] = s.hist_owed.Sum(key, DayStart(d), DayStart(d + 1));
    }
  }
  for (auto it = visible.rbegin(); it != visible.rend(); ++it) {
    const BudgetId p = s.tree.parent(*it);
    if (p == kRootBudget) continue;
    const auto i = static_cast<size_t>(it->value()), pi = static_cast<size_t>(p.value());
    for (size_t d = 0; d < kDays; ++d) {
      del[pi][d] += del[i][d];
      owe[pi][d] += owe[i][d];
    }
  }
  // The numbers are copied out under the lock; the JSON, most of the time of an answer for a
  // large tree (allocations for 1,110 budgets x 7 days), is built after it is released.
  struct Row {
    std::string path, name;
    double owed = 0, delivered = 0;
    std::map<std::string, std::vector<int64_t>> waits;
    std::array<double, kDays> del{}, owe{};
  };
  std::vector<Row> rows;
  for (BudgetId b : visible) {
    if (!s.tree.IsAncestorOrSelf(top, b)) continue;
    const auto i = static_cast<size_t>(b.value());
    rows.push_back(Row{s.tree.path(b), s.tree.name(b), s.owed->Usage(b), s.delivered->Usage(b),
                       std::move(waits[i]), del[i], owe[i]});
  }
  lock.unlock();
  nlohmann::json out = nlohmann::json::array();
  for (Row& r : rows) {
    nlohmann::json wait = nlohmann::json::object();
    for (auto& [cls, v] : r.waits) {
      std::vector<double> d(v.begin(), v.end());
      wait[cls] = {{"p50", static_cast<int64_t>(Quantile(d, 0.5))},
                   {"p90", static_cast<int64_t>(Quantile(d, 0.9))},
                   {"count", static_cast<int64_t>(v.size())}};
    }
    nlohmann::json days = nlohmann::json::array();
    for (int d = 0; d < kDays; ++d) {
      days.push_back({{"from", DayStart(d)},
                      {"to", DayStart(d + 1)},
                      {"delivered_gpu_hours", r.del[static_cast<size_t>(d)] / 3600.0},
                      {"owed_gpu_hours", r.owe[static_cast<size_t>(d)] / 3600.0}});
    }
    out.push_back({{"path", std::move(r.path)},
                   {"name", std::move(r.name)},
                   {"owed_7d_gpu_hours", r.owed / 3600.0},
                   {"delivered_7d_gpu_hours", r.delivered / 3600.0},
                   {"wait_s", std::move(wait)},
                   {"daily", std::move(days)}});
  }
  return nlohmann::json{{"budgets", out}};
}

nlohmann::json State::NodesJson() {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  const Seconds now(s.NowS());
  std::vector<std::vector<int64_t>> jobs_on(s.nodes.size());
  for (int64_t id : s.running)
    for (const SliceRt& sl : s.jobs.at(id).slices)
      if (!sl.exited) jobs_on[sl.node].push_back(id);
  nlohmann::json out = nlohmann::json::array();
  for (size_t n = 0; n < s.nodes.size(); ++n) {
    const NodeRt& rt = s.node_rt[n];
    const int64_t used = std::count(rt.used.begin(), rt.used.end(), 1);
    // A draining node: when it is empty at the latest (give or take a cycle), and the job that
    // keeps it longest, what an operator waiting to repair it asks.
    nlohmann::json empty_by = nullptr, waits_for = nullptr;
    if (rt.rec.state == "draining") {
      Seconds latest = now;
      for (int64_t id : jobs_on[n]) {
        const Seconds t = LeavesDrainBy(s.AsRunning(s.jobs.at(id)), s.nodes[n], now);
        if (waits_for.is_null() || t > latest) waits_for = id;
        latest = std::max(latest, t);
      }
      empty_by = latest.value();
    }
    out.push_back({{"name", rt.rec.name},
                   {"gpus", rt.rec.gpus},
                   {"block", rt.rec.block},
                   {"labels", rt.rec.labels},
                   {"state", rt.rec.state},
                   {"drain_cause", rt.rec.drain_cause.empty() ? nlohmann::json(nullptr)
                                                              : nlohmann::json(rt.rec.drain_cause)},
                   {"drain_reason", rt.rec.drain_reason},
                   {"drain_deadline_at", Opt(rt.rec.drain_deadline_at)},
                   {"drain_empty_by", empty_by},
                   {"drain_waits_for", waits_for},
                   {"last_heartbeat_at", rt.last_hb_ms / 1000},
                   {"health_ok", rt.health_ok},
                   {"health_detail", rt.health_detail},
                   {"used_gpus", used},
                   {"jobs", jobs_on[n]}});
  }
  return nlohmann::json{{"nodes", out}};
}

std::string State::MetricsText() {
  Impl& s = *impl_;
  MetricsInput in;
  {
    std::lock_guard lock(s.mu);
    s.Account(s.NowS());
    if (s.counts_dirty) s.Recount();
    in.queue_funded = static_cast<int64_t>(s.pending_funded.size());
    in.queue_unfunded = static_cast<int64_t>(s.pending_unfunded.size());
    for (const auto* queue : {&s.pending_funded, &s.pending_unfunded})
      for (const auto& [queued_since, id] : *queue)
        ++in.pending_by_reason[s.jobs.at(id).rec.reason_code];
    for (int64_t id : s.running) {
      const JobRt& j = s.jobs.at(id);
      (j.rec.budget.empty() ? in.running_unfunded_gpus : in.running_funded_gpus) += j.rec.gpus;
    }
    in.capacity_gpus = s.capacity;
    in.cycle_seconds.assign(s.cycle_seconds.begin(), s.cycle_seconds.end());
    in.cycle_seconds_sum = s.cycle_seconds_sum;
    in.cycle_count = s.cycle_count;
    in.cycles_by_trigger = s.cycles_by_trigger;
    in.preemptions = s.preemptions_total;
    in.queue_wait = s.queue_wait;
    for (BudgetId b : s.tree.Visible()) {
      if (b == kRootBudget) continue;
      in.owed_gpu_hours.push_back({s.tree.path(b), s.owed->Usage(b) / 3600.0});
      in.delivered_gpu_hours.push_back({s.tree.path(b), s.delivered->Usage(b) / 3600.0});
    }
    in.nodes = {{"ready", 0}, {"draining", 0}, {"drained", 0}, {"lost", 0}};
    for (const NodeRt& rt : s.node_rt) ++in.nodes[rt.rec.state];
    in.submissions = s.submissions_total;
    in.jobs_in_memory = static_cast<int64_t>(s.jobs.size());
    in.activity_reports = s.activity_reports_total;
    in.activity_cpu = s.activity_cpu_total;
  }
  return RenderMetrics(std::move(in));
}

}  // namespace hg::server
