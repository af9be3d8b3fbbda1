#include "sim/report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "sim/progress.h"

namespace hg::sim {
namespace {

JobRecord Job(int64_t id, std::string cls, int32_t gpus, const std::vector<int64_t>& waits,
              JobState final_state) {
  JobRecord j;
  j.id = JobId(id);
  j.job_class = std::move(cls);
  j.gpus = gpus;
  j.funded = true;
  for (int64_t w : waits) j.waits.push_back(Seconds(w));
  j.attempts = static_cast<int>(j.waits.size());
  j.final_state = final_state;
  return j;
}

PreemptionRecord Preemption(std::string cls, StopCause cause, double lost, bool violation) {
  PreemptionRecord p;
  p.job_class = std::move(cls);
  p.cause = cause;
  p.lost_gpu_hours = lost;
  p.contract_violation = violation;
  return p;
}

DrainRecord Drain(int64_t unhealthy, Seconds empty, bool manual, bool lost) {
  DrainRecord d;
  d.node = "n";
  d.unhealthy_at = Seconds(unhealthy);
  d.empty_at = empty;
  d.manual = manual;
  d.lost = lost;
  return d;
}

BudgetTotals Budget(std::string path, int depth, bool leaf, double owed, double delivered) {
  return BudgetTotals{std::move(path), depth, leaf, owed, delivered};
}

// A small run with known answers; `scale` varies the numbers between two policies.
SimResult Sample(std::string policy, double scale) {
  SimResult r;
  r.policy = std::move(policy);
  r.scenario = "tiny";
  r.start = Seconds(0);
  r.end = Days(2);
  r.capacity_gpu_hours = 1000;
  r.allocated_gpu_hours = 900 * scale;
  r.unfunded_gpu_hours = 180 * scale;
  r.jobs.push_back(Job(1, "debug", 1, {5, 10}, JobState::kSucceeded));
  r.jobs.push_back(Job(2, "batch", 16, {600}, JobState::kRunning));
  r.jobs.push_back(Job(3, "batch", 300, {}, JobState::kPending));
  r.preemptions.push_back(Preemption("batch", StopCause::kFairShare, 2.5 * scale, false));
  r.drains.push_back(Drain(100, Seconds(400), false, false));
  r.budgets.push_back(Budget("a", 1, false, 100, 90 * scale));
  r.budgets.push_back(Budget("a/x", 2, true, 100, 90 * scale));
  r.series.push_back(SeriesPoint{Seconds(3600), 1024, 1000.123456, 200, 64});
  r.events = 1234;
  r.cycles = 56;
  return r;
}

TEST(ReportPercentile, NearestRankOnKnownSamples) {
  std::vector<int64_t> s;
  for (int64_t i = 1; i <= 10; ++i) s.push_back(i * 10);  // 10, 20, ..., 100
  EXPECT_EQ(Percentile(s, 50), 50);                       // ceil(5.0) = 5th
  EXPECT_EQ(Percentile(s, 90), 90);                       // ceil(9.0) = 9th
  EXPECT_EQ(Percentile(s, 99), 100);                      // ceil(9.9) = 10th
  EXPECT_EQ(Percentile(s, 100), 100);
  EXPECT_EQ(Percentile(s, 1), 10);  // ceil(0.1) = 1st
  EXPECT_EQ(Percentile({7}, 50), 7);
  EXPECT_EQ(Percentile({1, 2, 3}, 50), 2);     // ceil(1.5) = 2nd
  EXPECT_EQ(Percentile({1, 2, 3, 4}, 50), 2);  // ceil(2.0) = 2nd, not an interpolated 2.5
  EXPECT_EQ(Percentile({}, 50), std::nullopt);
}

TEST(ReportSizeBucket, Boundaries) {
  EXPECT_EQ(SizeBucket(1), 0u);
  EXPECT_EQ(SizeBucket(2), 1u);
  EXPECT_EQ(SizeBucket(8), 1u);
  EXPECT_EQ(SizeBucket(9), 2u);
  EXPECT_EQ(SizeBucket(64), 2u);
  EXPECT_EQ(SizeBucket(65), 3u);
  EXPECT_EQ(SizeBucket(256), 3u);
  EXPECT_EQ(SizeBucket(257), 4u);
  EXPECT_EQ(SizeBucket(4096), 4u);
}

TEST(ReportCompute, OccupancyAndUnfundedShare) {
  SimResult r;
  r.capacity_gpu_hours = 200;
  r.allocated_gpu_hours = 150;
  r.unfunded_gpu_hours = 30;
  const Measures m = Compute(r);
  EXPECT_DOUBLE_EQ(*m.occupancy, 0.75);
  EXPECT_DOUBLE_EQ(*m.unfunded_share, 0.2);  // of allocated, not of capacity

  const Measures empty = Compute(SimResult{});
  EXPECT_FALSE(empty.occupancy.has_value());
  EXPECT_FALSE(empty.unfunded_share.has_value());
  EXPECT_FALSE(empty.entitlement_delivered.has_value());
}

TEST(ReportCompute, EntitlementCapsEachBudgetAndSplitsByLevel) {
  SimResult r;
  // Program a: owed 100, got 150 (capped at 100). Program b: owed 100, got 50.
  r.budgets.push_back(Budget("a", 1, false, 100, 150));
  r.budgets.push_back(Budget("a/x", 2, true, 60, 120));  // over: capped at 60
  r.budgets.push_back(Budget("a/y", 2, true, 40, 30));   // under
  r.budgets.push_back(Budget("b", 1, false, 100, 50));
  r.budgets.push_back(Budget("b/z", 2, false, 100, 50));
  r.budgets.push_back(Budget("b/z/u", 3, true, 100, 50));
  r.budgets.push_back(Budget("c", 1, true, 0, 10));  // nothing owed
  const Measures m = Compute(r);
  // Leaves: min(120,60) + min(30,40) + min(50,100) + min(10,0) = 140 over owed 200.
  ASSERT_TRUE(m.entitlement_delivered.has_value());
  EXPECT_DOUBLE_EQ(*m.entitlement_delivered, 140.0 / 200.0);
  ASSERT_EQ(m.entitlement_by_level.size(), 3u);
  EXPECT_DOUBLE_EQ(*m.entitlement_by_level.at(1), (100.0 + 50.0 + 0.0) / 200.0);
  EXPECT_DOUBLE_EQ(*m.entitlement_by_level.at(2), (60.0 + 30.0 + 50.0) / 200.0);
  EXPECT_DOUBLE_EQ(*m.entitlement_by_level.at(3), 50.0 / 100.0);
  ASSERT_EQ(m.budgets.size(), 7u);
  EXPECT_EQ(m.budgets[1].path, "a/x");
  EXPECT_DOUBLE_EQ(*m.budgets[1].ratio, 2.0);  // the per-budget ratio is not capped
  EXPECT_DOUBLE_EQ(*m.budgets[2].ratio, 0.75);
  EXPECT_FALSE(m.budgets[6].ratio.has_value());
}

TEST(ReportCompute, WaitsPerClassSizeAndNeverStarted) {
  SimResult r;
  r.jobs.push_back(Job(1, "debug", 1, {1, 2, 3}, JobState::kSucceeded));  // three starts
  r.jobs.push_back(Job(2, "debug", 2, {40}, JobState::kSucceeded));
  r.jobs.push_back(Job(3, "debug", 1, {}, JobState::kPending));
  r.jobs.push_back(Job(4, "batch", 64, {1000, 3000}, JobState::kPreempted));
  r.jobs.push_back(Job(5, "batch", 512, {}, JobState::kPending));
  r.jobs.push_back(Job(6, "", 65, {7}, JobState::kFailed));
  const Measures m = Compute(r);

  ASSERT_EQ(m.wait_by_class.size(), 3u);
  const WaitStats& debug = m.wait_by_class.at("debug");
  EXPECT_EQ(debug.count, 4);
  EXPECT_EQ(debug.never_started, 1);
  EXPECT_EQ(debug.p50, 2);   // {1,2,3,40}: 2nd
  EXPECT_EQ(debug.p90, 40);  // ceil(3.6) = 4th
  EXPECT_EQ(debug.p99, 40);
  const WaitStats& batch = m.wait_by_class.at("batch");
  EXPECT_EQ(batch.count, 2);
  EXPECT_EQ(batch.never_started, 1);
  EXPECT_EQ(batch.p50, 1000);
  EXPECT_EQ(batch.p90, 3000);
  EXPECT_EQ(m.wait_by_class.at("unlabeled").p50, 7);

  EXPECT_EQ(m.wait_all.count, 7);
  EXPECT_EQ(m.wait_all.never_started, 2);
  EXPECT_EQ(m.wait_all.p50, 7);  // {1,2,3,7,40,1000,3000}: 4th

  EXPECT_EQ(m.wait_by_size[0].count, 3);  // 1 GPU
  EXPECT_EQ(m.wait_by_size[0].never_started, 1);
  EXPECT_EQ(m.wait_by_size[1].p50, 40);    // 2-8
  EXPECT_EQ(m.wait_by_size[2].p90, 3000);  // 9-64
  EXPECT_EQ(m.wait_by_size[3].p50, 7);     // 65-256
  EXPECT_EQ(m.wait_by_size[4].count, 0);   // 257+
  EXPECT_EQ(m.wait_by_size[4].never_started, 1);
  EXPECT_FALSE(m.wait_by_size[4].p50.has_value());

  EXPECT_EQ(m.jobs.submitted, 6);
  EXPECT_EQ(m.jobs.started, 4);
  EXPECT_EQ(m.jobs.succeeded, 2);
  EXPECT_EQ(m.jobs.failed, 1);
  EXPECT_EQ(m.jobs.preempted, 1);
  EXPECT_EQ(m.jobs.pending, 2);
  EXPECT_EQ(m.jobs.running, 0);
}

// A job's waits count for its budget and each budget above it, by class; a job charged to a
// budget with children counts for that budget through its "(direct)" path; unfunded work for none.
TEST(ReportCompute, WaitsPerBudgetCountForTheBudgetAndItsAncestors) {
  SimResult r;
  r.budgets.push_back(Budget("a", 1, false, 10, 10));
  r.budgets.push_back(Budget("a/x", 2, true, 5, 5));
  r.budgets.push_back(Budget("a/(direct)", 2, true, 5, 5));
  r.budgets.push_back(Budget("b", 1, true, 10, 10));
  auto job = [&](int64_t id, std::string budget, std::string cls,
                 const std::vector<int64_t>& waits) {
    JobRecord j = Job(id, std::move(cls), 1, waits, JobState::kSucceeded);
    j.budget = std::move(budget);
    j.funded = !j.budget.empty();
    r.jobs.push_back(std::move(j));
  };
  job(1, "a/x", "debug", {10, 20});
  job(2, "a/x", "debug", {30});
  job(3, "a/(direct)", "debug", {400});
  job(4, "a/x", "batch", {});  // never started
  job(5, "b", "debug", {7});
  job(6, "", "debug", {9000});  // unfunded: no budget's
  const Measures m = Compute(r);
  ASSERT_EQ(m.budgets.size(), 4u);
  const auto& a = m.budgets[0].wait_by_class;
  const auto& x = m.budgets[1].wait_by_class;
  const auto& direct = m.budgets[2].wait_by_class;
  const auto& b = m.budgets[3].wait_by_class;
  // a/x: debug waits 10, 20, 30; one batch job that never started.
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x.at("debug").count, 3);
  EXPECT_EQ(x.at("debug").p50, 20);
  EXPECT_EQ(x.at("debug").p90, 30);
  EXPECT_EQ(x.at("batch").count, 0);
  EXPECT_EQ(x.at("batch").never_started, 1);
  EXPECT_FALSE(x.at("batch").p90.has_value());
  // a: its children's together, the direct job's 400 s among them.
  EXPECT_EQ(a.at("debug").count, 4);
  EXPECT_EQ(a.at("debug").p90, 400);
  EXPECT_EQ(a.at("debug").p50, 20);
  EXPECT_EQ(a.at("batch").never_started, 1);
  EXPECT_EQ(direct.at("debug").count, 1);
  EXPECT_EQ(direct.count("batch"), 0u);
  // b has its own job only: not a's, and not the unfunded job's 9,000 s.
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b.at("debug").count, 1);
  EXPECT_EQ(b.at("debug").p99, 7);
  // The JSON gives each budget its waits under the same keys as the policy's wait_s.
  const nlohmann::json j = ToJson({r});
  const auto& budgets = j["policies"][""]["budgets"];
  EXPECT_EQ(budgets[0]["path"], "a");
  EXPECT_EQ(budgets[0]["wait_s"]["debug"]["p90"], 400);
  EXPECT_EQ(budgets[1]["wait_s"]["batch"]["never_started"], 1);
  EXPECT_TRUE(budgets[1]["wait_s"]["batch"]["p50"].is_null());
  EXPECT_EQ(budgets[3]["wait_s"].size(), 1u);
}

