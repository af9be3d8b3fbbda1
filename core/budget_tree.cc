#include "core/budget_tree.h"

#include <cmath>
#include <map>

namespace hg {
namespace {

Error At(const BudgetSpec& s, std::string field, std::string reason) {
  Error e{std::move(field), std::move(reason), {}, s.line};
  return e;
}

}  // namespace

Result<BudgetTree> BudgetTree::Build(const std::vector<BudgetSpec>& specs) {
  std::map<std::string, size_t, std::less<>> by_name;
  for (size_t i = 0; i < specs.size(); ++i) {
    const BudgetSpec& s = specs[i];
    if (s.name.empty()) return tl::unexpected(At(s, "name", "must not be empty"));
    if (s.name.find('/') != std::string::npos || s.name.find('~') != std::string::npos)
      return tl::unexpected(At(s, "name", "'" + s.name + "' must not contain '/' or '~'"));
    if (!std::isfinite(s.share) || s.share <= 0)
      return tl::unexpected(At(s, "share", "budget '" + s.name + "': share must be > 0"));
    if (s.limit && *s.limit < 0)
      return tl::unexpected(At(s, "limit", "budget '" + s.name + "': limit must be >= 0"));
    if (!by_name.emplace(s.name, i).second)
      return tl::unexpected(At(s, "name", "duplicate budget '" + s.name + "'"));
  }
  for (const BudgetSpec& s : specs) {
    if (!s.parent.empty() && !by_name.count(s.parent))
      return tl::unexpected(
          At(s, "parent", "budget '" + s.name + "': unknown parent '" + s.parent + "'"));
  }
  // Every budget must reach the top by following parents; otherwise it sits on a cycle.
  for (const BudgetSpec& s : specs) {
    const BudgetSpec* cur = &s;
    for (size_t steps = 0; !cur->parent.empty(); ++steps) {
      if (steps > specs.size())
        return tl::unexpected(At(s, "parent", "budget '" + s.name + "' is part of a parent cycle"));
      cur = &specs[by_name.find(cur->parent)->second];
    }
  }

  BudgetTree t;
  t.nodes_.push_back(Node{"", "", BudgetId(-1), {}, 1.0, std::nullopt, {}, 0, false, 1.0});
  // Insert parents before children: repeated passes in spec order keep ids deterministic.
  std::vector<BudgetId> id_of(specs.size(), BudgetId(-1));
  size_t placed = 0;
  while (placed < specs.size()) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const BudgetSpec& s = specs[i];
      if (id_of[i].value() >= 0) continue;
      BudgetId parent = kRootBudget;
      if (!s.parent.empty()) {
        parent = id_of[by_name.find(s.parent)->second];
        if (parent.value() < 0) continue;
      }
      BudgetId id(static_cast<int32_t>(t.nodes_.size()));
      Node n;
      n.name = s.name;
      n.parent = parent;
      n.path = parent == kRootBudget ? s.name : t.nodes_[Index(parent)].path + "/" + s.name;
      n.share = s.share;
      n.limit = s.limit;
      n.leads = s.leads;
      n.depth = t.nodes_[Index(parent)].depth + 1;
      t.nodes_.push_back(std::move(n));
      t.nodes_[Index(parent)].children.push_back(id);
      id_of[i] = id;
      ++placed;
    }
  }
  // Hidden direct children for every budget that has children.
  const size_t real = t.nodes_.size();
  for (size_t i = 1; i < real; ++i) {
    if (t.nodes_[i].children.empty()) continue;
    Node h;
    h.name = t.nodes_[i].name + "/~";
    h.path = t.nodes_[i].path + "/~";
    h.parent = BudgetId(static_cast<int32_t>(i));
    h.depth = t.nodes_[i].depth + 1;
    h.hidden = true;
    BudgetId hid(static_cast<int32_t>(t.nodes_.size()));
    t.nodes_.push_back(std::move(h));
    t.nodes_[i].children.push_back(hid);
  }
  t.Recompute();
  return t;
}

void BudgetTree::Recompute() {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (!n.hidden) continue;
    double sum = 0;
    int count = 0;
    for (BudgetId c : nodes_[Index(n.parent)].children) {
      if (nodes_[Index(c)].hidden) continue;
      sum += nodes_[Index(c)].share;
      ++count;
    }
    n.share = count > 0 ? sum / count : 1.0;
  }
  // Parents precede children in id order, so one forward pass suffices.
  nodes_[0].entitlement = 1.0;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (n.hidden) {
      n.entitlement = 0;
      continue;
    }
    double sum = 0;
    for (BudgetId c : nodes_[Index(n.parent)].children)
      if (!nodes_[Index(c)].hidden) sum += nodes_[Index(c)].share;
    n.entitlement = nodes_[Index(n.parent)].entitlement * n.share / sum;
  }
}

std::optional<BudgetId> BudgetTree::Find(std::string_view key) const {
  for (size_t i = 1; i < nodes_.size(); ++i) {
    if (nodes_[i].hidden) continue;
    if (nodes_[i].name == key || nodes_[i].path == key) return BudgetId(static_cast<int32_t>(i));
  }
  return std::nullopt;
}

BudgetId BudgetTree::ChargeTarget(BudgetId b) const {
  const Node& n = nodes_[Index(b)];
  if (n.children.empty()) return b;
  return n.children.back();  // the hidden direct child is always added last
}

bool BudgetTree::IsAncestorOrSelf(BudgetId a, BudgetId b) const {
  for (BudgetId cur = b; cur.value() >= 0; cur = nodes_[Index(cur)].parent)
    if (cur == a) return true;
  return false;
}

std::vector<BudgetId> BudgetTree::Visible() const {
  std::vector<BudgetId> out;
  std::vector<BudgetId> stack(nodes_[0].children.rbegin(), nodes_[0].children.rend());
  while (!stack.empty()) {
    BudgetId b = stack.back();
    stack.pop_back();
    if (nodes_[Index(b)].hidden) continue;
    out.push_back(b);
    const auto& ch = nodes_[Index(b)].children;
    for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.push_back(*it);
  }
  return out;
}

std::vector<BudgetSpec> BudgetTree::Specs() const {
  std::vector<BudgetSpec> out;
  for (BudgetId b : Visible()) {
    const Node& n = nodes_[Index(b)];
    BudgetSpec s;
    s.name = n.name;
    s.parent = n.parent == kRootBudget ? "" : nodes_[Index(n.parent)].name;
    s.share = n.share;
    s.limit = n.limit;
    s.leads = n.leads;
    out.push_back(std::move(s));
  }
  return out;
}

Result<void> BudgetTree::SetShare(BudgetId b, double share) {
  if (b.value() <= 0 || Index(b) >= nodes_.size() || nodes_[Index(b)].hidden)
    return Fail("budget", "unknown budget");
  if (!std::isfinite(share) || share <= 0) return Fail("share", "must be > 0");
  nodes_[Index(b)].share = share;
  Recompute();
  return {};
}

Result<void> BudgetTree::SetLimit(BudgetId b, std::optional<int32_t> limit) {
  if (b.value() <= 0 || Index(b) >= nodes_.size() || nodes_[Index(b)].hidden)
    return Fail("budget", "unknown budget");
  if (limit && *limit < 0) return Fail("limit", "must be >= 0");
  nodes_[Index(b)].limit = limit;
  return {};
}

}  // namespace hg
