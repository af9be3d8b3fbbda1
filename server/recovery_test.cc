// Restart recovery on the same data dir, and the metrics text.
#include <gtest/gtest.h>

#include "server/test_harness.h"

namespace hg::server::testing {
namespace {

using nlohmann::json;

TEST(Recovery, QueueBudgetsRunningJobsAndLedgerSurviveARestart) {
  Harness h;
  const std::string agent = h.Principal("agent1", "agent");
  const std::string alice = h.Principal("alice", "user");
  ASSERT_EQ(h.Post("/v1/budgets", h.admin(),
                   {{"name", "team"}, {"share", 2}, {"limit", 6}, {"members", {"alice"}}})
                .status,
            201);
  FakeAgent n1(h, agent, "n1", 4);
  ASSERT_EQ(n1.Register().status, 200);
  const json spec = {{"budget", "team"}, {"gpus", 4}, {"command", {"train"}}, {"resumable", true}};
  const int64_t run = h.Post("/v1/jobs", alice, spec).body["id"];
  ASSERT_TRUE(Eventually([&] {
    n1.Beat();
    return n1.Runs(run);
  }));
  const int64_t wait = h.Post("/v1/jobs", alice, spec).body["id"];
  // Let the running job accrue at least a second of delivered GPU time.
  ASSERT_TRUE(Eventually([&] {
    n1.Beat();
    const json b = h.Get("/v1/budgets", alice).body["budgets"];
    return b[0]["delivered_7d_gpu_hours"].get<double>() >= 4.0 / 3600;
  }));
  const json before = h.Get("/v1/budgets", alice).body["budgets"][0];
  const json run_before = h.Get("/v1/jobs/" + std::to_string(run), alice).body;

  h.StopServer();
  h.StartServer();
  EXPECT_TRUE(h.server().NewAdminToken().empty());  // the admin exists already
  // Tokens, budgets, the queue and the running job are back.
  const json b = h.Get("/v1/budgets", alice).body["budgets"];
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0]["share"], 2.0);
  EXPECT_EQ(b[0]["limit"], 6);
  EXPECT_EQ(b[0]["members"], json({"alice"}));
  // Rebuilt from the stored runs, so summed in another order: equal up to rounding.
  EXPECT_GE(b[0]["delivered_7d_gpu_hours"].get<double>(),
            before["delivered_7d_gpu_hours"].get<double>() - 1e-9);
  EXPECT_GT(b[0]["owed_7d_gpu_hours"].get<double>(), 0.0);
  const json run_after = h.Get("/v1/jobs/" + std::to_string(run), alice).body;
  EXPECT_EQ(run_after["state"], "running");
  // The run's start as its agent confirmed it (the contract's clock) survives the restart.
  EXPECT_EQ(run_after["started_at"], run_before["started_at"]);
  EXPECT_EQ(run_after["protected_until"], run_before["protected_until"]);
  EXPECT_EQ(h.Get("/v1/jobs/" + std::to_string(wait), alice).body["state"], "pending");
  // The agent re-registers with its running attempt: no second start; the exit is taken.
  ASSERT_EQ(n1.Register().status, 200);
  const size_t orders = n1.orders().size();
  n1.Beat();
  n1.Beat();
  EXPECT_EQ(n1.orders().size(), orders);
  n1.Exit(run, 0, std::nullopt);
  ASSERT_TRUE(Eventually([&] {
    n1.Beat();
    return n1.Runs(wait);
  }));
  EXPECT_EQ(h.Get("/v1/jobs/" + std::to_string(run), alice).body["state"], "succeeded");
  // Nothing was submitted twice: two jobs, ids unchanged.
  EXPECT_EQ(h.Get("/v1/jobs?state=all", h.admin()).body["jobs"].size(), 2u);
}

