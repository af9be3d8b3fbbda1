#include "core/fifo_backfill_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "core/policy_test_world.h"

namespace hg {
namespace {

// The baseline needs no budgets: nodes, a queue and running jobs.
class World : public policytest::PolicyWorld {
 public:
  NodeId AddNode(NodeState state = NodeState::kReady, int32_t gpus = 8) {
    return PolicyWorld::AddNode(gpus, "b0", state);
  }
  JobSpec& NewJob(int32_t gpus, std::optional<Seconds> max_runtime = std::nullopt,
                  bool funded = true) {
    JobSpec s;
    s.gpus = Gpus(gpus);
    s.budget = funded ? BudgetId(1) : kUnfunded;
    s.min_runtime = Hours(1);
    s.max_runtime = max_runtime;
    return AddJob(std::move(s));
  }
  void Drain(NodeId n) { node(n).state = NodeState::kDraining; }
  // The lists must already be in (queued_since, id) order: the policy merges, never sorts.
  Decisions Cycle(Seconds now, bool explain = true) {
    return FifoBackfillPolicy(PolicyConfig{}).Cycle(Snap(now, explain));
  }
};

using policytest::NoteFor;
using policytest::Started;

TEST(FifoBackfill, StartsInSubmissionOrderWhileJobsFit) {
  World w;
  w.AddNode();
  const JobSpec& first = w.NewJob(4);
  const JobSpec& second = w.NewJob(4);
  const JobSpec& third = w.NewJob(1);
  w.Pend(first, Seconds(1));
  w.Pend(second, Seconds(2));
  w.Pend(third, Seconds(3));
  const Decisions d = w.Cycle(Seconds(10));
  EXPECT_EQ(Started(d), (std::vector<JobId>{first.id, second.id}));
  for (const StartDecision& s : d.starts) EXPECT_EQ(s.reason.code, ReasonCode::kStartFree);
  ASSERT_EQ(d.pending.size(), 1u);
  EXPECT_EQ(d.pending[0].job, third.id);
}

TEST(FifoBackfill, BlockedHeadGetsAReservationDueWhenKnownEndsFreeItsGpus) {
  World w;
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  // n0: 6 GPUs busy until 1000 + 2 h; n1: 4 GPUs busy until 500 + 5 h. The head needs a whole
  // node: n0 is free first.
  const JobSpec& a = w.NewJob(6, Hours(2));
  const JobSpec& b = w.NewJob(4, Hours(5));
  w.Run(a, Seconds(1000), n0);
  w.Run(b, Seconds(500), n1);
  const JobSpec& head = w.NewJob(8);
  w.Pend(head, Seconds(50));
  const Decisions d = w.Cycle(Seconds(2000));
  EXPECT_TRUE(d.starts.empty());
  ASSERT_EQ(d.reservations.size(), 1u);
  const ReservationDecision& r = d.reservations[0];
  EXPECT_EQ(r.job, head.id);
  EXPECT_EQ(r.due, Seconds(1000) + Hours(2));
  EXPECT_EQ(r.slices, (std::vector<Slice>{Slice{n0, Gpus(8)}}));
  const PendingNote* note = NoteFor(d, head.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitReservation);
  EXPECT_EQ(note->estimated_start, r.due);
  EXPECT_EQ(note->reason.a, r.due.value());
}

TEST(FifoBackfill, GangReservationWaitsForItsLastNode) {
  World w;
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  const NodeId n2 = w.AddNode();
  w.Run(w.NewJob(8, Hours(1)), Seconds(0), n0);
  w.Run(w.NewJob(8, Hours(3)), Seconds(0), n1);
  w.Run(w.NewJob(8), Seconds(0), n2);  // no max_runtime: never free as far as FIFO knows
  const JobSpec& gang = w.NewJob(16);
  w.Pend(gang, Seconds(1));
  const Decisions d = w.Cycle(Seconds(10));
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].due, Hours(3));
  std::vector<Slice> slices = d.reservations[0].slices;
  std::sort(slices.begin(), slices.end(),
            [](const Slice& x, const Slice& y) { return x.node < y.node; });
  EXPECT_EQ(slices, (std::vector<Slice>{Slice{n0, Gpus(8)}, Slice{n1, Gpus(8)}}));
}

