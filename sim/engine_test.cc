// The engine on hand-made scenarios: what a user would see happen to their jobs.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "core/policy.h"
#include "sim/lab_month.h"
#include "sim/report.h"
#include "sim/test_job.h"

namespace hg::sim {
namespace {

SimJob Job(int64_t id, int64_t submit, int32_t gpus, std::string budget, int64_t duration) {
  return TestJob(id, submit, gpus, std::move(budget), duration);
}

// Funded work preempts unfunded work: the victim gets its grace period, the funded job starts
// when it is gone, and every decision carries a reason in words.
TEST(Engine, FundedWorkPreemptsUnfundedWithReasonAndGrace) {
  const Scenario sc = UnfundedThenFundedOnOneNode("tiny");
  std::vector<DecisionLogEntry> log;
  SimOptions opt;
  opt.decision_log = [&](const DecisionLogEntry& e) { log.push_back(e); };
  auto policy = MakePolicy("hourglass", opt.policy);
  ASSERT_TRUE(policy.has_value());
  auto r = Simulate(sc, **policy, opt);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();

  ASSERT_EQ(r->preemptions.size(), 1u);
  EXPECT_EQ(r->preemptions[0].job, JobId(1));
  EXPECT_EQ(r->preemptions[0].cause, StopCause::kUnfunded);
  EXPECT_EQ(r->preemptions[0].run, Seconds(600));  // started at 0, stopped at 600 s
  EXPECT_FALSE(r->preemptions[0].contract_violation);
  // Submitted at 600 s, the cycle at 600 s preempts, the victim leaves after 60 s of grace.
  const JobRecord& funded = r->jobs[1];
  ASSERT_EQ(funded.waits.size(), 1u);
  EXPECT_EQ(funded.waits[0], Seconds(60));  // the grace; the victim leaves on a tick (660 s)
  EXPECT_EQ(funded.final_state, JobState::kSucceeded);
  // The unfunded job is not resumable: it ends preempted.
  EXPECT_EQ(r->jobs[0].final_state, JobState::kPreempted);

  bool saw_stop = false, saw_start = false;
  for (const auto& e : log) {
    if (std::string(e.action) == "stop" && e.job == JobId(1)) {
      saw_stop = true;
      EXPECT_NE(e.reason.find("funded job 2"), std::string::npos) << e.reason;
    }
    if (std::string(e.action) == "start" && e.job == JobId(2)) {
      saw_start = true;
      EXPECT_EQ(e.node, "n0");
      EXPECT_EQ(e.at, Seconds(660));
    }
  }
  EXPECT_TRUE(saw_stop);
  EXPECT_TRUE(saw_start);
}

// A fair-share stop records the leaves on both sides: b's 4-GPU job, arriving after a has held
// the node with two for a day, stops one of a's. a's requeued job does not take the GPUs back
// (the no-ping-pong rule: a with the whole node again would be further above its share than b
// without its half), so nothing is taken back within the hour.
TEST(Engine, AFairShareStopRecordsTheVictimsAndThePreemptorsLeaves) {
  Scenario sc = OneNodeTwoBudgets("two", Days(2));
  sc.jobs = {Job(1, 0, 4, "a", 360000), Job(2, 0, 4, "a", 360000), Job(3, 86400, 4, "b", 7200)};
  for (SimJob& j : sc.jobs) j.spec.resumable = true;
  const SimResult r = SimulateHourglass(sc, SimOptions{});
  auto tree = BudgetTree::Build(sc.budgets);
  ASSERT_TRUE(tree.has_value());
  ASSERT_EQ(r.preemptions.size(), 1u);
  const PreemptionRecord& p = r.preemptions[0];
  EXPECT_TRUE(p.job == JobId(1) || p.job == JobId(2)) << p.job;
  EXPECT_EQ(p.cause, StopCause::kFairShare);
  EXPECT_EQ(p.budget, tree->Find("a")->value());
  EXPECT_EQ(p.for_budget, tree->Find("b")->value());
  EXPECT_EQ(Compute(r).taken_back_within_hour, 0);
}

// Over lab-month's first four days, a few fair-share stops answer, within the hour, a stop the
// other way between the same two leaves; with the take-back cool-down none does.
TEST(Engine, WithTheCoolDownNoFairShareStopTakesBackGpus) {
  Scenario sc = MakeLabMonth(1);
  sc.end = Days(4);
  auto fair_share_taken_back = [&](Seconds cooldown) {
    SimOptions opt;
    opt.policy = DeployedConfig();
    opt.policy.take_back_cooldown = cooldown;
    const SimResult r = SimulateHourglass(sc, opt);
    std::map<std::pair<int32_t, int32_t>, Seconds> last;  // (victim's leaf, preemptor's) -> at
    int n = 0;
    for (const PreemptionRecord& p : r.preemptions) {
      if (p.budget < 0 || p.for_budget < 0 || p.budget == p.for_budget) continue;
      const auto back = last.find({p.for_budget, p.budget});
      n += back != last.end() && p.at - back->second < Hours(1) && p.cause == StopCause::kFairShare;
      last[{p.budget, p.for_budget}] = p.at;
    }
    return n;
  };
  EXPECT_GT(fair_share_taken_back(Seconds(0)), 0);
  EXPECT_EQ(fair_share_taken_back(Hours(1)), 0);
}

// On a small cluster the deployed debug headroom is one GPU, kept free while a debug job waits.
// With that GPU the only free one, b's batch job (first in fair-share order: a holds 15 GPUs)
// is held back by the headroom alone; a's debug job takes the GPU at once, and the batch job
// starts when the debug job ends. Before HeldByHeadroomOnly the batch job reserved the GPU, due
// at once, and both waited 9 hours beside it, until a's protected jobs ended.
TEST(Engine, ADebugJobTakesTheGpuTheHeadroomKeepsForItOnASmallCluster) {
  Scenario sc = OneNodeTwoBudgets("small", Hours(12));
  sc.nodes = {NodeSpec{"n0", 8, "b0", 0}, NodeSpec{"n1", 8, "b0", 0}};
  sc.jobs = {Job(1, 0, 8, "a", 10 * 3600), Job(2, 0, 7, "a", 10 * 3600), Job(3, 3600, 1, "b", 3600),
             Job(4, 3600, 1, "a", 300)};
  for (SimJob& j : {std::ref(sc.jobs[0]), std::ref(sc.jobs[1])}) j.spec.min_runtime = Hours(8);
  sc.jobs[0].spec.gpus_per_node = Gpus(8);
  sc.jobs[3].spec.job_class = "debug";
  sc.jobs[3].spec.min_runtime = Seconds(300);
  SimOptions opt;
  opt.policy = DeployedConfig();
  const SimResult r = SimulateHourglass(sc, opt);
  ASSERT_EQ(r.jobs.size(), 4u);
  ASSERT_EQ(r.jobs[3].waits.size(), 1u);
  EXPECT_EQ(r.jobs[3].waits[0], Seconds(0));  // the debug job
  ASSERT_EQ(r.jobs[2].waits.size(), 1u);
  EXPECT_EQ(r.jobs[2].waits[0], Seconds(300));  // the batch job, once the debug job has ended
  EXPECT_TRUE(r.preemptions.empty());
}

// The explained log writes a waiting job's reason when it changes, not each time the count of free
// GPUs in it moves: the unfunded job waits for 4 GPUs with 1 free, then 2 once the 1-GPU job
// ends, and starts when the 6-GPU job ends.
TEST(Engine, ExplainDoesNotLogAMoveOfTheFreeCountAsANewReason) {
  Scenario sc = OneNodeOneBudget("tiny", Hours(2));
  sc.jobs = {Job(1, 0, 6, "team", 3600), Job(2, 0, 1, "team", 1800), Job(3, 10, 4, "", 600)};
  auto policy = MakePolicy("hourglass", PolicyConfig{});
  ASSERT_TRUE(policy.has_value());
  std::vector<DecisionLogEntry> log;
  SimOptions opt;
  opt.explain = true;
  opt.decision_log = [&](const DecisionLogEntry& e) { log.push_back(e); };
  ASSERT_TRUE(Simulate(sc, **policy, opt));
  std::vector<std::string> why;
  Seconds started = kNever;
  for (const auto& e : log) {
    if (e.job != JobId(3)) continue;
    if (std::string(e.action) == "pending") why.push_back(e.reason);
    if (std::string(e.action) == "start") started = e.at;
  }
  EXPECT_EQ(why, (std::vector<std::string>{"unfunded: runs only on idle GPUs (1 free, needs 4)"}));
  EXPECT_EQ(started, Seconds(3600));
}

// With explain on, the decision log also says why each job waits and what is reserved for it,
// and the decisions themselves do not change. Job 1 holds the node, protected, with a known end
// (max_runtime); job 2 (8 GPUs) cannot preempt it and reserves the node for that end; job 3 (one
// GPU, the same budget) waits behind it.
TEST(Engine, ExplainLogsWhyJobsWaitAndWhatIsReserved) {
  Scenario sc = OneNodeOneBudget("tiny", Hours(4));
  SimJob first = Job(1, 0, 8, "team", 7200);
  first.spec.min_runtime = Hours(2);
  first.spec.max_runtime = Hours(2);
  sc.jobs = {first, Job(2, 600, 8, "team", 600), Job(3, 700, 1, "team", 600)};
  auto policy = MakePolicy("hourglass", PolicyConfig{});
  ASSERT_TRUE(policy.has_value());
  auto run = [&](bool explain, std::vector<DecisionLogEntry>& log) {
    SimOptions opt;
    opt.explain = explain;
    opt.decision_log = [&](const DecisionLogEntry& e) { log.push_back(e); };
    return Simulate(sc, **policy, opt);
  };
  std::vector<DecisionLogEntry> plain, explained;
  auto a = run(false, plain);
  auto b = run(true, explained);
  ASSERT_TRUE(a && b);
  std::vector<std::string> acted;
  bool reserved = false, why_two = false, why_three = false;
  for (const auto& e : explained) {
    const std::string action = e.action;
    if (action == "start" || action == "stop")
      acted.push_back(action + std::to_string(e.job.value()));
    if (action == "reserve" && e.job == JobId(2) && e.at == Seconds(600)) {
      reserved = true;
      EXPECT_EQ(e.node, "n0");
      EXPECT_EQ(e.reason, "8 GPUs on 1 node(s) reserved, due at 7200 s");
    }
    if (action == "pending" && e.job == JobId(2) && e.at == Seconds(600)) {
      why_two = true;
      EXPECT_NE(e.reason.find("reservation"), std::string::npos) << e.reason;
      EXPECT_EQ(e.estimated_start, Seconds(7200));  // the policy's estimate: when it is due
    } else if (action != "pending") {
      EXPECT_EQ(e.estimated_start, kNever) << action;
    }
    if (action == "pending" && e.job == JobId(3) && e.at == Seconds(700)) why_three = true;
  }
  EXPECT_TRUE(reserved);
  EXPECT_TRUE(why_two);
  EXPECT_TRUE(why_three);
  std::vector<std::string> acted_plain;
  for (const auto& e : plain) {
    const std::string action = e.action;
    EXPECT_TRUE(action != "pending" && action != "reserve") << "logged without explain: " << action;
    if (action == "start" || action == "stop")
      acted_plain.push_back(action + std::to_string(e.job.value()));
  }
  EXPECT_EQ(acted, acted_plain);
  EXPECT_EQ(acted_plain, (std::vector<std::string>{"start1", "start2", "start3"}));
}

// Owed GPU time that funded work did not hold is split by where the GPUs went. Job 1 (funded, 8
// GPUs) and a 16-GPU gang of the same budget wait beside an unfunded job: the gang can neither
// fit, nor preempt its own budget's job, nor reserve (that job has no known end), so the
// unfunded job runs alone on the other node for its two hours while every GPU is owed to the
// budget, and that node then stands idle for an hour.
TEST(Engine, UndeliveredOwedTimeIsSplitByWhereTheGpusWent) {
  Scenario sc;
  sc.name = "tiny";
  sc.end = Hours(6);
  sc.nodes = {NodeSpec{"n0", 8, "b0", 0}, NodeSpec{"n1", 8, "b0", 0}};
  sc.budgets = {BudgetSpec{"team", "", 1.0, std::nullopt, {}, 0}};
  SimJob gang = Job(2, 0, 16, "team", 3600);
  gang.spec.gpus_per_node = Gpus(8);
  sc.jobs = {Job(1, 0, 8, "team", 3 * 3600), gang, Job(3, 0, 8, "", 2 * 3600)};
  auto policy = MakePolicy("hourglass", SimOptions{}.policy);
  ASSERT_TRUE(policy.has_value());
  auto r = Simulate(sc, **policy, SimOptions{});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->jobs[1].waits.size(), 1u);
  const double gang_wait_h = 3.0;
  ASSERT_EQ(r->jobs[1].waits[0], Hours(3));  // it waited for job 1 to end
  const Undelivered& u = r->undelivered;
  // 24 GPUs asked for on 16 until the gang started, then 16; nothing after it ended.
  EXPECT_NEAR(u.at_capacity_hours, gang_wait_h + 1.0, 1e-9);
  EXPECT_NEAR(u.below_capacity_hours, 6.0 - gang_wait_h - 1.0, 1e-9);
  // Owed 16, held 8 for three hours: the other 8 ran unfunded work alone, then stood idle.
  EXPECT_NEAR(u.unfunded_alone, 8 * 2.0, 1e-9);
  EXPECT_NEAR(u.idle, 8 * 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(u.unfunded_beside_funded, 0.0);
  EXPECT_DOUBLE_EQ(u.waiting, 0.0);
  EXPECT_NEAR(u.total(), 24.0, 1e-9);
}

// Each job's record names its budget by the path the budget totals use, so the report can give
// every budget its own waits: a job charged to a budget that has children is accounted on its
// "(direct)" part, and unfunded work has no budget.
TEST(Engine, AJobsRecordNamesItsBudgetsPathAsTheTotalsDo) {
  Scenario sc;
  sc.name = "tiny";
  sc.end = Hours(2);
  sc.nodes = {NodeSpec{"n0", 8, "b0", 0}};
  sc.budgets = {BudgetSpec{"lab", "", 1.0, std::nullopt, {}, 0},
                BudgetSpec{"lab.ann", "lab", 1.0, std::nullopt, {}, 0}};
  sc.jobs = {Job(1, 0, 2, "lab.ann", 600), Job(2, 0, 2, "lab", 600), Job(3, 0, 2, "", 600)};
  auto policy = MakePolicy("hourglass", SimOptions{}.policy);
  ASSERT_TRUE(policy.has_value());
  auto r = Simulate(sc, **policy, SimOptions{});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_EQ(r->jobs[0].budget, "lab/lab.ann");
  EXPECT_EQ(r->jobs[1].budget, "lab/(direct)");
  EXPECT_EQ(r->jobs[2].budget, "");
  std::vector<std::string> paths;
  for (const BudgetTotals& b : r->budgets) paths.push_back(b.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"lab", "lab/lab.ann", "lab/(direct)"}));
}

