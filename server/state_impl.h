// Private to server/state*.cc: the in-memory state behind State, shared by the files that
// implement its parts (state.cc: recovery, principals, jobs, budgets; state_cycle.cc: the policy
// cycle and the agents; state_views.cc: JSON views and metrics).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/budget_tree.h"
#include "core/decision.h"
#include "core/policy.h"
#include "core/usage_ledger.h"
#include "server/clock.h"
#include "server/metrics.h"
#include "server/recent_stops.h"
#include "server/state.h"
#include "server/usage_history.h"
#include "store/store.h"

namespace hg::server {

// One node's part of the current attempt of a job.
struct SliceRt {
  size_t node = 0;
  std::vector<int> gpu_idx;
  int64_t start_sent_seq = -1;  // the node's heartbeat count when the start order went out
  int64_t stop_sent_seq = -1;   // the node's heartbeat count when the stop order last went out
  bool exited = false;
  bool confirmed = false;  // the agent has listed the attempt as running
  int misses = 0;          // heartbeats since the start order that did not list the attempt
  std::optional<int32_t> exit_code;
  std::optional<int32_t> signal;
  std::string how;
  // The agent's last `cpu_s` for this part of the attempt and when it came (server clock, ms):
  // the baseline the next report's growth is measured against. Memory only.
  std::optional<double> cpu_s;
  int64_t cpu_at_ms = 0;
};

struct JobRt {
  store::JobRecord rec;
  JobSpec spec;  // stable address (jobs live in a std::map): PendingJob/RunningJob point here
  // The current attempt, while running or stopping.
  std::vector<SliceRt> slices;
  std::vector<Slice> placement;
  Seconds started{0};      // start of the run for the contract: when its agents confirmed it
  Seconds alloc_since{0};  // when its GPUs were assigned: usage counts from here
  bool stopping = false;
  Seconds stop_at{0};
  // What a stop frees GPUs for, and whether it holds them, are rec.stop_for and rec.stop_holds
  // (stored with the stop, cleared when the attempt ends).
  // Pending, and a stop the policy asked to hold for this job (StopDecision::hold_for) freed
  // GPUs for it: PendingJob::freed_for. A restart sets it again while such a victim is stopping
  // (JobRecord::stop_holds); once the victims have gone, the hold lasts one cycle, in memory.
  bool freed_for = false;
  // Why it is stopping: "preempt", "max_runtime", "cancel", "lost", "failed" (a gang member
  // failed), "" (not stopping).
  std::string stop_kind;
  Seconds estimated_start = kNever;
  // Pending since (submission or requeue), for the queue-wait metric; kNever when unknown (a job
  // requeued before a restart: the store keeps its place in the queue, not when it came back).
  Seconds waiting_since = kNever;
  // The active_at last written to the store by an activity report (rec.active_at may be newer:
  // activity derived from heartbeats is written at most every quarter lease, see NoteCpu).
  std::optional<int64_t> active_stored_at;
  bool active() const { return rec.state == "running" || rec.state == "stopping"; }
  // Out of the system: succeeded, failed, cancelled or preempted for good.
  bool ended() const { return rec.state != "pending" && !active(); }
};

struct NodeRt {
  store::NodeRecord rec;
  std::vector<char> used;  // per GPU index
  int64_t last_hb_ms = 0;
  int64_t hb_seq = 0;
  bool health_ok = true;
  std::string health_detail;
  std::string agent_token;  // memory only (see Registration::token)
};

struct State::Impl {
  Impl(store::Store& s, Clock& c) : store(s), clock(c) {}

  store::Store& store;
  Clock& clock;
  StateOptions opt;
  std::unique_ptr<Policy> policy;
  // Snapshot::recent_stops, for PolicyConfig::take_back_cooldown: the last kMaxTakeBackCooldown's
  // stops between budgets, each stored with its stop (Stop) and read back on a restart (Load), so
  // a restart does not lift a cool-down. The store's copy is pruned at most hourly.
  RecentStops recent_stops;
  int64_t recent_stops_pruned_at = 0;

  std::mutex mu;
  // Principals by token hash (principals are never deleted, so the cache never goes stale).
  std::map<std::string, store::PrincipalRecord> token_cache;
  // Bumped by every revocation: an Authenticate that read the store before a revocation does not
  // put the revoked token back in the cache after it.
  uint64_t token_generation = 0;

  std::vector<store::BudgetRecord> budgets;  // the store's order
  BudgetTree tree;
  std::unique_ptr<UsageLedger> delivered, owed;
  UsageHistory hist_delivered, hist_owed;

  std::vector<Node> nodes;  // indexed by NodeId
  std::vector<NodeRt> node_rt;
  std::map<std::string, size_t> node_by_name;

