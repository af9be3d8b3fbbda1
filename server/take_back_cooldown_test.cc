// The take-back cool-down (PolicyConfig::take_back_cooldown) in the server: the stops it counts
// from are stored with each stop and read back on a restart, by budget name.
#include <gtest/gtest.h>

#include <string>

#include "server/state_test_loop.h"

namespace hg::server {
namespace {

using nlohmann::json;
using testing::kAdmin;
using testing::Loop;

constexpr const char* kCooldownWords = "within the take-back cool-down";

// b's job stops a's at 610 s (a has used the node, b nothing); from 1,230 s b's usage has passed
// a's, and a would take the GPUs back. With an hour's cool-down it may not
// until 4,210 s, and its job says so, through a restart that renumbers the budgets ("0x", made
// before it, comes first in the store's order of names) if `restart`.
void TwoBudgetsTakeTurns(Seconds cooldown, bool restart) {
  SCOPED_TRACE(std::to_string(cooldown.value()) + (restart ? " with a restart" : ""));
  Loop l(8, 0, 86400, 1.0, 300000, [&](StateOptions& o) {
    o.config = PolicyConfig{};
    o.config.live_weight = Seconds(0);  // the keys are the GPU-seconds used
    o.config.take_back_cooldown = cooldown;
  });
  const json a_spec = {
      {"budget", "a"}, {"gpus", 8}, {"resumable", true}, {"grace_s", 5}, {"command", {"x"}}};
  json b_spec = a_spec;
  b_spec["budget"] = "b";
  b_spec["min_runtime_s"] = 60;
  l.At(0);
  const int64_t a = l.Submit(a_spec);
  l.At(10);
  l.Tick();
  ASSERT_EQ(l.StateOf(a), "running");
  l.Beat();
  l.At(600);
  const int64_t b = l.Submit(b_spec);
  l.At(610);
  l.Tick();
  ASSERT_EQ(l.StateOf(a), "stopping");
  l.Beat();      // takes the stop order
  l.Beat(true);  // a's attempt ends: requeued
  l.At(620);
  l.Tick();
  ASSERT_EQ(l.StateOf(b), "running");
  ASSERT_EQ(l.StateOf(a), "pending");
  l.Beat();
  if (restart) {
    ASSERT_TRUE(l.state().CreateBudget(kAdmin, "0x", BudgetChange{}));
    l.At(630);
    l.Restart();
  }
  l.At(2000);
  l.Tick();
  if (cooldown == Seconds(0)) {
    EXPECT_EQ(l.StateOf(b), "stopping");  // taken back: what the cool-down is there to stop
    return;
  }
  EXPECT_EQ(l.StateOf(b), "running");
  EXPECT_NE(l.Field(a, "reason").find(kCooldownWords), std::string::npos) << l.Field(a, "reason");
  // It may stop b's job once the cool-down of the stop at 610 s lapses; b's job leaves 5 s later.
  auto view = l.state().JobJson(kAdmin, a);
  ASSERT_TRUE(view);
  EXPECT_EQ((*view)["estimated_start_at"], 1000000 + 610 + 3600 + 5);
  // The budgets' view shows the cool-down on a, none on b.
  for (const json& bv : l.state().BudgetsJson()["budgets"]) {
    const json want =
        bv["name"] == "a" ? json::array({{{"budget", "b"}, {"until", 1004210}}}) : json::array();
    EXPECT_EQ(bv["take_back_cooldowns"], want) << bv["name"];
  }
  // The cool-down ends an hour after the stop; the next cycle (the loop's max gap) takes them.
  l.At(4200);
  l.Tick();
  EXPECT_EQ(l.StateOf(b), "running");
  l.At(4510);
  l.Tick();
  EXPECT_EQ(l.StateOf(b), "stopping");
}

TEST(TakeBackCooldown, WithoutItTheGpusAreTakenBack) { TwoBudgetsTakeTurns(Seconds(0), false); }
TEST(TakeBackCooldown, ABudgetDoesNotTakeBackWithinIt) { TwoBudgetsTakeTurns(Hours(1), false); }
TEST(TakeBackCooldown, ARestartThatRenumbersTheBudgetsDoesNotLiftIt) {
  TwoBudgetsTakeTurns(Hours(1), true);
}

}  // namespace
}  // namespace hg::server
