// The policy interface: a snapshot and `now` in, decisions with reasons out. Implementations
// read no clock, do no I/O and start no thread; the simulator and the server both drive them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/budget_tree.h"
#include "core/decision.h"
#include "core/error.h"
#include "core/model.h"
#include "core/usage_ledger.h"

namespace hg {

struct PolicyConfig {
  Seconds min_runtime_cap = Hours(8);  // longer min_runtime is refused at submission
  Seconds grace_cap = Minutes(30);     // longest grace period a job may ask for
  // Sessions (JobSpec::lease): the longest lease, i.e. how long a session stays protected after
  // its user's last activity; the longest max_runtime a job with a lease may have, which bounds
  // its protection as the 8 h cap bounds everyone else's; and the most GPUs it may hold, so the
  // extension serves interactive work and never keeps a gang's nodes from a reservation for a day.
  Seconds lease_cap = Hours(1);
  Seconds session_cap = Hours(24);
  int32_t session_max_gpus = 8;
  // Weight of the live allocation against the window's history in the fair-share key: holding
  // g GPUs now counts as g * live_weight GPU-seconds of usage. Heavy enough that one cycle does
  // not hand every free GPU to one budget; light enough that a budget owed a few hundred GPUs may
  // still preempt for its 512-GPU gang: counted as a day's usage, the gang's own GPUs put its
  // side above the victims' (the no-ping-pong rule), and it waited for GPUs to come free while
  // sweeps held them. 12 h against 24 h: lab-month entitlement +1.1 to +2.3 points on seeds 1-3,
  // philly-dev unchanged (docs/open-work.md; 6 h gained more on lab-month, lost on philly-dev).
  Seconds live_weight = Hours(12);
  // The fair-share window: usage delivered and owed within [now - window, now] sets each budget's
  // key. The drivers size their usage ledgers with it (a multiple of their hourly buckets). A
  // longer window remembers a budget's shortfall longer, a shorter one forgives it sooner.
  Seconds window = Days(7);
  // GPUs kept free of everything but quick jobs (class "debug"), as a fraction of capacity, so
  // debug jobs start without waiting for a victim's grace period. 0 here; DeployedConfig() sets
  // what the server and the simulator's commands run with.
  double quick_headroom = 0.0;
  // The headroom grows to cover quick jobs that are waiting, up to this fraction of capacity:
  // when debug work bursts, the next GPUs to come free go to it rather than to long work.
  double quick_headroom_max = 0.05;
  // While no quick job runs or waits, the headroom is at most this many GPUs: room for the next
  // debug job to start at once, not a fraction of the cluster idle through nights and weekends
  // when nobody debugs. The first debug job brings the full headroom back as GPUs come free.
  // -1: the headroom never shrinks.
  int32_t quick_headroom_quiet = -1;
  std::string quick_class = "debug";
  // Sessions (funded jobs with a lease: a notebook or a shell, a user at the terminal) may start
  // on the headroom's GPUs too. They are bounded like every session (at most session_max_gpus,
  // max_runtime at most session_cap), so a gang cannot take the headroom by asking for a lease.
  // A session takes headroom GPUs only while no debug job waits and the quiet headroom stays
  // free. On lab-month seeds 1-12 (README, "Sessions start in seconds") it took the interactive
  // p90 wait from 15-43 min to 2.1-3.7 min with the debug p90 at 9 s on every seed and
  // entitlement +0.36 points (standard error 0.26). Off here; DeployedConfig() turns it on.
  bool sessions_use_headroom = false;
  int max_reservations = 1;  // how many blocked jobs may hold a reservation at once
  // 0: off. Otherwise a budget's job of at least this many GPUs that can neither start, preempt
  // nor hold a reservation holds back the same leaf's later non-quick jobs for the cycle. They
  // would take, a few GPUs at a time, the share the large job waits for, and it would wait for
  // days; held back, the budget falls below its share until the large job may preempt.
  int32_t large_job_gpus = 0;
  // 0: off. Otherwise contract case (c) for jobs of at least this many GPUs: when such a job
  // holds the reservation, funded work of budgets over their share (and not its own) counts as
  // leaving once its protection ends, and the job preempts that work when the reservation is
  // due. Without it, work with no max_runtime that fair share does not let the job preempt has
  // no known end, and the largest gangs rarely get a reservation at all.
  int32_t reservation_preempts_gpus = 0;
  // Contract case (c), as above, for a job that asks for a whole node of the cluster's largest
  // size (its GPUs equal that node's, more than one), whatever reservation_preempts_gpus says. Such
  // a job needs one node cleared of work that is not its budget's; on a cluster of small jobs every
  // node holds some, with no known end, so it rarely gets a reservation and waits while its budget
  // falls short. Gangs of several nodes are left to reservation_preempts_gpus: clearing dozens
  // of nodes of others' work for one cost lab-month 1.3 points (docs/open-work.md). Off here;
  // DeployedConfig() turns it on.
  bool whole_node_reservation_preempts = false;
  // A budget's jobs may preempt funded work (past its protection) only while the budget's side
  // has received less than this fraction of what it was owed (its fair-share key), and more
  // below it than the victim's side. 1: any amount below. Lower values trade entitlement
  // delivered for less work lost to fair-share preemption: a non-resumable victim loses its run.
  double preempt_below = 1.0;
  // Quick (debug) jobs of every budget are placed before other funded work, and may preempt work
  // past its protection of any budget over its share, not only of one above their own. Their
  // users wait at a terminal; their GPU time is small and charged like any other, so the fair
  // share evens out over the window. false: quick jobs take their budget's turn.
  bool quick_first = false;
  // A quick (debug) job may stop non-quick work of its own budget once that work's protection
  // has ended, as Kueue's withinClusterQueue preemption lets a workload stop lower-priority ones
  // of its own queue. The GPUs stay with the budget, so no other budget's share moves: what
  // a budget runs first is its own users' business, and a user waiting at a terminal comes
  // before the same budget's long work, which is requeued (if resumable) and loses what it did
  // since its last checkpoint. false: a job never stops work of its own budget.
  bool quick_stops_own = false;
  // Unfunded work may borrow reserved GPUs while the reservation is at least this far from due:
  // idle GPUs earn nothing, and one grace period at the due time is a small price.
  Seconds reservation_lend_margin = Hours(1);
  // A job that stopped an 8-GPU sweep for 2 GPUs leaves 6 spare: with this on, a later preemptor
  // waits for such GPUs before it stops funded work (unfunded work still goes first). Waiting
  // loses no work, but the stop it saves is a fair-share preemption of a budget over its share,
  // the move that serves one below it: on lab-month (12 seeds) it lost 8% less work and
  // delivered 0.14 points less of what is owed on average, -1.3 to +1.8 per seed
  // (docs/open-work.md). Off: a site that values finished work over exact shares may turn it on.
  bool wait_for_spare = false;
  // Honour sessions' leases (JobSpec::lease) when choosing victims. false: protection is
  // min_runtime alone, as before leases, to measure what they cost and what they save.
  bool leases = true;
  // Quick (debug) jobs are not stopped for fair share while their run is younger than this,
  // whatever their own min_runtime (drains, due reservations they backfilled and lost nodes
  // still stop them). A debug job that has just started has lost almost nothing, so preemption
  // planning (least lost work first) picks it before longer work: on philly-dev, whose debug jobs
  // have no protection, a third to a half of them are stopped after they start, mostly for other
  // debug jobs. Bounded, so that the class label cannot shield long work from fair share.
  // 0: off. At 30 min (docs/open-work.md), lab-month's debug jobs were stopped 86% less often
  // with the same debug wait and entitlement; philly-dev's 66-72% less often, but they waited
  // longer (p50 3.6-5.4 -> 16-26 min), as they had started mostly on GPUs such stops freed. Off
  // by default: issue 4's target is the wait.
  Seconds quick_protect{0};
  // A leaf does not stop, for fair share, work of a leaf whose job took GPUs from it within this
  // long (Snapshot::recent_stops, and the cycle's own stops). Each stop passes the no-ping-pong
  // rule when it is made, but the keys move after it, and on philly-dev 3.6% of fair-share
  // stops were answered by a stop the other way within the hour (docs/open-work.md, "Stops taken
  // back within an hour"). With an hour, 83-94% fewer were, for about a quarter of a point of
  // entitlement delivered (lab-month seeds 1-24; philly-dev -0.5/+0.1/0 points at 2/2.5/3x).
  // 0 (off) here; DeployedConfig() sets an hour.
  Seconds take_back_cooldown{0};
};

// The longest PolicyConfig::take_back_cooldown: drivers keep the stops of this long, whatever
// the policy's own setting, so that the snapshot holds what any configuration asks of it.
inline constexpr Seconds kMaxTakeBackCooldown{86400};

// A stop of funded work of leaf `victim` for a funded job of another leaf, `preemptor`, at `at`.
struct RecentStop {
  Seconds at{0};
  BudgetId victim{0};
  BudgetId preemptor{0};
};

struct Snapshot {
  Seconds now{0};
  std::span<const Node> nodes;  // indexed by NodeId
  const BudgetTree* tree = nullptr;
  const UsageLedger* delivered = nullptr;  // GPU-seconds delivered, advanced to `now`
  const UsageLedger* owed = nullptr;       // GPU-seconds owed, advanced to `now`
  // Pending jobs, funded and unfunded apart, each in (queued_since, id) order. Entries whose
  // `spec` is null are holes the driver has not compacted yet; policies skip them. The order
  // lets a policy stop early on a long queue instead of sorting it every cycle.
  std::span<const PendingJob> pending_funded;
  std::span<const PendingJob> pending_unfunded;
  // How many live entries of pending_unfunded have a JobSpec::tier above 0, or -1 if the driver
  // does not count them. The `priority` baseline serves tiers 2 and 1 before tier 0; told that no
  // unfunded job is above tier 0 (as in every built-in workload, whose sweeps are tier 0), it
  // skips a pass over the unfunded queue, tens of thousands of sweeps, in every cycle.
  int64_t unfunded_above_tier0 = -1;
  std::span<const RunningJob> running;
  // Stops of funded work for funded jobs of other leaves, oldest first: at least those within
  // kMaxTakeBackCooldown of `now` (a driver may keep more; a policy reads those it needs).
  std::span<const RecentStop> recent_stops;
  bool explain = false;  // fill Decisions::pending with a note per pending job
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual Decisions Cycle(const Snapshot& snap) const = 0;
};

// The configuration the server, `hourglass sim` and `hourglass sim compare` run with, so what the
// simulator measures is what production does: the defaults above plus a debug headroom of 1.5%.
PolicyConfig DeployedConfig();

// Policies are chosen by name.
Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyConfig& config);
std::vector<std::string> PolicyNames();

// What ValidateJob asks of the cluster's nodes, computed once: the simulator checks every job of
// a workload against the same nodes, and need not walk them for each.
class NodeSizes {
 public:
  explicit NodeSizes(std::span<const Node> nodes);
  Gpus largest() const { return largest_; }  // 0 without nodes
  int64_t total() const { return total_; }   // GPUs in all nodes (int64: a sum of counts)
  size_t nodes() const { return nodes_; }
  // How many slices of `per` GPUs (> 0) the empty cluster holds, each on one node.
  int64_t Slots(Gpus per) const;

 private:
  std::vector<std::pair<Gpus, int64_t>> count_;  // GPUs of a node -> nodes with that many
  Gpus largest_{0};
  int64_t total_ = 0;
  size_t nodes_ = 0;
};

// Checks a job at submission against the cluster and the contract's caps.
Result<void> ValidateJob(const JobSpec& job, std::span<const Node> nodes,
                         const PolicyConfig& config);
Result<void> ValidateJob(const JobSpec& job, const NodeSizes& cluster, const PolicyConfig& config);

}  // namespace hg
