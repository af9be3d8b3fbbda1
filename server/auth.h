// Bearer tokens and the permission rules of docs/api.md ("Authentication and roles").
//
// Pure logic over libsodium and the store's records: no I/O, no clock, so the server calls these
// on every request and the tests check every rule directly.
//
// Tokens are 32 random bytes written as "hg_" + 64 hex digits. Only HashToken(token) (BLAKE2b,
// hex) is stored: a token has 256 bits of entropy, so a fast hash is as safe as a slow one and
// keeps the per-request cost small.
//
// Budget rules (names, not paths, identify budgets; the store's BudgetRecord list is the tree):
// - admin: everything.
// - a lead of budget B (a principal named in B.leads, role "user") leads B's subtree: B and
//   everything below it, nothing above or beside it.
// - agent: no budget or job rights at all (only /v1/agents/*).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace hg::server {

inline constexpr std::string_view kRoleAdmin = "admin";
inline constexpr std::string_view kRoleUser = "user";
inline constexpr std::string_view kRoleAgent = "agent";

// True for "admin", "user", "agent".
bool IsKnownRole(std::string_view role);

// --- tokens ------------------------------------------------------------------------------------

// A fresh token, "hg_" + 64 lowercase hex digits from randombytes_buf. Thread-safe.
std::string NewToken();

// Hex BLAKE2b-256 (crypto_generichash) of the token: what the store keeps. Deterministic.
std::string HashToken(std::string_view token);

// True if `token` has the shape NewToken() produces. The server may refuse malformed tokens
// with 401 before any store lookup.
bool IsWellFormedToken(std::string_view token);

// The token of an "Authorization: Bearer <token>" header value, or nullopt when the header is
// not a bearer header (the scheme is case-insensitive, as HTTP says).
std::optional<std::string_view> BearerToken(std::string_view authorization);

// Compares without an early exit, so timing does not tell how many leading bytes matched.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// --- permissions on the budget tree -------------------------------------------------------------
//
// `budgets` is the whole tree as the store returns it. An unknown `budget` name gives false
// (the server reports "unknown budget" before asking these).

// True if `principal` is a lead of `budget` or of one of its ancestors.
bool LeadsSubtree(const std::vector<store::BudgetRecord>& budgets, std::string_view principal,
                  std::string_view budget);

// True if `principal` is a lead of a strict ancestor of `budget` (not of the budget itself).
bool LeadsStrictAncestor(const std::vector<store::BudgetRecord>& budgets,
                         std::string_view principal, std::string_view budget);

// PATCH /v1/budgets/{budget} (share, limit, leads, members): admin, or a lead of the budget or
// an ancestor. A lead of "olmo" may change "olmo" and everything under it, not olmo's parent
// nor olmo's siblings.
bool CanChangeBudget(const std::vector<store::BudgetRecord>& budgets,
                     const store::PrincipalRecord& who, std::string_view budget);

// POST /v1/budgets with this `parent`: admin (any parent, "" = top level), or a lead of the
// parent's subtree. Only admins create top-level budgets.
bool CanCreateUnder(const std::vector<store::BudgetRecord>& budgets,
                    const store::PrincipalRecord& who, std::string_view parent);

// DELETE /v1/budgets/{budget}: admin, or a lead of a strict ancestor ("delete budgets under
// them": a lead cannot delete the root of their own subtree).
bool CanDeleteBudget(const std::vector<store::BudgetRecord>& budgets,
                     const store::PrincipalRecord& who, std::string_view budget);

// POST /v1/jobs charged to `budget` ("" = unfunded): admin; a user for unfunded work; a member
// of the budget; a lead of the budget or an ancestor. Agents never.
bool CanCharge(const std::vector<store::BudgetRecord>& budgets, const store::PrincipalRecord& who,
               std::string_view budget);

// See or cancel a job owned by `owner`: admin, or the owner (a user).
bool CanManageJob(const store::PrincipalRecord& who, std::string_view owner);

// Admin-only endpoints (principals, tokens, node drain/undrain).
bool IsAdmin(const store::PrincipalRecord& who);

// /v1/agents/*: role agent (admins too, so an operator can debug with their own token).
bool CanActAsAgent(const store::PrincipalRecord& who);

// Names of the budgets `principal` is a member of / a lead of, in the store's order (for
// GET /v1/whoami).
std::vector<std::string> MemberOf(const std::vector<store::BudgetRecord>& budgets,
                                  std::string_view principal);
std::vector<std::string> LeadOf(const std::vector<store::BudgetRecord>& budgets,
                                std::string_view principal);

}  // namespace hg::server
