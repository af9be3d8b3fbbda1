#include "core/preemption.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <string>
#include <vector>

namespace hg {
namespace {

constexpr Seconds kNow = Hours(10);

struct World {
  std::vector<Node> nodes;
  std::deque<JobSpec> specs;
  std::vector<RunningJob> running;

  NodeId AddNode(int32_t gpus, std::string block = "A") {
    Node n;
    n.id = NodeId(static_cast<int32_t>(nodes.size()));
    n.gpus = Gpus(gpus);
    n.block = std::move(block);
    nodes.push_back(n);
    return n.id;
  }
  // A running job on the given slices, started `age` before kNow; returns its index.
  size_t Run(std::vector<Slice> placement, bool funded, Seconds age, bool resumable = false,
             Seconds checkpoint_age = Seconds(-1)) {
    JobSpec s;
    s.id = JobId(100 + static_cast<int64_t>(specs.size()));
    int32_t g = 0;
    for (const Slice& sl : placement) g += sl.gpus.value();
    s.gpus = Gpus(g);
    s.budget = funded ? BudgetId(1) : kUnfunded;
    s.resumable = resumable;
    specs.push_back(s);
    RunningJob r;
    r.spec = &specs.back();
    r.started = kNow - age;
    r.placement = std::move(placement);
    if (checkpoint_age.value() >= 0) r.checkpointed = kNow - checkpoint_age;
    running.push_back(r);
    return running.size() - 1;
  }

  // The `stopping` argument of Plan with one running job leaving.
  std::vector<uint8_t> Leaving(size_t i) const {
    std::vector<uint8_t> stopping(running.size(), 0);
    stopping[i] = true;
    return stopping;
  }

