// The policy cycle and the agents: starts, stops, exits, drains and lost nodes.
#include <algorithm>
#include <cassert>
#include <set>

#include "core/decision.h"
#include "core/timed_cycle.h"
#include "server/state.h"
#include "server/state_impl.h"

namespace hg::server {

const char* CodeName(ReasonCode c) {
  switch (c) {
    case ReasonCode::kStartFree:
      return "start_free";
    case ReasonCode::kStartBackfill:
      return "start_backfill";
    case ReasonCode::kStartAfterPreempt:
      return "start_after_preempt";
    case ReasonCode::kWaitGpus:
      return "wait_gpus";
    case ReasonCode::kWaitBudgetLimit:
      return "wait_budget_limit";
    case ReasonCode::kWaitPreemption:
      return "wait_preemption";
    case ReasonCode::kWaitReservation:
      return "wait_reservation";
    case ReasonCode::kWaitHeadroom:
      return "wait_headroom";
    case ReasonCode::kWaitShape:
      return "wait_shape";
    case ReasonCode::kWaitReserved:
      return "wait_reserved";
    case ReasonCode::kWaitUnfunded:
      return "wait_unfunded";
    case ReasonCode::kWaitFairShare:
      return "wait_fair_share";
    case ReasonCode::kWaitTier:
      return "wait_tier";
    case ReasonCode::kWaitLargeJob:
      return "wait_large_job";
    case ReasonCode::kWaitPreemptBelow:
      return "wait_preempt_below";
    case ReasonCode::kPreemptForFunded:
      return "preempt_for_funded";
    case ReasonCode::kPreemptFairShare:
      return "preempt_fair_share";
    case ReasonCode::kPreemptReservation:
      return "preempt_reservation";
    case ReasonCode::kPreemptOwnQuick:
      return "preempt_own_budget";
    case ReasonCode::kPreemptDrain:
      return "preempt_drain";
    case ReasonCode::kPreemptDrainForced:
      return "preempt_drain_forced";
    case ReasonCode::kPreemptTier:
      return "preempt_tier";
    case ReasonCode::kMaxRuntime:
      return "max_runtime";
    case ReasonCode::kNodeDrained:
      return "node_drained";
  }
  return "unknown";
}

std::string PlacementJson(const JobRt& j, const std::vector<Node>& nodes) {
  nlohmann::json p = nlohmann::json::array();
  for (const SliceRt& s : j.slices)
    p.push_back({{"node", nodes[s.node].name}, {"gpus", s.gpu_idx}});
  return p.dump();
}

namespace {

// Words for reasons that name a node by id: core knows ids, people know names.
std::string Words(const Reason& r, const BudgetTree& tree, const std::vector<Node>& nodes) {
  std::string w = Describe(r, tree);
  if ((r.code == ReasonCode::kPreemptDrain || r.code == ReasonCode::kPreemptDrainForced) &&
      r.a >= 0 && static_cast<size_t>(r.a) < nodes.size()) {
    const std::string id = "node " + std::to_string(r.a) + " ";
    if (w.rfind(id, 0) == 0)
      w = "node " + nodes[static_cast<size_t>(r.a)].name + " " + w.substr(id.size());
  }
  return w;
}

}  // namespace

nlohmann::json State::Impl::StartOrder(const JobRt& j, size_t slice) const {
  const SliceRt& s = j.slices[slice];
  const NodeRt& first = node_rt[j.slices.front().node];
  const auto addr = first.rec.labels.find("addr");
  return {{"type", "start"},
          {"job", j.rec.id},
          {"attempt", j.rec.attempts},
          {"command", j.rec.command},
          {"env", j.rec.env},
          {"cwd", j.rec.cwd},
          {"gpus", s.gpu_idx},
          {"grace_s", j.rec.grace_s},
          {"rank", slice},
          {"num_nodes", j.slices.size()},
          {"master_addr", addr != first.rec.labels.end() ? addr->second : first.rec.name},
          {"master_port", 29500 + j.rec.id % 1000}};
}

Result<void> State::Impl::SetNodeState(size_t n, NodeState to, int64_t now) {
  NodeRt& rt = node_rt[n];
  store::NodeRecord rec = rt.rec;
  rec.state = ToString(to);  // the store keeps the names core uses
  if (to == NodeState::kReady) {
    rec.drain_cause.clear();
    rec.drain_reason.clear();
    rec.drain_deadline_at.reset();
  }
  if (auto ok = store.PutNode(rec); !ok) return ok;
  rt.rec = rec;
  Node& node = nodes[n];
  node.state = to;
  if (to == NodeState::kReady) {
    node.drain_cause = DrainCause::kNone;
    node.drain_deadline.reset();
  }
  (void)now;
  counts_dirty = true;
  // A drain that emptied is the cycle's own decision; the simulator counts no event for it.
  if (to != NodeState::kDrained) changed = true;
  return {};
}

RunningJob State::Impl::AsRunning(const JobRt& j) const {
  RunningJob r;
  r.spec = &j.spec;
  r.started = j.started;
  r.placement = j.placement;
  r.stopping = j.stopping;
  r.stop_at = j.stop_at;
  r.stop_for = JobId(j.rec.stop_for);
  r.checkpointed = j.started;
  // 0 (before any start) when none was reported: the lease counts from the start of the run.
  r.active_at = Seconds(j.rec.active_at.value_or(0));
  r.attempt = j.rec.attempts;
  // Its start reason is kept with the job (the store's reason_code) until it is stopped, so a
  // job that started on reserved GPUs stays preemptible for the reservation after a restart.
  r.backfilled = j.rec.reason_code == CodeName(ReasonCode::kStartBackfill);
  r.took_freed = j.rec.reason_code == CodeName(ReasonCode::kStartAfterPreempt);
  return r;
}

Result<void> State::Impl::Start(const StartDecision& d, int64_t now) {
  auto it = jobs.find(d.job.value());
  if (it == jobs.end() || it->second.rec.state != "pending") return {};
  JobRt& j = it->second;
  // GPU indices: the lowest free ones of each node.
  std::vector<SliceRt> slices;
  std::vector<std::vector<char>> used;
  for (const Slice& sl : d.placement) {
    const auto n = static_cast<size_t>(sl.node.value());
    SliceRt s;
    s.node = n;
    auto& u = node_rt[n].used;
    for (size_t g = 0; g < u.size() && static_cast<int32_t>(s.gpu_idx.size()) < sl.gpus.value();
         ++g) {
      const bool taken = u[g] || std::any_of(slices.begin(), slices.end(), [&](const SliceRt& o) {
                           return o.node == n && std::find(o.gpu_idx.begin(), o.gpu_idx.end(),
                                                           static_cast<int>(g)) != o.gpu_idx.end();
                         });
      if (!taken) s.gpu_idx.push_back(static_cast<int>(g));
    }
    if (static_cast<int32_t>(s.gpu_idx.size()) < sl.gpus.value()) return {};  // out of sync
    slices.push_back(std::move(s));
  }
  store::JobRecord rec = j.rec;
  rec.state = "running";
  rec.attempts += 1;
  rec.started_at = now;
  rec.ended_at.reset();
  rec.exit_code.reset();
  rec.exit_signal.reset();
  // A new run: the activity reported during the last one would otherwise show as this run's
  // (RunningJob::protected_until ignores activity before the start anyway).
  rec.active_at.reset();
  rec.reason = Words(d.reason, tree, nodes);
  rec.reason_code = CodeName(d.reason.code);
  JobRt probe;
  probe.slices = slices;
  rec.placement_json = PlacementJson(probe, nodes);
  store::RunRecord run{rec.id, rec.attempts, rec.budget, rec.gpus, now, std::nullopt};
  auto ok = store.Transaction([&](store::Store& s) -> Result<void> {
    if (auto r = s.UpdateJob(rec); !r) return r;
    if (auto r = s.AddJobEvent({rec.id, now, "started",
                                rec.reason + " (attempt " + std::to_string(rec.attempts) + " on " +
                                    rec.placement_json + ")"});
        !r)
      return r;
    return s.PutRun(run);
  });
  if (!ok) return ok;
  RemovePending(j);
  if (j.waiting_since != kNever) {
    const int64_t waited = now - j.waiting_since.value();
    ObserveQueueWait(queue_wait, j.rec.job_class, static_cast<double>(waited));
    if (!j.rec.budget.empty()) {
      start_waits.push_back({now, j.rec.budget, j.rec.job_class, waited});
      while (start_waits.size() > kMaxStartWaits ||
             start_waits.front().at < now - opt.config.window.value())
        start_waits.pop_front();
    }
  }
  j.waiting_since = kNever;
  for (const SliceRt& s : slices)
    for (int g : s.gpu_idx) node_rt[s.node].used[static_cast<size_t>(g)] = 1;
  j.rec = std::move(rec);
  j.active_stored_at.reset();
  j.slices = std::move(slices);
  j.placement = d.placement;
  j.started = Seconds(now);
  j.alloc_since = Seconds(now);
  j.stopping = false;
  j.stop_kind.clear();
  j.freed_for = false;
  j.estimated_start = kNever;
  running.insert(j.rec.id);
  counts_dirty = true;
  return {};
}

Result<void> State::Impl::Stop(JobRt& j, const std::string& kind, const Reason& why,
                               const std::string& words, JobId for_job, bool holds, int64_t now) {
  store::JobRecord rec = j.rec;
  rec.state = "stopping";
  rec.stop_for = for_job.value();
  rec.stop_holds = holds;
  rec.reason = words;
  rec.reason_code = kind == "cancel" ? "cancelled" : kind == "preempt" ? CodeName(why.code) : kind;
  const std::string event = kind == "cancel"    ? "cancelling"
                            : kind == "preempt" ? "preempting"
                                                : "stopping";
  // A preemption of funded work for a funded job of another leaf: the take-back cool-down counts
  // from it (as the simulator records them), stored with the stop.
  std::optional<store::RecentStopRecord> between;
  if (kind == "preempt" && j.spec.funded())
    if (const auto f = jobs.find(for_job.value());
        f != jobs.end() && f->second.spec.funded() && f->second.spec.budget != j.spec.budget)
      between = store::RecentStopRecord{now, j.rec.budget, f->second.rec.budget};
  auto ok = store.Transaction([&](store::Store& s) -> Result<void> {
    if (auto r = s.UpdateJob(rec); !r) return r;
    if (between)
      if (auto r = s.AddRecentStop(*between); !r) return r;
    return s.AddJobEvent({rec.id, now, event, words});
  });
  if (!ok) return ok;
  if (between) recent_stops.Add(*between, tree);
  j.rec = std::move(rec);
  j.stopping = true;
  j.stop_kind = kind;
  j.stop_at = Seconds(now) + j.spec.grace;
  if (kind == "preempt") ++preemptions_total[j.rec.reason_code];
  // A slice whose start order never went out has nothing to stop.
  bool all = true;
  for (SliceRt& s : j.slices) {
    if (s.start_sent_seq < 0) s.exited = true;
    all = all && s.exited;
  }
  if (all) return EndAttempt(j, now);
  return {};
}

void State::Impl::HoldFreedGpusFor(int64_t job) {
  auto it = jobs.find(job);
  if (it != jobs.end() && it->second.rec.state == "pending") it->second.freed_for = true;
}

Result<void> State::Impl::EndAttempt(JobRt& j, int64_t now) {
  Account(now);
  changed = true;
  store::JobRecord rec = j.rec;
  std::optional<int32_t> code, sig;
  bool clean = true;
  for (const SliceRt& s : j.slices) {
    const bool ok = s.exit_code && *s.exit_code == 0 && !s.signal;
    if (!ok && clean) {
      code = s.exit_code;
      sig = s.signal;
    }
    clean = clean && ok;
  }
  if (clean && !j.slices.empty()) code = 0;
  const std::string& kind = j.stop_kind;
  std::string event;
  bool requeue = false;
  if (kind == "cancel") {
    rec.state = "cancelled";
    event = "cancelled";
  } else if (kind == "max_runtime") {
    rec.state = "failed";
    event = "ended";
  } else if (kind == "preempt") {
    requeue = rec.resumable;
    rec.state = requeue ? "pending" : "preempted";
    event = requeue ? "requeued" : "preempted";
  } else if (kind == "lost") {
    requeue = rec.resumable;
    rec.state = requeue ? "pending" : "failed";
    event = requeue ? "requeued" : "failed";
    if (!requeue) rec.reason = "its node was lost: " + rec.reason;
  } else {
    rec.state = clean ? "succeeded" : "failed";
    event = "ended";
    rec.reason = clean  ? "exited with code 0"
                 : sig  ? "killed by signal " + std::to_string(*sig)
                 : code ? "exited with code " + std::to_string(*code)
                        : "ended without an exit code";
    rec.reason_code = clean ? "succeeded" : "failed";
  }
  rec.exit_code = code;
  rec.exit_signal = sig;
  rec.stop_for = 0;  // stopping no more
  rec.stop_holds = false;
  if (requeue) {
    rec.queued_since = rec.submitted_at;  // a requeued job keeps its place, as in the simulator
    rec.reason = "requeued (" + rec.reason + "); attempt " + std::to_string(rec.attempts + 1) +
                 " comes next";
    rec.reason_code = "requeued";
    rec.ended_at.reset();
  } else {
    rec.ended_at = now;
  }
  // Usage counts from the GPU assignment (set by Start, or by Load after a restart).
  store::RunRecord run{rec.id, j.rec.attempts, rec.budget, rec.gpus, j.alloc_since.value(), now};
  auto ok = store.Transaction([&](store::Store& s) -> Result<void> {
    if (auto r = s.UpdateJob(rec); !r) return r;
    if (auto r = s.AddJobEvent({rec.id, now, event, rec.reason}); !r) return r;
    return s.PutRun(run);
  });
  if (!ok) return ok;
  for (const SliceRt& s : j.slices)
    for (int g : s.gpu_idx)
      if (static_cast<size_t>(g) < node_rt[s.node].used.size())
        node_rt[s.node].used[static_cast<size_t>(g)] = 0;
  running.erase(rec.id);
  j.rec = std::move(rec);
  j.slices.clear();
  j.placement.clear();
  j.stopping = false;
  j.stop_kind.clear();
  if (requeue) {
    j.waiting_since = Seconds(now);
    AddPending(j);
  }
  counts_dirty = true;
  return {};
}

Result<void> State::Impl::MarkLost(size_t n, int64_t now) {
  if (auto ok = SetNodeState(n, NodeState::kLost, now); !ok) return ok;
  for (int64_t id : std::vector<int64_t>(running.begin(), running.end())) {
    JobRt& j = jobs.at(id);
    bool on = false;
    for (SliceRt& s : j.slices)
      if (s.node == n && !s.exited) {
        s.exited = true;
        s.how = "lost";
        on = true;
      }
    if (!on) continue;
    if (j.stop_kind.empty() || j.stop_kind == "preempt") {
      j.stop_kind = "lost";
      j.rec.reason = "node " + nodes[n].name + " stopped reporting";
    }
    bool all = true;
    for (SliceRt& s : j.slices) {
      if (s.start_sent_seq < 0) s.exited = true;
      all = all && s.exited;
    }
    if (all) {
      if (auto ok = EndAttempt(j, now); !ok) return ok;
    } else if (!j.stopping) {
      // The rest of a gang cannot go on without the lost part.
      j.stopping = true;
      j.stop_at = Seconds(now) + j.spec.grace;
    }
  }
  return {};
}

bool State::Impl::WakeDue(int64_t now) const {
  if (!last_cycle_s) return true;
  // The policy treats a time that has come (<= now) as passed, so the last cycle served any
  // before it; as in the simulator, a run's wake-ups count while it is stopping too.
  const auto due = [&](Seconds t) { return t.value() > *last_cycle_s && t.value() <= now; };
  for (int64_t id : running) {
    const JobRt& j = jobs.at(id);
    const JobSpec& sp = j.spec;
    if (sp.funded() && sp.min_runtime.value() > 0 && due(j.started + sp.min_runtime)) return true;
    if (sp.max_runtime && due(j.started + *sp.max_runtime)) return true;
    if (sp.funded() && sp.lease.value() > 0 &&
        due(std::max(j.started, Seconds(j.rec.active_at.value_or(0))) + sp.lease))
      return true;
  }
  for (const Node& n : nodes)
    if (n.state == NodeState::kDraining && n.drain_deadline && due(*n.drain_deadline)) return true;
  return false;
}

Result<bool> State::Tick() {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  const int64_t now = s.NowS();
  const int64_t now_ms = s.clock.NowMs();
  s.Account(now);
  s.EvictEnded(now);
  // Heartbeats are checked on every tick, not only in cycles: a lost node is a change.
  for (size_t n = 0; n < s.nodes.size(); ++n) {
    if (s.nodes[n].state == NodeState::kLost) continue;
    if (now_ms - s.node_rt[n].last_hb_ms > s.opt.lost_after_s * 1000)
      if (auto ok = s.MarkLost(n, now); !ok) return tl::unexpected(ok.error());
  }
  const char* trigger = s.changed                                       ? "change"
                        : s.WakeDue(now)                                ? "wake"
                        : s.next_timer_ms && now_ms >= *s.next_timer_ms ? "timer"
                                                                        : nullptr;
  if (trigger == nullptr) return false;
  ++s.cycles_by_trigger[trigger];
  if (auto ok = s.Cycle(now, now_ms); !ok) {
    s.changed = true;  // decide again at the next tick
    return tl::unexpected(ok.error());
  }
  return true;
}

Result<void> State::Impl::Cycle(int64_t now, int64_t now_ms) {
  Impl& s = *this;
  const int64_t t0 = s.clock.SteadyNs();
  // What the cycle itself does (starts, stops, drained nodes) is not a change; what it ends at
  // once (a stopped job that never started) is, as in the simulator.
  s.changed = false;
  s.last_cycle_s = now;
  s.Account(now);
  std::vector<PendingJob> pf, pu;
  int64_t unfunded_above_tier0 = 0;
  for (const auto& [qs, id] : s.pending_funded) {
    const JobRt& j = s.jobs.at(id);
    pf.push_back(PendingJob{&j.spec, Seconds(qs), j.rec.attempts + 1, j.freed_for});
  }
  for (const auto& [qs, id] : s.pending_unfunded) {
    const JobRt& j = s.jobs.at(id);
    pu.push_back(PendingJob{&j.spec, Seconds(qs), j.rec.attempts + 1});
    if (j.spec.tier > 0) ++unfunded_above_tier0;
  }
  std::vector<RunningJob> run;
  for (int64_t id : s.running) run.push_back(s.AsRunning(s.jobs.at(id)));
  Snapshot snap;
  snap.now = Seconds(now);
  snap.nodes = s.nodes;
  snap.tree = &s.tree;
  snap.delivered = s.delivered.get();
  snap.owed = s.owed.get();
  snap.pending_funded = pf;
  snap.pending_unfunded = pu;
  snap.unfunded_above_tier0 = unfunded_above_tier0;
  snap.running = run;
  // Stops older than any cool-down no longer matter: dropped here, and from the store at most
  // hourly (a write of its own).
  const int64_t oldest = now - kMaxTakeBackCooldown.value() + 1;
  s.recent_stops.DropBefore(oldest);
  if (now - s.recent_stops_pruned_at >= 3600) {
    if (auto ok = s.store.PruneRecentStops(oldest); !ok) return ok;
    s.recent_stops_pruned_at = now;
  }
  snap.recent_stops = s.recent_stops.ids();
  // Explanations cost a pass over the whole queue: every cycle while it is short, and once it is
  // long, on a cycle at least explain_every_ms after the last that explained (StateOptions).
  snap.explain = pf.size() + pu.size() <= s.opt.explain_queue_below || !s.last_explain_ms ||
                 now_ms - *s.last_explain_ms >= s.opt.explain_every_ms;
  const Decisions d = s.policy->Cycle(snap);

  for (const StopDecision& st : d.stops) {
    auto it = s.jobs.find(st.job.value());
    if (it == s.jobs.end() || it->second.rec.state != "running") continue;
    const std::string kind = st.reason.code == ReasonCode::kMaxRuntime ? "max_runtime" : "preempt";
    if (auto ok = s.Stop(it->second, kind, st.reason, Words(st.reason, s.tree, s.nodes), st.for_job,
                         st.hold_for, now);
        !ok)
      return ok;
  }
  for (const StopDecision& st : d.stops)
    if (st.hold_for) s.HoldFreedGpusFor(st.for_job.value());
  for (const StartDecision& st : d.starts)
    if (auto ok = s.Start(st, now); !ok) return ok;
  // The hold lasts while a victim is stopping and through the one cycle after the last has gone.
  std::set<int64_t> waiting;
  for (int64_t id : s.running) {
    const JobRt& j = s.jobs.at(id);
    if (j.stopping && j.rec.stop_for != 0) waiting.insert(j.rec.stop_for);
  }
  for (const auto& [qs, id] : s.pending_funded) {
    JobRt& j = s.jobs.at(id);
    if (j.freed_for && !waiting.count(id)) j.freed_for = false;
  }
  for (const NodeDecision& nd : d.nodes) {
    const auto n = static_cast<size_t>(nd.node.value());
    if (s.nodes[n].state != NodeState::kDraining || nd.to != NodeState::kDrained) continue;
    if (auto ok = s.SetNodeState(n, NodeState::kDrained, now); !ok) return ok;
  }
  for (const PendingNote& note : d.pending) {
    auto it = s.jobs.find(note.job.value());
    if (it == s.jobs.end() || it->second.rec.state != "pending") continue;
    // In memory only: a waiting job's reason changes every cycle and is cheap to recompute.
    it->second.rec.reason = Words(note.reason, s.tree, s.nodes);
    it->second.rec.reason_code = CodeName(note.reason.code);
    it->second.estimated_start = note.estimated_start;
  }
  if (snap.explain) s.last_explain_ms = now_ms;
  const double secs = static_cast<double>(s.clock.SteadyNs() - t0) / 1e9;
  s.cycle_seconds.push_back(secs);
  if (s.cycle_seconds.size() > 1024) s.cycle_seconds.pop_front();
  s.cycle_seconds_sum += secs;
  ++s.cycle_count;
  // The next cycle no event asks for, while a job waits: the timer's next multiple, or the first
  // tick max_gap after this one, whichever comes first.
  // (The scheduler's ticks are the grid the gap is rounded up to.)
  s.next_timer_ms.reset();
  if (!s.pending_funded.empty() || !s.pending_unfunded.empty())
    s.next_timer_ms = NextTimedCycle(now_ms, s.opt.timer_ms, s.opt.max_gap_ms, 1);
  return {};
}

// --- agents -------------------------------------------------------------------------------------

Reply<nlohmann::json> State::Register(const Registration& r) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    const int64_t now = s.NowS();
    s.Account(now);
    auto it = s.node_by_name.find(r.node);
    store::NodeRecord rec;
    if (it != s.node_by_name.end()) rec = s.node_rt[it->second].rec;
    rec.name = r.node;
    rec.labels = r.labels;
    rec.logs_url = r.logs_url;
    const auto block = r.labels.find("block");
    rec.block = block == r.labels.end() ? "" : block->second;
    if (rec.state == "lost") rec.state = "ready";
    if (it != s.node_by_name.end()) {
      const size_t n = it->second;
      const bool busy = std::any_of(s.node_rt[n].used.begin(), s.node_rt[n].used.end(),
                                    [](char u) { return u != 0; });
      if (r.gpus != rec.gpus && busy)
        return Refuse(409, "gpus", "the node's GPU count changed while jobs run on it");
    }
    rec.gpus = r.gpus;
    if (auto ok = s.store.PutNode(rec); !ok) return Refuse(503, "store", ok.error().ToString());
    size_t n = 0;
    if (it == s.node_by_name.end()) {
      n = s.AddNode(rec);
    } else {
      n = it->second;
      NodeRt& rt = s.node_rt[n];
      rt.rec = rec;
      rt.used.resize(static_cast<size_t>(rec.gpus), 0);
      Node& node = s.nodes[n];
      node.gpus = Gpus(rec.gpus);
      node.block = rec.block;
      if (node.state == NodeState::kLost) node.state = NodeState::kReady;
    }
    s.node_rt[n].last_hb_ms = s.clock.NowMs();
    s.node_rt[n].agent_token = r.token;
    s.changed = true;  // a new node, or one back with its size and labels
    // Start orders of attempts the agent does not list go out again at its next heartbeat.
    std::set<AttemptRef> listed(r.running.begin(), r.running.end());
    for (int64_t id : s.running) {
      JobRt& j = s.jobs.at(id);
      for (SliceRt& sl : j.slices)
        if (sl.node == n && !sl.exited) {
          if (!listed.count({id, j.rec.attempts}))
            sl.start_sent_seq = -1;
          else
            sl.start_sent_seq = std::max<int64_t>(sl.start_sent_seq, 0);
          sl.stop_sent_seq = -1;
          sl.misses = 0;
        }
    }
    s.counts_dirty = true;
  }
  return nlohmann::json{{"heartbeat_s", s.opt.heartbeat_s}, {"lost_after_s", s.opt.lost_after_s}};
}

