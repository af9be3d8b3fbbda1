// A scenario written out as files and read back replays to the very same report: the file
// formats lose nothing the simulator uses.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/policy.h"
#include "sim/engine.h"
#include "sim/lab_month.h"
#include "sim/report.h"
#include "sim/scenario_io.h"

namespace hg::sim {
namespace {

Scenario ShortMonth(uint64_t seed) {
  Scenario sc = MakeLabMonth(seed);
  sc.end = Days(1);
  std::erase_if(sc.jobs, [&](const SimJob& j) { return j.spec.submit >= sc.end; });
  std::erase_if(sc.events, [&](const TimedEvent& e) { return e.at >= sc.end; });
  return sc;
}

std::string Report(const Scenario& sc, const char* policy_name) {
  auto policy = MakePolicy(policy_name, PolicyConfig{});
  EXPECT_TRUE(policy.has_value());
  auto r = Simulate(sc, **policy, SimOptions{});
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return RenderJson({*r});
}

TEST(Replay, WrittenScenarioReplaysToTheSameReport) {
  const Scenario original = ShortMonth(7);
  ASSERT_GT(original.jobs.size(), 1000u);
  const auto dir = std::filesystem::temp_directory_path() / "hourglass-replay-test";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteScenario(original, dir.string()).has_value());

  Scenario replay;
  replay.name = original.name;
  replay.end = original.end;
  auto nodes = ReadCluster((dir / "cluster.csv").string());
  auto budgets = ReadBudgets((dir / "budgets.toml").string());
  auto jobs = ReadWorkload((dir / "workload.csv").string());
  auto events = ReadEvents((dir / "events.csv").string());
  ASSERT_TRUE(nodes && budgets && jobs && events);
  replay.nodes = *nodes;
  replay.budgets = *budgets;
  replay.jobs = *jobs;
  replay.events = *events;
  ASSERT_EQ(replay.jobs.size(), original.jobs.size());
  ASSERT_EQ(replay.events.size(), original.events.size());

  for (const char* policy : {"hourglass", "priority"}) {
    const std::string a = Report(original, policy);
    const std::string b = Report(replay, policy);
    EXPECT_EQ(a, b) << policy;
    EXPECT_NE(a.find("\"occupancy\""), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hg::sim
