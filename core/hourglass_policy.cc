#include "core/hourglass_policy.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/cluster_state.h"
#include "core/failure_cache.h"
#include "core/fair_division.h"
#include "core/fair_share.h"
#include "core/housekeeping.h"
#include "core/preemption.h"
#include "core/reservation_plan.h"
#include "core/running_index.h"
#include "core/victim_hold.h"

namespace hg {
namespace {

// Preemption planning looks at every node, so a cycle plans at most this many preemptions, and
// fewer on big clusters (node evaluations per cycle bounded, as Slurm bounds its backfill's job
// tests); jobs not reached wait for the next cycle, seconds later.
constexpr int kMaxPreemptPlans = 64;
constexpr int kMinPreemptPlans = 8;
constexpr int64_t kMaxPlanNodeVisits = 160'000;

size_t Ix(BudgetId b) { return static_cast<size_t>(b.value()); }

// A pending funded job as the walk sees it: what it asks for, read from its spec once per cycle.
// The walk passes over every job of a queue thousands long in every cycle, and a spec is a cache
// miss away.
struct Queued {
  const PendingJob* p = nullptr;
  Shape shape;
  BudgetId budget{0};
  int priority = 0;
  bool quick = false;
  // May start on the headroom: quick, or a session when PolicyConfig::sessions_use_headroom.
  bool headroom = false;
};
using LeafQueues = std::vector<std::vector<Queued>>;

class Cycle {
 public:
  Cycle(const PolicyConfig& cfg, const Snapshot& snap)
      : cfg_(cfg), s_(snap), tree_(*snap.tree), cs_(snap.nodes, snap.running) {}

  Decisions Run();

