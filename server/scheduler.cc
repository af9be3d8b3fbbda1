#include "server/scheduler.h"

#include <spdlog/spdlog.h>

#include <cassert>

namespace hg::server {

Scheduler::Scheduler(Clock& clock, int64_t interval_ms, Tick tick)
    : clock_(clock), interval_ms_(interval_ms), tick_(std::move(tick)) {
  assert(interval_ms_ > 0);
}

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

int64_t Scheduler::ticks() const {
  std::lock_guard lock(mu_);
  return ticks_;
}

int64_t Scheduler::NextTick(int64_t now_ms, int64_t interval_ms) {
  return (now_ms / interval_ms + 1) * interval_ms;
}

void Scheduler::Loop() {
  std::unique_lock lock(mu_);
  int64_t due = NextTick(clock_.NowMs(), interval_ms_);
  while (!stop_) {
    if (clock_.NowMs() < due) {
      clock_.WaitUntil(lock, cv_, due);
      continue;
    }
    lock.unlock();
    auto ok = tick_();
    if (!ok) spdlog::error("scheduling cycle failed: {}", ok.error().ToString());
    lock.lock();
    ++ticks_;
    // A tick that outlasts the interval skips the ticks it missed rather than running late ones
    // back to back.
    due = NextTick(clock_.NowMs(), interval_ms_);
  }
}

}  // namespace hg::server