  std::map<int64_t, JobRt> jobs;
  // Ended jobs read back from the store (older than opt.keep_ended_s), by id, for the views that
  // take a JobRt; dropped whole when it grows past kMaxArchived.
  std::map<int64_t, JobRt> archived;
  static constexpr size_t kMaxArchived = 1024;
  int64_t evicted_at = 0;  // the last EvictEnded, seconds
  // Idempotency keys, by (user, key): the job each one made, and those whose submission is being
  // committed. A second request with one of these waits on `submitted` until the first has its
  // answer, then answers as the first did: a client whose first attempt timed out while the
  // commit was slow gets its job, not a refusal.
  using SubmitKey = std::pair<std::string, std::string>;
  std::map<SubmitKey, int64_t> by_submit_key;
  std::set<SubmitKey> submitting;
  std::condition_variable submitted;
  using QueueKey = std::pair<int64_t, int64_t>;  // (queued_since, id)
  std::set<QueueKey> pending_funded, pending_unfunded;
  std::set<int64_t> running;  // running or stopping

  // Accounting since `last`: rates per budget id, recounted when `counts_dirty`.
  int64_t last = 0;
  bool counts_dirty = true;
  std::vector<double> leaf_alloc, demand, owed_now;
  double capacity = 0;

  // Metrics.
  int64_t submissions_total = 0;
  int64_t activity_reports_total = 0;  // POST /v1/jobs/{id}/activity
  int64_t activity_cpu_total = 0;      // heartbeats whose CPU growth counted as activity
  std::map<std::string, int64_t> preemptions_total;  // by reason code
  std::deque<double> cycle_seconds;                  // the last 1024
  double cycle_seconds_sum = 0;
  int64_t cycle_count = 0;
  std::map<std::string, int64_t> cycles_by_trigger;  // MetricsInput::cycles_by_trigger
  std::map<std::string, WaitHistogram> queue_wait;   // MetricsInput::queue_wait
  // Funded starts of the last window with their queue wait, oldest first, for the budgets' waits
  // in GET /v1/usage (memory only: since the server started; at most kMaxStartWaits).
  struct StartWait {
    int64_t at = 0;
    std::string budget;  // the job's budget, by name
    std::string job_class;
    int64_t wait = 0;
  };
  static constexpr size_t kMaxStartWaits = 200000;
  std::deque<StartWait> start_waits;

  // The loop (State::Tick). A tick runs a cycle when something changed since the last one (the
  // changes sim/engine.cc counts as events: a submission, an end, a node or budget change; not
  // the cycle's own starts and stops), when a time the policy acts on has come since (a
  // protection, lease, max_runtime or drain deadline end: the simulator's wake-ups), or on the
  // waiting timer's tick (StateOptions::timer_ms).
  bool changed = true;  // true at first, so what recovery loaded is acted on
  std::optional<int64_t> last_cycle_s;
  std::optional<int64_t> next_timer_ms;    // the waiting timer's next tick, or max_gap's, if sooner
  std::optional<int64_t> last_explain_ms;  // the last cycle that said why each job waits

  int64_t NowS() const { return clock.NowMs() / 1000; }

  // state.cc
  Result<void> Load();
  Result<void> RebuildTree(std::vector<store::BudgetRecord> records, int64_t now);
  void ResolveBudget(JobRt& j) const;
  std::string KeyOf(BudgetId leaf) const;
  void Recount();
  void Account(int64_t now);
  void AddPending(JobRt& j);
  void RemovePending(JobRt& j);
  size_t AddNode(const store::NodeRecord& rec);
  // Drops from memory the jobs that ended before now - opt.keep_ended_s (at most hourly).
  void EvictEnded(int64_t now);

  // state_cycle.cc
  // Whether a protection, lease, max_runtime or drain deadline ended in (last cycle, now].
  bool WakeDue(int64_t now) const;
  // One policy cycle at `now` (seconds) and `now_ms`, its decisions applied.
  Result<void> Cycle(int64_t now, int64_t now_ms);
  // A running or stopping job as the policy sees it (the snapshot's RunningJob); the job and
  // node views read protection and drain times from it too.
  RunningJob AsRunning(const JobRt& j) const;
  Result<void> Start(const StartDecision& d, int64_t now);
  // `holds`: the stop holds the GPUs it frees for `for_job` (StopDecision::hold_for).
  Result<void> Stop(JobRt& j, const std::string& kind, const Reason& why, const std::string& words,
                    JobId for_job, bool holds, int64_t now);
  Result<void> EndAttempt(JobRt& j, int64_t now);
  // A stop held the GPUs it frees for `job` (StopDecision::hold_for): if it waits, they are its
  // own first (JobRt::freed_for).
  void HoldFreedGpusFor(int64_t job);
  Result<void> SetNodeState(size_t n, NodeState to, int64_t now);
  Result<void> MarkLost(size_t n, int64_t now);
  nlohmann::json StartOrder(const JobRt& j, size_t slice) const;
  // A heartbeat's `cpu_s` for slice `sl` of running job `j` (see the definition's rule).
  void NoteCpu(JobRt& j, SliceRt& sl, double cpu_s);

  // state_views.cc
  nlohmann::json JobView(const JobRt& j) const;
  // Job `id` if `who` may see and manage it (its user or an admin); else the refusal: 404 id,
  // 403 authorization. The caller holds mu.
  Reply<JobRt*> ManagedJob(const store::PrincipalRecord& who, int64_t id);
};

const char* CodeName(ReasonCode c);
std::string PlacementJson(const JobRt& j, const std::vector<Node>& nodes);

}  // namespace hg::server
