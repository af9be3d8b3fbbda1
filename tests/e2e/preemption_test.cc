// Issue 3, done-when items 1-3: preemption of unfunded work with its grace period, the
// min_runtime contract of funded work, and the requeue of resumable jobs, on real processes.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "tests/e2e/cluster.h"

namespace hg::e2e {
namespace {

using namespace std::chrono_literals;

// A lab with two projects under one program; alice charges `vision`, bob charges `speech`.
struct Lab {
  Cluster c;
  std::string alice, bob;
  explicit Lab(std::vector<std::string> server_args = {}) : c(200, 3, std::move(server_args)) {
    alice = c.AddPrincipal("alice", "user");
    bob = c.AddPrincipal("bob", "user");
    c.AddBudget("lab", "", 1);
    c.AddBudget("vision", "lab", 1, Json{{"members", {"alice"}}});
    c.AddBudget("speech", "lab", 1, Json{{"members", {"bob"}}});
  }
  Json JobOf(const std::vector<std::string>& cmd, int gpus, const Json& extra = Json::object()) {
    Json j = extra;
    j["gpus"] = gpus;
    j["command"] = cmd;
    j["cwd"] = c.dir();
    return j;
  }
};

double Seconds(const std::string& text) { return std::stod(text); }

TEST(E2ePreemption, FundedWorkPreemptsUnfundedWithGraceAndReason) {
  Lab lab;
  Cluster& c = lab.c;
  c.AddAgent(Node("n1", 2));
  // The victim catches SIGTERM, cleans up for one second (inside its 5 s grace) and exits 0.
  const auto victim_cmd = c.Script("victim", R"(
trap 'date +%s.%N > victim.term; sleep 1; echo cleaned > victim.clean; exit 0' TERM
echo up > victim.up
while true; do sleep 0.1; done
)");
  const int64_t victim =
      c.Submit(lab.JobOf(victim_cmd, 2, {{"name", "sweep"}, {"grace_s", 5}}), lab.alice);
  ASSERT_TRUE(c.WaitState(victim, "running")) << c.Job(victim).dump();
  ASSERT_TRUE(WaitFor([&] { return FileExists(c.dir() + "/victim.up"); }));

  const auto funded_cmd = c.Script("funded", "date +%s.%N > funded.start\nsleep 1\n");
  const int64_t funded = c.Submit(lab.JobOf(funded_cmd, 2, {{"budget", "vision"}}), lab.alice);
  ASSERT_TRUE(c.WaitState(funded, "succeeded", 30s)) << c.Job(funded).dump();

  const Json v = c.Job(victim);
  EXPECT_EQ(v["state"], "preempted") << v.dump();  // not resumable: stopped for good
  // SIGTERM reached the job, and it was allowed to finish its cleanup: the grace was honoured.
  ASSERT_TRUE(FileExists(c.dir() + "/victim.term"));
  EXPECT_TRUE(FileExists(c.dir() + "/victim.clean")) << "victim killed inside its grace period";
  EXPECT_EQ(v["exit_code"], 0) << v.dump();
  EXPECT_TRUE(v["exit_signal"].is_null()) << v.dump();
  // The reason says who took the GPUs.
  const std::string reason = v["reason"].get<std::string>();
  EXPECT_NE(reason.find("funded job " + std::to_string(funded)), std::string::npos) << reason;
  // The funded job started only after the victim had left its GPUs.
  EXPECT_GE(Seconds(ReadFile(c.dir() + "/funded.start")),
            Seconds(ReadFile(c.dir() + "/victim.term")) + 0.9);
  // The CLI shows the same reason to a person.
  const auto [rc, out] = c.Cli({"show", std::to_string(victim)}, lab.alice);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("funded job " + std::to_string(funded)), std::string::npos) << out;
}

TEST(E2ePreemption, VictimIgnoringSigtermIsKilledWhenItsGraceEnds) {
  Lab lab;
  Cluster& c = lab.c;
  c.AddAgent(Node("n1", 1));
  const auto stubborn = c.Script("stubborn", R"(
trap 'date +%s.%N >> stubborn.term' TERM
echo up > stubborn.up
while true; do sleep 0.1; done
)");
  const int64_t victim = c.Submit(lab.JobOf(stubborn, 1, {{"grace_s", 2}}), lab.bob);
  ASSERT_TRUE(c.WaitState(victim, "running"));
  ASSERT_TRUE(WaitFor([&] { return FileExists(c.dir() + "/stubborn.up"); }));
  const auto quick = c.Script("quick", "date +%s.%N > quick.start\n");
  const int64_t funded = c.Submit(lab.JobOf(quick, 1, {{"budget", "speech"}}), lab.bob);
  ASSERT_TRUE(c.WaitState(funded, "succeeded", 30s)) << c.Job(funded).dump();
  const Json v = c.Job(victim);
  EXPECT_EQ(v["exit_signal"], 9) << v.dump();
  const double term = Seconds(ReadFile(c.dir() + "/stubborn.term"));
  const double start = Seconds(ReadFile(c.dir() + "/quick.start"));
  EXPECT_GE(start - term, 1.9) << "SIGKILL came before the 2 s grace period ended";
  EXPECT_LT(start - term, 6.0) << "the grace period was not enforced";
}

TEST(E2ePreemption, ProtectedJobRunsItsMinRuntimeThenYieldsToABudgetBelowItsShare) {
  Lab lab;
  Cluster& c = lab.c;
  c.AddAgent(Node("n1", 2));
  // vision takes the whole cluster with two 1-GPU jobs protected for 6 s. (Whole jobs move, and
  // the no-ping-pong rule forbids a move that would leave vision below speech afterwards, so the
  // cluster is split in two jobs: speech may take one of them, not both.)
  const auto holder = c.Script("holder", R"(
trap 'date +%s.%N > holder.$HOURGLASS_JOB_ID.term; exit 0' TERM
date +%s.%N > holder.$HOURGLASS_JOB_ID.start
while true; do sleep 0.1; done
)");
  const Json protected_job{{"budget", "vision"}, {"min_runtime_s", 6}, {"grace_s", 2}};
  const int64_t h1 = c.Submit(lab.JobOf(holder, 1, protected_job), lab.alice);
  const int64_t h2 = c.Submit(lab.JobOf(holder, 1, protected_job), lab.alice);
  ASSERT_TRUE(c.WaitState(h1, "running"));
  ASSERT_TRUE(c.WaitState(h2, "running"));
  const auto file = [&](int64_t id, const char* what) {
    return c.dir() + "/holder." + std::to_string(id) + "." + what;
  };
  ASSERT_TRUE(
      WaitFor([&] { return FileExists(file(h1, "start")) && FileExists(file(h2, "start")); }));
  // speech, which has had nothing, asks for a GPU right away.
  const auto asker = c.Script("asker", "date +%s.%N > asker.start\nsleep 30\n");
  const int64_t waiting = c.Submit(lab.JobOf(asker, 1, {{"budget", "speech"}}), lab.bob);
  // While protected, both holders keep running and the other job waits, with a reason.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(c.Job(h1)["state"], "running");
  EXPECT_EQ(c.Job(h2)["state"], "running");
  const Json w = c.Job(waiting);
  EXPECT_EQ(w["state"], "pending");
  EXPECT_FALSE(w["reason"].get<std::string>().empty()) << w.dump();
  // After their protection, one of them is preempted for the budget further below its share.
  ASSERT_TRUE(c.WaitState(waiting, "running", 20s)) << c.Job(h1).dump() << c.Job(h2).dump();
  const Json j1 = c.Job(h1), j2 = c.Job(h2);
  ASSERT_NE(j1["state"] == "preempted", j2["state"] == "preempted") << j1.dump() << j2.dump();
  const int64_t victim = j1["state"] == "preempted" ? h1 : h2;
  const int64_t kept = victim == h1 ? h2 : h1;
  EXPECT_EQ(c.Job(kept)["state"], "running");
  const double term = Seconds(ReadFile(file(victim, "term")));
  EXPECT_GE(term - Seconds(ReadFile(file(victim, "start"))), 6.0) << "preempted inside min_runtime";
  const std::string reason = c.Job(victim)["reason"].get<std::string>();
  EXPECT_NE(reason.find("speech"), std::string::npos) << reason;
  EXPECT_NE(reason.find("below its share"), std::string::npos) << reason;
  for (int64_t id : {waiting, kept})
    c.Admin("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", Json::object());
}

// `hourglass server --preempt-below F`: on six GPUs vision holds five and speech one; speech asks
// for two more, so it is owed three and has a third of that. Past vision's protection, the
// default server preempts a vision job for speech; one started with --preempt-below 0.25 (speech
// must have had less than a quarter) lets speech wait instead.
bool VisionPreemptedForSpeech(const std::vector<std::string>& server_args,
                              std::chrono::milliseconds watch) {
  Lab lab(server_args);
  Cluster& c = lab.c;
  c.AddAgent(Node("n1", 6));
  const auto holder = c.Script("holder", "trap 'exit 0' TERM\nwhile true; do sleep 0.1; done\n");
  std::vector<int64_t> vision;
  for (int i = 0; i < 5; ++i)
    vision.push_back(
        c.Submit(lab.JobOf(holder, 1, {{"budget", "vision"}, {"min_runtime_s", 1}, {"grace_s", 1}}),
                 lab.alice));
  const int64_t speech = c.Submit(lab.JobOf(holder, 1, {{"budget", "speech"}}), lab.bob);
  for (int64_t id : vision) EXPECT_TRUE(c.WaitState(id, "running"));
  EXPECT_TRUE(c.WaitState(speech, "running"));
  std::vector<int64_t> askers;
  for (int i = 0; i < 2; ++i)
    askers.push_back(c.Submit(lab.JobOf(holder, 1, {{"budget", "speech"}}), lab.bob));
  const bool preempted = WaitFor(
      [&] {
        for (int64_t id : vision)
          if (c.Job(id)["state"] != "running") return true;
        return false;
      },
      watch);
  if (!preempted) {
    for (int64_t id : askers) EXPECT_EQ(c.Job(id)["state"], "pending");
  }
  std::vector<int64_t> all = vision;
  all.insert(all.end(), askers.begin(), askers.end());
  all.push_back(speech);
  for (int64_t id : all)
    c.Admin("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", Json::object());
  return preempted;
}

TEST(E2ePreemption, ServerWithPreemptBelowLetsABudgetNotFarEnoughBelowItsShareWait) {
  EXPECT_TRUE(VisionPreemptedForSpeech({}, 15s));
  // Protection ends after 1 s and the server plans every 200 ms: 6 s is many cycles.
  EXPECT_FALSE(VisionPreemptedForSpeech({"--preempt-below", "0.25"}, 6s));
}

TEST(E2ePreemption, ResumableJobIsRequeuedAndRestartsAsAttemptTwo) {
  Lab lab;
  Cluster& c = lab.c;
  c.AddAgent(Node("n1", 2));
  const auto resumable = c.Script("resumable", R"(
echo "$HOURGLASS_ATTEMPT" >> attempts
if [ "$HOURGLASS_ATTEMPT" = 1 ]; then
  trap 'exit 0' TERM
  while true; do sleep 0.1; done
fi
)");
  const int64_t job =
      c.Submit(lab.JobOf(resumable, 2, {{"resumable", true}, {"grace_s", 2}}), lab.alice);
  ASSERT_TRUE(c.WaitState(job, "running"));
  ASSERT_TRUE(WaitFor([&] { return ReadFile(c.dir() + "/attempts") == "1\n"; }));
  const auto brief = c.Script("brief", "sleep 1\n");
  const int64_t funded = c.Submit(lab.JobOf(brief, 2, {{"budget", "vision"}}), lab.alice);
  ASSERT_TRUE(c.WaitState(funded, "succeeded", 30s));
  ASSERT_TRUE(c.WaitState(job, "succeeded", 30s)) << c.Job(job).dump();
  EXPECT_EQ(ReadFile(c.dir() + "/attempts"), "1\n2\n");
  EXPECT_EQ(c.Job(job)["attempts"], 2);
}

}  // namespace
}  // namespace hg::e2e
