// Users who submit again what the cluster killed (SimOptions::resubmit_after): the job comes back
// after the delay as a new submission at the end of its budget's queue and runs from scratch.
#include <gtest/gtest.h>

#include "core/policy.h"
#include "sim/engine.h"
#include "sim/report.h"
#include "sim/test_job.h"

namespace hg::sim {
namespace {

SimResult Simulated(const Scenario& sc, std::optional<Seconds> resubmit_after) {
  SimOptions opt;
  opt.resubmit_after = resubmit_after;
  return SimulateHourglass(sc, opt);
}

// The unfunded job 1 is stopped at 600 s for the funded job 2 and leaves at 660 s. Without the
// model it stays preempted; with a 300 s delay its user submits it again at 960 s, it waits for
// job 2 to end at 1,260 s and then runs its whole two hours again.
TEST(Resubmit, AKilledJobComesBackAfterTheDelayAndRunsFromScratch) {
  const Scenario sc = UnfundedThenFundedOnOneNode("resubmit");

  const SimResult off = Simulated(sc, std::nullopt);
  EXPECT_EQ(off.jobs[0].final_state, JobState::kPreempted);
  EXPECT_EQ(off.jobs[0].resubmissions, 0);
  EXPECT_EQ(Compute(off).jobs.resubmissions, 0);

  const SimResult on = Simulated(sc, Seconds(300));
  const JobRecord& killed = on.jobs[0];
  EXPECT_EQ(killed.final_state, JobState::kSucceeded);
  EXPECT_EQ(killed.resubmissions, 1);
  EXPECT_EQ(killed.attempts, 2);
  ASSERT_EQ(killed.waits.size(), 2u);
  EXPECT_EQ(killed.waits[0], Seconds(0));
  EXPECT_EQ(killed.waits[1], Seconds(1260 - 960));  // from the resubmission, not the first submit
  // The first run's work is lost: the preemption record still says so.
  ASSERT_EQ(on.preemptions.size(), 1u);
  EXPECT_NEAR(on.preemptions[0].lost_gpu_hours, 8.0 * 660 / 3600, 1e-9);
  // It ran 7,200 s from 1,260 s: allocated GPU-hours cover both runs in full.
  EXPECT_NEAR(on.allocated_gpu_hours, 8.0 * (660 + 600 + 7200) / 3600, 1e-9);
  // Its delay counts from its first submission: the lost run, the 300 s until it came back and
  // its second wait (1,260 s in all). Without the model it never completes and has none.
  ASSERT_TRUE(killed.delay.has_value());
  EXPECT_EQ(*killed.delay, Seconds(1260));
  EXPECT_FALSE(off.jobs[0].delay.has_value());
  ASSERT_TRUE(on.jobs[1].delay.has_value());
  EXPECT_EQ(*on.jobs[1].delay, Seconds(60));  // the funded job: its wait for the victim's grace
  const Measures m = Compute(on);
  EXPECT_EQ(m.delay_by_class.at("sweep").p50, 1260);
  EXPECT_EQ(m.delay_by_class.at("sweep").count, 1);
  EXPECT_EQ(Compute(off).delay_by_class.count("sweep"), 0u);
  EXPECT_EQ(m.jobs.resubmissions, 1);
  EXPECT_EQ(m.jobs.succeeded, 2);
  EXPECT_EQ(m.jobs.preempted, 0);
}

// A resubmission is a new submission: job 1, failed when its node was lost, comes back behind
// job 2 of the same budget, which was submitted before it and takes the node first.
TEST(Resubmit, AResubmittedJobQueuesBehindJobsSubmittedBeforeIt) {
  Scenario sc = OneNodeOneBudget("lost", Hours(4));
  sc.jobs = {TestJob(1, 0, 8, "team", 3600), TestJob(2, 100, 8, "team", 600)};
  TimedEvent lost;
  lost.at = Seconds(1000);
  lost.kind = EventKind::kNodeLost;
  lost.target = "n0";
  TimedEvent back = lost;
  back.at = Seconds(1100);
  back.kind = EventKind::kRepair;
  sc.events = {lost, back};

  const SimResult off = Simulated(sc, std::nullopt);
  EXPECT_EQ(off.jobs[0].final_state, JobState::kFailed);
  ASSERT_EQ(off.jobs[1].waits.size(), 1u);
  EXPECT_EQ(off.jobs[1].waits[0], Seconds(1100 - 100));

  const SimResult on = Simulated(sc, Seconds(60));  // back in the queue at 1,060 s
  ASSERT_EQ(on.jobs[1].waits.size(), 1u);
  EXPECT_EQ(on.jobs[1].waits[0], Seconds(1100 - 100));  // job 2 still goes first
  const JobRecord& again = on.jobs[0];
  EXPECT_EQ(again.resubmissions, 1);
  EXPECT_EQ(again.final_state, JobState::kSucceeded);
  ASSERT_EQ(again.waits.size(), 2u);
  EXPECT_EQ(again.waits[1], Seconds(1700 - 1060));  // after job 2's 600 s
}

// What the model leaves alone: a resumable job is requeued (it keeps its place and its saved
// work), and a job ended by its max_runtime would end the same way again.
TEST(Resubmit, RequeuedAndMaxRuntimeEndsAreNotResubmitted) {
  Scenario sc = UnfundedThenFundedOnOneNode("not-resubmitted");
  sc.jobs[0].spec.resumable = true;
  const SimResult requeued = Simulated(sc, Seconds(300));
  EXPECT_EQ(requeued.jobs[0].resubmissions, 0);
  EXPECT_EQ(requeued.jobs[0].attempts, 2);
  ASSERT_EQ(requeued.jobs[0].waits.size(), 2u);
  EXPECT_EQ(requeued.jobs[0].waits[1], Seconds(1260 - 660));  // requeued at once when it left

  Scenario capped = OneNodeOneBudget("capped", Hours(2));
  SimJob j = TestJob(1, 0, 8, "team", 3600);
  j.spec.max_runtime = Seconds(600);
  capped.jobs = {j};
  const SimResult ended = Simulated(capped, Seconds(60));
  EXPECT_EQ(ended.jobs[0].final_state, JobState::kFailed);
  EXPECT_EQ(ended.jobs[0].resubmissions, 0);
  EXPECT_EQ(ended.jobs[0].attempts, 1);
}

}  // namespace
}  // namespace hg::sim