  std::optional<PreemptionPlan> Plan(
      const Shape& shape, int32_t gpus, std::function<bool(size_t)> eligible = nullptr,
      std::vector<uint8_t> stopping = {}, bool may_use_reserved = false,
      const ClusterState* cs_in = nullptr, std::span<const int32_t> may_leave = {},
      std::span<const int32_t> visit = {}, std::span<const Soon> soon = {}) const {
    const NodeJobs on_node(running, nodes.size());
    if (stopping.empty()) stopping.assign(running.size(), 0);
    if (!eligible) eligible = [](size_t) { return true; };
    const ClusterState cs(nodes, running);
    auto plan = PlanPreemption(shape, Gpus(gpus), cs_in ? *cs_in : cs, running, on_node, stopping,
                               eligible, kNow, may_use_reserved, may_leave, visit, soon);
    // A cycle gives every job's slice size, worked out once: the plan must be the same.
    std::vector<int32_t> slice_gpus;
    for (const RunningJob& r : running) slice_gpus.push_back(UniformSliceGpus(r));
    PreemptionScratch scratch;
    const auto given =
        PlanPreemption(shape, Gpus(gpus), cs_in ? *cs_in : cs, running, on_node, stopping, eligible,
                       kNow, may_use_reserved, may_leave, visit, soon, slice_gpus, &scratch);
    EXPECT_EQ(plan.has_value(), given.has_value());
    if (plan && given) {
      EXPECT_EQ(plan->slices, given->slices);
      EXPECT_EQ(plan->victims, given->victims);
      EXPECT_EQ(plan->soon, given->soon);
    }
    return plan;
  }
};

std::set<int32_t> NodesOf(const PreemptionPlan& p) {
  std::set<int32_t> out;
  for (const Slice& s : p.slices) out.insert(s.node.value());
  return out;
}

// Free GPUs counted as none (a job the debug headroom keeps from them): the slice comes from
// victims, here the unfunded job on the node with free GPUs, which lost less than the one on the
// full node; counted, the free GPUs make a plan that stops nothing.
TEST(PlanPreemption, WithoutTheFreeGpusEverySliceComesFromVictims) {
  World w;
  const NodeId full = w.AddNode(8);
  const NodeId half = w.AddNode(8);
  w.Run({{full, Gpus(8)}}, false, Hours(2));
  const size_t young = w.Run({{half, Gpus(4)}}, false, Hours(1));
  const NodeJobs on_node(w.running, w.nodes.size());
  const std::vector<uint8_t> stopping(w.running.size(), 0);
  const ClusterState cs(w.nodes, w.running);
  auto any = [](size_t) { return true; };
  const auto counted =
      PlanPreemption(Shape{2, 1, 0}, Gpus(2), cs, w.running, on_node, stopping, any, kNow, false);
  ASSERT_TRUE(counted.has_value());
  EXPECT_TRUE(counted->victims.empty());
  const auto uncounted = PlanPreemption(Shape{2, 1, 0}, Gpus(2), cs, w.running, on_node, stopping,
                                        any, kNow, false, {}, {}, {}, {}, nullptr, false);
  ASSERT_TRUE(uncounted.has_value());
  EXPECT_EQ(uncounted->victims, std::vector<size_t>{young});
  EXPECT_EQ(uncounted->slices, (std::vector<Slice>{{half, Gpus(2)}}));
}

TEST(LostWork, SinceStartOrLastCheckpointOfResumableJobs) {
  World w;
  const NodeId n = w.AddNode(8);
  const size_t plain = w.Run({{n, Gpus(4)}}, true, Seconds(1000));
  const size_t resumable = w.Run({{n, Gpus(2)}}, true, Seconds(1000), true, Seconds(100));
  const size_t not_resumable = w.Run({{n, Gpus(2)}}, true, Seconds(1000), false, Seconds(100));
  EXPECT_DOUBLE_EQ(LostWork(w.running[plain], kNow), 4000.0);
  EXPECT_DOUBLE_EQ(LostWork(w.running[resumable], kNow), 200.0);
  // A job that cannot resume loses its whole run whatever it saved.
  EXPECT_DOUBLE_EQ(LostWork(w.running[not_resumable], kNow), 2000.0);
  // A checkpoint from a previous run (before this start) does not count.
  const size_t old_ckpt = w.Run({{n, Gpus(1)}}, true, Seconds(1000), true, Seconds(5000));
  EXPECT_DOUBLE_EQ(LostWork(w.running[old_ckpt], kNow), 1000.0);
}

TEST(GpusOn, ReadsAnUnevenGangsSlicesAndTrustsAUniformSize) {
  World w;
  for (int i = 0; i < 4; ++i) w.AddNode(8);
  const size_t even = w.Run({{NodeId(0), Gpus(8)}, {NodeId(1), Gpus(8)}}, true, Hours(1));
  const size_t uneven = w.Run({{NodeId(2), Gpus(8)}, {NodeId(3), Gpus(3)}}, true, Hours(1));
  EXPECT_EQ(UniformSliceGpus(w.running[even]), 8);
  EXPECT_EQ(UniformSliceGpus(w.running[uneven]), 0);
  EXPECT_EQ(GpusOn(w.running[even], NodeId(1), 8), 8);
  EXPECT_EQ(GpusOn(w.running[uneven], NodeId(2), 0), 8);
  EXPECT_EQ(GpusOn(w.running[uneven], NodeId(3), 0), 3);
  EXPECT_EQ(GpusOn(w.running[uneven], NodeId(0), 0), 0);  // not one of its nodes
}

TEST(PlanPreemption, UnfundedVictimsArePreferredOverFundedOnes) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  w.Run({{a, Gpus(8)}}, true, Seconds(10));                 // funded, almost nothing lost
  const size_t u = w.Run({{b, Gpus(8)}}, false, Hours(5));  // unfunded, much lost
  auto plan = w.Plan(Shape{8, 1, 0}, 8);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{u}));
  EXPECT_EQ(plan->slices, (std::vector<Slice>{{b, Gpus(8)}}));
}

TEST(PlanPreemption, UnfundedFirstAlsoWithinOneNode) {
  World w;
  const NodeId a = w.AddNode(8);
  w.Run({{a, Gpus(4)}}, true, Seconds(10));
  const size_t u = w.Run({{a, Gpus(4)}}, false, Hours(5));
  auto plan = w.Plan(Shape{4, 1, 0}, 4);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{u}));
}

