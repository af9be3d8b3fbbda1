// Time for the agent: wall time for the `at` of reports, monotonic time for deadlines (grace
// periods, health timeouts, heartbeat intervals), so a wall-clock jump neither kills a job early
// nor leaves it running forever. Library code reads time only through this interface.
#pragma once

#include <chrono>
#include <cstdint>

namespace hg::agent {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMs() = 0;
  // Milliseconds on a clock that never goes backwards (origin unspecified).
  virtual int64_t MonotonicMs() = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t NowMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t MonotonicMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to: tests of deadline logic without waiting.
class ManualClock final : public Clock {
 public:
  int64_t NowMs() override { return wall_ms_; }
  int64_t MonotonicMs() override { return mono_ms_; }
  void Advance(int64_t ms) {
    wall_ms_ += ms;
    mono_ms_ += ms;
  }

 private:
  int64_t wall_ms_ = 1'800'000'000'000;
  int64_t mono_ms_ = 0;
};

}  // namespace hg::agent
