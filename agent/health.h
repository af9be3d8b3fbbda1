// The node's health check: an operator-given shell command run every interval as a child process
// of its own group. Exit status 0 = healthy; anything else, or running past the timeout =
// unhealthy, with the first line of its output as the detail the server shows (and drains on).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "agent/clock.h"

namespace hg::agent {

struct HealthStatus {
  bool ok = true;
  std::string detail;
};

class HealthChecker {
 public:
  // An empty command means no check: always healthy.
  HealthChecker(std::string command, int64_t interval_ms, int64_t timeout_ms, Clock& clock);
  ~HealthChecker();
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  // Non-blocking: collects a finished check, kills one past its timeout, starts one when due.
  void Tick();

  // The result of the last completed check (healthy before the first one completes).
  const HealthStatus& status() const { return status_; }
  // How many checks have completed.
  int64_t completed() const { return completed_; }

 private:
  void StartCheck();
  void Drain();
  void Finish(HealthStatus s);

  std::string command_;
  int64_t interval_ms_;
  int64_t timeout_ms_;
  Clock& clock_;
  HealthStatus status_;
  int64_t completed_ = 0;
  int64_t next_due_ms_ = 0;
  bool first_ = true;
  pid_t pid_ = -1;  // a check is running when > 0
  int out_fd_ = -1;
  int64_t deadline_ms_ = 0;
  std::string output_;  // the first bytes of the running check's output
};

}  // namespace hg::agent