// A node that begins to drain records the job the contract lets stay longest: here a training
// run protected for 2 h beside a sweep (stopped at once) and a batch job protected for 10 min.
// The drain ends when the training run's protection and grace are over.
TEST(Engine, ADrainRecordsTheJobTheContractLetsStayLongest) {
  Scenario sc = OneNodeOneBudget("tiny", Hours(6));
  SimJob training = Job(1, 0, 4, "team", 5 * 3600);
  training.spec.job_class = "training";
  training.spec.min_runtime = Hours(2);
  SimJob batch = Job(2, 0, 2, "team", 5 * 3600);
  batch.spec.min_runtime = Minutes(10);
  sc.jobs = {training, batch, Job(3, 0, 2, "", 5 * 3600)};
  TimedEvent fail;
  fail.at = Hours(1);
  fail.kind = EventKind::kHealthFail;
  fail.target = "n0";
  sc.events = {fail};
  auto policy = MakePolicy("hourglass", SimOptions{}.policy);
  ASSERT_TRUE(policy.has_value());
  auto r = Simulate(sc, **policy, SimOptions{});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->drains.size(), 1u);
  const DrainRecord& d = r->drains[0];
  EXPECT_EQ(d.holder_class, "training");
  EXPECT_FALSE(d.holder_restarted);
  // Started at 0, protected for 2 h, then its 60 s grace.
  EXPECT_EQ(r->jobs[0].waits, std::vector<Seconds>{Seconds(0)});
  EXPECT_EQ(d.holder_bound, Hours(2) + Seconds(60));
  ASSERT_NE(d.empty_at, kNever);
  EXPECT_LE(d.empty_at, d.holder_bound + Seconds(10));  // within a cycle of the bound
  EXPECT_GT(d.empty_at, Hours(2));
}

