// Hand-made test scenarios, and a run of `hourglass` on one. TestJob: a workload job, funded when
// `budget` is set (class "batch"), unfunded otherwise (class "sweep"), with a 60 s grace period.
// Tests adjust the rest.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

#include "core/policy.h"
#include "sim/engine.h"
#include "sim/scenario.h"

namespace hg::sim {

inline SimJob TestJob(int64_t id, int64_t submit, int32_t gpus, std::string budget,
                      int64_t duration) {
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

// One 8-GPU node, "n0", and one budget, "team"; no jobs yet.
inline Scenario OneNodeOneBudget(std::string name, Seconds end) {
  Scenario sc;
  sc.name = std::move(name);
  sc.end = end;
  sc.nodes = {NodeSpec{"n0", 8, "b0", 0}};
  sc.budgets = {BudgetSpec{"team", "", 1.0, std::nullopt, {}, 0}};
  return sc;
}

// One 8-GPU node, "n0", and two budgets of equal share, "a" and "b"; no jobs yet.
inline Scenario OneNodeTwoBudgets(std::string name, Seconds end) {
  Scenario sc = OneNodeOneBudget(std::move(name), end);
  sc.budgets = {BudgetSpec{"a", "", 1.0, std::nullopt, {}, 0},
                BudgetSpec{"b", "", 1.0, std::nullopt, {}, 0}};
  return sc;
}

// Simulates `hourglass` (with opt.policy) on a scenario the test built valid.
inline SimResult SimulateHourglass(const Scenario& sc, const SimOptions& opt) {
  auto policy = MakePolicy("hourglass", opt.policy);
  EXPECT_TRUE(policy.has_value());
  auto r = Simulate(sc, **policy, opt);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return std::move(*r);
}

// OneNodeOneBudget: an unfunded 8-GPU job holds the node from 0 s for 2 hours, and a funded
// 8-GPU job of 10 minutes arrives at 600 s and must stop it.
inline Scenario UnfundedThenFundedOnOneNode(std::string name) {
  Scenario sc = OneNodeOneBudget(std::move(name), Hours(4));
  sc.jobs = {TestJob(1, 0, 8, "", 7200), TestJob(2, 600, 8, "team", 600)};
  return sc;
}

}  // namespace hg::sim
