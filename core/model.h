// The state the policy sees: nodes, jobs and their runs. Plain data, owned by the driver (the
// simulator or the server) and handed to the policy as a snapshot.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace hg {

enum class NodeState { kReady, kDraining, kDrained, kLost };
const char* ToString(NodeState s);

enum class DrainCause { kNone, kOperator, kHealth };

struct Node {
  NodeId id{0};
  std::string name;
  Gpus gpus{0};
  std::string block;  // network domain; multi-node jobs stay inside one when they can
  NodeState state = NodeState::kReady;
  DrainCause drain_cause = DrainCause::kNone;
  Seconds drain_since{0};
  std::optional<Seconds> drain_deadline;  // an operator may force funded jobs off by then
};

enum class JobState { kPending, kRunning, kSucceeded, kFailed, kCancelled, kPreempted };
const char* ToString(JobState s);

// What a user submits. The scheduler never sees how long a job will really run.
struct JobSpec {
  JobId id{0};
  Seconds submit{0};
  Gpus gpus{1};
  Gpus gpus_per_node{0};        // 0: as few nodes as possible
  BudgetId budget = kUnfunded;  // a leaf (ChargeTarget) or kUnfunded
  std::string job_class;        // "debug", "batch", "interactive", ...
  Seconds min_runtime{0};       // protection of each run
  // A session's lease (0: none). While its user is active, the run stays protected until a
  // lease after the last activity reported, beyond min_runtime and its cap, until max_runtime
  // ends it: an interactive session in use is not cut at 8 h, and one parked idle loses the
  // extension a lease after its user left. ValidateJob bounds it (PolicyConfig::lease_cap).
  Seconds lease{0};
  std::optional<Seconds> max_runtime;
  bool resumable = false;
  Seconds grace{120};  // SIGTERM to SIGKILL
  int priority = 0;    // the user's own order among their jobs (higher first)
  int tier = 1;        // legacy priority tier 0..2, used only by the `priority` baseline

  bool funded() const { return budget != kUnfunded; }
};

struct Slice {
  NodeId node{0};
  Gpus gpus{0};
  friend bool operator==(const Slice&, const Slice&) = default;
};

struct PendingJob {
  const JobSpec* spec = nullptr;
  Seconds queued_since{0};  // submission or requeue
  int attempt = 1;
  // GPUs were freed for this job by a stop the policy asked to hold for it
  // (StopDecision::hold_for) and it has not started since. The driver sets it when it applies
  // such a stop and clears it after a cycle that leaves no victim of the job stopping. In the
  // cycle after its last victim has gone, the policy places the job before the fair-share walk,
  // so the GPUs go to the job they were taken for, not back to the victims' budget.
  bool freed_for = false;
};

struct RunningJob {
  const JobSpec* spec = nullptr;
  Seconds started{0};            // start of the current run
  std::vector<Slice> placement;  // one slice per node, as a start decision gives them
  bool stopping = false;         // preempted or ended, inside its grace period
  Seconds stop_at{0};            // when stopping: the SIGKILL deadline
  JobId stop_for{0};             // when preempted: the job the GPUs are freed for
  bool backfilled = false;       // started on GPUs reserved for a larger job
  // Started on GPUs freed for it by stops outside the fair-share order (a due reservation, or a
  // debug job under quick_first): the start reason kStartAfterPreempt.
  bool took_freed = false;
  Seconds checkpointed{0};  // last checkpoint the job reported (<= started: none)
  Seconds active_at{0};     // last activity its user reported (a lease counts from the start)
  int attempt = 1;

  // The contract of DESIGN.md: min_runtime from the start of the run. Drains wait for this
  // only, so a sick node is not held for a session; baselines know nothing else.
  Seconds contract_until() const { return started + spec->min_runtime; }
  // What Hourglass's preemption honours: the contract, extended by a session's lease.
  Seconds protected_until() const {
    const Seconds c = contract_until();
    if (spec->lease.value() <= 0) return c;
    return std::max(c, std::max(started, active_at) + spec->lease);
  }
  Gpus gpus() const { return spec->gpus; }
};

// The GPUs of each of r's slices when all are the same size, else 0. A gang's slices usually are:
// then what it holds on any of its nodes is known without a scan of its (possibly hundreds of)
// slices, which preemption planning and reservations ask for every job on every node they visit.
int32_t UniformSliceGpus(const RunningJob& r);
// GPUs r holds on node `id`, one of its nodes; `uniform` is UniformSliceGpus(r), worked out once.
int32_t GpusOn(const RunningJob& r, NodeId id, int32_t uniform);

}  // namespace hg