TEST(ReportCompute, ClassNamedAllDoesNotCollideWithOverall) {
  SimResult r;
  r.jobs.push_back(Job(1, "all", 1, {5}, JobState::kSucceeded));
  r.jobs.push_back(Job(2, "debug", 1, {9}, JobState::kSucceeded));
  const nlohmann::json j = ToJson({r});
  const auto& wait = j["policies"][""]["wait_s"];
  EXPECT_EQ(wait["class:all"]["p50"], 5);
  EXPECT_EQ(wait["all"]["count"], 2);
}

TEST(ReportCompute, PreemptionsByCauseAndClass) {
  SimResult r;
  r.jobs.push_back(Job(1, "batch", 8, {1}, JobState::kRunning));
  r.jobs.push_back(Job(2, "debug", 1, {1}, JobState::kRunning));
  r.preemptions.push_back(Preemption("batch", StopCause::kFairShare, 1.5, false));
  r.preemptions.push_back(Preemption("batch", StopCause::kDrain, 2.0, false));
  r.preemptions.push_back(Preemption("sweep", StopCause::kUnfunded, 0.25, false));
  r.preemptions.push_back(Preemption("batch", StopCause::kDrainForced, 4.0, true));
  r.preemptions[1].active_session = true;
  const Measures m = Compute(r);
  EXPECT_EQ(m.preemptions, 4);
  EXPECT_EQ(m.contract_violations, 1);
  EXPECT_EQ(m.active_sessions_stopped, 1);
  EXPECT_DOUBLE_EQ(m.lost_gpu_hours, 7.75);
  EXPECT_EQ(m.preemptions_by_cause.size(), 9u);  // every cause, zeros included
  EXPECT_EQ(m.preemptions_by_cause.at("own-budget"), 0);
  EXPECT_EQ(m.preemptions_by_cause.at("fair-share"), 1);
  EXPECT_EQ(m.preemptions_by_cause.at("drain"), 1);
  EXPECT_EQ(m.preemptions_by_cause.at("drain-forced"), 1);
  EXPECT_EQ(m.preemptions_by_cause.at("unfunded"), 1);
  EXPECT_EQ(m.preemptions_by_cause.at("priority"), 0);
  EXPECT_EQ(m.preemptions_by_class.at("batch"), 3);
  EXPECT_EQ(m.preemptions_by_class.at("debug"), 0);  // a class of the workload, never preempted
  EXPECT_EQ(m.preemptions_by_class.at("sweep"), 1);
  EXPECT_DOUBLE_EQ(m.lost_gpu_hours_by_class.at("batch"), 7.5);
  EXPECT_DOUBLE_EQ(m.lost_gpu_hours_by_class.at("debug"), 0.0);
}