TEST(FifoBackfill, ShortJobBackfillsOnlyWhenItEndsBeforeTheReservationIsDue) {
  // Node 0: 4 GPUs busy for one more hour, 4 free; the head needs all 8, due at 1 h.
  for (const int64_t minutes : {30, 60, 61, 120}) {
    World w;
    const NodeId n0 = w.AddNode();
    w.Run(w.NewJob(4, Hours(1)), Seconds(0), n0);
    const JobSpec& head = w.NewJob(8);
    const JobSpec& small = w.NewJob(2, Minutes(minutes));
    w.Pend(head, Seconds(0));
    w.Pend(small, Seconds(0));
    const Decisions d = w.Cycle(Seconds(0));
    ASSERT_EQ(d.reservations.size(), 1u);
    EXPECT_EQ(d.reservations[0].due, Hours(1));
    if (minutes <= 60) {
      ASSERT_EQ(Started(d), (std::vector<JobId>{small.id})) << minutes;
      EXPECT_EQ(d.starts[0].reason.code, ReasonCode::kStartBackfill);
    } else {
      EXPECT_TRUE(d.starts.empty()) << minutes;
      const PendingNote* note = NoteFor(d, small.id);
      ASSERT_NE(note, nullptr);
      EXPECT_EQ(note->reason.code, ReasonCode::kWaitGpus);
    }
  }
}

TEST(FifoBackfill, JobWithoutMaxRuntimeStaysOffReservedGpusButUsesOthers) {
  World w;
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.Run(w.NewJob(4, Hours(1)), Seconds(0), n0);  // n0 is the reservation's: free at 1 h
  w.Run(w.NewJob(6), Seconds(0), n1);            // n1: never free as far as FIFO knows
  const JobSpec& head = w.NewJob(8);
  const JobSpec& open_ended = w.NewJob(4);  // fits n0's 4 free GPUs, but would run forever
  const JobSpec& tiny = w.NewJob(2);        // n1's 2 free GPUs are nobody's
  w.Pend(head, Seconds(0));
  w.Pend(open_ended, Seconds(1));
  w.Pend(tiny, Seconds(2));
  const Decisions d = w.Cycle(Seconds(60));
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].slices, (std::vector<Slice>{Slice{n0, Gpus(8)}}));
  ASSERT_EQ(Started(d), (std::vector<JobId>{tiny.id}));
  EXPECT_EQ(d.starts[0].placement, (std::vector<Slice>{Slice{n1, Gpus(2)}}));
  EXPECT_EQ(d.starts[0].reason.code, ReasonCode::kStartFree);
  EXPECT_EQ(NoteFor(d, open_ended.id)->reason.code, ReasonCode::kWaitGpus);
}

TEST(FifoBackfill, OnlyTheHeadHoldsAReservation) {
  World w;
  const NodeId n0 = w.AddNode();
  w.Run(w.NewJob(4, Hours(1)), Seconds(0), n0);
  const JobSpec& head = w.NewJob(8);
  const JobSpec& second = w.NewJob(8);
  w.Pend(head, Seconds(0));
  w.Pend(second, Seconds(1));
  const Decisions d = w.Cycle(Seconds(0));
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].job, head.id);
  EXPECT_EQ(NoteFor(d, second.id)->reason.code, ReasonCode::kWaitGpus);
}

TEST(FifoBackfill, HeadBehindOpenEndedJobsGetsNoReservationAndOthersUseFreeGpus) {
  // The documented limitation: no known end, no plan, so nothing is held for the head.
  World w;
  const NodeId n0 = w.AddNode();
  w.Run(w.NewJob(4), Seconds(0), n0);
  const JobSpec& head = w.NewJob(8);
  const JobSpec& later = w.NewJob(4);
  w.Pend(head, Seconds(0));
  w.Pend(later, Seconds(1));
  const Decisions d = w.Cycle(Seconds(0));
  EXPECT_TRUE(d.reservations.empty());
  EXPECT_EQ(Started(d), (std::vector<JobId>{later.id}));
  const PendingNote* note = NoteFor(d, head.id);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->reason.code, ReasonCode::kWaitGpus);
  EXPECT_EQ(note->estimated_start, kNever);
}

TEST(FifoBackfill, FundedAndUnfundedShareOneQueueInSubmissionOrder) {
  World w;
  w.AddNode();
  const JobSpec& u1 = w.NewJob(4, std::nullopt, false);
  const JobSpec& f1 = w.NewJob(2);
  const JobSpec& u2 = w.NewJob(2, std::nullopt, false);
  const JobSpec& f2 = w.NewJob(1);  // would fit, but an earlier unfunded job is the head
  const JobSpec& u3 = w.NewJob(1, std::nullopt, false);
  w.Pend(u1, Seconds(1));
  w.Pend(f1, Seconds(2));
  w.Pend(u2, Seconds(3));
  w.Pend(f2, Seconds(5));
  w.Pend(u3, Seconds(4));
  const Decisions d = w.Cycle(Seconds(10));
  // u1, f1, u2 fill the node exactly; u3 (queued at 4) comes before f2 (at 5), and neither fits.
  EXPECT_EQ(Started(d), (std::vector<JobId>{u1.id, f1.id, u2.id}));
  ASSERT_EQ(d.pending.size(), 2u);
  EXPECT_EQ(d.pending[0].job, u3.id);
  EXPECT_EQ(d.pending[1].job, f2.id);
}

