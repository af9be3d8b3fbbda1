#include "server/clock.h"

#include <chrono>

namespace hg::server {

int64_t SystemClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SystemClock::SteadyNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SystemClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            int64_t deadline_ms) {
  const int64_t left = deadline_ms - NowMs();
  if (left <= 0) return;
  cv.wait_for(lock, std::chrono::milliseconds(left));
}

}  // namespace hg::server
