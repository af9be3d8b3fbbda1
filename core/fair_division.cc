#include "core/fair_division.h"

#include <algorithm>
#include <cassert>

namespace hg {

std::vector<double> WaterFill(const BudgetTree& tree, std::span<const double> demand,
                              double capacity) {
  const size_t n = tree.size();
  assert(demand.size() == n);
  // Subtree demand, bottom-up: ids of children are always larger than their parent's.
  std::vector<double> want(demand.begin(), demand.end());
  for (size_t i = n; i-- > 1;) {
    const BudgetId b(static_cast<int32_t>(i));
    if (auto lim = tree.limit(b)) want[i] = std::min(want[i], static_cast<double>(*lim));
    want[static_cast<size_t>(tree.parent(b).value())] += want[i];
  }
  std::vector<double> owed(n, 0.0);
  owed[0] = std::min(capacity, want[0]);
  std::vector<BudgetId> order;
  for (size_t i = 0; i < n; ++i) {
    const auto& kids = tree.children(BudgetId(static_cast<int32_t>(i)));
    if (kids.empty() || owed[i] <= 0) continue;
    // Satisfy children in order of demand per unit of share; the rest split what is left.
    order.assign(kids.begin(), kids.end());
    std::erase_if(order, [&](BudgetId c) { return want[static_cast<size_t>(c.value())] <= 0; });
    std::sort(order.begin(), order.end(), [&](BudgetId x, BudgetId y) {
      const double rx = want[static_cast<size_t>(x.value())] / tree.share(x);
      const double ry = want[static_cast<size_t>(y.value())] / tree.share(y);
      return rx != ry ? rx < ry : x < y;
    });
    double left = owed[i];
    double weight = 0;
    for (BudgetId c : order) weight += tree.share(c);
    for (BudgetId c : order) {
      const auto ci = static_cast<size_t>(c.value());
      const double fair = left * tree.share(c) / weight;
      const double give = std::min(fair, want[ci]);
      owed[ci] = give;
      left -= give;
      weight -= tree.share(c);
    }
  }
  return owed;
}

}  // namespace hg
