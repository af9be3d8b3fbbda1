// The hierarchical fair-share order. Among siblings, the budget whose usage lags what it was owed
// the most comes first. Usage and owed amounts come from the 7-day sliding window; the live
// allocation counts too (held GPUs x live_weight), so one cycle cannot hand everything to one
// budget: each start raises its budget's key before the next pick.
//
//   key(b) = (delivered_window(b) + alloc(b) * w) / (owed_window(b) + owed_now(b) * w + 1)
//
// Being measured against what a budget was *owed* (water-filled by demand), not against its bare
// share, means GPUs a budget used while others had no demand are not held against it later.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "core/budget_tree.h"
#include "core/types.h"
#include "core/usage_ledger.h"

namespace hg {

class FairShare {
 public:
  // alloc[b]: GPUs held now by funded jobs charged to b (leaves); owed_now[b]: water-filled GPUs
  // owed now (all nodes). Both indexed by budget id.
  // preempt_below: how far below its share (key) a side must be before its jobs may preempt
  // funded work; 1 means any amount below (see PolicyConfig::preempt_below).
  FairShare(const BudgetTree& tree, const UsageLedger& delivered, const UsageLedger& owed,
            std::span<const double> leaf_alloc, std::vector<double> owed_now, Seconds live_weight,
            double preempt_below = 1.0);

  double Key(BudgetId b) const { return KeyWith(b, 0.0); }
  // Key if the subtree of b held `delta` more GPUs.
  double KeyWith(BudgetId b, double delta) const {
    const size_t i = Index(b);
    return (num_[i] + (alloc_[i] + delta) * w_) / den_[i];
  }
  double alloc(BudgetId b) const { return alloc_[Index(b)]; }
  double owed_now(BudgetId b) const { return owed_now_[Index(b)]; }

  // Adds `gpus` (may be negative) to the allocation of `leaf` and its ancestors.
  void Add(BudgetId leaf, double gpus);

  // The children of the lowest common ancestor of a and b on the paths to a and to b. a != b.
  std::pair<BudgetId, BudgetId> Divergence(BudgetId a, BudgetId b) const;

  // May a job of `preemptor` (needing `gpus`) preempt `victim_gpus` of a job of `victim`? Only if
  // the preemptor's side is below its share (its key under preempt_below) and further below it
  // than the victim's side, and stays so after the move: the victim's budget is never left below
  // the preemptor's (no ping-pong). Same leaf: never.
  bool MayPreempt(BudgetId preemptor, double gpus, BudgetId victim, double victim_gpus) const;
  // False when neither `preemptor` nor any ancestor of it below the root has a key under
  // preempt_below: then MayPreempt is false for every victim (Preemptor answers so at once).
  bool MayPreemptSome(BudgetId preemptor) const;

  // MayPreempt for one preemptor, `gpus` and the keys as they are, asked of many victims: a
  // preemption plan asks it of every job on every node it visits, and most victims share a
  // budget with another, so each victim budget's side and the preemptor's key against it are
  // worked out once. The keys must not move while it is used.
  class Preemptor {
   public:
    // Per victim budget: its side's id (or kNever, kUnknown), and the preemptor side's key with
    // `gpus` against it. Owned by the caller, so that plan after plan reuses the memory.
    struct Scratch {
      std::vector<int32_t> side;
      std::vector<double> lhs;
    };
    Preemptor(const FairShare& fs, BudgetId preemptor, double gpus, Scratch& scratch)
        : fs_(fs),
          p_(preemptor),
          g_(gpus),
          some_(fs.MayPreemptSome(preemptor)),
          side_(scratch.side),
          lhs_(scratch.lhs) {
      if (!some_) return;  // every answer is no: nothing to remember
      side_.assign(fs.alloc_.size(), kUnknown);
      lhs_.resize(fs.alloc_.size());
    }
    // == fs.MayPreempt(preemptor, gpus, victim, victim_gpus)
    bool MayPreempt(BudgetId victim, double victim_gpus) {
      if (!some_) return false;
      const size_t v = Index(victim);
      if (side_[v] == kUnknown) {
        side_[v] = kNever;
        if (victim != p_) {
          const auto [ps, vs] = fs_.Divergence(p_, victim);
          if (fs_.Key(ps) < fs_.preempt_below_) {
            side_[v] = vs.value();
            lhs_[v] = fs_.KeyWith(ps, g_);
          }
        }
      }
      if (side_[v] == kNever) return false;
      return lhs_[v] <= fs_.KeyWith(BudgetId(side_[v]), -victim_gpus);
    }

   private:
    static constexpr int32_t kUnknown = -2, kNever = -1;
    const FairShare& fs_;
    BudgetId p_;
    double g_;
    bool some_;  // MayPreemptSome(p_)
    std::vector<int32_t>& side_;
    std::vector<double>& lhs_;
  };

  // The looser rule for debug jobs under PolicyConfig::quick_first: is the victim's side (below
  // the two budgets' common ancestor) at or over its share, whatever the preemptor's key? Same
  // leaf: never.
  bool VictimSideOverShare(BudgetId preemptor, BudgetId victim) const;

  // The rule for a reservation's holder and work that backfilled a reservation: is the holder's
  // side (below the common ancestor) served no better than the victim's, by key, as things stand?
  // Looser than MayPreempt, which also weighs the GPUs moved. Same leaf: never.
  bool ServedNoBetter(BudgetId holder, BudgetId victim) const;

  // For PolicyConfig::reservation_preempts_gpus: would the holder's side, holding `gpus` more,
  // still be served worse (a lower key) than the victim's side is now? Looser than MayPreempt,
  // which compares with the victim's side after it lost the work, yet the victim's side cannot
  // take the GPUs back the same way at once (Kueue's "LessThanInitialShare"). And has the
  // holder's side received less of what it was owed over the window alone, without the live
  // allocation? Keys with it swap when two gangs swap GPUs (a soak round found two taking them
  // back and forth each time the other's protection ended); the window moves slowly. Same leaf:
  // never.
  bool StaysBelowVictim(BudgetId holder, double gpus, BudgetId victim) const;

 private:
  static size_t Index(BudgetId b) { return static_cast<size_t>(b.value()); }

  // The tree's parents and depths, packed: Divergence climbs them for every victim a plan asks
  // about, and the tree's nodes are large.
  std::vector<BudgetId> parent_;
  std::vector<int> depth_;
  std::vector<double> num_;  // delivered window per node
  std::vector<double> den_;  // owed window + owed_now * w + 1 per node
  std::vector<double> owed_window_;
  std::vector<double> alloc_;
  std::vector<double> owed_now_;
  double w_;
  double preempt_below_;
};

}  // namespace hg
