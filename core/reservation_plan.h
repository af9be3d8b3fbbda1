// The EASY-backfill reservation shared by the baselines that plan only from end times the
// scheduler knows (max_runtime): the earliest time a blocked job's gang fits, and where.
#pragma once

#include <vector>

#include "core/cluster_state.h"
#include "core/model.h"
#include "core/policy.h"

namespace hg {

// GPUs a node gets back at a known time (a job reaching its max_runtime, or leaving after its
// grace period).
struct Release {
  Seconds at;
  int32_t gpus;
  bool operator<(const Release& o) const { return at != o.at ? at < o.at : gpus < o.gpus; }
};

struct ReservationPlan {
  Seconds due = kNever;  // kNever: no known time at which the job fits
  std::vector<Slice> slices;
};

// On the nodes that first have `shape.per_node` GPUs free, counting free GPUs and `releases[n]`
// (sorted by time) of each node n. Each slice is planned at `per_node` GPUs, the remainder slice
// of an uneven gang too (conservative: it may reserve a little more than needed). A gang stays
// inside one block unless spanning blocks starts it strictly earlier.
// When each node's GPUs come back, from end times the scheduler knows: jobs already leaving
// (`stopping[i]` marks those stopped in this cycle, gone within their grace period), jobs with a
// max_runtime, and the jobs `started` in this cycle at `placements` (parallel vectors). Sorted.
std::vector<std::vector<Release>> KnownReleases(const Snapshot& snap,
                                                const std::vector<bool>& stopping,
                                                const std::vector<const JobSpec*>& started,
                                                const std::vector<StartDecision>& placements);

ReservationPlan PlanReservation(const Shape& shape, const ClusterState& cs,
                                const std::vector<std::vector<Release>>& releases, Seconds now);

}  // namespace hg
