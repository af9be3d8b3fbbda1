// Recovery, principals, submissions, cancellations and budget changes.
#include "server/state.h"

#include <algorithm>
#include <cassert>
#include <regex>

#include "core/fair_division.h"
#include "server/auth.h"
#include "server/state_impl.h"

namespace hg::server {
namespace {

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

std::string LimitText(const std::optional<int32_t>& l) { return l ? std::to_string(*l) : "none"; }

std::string ShareText(double s) {
  nlohmann::json j = s;
  return j.dump();
}

// ValidateJob names core's fields; the API's carry their unit.
std::string ApiField(const std::string& f) {
  if (f == "min_runtime") return "min_runtime_s";
  if (f == "max_runtime") return "max_runtime_s";
  if (f == "grace") return "grace_s";
  if (f == "lease") return "lease_s";
  return f;
}

Refusal StoreFailure(const Error& e) { return Refusal{503, "store", e.ToString()}; }

}  // namespace

State::State(std::unique_ptr<Impl> impl, StateOptions opt)
    : impl_(std::move(impl)), opt_(std::move(opt)) {}
State::~State() = default;

Result<std::unique_ptr<State>> State::Open(store::Store& store, Clock& clock,
                                           StateOptions options) {
  auto impl = std::make_unique<Impl>(store, clock);
  impl->opt = options;
  auto policy = MakePolicy(options.policy, options.config);
  if (!policy) return tl::unexpected(policy.error());
  impl->policy = std::move(*policy);
  if (auto ok = impl->Load(); !ok) return tl::unexpected(ok.error());
  return std::unique_ptr<State>(new State(std::move(impl), std::move(options)));
}

// --- recovery -----------------------------------------------------------------------------------

size_t State::Impl::AddNode(const store::NodeRecord& rec) {
  const size_t i = nodes.size();
  Node n;
  n.id = NodeId(static_cast<int32_t>(i));
  n.name = rec.name;
  n.gpus = Gpus(rec.gpus);
  n.block = rec.block;
  nodes.push_back(n);
  NodeRt rt;
  rt.rec = rec;
  rt.used.assign(static_cast<size_t>(std::max(0, rec.gpus)), 0);
  node_rt.push_back(std::move(rt));
  node_by_name[rec.name] = i;
  return i;
}

Result<void> State::Impl::Load() {
  const int64_t now = NowS();
  auto recs = store.Budgets();
  if (!recs) return tl::unexpected(recs.error());
  if (recs->empty() && !opt.initial_budgets.empty()) {
    // First start with a budgets file: import it (once; later starts keep the store's tree).
    if (auto t = BudgetTree::Build(opt.initial_budgets); !t) return tl::unexpected(t.error());
    for (const BudgetSpec& s : opt.initial_budgets) {
      store::BudgetRecord b{s.name, s.parent, s.share, s.limit, s.leads, {}};
      auto ok = store.PutBudget(b, {store::AuditRecord{now, "import", s.name, "created", "", ""}});
      if (!ok) return tl::unexpected(ok.error());
      recs->push_back(b);
    }
  }
  auto nrecs = store.Nodes();
  if (!nrecs) return tl::unexpected(nrecs.error());
  for (const auto& r : *nrecs) {
    const size_t i = AddNode(r);
    Node& n = nodes[i];
    // Nodes wait for their agents' re-registration; one that does not come back is lost later.
    node_rt[i].last_hb_ms = clock.NowMs();
    if (r.state == "draining") n.state = NodeState::kDraining;
    if (r.state == "drained") n.state = NodeState::kDrained;
    if (r.state == "lost") n.state = NodeState::kLost;
    n.drain_cause = r.drain_cause == "operator" ? DrainCause::kOperator
                    : r.drain_cause == "health" ? DrainCause::kHealth
                                                : DrainCause::kNone;
    n.drain_since = Seconds(r.drain_since);
    if (r.drain_deadline_at) n.drain_deadline = Seconds(*r.drain_deadline_at);
  }
  // Jobs still in the system, and those ended within what memory keeps or the usage history
  // below replays, whichever reaches back further; the rest stay in the store.
  auto jrecs =
      store.LiveJobs(std::min(now - opt.keep_ended_s, now - opt.config.window.value() - 3600));
  if (!jrecs) return tl::unexpected(jrecs.error());
  for (auto& r : *jrecs) {
    if (!r.submit_key.empty()) by_submit_key[{r.user, r.submit_key}] = r.id;
    JobRt& j = jobs[r.id];
    j.rec = std::move(r);
    j.active_stored_at = j.rec.active_at;
  }
  // Usage history: delivered from the runs, owed by replaying the funded demand of the jobs.
  const int64_t since = now - opt.config.window.value() - 3600;
  auto runs = store.RunsSince(since);
  if (!runs) return tl::unexpected(runs.error());
  for (const auto& run : *runs) {
    if (run.budget.empty()) continue;
    hist_delivered.Add(run.budget, std::max(run.started_at, since), run.ended_at.value_or(now),
                       run.gpus);
  }
  if (auto ok = RebuildTree(std::move(*recs), now); !ok) return ok;
  {
    double cap = 0;
    for (const Node& n : nodes)
      if (n.state != NodeState::kLost) cap += n.gpus.value();
    std::map<int64_t, std::vector<std::pair<size_t, double>>> points;  // time -> (leaf, +-gpus)
    for (const auto& [id, j] : jobs) {
      if (j.rec.budget.empty()) continue;
      const int64_t end = j.rec.ended_at.value_or(now);
      if (end < since && j.rec.ended_at) continue;
      const auto b = tree.Find(j.rec.budget);
      if (!b) continue;
      const auto leaf = static_cast<size_t>(tree.ChargeTarget(*b).value());
      points[std::max(j.rec.submitted_at, since)].push_back({leaf, j.rec.gpus});
      points[std::max(end, since)].push_back({leaf, -j.rec.gpus});
    }
    std::vector<double> dem(tree.size(), 0.0);
    for (auto it = points.begin(); it != points.end(); ++it) {
      for (const auto& [leaf, g] : it->second) dem[leaf] += g;
      const auto next = std::next(it);
      const int64_t to = next == points.end() ? now : next->first;
      if (to <= it->first) continue;
      const auto o = WaterFill(tree, dem, cap);
      for (size_t b = 1; b < o.size(); ++b) {
        const BudgetId id(static_cast<int32_t>(b));
        if (tree.is_leaf(id) && o[b] > 0) hist_owed.Add(KeyOf(id), it->first, to, o[b]);
      }
    }
    owed = std::make_unique<UsageLedger>(tree, opt.config.window);
    hist_owed.Replay(tree, *owed, now);
  }
  // The stops the take-back cool-downs count from.
  auto stops = store.RecentStopsSince(now - kMaxTakeBackCooldown.value());
  if (!stops) return tl::unexpected(stops.error());
  for (const store::RecentStopRecord& r : *stops) recent_stops.Add(r, tree);
  // The queue and the running jobs.
  for (auto& [id, j] : jobs) {
    if (j.rec.state == "pending") {
      if (j.rec.attempts == 0) j.waiting_since = Seconds(j.rec.queued_since);
      AddPending(j);
    } else if (j.active()) {
      j.started = Seconds(j.rec.started_at.value_or(now));
      j.alloc_since = j.started;  // a few seconds late at most: the start order's time is not kept
      const std::string& code = j.rec.reason_code;
      if (j.rec.state == "stopping") {
        j.stopping = true;
        j.stop_kind = code == "cancelled"     ? "cancel"
                      : code == "max_runtime" ? "max_runtime"
                                              : "preempt";
        j.stop_at = Seconds(now) + j.spec.grace;
      }
      bool placed = true;
      try {
        for (const auto& s : nlohmann::json::parse(j.rec.placement_json)) {
          const auto it = node_by_name.find(s.at("node").get<std::string>());
          if (it == node_by_name.end()) {
            placed = false;
            continue;
          }
          SliceRt sl;
          sl.node = it->second;
          sl.gpu_idx = s.at("gpus").get<std::vector<int>>();
          // Not known whether the start order reached the agent before the restart: it is sent
          // again (starting an attempt the agent already runs is a no-op).
          for (int g : sl.gpu_idx)
            if (g >= 0 && static_cast<size_t>(g) < node_rt[sl.node].used.size())
              node_rt[sl.node].used[static_cast<size_t>(g)] = 1;
          j.placement.push_back(Slice{NodeId(static_cast<int32_t>(sl.node)),
                                      Gpus(static_cast<int32_t>(sl.gpu_idx.size()))});
          j.slices.push_back(std::move(sl));
        }
      } catch (const std::exception&) {
        placed = false;
      }
      running.insert(id);
      if (!placed || j.slices.empty()) {
        // Its node is unknown: the attempt is lost.
        for (auto& sl : j.slices) sl.exited = true;
        if (j.stop_kind.empty()) j.stop_kind = "lost";
        if (auto ok = EndAttempt(j, now); !ok) return ok;
      }
    }
  }
  // A job whose victims are still stopping keeps the hold on the GPUs they free (as a cycle
  // before the restart set it; see JobRt::freed_for).
  for (const auto& [id, j] : jobs)
    if (j.stopping && j.rec.stop_holds) HoldFreedGpusFor(j.rec.stop_for);
  counts_dirty = true;
  last = now;
  return {};
}

std::string State::Impl::KeyOf(BudgetId leaf) const {
  return tree.is_hidden(leaf) ? tree.name(tree.parent(leaf)) : tree.name(leaf);
}

void State::Impl::ResolveBudget(JobRt& j) const {
  j.spec.id = JobId(j.rec.id);
  j.spec.submit = Seconds(j.rec.submitted_at);
  j.spec.gpus = Gpus(j.rec.gpus);
  j.spec.gpus_per_node = Gpus(j.rec.gpus_per_node);
  j.spec.job_class = j.rec.job_class;
  j.spec.min_runtime = Seconds(j.rec.min_runtime_s);
  j.spec.lease = Seconds(j.rec.lease_s);
  j.spec.max_runtime.reset();
  if (j.rec.max_runtime_s) j.spec.max_runtime = Seconds(*j.rec.max_runtime_s);
  j.spec.resumable = j.rec.resumable;
  j.spec.grace = Seconds(j.rec.grace_s);
  j.spec.priority = j.rec.priority;
  j.spec.budget = kUnfunded;
  if (!j.rec.budget.empty()) {
    // A job of a deleted budget (only finished ones can be) is no longer charged anywhere.
    if (auto b = tree.Find(j.rec.budget)) j.spec.budget = tree.ChargeTarget(*b);
  }
}

Result<void> State::Impl::RebuildTree(std::vector<store::BudgetRecord> records, int64_t now) {
  std::vector<BudgetSpec> specs;
  for (const auto& r : records)
    specs.push_back(BudgetSpec{r.name, r.parent, r.share, r.limit, r.leads, 0});
  auto t = BudgetTree::Build(specs);
  if (!t) return tl::unexpected(t.error());
  if (delivered) Account(now);  // charge the old tree's rates up to now before they change
  budgets = std::move(records);
  tree = std::move(*t);
  for (auto& [id, j] : jobs) ResolveBudget(j);
  recent_stops.Remap(tree);
  delivered = std::make_unique<UsageLedger>(tree, opt.config.window);
  owed = std::make_unique<UsageLedger>(tree, opt.config.window);
  hist_delivered.Prune(now - opt.config.window.value() - 3600);
  hist_owed.Prune(now - opt.config.window.value() - 3600);
  hist_delivered.Replay(tree, *delivered, now);
  hist_owed.Replay(tree, *owed, now);
  counts_dirty = true;
  changed = true;
  last = std::max(last, now);
  return {};
}

void State::Impl::Recount() {
  leaf_alloc.assign(tree.size(), 0.0);
  demand.assign(tree.size(), 0.0);
  for (const auto* q : {&pending_funded}) {
    for (const auto& [qs, id] : *q) {
      const JobRt& j = jobs.at(id);
      if (j.spec.funded()) demand[static_cast<size_t>(j.spec.budget.value())] += j.rec.gpus;
    }
  }
  for (int64_t id : running) {
    const JobRt& j = jobs.at(id);
    if (!j.spec.funded()) continue;
    leaf_alloc[static_cast<size_t>(j.spec.budget.value())] += j.rec.gpus;
    demand[static_cast<size_t>(j.spec.budget.value())] += j.rec.gpus;
  }
  capacity = 0;
  for (const Node& n : nodes)
    if (n.state == NodeState::kReady) capacity += n.gpus.value();
  owed_now = WaterFill(tree, demand, capacity);
  counts_dirty = false;
}

// The same accounting as sim/engine.cc Account(): delivered = funded GPUs held per leaf, owed =
// water-filling of the funded demand over the ready capacity; both held since `last`.
void State::Impl::Account(int64_t now) {
  if (counts_dirty) Recount();
  if (now <= last) return;
  for (size_t b = 1; b < leaf_alloc.size(); ++b) {
    const BudgetId id(static_cast<int32_t>(b));
    if (!tree.is_leaf(id)) continue;
    if (leaf_alloc[b] > 0) {
      delivered->Charge(id, Seconds(last), Seconds(now), leaf_alloc[b]);
      hist_delivered.Add(KeyOf(id), last, now, leaf_alloc[b]);
    }
    if (owed_now[b] > 0) {
      owed->Charge(id, Seconds(last), Seconds(now), owed_now[b]);
      hist_owed.Add(KeyOf(id), last, now, owed_now[b]);
    }
  }
  delivered->AdvanceTo(Seconds(now));
  owed->AdvanceTo(Seconds(now));
  last = now;
}

void State::Impl::AddPending(JobRt& j) {
  ResolveBudget(j);
  auto& q = j.rec.budget.empty() ? pending_unfunded : pending_funded;
  q.insert({j.rec.queued_since, j.rec.id});
  counts_dirty = true;
  changed = true;
}

void State::Impl::RemovePending(JobRt& j) {
  pending_funded.erase({j.rec.queued_since, j.rec.id});
  pending_unfunded.erase({j.rec.queued_since, j.rec.id});
  counts_dirty = true;
}

// --- principals ---------------------------------------------------------------------------------

Result<std::optional<store::PrincipalRecord>> State::Authenticate(const std::string& token) {
  const std::string hash = HashToken(token);
  uint64_t generation = 0;
  {
    std::lock_guard lock(impl_->mu);
    if (auto it = impl_->token_cache.find(hash); it != impl_->token_cache.end()) return it->second;
    generation = impl_->token_generation;
  }
  auto p = impl_->store.PrincipalByTokenHash(hash);
  if (!p) return tl::unexpected(p.error());
  if (*p) {
    std::lock_guard lock(impl_->mu);
    // A revocation since the read may have been of this token: answer from the store again.
    if (impl_->token_generation != generation) {
      auto again = impl_->store.PrincipalByTokenHash(hash);
      if (!again) return tl::unexpected(again.error());
      if (!*again) return *again;
    }
    impl_->token_cache[hash] = **p;
  }
  return *p;
}

Reply<std::string> State::CreatePrincipal(const std::string& name, const std::string& role) {
  if (!ValidName(name)) return Refuse(400, "name", "must match [A-Za-z0-9._-]{1,64}");
  if (!IsKnownRole(role)) return Refuse(400, "role", "must be admin, user or agent");
  std::lock_guard lock(impl_->mu);
  auto all = impl_->store.Principals();
  if (!all) return tl::unexpected(StoreFailure(all.error()));
  for (const auto& p : *all)
    if (p.name == name) return Refuse(409, "name", "principal '" + name + "' already exists");
  const std::string token = NewToken();
  auto ok = impl_->store.Transaction([&](store::Store& s) -> Result<void> {
    if (auto r = s.PutPrincipal({name, role}); !r) return r;
    return s.AddToken({HashToken(token), name, impl_->NowS()});
  });
  if (!ok) return tl::unexpected(StoreFailure(ok.error()));
  return token;
}

Reply<std::string> State::NewTokenFor(const std::string& name) {
  std::lock_guard lock(impl_->mu);
  auto all = impl_->store.Principals();
  if (!all) return tl::unexpected(StoreFailure(all.error()));
  if (std::none_of(all->begin(), all->end(), [&](const auto& p) { return p.name == name; }))
    return Refuse(404, "name", "unknown principal '" + name + "'");
  const std::string token = NewToken();
  if (auto ok = impl_->store.AddToken({HashToken(token), name, impl_->NowS()}); !ok)
    return tl::unexpected(StoreFailure(ok.error()));
  return token;
}

namespace {

// Who may see and revoke `name`'s tokens: an admin, or `name` itself.
std::optional<Refusal> TokenAccess(const store::PrincipalRecord& who, const std::string& name) {
  if (who.role == kRoleAdmin || who.name == name) return std::nullopt;
  return Refusal{403, "authorization",
                 "only an admin or " + name + " may see or revoke its tokens"};
}

}  // namespace

Reply<nlohmann::json> State::TokensJson(const store::PrincipalRecord& who, const std::string& name,
                                        const std::string& current) {
  if (auto no = TokenAccess(who, name)) return tl::unexpected(*no);
  auto all = impl_->store.Tokens();
  if (!all) return tl::unexpected(StoreFailure(all.error()));
  std::vector<store::TokenRecord> mine;
  for (const auto& t : *all)
    if (t.principal == name) mine.push_back(t);
  std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) {
    return std::tie(a.created_at, a.hash) < std::tie(b.created_at, b.hash);
  });
  const std::string current_hash = HashToken(current);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : mine) {
    out.push_back({{"id", t.hash.substr(0, kTokenIdChars)},
                   {"created_at", t.created_at},
                   {"current", t.hash == current_hash}});
  }
  return nlohmann::json{{"name", name}, {"tokens", out}};
}

