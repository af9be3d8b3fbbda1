#include "core/hourglass_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/policy_test_world.h"

namespace hg {
namespace {

BudgetTree MakeTree(const std::vector<BudgetSpec>& specs) {
  auto t = BudgetTree::Build(specs);
  EXPECT_TRUE(t.has_value()) << t.error().ToString();
  return std::move(*t);
}

BudgetSpec Top(std::string name, std::optional<int32_t> limit = std::nullopt) {
  return BudgetSpec{std::move(name), "", 1.0, limit, {}, 0};
}
BudgetSpec Child(std::string name, std::string parent) {
  return BudgetSpec{std::move(name), std::move(parent), 1.0, {}, {}, 0};
}

// A hand-built cluster, budget tree, ledgers and queue, and one policy cycle over them.
class World : public policytest::PolicyWorld {
 public:
  explicit World(const std::vector<BudgetSpec>& specs) : PolicyWorld(MakeTree(specs)) {}

  NodeId AddNode(int32_t gpus = 8, std::string block = "A") {
    return PolicyWorld::AddNode(gpus, std::move(block), NodeState::kReady,
                                "n" + std::to_string(node_count()));
  }

  // A job charged to `budget` (a name; empty: unfunded).
  JobSpec& NewJob(int32_t gpus, std::string_view budget, Seconds min_runtime = Hours(1),
                  std::string job_class = "batch") {
    JobSpec s;
    s.gpus = Gpus(gpus);
    s.budget = budget.empty() ? kUnfunded : tree().ChargeTarget(Leaf(budget));
    s.min_runtime = min_runtime;
    s.job_class = std::move(job_class);
    return AddJob(std::move(s));
  }
  // GPU-seconds delivered to and owed to a budget over [0, until).
  void History(std::string_view budget, Seconds until, double delivered_rate, double owed_rate) {
    const BudgetId b = tree().ChargeTarget(Leaf(budget));
    delivered().Charge(b, Seconds(0), until, delivered_rate);
    owed().Charge(b, Seconds(0), until, owed_rate);
  }

  Decisions Cycle(Seconds now, bool explain = true, const PolicyConfig& cfg = {}) {
    SortQueues();
    return HourglassPolicy(cfg).Cycle(Snap(now, explain));
  }

  // A job started at 0 that is leaving for `for_job`, killed at the latest at `stop_at`.
  RunningJob& RunLeaving(const JobSpec& j, std::vector<Slice> placement, Seconds stop_at,
                         JobId for_job) {
    RunningJob& r = Run(j, Seconds(0), std::move(placement));
    r.stopping = true;
    r.stop_at = stop_at;
    r.stop_for = for_job;
    return r;
  }

  BudgetId Leaf(std::string_view name) const { return tree().ChargeTarget(*tree().Find(name)); }
  BudgetId Id(std::string_view name) const { return *tree().Find(name); }
};

using policytest::ExpectOnlyAReservation;
using policytest::NoteFor;
using policytest::StartOf;
using policytest::StopOf;

TEST(HourglassPolicy, FundedJobPreemptsUnfundedWork) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  const JobSpec& u = w.NewJob(8, "");
  const JobSpec& guard = w.NewJob(8, "b", Hours(8));  // funded and protected: not a victim
  const JobSpec& f = w.NewJob(8, "a");
  w.Run(u, Seconds(90), {{n0, Gpus(8)}});
  w.Run(guard, Seconds(0), {{n1, Gpus(8)}});
  w.Pend(f, Seconds(95));
  const Decisions d = w.Cycle(Seconds(100));
  ASSERT_EQ(d.stops.size(), 1u);
  const StopDecision& s = d.stops[0];
  EXPECT_EQ(s.job, u.id);
  EXPECT_EQ(s.reason.code, ReasonCode::kPreemptForFunded);
  EXPECT_EQ(s.reason.other, f.id);
  EXPECT_EQ(s.for_job, f.id);
  EXPECT_FALSE(s.violates_contract);
  // The job waits out the victim's grace period rather than starting on busy GPUs.
  EXPECT_TRUE(d.starts.empty());
  const PendingNote* note = NoteFor(d, f.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemption);
  EXPECT_EQ(note->reason.a, 100 + u.grace.value());
  EXPECT_EQ(note->estimated_start, Seconds(100) + u.grace);
}

TEST(HourglassPolicy, FundedJobTakesFreeGpusBeforePreemptingAnyone) {
  World w({Top("a")});
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  const JobSpec& u = w.NewJob(8, "");
  const JobSpec& f = w.NewJob(8, "a");
  w.Run(u, Seconds(0), {{n0, Gpus(8)}});
  w.Pend(f, Seconds(5));
  const Decisions d = w.Cycle(Seconds(10));
  EXPECT_TRUE(d.stops.empty());
  const StartDecision* s = StartOf(d, f.id);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kStartFree);
  EXPECT_EQ(s->placement, (std::vector<Slice>{{n1, Gpus(8)}}));
}

// a is owed half of the 8 GPUs over two days but got nothing; b got all of them.
World Starved(Seconds v_started, double a_delivered_rate = 0.0) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  w.History("a", Days(2), a_delivered_rate, 4.0);
  w.History("b", Days(2), 8.0, 4.0);
  const JobSpec& v = w.NewJob(8, "b", Hours(1));
  w.Run(v, v_started, {{n0, Gpus(8)}});
  const JobSpec& p = w.NewJob(8, "a", Hours(1));
  w.Pend(p, Days(2) - Minutes(10));
  return w;
}
constexpr JobId kVictim{1};
constexpr JobId kStarved{2};

TEST(HourglassPolicy, ProtectedFundedJobIsNotPreemptedBeforeItsMinRuntime) {
  const Seconds now = Days(2);
  World w = Starved(now - Minutes(30));
  const Decisions d = w.Cycle(now);
  EXPECT_TRUE(d.stops.empty());
  EXPECT_TRUE(d.starts.empty());
  // It gets a reservation for when the victim's protection ends.
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].job, kStarved);
  EXPECT_EQ(d.reservations[0].due, now + Minutes(30));
  EXPECT_EQ(d.reservations[0].slices, (std::vector<Slice>{{NodeId(0), Gpus(8)}}));
  const PendingNote* note = NoteFor(d, kStarved);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitReservation);
  EXPECT_EQ(note->reason.a, (now + Minutes(30)).value());
}

TEST(HourglassPolicy, FundedJobPastProtectionIsPreemptedForABudgetFurtherBelowItsShare) {
  const Seconds now = Days(2);
  World w = Starved(now - Hours(2));
  const Decisions d = w.Cycle(now);
  ASSERT_EQ(d.stops.size(), 1u);
  const StopDecision& s = d.stops[0];
  EXPECT_EQ(s.job, kVictim);
  EXPECT_EQ(s.reason.code, ReasonCode::kPreemptFairShare);
  EXPECT_EQ(s.reason.other, kStarved);
  EXPECT_EQ(s.reason.budget, w.Leaf("a"));
  EXPECT_EQ(s.for_job, kStarved);
  EXPECT_FALSE(s.violates_contract);
  EXPECT_FALSE(s.hold_for);  // in fair-share order: the order gives it the GPUs anyway
  EXPECT_TRUE(d.starts.empty());
  const std::string why = Describe(s.reason, w.tree());
  EXPECT_NE(why.find("budget a "), std::string::npos) << why;
}

// b's job took GPUs from a 30 minutes ago; within a one-hour cool-down a does not stop b's work
// for fair share, though it is far below its share. Off, or an hour after that stop, or after a
// stop the other way, it does.
TEST(HourglassPolicy, WithACoolDownABudgetDoesNotTakeBackWhatWasJustTakenFromIt) {
  const Seconds now = Days(2);
  World w = Starved(now - Hours(2));
  PolicyConfig cool;
  cool.take_back_cooldown = Hours(1);
  auto stops = [&](const PolicyConfig& cfg, std::vector<RecentStop> recent) {
    Snapshot snap = w.Snap(now, true);
    snap.recent_stops = recent;
    return HourglassPolicy(cfg).Cycle(snap).stops.size();
  };
  const RecentStop b_took_from_a{now - Minutes(30), w.Leaf("a"), w.Leaf("b")};
  EXPECT_EQ(stops(cool, {b_took_from_a}), 0u);
  EXPECT_EQ(stops(PolicyConfig{}, {b_took_from_a}), 1u);
  EXPECT_EQ(stops(cool, {RecentStop{now - Hours(1), w.Leaf("a"), w.Leaf("b")}}), 1u);
  EXPECT_EQ(stops(cool, {RecentStop{now - Minutes(30), w.Leaf("b"), w.Leaf("a")}}), 1u);
  EXPECT_EQ(stops(cool, {}), 1u);
}

// With large-job holds on, the walk may keep the preemptor back behind its budget's blocked large
// job once the victim has gone, and the victim's budget would take the GPUs back: the stop holds
// them for the preemptor. Under the server's loop that alternation ran thousands of rounds (soak
// round 655, P5WithLargeJobHolds).
TEST(HourglassPolicy, WithLargeJobHoldsAFairShareStopHoldsTheFreedGpusForItsPreemptor) {
  const Seconds now = Days(2);
  World w = Starved(now - Hours(2));
  PolicyConfig cfg;
  cfg.large_job_gpus = 65;
  const Decisions d = w.Cycle(now, true, cfg);
  ASSERT_EQ(d.stops.size(), 1u);
  EXPECT_EQ(d.stops[0].job, kVictim);
  EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptFairShare);
  EXPECT_TRUE(d.stops[0].hold_for);
}

// So with reservations that preempt (contract case (c) for large jobs), for a victim that got its
// GPUs by such a stop and is large enough that its own reservation preempts: the preemptor's
// budget's earlier gang could take the freed GPUs first, and the victim's reservation take them
// back once that gang's protection ended, round after round (soak round 796: 838 rounds). Other
// victims' stops are held no more than by default
// (FundedJobPastProtectionIsPreemptedForABudget...).
TEST(HourglassPolicy, WithReservationsThatPreemptAStopOfAGangThatTookItsGpusSoHoldsThem) {
  struct Case {
    int32_t threshold;
    bool took_freed;
    bool held;
  };
  for (const Case c : {Case{8, true, true}, Case{9, true, false}, Case{8, false, false}}) {
    SCOPED_TRACE(::testing::Message() << c.threshold << " " << c.took_freed);
    const Seconds now = Days(2);
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    w.History("a", Days(2), 0.0, 4.0);
    w.History("b", Days(2), 8.0, 4.0);
    const JobSpec& victim = w.NewJob(8, "b", Hours(1));
    w.Run(victim, now - Hours(2), {{n0, Gpus(8)}}).took_freed = c.took_freed;
    const JobSpec& small = w.NewJob(1, "a", Hours(1));  // under either threshold: fair share
    w.Pend(small, now - Minutes(10));
    PolicyConfig cfg;
    cfg.reservation_preempts_gpus = c.threshold;
    const Decisions d = w.Cycle(now, true, cfg);
    ASSERT_EQ(d.stops.size(), 1u);
    EXPECT_EQ(d.stops[0].job, victim.id);
    EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptFairShare);
    EXPECT_EQ(d.stops[0].hold_for, c.held);
  }
}

// An 8-GPU interactive session of `budget` with a 30-minute lease and a 12 h max_runtime.
JobSpec& Session(World& w, std::string_view budget, Seconds min_runtime) {
  JobSpec& v = w.NewJob(8, budget, min_runtime, "interactive");
  v.lease = Minutes(30);
  v.max_runtime = Hours(12);
  return v;
}

