// The CLI against a small real HTTP server on 127.0.0.1 that answers like docs/api.md: checks
// what goes over the wire (method, path and query, bearer token, JSON body) and how answers,
// refusals and an unreachable server come out.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/admin.h"
#include "cli/budgets.h"
#include "cli/client.h"
#include "cli/jobs.h"

namespace hg::cli {
namespace {

struct Seen {
  std::string method;
  std::string target;  // path and query as sent
  std::string authorization;
  std::string content_type;
  std::string body;
  std::string idempotency_key;
};

// A real httplib server on an ephemeral loopback port. Tests add handlers, then talk to url().
class TestServer {
 public:
  TestServer() {
    server_.new_task_queue = [] { return new httplib::ThreadPool(2); };
    port_ = server_.bind_to_any_port("127.0.0.1");
  }
  ~TestServer() { Stop(); }

  // Answers `method` on `pattern` (regex) with `fn`, recording each request.
  void On(const std::string& method, const std::string& pattern,
          const std::function<void(const httplib::Request&, httplib::Response&)>& fn) {
    auto handler = [this, fn](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        seen_.push_back({req.method, req.target, req.get_header_value("Authorization"),
                         req.get_header_value("Content-Type"), req.body,
                         req.get_header_value("Idempotency-Key")});
      }
      fn(req, res);
    };
    if (method == "GET") server_.Get(pattern, handler);
    if (method == "POST") server_.Post(pattern, handler);
    if (method == "PATCH") server_.Patch(pattern, handler);
  }
  void Start() {
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the accept loop runs would be lost and join() would hang.
    while (!server_.is_running()) std::this_thread::yield();
  }
  void Stop() {
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

void Reply(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

Client MakeClient(const TestServer& s, const std::string& token = "hg_test") {
  ClientConfig config;
  config.url = s.url();
  config.token = token;
  return Client(config, ClientOptions{1000, 3000});
}

// The server's answer to a submission is lost (it closes the connection, as a server killed after
// its commit would): the CLI sends it once more under the same key and reports the job the
// server found for it; given a key, it sends that one.
TEST(CliHttpTest, ALostSubmissionIsRetriedUnderItsKey) {
  TestServer s;
  std::atomic<int> calls{0};
  s.On("POST", "/v1/jobs", [&](const httplib::Request&, httplib::Response& res) {
    if (calls++ == 0) {
      res.status = 503;
      res.set_content(R"({"error":{"field":"store","reason":"unavailable"}})", "application/json");
      return;
    }
    Reply(res, 200, {{"id", 17}, {"state", "running"}, {"replayed", true}});
  });
  s.Start();
  Client c = MakeClient(s);
  SubmitArgs a;
  a.cwd = "/tmp";
  a.command = {"true"};
  a.idempotency_key = "mine-1";
  std::ostringstream out;
  const auto r = RunSubmit(c, a, /*json=*/false, out);
  ASSERT_TRUE(r.has_value()) << r.error().reason;
  EXPECT_EQ(out.str(), "job 17 was already submitted with this key (running)\n");
  const auto seen = s.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].idempotency_key, "mine-1");
  EXPECT_EQ(seen[1].idempotency_key, "mine-1");
  EXPECT_EQ(seen[0].body, seen[1].body);
}

// No server at all: both attempts fail, and the error says how to retry at most once.
TEST(CliHttpTest, AnUnansweredSubmissionSaysHowToRetryIt) {
  ClientConfig config;
  config.url = "http://127.0.0.1:1";  // nothing listens on port 1
  config.token = "hg_test";
  Client c(config, ClientOptions{500, 500});
  SubmitArgs a;
  a.cwd = "/tmp";
  a.command = {"true"};
  a.idempotency_key = "mine-2";
  std::ostringstream out;
  const auto r = RunSubmit(c, a, /*json=*/false, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code, kExitUnreachable);
  EXPECT_NE(r.error().reason.find("--idempotency-key mine-2"), std::string::npos)
      << r.error().reason;
}

TEST(CliHttpTest, SubmitSendsTheJobWithTheToken) {
  TestServer s;
  s.On("POST", "/v1/jobs", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 201, {{"id", 17}, {"state", "pending"}});
  });
  s.Start();
  Client c = MakeClient(s);
  SubmitArgs a;
  a.budget = "alice";
  a.gpus = 2;
  a.min_runtime = "30m";
  a.cwd = "/tmp";
  a.command = {"bash", "-c", "sleep 1"};
  std::ostringstream out;
  const auto r = RunSubmit(c, a, /*json=*/false, out);
  ASSERT_TRUE(r.has_value()) << r.error().reason;
  EXPECT_EQ(out.str(), "submitted job 17 (pending)\n");
  const auto seen = s.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].target, "/v1/jobs");
  EXPECT_EQ(seen[0].authorization, "Bearer hg_test");
  EXPECT_EQ(seen[0].content_type, "application/json");
  // Every submission carries a fresh random key (32 hex digits), so a retry can be idempotent.
  EXPECT_EQ(seen[0].idempotency_key.size(), 32u) << seen[0].idempotency_key;
  EXPECT_EQ(seen[0].idempotency_key.find_first_not_of("0123456789abcdef"), std::string::npos);
  const Json body = Json::parse(seen[0].body);
  EXPECT_EQ(body["budget"], "alice");
  EXPECT_EQ(body["gpus"], 2);
  EXPECT_EQ(body["min_runtime_s"], 1800);
  EXPECT_EQ(body["command"], (Json{"bash", "-c", "sleep 1"}));
  EXPECT_EQ(body["cwd"], "/tmp");
}

