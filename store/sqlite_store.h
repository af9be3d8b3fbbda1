// The SQLite implementation of Store (the embedded default).
//
// Writes go through one writer thread that owns the write connection and commits everything
// queued at once (group commit): one fsync acknowledges a whole batch, which is what makes
// thousands of durable submissions per second possible on one disk. Reads use a second
// connection beside it (WAL lets readers run while the writer commits).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "store/file_lock.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace hg::store {

struct SqliteStoreOptions {
  // How long a connection waits for another process's lock before failing with SQLITE_BUSY.
  int busy_timeout_ms = 10000;
  // Hold an exclusive lock on `<path>.lock` for the store's lifetime, and refuse to open while
  // another process holds it: two schedulers deciding over one database would start the same
  // job twice. The server sets it; tools reading beside a running server do not.
  bool exclusive = false;
};

// What the writer has done so far: lets tests and metrics see the batching.
struct WriterStats {
  int64_t batches = 0;        // transactions committed (or attempted)
  int64_t items = 0;          // write calls served
  int64_t largest_batch = 0;  // most items in one transaction
};

class SqliteStore final : public Store {
 public:
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                   const SqliteStoreOptions& options = {});
  // Serves every write already queued, then stops the writer.
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

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

  WriterStats Stats() const;
  // Writes queued and not yet taken by the writer (tests use it to build a batch on purpose).
  size_t PendingWrites() const;

 private:
  struct Item;
  using WriteFn = std::function<Result<void>(sql::Db&)>;

  SqliteStore(std::optional<FileLock> lock, sql::Db write, sql::Db read);
  // Queues fn for the writer and waits until its batch committed (or fn failed).
  Result<void> Write(WriteFn fn);
  void WriterLoop();
  void RunBatch(std::vector<std::unique_ptr<Item>>& batch);

  std::optional<FileLock> lock_;  // SqliteStoreOptions::exclusive; released last
  sql::Db write_db_;              // only the writer thread touches it after construction
  std::mutex read_mu_;
  sql::Db read_db_;

  mutable std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::unique_ptr<Item>> queue_;
  bool stopping_ = false;
  WriterStats stats_;

  std::thread writer_;  // last: starts after every member above exists
};

// OpenSqliteStore with options (store.h declares the plain one).
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteStoreOptions& options);

}  // namespace hg::store