// Starved, with the victim a session started two hours ago (past its 1 h min_runtime), whose
// user was last active at `active_at`.
World StarvedSession(Seconds now, Seconds active_at) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  w.History("a", Days(2), 0.0, 4.0);
  w.History("b", Days(2), 8.0, 4.0);
  w.Run(Session(w, "b", Hours(1)), now - Hours(2), {{n0, Gpus(8)}}).active_at = active_at;
  const JobSpec& p = w.NewJob(8, "a", Hours(1));
  w.Pend(p, now - Minutes(10));
  return w;
}

TEST(HourglassPolicy, ASessionInUseIsNotPreemptedPastItsMinRuntime) {
  const Seconds now = Days(2);
  World w = StarvedSession(now, now - Minutes(10));
  const Decisions d = w.Cycle(now);
  EXPECT_TRUE(d.stops.empty());
  // The reservation counts on the session's max_runtime, not on its lease running out: its
  // user may renew the lease until then.
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].job, kStarved);
  EXPECT_EQ(d.reservations[0].due, now + Hours(10));
}

TEST(HourglassPolicy, AParkedSessionLosesItsLeaseALeaseAfterItsUserLeft) {
  const Seconds now = Days(2);
  World w = StarvedSession(now, now - Minutes(31));
  const Decisions d = w.Cycle(now);
  const StopDecision* s = StopOf(d, kVictim);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kPreemptFairShare);
  EXPECT_FALSE(s->violates_contract);
}

TEST(HourglassPolicy, WithLeasesOffASessionIsProtectedByItsMinRuntimeAlone) {
  const Seconds now = Days(2);
  World w = StarvedSession(now, now - Minutes(10));
  PolicyConfig cfg;
  cfg.leases = false;
  const Decisions d = w.Cycle(now, true, cfg);
  const StopDecision* s = StopOf(d, kVictim);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kPreemptFairShare);
}

// a got 3 of the 4 GPUs it was owed over two days: its key is 0.5. By default it preempts b's job;
// with --preempt-below 0.4 it waits, and its note says why.
TEST(HourglassPolicy, PreemptBelowKeepsABudgetNotFarEnoughBelowWaitingAndSaysSo) {
  const Seconds now = Days(2);
  {
    World w = Starved(now - Hours(2), 3.0);
    const Decisions d = w.Cycle(now);
    ASSERT_EQ(d.stops.size(), 1u);
    EXPECT_EQ(d.stops[0].job, kVictim);
  }
  World w = Starved(now - Hours(2), 3.0);
  PolicyConfig cfg;
  cfg.preempt_below = 0.4;
  // a's key: 6 GPU-days delivered over 8 owed plus 4 GPUs owed now counted for a day = 6 / 12.
  cfg.live_weight = Hours(24);
  const Decisions d = w.Cycle(now, true, cfg);
  EXPECT_TRUE(d.stops.empty());
  EXPECT_TRUE(d.starts.empty());
  const PendingNote* note = NoteFor(d, kStarved);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemptBelow);
  EXPECT_EQ(note->reason.budget, w.Leaf("a"));
  EXPECT_EQ(note->reason.a, 500);
  EXPECT_EQ(note->reason.b, 400);
  const std::string why = Describe(note->reason, w.tree());
  EXPECT_NE(why.find("budget a has a fair-share key of 0.5 "), std::string::npos) << why;
  EXPECT_NE(why.find("only for keys under 0.4 (--preempt-below)"), std::string::npos) << why;
}

// Over two days a got a third more than it was owed, b three times as much, c nothing; b's and
// c's jobs run past their protection on the only two nodes. a's debug job preempts no one by
// default (a is over its share). With quick_first it takes b's job, never c's: c is below its
// share.
World DebugOfABudgetOverItsShare() {
  World w({Top("a"), Top("b"), Top("c")});
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.History("a", Days(2), 6.0, 4.0);
  w.History("b", Days(2), 12.0, 4.0);
  w.History("c", Days(2), 0.0, 8.0);
  const JobSpec& over = w.NewJob(8, "b", Hours(1));
  const JobSpec& under = w.NewJob(8, "c", Hours(1));
  w.Run(under, Days(2) - Hours(2), {{n0, Gpus(8)}});
  w.Run(over, Days(2) - Hours(2), {{n1, Gpus(8)}});
  const JobSpec& debug = w.NewJob(1, "a", Minutes(5), "debug");
  w.Pend(debug, Days(2) - Minutes(1));
  return w;
}

TEST(HourglassPolicy, QuickFirstLetsADebugJobTakeWorkOfABudgetOverItsShareOnly) {
  const Seconds now = Days(2);
  {
    World w = DebugOfABudgetOverItsShare();
    const Decisions d = w.Cycle(now);
    EXPECT_TRUE(d.stops.empty());
    const PendingNote* note = NoteFor(d, JobId(3));
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(note->reason.code, ReasonCode::kWaitGpus);
  }
  World w = DebugOfABudgetOverItsShare();
  PolicyConfig cfg;
  cfg.quick_first = true;
  const Decisions d = w.Cycle(now, true, cfg);
  ASSERT_EQ(d.stops.size(), 1u);
  EXPECT_EQ(d.stops[0].job, JobId(1));  // b's, not c's (job 2)
  EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptFairShare);
  EXPECT_EQ(d.stops[0].for_job, JobId(3));
  EXPECT_FALSE(d.stops[0].violates_contract);
}

// a is over its share and b below it; every GPU is held. On n0 a's batch job (past its
// protection) and a's debug job; on n1 a's young batch job (protected) and b's batch job (past
// its protection). A new job of a's finds nothing fair share lets it stop.
World OwnWorkOfABudgetOverItsShare(std::string pending_class) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.History("a", Days(2), 12.0, 4.0);
  w.History("b", Days(2), 0.0, 4.0);
  const Seconds now = Days(2);
  w.Run(w.NewJob(4, "a", Hours(1)), now - Hours(2), n0);                             // job 1
  w.Run(w.NewJob(4, "a", Minutes(5), "debug"), now - Hours(2), n0);                  // job 2
  w.Run(w.NewJob(4, "a", Hours(1)), now - Minutes(10), n1);                          // job 3
  w.Run(w.NewJob(4, "b", Hours(1)), now - Hours(2), n1);                             // job 4
  w.Pend(w.NewJob(1, "a", Minutes(5), std::move(pending_class)), now - Minutes(1));  // job 5
  return w;
}

TEST(HourglassPolicy, WithDebugStopsOwnADebugJobStopsItsOwnBudgetsUnprotectedLongWorkOnly) {
  const Seconds now = Days(2);
  {
    World w = OwnWorkOfABudgetOverItsShare("debug");
    const Decisions d = w.Cycle(now);
    EXPECT_TRUE(d.stops.empty());
    EXPECT_TRUE(d.starts.empty());
  }
  PolicyConfig cfg;
  cfg.quick_stops_own = true;
  World w = OwnWorkOfABudgetOverItsShare("debug");
  const Decisions d = w.Cycle(now, true, cfg);
  // Not a's debug job (2), not a's protected job (3), not b's (4): a's long work past its
  // protection (1), and its GPUs are held for the debug job.
  ASSERT_EQ(d.stops.size(), 1u);
  EXPECT_EQ(d.stops[0].job, JobId(1));
  EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptOwnQuick);
  EXPECT_EQ(d.stops[0].for_job, JobId(5));
  EXPECT_TRUE(d.stops[0].hold_for);
  EXPECT_FALSE(d.stops[0].violates_contract);
  const std::string why = Describe(d.stops[0].reason, w.tree());
  EXPECT_NE(why.find("debug job 5 of its own budget"), std::string::npos) << why;
  // The option is for debug jobs: a's batch job still may not stop a's own work.
  World batch = OwnWorkOfABudgetOverItsShare("batch");
  EXPECT_TRUE(batch.Cycle(now, true, cfg).stops.empty());
}

// One GPU is free. c is far below its share and waits for it with a batch job submitted first;
// a, over its share, has a debug job. In fair-share order c's job takes the GPU; with quick_first
// the debug job does.
TEST(HourglassPolicy, QuickFirstServesDebugJobsOfEveryBudgetBeforeOtherWork) {
  auto world = [] {
    World w({Top("a"), Top("c")});
    const NodeId n0 = w.AddNode();
    w.History("a", Days(2), 6.0, 4.0);
    w.History("c", Days(2), 0.0, 4.0);
    const JobSpec& held = w.NewJob(7, "a", Hours(8));
    w.Run(held, Days(2) - Hours(1), {{n0, Gpus(7)}});
    const JobSpec& batch = w.NewJob(1, "c");
    w.Pend(batch, Days(2) - Minutes(10));
    const JobSpec& debug = w.NewJob(1, "a", Minutes(5), "debug");
    w.Pend(debug, Days(2) - Minutes(1));
    return w;
  };
  const Seconds now = Days(2);
  {
    World w = world();
    const Decisions d = w.Cycle(now);
    ASSERT_EQ(d.starts.size(), 1u);
    EXPECT_EQ(d.starts[0].job, JobId(2));
  }
  World w = world();
  PolicyConfig cfg;
  cfg.quick_first = true;
  const Decisions d = w.Cycle(now, true, cfg);
  ASSERT_EQ(d.starts.size(), 1u);
  EXPECT_EQ(d.starts[0].job, JobId(3));
  EXPECT_EQ(StartOf(d, JobId(2)), nullptr);
}

// A debug headroom of one GPU of the 16 these tests' clusters have, debug jobs waiting or not.
PolicyConfig OneGpuOfSixteenHeadroom() {
  PolicyConfig cfg;
  cfg.quick_headroom = 1.0 / 16;
  cfg.quick_headroom_max = 1.0 / 16;
  return cfg;
}

// One GPU of 16 is free and the headroom keeps one for debug jobs. b's batch job, first in
// fair-share order, would fit but for the headroom. Were that GPU reserved for it, due at once,
// the debug job (min_runtime 5 min) could not use it, the headroom would keep the batch job from
// it, and both would wait beside an idle GPU until a's jobs end in 8 hours (as the code before
// HeldByHeadroomOnly did; `hourglass sim` on such a 16-GPU cluster gave both a 9 h wait). The
// batch job holds the cycle's reservation slot and reserves nothing, so the debug job starts on
// the free GPU, and the batch job's reason names the headroom.
TEST(HourglassPolicy, AJobHeldBackOnlyByTheHeadroomDoesNotReserveItsGpus) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.History("a", Days(2), 6.0, 4.0);
  w.History("b", Days(2), 0.0, 4.0);
  const JobSpec& big = w.NewJob(8, "a", Hours(8));
  const JobSpec& rest = w.NewJob(7, "a", Hours(8));
  w.Run(big, Days(2) - Hours(1), {{n0, Gpus(8)}});
  w.Run(rest, Days(2) - Hours(1), {{n1, Gpus(7)}});
  const JobSpec& batch = w.NewJob(1, "b");
  w.Pend(batch, Days(2) - Minutes(10));
  const JobSpec& debug = w.NewJob(1, "a", Minutes(5), "debug");
  w.Pend(debug, Days(2) - Minutes(1));
  PolicyConfig cfg = OneGpuOfSixteenHeadroom();
  const Decisions d = w.Cycle(Days(2), true, cfg);
  EXPECT_TRUE(d.stops.empty());
  EXPECT_TRUE(d.reservations.empty());
  const StartDecision* s = StartOf(d, debug.id);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->placement, (std::vector<Slice>{{n1, Gpus(1)}}));
  const PendingNote* note = NoteFor(d, batch.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitHeadroom);
}

