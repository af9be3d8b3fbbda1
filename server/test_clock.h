// A clock for tests that the test moves by hand; nothing waits on it (no Scheduler thread).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "server/clock.h"

namespace hg::server {

class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t now_ms = 0) : now_(now_ms) {}
  int64_t NowMs() const override { return now_; }
  int64_t SteadyNs() const override { return now_ * 1000000; }
  void WaitUntil(std::unique_lock<std::mutex>&, std::condition_variable&, int64_t) override {}
  void Set(int64_t ms) { now_ = ms; }

 private:
  int64_t now_;
};

}  // namespace hg::server
