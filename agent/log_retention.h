// Job logs are files under the agent's data folder (`<job>.<attempt>.<stdout|stderr>`, see
// LogPath), kept after the job ends so that `hourglass logs` can read them. Without an end they
// fill the node's disk; the agent removes those of ended runs once they are older than its
// retention (hourglass agent --log-retention-days).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace hg::agent {

struct PruneResult {
  int64_t files = 0;  // removed
  int64_t bytes = 0;  // their size
};

// Removes the log files in `log_dir` last written before `now_ms - keep_ms` (wall time, as file
// times are), except those of a run for which `running(job, attempt)` holds. Files that are not
// job logs are left alone.
PruneResult PruneLogs(const std::string& log_dir, int64_t now_ms, int64_t keep_ms,
                      const std::function<bool(int64_t job, int64_t attempt)>& running);

}  // namespace hg::agent