// b's batch job fits on the one free GPU, which the headroom keeps, and n1's other 7 GPUs hold
// unfunded 1-GPU jobs. It stops the one that has run least (the least work lost), whose GPU
// refills the headroom as the job takes the free one: unfunded work is preempted first, at any
// time. Before PlanPastHeadroom it waited, its reason "none are preemptible", beside the sweeps.
TEST(HourglassPolicy, AJobTheHeadroomKeepsFromFreeGpusStopsUnfundedWorkInstead) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.Run(w.NewJob(8, "a", Hours(8)), Hours(1), {{n0, Gpus(8)}});  // protected for hours
  std::vector<JobId> sweeps;
  for (int k = 0; k < 7; ++k) {
    const JobSpec& sweep = w.NewJob(1, "");
    w.Run(sweep, Minutes(30 + k), {{n1, Gpus(1)}});
    sweeps.push_back(sweep.id);
  }
  const JobSpec& batch = w.NewJob(1, "b");
  w.Pend(batch, Hours(2) - Minutes(10));
  PolicyConfig cfg = OneGpuOfSixteenHeadroom();
  const Decisions d = w.Cycle(Hours(2), true, cfg);
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.reservations.empty());
  ASSERT_EQ(d.stops.size(), 1u);
  EXPECT_EQ(d.stops[0].job, sweeps.back());
  EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptForFunded);
  EXPECT_EQ(d.stops[0].reason.other, batch.id);
  const PendingNote* note = NoteFor(d, batch.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemption);
}

// The same cluster with no reservation slot: b's batch job cannot take the free GPU (the debug
// headroom) nor preempt a's protected work. Its reason names the headroom, not "none
// preemptible" beside a free GPU, which would leave the user without an explanation; with no
// free GPU at all it is the plain wait for GPUs.
TEST(HourglassPolicy, AJobHeldBackByTheHeadroomSaysSo) {
  for (const bool gpu_free : {true, false}) {
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    const NodeId n1 = w.AddNode();
    w.History("a", Days(2), 6.0, 4.0);
    w.History("b", Days(2), 0.0, 4.0);
    w.Run(w.NewJob(8, "a", Hours(8)), Days(2) - Hours(1), {{n0, Gpus(8)}});
    const int32_t rest = gpu_free ? 7 : 8;
    w.Run(w.NewJob(rest, "a", Hours(8)), Days(2) - Hours(1), {{n1, Gpus(rest)}});
    const JobSpec& batch = w.NewJob(1, "b");
    w.Pend(batch, Days(2) - Minutes(10));
    PolicyConfig cfg = OneGpuOfSixteenHeadroom();
    cfg.max_reservations = 0;
    const Decisions d = w.Cycle(Days(2), true, cfg);
    EXPECT_TRUE(d.starts.empty());
    EXPECT_TRUE(d.stops.empty());
    const PendingNote* note = NoteFor(d, batch.id);
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(note->reason.code, gpu_free ? ReasonCode::kWaitHeadroom : ReasonCode::kWaitGpus);
    EXPECT_EQ(note->reason.a, 1);
    EXPECT_EQ(note->reason.b, gpu_free ? 1 : 0);
    if (gpu_free) {
      EXPECT_EQ(Describe(note->reason, w.tree()),
                "waiting for 1 GPUs: the 1 free are kept for debug jobs (the debug headroom), and "
                "none are preemptible for budget b");
    }
  }
}

// Budgets a and b of equal share, each owed 4 of the 8 GPUs over two days and delivered the given
// rates; a's 8-GPU job (min_runtime `protect`, started `age` before day 2) holds the one node.
World HeldByA(double a_delivered, double b_delivered, Seconds protect, Seconds age) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  w.History("a", Days(2), a_delivered, 4.0);
  w.History("b", Days(2), b_delivered, 4.0);
  w.Run(w.NewJob(8, "a", protect), Days(2) - age, {{n0, Gpus(8)}});
  return w;
}

// Job `job` waits in `d` for GPUs, its budget standing as `standing`, in these words.
void ExpectWaitGpus(const Decisions& d, const World& w, JobId job, ShareStanding standing,
                    const std::string& words) {
  const PendingNote* note = NoteFor(d, job);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitGpus);
  EXPECT_EQ(note->reason.c, standing);
  EXPECT_EQ(Describe(note->reason, w.tree()), words);
}

// An explained cycle at day 2 with no reservation to hand out, in which no job starts or stops.
Decisions ExplainedCycleWhereAllWait(World& w) {
  PolicyConfig cfg;
  cfg.max_reservations = 0;
  Decisions d = w.Cycle(Days(2), true, cfg);
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.stops.empty());
  return d;
}

// A job that waits for GPUs says where its budget stands, which is why nothing it may stop frees
// enough: b, below its share, waits for a's protected work; a, over its share, may stop only work
// of budgets further above theirs.
TEST(HourglassPolicy, AWaitingJobsReasonSaysWhereItsBudgetStands) {
  World w = HeldByA(6.0, 0.0, Hours(8), Hours(1));
  const JobSpec& below = w.NewJob(1, "b");
  w.Pend(below, Days(2) - Minutes(10));
  const JobSpec& served = w.NewJob(1, "a");
  w.Pend(served, Days(2) - Minutes(5));
  const Decisions d = ExplainedCycleWhereAllWait(w);
  const PendingNote* b = NoteFor(d, below.id);
  const PendingNote* a = NoteFor(d, served.id);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(b->reason.code, ReasonCode::kWaitGpus);
  EXPECT_EQ(b->reason.c, kWaitsForProtection);
  EXPECT_EQ(Describe(b->reason, w.tree()),
            "waiting for 1 GPUs (0 free, none preemptible for budget b, which is below its share: "
            "the work it may stop is still protected)");
  // At the earliest once a's job, started an hour ago, is past its 8 h and its grace period.
  EXPECT_EQ(b->estimated_start, Days(2) + Hours(7) + JobSpec{}.grace);
  EXPECT_EQ(a->estimated_start, kNever);
  EXPECT_EQ(a->reason.code, ReasonCode::kWaitGpus);
  EXPECT_EQ(a->reason.c, kShareServed);
  EXPECT_EQ(Describe(a->reason, w.tree()),
            "waiting for 1 GPUs (0 free, none preemptible for budget a, which has had its share: "
            "it may stop only work of budgets further above theirs)");
}

// b is below its share, and a's 1-GPU jobs are past their protection. b's 1-GPU job may stop one
// of them; its 8-GPU job may not: holding 8 GPUs, b would be served better than a is once it has
// lost one job (keys 1.18 against 1.15; no ping-pong). Its reason says that it waits for GPUs
// to come free, not that a's work is protected.
TEST(HourglassPolicy, AJobKeptBackByItsOwnSizeSaysSo) {
  auto world = [](int32_t gpus) {
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    w.History("a", Days(2), 4.0, 4.0);
    w.History("b", Days(2), 3.9, 4.0);
    for (int i = 0; i < 8; ++i)
      w.Run(w.NewJob(1, "a", Hours(1)), Days(2) - Hours(3), {{n0, Gpus(1)}});
    w.Pend(w.NewJob(gpus, "b"), Days(2) - Minutes(10));
    return w;
  };
  {
    World w = world(1);
    const Decisions d = w.Cycle(Days(2));
    ASSERT_EQ(d.stops.size(), 1u);
    EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptFairShare);
  }
  World w = world(8);
  const JobId gang = JobId(9);
  const Decisions d = w.Cycle(Days(2));
  EXPECT_TRUE(d.stops.empty());
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.reservations.empty());
  ExpectWaitGpus(
      d, w, gang, kWouldPassVictims,
      "waiting for 8 GPUs (0 free, none preemptible for budget b, which is below its share, "
      "but would be served better than every budget whose work it could stop once it held "
      "these GPUs, and may not leave them below it: it waits for GPUs to come free)");
  // Explaining changes no decision: the same cycle unexplained decides the same.
  const Decisions quiet = w.Cycle(Days(2), false);
  EXPECT_TRUE(quiet.stops.empty());
  EXPECT_TRUE(quiet.starts.empty());
}

// b is below its share, but a, whose job holds the node past its protection, is further below
// (keys 0.6 and 0.4 once it lost the job): fair share lets b stop nothing, however long it waits,
// and its reason says so rather than naming protection.
TEST(HourglassPolicy, AJobWithNothingItMayStopSaysSo) {
  World w = HeldByA(2.0, 3.0, Hours(1), Hours(3));
  const JobSpec& waiting = w.NewJob(8, "b");
  w.Pend(waiting, Days(2) - Minutes(10));
  const Decisions d = w.Cycle(Days(2));
  EXPECT_TRUE(d.stops.empty());
  EXPECT_TRUE(d.reservations.empty());
  ExpectWaitGpus(
      d, w, waiting.id, kTooLittleToStop,
      "waiting for 8 GPUs (0 free, none preemptible for budget b, which is below its share: "
      "even once protections end, the work it may stop would not free enough GPUs where it "
      "fits)");
}

// A job kept back by the take-back cool-down says so, not that the work it may stop is too little
// (which it would not be once the cool-down ends), whether that work is still protected or not.
TEST(HourglassPolicy, AJobKeptBackByTheTakeBackCoolDownSaysSo) {
  const Seconds now = Days(2);
  const std::string words =
      "waiting for 8 GPUs (0 free, none preemptible for budget a, which is below its share: the "
      "work it could stop belongs to budgets that took GPUs from it within the take-back "
      "cool-down, and it may not take them back yet)";
  for (const Seconds started : {now - Hours(2), now - Minutes(30)}) {
    SCOPED_TRACE(started.value());
    World w = Starved(started);
    PolicyConfig cfg;
    cfg.max_reservations = 0;
    cfg.take_back_cooldown = Hours(1);
    Snapshot snap = w.Snap(now, true);
    // The cool-down of the later stop lapses in 10 minutes; the victim's protection (1 h) has
    // ended, or ends in 30 minutes: the job's estimated start is the later, plus the victim's
    // grace.
    const std::vector<RecentStop> recent{RecentStop{now - Minutes(55), w.Leaf("a"), w.Leaf("b")},
                                         RecentStop{now - Minutes(50), w.Leaf("a"), w.Leaf("b")}};
    snap.recent_stops = recent;
    const Decisions d = HourglassPolicy(cfg).Cycle(snap);
    EXPECT_TRUE(d.stops.empty());
    ExpectWaitGpus(d, w, kStarved, kTakeBackCooldown, words);
    EXPECT_EQ(NoteFor(d, kStarved)->estimated_start,
              std::max(now + Minutes(10), started + Hours(1)) + JobSpec{}.grace);
    // Once the cool-down has lapsed, the reason is what it was before.
    const std::vector<RecentStop> lapsed{RecentStop{now - Hours(2), w.Leaf("a"), w.Leaf("b")}};
    snap.recent_stops = lapsed;
    const Decisions later = HourglassPolicy(cfg).Cycle(snap);
    if (started == now - Hours(2)) {
      EXPECT_EQ(later.stops.size(), 1u);
    } else {
      ExpectWaitGpus(later, w, kStarved, kWaitsForProtection,
                     "waiting for 8 GPUs (0 free, none preemptible for budget a, which is below "
                     "its share: the work it may stop is still protected)");
    }
  }
}

