// The stops between budgets the take-back cool-down counts from (Snapshot::recent_stops), kept by
// budget name beside the leaf ids the policy reads. Ids move when the budget tree changes (a
// budget created, deleted or given children, or read back in the store's order after a restart);
// names do not, so the ids are resolved again from the names whenever the tree is rebuilt, as
// UsageHistory does for the ledgers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/budget_tree.h"
#include "core/policy.h"
#include "store/store.h"

namespace hg::server {

class RecentStops {
 public:
  // Adds a stop, normally the latest so far; one whose budgets `tree` does not know is not kept.
  void Add(const store::RecentStopRecord& r, const BudgetTree& tree);
  // Resolves every stop's budgets again in `tree`; stops of a budget no longer in it are dropped
  // (only a budget with no unfinished job can be deleted, so none of its work can be stopped).
  void Remap(const BudgetTree& tree);
  // Drops the stops before `t`; true when any was dropped.
  bool DropBefore(int64_t t);
  // For each budget (by name) whose work was stopped for another's, the budgets whose work it
  // may not stop for fair share, each with when that cool-down lapses: the latest stop's time
  // plus `cooldown`, for those that lapse after `now`.
  std::map<std::string, std::map<std::string, int64_t>> CooledDown(int64_t now,
                                                                   int64_t cooldown) const;
  // Oldest first, as Snapshot::recent_stops wants them.
  std::span<const RecentStop> ids() const { return ids_; }
  size_t size() const { return ids_.size(); }

 private:
  // The leaf a job submitted to budget `name` is charged to (as the server resolves jobs).
  static std::optional<BudgetId> Leaf(const BudgetTree& tree, const std::string& name);

  std::vector<store::RecentStopRecord> names_;  // names_[i] is ids_[i]
  std::vector<RecentStop> ids_;
};

}  // namespace hg::server
