// Reservations: the earliest time a blocked job's gang fits, and where. Hourglass plans from
// protection expiries too; the EASY-backfill baselines only from end times the scheduler knows
// (max_runtime).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/cluster_state.h"
#include "core/function_ref.h"
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

// When a node with `free` GPUs has `need`, given its `releases` sorted by time (kNever: never).
Seconds FirstTimeWith(int32_t free, int32_t need, std::span<const Release> releases, Seconds now);

struct ReservationPlan {
  Seconds due = kNever;  // kNever: no known time at which the job fits
  std::vector<Slice> slices;
};

// When each node's GPUs come back, from end times the scheduler knows: jobs already leaving
// (`stopping[i]` marks those stopped in this cycle, gone within their grace period), jobs with a
// max_runtime, and the jobs `started` in this cycle at `placements` (parallel vectors). Sorted.
std::vector<std::vector<Release>> KnownReleases(const Snapshot& snap,
                                                std::span<const uint8_t> stopping,
                                                const std::vector<const JobSpec*>& started,
                                                const std::vector<StartDecision>& placements);

// The `shape.slices()` nodes that are first ready for the gang, `ready_at(n)` telling when node n
// has `shape.per_node` GPUs for it (kNever: at no known time). Each slice is planned at
// `per_node` GPUs, the remainder slice of an uneven gang too (conservative: it may reserve a
// little more than needed). A gang stays inside one block unless spanning blocks starts it
// strictly earlier. Ties go to the lower node index, so the plan is deterministic.
ReservationPlan ChooseReservation(const Shape& shape, const ClusterState& cs,
                                  FunctionRef<Seconds(size_t)> ready_at);

// ChooseReservation for the scheduler that knows only `releases[n]` (sorted by time) of each
// node n besides its free GPUs.
ReservationPlan PlanReservation(const Shape& shape, const ClusterState& cs,
                                const std::vector<std::vector<Release>>& releases, Seconds now);

}  // namespace hg
