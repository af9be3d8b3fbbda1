#include "store/migrations.h"

namespace hg::store {
namespace {

// Version 1: one table per record of store.h. Lists (leads, members) are child tables with their
// position so they read back in the order written; command, env, labels and placement are JSON
// text because nothing queries inside them.
constexpr const char* kV1 = R"sql(
CREATE TABLE principals (
  name TEXT PRIMARY KEY,
  role TEXT NOT NULL
);
CREATE TABLE tokens (
  hash TEXT PRIMARY KEY,
  principal TEXT NOT NULL REFERENCES principals(name) ON DELETE CASCADE,
  created_at INTEGER NOT NULL
);
CREATE INDEX tokens_by_principal ON tokens(principal);

-- parent is '' for a top-level budget; no foreign key on it, the server validates the tree.
CREATE TABLE budgets (
  name TEXT PRIMARY KEY,
  parent TEXT NOT NULL DEFAULT '',
  share REAL NOT NULL,
  gpu_limit INTEGER
);
CREATE TABLE budget_leads (
  budget TEXT NOT NULL REFERENCES budgets(name) ON DELETE CASCADE,
  pos INTEGER NOT NULL,
  principal TEXT NOT NULL,
  PRIMARY KEY (budget, pos)
);
CREATE TABLE budget_members (
  budget TEXT NOT NULL REFERENCES budgets(name) ON DELETE CASCADE,
  pos INTEGER NOT NULL,
  principal TEXT NOT NULL,
  PRIMARY KEY (budget, pos)
);
-- The audit log outlives deleted budgets: no foreign key.
CREATE TABLE audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  who TEXT NOT NULL,
  budget TEXT NOT NULL,
  field TEXT NOT NULL,
  old_value TEXT NOT NULL,
  new_value TEXT NOT NULL
);
CREATE INDEX audit_by_budget ON audit(budget, id);

-- AUTOINCREMENT: ids are never reused, even after the newest rows are gone.
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  user TEXT NOT NULL,
  budget TEXT NOT NULL,
  gpus INTEGER NOT NULL,
  gpus_per_node INTEGER NOT NULL,
  job_class TEXT NOT NULL,
  min_runtime_s INTEGER NOT NULL,
  max_runtime_s INTEGER,
  resumable INTEGER NOT NULL,
  grace_s INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  command_json TEXT NOT NULL,
  env_json TEXT NOT NULL,
  cwd TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL,
  reason_code TEXT NOT NULL,
  submitted_at INTEGER NOT NULL,
  queued_since INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  attempts INTEGER NOT NULL,
  exit_code INTEGER,
  exit_signal INTEGER,
  placement_json TEXT NOT NULL
);
CREATE INDEX jobs_by_state ON jobs(state);

CREATE TABLE job_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job INTEGER NOT NULL REFERENCES jobs(id),
  at INTEGER NOT NULL,
  kind TEXT NOT NULL,
  reason TEXT NOT NULL
);
CREATE INDEX job_events_by_job ON job_events(job, id);

CREATE TABLE runs (
  job INTEGER NOT NULL REFERENCES jobs(id),
  attempt INTEGER NOT NULL,
  budget TEXT NOT NULL,
  gpus INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  PRIMARY KEY (job, attempt)
);
-- RunsSince: ended_at IS NULL OR ended_at >= t (SQLite's OR optimisation uses it for both arms).
CREATE INDEX runs_by_end ON runs(ended_at);

CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  gpus INTEGER NOT NULL,
  block TEXT NOT NULL,
  labels_json TEXT NOT NULL,
  state TEXT NOT NULL,
  drain_cause TEXT NOT NULL,
  drain_reason TEXT NOT NULL,
  drain_deadline_at INTEGER,
  drain_since INTEGER NOT NULL,
  logs_url TEXT NOT NULL
);
)sql";

// Version 2: session leases. lease_s is part of the submission (0: none, as every older job);
// active_at is the last activity reported during the current run (NULL: none yet).
constexpr const char* kV2 = R"sql(
ALTER TABLE jobs ADD COLUMN lease_s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN active_at INTEGER;
)sql";

// Version 3: stops between budgets, for the take-back cool-down (RecentStopRecord). Read by
// time on each start, pruned by time.
constexpr const char* kV3 = R"sql(
CREATE TABLE recent_stops (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  budget TEXT NOT NULL,
  for_budget TEXT NOT NULL
);
CREATE INDEX recent_stops_by_at ON recent_stops(at);
)sql";

