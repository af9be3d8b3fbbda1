#include "agent/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

extern char** environ;

namespace hg::agent {
namespace {

// Written by the child to the CLOEXEC pipe when it cannot exec: which step failed and errno.
struct ChildFailure {
  int step = 0;  // 1 = chdir, 2 = exec, 3 = redirect
  int err = 0;
};

std::string StepName(int step) {
  switch (step) {
    case 1:
      return "chdir";
    case 2:
      return "exec";
    default:
      return "redirect";
  }
}

void CloseIf(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

int OpenLog(const std::string& path, std::string& error) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = fmt::format("open {}: {}", path, std::strerror(errno));
    return -1;
  }
  // The umask may have narrowed the mode; the CLI (through the agent's log service) and
  // operators read these files.
  (void)fchmod(fd, 0644);
  return fd;
}

std::string JoinInts(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

}  // namespace

std::string LogPath(const std::string& log_dir, int64_t job, int64_t attempt,
                    const std::string& stream) {
  return fmt::format("{}/{}.{}.{}", log_dir, job, attempt, stream);
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

std::vector<std::string> JobEnvironment(const std::vector<std::string>& base,
                                        const StartSpec& spec) {
  std::map<std::string, std::string> env;  // sorted: the same order gives the same environment
  for (const std::string& kv : base) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  env["CUDA_VISIBLE_DEVICES"] = JoinInts(spec.gpus);
  env["HOURGLASS_JOB_ID"] = std::to_string(spec.job);
  env["HOURGLASS_ATTEMPT"] = std::to_string(spec.attempt);
  env["HOURGLASS_NODE_RANK"] = std::to_string(spec.rank);
  env["HOURGLASS_NUM_NODES"] = std::to_string(spec.num_nodes);
  env["HOURGLASS_MASTER_ADDR"] = spec.master_addr;
  env["HOURGLASS_MASTER_PORT"] = std::to_string(spec.master_port);
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::unique_ptr<JobProcess> JobProcess::Start(const StartSpec& spec, const std::string& log_dir,
                                              Clock& clock) {
  std::unique_ptr<JobProcess> p(new JobProcess(spec.job, spec.attempt, clock));
  if (spec.command.empty()) {
    p->start_error_ = "empty command";
    return p;
  }
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);  // an error shows up when opening below
  int out_fd = OpenLog(LogPath(log_dir, spec.job, spec.attempt, "stdout"), p->start_error_);
  int err_fd = out_fd < 0
                   ? -1
                   : OpenLog(LogPath(log_dir, spec.job, spec.attempt, "stderr"), p->start_error_);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int pipe_fds[2] = {-1, -1};
  if (p->start_error_.empty() && null_fd < 0)
    p->start_error_ = fmt::format("open /dev/null: {}", std::strerror(errno));
  if (p->start_error_.empty() && pipe2(pipe_fds, O_CLOEXEC) != 0)
    p->start_error_ = fmt::format("pipe: {}", std::strerror(errno));
  if (!p->start_error_.empty()) {
    CloseIf(out_fd);
    CloseIf(err_fd);
    CloseIf(null_fd);
    return p;
  }

  // Everything the child needs is built before fork: after fork in a threaded program only
  // async-signal-safe calls are allowed.
  std::vector<std::string> env_strings = JobEnvironment(CurrentEnvironment(), spec);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.command;
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();

  const pid_t pid = fork();
  if (pid == 0) {
    ChildFailure f;
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Ignored signals stay ignored across exec; the job must see the defaults.
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2})
      signal(sig, SIG_DFL);
    if (cwd != nullptr && chdir(cwd) != 0) {
      f = {1, errno};
    } else if (dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
      f = {3, errno};
    } else {
      // No inherited descriptor (the agent's sockets, other jobs' logs) survives exec.
      close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
      environ = envp.data();
      execvp(argv[0], argv.data());
      f = {2, errno};
    }
    ssize_t unused = write(pipe_fds[1], &f, sizeof f);
    (void)unused;
    _exit(127);
  }
  close(pipe_fds[1]);
  CloseIf(out_fd);
  CloseIf(err_fd);
  CloseIf(null_fd);
  if (pid < 0) {
    p->start_error_ = fmt::format("fork: {}", std::strerror(errno));
    close(pipe_fds[0]);
    return p;
  }
  // Also from the parent, so a Stop() right after Start() reaches the group even if the child
  // has not run yet (fails harmlessly once the child has exec'd).
  setpgid(pid, pid);
  p->pid_ = pid;
  ChildFailure f;
  ssize_t n = 0;
  do {
    n = read(pipe_fds[0], &f, sizeof f);
  } while (n < 0 && errno == EINTR);
  close(pipe_fds[0]);
  if (n == static_cast<ssize_t>(sizeof f)) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    p->ended_ = true;
    p->start_error_ = fmt::format("{} {}: {}", StepName(f.step),
                                  f.step == 1 ? spec.cwd : spec.command[0], std::strerror(f.err));
  }
  return p;
}

JobProcess::~JobProcess() = default;