Reply<nlohmann::json> State::RevokeToken(const store::PrincipalRecord& who, const std::string& name,
                                         const std::string& id) {
  if (auto no = TokenAccess(who, name)) return tl::unexpected(*no);
  if (id.size() != kTokenIdChars || id.find_first_not_of("0123456789abcdef") != std::string::npos)
    return Refuse(400, "id",
                  "a token id is the " + std::to_string(kTokenIdChars) +
                      " lowercase hex digits `hourglass token list` shows");
  std::lock_guard lock(impl_->mu);
  auto all = impl_->store.Tokens();
  if (!all) return tl::unexpected(StoreFailure(all.error()));
  auto principals = impl_->store.Principals();
  if (!principals) return tl::unexpected(StoreFailure(principals.error()));
  std::set<std::string> admins;
  for (const auto& p : *principals)
    if (p.role == kRoleAdmin) admins.insert(p.name);
  std::vector<std::string> matches;
  size_t admin_tokens = 0;
  for (const auto& t : *all) {
    if (t.principal == name && t.hash.compare(0, kTokenIdChars, id) == 0) matches.push_back(t.hash);
    if (admins.count(t.principal)) ++admin_tokens;
  }
  if (matches.empty()) return Refuse(404, "id", "no token " + id + " of " + name);
  if (matches.size() > 1)
    return Refuse(409, "id", "several tokens of " + name + " start with " + id);
  // Nobody could administer the server again (the admin token is shown only once).
  if (admins.count(name) && admin_tokens == 1)
    return Refuse(409, "id", "the last admin token; create another admin token first");
  const int64_t now = impl_->NowS();
  auto ok = impl_->store.Transaction([&](store::Store& s) -> Result<void> {
    auto gone = s.DeleteToken(matches.front());
    if (!gone) return tl::unexpected(gone.error());
    return s.AppendAudit({now, who.name, "", "token", name + " " + id, "revoked"});
  });
  if (!ok) return tl::unexpected(StoreFailure(ok.error()));
  impl_->token_cache.erase(matches.front());
  ++impl_->token_generation;
  return nlohmann::json{{"name", name}, {"id", id}, {"revoked", true}};
}