TEST(PlanPreemption, LeastLostWorkIsChosen) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  const NodeId c = w.AddNode(8);
  w.Run({{a, Gpus(8)}}, false, Seconds(1000));
  const size_t young = w.Run({{b, Gpus(8)}}, false, Seconds(100));
  w.Run({{c, Gpus(8)}}, false, Seconds(5000));
  auto plan = w.Plan(Shape{8, 1, 0}, 8);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{young}));
  EXPECT_EQ(NodesOf(*plan), (std::set<int32_t>{b.value()}));
}

TEST(PlanPreemption, FreeGpusReduceWhatMustBePreempted) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  // a: two 4-GPU jobs; b: one 6-GPU job with 2 free beside it, but it lost more work.
  w.Run({{a, Gpus(4)}}, false, Seconds(100));
  w.Run({{a, Gpus(4)}}, false, Seconds(100));
  const size_t big = w.Run({{b, Gpus(6)}}, false, Seconds(120));
  auto plan = w.Plan(Shape{8, 1, 0}, 8);
  ASSERT_TRUE(plan.has_value());
  // Lost work plus the grace wait: a costs 2 x (400 + 960) GPU-s, b 720 + 960: b wins.
  EXPECT_EQ(plan->victims, (std::vector<size_t>{big}));
  // Only as many victims as needed: 2 GPUs on a node with 4 free plus a 4-GPU job need none.
  auto none = w.Plan(Shape{2, 1, 0}, 2);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->victims.empty());
}

TEST(PlanPreemption, CheckpointsMakeResumableJobsCheaperVictims) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  w.Run({{a, Gpus(8)}}, false, Hours(2), true);  // no checkpoint
  const size_t saved = w.Run({{b, Gpus(8)}}, false, Hours(3), true, Minutes(5));
  auto plan = w.Plan(Shape{8, 1, 0}, 8);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{saved}));
}

TEST(PlanPreemption, GangPlanStaysInsideOneBlock) {
  World w;
  const NodeId a0 = w.AddNode(8, "A");
  const NodeId a1 = w.AddNode(8, "A");
  const NodeId b0 = w.AddNode(8, "B");
  const NodeId b1 = w.AddNode(8, "B");
  // The two cheapest nodes overall are a0 and b0, in different blocks.
  const size_t va0 = w.Run({{a0, Gpus(8)}}, false, Seconds(10));
  const size_t va1 = w.Run({{a1, Gpus(8)}}, false, Seconds(1000));
  w.Run({{b0, Gpus(8)}}, false, Seconds(20));
  w.Run({{b1, Gpus(8)}}, false, Seconds(1100));
  auto plan = w.Plan(Shape{8, 2, 0}, 16);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(NodesOf(*plan), (std::set<int32_t>{a0.value(), a1.value()}));
  EXPECT_EQ(plan->victims, (std::vector<size_t>{va0, va1}));
}

TEST(PlanPreemption, GangSpansBlocksWhenNoBlockSuffices) {
  World w;
  const NodeId a0 = w.AddNode(8, "A");
  const NodeId b0 = w.AddNode(8, "B");
  const size_t v0 = w.Run({{a0, Gpus(8)}}, false, Seconds(10));
  const size_t v1 = w.Run({{b0, Gpus(8)}}, false, Seconds(10));
  auto plan = w.Plan(Shape{8, 2, 0}, 16);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(NodesOf(*plan), (std::set<int32_t>{a0.value(), b0.value()}));
  EXPECT_EQ(plan->victims, (std::vector<size_t>{v0, v1}));
}

TEST(PlanPreemption, AMultiNodeVictimIsListedOnce) {
  World w;
  const NodeId a0 = w.AddNode(8, "A");
  const NodeId a1 = w.AddNode(8, "A");
  const size_t v = w.Run({{a0, Gpus(8)}, {a1, Gpus(8)}}, false, Seconds(10));
  auto plan = w.Plan(Shape{8, 2, 0}, 16);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{v}));
}

