// The API's refusals and roles over real HTTP: each bad request gets its field and reason and
// changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "server/auth.h"
#include "server/test_harness.h"

namespace hg::server::testing {
namespace {

using nlohmann::json;

class Api : public ::testing::Test {
 protected:
  void SetUp() override {
    agent_ = h_.Principal("agent1", "agent");
    alice_ = h_.Principal("alice", "user");
    bob_ = h_.Principal("bob", "user");
    carol_ = h_.Principal("carol", "user");
    // ai > olmo > olmo.alice; ai > tulu. bob leads olmo; alice is a member of olmo.alice.
    ASSERT_EQ(h_.Post("/v1/budgets", h_.admin(), {{"name", "ai"}, {"share", 1}}).status, 201);
    ASSERT_EQ(h_.Post("/v1/budgets", h_.admin(),
                      {{"name", "olmo"}, {"parent", "ai"}, {"share", 2}, {"leads", {"bob"}}})
                  .status,
              201);
    ASSERT_EQ(
        h_.Post("/v1/budgets", h_.admin(),
                {{"name", "olmo.alice"}, {"parent", "olmo"}, {"share", 1}, {"members", {"alice"}}})
            .status,
        201);
    ASSERT_EQ(h_.Post("/v1/budgets", h_.admin(), {{"name", "tulu"}, {"parent", "ai"}, {"share", 1}})
                  .status,
              201);
    FakeAgent n1(h_, agent_, "n1", 8), n2(h_, agent_, "n2", 8);
    ASSERT_EQ(n1.Register().status, 200);
    ASSERT_EQ(n2.Register().status, 200);
  }
  // Everything a refused request must leave alone.
  std::string Fingerprint() {
    const json jobs = h_.Get("/v1/jobs?state=all", h_.admin()).body;
    json budgets = h_.Get("/v1/budgets", h_.admin()).body["budgets"];
    json b = json::array();
    for (const auto& x : budgets)
      b.push_back({x["name"], x["share"], x["limit"], x["leads"], x["members"]});
    const json audit = h_.Get("/v1/audit", h_.admin()).body;
    return jobs.dump() + b.dump() + audit.dump();
  }

