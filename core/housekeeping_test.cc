#include "core/housekeeping.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

namespace hg {
namespace {

struct World {
  std::vector<Node> nodes;
  std::deque<JobSpec> specs;
  std::vector<RunningJob> running;

  NodeId AddNode(NodeState state = NodeState::kReady) {
    Node n;
    n.id = NodeId(static_cast<int32_t>(nodes.size()));
    n.gpus = Gpus(8);
    n.state = state;
    if (state == NodeState::kDraining) n.drain_cause = DrainCause::kOperator;
    nodes.push_back(n);
    return n.id;
  }
  // A job started at `started` on `placement`; funded when `min_runtime` protects it.
  size_t Run(std::vector<Slice> placement, Seconds started, bool funded,
             Seconds min_runtime = Seconds(0), std::optional<Seconds> max_runtime = std::nullopt) {
    JobSpec s;
    s.id = JobId(static_cast<int64_t>(specs.size()) + 1);
    int32_t g = 0;
    for (const Slice& sl : placement) g += sl.gpus.value();
    s.gpus = Gpus(g);
    s.budget = funded ? BudgetId(1) : kUnfunded;
    s.min_runtime = min_runtime;
    s.max_runtime = max_runtime;
    specs.push_back(s);
    RunningJob r;
    r.spec = &specs.back();
    r.started = started;
    r.placement = std::move(placement);
    running.push_back(r);
    return running.size() - 1;
  }
  JobId IdOf(size_t i) const { return running[i].spec->id; }

  struct Out {
    Decisions d;
    std::vector<uint8_t> stopping;
  };
  Out Cycle(Seconds now, bool honor_contract = true) const {
    Snapshot snap;
    snap.now = now;
    snap.nodes = nodes;
    snap.running = running;
    Out out;
    for (const RunningJob& r : running) out.stopping.push_back(r.stopping);
    Housekeeping(snap, HousekeepingOptions{honor_contract}, out.stopping, out.d);
    return out;
  }
};

const StopDecision* StopOf(const Decisions& d, JobId id) {
  for (const StopDecision& s : d.stops)
    if (s.job == id) return &s;
  return nullptr;
}

TEST(Housekeeping, MaxRuntimeEndsAJobExactlyWhenReached) {
  World w;
  const NodeId n = w.AddNode();
  const size_t j = w.Run({{n, Gpus(4)}}, Seconds(100), true, Hours(1), Hours(2));
  const size_t other = w.Run({{n, Gpus(4)}}, Seconds(100), true, Hours(1));  // no max_runtime
  auto before = w.Cycle(Seconds(100) + Hours(2) - Seconds(1));
  EXPECT_TRUE(before.d.stops.empty());
  EXPECT_FALSE(before.stopping[j]);
  auto at = w.Cycle(Seconds(100) + Hours(2));
  ASSERT_EQ(at.d.stops.size(), 1u);
  const StopDecision& s = at.d.stops[0];
  EXPECT_EQ(s.job, w.IdOf(j));
  EXPECT_EQ(s.reason.code, ReasonCode::kMaxRuntime);
  EXPECT_EQ(s.for_job, JobId(0));
  EXPECT_FALSE(s.violates_contract);
  EXPECT_TRUE(at.stopping[j]);
  EXPECT_FALSE(at.stopping[other]);
  EXPECT_TRUE(at.d.nodes.empty());
}

TEST(Housekeeping, JobsAlreadyStoppingAreLeftAlone) {
  World w;
  const NodeId n = w.AddNode(NodeState::kDraining);
  const size_t j = w.Run({{n, Gpus(8)}}, Seconds(0), false, Seconds(0), Seconds(10));
  w.running[j].stopping = true;
  auto out = w.Cycle(Hours(1));
  EXPECT_TRUE(out.d.stops.empty());
  // The node still holds the job, so it is not drained yet.
  EXPECT_TRUE(out.d.nodes.empty());
}

TEST(Housekeeping, DrainingNodeStopsUnfundedWorkAtOnce) {
  World w;
  w.AddNode();
  const NodeId d = w.AddNode(NodeState::kDraining);
  const size_t u = w.Run({{d, Gpus(8)}}, Hours(1) - Seconds(5), false, Hours(1));
  auto out = w.Cycle(Hours(1));
  const StopDecision* s = StopOf(out.d, w.IdOf(u));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kPreemptDrain);
  EXPECT_EQ(s->reason.a, d.value());
  EXPECT_FALSE(s->violates_contract);
  EXPECT_TRUE(out.stopping[u]);
}

TEST(Housekeeping, JobsOnReadyNodesAreNotTouched) {
  World w;
  const NodeId n = w.AddNode();
  w.Run({{n, Gpus(8)}}, Seconds(0), false);
  auto out = w.Cycle(Hours(100));
  EXPECT_TRUE(out.d.stops.empty());
  EXPECT_TRUE(out.d.nodes.empty());
}

TEST(Housekeeping, ProtectedFundedJobStaysUntilItsProtectionEnds) {
  World w;
  const NodeId d = w.AddNode(NodeState::kDraining);
  const size_t f = w.Run({{d, Gpus(8)}}, Seconds(0), true, Hours(1));
  auto during = w.Cycle(Minutes(59));
  EXPECT_TRUE(during.d.stops.empty());
  EXPECT_FALSE(during.stopping[f]);
  EXPECT_TRUE(during.d.nodes.empty());  // not empty, not drained
  auto after = w.Cycle(Hours(1));
  const StopDecision* s = StopOf(after.d, w.IdOf(f));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kPreemptDrain);
  EXPECT_FALSE(s->violates_contract);
  EXPECT_TRUE(after.stopping[f]);
}

