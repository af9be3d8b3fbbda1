// The budget tree: programs > projects > researchers. Each budget has a unique name and a parent
// (as Slurm accounts do); its path joins the names from the top. A job may be charged to any
// budget. Jobs charged to a budget that has children are held by a hidden "direct" child (path
// suffix "/~") whose share is the mean of its siblings', so every algorithm only sees jobs at
// leaves.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/types.h"

namespace hg {

struct BudgetSpec {
  std::string name;                // unique, no '/', e.g. "olmo" or "pretrain.alice"
  std::string parent;              // name of the parent budget; empty for a top-level budget
  double share = 1.0;              // weight among siblings, > 0
  std::optional<int32_t> limit;    // max GPUs held at once by the subtree, >= 0
  std::vector<std::string> leads;  // principals who may change this subtree
  int line = 0;                    // source line when read from a file, for errors
};

class BudgetTree {
 public:
  // Validates the specs (empty or malformed name, duplicate name, unknown parent, cycle,
  // share <= 0 or not finite, negative limit) and builds the tree. Id 0 is the root.
  static Result<BudgetTree> Build(const std::vector<BudgetSpec>& specs);

  size_t size() const { return nodes_.size(); }
  BudgetId parent(BudgetId b) const { return nodes_[Index(b)].parent; }
  const std::vector<BudgetId>& children(BudgetId b) const { return nodes_[Index(b)].children; }
  const std::string& path(BudgetId b) const { return nodes_[Index(b)].path; }
  const std::string& name(BudgetId b) const { return nodes_[Index(b)].name; }
  double share(BudgetId b) const { return nodes_[Index(b)].share; }
  std::optional<int32_t> limit(BudgetId b) const { return nodes_[Index(b)].limit; }
  const std::vector<std::string>& leads(BudgetId b) const { return nodes_[Index(b)].leads; }
  int depth(BudgetId b) const { return nodes_[Index(b)].depth; }
  bool is_leaf(BudgetId b) const { return nodes_[Index(b)].children.empty(); }
  bool is_hidden(BudgetId b) const { return nodes_[Index(b)].hidden; }

  // Static entitlement: product along the path of share / sum of sibling shares (hidden
  // "direct" children excluded).
  double entitlement(BudgetId b) const { return nodes_[Index(b)].entitlement; }

  // Looks a budget up by name or by full path.
  std::optional<BudgetId> Find(std::string_view name_or_path) const;
  // The leaf that holds jobs charged to `b`: b itself, or its hidden direct child.
  BudgetId ChargeTarget(BudgetId b) const;
  // True if `a` is `b` or an ancestor of `b`.
  bool IsAncestorOrSelf(BudgetId a, BudgetId b) const;
  // Ids of all real (not hidden) budgets, in depth-first order.
  std::vector<BudgetId> Visible() const;
  // The specs this tree was built from (for writing it out again).
  std::vector<BudgetSpec> Specs() const;

  // Runtime changes, validated like Build; nothing changes on error.
  Result<void> SetShare(BudgetId b, double share);
  Result<void> SetLimit(BudgetId b, std::optional<int32_t> limit);

 private:
  struct Node {
    std::string name;
    std::string path;
    BudgetId parent{-1};
    std::vector<BudgetId> children;
    double share = 1.0;
    std::optional<int32_t> limit;
    std::vector<std::string> leads;
    int depth = 0;
    bool hidden = false;
    double entitlement = 1.0;
  };
  static size_t Index(BudgetId b) { return static_cast<size_t>(b.value()); }
  void Recompute();

  std::vector<Node> nodes_;
};

}  // namespace hg
