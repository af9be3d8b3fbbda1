#include "core/fair_share.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace hg {
namespace {

// P > {p1, p2}; Q > {q1}; a; b. Ledgers hold what each leaf was delivered and owed.
class FairShareTest : public ::testing::Test {
 protected:
  FairShareTest()
      : tree_(MakeTree()),
        delivered_(tree_, Days(7), Hours(1)),
        owed_(tree_, Days(7), Hours(1)),
        alloc_(tree_.size(), 0.0),
        owed_now_(tree_.size(), 0.0) {}

  static BudgetTree MakeTree() {
    std::vector<BudgetSpec> specs;
    for (auto [n, p] : std::vector<std::pair<std::string, std::string>>{
             {"P", ""}, {"p1", "P"}, {"p2", "P"}, {"Q", ""}, {"q1", "Q"}, {"a", ""}, {"b", ""}})
      specs.push_back(BudgetSpec{n, p, 1.0, {}, {}, 0});
    auto t = BudgetTree::Build(specs);
    EXPECT_TRUE(t.has_value());
    return std::move(*t);
  }
  BudgetId Id(std::string_view n) const { return *tree_.Find(n); }
  size_t Ix(std::string_view n) const { return static_cast<size_t>(Id(n).value()); }

  // GPU-seconds delivered to and owed to a leaf within the window.
  void History(std::string_view leaf, double delivered, double owed) {
    delivered_.Charge(Id(leaf), Seconds(0), Seconds(1000), delivered / 1000);
    owed_.Charge(Id(leaf), Seconds(0), Seconds(1000), owed / 1000);
  }
  FairShare Make(Seconds live_weight, double preempt_below = 1.0) const {
    return FairShare(tree_, delivered_, owed_, alloc_, owed_now_, live_weight, preempt_below);
  }