// A leaf's later jobs of a shape that already failed in the cycle are passed over by the failure
// cache, with no plan of their own; their reason still says what keeps them waiting. b's first
// 4-GPU job may stop only a's job, still protected; a second one says the same; b's 8-GPU job
// would need b's own running job too, so even once a's protection ends too little frees.
TEST(HourglassPolicy, JobsPassedOverByTheFailureCacheSayWhatKeepsThemWaiting) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  w.History("a", Days(2), 6.0, 4.0);
  w.History("b", Days(2), 1.0, 4.0);
  w.Run(w.NewJob(4, "a", Hours(8)), Days(2) - Hours(1), {{n0, Gpus(4)}});
  w.Run(w.NewJob(4, "b", Hours(8)), Days(2) - Hours(1), {{n0, Gpus(4)}});
  const JobSpec& first = w.NewJob(4, "b");
  w.Pend(first, Days(2) - Minutes(30));
  const JobSpec& second = w.NewJob(4, "b");
  w.Pend(second, Days(2) - Minutes(20));
  const JobSpec& whole = w.NewJob(8, "b");
  w.Pend(whole, Days(2) - Minutes(10));
  const Decisions d = ExplainedCycleWhereAllWait(w);
  const std::string protected_words =
      "waiting for 4 GPUs (0 free, none preemptible for budget b, which is below its share: the "
      "work it may stop is still protected)";
  ExpectWaitGpus(d, w, first.id, kWaitsForProtection, protected_words);
  ExpectWaitGpus(d, w, second.id, kWaitsForProtection, protected_words);
  for (const JobId id : {first.id, second.id})
    EXPECT_EQ(NoteFor(d, id)->estimated_start, Days(2) + Hours(7) + JobSpec{}.grace);
  EXPECT_EQ(NoteFor(d, whole.id)->estimated_start, kNever);
  ExpectWaitGpus(
      d, w, whole.id, kTooLittleToStop,
      "waiting for 8 GPUs (0 free, none preemptible for budget b, which is below its share: "
      "even once protections end, the work it may stop would not free enough GPUs where it "
      "fits)");
}

// A job waiting for protected work is told when it could start at the earliest: b's first job
// holds the reservation of the node whose work leaves protection first, due then; b's second job
// may count only on the other node, once a's job there is past its protection and grace period.
TEST(HourglassPolicy, AJobWaitingForProtectedWorkIsToldItsEarliestStart) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.History("a", Days(2), 6.0, 8.0);
  w.History("b", Days(2), 0.0, 8.0);
  w.Run(w.NewJob(8, "a", Hours(3)), Days(2) - Hours(1), {{n0, Gpus(8)}});
  w.Run(w.NewJob(8, "a", Hours(6)), Days(2) - Hours(1), {{n1, Gpus(8)}});
  const JobSpec& first = w.NewJob(8, "b");
  w.Pend(first, Days(2) - Minutes(20));
  const JobSpec& second = w.NewJob(8, "b");
  w.Pend(second, Days(2) - Minutes(10));
  const Decisions d = w.Cycle(Days(2));
  ExpectOnlyAReservation(d, first.id, Days(2) + Hours(2), {{n0, Gpus(8)}});
  EXPECT_EQ(NoteFor(d, first.id)->estimated_start, Days(2) + Hours(2));
  const PendingNote* note = NoteFor(d, second.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.c, kWaitsForProtection);
  EXPECT_EQ(note->estimated_start, Days(2) + Hours(5) + JobSpec{}.grace);
}

// Enough GPUs are free in total, but on no node where the job's shape fits, and the work beside
// them is protected: the reason says so, not "none preemptible" beside free GPUs. With a node
// that the shape fits, the job starts there instead.
TEST(HourglassPolicy, AJobWhoseShapeFitsNowhereSaysSo) {
  for (const bool fits : {false, true}) {
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    const NodeId n1 = w.AddNode();
    w.History("a", Days(2), 6.0, 4.0);
    w.History("b", Days(2), 0.0, 4.0);
    w.Run(w.NewJob(4, "a", Hours(8)), Days(2) - Hours(1), {{n0, Gpus(4)}});
    if (!fits) w.Run(w.NewJob(4, "a", Hours(8)), Days(2) - Hours(1), {{n1, Gpus(4)}});
    const JobSpec& whole = w.NewJob(8, "b");
    w.Pend(whole, Days(2) - Minutes(10));
    PolicyConfig cfg;
    cfg.max_reservations = 0;
    const Decisions d = w.Cycle(Days(2), true, cfg);
    EXPECT_TRUE(d.stops.empty());
    if (fits) {
      ASSERT_NE(StartOf(d, whole.id), nullptr);
      EXPECT_EQ(StartOf(d, whole.id)->placement, (std::vector<Slice>{{n1, Gpus(8)}}));
      continue;
    }
    EXPECT_TRUE(d.starts.empty());
    const PendingNote* note = NoteFor(d, whole.id);
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(note->reason.code, ReasonCode::kWaitShape);
    EXPECT_EQ(Describe(note->reason, w.tree()),
              "waiting for 8 GPUs on one node: 8 are free, but not on nodes where its shape fits, "
              "and no work it may stop frees such nodes for budget b");
  }
}

TEST(HourglassPolicy, NoPreemptionForABudgetThatIsNotBelowItsShare) {
  const Seconds now = Days(2);
  World w = Starved(now - Hours(2), /*a_delivered_rate=*/8.0);
  const Decisions d = w.Cycle(now);
  EXPECT_TRUE(d.stops.empty());
  EXPECT_TRUE(d.reservations.empty());  // nothing will ever become preemptible for it
  const PendingNote* note = NoteFor(d, kStarved);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitGpus);
  EXPECT_EQ(note->reason.a, 8);
  EXPECT_EQ(note->reason.b, 0);
}

// b is far over its share and runs a debug job without protection beside a batch job past its
// protection; a, far below, waits for one GPU. Least lost work picks the debug job (minutes of
// one GPU against two hours of seven). With quick_protect 30 min the batch job goes while the
// debug job's run is younger than that, and the debug job again once it is older: the class
// label spares a run for a bounded time only.
TEST(HourglassPolicy, QuickProtectSparesYoungDebugJobsFromFairShareForABoundedTime) {
  struct Case {
    Seconds protect;
    Seconds debug_age;
    bool debug_stopped;
  };
  for (const Case& c : {Case{Seconds(0), Minutes(1), true}, Case{Minutes(30), Minutes(1), false},
                        Case{Minutes(30), Minutes(31), true}}) {
    SCOPED_TRACE(::testing::Message()
                 << c.protect.value() << " s, debug job " << c.debug_age.value() << " s old");
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    const Seconds now = Hours(10);
    w.History("a", now, 1.0, 4.0);
    w.History("b", now, 7.0, 4.0);
    const JobSpec& debug = w.NewJob(1, "b", Seconds(0), "debug");
    const JobSpec& batch = w.NewJob(7, "b", Hours(1));
    w.Run(debug, now - c.debug_age, {{n0, Gpus(1)}});
    w.Run(batch, now - Hours(2), {{n0, Gpus(7)}});
    const JobSpec& want = w.NewJob(1, "a");
    w.Pend(want, now - Minutes(5));
    PolicyConfig cfg;
    cfg.quick_protect = c.protect;
    const Decisions d = w.Cycle(now, true, cfg);
    ASSERT_EQ(d.stops.size(), 1u);
    EXPECT_EQ(d.stops[0].job, c.debug_stopped ? debug.id : batch.id);
    EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptFairShare);
    EXPECT_EQ(d.stops[0].reason.other, want.id);
  }
}

TEST(HourglassPolicy, NoPingPongBetweenEqualBudgets) {
  // Neither budget has history; b holds the node. Moving it to a would put b as far below as a
  // is now, so the running job stays.
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  const JobSpec& v = w.NewJob(8, "b", Seconds(0));
  w.Run(v, Seconds(0), {{n0, Gpus(8)}});
  const JobSpec& p = w.NewJob(8, "a");
  w.Pend(p, Seconds(10));
  const Decisions d = w.Cycle(Hours(1));
  EXPECT_TRUE(d.stops.empty());
}

TEST(HourglassPolicy, FairShareOrderServesTheBudgetFurtherBelowFirst) {
  for (bool a_lags : {true, false}) {
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    w.History("a", Hours(10), a_lags ? 1.0 : 5.0, 4.0);
    w.History("b", Hours(10), a_lags ? 5.0 : 1.0, 4.0);
    const JobSpec& jb = w.NewJob(8, "b");
    const JobSpec& ja = w.NewJob(8, "a");
    w.Pend(jb, Hours(10));  // b's job was queued first
    w.Pend(ja, Hours(10) + Seconds(1));
    const Decisions d = w.Cycle(Hours(10) + Seconds(5));
    ASSERT_EQ(d.starts.size(), 1u) << a_lags;
    EXPECT_EQ(d.starts[0].job, a_lags ? ja.id : jb.id);
    EXPECT_EQ(d.starts[0].placement, (std::vector<Slice>{{n0, Gpus(8)}}));
  }
}

TEST(HourglassPolicy, WithinABudgetTheUsersPriorityThenQueueOrderDecide) {
  World w({Top("a")});
  w.AddNode();
  JobSpec& first = w.NewJob(8, "a");
  JobSpec& urgent = w.NewJob(8, "a");
  urgent.priority = 5;
  w.Pend(first, Seconds(1));
  w.Pend(urgent, Seconds(2));
  const Decisions d = w.Cycle(Seconds(10));
  ASSERT_EQ(d.starts.size(), 1u);
  EXPECT_EQ(d.starts[0].job, urgent.id);
}

// A user's debug job does not wait behind their own long jobs in the queue.
TEST(HourglassPolicy, WithinABudgetQuickJobsComeBeforeLongWork) {
  World w({Top("a")});
  w.AddNode(2);
  JobSpec& batch = w.NewJob(2, "a");
  batch.priority = 5;  // even the user's own priority does not put long work ahead of debugging
  JobSpec& debug = w.NewJob(2, "a", Seconds(0), "debug");
  w.Pend(batch, Seconds(1));
  w.Pend(debug, Seconds(2));
  const Decisions d = w.Cycle(Seconds(10));
  ASSERT_EQ(d.starts.size(), 1u);
  EXPECT_EQ(d.starts[0].job, debug.id);
}

// a's 16-GPU job can neither start (8 GPUs free), preempt b's job (no ping-pong between equal
// budgets) nor plan a reservation (b's job has no known end). With large_job_gpus at 16 or less,
// a's later batch job waits behind it instead of taking the free GPUs; a's debug job does not.
TEST(HourglassPolicy, ABlockedLargeJobHoldsBackItsBudgetsLaterWorkWhenConfigured) {
  for (int32_t threshold : {0, 16, 32}) {
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    w.AddNode();
    const JobSpec& other = w.NewJob(8, "b");
    w.Run(other, Seconds(0), {{n0, Gpus(8)}});
    JobSpec& large = w.NewJob(16, "a");
    large.gpus_per_node = Gpus(8);
    const JobSpec& small = w.NewJob(4, "a");
    const JobSpec& debug = w.NewJob(1, "a", Seconds(0), "debug");
    w.Pend(large, Seconds(10));
    w.Pend(small, Seconds(20));
    w.Pend(debug, Seconds(30));
    PolicyConfig cfg;
    cfg.large_job_gpus = threshold;
    const Decisions d = w.Cycle(Hours(2), true, cfg);
    const bool holds = threshold > 0 && threshold <= 16;
    EXPECT_TRUE(d.stops.empty()) << threshold;
    EXPECT_NE(StartOf(d, debug.id), nullptr) << threshold;
    EXPECT_EQ(StartOf(d, large.id), nullptr) << threshold;
    EXPECT_EQ(StartOf(d, small.id) == nullptr, holds) << threshold;
    if (!holds) continue;
    const PendingNote* note = NoteFor(d, small.id);
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(note->reason.code, ReasonCode::kWaitLargeJob);
    EXPECT_EQ(note->reason.other, large.id);
    EXPECT_EQ(note->reason.a, 16);
    const std::string why = Describe(note->reason, w.tree());
    EXPECT_NE(why.find("behind job " + std::to_string(large.id.value()) + " (16 GPUs)"),
              std::string::npos)
        << why;
  }
}