// A stop of a job of leaf 2 for one of leaf 1 is taken back when, within the hour, a job of leaf 1
// is stopped for one of leaf 2; later, or between other leaves, or one way again, it is not.
TEST(ReportCompute, StopsAnsweredWithinAnHourByAStopTheOtherWayAreTakenBack) {
  SimResult r;
  r.jobs.push_back(Job(1, "batch", 8, {1}, JobState::kRunning));
  auto stop = [&](int64_t at, int32_t budget, int32_t for_budget) {
    r.preemptions.push_back(Preemption("batch", StopCause::kFairShare, 0, false));
    r.preemptions.back().at = Seconds(at);
    r.preemptions.back().budget = budget;
    r.preemptions.back().for_budget = for_budget;
  };
  stop(0, 2, 1);      // 1 takes from 2
  stop(600, 2, 1);    // again the same way: not a take-back
  stop(1800, 1, 2);   // 2 takes back from 1, 1,200 s after the last stop the other way: counted
  stop(4000, 2, 1);   // 1 takes back, 2,200 s after 1800: counted
  stop(9000, 1, 2);   // 5,000 s after 4000: not counted
  stop(9100, 3, 1);   // other leaves: not counted
  stop(9200, 1, 3);   // ... until one takes back from the other: counted
  stop(9300, -1, 1);  // unfunded work, or a stop for no job, never counts
  stop(9400, 1, -1);
  stop(9500, 1, 1);   // within one leaf (a debug job stopping its own budget's work): no
  stop(12800, 3, 1);  // an hour to the second after 9200: no longer within it (the cool-down's
                      // bound: it lapses then)
  EXPECT_EQ(Compute(r).taken_back_within_hour, 3);
  EXPECT_EQ(ToJson({r})["policies"][""]["taken_back_within_1h"], 3);
}

