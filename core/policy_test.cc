#include "core/policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace hg {
namespace {

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::vector<Node> Nodes(const std::vector<int32_t>& gpus) {
  std::vector<Node> out;
  for (int32_t g : gpus) {
    Node n;
    n.id = NodeId(static_cast<int32_t>(out.size()));
    n.gpus = Gpus(g);
    out.push_back(n);
  }
  return out;
}

JobSpec Job(int32_t gpus, int32_t per_node = 0) {
  JobSpec j;
  j.id = JobId(1);
  j.gpus = Gpus(gpus);
  j.gpus_per_node = Gpus(per_node);
  j.min_runtime = Hours(1);
  return j;
}

// Asserts that ValidateJob refuses `j` on `field` with a reason containing `needle`.
void ExpectInvalid(const JobSpec& j, const std::vector<Node>& nodes, const std::string& field,
                   const std::string& needle, const PolicyConfig& cfg = {}) {
  auto r = ValidateJob(j, nodes, cfg);
  ASSERT_FALSE(r.has_value()) << "accepted; expected an error on " << field;
  EXPECT_EQ(r.error().field, field) << r.error().ToString();
  EXPECT_TRUE(Contains(r.error().reason, needle)) << r.error().ToString();
}

TEST(MakePolicy, ByName) {
  for (const std::string& name : PolicyNames()) {
    auto p = MakePolicy(name, PolicyConfig{});
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ((*p)->name(), name);
  }
  EXPECT_EQ(PolicyNames(), (std::vector<std::string>{"hourglass", "priority", "fifo-backfill",
                                                     "slurm-multifactor", "kueue-quota"}));
}

TEST(MakePolicy, UnknownNameListsTheKnownOnes) {
  auto p = MakePolicy("fifo", PolicyConfig{});
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().field, "policy");
  EXPECT_TRUE(Contains(p.error().reason, "'fifo'")) << p.error().reason;
  EXPECT_TRUE(Contains(p.error().reason, "hourglass, priority")) << p.error().reason;
  EXPECT_FALSE(MakePolicy("", PolicyConfig{}).has_value());
  EXPECT_FALSE(MakePolicy("Hourglass", PolicyConfig{}).has_value());  // names are exact
}

TEST(ValidateJob, AcceptsReasonableJobs) {
  const auto nodes = Nodes({8, 8, 8, 8});
  EXPECT_TRUE(ValidateJob(Job(1), nodes, {}).has_value());
  EXPECT_TRUE(ValidateJob(Job(32, 8), nodes, {}).has_value());
  EXPECT_TRUE(ValidateJob(Job(20), nodes, {}).has_value());  // 8 + 8 + 4
  JobSpec at_cap = Job(8);
  at_cap.min_runtime = Hours(8);
  at_cap.max_runtime = Hours(8);
  at_cap.grace = Minutes(30);
  EXPECT_TRUE(ValidateJob(at_cap, nodes, {}).has_value());
}

TEST(ValidateJob, MinRuntimeOverTheCapNamesTheCap) {
  const auto nodes = Nodes({8});
  JobSpec j = Job(1);
  j.min_runtime = Hours(9);
  ExpectInvalid(j, nodes, "min_runtime", "cap of 8 h");
  ExpectInvalid(j, nodes, "min_runtime", "got 9 h");
  PolicyConfig cfg;
  cfg.min_runtime_cap = Hours(2);
  j.min_runtime = Hours(2) + Seconds(1);
  ExpectInvalid(j, nodes, "min_runtime", "cap of 2 h", cfg);
  j.min_runtime = Seconds(-1);
  ExpectInvalid(j, nodes, "min_runtime", "negative");
}

TEST(ValidateJob, GpusPerNodeMustDivideGpus) {
  ExpectInvalid(Job(8, 3), Nodes({8, 8}), "gpus_per_node", "divide");
  ExpectInvalid(Job(8, -1), Nodes({8, 8}), "gpus_per_node", "negative");
}

