#include "core/fifo_backfill_policy.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "core/cluster_state.h"
#include "core/housekeeping.h"
#include "core/reservation_plan.h"

namespace hg {
namespace {

// Shapes that already failed this cycle, so the rest of a long queue that cannot fit is skipped
// in O(1). The GPUs a search may use only shrink during a cycle, so a failure stays a failure.
struct FailureCache {
  int32_t single = std::numeric_limits<int32_t>::max();  // gpus on one node
  std::map<int32_t, int32_t> multi;                      // per_node -> slices
  bool Known(const Shape& s) const {
    if (s.slices() == 1) return s.per_node >= single;
    auto it = multi.find(s.per_node);
    return it != multi.end() && s.slices() >= it->second;
  }
  void Add(const Shape& s) {
    if (s.slices() == 1) {
      single = std::min(single, s.per_node);
    } else {
      auto [it, inserted] = multi.emplace(s.per_node, s.slices());
      if (!inserted) it->second = std::min(it->second, s.slices());
    }
  }
};

// Walks both pending lists as one queue in (queued_since, id) order, skipping holes. The lists
// are each in that order already, so a merge costs O(P) where sorting would cost O(P log P).
class MergedQueue {
 public:
  MergedQueue(std::span<const PendingJob> a, std::span<const PendingJob> b) : a_(a), b_(b) {}
  const PendingJob* Next() {
    while (i_ < a_.size() && !a_[i_].spec) ++i_;
    while (k_ < b_.size() && !b_[k_].spec) ++k_;
    if (i_ == a_.size() && k_ == b_.size()) return nullptr;
    if (k_ == b_.size() || (i_ < a_.size() && Before(a_[i_], b_[k_]))) return &a_[i_++];
    return &b_[k_++];
  }

 private:
  static bool Before(const PendingJob& x, const PendingJob& y) {
    if (x.queued_since != y.queued_since) return x.queued_since < y.queued_since;
    return x.spec->id < y.spec->id;
  }
  std::span<const PendingJob> a_, b_;
  size_t i_ = 0, k_ = 0;
};

}  // namespace

Decisions FifoBackfillPolicy::Cycle(const Snapshot& snap) const {
  Decisions out;
  std::vector<bool> stopping(snap.running.size());
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
  // When each node's GPUs come back, from end times the scheduler knows: jobs already leaving,
  // jobs with a max_runtime, and jobs started earlier in this cycle. Built once, for the head.
  auto releases = [&] {
    std::vector<std::vector<Release>> rel(snap.nodes.size());
    auto add = [&](const std::vector<Slice>& placement, Seconds at) {
      for (const Slice& s : placement)
        rel[static_cast<size_t>(s.node.value())].push_back(Release{at, s.gpus.value()});
    };
    for (size_t i = 0; i < snap.running.size(); ++i) {
      const RunningJob& r = snap.running[i];
      if (r.stopping) {
        add(r.placement, std::max(snap.now, r.stop_at));
      } else if (stopping[i]) {  // stopped by housekeeping now: gone within its grace period
        add(r.placement, snap.now + r.spec->grace);
      } else if (r.spec->max_runtime) {
        add(r.placement, std::max(snap.now, r.started + *r.spec->max_runtime));
      }
    }
    for (size_t s = 0; s < started.size(); ++s)
      if (started[s]->max_runtime)
        add(out.starts[s].placement, snap.now + *started[s]->max_runtime);
    for (auto& v : rel) std::sort(v.begin(), v.end());
    return rel;
  };

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
