// A preemption whose victim is still in its grace period when the server restarts: what the stop
// freed its GPUs for (JobRecord::stop_for, stop_holds) is stored with the stop and read back, so
// the preemptor neither stops more work for the same GPUs nor loses them to another job.
#include <gtest/gtest.h>

#include <string>

#include "server/state_test_loop.h"

namespace hg::server {
namespace {

using testing::Loop;

// Two unfunded 4-GPU jobs fill the node; a's 4-GPU job stops one of them. After a restart during
// that stop's grace, a's job still waits for its victim: the other sweep keeps running.
TEST(StopAcrossRestart, ThePreemptorWaitsForItsVictimAndStopsNothingMore) {
  Loop l(8);
  const nlohmann::json sweep = {{"gpus", 4}, {"resumable", true}, {"command", {"sweep"}}};
  l.At(0);
  const int64_t u1 = l.Submit(sweep);
  const int64_t u2 = l.Submit(sweep);
  l.Tick();
  ASSERT_EQ(l.StateOf(u1), "running");
  ASSERT_EQ(l.StateOf(u2), "running");
  l.Beat();
  l.At(100);
  const int64_t f = l.Submit({{"budget", "a"}, {"gpus", 4}, {"command", {"train"}}});
  l.Tick();
  const int64_t victim = l.StateOf(u1) == "stopping" ? u1 : u2;
  const int64_t other = victim == u1 ? u2 : u1;
  ASSERT_EQ(l.StateOf(victim), "stopping");
  ASSERT_EQ(l.StateOf(other), "running");
  l.Beat();  // takes the stop order
  l.At(110);
  l.Restart();
  l.Tick();
  EXPECT_EQ(l.StateOf(f), "pending") << l.Field(f, "reason");
  EXPECT_EQ(l.StateOf(victim), "stopping");
  EXPECT_EQ(l.StateOf(other), "running");  // not a second victim for the same GPUs
  // The victim's grace ends: a's job takes its GPUs.
  l.Beat(true);
  l.At(120);
  l.Tick();
  EXPECT_EQ(l.StateOf(f), "running") << l.Field(f, "reason");
  EXPECT_EQ(l.StateOf(victim), "pending");  // resumable: requeued
  EXPECT_EQ(l.StateOf(other), "running");
}

// The freed-GPU hold (StopDecision::hold_for -> PendingJob::freed_for) through a restart, in the
// case of Scheduling.GpusFreedOutsideTheFairShareOrderGoToTheJobTheyWereFreedFor: under
// --quick-first a's debug job stops b's batch job although a has used more (the stop leaves a above
// b: outside the fair-share order), and b's own debug job arrives while the victim stops. b,
// further below, would come first once the GPU is free; the hold gives it to a's debug job.
TEST(StopAcrossRestart, GpusHeldForTheJobTheyWereFreedForStayHeld) {
  Loop l(1, 0, 86400, 1.0, 0, [](StateOptions& o) { o.config.quick_first = true; });
  l.At(0);
  // a uses the GPU for 100 s (stopped at its max_runtime).
  const int64_t a0 =
      l.Submit({{"budget", "a"}, {"gpus", 1}, {"max_runtime_s", 100}, {"command", {"x"}}});
  l.Tick();
  ASSERT_EQ(l.StateOf(a0), "running");
  l.Beat();
  l.At(100);
  l.Tick();
  ASSERT_EQ(l.StateOf(a0), "stopping");
  l.Beat();
  l.Beat(true);
  l.At(110);
  const int64_t b1 = l.Submit({{"budget", "b"},
                               {"gpus", 1},
                               {"min_runtime_s", 1},
                               {"resumable", true},
                               {"command", {"train"}}});
  l.Tick();
  ASSERT_EQ(l.StateOf(b1), "running");
  l.Beat();
  l.At(200);
  const int64_t a1 =
      l.Submit({{"budget", "a"}, {"gpus", 1}, {"class", "debug"}, {"command", {"d"}}});
  l.Tick();
  ASSERT_EQ(l.StateOf(b1), "stopping") << l.Field(b1, "reason");
  l.Beat();
  const int64_t b2 =
      l.Submit({{"budget", "b"}, {"gpus", 1}, {"class", "debug"}, {"command", {"d"}}});
  l.At(202);
  l.Restart();
  l.Tick();
  ASSERT_EQ(l.StateOf(b1), "stopping");
  // b1 leaves at 205 s, having used 95 s: b is further below than a.
  l.At(205);
  l.Beat(true);
  l.Tick();
  EXPECT_EQ(l.StateOf(a1), "running") << l.Field(a1, "reason");
  EXPECT_EQ(l.Field(a1, "reason"), "started on GPUs that preemption freed for it");
  EXPECT_EQ(l.StateOf(b2), "pending") << l.Field(b2, "reason");
  EXPECT_EQ(l.StateOf(b1), "pending");  // resumable: requeued
}

}  // namespace
}  // namespace hg::server
