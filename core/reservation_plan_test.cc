#include "core/reservation_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hg {
namespace {

std::vector<Node> Nodes(const std::vector<std::string>& blocks, int32_t gpus = 8) {
  std::vector<Node> out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    Node n;
    n.id = NodeId(static_cast<int32_t>(i));
    n.name = "n" + std::to_string(i);
    n.gpus = Gpus(gpus);
    n.block = blocks[i];
    out.push_back(n);
  }
  return out;
}

std::vector<int32_t> NodesOf(const ReservationPlan& p) {
  std::vector<int32_t> out;
  for (const Slice& s : p.slices) out.push_back(s.node.value());
  return out;
}

TEST(FirstTimeWith, FreeGpusAreThereNow) {
  const std::vector<Release> rel = {{Seconds(50), 4}};
  EXPECT_EQ(FirstTimeWith(8, 8, rel, Seconds(10)), Seconds(10));
}

TEST(FirstTimeWith, AddsReleasesInTimeOrderUntilTheNeedIsMet) {
  const std::vector<Release> rel = {{Seconds(50), 2}, {Seconds(70), 2}, {Seconds(90), 4}};
  EXPECT_EQ(FirstTimeWith(3, 5, rel, Seconds(10)), Seconds(50));
  EXPECT_EQ(FirstTimeWith(3, 7, rel, Seconds(10)), Seconds(70));
  EXPECT_EQ(FirstTimeWith(3, 11, rel, Seconds(10)), Seconds(90));
  EXPECT_EQ(FirstTimeWith(3, 12, rel, Seconds(10)), kNever);
}

TEST(ChooseReservation, TakesTheNodesReadyEarliest) {
  const auto nodes = Nodes({"b0", "b0", "b0", "b0"});
  const ClusterState cs(nodes, {});
  const std::vector<Seconds> at = {Seconds(40), Seconds(10), kNever, Seconds(20)};
  const ReservationPlan p =
      ChooseReservation(cs.ShapeOf(Gpus(16), Gpus(8)), cs, [&](size_t n) { return at[n]; });
  EXPECT_EQ(p.due, Seconds(20));
  EXPECT_EQ(NodesOf(p), (std::vector<int32_t>{1, 3}));
  for (const Slice& s : p.slices) EXPECT_EQ(s.gpus, Gpus(8));
}

TEST(ChooseReservation, TiesGoToTheLowerNodeIndex) {
  const auto nodes = Nodes({"b0", "b0", "b0"});
  const ClusterState cs(nodes, {});
  const ReservationPlan p =
      ChooseReservation(cs.ShapeOf(Gpus(16), Gpus(8)), cs, [](size_t) { return Seconds(30); });
  EXPECT_EQ(NodesOf(p), (std::vector<int32_t>{0, 1}));
}

TEST(ChooseReservation, KeepsAGangInOneBlockUnlessSpanningIsStrictlyEarlier) {
  // Nodes 0 and 2 (blocks a and b) are ready first; block b alone is ready at 30.
  const auto nodes = Nodes({"a", "a", "b", "b"});
  const ClusterState cs(nodes, {});
  const Shape gang = cs.ShapeOf(Gpus(16), Gpus(8));
  std::vector<Seconds> at = {Seconds(10), Seconds(90), Seconds(10), Seconds(30)};
  auto ready = [&](size_t n) { return at[n]; };
  ReservationPlan p = ChooseReservation(gang, cs, ready);
  EXPECT_EQ(p.due, Seconds(10));  // spanning a and b starts it 20 s earlier
  EXPECT_EQ(NodesOf(p), (std::vector<int32_t>{0, 2}));
  at[3] = Seconds(10);  // now block b alone is as early: it wins
  p = ChooseReservation(gang, cs, ready);
  EXPECT_EQ(p.due, Seconds(10));
  EXPECT_EQ(NodesOf(p), (std::vector<int32_t>{2, 3}));
}

TEST(ChooseReservation, NoPlanWhenTooFewNodesAreEverReady) {
  const auto nodes = Nodes({"b0", "b0"});
  const ClusterState cs(nodes, {});
  const ReservationPlan p = ChooseReservation(
      cs.ShapeOf(Gpus(16), Gpus(8)), cs, [](size_t n) { return n == 0 ? Seconds(5) : kNever; });
  EXPECT_EQ(p.due, kNever);
  EXPECT_TRUE(p.slices.empty());
}

TEST(PlanReservation, CountsFreeGpusAndSkipsNodesNotReady) {
  auto nodes = Nodes({"b0", "b0", "b0"});
  nodes[0].state = NodeState::kDraining;  // free, but takes no new work
  JobSpec spec;
  spec.id = JobId(1);
  spec.gpus = Gpus(8);
  RunningJob busy;  // holds node 2 until 60
  busy.spec = &spec;
  busy.placement = {Slice{NodeId(2), Gpus(8)}};
  const std::vector<RunningJob> running = {busy};
  const ClusterState cs(nodes, running);
  // Node 0 is free but draining, node 1 is free now, node 2 gets 8 GPUs back at 60.
  const std::vector<std::vector<Release>> rel = {{}, {}, {{Seconds(60), 8}}};
  const ReservationPlan p = PlanReservation(cs.ShapeOf(Gpus(16), Gpus(8)), cs, rel, Seconds(0));
  EXPECT_EQ(p.due, Seconds(60));
  EXPECT_EQ(NodesOf(p), (std::vector<int32_t>{1, 2}));
}

}  // namespace
}  // namespace hg