TEST(PlanPreemption, IneligibleAndStoppingJobsAreNeverChosen) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  const NodeId c = w.AddNode(8);
  const size_t protected_job = w.Run({{a, Gpus(8)}}, true, Seconds(1));
  const size_t leaving = w.Run({{b, Gpus(8)}}, false, Seconds(1));
  const size_t costly = w.Run({{c, Gpus(8)}}, true, Hours(9));
  auto eligible = [&](size_t i) { return i != protected_job; };
  const std::vector<uint8_t> stopping = w.Leaving(leaving);
  auto plan = w.Plan(Shape{8, 1, 0}, 8, eligible, stopping);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{costly}));
  // With the last one ineligible too, there is no plan.
  auto none = w.Plan(
      Shape{8, 1, 0}, 8, [&](size_t i) { return i != protected_job && i != costly; }, stopping);
  EXPECT_FALSE(none.has_value());
}

// A leaving 8-GPU job whose preemptor takes 2 leaves 6 spare on its node: a 2-GPU job waits for
// them rather than stop funded work, and says on which node and how many. Unfunded work still
// goes first: it may be preempted at any time.
TEST(PlanPreemption, SpareGpusOfLeavingJobsComeAfterUnfundedAndBeforeFundedVictims) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  const size_t leaving = w.Run({{a, Gpus(8)}}, false, Hours(1));
  const size_t funded = w.Run({{b, Gpus(8)}}, true, Minutes(1));  // little work to lose
  const std::vector<uint8_t> stopping = w.Leaving(leaving);
  std::vector<Soon> soon(w.nodes.size());
  soon[0] = Soon{6, kNow + Seconds(120)};
  auto plan = w.Plan(Shape{2, 1, 0}, 2, nullptr, stopping, false, nullptr, {}, {}, soon);
  ASSERT_TRUE(plan.has_value());
  EXPECT_TRUE(plan->victims.empty());
  EXPECT_EQ(plan->slices, (std::vector<Slice>{{a, Gpus(2)}}));
  EXPECT_EQ(plan->soon, (std::vector<Slice>{{a, Gpus(2)}}));
  // Without them the same job stops the funded one.
  auto without = w.Plan(Shape{2, 1, 0}, 2, nullptr, stopping);
  ASSERT_TRUE(without.has_value());
  EXPECT_EQ(without->victims, (std::vector<size_t>{funded}));
  EXPECT_TRUE(without->soon.empty());
  // An unfunded job elsewhere is stopped rather than waited around.
  const NodeId c = w.AddNode(8);
  const size_t sweep = w.Run({{c, Gpus(8)}}, false, Minutes(1));
  const std::vector<uint8_t> st = w.Leaving(leaving);
  soon.resize(w.nodes.size());
  auto unfunded = w.Plan(Shape{2, 1, 0}, 2, nullptr, st, false, nullptr, {}, {}, soon);
  ASSERT_TRUE(unfunded.has_value());
  EXPECT_EQ(unfunded->victims, (std::vector<size_t>{sweep}));
  EXPECT_TRUE(unfunded->soon.empty());
}

// Spare GPUs short of the need are topped up with a victim on the same node.
TEST(PlanPreemption, SpareGpusShortOfTheNeedAreToppedUpWithAVictim) {
  World w;
  const NodeId c = w.AddNode(8);
  const size_t going = w.Run({{c, Gpus(4)}}, false, Hours(1));
  const size_t funded = w.Run({{c, Gpus(4)}}, true, Minutes(1));
  const std::vector<uint8_t> stopping = w.Leaving(going);
  std::vector<Soon> soon(1, Soon{3, kNow + Seconds(30)});
  auto plan = w.Plan(Shape{6, 1, 0}, 6, nullptr, stopping, false, nullptr, {}, {}, soon);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{funded}));
  EXPECT_EQ(plan->soon, (std::vector<Slice>{{c, Gpus(3)}}));
}

