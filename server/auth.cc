#include "server/auth.h"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>

namespace hg::server {
namespace {

constexpr std::string_view kTokenPrefix = "hg_";
constexpr size_t kTokenBytes = 32;

// sodium_init is thread-safe and idempotent, but a function-local static makes it run once.
void EnsureSodium() {
  static const bool ok = sodium_init() >= 0;
  assert(ok && "libsodium failed to initialise");
  (void)ok;
}

std::string Hex(const unsigned char* data, size_t n) {
  std::string out(n * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), data, n);
  out.pop_back();  // sodium_bin2hex writes a terminating NUL
  return out;
}

const store::BudgetRecord* FindBudget(const std::vector<store::BudgetRecord>& budgets,
                                      std::string_view name) {
  for (const auto& b : budgets) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

bool Contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Walks from `budget` (included when `include_self`) up to the top, true if `principal` leads
// any budget on the way. The walk is bounded by the number of budgets so a corrupt parent
// cycle in the store cannot loop forever.
bool LeadsOnPath(const std::vector<store::BudgetRecord>& budgets, std::string_view principal,
                 std::string_view budget, bool include_self) {
  if (principal.empty()) return false;
  const store::BudgetRecord* b = FindBudget(budgets, budget);
  if (b == nullptr) return false;
  if (!include_self) b = b->parent.empty() ? nullptr : FindBudget(budgets, b->parent);
  for (size_t steps = 0; b != nullptr && steps <= budgets.size(); ++steps) {
    if (Contains(b->leads, principal)) return true;
    b = b->parent.empty() ? nullptr : FindBudget(budgets, b->parent);
  }
  return false;
}

bool IsUser(const store::PrincipalRecord& who) { return who.role == kRoleUser; }

}  // namespace

bool IsKnownRole(std::string_view role) {
  return role == kRoleAdmin || role == kRoleUser || role == kRoleAgent;
}

std::string NewToken() {
  EnsureSodium();
  std::array<unsigned char, kTokenBytes> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  std::string token(kTokenPrefix);
  token += Hex(bytes.data(), bytes.size());
  sodium_memzero(bytes.data(), bytes.size());
  return token;
}

std::string HashToken(std::string_view token) {
  EnsureSodium();
  std::array<unsigned char, crypto_generichash_BYTES> digest{};
  crypto_generichash(digest.data(), digest.size(),
                     reinterpret_cast<const unsigned char*>(token.data()), token.size(), nullptr,
                     0);
  return Hex(digest.data(), digest.size());
}

bool IsWellFormedToken(std::string_view token) {
  if (token.size() != kTokenPrefix.size() + 2 * kTokenBytes) return false;
  if (token.substr(0, kTokenPrefix.size()) != kTokenPrefix) return false;
  return std::all_of(token.begin() + static_cast<std::ptrdiff_t>(kTokenPrefix.size()), token.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() || authorization[kScheme.size()] != ' ') {
    return std::nullopt;
  }
  for (size_t i = 0; i < kScheme.size(); ++i) {
    const char c = authorization[i];
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (lower != kScheme[i]) return std::nullopt;
  }
  std::string_view token = authorization.substr(kScheme.size() + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  return token;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // The length is not secret (hashes and tokens have fixed lengths); the contents are.
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  EnsureSodium();
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool LeadsSubtree(const std::vector<store::BudgetRecord>& budgets, std::string_view principal,
                  std::string_view budget) {
  return LeadsOnPath(budgets, principal, budget, /*include_self=*/true);
}

bool LeadsStrictAncestor(const std::vector<store::BudgetRecord>& budgets,
                         std::string_view principal, std::string_view budget) {
  return LeadsOnPath(budgets, principal, budget, /*include_self=*/false);
}

bool CanChangeBudget(const std::vector<store::BudgetRecord>& budgets,
                     const store::PrincipalRecord& who, std::string_view budget) {
  if (IsAdmin(who)) return true;
  return IsUser(who) && LeadsSubtree(budgets, who.name, budget);
}

bool CanCreateUnder(const std::vector<store::BudgetRecord>& budgets,
                    const store::PrincipalRecord& who, std::string_view parent) {
  if (IsAdmin(who)) return true;
  if (parent.empty()) return false;  // top level: admins only
  return IsUser(who) && LeadsSubtree(budgets, who.name, parent);
}

bool CanDeleteBudget(const std::vector<store::BudgetRecord>& budgets,
                     const store::PrincipalRecord& who, std::string_view budget) {
  if (IsAdmin(who)) return true;
  return IsUser(who) && LeadsStrictAncestor(budgets, who.name, budget);
}

bool CanCharge(const std::vector<store::BudgetRecord>& budgets, const store::PrincipalRecord& who,
               std::string_view budget) {
  if (IsAdmin(who)) return true;
  if (!IsUser(who)) return false;
  if (budget.empty()) return true;  // unfunded work is open to every user
  const store::BudgetRecord* b = FindBudget(budgets, budget);
  if (b == nullptr) return false;
  return Contains(b->members, who.name) || LeadsSubtree(budgets, who.name, budget);
}

bool CanManageJob(const store::PrincipalRecord& who, std::string_view owner) {
  if (IsAdmin(who)) return true;
  return IsUser(who) && !who.name.empty() && who.name == owner;
}

bool IsAdmin(const store::PrincipalRecord& who) { return who.role == kRoleAdmin; }

bool CanActAsAgent(const store::PrincipalRecord& who) {
  return who.role == kRoleAgent || who.role == kRoleAdmin;
}

std::vector<std::string> MemberOf(const std::vector<store::BudgetRecord>& budgets,
                                  std::string_view principal) {
  std::vector<std::string> out;
  for (const auto& b : budgets) {
    if (Contains(b.members, principal)) out.push_back(b.name);
  }
  return out;
}

std::vector<std::string> LeadOf(const std::vector<store::BudgetRecord>& budgets,
                                std::string_view principal) {
  std::vector<std::string> out;
  for (const auto& b : budgets) {
    if (Contains(b.leads, principal)) out.push_back(b.name);
  }
  return out;
}

}  // namespace hg::server