// The two other places owed time goes. Beside funded work: on one node, an 8-GPU job waits for
// its own budget's 4-GPU job, and preempting the unfunded job beside it would not make room.
// Waiting: funded demand (15 GPUs) is below the 16 GPUs, but the 3-GPU job fits on neither node
// beside the two 6-GPU jobs, so every GPU it asks for is owed and not held.
TEST(Engine, UndeliveredOwedTimeBesideFundedWorkAndWhileDemandIsBelowCapacity) {
  auto run = [](std::vector<NodeSpec> nodes, std::vector<SimJob> jobs) {
    Scenario sc;
    sc.name = "tiny";
    sc.end = Hours(4);
    sc.nodes = std::move(nodes);
    sc.budgets = {BudgetSpec{"team", "", 1.0, std::nullopt, {}, 0}};
    sc.jobs = std::move(jobs);
    auto policy = MakePolicy("hourglass", SimOptions{}.policy);
    EXPECT_TRUE(policy.has_value());
    auto r = Simulate(sc, **policy, SimOptions{});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return std::move(*r);
  };
  const SimResult beside =
      run({NodeSpec{"n0", 8, "b0", 0}},
          {Job(1, 0, 4, "team", 2 * 3600), Job(2, 0, 4, "", 2 * 3600), Job(3, 0, 8, "team", 3600)});
  ASSERT_EQ(beside.jobs[2].waits.size(), 1u);
  EXPECT_EQ(beside.jobs[2].waits[0], Hours(2));
  EXPECT_NEAR(beside.undelivered.unfunded_beside_funded, 4 * 2.0, 1e-9);
  EXPECT_NEAR(beside.undelivered.total(), 4 * 2.0, 1e-9);
  EXPECT_NEAR(beside.undelivered.at_capacity_hours, 3.0, 1e-9);

  const SimResult waiting = run(
      {NodeSpec{"n0", 8, "b0", 0}, NodeSpec{"n1", 8, "b0", 0}},
      {Job(1, 0, 6, "team", 2 * 3600), Job(2, 0, 6, "team", 2 * 3600), Job(3, 0, 3, "team", 3600)});
  ASSERT_EQ(waiting.jobs[2].waits.size(), 1u);
  EXPECT_EQ(waiting.jobs[2].waits[0], Hours(2));
  EXPECT_NEAR(waiting.undelivered.waiting, 3 * 2.0, 1e-9);
  EXPECT_NEAR(waiting.undelivered.total(), 3 * 2.0, 1e-9);
  EXPECT_DOUBLE_EQ(waiting.undelivered.at_capacity_hours, 0.0);
}

