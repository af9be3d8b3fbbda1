#include <string>

#include "core/decision.h"

namespace hg {
namespace {

std::string Budget(const BudgetTree& tree, BudgetId b) {
  if (b == kUnfunded || b.value() < 0 || static_cast<size_t>(b.value()) >= tree.size())
    return "(unfunded)";
  std::string p = tree.path(b);
  if (tree.is_hidden(b)) p = p.substr(0, p.size() - 2);
  return p;
}

std::string At(int64_t t) { return "t=" + std::to_string(t) + "s"; }

// 720 -> "0.72", 600 -> "0.6", 1000 -> "1".
std::string Thousandths(int64_t v) {
  std::string s = std::to_string(v / 1000);
  int64_t frac = v % 1000;
  if (frac == 0) return s;
  std::string f = std::to_string(1000 + frac).substr(1);
  while (f.back() == '0') f.pop_back();
  return s + "." + f;
}

}  // namespace

bool SameWait(const Reason& x, const Reason& y) {
  if (x.code != y.code) return false;
  switch (x.code) {
    case ReasonCode::kWaitGpus:
    case ReasonCode::kWaitHeadroom:
    case ReasonCode::kWaitShape:
    case ReasonCode::kWaitReserved:
    case ReasonCode::kWaitUnfunded: {
      Reason free_apart = y;
      free_apart.b = x.b;
      return x == free_apart;
    }
    default:
      return x == y;
  }
}

std::string Describe(const Reason& r, const BudgetTree& tree) {
  const std::string other = std::to_string(r.other.value());
  switch (r.code) {
    case ReasonCode::kStartFree:
      return "started on free GPUs";
    case ReasonCode::kStartBackfill:
      return "started on GPUs reserved for a larger job; it may be preempted once its protection "
             "ends";
    case ReasonCode::kStartAfterPreempt:
      return "started on GPUs that preemption freed for it";
    case ReasonCode::kWaitGpus: {
      std::string s = "waiting for " + std::to_string(r.a) + " GPUs (" + std::to_string(r.b) +
                      " free, none preemptible for budget " + Budget(tree, r.budget);
      if (r.c == kShareServed)
        s += ", which has had its share: it may stop only work of budgets further above theirs";
      else if (r.c == kWaitsForProtection)
        s += ", which is below its share: the work it may stop is still protected";
      else if (r.c == kTooLittleToStop)
        s += ", which is below its share: even once protections end, the work it may stop would "
             "not free enough GPUs where it fits";
      else if (r.c == kBelowShare)
        s += ", which is below its share: the work it may stop is still protected or too little";
      else if (r.c == kTakeBackCooldown)
        s += ", which is below its share: the work it could stop belongs to budgets that took "
             "GPUs from it within the take-back cool-down, and it may not take them back yet";
      else if (r.c == kWouldPassVictims)
        s += ", which is below its share, but would be served better than every budget whose work "
             "it could stop once it held these GPUs, and may not leave them below it: it waits "
             "for GPUs to come free";
      return s + ")";
    }
    case ReasonCode::kWaitBudgetLimit:
      return "budget " + Budget(tree, r.budget) + " is at its limit of " + std::to_string(r.a) +
             " GPUs";
    case ReasonCode::kWaitPreemption:
      return "GPUs are being freed for it; victims are killed at the latest at " + At(r.a);
    case ReasonCode::kWaitReservation:
      return "holds a reservation; expected to start by " + At(r.a);
    case ReasonCode::kWaitHeadroom:
      return "waiting for " + std::to_string(r.a) + " GPUs: the " + std::to_string(r.b) +
             " free are kept for debug jobs (the debug headroom), and none are preemptible for "
             "budget " +
             Budget(tree, r.budget);
    case ReasonCode::kWaitShape:
      return "waiting for " + std::to_string(r.a) + " GPUs" +
             (r.c == r.a ? std::string(" on one node")
              : r.c > 0  ? " (" + std::to_string(r.c) + " per node)"
                         : std::string()) +
             ": " + std::to_string(r.b) +
             " are free, but not on nodes where its shape fits, and no work it may stop frees "
             "such nodes for budget " +
             Budget(tree, r.budget);
    case ReasonCode::kWaitReserved:
      return "waiting for " + std::to_string(r.a) + " GPUs: of the " + std::to_string(r.b) +
             " free, those where it fits are reserved for job " + other + " from " + At(r.c) +
             ", and it would still be protected then";
    case ReasonCode::kWaitUnfunded:
      return "unfunded: runs only on idle GPUs (" + std::to_string(r.b) + " free, needs " +
             std::to_string(r.a) + ")";
    case ReasonCode::kWaitFairShare:
      return "budgets further below their share come first";
    case ReasonCode::kWaitTier:
      return "higher tiers and earlier jobs come first";
    case ReasonCode::kWaitLargeJob:
      return "waits behind job " + other + " (" + std::to_string(r.a) +
             " GPUs) of the same budget, which comes first";
    case ReasonCode::kWaitPreemptBelow:
      return "waiting for GPUs: budget " + Budget(tree, r.budget) + " has a fair-share key of " +
             Thousandths(r.a) +
             " (delivered over owed); funded work is preempted only for keys under " +
             Thousandths(r.b) + " (--preempt-below)";
    case ReasonCode::kPreemptForFunded:
      return "unfunded work preempted to make room for funded job " + other;
    case ReasonCode::kPreemptFairShare:
      return "preempted after its protection ended: budget " + Budget(tree, r.budget) +
             " is further below its share (job " + other + " needs the GPUs)";
    case ReasonCode::kPreemptReservation:
      return "preempted after its protection ended: the reservation of job " + other + " is due";
    case ReasonCode::kPreemptOwnQuick:
      return "preempted after its protection ended: debug job " + other +
             " of its own budget needs the GPUs (--debug-stops-own)";
    case ReasonCode::kPreemptDrain:
      return "node " + std::to_string(r.a) + " is draining and the job's protection is over";
    case ReasonCode::kPreemptDrainForced:
      return "node " + std::to_string(r.a) + " is draining and its deadline passed";
    case ReasonCode::kPreemptTier:
      return "preempted by higher-tier job " + other + " (tier " + std::to_string(r.a) + " > " +
             std::to_string(r.b) + ")";
    case ReasonCode::kMaxRuntime:
      return "reached its max_runtime";
    case ReasonCode::kNodeDrained:
      return "node is empty: drained";
  }
  return "?";
}

}  // namespace hg
