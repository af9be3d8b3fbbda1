// What a policy cycle decides, each with a reason a user can read.
#pragma once

#include <string>
#include <vector>

#include "core/budget_tree.h"
#include "core/model.h"
#include "core/types.h"

namespace hg {

enum class ReasonCode {
  // Why a job starts.
  kStartFree,      // placed on free GPUs
  kStartBackfill,  // placed on GPUs reserved for a larger job; it must be preemptible by then
  // placed on GPUs that stops outside the fair-share order freed for it (PendingJob::freed_for)
  kStartAfterPreempt,
  // Why a job waits.
  // a: GPUs needed, b: GPUs free; c: where the job's budget stands (ShareStanding), which says
  // why nothing it may preempt frees enough: 0 unknown (the baselines).
  kWaitGpus,
  kWaitBudgetLimit,  // budget: the subtree at its limit; a: its limit
  kWaitPreemption,   // victims are in their grace period; a: when they are killed at the latest
  kWaitReservation,  // holds a reservation; a: due time
  kWaitHeadroom,     // only the quick-job headroom is free; a: GPUs needed, b: GPUs free
  // Enough GPUs are free, but not on nodes where the job's shape fits, and no work it may stop
  // frees such nodes; a: GPUs needed, b: GPUs free, c: GPUs per node of its shape.
  kWaitShape,
  // It fits only on GPUs reserved for a larger job, and would still be protected (and running)
  // when that reservation is due; other: the holder, a: GPUs needed, b: GPUs free, c: the due
  // time.
  kWaitReserved,
  kWaitUnfunded,   // unfunded work waits for idle GPUs
  kWaitFairShare,  // budgets further below their share come first
  kWaitTier,       // the priority baseline: higher tiers first
  kWaitLargeJob,   // other: a large job of the same budget waiting first; a: its GPUs
  // No GPUs, and the budget is below its share but not below PolicyConfig::preempt_below, so it
  // may not preempt funded work. budget: the job's; a: its fair-share key, b: the threshold,
  // both in thousandths.
  kWaitPreemptBelow,
  // Why a job stops.
  kPreemptForFunded,    // unfunded work made room; other: the funded job
  kPreemptFairShare,    // other: the job of a budget further below its share; budget: that budget
  kPreemptReservation,  // other: the large job whose reservation is due
  // other: a quick (debug) job of the victim's own budget (PolicyConfig::quick_stops_own)
  kPreemptOwnQuick,
  kPreemptDrain,        // the node drains; protection over (or unfunded)
  kPreemptDrainForced,  // operator deadline passed while still protected
  kPreemptTier,         // the priority baseline: a higher tier needed the GPUs
  kMaxRuntime,          // max_runtime reached
  // Node changes.
  kNodeDrained,  // a draining node is empty
};

// kWaitGpus's c: whether the job's budget has had its share (fair-share key >= 1, so it may stop
// only work of budgets further above theirs) or not, and then what keeps it waiting: work it
// could stop that is still protected; its own GPUs, which would put its budget above every budget
// whose work it could stop (the no-ping-pong rule: a large gang waits for GPUs to come free); or
// too little work it may stop even once protections end. kBelowShare: one of those, not told
// apart (the cycle's bound on preemption plans cut planning short before the job or its shape
// had one). A category, not the key itself: the key
// moves every cycle, and a reason is logged when it changes.
enum ShareStanding : int64_t {
  kStandingUnknown = 0,
  kBelowShare = 1,
  kShareServed = 2,
  kWouldPassVictims = 3,
  kWaitsForProtection = 4,
  kTooLittleToStop = 5,
  // Work it could stop would free enough, but belongs to budgets that took GPUs from it within
  // PolicyConfig::take_back_cooldown: it may not take them back yet.
  kTakeBackCooldown = 6,
};

struct Reason {
  ReasonCode code = ReasonCode::kWaitGpus;
  JobId other{0};
  BudgetId budget = kUnfunded;
  int64_t a = 0;
  int64_t b = 0;
  int64_t c = 0;
  friend bool operator==(const Reason&, const Reason&) = default;
};

// Whether two reasons tell a user the same: equal but for the GPUs free (b) of a wait that counts
// them, which moves with every start and end around a waiting job. A log of changes (`hourglass
// sim --explain`) writes a line when this says they differ, not at each such move.
bool SameWait(const Reason& x, const Reason& y);

// Renders a reason in words, e.g. "preempted after its protection ended: budget
// ai2/olmo/pretrain is further below its share (job 42 needs the GPUs)".
std::string Describe(const Reason& r, const BudgetTree& tree);

struct StartDecision {
  JobId job{0};
  std::vector<Slice> placement;
  Reason reason;
};

struct StopDecision {
  JobId job{0};
  Reason reason;
  JobId for_job{0};                // the job the GPUs are freed for (0 if none)
  bool violates_contract = false;  // stopped while protected (only baselines or forced drains)
  // The GPUs stay for_job's once this job has gone (PendingJob::freed_for): the stop was made
  // outside the fair-share order, so the order alone would not give them to for_job.
  bool hold_for = false;
};

struct PendingNote {
  JobId job{0};
  Reason reason;
  Seconds estimated_start = kNever;
};

struct ReservationDecision {
  JobId job{0};
  Seconds due{0};
  std::vector<Slice> slices;
};

struct NodeDecision {
  NodeId node{0};
  NodeState to = NodeState::kDrained;
  Reason reason;
};

struct Decisions {
  std::vector<StartDecision> starts;
  std::vector<StopDecision> stops;
  std::vector<PendingNote> pending;  // filled only when the snapshot asks for explanations
  std::vector<ReservationDecision> reservations;
  std::vector<NodeDecision> nodes;
};

}  // namespace hg
