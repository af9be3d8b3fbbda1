#include "agent/health.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace hg::agent {
namespace {

constexpr size_t kKeepOutput = 4096;  // enough for a first line; the rest is read and dropped

std::string FirstLine(const std::string& s) {
  size_t b = 0;
  // Skip leading blank lines: a check that prints "\nGPU 3 fell off the bus" means the latter.
  while (b < s.size() && (s[b] == '\n' || s[b] == '\r')) ++b;
  const size_t e = s.find_first_of("\r\n", b);
  return s.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

}  // namespace

HealthChecker::HealthChecker(std::string command, int64_t interval_ms, int64_t timeout_ms,
                             Clock& clock)
    : command_(std::move(command)),
      interval_ms_(interval_ms),
      timeout_ms_(timeout_ms),
      clock_(clock) {}

HealthChecker::~HealthChecker() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (out_fd_ >= 0) close(out_fd_);
}

void HealthChecker::StartCheck() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    Finish({false, fmt::format("health check: pipe: {}", std::strerror(errno))});
    return;
  }
  std::string sh = "/bin/sh", dash_c = "-c", cmd = command_;
  std::vector<char*> argv = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) signal(sig, SIG_DFL);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  if (null_fd >= 0) close(null_fd);
  if (pid < 0) {
    close(fds[0]);
    Finish({false, fmt::format("health check: fork: {}", std::strerror(errno))});
    return;
  }
  setpgid(pid, pid);
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  pid_ = pid;
  out_fd_ = fds[0];
  output_.clear();
  deadline_ms_ = clock_.MonotonicMs() + timeout_ms_;
}

void HealthChecker::Drain() {
  if (out_fd_ < 0) return;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n > 0) {
      if (output_.size() < kKeepOutput)
        output_.append(buf, std::min(static_cast<size_t>(n), kKeepOutput - output_.size()));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {  // EOF: nobody holds the write end any more
      close(out_fd_);
      out_fd_ = -1;
    }
    return;  // EAGAIN: nothing more for now
  }
}

void HealthChecker::Finish(HealthStatus s) {
  status_ = std::move(s);
  ++completed_;
  pid_ = -1;
  if (out_fd_ >= 0) {
    close(out_fd_);
    out_fd_ = -1;
  }
}

void HealthChecker::Tick() {
  if (command_.empty()) return;
  const int64_t now = clock_.MonotonicMs();
  if (pid_ > 0) {
    Drain();
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      Drain();
      kill(-pid_, SIGKILL);  // whatever the check left behind in its group
      const std::string line = FirstLine(output_);
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        Finish({true, line});
      } else {
        std::string detail = line;
        if (detail.empty())
          detail = WIFEXITED(status)
                       ? fmt::format("health check exited with status {}", WEXITSTATUS(status))
                       : fmt::format("health check killed by signal {}", WTERMSIG(status));
        Finish({false, detail});
      }
      next_due_ms_ = now + interval_ms_;
    } else if (now >= deadline_ms_) {
      kill(-pid_, SIGKILL);
      while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      Drain();
      const std::string line = FirstLine(output_);
      Finish({false, fmt::format("health check timed out after {} ms{}{}", timeout_ms_,
                                 line.empty() ? "" : ": ", line)});
      next_due_ms_ = now + interval_ms_;
    }
    return;
  }
  if (first_ || now >= next_due_ms_) {
    first_ = false;
    StartCheck();
  }
}

}  // namespace hg::agent
