// Copying a site's whole state from one store to another: how a site that began on the embedded
// SQLite store moves to a PostgreSQL server (and back), with every job, its history, the budgets
// and their audit log, the tokens (users keep theirs) and the nodes. `hourglass store copy` runs
// it with no server on either side (both are opened as a server opens them, so one cannot start
// meanwhile).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"

namespace hg::store {

// Everything a store holds, in an order that does not depend on the store: what has a name by
// name (bytewise), what has none in the order it was recorded.
struct StoreContents {
  std::vector<PrincipalRecord> principals;
  std::vector<TokenRecord> tokens;
  std::vector<BudgetRecord> budgets;
  std::vector<AuditRecord> audit;
  std::vector<JobRecord> jobs;          // by id
  std::vector<JobEventRecord> events;   // by job, then as recorded
  std::vector<RunRecord> runs;          // by job, then attempt
  std::vector<RecentStopRecord> stops;  // by time, then as recorded
  std::vector<NodeRecord> nodes;

  bool operator==(const StoreContents&) const = default;
  bool Empty() const;
  // "3 principals, 5 tokens, ..." for messages.
  std::string Summary() const;
};

Result<StoreContents> ReadContents(Store& store);

// The first difference between two contents ("jobs: id 17 differs in state"), or "" when equal.
std::string FirstDifference(const StoreContents& a, const StoreContents& b);

// Copies `from` into `to` in one transaction of `to`, jobs under their own ids, then reads `to`
// back and compares it with what was read from `from`. Refuses, changing nothing, when `to`
// already holds anything (a copy merges nothing). Returns what was copied.
Result<StoreContents> CopyStore(Store& from, Store& to);

}  // namespace hg::store
