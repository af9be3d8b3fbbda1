#include "core/kueue_quota_policy.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/cluster_state.h"
#include "core/housekeeping.h"
#include "core/preemption.h"
#include "core/running_index.h"
#include "core/victim_hold.h"

namespace hg {
namespace {

// As in the hourglass policy: preemption planning looks at every node, so a cycle plans at most
// this many preemptions, fewer on big clusters; jobs not reached wait for the next cycle.
constexpr int kMaxPreemptPlans = 64;
constexpr int kMinPreemptPlans = 8;
constexpr int64_t kMaxPlanNodeVisits = 160'000;

}  // namespace

BudgetId KueueProjectOf(const BudgetTree& tree, BudgetId budget) {
  BudgetId b = budget;
  while (tree.depth(b) > 2) b = tree.parent(b);
  return b;
}

int64_t KueueNominalQuota(const BudgetTree& tree, BudgetId project, int64_t capacity) {
  return static_cast<int64_t>(
      std::floor(static_cast<double>(capacity) * tree.entitlement(project)));
}

Decisions KueueQuotaPolicy::Cycle(const Snapshot& snap) const {
  Decisions out;
  RunningIndex ix = IndexRunning(snap);
  std::vector<uint8_t>& stopping = ix.stopping;
  const NodeJobs& on_node = ix.on_node;
  const std::map<int64_t, Seconds>& waiting = ix.waiting;
  // min_runtime is the protection the site configures: drains wait for it too.
  Housekeeping(snap, HousekeepingOptions{true}, stopping, out);
  ClusterState cs(snap.nodes, snap.running);
  HoldForVictims(snap, waiting, cs);  // what a job waiting for its victims will need
  const BudgetTree* tree = snap.tree;
  // Each budget's project, worked out once: it is asked for every pending and running job.
  std::vector<BudgetId> project_ix;
  if (tree)
    for (size_t i = 0; i < tree->size(); ++i)
      project_ix.push_back(KueueProjectOf(*tree, BudgetId(static_cast<int32_t>(i))));
  auto project_of = [&](BudgetId b) {
    return tree ? project_ix[static_cast<size_t>(b.value())] : b;
  };

  // ClusterQueues: nominal quota and current usage (GPUs of admitted, not leaving, jobs).
  std::map<int32_t, int64_t> nominal, used;
  if (tree) {
    for (size_t i = 0; i < tree->size(); ++i) {
      const BudgetId b(static_cast<int32_t>(i));
      if (tree->depth(b) == 2 || (tree->depth(b) == 1 && tree->is_leaf(b)))
        nominal[b.value()] = KueueNominalQuota(*tree, b, cs.capacity());
    }
  }
  // GPUs held per budget subtree, for the tree's limits.
  std::vector<int64_t> held(tree ? tree->size() : 0, 0);
  auto charge = [&](BudgetId leaf, int64_t gpus) {
    used[project_of(leaf).value()] += gpus;
    if (!tree) return;
    for (BudgetId b = leaf; b.value() > 0; b = tree->parent(b))
      held[static_cast<size_t>(b.value())] += gpus;
  };
  int64_t unfunded_gpus = 0;  // unfunded GPUs a funded admission could still preempt
  for (size_t i = 0; i < snap.running.size(); ++i) {
    if (stopping[i]) continue;
    const JobSpec& j = *snap.running[i].spec;
    if (j.funded()) {
      charge(j.budget, j.gpus.value());
    } else {
      unfunded_gpus += j.gpus.value();
    }
  }
  // A job whose victims are leaving is admitted already: its quota stays reserved.
  if (!waiting.empty())
    for (const PendingJob& p : snap.pending_funded)
      if (p.spec && waiting.count(p.spec->id.value())) charge(p.spec->budget, p.spec->gpus.value());

  auto quota = [&](int32_t project) {
    auto it = nominal.find(project);
    return it == nominal.end() ? int64_t{0} : it->second;
  };
  auto usage = [&](int32_t project) {
    auto it = used.find(project);
    return it == used.end() ? int64_t{0} : it->second;
  };
  auto cohort_unused = [&] {
    int64_t sum = 0;
    for (const auto& [project, q] : nominal) sum += std::max<int64_t>(0, q - usage(project));
    return sum;
  };
  // The first budget on the job's path whose limit the job would exceed, if any.
  auto over_limit = [&](const JobSpec& j) -> std::optional<BudgetId> {
    if (!tree) return std::nullopt;
    for (BudgetId b = j.budget; b.value() > 0; b = tree->parent(b)) {
      auto lim = tree->limit(b);
      if (lim && held[static_cast<size_t>(b.value())] + j.gpus.value() > *lim) return b;
    }
    return std::nullopt;
  };
  // Funded jobs of borrowing projects, past protection, that reclaim could take.
  auto reclaimable = [&](size_t i, int32_t preemptor_project) {
    const RunningJob& r = snap.running[i];
    if (!r.spec->funded()) return true;
    const int32_t proj = project_of(r.spec->budget).value();
    return proj != preemptor_project && usage(proj) > quota(proj) && r.contract_until() <= snap.now;
  };

  const int64_t by_size =
      kMaxPlanNodeVisits / std::max<int64_t>(1, static_cast<int64_t>(cs.size()));
  const int max_plans =
      static_cast<int>(std::clamp<int64_t>(by_size, kMinPreemptPlans, kMaxPreemptPlans));
  int plans = 0;

  // StrictFIFO queues per project, in the snapshot's (queued_since, id) order.
  // Collected by project id into a vector (a map lookup per pending job was a quarter of this
  // baseline's time on philly-dev), then kept in a map for the walk's order by project id.
  std::map<int32_t, std::vector<const PendingJob*>> queues;
  {
    std::vector<std::vector<const PendingJob*>> dense(project_ix.size());
    for (const PendingJob& p : snap.pending_funded) {
      if (!p.spec) continue;
      if (auto it = waiting.empty() ? waiting.end() : waiting.find(p.spec->id.value());
          it != waiting.end()) {
        if (snap.explain)
          out.pending.push_back(PendingNote{
              p.spec->id, Reason{ReasonCode::kWaitPreemption, {}, {}, it->second.value(), 0},
              it->second});
        continue;
      }
      const int32_t project = project_of(p.spec->budget).value();
      if (project >= 0 && static_cast<size_t>(project) < dense.size())
        dense[static_cast<size_t>(project)].push_back(&p);
      else
        queues[project].push_back(&p);
    }
    for (size_t i = 0; i < dense.size(); ++i)
      if (!dense[i].empty()) queues[static_cast<int32_t>(i)] = std::move(dense[i]);
  }
  std::map<int32_t, size_t> head;  // project -> index of its head; absent: blocked or empty
  for (const auto& [project, q] : queues) head[project] = 0;

  auto note = [&](const JobSpec& j, Reason r, Seconds eta = kNever) {
    if (snap.explain) out.pending.push_back(PendingNote{j.id, r, eta});
  };
  // The head cannot be admitted: StrictFIFO blocks the rest of its queue behind it.
  auto block = [&](int32_t project, Reason r) {
    const auto& q = queues[project];
    for (size_t k = head[project]; k < q.size(); ++k) note(*q[k]->spec, r);
    head.erase(project);
  };
  auto stop_victims = [&](const PreemptionPlan& plan, const JobSpec& j) {
    Seconds killed_by = snap.now;
    for (size_t v : plan.victims) {
      const RunningJob& r = snap.running[v];
      const ReasonCode code =
          r.spec->funded() ? ReasonCode::kPreemptFairShare : ReasonCode::kPreemptForFunded;
      const BudgetId at = r.spec->funded() ? project_of(j.budget) : kUnfunded;
      out.stops.push_back(StopDecision{r.spec->id, Reason{code, j.id, at, 0, 0}, j.id, false});
      stopping[v] = true;
      if (r.spec->funded()) {
        charge(r.spec->budget, -r.gpus().value());
      } else {
        unfunded_gpus -= r.gpus().value();
      }
      killed_by = std::max(killed_by, snap.now + r.spec->grace);
    }
    cs.HoldFree(plan.slices);
    charge(j.budget, j.gpus.value());
    note(j, Reason{ReasonCode::kWaitPreemption, {}, {}, killed_by.value(), 0}, killed_by);
  };

  while (!head.empty()) {
    // Across queues: within nominal quota first, then (queued_since, id).
    int32_t best = 0;
    const PendingJob* bp = nullptr;
    bool best_within = false;
    for (const auto& [project, k] : head) {
      const PendingJob* p = queues[project][k];
      const bool within = usage(project) + p->spec->gpus.value() <= quota(project);
      const bool better = !bp || (within != best_within ? within
                                                        : (p->queued_since != bp->queued_since
                                                               ? p->queued_since < bp->queued_since
                                                               : p->spec->id < bp->spec->id));
      if (better) {
        best = project;
        bp = p;
        best_within = within;
      }
    }
    const JobSpec& j = *bp->spec;
    const int64_t g = j.gpus.value();
    // A full cluster with nothing left to preempt: no funded job can start this cycle.
    if (!snap.explain && cs.total_free() == 0 && plans >= max_plans) break;
    if (auto at = over_limit(j)) {
      block(best, Reason{ReasonCode::kWaitBudgetLimit, {}, *at, *tree->limit(*at), 0});
      continue;
    }
    if (!best_within && cohort_unused() < g) {
      // Over nominal quota and the cohort has no idle quota to lend.
      block(best, Reason{ReasonCode::kWaitGpus, {}, {}, g, cohort_unused()});
      continue;
    }
    const Shape shape = cs.ShapeOf(j.gpus, j.gpus_per_node);
    if (auto slices = cs.Find(shape, false, true)) {
      cs.Take(*slices, true);
      charge(j.budget, g);
      out.starts.push_back(
          StartDecision{j.id, std::move(*slices), Reason{ReasonCode::kStartFree, {}, {}, 0, 0}});
      if (++head[best] == queues[best].size()) head.erase(best);
      continue;
    }
    if (plans < max_plans && (best_within || unfunded_gpus > 0)) {
      ++plans;
      // Within quota: reclaim from unfunded work and borrowing projects. Borrowing: only
      // unfunded work, which any funded admission preempts.
      auto eligible = [&](size_t i) {
        if (best_within) return reclaimable(i, best);
        return !snap.running[i].spec->funded();
      };
      auto plan = PlanPreemption(shape, j.gpus, cs, snap.running, on_node, stopping, eligible,
                                 snap.now, false);
      if (plan && !plan->victims.empty()) {
        stop_victims(*plan, j);
        if (++head[best] == queues[best].size()) head.erase(best);
        continue;
      }
    }
    block(best, Reason{ReasonCode::kWaitGpus, {}, {}, g, cs.total_free()});
  }

  // Unfunded work: whatever is idle, first come first served.
  for (const PendingJob& p : snap.pending_unfunded) {
    if (!p.spec) continue;
    const JobSpec& j = *p.spec;
    if (!snap.explain && cs.total_free() == 0) break;
    const Shape shape = cs.ShapeOf(j.gpus, j.gpus_per_node);
    if (auto slices = cs.Find(shape, false, false)) {
      cs.Take(*slices, false);
      out.starts.push_back(
          StartDecision{j.id, std::move(*slices), Reason{ReasonCode::kStartFree, {}, {}, 0, 0}});
      continue;
    }
    note(j, Reason{ReasonCode::kWaitUnfunded, {}, {}, j.gpus.value(), cs.total_free()});
  }
  return out;
}

}  // namespace hg
