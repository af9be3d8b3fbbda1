#include "core/fair_share.h"

#include <cassert>

namespace hg {

FairShare::FairShare(const BudgetTree& tree, const UsageLedger& delivered, const UsageLedger& owed,
                     std::span<const double> leaf_alloc, std::vector<double> owed_now,
                     Seconds live_weight, double preempt_below)
    : owed_now_(std::move(owed_now)),
      w_(static_cast<double>(live_weight.value())),
      preempt_below_(preempt_below) {
  assert(preempt_below > 0 && preempt_below <= 1);
  const size_t n = tree.size();
  assert(leaf_alloc.size() == n && owed_now_.size() == n);
  alloc_.assign(leaf_alloc.begin(), leaf_alloc.end());
  for (size_t i = n; i-- > 1;)
    alloc_[static_cast<size_t>(tree.parent(BudgetId(static_cast<int32_t>(i))).value())] +=
        alloc_[i];
  parent_.resize(n);
  depth_.resize(n);
  num_.resize(n);
  den_.resize(n);
  owed_window_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const BudgetId b(static_cast<int32_t>(i));
    parent_[i] = tree.parent(b);
    depth_[i] = tree.depth(b);
    num_[i] = delivered.Usage(b);
    owed_window_[i] = owed.Usage(b);
    den_[i] = owed_window_[i] + owed_now_[i] * w_ + 1.0;
  }
}

void FairShare::Add(BudgetId leaf, double gpus) {
  for (BudgetId cur = leaf; cur.value() >= 0; cur = parent_[Index(cur)]) alloc_[Index(cur)] += gpus;
}

std::pair<BudgetId, BudgetId> FairShare::Divergence(BudgetId a, BudgetId b) const {
  int da = depth_[Index(a)], db = depth_[Index(b)];
  BudgetId pa = a, pb = b;
  while (da > db) {
    a = parent_[Index(a)];
    --da;
  }
  while (db > da) {
    b = parent_[Index(b)];
    --db;
  }
  // Walk both up until they share a parent; track the child below the common ancestor.
  while (parent_[Index(a)] != parent_[Index(b)]) {
    a = parent_[Index(a)];
    b = parent_[Index(b)];
  }
  if (a == b) {  // one is an ancestor of the other: cannot happen for two leaves
    return {pa, pb};
  }
  return {a, b};
}

bool FairShare::MayPreempt(BudgetId preemptor, double gpus, BudgetId victim,
                           double victim_gpus) const {
  if (preemptor == victim) return false;
  const auto [p, v] = Divergence(preemptor, victim);
  if (Key(p) >= preempt_below_) return false;  // the preemptor's side is not far enough below
  return KeyWith(p, gpus) <= KeyWith(v, -victim_gpus);
}

bool FairShare::MayPreemptSome(BudgetId preemptor) const {
  // MayPreempt's side of the preemptor is the preemptor or one of its ancestors below the root.
  for (BudgetId b = preemptor; b.value() > 0; b = parent_[Index(b)])
    if (Key(b) < preempt_below_) return true;
  return false;
}

bool FairShare::VictimSideOverShare(BudgetId preemptor, BudgetId victim) const {
  if (preemptor == victim) return false;
  return Key(Divergence(preemptor, victim).second) >= 1.0;
}

bool FairShare::ServedNoBetter(BudgetId holder, BudgetId victim) const {
  if (holder == victim) return false;
  const auto [h, v] = Divergence(holder, victim);
  return Key(h) <= Key(v);
}

bool FairShare::StaysBelowVictim(BudgetId holder, double gpus, BudgetId victim) const {
  if (holder == victim) return false;
  const auto [h, v] = Divergence(holder, victim);
  auto window = [&](BudgetId b) { return num_[Index(b)] / (owed_window_[Index(b)] + 1.0); };
  return KeyWith(h, gpus) < Key(v) && window(h) < window(v);
}

}  // namespace hg
