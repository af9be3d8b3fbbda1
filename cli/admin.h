// Operator and identity commands: nodes, drain, undrain, whoami, principal add.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "cli/client.h"

namespace hg::cli {

Request BuildNodes();
std::string RenderNodes(const Json& reply);

struct DrainArgs {
  std::string node;
  std::optional<std::string> deadline;  // a duration from now: "2h"
  std::string reason;
};
// `now_s` (seconds since the epoch) turns the relative --deadline into the API's deadline_at.
CliResult<Request> BuildDrain(const DrainArgs& a, int64_t now_s);
Request BuildUndrain(const std::string& node);

Request BuildWhoami();
std::string RenderWhoami(const Json& reply);

struct PrincipalAddArgs {
  std::string name;
  std::string role = "user";
};
CliResult<Request> BuildPrincipalAdd(const PrincipalAddArgs& a);
// Shows the token once, with a warning that it cannot be shown again.
std::string RenderPrincipalAdded(const Json& reply);

// Tokens: a new one for a principal (admin; shown once), a principal's list (yours when `name`
// is empty), and a revocation by the id the list shows.
Request BuildTokenNew(const std::string& name);
Request BuildTokenList(const std::string& name);
Request BuildTokenRevoke(const std::string& name, const std::string& id);
std::string RenderTokenList(const Json& reply);

CliResult<void> RunNodes(Client& c, bool json, std::ostream& out);
CliResult<void> RunDrain(Client& c, const DrainArgs& a, int64_t now_s, bool json,
                         std::ostream& out);
CliResult<void> RunUndrain(Client& c, const std::string& node, bool json, std::ostream& out);
CliResult<void> RunWhoami(Client& c, bool json, std::ostream& out);
CliResult<void> RunPrincipalAdd(Client& c, const PrincipalAddArgs& a, bool json, std::ostream& out);
CliResult<void> RunTokenNew(Client& c, const std::string& name, bool json, std::ostream& out);
CliResult<void> RunTokenList(Client& c, const std::string& name, bool json, std::ostream& out);
CliResult<void> RunTokenRevoke(Client& c, const std::string& name, const std::string& id, bool json,
                               std::ostream& out);

}  // namespace hg::cli
