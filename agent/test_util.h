// Helpers shared by the agent's tests: temp dirs, files, polling with a deadline.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "agent/process.h"

namespace hg::agent::testing {

// A fresh directory under /tmp, removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/hg_agent_test_XXXXXX";
    const char* d = mkdtemp(tmpl);
    path_ = d != nullptr ? d : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool Exists(const std::string& path) { return std::filesystem::exists(path); }

inline int64_t MonoMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Calls `cond` every few milliseconds until it holds or `timeout_ms` passes.
inline bool WaitFor(const std::function<bool()>& cond, int64_t timeout_ms) {
  const int64_t end = MonoMs() + timeout_ms;
  while (MonoMs() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

// Whether anything of the group still runs. Zombies do not count: orphans of a job are reaped by
// PID 1, which in a container may take seconds (kill(-pgid, 0) alone made a test flaky here).
inline bool GroupAlive(pid_t pgid) { return GroupHasLiveMembers(pgid); }

}  // namespace hg::agent::testing
