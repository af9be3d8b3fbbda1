// The request bodies of docs/api.md, read without State: presence, type, range and length of
// every field, and no field that nobody reads (so a typo is refused, never silently ignored).
// What needs State (does the budget exist, may this principal charge it, does the job fit a
// node, is the role known) is checked by State afterwards. Kept apart from the HTTP handlers
// so that it builds with nlohmann-json and tl-expected alone: fuzz/request_fuzz.cc fuzzes it.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tl/expected.hpp>
#include <vector>

#include "store/store.h"

namespace hg::server {

// A refusal: HTTP status plus the field and reason of docs/api.md "Errors".
struct Refusal {
  int status = 400;
  std::string field;
  std::string reason;
};
template <class T>
using Reply = tl::expected<T, Refusal>;
inline tl::unexpected<Refusal> Refuse(int status, std::string field, std::string reason) {
  return tl::unexpected<Refusal>(Refusal{status, std::move(field), std::move(reason)});
}

// A budget change (POST or PATCH): absent fields are left as they are.
struct BudgetChange {
  std::optional<std::string> parent;  // only on create
  std::optional<double> share;
  bool set_limit = false;
  std::optional<int32_t> limit;  // with set_limit: nullopt clears
  std::optional<std::vector<std::string>> leads;
  std::optional<std::vector<std::string>> members;
};

// What an agent reports about one attempt that ended.
struct ExitReport {
  int64_t job = 0;
  int32_t attempt = 0;
  std::optional<int32_t> exit_code;
  std::optional<int32_t> signal;
  std::string how;  // exited|killed_after_grace|stopped|failed_to_start
};

struct AttemptRef {
  int64_t job = 0;
  int32_t attempt = 0;
  auto operator<=>(const AttemptRef&) const = default;
};

struct Registration {
  std::string node;
  int32_t gpus = 0;
  std::map<std::string, std::string> labels;
  std::string logs_url;
  std::vector<AttemptRef> running;
  // The bearer token the agent used, kept in memory only: its log service asks for it.
  std::string token;
};

struct Heartbeat {
  std::string node;
  bool health_ok = true;
  std::string health_detail;
  std::vector<AttemptRef> running;
  // The running entries' `cpu_s`, where given: the attempt's cumulative CPU time on this node,
  // in seconds (finite, >= 0). State reads a session's activity from its growth.
  std::map<AttemptRef, double> cpu_s;
  std::vector<ExitReport> exited;
  std::string token;  // as in Registration
};

// POST /v1/principals.
struct NewPrincipal {
  std::string name;
  std::string role;  // State knows the roles
};

// POST /v1/budgets.
struct NewBudget {
  std::string name;
  BudgetChange change;
};

// POST /v1/nodes/{node}/drain.
struct DrainRequest {
  std::string reason;
  std::optional<int64_t> deadline_at;
};

// Each parser takes the parsed body (an object; anything else is refused with field "body")
// and returns what the handler hands to State, or the first mistake as a 400 refusal.

// POST /v1/jobs: the request's fields of the job; id, user, state and times are State's.
Reply<store::JobRecord> ParseJobRequest(const nlohmann::json& body);
// The inverse: the request body that ParseJobRequest reads back to the same fields. The job views
// of the API start from it.
nlohmann::json JobRequestBody(const store::JobRecord& j);
Reply<NewBudget> ParseBudgetCreate(const nlohmann::json& body);
// PATCH /v1/budgets/{name}.
Reply<BudgetChange> ParseBudgetPatch(const nlohmann::json& body);
Reply<NewPrincipal> ParsePrincipalRequest(const nlohmann::json& body);
Reply<DrainRequest> ParseDrainRequest(const nlohmann::json& body);
// POST /v1/agents/register and /v1/agents/heartbeat; the token comes from the header, not here.
Reply<Registration> ParseRegistration(const nlohmann::json& body);
Reply<Heartbeat> ParseHeartbeat(const nlohmann::json& body);
// The routes that take no fields (cancel, activity, undrain, new token): only {} or no body.
Reply<void> ParseEmptyBody(const nlohmann::json& body);

}  // namespace hg::server
