// The engine on hand-made scenarios: what a user would see happen to their jobs.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include "core/policy.h"

namespace hg::sim {
namespace {

SimJob Job(int64_t id, int64_t submit, int32_t gpus, std::string budget, int64_t duration) {
  SimJob j;
  j.spec.id = JobId(id);
  j.spec.submit = Seconds(submit);
  j.spec.gpus = Gpus(gpus);
  j.spec.job_class = budget.empty() ? "sweep" : "batch";
  j.spec.grace = Seconds(60);
  j.budget = std::move(budget);
  j.duration = Seconds(duration);
  return j;
}

// Funded work preempts unfunded work: the victim gets its grace period, the funded job starts
// when it is gone, and every decision carries a reason in words.
TEST(Engine, FundedWorkPreemptsUnfundedWithReasonAndGrace) {
  Scenario sc;
  sc.name = "tiny";
  sc.end = Hours(4);
  sc.nodes = {NodeSpec{"n0", 8, "b0", 0}};
  sc.budgets = {BudgetSpec{"team", "", 1.0, std::nullopt, {}, 0}};
  sc.jobs = {Job(1, 0, 8, "", 7200), Job(2, 600, 8, "team", 600)};
  std::vector<DecisionLogEntry> log;
  SimOptions opt;
  opt.decision_log = [&](const DecisionLogEntry& e) { log.push_back(e); };
  auto policy = MakePolicy("hourglass", opt.policy);
  ASSERT_TRUE(policy.has_value());
  auto r = Simulate(sc, **policy, opt);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();

  ASSERT_EQ(r->preemptions.size(), 1u);
  EXPECT_EQ(r->preemptions[0].job, JobId(1));
  EXPECT_EQ(r->preemptions[0].cause, StopCause::kUnfunded);
  EXPECT_FALSE(r->preemptions[0].contract_violation);
  // Submitted at 600 s, the cycle at 600 s preempts, the victim leaves after 60 s of grace.
  const JobRecord& funded = r->jobs[1];
  ASSERT_EQ(funded.waits.size(), 1u);
  EXPECT_EQ(funded.waits[0], Seconds(60));  // the grace; the victim leaves on a tick (660 s)
  EXPECT_EQ(funded.final_state, JobState::kSucceeded);
  // The unfunded job is not resumable: it ends preempted.
  EXPECT_EQ(r->jobs[0].final_state, JobState::kPreempted);

  bool saw_stop = false, saw_start = false;
  for (const auto& e : log) {
    if (std::string(e.action) == "stop" && e.job == JobId(1)) {
      saw_stop = true;
      EXPECT_NE(e.reason.find("funded job 2"), std::string::npos) << e.reason;
    }
    if (std::string(e.action) == "start" && e.job == JobId(2)) {
      saw_start = true;
      EXPECT_EQ(e.node, "n0");
      EXPECT_EQ(e.at, Seconds(660));
    }
  }
  EXPECT_TRUE(saw_stop);
  EXPECT_TRUE(saw_start);
}

// A scenario that names a budget the tree lacks is refused with the workload line.
TEST(Engine, UnknownBudgetIsRefusedWithItsLine) {
  Scenario sc;
  sc.end = Hours(1);
  sc.nodes = {NodeSpec{"n0", 8, "b0", 0}};
  sc.budgets = {BudgetSpec{"team", "", 1.0, std::nullopt, {}, 0}};
  SimJob j = Job(1, 0, 1, "nobody", 60);
  j.line = 7;
  sc.jobs = {j};
  auto policy = MakePolicy("hourglass", PolicyConfig{});
  auto r = Simulate(sc, **policy, SimOptions{});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().file, "workload");
  EXPECT_EQ(r.error().line, 7);
  EXPECT_EQ(r.error().field, "budget");
}

}  // namespace
}  // namespace hg::sim
