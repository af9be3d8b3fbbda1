#include "sim/engine.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <optional>
#include <queue>
#include <unordered_map>

#include "core/fair_division.h"
#include "core/housekeeping.h"
#include "core/timed_cycle.h"
#include "core/usage_ledger.h"
#include "sim/report.h"
#include "sim/wait_split.h"

namespace hg::sim {
namespace {

enum class Ev : uint8_t { kSubmit, kFinish, kKill, kWake, kExternal, kCycle, kSample };

struct Event {
  Seconds at;
  int64_t seq;
  Ev kind;
  int32_t idx;
  int32_t token;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

struct JobRt {
  JobState state = JobState::kPending;
  bool submitted = false;
  Seconds remaining{0};     // work left, including reload time after a restart
  Seconds requeued_at{0};   // start of the current wait
  Seconds queued_since{0};  // its place in the queue: the latest submission (kept on requeue)
  int attempts = 0;
  int resubmissions = 0;         // SimOptions::resubmit_after
  std::optional<Seconds> delay;  // JobRecord::delay
  int32_t token = 0;             // bumped on every start and stop, so stale events are ignored
  int32_t run = -1;              // index into running_
  int32_t preempt_record = -1;
  bool stop_ends_job = false;  // stopped for max_runtime: ends failed, not requeued
  std::vector<Seconds> waits;
};

struct NodeRt {
  int32_t used = 0;
  int32_t unfunded = 0;
  int32_t drain_record = -1;
  bool repair_pending = false;
};

StopCause CauseOf(ReasonCode c) {
  switch (c) {
    case ReasonCode::kPreemptForFunded:
      return StopCause::kUnfunded;
    case ReasonCode::kPreemptFairShare:
      return StopCause::kFairShare;
    case ReasonCode::kPreemptReservation:
      return StopCause::kReservation;
    case ReasonCode::kPreemptOwnQuick:
      return StopCause::kOwnBudget;
    case ReasonCode::kPreemptDrain:
      return StopCause::kDrain;
    case ReasonCode::kPreemptDrainForced:
      return StopCause::kDrainForced;
    case ReasonCode::kPreemptTier:
      return StopCause::kPriority;
    case ReasonCode::kMaxRuntime:
      return StopCause::kMaxRuntime;
    default:
      return StopCause::kFairShare;
  }
}

Error In(const char* file, int line, std::string field, std::string reason) {
  return Error{std::move(field), std::move(reason), file, line};
}

int32_t MaxNodeGpus(const Scenario& sc) {
  int32_t most = 0;
  for (const auto& n : sc.nodes) most = std::max(most, n.gpus);
  return most;
}

class Engine {
 public:
  Engine(const Scenario& sc, const Policy& policy, const SimOptions& opt, BudgetTree tree)
      : sc_(sc),
        policy_(policy),
        opt_(opt),
        tree_(std::move(tree)),
        delivered_(tree_, opt.policy.window),
        owed_(tree_, opt.policy.window),
        wait_split_(MaxNodeGpus(sc)) {}

  SimResult Run();

 private:
  void Push(Seconds at, Ev kind, int32_t idx, int32_t token = 0) {
    queue_.push(Event{at, seq_++, kind, idx, token});
  }
  void Dirty() {
    owed_dirty_ = true;
    // The loop runs on interval ticks, and never twice at one instant: a change made by a
    // cycle (say a victim with no grace period leaving) waits for the next tick, as it would in
    // the server, so simulated time always moves on.
    const int64_t iv = opt_.interval.value();
    Seconds at((now_.value() + iv - 1) / iv * iv);
    if (last_cycle_ && at <= *last_cycle_) at = *last_cycle_ + opt_.interval;
    // A cycle already due by then serves this change too; one due later (a waiting timer's
    // tick) is brought forward, and its event is dropped when it comes.
    if (next_cycle_ && *next_cycle_ <= at) return;
    Push(at, Ev::kCycle, 0);
    next_cycle_ = at;
  }
  // The last activity a session's user reported by now: continuous until the workload's
  // idle_after.
  Seconds ActiveAt(const RunningJob& r) const {
    const auto& idle_after = sc_.jobs[static_cast<size_t>(r.spec - specs_.data())].idle_after;
    if (!idle_after) return now_;
    return std::min(now_, r.started + *idle_after);
  }
  void Account(Seconds to);
  void AccountUndelivered(double gap, double seconds);
  int64_t AloneOf(size_t n) const;
  PreemptionRecord RecordFor(const JobSpec& s, StopCause cause) const {
    PreemptionRecord pr;
    pr.at = now_;
    pr.job = s.id;
    pr.job_class = s.job_class;
    pr.gpus = s.gpus.value();
    pr.funded = s.funded();
    pr.cause = cause;
    if (s.funded()) pr.budget = s.budget.value();
    return pr;
  }
  void RunCycle();
  size_t Waiting() const {
    return pending_funded_.size() - holes_funded_ + pending_unfunded_.size() - holes_unfunded_;
  }
  void LogExplanations(const Decisions& d);
  void Submit(int32_t j);
  void StartJob(const StartDecision& d);
  void StopJob(const StopDecision& d);
  void EndRun(int32_t j, JobState final_state, StopCause cause, bool lost_node);
  void External(const TimedEvent& e);
  void SetNodeState(size_t n, NodeState to);
  DrainRecord DrainHolder(size_t n, DrainRecord d) const;
  void Sample();

  // What LogExplanations last wrote for a job (by id), so it writes only changes.
  struct Explained {
    std::optional<Reason> reason;
    Seconds due = kNever;
    std::vector<Slice> slices;
  };
  // Looked up for every waiting job in every explained cycle, never iterated, so its order decides
  // nothing: hashed, as an ordered map's lookups took most of a month's --explain run.
  std::unordered_map<int64_t, Explained> explained_;