// A scenario that names a budget the tree lacks is refused with the workload line.
// b's interactive session (min_runtime 1 h, a 30-minute lease, 6 h long) runs alone; half an
// hour in, a's job asks for the node, and fair share lets a preempt b's session once its
// protection is over. The live weight is a second, so that one node can show it.
struct SessionRun {
  SimResult r;
  Seconds a_wait{0};
};
SessionRun RunSession(bool leases, std::optional<Seconds> idle_after) {
  Scenario sc = OneNodeTwoBudgets("session", Hours(12));
  SimJob session = Job(1, 0, 8, "b", 6 * 3600);
  session.spec.job_class = "interactive";
  session.spec.min_runtime = Hours(1);
  session.spec.max_runtime = Hours(12);
  session.spec.lease = Minutes(30);
  session.idle_after = idle_after;
  sc.jobs = {session, Job(2, 1800, 8, "a", 3600)};
  SimOptions opt;
  opt.policy.leases = leases;
  opt.policy.live_weight = Seconds(1);
  SessionRun out{SimulateHourglass(sc, opt), Seconds(-1)};
  if (out.r.jobs.size() == 2 && !out.r.jobs[1].waits.empty()) out.a_wait = out.r.jobs[1].waits[0];
  return out;
}

TEST(Engine, ASessionInUseRunsToItsEndAndAParkedOneIsStoppedALeaseAfterItsUserLeft) {
  // In use throughout: protected past its min_runtime until it ends at 6 h.
  const SessionRun used = RunSession(true, std::nullopt);
  EXPECT_TRUE(used.r.preemptions.empty());
  EXPECT_EQ(used.r.jobs[0].final_state, JobState::kSucceeded);
  EXPECT_EQ(used.a_wait, Hours(5) + Minutes(30));
  // Its user left 3 h in: the lease ran out at 3.5 h, and a's job took the node after the
  // session's grace.
  const SessionRun parked = RunSession(true, Hours(3));
  ASSERT_EQ(parked.r.preemptions.size(), 1u);
  EXPECT_EQ(parked.r.preemptions[0].at, Hours(3) + Minutes(30));
  EXPECT_FALSE(parked.r.preemptions[0].active_session);
  EXPECT_FALSE(parked.r.preemptions[0].contract_violation);
  EXPECT_EQ(parked.a_wait, Hours(3) + Seconds(60));
  // Without leases the session in use is stopped when its min_runtime ends: counted as a cut
  // session, not as a broken contract.
  const SessionRun off = RunSession(false, std::nullopt);
  ASSERT_EQ(off.r.preemptions.size(), 1u);
  EXPECT_EQ(off.r.preemptions[0].at, Hours(1));
  EXPECT_EQ(off.a_wait, Minutes(30) + Seconds(60));
  EXPECT_TRUE(off.r.preemptions[0].active_session);
  EXPECT_FALSE(off.r.preemptions[0].contract_violation);
  EXPECT_EQ(off.r.jobs[0].final_state, JobState::kPreempted);
}

