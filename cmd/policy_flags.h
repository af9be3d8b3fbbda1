// The policy's tuning knobs as command-line flags, shared by `hourglass sim`, `hourglass sim
// compare` and `hourglass server`, so all start from DeployedConfig() and check the values the
// same way: a setting measured in the simulator is rolled out with the same flag.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/policy.h"

namespace hg::cmd {

struct PolicyFlags {
  double quick_headroom = DeployedConfig().quick_headroom;
  double quick_headroom_max = DeployedConfig().quick_headroom_max;
  int32_t quick_headroom_quiet = DeployedConfig().quick_headroom_quiet;
  int64_t live_weight = DeployedConfig().live_weight.value();
  int64_t window = DeployedConfig().window.value();
  int32_t large_job_gpus = DeployedConfig().large_job_gpus;
  int32_t reservation_preempts_gpus = DeployedConfig().reservation_preempts_gpus;
  bool whole_node_reservation_preempts = DeployedConfig().whole_node_reservation_preempts;
  double preempt_below = DeployedConfig().preempt_below;
  bool quick_first = DeployedConfig().quick_first;
  bool quick_stops_own = DeployedConfig().quick_stops_own;
  bool wait_for_spare = DeployedConfig().wait_for_spare;
  int64_t take_back_cooldown = DeployedConfig().take_back_cooldown.value();
  bool leases = DeployedConfig().leases;
  int64_t quick_protect = DeployedConfig().quick_protect.value();
  bool session_headroom = DeployedConfig().sessions_use_headroom;
};

void AddPolicyFlags(CLI::App* app, PolicyFlags* flags);

// DeployedConfig() with the flags applied; an error names the flag and the allowed range.
Result<PolicyConfig> PolicyConfigFrom(const PolicyFlags& flags);

// One line naming every knob's value, for the server's start-up log and reports.
std::string Describe(const PolicyConfig& config);

// The names of `--policies` ("a,b,,c" -> {"a", "b", "c"}).
std::vector<std::string> SplitList(const std::string& s);

}  // namespace hg::cmd
