#include "store/sqlite_store.h"

#include <algorithm>
#include <cassert>
#include <exception>
#include <future>
#include <map>
#include <utility>

#include "store/columns.h"
#include "store/migrations.h"

namespace hg::store {
namespace {

using sql::Db;
using sql::Statement;

// ---- The operations, on whichever connection they are given: the writer's (inside its
// transaction) or the read connection.

Result<void> PutPrincipalOn(Db& db, const PrincipalRecord& p) {
  auto st = db.Cached(
      "INSERT INTO principals (name, role) VALUES (?1, ?2) "
      "ON CONFLICT (name) DO UPDATE SET role = excluded.role");
  HG_TRY(st);
  return (*st)->Bind(1, p.name).Bind(2, p.role).Run();
}

Result<std::vector<PrincipalRecord>> PrincipalsOn(Db& db) {
  auto st = db.Cached("SELECT name, role FROM principals ORDER BY name");
  HG_TRY(st);
  std::vector<PrincipalRecord> out;
  for (;;) {
    auto row = (*st)->Step();
    HG_TRY(row);
    if (!*row) break;
    out.push_back({(*st)->Text(0), (*st)->Text(1)});
  }
  return out;
}

Result<void> AddTokenOn(Db& db, const TokenRecord& t) {
  auto st = db.Cached("INSERT INTO tokens (hash, principal, created_at) VALUES (?1, ?2, ?3)");
  HG_TRY(st);
  return (*st)->Bind(1, t.hash).Bind(2, t.principal).Bind(3, t.created_at).Run();
}

Result<std::vector<TokenRecord>> TokensOn(Db& db) {
  auto st = db.Cached("SELECT hash, principal, created_at FROM tokens ORDER BY hash");
  HG_TRY(st);
  std::vector<TokenRecord> out;
  for (;;) {
    auto row = (*st)->Step();
    HG_TRY(row);
    if (!*row) break;
    out.push_back({(*st)->Text(0), (*st)->Text(1), (*st)->Int64(2)});
  }
  return out;
}

Result<bool> DeleteTokenOn(Db& db, const std::string& hash) {
  auto st = db.Cached("DELETE FROM tokens WHERE hash = ?1");
  HG_TRY(st);
  HG_TRY((*st)->Bind(1, hash).Run());
  return db.Changes() > 0;
}

Result<std::optional<PrincipalRecord>> PrincipalByTokenHashOn(Db& db, const std::string& hash) {
  auto st = db.Cached(
      "SELECT p.name, p.role FROM tokens t JOIN principals p ON p.name = t.principal "
      "WHERE t.hash = ?1");
  HG_TRY(st);
  (*st)->Bind(1, hash);
  auto row = (*st)->Step();
  HG_TRY(row);
  if (!*row) return std::optional<PrincipalRecord>();
  return std::optional<PrincipalRecord>(PrincipalRecord{(*st)->Text(0), (*st)->Text(1)});
}

Result<void> InsertAuditOn(Db& db, const AuditRecord& a) {
  auto st = db.Cached(
      "INSERT INTO audit (at, who, budget, field, old_value, new_value) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  HG_TRY(st);
  return (*st)
      ->Bind(1, a.at)
      .Bind(2, a.who)
      .Bind(3, a.budget)
      .Bind(4, a.field)
      .Bind(5, a.old_value)
      .Bind(6, a.new_value)
      .Run();
}

Result<void> PutNamesOn(Db& db, const char* table, const std::string& budget,
                        const std::vector<std::string>& names) {
  HG_TRY(db.Cached(std::string("DELETE FROM ") + table + " WHERE budget = ?1")
             .and_then([&](sql::StatementRef st) { return st->Bind(1, budget).Run(); }));
  auto ins = db.Cached(std::string("INSERT INTO ") + table +
                       " (budget, pos, principal) VALUES (?1, ?2, ?3)");
  HG_TRY(ins);
  for (size_t i = 0; i < names.size(); ++i) {
    HG_TRY((*ins)->Bind(1, budget).Bind(2, static_cast<int64_t>(i)).Bind(3, names[i]).Run());
  }
  return {};
}

Result<void> PutBudgetOn(Db& db, const BudgetRecord& b, const std::vector<AuditRecord>& audit) {
  // An upsert, not INSERT OR REPLACE: REPLACE deletes the row first, which would cascade.
  auto st = db.Cached(
      "INSERT INTO budgets (name, parent, share, gpu_limit) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT (name) DO UPDATE SET parent = excluded.parent, share = excluded.share, "
      "gpu_limit = excluded.gpu_limit");
  HG_TRY(st);
  HG_TRY((*st)->Bind(1, b.name).Bind(2, b.parent).Bind(3, b.share).Bind(4, b.limit).Run());
  HG_TRY(PutNamesOn(db, "budget_leads", b.name, b.leads));
  HG_TRY(PutNamesOn(db, "budget_members", b.name, b.members));
  for (const auto& a : audit) HG_TRY(InsertAuditOn(db, a));
  return {};
}

Result<void> DeleteBudgetOn(Db& db, const std::string& name, const AuditRecord& audit) {
  auto st = db.Cached("DELETE FROM budgets WHERE name = ?1");
  HG_TRY(st);
  HG_TRY((*st)->Bind(1, name).Run());
  if (db.Changes() == 0) return Fail("budget", "no budget named '" + name + "'");
  return InsertAuditOn(db, audit);
}

Result<std::vector<BudgetRecord>> BudgetsOn(Db& db) {
  std::vector<BudgetRecord> out;
  std::map<std::string, size_t> index;
  {
    auto st = db.Cached("SELECT name, parent, share, gpu_limit FROM budgets ORDER BY name");
    HG_TRY(st);
    for (;;) {
      auto row = (*st)->Step();
      HG_TRY(row);
      if (!*row) break;
      BudgetRecord b;
      b.name = (*st)->Text(0);
      b.parent = (*st)->Text(1);
      b.share = (*st)->Double(2);
      b.limit = (*st)->OptInt32(3);
      index[b.name] = out.size();
      out.push_back(std::move(b));
    }
  }
  using List = std::vector<std::string> BudgetRecord::*;
  const std::pair<const char*, List> lists[] = {{"budget_leads", &BudgetRecord::leads},
                                                {"budget_members", &BudgetRecord::members}};
  for (const auto& [table, list] : lists) {
    auto st =
        db.Cached(std::string("SELECT budget, principal FROM ") + table + " ORDER BY budget, pos");
    HG_TRY(st);
    for (;;) {
      auto row = (*st)->Step();
      HG_TRY(row);
      if (!*row) break;
      auto it = index.find((*st)->Text(0));
      assert(it != index.end());  // foreign key
      if (it == index.end()) continue;
      (out[it->second].*list).push_back((*st)->Text(1));
    }
  }
  return out;
}

Result<std::vector<AuditRecord>> AuditOn(Db& db, const std::string& budget) {
  auto st = db.Cached(
      "SELECT at, who, budget, field, old_value, new_value FROM audit "
      "WHERE ?1 = '' OR budget = ?1 ORDER BY id");
  HG_TRY(st);
  (*st)->Bind(1, budget);
  std::vector<AuditRecord> out;
  for (;;) {
    auto row = (*st)->Step();
    HG_TRY(row);
    if (!*row) break;
    out.push_back({(*st)->Int64(0), (*st)->Text(1), (*st)->Text(2), (*st)->Text(3), (*st)->Text(4),
                   (*st)->Text(5)});
  }
  return out;
}

constexpr const char* kJobColumns =
    "id, name, user, budget, gpus, gpus_per_node, job_class, min_runtime_s, max_runtime_s, "
    "resumable, grace_s, priority, command_json, env_json, cwd, state, reason, reason_code, "
    "submitted_at, queued_since, started_at, ended_at, attempts, exit_code, exit_signal, "
    "placement_json, lease_s, active_at, stop_for, stop_holds, submit_key";

Result<JobRecord> ReadJob(const Statement& st) {
  JobRecord j;
  j.id = st.Int64(0);
  j.name = st.Text(1);
  j.user = st.Text(2);
  j.budget = st.Text(3);
  j.gpus = st.Int32(4);
  j.gpus_per_node = st.Int32(5);
  j.job_class = st.Text(6);
  j.min_runtime_s = st.Int64(7);
  j.max_runtime_s = st.OptInt64(8);
  j.resumable = st.Int64(9) != 0;
  j.grace_s = st.Int64(10);
  j.priority = st.Int32(11);
  auto command = DecodeList(st.Text(12), "command");
  HG_TRY(command);
  j.command = std::move(*command);
  auto env = DecodeMap(st.Text(13), "env");
  HG_TRY(env);
  j.env = std::move(*env);
  j.cwd = st.Text(14);
  j.state = st.Text(15);
  j.reason = st.Text(16);
  j.reason_code = st.Text(17);
  j.submitted_at = st.Int64(18);
  j.queued_since = st.Int64(19);
  j.started_at = st.OptInt64(20);
  j.ended_at = st.OptInt64(21);
  j.attempts = st.Int32(22);
  j.exit_code = st.OptInt32(23);
  j.exit_signal = st.OptInt32(24);
  j.placement_json = st.Text(25);
  j.lease_s = st.Int64(26);
  j.active_at = st.OptInt64(27);
  j.stop_for = st.Int64(28);
  j.stop_holds = st.Int64(29) != 0;
  j.submit_key = st.Text(30);
  return j;
}

// The id is the store's to assign (AUTOINCREMENT) and j.id is ignored, unless keep_id (a copy
// from another store: RestoreJob), where AUTOINCREMENT's counter moves past it by itself.
Result<int64_t> InsertJobOn(Db& db, const JobRecord& j, bool keep_id = false) {
  auto command = EncodeList(j.command, "command");
  HG_TRY(command);
  auto env = EncodeMap(j.env, "env");
  HG_TRY(env);
  auto st = db.Cached(
      std::string(keep_id ? "INSERT INTO jobs (id, " : "INSERT INTO jobs (") +
      "name, user, budget, gpus, gpus_per_node, job_class, min_runtime_s, "
      "max_runtime_s, resumable, grace_s, priority, command_json, env_json, cwd, state, reason, "
      "reason_code, submitted_at, queued_since, started_at, ended_at, attempts, exit_code, "
      "exit_signal, placement_json, lease_s, active_at, stop_for, stop_holds, submit_key) VALUES " +
      (keep_id ? "(?31, " : "(") +
      "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
      "?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)");
  HG_TRY(st);
  (*st)
      ->Bind(1, j.name)
      .Bind(2, j.user)
      .Bind(3, j.budget)
      .Bind(4, j.gpus)
      .Bind(5, j.gpus_per_node)
      .Bind(6, j.job_class)
      .Bind(7, j.min_runtime_s)
      .Bind(8, j.max_runtime_s)
      .Bind(9, j.resumable)
      .Bind(10, j.grace_s)
      .Bind(11, j.priority)
      .Bind(12, *command)
      .Bind(13, *env)
      .Bind(14, j.cwd)
      .Bind(15, j.state)
      .Bind(16, j.reason)
      .Bind(17, j.reason_code)
      .Bind(18, j.submitted_at)
      .Bind(19, j.queued_since)
      .Bind(20, j.started_at)
      .Bind(21, j.ended_at)
      .Bind(22, j.attempts)
      .Bind(23, j.exit_code)
      .Bind(24, j.exit_signal)
      .Bind(25, j.placement_json)
      .Bind(26, j.lease_s)
      .Bind(27, j.active_at)
      .Bind(28, j.stop_for)
      .Bind(29, j.stop_holds)
      .Bind(30, j.submit_key);
  if (keep_id) (*st)->Bind(31, j.id);
  HG_TRY((*st)->Run());
  return db.LastInsertRowid();
}

Result<void> RestoreJobOn(Db& db, const JobRecord& j) {
  if (j.id <= 0) return Fail("id", "a restored job keeps its id, which must be > 0");
  HG_TRY(InsertJobOn(db, j, true));
  return {};
}

Result<void> UpdateJobOn(Db& db, const JobRecord& j) {
  // The mutable fields of JobRecord (from `state` on); what was submitted stays as submitted.
  auto st = db.Cached(
      "UPDATE jobs SET state = ?2, reason = ?3, reason_code = ?4, submitted_at = ?5, "
      "queued_since = ?6, started_at = ?7, ended_at = ?8, attempts = ?9, exit_code = ?10, "
      "exit_signal = ?11, placement_json = ?12, active_at = ?13, stop_for = ?14, stop_holds = ?15 "
      "WHERE id = ?1");
  HG_TRY(st);
  HG_TRY((*st)
             ->Bind(1, j.id)
             .Bind(2, j.state)
             .Bind(3, j.reason)
             .Bind(4, j.reason_code)
             .Bind(5, j.submitted_at)
             .Bind(6, j.queued_since)
             .Bind(7, j.started_at)
             .Bind(8, j.ended_at)
             .Bind(9, j.attempts)
             .Bind(10, j.exit_code)
             .Bind(11, j.exit_signal)
             .Bind(12, j.placement_json)
             .Bind(13, j.active_at)
             .Bind(14, j.stop_for)
             .Bind(15, j.stop_holds)
             .Run());
  if (db.Changes() == 0) return Fail("job", "no job with id " + std::to_string(j.id));
  return {};
}

Result<void> SetActivityOn(Db& db, int64_t job, int64_t at) {
  auto st = db.Cached("UPDATE jobs SET active_at = ?2 WHERE id = ?1");
  HG_TRY(st);
  HG_TRY((*st)->Bind(1, job).Bind(2, at).Run());
  if (db.Changes() == 0) return Fail("job", "no job with id " + std::to_string(job));
  return {};
}

// Jobs still in the system, or ended at or after ?1 (Store::LiveJobs). A union of three index
// searches (jobs_by_state, jobs_by_end): SQLite scans the whole table for the same terms joined by
// OR, and the table holds every job the site ever ran.
constexpr const char* kLiveJobs =
    "WHERE id IN (SELECT id FROM jobs WHERE state IN ('pending', 'running', 'stopping') "
    "UNION ALL SELECT id FROM jobs WHERE ended_at IS NULL "
    "UNION ALL SELECT id FROM jobs WHERE ended_at >= ?1)";

// Every row of a prepared SELECT of kJobColumns.
Result<std::vector<JobRecord>> ReadJobs(Statement& st) {
  std::vector<JobRecord> out;
  for (;;) {
    auto row = st.Step();
    HG_TRY(row);
    if (!*row) break;
    auto j = ReadJob(st);
    HG_TRY(j);
    out.push_back(std::move(*j));
  }
  return out;
}

Result<std::vector<JobRecord>> LiveJobsOn(Db& db, int64_t ended_since) {
  auto st =
      db.Cached(std::string("SELECT ") + kJobColumns + " FROM jobs " + kLiveJobs + " ORDER BY id");
  HG_TRY(st);
  (*st)->Bind(1, ended_since);
  return ReadJobs(**st);
}

// Ended jobs with ids below ?2 (0: any), of user ?1 or of all (Store::EndedJobs). Two texts, so
// that one user's are searched in jobs_ended_by_user: `?1 = '' OR user = ?1` would scan.
constexpr const char* kEndedJobsOfAll =
    " FROM jobs WHERE state NOT IN ('pending', 'running', 'stopping') AND ?1 = '' "
    "AND (?2 = 0 OR id < ?2)";
constexpr const char* kEndedJobsOfUser =
    " FROM jobs WHERE state NOT IN ('pending', 'running', 'stopping') AND user = ?1 "
    "AND (?2 = 0 OR id < ?2)";

Result<Store::EndedPage> EndedJobsOn(Db& db, const std::string& user, int64_t before_id,
                                     int64_t limit, bool oldest_first) {
  const char* ended = user.empty() ? kEndedJobsOfAll : kEndedJobsOfUser;
  Store::EndedPage page;
  {
    auto st = db.Cached(std::string("SELECT ") + kJobColumns + ended + " ORDER BY id " +
                        (oldest_first ? "ASC" : "DESC") + " LIMIT ?3");
    HG_TRY(st);
    (*st)->Bind(1, user).Bind(2, before_id).Bind(3, limit > 0 ? limit : int64_t{-1});
    auto jobs = ReadJobs(**st);
    HG_TRY(jobs);
    page.jobs = std::move(*jobs);
  }
  auto st = db.Cached(std::string("SELECT count(*)") + ended);
  HG_TRY(st);
  (*st)->Bind(1, user).Bind(2, before_id);
  auto row = (*st)->Step();
  HG_TRY(row);
  page.total = *row ? (*st)->Int64(0) : 0;
  return page;
}

Result<std::optional<JobRecord>> JobBySubmitKeyOn(Db& db, const std::string& user,
                                                  const std::string& key) {
  auto st = db.Cached(std::string("SELECT ") + kJobColumns +
                      " FROM jobs WHERE user = ?1 AND submit_key = ?2 AND submit_key <> ''");
  HG_TRY(st);
  (*st)->Bind(1, user).Bind(2, key);
  auto rows = ReadJobs(**st);
  HG_TRY(rows);
  if (rows->empty()) return std::optional<JobRecord>();
  return std::optional<JobRecord>(std::move(rows->front()));
}

Result<std::vector<JobRecord>> JobsOn(Db& db) {
  auto st = db.Cached(std::string("SELECT ") + kJobColumns + " FROM jobs ORDER BY id");
  HG_TRY(st);
  return ReadJobs(**st);
}

Result<std::optional<JobRecord>> JobOn(Db& db, int64_t id) {
  auto st = db.Cached(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?1");
  HG_TRY(st);
  (*st)->Bind(1, id);
  auto row = (*st)->Step();
  HG_TRY(row);
  if (!*row) return std::optional<JobRecord>();
  auto j = ReadJob(**st);
  HG_TRY(j);
  return std::optional<JobRecord>(std::move(*j));
}

Result<void> AddJobEventOn(Db& db, const JobEventRecord& e) {
  auto st = db.Cached("INSERT INTO job_events (job, at, kind, reason) VALUES (?1, ?2, ?3, ?4)");
  HG_TRY(st);
  return (*st)->Bind(1, e.job).Bind(2, e.at).Bind(3, e.kind).Bind(4, e.reason).Run();
}

// Every row of a prepared SELECT of job, at, kind, reason.
Result<std::vector<JobEventRecord>> ReadEvents(Statement& st) {
  std::vector<JobEventRecord> out;
  for (;;) {
    auto row = st.Step();
    HG_TRY(row);
    if (!*row) break;
    out.push_back({st.Int64(0), st.Int64(1), st.Text(2), st.Text(3)});
  }
  return out;
}

Result<std::vector<JobEventRecord>> JobEventsOn(Db& db, int64_t job) {
  auto st = db.Cached("SELECT job, at, kind, reason FROM job_events WHERE job = ?1 ORDER BY id");
  HG_TRY(st);
  (*st)->Bind(1, job);
  return ReadEvents(**st);
}

// By job, then as added (job_events_by_job).
Result<std::vector<JobEventRecord>> AllJobEventsOn(Db& db) {
  auto st = db.Cached("SELECT job, at, kind, reason FROM job_events ORDER BY job, id");
  HG_TRY(st);
  return ReadEvents(**st);
}

Result<void> PutRunOn(Db& db, const RunRecord& r) {
  auto st = db.Cached(
      "INSERT INTO runs (job, attempt, budget, gpus, started_at, ended_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (job, attempt) DO UPDATE SET "
      "budget = excluded.budget, gpus = excluded.gpus, started_at = excluded.started_at, "
      "ended_at = excluded.ended_at");
  HG_TRY(st);
  return (*st)
      ->Bind(1, r.job)
      .Bind(2, r.attempt)
      .Bind(3, r.budget)
      .Bind(4, r.gpus)
      .Bind(5, r.started_at)
      .Bind(6, r.ended_at)
      .Run();
}

Result<std::vector<RunRecord>> RunsSinceOn(Db& db, int64_t t) {
  auto st = db.Cached(
      "SELECT job, attempt, budget, gpus, started_at, ended_at FROM runs "
      "WHERE ended_at IS NULL OR ended_at >= ?1 ORDER BY job, attempt");
  HG_TRY(st);
  (*st)->Bind(1, t);
  std::vector<RunRecord> out;
  for (;;) {
    auto row = (*st)->Step();
    HG_TRY(row);
    if (!*row) break;
    out.push_back({(*st)->Int64(0), (*st)->Int32(1), (*st)->Text(2), (*st)->Int32(3),
                   (*st)->Int64(4), (*st)->OptInt64(5)});
  }
  return out;
}

Result<void> AddRecentStopOn(Db& db, const RecentStopRecord& r) {
  auto st = db.Cached("INSERT INTO recent_stops (at, budget, for_budget) VALUES (?1, ?2, ?3)");
  HG_TRY(st);
  return (*st)->Bind(1, r.at).Bind(2, r.budget).Bind(3, r.for_budget).Run();
}

Result<std::vector<RecentStopRecord>> RecentStopsSinceOn(Db& db, int64_t t) {
  auto st =
      db.Cached("SELECT at, budget, for_budget FROM recent_stops WHERE at >= ?1 ORDER BY at, id");
  HG_TRY(st);
  (*st)->Bind(1, t);
  std::vector<RecentStopRecord> out;
  for (;;) {
    auto row = (*st)->Step();
    HG_TRY(row);
    if (!*row) break;
    out.push_back({(*st)->Int64(0), (*st)->Text(1), (*st)->Text(2)});
  }
  return out;
}

Result<void> PruneRecentStopsOn(Db& db, int64_t before) {
  auto st = db.Cached("DELETE FROM recent_stops WHERE at < ?1");
  HG_TRY(st);
  return (*st)->Bind(1, before).Run();
}

Result<void> PutNodeOn(Db& db, const NodeRecord& n) {
  auto labels = EncodeMap(n.labels, "labels");
  HG_TRY(labels);
  auto st = db.Cached(
      "INSERT INTO nodes (name, gpus, block, labels_json, state, drain_cause, drain_reason, "
      "drain_deadline_at, drain_since, logs_url) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
      "ON CONFLICT (name) DO UPDATE SET gpus = excluded.gpus, block = excluded.block, "
      "labels_json = excluded.labels_json, state = excluded.state, "
      "drain_cause = excluded.drain_cause, drain_reason = excluded.drain_reason, "
      "drain_deadline_at = excluded.drain_deadline_at, drain_since = excluded.drain_since, "
      "logs_url = excluded.logs_url");
  HG_TRY(st);
  return (*st)
      ->Bind(1, n.name)
      .Bind(2, n.gpus)
      .Bind(3, n.block)
      .Bind(4, *labels)
      .Bind(5, n.state)
      .Bind(6, n.drain_cause)
      .Bind(7, n.drain_reason)
      .Bind(8, n.drain_deadline_at)
      .Bind(9, n.drain_since)
      .Bind(10, n.logs_url)
      .Run();
}

Result<std::vector<NodeRecord>> NodesOn(Db& db) {
  auto st = db.Cached(
      "SELECT name, gpus, block, labels_json, state, drain_cause, drain_reason, "
      "drain_deadline_at, drain_since, logs_url FROM nodes ORDER BY name");
  HG_TRY(st);
  std::vector<NodeRecord> out;
  for (;;) {
    auto row = (*st)->Step();
    HG_TRY(row);
    if (!*row) break;
    NodeRecord n;
    n.name = (*st)->Text(0);
    n.gpus = (*st)->Int32(1);
    n.block = (*st)->Text(2);
    auto labels = DecodeMap((*st)->Text(3), "labels");
    HG_TRY(labels);
    n.labels = std::move(*labels);
    n.state = (*st)->Text(4);
    n.drain_cause = (*st)->Text(5);
    n.drain_reason = (*st)->Text(6);
    n.drain_deadline_at = (*st)->OptInt64(7);
    n.drain_since = (*st)->Int64(8);
    n.logs_url = (*st)->Text(9);
    out.push_back(std::move(n));
  }
  return out;
}

// Runs body inside a savepoint on db: released when body succeeds, rolled back when it fails,
// so a failing body leaves nothing behind while the surrounding transaction goes on.
Result<void> InSavepoint(Db& db, const std::function<Result<void>()>& body) {
  HG_TRY(db.RunCached("SAVEPOINT item"));
  Result<void> r;
  try {
    r = body();
  } catch (const std::exception& e) {
    r = Fail("store", std::string("write failed with an exception: ") + e.what());
  }
  if (r) {
    if (auto ok = db.RunCached("RELEASE item"); !ok) r = tl::unexpected(ok.error());
  }
  if (!r && !db.AutoCommit()) {
    // ROLLBACK TO keeps the savepoint open; RELEASE closes it. When SQLite has already rolled
    // back the whole transaction (AutoCommit), there is nothing left to undo here.
    (void)db.RunCached("ROLLBACK TO item");
    (void)db.RunCached("RELEASE item");
  }
  return r;
}

// The Store handed to Transaction bodies: every call runs directly on the writer's connection,
// inside the batch's transaction (nested transactions become nested savepoints).
class TxStore final : public Store {
 public:
  explicit TxStore(Db& db) : db_(db) {}

  Result<void> PutPrincipal(const PrincipalRecord& p) override { return PutPrincipalOn(db_, p); }
  Result<std::vector<PrincipalRecord>> Principals() override { return PrincipalsOn(db_); }
  Result<void> AddToken(const TokenRecord& t) override { return AddTokenOn(db_, t); }
  Result<std::optional<PrincipalRecord>> PrincipalByTokenHash(const std::string& hash) override {
    return PrincipalByTokenHashOn(db_, hash);
  }
  Result<std::vector<BudgetRecord>> Budgets() override { return BudgetsOn(db_); }
  Result<void> PutBudget(const BudgetRecord& b, const std::vector<AuditRecord>& audit) override {
    return InSavepoint(db_, [&] { return PutBudgetOn(db_, b, audit); });
  }
  Result<void> DeleteBudget(const std::string& name, const AuditRecord& audit) override {
    return InSavepoint(db_, [&] { return DeleteBudgetOn(db_, name, audit); });
  }
  Result<std::vector<AuditRecord>> Audit(const std::string& budget) override {
    return AuditOn(db_, budget);
  }
  Result<int64_t> InsertJob(const JobRecord& j) override { return InsertJobOn(db_, j); }
  Result<void> UpdateJob(const JobRecord& j) override { return UpdateJobOn(db_, j); }
  Result<void> SetActivity(int64_t job, int64_t at) override { return SetActivityOn(db_, job, at); }
  Result<std::vector<JobRecord>> Jobs() override { return JobsOn(db_); }
  Result<std::optional<JobRecord>> Job(int64_t id) override { return JobOn(db_, id); }
  Result<std::vector<JobRecord>> LiveJobs(int64_t ended_since) override {
    return LiveJobsOn(db_, ended_since);
  }
  Result<EndedPage> EndedJobs(const std::string& user, int64_t before_id, int64_t limit,
                              bool oldest_first) override {
    return EndedJobsOn(db_, user, before_id, limit, oldest_first);
  }
  Result<std::optional<JobRecord>> JobBySubmitKey(const std::string& user,
                                                  const std::string& key) override {
    return JobBySubmitKeyOn(db_, user, key);
  }
  Result<void> AddJobEvent(const JobEventRecord& e) override { return AddJobEventOn(db_, e); }
  Result<std::vector<JobEventRecord>> JobEvents(int64_t job) override {
    return JobEventsOn(db_, job);
  }
  Result<std::vector<JobEventRecord>> AllJobEvents() override { return AllJobEventsOn(db_); }
  Result<void> PutRun(const RunRecord& r) override { return PutRunOn(db_, r); }
  Result<std::vector<RunRecord>> RunsSince(int64_t t) override { return RunsSinceOn(db_, t); }
  Result<void> AddRecentStop(const RecentStopRecord& r) override { return AddRecentStopOn(db_, r); }
  Result<std::vector<RecentStopRecord>> RecentStopsSince(int64_t t) override {
    return RecentStopsSinceOn(db_, t);
  }
  Result<void> PruneRecentStops(int64_t before) override { return PruneRecentStopsOn(db_, before); }
  Result<void> PutNode(const NodeRecord& n) override { return PutNodeOn(db_, n); }
  Result<std::vector<NodeRecord>> Nodes() override { return NodesOn(db_); }
  Result<std::vector<TokenRecord>> Tokens() override { return TokensOn(db_); }
  Result<void> RestoreJob(const JobRecord& j) override {
    return InSavepoint(db_, [&] { return RestoreJobOn(db_, j); });
  }
  Result<void> AppendAudit(const AuditRecord& a) override { return InsertAuditOn(db_, a); }
  Result<bool> DeleteToken(const std::string& hash) override { return DeleteTokenOn(db_, hash); }
  Result<void> Transaction(const std::function<Result<void>(Store&)>& body) override {
    return InSavepoint(db_, [&] { return body(*this); });
  }

 private:
  Db& db_;
};

// Settings every connection gets.
Result<void> Configure(Db& db, const SqliteStoreOptions& options) {
  // WAL: readers do not block the writer nor the writer them, and a commit is one append.
  // synchronous=FULL: in WAL mode NORMAL only syncs at checkpoints, so a commit survives a
  // process crash but may vanish on power loss or a kernel panic. FULL fsyncs the WAL at every
  // commit, so an acknowledged submission is on the disk; group commit pays that fsync once per
  // batch rather than once per write.
  HG_TRY(db.Exec("PRAGMA busy_timeout = " + std::to_string(options.busy_timeout_ms)));
  HG_TRY(db.Exec("PRAGMA foreign_keys = ON"));
  HG_TRY(db.Exec("PRAGMA synchronous = FULL"));
  auto mode = db.Cached("PRAGMA journal_mode = WAL");
  HG_TRY(mode);
  auto row = (*mode)->Step();
  HG_TRY(row);
  if (!*row || (*mode)->Text(0) != "wal") {
    return Fail(db.path(), "cannot switch the database to WAL mode (journal_mode is '" +
                               (*row ? (*mode)->Text(0) : std::string()) + "')");
  }
  return {};
}

}  // namespace

struct SqliteStore::Item {
  WriteFn fn;
  std::promise<Result<void>> done;
};

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                       const SqliteStoreOptions& options) {
  // Taken before the database is opened, so that a second server neither migrates nor reads it.
  std::optional<FileLock> lock;
  if (options.exclusive) {
    auto l = FileLock::TryLock(path + ".lock",
                               std::string(kServerLockHeld) +
                                   " (it holds this lock); stop it first, or give this one "
                                   "another --data");
    HG_TRY(l);
    lock.emplace(std::move(*l));
  }
  auto write = Db::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  HG_TRY(write);
  HG_TRY(Configure(*write, options));
  HG_TRY(Migrate(*write));
  auto read = Db::Open(path, SQLITE_OPEN_READWRITE);
  HG_TRY(read);
  HG_TRY(Configure(*read, options));
  return std::unique_ptr<SqliteStore>(
      new SqliteStore(std::move(lock), std::move(*write), std::move(*read)));
}

SqliteStore::SqliteStore(std::optional<FileLock> lock, Db write, Db read)
    : lock_(std::move(lock)),
      write_db_(std::move(write)),
      read_db_(std::move(read)),
      writer_([this] { WriterLoop(); }) {}

SqliteStore::~SqliteStore() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  writer_.join();
}

Result<void> SqliteStore::Write(WriteFn fn) {
  auto item = std::make_unique<Item>();
  item->fn = std::move(fn);
  auto done = item->done.get_future();
  {
    std::lock_guard lock(queue_mu_);
    assert(!stopping_);
    queue_.push_back(std::move(item));
  }
  queue_cv_.notify_one();
  return done.get();
}

void SqliteStore::WriterLoop() {
  std::vector<std::unique_ptr<Item>> batch;
  for (;;) {
    {
      std::unique_lock lock(queue_mu_);
      queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has been served
      // Everything queued goes into this batch: the longer the previous commit took, the more
      // writes share the next one.
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
    }
    RunBatch(batch);
    batch.clear();
  }
}

void SqliteStore::RunBatch(std::vector<std::unique_ptr<Item>>& batch) {
  Db& db = write_db_;
  // Each item's result, handed out only after the writer's statistics count the batch, so a
  // caller that has its answer also sees its write in Stats().
  std::vector<std::pair<Item*, Result<void>>> results;
  results.reserve(batch.size());
  // Items whose changes wait for the COMMIT, with the result they get if it succeeds.
  std::vector<Item*> in_txn;
  auto fail_all = [&](std::vector<Item*>& items, const Error& e) {
    for (Item* it : items) results.emplace_back(it, tl::unexpected(e));
    items.clear();
  };
  size_t next = 0;
  int64_t transactions = 0;
  while (next < batch.size()) {
    ++transactions;
    if (auto ok = db.RunCached("BEGIN IMMEDIATE"); !ok) {
      // Nothing can be written now (e.g. another process holds the lock past busy_timeout).
      for (; next < batch.size(); ++next)
        results.emplace_back(batch[next].get(), tl::unexpected(ok.error()));
      break;
    }
    bool aborted = false;
    for (; next < batch.size() && !aborted; ++next) {
      Item& item = *batch[next];
      auto r = InSavepoint(db, [&] { return item.fn(db); });
      if (r) {
        in_txn.push_back(&item);
      } else {
        results.emplace_back(&item, std::move(r));
        // Some errors (disk full, I/O) make SQLite roll back the whole transaction: the items
        // before this one are gone too, so they fail with the same error; the rest of the batch
        // goes on in a fresh transaction.
        if (db.AutoCommit()) {
          Error e{db.path(), "transaction rolled back by a later write's error", {}, 0};
          fail_all(in_txn, e);
          aborted = true;
        }
      }
    }
    if (aborted) continue;
    if (auto ok = db.RunCached("COMMIT"); !ok) {
      if (!db.AutoCommit()) (void)db.RunCached("ROLLBACK");
      fail_all(in_txn, ok.error());
      continue;
    }
    // Acknowledged only now: COMMIT has returned, so the batch is durable.
    for (Item* it : in_txn) results.emplace_back(it, Result<void>());
    in_txn.clear();
  }
  {
    std::lock_guard lock(queue_mu_);
    stats_.batches += transactions;
    stats_.items += static_cast<int64_t>(batch.size());
    stats_.largest_batch = std::max(stats_.largest_batch, static_cast<int64_t>(batch.size()));
  }
  for (auto& [item, result] : results) item->done.set_value(std::move(result));
}

WriterStats SqliteStore::Stats() const {
  std::lock_guard lock(queue_mu_);
  return stats_;
}

size_t SqliteStore::PendingWrites() const {
  std::lock_guard lock(queue_mu_);
  return queue_.size();
}

// ---- Writes: each one item of the writer's next batch.

Result<void> SqliteStore::PutPrincipal(const PrincipalRecord& p) {
  return Write([&](Db& db) { return PutPrincipalOn(db, p); });
}
Result<void> SqliteStore::AddToken(const TokenRecord& t) {
  return Write([&](Db& db) { return AddTokenOn(db, t); });
}
Result<void> SqliteStore::PutBudget(const BudgetRecord& b, const std::vector<AuditRecord>& audit) {
  return Write([&](Db& db) { return PutBudgetOn(db, b, audit); });
}
Result<void> SqliteStore::DeleteBudget(const std::string& name, const AuditRecord& audit) {
  return Write([&](Db& db) { return DeleteBudgetOn(db, name, audit); });
}
Result<void> SqliteStore::RestoreJob(const JobRecord& j) {
  return Write([&](Db& db) { return RestoreJobOn(db, j); });
}
Result<bool> SqliteStore::DeleteToken(const std::string& hash) {
  bool deleted = false;
  auto ok = Write([&](Db& db) -> Result<void> {
    auto r = DeleteTokenOn(db, hash);
    HG_TRY(r);
    deleted = *r;
    return {};
  });
  HG_TRY(ok);
  return deleted;
}
Result<void> SqliteStore::AppendAudit(const AuditRecord& a) {
  return Write([&](Db& db) { return InsertAuditOn(db, a); });
}
Result<int64_t> SqliteStore::InsertJob(const JobRecord& j) {
  int64_t id = 0;
  HG_TRY(Write([&](Db& db) -> Result<void> {
    auto r = InsertJobOn(db, j);
    if (!r) return tl::unexpected(r.error());
    id = *r;
    return {};
  }));
  return id;
}
Result<void> SqliteStore::UpdateJob(const JobRecord& j) {
  return Write([&](Db& db) { return UpdateJobOn(db, j); });
}
Result<void> SqliteStore::SetActivity(int64_t job, int64_t at) {
  return Write([&](Db& db) { return SetActivityOn(db, job, at); });
}
Result<void> SqliteStore::AddJobEvent(const JobEventRecord& e) {
  return Write([&](Db& db) { return AddJobEventOn(db, e); });
}
Result<void> SqliteStore::PutRun(const RunRecord& r) {
  return Write([&](Db& db) { return PutRunOn(db, r); });
}
Result<void> SqliteStore::AddRecentStop(const RecentStopRecord& r) {
  return Write([&](Db& db) { return AddRecentStopOn(db, r); });
}
Result<void> SqliteStore::PruneRecentStops(int64_t before) {
  return Write([&](Db& db) { return PruneRecentStopsOn(db, before); });
}
Result<void> SqliteStore::PutNode(const NodeRecord& n) {
  return Write([&](Db& db) { return PutNodeOn(db, n); });
}
Result<void> SqliteStore::Transaction(const std::function<Result<void>(Store&)>& body) {
  return Write([&](Db& db) {
    TxStore tx(db);
    return body(tx);
  });
}

// ---- Reads: the read connection, one caller at a time. Several statements read inside one
// transaction so they see one snapshot.

Result<std::vector<PrincipalRecord>> SqliteStore::Principals() {
  std::lock_guard lock(read_mu_);
  return PrincipalsOn(read_db_);
}
Result<std::optional<PrincipalRecord>> SqliteStore::PrincipalByTokenHash(const std::string& hash) {
  std::lock_guard lock(read_mu_);
  return PrincipalByTokenHashOn(read_db_, hash);
}
Result<std::vector<BudgetRecord>> SqliteStore::Budgets() {
  std::lock_guard lock(read_mu_);
  HG_TRY(read_db_.Exec("BEGIN"));
  auto r = BudgetsOn(read_db_);
  (void)read_db_.Exec("COMMIT");  // a read transaction: nothing to lose if it fails
  return r;
}
Result<std::vector<AuditRecord>> SqliteStore::Audit(const std::string& budget) {
  std::lock_guard lock(read_mu_);
  return AuditOn(read_db_, budget);
}
Result<std::vector<JobRecord>> SqliteStore::Jobs() {
  std::lock_guard lock(read_mu_);
  return JobsOn(read_db_);
}
Result<std::optional<JobRecord>> SqliteStore::Job(int64_t id) {
  std::lock_guard lock(read_mu_);
  return JobOn(read_db_, id);
}
Result<std::vector<JobRecord>> SqliteStore::LiveJobs(int64_t ended_since) {
  std::lock_guard lock(read_mu_);
  return LiveJobsOn(read_db_, ended_since);
}
Result<Store::EndedPage> SqliteStore::EndedJobs(const std::string& user, int64_t before_id,
                                                int64_t limit, bool oldest_first) {
  std::lock_guard lock(read_mu_);
  // One read transaction: the page and its count see the same jobs.
  HG_TRY(read_db_.Exec("BEGIN"));
  auto r = EndedJobsOn(read_db_, user, before_id, limit, oldest_first);
  (void)read_db_.Exec("COMMIT");
  return r;
}
Result<std::optional<JobRecord>> SqliteStore::JobBySubmitKey(const std::string& user,
                                                             const std::string& key) {
  std::lock_guard lock(read_mu_);
  return JobBySubmitKeyOn(read_db_, user, key);
}
Result<std::vector<JobEventRecord>> SqliteStore::JobEvents(int64_t job) {
  std::lock_guard lock(read_mu_);
  return JobEventsOn(read_db_, job);
}
Result<std::vector<JobEventRecord>> SqliteStore::AllJobEvents() {
  std::lock_guard lock(read_mu_);
  return AllJobEventsOn(read_db_);
}
Result<std::vector<RunRecord>> SqliteStore::RunsSince(int64_t t) {
  std::lock_guard lock(read_mu_);
  return RunsSinceOn(read_db_, t);
}
Result<std::vector<RecentStopRecord>> SqliteStore::RecentStopsSince(int64_t t) {
  std::lock_guard lock(read_mu_);
  return RecentStopsSinceOn(read_db_, t);
}
Result<std::vector<TokenRecord>> SqliteStore::Tokens() {
  std::lock_guard lock(read_mu_);
  return TokensOn(read_db_);
}
Result<std::vector<NodeRecord>> SqliteStore::Nodes() {
  std::lock_guard lock(read_mu_);
  return NodesOn(read_db_);
}

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteStoreOptions& options) {
  auto s = SqliteStore::Open(path, options);
  HG_TRY(s);
  return std::unique_ptr<Store>(std::move(*s));
}

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  return OpenSqliteStore(path, SqliteStoreOptions{});
}

}  // namespace hg::store
