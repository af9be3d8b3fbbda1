#include "core/fifo_backfill_policy.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "core/cluster_state.h"
#include "core/failure_cache.h"
#include "core/housekeeping.h"
#include "core/merged_queue.h"
#include "core/reservation_plan.h"

namespace hg {

Decisions FifoBackfillPolicy::Cycle(const Snapshot& snap) const {
  Decisions out;
  std::vector<uint8_t> stopping(snap.running.size());  // bytes: see RunningIndex::stopping
  for (size_t i = 0; i < snap.running.size(); ++i) stopping[i] = snap.running[i].stopping;
  // A FIFO/backfill site does not preempt; a modern one drains nodes gracefully.
  Housekeeping(snap, HousekeepingOptions{true}, stopping, out);
  ClusterState cs(snap.nodes, snap.running);

  std::vector<const JobSpec*> started;          // parallel to out.starts
  bool unreserved_free = cs.LargestFree() > 0;  // O(max GPUs per node): kept, not recomputed
  auto start = [&](const JobSpec& j, std::vector<Slice> slices, ReasonCode code) {
    cs.Take(slices, j.funded());
    unreserved_free = cs.LargestFree() > 0;
    started.push_back(&j);
    out.starts.push_back(StartDecision{j.id, std::move(slices), Reason{code, {}, {}, 0, 0}});
  };
  auto releases = [&] { return KnownReleases(snap, stopping, started, out.starts); };

  bool head_seen = false;        // the first job that did not fit has been met
  Seconds due = kNever;          // when the reservation is due (kNever: none)
  std::optional<JobId> holder;   // the job holding it
  FailureCache failed_free;      // on GPUs the reservation does not need
  FailureCache failed_backfill;  // on any free GPUs, reserved ones included
  MergedQueue queue(snap.pending_funded, snap.pending_unfunded);
  while (const PendingJob* p = queue.Next()) {
    const JobSpec& j = *p->spec;
    auto note = [&](ReasonCode c, int64_t a, int64_t b, Seconds eta = kNever) {
      if (snap.explain) out.pending.push_back(PendingNote{j.id, Reason{c, {}, {}, a, b}, eta});
    };
    if (!snap.explain) {
      // Nothing more can start: no free GPUs, or only reserved ones that no job short enough
      // could use.
      if (cs.total_free() == 0) break;
      if (!unreserved_free && (!holder || failed_backfill.single <= 1)) break;
    }
    const Shape shape = cs.ShapeOf(j.gpus, j.gpus_per_node);
    if (!failed_free.Known(shape)) {
      if (auto slices = cs.Find(shape, false, j.funded())) {
        start(j, std::move(*slices), ReasonCode::kStartFree);
        continue;
      }
      failed_free.Add(shape);
    }
    if (!head_seen) {
      // EASY: only the head of the queue holds a reservation. If its start cannot be planned
      // (the GPUs it needs are held by jobs with no max_runtime), it holds none, and later jobs
      // take any free GPUs: the starvation Slurm warns of when bf_window is shorter than the
      // time limits.
      head_seen = true;
      const ReservationPlan plan = PlanReservation(shape, cs, releases(), snap.now);
      if (plan.due != kNever) {
        due = plan.due;
        holder = j.id;
        cs.Reserve(plan.slices);
        unreserved_free = cs.LargestFree() > 0;
        out.reservations.push_back(ReservationDecision{j.id, due, plan.slices});
        note(ReasonCode::kWaitReservation, due.value(), 0, due);
        continue;
      }
    } else if (holder && j.max_runtime && snap.now + *j.max_runtime <= due &&
               !failed_backfill.Known(shape)) {
      // Done before the reservation is due: it may use the reserved GPUs meanwhile.
      if (auto slices = cs.Find(shape, true, j.funded())) {
        start(j, std::move(*slices), ReasonCode::kStartBackfill);
        continue;
      }
      failed_backfill.Add(shape);
    }
    note(ReasonCode::kWaitGpus, j.gpus.value(), cs.total_free());
  }
  return out;
}

}  // namespace hg