Reply<nlohmann::json> State::PrincipalsJson() {
  auto all = impl_->store.Principals();
  if (!all) return tl::unexpected(StoreFailure(all.error()));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : *all) out.push_back({{"name", p.name}, {"role", p.role}});
  return nlohmann::json{{"principals", out}};
}

nlohmann::json State::WhoAmI(const store::PrincipalRecord& who) {
  std::lock_guard lock(impl_->mu);
  return {{"name", who.name},
          {"role", who.role},
          {"budgets", MemberOf(impl_->budgets, who.name)},
          {"leads", LeadOf(impl_->budgets, who.name)}};
}

Result<std::optional<std::string>> State::EnsureAdmin() {
  auto all = impl_->store.Principals();
  if (!all) return tl::unexpected(all.error());
  for (const auto& p : *all)
    if (p.name == "admin") return std::optional<std::string>();
  auto token = CreatePrincipal("admin", std::string(kRoleAdmin));
  if (!token) return tl::unexpected(Error{token.error().field, token.error().reason, {}, 0});
  return std::optional<std::string>(*token);
}

// --- jobs ---------------------------------------------------------------------------------------

namespace {

// Whether two submissions ask for the same job (an idempotent retry must repeat its request).
bool SameRequest(const store::JobRecord& a, const store::JobRecord& b) {
  return a.name == b.name && a.budget == b.budget && a.gpus == b.gpus &&
         a.gpus_per_node == b.gpus_per_node && a.job_class == b.job_class &&
         a.min_runtime_s == b.min_runtime_s && a.max_runtime_s == b.max_runtime_s &&
         a.lease_s == b.lease_s && a.resumable == b.resumable && a.grace_s == b.grace_s &&
         a.priority == b.priority && a.command == b.command && a.env == b.env && a.cwd == b.cwd;
}

// The answer to a retry under a key that `first` was submitted with.
Reply<State::Submitted> AnswerRetry(const store::JobRecord& first, const store::JobRecord& job) {
  if (!SameRequest(first, job))
    return Refuse(409, "Idempotency-Key",
                  "already used for job " + std::to_string(first.id) +
                      ", which asked for something else; use a new key for a new job");
  return State::Submitted{first.id, true, first.state};
}

}  // namespace

