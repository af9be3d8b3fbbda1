// The scheduling loop: one thread that ticks on a fixed grid, at every multiple of the interval
// (since the Unix epoch), and calls the tick function, which decides whether a policy cycle runs
// (State::Tick: after a change, a protection or lease ending, the max gap or the waiting timer).
// What happened since the last tick is acted on at the next one, the loop the simulator measures:
// `hourglass sim --interval S` cycles on the first tick after an event (sim/engine.cc). A faster
// reaction is not free: on philly-dev a loop that ran a cycle within 50 ms of any change and every
// second delivered about a point less of what is owed than the 10 s one (docs/open-work.md, "The
// simulator runs cycles on events only"), and a loop that differs from the simulated one is not
// what was measured.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "server/clock.h"

namespace hg::server {

class Scheduler {
 public:
  using Tick = std::function<Result<void>()>;
  Scheduler(Clock& clock, int64_t interval_ms, Tick tick);
  ~Scheduler();  // stops the thread
  void Start();
  void Stop();
  int64_t ticks() const;

  // The first tick after `now_ms`: the next multiple of the interval.
  static int64_t NextTick(int64_t now_ms, int64_t interval_ms);

 private:
  void Loop();

  Clock& clock_;
  int64_t interval_ms_;
  Tick tick_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  int64_t ticks_ = 0;
  std::thread thread_;
};

}  // namespace hg::server
