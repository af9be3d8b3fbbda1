// `hourglass store copy`: moves a site's state between stores (store/copy.h), say from the
// embedded SQLite file to PostgreSQL as the site grows.
#pragma once

#include <CLI/CLI.hpp>

namespace hg::cmd {

// Registers the subcommand on `app`; its callback sets `exit_code`.
void AddStoreCommand(CLI::App& app, int& exit_code);

}  // namespace hg::cmd
