#include "core/cluster_state.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace hg {

ClusterState::ClusterState(std::span<const Node> nodes, std::span<const RunningJob> running) {
  const size_t n = nodes.size();
  free_.resize(n);
  reserved_.assign(n, 0);
  block_.resize(n);
  ready_.resize(n);
  // Blocks are numbered in name order. This runs every cycle and nodes of a block usually come
  // together, so each node's name is compared with the previous node's once (runs of one name),
  // only a run's first name is searched for, nothing is copied, and each block's list of nodes
  // is sized before it is filled.
  std::vector<size_t> run_starts;  // nodes whose block differs from the previous node's
  std::vector<const std::string*> names;
  for (size_t i = 0; i < n; ++i)
    if (i == 0 || nodes[i].block != nodes[i - 1].block) {
      run_starts.push_back(i);
      names.push_back(&nodes[i].block);
    }
  auto by_name = [](const std::string* a, const std::string* b) { return *a < *b; };
  std::sort(names.begin(), names.end(), by_name);
  names.erase(std::unique(names.begin(), names.end(),
                          [](const std::string* a, const std::string* b) { return *a == *b; }),
              names.end());
  std::vector<size_t> per_block(names.size(), 0);
  for (size_t r = 0; r < run_starts.size(); ++r) {
    const auto it =
        std::lower_bound(names.begin(), names.end(), &nodes[run_starts[r]].block, by_name);
    const auto b = static_cast<int32_t>(it - names.begin());
    const size_t end = r + 1 < run_starts.size() ? run_starts[r + 1] : n;
    std::fill(block_.begin() + static_cast<std::ptrdiff_t>(run_starts[r]),
              block_.begin() + static_cast<std::ptrdiff_t>(end), b);
    per_block[static_cast<size_t>(b)] += end - run_starts[r];
  }
  block_nodes_.resize(names.size());
  for (size_t b = 0; b < names.size(); ++b) block_nodes_[b].reserve(per_block[b]);
  for (size_t i = 0; i < n; ++i) {
    assert(nodes[i].id.value() == static_cast<int32_t>(i));
    free_[i] = nodes[i].gpus.value();
    ready_[i] = nodes[i].state == NodeState::kReady ? 1 : 0;
    block_nodes_[static_cast<size_t>(block_[i])].push_back(nodes[i].id);
    max_gpus_ = std::max(max_gpus_, nodes[i].gpus.value());
  }
  funded_.assign(n, 0);
  unfunded_.assign(n, 0);
  for (const RunningJob& r : running) {
    for (const Slice& s : r.placement) {
      free_[Index(s.node)] -= s.gpus.value();
      (r.spec->funded() ? funded_ : unfunded_)[Index(s.node)] += s.gpus.value();
    }
  }
  by_free_.Reset(Bucket(4, 0), n);  // 4 kinds x 0..max_gpus_ free GPUs
  for (size_t i = 0; i < n; ++i) {
    assert(free_[i] >= 0);
    if (!ready_[i]) continue;
    capacity_ += nodes[i].gpus.value();
    total_free_ += free_[i];
    Index(i, true);
  }
}

void ClusterState::Index(size_t i, bool insert) {
  if (!ready_[i]) return;
  const size_t bucket = Bucket(Kind(i), static_cast<size_t>(free_[i] - reserved_[i]));
  if (insert)
    by_free_.Insert(bucket, i);
  else
    by_free_.Erase(bucket, i);
}

int32_t ClusterState::LargestFree() const {
  int32_t best = 0;
  for (int kind = 0; kind < 4; ++kind)
    for (size_t f = static_cast<size_t>(max_gpus_) + 1; f-- > 1;)
      if (by_free_.Size(Bucket(kind, f)) > 0) {
        best = std::max(best, static_cast<int32_t>(f));
        break;
      }
  return best;
}

std::optional<std::vector<Slice>> ClusterState::Find(const Shape& shape, bool may_use_reserved,
                                                     bool funded) const {
  if (shape.slices() == 0) return std::nullopt;
  if (shape.slices() > 1) return FindMulti(shape, may_use_reserved);
  const int32_t g = shape.per_node;
  if (g > max_gpus_) return std::nullopt;
  // Nodes of the job's own kind first, then mixed ones, then empty ones, the other kind last;
  // best-fit within each.
  static constexpr int kFundedOrder[4] = {1, 3, 0, 2};
  static constexpr int kUnfundedOrder[4] = {2, 3, 0, 1};
  const int* order = funded ? kFundedOrder : kUnfundedOrder;
  std::optional<int32_t> best;
  int32_t best_free = 0;
  int best_rank = 4;
  for (int rank = 0; rank < 4 && !best; ++rank) {
    for (size_t f = static_cast<size_t>(g); f <= static_cast<size_t>(max_gpus_); ++f) {
      const size_t bucket = Bucket(order[rank], f);
      if (by_free_.Size(bucket) == 0) continue;
      best = by_free_.First(bucket);
      best_free = static_cast<int32_t>(f);
      best_rank = rank;
      break;
    }
  }
  if (may_use_reserved) {
    for (int32_t i : reserved_nodes_) {
      const int32_t a = Avail(static_cast<size_t>(i), true);
      if (a < g) continue;
      int rank = 0;
      while (order[rank] != Kind(static_cast<size_t>(i))) ++rank;
      if (!best || rank < best_rank ||
          (rank == best_rank && (a < best_free || (a == best_free && i < *best)))) {
        best = i;
        best_free = a;
        best_rank = rank;
      }
    }
  }
  if (!best) return std::nullopt;
  return std::vector<Slice>{Slice{NodeId(*best), Gpus(g)}};
}