TEST(CliHttpTest, JsonFlagPrintsTheServersAnswerAsIs) {
  TestServer s;
  const Json jobs = {{"jobs", {{{"id", 3}, {"state", "running"}, {"extra", "kept"}}}}};
  s.On("GET", "/v1/jobs",
       [&](const httplib::Request&, httplib::Response& res) { Reply(res, 200, jobs); });
  s.Start();
  Client c = MakeClient(s);
  std::ostringstream out;
  JobsArgs a;
  a.user = "alice";
  a.all = true;
  ASSERT_TRUE(RunJobs(c, a, /*json=*/true, out).has_value());
  EXPECT_EQ(Json::parse(out.str()), jobs);
  EXPECT_EQ(s.seen().at(0).target, "/v1/jobs?state=all&user=alice");
  EXPECT_EQ(s.seen().at(0).method, "GET");
}

TEST(CliHttpTest, RefusalIsExitOneWithTheServersFieldAndReason) {
  TestServer s;
  s.On("POST", "/v1/jobs", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 400, {{"error", {{"field", "budget"}, {"reason", "unknown budget 'nope'"}}}});
  });
  s.Start();
  Client c = MakeClient(s);
  SubmitArgs a;
  a.budget = "nope";
  a.cwd = "/";
  a.command = {"true"};
  std::ostringstream out;
  const auto r = RunSubmit(c, a, false, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code, kExitRefused);
  EXPECT_EQ(RenderError("submit", r.error()), "hourglass submit: budget: unknown budget 'nope'");
  EXPECT_EQ(out.str(), "");
}

TEST(CliHttpTest, MissingTokenIsNotSentAndTheRefusalSaysHowToSetIt) {
  TestServer s;
  s.On("GET", "/v1/whoami", [](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_header("Authorization")) {
      Reply(res, 401, {{"error", {{"field", "authorization"}, {"reason", "missing token"}}}});
    } else {
      Reply(res, 200, {{"name", "x"}});
    }
  });
  s.Start();
  Client c = MakeClient(s, "");
  std::ostringstream out;
  const auto r = RunWhoami(c, false, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code, kExitRefused);
  EXPECT_EQ(r.error().field, "authorization");
  EXPECT_NE(r.error().reason.find("HOURGLASS_TOKEN"), std::string::npos);
  EXPECT_EQ(s.seen().at(0).authorization, "");
}

TEST(CliHttpTest, UnreachableServerIsExitThreeNamingTheUrl) {
  std::string url;
  {
    TestServer s;  // started, then stopped: nothing listens on the port any more
    s.Start();
    url = s.url();
  }
  ClientConfig config;
  config.url = url;
  Client c(config, ClientOptions{500, 500});
  std::ostringstream out;
  const auto r = RunNodes(c, false, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code, kExitUnreachable);
  EXPECT_NE(r.error().reason.find(url), std::string::npos) << r.error().reason;
}

TEST(CliHttpTest, ShowFetchesTheJobAndItsEvents) {
  TestServer s;
  s.On("GET", R"(/v1/jobs/(\d+))", [](const httplib::Request& req, httplib::Response& res) {
    Reply(res, 200,
          {{"id", std::stoi(req.matches[1])},
           {"name", "t"},
           {"state", "pending"},
           {"reason", "waiting: budget over its share"}});
  });
  s.On("GET", R"(/v1/jobs/(\d+)/events)", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, {{"events", {{{"at", 1}, {"kind", "submitted"}, {"reason", "ok"}}}}});
  });
  s.Start();
  Client c = MakeClient(s);
  std::ostringstream out;
  ASSERT_TRUE(RunShow(c, 42, false, out).has_value());
  EXPECT_NE(out.str().find("job:             42 t\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("reason:          waiting: budget over its share\n"), std::string::npos);
  EXPECT_NE(out.str().find("1970-01-01 00:00:01Z  submitted  ok\n"), std::string::npos);
  const auto seen = s.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].target, "/v1/jobs/42");
  EXPECT_EQ(seen[1].target, "/v1/jobs/42/events");
}

