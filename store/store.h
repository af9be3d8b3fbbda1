// Durable state of the server behind one interface: SQLite is the embedded default
// (sqlite_store.h); PostgreSQL (pg_store.h) serves sites that keep their state in a database
// server.
//
// Contract: a call that returns success has committed its change durably (it survives SIGKILL of
// the process at any later moment). Calls are thread-safe; implementations may batch concurrent
// writers into one transaction (group commit) but never acknowledge before the commit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace hg::store {

struct PrincipalRecord {
  std::string name;
  std::string role;  // "admin", "user", "agent"

  bool operator==(const PrincipalRecord&) const = default;
};

struct TokenRecord {
  std::string hash;  // hex BLAKE2b of the token; the token itself is never stored
  std::string principal;
  int64_t created_at = 0;

  bool operator==(const TokenRecord&) const = default;
};

struct BudgetRecord {
  std::string name;
  std::string parent;  // empty: top level
  double share = 1.0;
  std::optional<int32_t> limit;
  std::vector<std::string> leads;
  std::vector<std::string> members;

  bool operator==(const BudgetRecord&) const = default;
};

struct AuditRecord {
  int64_t at = 0;
  std::string who;
  std::string budget;
  std::string field;  // "share", "limit", "leads", "members", "created", "deleted"
  std::string old_value;
  std::string new_value;

  bool operator==(const AuditRecord&) const = default;
};

struct JobRecord {
  int64_t id = 0;  // assigned by the store on insert (InsertJob), > 0, never reused
  std::string name;
  std::string user;
  std::string budget;  // empty: unfunded
  int32_t gpus = 1;
  int32_t gpus_per_node = 0;
  std::string job_class;
  int64_t min_runtime_s = 0;
  std::optional<int64_t> max_runtime_s;
  int64_t lease_s = 0;  // a session's lease (JobSpec::lease); 0: none
  bool resumable = false;
  int64_t grace_s = 120;
  int32_t priority = 0;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string cwd;
  // Mutable state.
  std::string state = "pending";  // pending|running|stopping|succeeded|failed|cancelled|preempted
  std::string reason;
  std::string reason_code;
  int64_t submitted_at = 0;
  int64_t queued_since = 0;
  std::optional<int64_t> started_at;
  std::optional<int64_t> ended_at;
  int32_t attempts = 0;
  std::optional<int32_t> exit_code;
  std::optional<int32_t> exit_signal;
  std::string placement_json;  // [{"node":"n1","gpus":[0,1]}] of the current/last attempt
  // The last activity its user reported during the current run (RunningJob::active_at). A new
  // run starts without one (the server clears it with the start), so what is stored always
  // belongs to the run that is on: a lease counts from the start until the user reports.
  std::optional<int64_t> active_at;
  // While stopping for a preemption: the job the GPUs are freed for (0: none), and whether the
  // stop holds them for it (StopDecision::hold_for). Kept so that a restart during the victim's
  // grace neither lets the preemptor stop more work for the same GPUs nor lets another job take
  // them once the victim has gone.
  int64_t stop_for = 0;
  bool stop_holds = false;
  // The client's Idempotency-Key for the submission ("": none). Unique per user: a submission
  // retried with the same key finds the job the first attempt made.
  std::string submit_key;

  bool operator==(const JobRecord&) const = default;
};

struct JobEventRecord {
  int64_t job = 0;
  int64_t at = 0;
  std::string kind;  // "submitted", "started", "preempted", "requeued", "ended", "cancelled", ...
  std::string reason;

  bool operator==(const JobEventRecord&) const = default;
};

// One run (attempt) of a job on GPUs: the usage ledger is rebuilt from these after a restart.
struct RunRecord {
  int64_t job = 0;
  int32_t attempt = 0;
  std::string budget;  // empty: unfunded
  int32_t gpus = 0;
  int64_t started_at = 0;
  std::optional<int64_t> ended_at;  // null while running