// A session is in use when its processes use CPU: growth of its CPU time between two reports of
// at least this share of the wall time between them counts as activity (1%: a busy loop or a
// working kernel passes; a shell, notebook or `sleep` waiting for its user does not).
constexpr double kActiveCpuShare = 0.01;

void State::Impl::NoteCpu(JobRt& j, SliceRt& sl, double cpu_s) {
  const int64_t now_ms = clock.NowMs();
  const std::optional<double> prev = sl.cpu_s;
  const int64_t prev_ms = sl.cpu_at_ms;
  // Every report is the next one's baseline: a slow trickle of CPU never adds up to activity.
  sl.cpu_s = cpu_s;
  sl.cpu_at_ms = now_ms;
  if (j.rec.lease_s <= 0 || j.rec.state != "running" || !prev) return;  // the first: baseline
  const double grew = cpu_s - *prev;  // negative when a process left the group: no activity
  // (A clock stepped back gives no activity; reports within the same millisecond, any growth.)
  const double wall_s = static_cast<double>(now_ms - prev_ms) / 1000.0;
  if (wall_s < 0 || grew <= 0 || grew < kActiveCpuShare * wall_s) return;
  const int64_t now = NowS();
  j.rec.active_at = now;
  ++activity_cpu_total;
  // Throttled writes: the store learns of the activity only when what it holds is absent or
  // older than a quarter of the lease; otherwise memory alone moves (the job view and the
  // policy read memory). After a crash, the protection recovered from the store is then at
  // most a quarter lease short. A failed write is not the heartbeat's failure: memory holds
  // the activity and the next report tries again.
  if (!j.active_stored_at || 4 * (now - *j.active_stored_at) > j.rec.lease_s) {
    if (store.SetActivity(j.rec.id, now)) j.active_stored_at = now;
  }
}