// A change that time alone brings: b's job has held the node since 0 s; a's job arrives at
// 600 s, when taking the node would leave a (its held GPUs weighed as live usage) above b, so the
// no-ping-pong rule forbids it. As b's usage grows, a falls further below; nothing else happens
// until b's job ends two days later. With a waiting timer (cycle_while_waiting; the server's
// --timer-ms) the loop preempts once the rule allows it; with events only (max_gap 0) only at
// the next event; with the default max_gap, within it.
struct TimerRun {
  SimResult r;
  Seconds a_start{-1};
};
TimerRun RunTimeOnlyChange(bool cycle_while_waiting, Seconds timer = Seconds(0),
                           int64_t b_runs = 2 * 86400, Seconds max_gap = Seconds(0)) {
  Scenario sc = OneNodeTwoBudgets("time-only", Days(3));
  sc.jobs = {Job(1, 0, 8, "b", b_runs), Job(2, 600, 8, "a", 3600)};
  SimOptions opt;
  opt.cycle_while_waiting = cycle_while_waiting;
  opt.timer = timer;
  opt.max_gap = max_gap;
  TimerRun out{SimulateHourglass(sc, opt), Seconds(-1)};
  if (out.r.jobs.size() == 2 && !out.r.jobs[1].waits.empty())
    out.a_start = Seconds(600) + out.r.jobs[1].waits[0];
  return out;
}