  Harness h_;
  std::string agent_, alice_, bob_, carol_;
};

json Job(json patch) {
  json j = {{"name", "t"}, {"budget", "olmo.alice"}, {"gpus", 1}, {"command", {"true"}}};
  for (const auto& [k, v] : patch.items()) {
    if (v.is_string() && v == "<drop>")
      j.erase(k);
    else
      j[k] = v;
  }
  return j;
}

TEST_F(Api, SubmitValidationTable) {
  struct Case {
    std::string body;
    int status;
    std::string field;
    std::string reason_part;
  };
  const std::vector<Case> cases = {
      {"{", 400, "body", "invalid JSON"},
      {"[1,2]", 400, "body", "object"},
      {Job({{"budget", "nope"}}).dump(), 400, "budget", "unknown budget"},
      {Job({{"budget", "tulu"}}).dump(), 403, "budget", "may not charge"},
      {Job({{"gpus", 0}}).dump(), 400, "gpus", "at least 1"},
      {Job({{"gpus", "2"}}).dump(), 400, "gpus", "integer"},
      {Job({{"gpus", 17}}).dump(), 400, "gpus", "never fit"},
      {Job({{"gpus", 6}, {"gpus_per_node", 4}}).dump(), 400, "gpus_per_node", "divide"},
      {Job({{"gpus", 16}, {"gpus_per_node", 16}}).dump(), 400, "gpus_per_node", "largest: 8"},
      {Job({{"min_runtime_s", 9 * 3600}}).dump(), 400, "min_runtime_s", "cap of"},
      {Job({{"grace_s", 100000}}).dump(), 400, "grace_s", "cap"},
      {Job({{"grace_s", -1}}).dump(), 400, "grace_s", "at least 0"},
      {Job({{"max_runtime_s", 0}}).dump(), 400, "max_runtime_s", "at least 1"},
      {Job({{"command", json::array()}}).dump(), 400, "command", "empty"},
      {Job({{"command", "<drop>"}}).dump(), 400, "command", "required"},
      {Job({{"command", {1}}}).dump(), 400, "command[0]", "string"},
      {Job({{"command", json(std::vector<std::string>(257, "x"))}}).dump(), 400, "command", "256"},
      {Job({{"env", {{"K", 1}}}}).dump(), 400, "env.K", "string"},
      {Job({{"name", std::string(65, 'a')}}).dump(), 400, "name", "[A-Za-z0-9._-]"},
      {Job({{"cwd", std::string(5000, 'a')}}).dump(), 400, "cwd", "4096"},
      {Job({{"gpu", 1}}).dump(), 400, "gpu", "unknown field"},
      {Job({{"resumable", "yes"}}).dump(), 400, "resumable", "true or false"},
      // Session leases: the API's names of core's fields, and the caps of PolicyConfig.
      {Job({{"lease_s", -1}, {"max_runtime_s", 3600}}).dump(), 400, "lease_s", "at least 0"},
      {Job({{"lease_s", "30m"}, {"max_runtime_s", 3600}}).dump(), 400, "lease_s", "integer"},
      {Job({{"lease_s", 3601}, {"max_runtime_s", 3600 * 2}}).dump(), 400, "lease_s", "cap of 1 h"},
      {Job({{"lease_s", 1800}}).dump(), 400, "max_runtime_s", "required with a lease"},
      {Job({{"lease_s", 1800}, {"max_runtime_s", 25 * 3600}}).dump(), 400, "max_runtime_s",
       "cap of 24 h"},
      {Job({{"lease_s", 1800}, {"max_runtime_s", 3600}, {"gpus", 16}, {"gpus_per_node", 8}}).dump(),
       400, "lease_s", "at most 8 GPUs"},
  };
  const std::string before = Fingerprint();
  for (const Case& c : cases) {
    const Resp r = h_.Call("POST", "/v1/jobs", alice_, c.body);
    EXPECT_EQ(r.status, c.status) << c.body.substr(0, 200) << " -> " << r.text;
    EXPECT_EQ(r.body["error"]["field"], c.field) << r.text;
    EXPECT_NE(r.body["error"]["reason"].get<std::string>().find(c.reason_part), std::string::npos)
        << r.text;
    EXPECT_EQ(Fingerprint(), before) << c.body.substr(0, 200);
  }
  // Over 1 MiB: 413 with the JSON error shape.
  const Resp big =
      h_.Call("POST", "/v1/jobs", alice_, Job({{"cwd", std::string(2 << 20, 'a')}}).dump());
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(big.body["error"]["field"], "body");
  EXPECT_EQ(Fingerprint(), before);
  // A good one is accepted only after it is durable, and shows up.
  const Resp ok = h_.Post("/v1/jobs", alice_, Job({}));
  ASSERT_EQ(ok.status, 201) << ok.text;
  EXPECT_EQ(ok.body["state"], "pending");
  EXPECT_NE(Fingerprint(), before);
}

// A client that lost the answer to a submission sends it again with the same Idempotency-Key and
// gets the job the first attempt made, also after a restart; the key is the user's own, a new
// request under an old key is refused, and a malformed key changes nothing.
TEST_F(Api, AnIdempotencyKeyMakesARetryFindTheFirstJob) {
  auto submit = [&](const json& body, const std::string& token, const std::string& key) {
    return h_.Call("POST", "/v1/jobs", token, body.dump(), {{"Idempotency-Key", key}});
  };
  Resp first = submit(Job({}), alice_, "7f3a-retry");
  ASSERT_EQ(first.status, 201) << first.text;
  const int64_t id = first.body["id"].get<int64_t>();
  Resp again = submit(Job({}), alice_, "7f3a-retry");
  ASSERT_EQ(again.status, 200) << again.text;
  EXPECT_EQ(again.body["id"], id);
  EXPECT_EQ(again.body["replayed"], true);

  Resp other = submit(Job({{"gpus", 2}}), alice_, "7f3a-retry");
  EXPECT_EQ(other.status, 409) << other.text;
  EXPECT_EQ(other.body["error"]["field"], "Idempotency-Key");
  EXPECT_NE(other.text.find("job " + std::to_string(id)), std::string::npos) << other.text;

  // Refused, and no job made (the job above may start meanwhile: only the jobs' count is
  // compared, not their states).
  auto job_count = [&] { return h_.Get("/v1/jobs?state=all", h_.admin()).body["total"]; };
  const json before = job_count();
  for (const std::string& bad :
       {std::string("has space"), std::string(129, 'k'), std::string("tab\there")}) {
    Resp r = submit(Job({}), alice_, bad);
    EXPECT_EQ(r.status, 400) << "'" << bad << "': " << r.text;
    EXPECT_EQ(r.body["error"]["field"], "Idempotency-Key") << r.text;
  }
  EXPECT_EQ(job_count(), before);

  // Another user's key of the same text is another submission.
  Resp bobs = submit(Job({{"budget", "olmo"}}), bob_, "7f3a-retry");
  ASSERT_EQ(bobs.status, 201) << bobs.text;
  EXPECT_NE(bobs.body["id"], id);

  // The job ran and ended meanwhile, and the server restarted: a retry still finds it, as it is.
  ASSERT_EQ(h_.Post("/v1/jobs/" + std::to_string(id) + "/cancel", alice_, json::object()).status,
            200);
  h_.StopServer();
  h_.StartServer();
  Resp later = submit(Job({}), alice_, "7f3a-retry");
  ASSERT_EQ(later.status, 200) << later.text;
  EXPECT_EQ(later.body["id"], id);
  EXPECT_EQ(later.body["state"], "cancelled");
  const json all = h_.Get("/v1/jobs?state=all", h_.admin()).body;
  EXPECT_EQ(all["total"], 2) << all.dump();
}

// Retries that reach the server while the first attempt under their key is still committing (a
// client that timed out on a slow commit and sent again) wait for it and answer with its job:
// one job made, one 201, every other answer a replay of it, none refused.
TEST_F(Api, RetriesThatRaceTheirFirstAttemptGetItsJob) {
  auto job_count = [&] { return h_.Get("/v1/jobs?state=all", h_.admin()).body["total"]; };
  const json before = job_count();
  constexpr int kRounds = 5;
  constexpr int kClients = 12;
  for (int round = 0; round < kRounds; ++round) {
    const std::string key = "race-" + std::to_string(round);
    std::vector<Resp> answers(kClients);
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        answers[static_cast<size_t>(c)] =
            h_.Call("POST", "/v1/jobs", alice_, Job({}).dump(), {{"Idempotency-Key", key}});
      });
    }
    for (auto& t : clients) t.join();
    int created = 0;
    std::set<int64_t> ids;
    for (const Resp& r : answers) {
      ASSERT_TRUE(r.status == 201 || r.status == 200) << r.status << ": " << r.text;
      if (r.status == 201) {
        ++created;
      } else {
        EXPECT_EQ(r.body["replayed"], true) << r.text;
      }
      ids.insert(r.body["id"].get<int64_t>());
    }
    EXPECT_EQ(created, 1) << "round " << round;
    EXPECT_EQ(ids.size(), 1u) << "round " << round;
  }
  EXPECT_EQ(job_count(), before.get<int64_t>() + kRounds);
}