Reply<State::Submitted> State::Submit(const store::PrincipalRecord& who, store::JobRecord job) {
  Impl& s = *impl_;
  if (who.role == kRoleAgent) return Refuse(403, "authorization", "agents cannot submit jobs");
  const int64_t now = s.NowS();
  const Impl::SubmitKey key{who.name, job.submit_key};
  const bool keyed = !job.submit_key.empty();
  // A key memory does not know may still be that of a job which ended long ago and left memory
  // (EvictEnded); the store keeps every key. It is read only where the submission would
  // otherwise be refused (a check failed, or the store's unique key refused the insert), outside
  // the lock, so a new key, the common case, costs no read.
  auto or_stored_retry = [&](Refusal refused) -> Reply<Submitted> {
    if (keyed) {
      auto stored = s.store.JobBySubmitKey(who.name, job.submit_key);
      if (stored && stored->has_value()) return AnswerRetry(**stored, job);
    }
    return tl::unexpected(std::move(refused));
  };
  std::optional<Refusal> refused;
  {
    std::unique_lock lock(s.mu);
    // A retry answers as the first attempt did, before anything that may have changed since
    // (a budget deleted, a node gone) is checked again; one that comes while the first attempt
    // commits waits for its answer (the first always gets one: InsertJob returns).
    if (keyed) {
      s.submitted.wait(lock, [&] { return s.submitting.count(key) == 0; });
      if (auto it = s.by_submit_key.find(key); it != s.by_submit_key.end())
        return AnswerRetry(s.jobs.at(it->second).rec, job);
    }
    JobSpec spec;
    spec.gpus = Gpus(job.gpus);
    spec.gpus_per_node = Gpus(job.gpus_per_node);
    spec.min_runtime = Seconds(job.min_runtime_s);
    spec.lease = Seconds(job.lease_s);
    if (job.max_runtime_s) spec.max_runtime = Seconds(*job.max_runtime_s);
    spec.grace = Seconds(job.grace_s);
    if (!job.budget.empty() && !s.tree.Find(job.budget)) {
      refused = Refusal{400, "budget", "unknown budget '" + job.budget + "'"};
    } else if (!CanCharge(s.budgets, who, job.budget)) {
      refused = Refusal{403, "budget", "you may not charge budget '" + job.budget + "'"};
    } else if (job.command.empty()) {
      refused = Refusal{400, "command", "must not be empty"};
    } else if (auto ok = ValidateJob(spec, s.nodes, s.opt.config); !ok) {
      refused = Refusal{400, ApiField(ok.error().field), ok.error().reason};
    } else if (keyed) {
      s.submitting.insert(key);
    }
  }
  if (refused) return or_stored_retry(std::move(*refused));
  job.id = 0;
  job.user = who.name;
  job.state = "pending";
  job.reason = "submitted";
  job.reason_code = "submitted";
  job.submitted_at = now;
  job.queued_since = now;
  job.attempts = 0;
  job.started_at.reset();
  job.ended_at.reset();
  job.active_at.reset();
  job.placement_json = "[]";
  // Durable first (outside the lock, so concurrent submissions share a commit), then queued.
  auto id = s.store.InsertJob(job);
  // No "submitted" event row: JobEventsJson derives it from submitted_at, which saves a second
  // commit per submission. The job is queued under the same lock that publishes its key, so a
  // retry that finds the key finds the job.
  {
    std::lock_guard lock(s.mu);
    if (keyed) s.submitting.erase(key);
    if (id) {
      job.id = *id;
      s.Account(now);
      JobRt& j = s.jobs[*id];
      j.rec = std::move(job);
      j.waiting_since = Seconds(now);
      s.AddPending(j);
      ++s.submissions_total;
      if (keyed) s.by_submit_key[key] = *id;
    }
  }
  if (keyed) s.submitted.notify_all();
  if (!id) return or_stored_retry(StoreFailure(id.error()));
  return Submitted{*id, false, "pending"};
}