TEST(Engine, WithCycleWhileWaitingATimeOnlyChangeIsActedOnWithoutAnEvent) {
  const TimerRun events_only = RunTimeOnlyChange(false);
  EXPECT_TRUE(events_only.r.preemptions.empty());
  EXPECT_EQ(events_only.a_start, Days(2));  // b's job ended: the first event after 600 s
  const TimerRun timer = RunTimeOnlyChange(true);
  ASSERT_EQ(timer.r.preemptions.size(), 1u);
  const PreemptionRecord& stop = timer.r.preemptions[0];
  EXPECT_EQ(stop.job, JobId(1));
  EXPECT_EQ(stop.cause, StopCause::kFairShare);
  // On a tick between the two events, and a's job starts once the victim's grace is over.
  EXPECT_GT(stop.at, Seconds(600));
  EXPECT_LT(stop.at, Days(2));
  EXPECT_EQ(stop.at.value() % 10, 0);
  EXPECT_EQ(timer.a_start, stop.at + Seconds(60));
  // It cycles on the ticks while a's job waits, not over the whole run.
  EXPECT_GT(timer.r.cycles, events_only.r.cycles + (stop.at.value() - 600) / 10 - 5);
  EXPECT_LT(timer.r.cycles, events_only.r.cycles + stop.at.value() / 10 + 5);
}

// A waiting timer longer than the interval: the time-only change is acted on at one of its own
// multiples, later than on the 10 s ticks but long before the next event, at a sixth of the
// timer's cycles.
TEST(Engine, ALongerWaitingTimerActsOnATimeOnlyChangeOnItsOwnTicks) {
  const TimerRun every_tick = RunTimeOnlyChange(true);
  const TimerRun minute = RunTimeOnlyChange(true, Seconds(60));
  ASSERT_EQ(every_tick.r.preemptions.size(), 1u);
  ASSERT_EQ(minute.r.preemptions.size(), 1u);
  const Seconds at = minute.r.preemptions[0].at;
  EXPECT_EQ(at.value() % 60, 0);
  EXPECT_GE(at, every_tick.r.preemptions[0].at);
  EXPECT_LT(at, every_tick.r.preemptions[0].at + Seconds(60));
  EXPECT_LT(minute.r.cycles * 5, every_tick.r.cycles);
}

// An event still gets the next interval tick while a longer timer's tick is pending: b's job
// ends at 1,205 s, and a's job, waiting since 600 s with the next timer tick due at 1,260 s,
// starts at 1,210 s.
TEST(Engine, AnEventBeforeALongerTimersTickIsServedOnTheNextIntervalTick) {
  const TimerRun run = RunTimeOnlyChange(true, Seconds(60), 1205);
  EXPECT_TRUE(run.r.preemptions.empty());
  EXPECT_EQ(run.a_start, Seconds(1210));
}

