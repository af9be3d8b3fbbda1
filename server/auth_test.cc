#include "server/auth.h"

#include <gtest/gtest.h>

#include <set>

namespace hg::server {
namespace {

using store::BudgetRecord;
using store::PrincipalRecord;

// ai
// ├── olmo        leads: bob           members: carol
// │   ├── alice   leads: -             members: alice
// │   └── pretrain leads: dave         members: erin
// │       └── ablate                   members: frank
// └── vision      leads: gina          members: hal
// infra (top level, separate tree)     members: ivan
std::vector<BudgetRecord> Tree() {
  return {
      {"ai", "", 1.0, std::nullopt, {"zed"}, {}},
      {"olmo", "ai", 2.0, std::nullopt, {"bob"}, {"carol"}},
      {"alice", "olmo", 1.0, std::nullopt, {}, {"alice"}},
      {"pretrain", "olmo", 1.0, 64, {"dave"}, {"erin"}},
      {"ablate", "pretrain", 1.0, std::nullopt, {}, {"frank"}},
      {"vision", "ai", 1.0, std::nullopt, {"gina"}, {"hal"}},
      {"infra", "", 1.0, std::nullopt, {}, {"ivan"}},
  };
}

PrincipalRecord User(std::string name) { return {std::move(name), "user"}; }
const PrincipalRecord kAdmin{"root", "admin"};
const PrincipalRecord kAgent{"bob", "agent"};  // same name as a lead: the role must still win

TEST(AuthTokenTest, NewTokenHasTheDocumentedShape) {
  const std::string t = NewToken();
  ASSERT_EQ(t.size(), 3u + 64u);
  EXPECT_EQ(t.substr(0, 3), "hg_");
  for (char c : t.substr(3)) {
    EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << t;
  }
  EXPECT_TRUE(IsWellFormedToken(t));
}

TEST(AuthTokenTest, NewTokensAreUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(NewToken()).second);
}

TEST(AuthTokenTest, MalformedTokensAreRecognised) {
  const std::string good = NewToken();
  EXPECT_FALSE(IsWellFormedToken(""));
  EXPECT_FALSE(IsWellFormedToken("hg_"));
  EXPECT_FALSE(IsWellFormedToken(good.substr(0, good.size() - 1)));
  EXPECT_FALSE(IsWellFormedToken(good + "0"));
  EXPECT_FALSE(IsWellFormedToken("xx_" + good.substr(3)));
  std::string upper = good;
  upper[10] = 'A';
  EXPECT_FALSE(IsWellFormedToken(upper));
}

TEST(AuthTokenTest, HashIsStableHexAndDiffersBetweenTokens) {
  const std::string a = NewToken();
  const std::string b = NewToken();
  const std::string ha = HashToken(a);
  EXPECT_EQ(ha, HashToken(a));
  EXPECT_NE(ha, HashToken(b));
  EXPECT_NE(ha, a);
  EXPECT_EQ(ha.size(), 64u);  // 32-byte BLAKE2b, hex
  EXPECT_EQ(ha.find_first_not_of("0123456789abcdef"), std::string::npos);
  // A known answer, so the stored hashes stay valid across builds: BLAKE2b-256 of "abc".
  EXPECT_EQ(HashToken("abc"), "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");
}

TEST(AuthTokenTest, BearerHeaderParsing) {
  EXPECT_EQ(BearerToken("Bearer hg_abc"), std::optional<std::string_view>("hg_abc"));
  EXPECT_EQ(BearerToken("bearer hg_abc "), std::optional<std::string_view>("hg_abc"));
  EXPECT_EQ(BearerToken("BEARER  hg_abc"), std::optional<std::string_view>("hg_abc"));
  EXPECT_EQ(BearerToken("Basic dXNlcjpwdw=="), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer "), std::nullopt);
  EXPECT_EQ(BearerToken("Bearerhg_abc"), std::nullopt);
  EXPECT_EQ(BearerToken(""), std::nullopt);
}

TEST(AuthTokenTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abcdef", "abcdef"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcdeg"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcde"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
}

TEST(AuthRoleTest, KnownRoles) {
  EXPECT_TRUE(IsKnownRole("admin"));
  EXPECT_TRUE(IsKnownRole("user"));
  EXPECT_TRUE(IsKnownRole("agent"));
  EXPECT_FALSE(IsKnownRole("lead"));  // lead is not a role: it is a user named in `leads`
  EXPECT_FALSE(IsKnownRole("Admin"));
  EXPECT_FALSE(IsKnownRole(""));
}

TEST(AuthBudgetTest, LeadsSubtreeCoversTheBudgetAndItsDescendantsOnly) {
  const auto t = Tree();
  EXPECT_TRUE(LeadsSubtree(t, "bob", "olmo"));
  EXPECT_TRUE(LeadsSubtree(t, "bob", "alice"));
  EXPECT_TRUE(LeadsSubtree(t, "bob", "ablate"));   // two levels down
  EXPECT_FALSE(LeadsSubtree(t, "bob", "ai"));      // the subtree's parent
  EXPECT_FALSE(LeadsSubtree(t, "bob", "vision"));  // a sibling
  EXPECT_FALSE(LeadsSubtree(t, "bob", "infra"));   // another tree
  EXPECT_TRUE(LeadsSubtree(t, "dave", "ablate"));
  EXPECT_FALSE(LeadsSubtree(t, "dave", "olmo"));
  EXPECT_FALSE(LeadsSubtree(t, "dave", "alice"));
  EXPECT_FALSE(LeadsSubtree(t, "carol", "olmo"));  // a member is not a lead
  EXPECT_FALSE(LeadsSubtree(t, "bob", "nope"));    // unknown budget
  EXPECT_FALSE(LeadsSubtree(t, "", "olmo"));
  EXPECT_TRUE(LeadsSubtree(t, "zed", "ablate"));  // the lead of the top leads everything in it
  EXPECT_FALSE(LeadsSubtree(t, "zed", "infra"));
}

TEST(AuthBudgetTest, StrictAncestorExcludesTheBudgetItself) {
  const auto t = Tree();
  EXPECT_FALSE(LeadsStrictAncestor(t, "bob", "olmo"));
  EXPECT_TRUE(LeadsStrictAncestor(t, "bob", "pretrain"));
  EXPECT_TRUE(LeadsStrictAncestor(t, "bob", "ablate"));
  EXPECT_FALSE(LeadsStrictAncestor(t, "zed", "ai"));
  EXPECT_FALSE(LeadsStrictAncestor(t, "zed", "nope"));
}

TEST(AuthBudgetTest, ChangeBudget) {
  const auto t = Tree();
  // Admin: anything, even a budget nobody leads.
  EXPECT_TRUE(CanChangeBudget(t, kAdmin, "infra"));
  EXPECT_TRUE(CanChangeBudget(t, kAdmin, "ai"));
  // Lead of olmo: olmo itself and below.
  EXPECT_TRUE(CanChangeBudget(t, User("bob"), "olmo"));
  EXPECT_TRUE(CanChangeBudget(t, User("bob"), "alice"));
  EXPECT_TRUE(CanChangeBudget(t, User("bob"), "ablate"));
  // ... but not at the subtree's parent, a sibling, or another tree.
  EXPECT_FALSE(CanChangeBudget(t, User("bob"), "ai"));
  EXPECT_FALSE(CanChangeBudget(t, User("bob"), "vision"));
  EXPECT_FALSE(CanChangeBudget(t, User("bob"), "infra"));
  // A nested lead: only their own subtree, not their lead's budget nor a sibling.
  EXPECT_TRUE(CanChangeBudget(t, User("dave"), "pretrain"));
  EXPECT_FALSE(CanChangeBudget(t, User("dave"), "olmo"));
  EXPECT_FALSE(CanChangeBudget(t, User("dave"), "alice"));
  // Members and plain users: never, not even their own budget.
  EXPECT_FALSE(CanChangeBudget(t, User("alice"), "alice"));
  EXPECT_FALSE(CanChangeBudget(t, User("carol"), "olmo"));
  // An agent named like a lead still has no budget rights; an unknown budget is refused.
  EXPECT_FALSE(CanChangeBudget(t, kAgent, "olmo"));
  EXPECT_FALSE(CanChangeBudget(t, User("bob"), "nope"));
}

TEST(AuthBudgetTest, CreateUnder) {
  const auto t = Tree();
  EXPECT_TRUE(CanCreateUnder(t, kAdmin, ""));  // top level
  EXPECT_TRUE(CanCreateUnder(t, kAdmin, "infra"));
  EXPECT_TRUE(CanCreateUnder(t, User("bob"), "olmo"));
  EXPECT_TRUE(CanCreateUnder(t, User("bob"), "pretrain"));
  EXPECT_FALSE(CanCreateUnder(t, User("bob"), "ai"));  // beside their own subtree
  EXPECT_FALSE(CanCreateUnder(t, User("bob"), "vision"));
  EXPECT_FALSE(CanCreateUnder(t, User("bob"), ""));
  EXPECT_FALSE(CanCreateUnder(t, User("zed"), ""));  // even the top lead: top level is admin's
  EXPECT_FALSE(CanCreateUnder(t, User("alice"), "alice"));
  EXPECT_FALSE(CanCreateUnder(t, kAgent, "olmo"));
  EXPECT_FALSE(CanCreateUnder(t, User("bob"), "nope"));
}

TEST(AuthBudgetTest, DeleteOnlyBelowTheLedBudget) {
  const auto t = Tree();
  EXPECT_TRUE(CanDeleteBudget(t, kAdmin, "ai"));
  EXPECT_TRUE(CanDeleteBudget(t, User("bob"), "alice"));
  EXPECT_TRUE(CanDeleteBudget(t, User("bob"), "ablate"));
  EXPECT_FALSE(CanDeleteBudget(t, User("bob"), "olmo"));  // the root of their own subtree
  EXPECT_FALSE(CanDeleteBudget(t, User("bob"), "vision"));
  EXPECT_FALSE(CanDeleteBudget(t, User("dave"), "pretrain"));
  EXPECT_TRUE(CanDeleteBudget(t, User("dave"), "ablate"));
  EXPECT_FALSE(CanDeleteBudget(t, User("frank"), "ablate"));
  EXPECT_FALSE(CanDeleteBudget(t, kAgent, "alice"));
}

TEST(AuthBudgetTest, Charge) {
  const auto t = Tree();
  EXPECT_TRUE(CanCharge(t, kAdmin, "infra"));
  EXPECT_TRUE(CanCharge(t, kAdmin, ""));
  // Members charge their own budget only; membership is not inherited downwards or upwards.
  EXPECT_TRUE(CanCharge(t, User("alice"), "alice"));
  EXPECT_FALSE(CanCharge(t, User("alice"), "olmo"));
  EXPECT_FALSE(CanCharge(t, User("alice"), "pretrain"));
  EXPECT_TRUE(CanCharge(t, User("carol"), "olmo"));
  EXPECT_FALSE(CanCharge(t, User("carol"), "alice"));
  EXPECT_TRUE(CanCharge(t, User("erin"), "pretrain"));
  EXPECT_FALSE(CanCharge(t, User("erin"), "ablate"));
  // Leads charge any budget of their subtree, nothing outside it.
  EXPECT_TRUE(CanCharge(t, User("bob"), "olmo"));
  EXPECT_TRUE(CanCharge(t, User("bob"), "ablate"));
  EXPECT_FALSE(CanCharge(t, User("bob"), "ai"));
  EXPECT_FALSE(CanCharge(t, User("bob"), "vision"));
  EXPECT_FALSE(CanCharge(t, User("dave"), "olmo"));
  // Unfunded work: every user; agents never; unknown budgets never.
  EXPECT_TRUE(CanCharge(t, User("nobody"), ""));
  EXPECT_FALSE(CanCharge(t, User("nobody"), "alice"));
  EXPECT_FALSE(CanCharge(t, kAgent, ""));
  EXPECT_FALSE(CanCharge(t, kAgent, "olmo"));
  EXPECT_FALSE(CanCharge(t, User("alice"), "nope"));
}

TEST(AuthBudgetTest, ParentCycleInTheStoreDoesNotLoop) {
  // Not a valid tree; the store should never hold one, but a walk must still end.
  std::vector<BudgetRecord> t = {{"a", "b", 1.0, std::nullopt, {}, {}},
                                 {"b", "a", 1.0, std::nullopt, {}, {}}};
  EXPECT_FALSE(LeadsSubtree(t, "bob", "a"));
}

TEST(AuthJobTest, OwnersAndAdminsManageJobs) {
  EXPECT_TRUE(CanManageJob(User("alice"), "alice"));
  EXPECT_FALSE(CanManageJob(User("alice"), "bob"));
  EXPECT_TRUE(CanManageJob(kAdmin, "bob"));
  EXPECT_FALSE(CanManageJob({"alice", "agent"}, "alice"));
  EXPECT_FALSE(CanManageJob(User(""), ""));
}

TEST(AuthRoleTest, AdminAndAgentEndpoints) {
  EXPECT_TRUE(IsAdmin(kAdmin));
  EXPECT_FALSE(IsAdmin(User("bob")));
  EXPECT_FALSE(IsAdmin(kAgent));
  EXPECT_TRUE(CanActAsAgent(kAgent));
  EXPECT_TRUE(CanActAsAgent(kAdmin));
  EXPECT_FALSE(CanActAsAgent(User("bob")));
}

TEST(AuthWhoamiTest, MemberAndLeadLists) {
  const auto t = Tree();
  EXPECT_EQ(MemberOf(t, "alice"), std::vector<std::string>{"alice"});
  EXPECT_EQ(LeadOf(t, "bob"), std::vector<std::string>{"olmo"});
  EXPECT_TRUE(MemberOf(t, "bob").empty());
  EXPECT_TRUE(LeadOf(t, "nobody").empty());
}

}  // namespace
}  // namespace hg::server
