#include "agent/health.h"

#include <gtest/gtest.h>

#include "agent/test_util.h"

namespace hg::agent {
namespace {

using testing::MonoMs;
using testing::WaitFor;

// Ticks until `n` checks have completed.
bool TickUntil(HealthChecker& h, int64_t n, int64_t timeout_ms) {
  return WaitFor(
      [&] {
        h.Tick();
        return h.completed() >= n;
      },
      timeout_ms);
}

TEST(HealthChecker, PassingCommandIsHealthyWithItsFirstLine) {
  SystemClock clock;
  HealthChecker h("echo all 8 GPUs fine; echo second line", 60'000, 5'000, clock);
  ASSERT_TRUE(TickUntil(h, 1, 5000));
  EXPECT_TRUE(h.status().ok);
  EXPECT_EQ(h.status().detail, "all 8 GPUs fine");
}

TEST(HealthChecker, FailingCommandIsUnhealthyWithTheFirstLineOfItsOutput) {
  SystemClock clock;
  HealthChecker h("echo 'GPU 3 fell off the bus' >&2; echo more; exit 3", 60'000, 5'000, clock);
  ASSERT_TRUE(TickUntil(h, 1, 5000));
  EXPECT_FALSE(h.status().ok);
  EXPECT_EQ(h.status().detail, "GPU 3 fell off the bus");

  HealthChecker quiet("exit 4", 60'000, 5'000, clock);
  ASSERT_TRUE(TickUntil(quiet, 1, 5000));
  EXPECT_FALSE(quiet.status().ok);
  EXPECT_EQ(quiet.status().detail, "health check exited with status 4");
}

TEST(HealthChecker, TimeoutIsUnhealthyAndKillsTheCheck) {
  SystemClock clock;
  HealthChecker h("echo probing; sleep 30", 60'000, 300, clock);
  const int64_t t0 = MonoMs();
  ASSERT_TRUE(TickUntil(h, 1, 5000));
  const int64_t took = MonoMs() - t0;
  EXPECT_FALSE(h.status().ok);
  EXPECT_NE(h.status().detail.find("timed out after 300 ms"), std::string::npos)
      << h.status().detail;
  EXPECT_NE(h.status().detail.find("probing"), std::string::npos) << h.status().detail;
  EXPECT_GE(took, 300);
  EXPECT_LT(took, 2000);
}

TEST(HealthChecker, RunsAgainEveryIntervalAndRecovers) {
  testing::TempDir d;
  ManualClock clock;
  // Fails while the marker file exists.
  const std::string marker = d / "broken";
  HealthChecker h("if [ -e " + marker + " ]; then echo broken; exit 1; fi; echo ok", 10'000, 5'000,
                  clock);
  ASSERT_TRUE(TickUntil(h, 1, 5000));
  EXPECT_TRUE(h.status().ok);
  { std::ofstream(marker) << "x"; }
  // Not due yet: no new check however often we tick.
  for (int i = 0; i < 20; ++i) h.Tick();
  EXPECT_EQ(h.completed(), 1);
  clock.Advance(10'000);
  ASSERT_TRUE(TickUntil(h, 2, 5000));
  EXPECT_FALSE(h.status().ok);
  EXPECT_EQ(h.status().detail, "broken");
  std::filesystem::remove(marker);
  clock.Advance(10'000);
  ASSERT_TRUE(TickUntil(h, 3, 5000));
  EXPECT_TRUE(h.status().ok);
}

TEST(HealthChecker, NoCommandIsAlwaysHealthy) {
  SystemClock clock;
  HealthChecker h("", 1000, 1000, clock);
  h.Tick();
  EXPECT_TRUE(h.status().ok);
  EXPECT_EQ(h.completed(), 0);
}

}  // namespace
}  // namespace hg::agent
