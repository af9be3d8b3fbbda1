// The user commands of `hourglass` (submit, jobs, show, cancel, logs, budgets, budget, usage,
// nodes, drain, undrain, whoami, principal): CLI11 wiring only; the work is in cli/.
#pragma once

#include <CLI/CLI.hpp>

namespace hg::cmd {

// Registers the subcommands on `app`; their callbacks set `exit_code` (0 ok, 1 refused by the
// server, 2 usage or configuration error, 3 server unreachable).
void AddCliCommands(CLI::App& app, int& exit_code);

}  // namespace hg::cmd