 private:
  void Setup();
  std::vector<JobId> PlaceFreedFor();
  void PlaceFunded();
  // Serves `left[b]` more jobs of each subtree b from the leaves' queues, from `cursor` on, in
  // fair-share order.
  void Walk(const LeafQueues& queue, std::vector<int64_t>& left, std::vector<size_t>& cursor,
            std::vector<const JobSpec*>& held_by);
  void PlaceUnfunded();
  // True when the job got GPUs, is waiting for victims or holds a reservation. `shape` is its
  // request, as its leaf queue read it.
  bool Process(const PendingJob& p, const Shape& shape);
  // Preemption planning is spent and no GPU left is one that a job not yet reached could take,
  // so the rest of the walk would only fail job after job.
  bool NothingMoreCanStart() const;
  // `code`: the reason of a start on free GPUs (kStartAfterPreempt for GPUs freed for the job).
  bool TryFree(const PendingJob& p, const Shape& shape, bool respect_headroom,
               ReasonCode code = ReasonCode::kStartFree);
  bool TryPreempt(const PendingJob& p, const Shape& shape);
  // A preemption plan for j with these victims allowed. `protection_over` (for a reason only):
  // every node is visited, as may_leave_ and CouldHost count only unprotected work.
  std::optional<PreemptionPlan> Plan(const JobSpec& j, const Shape& shape,
                                     FunctionRef<bool(size_t)> eligible, bool protection_over);
  // A plan for j that counts no free GPU, and stops unfunded work only: j fits on the free GPUs
  // but the debug headroom keeps them. The unfunded victims' GPUs refill the headroom as j takes
  // its share of the free ones (DESIGN: unfunded work is preempted first, at any time); before,
  // j waited beside the sweeps, its reason "none are preemptible". Lab-month seeds 1-24: +0.45
  // points of entitlement (standard error 0.15), 25% more preemptions, 1-2% more work lost.
  std::optional<PreemptionPlan> PlanPastHeadroom(const JobSpec& j, const Shape& shape);
  // May running job i be stopped for j? The contract, leases, the reservation's case (c) when j
  // is its `holder`, and fair share, whose test counts `fair_gpus` of j's on its budget's side
  // (`fair` is made on first use: most plans never ask it). `protection_over`: as if every
  // contract, lease and quick_protect had ended, `cooldown_over` as if no take-back cool-down
  // held (both for a reason, never for a decision).
  bool MayStop(const JobSpec& j, bool holder, size_t i, double fair_gpus,
               std::optional<FairShare::Preemptor>& fair, bool protection_over = false,
               bool cooldown_over = false);
  // What keeps a job below its share waiting, and for protected work or the cool-down an
  // estimate of its start.
  struct Standing {
    ShareStanding standing = kBelowShare;
    // kWaitsForProtection: EstimatedStartPastProtections; kTakeBackCooldown:
    // EstimatedStartPastCooldown.
    Seconds eta = kNever;
  };
  // For the reason of a job below its share that planned and found nothing to stop: would a plan
  // have found victims had its own GPUs not counted on its budget's side (then the no-ping-pong
  // rule keeps it waiting: kWouldPassVictims), or had every protection ended besides
  // (kWaitsForProtection), or had those and the take-back cool-down ended (kTakeBackCooldown)?
  // Else the work it may stop is too little (kTooLittleToStop).
  Standing WhyBelowShareWaits(const JobSpec& j, const Shape& shape);
  // When the victims of `plan` (made as if no protection or cool-down held) may be stopped, once
  // their protections and the cool-downs that hold them have ended, and are killed a grace period
  // later: an estimate of the start of a job the cool-down keeps waiting.
  Seconds EstimatedStartPastCooldown(const JobSpec& j, const PreemptionPlan& plan) const;
  // The standing of a job below its share that waits (explained cycles only). A job the failure
  // cache passed over had no plan of its own: it says what the leaf's job of the same shape
  // found, or, for a shape of its own, what plans made for it find, within a bound on such plans
  // per cycle. Past that bound, or once the cycle's bound on preemption plans cut planning short
  // (its shape may then have failed unplanned), it keeps the words that do not tell the causes
  // apart (kBelowShare).
  Standing BelowShareStanding(const JobSpec& j, const Shape& shape);
  // When j's shape fits, as things stand: free GPUs, the jobs leaving, and the work j may stop
  // once its protection ends (killed a grace period later), or that reaches its max_runtime.
  // Where the reservation would be due were j its holder but for case (c). An estimate, not a
  // promise: jobs before j in the fair-share order may take those GPUs first, and work that ends
  // on its own may free others sooner (bench/eta_accuracy.sh measures how close it comes).
  Seconds EstimatedStartPastProtections(const JobSpec& j, const Shape& shape);
  // Where and when `shape` first fits (ChooseReservation), each node counting its free GPUs, then
  // those of its running jobs as each is released at `release_at(i)` (kNever: at no known time).
  // Nodes not ready, or that a reservation of this cycle counts on, never count.
  ReservationPlan WhenFits(const Shape& shape, FunctionRef<Seconds(size_t)> release_at);
  // Whether a plan for `j` stops funded work only to have its GPUs refill the debug headroom:
  // once the victims have gone and j has what it needs, fewer GPUs would be free than the
  // headroom then asks for, so j could not take them. A stopped quick job no longer fills the
  // headroom, and, unless it is requeued, no longer asks for it either. `holder`: j would get the
  // reservation, and may take the headroom's GPUs when it needs more than the headroom keeps
  // (Process).
  bool Futile(const JobSpec& j, const PreemptionPlan& plan, bool holder) const;
  bool TryReserve(const PendingJob& p, const Shape& shape);
  // A job the debug headroom alone keeps from free GPUs where it fits. Reserving those GPUs for
  // it would keep them from the debug jobs the headroom keeps them for, while the headroom keeps
  // them from it: both would wait beside idle GPUs until other work ended (hours, on a small
  // cluster). It holds the cycle's reservation slot, as the top blocked job, and reserves
  // nothing; the debug jobs take the GPUs as free ones, and it starts once the headroom lets it.
  bool HeldByHeadroomOnly(const PendingJob& p, const Shape& shape);
  bool WithinLimits(BudgetId leaf, int32_t gpus, BudgetId* at) const;
  bool MayUseReserved(const JobSpec& j) const;
  // When a reservation may count on r becoming preemptible: its protection's end, or, while a
  // session's lease is in force past its contract, its max_runtime. Its user may renew the lease
  // until then, and a reservation due a lease from now, every cycle anew, would keep the GPUs
  // it holds from other work for as long as someone uses the session.
  Seconds ReleaseBound(const RunningJob& r) const {
    const Seconds until = ProtectedUntil(r);
    if (until <= std::max(s_.now, r.contract_until())) return until;
    return KnownEnd(r);
  }
  // When r ends on its own, if it has a max_runtime (kNever: no known end).
  static Seconds KnownEnd(const RunningJob& r) {
    return r.spec->max_runtime ? r.started + *r.spec->max_runtime : kNever;
  }
  // The contract, extended by a session's lease unless the site turned leases off.
  Seconds ProtectedUntil(const RunningJob& r) const {
    return cfg_.leases ? r.protected_until() : r.contract_until();
  }
  // Does running job r give way to `holder`'s reservation once past its protection (contract
  // case (c))? Work that started on reserved GPUs (backfill) does: it was let in only because it
  // would be preemptible for the reservation by then; not for a budget served better than r's
  // (that would be ping-pong), nor within a budget (churn). For a holder that
  // PreemptsForReservation covers, so does other funded work of a budget over its share; never
  // debug work, whose users wait at a terminal, nor work that itself got its GPUs freed that way:
  // two gangs would take them back and forth, each time the other's protection ended, and a run
  // shorter than the gang's checkpoint interval is lost every time (soak round 46). TryReserve
  // counts on the rule, TryPreempt applies it.
  bool YieldsToReservation(const JobSpec& holder, const RunningJob& r) const {
    if (r.backfilled && fs_->ServedNoBetter(holder.budget, r.spec->budget)) return true;
    return PreemptsForReservation(holder.gpus.value()) && !IsQuick(*r.spec) && !r.took_freed &&
           fs_->VictimSideOverShare(holder.budget, r.spec->budget) &&
           fs_->StaysBelowVictim(holder.budget, holder.gpus.value(), r.spec->budget);
  }
  // Whether contract case (c) beyond backfill applies to jobs of g GPUs: reservation_preempts_gpus,
  // or whole_node_reservation_preempts for a job of the largest node's size. Not where that size
  // is one GPU: every job would be such a job, and no node is ever partly free.
  bool PreemptsForReservation(int32_t g) const {
    return (cfg_.reservation_preempts_gpus > 0 && g >= cfg_.reservation_preempts_gpus) ||
           (cfg_.whole_node_reservation_preempts && g == cs_.max_node_gpus() && g > 1);
  }
  // Where PreemptsForReservation covers a gang's size, a fair-share stop of it by a smaller job
  // counts the gang's spare GPUs as the preemptor side's: they go to its budget's next jobs, and
  // with them the side may end above the gang's, whose reservation then takes the GPUs back once
  // its protection ends, round after round (soak round 628: a 2-GPU and a 20-GPU job of one
  // budget and a 24-GPU gang of another, 103 times). Not for other sizes: no reservation takes
  // their GPUs back, and the same rule for every gang cost 3 points of entitlement on lab-month
  // (docs/open-work.md).
  bool GangStopKeepsSides(const JobSpec& j, const RunningJob& r) const {
    const int32_t v = r.gpus().value();
    return !PreemptsForReservation(v) || v <= j.gpus.value() ||
           fs_->MayPreempt(j.budget, v, r.spec->budget, v);
  }
  bool HeadroomAllows(const JobSpec& j) const;
  // Whether j may start on GPUs the debug headroom keeps, leaving `left` GPUs free: a quick job
  // may; a session takes what the debug jobs do not need now: none waits, and the room for the
  // next one (the quiet headroom) stays free. Sessions hold their GPUs for hours; debug bursts
  // come first.
  bool MayTakeHeadroom(const JobSpec& j, int64_t left) const {
    if (IsQuick(j)) return true;
    return SessionOnHeadroom(j) && quick_unstarted_ == 0 &&
           left >= std::max(0, cfg_.quick_headroom_quiet);
  }
  // An unfunded job of more GPUs than the cluster has beside the headroom kept while nobody
  // debugs: the headroom alone keeps it from ever starting, even on an idle cluster (P5 and the
  // contract properties under DeployedConfig(): a 48-GPU job on 48 GPUs never ran). While no
  // debug job waits it may take the headroom too; the next debug job stops it (unfunded work
  // goes first, at any time) and waits out its grace once. Smaller unfunded work keeps off the
  // headroom, so debug jobs do not wait for sweeps.
  bool HeadroomAloneBars(int64_t gpus) const {
    return quick_unstarted_ == 0 && gpus > cs_.capacity() - Headroom(0);
  }
  // The debug headroom for quick jobs holding or asking for `quick` GPUs: it grows with them from
  // quick_headroom up to quick_headroom_max, and shrinks to quick_headroom_quiet without them.
  int64_t Headroom(int64_t quick) const {
    int64_t h = std::max(headroom_base_, std::min(headroom_most_, quick));
    if (cfg_.quick_headroom_quiet >= 0 && quick == 0)
      h = std::min<int64_t>(h, cfg_.quick_headroom_quiet);
    return h;
  }
  // GPUs the headroom still asks to keep free: what the quick jobs running do not fill. With
  // quick jobs of `quick_freed` GPUs stopped, `quick_gone` of them not resumable: those will not
  // wait again, so the headroom shrinks with them; the rest are requeued and still ask for it.
  int64_t RequiredFree(int64_t quick_freed = 0, int64_t quick_gone = 0) const {
    return std::max<int64_t>(0,
                             Headroom(quick_asking_ - quick_gone) - (quick_running_ - quick_freed));
  }
  // Until when fair share may not stop r: a quick job's first quick_protect seconds of its run.
  // Asked for every candidate victim: the option's test first, as it is off by default.
  Seconds SparedUntil(const RunningJob& r) const {
    if (cfg_.quick_protect <= Seconds(0) || !IsQuick(*r.spec)) return Seconds(0);
    return r.started + cfg_.quick_protect;
  }
  // Counts what leaving job `r` frees by `at` beyond its preemptor's need as spare GPUs for later
  // preemptors (soon_). `need_on(slice)` points at the GPUs the preemptor still needs from
  // leaving jobs there (taken from the slice first, and counted down), or is null. `bound`: also
  // count them in may_leave_, which did not count jobs leaving before the cycle.
  template <typename NeedOn>
  void AddSpareOf(const RunningJob& r, Seconds at, bool bound, NeedOn need_on) {
    for (const Slice& sl : r.placement) {
      int32_t spare = sl.gpus.value();
      if (int64_t* need = need_on(sl)) {
        const auto take = static_cast<int32_t>(std::clamp<int64_t>(*need, 0, spare));
        *need -= take;
        spare -= take;
      }
      if (spare <= 0 || !cs_.ready(sl.node)) continue;  // a draining node's GPUs are for no one
      if (soon_.empty()) soon_.resize(cs_.size());
      const auto n = static_cast<size_t>(sl.node.value());
      soon_[n].gpus += spare;
      soon_[n].at = std::max(soon_[n].at, at);
      if (bound) may_leave_[n] += spare;
    }
  }
  const std::vector<int32_t>& CouldHost(int32_t g);
  // Asked for every running and pending job in every cycle: the first letter settles almost all
  // of them before a full string comparison.
  bool IsQuick(const JobSpec& j) const {
    const std::string& c = j.job_class;
    const std::string& q = cfg_.quick_class;
    return c.size() == q.size() && (q.empty() || c[0] == q[0]) && c == q;
  }
  // A session (a funded job with a lease) that may start on the headroom like a quick job.
  bool SessionOnHeadroom(const JobSpec& j) const {
    return cfg_.sessions_use_headroom && j.lease.value() > 0 && j.funded();
  }
  bool UsesHeadroom(const JobSpec& j) const { return IsQuick(j) || SessionOnHeadroom(j); }
  void Note(const PendingJob& p, Reason r, Seconds eta = kNever) {
    if (s_.explain) out_.pending.push_back(PendingNote{p.spec->id, r, eta});
  }
  void Start(const PendingJob& p, std::vector<Slice> slices, ReasonCode code);
  // Every change of a budget's allocation in the cycle goes through here: it moves the keys.
  void AddAlloc(BudgetId leaf, double gpus) {
    fs_->Add(leaf, gpus);
    ++alloc_moves_;
  }