void JobProcess::Stop(int64_t grace_ms) {
  if (ended_ || pid_ <= 0) return;
  const int64_t deadline = clock_.MonotonicMs() + std::max<int64_t>(0, grace_ms);
  if (!stop_requested_) {
    stop_requested_ = true;
    kill_at_ms_ = deadline;
    kill(-pid_, SIGTERM);
  } else if (deadline < kill_at_ms_) {
    kill_at_ms_ = deadline;
  }
}

void JobProcess::Kill() {
  if (ended_ || pid_ <= 0) return;
  kill(-pid_, SIGKILL);
}

namespace {

// Calls visit(state, pgrp, rest) for every process under proc_root whose stat could be read, with
// `rest` positioned after the process group field, until visit returns false. False when
// proc_root cannot be listed. A process that exits while being read is skipped.
template <typename Visit>
bool ScanProcStats(const std::string& proc_root, Visit visit) {
  std::error_code ec;
  std::filesystem::directory_iterator it(proc_root, ec);
  if (ec) return false;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const size_t close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(close_paren + 1));
    char state = 0;
    long long ppid = 0, pgrp = 0;
    if (!(rest >> state >> ppid >> pgrp)) continue;
    if (!visit(state, static_cast<pid_t>(pgrp), rest)) break;
  }
  return true;
}

}  // namespace

bool GroupHasLiveMembers(pid_t pgid) {
  if (kill(-pgid, 0) != 0) return false;
  bool live = false;
  const bool scanned = ScanProcStats("/proc", [&](char state, pid_t pgrp, std::istringstream&) {
    live = pgrp == pgid && state != 'Z' && state != 'X';
    return !live;
  });
  return !scanned || live;  // no /proc: trust kill()
}

std::map<pid_t, double> GroupCpuSeconds(const std::vector<pid_t>& pgids,
                                        const std::string& proc_root) {
  std::map<pid_t, double> out;
  if (pgids.empty()) return out;
  const std::set<pid_t> wanted(pgids.begin(), pgids.end());
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return out;
  std::map<pid_t, unsigned long long> sum;
  ScanProcStats(proc_root, [&](char, pid_t pgrp, std::istringstream& rest) {
    if (!wanted.count(pgrp)) return true;
    // After pgrp: session tty_nr tpgid flags minflt cminflt majflt cmajflt, then utime stime
    // cutime cstime.
    long long skip = 0;
    for (int i = 0; i < 8 && rest; ++i) rest >> skip;
    unsigned long long utime = 0, stime = 0;
    long long cutime = 0, cstime = 0;
    if (!(rest >> utime >> stime >> cutime >> cstime)) return true;
    sum[pgrp] +=
        utime + stime + static_cast<unsigned long long>(std::max<long long>(0, cutime + cstime));
    return true;
  });
  for (const auto& [g, t] : sum) out[g] = static_cast<double>(t) / static_cast<double>(ticks);
  return out;
}

std::optional<ExitReport> JobProcess::Poll() {
  if (reported_) return std::nullopt;
  ExitReport r;
  r.job = job_;
  r.attempt = attempt_;
  if (!start_error_.empty()) {
    reported_ = true;
    ended_ = true;
    r.how = "failed_to_start";
    r.detail = start_error_;
    r.at_s = clock_.NowMs() / 1000;
    return r;
  }
  if (!leader_reaped_) {
    int status = 0;
    const pid_t w = waitpid(pid_, &status, WNOHANG);
    if (w == pid_) {
      leader_reaped_ = true;
      leader_status_ = status;
    } else if (w < 0 && errno == ECHILD) {
      // Reaped elsewhere (nothing here waits on -1, so this should not happen): status lost.
      leader_reaped_ = true;
      status_lost_ = true;
    }
  }
  const int64_t now = clock_.MonotonicMs();
  const bool past_grace = stop_requested_ && now >= kill_at_ms_;
  if (!leader_reaped_) {
    if (past_grace && !killed_) {
      kill(-pid_, SIGKILL);
      killed_ = true;
    }
    return std::nullopt;
  }
  // The leader is gone. Once reaped, its id stays reserved for as long as any member of its
  // group lives, so signalling -pid_ reaches only what the job left behind.
  const bool leftovers = GroupHasLiveMembers(pid_);
  if (stop_requested_ && !killed_ && !past_grace && leftovers)
    return std::nullopt;  // stopping: the rest of the group still has its grace period
  if (leftovers) {
    kill(-pid_, SIGKILL);
    if (stop_requested_) killed_ = true;
  }
  ended_ = true;
  reported_ = true;
  if (status_lost_) {
    r.detail = "exit status lost";
  } else {
    if (WIFEXITED(leader_status_)) r.exit_code = WEXITSTATUS(leader_status_);
    if (WIFSIGNALED(leader_status_)) r.signal = WTERMSIG(leader_status_);
  }
  r.how = !stop_requested_ ? "exited" : killed_ ? "killed_after_grace" : "stopped";
  r.at_s = clock_.NowMs() / 1000;
  return r;
}

}  // namespace hg::agent