std::optional<std::vector<Slice>> ClusterState::FindMulti(const Shape& shape,
                                                          bool may_use_reserved) const {
  const int32_t g = shape.per_node;
  const int32_t k = shape.count;
  if (g > max_gpus_ || static_cast<int64_t>(g) * k > total_free_) return std::nullopt;
  // Cheap feasibility check first: enough nodes with room for a slice anywhere?
  int64_t eligible_total = 0;
  for (int kind = 0; kind < 4; ++kind)
    for (size_t f = static_cast<size_t>(g); f <= static_cast<size_t>(max_gpus_); ++f)
      eligible_total += static_cast<int64_t>(by_free_.Size(Bucket(kind, f)));
  if (may_use_reserved) eligible_total += static_cast<int64_t>(reserved_nodes_.size());
  if (eligible_total < shape.count) return std::nullopt;  // the remainder needs less room

  struct Cand {
    int32_t avail;
    int32_t node;
  };
  std::vector<std::vector<Cand>> per_block(block_nodes_.size());
  for (size_t b = 0; b < block_nodes_.size(); ++b) {
    for (NodeId id : block_nodes_[b]) {
      const int32_t a = Avail(Index(id), may_use_reserved);
      if (a >= std::min(g, shape.rest > 0 ? shape.rest : g))
        per_block[b].push_back({a, id.value()});
    }
    std::sort(per_block[b].begin(), per_block[b].end(), [](const Cand& x, const Cand& y) {
      return x.avail != y.avail ? x.avail < y.avail : x.node < y.node;
    });
  }
  auto count_at_least = [&](const std::vector<Cand>& v, int32_t need) {
    return static_cast<int32_t>(
        std::count_if(v.begin(), v.end(), [&](const Cand& c) { return c.avail >= need; }));
  };
  // Takes best-fit slices from the candidate lists in `blocks` order.
  auto take = [&](const std::vector<size_t>& blocks) -> std::optional<std::vector<Slice>> {
    std::vector<Slice> out;
    std::vector<int32_t> used;
    for (size_t b : blocks) {
      for (const Cand& c : per_block[b]) {
        if (static_cast<int32_t>(out.size()) == k) break;
        if (c.avail < g) continue;
        out.push_back(Slice{NodeId(c.node), Gpus(g)});
        used.push_back(c.node);
      }
    }
    if (static_cast<int32_t>(out.size()) < k) return std::nullopt;
    if (shape.rest > 0) {
      for (size_t b : blocks) {
        for (const Cand& c : per_block[b]) {
          if (c.avail < shape.rest || std::find(used.begin(), used.end(), c.node) != used.end())
            continue;
          out.push_back(Slice{NodeId(c.node), Gpus(shape.rest)});
          return out;
        }
      }
      return std::nullopt;
    }
    return out;
  };
  // One block if possible: the one with the fewest eligible nodes that still fits.
  std::optional<size_t> best;
  int32_t best_count = 0;
  for (size_t b = 0; b < per_block.size(); ++b) {
    const int32_t c = count_at_least(per_block[b], g);
    const bool fits = c >= k && static_cast<int32_t>(per_block[b].size()) >= shape.slices();
    if (fits && (!best || c < best_count)) {
      best = b;
      best_count = c;
    }
  }
  if (best) {
    if (auto out = take({*best})) return out;
  }
  // Otherwise span as few blocks as possible: the roomiest first.
  std::vector<size_t> order(per_block.size());
  for (size_t b = 0; b < order.size(); ++b) order[b] = b;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return count_at_least(per_block[x], g) > count_at_least(per_block[y], g);
  });
  return take(order);
}

void ClusterState::Take(std::span<const Slice> slices, bool funded) {
  for (const Slice& s : slices) {
    const size_t i = Index(s.node);
    assert(ready_[i] && free_[i] >= s.gpus.value());
    Index(i, false);
    free_[i] -= s.gpus.value();
    (funded ? funded_ : unfunded_)[i] += s.gpus.value();
    // Jobs allowed on reserved GPUs consume the reservation's part last.
    if (free_[i] < reserved_[i]) reserved_[i] = free_[i];
    total_free_ -= s.gpus.value();
    Index(i, true);
  }
}

void ClusterState::HoldFree(std::span<const Slice> planned, bool funded) {
  for (const Slice& s : planned) {
    const int32_t take = std::min(s.gpus.value(), free_[Index(s.node)]);
    if (take <= 0) continue;
    const Slice held{s.node, Gpus(take)};
    Take(std::span<const Slice>(&held, 1), funded);
  }
}

void ClusterState::Reserve(std::span<const Slice> slices) {
  for (const Slice& s : slices) {
    const size_t i = Index(s.node);
    if (!ready_[i]) continue;
    Index(i, false);
    if (reserved_[i] == 0) reserved_nodes_.push_back(static_cast<int32_t>(i));
    reserved_[i] = std::min(free_[i], reserved_[i] + s.gpus.value());
    Index(i, true);
  }
}

}  // namespace hg
