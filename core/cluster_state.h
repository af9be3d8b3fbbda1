// Free GPUs per node during one cycle, with an index for best-fit placement of gangs.
// Best-fit: a small job goes to the ready node with the fewest free GPUs that still fit it, so
// partly used nodes fill up and whole nodes stay free for large jobs. A multi-node gang goes into
// one block (network domain) when one has room, the tightest such block first.
// Funded and unfunded work are kept on separate nodes where possible: a node that holds only
// unfunded work can be emptied at once for a gang, while one that mixes it with a protected
// funded job cannot, and its unfunded GPUs would be stranded.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/model.h"

namespace hg {

// A gang's per-node requirement: `count` nodes with `per_node` GPUs, plus one with `rest` > 0.
struct Shape {
  int32_t per_node = 0;
  int32_t count = 0;
  int32_t rest = 0;
  int32_t slices() const { return count + (rest > 0 ? 1 : 0); }
};

// The shape of a request on a cluster whose largest node has `max_node_gpus` GPUs: as asked with
// `gpus_per_node`, else on one node if it fits there, else whole largest nodes and the rest.
inline Shape ShapeFor(Gpus gpus, Gpus gpus_per_node, int32_t max_node_gpus) {
  const int32_t g = gpus.value();
  if (gpus_per_node.value() > 0) return Shape{gpus_per_node.value(), g / gpus_per_node.value(), 0};
  if (g <= max_node_gpus || max_node_gpus == 0) return Shape{g, 1, 0};
  return Shape{max_node_gpus, g / max_node_gpus, g % max_node_gpus};
}

class ClusterState {
 public:
  ClusterState(std::span<const Node> nodes, std::span<const RunningJob> running);

  size_t size() const { return free_.size(); }
  int32_t max_node_gpus() const { return max_gpus_; }
  int32_t free(NodeId n) const { return free_[Index(n)]; }
  int32_t reserved(NodeId n) const { return reserved_[Index(n)]; }
  bool ready(NodeId n) const { return ready_[Index(n)] != 0; }
  int32_t block(NodeId n) const { return block_[Index(n)]; }
  int32_t num_blocks() const { return static_cast<int32_t>(block_nodes_.size()); }
  const std::vector<NodeId>& block_nodes(int32_t b) const {
    return block_nodes_[static_cast<size_t>(b)];
  }
  int64_t total_free() const { return total_free_; }
  int64_t capacity() const { return capacity_; }

  // Inline: the unfunded pass asks it for every job of a queue tens of thousands long.
  Shape ShapeOf(Gpus gpus, Gpus gpus_per_node) const {
    return ShapeFor(gpus, gpus_per_node, max_gpus_);
  }

  // Best-fit placement on free GPUs; GPUs reserved for another job are used only if
  // `may_use_reserved`.
  std::optional<std::vector<Slice>> Find(const Shape& shape, bool may_use_reserved,
                                         bool funded = true) const;
  // Largest single-node request that would fit now (for reasons and fragmentation measures).
  int32_t LargestFree() const;

  void Take(std::span<const Slice> slices, bool funded = true);
  void Reserve(std::span<const Slice> slices);
  // Takes what is free now of a placement planned over running victims: the job waiting for them
  // to leave holds those GPUs, or other work would slip in and have to be preempted in turn.
  void HoldFree(std::span<const Slice> planned, bool funded = true);

 private:
  static size_t Index(NodeId n) { return static_cast<size_t>(n.value()); }
  int32_t Avail(size_t i, bool may_use_reserved) const {
    return ready_[i] ? free_[i] - (may_use_reserved ? 0 : reserved_[i]) : 0;
  }
  void Index(size_t i, bool insert);
  // 0 empty, 1 funded work only, 2 unfunded work only, 3 both.
  int Kind(size_t i) const { return (funded_[i] > 0 ? 1 : 0) | (unfunded_[i] > 0 ? 2 : 0); }
  std::optional<std::vector<Slice>> FindMulti(const Shape& shape, bool may_use_reserved) const;

  std::vector<int32_t> free_;
  std::vector<int32_t> reserved_;
  std::vector<int32_t> block_;
  // Bytes, not std::vector<bool>: asked of every node a preemption plan visits, and a bit's
  // shift and mask cost more than the load.
  std::vector<uint8_t> ready_;
  std::vector<std::vector<NodeId>> block_nodes_;
  std::vector<int32_t> funded_;    // GPUs held by funded work
  std::vector<int32_t> unfunded_;  // GPUs held by unfunded work
  // Sets of node indices as bits, one set per bucket: built in every cycle and changed by every
  // placement, so no node of a tree is allocated for each entry.
  class NodeSets {
   public:
    void Reset(size_t sets, size_t nodes) {
      words_ = (nodes + 63) / 64;
      bits_.assign(sets * words_, 0);
      count_.assign(sets, 0);
    }
    void Insert(size_t set, size_t node) {
      uint64_t& w = bits_[set * words_ + node / 64];
      const uint64_t bit = uint64_t{1} << (node % 64);
      if (!(w & bit)) ++count_[set];
      w |= bit;
    }
    void Erase(size_t set, size_t node) {
      uint64_t& w = bits_[set * words_ + node / 64];
      const uint64_t bit = uint64_t{1} << (node % 64);
      if (w & bit) --count_[set];
      w &= ~bit;
    }
    size_t Size(size_t set) const { return count_[set]; }
    // The smallest node index in a non-empty set.
    int32_t First(size_t set) const {
      for (size_t k = 0; k < words_; ++k)
        if (const uint64_t w = bits_[set * words_ + k])
          return static_cast<int32_t>(k * 64 + static_cast<size_t>(std::countr_zero(w)));
      return -1;
    }

   private:
    size_t words_ = 0;
    std::vector<uint64_t> bits_;
    std::vector<size_t> count_;
  };
  // Ready nodes by kind and unreserved free GPUs: set Bucket(kind, f).
  size_t Bucket(int kind, size_t f) const {
    return static_cast<size_t>(kind) * (static_cast<size_t>(max_gpus_) + 1) + f;
  }
  NodeSets by_free_;
  std::vector<int32_t> reserved_nodes_;
  int32_t max_gpus_ = 0;
  int64_t total_free_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace hg