TEST(CliHttpTest, CancelPostsToTheJob) {
  TestServer s;
  s.On("POST", R"(/v1/jobs/\d+/cancel)",
       [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  s.Start();
  Client c = MakeClient(s);
  std::ostringstream out;
  ASSERT_TRUE(RunCancel(c, 9, false, out).has_value());
  EXPECT_EQ(out.str(), "cancelled job 9\n");
  EXPECT_EQ(s.seen().at(0).method, "POST");
  EXPECT_EQ(s.seen().at(0).target, "/v1/jobs/9/cancel");
}

TEST(CliHttpTest, TouchPostsActivityAndShowsTheProtection) {
  TestServer s;
  s.On("POST", R"(/v1/jobs/\d+/activity)", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, {{"id", 9}, {"state", "running"}, {"protected_until", 1764698430}});
  });
  s.Start();
  Client c = MakeClient(s);
  std::ostringstream out;
  ASSERT_TRUE(RunTouch(c, 9, false, out).has_value());
  EXPECT_EQ(out.str(), "job 9 active; protected until 2025-12-02 18:00:30Z\n");
  ASSERT_EQ(s.seen().size(), 1u);
  EXPECT_EQ(s.seen().at(0).method, "POST");
  EXPECT_EQ(s.seen().at(0).target, "/v1/jobs/9/activity");
  EXPECT_EQ(s.seen().at(0).authorization, "Bearer hg_test");
}

TEST(CliHttpTest, TouchRefusalNamesTheServersField) {
  TestServer s;
  s.On("POST", R"(/v1/jobs/\d+/activity)", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 400, {{"error", {{"field", "lease_s"}, {"reason", "job 9 has no lease"}}}});
  });
  s.Start();
  Client c = MakeClient(s);
  std::ostringstream out;
  const auto r = RunTouch(c, 9, false, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, "lease_s");
  EXPECT_EQ(r.error().exit_code, kExitRefused);
  EXPECT_EQ(out.str(), "");
}

TEST(CliHttpTest, LogsFollowPollsFromTheLastOffsetUntilDone) {
  // The log grows while the job runs: each poll gets the bytes from its offset; after "done"
  // the last bytes still arrive, then an empty done answer ends the follow.
  const std::string log = "step 1\nstep 2\nbye\n";
  std::mutex mu;
  size_t available = 7;  // what the "agent" has written so far
  bool done = false;
  TestServer s;
  s.On("GET", R"(/v1/jobs/5/logs)", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    const size_t offset = std::stoul(req.get_param_value("offset"));
    const std::string chunk = log.substr(offset, available - offset);
    res.set_header("X-Hourglass-Offset", std::to_string(offset + chunk.size()));
    res.set_header("X-Hourglass-Done", done ? "true" : "false");
    res.set_content(chunk, "text/plain");
  });
  s.Start();
  Client c = MakeClient(s);
  LogsArgs a;
  a.id = 5;
  a.follow = true;
  a.stderr_stream = true;
  int pauses = 0;
  std::ostringstream out;
  auto pause = [&] {
    ++pauses;
    std::lock_guard<std::mutex> lock(mu);
    if (pauses == 1) available = 14;  // more output while we waited
    if (pauses == 2) {
      available = log.size();
      done = true;
    }
  };
  const auto r = RunLogs(c, a, out, pause);
  ASSERT_TRUE(r.has_value()) << r.error().reason;
  EXPECT_EQ(out.str(), log);
  EXPECT_EQ(pauses, 2);
  std::vector<std::string> targets;
  for (const Seen& seen : s.seen()) targets.push_back(seen.target);
  EXPECT_EQ(targets, (std::vector<std::string>{
                         "/v1/jobs/5/logs?stream=stderr&offset=0",
                         "/v1/jobs/5/logs?stream=stderr&offset=7",   // empty: pause 1
                         "/v1/jobs/5/logs?stream=stderr&offset=7",   // step 2
                         "/v1/jobs/5/logs?stream=stderr&offset=14",  // empty: pause 2
                         "/v1/jobs/5/logs?stream=stderr&offset=14",  // bye, done
                         "/v1/jobs/5/logs?stream=stderr&offset=18",  // empty and done: stop
                     }));
}

