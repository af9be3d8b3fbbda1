// Hierarchical weighted max-min fair division ("water-filling") of capacity among budgets given
// their demand. It defines what each budget is owed at an instant (DESIGN.md section 2): a budget
// is never owed more than it asks for, and what it leaves flows to its siblings, then up.
#pragma once

#include <span>
#include <vector>

#include "core/budget_tree.h"

namespace hg {

// `demand[b]` is the GPUs asked for by jobs charged to budget b (only leaves are non-zero);
// returns the GPUs owed to every budget (a parent's owed amount is the sum of its children's).
// Limits cap a subtree's demand.
std::vector<double> WaterFill(const BudgetTree& tree, std::span<const double> demand,
                              double capacity);

}  // namespace hg
