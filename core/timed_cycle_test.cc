#include "core/timed_cycle.h"

#include <gtest/gtest.h>

namespace hg {
namespace {

TEST(NextTimedCycle, EventsOnlyHaveNone) { EXPECT_FALSE(NextTimedCycle(1234, 0, 0, 10)); }

TEST(NextTimedCycle, TheTimersNextMultiple) {
  EXPECT_EQ(NextTimedCycle(1234, 60, 0, 10), 1260);
  EXPECT_EQ(NextTimedCycle(1260, 60, 0, 10), 1320);  // strictly after the cycle
}

TEST(NextTimedCycle, TheFirstTickAMaxGapLater) {
  EXPECT_EQ(NextTimedCycle(1234, 0, 300, 10), 1540);
  EXPECT_EQ(NextTimedCycle(1230, 0, 300, 10), 1530);
  EXPECT_EQ(NextTimedCycle(1234, 0, 300, 1), 1534);  // the caller's ticks round it
}

TEST(NextTimedCycle, WhicheverComesFirst) {
  EXPECT_EQ(NextTimedCycle(1234, 60, 300, 10), 1260);
  EXPECT_EQ(NextTimedCycle(1234, 3600, 300, 10), 1540);
}

// The settings are checked once for both loops; each error names the caller's setting and what it
// was given, and the settings NextTimedCycle can take pass.
TEST(CheckTimedLoop, NamesTheSettingAndItsValue) {
  const LoopSettingNames names{"--interval-ms", "--timer-ms", "--max-gap-ms"};
  EXPECT_TRUE(CheckTimedLoop(10000, 0, 0, names));
  EXPECT_TRUE(CheckTimedLoop(10000, 60000, 300000, names));
  auto tick = CheckTimedLoop(0, 0, 0, names);
  ASSERT_FALSE(tick);
  EXPECT_EQ(tick.error().field, "--interval-ms");
  EXPECT_EQ(tick.error().reason, "must be positive, got 0");
  auto period = CheckTimedLoop(10000, 15000, 0, names);
  ASSERT_FALSE(period);
  EXPECT_EQ(period.error().field, "--timer-ms");
  EXPECT_EQ(period.error().reason, "must be 0 or a multiple of --interval-ms (10000), got 15000");
  EXPECT_EQ(CheckTimedLoop(10000, -10000, 0, names).error().field, "--timer-ms");
  auto gap = CheckTimedLoop(10000, 0, -1, names);
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().field, "--max-gap-ms");
  EXPECT_EQ(gap.error().reason, "must not be negative, got -1");
}

}  // namespace
}  // namespace hg
