#include "store/pg_schema.h"

#include "store/columns.h"

namespace hg::store {
namespace {

// Version 1 (migrations.cc says what each table is for). BIGINT for times and ids, identity
// columns for the store's own ids (a sequence never hands a value out twice, even after a
// rollback), "user" quoted because it is a reserved word here.
constexpr const char* kV1 = R"sql(
CREATE TABLE principals (
  name TEXT PRIMARY KEY,
  role TEXT NOT NULL
);
CREATE TABLE tokens (
  hash TEXT PRIMARY KEY,
  principal TEXT NOT NULL REFERENCES principals(name) ON DELETE CASCADE,
  created_at BIGINT NOT NULL
);
CREATE INDEX tokens_by_principal ON tokens(principal);

CREATE TABLE budgets (
  name TEXT PRIMARY KEY,
  parent TEXT NOT NULL DEFAULT '',
  share DOUBLE PRECISION NOT NULL,
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
CREATE TABLE audit (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at BIGINT NOT NULL,
  who TEXT NOT NULL,
  budget TEXT NOT NULL,
  field TEXT NOT NULL,
  old_value TEXT NOT NULL,
  new_value TEXT NOT NULL
);
CREATE INDEX audit_by_budget ON audit(budget, id);

CREATE TABLE jobs (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name TEXT NOT NULL,
  "user" TEXT NOT NULL,
  budget TEXT NOT NULL,
  gpus INTEGER NOT NULL,
  gpus_per_node INTEGER NOT NULL,
  job_class TEXT NOT NULL,
  min_runtime_s BIGINT NOT NULL,
  max_runtime_s BIGINT,
  resumable BOOLEAN NOT NULL,
  grace_s BIGINT NOT NULL,
  priority INTEGER NOT NULL,
  command_json TEXT NOT NULL,
  env_json TEXT NOT NULL,
  cwd TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL,
  reason_code TEXT NOT NULL,
  submitted_at BIGINT NOT NULL,
  queued_since BIGINT NOT NULL,
  started_at BIGINT,
  ended_at BIGINT,
  attempts INTEGER NOT NULL,
  exit_code INTEGER,
  exit_signal INTEGER,
  placement_json TEXT NOT NULL
);
CREATE INDEX jobs_by_state ON jobs(state);

CREATE TABLE job_events (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job BIGINT NOT NULL REFERENCES jobs(id),
  at BIGINT NOT NULL,
  kind TEXT NOT NULL,
  reason TEXT NOT NULL
);
CREATE INDEX job_events_by_job ON job_events(job, id);

CREATE TABLE runs (
  job BIGINT NOT NULL REFERENCES jobs(id),
  attempt INTEGER NOT NULL,
  budget TEXT NOT NULL,
  gpus INTEGER NOT NULL,
  started_at BIGINT NOT NULL,
  ended_at BIGINT,
  PRIMARY KEY (job, attempt)
);
CREATE INDEX runs_by_end ON runs(ended_at);
CREATE INDEX runs_open ON runs(job) WHERE ended_at IS NULL;

CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  gpus INTEGER NOT NULL,
  block TEXT NOT NULL,
  labels_json TEXT NOT NULL,
  state TEXT NOT NULL,
  drain_cause TEXT NOT NULL,
  drain_reason TEXT NOT NULL,
  drain_deadline_at BIGINT,
  drain_since BIGINT NOT NULL,
  logs_url TEXT NOT NULL
);
)sql";

// Version 2: session leases.
constexpr const char* kV2 = R"sql(
ALTER TABLE jobs ADD COLUMN lease_s BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN active_at BIGINT;
)sql";

// Version 3: stops between budgets, for the take-back cool-down.
constexpr const char* kV3 = R"sql(
CREATE TABLE recent_stops (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at BIGINT NOT NULL,
  budget TEXT NOT NULL,
  for_budget TEXT NOT NULL
);
CREATE INDEX recent_stops_by_at ON recent_stops(at);
)sql";

// Version 4: what a stopping job's GPUs are freed for.
constexpr const char* kV4 = R"sql(
ALTER TABLE jobs ADD COLUMN stop_for BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN stop_holds BOOLEAN NOT NULL DEFAULT false;
)sql";

// Version 5: a submission's idempotency key.
constexpr const char* kV5 = R"sql(
ALTER TABLE jobs ADD COLUMN submit_key TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX jobs_by_submit_key ON jobs("user", submit_key) WHERE submit_key <> '';
)sql";

// Version 6: indexes that keep a server's start and its history lists from reading every job.
constexpr const char* kV6 = R"sql(
CREATE INDEX jobs_by_end ON jobs(ended_at);
CREATE INDEX jobs_ended_by_user ON jobs("user", id)
  WHERE state NOT IN ('pending', 'running', 'stopping');
)sql";

// Any fixed number: every process that migrates takes the same lock.
constexpr int64_t kMigrationLock = 0x686f7572676c6173;  // "hourglas"

}  // namespace

const std::vector<std::string>& PgSchemaSteps() {
  static const std::vector<std::string> steps = {kV1, kV2, kV3, kV4, kV5, kV6};
  return steps;
}

Result<int> PgSchemaVersion(pg::Conn& db) {
  auto exists = db.Exec("SELECT to_regclass('schema_version') IS NOT NULL");
  HG_TRY(exists);
  if (!exists->Bool(0, 0)) return 0;
  auto v = db.Exec("SELECT version FROM schema_version");
  HG_TRY(v);
  if (v->size() != 1) return Fail(db.where(), "schema_version must hold exactly one row");
  return v->Int32(0, 0);
}

Result<int> PgMigrate(pg::Conn& db, const std::vector<std::string>& steps) {
  HG_TRY(db.Run("BEGIN"));
  auto body = [&]() -> Result<int> {
    // Held until this transaction ends: a second opener waits here and then finds the steps
    // applied.
    HG_TRY(db.Run("SELECT pg_advisory_xact_lock($1)", {kMigrationLock}));
    HG_TRY(
        db.ExecScript("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);"
                      "INSERT INTO schema_version (version) SELECT 0 "
                      "WHERE NOT EXISTS (SELECT 1 FROM schema_version);"));
    auto version = PgSchemaVersion(db);
    HG_TRY(version);
    const int have = *version;
    if (have > static_cast<int>(steps.size())) {
      return Fail(db.where(), "database schema version " + std::to_string(have) +
                                  " is newer than this hourglass knows (" +
                                  std::to_string(steps.size()) +
                                  "); run a newer hourglass, or restore a backup made by this "
                                  "version");
    }
    for (size_t i = static_cast<size_t>(have); i < steps.size(); ++i) {
      if (auto ok = db.ExecScript(steps[i]); !ok) {
        return Fail(db.where(),
                    "schema step " + std::to_string(i + 1) + " failed: " + ok.error().reason);
      }
    }
    HG_TRY(db.Run("UPDATE schema_version SET version = $1", {static_cast<int64_t>(steps.size())}));
    return static_cast<int>(steps.size());
  };
  auto r = body();
  if (!r) {
    (void)db.Run("ROLLBACK");  // the steps are transactional DDL: none of them stays
    return r;
  }
  HG_TRY(db.Run("COMMIT"));
  return r;
}

}  // namespace hg::store