Reply<nlohmann::json> State::OnHeartbeat(const Heartbeat& hb) {
  Impl& s = *impl_;
  nlohmann::json orders = nlohmann::json::array();
  {
    std::lock_guard lock(s.mu);
    auto it = s.node_by_name.find(hb.node);
    if (it == s.node_by_name.end())
      return Refuse(404, "node", "unknown node '" + hb.node + "': register first");
    const size_t n = it->second;
    NodeRt& rt = s.node_rt[n];
    const int64_t now = s.NowS();
    s.Account(now);
    rt.last_hb_ms = s.clock.NowMs();
    if (!hb.token.empty()) rt.agent_token = hb.token;
    const int64_t seq = ++rt.hb_seq;
    if (s.nodes[n].state == NodeState::kLost) {
      if (auto ok = s.SetNodeState(n, NodeState::kReady, now); !ok)
        return Refuse(503, "store", ok.error().ToString());
    }
    rt.health_ok = hb.health_ok;
    rt.health_detail = hb.health_detail;
    if (!hb.health_ok && s.nodes[n].state == NodeState::kReady) {
      store::NodeRecord rec = rt.rec;
      rec.state = "draining";
      rec.drain_cause = "health";
      rec.drain_reason = "health check failed: " + hb.health_detail;
      rec.drain_deadline_at.reset();
      rec.drain_since = now;
      if (auto ok = s.store.PutNode(rec); !ok) return Refuse(503, "store", ok.error().ToString());
      rt.rec = rec;
      s.nodes[n].state = NodeState::kDraining;
      s.nodes[n].drain_cause = DrainCause::kHealth;
      s.nodes[n].drain_since = Seconds(now);
      s.nodes[n].drain_deadline.reset();
      s.counts_dirty = true;
      s.changed = true;
    }
    // Exits first: an attempt that ended is not "missing" below.
    for (const ExitReport& e : hb.exited) {
      auto jt = s.jobs.find(e.job);
      if (jt == s.jobs.end()) continue;
      JobRt& j = jt->second;
      if (!j.active() || j.rec.attempts != e.attempt) continue;  // a duplicate or stale report
      bool hit = false, failed = false;
      for (SliceRt& sl : j.slices)
        if (sl.node == n && !sl.exited) {
          sl.exited = true;
          sl.exit_code = e.exit_code;
          sl.signal = e.signal;
          sl.how = e.how;
          hit = true;
          failed = !(e.exit_code && *e.exit_code == 0 && !e.signal);
        }
      if (!hit) continue;
      const bool all = std::all_of(j.slices.begin(), j.slices.end(),
                                   [](const SliceRt& sl) { return sl.exited; });
      if (all) {
        if (auto ok = s.EndAttempt(j, now); !ok) {
          for (SliceRt& sl : j.slices)
            if (sl.node == n) sl.exited = false;
          return Refuse(503, "store", ok.error().ToString());
        }
      } else if (!j.stopping && failed) {
        // One part of a gang failed: the others are stopped; the job fails.
        j.stop_kind = "failed";
        if (auto ok = s.Stop(j, "failed", Reason{}, "a part of the gang failed on " + hb.node,
                             JobId(0), false, now);
            !ok)
          return Refuse(503, "store", ok.error().ToString());
      }
    }
    // Attempts the agent runs: expected ones are confirmed; others are stopped.
    std::set<AttemptRef> listed(hb.running.begin(), hb.running.end());
    for (const AttemptRef& a : hb.running) {
      auto jt = s.jobs.find(a.job);
      bool expected = false;
      if (jt != s.jobs.end() && jt->second.active() && jt->second.rec.attempts == a.attempt)
        for (const SliceRt& sl : jt->second.slices) expected = expected || sl.node == n;
      if (!expected)
        orders.push_back({{"type", "stop"},
                          {"job", a.job},
                          {"attempt", a.attempt},
                          {"grace_s", jt == s.jobs.end() ? 0 : jt->second.rec.grace_s},
                          {"reason", "the server does not expect this attempt on this node"}});
    }
    for (int64_t id : std::vector<int64_t>(s.running.begin(), s.running.end())) {
      JobRt& j = s.jobs.at(id);
      bool vanished = false;
      for (size_t k = 0; k < j.slices.size(); ++k) {
        SliceRt& sl = j.slices[k];
        if (sl.node != n || sl.exited) continue;
        if (listed.count({id, j.rec.attempts})) {
          sl.misses = 0;
          sl.start_sent_seq = std::max<int64_t>(sl.start_sent_seq, 0);  // confirmed
          if (!sl.confirmed) {
            sl.confirmed = true;
            // The contract protects the job's processes for min_runtime: the run counts from
            // when its last part is known to run (rounded up to the next second, since the
            // policy's time is whole seconds), not from the start order, which reaches the
            // agent a heartbeat or more later.
            // It is stored as the job's started_at, so a restarted server keeps the contract.
            const int64_t at = (s.clock.NowMs() + 999) / 1000;
            if (std::all_of(j.slices.begin(), j.slices.end(),
                            [](const SliceRt& x) { return x.confirmed; }) &&
                at > j.started.value()) {
              store::JobRecord rec = j.rec;
              rec.started_at = at;
              if (auto ok = s.store.UpdateJob(rec); !ok)
                return Refuse(503, "store", ok.error().ToString());
              j.rec = std::move(rec);
              j.started = Seconds(at);
            }
          }
          if (auto c = hb.cpu_s.find({id, j.rec.attempts}); c != hb.cpu_s.end())
            s.NoteCpu(j, sl, c->second);
        } else if (sl.start_sent_seq >= 0 && sl.start_sent_seq < seq) {
          // Two heartbeats after its start order without a word about it: it is gone.
          if (++sl.misses >= 2) {
            sl.exited = true;
            sl.how = "vanished";
            vanished = true;
          }
        }
      }
      if (vanished) {
        if (j.stop_kind.empty()) j.stop_kind = "lost";
        if (std::all_of(j.slices.begin(), j.slices.end(),
                        [](const SliceRt& sl) { return sl.exited; })) {
          if (auto ok = s.EndAttempt(j, now); !ok)
            return Refuse(503, "store", ok.error().ToString());
          continue;
        }
      }
      for (size_t k = 0; k < j.slices.size(); ++k) {
        SliceRt& sl = j.slices[k];
        if (sl.node != n || sl.exited) continue;
        if (!j.stopping && sl.start_sent_seq < 0) {
          orders.push_back(s.StartOrder(j, k));
          sl.start_sent_seq = seq;
        } else if (j.stopping && (sl.stop_sent_seq < 0 || (listed.count({id, j.rec.attempts}) &&
                                                           seq - sl.stop_sent_seq >= 5))) {
          // Sent again every few heartbeats while the agent still runs it, in case a reply
          // carrying it was lost (the agent keeps the earliest SIGKILL deadline).
          orders.push_back({{"type", "stop"},
                            {"job", id},
                            {"attempt", j.rec.attempts},
                            {"grace_s", j.rec.grace_s},
                            {"reason", j.rec.reason}});
          sl.stop_sent_seq = seq;
        }
      }
    }
  }
  return nlohmann::json{{"orders", orders}};
}