TEST(FifoBackfill, UnfundedHeadIsReservedForLikeFundedWork) {
  World w;
  const NodeId n0 = w.AddNode();
  w.Run(w.NewJob(4, Hours(1)), Seconds(0), n0);
  const JobSpec& head = w.NewJob(8, std::nullopt, false);
  const JobSpec& funded = w.NewJob(4);  // a budget buys nothing here: it must wait its turn
  w.Pend(head, Seconds(0));
  w.Pend(funded, Seconds(1));
  const Decisions d = w.Cycle(Seconds(0));
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].job, head.id);
  EXPECT_TRUE(d.starts.empty());
}

TEST(FifoBackfill, NeverPreemptsAndDrainsHonourTheContract) {
  World w;
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  const JobSpec& unfunded = w.NewJob(8, std::nullopt, false);
  w.Run(unfunded, Seconds(0), n0);
  const JobSpec& protected_job = w.NewJob(4, Hours(10));  // min_runtime 1 h
  const JobSpec& done = w.NewJob(2, Minutes(30));         // past its max_runtime
  w.Run(protected_job, Seconds(0), n1);
  w.Run(done, Seconds(0), n1);
  w.Drain(n1);
  // A big funded job waits behind running unfunded work: a FIFO site never preempts for it.
  const JobSpec& big = w.NewJob(16);
  w.Pend(big, Seconds(0));
  Decisions d = w.Cycle(Minutes(40));
  ASSERT_EQ(d.stops.size(), 1u);
  EXPECT_EQ(d.stops[0].job, done.id);
  EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kMaxRuntime);
  for (const StopDecision& s : d.stops) EXPECT_FALSE(s.violates_contract);
  // Once the protection is over, the drain takes the job, still without a violation.
  d = w.Cycle(Minutes(90));
  std::set<int64_t> stopped;
  for (const StopDecision& s : d.stops) {
    stopped.insert(s.job.value());
    EXPECT_FALSE(s.violates_contract);
    EXPECT_NE(s.job, unfunded.id);
  }
  EXPECT_TRUE(stopped.count(protected_job.id.value()));
}

TEST(FifoBackfill, SkipsHolesInBothPendingLists) {
  World w;
  w.AddNode();
  const JobSpec& a = w.NewJob(2);
  const JobSpec& b = w.NewJob(2, std::nullopt, false);
  const JobSpec& c = w.NewJob(2);
  w.Hole(true);
  w.Hole(false);
  w.Pend(a, Seconds(1));
  w.Hole(true);
  w.Pend(b, Seconds(2));
  w.Hole(false);
  w.Pend(c, Seconds(3));
  w.Hole(true);
  const Decisions d = w.Cycle(Seconds(10));
  EXPECT_EQ(Started(d), (std::vector<JobId>{a.id, b.id, c.id}));
  EXPECT_TRUE(d.pending.empty());
}

TEST(FifoBackfill, ExplainGivesOneNotePerJobLeftPending) {
  World w;
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.Run(w.NewJob(8, Hours(2)), Seconds(0), n0);
  w.Run(w.NewJob(6), Seconds(0), n1);
  std::vector<const JobSpec*> queued;
  for (int i = 0; i < 12; ++i) {
    // Mixed sizes, funded and not, some short enough to backfill: every path is taken.
    const JobSpec& j = w.NewJob(
        1 + i % 8, i % 3 == 0 ? std::optional<Seconds>(Minutes(30)) : std::nullopt, i % 2 == 0);
    w.Pend(j, Seconds(i));
    queued.push_back(&j);
  }
  const Decisions d = w.Cycle(Seconds(10));
  std::multiset<int64_t> seen;
  for (const StartDecision& s : d.starts) seen.insert(s.job.value());
  for (const PendingNote& n : d.pending) seen.insert(n.job.value());
  ASSERT_EQ(seen.size(), queued.size());
  for (const JobSpec* j : queued) EXPECT_EQ(seen.count(j->id.value()), 1u) << j->id.value();
  // And without explanations, the same decisions.
  const Decisions quiet = w.Cycle(Seconds(10), false);
  EXPECT_TRUE(quiet.pending.empty());
  EXPECT_EQ(Started(quiet), Started(d));
}

TEST(FifoBackfill, StopsScanningAFullClusterWithoutChangingDecisions) {
  World w;
  const NodeId n0 = w.AddNode();
  w.Run(w.NewJob(8), Seconds(0), n0);
  for (int i = 0; i < 1000; ++i) w.Pend(w.NewJob(1), Seconds(i));
  const Decisions quiet = w.Cycle(Seconds(10), false);
  EXPECT_TRUE(quiet.starts.empty());
  EXPECT_TRUE(quiet.pending.empty());
  const Decisions loud = w.Cycle(Seconds(10), true);
  EXPECT_EQ(loud.pending.size(), 1000u);
}

}  // namespace
}  // namespace hg