Reply<JobRt*> State::Impl::ManagedJob(const store::PrincipalRecord& who, int64_t id) {
  auto it = jobs.find(id);
  if (it == jobs.end()) {
    // Ended long ago (EvictEnded): read back from the store, where nothing accepted is lost.
    it = archived.find(id);
    if (it == archived.end()) {
      auto rec = store.Job(id);
      if (!rec) return tl::unexpected(StoreFailure(rec.error()));
      // Every job still in the system is in memory; one the store has and memory has not yet is
      // a submission being committed, unknown until its answer (as before EvictEnded existed).
      JobRt old;
      if (rec->has_value()) old.rec = std::move(**rec);
      if (!rec->has_value() || !old.ended())
        return Refuse(404, "id", "no job " + std::to_string(id));
      if (archived.size() >= kMaxArchived) archived.clear();
      it = archived.emplace(id, std::move(old)).first;
    }
  }
  if (!CanManageJob(who, it->second.rec.user)) return Refuse(403, "authorization", "not your job");
  return &it->second;
}

void State::Impl::EvictEnded(int64_t now) {
  if (evicted_at != 0 && now - evicted_at < 3600) return;
  evicted_at = now;
  for (auto it = jobs.begin(); it != jobs.end();) {
    const store::JobRecord& r = it->second.rec;
    if (it->second.ended() && r.ended_at && *r.ended_at < now - opt.keep_ended_s) {
      if (!r.submit_key.empty()) by_submit_key.erase({r.user, r.submit_key});
      it = jobs.erase(it);
    } else {
      ++it;
    }
  }
}