// A run stopped within its first minute counts, one stopped at 60 s or later does not, nor one
// that its max_runtime ended; every class of the workload appears, zeros included.
TEST(ReportCompute, RunsStoppedWithinAMinuteOfTheirStart) {
  SimResult r;
  r.jobs.push_back(Job(1, "batch", 8, {1}, JobState::kRunning));
  r.jobs.push_back(Job(2, "debug", 1, {1}, JobState::kRunning));
  r.jobs.push_back(Job(3, "interactive", 1, {1}, JobState::kRunning));
  r.preemptions.push_back(Preemption("debug", StopCause::kReservation, 0, false));
  r.preemptions.back().run = Seconds(20);
  r.preemptions.push_back(Preemption("debug", StopCause::kFairShare, 0, false));
  r.preemptions.back().run = Seconds(59);
  r.preemptions.push_back(Preemption("debug", StopCause::kFairShare, 0, false));
  r.preemptions.back().run = Seconds(60);
  r.preemptions.push_back(Preemption("batch", StopCause::kMaxRuntime, 0, false));
  r.preemptions.back().run = Seconds(30);
  r.preemptions.push_back(Preemption("batch", StopCause::kNodeLost, 0, false));
  r.preemptions.back().run = Seconds(0);
  const Measures m = Compute(r);
  EXPECT_EQ(m.stopped_within_minute_by_class.at("debug"), 2);
  EXPECT_EQ(m.stopped_within_minute_by_class.at("batch"), 1);
  EXPECT_EQ(m.stopped_within_minute_by_class.at("interactive"), 0);
  const std::string table = RenderTable({r});
  EXPECT_NE(table.find("stopped within 1 min of start"), std::string::npos) << table;
}