// A drain waits for the contract, not for a session's lease: a sick node is not held for as
// long as someone keeps a session busy.
TEST(Housekeeping, ADrainDoesNotWaitForASessionsLease) {
  World w;
  const NodeId d = w.AddNode(NodeState::kDraining);
  const size_t f = w.Run({{d, Gpus(2)}}, Seconds(0), true, Hours(1), Hours(12));
  w.specs.back().lease = Minutes(30);
  w.running[f].active_at = Hours(2);
  ASSERT_GT(w.running[f].protected_until(), Hours(2));
  auto after = w.Cycle(Hours(2));
  const StopDecision* s = StopOf(after.d, w.IdOf(f));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kPreemptDrain);
  EXPECT_FALSE(s->violates_contract);
}

TEST(Housekeeping, OperatorDeadlineForcesAProtectedJobOff) {
  World w;
  const NodeId d = w.AddNode(NodeState::kDraining);
  w.nodes[0].drain_deadline = Minutes(30);
  const size_t f = w.Run({{d, Gpus(8)}}, Seconds(0), true, Hours(8));
  EXPECT_TRUE(w.Cycle(Minutes(29)).d.stops.empty());
  auto out = w.Cycle(Minutes(30));
  const StopDecision* s = StopOf(out.d, w.IdOf(f));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kPreemptDrainForced);
  EXPECT_EQ(s->reason.a, d.value());
  // A person decided: counted as a manual intervention, not a contract violation.
  EXPECT_FALSE(s->violates_contract);
  EXPECT_TRUE(out.stopping[f]);
}

TEST(Housekeeping, WithoutTheContractProtectedJobsLeaveAtOnceAsViolations) {
  World w;
  const NodeId d = w.AddNode(NodeState::kDraining);
  const size_t f = w.Run({{d, Gpus(4)}}, Seconds(0), true, Hours(1));
  const size_t old = w.Run({{d, Gpus(4)}}, Seconds(0), true, Minutes(1));
  auto out = w.Cycle(Minutes(10), /*honor_contract=*/false);
  const StopDecision* s = StopOf(out.d, w.IdOf(f));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kPreemptDrainForced);
  EXPECT_TRUE(s->violates_contract);
  // A job past its protection is an ordinary drain stop.
  const StopDecision* o = StopOf(out.d, w.IdOf(old));
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->reason.code, ReasonCode::kPreemptDrain);
  EXPECT_FALSE(o->violates_contract);
}

