#include "core/preemption.h"

#include <algorithm>

namespace hg {

double LostWork(const RunningJob& r, Seconds now) {
  Seconds since = r.started;
  if (r.spec->resumable && r.checkpointed > since) since = r.checkpointed;
  return GpuSeconds(r.gpus(), now - since);
}

std::optional<PreemptionPlan> PlanPreemption(
    const Shape& shape, Gpus job_gpus, const ClusterState& cs, std::span<const RunningJob> running,
    const NodeJobs& on_node, std::span<const uint8_t> stopping, FunctionRef<bool(size_t)> eligible,
    Seconds now, bool may_use_reserved, std::span<const int32_t> may_leave,
    std::span<const int32_t> visit, std::span<const Soon> soon, std::span<const int32_t> slice_gpus,
    PreemptionScratch* scratch, bool count_free) {
  using NodeCost = PreemptionScratch::NodeCost;
  using Cand = PreemptionScratch::Cand;
  constexpr size_t kSoon = PreemptionScratch::kSoon;
  PreemptionScratch own;
  PreemptionScratch& sc = scratch ? *scratch : own;
  const int32_t g = shape.per_node;
  // Cost for each node of making `need` GPUs available there. Victims are listed only for the
  // nodes a plan ends up using; scratch space is reused: this runs for every node.
  std::vector<Cand>& cands = sc.cands;
  // Each running job is asked once per plan, not once per node it runs on: a gang spans dozens.
  std::vector<signed char>& is_eligible = sc.is_eligible;
  is_eligible.assign(running.size(), -1);
  auto may_take = [&](size_t i) {
    if (is_eligible[i] < 0) is_eligible[i] = eligible(i) ? 1 : 0;
    return is_eligible[i] == 1;
  };
  // GPUs job i holds on node `id`, without a scan of a gang's slices when all are one size.
  std::vector<int32_t>& same_size = sc.same_size;  // when the caller gave no slice_gpus
  if (slice_gpus.empty()) same_size.assign(running.size(), -1);
  auto gpus_on = [&](size_t i, NodeId id) {
    if (!slice_gpus.empty()) return GpusOn(running[i], id, slice_gpus[i]);
    if (same_size[i] < 0) same_size[i] = UniformSliceGpus(running[i]);
    return GpusOn(running[i], id, same_size[i]);
  };
  auto node_cost = [&](size_t n, int32_t need, std::vector<size_t>* victims,
                       std::vector<Slice>* waits) {
    NodeCost nc;
    const NodeId id(static_cast<int32_t>(n));
    if (!cs.ready(id)) return nc;
    int32_t have = count_free ? cs.free(id) - (may_use_reserved ? 0 : cs.reserved(id)) : 0;
    if (have >= need) {
      nc.feasible = true;
      return nc;
    }
    // Even every job that may leave leaving would not make room: skip the eligibility tests.
    if (!may_leave.empty()) {
      if (have + may_leave[n] < need) return nc;
    } else {
      int32_t held = soon.empty() ? 0 : soon[n].gpus;
      for (size_t i : on_node[n])
        if (!stopping[i]) held += gpus_on(i, id);
      if (have + held < need) return nc;
    }
    cands.clear();
    // Waiting for spare GPUs loses no work: its cost is the wait alone. Not on reserved GPUs for
    // a job that may not use them: a leaving job's GPUs may fall to the reservation.
    if (!soon.empty() && soon[n].gpus > 0 && (may_use_reserved || cs.reserved(id) == 0)) {
      const double wait = GpuSeconds(job_gpus, std::max(Seconds(0), soon[n].at - now));
      cands.push_back({1, wait, kSoon, soon[n].gpus});
    }
    for (size_t i : on_node[n]) {
      if (stopping[i] || !may_take(i)) continue;
      const RunningJob& r = running[i];
      const int32_t here = gpus_on(i, id);
      const double wait = GpuSeconds(job_gpus, r.spec->grace);
      cands.push_back({r.spec->funded() ? 2 : 0, LostWork(r, now) + wait, i, here});
    }
    std::sort(cands.begin(), cands.end(), [&](const Cand& a, const Cand& b) {
      if (a.rank != b.rank) return a.rank < b.rank;
      if (a.cost != b.cost) return a.cost < b.cost;
      return running[a.idx].spec->id < running[b.idx].spec->id;  // one kSoon per node at most
    });
    for (const Cand& c : cands) {
      if (have >= need) break;
      if (c.idx == kSoon) {
        const int32_t use = std::min(c.gpus_here, need - have);
        have += use;
        nc.cost += c.cost;
        nc.waits = 1;
        if (waits) waits->push_back(Slice{id, Gpus(use)});
        continue;
      }
      have += c.gpus_here;
      nc.funded += c.rank == 2 ? 1 : 0;
      nc.cost += c.cost;
      if (victims) victims->push_back(c.idx);
    }
    nc.feasible = have >= need;
    return nc;
  };

  // Infeasible unless computed. Between plans every entry is infeasible (the guard below), so a
  // plan that visits a few nodes of thousands writes and clears those alone.
  std::vector<NodeCost>& costs = sc.costs;
  if (costs.size() != cs.size()) costs.assign(cs.size(), NodeCost{});
  struct Clear {
    std::vector<NodeCost>& costs;
    std::span<const int32_t> visit;
    ~Clear() {
      if (visit.empty()) {
        std::fill(costs.begin(), costs.end(), NodeCost{});
      } else {
        for (int32_t n : visit) costs[static_cast<size_t>(n)] = NodeCost{};
      }
    }
  } clear{costs, visit};
  if (visit.empty()) {
    for (size_t n = 0; n < cs.size(); ++n) costs[n] = node_cost(n, g, nullptr, nullptr);
  } else {
    for (int32_t n : visit)
      costs[static_cast<size_t>(n)] = node_cost(static_cast<size_t>(n), g, nullptr, nullptr);
  }

  auto finish = [&](std::vector<size_t> nodes) -> std::optional<PreemptionPlan> {
    PreemptionPlan plan;
    for (size_t n : nodes) {
      plan.slices.push_back(Slice{NodeId(static_cast<int32_t>(n)), Gpus(g)});
      node_cost(n, g, &plan.victims, &plan.soon);
    }
    if (shape.rest > 0) {
      std::optional<size_t> best;
      NodeCost best_cost;
      for (size_t n = 0; n < cs.size(); ++n) {
        if (std::find(nodes.begin(), nodes.end(), n) != nodes.end()) continue;
        const NodeCost c = node_cost(n, shape.rest, nullptr, nullptr);
        if (c.feasible && (!best || c < best_cost)) {
          best = n;
          best_cost = c;
        }
      }
      if (!best) return std::nullopt;
      plan.slices.push_back(Slice{NodeId(static_cast<int32_t>(*best)), Gpus(shape.rest)});
      node_cost(*best, shape.rest, &plan.victims, &plan.soon);
    }
    std::sort(plan.victims.begin(), plan.victims.end());
    plan.victims.erase(std::unique(plan.victims.begin(), plan.victims.end()), plan.victims.end());
    return plan;
  };

  auto by_cost = [&](size_t a, size_t b) {
    if (costs[a] < costs[b]) return true;
    if (costs[b] < costs[a]) return false;
    return a < b;
  };
  const auto k = static_cast<size_t>(shape.count);
  if (k == 1 && shape.rest == 0) {
    std::optional<size_t> best;
    for (size_t n = 0; n < cs.size(); ++n)
      if (costs[n].feasible && (!best || by_cost(n, *best))) best = n;
    if (!best) return std::nullopt;
    return finish({*best});
  }
  // Gangs: the cheapest k nodes inside one block if any block can host them, else anywhere.
  std::optional<std::vector<size_t>> best_nodes;
  NodeCost best_total;
  for (int32_t b = 0; b < cs.num_blocks(); ++b) {
    std::vector<size_t> cand;
    for (NodeId id : cs.block_nodes(b))
      if (costs[static_cast<size_t>(id.value())].feasible)
        cand.push_back(static_cast<size_t>(id.value()));
    if (cand.size() < k) continue;
    std::sort(cand.begin(), cand.end(), by_cost);
    cand.resize(k);
    NodeCost total;
    for (size_t n : cand) {
      total.funded += costs[n].funded;
      total.waits += costs[n].waits;
      total.cost += costs[n].cost;
    }
    if (!best_nodes || total < best_total) {
      best_nodes = cand;
      best_total = total;
    }
  }
  if (best_nodes) return finish(*best_nodes);
  std::vector<size_t> cand;
  for (size_t n = 0; n < cs.size(); ++n)
    if (costs[n].feasible) cand.push_back(n);
  if (cand.size() < k) return std::nullopt;
  std::sort(cand.begin(), cand.end(), by_cost);
  cand.resize(k);
  return finish(cand);
}

}  // namespace hg