  bool operator==(const RunRecord&) const = default;
};

// A stop of a funded job of one leaf budget for a funded job of another leaf (Snapshot's
// recent_stops): the take-back cool-down counts from these, so they outlive a restart. By name:
// budget ids change when the tree does.
struct RecentStopRecord {
  int64_t at = 0;
  std::string budget;      // the stopped job's, as submitted
  std::string for_budget;  // the job's it was stopped for

  bool operator==(const RecentStopRecord&) const = default;
};

struct NodeRecord {
  std::string name;
  int32_t gpus = 0;
  std::string block;
  std::map<std::string, std::string> labels;
  std::string state = "ready";  // ready|draining|drained|lost
  std::string drain_cause;      // "", "operator", "health"
  std::string drain_reason;
  std::optional<int64_t> drain_deadline_at;
  int64_t drain_since = 0;
  std::string logs_url;

  bool operator==(const NodeRecord&) const = default;
};

class Store {
 public:
  virtual ~Store() = default;

  // Principals and tokens.
  virtual Result<void> PutPrincipal(const PrincipalRecord& p) = 0;
  virtual Result<std::vector<PrincipalRecord>> Principals() = 0;
  virtual Result<void> AddToken(const TokenRecord& t) = 0;
  // The principal owning the token hash, or nullopt.
  virtual Result<std::optional<PrincipalRecord>> PrincipalByTokenHash(const std::string& hash) = 0;

  // Budgets. Each change writes its audit entries in the same transaction.
  virtual Result<std::vector<BudgetRecord>> Budgets() = 0;
  virtual Result<void> PutBudget(const BudgetRecord& b, const std::vector<AuditRecord>& audit) = 0;
  virtual Result<void> DeleteBudget(const std::string& name, const AuditRecord& audit) = 0;
  virtual Result<std::vector<AuditRecord>> Audit(const std::string& budget) = 0;  // "" = all

  // Jobs. InsertJob assigns and returns the id; it is durable when it returns.
  virtual Result<int64_t> InsertJob(const JobRecord& j) = 0;
  virtual Result<void> UpdateJob(const JobRecord& j) = 0;  // every mutable field, by id
  // Records a running session's last activity (JobRecord::active_at) and nothing else: a user
  // reports one every few minutes, and rewriting the whole row each time would buy nothing.
  virtual Result<void> SetActivity(int64_t job, int64_t at) = 0;
  virtual Result<std::vector<JobRecord>> Jobs() = 0;  // all, by id
  // The jobs still in the system (pending, running, stopping) and those that ended at or after
  // `ended_since`, by id: what a server keeps in memory (the older ones stay here, read by id).
  virtual Result<std::vector<JobRecord>> LiveJobs(int64_t ended_since) = 0;
  virtual Result<std::optional<JobRecord>> Job(int64_t id) = 0;
  // Ended jobs (not pending, running or stopping) of `user` ("": everyone's) with ids below
  // `before_id` (0: any), at most `limit` (0: all), newest first unless `oldest_first`; and how
  // many match beyond the limit. The history a server no longer keeps in memory.
  struct EndedPage {
    std::vector<JobRecord> jobs;
    int64_t total = 0;
  };
  virtual Result<EndedPage> EndedJobs(const std::string& user, int64_t before_id, int64_t limit,
                                      bool oldest_first) = 0;
  // The job `user` submitted under idempotency key `key` (JobRecord::submit_key), if any.
  virtual Result<std::optional<JobRecord>> JobBySubmitKey(const std::string& user,
                                                          const std::string& key) = 0;
  virtual Result<void> AddJobEvent(const JobEventRecord& e) = 0;
  virtual Result<std::vector<JobEventRecord>> JobEvents(int64_t job) = 0;

  // Runs (usage).
  virtual Result<void> PutRun(const RunRecord& r) = 0;  // insert or update by (job, attempt)
  virtual Result<std::vector<RunRecord>> RunsSince(int64_t t) = 0;  // ended_at null or >= t

