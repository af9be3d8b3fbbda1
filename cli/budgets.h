// Budget commands: budgets (the tree), budget set, budget add, budget delete, budget history,
// usage.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/client.h"

namespace hg::cli {

Request BuildBudgets();
// The tree, indented by depth: share, limit, entitled GPUs, running GPUs, pending jobs, 7-day
// usage, owed vs delivered GPU-hours (and delivered as a percentage of owed), leads.
std::string RenderBudgets(const Json& reply);

struct BudgetSetArgs {
  std::string name;
  std::optional<std::string> share;  // as typed, checked here
  std::optional<std::string> limit;  // N or "none"
  std::vector<std::string> lead;     // "+u", "-u" (or "u" = "+u")
  std::vector<std::string> member;
};
// PATCH /v1/budgets/{name} with only the fields asked for. Lead and member edits apply to the
// budget's current lists, `current` being its entry from GET /v1/budgets (null: unknown budget).
CliResult<Request> BuildBudgetSet(const BudgetSetArgs& a, const Json& current);

struct BudgetAddArgs {
  std::string name;
  std::optional<std::string> parent;  // absent: top level (admins only)
  std::string share = "1";
  std::optional<std::string> limit;
  std::vector<std::string> leads;
  std::vector<std::string> members;
};
CliResult<Request> BuildBudgetAdd(const BudgetAddArgs& a);

// DELETE /v1/budgets/{name}: the server refuses a budget with children or with jobs in the system.
Request BuildBudgetDelete(const std::string& name);

// GET /v1/audit: every change to one budget (or to all), as the server keeps them, oldest first.
Request BuildAudit(const std::optional<std::string>& budget);
// One line a change: when (UTC), who, which budget, the field, and its old and new value.
std::string RenderAudit(const Json& reply);

Request BuildUsage(const std::optional<std::string>& budget);
std::string RenderUsage(const Json& reply);

CliResult<void> RunBudgets(Client& c, bool json, std::ostream& out);
CliResult<void> RunBudgetSet(Client& c, const BudgetSetArgs& a, bool json, std::ostream& out);
CliResult<void> RunBudgetAdd(Client& c, const BudgetAddArgs& a, bool json, std::ostream& out);
CliResult<void> RunBudgetDelete(Client& c, const std::string& name, bool json, std::ostream& out);
CliResult<void> RunAudit(Client& c, const std::optional<std::string>& budget, bool json,
                         std::ostream& out);
CliResult<void> RunUsage(Client& c, const std::optional<std::string>& budget, bool json,
                         std::ostream& out);

}  // namespace hg::cli
