// The only place the server reads time or waits: tests and the scheduler share one interface, so
// nothing else in server/ calls a clock or sleeps.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace hg::server {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMs() const = 0;
  // A monotonic reading in nanoseconds, for measuring how long something took.
  virtual int64_t SteadyNs() const = 0;
  // Waits on `cv` (with `lock` held on entry and exit) until notified or `deadline_ms` passes.
  virtual void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         int64_t deadline_ms) = 0;
};

// The wall clock.
class SystemClock : public Clock {
 public:
  int64_t NowMs() const override;
  int64_t SteadyNs() const override;
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 int64_t deadline_ms) override;
};

}  // namespace hg::server
