#include "core/budget_tree.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace hg {
namespace {

BudgetSpec Spec(std::string name, std::string parent, double share = 1.0, int line = 0,
                std::optional<int32_t> limit = std::nullopt) {
  BudgetSpec s;
  s.name = std::move(name);
  s.parent = std::move(parent);
  s.share = share;
  s.limit = limit;
  s.line = line;
  return s;
}

// ai2 (2) > olmo (3) > {alice (1), bob (1)}; ai2 > tulu (1); other (1) at the top.
// Entitlements: ai2 2/3, other 1/3, olmo 1/2, tulu 1/6, alice = bob = 1/4.
std::vector<BudgetSpec> LabSpecs() {
  return {Spec("ai2", "", 2.0, 1),     Spec("olmo", "ai2", 3.0, 2), Spec("alice", "olmo", 1.0, 3),
          Spec("bob", "olmo", 1.0, 4), Spec("tulu", "ai2", 1.0, 5), Spec("other", "", 1.0, 6)};
}

BudgetTree Lab() {
  auto t = BudgetTree::Build(LabSpecs());
  EXPECT_TRUE(t.has_value()) << t.error().ToString();
  return std::move(*t);
}

BudgetId Id(const BudgetTree& t, std::string_view key) {
  auto id = t.Find(key);
  EXPECT_TRUE(id.has_value()) << key;
  return id.value_or(kRootBudget);
}

// Asserts that Build refuses `specs` with an error on `field` at `line` whose reason mentions
// `needle`.
void ExpectBuildError(const std::vector<BudgetSpec>& specs, const std::string& field, int line,
                      const std::string& needle) {
  auto t = BudgetTree::Build(specs);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().field, field) << t.error().ToString();
  EXPECT_EQ(t.error().line, line) << t.error().ToString();
  EXPECT_NE(t.error().reason.find(needle), std::string::npos) << t.error().ToString();
}

TEST(BudgetTreeBuild, EmptyNameIsRefusedWithItsLine) {
  ExpectBuildError({Spec("a", "", 1, 1), Spec("", "a", 1, 7)}, "name", 7, "empty");
}

TEST(BudgetTreeBuild, SlashOrTildeInNameIsRefused) {
  ExpectBuildError({Spec("a", "", 1, 1), Spec("a/b", "a", 1, 2)}, "name", 2, "a/b");
  ExpectBuildError({Spec("x~", "", 1, 3)}, "name", 3, "x~");
}

TEST(BudgetTreeBuild, DuplicateNameIsRefusedAtTheSecondOccurrence) {
  ExpectBuildError({Spec("a", "", 1, 1), Spec("b", "a", 1, 2), Spec("b", "", 1, 9)}, "name", 9,
                   "duplicate budget 'b'");
}

TEST(BudgetTreeBuild, UnknownParentIsRefusedNamingIt) {
  ExpectBuildError({Spec("a", "", 1, 1), Spec("b", "nope", 1, 4)}, "parent", 4,
                   "unknown parent 'nope'");
}

TEST(BudgetTreeBuild, ParentCyclesAreRefused) {
  // Self, 2-cycle and 3-cycle; each cycle is reachable from no top-level budget.
  ExpectBuildError({Spec("top", "", 1, 1), Spec("a", "a", 1, 2)}, "parent", 2, "cycle");
  ExpectBuildError({Spec("top", "", 1, 1), Spec("a", "b", 1, 2), Spec("b", "a", 1, 3)}, "parent", 2,
                   "cycle");
  ExpectBuildError(
      {Spec("a", "c", 1, 5), Spec("b", "a", 1, 6), Spec("c", "b", 1, 7), Spec("top", "", 1, 8)},
      "parent", 5, "cycle");
}

TEST(BudgetTreeBuild, ShareMustBePositiveAndFinite) {
  ExpectBuildError({Spec("a", "", 0.0, 3)}, "share", 3, "> 0");
  ExpectBuildError({Spec("a", "", -1.0, 4)}, "share", 4, "> 0");
  ExpectBuildError({Spec("a", "", std::nan(""), 5)}, "share", 5, "> 0");
  ExpectBuildError({Spec("a", "", std::numeric_limits<double>::infinity(), 6)}, "share", 6, "> 0");
}

