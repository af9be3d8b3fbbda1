// A simulation input: cluster, budget tree, workload and timed events. Read from files
// (sim/scenario_io.h, formats in docs/formats.md) or generated (sim/lab_month.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/budget_tree.h"
#include "core/model.h"
#include "core/types.h"

namespace hg::sim {

struct NodeSpec {
  std::string name;
  int32_t gpus = 8;
  std::string block;
  int line = 0;
};

// A job of the workload: what the user submits plus what only the simulator knows.
struct SimJob {
  JobSpec spec;                    // spec.budget is resolved from `budget` when the run starts
  std::string budget;              // budget name or path; empty = unfunded
  Seconds duration{0};             // work the job needs (running time without interruptions)
  Seconds checkpoint_interval{0};  // 0: never checkpoints
  // A session's user stops being active this long into each run (it reports activity until
  // then); none: active until the job ends. Matters only for a job with a lease.
  std::optional<Seconds> idle_after;
  int line = 0;
};

enum class EventKind {
  kHealthFail,   // the node's health check fails: it drains itself under the contract
  kNodeLost,     // the node stops reporting: its jobs are requeued or failed at once
  kRepair,       // the node is repaired (or found again) and returns to service
  kDrain,        // operator drain; optional deadline after which protected jobs are forced off
  kUndrain,      // operator undrain
  kBudgetShare,  // a lead changes a budget's share
  kBudgetLimit,  // a lead changes a budget's limit (value < 0: no limit)
};
const char* ToString(EventKind k);

struct TimedEvent {
  Seconds at{0};
  EventKind kind = EventKind::kHealthFail;
  std::string target;               // node name or budget name
  double value = 0;                 // share or limit
  std::optional<Seconds> deadline;  // kDrain: seconds after `at`
  std::string reason;
  int line = 0;
};

struct Scenario {
  std::string name;
  Seconds end{0};  // the evaluation ends here (jobs still running are cut off)
  std::vector<NodeSpec> nodes;
  std::vector<BudgetSpec> budgets;
  std::vector<SimJob> jobs;        // sorted by (submit, id)
  std::vector<TimedEvent> events;  // sorted by (at, file order)
};

}  // namespace hg::sim
