// The policy's tuning knobs as command-line flags, shared by `hourglass sim` and
// `hourglass sim compare`, so both start from DeployedConfig() (the server's configuration too) and
// check the values the same way.
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
  int64_t live_weight = DeployedConfig().live_weight.value();
  int32_t large_job_gpus = DeployedConfig().large_job_gpus;
};

void AddPolicyFlags(CLI::App* app, PolicyFlags* flags);

// DeployedConfig() with the flags applied; an error names the flag and the allowed range.
Result<PolicyConfig> PolicyConfigFrom(const PolicyFlags& flags);

// The names of `--policies` ("a,b,,c" -> {"a", "b", "c"}).
std::vector<std::string> SplitList(const std::string& s);

}  // namespace hg::cmd