  // Stops between budgets (RecentStopRecord). The server keeps the last kMaxTakeBackCooldown's
  // worth and prunes older ones.
  virtual Result<void> AddRecentStop(const RecentStopRecord& r) = 0;
  // Those with at >= t, by time, then in the order added.
  virtual Result<std::vector<RecentStopRecord>> RecentStopsSince(int64_t t) = 0;
  virtual Result<void> PruneRecentStops(int64_t before) = 0;  // drops those with at < before

  // Nodes.
  virtual Result<void> PutNode(const NodeRecord& n) = 0;
  virtual Result<std::vector<NodeRecord>> Nodes() = 0;

  // All tokens, by hash (store/copy.h, and the server's token lists).
  virtual Result<std::vector<TokenRecord>> Tokens() = 0;
  // Inserts the job under its own id (> 0, not yet used); later InsertJob ids come after it.
  virtual Result<void> RestoreJob(const JobRecord& j) = 0;
  // Many rows in one call, for a copy (store/copy.h): the same as RestoreJob, AddJobEvent or
  // PutRun on each in turn, which is what these do unless a store can send them in fewer round
  // trips (PostgreSQL in a transaction: multi-row INSERTs).
  virtual Result<void> RestoreJobs(const std::vector<JobRecord>& jobs) {
    for (const JobRecord& j : jobs)
      if (auto ok = RestoreJob(j); !ok) return ok;
    return {};
  }
  virtual Result<void> AddJobEvents(const std::vector<JobEventRecord>& events) {
    for (const JobEventRecord& e : events)
      if (auto ok = AddJobEvent(e); !ok) return ok;
    return {};
  }
  // Every job's events, by job id and then in the order they were added (a copy reads them all).
  virtual Result<std::vector<JobEventRecord>> AllJobEvents() = 0;
  virtual Result<void> PutRuns(const std::vector<RunRecord>& runs) {
    for (const RunRecord& r : runs)
      if (auto ok = PutRun(r); !ok) return ok;
    return {};
  }
  // Appends an audit entry as given, with no budget change beside it (a copied entry, or a
  // change that is not a budget's, such as a revoked token).
  virtual Result<void> AppendAudit(const AuditRecord& a) = 0;
  // Deletes the token with this hash; whether there was one.
  virtual Result<bool> DeleteToken(const std::string& hash) = 0;

  // Set once the store refuses every read and write for good: another server took the database
  // (PgStoreOptions::exclusive). The server asks on every tick and stops when it is set.
  virtual std::optional<Error> Fenced() { return std::nullopt; }

  // Several changes committed together (all or none), e.g. a job's state with its event and run.
  // The function runs inside the transaction (with the SQLite store's writer to itself; beside
  // other writers on PostgreSQL) and must only call the methods of the store it is given. It
  // returns the first error those give it (a failed statement ends a PostgreSQL transaction); a
  // part it may let fail and go on goes in a nested Transaction, which is undone alone.
  virtual Result<void> Transaction(const std::function<Result<void>(Store&)>& body) = 0;
};

// The reason either store gives, when opened for a server (SqliteStoreOptions::exclusive,
// PgStoreOptions::exclusive), while another server holds the database.
inline constexpr const char* kServerLockHeld = "another hourglass server is using this database";
inline bool IsServerLockHeld(const Error& e) { return e.reason.rfind(kServerLockHeld, 0) == 0; }

// Opens (creating when missing) the SQLite store at `path` and migrates its schema to the newest
// version. Errors name the file and the reason.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

// Connects to the PostgreSQL database named by `conninfo` (a libpq connection string or a
// postgresql:// URL) and migrates its schema to the newest version. Errors name the server (never
// the password) and the reason.
Result<std::unique_ptr<Store>> OpenPgStore(const std::string& conninfo);

}  // namespace hg::store