// The default loop bounds the gap between cycles while a job waits (max_gap, 300 s, as
// kube-scheduler retries an unschedulable pod after at most 5 minutes): the time-only change is
// acted on within 300 s of when every tick would, at a twentieth of every tick's cycles.
TEST(Engine, TheDefaultMaxGapActsOnATimeOnlyChangeWithinItsBound) {
  ASSERT_EQ(SimOptions{}.max_gap, Seconds(300));
  const TimerRun every_tick = RunTimeOnlyChange(true);
  const TimerRun gap = RunTimeOnlyChange(false, Seconds(0), 2 * 86400, SimOptions{}.max_gap);
  ASSERT_EQ(every_tick.r.preemptions.size(), 1u);
  ASSERT_EQ(gap.r.preemptions.size(), 1u);
  const Seconds at = gap.r.preemptions[0].at;
  EXPECT_GE(at, every_tick.r.preemptions[0].at);
  EXPECT_LE(at, every_tick.r.preemptions[0].at + Seconds(300));
  EXPECT_EQ(gap.r.preemptions[0].cause, StopCause::kFairShare);
  EXPECT_LT(gap.r.cycles * 20, every_tick.r.cycles);
  // Nothing waits once a's job runs: no cycles without events after it.
  const TimerRun none = RunTimeOnlyChange(false);
  EXPECT_LT(gap.r.cycles, none.r.cycles + (at.value() - 600) / 300 + 5);
}

TEST(Engine, ATimerThatIsNotAMultipleOfTheIntervalIsRefused) {
  Scenario sc = OneNodeTwoBudgets("timer", Days(1));
  sc.jobs = {Job(1, 0, 8, "b", 600)};
  SimOptions opt;
  opt.cycle_while_waiting = true;
  opt.timer = Seconds(15);
  auto policy = MakePolicy("hourglass", opt.policy);
  ASSERT_TRUE(policy.has_value());
  const auto r = Simulate(sc, **policy, opt);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, "timer");
}

// The reader leaves a lease's bounds to the policy, as it leaves min_runtime's cap: the run
// refuses the job with its line and the field ValidateJob names.
// Wraps a real policy and checks what every cycle is given: each pending list in (queued_since,
// id) order over its live entries, whatever holes (started jobs) lie between them. Requeued jobs
// keep their original submission time, so the engine inserts them mid-list among holes.
class OrderCheckingPolicy : public Policy {
 public:
  explicit OrderCheckingPolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  Decisions Cycle(const Snapshot& snap) const override {
    Check(snap.pending_funded);
    Check(snap.pending_unfunded);
    int64_t above = 0;
    for (const PendingJob& p : snap.pending_unfunded)
      if (p.spec && p.spec->tier > 0) ++above;
    if (snap.unfunded_above_tier0 != above) ++miscounted;
    most_above_tier0 = std::max(most_above_tier0, above);
    return inner_->Cycle(snap);
  }
  mutable int64_t out_of_order = 0;
  mutable int64_t miscounted = 0;  // cycles whose Snapshot::unfunded_above_tier0 was wrong
  mutable int64_t most_above_tier0 = 0;
  // Cycles in which a requeued job sat before a later submission with a hole in the same list.
  mutable int64_t requeued_among_holes = 0;

 private:
  void Check(std::span<const PendingJob> v) const {
    const PendingJob* prev = nullptr;
    bool holes = false, requeued_mid = false;
    for (const PendingJob& p : v) {
      if (!p.spec) {
        holes = true;
        continue;
      }
      if (prev && (prev->queued_since > p.queued_since ||
                   (prev->queued_since == p.queued_since && !(prev->spec->id < p.spec->id))))
        ++out_of_order;
      if (prev && prev->attempt > 1 && prev->queued_since < p.queued_since) requeued_mid = true;
      prev = &p;
    }
    if (holes && requeued_mid) ++requeued_among_holes;
  }
  std::unique_ptr<Policy> inner_;
};

TEST(Engine, RequeuedJobsKeepTheirPlaceAmongHolesInThePendingLists) {
  Scenario sc = MakeLabMonth(1);
  sc.end = Days(2);
  for (const char* name : {"priority", "hourglass"}) {
    SimOptions opt;
    auto inner = MakePolicy(name, opt.policy);
    ASSERT_TRUE(inner.has_value());
    OrderCheckingPolicy policy(std::move(*inner));
    auto r = Simulate(sc, policy, opt);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(policy.out_of_order, 0) << name;
    EXPECT_GT(policy.requeued_among_holes, 1000) << name;
    EXPECT_EQ(policy.miscounted, 0) << name;
  }
}