TEST(HourglassPolicy, BudgetLimitBlocksWithANote) {
  World w({Top("a", 8), Top("b")});
  const NodeId n0 = w.AddNode();
  w.AddNode();
  const JobSpec& held = w.NewJob(8, "a");
  w.Run(held, Seconds(0), {{n0, Gpus(8)}});
  const JobSpec& more = w.NewJob(4, "a");
  const JobSpec& other = w.NewJob(4, "b");
  w.Pend(more, Seconds(10));
  w.Pend(other, Seconds(20));
  const Decisions d = w.Cycle(Seconds(30));
  EXPECT_EQ(StartOf(d, more.id), nullptr);
  EXPECT_NE(StartOf(d, other.id), nullptr);
  const PendingNote* note = NoteFor(d, more.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitBudgetLimit);
  EXPECT_EQ(note->reason.budget, w.Id("a"));
  EXPECT_EQ(note->reason.a, 8);
  const std::string why = Describe(note->reason, w.tree());
  EXPECT_NE(why.find("budget a is at its limit of 8"), std::string::npos) << why;
}

TEST(HourglassPolicy, ALimitOnAParentBlocksItsChildrenTogether) {
  World w({Top("P", 8), Child("p1", "P"), Child("p2", "P"), Top("q")});
  const NodeId n0 = w.AddNode();
  w.AddNode();
  const JobSpec& held = w.NewJob(6, "p1");
  w.Run(held, Seconds(0), {{n0, Gpus(6)}});
  const JobSpec& fits = w.NewJob(2, "p2");
  const JobSpec& over = w.NewJob(4, "p2");
  w.Pend(fits, Seconds(10));
  w.Pend(over, Seconds(11));
  const Decisions d = w.Cycle(Seconds(30));
  EXPECT_NE(StartOf(d, fits.id), nullptr);  // 6 + 2 = 8: at the limit, not over
  EXPECT_EQ(StartOf(d, over.id), nullptr);
  const PendingNote* note = NoteFor(d, over.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitBudgetLimit);
  EXPECT_EQ(note->reason.budget, w.Id("P"));
}

TEST(HourglassPolicy, QuickHeadroomKeepsGpusFromUnfundedWork) {
  PolicyConfig cfg;
  for (double headroom : {0.0, 0.25}) {  // 0.25: 4 of 16 GPUs
    cfg.quick_headroom = headroom;
    World w({Top("a")});
    w.AddNode();
    w.AddNode();
    const JobSpec& u1 = w.NewJob(8, "");
    const JobSpec& u2 = w.NewJob(8, "");
    w.Pend(u1, Seconds(1));
    w.Pend(u2, Seconds(2));
    const Decisions d = w.Cycle(Seconds(10), true, cfg);
    EXPECT_NE(StartOf(d, u1.id), nullptr);
    if (headroom > 0) {
      EXPECT_EQ(StartOf(d, u2.id), nullptr);
      const PendingNote* note = NoteFor(d, u2.id);
      ASSERT_NE(note, nullptr);
      EXPECT_EQ(note->reason.code, ReasonCode::kWaitUnfunded);
    } else {
      EXPECT_NE(StartOf(d, u2.id), nullptr);
    }
  }
}

TEST(HourglassPolicy, QuickJobsUseTheHeadroomAndRunningOnesCountForIt) {
  PolicyConfig cfg;
  cfg.quick_headroom = 0.25;  // 4 of 16 GPUs
  {
    // 8 GPUs free, 4 kept for quick jobs: one 4-GPU batch job fits above the headroom, a second
    // would eat into it; a debug job may use it.
    World w({Top("a")});
    const NodeId n0 = w.AddNode();
    w.AddNode();
    w.Run(w.NewJob(8, ""), Seconds(0), {{n0, Gpus(8)}});
    const JobSpec& b1 = w.NewJob(4, "");
    const JobSpec& b2 = w.NewJob(4, "");
    const JobSpec& dbg = w.NewJob(4, "", Seconds(0), "debug");
    w.Pend(b1, Seconds(1));
    w.Pend(b2, Seconds(2));
    w.Pend(dbg, Seconds(3));
    const Decisions d = w.Cycle(Seconds(10), true, cfg);
    EXPECT_NE(StartOf(d, b1.id), nullptr);
    EXPECT_EQ(StartOf(d, b2.id), nullptr);
    EXPECT_NE(StartOf(d, dbg.id), nullptr);
  }
  {
    // A debug job already holds the headroom: nothing is kept back.
    World w({Top("a")});
    const NodeId n0 = w.AddNode();
    w.AddNode();
    w.Run(w.NewJob(4, "", Seconds(0), "debug"), Seconds(0), {{n0, Gpus(4)}});
    const JobSpec& u1 = w.NewJob(8, "");
    const JobSpec& u2 = w.NewJob(4, "");
    w.Pend(u1, Seconds(1));
    w.Pend(u2, Seconds(2));
    const Decisions d = w.Cycle(Seconds(10), true, cfg);
    EXPECT_NE(StartOf(d, u1.id), nullptr);
    EXPECT_NE(StartOf(d, u2.id), nullptr);
  }
}

// A session (a funded job with a lease) may start on the headroom's GPUs like a debug job when
// sessions_use_headroom is on; the same request without a lease may not, and with the option
// off neither may. 8 of 16 GPUs are free, 4 kept for quick jobs, and a 4-GPU batch job already
// takes the 4 above the headroom; the other node's job is protected, and no reservation is made.
TEST(HourglassPolicy, SessionsUseTheHeadroomWhenAllowed) {
  for (const bool allowed : {false, true}) {
    PolicyConfig cfg;
    cfg.quick_headroom = 0.25;
    cfg.max_reservations = 0;
    cfg.sessions_use_headroom = allowed;
    World w({Top("a")});
    const NodeId n0 = w.AddNode();
    w.AddNode();
    w.Run(w.NewJob(8, "a", Hours(8)), Seconds(0), {{n0, Gpus(8)}});
    const JobSpec& batch = w.NewJob(4, "a");
    JobSpec& session = w.NewJob(4, "a", Minutes(10), "interactive");
    session.lease = Minutes(30);
    session.max_runtime = Hours(4);
    const JobSpec& plain = w.NewJob(4, "a", Minutes(10), "interactive");  // no lease
    w.Pend(batch, Seconds(1));
    w.Pend(plain, Seconds(2));
    w.Pend(session, Seconds(3));
    const Decisions d = w.Cycle(Seconds(10), true, cfg);
    EXPECT_NE(StartOf(d, batch.id), nullptr);
    EXPECT_EQ(StartOf(d, plain.id), nullptr);
    EXPECT_EQ(StartOf(d, session.id) != nullptr, allowed);
    const PendingNote* note = NoteFor(d, plain.id);
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(note->reason.code, ReasonCode::kWaitHeadroom);
  }
}

// With no debug job running or waiting, the headroom shrinks to quick_headroom_quiet GPUs. 12 of
// 16 GPUs are free, 4 kept for quick jobs, and unfunded jobs of 4, 4 and 2 GPUs wait: the 2-GPU
// one would eat into the headroom unless it shrank. A waiting debug job (1 GPU, funded, so placed
// first) keeps the whole headroom: 11 free, 3 still kept.
TEST(HourglassPolicy, TheHeadroomShrinksWhileNoQuickJobRunsOrWaits) {
  auto run = [](int32_t quiet, bool debug_waits) {
    PolicyConfig cfg;
    cfg.quick_headroom = 0.25;  // 4 of 16 GPUs
    cfg.quick_headroom_quiet = quiet;
    World w({Top("a")});
    const NodeId n0 = w.AddNode();
    w.AddNode();
    w.Run(w.NewJob(4, ""), Seconds(0), {{n0, Gpus(4)}});
    std::vector<JobId> ids;
    for (int32_t g : {4, 4, 2}) {
      const JobSpec& u = w.NewJob(g, "");
      w.Pend(u, Seconds(1 + static_cast<int64_t>(ids.size())));
      ids.push_back(u.id);
    }
    if (debug_waits) {
      const JobSpec& dbg = w.NewJob(1, "a", Seconds(0), "debug");
      w.Pend(dbg, Seconds(5));
    }
    const Decisions d = w.Cycle(Seconds(10), true, cfg);
    int started = 0;
    for (JobId id : ids) started += StartOf(d, id) != nullptr ? 1 : 0;
    return started;
  };
  EXPECT_EQ(run(-1, false), 2);  // never shrinks: 4 kept
  EXPECT_EQ(run(2, false), 3);   // 2 kept: 12 - 10 = 2
  EXPECT_EQ(run(0, false), 3);
  EXPECT_EQ(run(2, true), 2);  // the debug job takes 1 GPU, and 3 of the 11 left stay free
}

// An unfunded job of more GPUs than an idle cluster has beside the quiet headroom (2 of 16): the
// headroom alone would keep it waiting forever (found by the properties under DeployedConfig()).
// With no debug job waiting it may take the headroom too, and starts; a waiting debug job keeps
// it off. A 12-GPU job beside 4 busy GPUs would fit an idle cluster without the headroom, so it
// still keeps off the headroom, as every smaller unfunded job does.
TEST(HourglassPolicy, AnUnfundedJobTheQuietHeadroomAloneBarsTakesItWhileNoDebugJobWaits) {
  auto starts = [](int32_t gpus, int32_t busy, bool debug_waits) {
    PolicyConfig cfg;
    cfg.quick_headroom = 0.25;  // 4 of 16 GPUs
    cfg.quick_headroom_quiet = 2;
    World w({Top("a")});
    const NodeId n0 = w.AddNode();
    w.AddNode();
    if (busy > 0) w.Run(w.NewJob(busy, ""), Seconds(0), {{n0, Gpus(busy)}});
    const JobSpec& u = w.NewJob(gpus, "");
    w.Pend(u, Seconds(1));
    if (debug_waits) w.Pend(w.NewJob(1, "a", Seconds(0), "debug"), Seconds(5));
    const Decisions d = w.Cycle(Seconds(10), true, cfg);
    if (StartOf(d, u.id) != nullptr) return true;
    const PendingNote* note = NoteFor(d, u.id);
    EXPECT_TRUE(note != nullptr && note->reason.code == ReasonCode::kWaitUnfunded);
    return false;
  };
  EXPECT_TRUE(starts(16, 0, false));
  EXPECT_TRUE(starts(15, 0, false));
  EXPECT_FALSE(starts(16, 0, true));
  EXPECT_TRUE(starts(14, 0, false));   // beside the quiet headroom
  EXPECT_FALSE(starts(12, 4, false));  // 12 free, 2 of them the headroom's
  EXPECT_TRUE(starts(10, 4, false));
}

// Two nodes half held by b's protected jobs, which end at started + b_max_runtime (by default
// now + 50 min); a waits with a 16-GPU gang and two small jobs; an unfunded job waits too.
struct GangWorld {
  World w{{Top("a"), Top("b")}};
  Seconds now = Hours(1);
  Seconds b_started = now - Minutes(10);
  JobId gang, short_job, long_job, unfunded;
  explicit GangWorld(Seconds b_max_runtime = Hours(1)) {
    const NodeId n0 = w.AddNode(8, "A");
    const NodeId n1 = w.AddNode(8, "A");
    for (NodeId n : {n0, n1}) {
      JobSpec& b = w.NewJob(4, "b", Hours(1));
      b.max_runtime = b_max_runtime;
      w.Run(b, b_started, {{n, Gpus(4)}});
    }
    JobSpec& g = w.NewJob(16, "a");
    g.gpus_per_node = Gpus(8);
    gang = g.id;
    w.Pend(g, now - Minutes(5));
    const JobSpec& s = w.NewJob(4, "a", Minutes(10));
    short_job = s.id;
    w.Pend(s, now - Minutes(1));
    const JobSpec& l = w.NewJob(4, "a", Hours(3));
    long_job = l.id;
    w.Pend(l, now);
    const JobSpec& u = w.NewJob(4, "");
    unfunded = u.id;
    w.Pend(u, now - Minutes(30));
  }
};

