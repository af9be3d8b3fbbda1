// A one-line progress display for long simulation runs. Driven by simulated time and call counts,
// never by a clock, so it cannot make a run nondeterministic; it writes only to its own stream.
#pragma once

#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace hg::sim {

// Prints "\r<policy> day 12.3/30  events 1.2M" on the first Update and then on every `every`-th
// one, and nothing at all when the stream is not a terminal (logs and pipes stay clean). Runs
// that overlap (SimulateAll) share the line, in the order they first reported, separated by
// " | "; a run that has ended leaves it (Finish). Safe to call from several threads.
class ProgressLine {
 public:
  ProgressLine(std::ostream& out, bool is_terminal, int64_t every = 1);
  // `elapsed` and `total` are simulated durations since the run's start.
  void Update(std::string_view policy, Seconds elapsed, Seconds total, int64_t events);
  // The run of `policy` has ended: the line stops showing it.
  void Finish(std::string_view policy);
  // Ends the line (if anything was printed) so the next output starts on a fresh line.
  void Done();

 private:
  struct Run {
    std::string policy;
    std::string text;  // "<policy> day 12.3/30  events 1.2M"
  };
  void Print();  // with mu_ held

  std::mutex mu_;
  std::ostream& out_;
  bool enabled_;
  int64_t every_;
  int64_t calls_ = 0;
  size_t last_width_ = 0;
  std::vector<Run> runs_;
};

// "999", "12.3k", "1.2M", "3.4G": a count short enough for a progress line.
std::string HumanCount(int64_t n);

}  // namespace hg::sim
