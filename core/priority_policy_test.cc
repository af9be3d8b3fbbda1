#include "core/priority_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/policy_test_world.h"

namespace hg {
namespace {

// The baseline needs no budgets: nodes, a queue and running jobs.
class World : public policytest::PolicyWorld {
 public:
  NodeId AddNode(NodeState state = NodeState::kReady) { return PolicyWorld::AddNode(8, "", state); }
  JobSpec& NewJob(int32_t gpus, int tier, bool funded = true) {
    JobSpec s;
    s.gpus = Gpus(gpus);
    s.tier = tier;
    s.budget = funded ? BudgetId(1) : kUnfunded;
    s.min_runtime = Hours(1);
    return AddJob(std::move(s));
  }
  // unfunded_above_tier0: Snapshot's count, -1 as a driver that does not keep it.
  Decisions Cycle(Seconds now, int64_t unfunded_above_tier0 = -1) {
    SortQueues();
    Snapshot snap = Snap(now, true);
    snap.unfunded_above_tier0 = unfunded_above_tier0;
    return PriorityPolicy(PolicyConfig{}).Cycle(snap);
  }
};

TEST(PriorityPolicy, HigherTierPreemptsLowerAtOnceIgnoringTheContract) {
  World w;
  const NodeId n = w.AddNode();
  const JobSpec& low = w.NewJob(8, 0);
  w.Run(low, Seconds(0), n);
  const JobSpec& high = w.NewJob(8, 2);
  w.Pend(high, Seconds(5));
  const Decisions d = w.Cycle(Seconds(10));  // low is still within its 1 h min_runtime
  ASSERT_EQ(d.stops.size(), 1u);
  const StopDecision& s = d.stops[0];
  EXPECT_EQ(s.job, low.id);
  EXPECT_EQ(s.reason.code, ReasonCode::kPreemptTier);
  EXPECT_EQ(s.reason.a, 2);
  EXPECT_EQ(s.reason.b, 0);
  EXPECT_EQ(s.for_job, high.id);
  EXPECT_TRUE(s.violates_contract);
  EXPECT_TRUE(d.starts.empty());
}

TEST(PriorityPolicy, PreemptingUnfundedOrUnprotectedWorkIsNoViolation) {
  World w;
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  const JobSpec& unfunded = w.NewJob(8, 0, false);
  w.Run(unfunded, Seconds(0), n0);
  const JobSpec& old = w.NewJob(8, 0);
  w.Run(old, Seconds(0), n1);
  const JobSpec& h1 = w.NewJob(8, 1);
  const JobSpec& h2 = w.NewJob(8, 1);
  w.Pend(h1, Seconds(1));
  w.Pend(h2, Seconds(2));
  const Decisions d = w.Cycle(Hours(2));
  ASSERT_EQ(d.stops.size(), 2u);
  for (const StopDecision& s : d.stops) EXPECT_FALSE(s.violates_contract);
}

TEST(PriorityPolicy, EqualOrLowerTiersNeverPreempt) {
  World w;
  const NodeId n = w.AddNode();
  const JobSpec& running = w.NewJob(8, 1);
  w.Run(running, Seconds(0), n);
  const JobSpec& same = w.NewJob(8, 1);
  const JobSpec& lower = w.NewJob(8, 0);
  w.Pend(same, Seconds(1));
  w.Pend(lower, Seconds(2));
  const Decisions d = w.Cycle(Hours(5));
  EXPECT_TRUE(d.stops.empty());
  EXPECT_TRUE(d.starts.empty());
  ASSERT_EQ(d.pending.size(), 2u);
  for (const PendingNote& p : d.pending) EXPECT_EQ(p.reason.code, ReasonCode::kWaitTier);
}

TEST(PriorityPolicy, HigherTiersFirstThenFirstComeFirstServedAcrossFundedAndUnfunded) {
  World w;
  w.AddNode();
  w.AddNode();
  const JobSpec& early_low = w.NewJob(8, 0);
  const JobSpec& late_high = w.NewJob(8, 2);
  const JobSpec& mid_unfunded = w.NewJob(8, 0, false);
  w.Pend(early_low, Seconds(1));
  w.Pend(late_high, Seconds(9));
  w.Pend(mid_unfunded, Seconds(0));
  const Decisions d = w.Cycle(Seconds(10));
  ASSERT_EQ(d.starts.size(), 2u);
  EXPECT_EQ(d.starts[0].job, late_high.id);
  EXPECT_EQ(d.starts[1].job, mid_unfunded.id);  // queued before early_low
}

TEST(PriorityPolicy, AnUnfundedJobOfAnUpperTierGoesBeforeLowerTiersWhetherCountedOrNot) {
  for (const int64_t count : {int64_t{-1}, int64_t{1}}) {
    World w;
    w.AddNode();
    const JobSpec& early_funded = w.NewJob(8, 1);
    const JobSpec& late_unfunded_high = w.NewJob(8, 2, false);
    w.Pend(early_funded, Seconds(1));
    w.Pend(late_unfunded_high, Seconds(9));
    const Decisions d = w.Cycle(Seconds(10), count);
    ASSERT_EQ(d.starts.size(), 1u) << count;
    EXPECT_EQ(d.starts[0].job, late_unfunded_high.id) << count;
  }
}

TEST(PriorityPolicy, SickNodesAreClearedAtOnce) {
  World w;
  const NodeId n = w.AddNode(NodeState::kDraining);
  const JobSpec& protected_job = w.NewJob(8, 2);
  w.Run(protected_job, Seconds(0), n);
  const Decisions d = w.Cycle(Seconds(60));
  ASSERT_EQ(d.stops.size(), 1u);
  EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptDrainForced);
  EXPECT_TRUE(d.stops[0].violates_contract);
}

}  // namespace
}  // namespace hg