// Lab-month's sweeps are tier 0; here every third one is tier 2, as a workload file may say.
Scenario LabMonthWithUpperTierSweeps() {
  Scenario sc = MakeLabMonth(1);
  sc.end = Days(2);
  int unfunded = 0;
  for (SimJob& j : sc.jobs)
    if (j.budget.empty() && ++unfunded % 3 == 0) j.spec.tier = 2;
  return sc;
}

TEST(Engine, CountsTheUnfundedJobsAboveTierZeroForEveryCycle) {
  const Scenario sc = LabMonthWithUpperTierSweeps();
  SimOptions opt;
  auto inner = MakePolicy("priority", opt.policy);
  ASSERT_TRUE(inner.has_value());
  OrderCheckingPolicy policy(std::move(*inner));
  auto r = Simulate(sc, policy, opt);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(policy.miscounted, 0);
  EXPECT_GT(policy.most_above_tier0, 100);  // the count was exercised, not only zero
}

// The count only lets the `priority` baseline skip a search; a driver that does not keep it
// (-1) gets the same decisions.
class TierCountHidingPolicy : public Policy {
 public:
  explicit TierCountHidingPolicy(std::unique_ptr<Policy> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  Decisions Cycle(const Snapshot& snap) const override {
    Snapshot hidden = snap;
    hidden.unfunded_above_tier0 = -1;
    return inner_->Cycle(hidden);
  }

 private:
  std::unique_ptr<Policy> inner_;
};

TEST(Engine, PriorityDecidesTheSameWhetherOrNotTheTierCountIsKnown) {
  for (const bool upper_sweeps : {false, true}) {
    const Scenario sc = upper_sweeps ? LabMonthWithUpperTierSweeps() : [] {
      Scenario s = MakeLabMonth(1);
      s.end = Days(2);
      return s;
    }();
    SimOptions opt;
    auto known = MakePolicy("priority", opt.policy);
    auto inner = MakePolicy("priority", opt.policy);
    ASSERT_TRUE(known.has_value() && inner.has_value());
    TierCountHidingPolicy unknown(std::move(*inner));
    auto a = Simulate(sc, **known, opt);
    auto b = Simulate(sc, unknown, opt);
    ASSERT_TRUE(a.has_value() && b.has_value());
    ASSERT_EQ(a->jobs.size(), b->jobs.size());
    int64_t started = 0, differ = 0;
    for (size_t i = 0; i < a->jobs.size(); ++i) {
      started += !a->jobs[i].waits.empty();
      differ +=
          a->jobs[i].waits != b->jobs[i].waits || a->jobs[i].final_state != b->jobs[i].final_state;
    }
    EXPECT_EQ(differ, 0) << upper_sweeps;
    EXPECT_GT(started, 1000) << upper_sweeps;
    EXPECT_EQ(a->preemptions.size(), b->preemptions.size()) << upper_sweeps;
  }
}

TEST(Engine, ALeaseWithoutMaxRuntimeIsRefusedWithItsLine) {
  Scenario sc = OneNodeOneBudget("", Hours(1));
  SimJob j = Job(1, 0, 1, "team", 60);
  j.spec.lease = Minutes(30);
  j.line = 4;
  sc.jobs = {j};
  auto policy = MakePolicy("hourglass", PolicyConfig{});
  auto r = Simulate(sc, **policy, SimOptions{});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().file, "workload");
  EXPECT_EQ(r.error().line, 4);
  EXPECT_EQ(r.error().field, "max_runtime");
  EXPECT_NE(r.error().reason.find("required with a lease"), std::string::npos);
}

TEST(Engine, UnknownBudgetIsRefusedWithItsLine) {
  Scenario sc = OneNodeOneBudget("", Hours(1));
  SimJob j = Job(1, 0, 1, "nobody", 60);
  j.line = 7;
  sc.jobs = {j};
  auto policy = MakePolicy("hourglass", PolicyConfig{});
  auto r = Simulate(sc, **policy, SimOptions{});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().file, "workload");
  EXPECT_EQ(r.error().line, 7);
  EXPECT_EQ(r.error().field, "budget");
}

}  // namespace
}  // namespace hg::sim