Reply<nlohmann::json> State::Cancel(const store::PrincipalRecord& who, int64_t id) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    auto found = s.ManagedJob(who, id);
    if (!found) return tl::unexpected(found.error());
    JobRt& j = **found;
    const int64_t now = s.NowS();
    if (j.rec.state == "pending") {
      s.Account(now);
      store::JobRecord rec = j.rec;
      rec.state = "cancelled";
      rec.reason = "cancelled by " + who.name;
      rec.reason_code = "cancelled";
      rec.ended_at = now;
      auto ok = s.store.Transaction([&](store::Store& st) -> Result<void> {
        if (auto r = st.UpdateJob(rec); !r) return r;
        return st.AddJobEvent({id, now, "cancelled", rec.reason});
      });
      if (!ok) return tl::unexpected(StoreFailure(ok.error()));
      s.RemovePending(j);
      s.changed = true;
      j.rec = std::move(rec);
    } else if (j.rec.state == "running") {
      s.Account(now);
      auto ok = s.Stop(j, "cancel", Reason{}, "cancelled by " + who.name, JobId(0), false, now);
      if (!ok) return tl::unexpected(StoreFailure(ok.error()));
    } else if (j.rec.state == "stopping") {
      // Already on its way out; the cancellation decides how it ends.
      j.stop_kind = "cancel";
    } else {
      return Refuse(409, "state",
                    "job " + std::to_string(id) + " already ended (" + j.rec.state + ")");
    }
  }
  return nlohmann::json{{"id", id}, {"state", "cancelled"}};
}

