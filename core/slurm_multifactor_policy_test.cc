#include "core/slurm_multifactor_policy.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <vector>

#include "core/policy_test_world.h"

namespace hg {
namespace {

// Two top-level budgets with equal shares, nodes of 8 GPUs, a queue and running jobs.
class World : public policytest::PolicyWorld {
 public:
  World()
      : PolicyWorld(*BudgetTree::Build({{"a", "", 1.0, {}, {}, 0}, {"b", "", 1.0, {}, {}, 0}})) {}
  BudgetId a() const { return *tree().Find("a"); }
  BudgetId b() const { return *tree().Find("b"); }
  NodeId AddNode() { return PolicyWorld::AddNode(8, "b0"); }
  // GPU-seconds delivered to `budget` in the last week.
  void Used(BudgetId budget, Seconds from, Seconds to, double gpus) {
    delivered().Charge(budget, from, to, gpus);
  }
  JobSpec& NewJob(int32_t gpus, BudgetId budget, std::optional<Seconds> max_runtime = {}) {
    JobSpec s;
    s.gpus = Gpus(gpus);
    s.budget = budget;
    s.min_runtime = Hours(1);
    s.max_runtime = max_runtime;
    return AddJob(std::move(s));
  }
  Decisions Cycle(Seconds now, bool explain = true) {
    return SlurmMultifactorPolicy(PolicyConfig{}).Cycle(Snap(now, explain));
  }
};

using policytest::ExpectOnlyAReservation;
using policytest::NoteFor;
using policytest::Started;

TEST(SlurmMultifactor, FairShareFactorIsTheClassicFormula) {
  EXPECT_DOUBLE_EQ(SlurmFairShareFactor(0.0, 0.5), 1.0);
  EXPECT_DOUBLE_EQ(SlurmFairShareFactor(0.5, 0.5), 0.5);
  EXPECT_DOUBLE_EQ(SlurmFairShareFactor(1.0, 0.5), 0.25);
  EXPECT_DOUBLE_EQ(SlurmFairShareFactor(0.3, 0.0), 0.0);
}

TEST(SlurmMultifactor, FairShareOrdersTheUnderUsedBudgetFirst) {
  World w;
  w.AddNode();
  w.Used(w.a(), Seconds(0), Hours(10), 8.0);  // a used everything, b nothing
  const JobSpec& heavy = w.NewJob(8, w.a());
  const JobSpec& light = w.NewJob(8, w.b());
  w.Pend(heavy, Hours(10));  // earlier: FIFO would start it
  w.Pend(light, Hours(11));
  const Snapshot snap = w.Snap(Hours(12), true);
  EXPECT_GT(SlurmPriority(snap, snap.pending_funded[1], 8),
            SlurmPriority(snap, snap.pending_funded[0], 8) + 5000.0);
  const Decisions d = w.Cycle(Hours(12));
  EXPECT_EQ(Started(d), (std::vector<JobId>{light.id}));
  ASSERT_NE(NoteFor(d, heavy.id), nullptr);
}

TEST(SlurmMultifactor, AgeRaisesAnOldJob) {
  // 16 GPUs, 8 of them busy for good. A young 8-GPU job has the larger size factor (500 against
  // 62.5); a week of waiting (age 1000) puts the 1-GPU job ahead, which then blocks it.
  for (const bool old : {true, false}) {
    World w;
    const NodeId n0 = w.AddNode();
    w.AddNode();
    const JobSpec& busy = w.NewJob(8, w.a());
    w.Run(busy, Seconds(0), n0);
    const JobSpec& small = w.NewJob(1, w.b());
    const JobSpec& big = w.NewJob(8, w.b());
    const Seconds now = Days(8);
    w.Pend(small, old ? Days(1) : now - Hours(1));
    w.Pend(big, now - Minutes(1));
    const Decisions d = w.Cycle(now);
    if (old) {
      EXPECT_EQ(Started(d), (std::vector<JobId>{small.id})) << "old";
    } else {
      EXPECT_EQ(Started(d), (std::vector<JobId>{big.id})) << "young";
    }
  }
}

TEST(SlurmMultifactor, ScavengerIsRequeuedForFundedButFundedIsNeverPreempted) {
  for (const int32_t need : {4, 8}) {
    World w;
    const NodeId n0 = w.AddNode();
    const JobSpec& scavenger = w.NewJob(4, kUnfunded);
    const JobSpec& funded = w.NewJob(4, w.a());  // long past its min_runtime
    w.Run(scavenger, Hours(99), n0);
    w.Run(funded, Seconds(0), n0);
    const JobSpec& job = w.NewJob(need, w.b());
    w.Pend(job, Hours(99));
    const Decisions d = w.Cycle(Hours(100));
    EXPECT_TRUE(d.starts.empty());
    for (const StopDecision& s : d.stops) {
      EXPECT_NE(s.job, funded.id) << "a funded job was preempted";
      EXPECT_FALSE(s.violates_contract);
    }
    if (need == 4) {
      // The scavenger's GPUs suffice: it is requeued at once for the funded job.
      ASSERT_EQ(d.stops.size(), 1u);
      EXPECT_EQ(d.stops[0].job, scavenger.id);
      EXPECT_EQ(d.stops[0].for_job, job.id);
      EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptForFunded);
      ASSERT_NE(NoteFor(d, job.id), nullptr);
      EXPECT_EQ(NoteFor(d, job.id)->reason.code, ReasonCode::kWaitPreemption);
    } else {
      // Only the funded job's GPUs would make room: nothing is stopped.
      EXPECT_TRUE(d.stops.empty());
      ASSERT_NE(NoteFor(d, job.id), nullptr);
      EXPECT_EQ(NoteFor(d, job.id)->reason.code, ReasonCode::kWaitGpus);
    }
  }
}

TEST(SlurmMultifactor, BlockedHeadFundedJobGetsAReservation) {
  World w;
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  const JobSpec& x = w.NewJob(6, w.a(), Hours(2));
  const JobSpec& y = w.NewJob(4, w.a(), Hours(5));
  w.Run(x, Seconds(1000), n0);
  w.Run(y, Seconds(500), n1);
  const JobSpec& head = w.NewJob(8, w.b());
  const JobSpec& later = w.NewJob(8, w.b());
  w.Pend(head, Seconds(50));
  w.Pend(later, Seconds(60));
  const Decisions d = w.Cycle(Seconds(2000));
  ExpectOnlyAReservation(d, head.id, Seconds(1000) + Hours(2), {Slice{n0, Gpus(8)}});
  ASSERT_NE(NoteFor(d, head.id), nullptr);
  EXPECT_EQ(NoteFor(d, head.id)->reason.code, ReasonCode::kWaitReservation);
  ASSERT_NE(NoteFor(d, later.id), nullptr);
  EXPECT_EQ(NoteFor(d, later.id)->reason.code, ReasonCode::kWaitGpus);
}

TEST(SlurmMultifactor, ExplainGivesOneNotePerPendingJob) {
  World w;
  w.AddNode();
  std::vector<JobId> all;
  for (int i = 0; i < 3; ++i) {
    const JobSpec& j = w.NewJob(3, i % 2 ? w.a() : w.b());
    w.Pend(j, Seconds(i));
    all.push_back(j.id);
  }
  for (int i = 0; i < 3; ++i) {
    const JobSpec& j = w.NewJob(2, kUnfunded);
    w.Pend(j, Seconds(i));
    all.push_back(j.id);
  }
  const Decisions d = w.Cycle(Seconds(100));
  // 8 GPUs: two 3-GPU funded jobs start, then one 2-GPU scavenger job.
  ASSERT_EQ(d.starts.size(), 3u);
  std::set<JobId> seen;
  for (const StartDecision& s : d.starts) seen.insert(s.job);
  for (const PendingNote& n : d.pending) EXPECT_TRUE(seen.insert(n.job).second) << n.job.value();
  EXPECT_EQ(seen, std::set<JobId>(all.begin(), all.end()));
  EXPECT_EQ(d.pending.size(), all.size() - d.starts.size());
  // Without explanations the same cycle makes the same decisions and no notes.
  const Decisions quiet = w.Cycle(Seconds(100), false);
  EXPECT_EQ(Started(quiet), Started(d));
  EXPECT_TRUE(quiet.pending.empty());
}

}  // namespace
}  // namespace hg
