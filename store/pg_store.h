// The PostgreSQL implementation of Store, for sites that keep their state in a database server
// (backed up, replicated and monitored by the tools they already run) rather than in a file
// beside the scheduler.
//
// A small pool of connections serves reads and writes alike. Each write is its own transaction
// on one connection; concurrent writers commit on their own connections, and PostgreSQL flushes
// their commits to its WAL together, which does for this store what the SQLite store's writer
// thread does there (group commit).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/pg.h"
#include "store/store.h"

namespace hg::store {

struct PgStoreOptions {
  // Connections kept open. The server's HTTP workers share them; a caller waits for a free one.
  int connections = 4;
  // Hold PostgreSQL's session lock for Hourglass servers on one more connection for the store's
  // lifetime, and refuse to open when another process holds it: two schedulers deciding over
  // one database would start the same job twice. The server sets it; tools reading beside a
  // running server do not.
  bool exclusive = false;
};

class PgStore final : public Store {
 public:
  // conninfo: a libpq connection string or URL. Connects, then migrates the schema.
  static Result<std::unique_ptr<PgStore>> Open(const std::string& conninfo,
                                               const PgStoreOptions& options = {});
  ~PgStore() override;
  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;

  Result<void> PutPrincipal(const PrincipalRecord& p) override;
  Result<std::vector<PrincipalRecord>> Principals() override;
  Result<void> AddToken(const TokenRecord& t) override;
  Result<std::optional<PrincipalRecord>> PrincipalByTokenHash(const std::string& hash) override;

  Result<std::vector<BudgetRecord>> Budgets() override;
  Result<void> PutBudget(const BudgetRecord& b, const std::vector<AuditRecord>& audit) override;
  Result<void> DeleteBudget(const std::string& name, const AuditRecord& audit) override;
  Result<std::vector<AuditRecord>> Audit(const std::string& budget) override;

  Result<int64_t> InsertJob(const JobRecord& j) override;
  Result<void> UpdateJob(const JobRecord& j) override;
  Result<void> SetActivity(int64_t job, int64_t at) override;
  Result<std::vector<JobRecord>> Jobs() override;
  Result<std::vector<JobRecord>> LiveJobs(int64_t ended_since) override;
  Result<EndedPage> EndedJobs(const std::string& user, int64_t before_id, int64_t limit,
                              bool oldest_first) override;
  Result<std::optional<JobRecord>> JobBySubmitKey(const std::string& user,
                                                  const std::string& key) override;
  Result<std::optional<JobRecord>> Job(int64_t id) override;
  Result<void> AddJobEvent(const JobEventRecord& e) override;
  Result<std::vector<JobEventRecord>> JobEvents(int64_t job) override;
  Result<std::vector<JobEventRecord>> AllJobEvents() override;

  Result<void> PutRun(const RunRecord& r) override;
  Result<std::vector<RunRecord>> RunsSince(int64_t t) override;

  Result<void> AddRecentStop(const RecentStopRecord& r) override;
  Result<std::vector<RecentStopRecord>> RecentStopsSince(int64_t t) override;
  Result<void> PruneRecentStops(int64_t before) override;

  Result<void> PutNode(const NodeRecord& n) override;
  Result<std::vector<NodeRecord>> Nodes() override;

  Result<std::vector<TokenRecord>> Tokens() override;
  Result<void> RestoreJob(const JobRecord& j) override;
  Result<void> AppendAudit(const AuditRecord& a) override;
  Result<bool> DeleteToken(const std::string& hash) override;

  Result<void> Transaction(const std::function<Result<void>(Store&)>& body) override;
  // Reads the epoch (one query) when this store has not yet seen another server take over.
  std::optional<Error> Fenced() override;

 private:
  class Lease;
  PgStore(std::vector<std::unique_ptr<pg::Conn>> conns, std::unique_ptr<pg::Conn> lock_conn,
          int64_t epoch);
  // A connection of the pool for the caller alone, usable (reconnected when the server went).
  Result<Lease> Acquire();
  void Release(std::unique_ptr<pg::Conn> c);
  // Runs fn in a transaction of its own; commits when it succeeds, rolls back when it fails.
  Result<void> Write(const std::function<Result<void>(pg::Conn&)>& fn);
  template <class T>
  Result<T> Read(const std::function<Result<T>(pg::Conn&)>& fn);

  // Takes the server lock (PgStoreOptions::exclusive) again on a new session when the old one
  // went with a database restart. Refuses for good when another process took it meanwhile.
  Result<void> CheckLock();
  tl::unexpected<Error> LockLostError() const;

  const std::string where_;  // the server, for errors
  std::mutex mu_;
  std::condition_variable free_cv_;
  std::vector<std::unique_ptr<pg::Conn>> free_;

  std::mutex lock_mu_;
  std::unique_ptr<pg::Conn> lock_conn_;  // null unless exclusive
  std::atomic<bool> lock_lost_{false};
  const int64_t epoch_;  // this server's (pg_store.cc, kServerLock); 0: not exclusive
};

// OpenPgStore with options (store.h declares the plain one).
Result<std::unique_ptr<Store>> OpenPgStore(const std::string& conninfo,
                                           const PgStoreOptions& options);

}  // namespace hg::store
