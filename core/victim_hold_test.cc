#include "core/victim_hold.h"

#include <gtest/gtest.h>

#include <string>

#include "core/policy_test_world.h"

namespace hg {
namespace {

using policytest::PolicyWorld;

BudgetTree OneBudget() { return *BudgetTree::Build({{"a", "", 1.0, {}, {}, 0}}); }

JobSpec& NewJob(PolicyWorld& w, int32_t gpus, bool funded, int tier = 1) {
  JobSpec s;
  s.gpus = Gpus(gpus);
  if (funded) s.budget = w.tree().ChargeTarget(*w.tree().Find("a"));
  s.min_runtime = funded ? Hours(1) : Seconds(0);
  s.tier = tier;
  return w.AddJob(std::move(s));
}

RunningJob& Leaving(PolicyWorld& w, const JobSpec& victim, NodeId n, const JobSpec& for_job) {
  RunningJob& r = w.Run(victim, Seconds(0), n);
  r.stopping = true;
  r.stop_at = Seconds(100);
  r.stop_for = for_job.id;
  return r;
}

// A 20-GPU job on 8-GPU nodes is two slices of 8 and one of 4. Its victim frees all 8 GPUs of
// node 0, so nothing is held there; the other two slices go where they fit most tightly: node 1's
// 8 free GPUs and node 3's 4, not node 2's 6.
TEST(HoldForVictims, HoldsEachSliceOfTheShapeWhereItFitsMostTightly) {
  PolicyWorld w(OneBudget());
  std::vector<NodeId> n;
  for (int k = 0; k < 4; ++k) n.push_back(w.AddNode(8, "b0"));
  const JobSpec& job = NewJob(w, 20, true);
  Leaving(w, NewJob(w, 8, false), n[0], job);
  w.Run(NewJob(w, 2, true), Seconds(0), n[2]);
  w.Run(NewJob(w, 4, true), Seconds(0), n[3]);
  w.Pend(job, Seconds(10));
  const Snapshot snap = w.Snap(Seconds(20), false);
  ClusterState cs(snap.nodes, snap.running);
  HoldForVictims(snap, {{job.id.value(), Seconds(100)}}, cs);
  EXPECT_EQ(cs.free(n[0]), 0);  // the victim's GPUs are not free yet
  EXPECT_EQ(cs.free(n[1]), 0);
  EXPECT_EQ(cs.free(n[2]), 6);
  EXPECT_EQ(cs.free(n[3]), 0);
}

// Two jobs wait for victims on the same node: the first (by id) holds what its slice needs
// there, the second finds the rest too small beside its own victim and holds elsewhere.
TEST(HoldForVictims, JobsHoldInIdOrderAndNeverTheSameGpus) {
  PolicyWorld w(OneBudget());
  const NodeId n0 = w.AddNode(8, "b0");
  const NodeId n1 = w.AddNode(8, "b0");
  const JobSpec& first = NewJob(w, 6, true);
  const JobSpec& second = NewJob(w, 4, true);
  Leaving(w, NewJob(w, 2, false), n0, first);
  Leaving(w, NewJob(w, 1, false), n0, second);
  w.Pend(first, Seconds(10));
  w.Pend(second, Seconds(10));
  const Snapshot snap = w.Snap(Seconds(20), false);
  ClusterState cs(snap.nodes, snap.running);
  HoldForVictims(snap, {{first.id.value(), Seconds(100)}, {second.id.value(), Seconds(100)}}, cs);
  EXPECT_EQ(cs.free(n0), 1);  // 4 held for the first beside its 2; 1 + 1 < 4 for the second
  EXPECT_EQ(cs.free(n1), 4);  // so the second holds 4 on node 1
}

// Every policy that preempts keeps a requeued unfunded job off the free GPUs a funded job waits
// to use beside its leaving victim. Without that, the unfunded job started there, was stopped
// for the same funded job next cycle, and so on: under the server's loop, a cycle every tick,
// slurm-multifactor stopped unfunded work 41,295 times for one job on lab-month seed 1.
TEST(HoldForVictims, NoPolicyStartsOtherWorkOnTheGpusAWaitingJobNeeds) {
  for (const std::string name : {"hourglass", "slurm-multifactor", "kueue-quota", "priority"}) {
    SCOPED_TRACE(name);
    PolicyWorld w(OneBudget());
    const NodeId n0 = w.AddNode(8, "b0");
    const NodeId n1 = w.AddNode(8, "b0");
    const JobSpec& job = NewJob(w, 8, true, 2);
    Leaving(w, NewJob(w, 4, false, 0), n0, job);
    w.Run(NewJob(w, 8, true), Seconds(0), n1);
    const JobSpec& requeued = NewJob(w, 4, false, 0);
    w.Pend(job, Seconds(10));
    w.Pend(requeued, Seconds(15));
    auto policy = MakePolicy(name, PolicyConfig{});
    ASSERT_TRUE(policy.has_value());
    const Decisions d = (*policy)->Cycle(w.Snap(Seconds(20), true));
    EXPECT_TRUE(d.starts.empty());
    EXPECT_TRUE(d.stops.empty());
  }
}

}  // namespace
}  // namespace hg
