#include "core/usage_ledger.h"

#include <algorithm>
#include <cassert>

namespace hg {

UsageLedger::UsageLedger(const BudgetTree& tree, Seconds window, Seconds bucket)
    : window_(window), bucket_(bucket) {
  assert(bucket.value() > 0 && window.value() >= bucket.value());
  assert(window.value() % bucket.value() == 0);
  nslots_ = static_cast<size_t>(window.value() / bucket.value()) + 1;
  parent_.reserve(tree.size());
  for (size_t i = 0; i < tree.size(); ++i)
    parent_.push_back(tree.parent(BudgetId(static_cast<int32_t>(i))));
  slots_.assign(tree.size() * nslots_, 0.0);
  total_.assign(tree.size(), 0.0);
}

void UsageLedger::AdvanceTo(Seconds now) {
  if (now <= now_) return;
  const int64_t target = now.value() / bucket_.value();
  const int64_t n = static_cast<int64_t>(nslots_);
  // Buckets that fall out of the window are cleared; after a long gap everything is.
  if (target - head_ >= n) {
    std::fill(slots_.begin(), slots_.end(), 0.0);
    std::fill(total_.begin(), total_.end(), 0.0);
  } else {
    for (int64_t b = head_ + 1; b <= target; ++b) {
      for (size_t node = 0; node < total_.size(); ++node) {
        double& s = Slot(node, b);  // the slot about to be reused held bucket b - n
        total_[node] -= s;
        s = 0.0;
      }
    }
  }
  head_ = target;
  now_ = now;
}

void UsageLedger::Charge(BudgetId leaf, Seconds from, Seconds to, double rate) {
  if (to <= from || rate == 0.0) return;
  AdvanceTo(to);
  const int64_t n = static_cast<int64_t>(nslots_);
  const int64_t oldest = head_ - n + 1;
  const int64_t b0 = std::max(from.value() / bucket_.value(), oldest);
  const int64_t b1 = (to.value() - 1) / bucket_.value();
  for (int64_t b = b0; b <= b1; ++b) {
    const int64_t lo = std::max(from.value(), b * bucket_.value());
    const int64_t hi = std::min(to.value(), (b + 1) * bucket_.value());
    const double amount = rate * static_cast<double>(hi - lo);
    for (BudgetId cur = leaf; cur.value() >= 0; cur = parent_[static_cast<size_t>(cur.value())]) {
      const auto node = static_cast<size_t>(cur.value());
      Slot(node, b) += amount;
      total_[node] += amount;
    }
  }
}

double UsageLedger::Usage(BudgetId b) const {
  const auto node = static_cast<size_t>(b.value());
  const int64_t n = static_cast<int64_t>(nslots_);
  const int64_t oldest = head_ - n + 1;
  const int64_t window_start = now_.value() - window_.value();
  const int64_t outside = window_start - oldest * bucket_.value();  // in [0, bucket)
  double u = total_[node];
  if (oldest >= 0 && outside > 0)
    u -= SlotValue(node, oldest) * static_cast<double>(outside) /
         static_cast<double>(bucket_.value());
  return std::max(0.0, u);
}

}  // namespace hg
