// `hourglass server`: the control plane (server/server.h) from the command line.
#pragma once

#include <CLI/CLI.hpp>

namespace hg::cmd {

// Registers the subcommand on `app`; its callback sets `exit_code`.
void AddServerCommand(CLI::App& app, int& exit_code);

}  // namespace hg::cmd