// The activity a session's user reported is committed before the reply: after a restart the job
// still has it, and with it the protection it bought; reporting goes on as before.
TEST(Recovery, ReportedActivitySurvivesARestart) {
  Harness h;
  const std::string agent = h.Principal("agent1", "agent");
  const std::string alice = h.Principal("alice", "user");
  ASSERT_EQ(
      h.Post("/v1/budgets", h.admin(), {{"name", "team"}, {"share", 1}, {"members", {"alice"}}})
          .status,
      201);
  FakeAgent n1(h, agent, "n1", 2);
  ASSERT_EQ(n1.Register().status, 200);
  const int64_t id = h.Post("/v1/jobs", alice,
                            {{"budget", "team"},
                             {"gpus", 1},
                             {"class", "interactive"},
                             {"lease_s", 1800},
                             {"max_runtime_s", 7200},
                             {"command", {"jupyter"}}})
                         .body["id"];
  const std::string path = "/v1/jobs/" + std::to_string(id);
  // The beat after the start order lists the attempt: confirmed, started_at no longer moves.
  ASSERT_TRUE(Eventually([&] {
    n1.Beat();
    return n1.Runs(id);
  }));
  n1.Beat();
  const Resp touched = h.Post(path + "/activity", alice, json::object());
  ASSERT_EQ(touched.status, 200) << touched.text;
  const json before = h.Get(path, alice).body;
  ASSERT_FALSE(before["active_at"].is_null());
  // (The start is rounded up to the next second, the report's time down: the later counts.)
  EXPECT_EQ(
      before["protected_until"],
      std::max(before["active_at"].get<int64_t>(), before["started_at"].get<int64_t>()) + 1800);

  h.StopServer();
  h.StartServer();
  const json after = h.Get(path, alice).body;
  EXPECT_EQ(after["state"], "running");
  EXPECT_EQ(after["lease_s"], 1800);
  EXPECT_EQ(after["active_at"], before["active_at"]);
  EXPECT_EQ(after["protected_until"], before["protected_until"]);
  // The running session takes reports after the restart too.
  ASSERT_EQ(n1.Register().status, 200);
  EXPECT_EQ(h.Post(path + "/activity", alice, json::object()).status, 200);
}

TEST(Recovery, StartOrderNotConfirmedBeforeARestartIsSentAgain) {
  Harness h;
  const std::string agent = h.Principal("agent1", "agent");
  const std::string alice = h.Principal("alice", "user");
  FakeAgent n1(h, agent, "n1", 2);
  ASSERT_EQ(n1.Register().status, 200);
  const int64_t id = h.Post("/v1/jobs", alice, {{"gpus", 2}, {"command", {"x"}}}).body["id"];
  ASSERT_TRUE(Eventually(
      [&] { return h.Get("/v1/jobs/" + std::to_string(id), alice).body["state"] == "running"; }));
  // The server restarts before the agent ever heard of the job.
  h.StopServer();
  h.StartServer();
  FakeAgent again(h, agent, "n1", 2);
  ASSERT_EQ(again.Register().status, 200);
  ASSERT_TRUE(Eventually([&] {
    again.Beat();
    return again.Runs(id);
  }));
  EXPECT_EQ((*again.StartOrderOf(id))["attempt"], 1);
}

TEST(Metrics, PrometheusText) {
  Harness h;
  const std::string agent = h.Principal("agent1", "agent");
  const std::string alice = h.Principal("alice", "user");
  ASSERT_EQ(
      h.Post("/v1/budgets", h.admin(), {{"name", "team"}, {"share", 1}, {"members", {"alice"}}})
          .status,
      201);
  FakeAgent n1(h, agent, "n1", 4);
  ASSERT_EQ(n1.Register().status, 200);
  const json f = {{"budget", "team"}, {"gpus", 3}, {"command", {"x"}}};
  ASSERT_EQ(h.Post("/v1/jobs", alice, f).status, 201);
  ASSERT_EQ(h.Post("/v1/jobs", alice, f).status, 201);
  ASSERT_EQ(h.Post("/v1/jobs", alice, {{"gpus", 4}, {"command", {"x"}}}).status, 201);
  ASSERT_TRUE(Eventually([&] {
    n1.Beat();
    return h.Get("/metrics", "").text.find("hourglass_running_gpus{funded=\"true\"} 3") !=
           std::string::npos;
  }));
  const Resp m = h.Get("/metrics", "");
  ASSERT_EQ(m.status, 200);
  for (const std::string line :
       {"hourglass_queue_jobs{funded=\"true\"} 1", "hourglass_queue_jobs{funded=\"false\"} 1",
        "hourglass_running_gpus{funded=\"false\"} 0", "hourglass_capacity_gpus 4",
        "hourglass_nodes{state=\"ready\"} 1", "hourglass_nodes{state=\"lost\"} 0",
        "hourglass_submissions_total 3", "hourglass_budget_owed_gpu_hours{budget=\"team\"}",
        "hourglass_budget_delivered_gpu_hours{budget=\"team\"}",
        "hourglass_cycle_seconds{quantile=\"0.99\"}", "hourglass_cycle_seconds_count"})
    EXPECT_NE(m.text.find(line), std::string::npos) << line << "\n" << m.text;
  EXPECT_EQ(h.Get("/healthz", "").body["ok"], true);
}

}  // namespace
}  // namespace hg::server::testing
