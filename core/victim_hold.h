// What a job waiting for its victims to exit keeps from other work. A policy that stops running
// work for a job does not start the job until the victims have left (their grace period), and it
// keeps no plan from one cycle to the next: each cycle sees only that some running jobs are
// leaving for the job (RunningJob::stop_for). Unless the free GPUs the job's placement needs
// beside them are held, other work starts there, and when the victims have gone the job does not
// fit; it stops that work in turn, and a requeued victim takes the GPUs freed next. Run on every
// tick (the server's loop), that went on for days (HourglassPolicy and the baselines alike).
#pragma once

#include <cstdint>
#include <map>
#include <span>

#include "core/cluster_state.h"
#include "core/policy.h"

namespace hg {

// Takes out of `cs`, for each job of `waiting` (job id -> its shape, held in id order), the free
// GPUs its placement will need: slice by slice, the largest first, each slice on a node of its
// own, on the nodes its leaving victims free most first (holding what the victims do not free
// there), then on the ready node whose free GPUs fit the slice most tightly. A slice that fits
// nowhere holds nothing: the job plans again once its victims have gone.
void HoldForVictims(std::span<const RunningJob> running, const std::map<int64_t, Shape>& waiting,
                    ClusterState& cs);

// The same for the funded jobs of `snap` that wait for victims (`waiting`: RunningIndex::waiting),
// each with the shape it asks for on `cs`.
void HoldForVictims(const Snapshot& snap, const std::map<int64_t, Seconds>& waiting,
                    ClusterState& cs);

}  // namespace hg
