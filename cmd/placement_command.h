// `hourglass placement`: the openb placement study (hourglass's best-fit vs first-fit as the
// cluster fills).
#pragma once

#include <CLI/CLI.hpp>

namespace hg::cmd {

// Registers the subcommand on `app`; its callback sets `exit_code`.
void AddPlacementCommand(CLI::App& app, int& exit_code);

}  // namespace hg::cmd