  const PolicyConfig& cfg_;
  const Snapshot& s_;
  const BudgetTree& tree_;
  ClusterState cs_;
  Decisions out_;
  std::vector<uint8_t> stopping_;  // bytes, not bits: see RunningIndex::stopping
  // Per running job, what a preemption plan asks of every job on every node it visits, packed:
  // most plans fail, and reading each job's spec for it cost them more than the answers.
  struct Facts {
    Seconds contract_until{0};
    Seconds protected_until{0};  // ProtectedUntil
    BudgetId budget{0};
    int32_t gpus = 0;
    bool funded = false;
  };
  // GPUs running job i holds on node `id`.
  int32_t GpusOn(size_t i, NodeId id) const {
    return hg::GpusOn(s_.running[i], id, slice_gpus_[i]);
  }
  std::vector<Facts> facts_;
  std::vector<int32_t> slice_gpus_;  // per running job, UniformSliceGpus: for plans and GpusOn
  NodeJobs on_node_;
  // Per node, GPUs of jobs that preemption could stop at all: unfunded ones and funded ones past
  // their protection. Victims chosen later in the cycle are not taken off (it stays a bound).
  std::vector<int32_t> may_leave_;
  // Per node, GPUs that leaving jobs free beyond what their preemptors take, and when: a later
  // preemptor waits for them rather than stop more work (empty while there are none).
  std::vector<Soon> soon_;
  std::optional<FairShare> fs_;
  std::map<int64_t, Seconds> waiting_on_victims_;  // job id -> latest victim kill time
  // (victim's leaf, preemptor's leaf) of the stops within PolicyConfig::take_back_cooldown,
  // the cycle's own included: the victim's leaf may not stop the preemptor's work for fair share
  // until the cool-down of the pair's latest stop lapses (the value).
  std::map<std::pair<int32_t, int32_t>, Seconds> taken_;
  // taken_'s row for one preemptor, by victim leaf: asked once per running job a plan visits, a
  // map lookup there cost 3.6% of lab-month's instructions. Built when another preemptor asks;
  // TakenChanged() drops it.
  BudgetId taken_row_for_{-1};
  std::vector<char> taken_row_;
  bool TakesBack(BudgetId preemptor, BudgetId victim) {
    if (taken_.empty()) return false;
    if (preemptor != taken_row_for_) {
      SetTakenRow(0);
      taken_row_for_ = preemptor;
      SetTakenRow(1);
    }
    return taken_row_[Ix(victim)] != 0;
  }
  // Sets taken_row_ to `v` where taken_row_for_'s entries are.
  void SetTakenRow(char v) {
    if (taken_row_for_.value() < 0) return;
    if (taken_row_.empty()) taken_row_.assign(s_.tree->size(), 0);
    const int32_t p = taken_row_for_.value();
    for (auto it = taken_.lower_bound({p, std::numeric_limits<int32_t>::min()});
         it != taken_.end() && it->first.first == p; ++it)
      taken_row_[static_cast<size_t>(it->first.second)] = v;
  }
  void TakenChanged() {
    SetTakenRow(0);
    taken_row_for_ = BudgetId(-1);
  }
  // Nodes a reservation of this cycle counts on; sized at the cycle's first reservation, as most
  // cycles make none.
  std::vector<uint8_t> in_reservation_;
  std::vector<Release> releases_;  // TryReserve's scratch, reused for every node it asks about
  FairShare::Preemptor::Scratch fair_scratch_;  // TryPreempt's, reused for every plan
  PreemptionScratch plan_scratch_;              // PlanPreemption's, reused for every plan
  // Per slice size g, the nodes whose free GPUs plus may_leave_ reached g when first asked: no
  // other node can host such a slice later in the cycle, as free GPUs only go down within it.
  std::vector<std::optional<std::vector<int32_t>>> could_host_;
  std::vector<FailureCache> failed_;  // per leaf budget (+1 slot for unfunded)
  // Every pending funded job as the walk sees it, in the snapshot's order: read from the specs
  // in one pass in Setup, as the queue may be tens of thousands long and each spec a cache miss.
  std::vector<Queued> queued_;
  int64_t headroom_base_ = 0, headroom_most_ = 0;  // GPUs: PolicyConfig's fractions of capacity
  int64_t quick_asking_ = 0;     // GPUs of quick jobs running or waiting when the cycle began
  int64_t quick_running_ = 0;    // GPUs of quick jobs running, those started in this cycle too
  int64_t headroom_left_ = 0;    // pending jobs that may use the headroom, not reached yet
  int64_t quick_unstarted_ = 0;  // pending quick jobs not started in this cycle (yet)
  Seconds reservation_due_ = kNever;
  bool planned_ = false;  // the job Process is at was within this cycle's bound on plans
  // Explained cycles: the standing found for a leaf's jobs of one shape (per_node, count, rest),
  // apart for quick jobs and for jobs that may use reserved GPUs, as plans treat them apart.
  std::map<std::tuple<int32_t, int32_t, int32_t, int32_t, bool, bool>, Standing> standing_;
  int explain_plans_ = 0;  // standings worked out for jobs with no plan of their own
  int reservations_ = 0;
  int preempt_attempts_ = 0;
  int64_t alloc_moves_ = 0;  // calls of AddAlloc so far
  int max_plans_ = kMaxPreemptPlans;
  bool any_limit_ = false;  // some budget has a GPU limit
};

void Cycle::Setup() {
  const size_t nb = tree_.size();
  for (size_t b = 1; b < nb && !any_limit_; ++b)
    any_limit_ = tree_.limit(BudgetId(static_cast<int32_t>(b))).has_value();
  stopping_.resize(s_.running.size());
  facts_.resize(s_.running.size());
  slice_gpus_.resize(s_.running.size());
  on_node_ = NodeJobs(s_.running, s_.nodes.size());
  may_leave_.assign(s_.nodes.size(), 0);
  std::vector<double> alloc(nb, 0.0), demand(nb, 0.0);
  int64_t quick_running = 0;
  for (size_t i = 0; i < s_.running.size(); ++i) {
    const RunningJob& r = s_.running[i];
    stopping_[i] = r.stopping;
    slice_gpus_[i] = UniformSliceGpus(r);
    assert(std::all_of(r.placement.begin(), r.placement.end(), [&](const Slice& a) {
      return std::count_if(r.placement.begin(), r.placement.end(),
                           [&](const Slice& b) { return b.node == a.node; }) == 1;
    }));
    facts_[i] = Facts{r.contract_until(), ProtectedUntil(r), r.spec->budget, r.gpus().value(),
                      r.spec->funded()};
    // A bound for planning: past its contract a session may leave for the reservation it
    // backfilled, whatever its lease (TryPreempt).
    const bool may_leave = !r.stopping && (!r.spec->funded() || s_.now >= r.contract_until());
    if (may_leave)
      for (const Slice& sl : r.placement)
        may_leave_[static_cast<size_t>(sl.node.value())] += sl.gpus.value();
    if (IsQuick(*r.spec)) quick_running += r.gpus().value();
    if (r.stopping && r.stop_for.value() != 0) {
      auto& t = waiting_on_victims_[r.stop_for.value()];
      t = std::max(t, r.stop_at);
    }
    if (!r.spec->funded()) continue;
    const double g = r.gpus().value();
    // A job that is leaving no longer counts; a requeued one still wants GPUs.
    if (!r.stopping) alloc[Ix(r.spec->budget)] += g;
    if (!r.stopping || r.spec->resumable) demand[Ix(r.spec->budget)] += g;
  }
  // Oldest first: read from the newest back to the first stop past the cool-down, not the day's
  // worth a driver keeps.
  if (cfg_.take_back_cooldown > Seconds(0))
    for (auto st = s_.recent_stops.rbegin();
         st != s_.recent_stops.rend() && s_.now - st->at < cfg_.take_back_cooldown; ++st)
      if (st->victim != st->preemptor)  // the newest first: emplace keeps it
        taken_.emplace(std::make_pair(st->victim.value(), st->preemptor.value()),
                       st->at + cfg_.take_back_cooldown);
  // A job waiting for its victims to exit also holds the free GPUs its placement needs next to
  // them, or other work would slip in there and have to be preempted in turn.
  std::map<int64_t, Shape> claims;  // by job id
  int64_t quick_waiting = 0;
  queued_.reserve(s_.pending_funded.size());
  for (const PendingJob& p : s_.pending_funded) {
    if (!p.spec) continue;
    const JobSpec& j = *p.spec;
    const bool quick = IsQuick(j);
    queued_.push_back(Queued{&p, cs_.ShapeOf(j.gpus, j.gpus_per_node), j.budget, j.priority, quick,
                             quick || SessionOnHeadroom(j)});
    demand[Ix(j.budget)] += j.gpus.value();
    if (quick) {
      quick_waiting += j.gpus.value();
      ++quick_unstarted_;
    }
    if (queued_.back().headroom) ++headroom_left_;
    if (waiting_on_victims_.empty() || !waiting_on_victims_.count(p.spec->id.value())) continue;
    // GPUs being freed for a job are counted as its budget's already.
    alloc[Ix(p.spec->budget)] += p.spec->gpus.value();
    claims[p.spec->id.value()] = queued_.back().shape;
  }
  HoldForVictims(s_.running, claims, cs_);
  // What leaving jobs free beyond their preemptors' needs (PreemptionPlan::soon). A preemptor's
  // need is met from its victims in their order; a job leaving for no one (or for a job gone
  // meanwhile) frees all it holds.
  if (cfg_.wait_for_spare) {
    std::map<int64_t, int64_t> to_take;  // waiting job id -> GPUs still to come from its victims
    for (const PendingJob& p : s_.pending_funded)
      if (p.spec && waiting_on_victims_.count(p.spec->id.value()))
        to_take[p.spec->id.value()] = p.spec->gpus.value();
    for (const RunningJob& r : s_.running) {
      if (!r.stopping) continue;
      const auto it = to_take.find(r.stop_for.value());
      AddSpareOf(r, std::max(s_.now, r.stop_at), true,
                 [&](const Slice&) { return it == to_take.end() ? nullptr : &it->second; });
    }
  }
  auto owed_now = WaterFill(tree_, demand, static_cast<double>(cs_.capacity()));
  fs_.emplace(tree_, *s_.delivered, *s_.owed, alloc, std::move(owed_now), cfg_.live_weight,
              cfg_.preempt_below);
  failed_.resize(nb + 1);
  const int64_t by_size =
      kMaxPlanNodeVisits / std::max<int64_t>(1, static_cast<int64_t>(cs_.size()));
  max_plans_ = static_cast<int>(std::clamp<int64_t>(by_size, kMinPreemptPlans, kMaxPreemptPlans));
  const auto capacity = static_cast<double>(cs_.capacity());
  headroom_base_ = static_cast<int64_t>(std::llround(cfg_.quick_headroom * capacity));
  headroom_most_ = static_cast<int64_t>(std::llround(cfg_.quick_headroom_max * capacity));
  quick_asking_ = quick_running + quick_waiting;
  quick_running_ = quick_running;
}

bool Cycle::WithinLimits(BudgetId leaf, int32_t gpus, BudgetId* at) const {
  if (!any_limit_) return true;  // most trees set none: no walk to the root for every job
  for (BudgetId b = leaf; b.value() > 0; b = tree_.parent(b)) {
    auto lim = tree_.limit(b);
    if (lim && fs_->alloc(b) + gpus > *lim + 1e-9) {
      *at = b;
      return false;
    }
  }
  return true;
}

bool Cycle::MayUseReserved(const JobSpec& j) const {
  if (!j.funded()) return true;  // preemptible at any time
  // A session's lease does not hold against the reservation whose GPUs it uses (TryPreempt).
  if (s_.now + j.min_runtime <= reservation_due_) return true;
  return j.max_runtime && s_.now + *j.max_runtime <= reservation_due_;
}

bool Cycle::HeadroomAllows(const JobSpec& j) const {
  // The arithmetic first: it settles most calls without comparing class names.
  const int64_t left = cs_.total_free() - j.gpus.value();
  return left >= RequiredFree() || MayTakeHeadroom(j, left);
}

void Cycle::Start(const PendingJob& p, std::vector<Slice> slices, ReasonCode code) {
  cs_.Take(slices, p.spec->funded());
  if (p.spec->funded()) AddAlloc(p.spec->budget, p.spec->gpus.value());
  if (IsQuick(*p.spec)) {
    quick_running_ += p.spec->gpus.value();
    --quick_unstarted_;
  }
  out_.starts.push_back(StartDecision{p.spec->id, std::move(slices), Reason{code, {}, {}, 0, 0}});
}

bool Cycle::TryFree(const PendingJob& p, const Shape& shape, bool respect_headroom,
                    ReasonCode code) {
  if (respect_headroom && !HeadroomAllows(*p.spec)) return false;
  if (auto slices = cs_.Find(shape, false, p.spec->funded())) {
    Start(p, std::move(*slices), code);
    return true;
  }
  if (reservations_ > 0 && MayUseReserved(*p.spec)) {
    if (auto slices = cs_.Find(shape, true, p.spec->funded())) {
      Start(p, std::move(*slices), ReasonCode::kStartBackfill);
      return true;
    }
  }
  return false;
}

const std::vector<int32_t>& Cycle::CouldHost(int32_t g) {
  const auto i = static_cast<size_t>(g);
  if (could_host_.size() <= i) could_host_.resize(i + 1);
  if (!could_host_[i]) {
    std::vector<int32_t>& nodes = could_host_[i].emplace();
    for (size_t n = 0; n < cs_.size(); ++n) {
      const NodeId id(static_cast<int32_t>(n));
      if (cs_.ready(id) && cs_.free(id) + may_leave_[n] >= g) nodes.push_back(id.value());
    }
  }
  return *could_host_[i];
}

bool Cycle::MayStop(const JobSpec& j, bool holder, size_t i, double fair_gpus,
                    std::optional<FairShare::Preemptor>& fair, bool protection_over,
                    bool cooldown_over) {
  const Facts& f = facts_[i];
  if (!f.funded) return true;
  if (s_.now < f.contract_until && !protection_over) return false;  // the contract
  const RunningJob& r = s_.running[i];
  const bool yields = holder && YieldsToReservation(j, r);
  // A session's lease does not hold on the reserved GPUs it was let onto (MayUseReserved).
  if (yields && r.backfilled) return true;
  if (s_.now < f.protected_until && !protection_over) return false;  // a session's lease
  if (yields) return true;
  if (s_.now < SparedUntil(r) && !protection_over) return false;
  // Under quick_first quick jobs come before other funded work both ways: a quick job may stop
  // non-quick work of a budget over its share, and non-quick work does not stop a quick job for
  // fair share. Otherwise the stopped work, back in the queue with its budget now below the
  // quick job's, took the GPUs back by fair share, and the quick job took them again: a
  // generated scenario's debug and batch jobs stopped each other 28 times (session 24).
  if (cfg_.quick_first && IsQuick(*r.spec) && !IsQuick(j)) return false;
  // Work of the job's own budget: fair share never stops it (the GPUs would stay with the
  // budget); under quick_stops_own a quick job may, and only non-quick work.
  if (cfg_.quick_stops_own && f.budget == j.budget) return IsQuick(j) && !IsQuick(*r.spec);
  if (!cooldown_over && TakesBack(j.budget, f.budget)) return false;
  if (!fair) fair.emplace(*fs_, j.budget, fair_gpus, fair_scratch_);
  if (fair->MayPreempt(f.budget, f.gpus)) return GangStopKeepsSides(j, r);
  return cfg_.quick_first && IsQuick(j) && !IsQuick(*r.spec) &&
         fs_->VictimSideOverShare(j.budget, r.spec->budget);
}

bool Cycle::TryPreempt(const PendingJob& p, const Shape& shape) {
  // Planning is O(nodes); a bounded number per cycle keeps the cycle fast on big queues.
  if (++preempt_attempts_ > max_plans_) return false;
  planned_ = true;
  const JobSpec& j = *p.spec;
  // The reservation goes to the first job in fair-share order that can neither start nor
  // preempt: while none is held, this job is that one, and backfilled work yields to it.
  // Waiting for that work to end instead would leave the reservation due, its GPUs held, until it
  // did.
  const bool holder = reservations_ < cfg_.max_reservations;
  const double g = j.gpus.value();
  std::optional<FairShare::Preemptor> fair;
  auto eligible = [&](size_t i) { return MayStop(j, holder, i, g, fair); };
  auto plan = Plan(j, shape, eligible, false);
  if (plan && plan->victims.empty() && plan->soon.empty() && !HeadroomAllows(j))
    plan = PlanPastHeadroom(j, shape);
  if (!plan || (plan->victims.empty() && plan->soon.empty())) return false;
  // The victims' GPUs come free in a later cycle, where the debug headroom still holds. If they
  // would only refill it, stopping funded work serves not this job but the next debug job to
  // start there, and that job, just started and so the cheapest victim, would be stopped next:
  // on philly-dev, with the users' resubmissions modelled, 237k debug runs were stopped that
  // way, most within a minute of their start. Unfunded work may go (it refills the headroom,
  // which is what debug jobs wait for), and so may work the reservation's job takes the
  // headroom's GPUs for (Process).
  if (Futile(j, *plan, holder)) return false;
  Seconds latest = s_.now;
  // What the job needs on each of its nodes beyond the free GPUs there and the spare ones it
  // waits for: the victims' GPUs give that, and the rest of theirs is spare for later preemptors.
  std::map<int32_t, int64_t> from_victims;
  if (cfg_.wait_for_spare)
    for (const Slice& sl : plan->slices)
      from_victims[sl.node.value()] +=
          sl.gpus.value() - std::min(sl.gpus.value(), cs_.free(sl.node));
  for (const Slice& w : plan->soon) {  // none unless wait_for_spare
    Soon& sn = soon_[static_cast<size_t>(w.node.value())];
    sn.gpus -= w.gpus.value();
    from_victims[w.node.value()] -= w.gpus.value();
    latest = std::max(latest, sn.at);
  }
  // Each stop's reason as the plan judged it, before any victim's GPUs leave the keys.
  for (size_t v : plan->victims) {
    const RunningJob& r = s_.running[v];
    ReasonCode code = ReasonCode::kPreemptForFunded;
    // A funded victim taken outside the fair-share order (for a due reservation, by a quick job
    // under quick_first, or by a quick job of its own budget under quick_stops_own) has a budget
    // the walk may reach before this job's once it has gone: it would take its GPUs back and be
    // stopped again, round after round. So would a quick victim under quick_first, whose walk
    // places quick jobs of every budget first. So would any victim with large-job holds on, which
    // may keep this job back behind its budget's blocked large job once the victim has gone (soak
    // round 655, under the server's loop: thousands of rounds), and so would a victim that got
    // its GPUs by a due reservation's stop and is large enough that its own reservation preempts
    // (reservation_preempts_gpus): this job's budget's earlier gang may take the GPUs first, and
    // the victim's reservation take them back once that gang's protection ends (soak round 796,
    // every tick: a 1-GPU job stopped a 16-GPU gang 838 times and never started). Such GPUs are
    // held for this job (StopDecision::hold_for). Holding the GPUs of every fair-share stop with
    // that option on cost it 1.5 points of entitlement on lab-month at 257 GPUs (seeds 1-3).
    bool hold = false;
    if (r.spec->funded()) {
      code = holder && (r.backfilled || YieldsToReservation(j, r)) ? ReasonCode::kPreemptReservation
             : cfg_.quick_stops_own && r.spec->budget == j.budget  ? ReasonCode::kPreemptOwnQuick
                                                                   : ReasonCode::kPreemptFairShare;
      hold = (cfg_.quick_first && IsQuick(*r.spec)) || cfg_.large_job_gpus > 0 ||
             (r.took_freed && PreemptsForReservation(r.gpus().value())) ||
             !fs_->MayPreempt(j.budget, g, r.spec->budget, r.gpus().value());
    }
    out_.stops.push_back(
        StopDecision{r.spec->id, Reason{code, j.id, j.budget, 0, 0}, j.id, false, hold});
    if (cfg_.take_back_cooldown > Seconds(0) && r.spec->funded() && r.spec->budget != j.budget) {
      TakenChanged();
      taken_.insert_or_assign({r.spec->budget.value(), j.budget.value()},
                              s_.now + cfg_.take_back_cooldown);
    }
    stopping_[v] = true;
    latest = std::max(latest, s_.now + r.spec->grace);
  }
  for (size_t v : plan->victims) {
    const RunningJob& r = s_.running[v];
    if (r.spec->funded()) AddAlloc(r.spec->budget, -r.gpus().value());
    if (!cfg_.wait_for_spare) continue;
    AddSpareOf(r, s_.now + r.spec->grace, false, [&](const Slice& sl) -> int64_t* {
      const auto it = from_victims.find(sl.node.value());
      return it == from_victims.end() ? nullptr : &it->second;
    });
  }
  // The job's GPUs are spoken for: count them for its budget, keep them from others this cycle.
  AddAlloc(j.budget, g);
  cs_.HoldFree(plan->slices);
  Note(p, Reason{ReasonCode::kWaitPreemption, {}, {}, latest.value(), 0}, latest);
  return true;
}

bool Cycle::Futile(const JobSpec& j, const PreemptionPlan& plan, bool holder) const {
  if (IsQuick(j)) return false;
  int64_t freed = 0, quick_freed = 0, quick_gone = 0;
  bool funded = false;
  for (size_t v : plan.victims) {
    const RunningJob& r = s_.running[v];
    const int64_t g = r.gpus().value();
    freed += g;
    if (IsQuick(*r.spec)) {
      quick_freed += g;
      if (!r.spec->resumable) quick_gone += g;
    }
    funded = funded || r.spec->funded();
  }
  if (!funded) return false;
  const int64_t required = RequiredFree(quick_freed, quick_gone);
  if (holder && j.gpus.value() > required) return false;
  // A session may start on the headroom's idle GPUs (HeadroomAllows), but not stop funded work
  // to make some: it counts as long work here.
  return cs_.total_free() + freed - j.gpus.value() < required;
}

std::optional<PreemptionPlan> Cycle::PlanPastHeadroom(const JobSpec& j, const Shape& shape) {
  // CouldHost's nodes: counting no free GPU, the plan passes over those whose may_leave_ alone
  // falls short of a slice.
  const std::vector<int32_t>& visit = CouldHost(shape.per_node);
  if (visit.size() < static_cast<size_t>(std::max(1, shape.count))) return std::nullopt;
  // Unfunded work may always be stopped (MayStop); its facts are packed, its spec a cache miss.
  auto unfunded = [&](size_t i) { return !facts_[i].funded; };
  return PlanPreemption(shape, j.gpus, cs_, s_.running, on_node_, stopping_, unfunded, s_.now,
                        MayUseReserved(j), may_leave_, visit, soon_, slice_gpus_, &plan_scratch_,
                        /*count_free=*/false);
}

std::optional<PreemptionPlan> Cycle::Plan(const JobSpec& j, const Shape& shape,
                                          FunctionRef<bool(size_t)> eligible,
                                          bool protection_over) {
  if (protection_over)  // any node may host a slice: may_leave_ and CouldHost do not bound it
    return PlanPreemption(shape, j.gpus, cs_, s_.running, on_node_, stopping_, eligible, s_.now,
                          MayUseReserved(j), {}, {}, soon_, slice_gpus_, &plan_scratch_);
  // Every slice but an uneven gang's last is shape.per_node GPUs, each on a node of its own:
  // fewer nodes to host one than the gang has such slices, no plan.
  const std::vector<int32_t>& visit = CouldHost(shape.per_node);
  if (visit.size() < static_cast<size_t>(std::max(1, shape.count))) return std::nullopt;
  return PlanPreemption(shape, j.gpus, cs_, s_.running, on_node_, stopping_, eligible, s_.now,
                        MayUseReserved(j), may_leave_, visit, soon_, slice_gpus_, &plan_scratch_);
}

Cycle::Standing Cycle::WhyBelowShareWaits(const JobSpec& j, const Shape& shape) {
  const bool holder = reservations_ < cfg_.max_reservations;
  auto found = [&](bool protection_over, bool cooldown_over) -> std::optional<PreemptionPlan> {
    std::optional<FairShare::Preemptor> fair;
    auto eligible = [&](size_t i) {
      return MayStop(j, holder, i, 0.0, fair, protection_over, cooldown_over);
    };
    auto plan = Plan(j, shape, eligible, protection_over);
    if (!plan || plan->victims.empty() || Futile(j, *plan, holder)) return std::nullopt;
    return plan;
  };
  if (found(false, false)) return {kWouldPassVictims};
  if (found(true, false)) return {kWaitsForProtection, EstimatedStartPastProtections(j, shape)};
  // Protection may hold some of that work too; the cool-down is what still holds once it ends.
  if (!taken_.empty())
    if (const auto plan = found(true, true))
      return {kTakeBackCooldown, EstimatedStartPastCooldown(j, *plan)};
  return {kTooLittleToStop};
}

Seconds Cycle::EstimatedStartPastCooldown(const JobSpec& j, const PreemptionPlan& plan) const {
  Seconds eta = s_.now;
  for (size_t v : plan.victims) {
    const RunningJob& r = s_.running[v];
    Seconds t = s_.now;
    if (facts_[v].funded) {
      const auto lapse = taken_.find({j.budget.value(), facts_[v].budget.value()});
      if (lapse != taken_.end()) t = lapse->second;
      t = std::max({t, ReleaseBound(r), SparedUntil(r)});
    }
    eta = std::max(eta, t + r.spec->grace);
  }
  return eta;
}

Cycle::Standing Cycle::BelowShareStanding(const JobSpec& j, const Shape& shape) {
  const auto at = std::make_tuple(j.budget.value(), shape.per_node, shape.count, shape.rest,
                                  IsQuick(j), MayUseReserved(j));
  if (!planned_) {
    if (auto it = standing_.find(at); it != standing_.end()) return it->second;
    // A shape that failed once planning was cut short may have failed without a plan, and then
    // what keeps it waiting is not known: a plan counting its own GPUs might have found victims.
    if (preempt_attempts_ > max_plans_ || ++explain_plans_ > max_plans_) return {};
  }
  const Standing standing = WhyBelowShareWaits(j, shape);
  standing_.insert_or_assign(at, standing);
  return standing;
}

Seconds Cycle::EstimatedStartPastProtections(const JobSpec& j, const Shape& shape) {
  const double g = j.gpus.value();
  std::optional<FairShare::Preemptor> fair;
  return WhenFits(shape,
                  [&](size_t i) {
                    const RunningJob& r = s_.running[i];
                    if (stopping_[i]) return std::max(s_.now, r.stop_at);
                    if (!r.spec->funded()) return s_.now + r.spec->grace;
                    const Seconds bound =
                        MayStop(j, false, i, g, fair, true) ? ReleaseBound(r) : kNever;
                    if (bound != kNever)
                      return std::max({s_.now, bound, SparedUntil(r)}) + r.spec->grace;
                    return KnownEnd(r);
                  })
      .due;
}

ReservationPlan Cycle::WhenFits(const Shape& shape, FunctionRef<Seconds(size_t)> release_at) {
  return ChooseReservation(shape, cs_, [&](size_t n) {
    const NodeId id(static_cast<int32_t>(n));
    // With PolicyConfig::max_reservations > 1: a node an earlier reservation of this cycle counts
    // on, its free GPUs and the releases to come, is that job's until it starts.
    if (!cs_.ready(id) || (!in_reservation_.empty() && in_reservation_[n])) return kNever;
    if (cs_.free(id) >= shape.per_node) return s_.now;  // no need to list its releases
    std::vector<Release>& rel = releases_;
    rel.clear();
    for (size_t i : on_node_[n])
      if (const Seconds t = release_at(i); t != kNever) rel.push_back(Release{t, GpusOn(i, id)});
    std::sort(rel.begin(), rel.end());
    return FirstTimeWith(cs_.free(id), shape.per_node, rel, s_.now);
  });
}

bool Cycle::TryReserve(const PendingJob& p, const Shape& shape) {
  if (reservations_ >= cfg_.max_reservations) return false;
  const JobSpec& j = *p.spec;
  const double g = j.gpus.value();
  std::optional<FairShare::Preemptor> fair;  // made when first asked
  auto fair_share_allows = [&](size_t i, const RunningJob& r) {
    if (TakesBack(j.budget, facts_[i].budget)) return false;
    if (!fair) fair.emplace(*fs_, j.budget, g, fair_scratch_);
    return fair->MayPreempt(facts_[i].budget, facts_[i].gpus) && GangStopKeepsSides(j, r);
  };
  // When each node has the gang's GPUs for this job, counting free GPUs, jobs that end
  // (max_runtime), and jobs that become preemptible for it (protection ends).
  const ReservationPlan plan = WhenFits(shape, [&](size_t i) {
    const RunningJob& r = s_.running[i];
    if (stopping_[i]) return std::max(s_.now, r.stop_at);
    if (!r.spec->funded()) return s_.now;
    const bool yields = YieldsToReservation(j, r);
    if (yields && r.backfilled)  // its lease does not hold here (TryPreempt)
      return std::max(s_.now, r.contract_until());
    if (yields || fair_share_allows(i, r)) {
      const Seconds t = std::max(s_.now, ReleaseBound(r));
      return yields ? t : std::max(t, SparedUntil(r));
    }
    return KnownEnd(r);
  });
  if (plan.due == kNever) return false;
  cs_.Reserve(plan.slices);
  if (in_reservation_.empty()) in_reservation_.assign(s_.nodes.size(), 0);  // the cycle's first
  for (const Slice& sl : plan.slices) in_reservation_[static_cast<size_t>(sl.node.value())] = 1;
  ++reservations_;
  reservation_due_ = std::min(reservation_due_, plan.due);
  out_.reservations.push_back(ReservationDecision{j.id, plan.due, plan.slices});
  Note(p, Reason{ReasonCode::kWaitReservation, {}, {}, plan.due.value(), 0}, plan.due);
  return true;
}

bool Cycle::HeldByHeadroomOnly(const PendingJob& p, const Shape& shape) {
  if (reservations_ >= cfg_.max_reservations || HeadroomAllows(*p.spec) ||
      !cs_.Find(shape, false, p.spec->funded()))
    return false;
  ++reservations_;
  Note(p,
       Reason{
           ReasonCode::kWaitHeadroom, {}, p.spec->budget, p.spec->gpus.value(), cs_.total_free()});
  return true;
}

bool Cycle::Process(const PendingJob& p, const Shape& shape) {
  const JobSpec& j = *p.spec;
  planned_ = false;
  if (auto it = waiting_on_victims_.find(j.id.value()); it != waiting_on_victims_.end()) {
    Note(p, Reason{ReasonCode::kWaitPreemption, {}, {}, it->second.value(), 0}, it->second);
    return true;
  }
  BudgetId at{0};
  if (!WithinLimits(j.budget, j.gpus.value(), &at)) {
    Note(p, Reason{ReasonCode::kWaitBudgetLimit, {}, at, *tree_.limit(at), 0});
    return false;
  }
  FailureCache& fc = failed_[Ix(j.budget)];
  // A session on the headroom may start where a job of its shape (long work, behind the leaf's
  // quick jobs) failed; when it fails, so would that job, so the cache still learns from it.
  if (!fc.Known(shape) || (SessionOnHeadroom(j) && !IsQuick(j))) {
    if (TryFree(p, shape, true)) return true;
    if (TryPreempt(p, shape)) return true;
    // The headroom is there so debug jobs need not wait for a victim's grace period. A large top
    // blocked job may still use it: otherwise it would reserve GPUs and idle far more of them.
    if (reservations_ < cfg_.max_reservations && j.gpus.value() > RequiredFree() &&
        TryFree(p, shape, false))
      return true;
    if (HeldByHeadroomOnly(p, shape)) return true;
    if (TryReserve(p, shape)) return true;
    fc.Add(shape);
  }
  if (!s_.explain) return false;
  // Why it waits, in the order a user would ask. The key and each placement are worked out once:
  // this runs for every waiting job in every explained cycle.
  const double key = fs_->Key(j.budget);
  if (key >= cfg_.preempt_below && key < 1.0) {
    // Below its share but not below --preempt-below: say that this, not a lack of victims, is
    // why it does not preempt.
    Note(p, Reason{ReasonCode::kWaitPreemptBelow,
                   {},
                   j.budget,
                   std::llround(key * 1000),
                   std::llround(cfg_.preempt_below * 1000)});
    return false;
  }
  const bool fits_free = cs_.Find(shape, false, j.funded()).has_value();
  if (fits_free && !HeadroomAllows(j)) {
    // GPUs are free where the job fits, but they are the debug headroom: say so, not "none
    // preemptible", or the user sees free GPUs and no reason.
    Note(p, Reason{ReasonCode::kWaitHeadroom, {}, j.budget, j.gpus.value(), cs_.total_free()});
    return false;
  }
  const bool fits_reserved =
      fits_free || (reservations_ > 0 && cs_.Find(shape, true, j.funded()).has_value());
  if (!fits_free && fits_reserved) {
    // It fits on reserved GPUs only, which it may not use (MayUseReserved): name the holder of
    // the reservation due first.
    JobId holder{0};
    for (const ReservationDecision& r : out_.reservations)
      if (r.due == reservation_due_) {
        holder = r.job;
        break;
      }
    Note(p, Reason{ReasonCode::kWaitReserved, holder, j.budget, j.gpus.value(), cs_.total_free(),
                   reservation_due_.value()});
    return false;
  }
  if (!fits_reserved && cs_.total_free() >= j.gpus.value()) {
    // Enough GPUs are free, reserved ones too, just not where its shape fits: say so, or the user
    // sees free GPUs and "none preemptible".
    Note(p, Reason{ReasonCode::kWaitShape,
                   {},
                   j.budget,
                   j.gpus.value(),
                   cs_.total_free(),
                   shape.per_node});
    return false;
  }
  // Below its share, a job that planned and found nothing is kept back by its own size, by
  // protection, or by too little work it may stop. One or two more plans tell which (explained
  // cycles only, and only for jobs within the cycle's bound on plans): a gang's user learns that
  // it waits for GPUs to come free, not for work to pass its protection.
  const Standing standing = key >= 1.0 ? Standing{kShareServed} : BelowShareStanding(j, shape);
  Note(
      p,
      Reason{
          ReasonCode::kWaitGpus, {}, j.budget, j.gpus.value(), cs_.total_free(), standing.standing},
      standing.eta);
  return false;
}

// A job whose victims have all gone takes the GPUs they freed first (PendingJob::freed_for, set
// for stops outside the fair-share order). Otherwise the victims' budget, which the walk may
// reach first, would take them back, and the job would preempt it again once that work's
// protection ended, without end.
std::vector<JobId> Cycle::PlaceFreedFor() {
  std::vector<JobId> placed;
  for (const PendingJob& p : s_.pending_funded) {
    if (!p.spec || !p.freed_for || waiting_on_victims_.count(p.spec->id.value())) continue;
    const JobSpec& j = *p.spec;
    BudgetId at{0};
    if (!WithinLimits(j.budget, j.gpus.value(), &at)) continue;
    // The debug headroom still holds: while it is short, the GPUs refill it, and the job goes on
    // to the walk (as any job that the headroom keeps from free GPUs). Not under quick_first: its
    // walk places the debug jobs first, so a debug victim, requeued and waiting, grew the headroom
    // that kept the job from the GPUs, then took them back itself, and the job stopped it again
    // once its protection ended, thousands of times (soak round 153).
    if (!TryFree(p, cs_.ShapeOf(j.gpus, j.gpus_per_node), !cfg_.quick_first,
                 ReasonCode::kStartAfterPreempt))
      continue;
    placed.push_back(j.id);
    if (UsesHeadroom(j)) --headroom_left_;
  }
  std::sort(placed.begin(), placed.end());
  return placed;
}

void Cycle::PlaceFunded() {
  const std::vector<JobId> placed = PlaceFreedFor();
  auto started = [&](const JobSpec& j) {
    return !placed.empty() && std::binary_search(placed.begin(), placed.end(), j.id);
  };
  // Pending funded jobs per leaf, each leaf in (priority, queued, id) order.
  const size_t nb = tree_.size();
  LeafQueues queue(nb);
  {
    std::vector<size_t> count(nb, 0);
    for (const Queued& q : queued_) ++count[Ix(q.budget)];
    for (size_t b = 0; b < nb; ++b) queue[b].reserve(count[b]);
  }
  for (const Queued& q : queued_)
    if (!started(*q.p->spec)) queue[Ix(q.budget)].push_back(q);
  // Jobs per subtree for the first walk, and its long work held for the second walk (only with
  // quick_first: the first serves quick jobs alone).
  std::vector<int64_t> left(nb, 0), later(nb, 0);
  std::vector<size_t> cursor(nb, 0);
  // Per leaf: the large job its later non-quick jobs wait behind (cfg_.large_job_gpus).
  std::vector<const JobSpec*> held_by(nb, nullptr);
  for (size_t b = nb; b-- > 1;) {
    auto& q = queue[b];
    // Already in (queued_since, id) order. A user's quick (debug) jobs come before their own
    // long work, which would otherwise hold them up for hours; then the user's own priority.
    // Both passes keep the (queued_since, id) order within equal keys, and are linear when no
    // one set a priority: this runs for every leaf in every cycle.
    auto quick = [](const Queued& x) { return x.quick; };
    // Usually already so (no quick job, or only quick ones): stable_partition would allocate.
    if (!std::is_partitioned(q.begin(), q.end(), quick))
      std::stable_partition(q.begin(), q.end(), quick);
    const auto quick_end = std::partition_point(q.begin(), q.end(), quick);
    const bool any_priority =
        std::any_of(q.begin(), q.end(), [](const Queued& x) { return x.priority != 0; });
    if (any_priority) {
      auto by_priority = [](const Queued& x, const Queued& y) { return x.priority > y.priority; };
      std::stable_sort(q.begin(), quick_end, by_priority);
      std::stable_sort(quick_end, q.end(), by_priority);
    }
    // With quick_first, the first walk sees only the leaf's quick jobs (its queue's head).
    const int64_t held = cfg_.quick_first ? q.end() - quick_end : 0;
    later[b] += held;
    left[b] += static_cast<int64_t>(q.size()) - held;
    const size_t parent = Ix(tree_.parent(BudgetId(static_cast<int32_t>(b))));
    left[parent] += left[b];
    later[parent] += later[b];
  }
  Walk(queue, left, cursor, held_by);
  if (!cfg_.quick_first) return;
  for (size_t b = 0; b < nb; ++b) left[b] += later[b];
  Walk(queue, left, cursor, held_by);
}

void Cycle::Walk(const LeafQueues& queue, std::vector<int64_t>& left, std::vector<size_t>& cursor,
                 std::vector<const JobSpec*>& held_by) {
  // Depth-first by key: at each level, the child whose usage lags its due the most. Keys move
  // only when a job gets GPUs; until then the walk would end at the same leaf again, so the
  // leaf's next job is taken without it (most jobs of a long queue fail one after another).
  BudgetId b = kRootBudget;
  bool walk = true;
  // A job known to fail has no side effect unless reasons are wanted or a large job holds back
  // its leaf.
  const bool skip_known = !s_.explain && cfg_.large_job_gpus == 0;
  // `n` jobs of leaf b were taken: the counts of b's subtrees move.
  auto taken = [&](int64_t n) {
    if (n > 0)
      for (BudgetId c = b; c.value() >= 0; c = tree_.parent(c)) left[Ix(c)] -= n;
  };
  while (left[0] > 0) {
    if (walk) b = kRootBudget;
    while (walk && !tree_.is_leaf(b)) {
      BudgetId best{-1};
      double best_key = 0;
      for (BudgetId c : tree_.children(b)) {
        if (left[Ix(c)] == 0) continue;
        const double k = fs_->Key(c);
        if (best.value() < 0 || k < best_key) {
          best = c;
          best_key = k;
        }
      }
      assert(best.value() >= 0);
      b = best;
    }
    if (skip_known) {
      // Jobs whose shape already failed at this leaf, as most of a long queue does: passed over
      // in a run, their subtrees' counts moved once, as one by one they would fail without a
      // side effect (keys unmoved, so the walk would stay at this leaf).
      const std::vector<Queued>& lq = queue[Ix(b)];
      size_t& cur = cursor[Ix(b)];
      int64_t skipped = 0;
      bool done = false;
      // Not a session that may use the headroom: a job of its shape failed without it.
      while (skipped < left[Ix(b)] && failed_[Ix(b)].Known(lq[cur].shape) &&
             lq[cur].headroom == lq[cur].quick) {
        if (lq[cur].headroom) --headroom_left_;
        ++cur;
        ++skipped;
        if (NothingMoreCanStart()) {
          done = true;
          break;
        }
      }
      taken(skipped);
      if (done) break;
      if (left[Ix(b)] == 0) {
        walk = true;
        continue;
      }
    }
    const Queued& q = queue[Ix(b)][cursor[Ix(b)]++];
    const PendingJob& p = *q.p;
    taken(1);
    const int64_t moves = alloc_moves_;
    if (q.headroom) --headroom_left_;
    // A leaf's quick jobs come first, so every job after a held one is long work.
    if (const JobSpec* large = held_by[Ix(b)]) {
      Note(p, Reason{ReasonCode::kWaitLargeJob, large->id, b, large->gpus.value(), 0});
    } else if (!Process(p, q.shape) && cfg_.large_job_gpus > 0 && !q.quick &&
               p.spec->gpus.value() >= cfg_.large_job_gpus) {
      held_by[Ix(b)] = p.spec;
    }
    walk = alloc_moves_ != moves || left[Ix(b)] == 0;
    if (!s_.explain && NothingMoreCanStart()) break;
  }
}

bool Cycle::NothingMoreCanStart() const {
  if (preempt_attempts_ < max_plans_) return false;
  if (cs_.total_free() == 0) return true;
  // Only the debug headroom is free: long work may not take it, no debug job or session that may
  // is left to reach, and the one job that could take it anyway (the reservation's) has been
  // chosen.
  return headroom_left_ == 0 && reservations_ >= cfg_.max_reservations &&
         cs_.total_free() <= RequiredFree();
}

void Cycle::PlaceUnfunded() {
  // Unfunded work is served first come, first served; a full cluster ends the pass early.
  FailureCache& fc = failed_.back();
  // Jobs of up to `room` GPUs leave the headroom free (HeadroomAllows): most of a queue tens of
  // thousands long is settled by its size alone, without working out the headroom for each job.
  // Only a start moves it.
  int64_t room = cs_.total_free() - RequiredFree();
  for (const PendingJob& pj : s_.pending_unfunded) {
    if (!pj.spec) continue;
    const PendingJob* p = &pj;
    if (!s_.explain && (room <= 0 || fc.single <= 1)) break;
    const int64_t gpus = p->spec->gpus.value();
    const bool fits_headroom = gpus <= room || MayTakeHeadroom(*p->spec, cs_.total_free() - gpus) ||
                               HeadroomAloneBars(gpus);
    const Shape shape =
        fits_headroom ? cs_.ShapeOf(p->spec->gpus, p->spec->gpus_per_node) : Shape{};
    if (!fits_headroom || fc.Known(shape)) {
      Note(*p, Reason{ReasonCode::kWaitUnfunded, {}, {}, p->spec->gpus.value(), cs_.total_free()});
      continue;
    }
    // Unfunded work stays off GPUs a funded job will soon need: it would only be preempted
    // again within a cycle or two, wasting its grace period and its restart.
    const bool lend = s_.now + cfg_.reservation_lend_margin <= reservation_due_;
    if (auto slices = cs_.Find(shape, lend, false)) {
      Start(*p, std::move(*slices), ReasonCode::kStartFree);
      room = cs_.total_free() - RequiredFree();
    } else {
      fc.Add(shape);
      Note(*p, Reason{ReasonCode::kWaitUnfunded, {}, {}, p->spec->gpus.value(), cs_.total_free()});
    }
  }
}

Decisions Cycle::Run() {
  Setup();
  Housekeeping(s_, HousekeepingOptions{true}, stopping_, out_);
  PlaceFunded();
  PlaceUnfunded();
  return std::move(out_);
}

}  // namespace

Decisions HourglassPolicy::Cycle(const Snapshot& snap) const {
  assert(snap.tree && snap.delivered && snap.owed);
  class Cycle c(config_, snap);
  return c.Run();
}

}  // namespace hg