// Spare GPUs on reserved GPUs are not waited for by a job that may not use reserved GPUs: the
// reservation may take them when they come free.
TEST(PlanPreemption, SpareGpusOnReservedGpusOnlyForJobsThatMayUseThem) {
  World w;
  const NodeId a = w.AddNode(8);
  const size_t leaving = w.Run({{a, Gpus(6)}}, false, Hours(1));
  const std::vector<uint8_t> stopping = w.Leaving(leaving);
  ClusterState cs(w.nodes, w.running);
  cs.Reserve(std::vector<Slice>{{a, Gpus(2)}});
  std::vector<Soon> soon(1, Soon{6, kNow + Seconds(120)});
  EXPECT_FALSE(w.Plan(Shape{4, 1, 0}, 4, nullptr, stopping, false, &cs, {}, {}, soon));
  auto allowed = w.Plan(Shape{4, 1, 0}, 4, nullptr, stopping, true, &cs, {}, {}, soon);
  ASSERT_TRUE(allowed.has_value());
  EXPECT_EQ(allowed->soon, (std::vector<Slice>{{a, Gpus(2)}}));
}

TEST(PlanPreemption, InfeasibleRequestsGiveNullopt) {
  World w;
  const NodeId a = w.AddNode(4);
  const NodeId b = w.AddNode(4);
  w.Run({{a, Gpus(4)}}, false, Seconds(1));
  w.Run({{b, Gpus(4)}}, false, Seconds(1));
  EXPECT_FALSE(w.Plan(Shape{8, 1, 0}, 8).has_value());   // no node is that large
  EXPECT_FALSE(w.Plan(Shape{4, 3, 0}, 12).has_value());  // not enough nodes
  EXPECT_TRUE(w.Plan(Shape{4, 2, 0}, 8).has_value());
}

TEST(PlanPreemption, NodesOutOfServiceAreNotPlannedOn) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  w.nodes[static_cast<size_t>(a.value())].state = NodeState::kDraining;
  w.Run({{a, Gpus(8)}}, false, Seconds(1));
  const size_t vb = w.Run({{b, Gpus(8)}}, false, Hours(5));
  auto plan = w.Plan(Shape{8, 1, 0}, 8);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{vb}));
}

TEST(PlanPreemption, ReservedGpusCountOnlyWhenAllowed) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  const size_t va = w.Run({{a, Gpus(4)}}, false, Seconds(100));  // 4 free, reserved below
  w.Run({{b, Gpus(8)}}, false, Seconds(1000));
  ClusterState cs(w.nodes, w.running);
  const Slice hold{a, Gpus(4)};
  cs.Reserve(std::span<const Slice>(&hold, 1));
  auto no = w.Plan(Shape{4, 1, 0}, 4, nullptr, {}, false, &cs);
  ASSERT_TRUE(no.has_value());
  // a's free GPUs are reserved: its job must go too.
  EXPECT_EQ(no->victims, (std::vector<size_t>{va}));
  EXPECT_EQ(no->slices, (std::vector<Slice>{{a, Gpus(4)}}));
  auto yes = w.Plan(Shape{4, 1, 0}, 4, nullptr, {}, true, &cs);
  ASSERT_TRUE(yes.has_value());
  EXPECT_TRUE(yes->victims.empty());  // a's free GPUs suffice
  EXPECT_EQ(yes->slices, (std::vector<Slice>{{a, Gpus(4)}}));
}

TEST(PlanPreemption, RemainderSliceIsPlannedOnAnotherNode) {
  World w;
  const NodeId a = w.AddNode(8, "A");
  const NodeId b = w.AddNode(8, "A");
  const NodeId c = w.AddNode(8, "A");
  w.Run({{a, Gpus(8)}}, false, Seconds(10));
  w.Run({{b, Gpus(8)}}, false, Seconds(10));
  w.Run({{c, Gpus(4)}}, false, Seconds(1000));  // too costly to clear for a full slice
  auto plan = w.Plan(Shape{8, 2, 4}, 20);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->slices.size(), 3u);
  EXPECT_EQ(NodesOf(*plan).size(), 3u);
  int32_t total = 0;
  for (const Slice& s : plan->slices) total += s.gpus.value();
  EXPECT_EQ(total, 20);
  // c has 4 free: the remainder fits there with no victim, so only a and b's jobs go.
  EXPECT_EQ(plan->victims, (std::vector<size_t>{0, 1}));
}