TEST(Housekeeping, AMultiNodeJobLeavesIfAnyOfItsNodesDrains) {
  World w;
  const NodeId a = w.AddNode();
  const NodeId d = w.AddNode(NodeState::kDraining);
  const size_t j = w.Run({{a, Gpus(8)}, {d, Gpus(8)}}, Seconds(0), false);
  auto out = w.Cycle(Minutes(1));
  const StopDecision* s = StopOf(out.d, w.IdOf(j));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason.code, ReasonCode::kPreemptDrain);
  EXPECT_EQ(s->reason.a, d.value());
}

TEST(Housekeeping, EmptyDrainingNodesBecomeDrained) {
  World w;
  w.AddNode();                                       // ready, empty: stays
  const NodeId e = w.AddNode(NodeState::kDraining);  // empty: drained
  const NodeId busy = w.AddNode(NodeState::kDraining);
  w.AddNode(NodeState::kLost);
  w.AddNode(NodeState::kDrained);
  w.Run({{busy, Gpus(8)}}, Seconds(0), true, Hours(1));
  auto out = w.Cycle(Minutes(5));
  ASSERT_EQ(out.d.nodes.size(), 1u);
  EXPECT_EQ(out.d.nodes[0].node, e);
  EXPECT_EQ(out.d.nodes[0].to, NodeState::kDrained);
  EXPECT_EQ(out.d.nodes[0].reason.code, ReasonCode::kNodeDrained);
  EXPECT_EQ(out.d.nodes[0].reason.a, e.value());
  EXPECT_TRUE(out.d.stops.empty());
}

// When each job has left a draining node at the latest, as Housekeeping stops them: the grace
// is 120 s (JobSpec's default) after the stop.
TEST(LeavesDrainBy, FollowsTheRuleHousekeepingStopsBy) {
  World w;
  const NodeId n = w.AddNode(NodeState::kDraining);
  const Seconds now = Hours(10);
  const size_t unfunded = w.Run({{n, Gpus(1)}}, Hours(9), false);
  const size_t protected_job = w.Run({{n, Gpus(1)}}, Hours(9), true, Hours(4));
  const size_t past = w.Run({{n, Gpus(1)}}, Hours(1), true, Hours(4));
  const size_t short_max = w.Run({{n, Gpus(1)}}, Hours(9), true, Hours(4), Hours(2));
  const size_t leaving = w.Run({{n, Gpus(1)}}, Hours(9), true, Hours(4));
  w.running[leaving].stopping = true;
  w.running[leaving].stop_at = now + Seconds(30);
  const Node& node = w.nodes[0];
  auto by = [&](size_t i) { return LeavesDrainBy(w.running[i], node, now); };
  EXPECT_EQ(by(unfunded), now + Seconds(120));
  EXPECT_EQ(by(protected_job), Hours(13) + Seconds(120));  // its protection ends at 13 h
  EXPECT_EQ(by(past), now + Seconds(120));
  EXPECT_EQ(by(short_max), Hours(11) + Seconds(120));  // max_runtime before the protection
  EXPECT_EQ(by(leaving), now + Seconds(30));
  // An operator's deadline before the protection ends: the deadline, then the grace.
  w.nodes[0].drain_deadline = Hours(12);
  EXPECT_EQ(LeavesDrainBy(w.running[protected_job], w.nodes[0], now), Hours(12) + Seconds(120));
  // And Housekeeping agrees: at 13 h the protected job is stopped, not before.
  w.nodes[0].drain_deadline.reset();
  auto stopped_at = [&](Seconds t) {
    for (const StopDecision& s : w.Cycle(t).d.stops)
      if (s.job == w.IdOf(protected_job)) return true;
    return false;
  };
  EXPECT_FALSE(stopped_at(Hours(13) - Seconds(1)));
  EXPECT_TRUE(stopped_at(Hours(13)));
}

}  // namespace
}  // namespace hg