// A leaked token is revoked at once and for good: its next request is refused (the server had it
// in its cache), also after a restart, while the principal's other tokens go on working; a user
// manages only their own tokens, every revocation is audited, and the last admin token stays.
TEST_F(Api, ARevokedTokenIsRefusedAtOnceAndForGood) {
  auto status_of = [&](const std::string& token) { return h_.Get("/v1/whoami", token).status; };
  const Resp second = h_.Post("/v1/principals/carol/tokens", h_.admin(), json::object());
  ASSERT_EQ(second.status, 201) << second.text;
  const std::string leaked = second.body["token"];
  ASSERT_EQ(status_of(leaked), 200);  // cached from here on
  const std::string id = HashToken(leaked).substr(0, State::kTokenIdChars);

  const Resp listed = h_.Get("/v1/principals/carol/tokens", carol_);
  ASSERT_EQ(listed.status, 200) << listed.text;
  ASSERT_EQ(listed.body["tokens"].size(), 2u) << listed.text;
  EXPECT_NE(listed.text.find(id), std::string::npos) << listed.text;
  EXPECT_EQ(listed.text.find(leaked), std::string::npos) << "a token itself was shown";
  for (const json& t : listed.body["tokens"])
    EXPECT_EQ(t["current"], t["id"] != id) << "carol asked with her first token: " << listed.text;
  EXPECT_EQ(h_.Get("/v1/principals/carol/tokens", alice_).status, 403);
  EXPECT_EQ(h_.Get("/v1/principals/carol/tokens", h_.admin()).status, 200);

  // Refusals change nothing.
  const std::string before = Fingerprint();
  const std::string path = "/v1/principals/carol/tokens/";
  EXPECT_EQ(h_.Call("DELETE", path + id, alice_).status, 403);
  const Resp bad = h_.Call("DELETE", path + "XYZ", carol_);
  EXPECT_EQ(bad.status, 400) << bad.text;
  EXPECT_EQ(bad.body["error"]["field"], "id");
  EXPECT_EQ(h_.Call("DELETE", path + "000000000000", carol_).status, 404);
  EXPECT_EQ(Fingerprint(), before);
  EXPECT_EQ(status_of(leaked), 200);

  const Resp revoked = h_.Call("DELETE", path + id, carol_);
  ASSERT_EQ(revoked.status, 200) << revoked.text;
  EXPECT_EQ(status_of(leaked), 401);
  EXPECT_EQ(status_of(carol_), 200);
  EXPECT_EQ(h_.Call("DELETE", path + id, carol_).status, 404);
  const json audit = h_.Get("/v1/audit", h_.admin()).body["entries"];
  ASSERT_FALSE(audit.empty());
  EXPECT_EQ(audit.back()["field"], "token");
  EXPECT_EQ(audit.back()["who"], "carol");
  EXPECT_EQ(audit.back()["old"], "carol " + id);

  h_.StopServer();
  h_.StartServer();
  EXPECT_EQ(status_of(leaked), 401);
  EXPECT_EQ(status_of(carol_), 200);

  // The only admin token is not revoked: nobody could administer the server again.
  const std::string admin_id = HashToken(h_.admin()).substr(0, State::kTokenIdChars);
  const Resp last = h_.Call("DELETE", "/v1/principals/admin/tokens/" + admin_id, h_.admin());
  EXPECT_EQ(last.status, 409) << last.text;
  EXPECT_EQ(status_of(h_.admin()), 200);
}

