// Trace adapter for the Alibaba GPU cluster trace "openb" (cluster-trace-gpu-v2023; see
// ../shared/traces/README.md): a node list of heterogeneous GPU nodes and a pod (task) list. The
// trace has no budgets, users or contract fields, so the adapter invents them by fixed, documented
// rules (docs/formats.md, "openb trace"); DescribeOpenbMapping says what it invented and what it
// skipped, and every result shown from such a run must carry that text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "sim/scenario.h"

namespace hg::sim {

inline constexpr const char* kOpenbNodeFile = "openb_node_list_gpu_node.csv";
inline constexpr const char* kOpenbDefaultPods = "openb_pod_list_default.csv";

struct OpenbOptions {
  // A pod list CSV, or the openb directory (then its openb_pod_list_default.csv).
  std::string pods;
  // The node list CSV; empty: openb_node_list_gpu_node.csv beside the pod list.
  std::string nodes;
  uint64_t seed = 1;
  // Funded tasks are dealt by a seeded hash of their name over programs x projects_per_program
  // projects of equal share.
  int programs = 2;
  int projects_per_program = 3;
};

// One GPU task of a pod list, before times and budgets (also the placement study's input).
struct OpenbTask {
  std::string name;
  int32_t gpus = 0;          // whole GPUs: num_gpu * ceil(gpu_milli / 1000), at least 1
  int32_t num_gpu = 0;       // as in the trace
  int32_t gpu_milli = 0;     // as in the trace (< 1000: a fraction of one GPU)
  bool best_effort = false;  // qos BE
  bool has_times = false;    // the list has creation/scheduled/deletion columns
  int64_t creation = 0;
  int64_t scheduled = -1;  // -1: never scheduled (empty in the trace)
  int64_t deletion = 0;
  int line = 0;
};

struct OpenbPods {
  std::vector<OpenbTask> tasks;  // GPU tasks in file order
  bool has_times = false;
  int64_t rows = 0;
  int64_t non_gpu = 0;     // num_gpu = 0: not GPU work, skipped
  int64_t fractional = 0;  // gpu_milli < 1000: rounded up to whole GPUs
};

struct OpenbNodes {
  std::vector<NodeSpec> nodes;  // GPU nodes in file order; block = GPU model
  int64_t rows = 0;
  int64_t no_gpu = 0;  // gpu = 0: skipped
};

// What loading skipped or changed, for DescribeOpenbMapping.
struct OpenbStats {
  int64_t node_rows = 0, nodes_without_gpu = 0;
  int64_t pod_rows = 0, non_gpu = 0, fractional = 0;
  int64_t never_scheduled = 0;  // empty scheduled_time (deleted while pending)
  int64_t not_positive = 0;     // deletion_time <= scheduled_time
  std::string nodes_path, pods_path;
};

Result<OpenbNodes> ParseOpenbNodes(std::string_view text, const std::string& file_label);
Result<OpenbPods> ParseOpenbPods(std::string_view text, const std::string& file_label);

// The scenario from the two texts; `stats` (optional) receives what was skipped. A pod list
// without times (multigpu50) is refused: it is only for the placement study.
Result<Scenario> ParseOpenb(std::string_view nodes_text, const std::string& nodes_label,
                            std::string_view pods_text, const std::string& pods_label,
                            const OpenbOptions& opt, OpenbStats* stats = nullptr);

// Reads the files named by `opt`. Missing files and malformed rows are errors naming file, line
// and column.
Result<Scenario> LoadOpenb(const OpenbOptions& opt, OpenbStats* stats = nullptr);

// Resolves `opt.pods` (file or directory) and `opt.nodes` to the two file paths.
struct OpenbPaths {
  std::string nodes, pods;
};
OpenbPaths ResolveOpenbPaths(const OpenbOptions& opt);

// Several lines (each ending in '\n') stating how the trace became this scenario.
std::string DescribeOpenbMapping(const Scenario& sc, const OpenbOptions& opt,
                                 const OpenbStats& stats);

}  // namespace hg::sim