TEST(ValidateJob, AJobThatCanNeverFitIsRefused) {
  ExpectInvalid(Job(0), Nodes({8}), "gpus", "at least 1");
  ExpectInvalid(Job(33), Nodes({8, 8, 8, 8}), "gpus", "never fit");
  ExpectInvalid(Job(16, 16), Nodes({8, 8, 8, 8}), "gpus_per_node", "no node has 16");
  // 12 GPUs as 2 x 6 needs two nodes with 6: only one node is that large.
  ExpectInvalid(Job(12, 6), Nodes({8, 4, 4}), "gpus", "never fit");
  EXPECT_TRUE(ValidateJob(Job(12, 4), Nodes({8, 4}), {}).has_value());  // 4 + 4 + 4
  ExpectInvalid(Job(1), Nodes({}), "gpus", "never fit");
}

TEST(ValidateJob, GraceOverItsCapIsRefused) {
  JobSpec j = Job(1);
  j.grace = Minutes(31);
  ExpectInvalid(j, Nodes({8}), "grace", "cap");
  j.grace = Seconds(-5);
  ExpectInvalid(j, Nodes({8}), "grace", "negative");
}

TEST(ValidateJob, MaxRuntimeMustBePositiveAndCoverMinRuntime) {
  JobSpec j = Job(1);
  j.min_runtime = Hours(2);
  j.max_runtime = Hours(1);
  ExpectInvalid(j, Nodes({8}), "max_runtime", "min_runtime");
  j.max_runtime = Seconds(0);
  ExpectInvalid(j, Nodes({8}), "max_runtime", "positive");
}

TEST(ValidateJob, ALeaseIsBoundedBySessionLimits) {
  JobSpec j = Job(4);
  j.job_class = "interactive";
  j.lease = Minutes(30);
  j.max_runtime = Hours(24);
  EXPECT_TRUE(ValidateJob(j, Nodes({8}), {}).has_value());
  j.max_runtime = std::nullopt;
  ExpectInvalid(j, Nodes({8}), "max_runtime", "required with a lease");
  j.max_runtime = Hours(25);
  ExpectInvalid(j, Nodes({8}), "max_runtime", "cap of 24 h for a job with a lease");
  j.max_runtime = Hours(12);
  j.lease = Hours(2);
  ExpectInvalid(j, Nodes({8}), "lease", "cap of 1 h");
  j.lease = Seconds(-1);
  ExpectInvalid(j, Nodes({8}), "lease", "negative");
  JobSpec gang = Job(16);
  gang.lease = Minutes(30);
  gang.max_runtime = Hours(12);
  ExpectInvalid(gang, Nodes({8, 8}), "lease", "at most 8 GPUs");
  PolicyConfig wide;
  wide.session_max_gpus = 16;
  EXPECT_TRUE(ValidateJob(gang, Nodes({8, 8}), wide).has_value());
}

TEST(RunningJob, ALeaseExtendsProtectionFromTheLastActivity) {
  JobSpec s = Job(1);  // min_runtime 1 h
  RunningJob r;
  r.spec = &s;
  r.started = Hours(10);
  r.active_at = Hours(13);
  EXPECT_EQ(r.contract_until(), Hours(11));
  EXPECT_EQ(r.protected_until(), Hours(11));  // no lease: the contract alone
  s.lease = Minutes(30);
  EXPECT_EQ(r.protected_until(), Hours(13) + Minutes(30));
  EXPECT_EQ(r.contract_until(), Hours(11));
  r.active_at = Seconds(0);  // never reported: the lease counts from the start
  EXPECT_EQ(r.protected_until(), Hours(11));
  s.lease = Hours(1) + Minutes(30);
  EXPECT_EQ(r.protected_until(), Hours(11) + Minutes(30));
}

BudgetTree Tree() {
  auto t = BudgetTree::Build(
      {BudgetSpec{"ai2", "", 1.0, {}, {}, 0}, BudgetSpec{"olmo", "ai2", 1.0, 16, {}, 0}});
  EXPECT_TRUE(t.has_value());
  return std::move(*t);
}

TEST(Describe, EveryReasonCodeRendersToText) {
  const BudgetTree t = Tree();
  const BudgetId olmo = *t.Find("olmo");
  std::vector<std::string> seen;
  for (int c = 0; c <= static_cast<int>(ReasonCode::kNodeDrained); ++c) {
    const Reason r{static_cast<ReasonCode>(c), JobId(42), olmo, 7, 3};
    const std::string s = Describe(r, t);
    EXPECT_FALSE(s.empty()) << c;
    EXPECT_NE(s, "?") << c;
    seen.push_back(s);
  }
  // Every code says something different.
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());
}

