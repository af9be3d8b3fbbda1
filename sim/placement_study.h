// The placement study of issue 4: fill a cluster with tasks in list order, none leaving, and see
// how many GPUs stay allocatable and how large a job still fits as it fills, under hourglass's
// placement (core/cluster_state.h: best-fit, funded and unfunded work kept apart) and under
// first-fit (the first node in id order with room). A task that does not fit is counted as
// failed and skipped; the fill goes on with the next.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "sim/scenario.h"

namespace hg::sim {

struct PlacementTask {
  std::string name;
  int32_t gpus = 1;
  bool funded = true;  // hourglass keeps unfunded (best-effort) work on its own nodes where it can
  int line = 0;
};

enum class Placer { kHourglass, kFirstFit };
const char* ToString(Placer p);  // "hourglass", "first-fit"

// The cluster after the tasks up to a fill level were placed (or refused).
struct PlacementPoint {
  double level = 0;         // GPUs requested so far / cluster GPUs, at the crossing (0.05, 0.10...)
  int64_t tasks = 0;        // tasks tried so far
  int64_t requested = 0;    // GPUs those tasks asked for
  int64_t allocated = 0;    // GPUs placed
  int64_t free = 0;         // allocatable GPUs left (capacity - allocated)
  int32_t largest = 0;      // largest single-node job that still fits (most free GPUs on a node)
  int64_t free_nodes8 = 0;  // 8-GPU nodes still wholly free: a gang of 8 x this still fits
  int64_t failed = 0;       // tasks that did not fit so far
  int64_t failed_gpus = 0;
};

struct PlacementRun {
  std::string workload;  // e.g. the pod list's name
  std::string placer;
  int64_t capacity = 0;  // cluster GPUs
  int64_t nodes = 0;
  int64_t tasks = 0;  // tasks in the list
  int64_t requested = 0;
  std::vector<PlacementPoint> points;  // one per level crossed, then the end (level = requested)
  PlacementPoint first_failure;        // the state right after the first refusal (tasks = 0: none)
};

// Records a point each time the GPUs requested cross a multiple of `step` x capacity, and one at
// the end. Nodes keep their order (first-fit scans them in it); `block` is the network domain.
PlacementRun RunPlacement(std::span<const NodeSpec> nodes, std::span<const PlacementTask> tasks,
                          Placer placer, double step = 0.05);

// Both pod lists of the openb directory x both placers, in that order.
Result<std::vector<PlacementRun>> RunOpenbPlacementStudy(const std::string& openb_dir,
                                                         double step = 0.05);

// A fixed-width table (one block per workload, both placers side by side) and the same as JSON.
std::string RenderPlacementTable(const std::vector<PlacementRun>& runs);
std::string RenderPlacementJson(const std::vector<PlacementRun>& runs);

}  // namespace hg::sim
