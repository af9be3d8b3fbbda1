// The scheduling loop: one thread that runs the policy cycle on events (submission, exit, node
// change: Notify) and at least every interval.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "server/clock.h"
#include "server/state.h"

namespace hg::server {

class Scheduler {
 public:
  Scheduler(State& state, Clock& clock, int64_t interval_ms);
  ~Scheduler();  // stops the thread
  void Start();
  void Stop();
  // Something changed: run a cycle soon (events within a few milliseconds share one cycle).
  void Notify();
  int64_t cycles() const;

 private:
  void Loop();

  State& state_;
  Clock& clock_;
  int64_t interval_ms_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool dirty_ = true;
  int64_t cycles_ = 0;
  std::thread thread_;
};

}  // namespace hg::server