TEST(Describe, NamesTheBudgetPathJobAndNumbersWhereRelevant) {
  const BudgetTree t = Tree();
  const BudgetId olmo = *t.Find("olmo");
  auto d = [&](ReasonCode c, int64_t a = 0, int64_t b = 0, BudgetId budget = kUnfunded) {
    return Describe(Reason{c, JobId(42), budget, a, b}, t);
  };
  const std::string wait = d(ReasonCode::kWaitGpus, 16, 4, olmo);
  EXPECT_TRUE(Contains(wait, "ai2/olmo")) << wait;
  EXPECT_TRUE(Contains(wait, "16")) << wait;
  EXPECT_TRUE(Contains(wait, "4 free")) << wait;
  const std::string limit = d(ReasonCode::kWaitBudgetLimit, 16, 0, olmo);
  EXPECT_TRUE(Contains(limit, "ai2/olmo")) << limit;
  EXPECT_TRUE(Contains(limit, "16")) << limit;
  const std::string fair = d(ReasonCode::kPreemptFairShare, 0, 0, olmo);
  EXPECT_TRUE(Contains(fair, "ai2/olmo")) << fair;
  EXPECT_TRUE(Contains(fair, "42")) << fair;
  EXPECT_TRUE(Contains(d(ReasonCode::kPreemptForFunded), "42"));
  EXPECT_TRUE(Contains(d(ReasonCode::kPreemptReservation), "42"));
  EXPECT_TRUE(Contains(d(ReasonCode::kPreemptDrain, 5), "node 5"));
  EXPECT_TRUE(Contains(d(ReasonCode::kPreemptDrainForced, 5), "node 5"));
  EXPECT_TRUE(Contains(d(ReasonCode::kWaitPreemption, 3600), "t=3600s"));
  EXPECT_TRUE(Contains(d(ReasonCode::kWaitReservation, 7200), "t=7200s"));
  const std::string tier = d(ReasonCode::kPreemptTier, 2, 0);
  EXPECT_TRUE(Contains(tier, "42")) << tier;
  EXPECT_TRUE(Contains(tier, "2 > 0")) << tier;
  // A job charged to a budget with children sits in its hidden direct child, shown as the budget.
  const std::string direct = d(ReasonCode::kWaitGpus, 1, 0, t.ChargeTarget(*t.Find("ai2")));
  EXPECT_TRUE(Contains(direct, "budget ai2)")) << direct;
  EXPECT_FALSE(Contains(direct, "~")) << direct;
  EXPECT_TRUE(Contains(d(ReasonCode::kWaitGpus, 1, 0, kUnfunded), "(unfunded)"));
  EXPECT_TRUE(Contains(d(ReasonCode::kWaitGpus, 1, 0, BudgetId(99)), "(unfunded)"));
}

TEST(ModelToString, NodeAndJobStates) {
  EXPECT_STREQ(ToString(NodeState::kReady), "ready");
  EXPECT_STREQ(ToString(NodeState::kDraining), "draining");
  EXPECT_STREQ(ToString(NodeState::kDrained), "drained");
  EXPECT_STREQ(ToString(NodeState::kLost), "lost");
  EXPECT_STREQ(ToString(JobState::kPending), "pending");
  EXPECT_STREQ(ToString(JobState::kRunning), "running");
  EXPECT_STREQ(ToString(JobState::kSucceeded), "succeeded");
  EXPECT_STREQ(ToString(JobState::kFailed), "failed");
  EXPECT_STREQ(ToString(JobState::kCancelled), "cancelled");
  EXPECT_STREQ(ToString(JobState::kPreempted), "preempted");
}

TEST(ErrorToString, RendersTheKnownParts) {
  EXPECT_EQ((Error{"share", "must be > 0", "b.toml", 3}).ToString(),
            "b.toml:3: share: must be > 0");
  EXPECT_EQ((Error{"share", "must be > 0", "b.toml", 0}).ToString(), "b.toml: share: must be > 0");
  EXPECT_EQ((Error{"share", "must be > 0", "", 0}).ToString(), "share: must be > 0");
  EXPECT_EQ((Error{"", "bad", "", 0}).ToString(), "bad");
}

}  // namespace
}  // namespace hg
