#include "core/kueue_quota_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <vector>

#include "core/policy_test_world.h"

namespace hg {
namespace {

std::vector<BudgetSpec> TwoBudgets() {
  return {{"a", "", 1.0, {}, {}, 0}, {"b", "", 1.0, {}, {}, 0}};
}

// A budget tree, nodes, a queue and running jobs. Jobs have a min_runtime of one hour.
class World : public policytest::PolicyWorld {
 public:
  explicit World(const std::vector<BudgetSpec>& specs = TwoBudgets())
      : PolicyWorld(*BudgetTree::Build(specs)) {}
  BudgetId B(const char* name) const { return *tree().Find(name); }
  NodeId AddNode(int32_t gpus = 8) { return PolicyWorld::AddNode(gpus, "b0"); }
  JobSpec& NewJob(int32_t gpus, BudgetId budget, int32_t per_node = 0) {
    JobSpec s;
    s.gpus = Gpus(gpus);
    s.gpus_per_node = Gpus(per_node);
    s.budget = budget;
    s.min_runtime = Hours(1);
    return AddJob(std::move(s));
  }
  Decisions Cycle(Seconds now, bool explain = true) {
    return KueueQuotaPolicy(PolicyConfig{}).Cycle(Snap(now, explain));
  }
};

using policytest::NoteFor;
using policytest::Started;
using policytest::Stopped;

TEST(KueueQuota, NominalQuotaFromEntitlement) {
  // Program p has projects x (share 3) and y (share 1); program q has no children.
  World w({{"p", "", 1.0, {}, {}, 0},
           {"q", "", 1.0, {}, {}, 0},
           {"x", "p", 3.0, {}, {}, 0},
           {"y", "p", 1.0, {}, {}, 0},
           {"x.alice", "x", 1.0, {}, {}, 0}});
  const BudgetTree& t = w.tree();
  EXPECT_EQ(KueueProjectOf(t, w.B("x.alice")), w.B("x"));
  EXPECT_EQ(KueueProjectOf(t, w.B("y")), w.B("y"));
  EXPECT_EQ(KueueProjectOf(t, w.B("q")), w.B("q"));
  // 17 GPUs: x = floor(17 * 3/8) = 6, y = floor(17 / 8) = 2, q = floor(17 / 2) = 8.
  EXPECT_EQ(KueueNominalQuota(t, w.B("x"), 17), 6);
  EXPECT_EQ(KueueNominalQuota(t, w.B("y"), 17), 2);
  EXPECT_EQ(KueueNominalQuota(t, w.B("q"), 17), 8);
}

TEST(KueueQuota, AdmitsWithinQuotaBeforeAnEarlierBorrower) {
  // 16 GPUs, quota 8 each. b holds its 8; its next job would borrow a's idle quota, but a's
  // later job is within quota and goes first.
  World w;
  const NodeId n0 = w.AddNode();
  w.AddNode();
  w.Run(w.NewJob(8, w.B("b")), Seconds(0), n0);
  const JobSpec& borrower = w.NewJob(8, w.B("b"));
  const JobSpec& within = w.NewJob(8, w.B("a"));
  w.Pend(borrower, Seconds(10));
  w.Pend(within, Seconds(20));
  const Decisions d = w.Cycle(Seconds(100));
  EXPECT_EQ(Started(d), (std::vector<JobId>{within.id}));
  EXPECT_TRUE(d.stops.empty());
  ASSERT_NE(NoteFor(d, borrower.id), nullptr);
  EXPECT_EQ(NoteFor(d, borrower.id)->reason.code, ReasonCode::kWaitGpus);
}

TEST(KueueQuota, BorrowsIdleQuotaOfTheCohort) {
  World w;
  const NodeId n0 = w.AddNode();
  w.AddNode();
  w.Run(w.NewJob(8, w.B("a")), Seconds(0), n0);  // a at its quota, b idle
  const JobSpec& j = w.NewJob(8, w.B("a"));
  w.Pend(j, Seconds(10));
  const Decisions d = w.Cycle(Seconds(100));
  EXPECT_EQ(Started(d), (std::vector<JobId>{j.id}));
}

TEST(KueueQuota, NoAdmissionOverQuotaWhenTheCohortHasNoIdleQuota) {
  // Three equal projects on one 16-GPU node: quota 5 each (one GPU is nobody's nominal quota).
  // a holds 5; a 1-GPU job of a needs to borrow. With c holding its 5 there is nothing to lend,
  // although a GPU is free; with c holding 4, c's idle GPU of quota is lent.
  for (const int32_t c_holds : {5, 4}) {
    World w({{"a", "", 1.0, {}, {}, 0}, {"b", "", 1.0, {}, {}, 0}, {"c", "", 1.0, {}, {}, 0}});
    const NodeId n0 = w.AddNode(16);
    w.Run(w.NewJob(5, w.B("a")), Seconds(0), n0);
    w.Run(w.NewJob(5, w.B("b")), Seconds(0), n0);
    w.Run(w.NewJob(c_holds, w.B("c")), Seconds(0), n0);
    const JobSpec& j = w.NewJob(1, w.B("a"));
    w.Pend(j, Seconds(10));
    const Decisions d = w.Cycle(Seconds(100));
    if (c_holds == 5) {
      EXPECT_TRUE(d.starts.empty());
      ASSERT_NE(NoteFor(d, j.id), nullptr);
      EXPECT_EQ(NoteFor(d, j.id)->reason.code, ReasonCode::kWaitGpus);
      EXPECT_EQ(NoteFor(d, j.id)->reason.b, 0);  // no idle quota in the cohort
    } else {
      EXPECT_EQ(Started(d), (std::vector<JobId>{j.id}));
    }
  }
}

TEST(KueueQuota, ReclaimPreemptsABorrowerPastProtection) {
  // b holds all 16 GPUs (8 borrowed from a). a's 8-GPU job is within quota and reclaims, but
  // only from jobs past their min_runtime.
  for (const bool protected_victims : {false, true}) {
    World w;
    const NodeId n0 = w.AddNode();
    const NodeId n1 = w.AddNode();
    const Seconds now = Hours(10);
    const Seconds started = protected_victims ? now - Minutes(30) : Seconds(0);
    const JobSpec& v0 = w.NewJob(8, w.B("b"));
    const JobSpec& v1 = w.NewJob(8, w.B("b"));
    w.Run(v0, started, n0);
    w.Run(v1, started, n1);
    const JobSpec& j = w.NewJob(8, w.B("a"));
    w.Pend(j, Seconds(10));
    const Decisions d = w.Cycle(now);
    EXPECT_TRUE(d.starts.empty());
    if (protected_victims) {
      EXPECT_TRUE(d.stops.empty());
    } else {
      ASSERT_EQ(d.stops.size(), 1u);
      EXPECT_TRUE(d.stops[0].job == v0.id || d.stops[0].job == v1.id);
      EXPECT_EQ(d.stops[0].for_job, j.id);
      EXPECT_FALSE(d.stops[0].violates_contract);
      ASSERT_NE(NoteFor(d, j.id), nullptr);
      EXPECT_EQ(NoteFor(d, j.id)->reason.code, ReasonCode::kWaitPreemption);
    }
  }
}

TEST(KueueQuota, NeverPreemptsAProjectWithinItsQuota) {
  // b holds exactly its quota, split over both nodes; a's whole-node job is within quota and
  // does not fit, but b is not borrowing, so nothing is reclaimed.
  World w;
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.Run(w.NewJob(4, w.B("b")), Seconds(0), n0);
  w.Run(w.NewJob(4, w.B("b")), Seconds(0), n1);
  const JobSpec& j = w.NewJob(8, w.B("a"), 8);
  w.Pend(j, Seconds(10));
  const Decisions d = w.Cycle(Hours(10));
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.stops.empty());
  ASSERT_NE(NoteFor(d, j.id), nullptr);
  EXPECT_EQ(NoteFor(d, j.id)->reason.code, ReasonCode::kWaitGpus);
}

TEST(KueueQuota, UnfundedWorkIsPreemptedFirst) {
  // b borrows 4 GPUs on n1 next to 4 GPUs of unfunded work; a's 4-GPU job takes the unfunded
  // GPUs rather than the borrower's.
  World w;
  const NodeId n0 = w.AddNode();
  const NodeId n1 = w.AddNode();
  w.Run(w.NewJob(8, w.B("b")), Seconds(0), n0);
  w.Run(w.NewJob(4, w.B("b")), Seconds(0), n1);
  const JobSpec& scavenger = w.NewJob(4, kUnfunded);
  w.Run(scavenger, Seconds(0), n1);
  const JobSpec& j = w.NewJob(4, w.B("a"));
  w.Pend(j, Seconds(10));
  const Decisions d = w.Cycle(Hours(10));
  EXPECT_EQ(Stopped(d), (std::vector<JobId>{scavenger.id}));
  ASSERT_EQ(d.stops.size(), 1u);
  EXPECT_EQ(d.stops[0].reason.code, ReasonCode::kPreemptForFunded);
}

TEST(KueueQuota, BudgetLimitCapsAdmission) {
  World w({{"a", "", 1.0, 4, {}, 0}, {"b", "", 1.0, {}, {}, 0}});
  w.AddNode();
  w.AddNode();
  const JobSpec& big = w.NewJob(6, w.B("a"));
  const JobSpec& small = w.NewJob(2, w.B("a"));
  w.Pend(big, Seconds(10));
  w.Pend(small, Seconds(20));
  const Decisions d = w.Cycle(Seconds(100));
  EXPECT_TRUE(d.starts.empty());  // StrictFIFO: the capped head blocks a's queue
  ASSERT_NE(NoteFor(d, big.id), nullptr);
  EXPECT_EQ(NoteFor(d, big.id)->reason.code, ReasonCode::kWaitBudgetLimit);
  EXPECT_EQ(NoteFor(d, big.id)->reason.a, 4);
}

TEST(KueueQuota, ExplainGivesOneNotePerPendingJob) {
  World w;
  const NodeId n0 = w.AddNode();
  w.AddNode();
  w.Run(w.NewJob(8, w.B("b")), Seconds(0), n0);
  std::vector<const JobSpec*> pending;
  for (int k = 0; k < 3; ++k) {
    pending.push_back(&w.NewJob(4, w.B("a")));
    pending.push_back(&w.NewJob(4, w.B("b")));
    pending.push_back(&w.NewJob(2, kUnfunded));
  }
  for (size_t k = 0; k < pending.size(); ++k) w.Pend(*pending[k], Seconds(static_cast<int64_t>(k)));
  const Decisions d = w.Cycle(Hours(10));
  std::map<int64_t, int> notes;
  for (const PendingNote& n : d.pending) ++notes[n.job.value()];
  std::map<int64_t, int> starts;
  for (const StartDecision& s : d.starts) ++starts[s.job.value()];
  EXPECT_FALSE(d.starts.empty());
  for (const JobSpec* j : pending)
    EXPECT_EQ(notes[j->id.value()] + starts[j->id.value()], 1) << j->id.value();
  EXPECT_EQ(d.pending.size() + d.starts.size(), pending.size());
  // Without explain there are no notes and the same decisions.
  const Decisions quiet = w.Cycle(Hours(10), false);
  EXPECT_TRUE(quiet.pending.empty());
  EXPECT_EQ(Started(quiet), Started(d));
}

}  // namespace
}  // namespace hg