TEST(BudgetTreeBuild, NegativeLimitIsRefusedButZeroIsAllowed) {
  ExpectBuildError({Spec("a", "", 1.0, 8, -1)}, "limit", 8, ">= 0");
  auto t = BudgetTree::Build({Spec("a", "", 1.0, 8, 0)});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->limit(Id(*t, "a")), 0);
}

TEST(BudgetTreeBuild, ErrorToStringNamesFieldAndReason) {
  auto t = BudgetTree::Build({Spec("a", "ghost", 1, 3)});
  ASSERT_FALSE(t.has_value());
  Error e = t.error();
  e.file = "budgets.toml";
  EXPECT_EQ(e.ToString(), "budgets.toml:3: parent: budget 'a': unknown parent 'ghost'");
}

TEST(BudgetTreeBuild, EmptySpecListGivesJustTheRoot) {
  auto t = BudgetTree::Build({});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->size(), 1u);
  EXPECT_TRUE(t->is_leaf(kRootBudget));
  EXPECT_TRUE(t->Visible().empty());
}

TEST(BudgetTree, PathsAndDepths) {
  const BudgetTree t = Lab();
  EXPECT_EQ(t.path(Id(t, "alice")), "ai2/olmo/alice");
  EXPECT_EQ(t.path(Id(t, "olmo")), "ai2/olmo");
  EXPECT_EQ(t.path(Id(t, "other")), "other");
  EXPECT_EQ(t.depth(kRootBudget), 0);
  EXPECT_EQ(t.depth(Id(t, "ai2")), 1);
  EXPECT_EQ(t.depth(Id(t, "olmo")), 2);
  EXPECT_EQ(t.depth(Id(t, "alice")), 3);
  EXPECT_EQ(t.parent(Id(t, "alice")), Id(t, "olmo"));
  EXPECT_EQ(t.parent(Id(t, "ai2")), kRootBudget);
  EXPECT_EQ(t.name(Id(t, "alice")), "alice");
}

TEST(BudgetTree, ChildrenMayBeListedBeforeTheirParents) {
  // Ids are assigned parents first, whatever the spec order, and paths come out the same.
  auto t = BudgetTree::Build({Spec("alice", "olmo"), Spec("olmo", "ai2"), Spec("ai2", "")});
  ASSERT_TRUE(t.has_value());
  const BudgetId ai2 = Id(*t, "ai2"), olmo = Id(*t, "olmo"), alice = Id(*t, "alice");
  EXPECT_LT(ai2, olmo);
  EXPECT_LT(olmo, alice);
  EXPECT_EQ(t->path(alice), "ai2/olmo/alice");
}

