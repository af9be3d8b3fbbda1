#include "core/reservation_plan.h"

#include <algorithm>
#include <cstddef>

namespace hg {

std::vector<std::vector<Release>> KnownReleases(const Snapshot& snap,
                                                std::span<const uint8_t> stopping,
                                                const std::vector<const JobSpec*>& started,
                                                const std::vector<StartDecision>& placements) {
  std::vector<std::vector<Release>> rel(snap.nodes.size());
  auto add = [&](const std::vector<Slice>& placement, Seconds at) {
    for (const Slice& s : placement)
      rel[static_cast<size_t>(s.node.value())].push_back(Release{at, s.gpus.value()});
  };
  for (size_t i = 0; i < snap.running.size(); ++i) {
    const RunningJob& r = snap.running[i];
    if (r.stopping) {
      add(r.placement, std::max(snap.now, r.stop_at));
    } else if (stopping[i]) {
      add(r.placement, snap.now + r.spec->grace);
    } else if (r.spec->max_runtime) {
      add(r.placement, std::max(snap.now, r.started + *r.spec->max_runtime));
    }
  }
  for (size_t s = 0; s < started.size(); ++s)
    if (started[s]->max_runtime) add(placements[s].placement, snap.now + *started[s]->max_runtime);
  for (auto& v : rel) std::sort(v.begin(), v.end());
  return rel;
}

Seconds FirstTimeWith(int32_t free, int32_t need, std::span<const Release> releases, Seconds now) {
  if (free >= need) return now;
  for (const Release& r : releases) {
    free += r.gpus;
    if (free >= need) return r.at;
  }
  return kNever;
}

ReservationPlan ChooseReservation(const Shape& shape, const ClusterState& cs,
                                  FunctionRef<Seconds(size_t)> ready_at) {
  struct At {
    Seconds t;
    size_t n;
    bool operator<(const At& o) const { return t != o.t ? t < o.t : n < o.n; }
  };
  const auto k = static_cast<size_t>(shape.slices());
  ReservationPlan best;
  std::vector<At> chosen;
  auto consider = [&](std::vector<At> c) {
    if (c.size() < k) return;
    std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k), c.end());
    c.resize(k);
    if (c.back().t < best.due) {
      best.due = c.back().t;
      chosen = std::move(c);
    }
  };
  // A gang stays inside one block (network domain) unless spanning blocks starts it strictly
  // earlier, as the placement of a job that fits now prefers one block.
  std::vector<At> all;
  for (int32_t b = 0; b < cs.num_blocks(); ++b) {
    std::vector<At> c;
    for (NodeId id : cs.block_nodes(b)) {
      const auto n = static_cast<size_t>(id.value());
      const Seconds t = ready_at(n);
      if (t != kNever) c.push_back({t, n});
    }
    all.insert(all.end(), c.begin(), c.end());
    if (k > 1) consider(std::move(c));
  }
  consider(std::move(all));
  for (const At& a : chosen)
    best.slices.push_back(Slice{NodeId(static_cast<int32_t>(a.n)), Gpus(shape.per_node)});
  return best;
}

ReservationPlan PlanReservation(const Shape& shape, const ClusterState& cs,
                                const std::vector<std::vector<Release>>& releases, Seconds now) {
  return ChooseReservation(shape, cs, [&](size_t n) {
    const NodeId id(static_cast<int32_t>(n));
    return cs.ready(id) ? FirstTimeWith(cs.free(id), shape.per_node, releases[n], now) : kNever;
  });
}

}  // namespace hg
