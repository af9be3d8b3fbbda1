#include "core/running_index.h"

#include <gtest/gtest.h>

#include <vector>

namespace hg {
namespace {

RunningJob On(std::vector<Slice> placement) {
  RunningJob r;
  r.placement = std::move(placement);
  return r;
}

std::vector<size_t> Jobs(const NodeJobs& ix, size_t node) {
  const std::span<const size_t> s = ix[node];
  return {s.begin(), s.end()};
}

TEST(NodeJobs, ListsEachNodesJobsInIndexOrder) {
  const NodeId n0(0), n1(1), n2(2), n3(3);
  const std::vector<RunningJob> running = {
      On({{n2, Gpus(4)}}),                 // 0
      On({{n0, Gpus(8)}, {n2, Gpus(4)}}),  // 1: a gang on two nodes
      On({{n0, Gpus(2)}}),                 // 2
      On({{n3, Gpus(1)}, {n3, Gpus(1)}}),  // 3: two slices on one node
  };
  const NodeJobs ix(running, 4);
  ASSERT_EQ(ix.size(), 4u);
  EXPECT_EQ(Jobs(ix, 0), (std::vector<size_t>{1, 2}));
  EXPECT_TRUE(Jobs(ix, 1).empty());
  EXPECT_EQ(Jobs(ix, 2), (std::vector<size_t>{0, 1}));
  // Listed once per slice, as a vector per node listed it before.
  EXPECT_EQ(Jobs(ix, 3), (std::vector<size_t>{3, 3}));
}

TEST(NodeJobs, NoRunningJobsAndNoNodes) {
  const NodeJobs none({}, 3);
  ASSERT_EQ(none.size(), 3u);
  for (size_t n = 0; n < 3; ++n) EXPECT_TRUE(none[n].empty());
  EXPECT_EQ(NodeJobs().size(), 0u);
  EXPECT_EQ(NodeJobs({}, 0).size(), 0u);
}

TEST(IndexRunning, MarksLeavingJobsAndTheLatestKillOfEachWaitersVictims) {
  std::vector<Node> nodes(2);
  nodes[0].id = NodeId(0);
  nodes[1].id = NodeId(1);
  std::vector<RunningJob> running = {On({{NodeId(0), Gpus(1)}}), On({{NodeId(1), Gpus(1)}}),
                                     On({{NodeId(1), Gpus(1)}})};
  running[0].stopping = true;
  running[0].stop_for = JobId(7);
  running[0].stop_at = Seconds(100);
  running[2].stopping = true;
  running[2].stop_for = JobId(7);
  running[2].stop_at = Seconds(160);
  Snapshot snap;
  snap.nodes = nodes;
  snap.running = running;
  const RunningIndex ix = IndexRunning(snap);
  EXPECT_EQ(ix.stopping, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(Jobs(ix.on_node, 1), (std::vector<size_t>{1, 2}));
  ASSERT_EQ(ix.waiting.count(7), 1u);
  EXPECT_EQ(ix.waiting.at(7), Seconds(160));
}

}  // namespace
}  // namespace hg
