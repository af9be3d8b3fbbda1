// The one binary: `hourglass <subcommand>`.
#include <CLI/CLI.hpp>

#include "cmd/agent_command.h"
#include "cmd/cli_commands.h"
#include "cmd/placement_command.h"
#include "cmd/server_command.h"
#include "cmd/sim_command.h"
#include "cmd/up_command.h"

int main(int argc, char** argv) {
  CLI::App app{"hourglass: GPU-time budgets for shared GPU clusters"};
  app.require_subcommand(1);
  int exit_code = 0;
  hg::cmd::AddSimCommand(app, exit_code);
  hg::cmd::AddAgentCommand(app, exit_code);
  hg::cmd::AddServerCommand(app, exit_code);
  hg::cmd::AddPlacementCommand(app, exit_code);
  hg::cmd::AddCliCommands(app, exit_code);
  hg::cmd::AddUpCommand(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}
