// `hourglass agent`: the node agent daemon (agent/agent.h).
#pragma once

#include <CLI/CLI.hpp>

namespace hg::cmd {

// Registers the subcommand on `app`; its callback runs the daemon and sets `exit_code`
// (2 for bad options, 1 when it cannot start, 0 after SIGTERM/SIGINT).
void AddAgentCommand(CLI::App& app, int& exit_code);

}  // namespace hg::cmd
