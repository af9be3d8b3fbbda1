#include "core/priority_policy.h"

#include <algorithm>
#include <limits>
#include <map>
#include <span>

#include "core/cluster_state.h"
#include "core/housekeeping.h"
#include "core/merged_queue.h"
#include "core/preemption.h"
#include "core/running_index.h"
#include "core/victim_hold.h"

namespace hg {

Decisions PriorityPolicy::Cycle(const Snapshot& snap) const {
  Decisions out;
  RunningIndex ix = IndexRunning(snap);
  std::vector<uint8_t>& stopping = ix.stopping;
  const NodeJobs& on_node = ix.on_node;
  const std::map<int64_t, Seconds>& waiting = ix.waiting;
  Housekeeping(snap, HousekeepingOptions{false}, stopping, out);
  ClusterState cs(snap.nodes, snap.running);
  HoldForVictims(snap, waiting, cs);  // what a job waiting for its victims will need

  // Tiers 2 and 1 in buckets, each first come, first served; tier 0, usually the long tail of
  // the queue (tens of thousands of sweeps), is walked in place afterwards: on a full cluster
  // its first job ends the cycle, and copying it into a bucket was most of the cycle's time.
  std::vector<const PendingJob*> upper[2];  // tier 2, tier 1
  {
    // Unfunded jobs above tier 0 are rare (none in the built-in workloads): when the driver says
    // there are none, only the funded queue is searched for the upper tiers. On lab-month this
    // pass over tens of thousands of sweeps was two thirds of the baseline's time.
    const std::span<const PendingJob> unfunded_upper =
        snap.unfunded_above_tier0 == 0 ? std::span<const PendingJob>() : snap.pending_unfunded;
    MergedQueue merged(snap.pending_funded, unfunded_upper);
    while (const PendingJob* next = merged.Next())
      if (const int t = std::clamp(next->spec->tier, 0, 2); t > 0) upper[2 - t].push_back(next);
  }
  // Per tier t, per node: GPUs of running jobs below tier t (those a tier-t job may preempt).
  // Preemption planning skips a node where even all of them leaving would not make room.
  std::vector<int32_t> below[3];
  for (int t = 1; t <= 2; ++t) below[t].assign(snap.nodes.size(), 0);
  for (size_t i = 0; i < snap.running.size(); ++i) {
    if (stopping[i]) continue;
    const RunningJob& r = snap.running[i];
    for (int t = 1; t <= 2; ++t)
      if (r.spec->tier < t)
        for (const Slice& sl : r.placement)
          below[t][static_cast<size_t>(sl.node.value())] += sl.gpus.value();
  }
  // Smallest single-node request that failed, per tier, to skip the rest of a full queue fast.
  int32_t failed_single[3] = {std::numeric_limits<int32_t>::max(),
                              std::numeric_limits<int32_t>::max(),
                              std::numeric_limits<int32_t>::max()};
  int attempts = 0;
  MergedQueue lowest(snap.pending_funded, snap.pending_unfunded);
  size_t next_upper[2] = {0, 0};
  // The queue in (tier, queued_since, id) order.
  auto next_job = [&]() -> const PendingJob* {
    for (int u = 0; u < 2; ++u)
      if (next_upper[u] < upper[u].size()) return upper[u][next_upper[u]++];
    while (const PendingJob* p = lowest.Next())
      if (std::clamp(p->spec->tier, 0, 2) == 0) return p;
    return nullptr;
  };
  while (const PendingJob* p = next_job()) {
    const JobSpec& j = *p->spec;
    auto note = [&](ReasonCode c, Seconds eta = kNever) {
      if (snap.explain)
        out.pending.push_back(
            PendingNote{j.id, Reason{c, {}, {}, j.gpus.value(), cs.total_free()}, eta});
    };
    if (auto it = waiting.find(j.id.value()); it != waiting.end()) {
      note(ReasonCode::kWaitPreemption, it->second);
      continue;
    }
    const int tier = std::clamp(j.tier, 0, 2);
    // A full cluster where no one left in the queue may preempt: nothing more can happen.
    if (!snap.explain && (cs.total_free() == 0 || failed_single[tier] <= 1) &&
        (tier == 0 || attempts >= 64))
      break;
    const Shape shape = cs.ShapeOf(j.gpus, j.gpus_per_node);
    const bool single = shape.slices() == 1;
    if (single && shape.per_node >= failed_single[tier]) {
      note(ReasonCode::kWaitTier);
      continue;
    }
    if (auto slices = cs.Find(shape, true, j.funded())) {
      cs.Take(*slices, j.funded());
      out.starts.push_back(
          StartDecision{j.id, std::move(*slices), Reason{ReasonCode::kStartFree, {}, {}, 0, 0}});
      continue;
    }
    if (tier > 0 && ++attempts <= 64) {
      auto eligible = [&](size_t i) { return snap.running[i].spec->tier < tier; };
      auto plan = PlanPreemption(shape, j.gpus, cs, snap.running, on_node, stopping, eligible,
                                 snap.now, true, below[tier]);
      if (plan && !plan->victims.empty()) {
        for (size_t v : plan->victims) {
          const RunningJob& r = snap.running[v];
          const bool violation = r.spec->funded() && snap.now < r.contract_until();
          out.stops.push_back(StopDecision{
              r.spec->id, Reason{ReasonCode::kPreemptTier, j.id, {}, tier, r.spec->tier}, j.id,
              violation});
          stopping[v] = true;
        }
        cs.HoldFree(plan->slices, j.funded());
        note(ReasonCode::kWaitPreemption);
        continue;
      }
    }
    if (single) failed_single[tier] = std::min(failed_single[tier], shape.per_node);
    note(ReasonCode::kWaitTier);
    if (!snap.explain && cs.total_free() == 0 && attempts >= 64) break;
  }
  return out;
}

}  // namespace hg