Reply<nlohmann::json> State::Drain(const std::string& node, const std::string& reason,
                                   std::optional<int64_t> deadline_at) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    auto it = s.node_by_name.find(node);
    if (it == s.node_by_name.end()) return Refuse(404, "node", "unknown node '" + node + "'");
    const size_t n = it->second;
    if (s.nodes[n].state == NodeState::kLost || s.nodes[n].state == NodeState::kDrained)
      return Refuse(409, "node", "node '" + node + "' is " + s.node_rt[n].rec.state);
    const int64_t now = s.NowS();
    s.Account(now);
    store::NodeRecord rec = s.node_rt[n].rec;
    if (rec.state != "draining") rec.drain_since = now;
    rec.state = "draining";
    rec.drain_cause = "operator";
    rec.drain_reason = reason;
    rec.drain_deadline_at = deadline_at;
    if (auto ok = s.store.PutNode(rec); !ok) return Refuse(503, "store", ok.error().ToString());
    s.node_rt[n].rec = rec;
    Node& nd = s.nodes[n];
    nd.state = NodeState::kDraining;
    nd.drain_cause = DrainCause::kOperator;
    nd.drain_since = Seconds(rec.drain_since);
    nd.drain_deadline.reset();
    if (deadline_at) nd.drain_deadline = Seconds(*deadline_at);
    s.counts_dirty = true;
    s.changed = true;
  }
  return nlohmann::json{{"name", node}, {"state", "draining"}};
}

Reply<nlohmann::json> State::Undrain(const std::string& node) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    auto it = s.node_by_name.find(node);
    if (it == s.node_by_name.end()) return Refuse(404, "node", "unknown node '" + node + "'");
    const size_t n = it->second;
    if (s.nodes[n].state == NodeState::kLost)
      return Refuse(409, "node", "node '" + node + "' is lost; its agent must register again");
    const int64_t now = s.NowS();
    s.Account(now);
    if (auto ok = s.SetNodeState(n, NodeState::kReady, now); !ok)
      return Refuse(503, "store", ok.error().ToString());
  }
  return nlohmann::json{{"name", node}, {"state", "ready"}};
}

}  // namespace hg::server