TEST(ReportCompute, StopCauseNames) {
  EXPECT_STREQ(ToString(StopCause::kUnfunded), "unfunded");
  EXPECT_STREQ(ToString(StopCause::kFairShare), "fair-share");
  EXPECT_STREQ(ToString(StopCause::kReservation), "reservation");
  EXPECT_STREQ(ToString(StopCause::kOwnBudget), "own-budget");
  EXPECT_STREQ(ToString(StopCause::kDrain), "drain");
  EXPECT_STREQ(ToString(StopCause::kDrainForced), "drain-forced");
  EXPECT_STREQ(ToString(StopCause::kPriority), "priority");
  EXPECT_STREQ(ToString(StopCause::kNodeLost), "node-lost");
  EXPECT_STREQ(ToString(StopCause::kMaxRuntime), "max-runtime");
}

TEST(ReportCompute, DrainLatencyExcludesLostAndNeverEmpty) {
  SimResult r;
  r.drains.push_back(Drain(0, Seconds(100), false, false));
  r.drains.push_back(Drain(50, Seconds(350), true, false));  // forced: manual
  r.drains.push_back(Drain(0, Seconds(200), false, false));
  r.drains.push_back(Drain(0, kNever, false, false));       // still draining
  r.drains.push_back(Drain(10, Seconds(20), false, true));  // lost: excluded, manual
  r.drains.push_back(Drain(10, kNever, false, true));       // lost: not "still draining"
  const Measures m = Compute(r);
  EXPECT_EQ(m.drains.count, 6);
  EXPECT_EQ(m.drains.latency_p50, 200);  // {100, 200, 300}: 2nd
  EXPECT_EQ(m.drains.latency_p90, 300);
  EXPECT_EQ(m.drains.latency_max, 300);
  EXPECT_EQ(m.drains.still_draining, 1);
  EXPECT_EQ(m.drains.manual_interventions, 3);
}

// Drains that ended, by what the contract let stay longest on the node; lost and unfinished
// drains are left out, as from the latencies.
TEST(ReportCompute, DrainsByTheJobTheyWaitedFor) {
  SimResult r;
  auto drain = [&](Seconds empty, bool lost, std::string holder, bool restarted) {
    DrainRecord d = Drain(0, empty, false, lost);
    d.holder_class = std::move(holder);
    d.holder_restarted = restarted;
    r.drains.push_back(d);
  };
  drain(Seconds(7000), false, "training", true);
  drain(Seconds(9000), false, "training", false);
  drain(Seconds(60), false, "sweep", false);
  drain(Seconds(5), false, "", false);         // an empty node
  drain(kNever, false, "training", true);      // still draining
  drain(Seconds(10), true, "training", true);  // lost
  const Measures m = Compute(r);
  ASSERT_EQ(m.drains.by_holder.size(), 3u);
  const auto& t = m.drains.by_holder.at("training");
  EXPECT_EQ(t.count, 2);
  EXPECT_EQ(t.restarted, 1);
  EXPECT_EQ(t.latency_p50, 7000);
  EXPECT_EQ(t.latency_p90, 9000);
  EXPECT_EQ(m.drains.by_holder.at("sweep").latency_p90, 60);
  EXPECT_EQ(m.drains.by_holder.at("none").count, 1);
  const nlohmann::json j = ToJson({r});
  const auto& by = j["policies"][""]["drains"]["by_holder"];
  EXPECT_EQ(by["training"]["restarted"], 1);
  EXPECT_EQ(by["training"]["latency_s"]["p90"], 9000);
  EXPECT_EQ(by["none"]["count"], 1);
}

