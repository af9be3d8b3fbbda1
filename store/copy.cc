#include "store/copy.h"

#include <algorithm>
#include <limits>

#include "store/columns.h"

namespace hg::store {
namespace {

template <class T, class Key>
void SortBy(std::vector<T>& v, Key key) {
  std::sort(v.begin(), v.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
}

// The first index at which two lists differ, described with `name` (say "job 17"); "" if equal.
template <class T, class Name>
std::string Differ(const char* what, const std::vector<T>& a, const std::vector<T>& b, Name name) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (!(a[i] == b[i])) return std::string(what) + ": " + name(a[i]) + " differs";
  if (a.size() != b.size()) {
    return std::string(what) + ": " + std::to_string(a.size()) + " against " +
           std::to_string(b.size());
  }
  return "";
}

std::string Count(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

bool StoreContents::Empty() const {
  return principals.empty() && tokens.empty() && budgets.empty() && audit.empty() && jobs.empty() &&
         events.empty() && runs.empty() && stops.empty() && nodes.empty();
}

std::string StoreContents::Summary() const {
  return Count(principals.size(), "principal", "principals") + ", " +
         Count(tokens.size(), "token", "tokens") + ", " +
         Count(budgets.size(), "budget", "budgets") + ", " +
         Count(audit.size(), "audit entry", "audit entries") + ", " +
         Count(jobs.size(), "job", "jobs") + ", " +
         Count(events.size(), "job event", "job events") + ", " +
         Count(runs.size(), "run", "runs") + ", " +
         Count(stops.size(), "recent stop", "recent stops") + ", " +
         Count(nodes.size(), "node", "nodes");
}

Result<StoreContents> ReadContents(Store& store) {
  StoreContents c;
  auto principals = store.Principals();
  HG_TRY(principals);
  c.principals = std::move(*principals);
  auto tokens = store.Tokens();
  HG_TRY(tokens);
  c.tokens = std::move(*tokens);
  auto budgets = store.Budgets();
  HG_TRY(budgets);
  c.budgets = std::move(*budgets);
  auto audit = store.Audit("");
  HG_TRY(audit);
  c.audit = std::move(*audit);
  auto jobs = store.Jobs();
  HG_TRY(jobs);
  c.jobs = std::move(*jobs);
  auto events = store.AllJobEvents();
  HG_TRY(events);
  c.events = std::move(*events);
  constexpr int64_t kAll = std::numeric_limits<int64_t>::min();
  auto runs = store.RunsSince(kAll);
  HG_TRY(runs);
  c.runs = std::move(*runs);
  auto stops = store.RecentStopsSince(kAll);
  HG_TRY(stops);
  c.stops = std::move(*stops);
  auto nodes = store.Nodes();
  HG_TRY(nodes);
  c.nodes = std::move(*nodes);
  // The stores order names by their own collations (PostgreSQL's may not be bytewise).
  SortBy(c.principals, [](const PrincipalRecord& p) { return p.name; });
  SortBy(c.tokens, [](const TokenRecord& t) { return t.hash; });
  SortBy(c.budgets, [](const BudgetRecord& b) { return b.name; });
  SortBy(c.nodes, [](const NodeRecord& n) { return n.name; });
  return c;
}

std::string FirstDifference(const StoreContents& a, const StoreContents& b) {
  const std::string found[] = {
      Differ("principals", a.principals, b.principals,
             [](const PrincipalRecord& p) { return "principal " + p.name; }),
      Differ("tokens", a.tokens, b.tokens,
             [](const TokenRecord& t) { return "the token of " + t.principal; }),
      Differ("budgets", a.budgets, b.budgets,
             [](const BudgetRecord& x) { return "budget " + x.name; }),
      Differ("audit", a.audit, b.audit,
             [](const AuditRecord& x) { return "the entry for " + x.budget + "." + x.field; }),
      Differ("jobs", a.jobs, b.jobs,
             [](const JobRecord& j) { return "job " + std::to_string(j.id); }),
      Differ("job events", a.events, b.events,
             [](const JobEventRecord& e) { return "an event of job " + std::to_string(e.job); }),
      Differ("runs", a.runs, b.runs,
             [](const RunRecord& r) {
               return "run " + std::to_string(r.attempt) + " of job " + std::to_string(r.job);
             }),
      Differ("recent stops", a.stops, b.stops,
             [](const RecentStopRecord& r) { return "the stop of " + r.budget; }),
      Differ("nodes", a.nodes, b.nodes, [](const NodeRecord& n) { return "node " + n.name; }),
  };
  for (const std::string& f : found)
    if (!f.empty()) return f;
  return "";
}

Result<StoreContents> CopyStore(Store& from, Store& to) {
  auto src = ReadContents(from);
  HG_TRY(src);
  const StoreContents& c = *src;
  // One transaction: a copy that fails part way, or reads back different, leaves `to` as it was.
  auto copied = to.Transaction([&](Store& tx) -> Result<void> {
    auto before = ReadContents(tx);
    HG_TRY(before);
    if (!before->Empty()) {
      return Fail("target",
                  "already holds " + before->Summary() + "; copy only into a new, empty store");
    }
    // In the order the tables refer to each other: tokens name principals, events and runs jobs.
    for (const auto& p : c.principals) HG_TRY(tx.PutPrincipal(p));
    for (const auto& t : c.tokens) HG_TRY(tx.AddToken(t));
    for (const auto& b : c.budgets) HG_TRY(tx.PutBudget(b, {}));
    for (const auto& a : c.audit) HG_TRY(tx.AppendAudit(a));
    HG_TRY(tx.RestoreJobs(c.jobs));
    HG_TRY(tx.AddJobEvents(c.events));
    HG_TRY(tx.PutRuns(c.runs));
    for (const auto& s : c.stops) HG_TRY(tx.AddRecentStop(s));
    for (const auto& n : c.nodes) HG_TRY(tx.PutNode(n));
    auto after = ReadContents(tx);
    HG_TRY(after);
    if (const std::string diff = FirstDifference(c, *after); !diff.empty())
      return Fail("copy", "the copy reads back differently (" + diff + "); nothing was written");
    return {};
  });
  HG_TRY(copied);
  return src;
}

}  // namespace hg::store
