#include "server/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace hg::server {

Scheduler::Scheduler(State& state, Clock& clock, int64_t interval_ms)
    : state_(state), clock_(clock), interval_ms_(interval_ms) {}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Scheduler::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::Notify() {
  {
    std::lock_guard lock(mu_);
    dirty_ = true;
  }
  cv_.notify_all();
}

int64_t Scheduler::cycles() const {
  std::lock_guard lock(mu_);
  return cycles_;
}

void Scheduler::Loop() {
  std::unique_lock lock(mu_);
  // Events trigger a cycle, but cycles are at least this far apart, so a burst of submissions
  // (64 clients) shares cycles instead of queueing one per submission behind the state's lock.
  const int64_t min_gap = std::min<int64_t>(interval_ms_, 50);
  int64_t last = clock_.NowMs() - interval_ms_;
  while (!stop_) {
    const int64_t now = clock_.NowMs();
    const int64_t due = dirty_ ? last + min_gap : last + interval_ms_;
    if (now < due) {
      clock_.WaitUntil(lock, cv_, due);
      continue;
    }
    dirty_ = false;
    lock.unlock();
    auto ok = state_.RunCycle();
    if (!ok) spdlog::error("scheduling cycle failed: {}", ok.error().ToString());
    lock.lock();
    ++cycles_;
    last = clock_.NowMs();
  }
}

}  // namespace hg::server