TEST(ReportJson, TwoPoliciesKeysAndValues) {
  const nlohmann::json j = ToJson({Sample("hourglass", 1.0), Sample("priority", 0.5)});
  EXPECT_EQ(j["scenario"], "tiny");
  EXPECT_EQ(j["start_s"], 0);
  EXPECT_EQ(j["end_s"], 2 * 86400);
  ASSERT_EQ(j["policies"].size(), 2u);
  const auto& h = j["policies"]["hourglass"];
  const auto& p = j["policies"]["priority"];
  EXPECT_DOUBLE_EQ(h["occupancy"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(p["occupancy"].get<double>(), 0.45);
  EXPECT_DOUBLE_EQ(h["entitlement_delivered"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(p["entitlement_delivered"].get<double>(), 0.45);
  EXPECT_DOUBLE_EQ(h["unfunded_share"].get<double>(), 0.2);
  EXPECT_EQ(h["wait_s"]["debug"]["p50"], 5);
  EXPECT_EQ(h["wait_s"]["debug"]["p90"], 10);
  EXPECT_EQ(h["wait_s"]["debug"]["p99"], 10);
  EXPECT_EQ(h["wait_s"]["debug"]["count"], 2);
  EXPECT_EQ(h["wait_s"]["batch"]["never_started"], 1);
  EXPECT_EQ(h["wait_s"]["all"]["count"], 3);
  EXPECT_EQ(h["wait_s_by_size"]["9-64"]["p50"], 600);
  EXPECT_TRUE(h["wait_s_by_size"]["257+"]["p50"].is_null());
  EXPECT_EQ(h["wait_s_by_size"].size(), 5u);
  EXPECT_EQ(h["preemptions"], 1);
  EXPECT_EQ(h["preemptions_by_cause"]["fair-share"], 1);
  EXPECT_EQ(h["preemptions_by_class"]["batch"], 1);
  EXPECT_DOUBLE_EQ(p["lost_gpu_hours"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(p["lost_gpu_hours_by_class"]["batch"].get<double>(), 1.25);
  EXPECT_EQ(h["contract_violations"], 0);
  EXPECT_DOUBLE_EQ(h["entitlement_by_level"]["1"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(h["entitlement_by_level"]["2"].get<double>(), 0.9);
  ASSERT_EQ(h["budgets"].size(), 2u);
  EXPECT_EQ(h["budgets"][1]["path"], "a/x");
  EXPECT_EQ(h["budgets"][1]["depth"], 2);
  EXPECT_DOUBLE_EQ(h["budgets"][1]["owed_gpu_hours"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(h["budgets"][1]["delivered_gpu_hours"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(h["budgets"][1]["ratio"].get<double>(), 0.9);
  EXPECT_EQ(h["drains"]["count"], 1);
  EXPECT_EQ(h["drains"]["latency_s"]["p90"], 300);
  EXPECT_EQ(h["drains"]["latency_s"]["max"], 300);
  EXPECT_EQ(h["drains"]["still_draining"], 0);
  EXPECT_EQ(h["drains"]["manual_interventions"], 0);
  EXPECT_EQ(h["jobs"]["submitted"], 3);
  EXPECT_EQ(h["jobs"]["started"], 2);
  EXPECT_EQ(h["jobs"]["succeeded"], 1);
  EXPECT_EQ(h["jobs"]["running"], 1);
  EXPECT_EQ(h["jobs"]["pending"], 1);
  EXPECT_DOUBLE_EQ(h["capacity_gpu_hours"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(h["allocated_gpu_hours"].get<double>(), 900.0);
  EXPECT_DOUBLE_EQ(h["unfunded_gpu_hours"].get<double>(), 180.0);
  ASSERT_EQ(h["series"].size(), 1u);
  EXPECT_EQ(h["series"][0]["t"], 3600);
  EXPECT_DOUBLE_EQ(h["series"][0]["allocated"].get<double>(), 1000.1235);  // 4 decimals
  EXPECT_EQ(h["series"][0]["largest_free"], 64);
  EXPECT_EQ(h["events"], 1234);
  EXPECT_EQ(h["cycles"], 56);
}

// The funded wait split is summed into the size buckets of the wait table: 3 and 8 GPUs into
// "2-8", 512 into "257+"; buckets nobody waited in are zeros, so every key is always there.
TEST(ReportJson, FundedWaitSplitIsSummedPerSizeBucket) {
  SimResult r = Sample("hourglass", 1.0);
  r.funded_wait_by_gpus[3] = WaitSplit{1.0, 2.0, 0.5, 0.25};
  r.funded_wait_by_gpus[8] = WaitSplit{1.0, 0.0, 0.5, 0.0};
  r.funded_wait_by_gpus[512] = WaitSplit{10.0, 0.0, 0.0, 0.0};
  const Measures m = Compute(r);
  EXPECT_DOUBLE_EQ(m.funded_wait_split[1].short_of_gpus, 2.0);
  EXPECT_DOUBLE_EQ(m.funded_wait_split[1].fragmented, 2.0);
  EXPECT_DOUBLE_EQ(m.funded_wait_split[1].placeable, 1.0);
  EXPECT_DOUBLE_EQ(m.funded_wait_split[1].victims_leaving, 0.25);
  EXPECT_DOUBLE_EQ(m.funded_wait_split[4].total(), 10.0);
  const nlohmann::json j = ToJson({r})["policies"]["hourglass"]["funded_wait_job_hours_by_size"];
  EXPECT_DOUBLE_EQ(j["2-8"]["job_hours"].get<double>(), 5.25);
  EXPECT_DOUBLE_EQ(j["2-8"]["fragmented"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["257+"]["short_of_gpus"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(j["1"]["job_hours"].get<double>(), 0.0);
  r.funded_wait_by_class["batch"] = WaitSplit{0.0, 3.0, 1.0, 0.0};
  const nlohmann::json c = ToJson({r})["policies"]["hourglass"]["funded_wait_job_hours_by_class"];
  EXPECT_DOUBLE_EQ(c["batch"]["job_hours"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(c["batch"]["fragmented"].get<double>(), 3.0);
  const std::string table = RenderTable({r});
  EXPECT_NE(table.find("batch funded wait short/frag/place/grace"), std::string::npos);
  EXPECT_NE(table.find("0/75/25/0%"), std::string::npos) << table;
  EXPECT_NE(table.find("2-8 GPUs funded wait short/frag/place/grace"), std::string::npos);
  EXPECT_NE(table.find("38/38/19/5%"), std::string::npos) << table;
  EXPECT_NE(table.find("100/0/0/0%"), std::string::npos) << table;
}

TEST(ReportJson, ExactKeySetOfAPolicy) {
  const nlohmann::json j = ToJson({Sample("hourglass", 1.0)});
  std::vector<std::string> keys;
  for (const auto& [k, v] : j["policies"]["hourglass"].items()) keys.push_back(k);
  const std::vector<std::string> want = {"active_sessions_stopped",
                                         "allocated_gpu_hours",
                                         "budgets",
                                         "capacity_gpu_hours",
                                         "contract_violations",
                                         "cycles",
                                         "delay_s",
                                         "drains",
                                         "entitlement_by_level",
                                         "entitlement_delivered",
                                         "events",
                                         "funded_wait_job_hours_by_class",
                                         "funded_wait_job_hours_by_size",
                                         "jobs",
                                         "lost_gpu_hours",
                                         "lost_gpu_hours_by_class",
                                         "occupancy",
                                         "preemptions",
                                         "preemptions_by_cause",
                                         "preemptions_by_class",
                                         "series",
                                         "shortfall",
                                         "stopped_within_1m_by_class",
                                         "taken_back_within_1h",
                                         "unfunded_gpu_hours",
                                         "unfunded_share",
                                         "wait_s",
                                         "wait_s_by_size"};
  EXPECT_EQ(keys, want);
}

// The entitlement gap's parts: over-delivery summed over leaves only (a parent's total includes
// its leaves'), and the engine's undelivered time as recorded.
TEST(ReportJson, ShortfallSplitsTheEntitlementGap) {
  SimResult r = Sample("hourglass", 1.0);
  r.budgets.push_back(Budget("b", 1, false, 50, 70));
  r.budgets.push_back(Budget("b/y", 2, true, 30, 60));  // 30 over
  r.budgets.push_back(Budget("b/z", 2, true, 20, 10));  // 10 short
  r.undelivered = Undelivered{500, 220, 7, 2, 1.5, 0.5};
  const nlohmann::json s = ToJson({r})["policies"]["hourglass"]["shortfall"];
  EXPECT_DOUBLE_EQ(s["owed_gpu_hours"].get<double>(), 150.0);  // a/x, b/y, b/z
  EXPECT_DOUBLE_EQ(s["over_delivered_gpu_hours"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(s["undelivered_gpu_hours"].get<double>(), 11.0);
  EXPECT_DOUBLE_EQ(s["at_capacity"]["hours"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(s["at_capacity"]["unfunded_alone_gpu_hours"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(s["at_capacity"]["unfunded_beside_funded_gpu_hours"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(s["at_capacity"]["idle_gpu_hours"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(s["below_capacity"]["hours"].get<double>(), 220.0);
  EXPECT_DOUBLE_EQ(s["below_capacity"]["waiting_gpu_hours"].get<double>(), 0.5);
  // The table shows the same figures.
  const std::string table = RenderTable({r});
  EXPECT_NE(table.find("over-delivered GPU-h"), std::string::npos);
  EXPECT_NE(table.find("demand >= GPUs: unfunded alone"), std::string::npos);
}

TEST(ReportJson, UnknownRatiosAreNullAndDuplicateNamesKept) {
  SimResult empty;
  empty.policy = "x";
  const nlohmann::json j = ToJson({empty, empty});
  ASSERT_TRUE(j["policies"].contains("x"));
  ASSERT_TRUE(j["policies"].contains("x#2"));
  EXPECT_TRUE(j["policies"]["x"]["occupancy"].is_null());
  EXPECT_TRUE(j["policies"]["x"]["entitlement_delivered"].is_null());
  EXPECT_TRUE(j["policies"]["x"]["drains"]["latency_s"]["p90"].is_null());
}

TEST(ReportJson, RoundsToFourDecimalsWithoutNegativeZero) {
  SimResult r;
  r.policy = "p";
  r.preemptions.push_back(Preemption("batch", StopCause::kDrain, 1.0 / 3.0, false));
  r.series.push_back(SeriesPoint{Seconds(0), 1.0, -0.00001, 0, 0});
  const std::string s = RenderJson({r});
  EXPECT_NE(s.find("\"lost_gpu_hours\": 0.3333,"), std::string::npos) << s;
  EXPECT_EQ(s.find("-0.0"), std::string::npos) << s;
}

TEST(ReportJson, SameInputGivesIdenticalBytes) {
  const std::vector<SimResult> runs = {Sample("hourglass", 1.0), Sample("priority", 0.7)};
  const std::string a = RenderJson(runs);
  const std::string b = RenderJson({Sample("hourglass", 1.0), Sample("priority", 0.7)});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.back(), '\n');
  EXPECT_EQ(RenderTable(runs), RenderTable(runs));
}

TEST(ReportTable, PoliciesSideBySideWithHumanDurations) {
  SimResult h = Sample("hourglass", 1.0);
  SimResult p = Sample("priority", 0.5);
  p.jobs[1].waits = {Seconds(2 * 3600 + 360)};     // batch p50 2.1h
  p.jobs[0].waits = {Seconds(270), Seconds(270)};  // debug 4.5m
  const std::string t = RenderTable({h, p});
  auto find_line = [&](const std::string& prefix) {
    std::istringstream s(t);
    std::string l;
    while (std::getline(s, l)) {
      if (l.rfind(prefix, 0) == 0) return l;
    }
    return std::string();
  };
  const std::string header = find_line("measure");
  ASSERT_FALSE(header.empty()) << t;
  EXPECT_LT(header.find("hourglass"), header.find("priority"));
  const std::string occ = find_line("occupancy");
  EXPECT_NE(occ.find("90.0%"), std::string::npos) << occ;
  EXPECT_NE(occ.find("45.0%"), std::string::npos) << occ;
  EXPECT_LT(occ.find("90.0%"), occ.find("45.0%"));
  const std::string debug = find_line("debug wait p50");
  EXPECT_NE(debug.find("5s"), std::string::npos) << debug;
  EXPECT_NE(debug.find("4.5m"), std::string::npos) << debug;
  EXPECT_NE(find_line("batch wait p50").find("2.1h"), std::string::npos) << t;
  EXPECT_NE(find_line("contract violations").find('0'), std::string::npos);
  // The per-budget section lists programs and projects with owed, delivered and ratio.
  const std::string proj = find_line("  a/x");
  ASSERT_FALSE(proj.empty()) << t;
  EXPECT_NE(proj.find("100.0"), std::string::npos) << proj;
  EXPECT_NE(proj.find("0.900"), std::string::npos) << proj;
  EXPECT_NE(proj.find("0.450"), std::string::npos) << proj;
  // Columns line up: the last column is right-aligned, so full rows end at the same place.
  EXPECT_EQ(occ.size(), header.size());
  EXPECT_EQ(debug.size(), header.size());
}

TEST(ReportProgress, PrintsEveryNthCallOnlyOnATerminal) {
  std::ostringstream tty;
  ProgressLine line(tty, /*is_terminal=*/true, /*every=*/3);
  for (int i = 0; i < 4; ++i) {
    line.Update("hourglass", Seconds(86400 * 12 + 25920), Days(30), 1200000);
  }
  line.Done();
  // Calls 0 and 3 print, then Done ends the line.
  const std::string one = "\rhourglass day 12.3/30  events 1.2M";
  EXPECT_EQ(tty.str(), one + one + "\n");

  std::ostringstream pipe;
  ProgressLine quiet(pipe, /*is_terminal=*/false, 1);
  quiet.Update("hourglass", Seconds(0), Days(30), 1);
  quiet.Done();
  EXPECT_EQ(pipe.str(), "");
}

// Runs that overlap share the line in the order they first reported; one that ended leaves it.
TEST(ReportProgress, OverlappingRunsShareTheLine) {
  std::ostringstream tty;
  ProgressLine line(tty, true, 1);
  line.Update("hourglass", Days(3), Days(30), 1500);
  line.Update("priority", Days(1), Days(30), 900);
  line.Update("hourglass", Days(6), Days(30), 3000);
  line.Finish("hourglass");
  line.Update("priority", Days(2), Days(30), 1800);
  line.Done();
  const std::string h3 = "hourglass day 3.0/30  events 1.5k";
  const std::string h6 = "hourglass day 6.0/30  events 3.0k";
  const std::string p1 = "priority day 1.0/30  events 900";
  const std::string p2 = "priority day 2.0/30  events 1.8k";
  const std::string both = h6 + " | " + p1;
  EXPECT_EQ(tty.str(), "\r" + h3 + "\r" + h3 + " | " + p1 + "\r" + both + "\r" + p2 +
                           std::string(both.size() - p2.size(), ' ') + "\n");
}

TEST(ReportProgress, ShorterLineBlanksTheRest) {
  std::ostringstream tty;
  ProgressLine line(tty, true, 1);
  line.Update("hourglass", Seconds(0), Days(30), 1500);
  line.Finish("hourglass");
  line.Update("p", Seconds(0), Days(30), 1);
  const std::string first = "\rhourglass day 0.0/30  events 1.5k";
  const std::string second = "\rp day 0.0/30  events 1";
  EXPECT_EQ(tty.str(), first + second + std::string(first.size() - second.size(), ' '));
  EXPECT_EQ(HumanCount(999), "999");
  EXPECT_EQ(HumanCount(999999), "1.0M");
  EXPECT_EQ(HumanCount(3400000000), "3.4G");
}

}  // namespace
}  // namespace hg::sim