TEST(PlanPreemption, NodesBelowTheMayLeaveBoundAreNotAskedAbout) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  const NodeId c = w.AddNode(8);
  const size_t on_a = w.Run({{a, Gpus(8)}}, true, Seconds(10));  // cheapest, but "protected"
  const size_t on_b = w.Run({{b, Gpus(6)}}, true, Seconds(500));
  const size_t on_c = w.Run({{c, Gpus(8)}}, true, Seconds(900));
  // The caller's bound: a's job may not leave (no GPUs), b's and c's may.
  const std::vector<int32_t> may_leave = {0, 6, 8};
  std::set<size_t> asked;
  auto eligible = [&](size_t i) {
    asked.insert(i);
    return i != on_a;
  };
  auto plan = w.Plan(Shape{8, 1, 0}, 8, eligible, {}, false, nullptr, may_leave);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{on_b}));  // b: 2 free + 6 of the cheaper job
  EXPECT_EQ(asked, (std::set<size_t>{on_b, on_c}));       // a's job was never asked about
  // The same plan without the bound, which asks about every job.
  asked.clear();
  auto unbounded = w.Plan(Shape{8, 1, 0}, 8, eligible);
  ASSERT_TRUE(unbounded.has_value());
  EXPECT_EQ(unbounded->victims, plan->victims);
  EXPECT_EQ(unbounded->slices, plan->slices);
  EXPECT_EQ(asked, (std::set<size_t>{on_a, on_b, on_c}));
  // A bound too low everywhere: no plan, and no job asked about.
  asked.clear();
  const std::vector<int32_t> none = {0, 0, 0};
  EXPECT_FALSE(w.Plan(Shape{8, 1, 0}, 8, eligible, {}, false, nullptr, none).has_value());
  EXPECT_TRUE(asked.empty());
}

// The caller may list the nodes worth a look (a superset of those that could host a full
// slice); the plan looks at no other node's jobs for them, but seeks an uneven gang's smaller
// last slice anywhere.
TEST(PlanPreemption, OnlyTheListedNodesAreLookedAtForFullSlices) {
  World w;
  const NodeId a = w.AddNode(8);
  const NodeId b = w.AddNode(8);
  const NodeId c = w.AddNode(8);
  const size_t on_a = w.Run({{a, Gpus(8)}}, false, Seconds(10));  // the cheapest victim
  const size_t on_b = w.Run({{b, Gpus(8)}}, false, Seconds(500));
  w.Run({{c, Gpus(4)}}, false, Seconds(900));  // c: 4 free
  std::set<size_t> asked;
  auto eligible = [&](size_t i) {
    asked.insert(i);
    return true;
  };
  const std::vector<int32_t> only_b = {1};
  auto plan = w.Plan(Shape{8, 1, 0}, 8, eligible, {}, false, nullptr, {}, only_b);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<size_t>{on_b}));
  EXPECT_EQ(asked, (std::set<size_t>{on_b}));
  // Unlisted, a would have been chosen.
  auto anywhere = w.Plan(Shape{8, 1, 0}, 8, eligible);
  ASSERT_TRUE(anywhere.has_value());
  EXPECT_EQ(anywhere->victims, (std::vector<size_t>{on_a}));
  // 12 GPUs: the full slice on b (listed), the last 4 on c's free GPUs (not listed), no victim
  // there.
  auto uneven = w.Plan(Shape{8, 1, 4}, 12, eligible, {}, false, nullptr, {}, only_b);
  ASSERT_TRUE(uneven.has_value());
  EXPECT_EQ(uneven->victims, (std::vector<size_t>{on_b}));
  EXPECT_EQ(NodesOf(*uneven), (std::set<int32_t>{b.value(), c.value()}));
}

}  // namespace
}  // namespace hg
