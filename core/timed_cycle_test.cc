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

}  // namespace
}  // namespace hg