  void AddPending(int32_t j);
  void RemovePending(int32_t j);
  PendingJob* FindPending(int32_t j);  // nullptr if not pending
  void ExpireFreedFor();
  void Compact(std::vector<PendingJob>& v, size_t& holes);

  const Scenario& sc_;
  const Policy& policy_;
  const SimOptions& opt_;
  BudgetTree tree_;
  UsageLedger delivered_;
  UsageLedger owed_;

  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  int64_t seq_ = 0;
  Seconds now_{0};
  std::optional<Seconds> next_cycle_;  // when the next cycle runs; a kCycle event at another time
                                       // was superseded by an earlier one
  std::optional<Seconds> last_cycle_;

  std::vector<JobSpec> specs_;
  std::vector<JobRt> jobs_;
  std::map<int64_t, int32_t> job_by_id_;
  std::vector<Node> nodes_;
  std::vector<NodeRt> node_rt_;
  std::map<std::string, size_t> node_by_name_;

  std::vector<PendingJob> pending_funded_, pending_unfunded_;
  std::vector<RecentStop> recent_stops_;  // Snapshot::recent_stops, oldest first
  std::vector<int32_t> freed_for_;        // jobs whose PendingJob::freed_for is set
  size_t holes_funded_ = 0, holes_unfunded_ = 0;
  int64_t unfunded_above_tier0_ = 0;  // Snapshot::unfunded_above_tier0
  std::vector<RunningJob> running_;
  // The tree's leaves in id order: Account visits them at every event.
  std::vector<size_t> leaves_;

  // Rates that hold since the last accounting point.
  int64_t capacity_ = 0, alloc_ready_ = 0, unfunded_ready_ = 0;
  // Unfunded GPUs on ready nodes that hold no funded work: GPUs a waiting funded job could have
  // by preemption alone, if its shape fits them.
  int64_t unfunded_alone_ = 0;
  double owed_sum_ = 0, demand_sum_ = 0;  // over leaves, as of the last WaterFill
  std::vector<double> leaf_alloc_, demand_, owed_now_;
  bool owed_dirty_ = true;
  Seconds last_{0};
  std::vector<double> delivered_total_, owed_total_;  // GPU-seconds per budget
  double cap_acc_ = 0, alloc_acc_ = 0, unf_acc_ = 0;  // GPU-seconds, whole run
  double cap_hour_ = 0, alloc_hour_ = 0, unf_hour_ = 0;
  Undelivered undelivered_;  // GPU-seconds until the end, then GPU-hours
  WaitSplitTracker wait_split_;
  // Pending funded jobs (by index) with victims stopped for them still in their grace period.
  std::map<int32_t, int32_t> victims_for_;
  void VictimGone(JobId for_job);
  std::vector<int32_t> room_;  // scratch: per ready node, GPUs a funded job could have at once

