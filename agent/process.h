// One job attempt as a process group on this node: started from a start order, signalled on a
// stop order, reaped without blocking. The agent's loop calls Poll() often; nothing here sleeps.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/clock.h"

namespace hg::agent {

// What a start order asks for (docs/api.md, "Orders").
struct StartSpec {
  int64_t job = 0;
  int64_t attempt = 0;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string cwd;  // empty: the agent's working directory
  std::vector<int> gpus;
  int64_t grace_s = 0;
  int64_t rank = 0;
  int64_t num_nodes = 1;
  std::string master_addr;
  int64_t master_port = 0;
};

// How an attempt ended, as the heartbeat's `exited` entries report it.
struct ExitReport {
  int64_t job = 0;
  int64_t attempt = 0;
  std::optional<int> exit_code;  // set when the process exited
  std::optional<int> signal;     // set when a signal ended it
  std::string how;               // exited | stopped | killed_after_grace | failed_to_start
  int64_t at_s = 0;              // seconds since the epoch
  std::string detail;            // why it failed to start; empty otherwise
};

// <log_dir>/<job>.<attempt>.<stream>
std::string LogPath(const std::string& log_dir, int64_t job, int64_t attempt,
                    const std::string& stream);

// The environment a job sees: `base` (the agent's, as "K=V" strings), then the order's env,
// then the variables Hourglass sets (they win over both).
std::vector<std::string> JobEnvironment(const std::vector<std::string>& base,
                                        const StartSpec& spec);

// The agent's own environment as "K=V" strings.
std::vector<std::string> CurrentEnvironment();

// True while a process other than a zombie is in group `pgid`. kill(-pgid, 0) alone also counts
// zombies, and orphans of a job become zombies of PID 1, which in a container may reap late (the
// sandbox's PID 1 here took over 2 s at times).
bool GroupHasLiveMembers(pid_t pgid);

// The cumulative CPU time, in seconds, of the processes of each process group in `pgids`, read
// from <proc_root>/<pid>/stat: utime + stime of every member, plus cutime + cstime (what its
// children that ended and were waited for used, e.g. the commands a shell ran). One scan of
// /proc for all groups. A process that vanishes or cannot be read while scanning is skipped; a
// group with no member read is absent from the result. The heartbeat's `cpu_s` (docs/api.md).
std::map<pid_t, double> GroupCpuSeconds(const std::vector<pid_t>& pgids,
                                        const std::string& proc_root = "/proc");

class JobProcess {
 public:
  // Forks and execs the command in a new process group with stdout/stderr appended to the log
  // files under `log_dir` (created 0644). Never fails as a call: a command that cannot be
  // started (bad cwd, exec failure, log file not writable) gives a process whose first Poll()
  // reports how=failed_to_start with the cause in `detail`.
  static std::unique_ptr<JobProcess> Start(const StartSpec& spec, const std::string& log_dir,
                                           Clock& clock);
  ~JobProcess();
  JobProcess(const JobProcess&) = delete;
  JobProcess& operator=(const JobProcess&) = delete;

  // SIGTERM to the whole group now; SIGKILL to it once `grace_ms` has passed (checked by
  // Poll). A second Stop may shorten the deadline, never extend it. No-op once ended.
  void Stop(int64_t grace_ms);

  // Reaps the process when it ends and escalates to SIGKILL past the grace deadline. An attempt
  // ends with its group leader; what it leaves in its group is SIGKILLed then (no orphan keeps
  // the GPUs), except while stopping, where the rest of the group keeps its grace period.
  // Returns the report exactly once, when the attempt has ended.
  std::optional<ExitReport> Poll();

  // SIGKILL to the group at once (agent shutdown with --kill-jobs-on-exit).
  void Kill();

  int64_t job() const { return job_; }
  int64_t attempt() const { return attempt_; }
  pid_t pid() const { return pid_; }
  bool ended() const { return ended_; }
  bool stopping() const { return stop_requested_; }
  const std::string& start_error() const { return start_error_; }

 private:
  JobProcess(int64_t job, int64_t attempt, Clock& clock)
      : job_(job), attempt_(attempt), clock_(clock) {}

  int64_t job_;
  int64_t attempt_;
  Clock& clock_;
  pid_t pid_ = -1;  // also the process group id
  bool ended_ = false;
  bool reported_ = false;
  std::string start_error_;  // non-empty: failed_to_start
  bool stop_requested_ = false;
  bool killed_ = false;  // we sent SIGKILL after the grace period
  int64_t kill_at_ms_ = 0;
  bool leader_reaped_ = false;  // the group leader has exited; members may linger
  int leader_status_ = 0;
  bool status_lost_ = false;
};

}  // namespace hg::agent
