// Choosing victims: the cheapest set of running jobs whose GPUs, with the free ones, make a
// feasible placement for a gang. Cheapest = fewest funded victims, then the least work lost
// (GPU-seconds since the victim's last checkpoint, or since its start) plus the time the
// preemptor's GPUs wait out the victims' grace periods.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/cluster_state.h"
#include "core/function_ref.h"
#include "core/model.h"
#include "core/running_index.h"

namespace hg {

struct PreemptionPlan {
  std::vector<Slice> slices;    // where the job will run
  std::vector<size_t> victims;  // indices into the running jobs
  std::vector<Slice> soon;      // spare GPUs (`Soon`, per node) the job waits for, not victims
};

// GPUs on a node that jobs already leaving will free beyond what their own preemptors take
// (a 2-GPU job that stopped an 8-GPU one leaves 6 spare), and when the last of them goes.
struct Soon {
  int32_t gpus = 0;
  Seconds at{0};
};

// Memory a plan works in, kept by a caller that plans many times (a cycle plans for most waiting
// jobs), so that a plan allocates nothing of its own. Its contents mean nothing between plans,
// but for `costs`, which a plan leaves all infeasible, as it found it, for the next one.
struct PreemptionScratch {
  // What making a slice's GPUs available on one node costs. Plain data: one per node per plan.
  struct NodeCost {
    bool feasible = false;
    int funded = 0;   // funded victims needed
    int waits = 0;    // nodes whose spare GPUs (`soon`) are waited for
    double cost = 0;  // lost work + grace wait
    bool operator<(const NodeCost& o) const {
      if (funded != o.funded) return funded < o.funded;
      if (waits != o.waits) return waits < o.waits;
      return cost < o.cost;
    }
  };
  // A way to free GPUs on a node: a running job, or the node's `soon` GPUs.
  struct Cand {
    int rank;  // unfunded victims first, then spare GPUs, then funded victims
    double cost;
    size_t idx;  // into the running jobs, or kSoon
    int32_t gpus_here;
  };
  static constexpr size_t kSoon = static_cast<size_t>(-1);
  std::vector<signed char> is_eligible;  // per running job: -1 not asked yet
  std::vector<int32_t> same_size;        // per running job: -1 unknown, else UniformSliceGpus
  std::vector<NodeCost> costs;           // per node: infeasible unless worked out (see above)
  std::vector<Cand> cands;               // one node's, at a time
};

// GPU-seconds lost if `r` stops at `now`.
double LostWork(const RunningJob& r, Seconds now);

// `on_node[n]` lists the indices of running jobs with a slice on node n. `eligible` says which
// running jobs may be preempted for this job; `stopping[i]` marks jobs already leaving.
// `may_leave[n]`, when given, bounds from above the GPUs on node n that `eligible` could free
// (say, those of jobs not protected by their contract): nodes that cannot reach the job's need
// even so are passed over without asking `eligible` about their jobs. `visit`, when given, lists
// the only nodes that could take a `shape.per_node` slice (the caller knows every other one
// cannot), so the plan need not look at the rest; an uneven gang's smaller last slice is still
// sought on every node. `soon[n]`, when given, are spare GPUs of leaving jobs on node n: a plan
// waits for them rather than stop funded work (no work is lost), after unfunded victims, which
// go first as ever; `may_leave`, when given with it, must count them. `slice_gpus[i]`, when
// given, is UniformSliceGpus(running[i]), worked out once by a caller that plans many times;
// else the plan works it out for the jobs it asks about. `scratch`, when given, is the memory the
// plan works in. `count_free` false: the free GPUs count for nothing, every slice's GPUs come
// from victims (a job the debug headroom keeps from the free GPUs).
std::optional<PreemptionPlan> PlanPreemption(
    const Shape& shape, Gpus job_gpus, const ClusterState& cs, std::span<const RunningJob> running,
    const NodeJobs& on_node, std::span<const uint8_t> stopping, FunctionRef<bool(size_t)> eligible,
    Seconds now, bool may_use_reserved, std::span<const int32_t> may_leave = {},
    std::span<const int32_t> visit = {}, std::span<const Soon> soon = {},
    std::span<const int32_t> slice_gpus = {}, PreemptionScratch* scratch = nullptr,
    bool count_free = true);

}  // namespace hg