TEST_F(Api, BudgetValidationChangesNothing) {
  const std::string before = Fingerprint();
  struct Case {
    std::string path, method;
    json body;
    int status;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"/v1/budgets", "POST", {{"name", "x"}, {"parent", "nope"}, {"share", 1}}, 400, "parent"},
      {"/v1/budgets", "POST", {{"name", "olmo"}, {"share", 1}}, 409, "name"},
      {"/v1/budgets", "POST", {{"name", "x/y"}, {"share", 1}}, 400, "name"},
      {"/v1/budgets", "POST", {{"name", "x"}, {"share", 0}}, 400, "share"},
      {"/v1/budgets", "POST", {{"name", "x"}}, 400, "share"},
      {"/v1/budgets/olmo", "PATCH", {{"share", -1}}, 400, "share"},
      {"/v1/budgets/olmo", "PATCH", {{"limit", -3}}, 400, "limit"},
      {"/v1/budgets/olmo", "PATCH", {{"shares", 2}}, 400, "shares"},
      {"/v1/budgets/nope", "PATCH", {{"share", 2}}, 404, "name"},
      {"/v1/budgets/olmo", "DELETE", json::object(), 409, "name"},
  };
  for (const Case& c : cases) {
    const Resp r = h_.Call(c.method, c.path, h_.admin(), c.body.dump());
    EXPECT_EQ(r.status, c.status) << c.path << " " << c.body << " -> " << r.text;
    EXPECT_EQ(r.body["error"]["field"], c.field) << r.text;
    EXPECT_EQ(Fingerprint(), before) << c.body;
  }
}

