// The discrete-event simulator: a virtual clock drives the very same policy as the server.
// Events are ordered by (time, sequence), so the same inputs give the same run, byte for byte.
#pragma once

#include <functional>
#include <vector>

#include "core/policy.h"
#include "sim/result.h"
#include "sim/scenario.h"

namespace hg::sim {

struct DecisionLogEntry {
  Seconds at{0};
  const char* action = "";  // "start", "stop", "drained"; with explain: "pending", "reserve"
  JobId job{0};             // 0 for node decisions
  std::string node;         // first node of the placement or reservation, or the drained node
  std::string reason;       // Describe(reason)
  // "pending": the policy's estimate of when the job starts, as of this line (PendingNote's;
  // kNever: none, and for the other actions).
  Seconds estimated_start = kNever;
};

struct SimOptions {
  PolicyConfig policy;   // caps and tuning shared with the server
  Seconds interval{10};  // the scheduling loop runs at most this often
  // Off (the default), a cycle runs only on the first tick after an event (a submission, an end,
  // a node or budget change, a protection, lease, max_runtime or drain deadline running out) or
  // after max_gap: the loop `hourglass server` runs since session 24 (State::Tick), on the
  // multiples of its `--interval-ms` (10 s). A change that time alone brings, such as a waiting
  // budget's key falling below a victim's as the window moves, waits for the next event or the
  // max gap. On, the loop also runs on every tick while any job waits (the server with
  // `--timer-ms` equal to its interval, its loop in session 23), at about three times the cycles.
  bool cycle_while_waiting = false;
  // With cycle_while_waiting: the waiting timer's period, a multiple of the interval (0: the
  // interval). A longer one runs cycles on its own multiples while a job waits, and events still
  // on the first interval tick after them (`--timer`; `hourglass server --timer-ms`).
  Seconds timer{0};
  // While a job waits, the longest the loop goes without a cycle (0: no bound): a cycle on the
  // first tick this long after the last one, if no event brought one sooner. On a busy cluster
  // events come far more often and it seldom fires (lab-month: 3% more cycles); on a quiet one it
  // bounds how long a change that time alone brings waits, as kube-scheduler retries an
  // unschedulable pod after at most 5 minutes (`--max-gap`; `hourglass server --max-gap-ms`).
  Seconds max_gap{300};
  Seconds restart_overhead = Minutes(5);  // a resumed job reloads before it makes progress
  // Users submit again what the cluster killed: a job that is not resumable and ended preempted,
  // or failed with a lost node, comes back this long after it ended as a new submission (at the
  // end of its budget's queue) and runs from scratch. Unset: it stays ended, and what it still
  // had to do leaves the demand, which flatters a policy that kills work. max_runtime's end is
  // not resubmitted (it would end the same way).
  std::optional<Seconds> resubmit_after;
  // Ask the policy for a reason per pending job in every cycle, as the server does while its
  // queue is short. The decisions must be the same either way (a test). With a decision_log, the
  // reasons ("pending") and the reservations ("reserve") of every cycle go to it too.
  bool explain = false;
  // With explain: log the reasons and reservations of these job ids only (sorted; empty: all).
  std::vector<int64_t> explain_jobs;
  // Called now and then with (simulated time, events so far), e.g. for a progress line.
  std::function<void(Seconds, int64_t)> progress;
  // Called for every decision applied (start, stop, node drained) with its reason in words, so a
  // run can answer "why was my job preempted" the way the server does.
  std::function<void(const DecisionLogEntry&)> decision_log;
};

// Checks the scenario as a whole (budgets exist, jobs fit the cluster and the contract, events
// name known nodes and budgets); errors name the file line of the offending entry.
Result<void> Validate(const Scenario& sc, const PolicyConfig& config);

// Checks the options' loop as the server checks its own (CheckTimedLoop): a positive interval, a
// timer of 0 or a multiple of it, a max gap not negative. Errors name the option ("interval",
// "timer", "max-gap").
Result<void> CheckLoop(const SimOptions& options);

// Runs the scenario under `policy`. Fails only on an invalid scenario or loop.
Result<SimResult> Simulate(const Scenario& sc, const Policy& policy, const SimOptions& options);

}  // namespace hg::sim
