#include "server/recent_stops.h"

#include <algorithm>

namespace hg::server {

std::optional<BudgetId> RecentStops::Leaf(const BudgetTree& tree, const std::string& name) {
  const auto b = tree.Find(name);
  if (!b) return std::nullopt;
  return tree.ChargeTarget(*b);
}

void RecentStops::Add(const store::RecentStopRecord& r, const BudgetTree& tree) {
  // In the order they come, which is time order unless the wall clock stepped back: a stop out of
  // order then only lapses with its neighbours (DropBefore, and the policy's read from the newest
  // back), which is harmless, so it is not refused.
  const auto victim = Leaf(tree, r.budget), preemptor = Leaf(tree, r.for_budget);
  if (!victim || !preemptor) return;
  names_.push_back(r);
  ids_.push_back(RecentStop{Seconds(r.at), *victim, *preemptor});
}

void RecentStops::Remap(const BudgetTree& tree) {
  std::vector<store::RecentStopRecord> names = std::move(names_);
  names_.clear();
  ids_.clear();
  for (const store::RecentStopRecord& r : names) Add(r, tree);
}

bool RecentStops::DropBefore(int64_t t) {
  const auto n =
      static_cast<size_t>(std::find_if(ids_.begin(), ids_.end(),
                                       [&](const RecentStop& r) { return r.at.value() >= t; }) -
                          ids_.begin());
  if (n == 0) return false;
  names_.erase(names_.begin(), names_.begin() + static_cast<std::ptrdiff_t>(n));
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(n));
  return true;
}

std::map<std::string, std::map<std::string, int64_t>> RecentStops::CooledDown(
    int64_t now, int64_t cooldown) const {
  std::map<std::string, std::map<std::string, int64_t>> out;
  if (cooldown <= 0) return out;
  for (const store::RecentStopRecord& r : names_) {
    if (r.budget == r.for_budget || r.at + cooldown <= now) continue;
    int64_t& until = out[r.budget][r.for_budget];
    until = std::max(until, r.at + cooldown);
  }
  return out;
}

}  // namespace hg::server
