#include "core/fair_division.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace hg {
namespace {

struct B {
  std::string name;
  std::string parent;
  double share = 1.0;
  std::optional<int32_t> limit{};
};

BudgetTree Tree(const std::vector<B>& bs) {
  std::vector<BudgetSpec> specs;
  for (const B& b : bs) specs.push_back(BudgetSpec{b.name, b.parent, b.share, b.limit, {}, 0});
  auto t = BudgetTree::Build(specs);
  EXPECT_TRUE(t.has_value()) << t.error().ToString();
  return std::move(*t);
}

// Runs WaterFill with demand given by budget name (charged to each budget's ChargeTarget) and
// returns owed by path ("" for the root).
struct Fill {
  const BudgetTree& tree;
  std::vector<double> owed;
  double operator[](std::string_view name) const {
    if (name.empty()) return owed[0];
    return owed[static_cast<size_t>(tree.Find(name)->value())];
  }
};

Fill Divide(const BudgetTree& t, const std::map<std::string, double>& demand, double capacity) {
  std::vector<double> d(t.size(), 0.0);
  for (const auto& [name, g] : demand)
    d[static_cast<size_t>(t.ChargeTarget(*t.Find(name)).value())] += g;
  return Fill{t, WaterFill(t, d, capacity)};
}

TEST(WaterFill, EqualSharesSplitEqually) {
  const BudgetTree t = Tree({{"a", ""}, {"b", ""}, {"c", ""}});
  const Fill f = Divide(t, {{"a", 100}, {"b", 100}, {"c", 100}}, 90);
  EXPECT_DOUBLE_EQ(f["a"], 30);
  EXPECT_DOUBLE_EQ(f["b"], 30);
  EXPECT_DOUBLE_EQ(f["c"], 30);
  EXPECT_DOUBLE_EQ(f[""], 90);
}

TEST(WaterFill, UnequalSharesSplitByWeight) {
  const BudgetTree t = Tree({{"a", "", 2.0}, {"b", "", 1.0}});
  const Fill f = Divide(t, {{"a", 100}, {"b", 100}}, 90);
  EXPECT_DOUBLE_EQ(f["a"], 60);
  EXPECT_DOUBLE_EQ(f["b"], 30);
}

TEST(WaterFill, UnusedShareFlowsToSiblingsWithDemand) {
  const BudgetTree t = Tree({{"a", ""}, {"b", ""}, {"c", "", 2.0}});
  // a wants 10 of its 22.5; b and c split the rest 1:2.
  const Fill f = Divide(t, {{"a", 10}, {"b", 100}, {"c", 100}}, 90);
  EXPECT_DOUBLE_EQ(f["a"], 10);
  EXPECT_DOUBLE_EQ(f["b"], 80.0 / 3);
  EXPECT_DOUBLE_EQ(f["c"], 160.0 / 3);
  EXPECT_DOUBLE_EQ(f[""], 90);
}

TEST(WaterFill, ABudgetWithoutDemandIsOwedNothing) {
  const BudgetTree t = Tree({{"a", ""}, {"b", ""}});
  const Fill f = Divide(t, {{"b", 100}}, 64);
  EXPECT_DOUBLE_EQ(f["a"], 0);
  EXPECT_DOUBLE_EQ(f["b"], 64);
}

TEST(WaterFill, SharesApplyAtEveryLevel) {
  // The program's part is split among its projects, whatever the projects' count.
  const BudgetTree t = Tree({{"P", ""},
                             {"p1", "P", 3.0},
                             {"p2", "P", 1.0},
                             {"Q", ""},
                             {"q1", "Q"},
                             {"q2", "Q"},
                             {"q3", "Q"}});
  const Fill f = Divide(t, {{"p1", 100}, {"p2", 100}, {"q1", 100}, {"q2", 100}, {"q3", 100}}, 80);
  EXPECT_DOUBLE_EQ(f["P"], 40);
  EXPECT_DOUBLE_EQ(f["Q"], 40);
  EXPECT_DOUBLE_EQ(f["p1"], 30);
  EXPECT_DOUBLE_EQ(f["p2"], 10);
  EXPECT_NEAR(f["q1"], 40.0 / 3, 1e-9);
  EXPECT_NEAR(f["q2"], 40.0 / 3, 1e-9);
  EXPECT_NEAR(f["q3"], 40.0 / 3, 1e-9);
}

TEST(WaterFill, UnusedProgramPartFlowsUpToOtherPrograms) {
  const BudgetTree t = Tree({{"P", ""}, {"p1", "P"}, {"p2", "P"}, {"Q", ""}, {"q1", "Q"}});
  // P asks for 10 in all; Q takes everything else.
  const Fill f = Divide(t, {{"p1", 4}, {"p2", 6}, {"q1", 1000}}, 100);
  EXPECT_DOUBLE_EQ(f["P"], 10);
  EXPECT_DOUBLE_EQ(f["p1"], 4);
  EXPECT_DOUBLE_EQ(f["p2"], 6);
  EXPECT_DOUBLE_EQ(f["Q"], 90);
  EXPECT_DOUBLE_EQ(f["q1"], 90);
}

TEST(WaterFill, JobsChargedToAnInnerBudgetCompeteAsItsDirectChild) {
  // P's own jobs sit in P/~ whose share is the mean of p1 and p2 (2), so P's part splits 3:1:2.
  const BudgetTree t = Tree({{"P", ""}, {"p1", "P", 3.0}, {"p2", "P", 1.0}});
  const Fill f = Divide(t, {{"P", 100}, {"p1", 100}, {"p2", 100}}, 60);
  EXPECT_DOUBLE_EQ(f["p1"], 30);
  EXPECT_DOUBLE_EQ(f["p2"], 10);
  EXPECT_DOUBLE_EQ(f.owed[static_cast<size_t>(t.ChargeTarget(*t.Find("P")).value())], 20);
  EXPECT_DOUBLE_EQ(f["P"], 60);
}

TEST(WaterFill, LimitsCapDemand) {
  const BudgetTree t = Tree({{"a", "", 1.0, 5}, {"b", ""}});
  const Fill f = Divide(t, {{"a", 100}, {"b", 100}}, 90);
  EXPECT_DOUBLE_EQ(f["a"], 5);
  EXPECT_DOUBLE_EQ(f["b"], 85);
}

TEST(WaterFill, ALimitOnAProgramCapsItsWholeSubtree) {
  const BudgetTree t = Tree({{"P", "", 1.0, 20}, {"p1", "P", 3.0}, {"p2", "P"}, {"Q", ""}});
  const Fill f = Divide(t, {{"p1", 100}, {"p2", 100}, {"Q", 100}}, 80);
  EXPECT_DOUBLE_EQ(f["P"], 20);
  EXPECT_DOUBLE_EQ(f["p1"], 15);
  EXPECT_DOUBLE_EQ(f["p2"], 5);
  EXPECT_DOUBLE_EQ(f["Q"], 60);
}

TEST(WaterFill, CapacityAboveDemandGivesEveryoneTheirDemand) {
  const BudgetTree t = Tree({{"P", ""}, {"p1", "P", 3.0}, {"p2", "P"}, {"Q", "", 5.0}});
  const Fill f = Divide(t, {{"p1", 7}, {"p2", 11}, {"Q", 13}}, 1000);
  EXPECT_DOUBLE_EQ(f["p1"], 7);
  EXPECT_DOUBLE_EQ(f["p2"], 11);
  EXPECT_DOUBLE_EQ(f["Q"], 13);
  EXPECT_DOUBLE_EQ(f[""], 31);
}

TEST(WaterFill, NoDemandOwesNothing) {
  const BudgetTree t = Tree({{"a", ""}, {"b", ""}});
  const Fill f = Divide(t, {}, 100);
  for (double o : f.owed) EXPECT_DOUBLE_EQ(o, 0);
}

// Random two-level trees: nobody is owed more than they ask, parents are the sum of their
// children, the total is min(capacity, total demand), and a budget that is owed less than it asks
// gets at least its weighted part of what its unsatisfied siblings get (max-min fairness).
RC_GTEST_PROP(WaterFillProp, OwedIsAMaxMinFairDivision, ()) {
  const int programs = *rc::gen::inRange(1, 5);
  std::vector<B> bs;
  for (int p = 0; p < programs; ++p) {
    const std::string pn = "P" + std::to_string(p);
    bs.push_back({pn, "", static_cast<double>(*rc::gen::inRange(1, 6))});
    const int kids = *rc::gen::inRange(0, 4);
    for (int k = 0; k < kids; ++k)
      bs.push_back(
          {pn + "k" + std::to_string(k), pn, static_cast<double>(*rc::gen::inRange(1, 6))});
  }
  const BudgetTree t = Tree(bs);
  std::vector<double> demand(t.size(), 0.0);
  double total = 0;
  for (size_t i = 1; i < t.size(); ++i) {
    if (!t.is_leaf(BudgetId(static_cast<int32_t>(i)))) continue;
    demand[i] = *rc::gen::inRange(0, 200);
    total += demand[i];
  }
  const double capacity = *rc::gen::inRange(0, 400);
  const std::vector<double> owed = WaterFill(t, demand, capacity);
  RC_ASSERT(std::abs(owed[0] - std::min(capacity, total)) < 1e-6);
  for (size_t i = 1; i < t.size(); ++i) {
    const BudgetId b(static_cast<int32_t>(i));
    RC_ASSERT(owed[i] >= -1e-9);
    if (t.is_leaf(b)) {
      RC_ASSERT(owed[i] <= demand[i] + 1e-6);
    } else {
      double sum = 0;
      for (BudgetId c : t.children(b)) sum += owed[static_cast<size_t>(c.value())];
      RC_ASSERT(std::abs(owed[i] - sum) < 1e-6);
    }
  }
  // Among siblings: if x is short of its demand, no sibling gets more per unit of share.
  std::vector<double> want(demand);
  for (size_t i = t.size(); i-- > 1;)
    want[static_cast<size_t>(t.parent(BudgetId(static_cast<int32_t>(i))).value())] += want[i];
  for (size_t i = 0; i < t.size(); ++i) {
    const auto& kids = t.children(BudgetId(static_cast<int32_t>(i)));
    for (BudgetId x : kids) {
      const auto xi = static_cast<size_t>(x.value());
      if (owed[xi] >= want[xi] - 1e-6) continue;
      for (BudgetId y : kids) {
        const auto yi = static_cast<size_t>(y.value());
        RC_ASSERT(owed[yi] / t.share(y) <= owed[xi] / t.share(x) + 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace hg
