// Issue 3, done-when items 7 and 8: roles and tokens, and a table of malformed requests, each
// refused with its field and reason and changing nothing.
#include <gtest/gtest.h>
#include <httplib.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/cluster.h"

namespace hg::e2e {
namespace {

// The parts of the budget list a refused request must not change.
Json BudgetShape(const Cluster& c) {
  const Response r = c.Admin("GET", "/v1/budgets");
  Json out = Json::array();
  for (const Json& b : r.body["budgets"])
    out.push_back({b["path"], b["share"], b["limit"], b["leads"], b["members"]});
  return out;
}

size_t JobCount(const Cluster& c) {
  return c.Admin("GET", "/v1/jobs?state=all&limit=1000000").body["jobs"].size();
}

struct Org {
  Cluster c;
  std::string alice, carol, dave, agent;
  Org() {
    alice = c.AddPrincipal("alice", "user");
    carol = c.AddPrincipal("carol", "user");
    dave = c.AddPrincipal("dave", "user");
    agent = c.AddPrincipal("other-agent", "agent");
    c.AddBudget("lab", "", 2, Json{{"leads", {"carol"}}});
    c.AddBudget("vision", "lab", 1, Json{{"members", {"alice"}}});
    c.AddBudget("speech", "lab", 1, Json{{"leads", {"dave"}}});
    c.AddBudget("ops", "", 1);
    c.AddAgent(Node("n1", 4));
    c.AddAgent(Node("n2", 4));
  }
};

TEST(E2eRoles, UsersLeadsAndTokens) {
  Org o;
  Cluster& c = o.c;
  const Json before = BudgetShape(c);
  // A user cannot change a budget, not even one they charge.
  Response r = c.Call("PATCH", "/v1/budgets/vision", Json{{"share", 5}}, o.alice);
  EXPECT_EQ(r.status, 403) << r.raw;
  // A lead cannot change anything outside their subtree: not a sibling, not their parent.
  r = c.Call("PATCH", "/v1/budgets/vision", Json{{"share", 5}}, o.dave);
  EXPECT_EQ(r.status, 403) << r.raw;
  r = c.Call("PATCH", "/v1/budgets/lab", Json{{"share", 5}}, o.dave);
  EXPECT_EQ(r.status, 403) << r.raw;
  r = c.Call("PATCH", "/v1/budgets/ops", Json{{"share", 5}}, o.carol);
  EXPECT_EQ(r.status, 403) << r.raw;
  // Bad or missing tokens are refused before anything else.
  r = c.Call("PATCH", "/v1/budgets/vision", Json{{"share", 5}}, "hg_" + std::string(64, '0'));
  EXPECT_EQ(r.status, 401) << r.raw;
  r = c.Call("PATCH", "/v1/budgets/vision", Json{{"share", 5}});
  EXPECT_EQ(r.status, 401) << r.raw;
  EXPECT_EQ(r.body["error"]["field"], "authorization") << r.raw;
  r = c.Call("GET", "/v1/jobs", std::nullopt, "not-a-token");
  EXPECT_EQ(r.status, 401) << r.raw;
  // An agent's token is for agents only.
  r = c.Call("POST", "/v1/jobs", Json{{"gpus", 1}, {"command", {"true"}}}, o.agent);
  EXPECT_EQ(r.status, 403) << r.raw;
  // Charging a budget one is not a member of.
  r = c.Call("POST", "/v1/jobs", Json{{"budget", "speech"}, {"gpus", 1}, {"command", {"true"}}},
             o.alice);
  EXPECT_EQ(r.status, 403) << r.raw;
  EXPECT_EQ(r.body["error"]["field"], "budget") << r.raw;
  EXPECT_EQ(BudgetShape(c), before) << "a refused request changed a budget";
  EXPECT_EQ(JobCount(c), 0u);

  // Inside their subtree a lead may change shares, limits and leads; each change is audited.
  r = c.Call("PATCH", "/v1/budgets/vision", Json{{"share", 3}, {"limit", 2}}, o.carol);
  EXPECT_EQ(r.status, 200) << r.raw;
  r = c.Call("PATCH", "/v1/budgets/speech", Json{{"share", 2}}, o.dave);
  EXPECT_EQ(r.status, 200) << r.raw;
  const Response audit = c.Admin("GET", "/v1/audit?budget=vision");
  ASSERT_EQ(audit.status, 200) << audit.raw;
  bool saw_share = false;
  for (const Json& e : audit.body["entries"]) {
    if (e["field"] == "share" && e["who"] == "carol") {
      saw_share = true;
      EXPECT_EQ(std::stod(e["old"].get<std::string>()), 1.0) << e.dump();
      EXPECT_EQ(std::stod(e["new"].get<std::string>()), 3.0) << e.dump();
    }
  }
  EXPECT_TRUE(saw_share) << audit.raw;
  // whoami tells a principal who they are.
  r = c.Call("GET", "/v1/whoami", std::nullopt, o.carol);
  EXPECT_EQ(r.body["name"], "carol");
  const auto [rc, out] = c.Cli({"whoami"}, o.dave);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("dave"), std::string::npos) << out;
}

// Revoking tokens with the CLI: a user revokes a token of their own that leaked, and an admin
// revokes an agent's token, after which that agent's heartbeats are refused and its node is lost.
TEST(E2eRoles, RevokedTokensAreRefusedAndARevokedAgentsNodeIsLost) {
  Cluster c;
  c.AddAgent(Node("n1", 2));
  const std::string dave = c.AddPrincipal("dave", "user");
  auto [new_rc, made] = c.Cli({"token", "new", "dave", "--json"}, c.admin_token());
  ASSERT_EQ(new_rc, 0) << made;
  const std::string leaked = Json::parse(made)["token"];
  auto [list_rc, listed] = c.Cli({"token", "list", "--json"}, leaked);
  ASSERT_EQ(list_rc, 0) << listed;
  const Json tokens = Json::parse(listed)["tokens"];
  ASSERT_EQ(tokens.size(), 2u) << listed;
  // The list, asked with the leaked token, marks it as the one in use.
  std::string leaked_id;
  for (const Json& t : tokens)
    if (t["current"] == true) leaked_id = t["id"];
  ASSERT_FALSE(leaked_id.empty()) << listed;
  auto [revoke_own_rc, own] = c.Cli({"token", "revoke", "dave", leaked_id}, leaked);
  ASSERT_EQ(revoke_own_rc, 0) << own;
  ASSERT_FALSE(leaked_id.empty());
  EXPECT_EQ(c.Call("GET", "/v1/whoami", std::nullopt, leaked).status, 401);
  EXPECT_EQ(c.Call("GET", "/v1/whoami", std::nullopt, dave).status, 200)
      << "revoked dave's other token: " << leaked_id;

  auto [agents_rc, agents] = c.Cli({"token", "list", "agents", "--json"}, c.admin_token());
  ASSERT_EQ(agents_rc, 0) << agents;
  const std::string agent_id = Json::parse(agents)["tokens"][0]["id"];
  auto [revoke_rc, revoked] = c.Cli({"token", "revoke", "agents", agent_id}, c.admin_token());
  ASSERT_EQ(revoke_rc, 0) << revoked;
  EXPECT_NE(revoked.find("revoked"), std::string::npos) << revoked;
  EXPECT_TRUE(WaitFor([&] {
    const Response nodes = c.Admin("GET", "/v1/nodes");
    for (const Json& n : nodes.body["nodes"])
      if (n["name"] == "n1") return n["state"] == "lost";
    return false;
  })) << c.Admin("GET", "/v1/nodes").raw;
}

// A lead adds a budget, deletes it, and reads who changed what with the CLI; a budget with
// children or with a job in the system is not deleted, and the refusal names the field.
TEST(E2eRoles, LeadsDeleteBudgetsAndReadTheirHistoryWithTheCli) {
  Org o;
  Cluster& c = o.c;
  auto [add_rc, added] =
      c.Cli({"budget", "add", "tmp", "--parent", "vision", "--share", "2"}, o.carol);
  ASSERT_EQ(add_rc, 0) << added;
  auto [set_rc, set] = c.Cli({"budget", "set", "tmp", "--share", "3"}, o.carol);
  ASSERT_EQ(set_rc, 0) << set;

  // Refused: a user who leads nothing here, a budget with children, one with a job in the system.
  const Json before = BudgetShape(c);
  auto [user_rc, user_out] = c.Cli({"budget", "delete", "tmp"}, o.alice);
  EXPECT_EQ(user_rc, 1) << user_out;
  EXPECT_NE(user_out.find("authorization"), std::string::npos) << user_out;
  auto [parent_rc, parent_out] = c.Cli({"budget", "delete", "vision"}, o.carol);
  EXPECT_EQ(parent_rc, 1) << parent_out;
  EXPECT_NE(parent_out.find("has children"), std::string::npos) << parent_out;
  const int64_t job = c.Submit(
      Json{{"budget", "speech"}, {"gpus", 1}, {"command", {"sleep", "60"}}, {"cwd", c.dir()}},
      c.admin_token());
  ASSERT_GT(job, 0);
  auto [busy_rc, busy_out] = c.Cli({"budget", "delete", "speech"}, o.carol);
  EXPECT_EQ(busy_rc, 1) << busy_out;
  EXPECT_NE(busy_out.find("pending or running jobs"), std::string::npos) << busy_out;
  EXPECT_EQ(BudgetShape(c), before) << "a refused delete changed a budget";

  auto [del_rc, deleted] = c.Cli({"budget", "delete", "tmp"}, o.carol);
  ASSERT_EQ(del_rc, 0) << deleted;
  EXPECT_EQ(deleted, "budget tmp deleted\n");
  for (const Json& b : c.Admin("GET", "/v1/budgets").body["budgets"])
    EXPECT_NE(b["name"], "tmp") << "still listed after its delete";

  // Its history, oldest first: created, share 2 -> 3, deleted, each by carol; nothing else's.
  // Each line: the time (date and clock), who, budget, field, old, new ("-": none).
  auto [hist_rc, history] = c.Cli({"budget", "history", "tmp"}, o.alice);
  ASSERT_EQ(hist_rc, 0) << history;
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(history);
  std::getline(lines, added);  // the header
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string w; words >> w;) row.push_back(w);
    ASSERT_GE(row.size(), 2u) << history;
    row.erase(row.begin(), row.begin() + 2);
    rows.push_back(row);
  }
  using Row = std::vector<std::string>;
  EXPECT_EQ(rows, (std::vector<Row>{{"carol", "tmp", "created", "-", "parent=vision", "share=2.0"},
                                    {"carol", "tmp", "share", "2.0", "3.0"},
                                    {"carol", "tmp", "deleted", "-", "-"}}))
      << history;
  // Without a name: every budget's changes, the Org's own creations among them.
  auto [all_rc, all] = c.Cli({"budget", "history", "--json"}, o.alice);
  ASSERT_EQ(all_rc, 0) << all;
  std::vector<std::string> budgets;
  const Json entries = Json::parse(all)["entries"];
  for (const Json& e : entries)
    if (e["field"] == "created") budgets.push_back(e["budget"]);
  EXPECT_EQ(budgets, (std::vector<std::string>{"lab", "vision", "speech", "ops", "tmp"})) << all;
}

