#include "agent/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>

#include "agent/test_util.h"

namespace hg::agent {
namespace {

using testing::Exists;
using testing::MonoMs;
using testing::ReadFile;
using testing::TempDir;
using testing::WaitFor;

StartSpec Bash(int64_t job, const std::string& script) {
  StartSpec s;
  s.job = job;
  s.attempt = 1;
  s.command = {"bash", "-c", script};
  return s;
}

// Polls until the attempt ends (or the timeout passes: then nullopt).
std::optional<ExitReport> WaitEnd(JobProcess& p, int64_t timeout_ms) {
  std::optional<ExitReport> r;
  WaitFor([&] { return (r = p.Poll()).has_value(); }, timeout_ms);
  return r;
}

TEST(JobProcess, ChildSeesAgentEnvOrderEnvGpusAndRankVariables) {
  TempDir d;
  setenv("HG_AGENT_TEST_INHERITED", "from-agent", 1);
  SystemClock clock;
  StartSpec s = Bash(17, "env > " + d / "env.txt" + "; pwd > " + d / "pwd.txt");
  s.attempt = 2;
  s.env = {{"MY_VAR", "hello world"}, {"CUDA_VISIBLE_DEVICES", "ignored"}};
  s.cwd = d.path();
  s.gpus = {1, 3};
  s.rank = 1;
  s.num_nodes = 2;
  s.master_addr = "n7";
  s.master_port = 29500;
  auto p = JobProcess::Start(s, d / "logs", clock);
  auto r = WaitEnd(*p, 5000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->how, "exited");
  EXPECT_EQ(r->exit_code, 0);
  const std::string env = ReadFile(d / "env.txt");
  for (const char* line :
       {"HG_AGENT_TEST_INHERITED=from-agent\n", "MY_VAR=hello world\n",
        "CUDA_VISIBLE_DEVICES=1,3\n", "HOURGLASS_JOB_ID=17\n", "HOURGLASS_ATTEMPT=2\n",
        "HOURGLASS_NODE_RANK=1\n", "HOURGLASS_NUM_NODES=2\n", "HOURGLASS_MASTER_ADDR=n7\n",
        "HOURGLASS_MASTER_PORT=29500\n"})
    EXPECT_NE(env.find(line), std::string::npos) << line << " missing from\n" << env;
  EXPECT_EQ(env.find("CUDA_VISIBLE_DEVICES=ignored"), std::string::npos);
  EXPECT_EQ(ReadFile(d / "pwd.txt"), d.path() + "\n");
}

TEST(JobProcess, NoGpusMeansEmptyCudaVisibleDevices) {
  StartSpec s;
  s.gpus = {};
  const auto env = JobEnvironment({"PATH=/bin", "CUDA_VISIBLE_DEVICES=0,1"}, s);
  EXPECT_NE(std::find(env.begin(), env.end(), "CUDA_VISIBLE_DEVICES="), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "PATH=/bin"), env.end());
}

TEST(JobProcess, LogsAreCapturedAppendedAndReadable) {
  TempDir d;
  SystemClock clock;
  const std::string logs = d / "logs";
  for (int i = 0; i < 2; ++i) {
    auto p =
        JobProcess::Start(Bash(5, "echo out" + std::to_string(i) + "; echo err >&2"), logs, clock);
    ASSERT_TRUE(WaitEnd(*p, 5000));
  }
  EXPECT_EQ(ReadFile(LogPath(logs, 5, 1, "stdout")), "out0\nout1\n");
  EXPECT_EQ(ReadFile(LogPath(logs, 5, 1, "stderr")), "err\nerr\n");
  struct stat st;
  ASSERT_EQ(stat(LogPath(logs, 5, 1, "stdout").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(JobProcess, ExitCodeAndSignalAreReported) {
  TempDir d;
  SystemClock clock;
  auto a = JobProcess::Start(Bash(1, "exit 7"), d.path(), clock);
  auto b = JobProcess::Start(Bash(2, "kill -USR1 $$; sleep 5"), d.path(), clock);
  auto ra = WaitEnd(*a, 5000);
  auto rb = WaitEnd(*b, 5000);
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(ra->how, "exited");
  EXPECT_EQ(ra->exit_code, 7);
  EXPECT_FALSE(ra->signal);
  EXPECT_EQ(rb->how, "exited");
  EXPECT_FALSE(rb->exit_code);
  EXPECT_EQ(rb->signal, SIGUSR1);
  EXPECT_GT(ra->at_s, 1'600'000'000);
  EXPECT_FALSE(a->Poll()) << "reported exactly once";
}

TEST(JobProcess, ExecFailureAndBadCwdAreFailedToStart) {
  TempDir d;
  SystemClock clock;
  StartSpec s;
  s.job = 3;
  s.attempt = 1;
  s.command = {"/nonexistent/hourglass-no-such-binary", "x"};
  auto p = JobProcess::Start(s, d.path(), clock);
  auto r = p->Poll();  // known at once: the exec error came back through the pipe
  ASSERT_TRUE(r);
  EXPECT_EQ(r->how, "failed_to_start");
  EXPECT_FALSE(r->exit_code);
  EXPECT_NE(r->detail.find("No such file"), std::string::npos) << r->detail;

  StartSpec c = Bash(4, "true");
  c.cwd = d / "missing-dir";
  auto q = JobProcess::Start(c, d.path(), clock);
  auto rq = q->Poll();
  ASSERT_TRUE(rq);
  EXPECT_EQ(rq->how, "failed_to_start");
  EXPECT_NE(rq->detail.find("chdir"), std::string::npos) << rq->detail;

  StartSpec e;
  e.job = 5;
  e.attempt = 1;
  auto empty = JobProcess::Start(e, d.path(), clock);
  auto re = empty->Poll();
  ASSERT_TRUE(re);
  EXPECT_EQ(re->how, "failed_to_start");
}

// Whether the pid written in `pid_file` runs `sleep` (has exec'ed it).
bool RunsSleep(const std::string& pid_file) {
  const std::string pid = ReadFile(pid_file);
  if (pid.empty() || pid.back() != '\n') return false;
  return ReadFile("/proc/" + pid.substr(0, pid.size() - 1) + "/comm") == "sleep\n";
}

TEST(JobProcess, SigtermReachesTheWholeGroupAndEndsAsStopped) {
  TempDir d;
  SystemClock clock;
  // The job and a grandchild each trap TERM and leave a marker; both wait on sleeps. The test
  // signals only once both sleeps have exec'ed: bash drops a signal that reaches a child between
  // its fork and its exec, and that sleep would then outlive the stop (a flaky failure here).
  const std::string script = "trap 'echo parent > " + d / "parent.term" + "; exit 0' TERM\n" +
                             "bash -c 'trap \"echo child > " + d / "child.term" +
                             "; exit 0\" TERM; sleep 30 & echo $! > " + d / "child.sleep" +
                             "; wait' &\n" + "sleep 30 & echo $! > " + d / "parent.sleep" +
                             "\nwait\n";
  auto p = JobProcess::Start(Bash(9, script), d.path(), clock);
  ASSERT_TRUE(
      WaitFor([&] { return RunsSleep(d / "parent.sleep") && RunsSleep(d / "child.sleep"); }, 5000));
  EXPECT_FALSE(p->Poll());
  p->Stop(5000);
  auto r = WaitEnd(*p, 4000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->how, "stopped");
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return Exists(d / "child.term"); }, 2000));
  EXPECT_TRUE(Exists(d / "parent.term"));
  // Nothing of the group is left (the sleeps were signalled too, or killed at reaping).
  EXPECT_TRUE(WaitFor([&] { return !testing::GroupAlive(p->pid()); }, 2000));
}

TEST(JobProcess, GraceIsHonouredThenSigkill) {
  TempDir d;
  SystemClock clock;
  // Ignores TERM (and so does its sleep, which inherits the ignored disposition).
  auto p = JobProcess::Start(Bash(10, "trap '' TERM; touch " + d / "ready" + "; sleep 30"),
                             d.path(), clock);
  ASSERT_TRUE(WaitFor([&] { return Exists(d / "ready"); }, 5000));
  const int64_t grace_ms = 800;
  const int64_t t0 = MonoMs();
  p->Stop(grace_ms);
  auto r = WaitEnd(*p, 5000);
  const int64_t took = MonoMs() - t0;
  ASSERT_TRUE(r);
  EXPECT_EQ(r->how, "killed_after_grace");
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_GE(took, grace_ms);
  EXPECT_LT(took, grace_ms + 700);  // SIGKILL follows the deadline within a few polls
}

TEST(JobProcess, DeadlineFollowsTheInjectedClock) {
  TempDir d;
  ManualClock clock;
  auto p = JobProcess::Start(Bash(11, "trap '' TERM; touch " + d / "ready" + "; sleep 30"),
                             d.path(), clock);
  ASSERT_TRUE(WaitFor([&] { return Exists(d / "ready"); }, 5000));
  p->Stop(120'000);
  // Real time passes, the clock does not: no SIGKILL yet.
  EXPECT_FALSE(WaitEnd(*p, 300));
  clock.Advance(119'999);
  EXPECT_FALSE(WaitEnd(*p, 100));
  clock.Advance(1);
  auto r = WaitEnd(*p, 3000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->how, "killed_after_grace");
  EXPECT_EQ(r->at_s, clock.NowMs() / 1000);
}

TEST(JobProcess, StopAfterEndIsANoOp) {
  TempDir d;
  SystemClock clock;
  auto p = JobProcess::Start(Bash(12, "exit 0"), d.path(), clock);
  auto r = WaitEnd(*p, 5000);
  ASSERT_TRUE(r);
  p->Stop(0);
  EXPECT_FALSE(p->Poll());
  EXPECT_EQ(r->how, "exited");
}

TEST(GroupCpuSeconds, BusyGroupShowsCpuTimeAndSleepingGroupAlmostNone) {
  TempDir d;
  SystemClock clock;
  // The busy loop runs in a child of the job's shell, so its time counts while it runs.
  auto busy = JobProcess::Start(
      Bash(30, "bash -c 'end=$((SECONDS+30)); while [ $SECONDS -lt $end ]; do :; done' & wait"),
      d.path(), clock);
  auto idle = JobProcess::Start(Bash(31, "sleep 30"), d.path(), clock);
  // Polled, not read once after a fixed sleep: on a loaded machine the busy loop may get well
  // under a core, and it only has to show CPU time that the sleeping group does not.
  std::map<pid_t, double> cpu;
  const bool busy_counted = WaitFor(
      [&] {
        cpu = GroupCpuSeconds({busy->pid(), idle->pid(), 999999999});
        return cpu.count(busy->pid()) && cpu.at(busy->pid()) > 0.2;
      },
      10000);
  ASSERT_TRUE(cpu.count(busy->pid()));
  ASSERT_TRUE(cpu.count(idle->pid()));
  EXPECT_TRUE(busy_counted) << "busy group's CPU seconds: " << cpu.at(busy->pid());
  EXPECT_LT(cpu.at(idle->pid()), 0.1);
  EXPECT_FALSE(cpu.count(999999999)) << "no such group: absent";
  busy->Kill();
  idle->Kill();
  EXPECT_TRUE(WaitEnd(*busy, 5000));
  EXPECT_TRUE(WaitEnd(*idle, 5000));
  EXPECT_TRUE(GroupCpuSeconds({}).empty());
}

TEST(GroupCpuSeconds, CountsTheChildrenAShellWaitedFor) {
  TempDir d;
  SystemClock clock;
  // A shell that ran a busy command which has ended: its time is the shell's cutime. The command
  // ends at a second of CPU time (`ulimit -t`: SIGXCPU), not of wall time, so a loaded machine
  // only makes it take longer (a 0.5 s `timeout` got 0.15 s of CPU beside two other test runs).
  auto p = JobProcess::Start(
      Bash(32, "bash -c 'ulimit -t 1; while :; do :; done'; touch " + d / "done" + "; sleep 30"),
      d.path(), clock);
  ASSERT_TRUE(WaitFor([&] { return Exists(d / "done"); }, 30000));
  const auto cpu = GroupCpuSeconds({p->pid()});
  ASSERT_TRUE(cpu.count(p->pid()));
  EXPECT_GT(cpu.at(p->pid()), 0.5);
  p->Kill();
  EXPECT_TRUE(WaitEnd(*p, 5000));
}

TEST(GroupCpuSeconds, UnreadableProcIsNoResult) {
  TempDir d;
  EXPECT_TRUE(GroupCpuSeconds({1}, d / "no-proc").empty());
}

}  // namespace
}  // namespace hg::agent