// Waiting debug jobs widen the headroom: the next GPUs to come free go to them, not to long
// work of a budget that comes earlier in fair-share order.
TEST(HourglassPolicy, WaitingQuickJobsWidenTheHeadroom) {
  auto run = [](double headroom_max) {
    World w({Top("a"), Top("b")});
    w.AddNode(8);
    w.History("b", Days(6), 8.0, 0.5);  // b got far more than it was owed: a goes first
    std::vector<JobId> batch;
    for (int i = 0; i < 8; ++i) {
      JobSpec& j = w.NewJob(1, "a");
      w.Pend(j, Seconds(i));
      batch.push_back(j.id);
    }
    JobSpec& debug = w.NewJob(2, "b", Seconds(0), "debug");
    w.Pend(debug, Seconds(100));
    PolicyConfig cfg;
    cfg.quick_headroom = 0;
    cfg.quick_headroom_max = headroom_max;
    const Decisions d = w.Cycle(Days(6), false, cfg);
    int batch_started = 0;
    bool debug_started = false;
    for (const auto& s : d.starts) {
      if (s.job == debug.id) debug_started = true;
      if (std::find(batch.begin(), batch.end(), s.job) != batch.end()) ++batch_started;
    }
    return std::make_pair(batch_started, debug_started);
  };
  EXPECT_EQ(run(0.5), std::make_pair(6, true));
  EXPECT_EQ(run(0.0), std::make_pair(8, false));  // without it, long work takes every GPU
}

// Long work does not stop funded work whose GPUs would only refill the debug headroom. One
// 8-GPU node, the headroom 1 GPU while debug jobs run or wait and none otherwise; b (over its
// share) holds 7 GPUs with protected work and one more with `victim`, past its protection; a's
// 1-GPU batch job, first in fair-share order, finds no free GPU. Stopping a funded victim of 1
// GPU would leave 0 free where the headroom asks for 1 (a debug job of b waits, or the victim is
// a debug job on the headroom that will wait again, requeued), so a's job would not get it: the
// next debug job would, and would be a's cheapest victim in turn (on philly-dev, most of
// hourglass's debug runs stopped within a minute of their start). An unfunded victim still goes
// (its GPU refilling the headroom is what debug jobs wait for), and so does a 2-GPU victim, whose
// GPUs cover both, or a victim while no other debug job runs or waits (the headroom shrinks to
// none).
TEST(HourglassPolicy, LongWorkDoesNotStopFundedWorkWhoseGpusWouldOnlyRefillTheHeadroom) {
  struct Case {
    const char* name;
    int32_t victim_gpus;
    bool victim_funded;
    std::string victim_class;
    bool victim_resumable;
    bool debug_waits;
    bool stopped;
  };
  const std::vector<Case> cases = {
      {"funded batch, a debug job waits", 1, true, "batch", false, true, false},
      {"a debug job on the headroom, another waits", 1, true, "debug", false, true, false},
      {"a resumable debug job on the headroom", 1, true, "debug", true, false, false},
      {"a debug job on the headroom, no other", 1, true, "debug", false, false, true},
      {"funded batch, no debug job", 1, true, "batch", false, false, true},
      {"unfunded, a debug job waits", 1, false, "sweep", false, true, true},
      {"2 GPUs: enough for both", 2, true, "batch", false, true, true},
  };
  const Seconds now = Days(2);
  for (const Case& c : cases) {
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode(8);
    w.History("a", Days(2), 0.0, 4.0);
    w.History("b", Days(2), 8.0, 4.0);
    const int32_t rest = 8 - c.victim_gpus;
    w.Run(w.NewJob(rest, "b", Hours(8)), now - Hours(1), {{n0, Gpus(rest)}});  // protected
    JobSpec& victim =
        w.NewJob(c.victim_gpus, c.victim_funded ? "b" : "", Seconds(0), c.victim_class);
    victim.resumable = c.victim_resumable;
    w.Run(victim, now - Seconds(20), {{n0, Gpus(c.victim_gpus)}});
    const JobSpec& batch = w.NewJob(1, "a", Hours(1));
    w.Pend(batch, now - Minutes(10));
    if (c.debug_waits) w.Pend(w.NewJob(1, "b", Seconds(0), "debug"), now - Minutes(1));
    PolicyConfig cfg;
    cfg.quick_headroom = 1.0 / 8;
    cfg.quick_headroom_max = 1.0 / 8;
    cfg.quick_headroom_quiet = 0;  // no headroom while no debug job runs or waits
    const Decisions d = w.Cycle(now, true, cfg);
    if (!c.stopped) {
      EXPECT_TRUE(d.stops.empty()) << c.name;
      continue;
    }
    ASSERT_EQ(d.stops.size(), 1u) << c.name;
    EXPECT_EQ(d.stops[0].job, victim.id) << c.name;
    EXPECT_EQ(d.stops[0].for_job, batch.id) << c.name;
  }
}

TEST(HourglassPolicy, AGangThatCannotFitGetsAReservation) {
  GangWorld g;
  const Decisions d = g.w.Cycle(g.now);
  EXPECT_TRUE(d.stops.empty());  // b's jobs are protected
  ASSERT_EQ(d.reservations.size(), 1u);
  const ReservationDecision& r = d.reservations[0];
  EXPECT_EQ(r.job, g.gang);
  EXPECT_EQ(r.due, g.b_started + Hours(1));  // when b's jobs reach max_runtime
  EXPECT_EQ(r.slices, (std::vector<Slice>{{NodeId(0), Gpus(8)}, {NodeId(1), Gpus(8)}}));
  const PendingNote* note = NoteFor(d, g.gang);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitReservation);
  EXPECT_EQ(note->estimated_start, r.due);
}

// With two reservations, the second does not count on the node the first one holds: n0 empties
// first (its job ends in 50 min), so both jobs would be due then on the same 8 GPUs. The second
// takes n1, which empties at 1 h 49 min; n2's half-free GPUs come whole only at 2 h 48 min. a,
// over its share, may not stop b's work: only the ends of b's jobs free GPUs.
TEST(HourglassPolicy, ASecondReservationCountsOnNoNodeTheFirstHolds) {
  World w({Top("a"), Top("b")});
  const Seconds now = Days(2);
  w.History("a", now, 6.0, 4.0);
  w.History("b", now, 0.0, 4.0);
  const NodeId n0 = w.AddNode(8, "A");
  const NodeId n1 = w.AddNode(8, "A");
  const NodeId n2 = w.AddNode(8, "A");
  int i = 0;
  for (const auto& [n, gpus, ends] :
       {std::tuple{n0, 8, Hours(1)}, std::tuple{n1, 8, Hours(2)}, std::tuple{n2, 4, Hours(3)}}) {
    JobSpec& b = w.NewJob(gpus, "b", Minutes(30));
    b.max_runtime = ends;
    w.Run(b, now - Minutes(10 + i++), {{n, Gpus(gpus)}});
  }
  JobId first{0}, second{0};
  for (JobId* id : {&first, &second}) {
    JobSpec& j = w.NewJob(8, "a");
    j.gpus_per_node = Gpus(8);
    *id = j.id;
    w.Pend(j, now - (id == &first ? Minutes(5) : Minutes(4)));
  }
  PolicyConfig cfg;
  cfg.quick_headroom = 0;
  cfg.quick_headroom_max = 0;
  cfg.max_reservations = 2;
  const Decisions d = w.Cycle(now, true, cfg);
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.stops.empty());
  ASSERT_EQ(d.reservations.size(), 2u);
  EXPECT_EQ(d.reservations[0].job, first);
  EXPECT_EQ(d.reservations[0].slices, (std::vector<Slice>{{n0, Gpus(8)}}));
  EXPECT_EQ(d.reservations[0].due, now - Minutes(10) + Hours(1));
  EXPECT_EQ(d.reservations[1].job, second);
  EXPECT_EQ(d.reservations[1].slices, (std::vector<Slice>{{n1, Gpus(8)}}));
  EXPECT_EQ(d.reservations[1].due, now - Minutes(11) + Hours(2));
}

TEST(HourglassPolicy, OnlyJobsPreemptibleBeforeTheReservationIsDueMayUseItsGpus) {
  GangWorld g;
  const Decisions d = g.w.Cycle(g.now);
  // A 10-minute min_runtime ends before the reservation is due: it may backfill.
  const StartDecision* s = StartOf(d, g.short_job);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kStartBackfill);
  // A 3-hour one would still be protected when the gang is due.
  EXPECT_EQ(StartOf(d, g.long_job), nullptr);
  // Unfunded work stays off GPUs reserved for soon (50 min < reservation_lend_margin).
  ASSERT_LT(d.reservations.at(0).due, g.now + PolicyConfig{}.reservation_lend_margin);
  EXPECT_EQ(StartOf(d, g.unfunded), nullptr);
  EXPECT_EQ(d.starts.size(), 1u);
}

// A session let onto GPUs reserved for a larger job (its min_runtime ends before the
// reservation is due) gives them back when the reservation is due, in use or not: its lease
// holds against everyone but that job. The reservation counts on that: it is due when the
// session's min_runtime ends, not a lease after its user's last activity.
TEST(HourglassPolicy, ASessionsLeaseDoesNotHoldOnTheReservedGpusItWasLetOnto) {
  for (const bool backfilled : {true, false}) {
    SCOPED_TRACE(backfilled);
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    w.History("a", Days(2), 4.0, 4.0);
    w.History("b", Days(2), 2.0, 4.0);
    const JobSpec& v = Session(w, "b", Minutes(10));
    RunningJob& r = w.Run(v, Days(2), {{n0, Gpus(8)}});
    r.backfilled = backfilled;
    const JobSpec& p = w.NewJob(8, "a");
    w.Pend(p, Days(2));
    r.active_at = Days(2) + Minutes(5);
    const Decisions before = w.Cycle(Days(2) + Minutes(5));
    EXPECT_TRUE(before.stops.empty());
    if (backfilled) {
      ASSERT_EQ(before.reservations.size(), 1u);
      EXPECT_EQ(before.reservations[0].due, Days(2) + Minutes(10));
    }
    r.active_at = Days(2) + Minutes(20);
    const Decisions due = w.Cycle(Days(2) + Minutes(20));
    const StopDecision* s = StopOf(due, v.id);
    ASSERT_EQ(s != nullptr, backfilled);
    if (!s) continue;
    EXPECT_EQ(s->reason.code, ReasonCode::kPreemptReservation);
    EXPECT_FALSE(s->violates_contract);
  }
}

// Work let onto a reservation's GPUs (backfill) was let in because it would be preemptible for
// the reservation by the time it is due. Once it is, the blocked job stops it, even where fair
// share alone would not (a is below b but would end above it: no ping-pong), instead of holding
// the reservation, due now, until the work ends by itself. Not when the blocked job's budget is
// served better than the work's: that would be ping-pong.
TEST(HourglassPolicy, WorkThatBackfilledAReservationIsPreemptedForItOncePastItsProtection) {
  struct Case {
    bool backfilled;
    double a_delivered_rate;  // GPUs over two days; b had 2, and each was owed 4
    bool stopped;
  };
  for (const Case c : {Case{true, 4.0, true}, Case{false, 4.0, false}, Case{true, 8.0, false}}) {
    SCOPED_TRACE(testing::Message() << c.backfilled << " " << c.a_delivered_rate);
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    w.History("a", Days(2), c.a_delivered_rate, 4.0);
    w.History("b", Days(2), 2.0, 4.0);
    const JobSpec& v = w.NewJob(8, "b", Minutes(10));
    w.Run(v, Days(2), {{n0, Gpus(8)}}).backfilled = c.backfilled;
    const JobSpec& p = w.NewJob(8, "a");
    w.Pend(p, Days(2));
    const Decisions d = w.Cycle(Days(2) + Hours(1));
    const StopDecision* s = StopOf(d, v.id);
    ASSERT_EQ(s != nullptr, c.stopped);
    if (!s) {
      EXPECT_TRUE(d.stops.empty());
      continue;
    }
    EXPECT_EQ(s->reason.code, ReasonCode::kPreemptReservation);
    EXPECT_EQ(s->for_job, p.id);
    EXPECT_FALSE(s->violates_contract);
    const PendingNote* note = NoteFor(d, p.id);
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemption);
  }
}

