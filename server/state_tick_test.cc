// The loop's rule (State::Tick), on a clock the test moves: a tick runs a policy cycle only after
// a change, when a protection, lease, max_runtime or drain deadline has ended since the last
// cycle, on the waiting timer's tick, or when max_gap passed without a cycle while a job waits,
// as `hourglass sim` drives the policy (sim/engine.cc).
// In process, on a real SQLite store; the end-to-end path through HTTP and agents is in
// scheduling_test.cc.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "server/state_test_loop.h"

namespace hg::server {
namespace {

using nlohmann::json;
using testing::kAdmin;
using testing::Loop;

TEST(StateTick, ACycleRunsOnlyOnATickAfterAChange) {
  Loop l(2);
  l.At(0);
  EXPECT_TRUE(l.Tick());  // what recovery loaded (here: the node) is acted on
  l.At(10);
  EXPECT_FALSE(l.Tick());  // nothing new
  const int64_t j = l.Submit({{"budget", "a"}, {"gpus", 1}, {"command", {"x"}}});
  EXPECT_EQ(l.StateOf(j), "pending");
  l.At(20);
  EXPECT_TRUE(l.Tick());
  EXPECT_EQ(l.StateOf(j), "running");
  l.Beat();  // the agent confirms the start: not a change
  l.At(30);
  EXPECT_FALSE(l.Tick());
  // A drain by the operator is a change; its job (unprotected, no deadline needed) is stopped.
  ASSERT_TRUE(l.state().Drain("n1", "disk", std::nullopt));
  l.At(40);
  EXPECT_TRUE(l.Tick());
  EXPECT_EQ(l.StateOf(j), "stopping");
  l.At(50);
  EXPECT_FALSE(l.Tick());
}

// b's job holds the only GPU under a 100 s min_runtime while a's waits: no cycle until the
// protection ends, then one that stops it for a. (a's share is large enough that the GPU, once
// a holds it, counted at the fair-share key's live weight, would not put a above b: no
// ping-pong.)
TEST(StateTick, ATickAfterAProtectionEndsRunsACycle) {
  Loop l(1, 0, 86400, 1000.0);
  l.At(0);
  const int64_t b = l.Submit({{"budget", "b"},
                              {"gpus", 1},
                              {"min_runtime_s", 100},
                              {"resumable", true},
                              {"command", {"x"}}});
  EXPECT_TRUE(l.Tick());
  EXPECT_EQ(l.StateOf(b), "running");
  l.Beat();  // confirmed at 0 s: protected until 100 s
  l.At(10);
  const int64_t a = l.Submit({{"budget", "a"}, {"gpus", 1}, {"command", {"y"}}});
  EXPECT_TRUE(l.Tick());
  EXPECT_EQ(l.StateOf(a), "pending");
  for (int64_t t : {20, 50, 99}) {
    l.At(t);
    EXPECT_FALSE(l.Tick()) << "at " << t << " s";
  }
  l.At(100);
  EXPECT_TRUE(l.Tick());
  EXPECT_EQ(l.StateOf(b), "stopping");
  // The metrics say why each cycle ran: two submissions, one protection's end.
  const std::string m = l.state().MetricsText();
  EXPECT_NE(m.find("hourglass_cycles_total{trigger=\"change\"} 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("hourglass_cycles_total{trigger=\"wake\"} 1\n"), std::string::npos) << m;
  l.At(110);
  EXPECT_FALSE(l.Tick());
}

// With the waiting timer at 60 s, a waiting job gets a cycle on each multiple of 60 s even when
// nothing changed; with nothing waiting, the timer stops.
TEST(StateTick, TheWaitingTimerRunsACycleOnItsTicksWhileAJobWaits) {
  Loop l(1, 60000);
  l.At(0);
  const int64_t first =
      l.Submit({{"budget", "b"}, {"gpus", 1}, {"min_runtime_s", 1000}, {"command", {"x"}}});
  const int64_t second = l.Submit({{"budget", "b"}, {"gpus", 1}, {"command", {"y"}}});
  EXPECT_TRUE(l.Tick());
  EXPECT_EQ(l.StateOf(first), "running");
  EXPECT_EQ(l.StateOf(second), "pending");
  l.Beat();
  // Start times are whole seconds since the epoch; 1,000,000 s is a multiple of 60 plus 40.
  int ran = 0;
  for (int64_t t = 10; t <= 300; t += 10) {
    l.At(t);
    if (l.Tick()) {
      ++ran;
      EXPECT_EQ((1000000 + t) % 60, 0) << "a timer cycle at " << t << " s";
    }
  }
  EXPECT_EQ(ran, 5);  // 1,000,020 s, ..., 1,000,260 s
  // Nothing waits once the second job is cancelled: a change, then no timer.
  ASSERT_TRUE(l.state().Cancel(kAdmin, second));
  l.At(310);
  EXPECT_TRUE(l.Tick());
  for (int64_t t = 320; t <= 500; t += 10) {
    l.At(t);
    EXPECT_FALSE(l.Tick()) << "at " << t << " s";
  }
}

// With max_gap at 100 s, a waiting job gets a cycle on the first tick 100 s after the last one,
// whatever the grid; none while nothing waits.
TEST(StateTick, AMaxGapRunsACycleWhenNothingElseDidForThatLong) {
  Loop l(1, 0, 86400, 1.0, 100000);
  l.At(0);
  const int64_t first =
      l.Submit({{"budget", "b"}, {"gpus", 1}, {"min_runtime_s", 1000}, {"command", {"x"}}});
  EXPECT_TRUE(l.Tick());
  l.Beat();
  l.At(5);
  const int64_t second = l.Submit({{"budget", "b"}, {"gpus", 1}, {"command", {"y"}}});
  l.At(10);
  EXPECT_TRUE(l.Tick());  // the submission
  EXPECT_EQ(l.StateOf(second), "pending");
  std::vector<int64_t> ran;
  for (int64_t t = 20; t <= 400; t += 10) {
    l.At(t);
    if (l.Tick()) ran.push_back(t);
  }
  EXPECT_EQ(ran, std::vector<int64_t>({110, 210, 310}));
  ASSERT_TRUE(l.state().Cancel(kAdmin, second));
  l.At(410);
  EXPECT_TRUE(l.Tick());
  for (int64_t t = 420; t <= 700; t += 10) {
    l.At(t);
    EXPECT_FALSE(l.Tick()) << "at " << t << " s";
  }
  EXPECT_EQ(l.StateOf(first), "running");
}

// Heartbeats are checked on every tick, cycle or not: a node silent for longer than lost_after
// (30 s here) is lost at the first tick after, which is a change, so that tick runs a cycle and
// the node's resumable job is back in the queue.
TEST(StateTick, ANodeWhoseHeartbeatsStopIsLostAtTheNextTick) {
  Loop l(1, 0, 30);
  l.At(0);
  const int64_t j =
      l.Submit({{"budget", "a"}, {"gpus", 1}, {"resumable", true}, {"command", {"x"}}});
  EXPECT_TRUE(l.Tick());
  l.Beat();  // the last heartbeat, at 0 s
  for (int64_t t : {10, 20, 30}) {
    l.At(t);
    EXPECT_FALSE(l.Tick()) << "at " << t << " s";
    EXPECT_EQ(l.StateOf(j), "running");
  }
  l.At(31);
  EXPECT_TRUE(l.Tick());
  EXPECT_EQ(l.StateOf(j), "pending");
  auto nodes = l.state().NodesJson();
  EXPECT_EQ(nodes["nodes"][0]["state"], "lost") << nodes.dump();
}

}  // namespace
}  // namespace hg::server

namespace hg::server {
namespace {

// Once the queue is long, why each job waits is worked out on a cycle at least explain_every_ms
// after the last one that did, however few cycles ran in between: cycles run on changes, so a
// count of cycles would leave a quiet server's reasons stale for many max gaps.
TEST(StateTick, ALongQueuesReasonsAreRefreshedWithinTheirTimeBound) {
  Loop l(1, 0, 86400, 1.0, 0, [](StateOptions& o) {
    o.explain_queue_below = 1;
    o.explain_every_ms = 30000;
  });
  l.At(0);
  const int64_t first =
      l.Submit({{"budget", "b"}, {"gpus", 1}, {"min_runtime_s", 1000}, {"command", {"x"}}});
  EXPECT_TRUE(l.Tick());  // one job waits: explained
  EXPECT_EQ(l.StateOf(first), "running");
  l.Beat();
  l.At(5);
  const int64_t second = l.Submit({{"budget", "b"}, {"gpus", 1}, {"command", {"y"}}});
  const int64_t third = l.Submit({{"budget", "a"}, {"gpus", 1}, {"command", {"z"}}});
  l.At(10);
  EXPECT_TRUE(l.Tick());  // two wait, 10 s after the last explanation: not explained
  EXPECT_EQ(l.Field(second, "reason_code"), "submitted");
  EXPECT_NE(l.state().MetricsText().find("hourglass_pending_jobs{reason=\"submitted\"} 2\n"),
            std::string::npos);
  l.At(35);
  const int64_t fourth = l.Submit({{"budget", "b"}, {"gpus", 1}, {"command", {"w"}}});
  l.At(40);
  EXPECT_TRUE(l.Tick());  // the third cycle, 40 s after the last explanation
  for (int64_t id : {second, third, fourth}) {
    EXPECT_NE(l.Field(id, "reason_code"), "submitted") << "job " << id;
    EXPECT_NE(l.Field(id, "reason"), "submitted") << "job " << id;
  }
  // The only GPU is held under protection: each names what it waits for.
  EXPECT_EQ(l.Field(second, "reason_code"), "wait_gpus");
  EXPECT_NE(l.Field(second, "reason").find("none preemptible"), std::string::npos)
      << l.Field(second, "reason");
  // The metrics count the waiting jobs by their reason.
  const std::string m = l.state().MetricsText();
  EXPECT_NE(m.find("hourglass_pending_jobs{reason=\"wait_gpus\"} 3\n"), std::string::npos) << m;
  EXPECT_EQ(m.find("hourglass_pending_jobs{reason=\"submitted\"}"), std::string::npos) << m;
}

// The fair-share window (PolicyConfig::window, `--window`) sizes the server's usage ledgers: a
// job that has run 3 hours shows 3 GPU-hours delivered over the default 7 days, 1 over 1 hour.
TEST(StateWindow, UsageCountsOnlyTheConfiguredWindow) {
  for (const int64_t window_h : {int64_t{168}, int64_t{1}}) {
    Loop l(2, 0, 86400, 1.0, 0, [&](StateOptions& o) { o.config.window = Hours(window_h); });
    l.At(0);
    const int64_t j = l.Submit({{"budget", "a"}, {"gpus", 1}, {"command", {"x"}}});
    l.At(10);
    l.Tick();
    l.Beat();
    ASSERT_EQ(l.StateOf(j), "running");
    l.At(10 + 3 * 3600);
    double delivered = -1;
    const json all = l.state().BudgetsJson();
    for (const json& b : all["budgets"])
      if (b["name"] == "a") delivered = b["delivered_7d_gpu_hours"].get<double>();
    EXPECT_NEAR(delivered, window_h == 1 ? 1.0 : 3.0, 0.01) << window_h << all.dump();
  }
}

// GET /v1/usage's subtree figures: a parent's daily totals and queue waits are its children's
// together, and a budget's answer holds its subtree only.
TEST(StateWindow, UsageRollsChildrenUpIntoTheirParent) {
  Loop l(2, 0, 86400, 1.0, 0, [](StateOptions& o) {
    o.initial_budgets = {BudgetSpec{"p", "", 1.0, std::nullopt, {}, 0},
                         BudgetSpec{"a", "p", 1.0, std::nullopt, {}, 0},
                         BudgetSpec{"b", "p", 1.0, std::nullopt, {}, 0}};
  });
  l.At(0);
  l.Submit({{"budget", "a"}, {"gpus", 1}, {"command", {"x"}}, {"class", "batch"}});
  l.Submit({{"budget", "b"}, {"gpus", 1}, {"command", {"x"}}, {"class", "batch"}});
  l.At(10);
  l.Tick();
  l.Beat();
  l.At(10 + 3 * 3600);
  auto all = l.state().UsageJson("p");
  ASSERT_TRUE(all);
  std::map<std::string, json> by_name;
  for (const json& b : (*all)["budgets"]) by_name[b["name"].get<std::string>()] = b;
  ASSERT_EQ(by_name.size(), 3u);
  auto last_day = [&](const std::string& n) {
    return by_name[n]["daily"].back()["delivered_gpu_hours"].get<double>();
  };
  EXPECT_NEAR(last_day("a"), 3.0, 0.01);
  EXPECT_NEAR(last_day("b"), 3.0, 0.01);
  EXPECT_NEAR(last_day("p"), 6.0, 0.02);
  EXPECT_EQ(by_name["a"]["wait_s"]["batch"]["count"], 1);
  EXPECT_EQ(by_name["p"]["wait_s"]["batch"]["count"], 2);
  auto one = l.state().UsageJson("a");
  ASSERT_TRUE(one);
  ASSERT_EQ((*one)["budgets"].size(), 1u);
  EXPECT_EQ((*one)["budgets"][0]["wait_s"]["batch"]["count"], 1);
}

}  // namespace
}  // namespace hg::server
