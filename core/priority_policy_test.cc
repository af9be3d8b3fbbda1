#include "core/priority_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <vector>

namespace hg {
namespace {

// The baseline needs no budgets: nodes, a queue and running jobs.
class World {
 public:
  NodeId AddNode(NodeState state = NodeState::kReady) {
    Node n;
    n.id = NodeId(static_cast<int32_t>(nodes_.size()));
    n.gpus = Gpus(8);
    n.state = state;
    nodes_.push_back(n);
    return n.id;
  }
  JobSpec& NewJob(int32_t gpus, int tier, bool funded = true) {
    JobSpec s;
    s.id = JobId(static_cast<int64_t>(specs_.size()) + 1);
    s.gpus = Gpus(gpus);
    s.tier = tier;
    s.budget = funded ? BudgetId(1) : kUnfunded;
    s.min_runtime = Hours(1);
    specs_.push_back(s);
    return specs_.back();
  }
  void Pend(const JobSpec& j, Seconds since) {
    (j.funded() ? funded_ : unfunded_).push_back(PendingJob{&j, since, 1});
  }
  void Run(const JobSpec& j, Seconds started, NodeId n) {
    RunningJob r;
    r.spec = &j;
    r.started = started;
    r.placement = {Slice{n, j.gpus}};
    running_.push_back(r);
  }
  Decisions Cycle(Seconds now) {
    auto order = [](const PendingJob& a, const PendingJob& b) {
      return a.queued_since != b.queued_since ? a.queued_since < b.queued_since
                                              : a.spec->id < b.spec->id;
    };
    std::sort(funded_.begin(), funded_.end(), order);
    std::sort(unfunded_.begin(), unfunded_.end(), order);
    Snapshot snap;
    snap.now = now;
    snap.nodes = nodes_;
    snap.pending_funded = funded_;
    snap.pending_unfunded = unfunded_;
    snap.running = running_;
    snap.explain = true;
    return PriorityPolicy(PolicyConfig{}).Cycle(snap);
  }

 private:
  std::vector<Node> nodes_;
  std::deque<JobSpec> specs_;
  std::vector<PendingJob> funded_, unfunded_;
  std::vector<RunningJob> running_;
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