// Before its victims' protection ends: no stop, and `job` holds the reservation, due when it ends,
// if `held`.
void ExpectReservedUntilProtectionEnds(const Decisions& d, bool held, JobId job, Seconds due) {
  EXPECT_TRUE(d.stops.empty());
  ASSERT_EQ(d.reservations.size(), held ? 1u : 0u);
  if (!held) return;
  EXPECT_EQ(d.reservations[0].job, job);
  EXPECT_EQ(d.reservations[0].due, due);
}

// Every stop is for `job`'s due reservation, within the contract, its GPUs held for `job`: fair
// share alone would not let it take them.
void ExpectStopsForReservation(const Decisions& d, JobId job) {
  for (const StopDecision& s : d.stops) {
    EXPECT_EQ(s.reason.code, ReasonCode::kPreemptReservation);
    EXPECT_EQ(s.for_job, job);
    EXPECT_FALSE(s.violates_contract);
    EXPECT_TRUE(s.hold_for);
  }
}

// Contract case (c) for large jobs (PolicyConfig::reservation_preempts_gpus): b is over its
// share, but a's 16-GPU gang would end above b if it took b's GPUs, so fair share alone never
// lets it preempt, and b's work has no max_runtime: without the option the gang gets neither
// GPUs nor a reservation. With it (threshold at most 16), b's work counts as leaving when its
// protection ends: the gang reserves both nodes, due then, and preempts b's work when it is due.
// Not when a, holding the gang's GPUs, would be served no worse than b is now (here both were
// delivered alike): b could then take them back the same way (ping-pong). Nor when b's work
// itself started on GPUs freed for it that way (RunningJob::took_freed): two gangs would pass
// the GPUs back and forth each time a protection ended.
TEST(HourglassPolicy, AReservationForALargeJobPreemptsOverShareWorkWhenConfigured) {
  struct Case {
    int32_t threshold;
    double a_rate, b_rate;  // GPUs delivered over two days; each was owed 4
    bool applies;
    bool took_freed = false;  // b's work started on GPUs freed for it
  };
  for (const Case c :
       {Case{0, 3.2, 4.8, false}, Case{16, 3.2, 4.8, true}, Case{17, 3.2, 4.8, false},
        Case{16, 4.1, 4.1, false}, Case{16, 3.2, 4.8, false, true}}) {
    SCOPED_TRACE(testing::Message()
                 << c.threshold << " " << c.a_rate << " " << c.b_rate << " " << c.took_freed);
    const int32_t threshold = c.threshold;
    const bool applies = c.applies;
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    const NodeId n1 = w.AddNode();
    w.History("a", Days(2), c.a_rate, 4.0);
    w.History("b", Days(2), c.b_rate, 4.0);
    const JobSpec& v0 = w.NewJob(8, "b", Hours(1));
    const JobSpec& v1 = w.NewJob(8, "b", Hours(1));
    w.Run(v0, Days(2), {{n0, Gpus(8)}}).took_freed = c.took_freed;
    w.Run(v1, Days(2), {{n1, Gpus(8)}}).took_freed = c.took_freed;
    JobSpec& gang = w.NewJob(16, "a");
    gang.gpus_per_node = Gpus(8);
    w.Pend(gang, Days(2));
    PolicyConfig cfg;
    cfg.reservation_preempts_gpus = threshold;

    const Decisions before = w.Cycle(Days(2) + Minutes(20), true, cfg);
    ExpectReservedUntilProtectionEnds(before, applies, gang.id, Days(2) + Hours(1));

    const Decisions due = w.Cycle(Days(2) + Hours(1), true, cfg);
    EXPECT_EQ(due.stops.size(), applies ? 2u : 0u);
    ExpectStopsForReservation(due, gang.id);
    const PendingNote* note = NoteFor(due, gang.id);
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(note->reason.code, applies ? ReasonCode::kWaitPreemption : ReasonCode::kWaitGpus);
  }
}

// Contract case (c) for a job that asks for a whole node (PolicyConfig::
// whole_node_reservation_preempts, on in DeployedConfig()): b (share 2) holds both 8-GPU nodes with
// 2-GPU jobs and is over its share; a (share 1) is below its share, but with its 8-GPU job it
// would end above b less one victim, so fair share alone never lets it stop any of b's jobs, and
// they have no max_runtime: without the rule a's job gets neither GPUs nor a reservation. With
// it, b's work counts as leaving when its protection ends, a stays below b even holding the node
// (StaysBelowVictim), so the job reserves a node, due then, and stops that node's four jobs.
TEST(HourglassPolicy, AReservationForAWholeNodeJobPreemptsOverShareWork) {
  for (const bool rule : {false, true}) {
    SCOPED_TRACE(rule);
    World w({BudgetSpec{"a", "", 1.0, {}, {}, 0}, BudgetSpec{"b", "", 2.0, {}, {}, 0}});
    const NodeId n0 = w.AddNode();
    const NodeId n1 = w.AddNode();
    w.History("a", Days(2), 4.2, 5.0);
    w.History("b", Days(2), 9.7, 11.0);
    std::map<int64_t, int32_t> node_of;  // b's jobs
    for (const NodeId n : {n0, n0, n0, n0, n1, n1, n1, n1}) {
      const JobSpec& v = w.NewJob(2, "b", Hours(1));
      w.Run(v, Days(2), {{n, Gpus(2)}});
      node_of[v.id.value()] = n.value();
    }
    const JobSpec& whole = w.NewJob(8, "a");
    w.Pend(whole, Days(2));
    PolicyConfig cfg;
    cfg.whole_node_reservation_preempts = rule;

    const Decisions before = w.Cycle(Days(2) + Minutes(20), true, cfg);
    ExpectReservedUntilProtectionEnds(before, rule, whole.id, Days(2) + Hours(1));
    if (rule) {
      EXPECT_EQ(before.reservations[0].slices.size(), 1u);
    }

    const Decisions due = w.Cycle(Days(2) + Hours(1), true, cfg);
    EXPECT_EQ(due.stops.size(), rule ? 4u : 0u);
    ExpectStopsForReservation(due, whole.id);
    std::set<int32_t> nodes;
    for (const StopDecision& s : due.stops) nodes.insert(node_of.at(s.job.value()));
    EXPECT_EQ(nodes.size(), rule ? 1u : 0u);  // one node's jobs, not both
    const PendingNote* note = NoteFor(due, whole.id);
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(note->reason.code, rule ? ReasonCode::kWaitPreemption : ReasonCode::kWaitGpus);
  }
}

// GPUs freed by stops made outside the fair-share order are held for the job they were freed
// for (PendingJob::freed_for): once its victims have gone it is placed before the walk, which
// would otherwise serve b's requeued work first (b is further below its share than a) and stop
// it again later. While a victim still stops, the flag changes nothing.
TEST(HourglassPolicy, GpusFreedOutsideTheFairShareOrderGoToTheJobTheyWereFreedFor) {
  for (int variant = 0; variant < 3; ++variant) {  // 0: not held, 1: held, 2: held, still stopping
    SCOPED_TRACE(variant);
    World w({Top("a"), Top("b")});
    const NodeId n0 = w.AddNode();
    const NodeId n1 = w.AddNode();
    w.History("a", Days(2), 4.8, 4.0);
    w.History("b", Days(2), 3.2, 4.0);
    const JobSpec& busy = w.NewJob(8, "a", Hours(8));
    w.Run(busy, Days(2) - Hours(1), {{n0, Gpus(8)}});
    if (variant == 2) {
      const JobSpec& victim = w.NewJob(8, "a", Minutes(0));
      RunningJob& r = w.Run(victim, Days(2) - Hours(1), {{n1, Gpus(8)}});
      r.stopping = true;
      r.stop_at = Days(2) + Minutes(1);
      r.stop_for = JobId(4);
    }
    const JobSpec& requeued = w.NewJob(8, "b");
    w.Pend(requeued, Days(1));
    JobSpec& held = w.NewJob(8, "a");
    ASSERT_EQ(held.id, JobId(variant == 2 ? 4 : 3));
    w.Pend(held, Days(2) - Minutes(30)).freed_for = variant > 0;
    const Decisions d = w.Cycle(Days(2));
    EXPECT_TRUE(d.stops.empty());
    const JobId winner = variant == 1 ? held.id : requeued.id;
    const StartDecision* s = StartOf(d, winner);
    if (variant == 2) {
      // n1 is still busy: nothing starts, and the held job says it waits for its victim.
      EXPECT_TRUE(d.starts.empty());
      const PendingNote* note = NoteFor(d, held.id);
      ASSERT_NE(note, nullptr);
      EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemption);
      continue;
    }
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->placement, (std::vector<Slice>{{n1, Gpus(8)}}));
    EXPECT_EQ(s->reason.code,
              variant == 1 ? ReasonCode::kStartAfterPreempt : ReasonCode::kStartFree);
    EXPECT_EQ(d.starts.size(), 1u);
  }
}

// Budgets a and b of equal shares on two 8-GPU nodes, two days in: a got 1.5 times its due and b
// half of it, so b's jobs may preempt a's work once its protection has ended.
World AOverBUnder() {
  World w({Top("a"), Top("b")});
  w.AddNode();
  w.AddNode();
  w.History("a", Days(2), 6.0, 4.0);
  w.History("b", Days(2), 2.0, 4.0);
  return w;
}

// An unfunded 8-GPU job leaves for b's 2-GPU job: its other 6 GPUs come free with it. With
// wait_for_spare, b's next job waits for them rather than stop a's funded work, which b could
// preempt; without it, or when the leaving job's preemptor needs all its GPUs, it preempts a's.
TEST(HourglassPolicy, WaitForSpareTakesGpusOfALeavingJobBeforeFundedVictims) {
  for (int32_t first : {2, 8}) {
    for (bool wait : {true, false}) {
      SCOPED_TRACE(testing::Message() << "first " << first << ", wait " << wait);
      World w = AOverBUnder();
      const NodeId n0(0), n1(1);
      const Seconds now = Days(2);
      const JobSpec& sweep = w.NewJob(8, "");
      const JobSpec& a_job = w.NewJob(8, "a", Minutes(30));
      w.Run(a_job, now - Hours(2), n1);
      const JobSpec& waiting = w.NewJob(first, "b");
      const JobSpec& next = w.NewJob(2, "b");
      RunningJob& leaving = w.Run(sweep, now - Hours(1), n0);
      leaving.stopping = true;
      leaving.stop_at = now + Seconds(100);
      leaving.stop_for = waiting.id;
      w.Pend(waiting, now - Seconds(20));
      w.Pend(next, now - Seconds(10));
      PolicyConfig cfg;
      cfg.wait_for_spare = wait;
      const Decisions d = w.Cycle(now, true, cfg);
      const PendingNote* note = NoteFor(d, next.id);
      ASSERT_NE(note, nullptr);
      if (first == 2 && wait) {
        EXPECT_TRUE(d.stops.empty());
        EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemption);
        EXPECT_EQ(note->estimated_start, now + Seconds(100));
      } else {
        ASSERT_EQ(d.stops.size(), 1u);
        EXPECT_EQ(d.stops[0].job, a_job.id);
        EXPECT_EQ(d.stops[0].for_job, next.id);
      }
    }
  }
}

