#include "server/usage_history.h"

#include <algorithm>

namespace hg::server {
namespace {
constexpr int64_t kBucket = 3600;
}

void UsageHistory::Add(const std::string& key, int64_t from, int64_t to, double rate) {
  if (to <= from || rate == 0.0) return;
  auto& m = buckets_[key];
  for (int64_t b = from / kBucket; b * kBucket < to; ++b) {
    const int64_t lo = std::max(from, b * kBucket), hi = std::min(to, (b + 1) * kBucket);
    if (hi > lo) m[b] += rate * static_cast<double>(hi - lo);
  }
}

void UsageHistory::Prune(int64_t t) {
  const int64_t first = t / kBucket;
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    auto& m = it->second;
    m.erase(m.begin(), m.lower_bound(first));
    it = m.empty() ? buckets_.erase(it) : std::next(it);
  }
}

void UsageHistory::Replay(const BudgetTree& tree, UsageLedger& ledger, int64_t now) const {
  for (const auto& [key, m] : buckets_) {
    const auto b = tree.Find(key);
    if (!b) continue;
    const BudgetId leaf = tree.ChargeTarget(*b);
    for (const auto& [bucket, amount] : m) {
      const int64_t from = bucket * kBucket;
      // The current bucket is charged only up to `now`: the ledger must not move past it.
      const int64_t to = std::min(now, from + kBucket);
      if (to <= from) continue;
      ledger.Charge(leaf, Seconds(from), Seconds(to), amount / static_cast<double>(to - from));
    }
  }
  ledger.AdvanceTo(Seconds(now));
}

double UsageHistory::Sum(const std::string& key, int64_t from, int64_t to) const {
  const auto it = buckets_.find(key);
  if (it == buckets_.end()) return 0.0;
  double s = 0.0;
  for (auto b = it->second.lower_bound(from / kBucket);
       b != it->second.end() && b->first * kBucket < to; ++b)
    s += b->second;
  return s;
}

}  // namespace hg::server