// Version 4: what a stopping job's GPUs are freed for (JobRecord::stop_for, stop_holds), read
// back on a restart. 0 for every older row: none, as a stop made before version 4 is treated.
constexpr const char* kV4 = R"sql(
ALTER TABLE jobs ADD COLUMN stop_for INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN stop_holds INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 5: a submission's idempotency key (JobRecord::submit_key), unique per user among the
// jobs that have one. '' for every older row: none.
constexpr const char* kV5 = R"sql(
ALTER TABLE jobs ADD COLUMN submit_key TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX jobs_by_submit_key ON jobs(user, submit_key) WHERE submit_key <> '';
)sql";

// Version 6: indexes that keep a server's start and its history lists from reading every job it
// ever ran (Store::LiveJobs: jobs in the system or ended lately; Store::EndedJobs of one user).
constexpr const char* kV6 = R"sql(
CREATE INDEX jobs_by_end ON jobs(ended_at);
CREATE INDEX jobs_ended_by_user ON jobs(user, id) WHERE state NOT IN ('pending', 'running', 'stopping');
)sql";

Result<void> EnsureVersionTable(sql::Db& db) {
  // One row; created with version 0 so every later step is a plain UPDATE.
  return db.Exec(
      "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);"
      "INSERT INTO schema_version (version) SELECT 0 "
      "WHERE NOT EXISTS (SELECT 1 FROM schema_version);");
}

Error TooNew(const sql::Db& db, int have, size_t known) {
  return Error{db.path(),
               "database schema version " + std::to_string(have) +
                   " is newer than this hourglass binary supports (" + std::to_string(known) +
                   "); run a newer hourglass, or restore a backup made by this version",
               {},
               0};
}

}  // namespace

const std::vector<std::string>& SchemaSteps() {
  static const std::vector<std::string> steps = {kV1, kV2, kV3, kV4, kV5, kV6};
  return steps;
}

Result<int> SchemaVersion(sql::Db& db) {
  auto exists = db.Prepare(
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'");
  if (!exists) return tl::unexpected(exists.error());
  auto row = exists->Step();
  if (!row) return tl::unexpected(row.error());
  if (exists->Int64(0) == 0) return 0;
  auto q = db.Prepare("SELECT version FROM schema_version");
  if (!q) return tl::unexpected(q.error());
  auto r = q->Step();
  if (!r) return tl::unexpected(r.error());
  return *r ? q->Int32(0) : 0;
}

Result<int> Migrate(sql::Db& db, const std::vector<std::string>& steps) {
  // Creating the version table is itself idempotent; two processes racing here are serialised
  // by SQLite's write lock (busy_timeout on the connection).
  if (auto ok = EnsureVersionTable(db); !ok) return tl::unexpected(ok.error());
  for (;;) {
    // BEGIN IMMEDIATE takes the write lock before reading the version, so a concurrent opener
    // cannot apply the same step twice.
    if (auto ok = db.Exec("BEGIN IMMEDIATE"); !ok) return tl::unexpected(ok.error());
    auto version = SchemaVersion(db);
    auto rollback = [&](Error e) -> Result<int> {
      if (!db.AutoCommit()) (void)db.Exec("ROLLBACK");
      return tl::unexpected(std::move(e));
    };
    if (!version) return rollback(version.error());
    const int v = *version;
    if (v > static_cast<int>(steps.size())) return rollback(TooNew(db, v, steps.size()));
    if (v == static_cast<int>(steps.size())) {
      if (auto ok = db.Exec("COMMIT"); !ok) return rollback(ok.error());
      return v;
    }
    if (auto ok = db.Exec(steps[static_cast<size_t>(v)]); !ok) {
      Error e = ok.error();
      e.reason = "schema migration to version " + std::to_string(v + 1) + ": " + e.reason;
      return rollback(std::move(e));
    }
    auto set = db.Prepare("UPDATE schema_version SET version = ?");
    if (!set) return rollback(set.error());
    if (auto ok = set->Bind(1, static_cast<int64_t>(v) + 1).Run(); !ok) return rollback(ok.error());
    if (auto ok = db.Exec("COMMIT"); !ok) return rollback(ok.error());
  }
}

}  // namespace hg::store