// In one cycle: the first of b's 2-GPU jobs stops an 8-GPU sweep; with wait_for_spare the next
// three wait for its other 6 GPUs, and only the fifth stops a's funded work.
TEST(HourglassPolicy, WaitForSpareSharesOneVictimAmongPreemptorsOfACycle) {
  for (bool wait : {true, false}) {
    SCOPED_TRACE(wait);
    World w = AOverBUnder();
    const NodeId n0(0), n1(1);
    const Seconds now = Days(2);
    const JobSpec& sweep = w.NewJob(8, "");
    w.Run(sweep, now - Hours(1), n0);
    for (int k = 0; k < 4; ++k)
      w.Run(w.NewJob(2, "a", Minutes(30)), now - Hours(2), {{n1, Gpus(2)}});
    std::vector<JobId> b_jobs;
    for (int k = 0; k < 5; ++k) {
      const JobSpec& j = w.NewJob(2, "b");
      w.Pend(j, now - Seconds(10));
      b_jobs.push_back(j.id);
    }
    PolicyConfig cfg;
    cfg.wait_for_spare = wait;
    const Decisions d = w.Cycle(now, true, cfg);
    int32_t funded_gpus = 0;
    bool sweep_stopped = false;
    for (const StopDecision& s : d.stops) {
      if (s.job == sweep.id)
        sweep_stopped = true;
      else
        funded_gpus += 2;
    }
    EXPECT_TRUE(sweep_stopped);
    // Without the option each of the other four stops one of a's jobs (a is over its share).
    EXPECT_EQ(funded_gpus, wait ? 2 : 8);
    for (JobId id : b_jobs) {
      const PendingNote* note = NoteFor(d, id);
      ASSERT_NE(note, nullptr) << id;
      EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemption) << id;
    }
  }
}

TEST(HourglassPolicy, UnfundedWorkBorrowsReservedGpusOnlyWhileTheReservationIsFarOff) {
  for (Seconds b_max_runtime : {Hours(1), Hours(3)}) {
    GangWorld g(b_max_runtime);
    const Decisions d = g.w.Cycle(g.now);
    ASSERT_EQ(d.reservations.size(), 1u);
    const Seconds due = d.reservations[0].due;
    EXPECT_EQ(due, g.b_started + b_max_runtime);
    const bool far = g.now + PolicyConfig{}.reservation_lend_margin <= due;
    const StartDecision* s = StartOf(d, g.unfunded);
    EXPECT_EQ(s != nullptr, far) << "due in " << (due - g.now).value() << " s";
    if (s) {
      // It borrows GPUs of the reservation: the short job took the other reserved half.
      ASSERT_EQ(s->placement.size(), 1u);
      EXPECT_EQ(s->placement[0].gpus, Gpus(4));
    }
    PolicyConfig never;
    never.reservation_lend_margin = kNever;
    EXPECT_EQ(StartOf(g.w.Cycle(g.now, true, never), g.unfunded), nullptr);
  }
}

TEST(HourglassPolicy, ExplainGivesEveryPendingJobExactlyOneOutcome) {
  GangWorld g;
  const Decisions d = g.w.Cycle(g.now, /*explain=*/true);
  std::map<int64_t, int> outcomes;
  for (const StartDecision& s : d.starts) ++outcomes[s.job.value()];
  for (const PendingNote& n : d.pending) ++outcomes[n.job.value()];
  EXPECT_EQ(outcomes, (std::map<int64_t, int>{{g.gang.value(), 1},
                                              {g.short_job.value(), 1},
                                              {g.long_job.value(), 1},
                                              {g.unfunded.value(), 1}}));
  for (const PendingNote& n : d.pending) {
    EXPECT_FALSE(Describe(n.reason, g.w.tree()).empty());
  }
  // The long job fits only on the gang's reserved GPUs, and would still be protected when the
  // gang is due: it says so, naming the gang.
  const PendingNote* long_note = NoteFor(d, g.long_job);
  ASSERT_NE(long_note, nullptr);
  EXPECT_EQ(long_note->reason.code, ReasonCode::kWaitReserved);
  EXPECT_EQ(Describe(long_note->reason, g.w.tree()),
            "waiting for 4 GPUs: of the 4 free, those where it fits are reserved for job " +
                std::to_string(g.gang.value()) +
                " from t=" + std::to_string((g.b_started + Hours(1)).value()) +
                "s, and it would still be protected then");
  const PendingNote* unfunded_note = NoteFor(d, g.unfunded);
  ASSERT_NE(unfunded_note, nullptr);
  EXPECT_EQ(unfunded_note->reason.code, ReasonCode::kWaitUnfunded);
}

TEST(HourglassPolicy, ExplainChangesNothingButTheNotes) {
  GangWorld g;
  const Decisions with = g.w.Cycle(g.now, true);
  const Decisions without = g.w.Cycle(g.now, false);
  EXPECT_TRUE(without.pending.empty());
  EXPECT_FALSE(with.pending.empty());
  ASSERT_EQ(with.starts.size(), without.starts.size());
  for (size_t i = 0; i < with.starts.size(); ++i) {
    EXPECT_EQ(with.starts[i].job, without.starts[i].job);
    EXPECT_EQ(with.starts[i].placement, without.starts[i].placement);
  }
  ASSERT_EQ(with.reservations.size(), without.reservations.size());
  for (size_t i = 0; i < with.reservations.size(); ++i) {
    EXPECT_EQ(with.reservations[i].job, without.reservations[i].job);
    EXPECT_EQ(with.reservations[i].due, without.reservations[i].due);
  }
  EXPECT_EQ(with.stops.size(), without.stops.size());
}

TEST(HourglassPolicy, AJobWaitingForItsVictimsHoldsTheFreeGpusBesideThem) {
  World w({Top("a"), Top("b")});
  const NodeId n0 = w.AddNode();
  const JobSpec& f = w.NewJob(8, "a");
  const JobSpec& victim = w.NewJob(4, "b", Seconds(0));
  w.RunLeaving(victim, {{n0, Gpus(4)}}, Seconds(160), f.id);
  w.Pend(f, Seconds(30));
  const JobSpec& u = w.NewJob(4, "");
  w.Pend(u, Seconds(35));
  const Decisions d = w.Cycle(Seconds(40));
  EXPECT_TRUE(d.starts.empty());  // u does not slip into the 4 free GPUs
  EXPECT_TRUE(d.stops.empty());   // the victim is already leaving
  EXPECT_TRUE(d.reservations.empty());
  const PendingNote* note = NoteFor(d, f.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemption);
  EXPECT_EQ(note->reason.a, 160);
}

// A gang of 24 GPUs, 6 per node, on four 8-GPU nodes waits for an unfunded victim leaving node 3.
// It holds the GPUs each of its slices needs: 2 beside the victim and 6 on each other node, so
// the 4-GPU unfunded job finds no room. Holding 20 GPUs by count on the roomiest nodes (node 2's
// 8 first) left 4 free on node 1, where the gang's slice goes: the unfunded job started there,
// was stopped for the gang in the next cycle, and a requeued victim took the GPUs it freed in
// turn, cycle after cycle (the loop that runs every tick while a job waits found it).
TEST(HourglassPolicy, AGangWaitingForItsVictimsHoldsAGpuSliceOnEachNodeItNeeds) {
  World w({Top("a")});
  std::vector<NodeId> n;
  for (int k = 0; k < 4; ++k) n.push_back(w.AddNode());
  JobSpec& gang = w.NewJob(24, "a");
  gang.gpus_per_node = Gpus(6);
  w.Run(w.NewJob(2, "a"), Seconds(0), {{n[0], Gpus(2)}});
  w.Run(w.NewJob(2, "a"), Seconds(0), {{n[1], Gpus(2)}});
  w.RunLeaving(w.NewJob(4, ""), {{n[3], Gpus(4)}}, Seconds(160), gang.id);
  w.Pend(gang, Seconds(30));
  const JobSpec& u = w.NewJob(4, "");
  w.Pend(u, Seconds(35));
  const Decisions d = w.Cycle(Seconds(40));
  EXPECT_TRUE(d.starts.empty());  // u finds no 4 GPUs the gang does not need
  EXPECT_TRUE(d.stops.empty());
  const PendingNote* note = NoteFor(d, gang.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemption);
  // A 2-GPU unfunded job still fits in what the gang leaves over (node 2's other 2 GPUs).
  const JobSpec& small = w.NewJob(2, "");
  w.Pend(small, Seconds(36));
  const Decisions d2 = w.Cycle(Seconds(40));
  ASSERT_EQ(d2.starts.size(), 1u);
  EXPECT_EQ(d2.starts[0].job, small.id);
}

// BUG (core/hourglass_policy.cc, Cycle::Setup, line 100): `if (!r.spec->funded()) continue;`
// comes before the stopping job's `stop_for` is recorded in waiting_on_victims_ (line 106), so a
// funded job whose victims are *unfunded* (the common case) is not seen as waiting next cycle.
// It is planned afresh: the leaving victims are skipped and other running jobs are preempted as
// well. Here F (8 GPUs) already freed node 0 (U leaves at t=160); at t=40 the policy also stops U2
// on node 1 (kPreemptForFunded for F) instead of noting kWaitPreemption; F's budget does not get
// the GPUs counted and the free GPUs beside the victims are not held. Recording stop_for before
// the funded() check fixes it.
TEST(HourglassPolicy, AJobWaitingForUnfundedVictimsPreemptsNoMore) {
  World w({Top("a")});
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  const JobSpec& f = w.NewJob(8, "a");
  const JobSpec& leaving = w.NewJob(8, "");
  const JobSpec& other = w.NewJob(8, "");
  w.Run(other, Seconds(0), {{n1, Gpus(8)}});
  w.RunLeaving(leaving, {{n0, Gpus(8)}}, Seconds(160), f.id);
  w.Pend(f, Seconds(30));
  const Decisions d = w.Cycle(Seconds(40));
  EXPECT_EQ(StopOf(d, other.id), nullptr);
  EXPECT_TRUE(d.stops.empty());
  const PendingNote* note = NoteFor(d, f.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitPreemption);
  EXPECT_EQ(note->reason.a, 160);
}

TEST(HourglassPolicy, RunsHousekeeping) {
  World w({Top("a")});
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.node(n1).state = NodeState::kDraining;
  JobSpec& capped = w.NewJob(4, "a", Seconds(0));
  capped.max_runtime = Minutes(30);
  w.Run(capped, Seconds(0), {{n0, Gpus(4)}});
  const JobSpec& u = w.NewJob(4, "");
  w.Run(u, Seconds(0), {{n1, Gpus(4)}});
  const Decisions d = w.Cycle(Minutes(30));
  const StopDecision* a = StopOf(d, capped.id);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->reason.code, ReasonCode::kMaxRuntime);
  const StopDecision* b = StopOf(d, u.id);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->reason.code, ReasonCode::kPreemptDrain);
}

TEST(HourglassPolicy, SameSnapshotSameDecisions) {
  GangWorld g;
  const Decisions x = g.w.Cycle(g.now);
  const Decisions y = g.w.Cycle(g.now);
  ASSERT_EQ(x.starts.size(), y.starts.size());
  for (size_t i = 0; i < x.starts.size(); ++i) {
    EXPECT_EQ(x.starts[i].job, y.starts[i].job);
    EXPECT_EQ(x.starts[i].placement, y.starts[i].placement);
  }
  ASSERT_EQ(x.pending.size(), y.pending.size());
  for (size_t i = 0; i < x.pending.size(); ++i) {
    EXPECT_EQ(x.pending[i].job, y.pending[i].job);
    EXPECT_EQ(x.pending[i].reason.code, y.pending[i].reason.code);
  }
}

}  // namespace
}  // namespace hg