Reply<nlohmann::json> State::ReportActivity(const store::PrincipalRecord& who, int64_t id) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  auto found = s.ManagedJob(who, id);
  if (!found) return tl::unexpected(found.error());
  JobRt& j = **found;
  // A job without a lease never has a use for activity, whatever its state: said first.
  if (j.rec.lease_s <= 0)
    return Refuse(400, "lease_s",
                  "job " + std::to_string(id) +
                      " has no lease: only a job submitted with lease_s reports activity");
  if (j.rec.state != "running")
    return Refuse(409, "state",
                  "job " + std::to_string(id) + " is " + j.rec.state +
                      ": only a running session's activity extends its protection");
  const int64_t now = s.NowS();
  // Durable before the reply: the protection it buys must survive a restart of the server. No
  // job event: reports come every few minutes for as long as a session is in use.
  if (auto ok = s.store.SetActivity(id, now); !ok) return tl::unexpected(StoreFailure(ok.error()));
  j.rec.active_at = now;
  j.active_stored_at = now;
  ++s.activity_reports_total;
  return s.JobView(j);
}

// --- budgets ------------------------------------------------------------------------------------

Reply<nlohmann::json> State::CreateBudget(const store::PrincipalRecord& who,
                                          const std::string& name, const BudgetChange& c) {
  Impl& s = *impl_;
  if (!ValidName(name)) return Refuse(400, "name", "must match [A-Za-z0-9._-]{1,64}");
  {
    std::lock_guard lock(s.mu);
    const std::string parent = c.parent.value_or("");
    for (const auto& b : s.budgets)
      if (b.name == name) return Refuse(409, "name", "budget '" + name + "' already exists");
    if (!parent.empty() && std::none_of(s.budgets.begin(), s.budgets.end(),
                                        [&](const auto& b) { return b.name == parent; }))
      return Refuse(400, "parent", "unknown budget '" + parent + "'");
    if (!CanCreateUnder(s.budgets, who, parent))
      return Refuse(403, "parent",
                    parent.empty() ? "only admins create top-level budgets"
                                   : "you do not lead the subtree of '" + parent + "'");
    store::BudgetRecord rec{name,
                            parent,
                            c.share.value_or(1.0),
                            c.limit,
                            c.leads.value_or(std::vector<std::string>{}),
                            c.members.value_or(std::vector<std::string>{})};
    auto next = s.budgets;
    next.push_back(rec);
    std::vector<BudgetSpec> specs;
    for (const auto& r : next) specs.push_back({r.name, r.parent, r.share, r.limit, r.leads, 0});
    if (auto t = BudgetTree::Build(specs); !t)
      return Refuse(400, t.error().field.empty() ? "share" : t.error().field, t.error().reason);
    const int64_t now = s.NowS();
    std::vector<store::AuditRecord> audit{{now, who.name, name, "created", "",
                                           "parent=" + parent + " share=" + ShareText(rec.share)}};
    if (auto ok = s.store.PutBudget(rec, audit); !ok)
      return tl::unexpected(StoreFailure(ok.error()));
    if (auto ok = s.RebuildTree(std::move(next), now); !ok)
      return tl::unexpected(StoreFailure(ok.error()));
  }
  return nlohmann::json{{"name", name}};
}