  SimResult result_;
};

void Engine::Account(Seconds to) {
  const int64_t dt = (to - last_).value();
  if (dt <= 0) return;
  if (owed_dirty_) {
    owed_now_ = WaterFill(tree_, demand_, static_cast<double>(capacity_));
    owed_dirty_ = false;
    owed_sum_ = demand_sum_ = 0;
    for (const size_t b : leaves_) {
      owed_sum_ += owed_now_[b];
      demand_sum_ += demand_[b];
    }
  }
  const auto d = static_cast<double>(dt);
  cap_acc_ += static_cast<double>(capacity_) * d;
  alloc_acc_ += static_cast<double>(alloc_ready_) * d;
  unf_acc_ += static_cast<double>(unfunded_ready_) * d;
  cap_hour_ += static_cast<double>(capacity_) * d;
  alloc_hour_ += static_cast<double>(alloc_ready_) * d;
  unf_hour_ += static_cast<double>(unfunded_ready_) * d;
  double funded = 0;
  for (const size_t b : leaves_) {
    const BudgetId id(static_cast<int32_t>(b));
    funded += leaf_alloc_[b];
    if (leaf_alloc_[b] > 0) {
      delivered_.Charge(id, last_, to, leaf_alloc_[b]);
      delivered_total_[b] += leaf_alloc_[b] * d;
    }
    if (owed_now_[b] > 0) {
      owed_.Charge(id, last_, to, owed_now_[b]);
      owed_total_[b] += owed_now_[b] * d;
    }
  }
  AccountUndelivered(owed_sum_ - funded, d);
  wait_split_.Accumulate(d, [&]() -> std::span<const int32_t> {
    room_.clear();
    for (size_t n = 0; n < nodes_.size(); ++n)
      if (nodes_[n].state == NodeState::kReady)
        room_.push_back(nodes_[n].gpus.value() - (node_rt_[n].used - node_rt_[n].unfunded));
    return room_;
  });
  last_ = to;
}

void Engine::AccountUndelivered(double gap, double d) {
  const auto cap = static_cast<double>(capacity_);
  const bool full = demand_sum_ >= cap;
  (full ? undelivered_.at_capacity_hours : undelivered_.below_capacity_hours) += d;
  // Funded jobs on draining nodes hold GPUs outside the capacity, so they can push the
  // difference below zero; owed time they cover is delivered, nothing more to explain.
  if (gap <= 0) return;
  if (!full) {  // every GPU asked for was owed: what was not held, waited
    undelivered_.waiting += gap * d;
    return;
  }
  // At most every ready GPU was owed (less with budget limits), so the difference is at most the
  // ready GPUs funded work did not hold: unfunded or idle. Each part is scaled by the same factor
  // to sum to the difference.
  const auto alone = static_cast<double>(unfunded_alone_);
  const auto beside = static_cast<double>(unfunded_ready_ - unfunded_alone_);
  const double idle = cap - static_cast<double>(alloc_ready_);
  const double parts = alone + beside + idle;
  const double f = parts > 0 ? std::min(1.0, gap / parts) : 0.0;
  undelivered_.unfunded_alone += alone * f * d;
  undelivered_.unfunded_beside_funded += beside * f * d;
  undelivered_.idle += idle * f * d;
}

int64_t Engine::AloneOf(size_t n) const {
  const NodeRt& x = node_rt_[n];
  return nodes_[n].state == NodeState::kReady && x.used == x.unfunded ? x.unfunded : 0;
}

void Engine::AddPending(int32_t j) {
  const JobSpec& s = specs_[static_cast<size_t>(j)];
  auto& v = s.funded() ? pending_funded_ : pending_unfunded_;
  const JobRt& rt = jobs_[static_cast<size_t>(j)];
  PendingJob p{&s, rt.queued_since, rt.attempts + 1};
  if (s.funded()) wait_split_.Add(s.gpus, s.gpus_per_node, s.job_class);
  if (!s.funded() && s.tier > 0) ++unfunded_above_tier0_;
  // Requeued jobs keep their place (their latest submission time), so a middle insert
  // happens. Holes keep their queued_since, so the search by time stays valid without
  // compacting tens of thousands of entries for every requeue; among equal times, the job goes
  // before the first live entry with a larger id (holes there are skipped by every reader).
  auto first_after =
      std::upper_bound(v.begin(), v.end(), p.queued_since,
                       [](Seconds t, const PendingJob& a) { return t < a.queued_since; });
  auto it = std::lower_bound(v.begin(), first_after, p.queued_since,
                             [](const PendingJob& a, Seconds t) { return a.queued_since < t; });
  while (it != first_after && (!it->spec || it->spec->id < s.id)) ++it;
  // A hole just before the place takes the job without moving the entries after it: a requeued
  // sweep's place is near the head of a queue tens of thousands long, where starts leave holes
  // (its own start left one there), and an insert there moved all of the queue behind it. The
  // hole's time is at most the job's (sorted) and every live entry before it goes first, so the
  // order of the live entries is that of an insert.
  if (it != v.begin() && !std::prev(it)->spec) {
    *std::prev(it) = p;
    auto& holes = s.funded() ? holes_funded_ : holes_unfunded_;
    assert(holes > 0);
    --holes;
    return;
  }
  v.insert(it, p);
}

PendingJob* Engine::FindPending(int32_t j) {
  const JobSpec& s = specs_[static_cast<size_t>(j)];
  auto& v = s.funded() ? pending_funded_ : pending_unfunded_;
  const Seconds since = jobs_[static_cast<size_t>(j)].queued_since;
  // Holes keep their queued_since, so the search stays valid; ties are scanned below.
  auto it = std::lower_bound(v.begin(), v.end(), since,
                             [](const PendingJob& a, Seconds key) { return a.queued_since < key; });
  for (; it != v.end() && it->queued_since == since; ++it)
    if (it->spec == &s) return &*it;
  return nullptr;
}

void Engine::RemovePending(int32_t j) {
  const JobSpec& s = specs_[static_cast<size_t>(j)];
  auto& v = s.funded() ? pending_funded_ : pending_unfunded_;
  auto& holes = s.funded() ? holes_funded_ : holes_unfunded_;
  PendingJob* p = FindPending(j);
  if (p == nullptr) {
    assert(false && "pending job not found");
    return;
  }
  p->spec = nullptr;
  p->freed_for = false;
  if (s.funded()) wait_split_.Remove(s.gpus, s.gpus_per_node, s.job_class);
  if (!s.funded() && s.tier > 0) --unfunded_above_tier0_;
  ++holes;
  // Every policy cycle passes over the holes (the unfunded pass of thousands of them at the
  // queue's head, where starts leave them), and cycles are far more frequent than removals: a
  // compaction (one pass) once the holes are a thirty-second of the queue costs less than every
  // cycle's reading half a queue of holes.
  if (holes * 32 > v.size() + 64) Compact(v, holes);
}

// PendingJob::freed_for lasts while a victim of the job is stopping and through the one cycle
// after the last has gone, in which the policy places the job first.
void Engine::ExpireFreedFor() {
  if (freed_for_.empty()) return;
  std::vector<int64_t> waiting;
  for (const RunningJob& r : running_)
    if (r.stopping && r.stop_for.value() != 0) waiting.push_back(r.stop_for.value());
  std::sort(waiting.begin(), waiting.end());
  std::erase_if(freed_for_, [&](int32_t j) {
    PendingJob* p =
        jobs_[static_cast<size_t>(j)].state == JobState::kPending ? FindPending(j) : nullptr;
    if (p == nullptr) return true;
    if (std::binary_search(waiting.begin(), waiting.end(), p->spec->id.value())) return false;
    p->freed_for = false;
    return true;
  });
}

void Engine::Compact(std::vector<PendingJob>& v, size_t& holes) {
  std::erase_if(v, [](const PendingJob& p) { return p.spec == nullptr; });
  holes = 0;
}

// The job on node n that the contract lets stay longest once the node drains (LeavesDrainBy).
DrainRecord Engine::DrainHolder(size_t n, DrainRecord d) const {
  const Node& node = nodes_[n];
  for (const RunningJob& r : running_) {
    bool here = false;
    for (const Slice& sl : r.placement) here = here || static_cast<size_t>(sl.node.value()) == n;
    if (!here) continue;
    const Seconds t = LeavesDrainBy(r, node, now_);
    if (d.holder_class.empty() || t > d.holder_bound) {
      d.holder_class = ClassKey(r.spec->job_class);  // "unlabeled" for no class
      d.holder_restarted = r.attempt > 1;
      d.holder_bound = t;
    }
  }
  return d;
}

void Engine::SetNodeState(size_t n, NodeState to) {
  Node& node = nodes_[n];
  const bool was = node.state == NodeState::kReady, is = to == NodeState::kReady;
  unfunded_alone_ -= AloneOf(n);
  if (was && !is) {
    capacity_ -= node.gpus.value();
    alloc_ready_ -= node_rt_[n].used;
    unfunded_ready_ -= node_rt_[n].unfunded;
  } else if (!was && is) {
    capacity_ += node.gpus.value();
    alloc_ready_ += node_rt_[n].used;
    unfunded_ready_ += node_rt_[n].unfunded;
  }
  node.state = to;
  if (is) {
    node.drain_cause = DrainCause::kNone;
    node.drain_deadline.reset();
    node_rt_[n].repair_pending = false;
  }
  unfunded_alone_ += AloneOf(n);
  owed_dirty_ = true;
  wait_split_.Invalidate();
}

void Engine::Submit(int32_t j) {
  JobRt& rt = jobs_[static_cast<size_t>(j)];
  const JobSpec& s = specs_[static_cast<size_t>(j)];
  if (rt.submitted) ++rt.resubmissions;  // killed before, submitted again by its user
  rt.submitted = true;
  rt.state = JobState::kPending;
  rt.requeued_at = now_;
  rt.queued_since = now_;
  AddPending(j);
  if (s.funded()) demand_[static_cast<size_t>(s.budget.value())] += s.gpus.value();
  Dirty();
}

void Engine::StartJob(const StartDecision& d) {
  const int32_t j = job_by_id_.at(d.job.value());
  JobRt& rt = jobs_[static_cast<size_t>(j)];
  const JobSpec& s = specs_[static_cast<size_t>(j)];
  assert(rt.state == JobState::kPending);
  int32_t total = 0;
  for (const Slice& sl : d.placement) {
    const auto n = static_cast<size_t>(sl.node.value());
    assert(nodes_[n].state == NodeState::kReady);
    assert(node_rt_[n].used + sl.gpus.value() <= nodes_[n].gpus.value());
    unfunded_alone_ -= AloneOf(n);
    node_rt_[n].used += sl.gpus.value();
    if (!s.funded()) node_rt_[n].unfunded += sl.gpus.value();
    unfunded_alone_ += AloneOf(n);
    alloc_ready_ += sl.gpus.value();
    if (!s.funded()) unfunded_ready_ += sl.gpus.value();
    total += sl.gpus.value();
  }
  assert(total == s.gpus.value());
  (void)total;
  wait_split_.Invalidate();
  if (auto v = victims_for_.find(j); v != victims_for_.end()) {
    // Started before all its victims left: the rest leave for no one waiting.
    wait_split_.Await(s.gpus, s.gpus_per_node, s.job_class, -1);
    victims_for_.erase(v);
  }
  RemovePending(j);
  rt.state = JobState::kRunning;
  rt.waits.push_back(now_ - rt.requeued_at);
  ++rt.attempts;
  ++rt.token;
  rt.stop_ends_job = false;
  RunningJob r;
  r.spec = &s;
  r.started = now_;
  r.placement = d.placement;
  r.attempt = rt.attempts;
  r.backfilled = d.reason.code == ReasonCode::kStartBackfill;
  r.took_freed = d.reason.code == ReasonCode::kStartAfterPreempt;
  r.checkpointed = now_;
  r.active_at = now_;
  rt.run = static_cast<int32_t>(running_.size());
  running_.push_back(std::move(r));
  if (s.funded()) leaf_alloc_[static_cast<size_t>(s.budget.value())] += s.gpus.value();
  Push(now_ + rt.remaining, Ev::kFinish, j, rt.token);
  if (s.funded() && s.min_runtime.value() > 0) Push(now_ + s.min_runtime, Ev::kWake, j, rt.token);
  if (s.max_runtime) Push(now_ + *s.max_runtime, Ev::kWake, j, rt.token);
  // A session whose user goes idle loses its lease's protection a lease later.
  const auto& idle_after = sc_.jobs[static_cast<size_t>(j)].idle_after;
  if (s.funded() && s.lease.value() > 0 && idle_after)
    Push(now_ + *idle_after + s.lease, Ev::kWake, j, rt.token);
}

void Engine::StopJob(const StopDecision& d) {
  const int32_t j = job_by_id_.at(d.job.value());
  JobRt& rt = jobs_[static_cast<size_t>(j)];
  assert(rt.state == JobState::kRunning && rt.run >= 0);
  RunningJob& r = running_[static_cast<size_t>(rt.run)];
  assert(!r.stopping);
  r.stopping = true;
  r.stop_at = now_ + r.spec->grace;
  r.stop_for = d.for_job;
  // The job the GPUs are freed for, if any: looked up once for the wait split, the hold and the
  // preemption record.
  const auto f = job_by_id_.find(d.for_job.value());
  const bool for_known = d.for_job.value() != 0 && f != job_by_id_.end();
  if (for_known) {
    const auto fi = static_cast<size_t>(f->second);
    if (jobs_[fi].state == JobState::kPending && specs_[fi].funded() &&
        victims_for_[f->second]++ == 0)
      wait_split_.Await(specs_[fi].gpus, specs_[fi].gpus_per_node, specs_[fi].job_class, +1);
  }
  if (d.hold_for && for_known) {
    if (jobs_[static_cast<size_t>(f->second)].state == JobState::kPending)
      if (PendingJob* p = FindPending(f->second); p && !p->freed_for) {
        p->freed_for = true;
        freed_for_.push_back(f->second);
      }
  }
  if (d.reason.code == ReasonCode::kMaxRuntime) {
    rt.stop_ends_job = true;
  } else {
    const StopCause cause = CauseOf(d.reason.code);
    // The contract every policy is held to is min_runtime; a lease is Hourglass's own promise,
    // measured apart as stopped active sessions.
    const bool protected_now = r.spec->funded() && now_ < r.contract_until();
    // An operator's expired deadline is a person's decision, not the policy breaking the contract.
    bool operator_forced = false;
    if (cause == StopCause::kDrainForced) {
      for (const Slice& sl : r.placement) {
        const Node& n = nodes_[static_cast<size_t>(sl.node.value())];
        if (n.drain_deadline && now_ >= *n.drain_deadline) operator_forced = true;
        const int32_t rec = node_rt_[static_cast<size_t>(sl.node.value())].drain_record;
        if (rec >= 0 && n.state == NodeState::kDraining)
          result_.drains[static_cast<size_t>(rec)].manual = true;
      }
    }
    PreemptionRecord pr = RecordFor(*r.spec, cause);
    pr.run = now_ - r.started;
    pr.contract_violation = protected_now && !operator_forced;
    pr.active_session = r.spec->lease.value() > 0 && now_ < ActiveAt(r) + r.spec->lease;
    if (for_known && specs_[static_cast<size_t>(f->second)].funded())
      pr.for_budget = specs_[static_cast<size_t>(f->second)].budget.value();
    // The policy's take-back cool-down reads these. Its end is a time-only change that no event
    // marks: the loop's bound on the gap between cycles while a job waits (--max-gap) serves it,
    // so that the baselines, which have no cool-down, run on the same rhythm either way.
    if (pr.budget >= 0 && pr.for_budget >= 0 && pr.budget != pr.for_budget)
      recent_stops_.push_back(RecentStop{now_, BudgetId(pr.budget), BudgetId(pr.for_budget)});
    rt.preempt_record = static_cast<int32_t>(result_.preemptions.size());
    result_.preemptions.push_back(pr);
  }
  Push(r.stop_at, Ev::kKill, j, rt.token);
}

void Engine::EndRun(int32_t j, JobState final_state, StopCause cause, bool lost_node) {
  JobRt& rt = jobs_[static_cast<size_t>(j)];
  const JobSpec& s = specs_[static_cast<size_t>(j)];
  const auto idx = static_cast<size_t>(rt.run);
  RunningJob& r = running_[idx];
  for (const Slice& sl : r.placement) {
    const auto n = static_cast<size_t>(sl.node.value());
    unfunded_alone_ -= AloneOf(n);
    node_rt_[n].used -= sl.gpus.value();
    if (!s.funded()) node_rt_[n].unfunded -= sl.gpus.value();
    unfunded_alone_ += AloneOf(n);
    if (nodes_[n].state == NodeState::kReady) {
      alloc_ready_ -= sl.gpus.value();
      if (!s.funded()) unfunded_ready_ -= sl.gpus.value();
    }
  }
  wait_split_.Invalidate();
  if (r.stopping && r.stop_for.value() != 0) VictimGone(r.stop_for);
  if (s.funded()) {
    leaf_alloc_[static_cast<size_t>(s.budget.value())] -= s.gpus.value();
    demand_[static_cast<size_t>(s.budget.value())] -= s.gpus.value();
  }
  // Work since the last checkpoint is lost; a resumable job keeps what it saved.
  const Seconds ran = now_ - r.started;
  const auto& sim = sc_.jobs[static_cast<size_t>(j)];
  Seconds saved{0};
  if (s.resumable && sim.checkpoint_interval.value() > 0)
    saved =
        Seconds(ran.value() / sim.checkpoint_interval.value() * sim.checkpoint_interval.value());
  const bool stopped_early = final_state != JobState::kSucceeded;
  if (!stopped_early) rt.delay = now_ - s.submit - sim.duration;
  if (stopped_early && rt.preempt_record >= 0 && !rt.stop_ends_job)
    result_.preemptions[static_cast<size_t>(rt.preempt_record)].lost_gpu_hours =
        GpuSeconds(s.gpus, ran - saved) / 3600.0;
  if (lost_node) {
    PreemptionRecord pr = RecordFor(s, cause);
    pr.run = ran;
    pr.lost_gpu_hours = GpuSeconds(s.gpus, ran - saved) / 3600.0;
    result_.preemptions.push_back(pr);
  }
  // Swap-remove from the running list.
  if (idx + 1 != running_.size()) {
    running_[idx] = std::move(running_.back());
    jobs_[static_cast<size_t>(running_[idx].spec - specs_.data())].run = static_cast<int32_t>(idx);
  }
  running_.pop_back();
  rt.run = -1;
  rt.preempt_record = -1;
  ++rt.token;
  const bool requeue = stopped_early && s.resumable && !rt.stop_ends_job;
  if (requeue) {
    rt.remaining = rt.remaining - saved + opt_.restart_overhead;
    rt.state = JobState::kPending;
    rt.requeued_at = now_;
    AddPending(j);
    if (s.funded()) demand_[static_cast<size_t>(s.budget.value())] += s.gpus.value();
  } else {
    rt.state = final_state;
    // Its user submits it again (it stays ended until then); not after max_runtime's end.
    const bool killed = final_state == JobState::kPreempted || lost_node;
    if (killed && !rt.stop_ends_job && opt_.resubmit_after) {
      rt.remaining = sim.duration;
      Push(now_ + *opt_.resubmit_after, Ev::kSubmit, j);
    }
  }
  Dirty();
}

void Engine::VictimGone(JobId for_job) {
  const auto f = job_by_id_.find(for_job.value());
  if (f == job_by_id_.end()) return;
  const auto v = victims_for_.find(f->second);
  if (v == victims_for_.end() || --v->second > 0) return;
  const JobSpec& s = specs_[static_cast<size_t>(f->second)];
  wait_split_.Await(s.gpus, s.gpus_per_node, s.job_class, -1);
  victims_for_.erase(v);
}

void Engine::External(const TimedEvent& e) {
  switch (e.kind) {
    case EventKind::kHealthFail:
    case EventKind::kDrain: {
      const size_t n = node_by_name_.at(e.target);
      if (nodes_[n].state != NodeState::kReady) break;
      SetNodeState(n, NodeState::kDraining);
      nodes_[n].drain_cause =
          e.kind == EventKind::kHealthFail ? DrainCause::kHealth : DrainCause::kOperator;
      nodes_[n].drain_since = now_;
      if (e.deadline) {
        nodes_[n].drain_deadline = now_ + *e.deadline;
        Push(now_ + *e.deadline, Ev::kWake, -1);
      }
      node_rt_[n].drain_record = static_cast<int32_t>(result_.drains.size());
      result_.drains.push_back(
          DrainHolder(n, DrainRecord{nodes_[n].name, now_, kNever, false, false, {}, false, {}}));
      break;
    }
    case EventKind::kNodeLost: {
      const size_t n = node_by_name_.at(e.target);
      if (nodes_[n].state == NodeState::kLost) break;
      SetNodeState(n, NodeState::kLost);
      result_.drains.push_back(
          DrainRecord{nodes_[n].name, now_, kNever, true, true, {}, false, {}});
      node_rt_[n].drain_record = -1;
      std::vector<int32_t> victims;
      for (const RunningJob& r : running_)
        for (const Slice& sl : r.placement)
          if (static_cast<size_t>(sl.node.value()) == n) {
            victims.push_back(job_by_id_.at(r.spec->id.value()));
            break;
          }
      std::sort(victims.begin(), victims.end());
      for (int32_t j : victims) EndRun(j, JobState::kFailed, StopCause::kNodeLost, true);
      break;
    }
    case EventKind::kRepair:
    case EventKind::kUndrain: {
      const size_t n = node_by_name_.at(e.target);
      if (nodes_[n].state == NodeState::kDraining && e.kind == EventKind::kRepair) {
        node_rt_[n].repair_pending = true;  // back in service once it is empty
      } else if (nodes_[n].state != NodeState::kReady) {
        SetNodeState(n, NodeState::kReady);
      }
      break;
    }
    case EventKind::kBudgetShare: {
      if (auto b = tree_.Find(e.target)) (void)tree_.SetShare(*b, e.value);
      break;
    }
    case EventKind::kBudgetLimit: {
      if (auto b = tree_.Find(e.target))
        (void)tree_.SetLimit(
            *b, e.value < 0 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(e.value)));
      break;
    }
  }
  Dirty();
}

// Why each job still waits, and what is reserved for whom, in words (SimOptions::explain): a
// line when that changes (SameWait: not when only the count of free GPUs moves), not in every
// cycle; a start or a stop makes the next one new again.
void Engine::LogExplanations(const Decisions& d) {
  for (const StartDecision& s : d.starts) explained_.erase(s.job.value());
  for (const StopDecision& s : d.stops) explained_.erase(s.job.value());
  auto wanted = [&](JobId id) {
    const auto& only = opt_.explain_jobs;
    return only.empty() || std::binary_search(only.begin(), only.end(), id.value());
  };
  for (const PendingNote& n : d.pending) {
    if (!wanted(n.job)) continue;
    Explained& e = explained_[n.job.value()];
    if (e.reason && SameWait(*e.reason, n.reason)) continue;
    e.reason = n.reason;
    opt_.decision_log({now_, "pending", n.job, {}, Describe(n.reason, tree_), n.estimated_start});
  }
  for (const ReservationDecision& r : d.reservations) {
    if (r.slices.empty() || !wanted(r.job)) continue;
    Explained& e = explained_[r.job.value()];
    if (e.due == r.due && e.slices == r.slices) continue;
    e.due = r.due;
    e.slices = r.slices;
    int32_t gpus = 0;
    for (const Slice& sl : r.slices) gpus += sl.gpus.value();
    opt_.decision_log({now_, "reserve", r.job,
                       nodes_[static_cast<size_t>(r.slices.front().node.value())].name,
                       std::to_string(gpus) + " GPUs on " + std::to_string(r.slices.size()) +
                           " node(s) reserved, due at " + std::to_string(r.due.value()) + " s"});
  }
}

void Engine::RunCycle() {
  delivered_.AdvanceTo(now_);
  owed_.AdvanceTo(now_);
  for (RunningJob& r : running_) {
    const auto& sim = sc_.jobs[static_cast<size_t>(r.spec - specs_.data())];
    const int64_t ci = sim.checkpoint_interval.value();
    if (ci > 0) r.checkpointed = r.started + Seconds((now_ - r.started).value() / ci * ci);
    if (r.spec->lease.value() > 0) r.active_at = ActiveAt(r);
  }
  Snapshot snap;
  snap.now = now_;
  snap.nodes = nodes_;
  snap.tree = &tree_;
  snap.delivered = &delivered_;
  snap.owed = &owed_;
  snap.pending_funded = pending_funded_;
  snap.pending_unfunded = pending_unfunded_;
  snap.unfunded_above_tier0 = unfunded_above_tier0_;
  snap.running = running_;
  // Stops older than any cool-down no longer matter: dropped once they are half the list. The
  // list is in time order, so the first recent one is found by bisection, not by reading the old
  // ones every cycle.
  const auto old_end = std::partition_point(
      recent_stops_.begin(), recent_stops_.end(),
      [&](const RecentStop& r) { return now_ - r.at >= kMaxTakeBackCooldown; });
  if (old_end - recent_stops_.begin() > static_cast<std::ptrdiff_t>(recent_stops_.size() / 2))
    recent_stops_.erase(recent_stops_.begin(), old_end);
  snap.recent_stops = recent_stops_;
  snap.explain = opt_.explain;
  Decisions d = policy_.Cycle(snap);
  ++result_.cycles;
  if (opt_.decision_log) {
    for (const StopDecision& s : d.stops)
      opt_.decision_log({now_, "stop", s.job, {}, Describe(s.reason, tree_)});
    for (const StartDecision& s : d.starts)
      opt_.decision_log({now_, "start", s.job,
                         nodes_[static_cast<size_t>(s.placement.front().node.value())].name,
                         Describe(s.reason, tree_)});
    for (const NodeDecision& nd : d.nodes)
      opt_.decision_log({now_, "drained", JobId(0),
                         nodes_[static_cast<size_t>(nd.node.value())].name,
                         Describe(nd.reason, tree_)});
    if (opt_.explain) LogExplanations(d);
  }
  for (const StopDecision& s : d.stops) StopJob(s);
  for (const StartDecision& s : d.starts) StartJob(s);
  ExpireFreedFor();
  for (const NodeDecision& nd : d.nodes) {
    const auto n = static_cast<size_t>(nd.node.value());
    if (nodes_[n].state != NodeState::kDraining || nd.to != NodeState::kDrained) continue;
    const int32_t rec = node_rt_[n].drain_record;
    if (rec >= 0) result_.drains[static_cast<size_t>(rec)].empty_at = now_;
    node_rt_[n].drain_record = -1;
    if (node_rt_[n].repair_pending) {
      SetNodeState(n, NodeState::kReady);  // repaired while draining: back in service
      Dirty();
    } else {
      SetNodeState(n, NodeState::kDrained);
    }
  }
}

void Engine::Sample() {
  SeriesPoint p;
  p.at = now_;
  p.capacity = cap_hour_ / 3600.0;
  p.allocated = alloc_hour_ / 3600.0;
  p.unfunded = unf_hour_ / 3600.0;
  cap_hour_ = alloc_hour_ = unf_hour_ = 0;
  // The largest gang that could start now: free GPUs of ready nodes within one block.
  std::map<std::string, int32_t> per_block;
  for (size_t n = 0; n < nodes_.size(); ++n)
    if (nodes_[n].state == NodeState::kReady)
      per_block[nodes_[n].block] += nodes_[n].gpus.value() - node_rt_[n].used;
  for (const auto& [b, f] : per_block) p.largest_free = std::max(p.largest_free, f);
  result_.series.push_back(p);
}

SimResult Engine::Run() {
  result_.policy = std::string(policy_.name());
  result_.scenario = sc_.name;
  result_.start = Seconds(0);
  result_.end = sc_.end;
  for (size_t i = 0; i < sc_.nodes.size(); ++i) {
    Node n;
    n.id = NodeId(static_cast<int32_t>(i));
    n.name = sc_.nodes[i].name;
    n.gpus = Gpus(sc_.nodes[i].gpus);
    n.block = sc_.nodes[i].block;
    nodes_.push_back(n);
    node_by_name_[n.name] = i;
    capacity_ += n.gpus.value();
  }
  node_rt_.resize(nodes_.size());
  const size_t nb = tree_.size();
  leaf_alloc_.assign(nb, 0.0);
  for (size_t b = 1; b < nb; ++b)
    if (tree_.is_leaf(BudgetId(static_cast<int32_t>(b)))) leaves_.push_back(b);
  demand_.assign(nb, 0.0);
  owed_now_.assign(nb, 0.0);
  delivered_total_.assign(nb, 0.0);
  owed_total_.assign(nb, 0.0);
  specs_.reserve(sc_.jobs.size());
  jobs_.resize(sc_.jobs.size());
  for (size_t i = 0; i < sc_.jobs.size(); ++i) {
    JobSpec s = sc_.jobs[i].spec;
    s.budget = sc_.jobs[i].budget.empty() ? kUnfunded
                                          : tree_.ChargeTarget(*tree_.Find(sc_.jobs[i].budget));
    specs_.push_back(s);
    jobs_[i].remaining = sc_.jobs[i].duration;
    job_by_id_[s.id.value()] = static_cast<int32_t>(i);
    Push(s.submit, Ev::kSubmit, static_cast<int32_t>(i));
  }
  for (size_t i = 0; i < sc_.events.size(); ++i)
    Push(sc_.events[i].at, Ev::kExternal, static_cast<int32_t>(i));
  for (Seconds t = Hours(1); t <= sc_.end; t += Hours(1)) Push(t, Ev::kSample, 0);

  while (!queue_.empty() && queue_.top().at <= sc_.end) {
    const Event e = queue_.top();
    queue_.pop();
    // A timer's cycle that a change brought forward: not an event, and not a cycle.
    if (e.kind == Ev::kCycle && (!next_cycle_ || *next_cycle_ != e.at)) continue;
    now_ = e.at;
    Account(now_);
    ++result_.events;
    if (opt_.progress && (result_.events & 0xFFFF) == 0) opt_.progress(now_, result_.events);
    const auto j = static_cast<size_t>(e.idx);
    switch (e.kind) {
      case Ev::kSubmit:
        Submit(e.idx);
        break;
      case Ev::kFinish:
        if (jobs_[j].token == e.token && jobs_[j].state == JobState::kRunning)
          EndRun(e.idx, JobState::kSucceeded, StopCause::kFairShare, false);
        break;
      case Ev::kKill:
        if (jobs_[j].token == e.token && jobs_[j].state == JobState::kRunning)
          EndRun(e.idx, jobs_[j].stop_ends_job ? JobState::kFailed : JobState::kPreempted,
                 StopCause::kFairShare, false);
        break;
      case Ev::kWake:
        if (e.idx < 0 || (jobs_[j].token == e.token && jobs_[j].state == JobState::kRunning))
          Dirty();
        break;
      case Ev::kExternal:
        External(sc_.events[j]);
        break;
      case Ev::kCycle: {
        next_cycle_.reset();
        last_cycle_ = now_;
        RunCycle();
        if (!next_cycle_ && Waiting() > 0) {
          // A timer tick, not a change: what the policy is owed stays as it was (no Dirty).
          const int64_t period = !opt_.cycle_while_waiting ? 0
                                 : opt_.timer.value() > 0  ? opt_.timer.value()
                                                           : opt_.interval.value();
          if (const auto at = NextTimedCycle(now_.value(), period, opt_.max_gap.value(),
                                             opt_.interval.value())) {
            Push(Seconds(*at), Ev::kCycle, 0);
            next_cycle_ = Seconds(*at);
          }
        }
        break;
      }
      case Ev::kSample:
        Sample();
        break;
    }
  }
  now_ = sc_.end;
  Account(sc_.end);

  result_.capacity_gpu_hours = cap_acc_ / 3600.0;
  result_.allocated_gpu_hours = alloc_acc_ / 3600.0;
  result_.unfunded_gpu_hours = unf_acc_ / 3600.0;
  Undelivered& u = result_.undelivered;
  u = undelivered_;
  for (double* x : {&u.at_capacity_hours, &u.below_capacity_hours, &u.unfunded_alone,
                    &u.unfunded_beside_funded, &u.idle, &u.waiting})
    *x /= 3600.0;
  for (const auto& [gpus, w] : wait_split_.by_gpus())
    result_.funded_wait_by_gpus[gpus] = w.Scaled(1.0 / 3600.0);
  for (const auto& [cls, w] : wait_split_.by_class())
    result_.funded_wait_by_class[cls] = w.Scaled(1.0 / 3600.0);
  // A budget's path as the report names it: a job charged to a budget that has children is
  // accounted on its hidden direct child.
  auto path_of = [&](BudgetId b) {
    return tree_.is_hidden(b) ? tree_.path(tree_.parent(b)) + "/(direct)" : tree_.path(b);
  };
  std::vector<std::string> paths(tree_.size());
  for (size_t b = 1; b < paths.size(); ++b) paths[b] = path_of(BudgetId(static_cast<int32_t>(b)));
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const JobRt& rt = jobs_[i];
    JobRecord rec;
    rec.id = specs_[i].id;
    rec.job_class = specs_[i].job_class;
    rec.gpus = specs_[i].gpus.value();
    rec.funded = specs_[i].funded();
    if (rec.funded) rec.budget = paths[static_cast<size_t>(specs_[i].budget.value())];
    rec.waits = rt.waits;
    rec.final_state = rt.state;
    rec.attempts = rt.attempts;
    rec.resubmissions = rt.resubmissions;
    rec.delay = rt.delay;
    if (rt.submitted) result_.jobs.push_back(std::move(rec));
  }
  // Budget totals: leaves as accounted, parents as sums; depth-first order.
  std::vector<double> del(delivered_total_), owe(owed_total_);
  for (size_t b = nb; b-- > 1;) {
    const auto p = static_cast<size_t>(tree_.parent(BudgetId(static_cast<int32_t>(b))).value());
    del[p] += del[b];
    owe[p] += owe[b];
  }
  std::vector<BudgetId> stack(tree_.children(kRootBudget).rbegin(),
                              tree_.children(kRootBudget).rend());
  while (!stack.empty()) {
    const BudgetId b = stack.back();
    stack.pop_back();
    const auto i = static_cast<size_t>(b.value());
    BudgetTotals t;
    t.path = paths[i];
    t.depth = tree_.depth(b);
    t.leaf = tree_.is_leaf(b);
    t.owed_gpu_hours = owe[i] / 3600.0;
    t.delivered_gpu_hours = del[i] / 3600.0;
    // A direct child that never held a job is left out: it is an implementation detail.
    if (!tree_.is_hidden(b) || owe[i] > 0 || del[i] > 0) result_.budgets.push_back(t);
    const auto& ch = tree_.children(b);
    for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.push_back(*it);
  }
  return std::move(result_);
}

}  // namespace

