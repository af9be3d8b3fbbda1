// `hourglass sim compare`: one workload under several policies, side by side: a table on stdout
// (rows = policies, columns = the DESIGN.md section 2 measures, best value per column marked),
// the trace mapping, and optionally one self-contained HTML file with SVG charts and the same data
// as JSON (sim/html_report.h). Bad input: one error line naming the option, exit 2, nothing
// written.
#pragma once

#include <CLI/CLI.hpp>

namespace hg::cmd {

// Registers `compare` under the `sim` subcommand. On success or failure the command ends parsing
// with CLI::RuntimeError(exit code), so `sim`'s own callback (which would run a plain simulation)
// does not run after it; main() turns that into the process's exit code.
void AddCompareCommand(CLI::App& sim, int& exit_code);

}  // namespace hg::cmd
