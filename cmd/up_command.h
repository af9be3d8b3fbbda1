// `hourglass up`: the embedded default. A server and one local agent in one command, SQLite under
// --data, an admin token printed once; `--demo` shows funded work preempting unfunded work, with
// the reasons, and exits.
#pragma once

#include <CLI/CLI.hpp>

namespace hg::cmd {

void AddUpCommand(CLI::App& app, int& exit_code);

}  // namespace hg::cmd
