// GPU-seconds per budget name in hourly buckets: the part of the usage ledgers that survives a
// change of the budget tree. core's UsageLedger is indexed by BudgetId, and ids move when a
// budget is added or deleted, so the server keeps this name-keyed copy and replays it into fresh
// ledgers whenever the tree is rebuilt.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/budget_tree.h"
#include "core/usage_ledger.h"

namespace hg::server {

class UsageHistory {
 public:
  // Adds `rate` GPUs held during [from, to) (seconds) to the budget named `key`.
  void Add(const std::string& key, int64_t from, int64_t to, double rate);
  // Forgets buckets that end before `t`.
  void Prune(int64_t t);
  // Charges every bucket up to `now` into `ledger` (built on `tree`), then advances it to `now`.
  // Budgets no longer in the tree are skipped.
  void Replay(const BudgetTree& tree, UsageLedger& ledger, int64_t now) const;
  // GPU-seconds charged to budget `key` in [from, to), whole buckets by their start time.
  double Sum(const std::string& key, int64_t from, int64_t to) const;

 private:
  std::map<std::string, std::map<int64_t, double>> buckets_;  // key -> hour -> GPU-seconds
};

}  // namespace hg::server
