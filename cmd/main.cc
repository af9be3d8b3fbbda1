// The one binary: `hourglass <subcommand>`.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cmd/agent_command.h"
#include "cmd/cli_commands.h"
#include "cmd/flag_values.h"
#include "cmd/placement_command.h"
#include "cmd/server_command.h"
#include "cmd/sim_command.h"
#include "cmd/store_command.h"
#include "cmd/up_command.h"

int main(int argc, char** argv) {
  CLI::App app{"hourglass: GPU-time budgets for shared GPU clusters"};
  app.require_subcommand(1);
  int exit_code = 0;
  hg::cmd::AddSimCommand(app, exit_code);
  hg::cmd::AddAgentCommand(app, exit_code);
  hg::cmd::AddServerCommand(app, exit_code);
  hg::cmd::AddStoreCommand(app, exit_code);
  hg::cmd::AddPlacementCommand(app, exit_code);
  hg::cmd::AddCliCommands(app, exit_code);
  hg::cmd::AddUpCommand(app, exit_code);
  hg::cmd::CheckFlagValues(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints the help; a command that failed on its own (CLI::RuntimeError) has said why.
    if (e.get_exit_code() == 0 || dynamic_cast<const CLI::RuntimeError*>(&e) != nullptr) {
      const int rc = app.exit(e);
      return rc == 0 ? 0 : 2;
    }
    std::cerr << hg::cmd::ParseErrorLine(app, "hourglass", e) << "\n";
    return 2;
  }
  return exit_code;
}