TEST(BudgetTree, EntitlementIsTheProductOfSiblingFractions) {
  const BudgetTree t = Lab();
  EXPECT_DOUBLE_EQ(t.entitlement(kRootBudget), 1.0);
  EXPECT_DOUBLE_EQ(t.entitlement(Id(t, "ai2")), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(t.entitlement(Id(t, "other")), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(t.entitlement(Id(t, "olmo")), 0.5);
  EXPECT_DOUBLE_EQ(t.entitlement(Id(t, "tulu")), 1.0 / 6.0);
  EXPECT_DOUBLE_EQ(t.entitlement(Id(t, "alice")), 0.25);
  EXPECT_DOUBLE_EQ(t.entitlement(Id(t, "bob")), 0.25);
  // The visible leaves' entitlements add up to the whole.
  double sum = 0;
  for (BudgetId b : t.Visible())
    if (t.is_leaf(b)) sum += t.entitlement(b);
  EXPECT_DOUBLE_EQ(sum, 1.0);
}

TEST(BudgetTree, InnerBudgetsGetAHiddenDirectChildAsChargeTarget) {
  const BudgetTree t = Lab();
  const BudgetId ai2 = Id(t, "ai2"), olmo = Id(t, "olmo"), alice = Id(t, "alice");
  // Leaves hold their own jobs.
  EXPECT_EQ(t.ChargeTarget(alice), alice);
  EXPECT_FALSE(t.is_hidden(alice));
  // Inner budgets hand their jobs to "/~".
  for (BudgetId inner : {ai2, olmo}) {
    const BudgetId h = t.ChargeTarget(inner);
    EXPECT_NE(h, inner);
    EXPECT_TRUE(t.is_hidden(h));
    EXPECT_TRUE(t.is_leaf(h));
    EXPECT_EQ(t.parent(h), inner);
    EXPECT_EQ(t.path(h), t.path(inner) + "/~");
    EXPECT_EQ(t.depth(h), t.depth(inner) + 1);
    EXPECT_DOUBLE_EQ(t.entitlement(h), 0.0);
  }
  // Its share is the mean of its real siblings': olmo 3 and tulu 1 -> 2; alice, bob -> 1.
  EXPECT_DOUBLE_EQ(t.share(t.ChargeTarget(ai2)), 2.0);
  EXPECT_DOUBLE_EQ(t.share(t.ChargeTarget(olmo)), 1.0);
  // Leaves get no hidden child: 6 real budgets + root + 2 hidden.
  EXPECT_EQ(t.size(), 9u);
  // The hidden child does not dilute its siblings' entitlement.
  EXPECT_DOUBLE_EQ(t.entitlement(olmo), 0.5);
}

TEST(BudgetTree, FindByNameAndPathButNeverHidden) {
  const BudgetTree t = Lab();
  const BudgetId alice = Id(t, "alice");
  EXPECT_EQ(t.Find("ai2/olmo/alice"), alice);
  EXPECT_EQ(t.Find("alice"), alice);
  EXPECT_EQ(t.path(*t.Find("ai2")), "ai2");
  EXPECT_FALSE(t.Find("olmo/alice").has_value());  // neither a name nor a full path
  EXPECT_FALSE(t.Find("carol").has_value());
  EXPECT_FALSE(t.Find("").has_value());  // the root is not a budget one can name
  EXPECT_FALSE(t.Find("ai2/~").has_value());
  EXPECT_FALSE(t.Find("ai2/olmo/~").has_value());
}

TEST(BudgetTree, IsAncestorOrSelf) {
  const BudgetTree t = Lab();
  const BudgetId ai2 = Id(t, "ai2"), olmo = Id(t, "olmo"), alice = Id(t, "alice"),
                 bob = Id(t, "bob"), tulu = Id(t, "tulu"), other = Id(t, "other");
  EXPECT_TRUE(t.IsAncestorOrSelf(alice, alice));
  EXPECT_TRUE(t.IsAncestorOrSelf(olmo, alice));
  EXPECT_TRUE(t.IsAncestorOrSelf(ai2, alice));
  EXPECT_TRUE(t.IsAncestorOrSelf(kRootBudget, alice));
  EXPECT_TRUE(t.IsAncestorOrSelf(olmo, t.ChargeTarget(olmo)));
  EXPECT_FALSE(t.IsAncestorOrSelf(alice, olmo));
  EXPECT_FALSE(t.IsAncestorOrSelf(bob, alice));
  EXPECT_FALSE(t.IsAncestorOrSelf(tulu, alice));
  EXPECT_FALSE(t.IsAncestorOrSelf(other, alice));
}

TEST(BudgetTree, VisibleIsDepthFirstInSpecOrderAndSkipsHidden) {
  const BudgetTree t = Lab();
  std::vector<std::string> paths;
  for (BudgetId b : t.Visible()) paths.push_back(t.path(b));
  EXPECT_EQ(paths, (std::vector<std::string>{"ai2", "ai2/olmo", "ai2/olmo/alice", "ai2/olmo/bob",
                                             "ai2/tulu", "other"}));
}

TEST(BudgetTree, SpecsRoundTripThroughBuild) {
  BudgetTree t = Lab();
  ASSERT_TRUE(t.SetLimit(Id(t, "olmo"), 16).has_value());
  auto again = BudgetTree::Build(t.Specs());
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  ASSERT_EQ(again->size(), t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    const BudgetId b(static_cast<int32_t>(i));
    EXPECT_EQ(again->path(b), t.path(b));
    EXPECT_DOUBLE_EQ(again->share(b), t.share(b));
    EXPECT_EQ(again->limit(b), t.limit(b));
    EXPECT_DOUBLE_EQ(again->entitlement(b), t.entitlement(b));
  }
}

TEST(BudgetTree, SetShareRecomputesEntitlementsAndHiddenShares) {
  BudgetTree t = Lab();
  const BudgetId tulu = Id(t, "tulu");
  ASSERT_TRUE(t.SetShare(tulu, 3.0).has_value());
  EXPECT_DOUBLE_EQ(t.share(tulu), 3.0);
  EXPECT_DOUBLE_EQ(t.entitlement(tulu), 1.0 / 3.0);            // 2/3 * 3/6
  EXPECT_DOUBLE_EQ(t.entitlement(Id(t, "alice")), 1.0 / 6.0);  // 2/3 * 3/6 * 1/2
  EXPECT_DOUBLE_EQ(t.share(t.ChargeTarget(Id(t, "ai2"))), 3.0);
}

TEST(BudgetTree, SetShareErrorsLeaveTheTreeUnchanged) {
  BudgetTree t = Lab();
  const BudgetId olmo = Id(t, "olmo");
  const std::vector<double> before = [&] {
    std::vector<double> v;
    for (size_t i = 0; i < t.size(); ++i) {
      v.push_back(t.share(BudgetId(static_cast<int32_t>(i))));
      v.push_back(t.entitlement(BudgetId(static_cast<int32_t>(i))));
    }
    return v;
  }();
  for (double bad : {0.0, -2.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    auto r = t.SetShare(olmo, bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().field, "share");
  }
  // The root, hidden budgets and ids out of range are not budgets one may change.
  for (BudgetId bad : {kRootBudget, t.ChargeTarget(olmo), BudgetId(99), kUnfunded}) {
    auto r = t.SetShare(bad, 2.0);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().field, "budget");
  }
  std::vector<double> after;
  for (size_t i = 0; i < t.size(); ++i) {
    after.push_back(t.share(BudgetId(static_cast<int32_t>(i))));
    after.push_back(t.entitlement(BudgetId(static_cast<int32_t>(i))));
  }
  EXPECT_EQ(after, before);
}

TEST(BudgetTree, SetLimitValidatesAndClears) {
  BudgetTree t = Lab();
  const BudgetId bob = Id(t, "bob");
  ASSERT_TRUE(t.SetLimit(bob, 8).has_value());
  EXPECT_EQ(t.limit(bob), 8);
  auto r = t.SetLimit(bob, -1);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, "limit");
  EXPECT_EQ(t.limit(bob), 8);  // unchanged
  auto hidden = t.SetLimit(t.ChargeTarget(Id(t, "olmo")), 4);
  ASSERT_FALSE(hidden.has_value());
  EXPECT_EQ(hidden.error().field, "budget");
  EXPECT_FALSE(t.limit(t.ChargeTarget(Id(t, "olmo"))).has_value());
  ASSERT_TRUE(t.SetLimit(bob, std::nullopt).has_value());
  EXPECT_FALSE(t.limit(bob).has_value());
}

TEST(BudgetTree, LeadsAreKept) {
  std::vector<BudgetSpec> specs = LabSpecs();
  specs[1].leads = {"dirk", "kyle"};
  auto t = BudgetTree::Build(specs);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->leads(Id(*t, "olmo")), (std::vector<std::string>{"dirk", "kyle"}));
  EXPECT_TRUE(t->leads(Id(*t, "alice")).empty());
}

}  // namespace
}  // namespace hg