Reply<nlohmann::json> State::PatchBudget(const store::PrincipalRecord& who, const std::string& name,
                                         const BudgetChange& c) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    auto it = std::find_if(s.budgets.begin(), s.budgets.end(),
                           [&](const auto& b) { return b.name == name; });
    if (it == s.budgets.end()) return Refuse(404, "name", "unknown budget '" + name + "'");
    if (!CanChangeBudget(s.budgets, who, name))
      return Refuse(403, "authorization",
                    "you do not lead budget '" + name + "' or one of its ancestors");
    store::BudgetRecord rec = *it;
    const int64_t now = s.NowS();
    std::vector<store::AuditRecord> audit;
    if (c.share && *c.share != rec.share) {
      audit.push_back({now, who.name, name, "share", ShareText(rec.share), ShareText(*c.share)});
      rec.share = *c.share;
    }
    if (c.set_limit && c.limit != rec.limit) {
      audit.push_back({now, who.name, name, "limit", LimitText(rec.limit), LimitText(c.limit)});
      rec.limit = c.limit;
    }
    if (c.leads && *c.leads != rec.leads) {
      audit.push_back({now, who.name, name, "leads", Join(rec.leads), Join(*c.leads)});
      rec.leads = *c.leads;
    }
    if (c.members && *c.members != rec.members) {
      audit.push_back({now, who.name, name, "members", Join(rec.members), Join(*c.members)});
      rec.members = *c.members;
    }
    auto next = s.budgets;
    next[static_cast<size_t>(it - s.budgets.begin())] = rec;
    std::vector<BudgetSpec> specs;
    for (const auto& r : next) specs.push_back({r.name, r.parent, r.share, r.limit, r.leads, 0});
    if (auto t = BudgetTree::Build(specs); !t)
      return Refuse(400, t.error().field.empty() ? "share" : t.error().field, t.error().reason);
    if (!audit.empty()) {
      if (auto ok = s.store.PutBudget(rec, audit); !ok)
        return tl::unexpected(StoreFailure(ok.error()));
      if (auto ok = s.RebuildTree(std::move(next), now); !ok)
        return tl::unexpected(StoreFailure(ok.error()));
    }
  }
  auto all = BudgetsJson();
  for (const auto& b : all["budgets"])
    if (b["name"] == name) return b;
  return nlohmann::json{{"name", name}};
}

Reply<nlohmann::json> State::DeleteBudget(const store::PrincipalRecord& who,
                                          const std::string& name) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    auto it = std::find_if(s.budgets.begin(), s.budgets.end(),
                           [&](const auto& b) { return b.name == name; });
    if (it == s.budgets.end()) return Refuse(404, "name", "unknown budget '" + name + "'");
    if (!CanDeleteBudget(s.budgets, who, name))
      return Refuse(403, "authorization", "you may not delete budget '" + name + "'");
    for (const auto& b : s.budgets)
      if (b.parent == name) return Refuse(409, "name", "budget '" + name + "' has children");
    for (const auto& [id, j] : s.jobs)
      if (j.rec.budget == name && (j.rec.state == "pending" || j.active()))
        return Refuse(409, "name", "budget '" + name + "' has pending or running jobs");
    const int64_t now = s.NowS();
    if (auto ok = s.store.DeleteBudget(name, {now, who.name, name, "deleted", "", ""}); !ok)
      return tl::unexpected(StoreFailure(ok.error()));
    auto next = s.budgets;
    next.erase(next.begin() + (it - s.budgets.begin()));
    if (auto ok = s.RebuildTree(std::move(next), now); !ok)
      return tl::unexpected(StoreFailure(ok.error()));
  }
  return nlohmann::json{{"name", name}, {"deleted", true}};
}

Reply<nlohmann::json> State::AuditJson(const std::string& budget) {
  auto a = impl_->store.Audit(budget);
  if (!a) return tl::unexpected(StoreFailure(a.error()));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : *a)
    out.push_back({{"at", e.at},
                   {"who", e.who},
                   {"budget", e.budget},
                   {"field", e.field},
                   {"old", e.old_value},
                   {"new", e.new_value}});
  return nlohmann::json{{"entries", out}};
}

}  // namespace hg::server