Result<void> Validate(const Scenario& sc, const PolicyConfig& config) {
  auto tree = BudgetTree::Build(sc.budgets);
  if (!tree) {
    Error e = tree.error();
    e.file = "budgets";
    return tl::unexpected(e);
  }
  std::vector<Node> nodes;
  std::map<std::string, int> names;
  for (size_t i = 0; i < sc.nodes.size(); ++i) {
    Node n;
    n.id = NodeId(static_cast<int32_t>(i));
    n.gpus = Gpus(sc.nodes[i].gpus);
    nodes.push_back(n);
    names[sc.nodes[i].name] = 1;
  }
  if (nodes.empty()) return tl::unexpected(In("cluster", 0, "nodes", "the cluster has no nodes"));
  const NodeSizes sizes(nodes);
  for (const SimJob& j : sc.jobs) {
    if (!j.budget.empty() && !tree->Find(j.budget))
      return tl::unexpected(In("workload", j.line, "budget", "unknown budget '" + j.budget + "'"));
    if (auto ok = ValidateJob(j.spec, sizes, config); !ok)
      return tl::unexpected(In("workload", j.line, ok.error().field, ok.error().reason));
    if (j.duration.value() <= 0)
      return tl::unexpected(In("workload", j.line, "duration", "must be positive"));
  }
  for (const TimedEvent& e : sc.events) {
    const bool node_event = e.kind != EventKind::kBudgetShare && e.kind != EventKind::kBudgetLimit;
    if (node_event && !names.count(e.target))
      return tl::unexpected(In("events", e.line, "target", "unknown node '" + e.target + "'"));
    if (!node_event && !tree->Find(e.target))
      return tl::unexpected(In("events", e.line, "target", "unknown budget '" + e.target + "'"));
  }
  return {};
}

Result<void> CheckLoop(const SimOptions& options) {
  return CheckTimedLoop(options.interval.value(), options.timer.value(), options.max_gap.value(),
                        {"interval", "timer", "max-gap"});
}

Result<SimResult> Simulate(const Scenario& sc, const Policy& policy, const SimOptions& options) {
  if (auto ok = CheckLoop(options); !ok) return tl::unexpected(ok.error());
  if (auto ok = Validate(sc, options.policy); !ok) return tl::unexpected(ok.error());
  auto tree = BudgetTree::Build(sc.budgets);
  Engine engine(sc, policy, options, std::move(*tree));
  return engine.Run();
}

}  // namespace hg::sim