struct BadCase {
  const char* what;
  const char* method;
  const char* path;
  std::string body;  // raw text, so malformed JSON can be sent
  int status;
  const char* field;  // expected error.field (empty: any)
};

TEST(E2eBadInput, EveryMalformedRequestIsRefusedWithItsFieldAndChangesNothing) {
  Org o;
  Cluster& c = o.c;
  const std::string big(2 * 1024 * 1024, 'x');
  const std::string long_name(5000, 'n');
  const std::vector<BadCase> cases = {
      {"not json", "POST", "/v1/jobs", "{gpus: 1", 400, "body"},
      {"not an object", "POST", "/v1/jobs", "[1,2]", 400, "body"},
      {"no command", "POST", "/v1/jobs", R"({"gpus": 1})", 400, "command"},
      {"empty command", "POST", "/v1/jobs", R"({"gpus": 1, "command": []})", 400, "command"},
      {"gpus zero", "POST", "/v1/jobs", R"({"gpus": 0, "command": ["true"]})", 400, "gpus"},
      {"gpus text", "POST", "/v1/jobs", R"({"gpus": "two", "command": ["true"]})", 400, "gpus"},
      {"gpus never fit", "POST", "/v1/jobs", R"({"gpus": 64, "command": ["true"]})", 400, "gpus"},
      {"gpus_per_node above the largest node", "POST", "/v1/jobs",
       R"({"gpus": 8, "gpus_per_node": 8, "command": ["true"]})", 400, "gpus_per_node"},
      {"gpus_per_node not dividing", "POST", "/v1/jobs",
       R"({"gpus": 3, "gpus_per_node": 2, "command": ["true"]})", 400, "gpus_per_node"},
      {"min_runtime above the cap", "POST", "/v1/jobs",
       R"({"gpus": 1, "budget": "vision", "min_runtime_s": 28801, "command": ["true"]})", 400,
       "min_runtime_s"},
      {"negative min_runtime", "POST", "/v1/jobs",
       R"({"gpus": 1, "min_runtime_s": -1, "command": ["true"]})", 400, "min_runtime_s"},
      {"grace above its cap", "POST", "/v1/jobs",
       R"({"gpus": 1, "grace_s": 999999, "command": ["true"]})", 400, "grace_s"},
      {"unknown budget", "POST", "/v1/jobs",
       R"({"gpus": 1, "budget": "nosuch", "command": ["true"]})", 400, "budget"},
      {"unknown field", "POST", "/v1/jobs", R"({"gpus": 1, "gpu": 2, "command": ["true"]})", 400,
       "gpu"},
      {"env not strings", "POST", "/v1/jobs",
       R"({"gpus": 1, "env": {"A": 1}, "command": ["true"]})", 400, "env.A"},
      {"string too long", "POST", "/v1/jobs",
       R"({"gpus": 1, "name": ")" + long_name + R"(", "command": ["true"]})", 400, "name"},
      {"body too large", "POST", "/v1/jobs", R"({"gpus": 1, "command": [")" + big + R"("]})", 413,
       ""},
      {"budget share zero", "PATCH", "/v1/budgets/vision", R"({"share": 0})", 400, "share"},
      {"budget share NaN-ish", "PATCH", "/v1/budgets/vision", R"({"share": "lots"})", 400, "share"},
      {"budget negative limit", "PATCH", "/v1/budgets/vision", R"({"limit": -4})", 400, "limit"},
      {"unknown budget patch", "PATCH", "/v1/budgets/nosuch", R"({"share": 2})", 404, ""},
      {"budget unknown parent", "POST", "/v1/budgets",
       R"({"name": "x", "parent": "nosuch", "share": 1})", 400, "parent"},
      {"budget duplicate", "POST", "/v1/budgets",
       R"({"name": "vision", "parent": "lab", "share": 1})", 409, "name"},
      {"budget bad name", "POST", "/v1/budgets", R"({"name": "a/b", "parent": "lab", "share": 1})",
       400, "name"},
      {"budget cycle", "PATCH", "/v1/budgets/lab", R"({"parent": "vision"})", 400, "parent"},
      {"cancel unknown job", "POST", "/v1/jobs/99999/cancel", "{}", 404, ""},
      {"job id not a number", "GET", "/v1/jobs/abc", "", 404, ""},
      {"drain unknown node", "POST", "/v1/nodes/nosuch/drain", R"({"reason": "x"})", 404, ""},
      {"drain deadline text", "POST", "/v1/nodes/n1/drain", R"({"deadline_at": "soon"})", 400,
       "deadline_at"},
  };
  const Json budgets_before = BudgetShape(c);
  const Json nodes_before = c.Admin("GET", "/v1/nodes").body;
  const size_t audit_before = c.Admin("GET", "/v1/audit").body["entries"].size();
  for (const BadCase& k : cases) {
    SCOPED_TRACE(k.what);
    httplib::Client cli("127.0.0.1", c.port());
    httplib::Headers h{{"Authorization", "Bearer " + c.admin_token()}};
    httplib::Result res{nullptr, httplib::Error::Unknown};
    const std::string m = k.method;
    if (m == "POST") res = cli.Post(k.path, h, k.body, "application/json");
    if (m == "PATCH") res = cli.Patch(k.path, h, k.body, "application/json");
    if (m == "GET") res = cli.Get(k.path, h);
    ASSERT_TRUE(res) << "no answer";
    EXPECT_EQ(res->status, k.status) << res->body;
    if (res->status == 413) continue;  // refused before the body was read
    const Json body = Json::parse(res->body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << res->body;
    EXPECT_TRUE(body["error"]["reason"].is_string() &&
                !body["error"]["reason"].get<std::string>().empty())
        << res->body;
    if (*k.field) {
      EXPECT_EQ(body["error"]["field"], k.field) << res->body;
    }
  }
  EXPECT_EQ(JobCount(c), 0u) << "a refused submission was stored";
  EXPECT_EQ(BudgetShape(c), budgets_before);
  const Json nodes_after = c.Admin("GET", "/v1/nodes").body;
  EXPECT_EQ(nodes_after["nodes"][0]["state"], nodes_before["nodes"][0]["state"]);
  EXPECT_EQ(c.Admin("GET", "/v1/audit").body["entries"].size(), audit_before);
}

}  // namespace
}  // namespace hg::e2e
