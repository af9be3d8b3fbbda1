// The funded wait split (sim/wait_split.h): the classification of a shape against the room on
// the nodes, and the engine's accounting on hand-made and generated scenarios.
#include "sim/wait_split.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/policy.h"
#include "sim/engine.h"
#include "sim/rng.h"
#include "sim/test_job.h"

namespace hg::sim {
namespace {

TEST(RoomIndex, ClassifiesByTotalThenByShape) {
  const std::vector<int32_t> avail = {3, 5, 8, 0};  // 16 GPUs a funded job could have at once
  const RoomIndex room(avail);
  EXPECT_EQ(room.Classify(Shape{1, 1, 0}), WaitRoom::kPlaceable);
  EXPECT_EQ(room.Classify(Shape{8, 1, 0}), WaitRoom::kPlaceable);
  EXPECT_EQ(room.Classify(Shape{8, 2, 0}), WaitRoom::kFragmented);   // 16 in total, one whole node
  EXPECT_EQ(room.Classify(Shape{5, 2, 0}), WaitRoom::kPlaceable);    // 5 and 8
  EXPECT_EQ(room.Classify(Shape{4, 3, 0}), WaitRoom::kFragmented);   // 12 <= 16, two nodes have 4
  EXPECT_EQ(room.Classify(Shape{8, 1, 5}), WaitRoom::kPlaceable);    // 8 and then 5 elsewhere
  EXPECT_EQ(room.Classify(Shape{8, 1, 6}), WaitRoom::kFragmented);   // no second node with 6
  EXPECT_EQ(room.Classify(Shape{8, 2, 1}), WaitRoom::kShort);        // 17 > 16
  EXPECT_EQ(room.Classify(Shape{16, 1, 0}), WaitRoom::kFragmented);  // no node that large
  EXPECT_EQ(RoomIndex(std::vector<int32_t>{}).Classify(Shape{1, 1, 0}), WaitRoom::kShort);
}

// Funded jobs are protected for their whole run (up to the cap), so only their ends free GPUs.
SimJob Job(int64_t id, int64_t submit, int32_t gpus, std::string budget, int64_t duration) {
  SimJob j = TestJob(id, submit, gpus, std::move(budget), duration);
  if (!j.budget.empty()) j.spec.min_runtime = Seconds(std::min<int64_t>(duration, 28800));
  return j;
}

SimResult RunScenario(const Scenario& sc, const std::string& policy_name = "hourglass") {
  SimOptions opt;
  auto policy = MakePolicy(policy_name, opt.policy);
  EXPECT_TRUE(policy.has_value());
  auto r = Simulate(sc, **policy, opt);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return *r;
}

const WaitSplit& SplitOf(const SimResult& r, int32_t gpus) {
  static const WaitSplit kNone;
  auto it = r.funded_wait_by_gpus.find(gpus);
  return it == r.funded_wait_by_gpus.end() ? kNone : it->second;
}

// Two nodes of 8 GPUs. Jobs 1 and 2 (5 GPUs each, protected for their whole run) land on
// different nodes and leave 3 + 3 free. Job 3 asks for 6 GPUs on one node: 6 are free, but not
// together, so it waits fragmented until job 2 ends at 1 h and it takes that node. Job 4 asks for
// 10: it is short of GPUs (6, then 5 while job 3 runs) until job 3 ends 10 minutes later and
// leaves 8 + 3.
TEST(WaitSplit, FragmentedWhileEnoughGpusAreFreeApartShortWhileTooFewAre) {
  Scenario sc;
  sc.name = "split";
  sc.end = Hours(6);
  sc.nodes = {NodeSpec{"n0", 8, "b0", 0}, NodeSpec{"n1", 8, "b0", 0}};
  sc.budgets = {BudgetSpec{"team", "", 1.0, std::nullopt, {}, 0}};
  sc.jobs = {Job(1, 0, 5, "team", 7200), Job(2, 0, 5, "team", 3600), Job(3, 0, 6, "team", 600),
             Job(4, 0, 10, "team", 600)};
  const SimResult r = RunScenario(sc);
  ASSERT_EQ(r.jobs[2].waits, (std::vector<Seconds>{Hours(1)}));
  ASSERT_EQ(r.jobs[3].waits, (std::vector<Seconds>{Hours(1) + Minutes(10)}));
  const WaitSplit& six = SplitOf(r, 6);
  EXPECT_DOUBLE_EQ(six.fragmented, 1.0);
  EXPECT_DOUBLE_EQ(six.short_of_gpus + six.placeable + six.victims_leaving, 0.0);
  const WaitSplit& ten = SplitOf(r, 10);
  EXPECT_DOUBLE_EQ(ten.short_of_gpus, 4200.0 / 3600.0);
  EXPECT_DOUBLE_EQ(ten.fragmented + ten.placeable + ten.victims_leaving, 0.0);
  EXPECT_DOUBLE_EQ(SplitOf(r, 5).total(), 0.0);  // jobs 1 and 2 started at once
  // All four are batch jobs: per class, the same parts summed.
  ASSERT_EQ(r.funded_wait_by_class.size(), 1u);
  const WaitSplit& batch = r.funded_wait_by_class.at("batch");
  EXPECT_DOUBLE_EQ(batch.fragmented, 1.0);
  EXPECT_DOUBLE_EQ(batch.short_of_gpus, 4200.0 / 3600.0);
  EXPECT_DOUBLE_EQ(batch.placeable + batch.victims_leaving, 0.0);
}

// An unfunded job holds the node; a funded one arrives at 600 s and stops it. While the victim
// uses its 60 s of grace, the funded job waits for it to leave, although unfunded GPUs count as
// room: the wait is the victims', not the policy's or the cluster's.
TEST(WaitSplit, AWaitForStoppedVictimsCountsAsVictimsLeaving) {
  const Scenario sc = UnfundedThenFundedOnOneNode("grace");
  const SimResult r = RunScenario(sc);
  ASSERT_EQ(r.jobs[1].waits, (std::vector<Seconds>{Seconds(60)}));
  const WaitSplit& w = SplitOf(r, 8);
  EXPECT_DOUBLE_EQ(w.victims_leaving, 60.0 / 3600.0);
  EXPECT_DOUBLE_EQ(w.short_of_gpus + w.fragmented + w.placeable, 0.0);
}

// On generated scenarios where every job finishes before the end, under every policy, the split
// adds up to the funded jobs' waits exactly: each waiting second is counted once, in one part.
// The scenarios reach every part, so the sum is not met by one part alone.
TEST(WaitSplit, PartsAddUpToTheFundedJobsWaits_GeneratedScenarios) {
  WaitSplit reached;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    Scenario sc;
    sc.name = "gen";
    sc.end = Days(30);
    for (int n = 0; n < 4; ++n)
      sc.nodes.push_back(NodeSpec{"n" + std::to_string(n), 8, n < 2 ? "b0" : "b1", 0});
    sc.budgets = {BudgetSpec{"a", "", 1.0, std::nullopt, {}, 0},
                  BudgetSpec{"b", "", 2.0, std::nullopt, {}, 0}};
    static const int32_t kSizes[] = {1, 2, 4, 6, 8, 12, 16, 24};
    for (int i = 0; i < 60; ++i) {
      const auto gpus = kSizes[rng.UniformInt(0, 7)];
      const int64_t budget = rng.UniformInt(0, 2);
      SimJob j = Job(i + 1, rng.UniformInt(0, 4 * 3600) / 10 * 10, gpus,
                     budget == 0   ? ""
                     : budget == 1 ? "a"
                                   : "b",
                     rng.UniformInt(60, 2 * 3600));
      j.spec.min_runtime = Seconds(rng.UniformInt(0, 1) * 1800);
      // Some gangs of 12 or 24 ask for 6 GPUs per node.
      if (gpus % 12 == 0 && rng.UniformInt(0, 1) == 1) j.spec.gpus_per_node = Gpus(6);
      j.spec.resumable = rng.UniformInt(0, 1) == 1;
      sc.jobs.push_back(j);
    }
    std::stable_sort(sc.jobs.begin(), sc.jobs.end(), [](const SimJob& x, const SimJob& y) {
      return x.spec.submit < y.spec.submit;
    });
    for (const char* policy : {"hourglass", "priority", "fifo-backfill"}) {
      const SimResult r = RunScenario(sc, policy);
      double waited = 0;
      for (const JobRecord& j : r.jobs) {
        ASSERT_NE(j.final_state, JobState::kPending) << policy << " seed " << seed;
        if (!j.funded) continue;
        for (Seconds w : j.waits) waited += static_cast<double>(w.value()) / 3600.0;
      }
      double split = 0;
      double by_class = 0;
      for (const auto& [cls, w] : r.funded_wait_by_class) by_class += w.total();
      EXPECT_NEAR(by_class, waited, 1e-9) << policy << " seed " << seed;
      for (const auto& [gpus, w] : r.funded_wait_by_gpus) {
        split += w.total();
        reached += w;
      }
      EXPECT_NEAR(split, waited, 1e-9) << policy << " seed " << seed;
    }
  }
  EXPECT_GT(reached.short_of_gpus, 0);
  EXPECT_GT(reached.fragmented, 0);
  EXPECT_GT(reached.placeable, 0);
  EXPECT_GT(reached.victims_leaving, 0);
}

}  // namespace
}  // namespace hg::sim