TEST(CliHttpTest, LogsWithoutFollowPrintsWhatThereIsAndStops) {
  TestServer s;
  s.On("GET", R"(/v1/jobs/5/logs)", [&](const httplib::Request& req, httplib::Response& res) {
    const size_t offset = std::stoul(req.get_param_value("offset"));
    const std::string chunk = offset == 0 ? "partial" : "";
    res.set_header("X-Hourglass-Offset", std::to_string(offset + chunk.size()));
    res.set_header("X-Hourglass-Done", "false");
    res.set_content(chunk, "text/plain");
  });
  s.Start();
  Client c = MakeClient(s);
  LogsArgs a;
  a.id = 5;
  a.attempt = 1;
  std::ostringstream out;
  ASSERT_TRUE(RunLogs(c, a, out, [] { FAIL() << "no pause without -f"; }).has_value());
  EXPECT_EQ(out.str(), "partial");
  EXPECT_EQ(s.seen().at(0).target, "/v1/jobs/5/logs?stream=stdout&attempt=1&offset=0");
}

TEST(CliHttpTest, BudgetSetReadsTheListsThenPatchesOnlyTheChanges) {
  TestServer s;
  s.On("GET", "/v1/budgets", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          {{"budgets",
            {{{"name", "ai"}, {"leads", {"zed"}}, {"members", Json::array()}},
             {{"name", "olmo"}, {"leads", {"bob"}}, {"members", {"carol"}}}}}});
  });
  s.On("PATCH", "/v1/budgets/olmo", [](const httplib::Request& req, httplib::Response& res) {
    Reply(res, 200, Json::parse(req.body));
  });
  s.Start();
  Client c = MakeClient(s);
  BudgetSetArgs a;
  a.name = "olmo";
  a.share = "3";
  a.lead = {"+dave"};
  std::ostringstream out;
  const auto r = RunBudgetSet(c, a, false, out);
  ASSERT_TRUE(r.has_value()) << r.error().reason;
  const auto seen = s.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].method, "PATCH");
  EXPECT_EQ(seen[1].target, "/v1/budgets/olmo");
  EXPECT_EQ(seen[1].authorization, "Bearer hg_test");
  EXPECT_EQ(Json::parse(seen[1].body), (Json{{"share", 3.0}, {"leads", {"bob", "dave"}}}));
  EXPECT_EQ(out.str(), "budget olmo: leads=[\"bob\",\"dave\"] share=3.0\n");
}

TEST(CliHttpTest, BudgetSetOnAnUnknownBudgetSendsNoChange) {
  TestServer s;
  s.On("GET", "/v1/budgets", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, {{"budgets", Json::array()}});
  });
  s.Start();
  Client c = MakeClient(s);
  BudgetSetArgs a;
  a.name = "ghost";
  a.member = {"+x"};
  std::ostringstream out;
  const auto r = RunBudgetSet(c, a, false, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, "budget");
  EXPECT_EQ(s.seen().size(), 1u);  // only the GET
}

TEST(CliHttpTest, DrainAndPrincipalAdd) {
  TestServer s;
  s.On("POST", R"(/v1/nodes/([^/]+)/drain)",
       [](const httplib::Request& req, httplib::Response& res) {
         Reply(res, 200, {{"name", req.matches[1]}, {"state", "draining"}});
       });
  s.On("POST", "/v1/principals", [](const httplib::Request& req, httplib::Response& res) {
    Reply(res, 201, {{"name", Json::parse(req.body)["name"]}, {"token", "hg_new"}});
  });
  s.Start();
  Client c = MakeClient(s);
  std::ostringstream out;
  ASSERT_TRUE(RunDrain(c, DrainArgs{"n7", "30m", "xid 79"}, 1000, false, out).has_value());
  ASSERT_TRUE(RunPrincipalAdd(c, PrincipalAddArgs{"alice", "user"}, false, out).has_value());
  const auto seen = s.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].target, "/v1/nodes/n7/drain");
  EXPECT_EQ(Json::parse(seen[0].body), (Json{{"reason", "xid 79"}, {"deadline_at", 2800}}));
  EXPECT_EQ(Json::parse(seen[1].body), (Json{{"name", "alice"}, {"role", "user"}}));
  EXPECT_NE(out.str().find("node n7 draining\n"), std::string::npos);
  EXPECT_NE(out.str().find("token: hg_new\n"), std::string::npos);
}

TEST(CliHttpTest, NonJsonAnswerIsARefusalNotACrash) {
  TestServer s;
  s.On("GET", "/v1/nodes", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html>proxy</html>", "text/html");
  });
  s.Start();
  Client c = MakeClient(s);
  std::ostringstream out;
  const auto r = RunNodes(c, false, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code, kExitRefused);
  EXPECT_EQ(r.error().reason, "the answer is not JSON");
}

}  // namespace
}  // namespace hg::cli
