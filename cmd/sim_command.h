// `hourglass sim`: run a scenario under one or more policies and report.
#pragma once

#include <CLI/CLI.hpp>

namespace hg::cmd {

// Registers the subcommand on `app`; its callback sets `exit_code`.
void AddSimCommand(CLI::App& app, int& exit_code);

}  // namespace hg::cmd
