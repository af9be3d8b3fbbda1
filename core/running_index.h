// What every policy's cycle first derives from the running jobs: which are leaving, which run on
// each node, and, for jobs waiting on victims, when the last victim is killed at the latest.
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include "core/policy.h"

namespace hg {

struct RunningIndex {
  std::vector<bool> stopping;                // per running job: inside its grace period
  std::vector<std::vector<size_t>> on_node;  // per node: indices into Snapshot::running
  std::map<int64_t, Seconds> waiting;        // job id -> latest kill time of its victims
};

RunningIndex IndexRunning(const Snapshot& snap);

}  // namespace hg