  BudgetTree tree_;
  UsageLedger delivered_;
  UsageLedger owed_;
  std::vector<double> alloc_;     // GPUs held now, by leaf
  std::vector<double> owed_now_;  // water-filled GPUs owed now, every node
};

TEST_F(FairShareTest, KeyIsDeliveredPlusLiveOverOwedPlusLive) {
  History("p1", 1000, 2000);
  alloc_[Ix("p1")] = 2;
  owed_now_[Ix("p1")] = 3;
  const FairShare fs = Make(Seconds(10));
  EXPECT_DOUBLE_EQ(fs.Key(Id("p1")), (1000.0 + 2 * 10) / (2000.0 + 3 * 10 + 1));
  EXPECT_DOUBLE_EQ(fs.KeyWith(Id("p1"), 5), (1000.0 + 7 * 10) / (2000.0 + 3 * 10 + 1));
  // A budget with no history and nothing held is at 0, the front of the line.
  EXPECT_DOUBLE_EQ(fs.Key(Id("q1")), 0.0);
}

TEST_F(FairShareTest, LeafAllocationsAddUpTheTree) {
  alloc_[Ix("p1")] = 2;
  alloc_[Ix("p2")] = 3;
  alloc_[Ix("q1")] = 4;
  const FairShare fs = Make(Seconds(10));
  EXPECT_DOUBLE_EQ(fs.alloc(Id("P")), 5);
  EXPECT_DOUBLE_EQ(fs.alloc(Id("Q")), 4);
  EXPECT_DOUBLE_EQ(fs.alloc(kRootBudget), 9);
  EXPECT_DOUBLE_EQ(fs.alloc(Id("a")), 0);
}

TEST_F(FairShareTest, KeysOrderBudgetsByLag) {
  // Same amount owed; the one delivered less comes first, at every level.
  History("p1", 500, 2000);
  History("p2", 3000, 2000);
  History("q1", 1000, 2000);
  const FairShare fs = Make(Seconds(10));
  EXPECT_LT(fs.Key(Id("p1")), fs.Key(Id("q1")));
  EXPECT_LT(fs.Key(Id("q1")), fs.Key(Id("p2")));
  // P as a whole got 3500 of 4000, Q 1000 of 2000: Q lags more.
  EXPECT_LT(fs.Key(Id("Q")), fs.Key(Id("P")));
  // Measured against what was owed, not delivered alone: a budget owed more may have used more.
  History("a", 4000, 10000);
  History("b", 1000, 1000);
  const FairShare fs2 = Make(Seconds(10));
  EXPECT_LT(fs2.Key(Id("a")), fs2.Key(Id("b")));
}

TEST_F(FairShareTest, AddChangesKeysAlongThePathOnly) {
  History("p1", 1000, 2000);
  History("p2", 1000, 2000);
  History("q1", 1000, 2000);
  FairShare fs = Make(Seconds(100));
  std::map<std::string, double> before;
  for (const char* n : {"p1", "p2", "P", "q1", "Q"}) before[n] = fs.Key(Id(n));
  const double root_before = fs.Key(kRootBudget);
  const double predicted = fs.KeyWith(Id("P"), 4);

  fs.Add(Id("p1"), 4);
  EXPECT_DOUBLE_EQ(fs.alloc(Id("p1")), 4);
  EXPECT_DOUBLE_EQ(fs.alloc(Id("P")), 4);
  EXPECT_DOUBLE_EQ(fs.alloc(kRootBudget), 4);
  EXPECT_GT(fs.Key(Id("p1")), before["p1"]);
  EXPECT_GT(fs.Key(Id("P")), before["P"]);
  EXPECT_GT(fs.Key(kRootBudget), root_before);
  EXPECT_DOUBLE_EQ(fs.Key(Id("P")), predicted);
  EXPECT_DOUBLE_EQ(fs.Key(Id("p2")), before["p2"]);
  EXPECT_DOUBLE_EQ(fs.Key(Id("q1")), before["q1"]);
  EXPECT_DOUBLE_EQ(fs.Key(Id("Q")), before["Q"]);
  // A start raises its budget's key past an equal sibling, so the next pick goes elsewhere.
  EXPECT_GT(fs.Key(Id("p1")), fs.Key(Id("p2")));

  fs.Add(Id("p1"), -4);
  for (const char* n : {"p1", "p2", "P", "q1", "Q"}) EXPECT_DOUBLE_EQ(fs.Key(Id(n)), before[n]);
}

TEST_F(FairShareTest, DivergenceIsTheChildrenOfTheLowestCommonAncestor) {
  const FairShare fs = Make(Seconds(10));
  using Pair = std::pair<BudgetId, BudgetId>;
  EXPECT_EQ(fs.Divergence(Id("p1"), Id("p2")), Pair(Id("p1"), Id("p2")));
  EXPECT_EQ(fs.Divergence(Id("p1"), Id("q1")), Pair(Id("P"), Id("Q")));
  EXPECT_EQ(fs.Divergence(Id("q1"), Id("p1")), Pair(Id("Q"), Id("P")));
  // Different depths.
  EXPECT_EQ(fs.Divergence(Id("p1"), Id("a")), Pair(Id("P"), Id("a")));
  EXPECT_EQ(fs.Divergence(Id("a"), Id("q1")), Pair(Id("a"), Id("Q")));
  // A job charged to P itself sits in P's direct child, a sibling of p1.
  const BudgetId direct = tree_.ChargeTarget(Id("P"));
  EXPECT_EQ(fs.Divergence(Id("p1"), direct), Pair(Id("p1"), direct));
  EXPECT_EQ(fs.Divergence(Id("a"), Id("b")), Pair(Id("a"), Id("b")));
}

TEST_F(FairShareTest, MayPreemptNeverWithinTheSameLeaf) {
  History("a", 0, 5000);
  alloc_[Ix("a")] = 1;
  const FairShare fs = Make(Seconds(3600));
  ASSERT_LT(fs.Key(Id("a")), 1.0);
  EXPECT_FALSE(fs.MayPreempt(Id("a"), 1, Id("a"), 1));
}

TEST_F(FairShareTest, MayPreemptForAClearlyUnderServedBudget) {
  History("a", 100, 2000);
  History("b", 6000, 2000);
  alloc_[Ix("b")] = 1;
  owed_now_[Ix("a")] = 1;
  owed_now_[Ix("b")] = 1;
  const FairShare fs = Make(Seconds(3600));
  EXPECT_TRUE(fs.MayPreempt(Id("a"), 1, Id("b"), 1));
  // Never the other way round.
  EXPECT_FALSE(fs.MayPreempt(Id("b"), 1, Id("a"), 1));
}

TEST_F(FairShareTest, MayPreemptNotWhenThePreemptorIsNotBelowItsShare) {
  History("a", 6000, 2000);   // above its share
  History("b", 60000, 2000);  // far more above
  alloc_[Ix("b")] = 1;
  owed_now_[Ix("a")] = 1;
  owed_now_[Ix("b")] = 1;
  const FairShare fs = Make(Seconds(3600));
  ASSERT_GE(fs.Key(Id("a")), 1.0);
  ASSERT_LT(fs.Key(Id("a")), fs.Key(Id("b")));
  EXPECT_FALSE(fs.MayPreempt(Id("a"), 1, Id("b"), 1));
}

TEST_F(FairShareTest, MayPreemptOnlyWhenFurtherBelowThanPreemptBelow) {
  // a got 40% of what it was owed, b three times its due: a may preempt b by default, and with
  // the threshold at 0.45, but not once the threshold asks for a deeper deficit.
  History("a", 800, 2000);
  History("b", 6000, 2000);
  alloc_[Ix("b")] = 1;
  const FairShare loose = Make(Seconds(0));
  ASSERT_NEAR(loose.Key(Id("a")), 0.4, 1e-3);
  EXPECT_TRUE(loose.MayPreempt(Id("a"), 1, Id("b"), 1));
  EXPECT_TRUE(Make(Seconds(0), 0.45).MayPreempt(Id("a"), 1, Id("b"), 1));
  EXPECT_FALSE(Make(Seconds(0), 0.35).MayPreempt(Id("a"), 1, Id("b"), 1));
  EXPECT_FALSE(Make(Seconds(0), 0.2).MayPreempt(Id("a"), 1, Id("b"), 1));
}

TEST_F(FairShareTest, VictimSideOverShareLooksAtTheVictimsSideOnly) {
  // a is over its share, so it may not preempt by the usual rule; b is over too, q1 is under.
  // The sides are those below the common ancestor: for p1 against q1, P and Q.
  History("a", 6000, 2000);
  History("b", 3000, 2000);
  History("p1", 500, 2000);
  History("q1", 500, 2000);
  History("p2", 8000, 2000);
  const FairShare fs = Make(Seconds(0));
  EXPECT_FALSE(fs.MayPreempt(Id("a"), 1, Id("b"), 1));
  EXPECT_TRUE(fs.VictimSideOverShare(Id("a"), Id("b")));
  EXPECT_FALSE(fs.VictimSideOverShare(Id("a"), Id("q1")));  // Q is under its share
  EXPECT_TRUE(fs.VictimSideOverShare(Id("a"), Id("p1")));   // P (8,500 of 4,000) is over
  EXPECT_TRUE(fs.VictimSideOverShare(Id("q1"), Id("p1")));
  EXPECT_FALSE(fs.VictimSideOverShare(Id("p2"), Id("p1")));  // p1 itself is under
  EXPECT_FALSE(fs.VictimSideOverShare(Id("a"), Id("a")));    // never its own leaf
}

TEST_F(FairShareTest, ServedNoBetterComparesTheTwoSidesKeysOnly) {
  // a is slightly below b: it may not preempt b by the usual rule (moving the GPUs would flip
  // them), but its reservation may stop b's backfilled work; b's may not stop a's.
  History("a", 1800, 2000);
  History("b", 2200, 2000);
  History("p1", 500, 2000);
  History("p2", 8000, 2000);
  History("q1", 900, 2000);
  alloc_[Ix("b")] = 1;
  owed_now_[Ix("a")] = 1;
  owed_now_[Ix("b")] = 1;
  const FairShare fs = Make(Seconds(3600));
  EXPECT_FALSE(fs.MayPreempt(Id("a"), 1, Id("b"), 1));
  EXPECT_TRUE(fs.ServedNoBetter(Id("a"), Id("b")));
  EXPECT_FALSE(fs.ServedNoBetter(Id("b"), Id("a")));
  // The sides are those below the common ancestor: p1 (500 of 2,000) is further below than q1
  // (900 of 2,000), but its side P (8,500 of 4,000) is far over, Q under.
  EXPECT_FALSE(fs.ServedNoBetter(Id("p1"), Id("q1")));
  EXPECT_TRUE(fs.ServedNoBetter(Id("q1"), Id("p1")));
  EXPECT_TRUE(fs.ServedNoBetter(Id("p1"), Id("p2")));
  EXPECT_FALSE(fs.ServedNoBetter(Id("a"), Id("a")));  // never its own leaf
}

TEST_F(FairShareTest, MayPreemptNotWhenTheMoveWouldLeaveTheVictimBelow) {
  // a is slightly below, b slightly above; moving one GPU from b to a would flip them, and the
  // next cycle would move it back: ping-pong.
  History("a", 1800, 2000);
  History("b", 2200, 2000);
  alloc_[Ix("b")] = 1;
  owed_now_[Ix("a")] = 1;
  owed_now_[Ix("b")] = 1;
  const FairShare fs = Make(Seconds(3600));
  ASSERT_LT(fs.Key(Id("a")), 1.0);
  ASSERT_LT(fs.Key(Id("a")), fs.Key(Id("b")));
  ASSERT_GT(fs.KeyWith(Id("a"), 1), fs.KeyWith(Id("b"), -1));
  EXPECT_FALSE(fs.MayPreempt(Id("a"), 1, Id("b"), 1));
}

TEST_F(FairShareTest, MayPreemptComparesTheSidesBelowTheCommonAncestor) {
  // p1 is starved but P as a whole is far over its share; Q is under.
  History("p1", 0, 1000);
  History("p2", 9000, 1000);
  History("q1", 200, 2000);
  alloc_[Ix("p2")] = 1;
  const FairShare fs = Make(Seconds(3600));
  // Across programs the program keys decide: p1 may not take from Q's jobs...
  alloc_[Ix("q1")] = 1;
  const FairShare fs_q = Make(Seconds(3600));
  EXPECT_FALSE(fs_q.MayPreempt(Id("p1"), 1, Id("q1"), 1));
  // ...but Q may take from P's over-served project, and within P, p1 may take from p2.
  EXPECT_TRUE(fs.MayPreempt(Id("q1"), 1, Id("p2"), 1));
  EXPECT_TRUE(fs.MayPreempt(Id("p1"), 1, Id("p2"), 1));
}

// The plan's shortcuts answer exactly as MayPreempt does: Preemptor for every preemptor, victim
// and size on a tree whose keys are spread over both sides of 1 (each leaf delivered a different
// part of what it was owed, holding GPUs now), and MayPreemptSome is false only where no victim
// may be taken.
TEST_F(FairShareTest, PlanShortcutsAnswerAsMayPreemptDoes) {
  const std::vector<std::string> leaves = {"p1", "p2", "q1", "a", "b"};
  const std::vector<double> part = {0.3, 1.6, 0.9, 1.2, 0.5};
  for (size_t i = 0; i < leaves.size(); ++i) {
    History(leaves[i], 2000 * part[i], 2000);
    alloc_[Ix(leaves[i])] = static_cast<double>(i + 1);
    owed_now_[Ix(leaves[i])] = 2;
  }
  for (const double below : {1.0, 0.5}) {
    const FairShare fs = Make(Seconds(100), below);
    int may = 0, may_not = 0, none = 0;
    FairShare::Preemptor::Scratch scratch;  // shared by every plan, as a cycle's are
    for (const std::string& p : leaves)
      for (const double g : {1.0, 4.0, 16.0}) {
        FairShare::Preemptor plan(fs, Id(p), g, scratch);
        bool any = false;
        for (const std::string& v : leaves)
          for (const double vg : {1.0, 2.0, 5.0}) {
            const bool want = fs.MayPreempt(Id(p), g, Id(v), vg);
            EXPECT_EQ(plan.MayPreempt(Id(v), vg), want) << p << " " << g << " " << v << " " << vg;
            (want ? may : may_not)++;
            any = any || want;
          }
        if (!fs.MayPreemptSome(Id(p))) {
          EXPECT_FALSE(any) << p;
          ++none;
        }
      }
    // Both answers occur, and the shortcut is taken for some preemptor, or the test shows nothing.
    EXPECT_GT(may, 0) << below;
    EXPECT_GT(may_not, 0) << below;
    EXPECT_GT(none, 0) << below;
  }
}

}  // namespace
}  // namespace hg
