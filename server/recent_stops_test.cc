#include "server/recent_stops.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace hg::server {
namespace {

BudgetTree Tree(const std::vector<BudgetSpec>& specs) {
  auto t = BudgetTree::Build(specs);
  EXPECT_TRUE(t) << t.error().ToString();
  return std::move(*t);
}

BudgetSpec Top(const std::string& name) { return BudgetSpec{name, "", 1.0, std::nullopt, {}, 0}; }

// Each kept stop as "at victim>preemptor", by the leaves' names in `tree`.
std::vector<std::string> Seen(const RecentStops& s, const BudgetTree& tree) {
  std::vector<std::string> out;
  for (const RecentStop& r : s.ids())
    out.push_back(std::to_string(r.at.value()) + " " + tree.name(r.victim) + ">" +
                  tree.name(r.preemptor));
  return out;
}

// Ids move with the tree; the stops follow their budgets by name, to a budget's hidden leaf once
// it has children, and are dropped with a deleted budget.
TEST(RecentStops, FollowTheirBudgetsWhenTheTreeChanges) {
  const BudgetTree ab = Tree({Top("a"), Top("b")});
  RecentStops s;
  s.Add({100, "a", "b"}, ab);
  s.Add({200, "b", "a"}, ab);
  s.Add({300, "a", "gone"}, ab);  // a budget the tree does not know: not kept
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.ids()[0].victim, *ab.Find("a"));

  // A budget created before them in the store's order moves both ids.
  const BudgetTree xab = Tree({Top("x"), Top("a"), Top("b")});
  ASSERT_NE(*xab.Find("a"), *ab.Find("a"));
  s.Remap(xab);
  EXPECT_EQ(s.ids()[0].victim, *xab.Find("a"));
  EXPECT_EQ(s.ids()[0].preemptor, *xab.Find("b"));
  EXPECT_EQ(Seen(s, xab), std::vector<std::string>({"100 a>b", "200 b>a"}));

  // a gets a child: a's own jobs are charged to its hidden leaf, and so are its stops.
  const BudgetTree sub =
      Tree({Top("a"), BudgetSpec{"a1", "a", 1.0, std::nullopt, {}, 0}, Top("b")});
  s.Remap(sub);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.ids()[0].victim, sub.ChargeTarget(*sub.Find("a")));
  EXPECT_NE(s.ids()[0].victim, *sub.Find("a"));

  // b is deleted: its stops go with it.
  const BudgetTree a_only = Tree({Top("a")});
  s.Remap(a_only);
  EXPECT_EQ(s.size(), 0u);
}

TEST(RecentStops, DropBeforeKeepsTheLaterOnes) {
  const BudgetTree ab = Tree({Top("a"), Top("b")});
  RecentStops s;
  s.Add({100, "a", "b"}, ab);
  s.Add({200, "b", "a"}, ab);
  s.Add({200, "a", "b"}, ab);
  EXPECT_FALSE(s.DropBefore(100));
  EXPECT_TRUE(s.DropBefore(200));
  EXPECT_EQ(Seen(s, ab), std::vector<std::string>({"200 b>a", "200 a>b"}));
  // Names stay with their ids: a remap after a drop resolves the ones left.
  s.Remap(ab);
  EXPECT_EQ(Seen(s, ab), std::vector<std::string>({"200 b>a", "200 a>b"}));
  EXPECT_TRUE(s.DropBefore(201));
  EXPECT_EQ(s.size(), 0u);
}

// What each budget may not take back, and until when: the latest stop's cool-down, per pair.
TEST(RecentStops, CooledDownListsThePairsWhoseCoolDownHasNotLapsed) {
  const BudgetTree abc = Tree({Top("a"), Top("b"), Top("c")});
  RecentStops s;
  s.Add({100, "a", "b"}, abc);
  s.Add({200, "a", "b"}, abc);
  s.Add({250, "c", "a"}, abc);
  s.Add({300, "b", "c"}, abc);
  using Map = std::map<std::string, std::map<std::string, int64_t>>;
  EXPECT_EQ(s.CooledDown(1000, 1000),
            (Map{{"a", {{"b", 1200}}}, {"c", {{"a", 1250}}}, {"b", {{"c", 1300}}}}));
  EXPECT_EQ(s.CooledDown(1250, 1000), (Map{{"b", {{"c", 1300}}}}));
  EXPECT_TRUE(s.CooledDown(1000, 0).empty());  // the cool-down off
}

}  // namespace
}  // namespace hg::server