// The job list, newest or oldest first, with the number of matches beyond the limit: what the
// dashboard reads to show a long queue from its head.
TEST_F(Api, JobListsComeInEitherOrderWithTheirTotal) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 4; ++i) {
    const Resp r = h_.Post("/v1/jobs", alice_, Job({{"gpus", 8}, {"gpus_per_node", 8}}));
    ASSERT_EQ(r.status, 201) << r.text;
    ids.push_back(r.body["id"].get<int64_t>());
  }
  // Two fill the two nodes; two wait.
  ASSERT_TRUE(Eventually([&] {
    return h_.Get("/v1/jobs?state=running", h_.admin()).body["total"] == 2;
  })) << h_.Get("/v1/jobs", h_.admin()).text;
  ASSERT_EQ(
      h_.Post("/v1/jobs/" + std::to_string(ids[3]) + "/cancel", alice_, json::object()).status,
      200);
  auto list = [&](const std::string& query, const std::string& token) {
    const Resp r = h_.Get("/v1/jobs" + query, token);
    EXPECT_EQ(r.status, 200) << query << ": " << r.text;
    std::vector<int64_t> got;
    for (const json& j : r.body["jobs"]) got.push_back(j["id"].get<int64_t>());
    return std::make_pair(got, r.body["total"].get<int64_t>());
  };
  using L = std::pair<std::vector<int64_t>, int64_t>;
  EXPECT_EQ(list("?state=running&order=oldest", h_.admin()), L({ids[0], ids[1]}, 2));
  EXPECT_EQ(list("?state=pending", h_.admin()), L({ids[2]}, 1));
  EXPECT_EQ(list("", h_.admin()), L({ids[2], ids[1], ids[0]}, 3));
  EXPECT_EQ(list("?order=oldest&limit=2", h_.admin()), L({ids[0], ids[1]}, 3));
  EXPECT_EQ(list("?limit=1", h_.admin()), L({ids[2]}, 3));
  EXPECT_EQ(list("?state=done", h_.admin()), L({ids[3]}, 1));
  EXPECT_EQ(list("?state=all&order=oldest&limit=1", h_.admin()), L({ids[0]}, 4));
  EXPECT_EQ(list("?state=all&limit=1&order=newest", alice_), L({ids[3]}, 4));
  EXPECT_EQ(list("?state=all", carol_), L({}, 0));  // users see their own jobs only
  const Resp bad = h_.Get("/v1/jobs?order=sideways", h_.admin());
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["field"], "order") << bad.text;
}

TEST_F(Api, Roles) {
  const std::string before = Fingerprint();
  // Bad tokens.
  EXPECT_EQ(h_.Get("/v1/budgets", "").status, 401);
  EXPECT_EQ(h_.Get("/v1/budgets", "hg_" + std::string(64, '0')).status, 401);
  EXPECT_EQ(h_.Get("/v1/budgets", "garbage").status, 401);
  // A user cannot change a budget, create one, or do admin things.
  EXPECT_EQ(h_.Call("PATCH", "/v1/budgets/olmo.alice", alice_, R"({"share":5})").status, 403);
  EXPECT_EQ(h_.Post("/v1/budgets", carol_, {{"name", "x"}, {"parent", "ai"}, {"share", 1}}).status,
            403);
  EXPECT_EQ(h_.Post("/v1/principals", alice_, {{"name", "eve"}, {"role", "admin"}}).status, 403);
  EXPECT_EQ(h_.Post("/v1/nodes/n1/drain", alice_, json::object()).status, 403);
  // A lead only inside their subtree: not the parent, not a sibling.
  EXPECT_EQ(h_.Call("PATCH", "/v1/budgets/ai", bob_, R"({"share":5})").status, 403);
  EXPECT_EQ(h_.Call("PATCH", "/v1/budgets/tulu", bob_, R"({"share":5})").status, 403);
  // Agents only reach /v1/agents/*, and users never do.
  EXPECT_EQ(h_.Get("/v1/budgets", agent_).status, 403);
  EXPECT_EQ(h_.Post("/v1/jobs", agent_, Job({})).status, 403);
  EXPECT_EQ(h_.Post("/v1/agents/heartbeat", alice_, {{"node", "n1"}}).status, 403);
  EXPECT_EQ(Fingerprint(), before);
  // Allowed: the lead inside the subtree (audited), the member submitting.
  const Resp p = h_.Call("PATCH", "/v1/budgets/olmo.alice", bob_, R"({"share":3,"limit":4})");
  ASSERT_EQ(p.status, 200) << p.text;
  EXPECT_EQ(p.body["share"], 3.0);
  EXPECT_EQ(p.body["limit"], 4);
  EXPECT_EQ(h_.Call("PATCH", "/v1/budgets/olmo", bob_, R"({"share":2.5})").status, 200);
  EXPECT_EQ(
      h_.Post("/v1/budgets", bob_, {{"name", "olmo.new"}, {"parent", "olmo"}, {"share", 1}}).status,
      201);
  const json audit = h_.Get("/v1/audit?budget=olmo.alice", h_.admin()).body["entries"];
  ASSERT_EQ(audit.size(), 3u);  // created, share, limit
  EXPECT_EQ(audit[1]["who"], "bob");
  EXPECT_EQ(audit[1]["field"], "share");
  EXPECT_EQ(audit[1]["old"], "1.0");
  EXPECT_EQ(audit[1]["new"], "3.0");
  EXPECT_EQ(h_.Post("/v1/jobs", alice_, Job({})).status, 201);
  EXPECT_EQ(h_.Post("/v1/jobs", alice_, Job({{"budget", nullptr}})).status, 201);
  // Users see their own jobs only.
  const json mine = h_.Get("/v1/jobs?state=all", alice_).body["jobs"];
  EXPECT_EQ(mine.size(), 2u);
  EXPECT_EQ(h_.Get("/v1/jobs?state=all", carol_).body["jobs"].size(), 0u);
  EXPECT_EQ(h_.Get("/v1/jobs/" + std::to_string(mine[0]["id"].get<int64_t>()), carol_).status, 403);
  const json who = h_.Get("/v1/whoami", bob_).body;
  EXPECT_EQ(who["leads"], json({"olmo"}));
}

