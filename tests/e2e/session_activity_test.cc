// A session's activity from its CPU time: the real agent measures each job's process group and
// reports `cpu_s` in its heartbeats; the real server turns growth into `active_at`.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>

#include "tests/e2e/cluster.h"

namespace hg::e2e {
namespace {

using namespace std::chrono_literals;

TEST(E2eSessionActivity, ABusySessionIsActiveAndASleepingOneIsNot) {
  Cluster c(200, 3);
  const std::string alice = c.AddPrincipal("alice", "user");
  c.AddBudget("lab", "", 1);
  c.AddBudget("vision", "lab", 1, Json{{"members", {"alice"}}});
  c.AddAgent(Node("n1", 2));
  const auto job = [&](const std::vector<std::string>& cmd) {
    return Json{{"budget", "vision"},    {"gpus", 1},      {"lease_s", 60},
                {"max_runtime_s", 3600}, {"command", cmd}, {"cwd", c.dir()}};
  };
  const int64_t busy = c.Submit(job(c.Script("busy", "while :; do :; done\n")), alice);
  const int64_t idle = c.Submit(job({"sleep", "600"}), alice);
  ASSERT_TRUE(c.WaitState(busy, "running")) << c.Job(busy).dump();
  ASSERT_TRUE(c.WaitState(idle, "running")) << c.Job(idle).dump();
  // Heartbeats come every second: the second report that sees the loop's CPU sets active_at.
  ASSERT_TRUE(WaitFor([&] { return !c.Job(busy)["active_at"].is_null(); }, 8s))
      << c.Job(busy).dump();
  const Json b = c.Job(busy);
  EXPECT_EQ(b["protected_until"],
            std::max(b["active_at"].get<int64_t>(), b["started_at"].get<int64_t>()) + 60)
      << b.dump();
  // By then the sleeping session has been reported as many times, with no CPU to speak of.
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(c.Job(idle)["active_at"].is_null()) << c.Job(idle).dump();
  EXPECT_EQ(c.Admin("POST", "/v1/jobs/" + std::to_string(busy) + "/cancel", Json::object()).status,
            200);
  EXPECT_EQ(c.Admin("POST", "/v1/jobs/" + std::to_string(idle) + "/cancel", Json::object()).status,
            200);
  EXPECT_TRUE(c.WaitState(busy, "cancelled"));
  EXPECT_TRUE(c.WaitState(idle, "cancelled"));
}

}  // namespace
}  // namespace hg::e2e
