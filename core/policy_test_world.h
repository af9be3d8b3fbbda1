// Test support for the policy tests (header only: core's library is built from its .cc files).
// A hand-built world for one policy cycle: nodes, an optional budget tree with its ledgers, job
// specs at stable addresses, the two pending queues and the running jobs; and helpers that pick
// decisions out of a cycle's result. Each policy's test derives its own World from it, adding the
// job constructor and the cycle call its tests read best with.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/budget_tree.h"
#include "core/policy.h"
#include "core/usage_ledger.h"

namespace hg::policytest {

class PolicyWorld {
 public:
  PolicyWorld() = default;  // no budgets: for baselines that ignore them
  explicit PolicyWorld(BudgetTree tree) : tree_(std::move(tree)) {
    delivered_.emplace(*tree_);
    owed_.emplace(*tree_);
  }

  NodeId AddNode(int32_t gpus, std::string block, NodeState state = NodeState::kReady,
                 std::string name = "") {
    Node n;
    n.id = NodeId(static_cast<int32_t>(nodes_.size()));
    n.name = std::move(name);
    n.gpus = Gpus(gpus);
    n.state = state;
    n.block = std::move(block);
    nodes_.push_back(n);
    return n.id;
  }
  Node& node(NodeId n) { return nodes_[static_cast<size_t>(n.value())]; }
  size_t node_count() const { return nodes_.size(); }

  // Stores `s` with the next job id (1, 2, ...) and returns it at a stable address.
  JobSpec& AddJob(JobSpec s) {
    s.id = JobId(static_cast<int64_t>(specs_.size()) + 1);
    specs_.push_back(std::move(s));
    return specs_.back();
  }
  // The entry stays valid until the next Pend or Hole.
  PendingJob& Pend(const JobSpec& j, Seconds queued_since) {
    return (j.funded() ? funded_ : unfunded_).emplace_back(PendingJob{&j, queued_since, 1});
  }
  // A compacted-away entry the driver has not removed yet (spec null).
  void Hole(bool funded) { (funded ? funded_ : unfunded_).push_back(PendingJob{}); }
  RunningJob& Run(const JobSpec& j, Seconds started, std::vector<Slice> placement) {
    RunningJob r;
    r.spec = &j;
    r.started = started;
    r.placement = std::move(placement);
    running_.push_back(r);
    return running_.back();
  }
  RunningJob& Run(const JobSpec& j, Seconds started, NodeId n) {
    return Run(j, started, {Slice{n, j.gpus}});
  }

  // Puts both queues in the (queued_since, id) order the Snapshot contract asks for, for tests
  // that pend jobs out of order.
  void SortQueues() {
    auto order = [](const PendingJob& a, const PendingJob& b) {
      return a.queued_since != b.queued_since ? a.queued_since < b.queued_since
                                              : a.spec->id < b.spec->id;
    };
    std::sort(funded_.begin(), funded_.end(), order);
    std::sort(unfunded_.begin(), unfunded_.end(), order);
  }

  // The world at `now`, the ledgers (if any) advanced to it.
  Snapshot Snap(Seconds now, bool explain) {
    Snapshot snap;
    snap.now = now;
    snap.nodes = nodes_;
    if (tree_) {
      delivered_->AdvanceTo(now);
      owed_->AdvanceTo(now);
      snap.tree = &*tree_;
      snap.delivered = &*delivered_;
      snap.owed = &*owed_;
    }
    snap.pending_funded = funded_;
    snap.pending_unfunded = unfunded_;
    snap.running = running_;
    snap.explain = explain;
    return snap;
  }

  const BudgetTree& tree() const { return *tree_; }
  UsageLedger& delivered() { return *delivered_; }
  UsageLedger& owed() { return *owed_; }

 private:
  std::optional<BudgetTree> tree_;
  std::optional<UsageLedger> delivered_, owed_;
  std::vector<Node> nodes_;
  std::deque<JobSpec> specs_;  // stable addresses
  std::vector<PendingJob> funded_, unfunded_;
  std::vector<RunningJob> running_;
};

inline std::vector<JobId> Started(const Decisions& d) {
  std::vector<JobId> ids;
  for (const StartDecision& s : d.starts) ids.push_back(s.job);
  return ids;
}

inline std::vector<JobId> Stopped(const Decisions& d) {
  std::vector<JobId> ids;
  for (const StopDecision& s : d.stops) ids.push_back(s.job);
  return ids;
}

inline const StartDecision* StartOf(const Decisions& d, JobId id) {
  for (const StartDecision& s : d.starts)
    if (s.job == id) return &s;
  return nullptr;
}

inline const StopDecision* StopOf(const Decisions& d, JobId id) {
  for (const StopDecision& s : d.stops)
    if (s.job == id) return &s;
  return nullptr;
}

inline const PendingNote* NoteFor(const Decisions& d, JobId id) {
  for (const PendingNote& n : d.pending)
    if (n.job == id) return &n;
  return nullptr;
}

// `d` starts and stops nothing, and reserves `slices` for `job` alone, due at `due`.
inline void ExpectOnlyAReservation(const Decisions& d, JobId job, Seconds due,
                                   const std::vector<Slice>& slices) {
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.stops.empty());
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].job, job);
  EXPECT_EQ(d.reservations[0].due, due);
  EXPECT_EQ(d.reservations[0].slices, slices);
}

}  // namespace hg::policytest
