#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <vector>

namespace hg::server {
namespace {

// A clock that jumps to each deadline it is asked to wait for, so the loop runs through hours of
// ticks at once; once frozen it waits for a real notification (Stop) instead.
class JumpingClock : public Clock {
 public:
  explicit JumpingClock(int64_t start_ms) : now_(start_ms) {}
  int64_t NowMs() const override { return now_; }
  int64_t SteadyNs() const override { return now_ * 1000000; }
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 int64_t deadline_ms) override {
    if (frozen_) {
      cv.wait(lock);
      return;
    }
    if (deadline_ms > now_) now_ = deadline_ms;
  }
  void Advance(int64_t ms) { now_ += ms; }
  void Freeze() { frozen_ = true; }

 private:
  int64_t now_;  // read and written by the loop's thread only, until Stop joins it
  bool frozen_ = false;
};

// Runs the loop until it has run `cycles` cycles; `during` runs inside each cycle (given its
// number, from 1) and says how it ended.
using During = std::function<Result<void>(size_t)>;
std::vector<int64_t> CycleTimes(JumpingClock& clock, int64_t interval_ms, size_t cycles,
                                const During& during = {}) {
  std::vector<int64_t> at;
  std::mutex mu;
  std::condition_variable done;
  Scheduler sched(clock, interval_ms, [&]() -> Result<void> {
    std::lock_guard lock(mu);
    at.push_back(clock.NowMs());
    Result<void> ended = during ? during(at.size()) : Result<void>{};
    if (at.size() == cycles) {
      clock.Freeze();
      done.notify_all();
    }
    return ended;
  });
  sched.Start();
  {
    std::unique_lock lock(mu);
    done.wait(lock, [&] { return at.size() >= cycles; });
  }
  sched.Stop();
  EXPECT_EQ(sched.ticks(), static_cast<int64_t>(cycles));
  return at;
}

TEST(Scheduler, NextTickIsTheNextMultipleOfTheInterval) {
  EXPECT_EQ(Scheduler::NextTick(0, 10000), 10000);
  EXPECT_EQ(Scheduler::NextTick(9999, 10000), 10000);
  EXPECT_EQ(Scheduler::NextTick(10000, 10000), 20000);
  EXPECT_EQ(Scheduler::NextTick(12345, 1000), 13000);
}

// The simulator runs its cycles at the multiples of its interval; the server does the same, so
// a cycle never runs between ticks, however soon after a start it would be due.
TEST(Scheduler, CyclesRunOnTheTicksOfTheGridOnly) {
  JumpingClock clock(1'700'000'003'217);
  const auto at = CycleTimes(clock, 10000, 4);
  EXPECT_EQ(at, (std::vector<int64_t>{1'700'000'010'000, 1'700'000'020'000, 1'700'000'030'000,
                                      1'700'000'040'000}));
}

// A cycle that outlasts the interval does not make the loop run the missed ticks back to back:
// the next cycle is on the first tick after it ended.
TEST(Scheduler, ASlowCycleSkipsTheTicksItMissed) {
  JumpingClock clock(5000);
  const auto at = CycleTimes(clock, 1000, 3, [&](size_t k) -> Result<void> {
    if (k == 1) clock.Advance(3500);  // the first cycle, at 6000, ends at 9500
    return {};
  });
  EXPECT_EQ(at, (std::vector<int64_t>{6000, 10000, 11000}));
}

// A failed cycle is logged and the loop goes on.
TEST(Scheduler, AFailedCycleDoesNotStopTheLoop) {
  JumpingClock clock(0);
  const auto at = CycleTimes(clock, 500, 3,
                             [](size_t) -> Result<void> { return Fail("store", "unavailable"); });
  EXPECT_EQ(at, (std::vector<int64_t>{500, 1000, 1500}));
}

}  // namespace
}  // namespace hg::server
