// Several policies simulated at once give what one after the other gives, in the same order.
#include "sim/run_all.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "sim/lab_month.h"
#include "sim/report.h"

namespace hg::sim {
namespace {

std::vector<std::unique_ptr<Policy>> Policies(const std::vector<std::string>& names) {
  std::vector<std::unique_ptr<Policy>> out;
  for (const std::string& n : names) {
    auto p = MakePolicy(n, DeployedConfig());
    EXPECT_TRUE(p.has_value()) << n;
    out.push_back(std::move(*p));
  }
  return out;
}

// Runs `policies` on `threads` threads: the policy names in the order of the results, then the
// table and the JSON report of all of them.
std::string Report(const Scenario& sc, const std::vector<std::unique_ptr<Policy>>& policies,
                   int threads, std::atomic<int>* finished) {
  SimOptions opt;
  opt.policy = DeployedConfig();
  auto results = SimulateAll(
      sc, policies, threads, [&](size_t) { return opt; }, [&](size_t) { ++*finished; });
  std::vector<SimResult> runs;
  for (auto& r : results) {
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    if (r) runs.push_back(std::move(*r));
  }
  std::string names;
  for (const SimResult& r : runs) names += r.policy + ",";
  return names + "\n" + RenderTable(runs) + RenderJson(runs);
}

TEST(SimulateAll, TheReportIsTheSameBytesWhateverTheThreadCount) {
  Scenario sc = MakeLabMonth(3);
  sc.end = Days(1);
  const auto policies = Policies({"hourglass", "priority", "fifo-backfill"});
  std::atomic<int> finished{0};
  const std::string one = Report(sc, policies, 1, &finished);
  EXPECT_EQ(finished.load(), 3);
  for (int threads : {2, 3, 8}) {
    finished = 0;
    EXPECT_EQ(Report(sc, policies, threads, &finished), one) << threads << " threads";
    EXPECT_EQ(finished.load(), 3) << threads << " threads";
  }
  // In the policies' order, not in the order the runs ended (fifo-backfill ends first).
  EXPECT_EQ(one.substr(0, one.find('\n')), "hourglass,priority,fifo-backfill,");
}

class ThrowingPolicy : public Policy {
 public:
  std::string_view name() const override { return "broken"; }
  Decisions Cycle(const Snapshot&) const override { throw std::runtime_error("out of memory"); }
};

TEST(SimulateAll, AnExceptionInOneRunIsThatRunsErrorAndTheOthersComplete) {
  Scenario sc = MakeLabMonth(3);
  sc.end = Hours(6);
  std::vector<std::unique_ptr<Policy>> policies = Policies({"hourglass"});
  policies.push_back(std::make_unique<ThrowingPolicy>());
  policies.push_back(std::move(Policies({"priority"})[0]));
  SimOptions opt;
  opt.policy = DeployedConfig();
  auto results = SimulateAll(sc, policies, 2, [&](size_t) { return opt; });
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[0].has_value());
  ASSERT_FALSE(results[1].has_value());
  EXPECT_EQ(results[1].error().ToString(), "simulation: broken: out of memory");
  ASSERT_TRUE(results[2].has_value());
  EXPECT_EQ(results[0]->policy, "hourglass");
  EXPECT_EQ(results[2]->policy, "priority");
  EXPECT_GT(results[2]->cycles, 0);
}

}  // namespace
}  // namespace hg::sim
