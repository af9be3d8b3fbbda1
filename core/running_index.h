// What every policy's cycle first derives from the running jobs: which are leaving, which run on
// each node, and, for jobs waiting on victims, when the last victim is killed at the latest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "core/policy.h"

namespace hg {

// Per node, the indices of the running jobs with a slice there, in index order. One flat array
// (with each node's start) rather than a vector per node: every cycle builds it anew, and a
// vector per node was a heap allocation per node per cycle.
class NodeJobs {
 public:
  NodeJobs() = default;
  NodeJobs(std::span<const RunningJob> running, size_t nodes);
  std::span<const size_t> operator[](size_t node) const {
    return {jobs_.data() + start_[node], start_[node + 1] - start_[node]};
  }
  size_t size() const { return start_.empty() ? 0 : start_.size() - 1; }

 private:
  std::vector<size_t> start_;  // node n's jobs are jobs_[start_[n], start_[n + 1])
  std::vector<size_t> jobs_;
};

struct RunningIndex {
  // Bytes, not std::vector<bool>: PlanPreemption reads one per victim visit (no shift and mask).
  std::vector<uint8_t> stopping;       // per running job: inside its grace period
  NodeJobs on_node;                    // per node: indices into Snapshot::running
  std::map<int64_t, Seconds> waiting;  // job id -> latest kill time of its victims
};

RunningIndex IndexRunning(const Snapshot& snap);

}  // namespace hg
