#include "core/slurm_multifactor_policy.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "core/cluster_state.h"
#include "core/failure_cache.h"
#include "core/housekeeping.h"
#include "core/preemption.h"
#include "core/reservation_plan.h"
#include "core/running_index.h"
#include "core/sorted_on_demand.h"
#include "core/victim_hold.h"

namespace hg {
namespace {

// As in the hourglass policy: preemption planning looks at every node, so a cycle plans at most
// this many preemptions, fewer on big clusters; jobs not reached wait for the next cycle.
constexpr int kMaxPreemptPlans = 64;
constexpr int kMinPreemptPlans = 8;
constexpr int64_t kMaxPlanNodeVisits = 160'000;

// Slurm's PriorityMaxAge: the age factor saturates after a week of waiting.
constexpr Seconds kMaxAge = Days(7);

}  // namespace

double SlurmFairShareFactor(double usage, double share) {
  if (!(share > 0.0)) return 0.0;
  return std::exp2(-std::max(0.0, usage) / share);
}

double SlurmPriority(const Snapshot& snap, const PendingJob& p, int64_t capacity) {
  const JobSpec& j = *p.spec;
  double fairshare = 0.0;
  if (j.funded() && snap.tree && snap.delivered) {
    // Slurm decays usage with PriorityDecayHalfLife (7 days here); the ledger's 7-day sliding
    // window stands in for the decay. U is the budget's fraction of all usage in the window.
    const double total = snap.delivered->Usage(BudgetId(0));
    const double usage = total > 0.0 ? snap.delivered->Usage(j.budget) / total : 0.0;
    fairshare = SlurmFairShareFactor(usage, snap.tree->entitlement(j.budget));
  }
  const double waited =
      static_cast<double>(std::max<int64_t>(0, (snap.now - p.queued_since).value()));
  const double age = std::min(1.0, waited / static_cast<double>(kMaxAge.value()));
  const double size =
      capacity > 0 ? static_cast<double>(j.gpus.value()) / static_cast<double>(capacity) : 0.0;
  return kSlurmWeightFairshare * fairshare + kSlurmWeightAge * age + kSlurmWeightSize * size;
}

Decisions SlurmMultifactorPolicy::Cycle(const Snapshot& snap) const {
  Decisions out;
  RunningIndex ix = IndexRunning(snap);
  std::vector<uint8_t>& stopping = ix.stopping;
  const NodeJobs& on_node = ix.on_node;
  const std::map<int64_t, Seconds>& waiting = ix.waiting;
  // PreemptExemptTime = min_runtime: drains wait for funded jobs' protection too.
  Housekeeping(snap, HousekeepingOptions{true}, stopping, out);
  ClusterState cs(snap.nodes, snap.running);
  HoldForVictims(snap, waiting, cs);  // what a job waiting for its victims will need
  // Scavenger GPUs that a funded job could still preempt; none left means preemption is over.
  int64_t scavenger_gpus = 0;
  for (size_t i = 0; i < snap.running.size(); ++i)
    if (!stopping[i] && !snap.running[i].spec->funded())
      scavenger_gpus += snap.running[i].gpus().value();
  const int64_t by_size =
      kMaxPlanNodeVisits / std::max<int64_t>(1, static_cast<int64_t>(cs.size()));
  const int max_plans =
      static_cast<int>(std::clamp<int64_t>(by_size, kMinPreemptPlans, kMaxPreemptPlans));

  // Normal QOS: funded jobs by priority (desc), then (queued_since, id). The scavenger QOS is
  // kept out of the sort: it goes last, in the order the snapshot already holds it.
  struct Ranked {
    double priority;
    const PendingJob* p;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(snap.pending_funded.size());
  for (const PendingJob& p : snap.pending_funded)
    if (p.spec) ranked.push_back(Ranked{SlurmPriority(snap, p, cs.capacity()), &p});
  auto by_rank = [](const Ranked& a, const Ranked& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.p->queued_since != b.p->queued_since) return a.p->queued_since < b.p->queued_since;
    return a.p->spec->id < b.p->spec->id;
  };
  // Sorted as far as the walk below reads it: on a full cluster it stops at the first jobs, and
  // sorting the whole queue was half of this baseline's time on philly-dev.
  SortedOnDemand funded(std::move(ranked), by_rank);

  std::vector<const JobSpec*> started;  // parallel to out.starts
  auto start = [&](const JobSpec& j, std::vector<Slice> slices, ReasonCode code) {
    cs.Take(slices, j.funded());
    started.push_back(&j);
    out.starts.push_back(StartDecision{j.id, std::move(slices), Reason{code, {}, {}, 0, 0}});
  };
  auto releases = [&] { return KnownReleases(snap, stopping, started, out.starts); };

  bool head_seen = false;
  Seconds due = kNever;
  std::optional<JobId> holder;
  FailureCache failed_free;      // on GPUs the reservation does not need
  FailureCache failed_backfill;  // on any free GPUs, reserved ones included
  FailureCache failed_preempt;   // with scavenger victims (their set only shrinks)
  int plans = 0;
  // Tries free GPUs, then reserved GPUs if the job ends before the reservation is due.
  auto try_start = [&](const JobSpec& j, const Shape& shape) {
    if (!failed_free.Known(shape)) {
      if (auto slices = cs.Find(shape, false, j.funded())) {
        start(j, std::move(*slices), ReasonCode::kStartFree);
        return true;
      }
      failed_free.Add(shape);
    }
    if (holder && j.max_runtime && snap.now + *j.max_runtime <= due &&
        !failed_backfill.Known(shape)) {
      if (auto slices = cs.Find(shape, true, j.funded())) {
        start(j, std::move(*slices), ReasonCode::kStartBackfill);
        return true;
      }
      failed_backfill.Add(shape);
    }
    return false;
  };

  while (const Ranked* rk = funded.Next()) {
    const JobSpec& j = *rk->p->spec;
    auto note = [&](ReasonCode c, int64_t a, int64_t b, Seconds eta = kNever) {
      if (snap.explain) out.pending.push_back(PendingNote{j.id, Reason{c, {}, {}, a, b}, eta});
    };
    if (auto it = waiting.find(j.id.value()); it != waiting.end()) {
      note(ReasonCode::kWaitPreemption, it->second.value(), 0, it->second);
      continue;
    }
    // A full cluster with nothing left to preempt: no funded job can start this cycle.
    if (!snap.explain && cs.total_free() == 0 && (scavenger_gpus == 0 || plans >= max_plans)) break;
    const Shape shape = cs.ShapeOf(j.gpus, j.gpus_per_node);
    if (try_start(j, shape)) continue;
    if (scavenger_gpus > 0 && plans < max_plans && !failed_preempt.Known(shape)) {
      ++plans;
      auto eligible = [&](size_t i) { return !snap.running[i].spec->funded(); };
      auto plan = PlanPreemption(shape, j.gpus, cs, snap.running, on_node, stopping, eligible,
                                 snap.now, false);
      if (plan && !plan->victims.empty()) {
        Seconds killed_by = snap.now;
        for (size_t v : plan->victims) {
          const RunningJob& r = snap.running[v];
          assert(!r.spec->funded());  // funded jobs are never preempted here
          out.stops.push_back(StopDecision{
              r.spec->id, Reason{ReasonCode::kPreemptForFunded, j.id, {}, 0, 0}, j.id, false});
          stopping[v] = true;
          scavenger_gpus -= r.gpus().value();
          killed_by = std::max(killed_by, snap.now + r.spec->grace);
        }
        cs.HoldFree(plan->slices);
        note(ReasonCode::kWaitPreemption, killed_by.value(), 0, killed_by);
        continue;
      }
      if (!plan) failed_preempt.Add(shape);
    }
    if (!head_seen) {
      // EASY: the first funded job that cannot start holds the one reservation.
      head_seen = true;
      const ReservationPlan plan = PlanReservation(shape, cs, releases(), snap.now);
      if (plan.due != kNever) {
        due = plan.due;
        holder = j.id;
        cs.Reserve(plan.slices);
        out.reservations.push_back(ReservationDecision{j.id, due, plan.slices});
        note(ReasonCode::kWaitReservation, due.value(), 0, due);
        continue;
      }
    }
    note(ReasonCode::kWaitGpus, j.gpus.value(), cs.total_free());
  }

  // Scavenger QOS: whatever is left, first come first served.
  for (const PendingJob& p : snap.pending_unfunded) {
    if (!p.spec) continue;
    const JobSpec& j = *p.spec;
    if (!snap.explain && cs.total_free() == 0) break;
    const Shape shape = cs.ShapeOf(j.gpus, j.gpus_per_node);
    if (try_start(j, shape)) continue;
    if (snap.explain)
      out.pending.push_back(PendingNote{
          j.id, Reason{ReasonCode::kWaitUnfunded, {}, {}, j.gpus.value(), cs.total_free()},
          kNever});
  }
  return out;
}

}  // namespace hg