TEST_F(Api, ALeaseIsAcceptedAndEchoed) {
  const Resp r = h_.Post("/v1/jobs", alice_, Job({{"lease_s", 1800}, {"max_runtime_s", 7200}}));
  ASSERT_EQ(r.status, 201) << r.text;
  const json job = h_.Get("/v1/jobs/" + std::to_string(r.body["id"].get<int64_t>()), alice_).body;
  EXPECT_EQ(job["lease_s"], 1800) << job;
  EXPECT_EQ(job["max_runtime_s"], 7200) << job;
  EXPECT_TRUE(job["active_at"].is_null()) << job;
  // Without one, a job shows a lease of 0.
  const Resp plain = h_.Post("/v1/jobs", alice_, Job({}));
  ASSERT_EQ(plain.status, 201) << plain.text;
  EXPECT_EQ(
      h_.Get("/v1/jobs/" + std::to_string(plain.body["id"].get<int64_t>()), alice_).body["lease_s"],
      0);
}

// POST /v1/jobs/{id}/activity: the owner (or an admin) of a running session; everyone else, and
// every other job, is refused with the field and reason and changes nothing.
TEST_F(Api, ActivityExtendsARunningSessionsProtection) {
  const Resp sub = h_.Post(
      "/v1/jobs", alice_, Job({{"lease_s", 1800}, {"max_runtime_s", 7200}, {"min_runtime_s", 60}}));
  ASSERT_EQ(sub.status, 201) << sub.text;
  const int64_t id = sub.body["id"];
  const std::string path = "/v1/jobs/" + std::to_string(id);
  // The server starts it (the agents never confirm it here, which does not matter to the route).
  ASSERT_TRUE(Eventually([&] { return h_.Get(path, alice_).body["state"] == "running"; }));
  const json before_touch = h_.Get(path, alice_).body;
  EXPECT_TRUE(before_touch["active_at"].is_null());
  const int64_t started = before_touch["started_at"];
  // No activity yet: the lease counts from the start.
  EXPECT_EQ(before_touch["protected_until"], started + 1800) << before_touch;

  const Resp mine = h_.Post(path + "/activity", alice_, json::object());
  ASSERT_EQ(mine.status, 200) << mine.text;
  EXPECT_EQ(mine.body["id"], id);
  EXPECT_EQ(mine.body["state"], "running");
  const int64_t at = mine.body["active_at"];
  EXPECT_GE(at, started);
  EXPECT_EQ(mine.body["protected_until"], at + 1800) << mine.body;
  // Stored, and shown by the job's view.
  const json after = h_.Get(path, alice_).body;
  EXPECT_EQ(after["active_at"], at);
  EXPECT_EQ(after["protected_until"], at + 1800);
  // An admin may report for it too.
  EXPECT_EQ(h_.Post(path + "/activity", h_.admin(), json::object()).status, 200);

  // Refusals.
  const int64_t plain = h_.Post("/v1/jobs", alice_, Job({})).body["id"];
  ASSERT_TRUE(Eventually([&] {
    return h_.Get("/v1/jobs/" + std::to_string(plain), alice_).body["state"] == "running";
  }));
  const Resp cancel = h_.Post(path + "/cancel", alice_, json::object());
  ASSERT_EQ(cancel.status, 200) << cancel.text;
  ASSERT_TRUE(Eventually([&] { return h_.Get(path, alice_).body["state"] == "cancelled"; }));
  const Resp running_again =
      h_.Post("/v1/jobs", alice_, Job({{"lease_s", 600}, {"max_runtime_s", 3600}}));
  ASSERT_EQ(running_again.status, 201);
  const std::string other = "/v1/jobs/" + std::to_string(running_again.body["id"].get<int64_t>());
  ASSERT_TRUE(Eventually([&] { return h_.Get(other, alice_).body["state"] == "running"; }));
  struct Case {
    std::string path, token, body;
    int status;
    std::string field, reason_part;
  };
  const std::vector<Case> cases = {
      {other + "/activity", carol_, "{}", 403, "authorization", "not your job"},
      {other + "/activity", bob_, "{}", 403, "authorization", "not your job"},
      {other + "/activity", agent_, "{}", 403, "authorization", "agent"},
      {other + "/activity", "", "{}", 401, "authorization", "bearer token"},
      {other + "/activity", alice_, R"({"at": 5})", 400, "at", "unknown field"},
      {"/v1/jobs/999999/activity", alice_, "{}", 404, "id", "no job 999999"},
      {path + "/activity", alice_, "{}", 409, "state", "cancelled"},
      {"/v1/jobs/" + std::to_string(plain) + "/activity", alice_, "{}", 400, "lease_s", "no lease"},
  };
  const std::string fingerprint = Fingerprint();
  for (const Case& c : cases) {
    const Resp r = h_.Call("POST", c.path, c.token, c.body);
    EXPECT_EQ(r.status, c.status) << c.path << " -> " << r.text;
    EXPECT_EQ(r.body["error"]["field"], c.field) << r.text;
    EXPECT_NE(r.body["error"]["reason"].get<std::string>().find(c.reason_part), std::string::npos)
        << r.text;
    EXPECT_EQ(Fingerprint(), fingerprint) << c.path;
  }
  // Reports are counted, not logged as job events (they come every few minutes).
  const json ev = h_.Get(path + "/events", alice_).body["events"];
  for (const auto& e : ev) EXPECT_EQ(e["kind"].get<std::string>().find("activ"), std::string::npos);
  const std::string metrics = h_.Get("/metrics", "").text;
  EXPECT_NE(metrics.find("hourglass_activity_reports_total{source=\"api\"} 2\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("hourglass_activity_reports_total{source=\"cpu\"} 0\n"), std::string::npos)
      << metrics;
}

// Heartbeats' `cpu_s`: growth of a session's CPU time between two reports (at least 1% of the
// wall time between them) is activity at the server's now; flat or slight growth is not; the first
// report is only a baseline. The store learns of it at most every quarter lease.
TEST_F(Api, HeartbeatCpuGrowthIsASessionsActivity) {
  FakeAgent n1(h_, agent_, "n1", 8), n2(h_, agent_, "n2", 8);
  const Resp sub = h_.Post("/v1/jobs", alice_, Job({{"lease_s", 1800}, {"max_runtime_s", 7200}}));
  ASSERT_EQ(sub.status, 201) << sub.text;
  const int64_t id = sub.body["id"];
  const std::string path = "/v1/jobs/" + std::to_string(id);
  ASSERT_TRUE(Eventually([&] { return h_.Get(path, alice_).body["state"] == "running"; }));
  n1.Beat();
  n2.Beat();
  FakeAgent& a = n1.Runs(id) ? n1 : n2;
  const std::string node = n1.Runs(id) ? "n1" : "n2";
  ASSERT_TRUE(a.Runs(id));
  const auto wait_ms = [](int64_t ms) {
    const int64_t until = SystemClock().NowMs() + ms;
    Eventually([&] { return SystemClock().NowMs() >= until; }, ms + 1000);
  };

  a.set_cpu(id, 5.0);
  a.Beat();  // the baseline
  EXPECT_TRUE(h_.Get(path, alice_).body["active_at"].is_null());
  a.set_cpu(id, 6.0);
  a.Beat();  // a second of CPU within milliseconds: in use
  const json used = h_.Get(path, alice_).body;
  ASSERT_FALSE(used["active_at"].is_null()) << used;
  const int64_t at = used["active_at"];
  // (The start is rounded up to the next second, the activity's time down: the later counts.)
  EXPECT_EQ(used["protected_until"], std::max(at, used["started_at"].get<int64_t>()) + 1800)
      << used;

  // Over a second later: flat CPU time, then growth below 1% of the wall time, leave it alone.
  wait_ms(1100);
  a.Beat();
  wait_ms(1100);
  a.set_cpu(id, 6.005);
  a.Beat();
  EXPECT_EQ(h_.Get(path, alice_).body["active_at"], at);

  // A malformed cpu_s is refused with its field and changes nothing.
  const std::string fingerprint = Fingerprint();
  for (const json& bad : {json(-1.0), json("12")}) {
    const Resp r =
        h_.Post("/v1/agents/heartbeat", agent_,
                {{"node", node}, {"running", {{{"job", id}, {"attempt", 1}, {"cpu_s", bad}}}}});
    EXPECT_EQ(r.status, 400) << r.text;
    EXPECT_EQ(r.body["error"]["field"], "running[0].cpu_s") << r.text;
    EXPECT_EQ(Fingerprint(), fingerprint) << bad;
  }

  // Activity again, a second or more later: memory moves, the store (written a moment ago, well
  // within a quarter of the lease) does not, so a restarted server shows the first activity.
  a.set_cpu(id, 9.0);
  a.Beat();
  const int64_t later = h_.Get(path, alice_).body["active_at"];
  EXPECT_GT(later, at);
  // Two reports counted as activity (6.0 and 9.0 s); the flat, slight and refused ones did not.
  const std::string metrics = h_.Get("/metrics", "").text;
  EXPECT_NE(metrics.find("hourglass_activity_reports_total{source=\"cpu\"} 2\n"), std::string::npos)
      << metrics;
  h_.StopServer();
  h_.StartServer();
  const json back = h_.Get(path, alice_).body;
  EXPECT_EQ(back["active_at"], at) << back;
  // The restarted server's heartbeats start from a new baseline; growth then counts again.
  ASSERT_EQ(a.Register().status, 200);
  a.Beat();
  a.set_cpu(id, 10.0);
  a.Beat();
  EXPECT_GE(h_.Get(path, alice_).body["active_at"].get<int64_t>(), later);
}

TEST_F(Api, SixtyFourConcurrentClientsEachGetTheirOwnDurableId) {
  constexpr int kClients = 64, kEach = 10;
  std::vector<std::vector<int64_t>> ids(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      for (int i = 0; i < kEach; ++i) {
        const Resp r = h_.Post("/v1/jobs", alice_, Job({{"budget", nullptr}, {"gpus", 16}}));
        if (r.status == 201)
          ids[static_cast<size_t>(c)].push_back(r.body["id"]);
        else
          ADD_FAILURE() << r.status << " " << r.text;
      }
    });
  for (auto& t : threads) t.join();
  std::set<int64_t> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kClients * kEach));
  // Every acknowledged job is in the store: a restart shows them all.
  h_.StopServer();
  h_.StartServer();
  const json jobs = h_.Get("/v1/jobs?state=all", h_.admin()).body["jobs"];
  std::set<int64_t> stored;
  for (const auto& j : jobs) stored.insert(j["id"].get<int64_t>());
  EXPECT_EQ(stored, all);
}

}  // namespace
}  // namespace hg::server::testing
