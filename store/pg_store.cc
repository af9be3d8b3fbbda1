#include "store/pg_store.h"

#include <algorithm>
#include <cassert>
#include <exception>
#include <map>
#include <set>
#include <utility>

#include "store/columns.h"
#include "store/pg_schema.h"

namespace hg::store {
namespace {

using pg::Conn;
using pg::Rows;

// ---- The operations, on the connection they are given (inside the caller's transaction for
// writes). The SQL mirrors sqlite_store.cc's in PostgreSQL's dialect.

Result<void> PutPrincipalOn(Conn& db, const PrincipalRecord& p) {
  return db.Run(
      "INSERT INTO principals (name, role) VALUES ($1, $2) "
      "ON CONFLICT (name) DO UPDATE SET role = excluded.role",
      {p.name, p.role});
}

Result<std::vector<PrincipalRecord>> PrincipalsOn(Conn& db) {
  auto rows = db.Exec("SELECT name, role FROM principals ORDER BY name");
  HG_TRY(rows);
  std::vector<PrincipalRecord> out;
  for (int r = 0; r < rows->size(); ++r) out.push_back({rows->Text(r, 0), rows->Text(r, 1)});
  return out;
}

Result<void> AddTokenOn(Conn& db, const TokenRecord& t) {
  return db.Run("INSERT INTO tokens (hash, principal, created_at) VALUES ($1, $2, $3)",
                {t.hash, t.principal, t.created_at});
}

Result<std::vector<TokenRecord>> TokensOn(Conn& db) {
  auto rows = db.Exec("SELECT hash, principal, created_at FROM tokens ORDER BY hash");
  HG_TRY(rows);
  std::vector<TokenRecord> out;
  for (int r = 0; r < rows->size(); ++r)
    out.push_back({rows->Text(r, 0), rows->Text(r, 1), rows->Int64(r, 2)});
  return out;
}

Result<bool> DeleteTokenOn(Conn& db, const std::string& hash) {
  auto rows = db.Exec("DELETE FROM tokens WHERE hash = $1", {hash});
  HG_TRY(rows);
  return rows->Affected() > 0;
}

Result<std::optional<PrincipalRecord>> PrincipalByTokenHashOn(Conn& db, const std::string& hash) {
  auto rows = db.Exec(
      "SELECT p.name, p.role FROM tokens t JOIN principals p ON p.name = t.principal "
      "WHERE t.hash = $1",
      {hash});
  HG_TRY(rows);
  if (rows->size() == 0) return std::optional<PrincipalRecord>();
  return std::optional<PrincipalRecord>(PrincipalRecord{rows->Text(0, 0), rows->Text(0, 1)});
}

Result<void> InsertAuditOn(Conn& db, const AuditRecord& a) {
  return db.Run(
      "INSERT INTO audit (at, who, budget, field, old_value, new_value) "
      "VALUES ($1, $2, $3, $4, $5, $6)",
      {a.at, a.who, a.budget, a.field, a.old_value, a.new_value});
}

Result<void> PutNamesOn(Conn& db, const char* table, const std::string& budget,
                        const std::vector<std::string>& names) {
  HG_TRY(db.Run(std::string("DELETE FROM ") + table + " WHERE budget = $1", {budget}));
  const std::string insert =
      std::string("INSERT INTO ") + table + " (budget, pos, principal) VALUES ($1, $2, $3)";
  for (size_t i = 0; i < names.size(); ++i) {
    HG_TRY(db.Run(insert, {budget, static_cast<int64_t>(i), names[i]}));
  }
  return {};
}

Result<void> PutBudgetOn(Conn& db, const BudgetRecord& b, const std::vector<AuditRecord>& audit) {
  HG_TRY(
      db.Run("INSERT INTO budgets (name, parent, share, gpu_limit) VALUES ($1, $2, $3, $4) "
             "ON CONFLICT (name) DO UPDATE SET parent = excluded.parent, share = excluded.share, "
             "gpu_limit = excluded.gpu_limit",
             {b.name, b.parent, b.share, b.limit}));
  HG_TRY(PutNamesOn(db, "budget_leads", b.name, b.leads));
  HG_TRY(PutNamesOn(db, "budget_members", b.name, b.members));
  for (const auto& a : audit) HG_TRY(InsertAuditOn(db, a));
  return {};
}

Result<void> DeleteBudgetOn(Conn& db, const std::string& name, const AuditRecord& audit) {
  auto rows = db.Exec("DELETE FROM budgets WHERE name = $1", {name});
  HG_TRY(rows);
  if (rows->Affected() == 0) return Fail("budget", "no budget named '" + name + "'");
  return InsertAuditOn(db, audit);
}

Result<std::vector<BudgetRecord>> BudgetsOn(Conn& db) {
  std::vector<BudgetRecord> out;
  std::map<std::string, size_t> index;
  auto rows = db.Exec("SELECT name, parent, share, gpu_limit FROM budgets ORDER BY name");
  HG_TRY(rows);
  for (int r = 0; r < rows->size(); ++r) {
    BudgetRecord b;
    b.name = rows->Text(r, 0);
    b.parent = rows->Text(r, 1);
    b.share = rows->Double(r, 2);
    b.limit = rows->OptInt32(r, 3);
    index[b.name] = out.size();
    out.push_back(std::move(b));
  }
  using List = std::vector<std::string> BudgetRecord::*;
  const std::pair<const char*, List> lists[] = {{"budget_leads", &BudgetRecord::leads},
                                                {"budget_members", &BudgetRecord::members}};
  for (const auto& [table, list] : lists) {
    auto names =
        db.Exec(std::string("SELECT budget, principal FROM ") + table + " ORDER BY budget, pos");
    HG_TRY(names);
    for (int r = 0; r < names->size(); ++r) {
      auto it = index.find(names->Text(r, 0));
      assert(it != index.end());  // foreign key
      if (it == index.end()) continue;
      (out[it->second].*list).push_back(names->Text(r, 1));
    }
  }
  return out;
}

Result<std::vector<AuditRecord>> AuditOn(Conn& db, const std::string& budget) {
  auto rows = db.Exec(
      "SELECT at, who, budget, field, old_value, new_value FROM audit "
      "WHERE $1 = '' OR budget = $1 ORDER BY id",
      {budget});
  HG_TRY(rows);
  std::vector<AuditRecord> out;
  for (int r = 0; r < rows->size(); ++r) {
    out.push_back({rows->Int64(r, 0), rows->Text(r, 1), rows->Text(r, 2), rows->Text(r, 3),
                   rows->Text(r, 4), rows->Text(r, 5)});
  }
  return out;
}

constexpr const char* kJobColumns =
    "id, name, \"user\", budget, gpus, gpus_per_node, job_class, min_runtime_s, max_runtime_s, "
    "resumable, grace_s, priority, command_json, env_json, cwd, state, reason, reason_code, "
    "submitted_at, queued_since, started_at, ended_at, attempts, exit_code, exit_signal, "
    "placement_json, lease_s, active_at, stop_for, stop_holds, submit_key";

Result<JobRecord> ReadJob(const Rows& rows, int r) {
  JobRecord j;
  j.id = rows.Int64(r, 0);
  j.name = rows.Text(r, 1);
  j.user = rows.Text(r, 2);
  j.budget = rows.Text(r, 3);
  j.gpus = rows.Int32(r, 4);
  j.gpus_per_node = rows.Int32(r, 5);
  j.job_class = rows.Text(r, 6);
  j.min_runtime_s = rows.Int64(r, 7);
  j.max_runtime_s = rows.OptInt64(r, 8);
  j.resumable = rows.Bool(r, 9);
  j.grace_s = rows.Int64(r, 10);
  j.priority = rows.Int32(r, 11);
  auto command = DecodeList(rows.Text(r, 12), "command");
  HG_TRY(command);
  j.command = std::move(*command);
  auto env = DecodeMap(rows.Text(r, 13), "env");
  HG_TRY(env);
  j.env = std::move(*env);
  j.cwd = rows.Text(r, 14);
  j.state = rows.Text(r, 15);
  j.reason = rows.Text(r, 16);
  j.reason_code = rows.Text(r, 17);
  j.submitted_at = rows.Int64(r, 18);
  j.queued_since = rows.Int64(r, 19);
  j.started_at = rows.OptInt64(r, 20);
  j.ended_at = rows.OptInt64(r, 21);
  j.attempts = rows.Int32(r, 22);
  j.exit_code = rows.OptInt32(r, 23);
  j.exit_signal = rows.OptInt32(r, 24);
  j.placement_json = rows.Text(r, 25);
  j.lease_s = rows.Int64(r, 26);
  j.active_at = rows.OptInt64(r, 27);
  j.stop_for = rows.Int64(r, 28);
  j.stop_holds = rows.Bool(r, 29);
  j.submit_key = rows.Text(r, 30);
  return j;
}

// The columns a job is inserted with, but its id, in the order of JobParams.
constexpr const char* kJobInsertColumns =
    "name, \"user\", budget, gpus, gpus_per_node, job_class, min_runtime_s, max_runtime_s, "
    "resumable, grace_s, priority, command_json, env_json, cwd, state, reason, reason_code, "
    "submitted_at, queued_since, started_at, ended_at, attempts, exit_code, exit_signal, "
    "placement_json, lease_s, active_at, stop_for, stop_holds, submit_key";
constexpr size_t kJobInsertParams = 30;

// Appends the values of kJobInsertColumns for `j` to `params`.
Result<void> JobParams(const JobRecord& j, std::vector<pg::Param>& params) {
  auto command = EncodeList(j.command, "command");
  HG_TRY(command);
  auto env = EncodeMap(j.env, "env");
  HG_TRY(env);
  const size_t before = params.size();
  params.insert(params.end(), {j.name,
                               j.user,
                               j.budget,
                               j.gpus,
                               j.gpus_per_node,
                               j.job_class,
                               j.min_runtime_s,
                               j.max_runtime_s,
                               j.resumable,
                               j.grace_s,
                               j.priority,
                               *command,
                               *env,
                               j.cwd,
                               j.state,
                               j.reason,
                               j.reason_code,
                               j.submitted_at,
                               j.queued_since,
                               j.started_at,
                               j.ended_at,
                               j.attempts,
                               j.exit_code,
                               j.exit_signal,
                               j.placement_json,
                               j.lease_s,
                               j.active_at,
                               j.stop_for,
                               j.stop_holds,
                               j.submit_key});
  assert(params.size() - before == kJobInsertParams);
  (void)before;
  return {};
}

// "($first, ..., $(first + n - 1))".
std::string Placeholders(size_t first, size_t n) {
  std::string out = "(";
  for (size_t i = 0; i < n; ++i) out += (i ? ", $" : "$") + std::to_string(first + i);
  return out + ")";
}

// The id is the store's to assign (an identity column) and j.id is ignored, unless keep_id (a
// copy from another store: RestoreJob).
Result<int64_t> InsertJobOn(Conn& db, const JobRecord& j, bool keep_id = false) {
  std::vector<pg::Param> params;
  if (keep_id) params.emplace_back(j.id);
  HG_TRY(JobParams(j, params));
  auto rows = db.Exec(std::string(keep_id ? "INSERT INTO jobs (id, " : "INSERT INTO jobs (") +
                          kJobInsertColumns + ") " +
                          (keep_id ? "OVERRIDING SYSTEM VALUE VALUES " : "VALUES ") +
                          Placeholders(1, params.size()) + " RETURNING id",
                      params);
  HG_TRY(rows);
  return rows->Int64(0, 0);
}

// Runs `head` VALUES (row), (row), ... `tail` over `rows` rows, `width` parameters each from
// `params`, in statements of at most 500 rows (PostgreSQL takes at most 65,535 parameters in
// one): a copy's rows in a few round trips instead of one each.
Result<void> InsertRows(Conn& db, const std::string& head, const std::string& tail, size_t width,
                        const std::vector<pg::Param>& params) {
  assert(width > 0 && params.size() % width == 0);
  constexpr size_t kRowsPerStatement = 500;
  const size_t rows = params.size() / width;
  for (size_t first = 0; first < rows; first += kRowsPerStatement) {
    const size_t n = std::min(kRowsPerStatement, rows - first);
    std::string sql = head + " VALUES ";
    for (size_t r = 0; r < n; ++r) sql += (r ? ", " : "") + Placeholders(r * width + 1, width);
    sql += tail;
    const auto from = params.begin() + static_cast<std::ptrdiff_t>(first * width);
    auto ok =
        db.Exec(sql, std::vector<pg::Param>(from, from + static_cast<std::ptrdiff_t>(n * width)));
    HG_TRY(ok);
  }
  return {};
}

Result<void> RestoreJobOn(Conn& db, const JobRecord& j) {
  if (j.id <= 0) return Fail("id", "a restored job keeps its id, which must be > 0");
  HG_TRY(InsertJobOn(db, j, true));
  // An identity column's sequence does not move for a given id: move it past, so that the next
  // InsertJob neither collides with a restored id nor reuses one.
  return db.Run("SELECT setval('jobs_id_seq', GREATEST($1::bigint, last_value)) FROM jobs_id_seq",
                {j.id});
}

Result<void> RestoreJobsOn(Conn& db, const std::vector<JobRecord>& jobs) {
  std::vector<pg::Param> params;
  params.reserve(jobs.size() * (kJobInsertParams + 1));
  int64_t last = 0;
  for (const JobRecord& j : jobs) {
    if (j.id <= 0) return Fail("id", "a restored job keeps its id, which must be > 0");
    params.emplace_back(j.id);
    HG_TRY(JobParams(j, params));
    last = std::max(last, j.id);
  }
  HG_TRY(InsertRows(
      db, std::string("INSERT INTO jobs (id, ") + kJobInsertColumns + ") OVERRIDING SYSTEM VALUE",
      "", kJobInsertParams + 1, params));
  if (jobs.empty()) return {};
  // As RestoreJobOn: later ids come after every restored one.
  return db.Run("SELECT setval('jobs_id_seq', GREATEST($1::bigint, last_value)) FROM jobs_id_seq",
                {last});
}

Result<void> UpdateJobOn(Conn& db, const JobRecord& j) {
  // The mutable fields of JobRecord (from `state` on); what was submitted stays as submitted.
  auto rows = db.Exec(
      "UPDATE jobs SET state = $2, reason = $3, reason_code = $4, submitted_at = $5, "
      "queued_since = $6, started_at = $7, ended_at = $8, attempts = $9, exit_code = $10, "
      "exit_signal = $11, placement_json = $12, active_at = $13, stop_for = $14, stop_holds = $15 "
      "WHERE id = $1",
      {j.id, j.state, j.reason, j.reason_code, j.submitted_at, j.queued_since, j.started_at,
       j.ended_at, j.attempts, j.exit_code, j.exit_signal, j.placement_json, j.active_at,
       j.stop_for, j.stop_holds});
  HG_TRY(rows);
  if (rows->Affected() == 0) return Fail("job", "no job with id " + std::to_string(j.id));
  return {};
}

Result<void> SetActivityOn(Conn& db, int64_t job, int64_t at) {
  auto rows = db.Exec("UPDATE jobs SET active_at = $2 WHERE id = $1", {job, at});
  HG_TRY(rows);
  if (rows->Affected() == 0) return Fail("job", "no job with id " + std::to_string(job));
  return {};
}

// Every row of a SELECT of kJobColumns.
Result<std::vector<JobRecord>> ReadJobs(const Rows& rows) {
  std::vector<JobRecord> out;
  out.reserve(static_cast<size_t>(rows.size()));
  for (int r = 0; r < rows.size(); ++r) {
    auto j = ReadJob(rows, r);
    HG_TRY(j);
    out.push_back(std::move(*j));
  }
  return out;
}

Result<std::vector<JobRecord>> JobsOn(Conn& db) {
  auto rows = db.Exec(std::string("SELECT ") + kJobColumns + " FROM jobs ORDER BY id");
  HG_TRY(rows);
  return ReadJobs(*rows);
}

// Jobs still in the system, or ended at or after $1 (Store::LiveJobs).
constexpr const char* kLiveJobs =
    "WHERE state IN ('pending', 'running', 'stopping') OR ended_at IS NULL OR ended_at >= $1";

Result<std::vector<JobRecord>> LiveJobsOn(Conn& db, int64_t ended_since) {
  auto rows =
      db.Exec(std::string("SELECT ") + kJobColumns + " FROM jobs " + kLiveJobs + " ORDER BY id",
              {ended_since});
  HG_TRY(rows);
  return ReadJobs(*rows);
}

// Ended jobs of $1 ("": all) with ids below $2 (0: any): Store::EndedJobs.
constexpr const char* kEndedJobs =
    " FROM jobs WHERE state NOT IN ('pending', 'running', 'stopping')"
    " AND ($1 = '' OR \"user\" = $1) AND ($2 = 0 OR id < $2)";

Result<Store::EndedPage> EndedJobsOn(Conn& db, const std::string& user, int64_t before_id,
                                     int64_t limit, bool oldest_first) {
  Store::EndedPage page;
  // LIMIT NULL is no limit.
  auto rows = db.Exec(std::string("SELECT ") + kJobColumns + kEndedJobs + " ORDER BY id " +
                          (oldest_first ? "ASC" : "DESC") + " LIMIT $3",
                      std::vector<pg::Param>{
                          user, before_id, limit > 0 ? pg::Param(limit) : pg::Param(std::nullopt)});
  HG_TRY(rows);
  auto jobs = ReadJobs(*rows);
  HG_TRY(jobs);
  page.jobs = std::move(*jobs);
  auto count = db.Exec(std::string("SELECT count(*)") + kEndedJobs, {user, before_id});
  HG_TRY(count);
  page.total = count->Int64(0, 0);
  return page;
}

Result<std::optional<JobRecord>> JobBySubmitKeyOn(Conn& db, const std::string& user,
                                                  const std::string& key) {
  auto rows = db.Exec(std::string("SELECT ") + kJobColumns +
                          " FROM jobs WHERE \"user\" = $1 AND submit_key = $2 AND submit_key <> ''",
                      {user, key});
  HG_TRY(rows);
  if (rows->size() == 0) return std::optional<JobRecord>();
  auto j = ReadJob(*rows, 0);
  HG_TRY(j);
  return std::optional<JobRecord>(std::move(*j));
}

Result<std::optional<JobRecord>> JobOn(Conn& db, int64_t id) {
  auto rows = db.Exec(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = $1", {id});
  HG_TRY(rows);
  if (rows->size() == 0) return std::optional<JobRecord>();
  auto j = ReadJob(*rows, 0);
  HG_TRY(j);
  return std::optional<JobRecord>(std::move(*j));
}

Result<void> AddJobEventOn(Conn& db, const JobEventRecord& e) {
  return db.Run("INSERT INTO job_events (job, at, kind, reason) VALUES ($1, $2, $3, $4)",
                {e.job, e.at, e.kind, e.reason});
}

// Their ids follow the order given (a multi-row VALUES inserts its rows in order), which is the
// order JobEvents reads them back in.
Result<void> AddJobEventsOn(Conn& db, const std::vector<JobEventRecord>& events) {
  std::vector<pg::Param> params;
  params.reserve(events.size() * 4);
  for (const JobEventRecord& e : events)
    params.insert(params.end(), {e.job, e.at, e.kind, e.reason});
  return InsertRows(db, "INSERT INTO job_events (job, at, kind, reason)", "", 4, params);
}

Result<std::vector<JobEventRecord>> JobEventsOn(Conn& db, int64_t job) {
  auto rows =
      db.Exec("SELECT job, at, kind, reason FROM job_events WHERE job = $1 ORDER BY id", {job});
  HG_TRY(rows);
  std::vector<JobEventRecord> out;
  for (int r = 0; r < rows->size(); ++r) {
    out.push_back({rows->Int64(r, 0), rows->Int64(r, 1), rows->Text(r, 2), rows->Text(r, 3)});
  }
  return out;
}

// One query for every job's events, where the Store's default asks once a job.
Result<std::vector<JobEventRecord>> AllJobEventsOn(Conn& db) {
  auto rows = db.Exec("SELECT job, at, kind, reason FROM job_events ORDER BY job, id");
  HG_TRY(rows);
  std::vector<JobEventRecord> out;
  out.reserve(static_cast<size_t>(rows->size()));
  for (int r = 0; r < rows->size(); ++r) {
    out.push_back({rows->Int64(r, 0), rows->Int64(r, 1), rows->Text(r, 2), rows->Text(r, 3)});
  }
  return out;
}

constexpr const char* kPutRunHead =
    "INSERT INTO runs (job, attempt, budget, gpus, started_at, ended_at)";
constexpr const char* kPutRunTail =
    " ON CONFLICT (job, attempt) DO UPDATE SET budget = excluded.budget, gpus = excluded.gpus, "
    "started_at = excluded.started_at, ended_at = excluded.ended_at";

Result<void> PutRunOn(Conn& db, const RunRecord& r) {
  return db.Run(std::string(kPutRunHead) + " VALUES ($1, $2, $3, $4, $5, $6)" + kPutRunTail,
                {r.job, r.attempt, r.budget, r.gpus, r.started_at, r.ended_at});
}

// One statement may not update a run twice (ON CONFLICT), so a run given twice, which PutRun
// would insert and then update, goes in a statement of its own.
Result<void> PutRunsOn(Conn& db, const std::vector<RunRecord>& runs) {
  std::vector<pg::Param> params;
  std::set<std::pair<int64_t, int32_t>> seen;
  auto flush = [&]() -> Result<void> {
    HG_TRY(InsertRows(db, kPutRunHead, kPutRunTail, 6, params));
    params.clear();
    seen.clear();
    return {};
  };
  for (const RunRecord& r : runs) {
    if (!seen.insert({r.job, r.attempt}).second) {
      HG_TRY(flush());
      seen.insert({r.job, r.attempt});
    }
    params.insert(params.end(), {r.job, r.attempt, r.budget, r.gpus, r.started_at, r.ended_at});
  }
  return flush();
}

Result<std::vector<RunRecord>> RunsSinceOn(Conn& db, int64_t t) {
  auto rows = db.Exec(
      "SELECT job, attempt, budget, gpus, started_at, ended_at FROM runs "
      "WHERE ended_at IS NULL OR ended_at >= $1 ORDER BY job, attempt",
      {t});
  HG_TRY(rows);
  std::vector<RunRecord> out;
  for (int r = 0; r < rows->size(); ++r) {
    out.push_back({rows->Int64(r, 0), rows->Int32(r, 1), rows->Text(r, 2), rows->Int32(r, 3),
                   rows->Int64(r, 4), rows->OptInt64(r, 5)});
  }
  return out;
}

Result<void> AddRecentStopOn(Conn& db, const RecentStopRecord& r) {
  return db.Run("INSERT INTO recent_stops (at, budget, for_budget) VALUES ($1, $2, $3)",
                {r.at, r.budget, r.for_budget});
}

Result<std::vector<RecentStopRecord>> RecentStopsSinceOn(Conn& db, int64_t t) {
  auto rows = db.Exec(
      "SELECT at, budget, for_budget FROM recent_stops WHERE at >= $1 ORDER BY at, id", {t});
  HG_TRY(rows);
  std::vector<RecentStopRecord> out;
  for (int r = 0; r < rows->size(); ++r) {
    out.push_back({rows->Int64(r, 0), rows->Text(r, 1), rows->Text(r, 2)});
  }
  return out;
}

Result<void> PruneRecentStopsOn(Conn& db, int64_t before) {
  return db.Run("DELETE FROM recent_stops WHERE at < $1", {before});
}

Result<void> PutNodeOn(Conn& db, const NodeRecord& n) {
  auto labels = EncodeMap(n.labels, "labels");
  HG_TRY(labels);
  return db.Run(
      "INSERT INTO nodes (name, gpus, block, labels_json, state, drain_cause, drain_reason, "
      "drain_deadline_at, drain_since, logs_url) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
      "ON CONFLICT (name) DO UPDATE SET gpus = excluded.gpus, block = excluded.block, "
      "labels_json = excluded.labels_json, state = excluded.state, "
      "drain_cause = excluded.drain_cause, drain_reason = excluded.drain_reason, "
      "drain_deadline_at = excluded.drain_deadline_at, drain_since = excluded.drain_since, "
      "logs_url = excluded.logs_url",
      {n.name, n.gpus, n.block, *labels, n.state, n.drain_cause, n.drain_reason,
       n.drain_deadline_at, n.drain_since, n.logs_url});
}

Result<std::vector<NodeRecord>> NodesOn(Conn& db) {
  auto rows = db.Exec(
      "SELECT name, gpus, block, labels_json, state, drain_cause, drain_reason, "
      "drain_deadline_at, drain_since, logs_url FROM nodes ORDER BY name");
  HG_TRY(rows);
  std::vector<NodeRecord> out;
  for (int r = 0; r < rows->size(); ++r) {
    NodeRecord n;
    n.name = rows->Text(r, 0);
    n.gpus = rows->Int32(r, 1);
    n.block = rows->Text(r, 2);
    auto labels = DecodeMap(rows->Text(r, 3), "labels");
    HG_TRY(labels);
    n.labels = std::move(*labels);
    n.state = rows->Text(r, 4);
    n.drain_cause = rows->Text(r, 5);
    n.drain_reason = rows->Text(r, 6);
    n.drain_deadline_at = rows->OptInt64(r, 7);
    n.drain_since = rows->Int64(r, 8);
    n.logs_url = rows->Text(r, 9);
    out.push_back(std::move(n));
  }
  return out;
}

// Runs body inside a savepoint: released when body succeeds, rolled back to when it fails, so a
// failing body leaves nothing behind and the surrounding transaction can go on (PostgreSQL
// refuses every statement of a transaction after an error until it is rolled back to a
// savepoint).
Result<void> InSavepoint(Conn& db, const std::function<Result<void>()>& body) {
  HG_TRY(db.Run("SAVEPOINT item"));
  Result<void> r;
  try {
    r = body();
  } catch (const std::exception& e) {
    r = Fail("store", std::string("write failed with an exception: ") + e.what());
  }
  if (r) {
    if (auto ok = db.Run("RELEASE SAVEPOINT item"); !ok) r = tl::unexpected(ok.error());
  }
  if (!r) {
    (void)db.Run("ROLLBACK TO SAVEPOINT item");
    (void)db.Run("RELEASE SAVEPOINT item");
  }
  return r;
}

// The Store handed to Transaction bodies: every call runs on the transaction's connection. A
// failed statement aborts PostgreSQL's transaction, so a body must return the first error it gets
// (store.h); one that does not is caught before COMMIT (Write).
class TxStore final : public Store {
 public:
  explicit TxStore(Conn& db) : db_(db) {}

  Result<void> PutPrincipal(const PrincipalRecord& p) override { return PutPrincipalOn(db_, p); }
  Result<std::vector<PrincipalRecord>> Principals() override { return PrincipalsOn(db_); }
  Result<void> AddToken(const TokenRecord& t) override { return AddTokenOn(db_, t); }
  Result<std::optional<PrincipalRecord>> PrincipalByTokenHash(const std::string& hash) override {
    return PrincipalByTokenHashOn(db_, hash);
  }
  Result<std::vector<BudgetRecord>> Budgets() override { return BudgetsOn(db_); }
  Result<void> PutBudget(const BudgetRecord& b, const std::vector<AuditRecord>& audit) override {
    return PutBudgetOn(db_, b, audit);
  }
  Result<void> DeleteBudget(const std::string& name, const AuditRecord& audit) override {
    return DeleteBudgetOn(db_, name, audit);
  }
  Result<std::vector<AuditRecord>> Audit(const std::string& budget) override {
    return AuditOn(db_, budget);
  }
  Result<int64_t> InsertJob(const JobRecord& j) override { return InsertJobOn(db_, j); }
  Result<void> RestoreJobs(const std::vector<JobRecord>& jobs) override {
    return RestoreJobsOn(db_, jobs);
  }
  Result<void> AddJobEvents(const std::vector<JobEventRecord>& events) override {
    return AddJobEventsOn(db_, events);
  }
  Result<void> PutRuns(const std::vector<RunRecord>& runs) override { return PutRunsOn(db_, runs); }
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
  Result<void> RestoreJob(const JobRecord& j) override { return RestoreJobOn(db_, j); }
  Result<void> AppendAudit(const AuditRecord& a) override { return InsertAuditOn(db_, a); }
  Result<bool> DeleteToken(const std::string& hash) override { return DeleteTokenOn(db_, hash); }
  // The one place a body may go on after a failure: a nested transaction is a savepoint.
  Result<void> Transaction(const std::function<Result<void>(Store&)>& body) override {
    return InSavepoint(db_, [&] { return body(*this); });
  }

 private:
  Conn& db_;
};

// One server per database (PgStoreOptions::exclusive) takes two parts. A session-level advisory
// lock, held by a connection of its own for the server's life, keeps a second server from
// starting beside a running one. But the lock goes with its session (an operator may end it, a
// network cut may), and then a second server can start while the first still runs. So taking
// the lock also bumps a counter, the epoch, and every write transaction of the server first
// reads the epoch FOR SHARE: a server whose epoch was bumped by another stops writing, and a
// bump waits for the transactions in flight, so no write of the old server lands after the new
// one has taken over.
constexpr int64_t kServerLock = 0x686773657276;  // "hgserv"

Result<bool> TryServerLock(Conn& db) {
  auto got = db.Exec("SELECT pg_try_advisory_lock($1)", {kServerLock});
  HG_TRY(got);
  return got->Bool(0, 0);
}

// The epoch's table is bookkeeping of the servers, not state: it is created by the first server
// that needs it (under the lock) rather than by a schema step.
Result<int64_t> BumpEpoch(Conn& db) {
  HG_TRY(db.ExecScript(
      "CREATE TABLE IF NOT EXISTS server_epoch (epoch BIGINT NOT NULL);"
      "INSERT INTO server_epoch SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM server_epoch);"));
  // FOR UPDATE, which waits for every FOR KEY SHARE of the writes in flight (a plain UPDATE of
  // a table without a key would not).
  auto e = db.ExecScript(
      "BEGIN; SELECT epoch FROM server_epoch FOR UPDATE; "
      "UPDATE server_epoch SET epoch = epoch + 1 RETURNING epoch");
  if (!e) {
    (void)db.Run("ROLLBACK");
    return tl::unexpected(e.error());
  }
  const int64_t epoch = e->Int64(0, 0);
  HG_TRY(db.Run("COMMIT"));
  return epoch;
}

// Settings every connection gets.
Result<void> Configure(Conn& db) {
  // Store's contract: an acknowledged write survives a crash. A site's postgresql.conf may turn
  // synchronous_commit off for speed; this store's sessions keep it on whatever the default.
  HG_TRY(db.Run("SET synchronous_commit = on"));
  HG_TRY(db.Run("SET client_encoding = 'UTF8'"));
  // NOTICEs (such as "already exists, skipping" from the migration) would go to stderr.
  HG_TRY(db.Run("SET client_min_messages = warning"));
  // Refuse to wait forever behind a lock some other client holds.
  return db.Run("SET lock_timeout = '10s'");
}

}  // namespace

// A connection borrowed from the pool; given back when the lease ends.
class PgStore::Lease {
 public:
  Lease(PgStore* store, std::unique_ptr<Conn> c) : store_(store), conn_(std::move(c)) {}
  Lease(Lease&& o) noexcept = default;
  Lease& operator=(Lease&&) = delete;
  ~Lease() {
    if (conn_) store_->Release(std::move(conn_));
  }
  Conn& operator*() { return *conn_; }

 private:
  PgStore* store_;
  std::unique_ptr<Conn> conn_;
};

Result<std::unique_ptr<PgStore>> PgStore::Open(const std::string& conninfo,
                                               const PgStoreOptions& options) {
  if (options.connections < 1) return Fail("connections", "must be at least 1");
  std::unique_ptr<Conn> lock_conn;
  if (options.exclusive) {
    auto c = Conn::Connect(conninfo);
    HG_TRY(c);
    auto got = TryServerLock(*c);
    HG_TRY(got);
    if (!*got) {
      return Fail(c->where(), std::string(kServerLockHeld) +
                                  " (it holds the server lock); stop it first, point this one "
                                  "at another database, or start it with --standby");
    }
    HG_TRY(Configure(*c));
    lock_conn = std::make_unique<Conn>(std::move(*c));
  }
  std::vector<std::unique_ptr<Conn>> conns;
  for (int i = 0; i < options.connections; ++i) {
    auto c = Conn::Connect(conninfo);
    HG_TRY(c);
    HG_TRY(Configure(*c));
    if (i == 0) HG_TRY(PgMigrate(*c));
    conns.push_back(std::make_unique<Conn>(std::move(*c)));
  }
  int64_t epoch = 0;
  if (lock_conn) {
    auto e = BumpEpoch(*lock_conn);
    HG_TRY(e);
    epoch = *e;
  }
  return std::unique_ptr<PgStore>(new PgStore(std::move(conns), std::move(lock_conn), epoch));
}

PgStore::PgStore(std::vector<std::unique_ptr<Conn>> conns, std::unique_ptr<Conn> lock_conn,
                 int64_t epoch)
    : where_(conns.front()->where()),
      free_(std::move(conns)),
      lock_conn_(std::move(lock_conn)),
      epoch_(epoch) {}

tl::unexpected<Error> PgStore::LockLostError() const {
  return Fail(where_,
              "another hourglass server took this database while the connection was down; this "
              "server no longer reads or writes it (restart it once the other has stopped)");
}

std::optional<Error> PgStore::Fenced() {
  if (epoch_ != 0 && !lock_lost_) {
    // An idle server writes nothing that would find out: ask. A failed read (the database is
    // away) says nothing either way.
    auto lease = Acquire();
    if (lease) {
      auto epoch = (**lease).Exec("SELECT epoch FROM server_epoch");
      if (epoch && (epoch->size() != 1 || epoch->Int64(0, 0) != epoch_)) lock_lost_ = true;
    }
  }
  if (!lock_lost_) return std::nullopt;
  return LockLostError().value();
}

Result<void> PgStore::CheckLock() {
  std::lock_guard lock(lock_mu_);
  if (!lock_conn_) return {};
  if (lock_lost_) return LockLostError();
  if (!lock_conn_->Run("SELECT 1")) {
    // The lock's session is gone (the database restarted): take the lock again on a new one.
    // Whether another server came meanwhile, the epoch says (Write); here it only matters that
    // no second server can start from now on.
    HG_TRY(lock_conn_->Reset());
    HG_TRY(Configure(*lock_conn_));
    auto got = TryServerLock(*lock_conn_);
    HG_TRY(got);
    if (!*got) {
      lock_lost_ = true;
      return LockLostError();
    }
  }
  return {};
}

PgStore::~PgStore() = default;

Result<PgStore::Lease> PgStore::Acquire() {
  std::unique_ptr<Conn> c;
  {
    std::unique_lock lock(mu_);
    free_cv_.wait(lock, [&] { return !free_.empty(); });
    c = std::move(free_.back());
    free_.pop_back();
  }
  Lease lease(this, std::move(c));
  if (lock_lost_) return LockLostError();
  // The server may have restarted since this connection was last used: a new session, with the
  // settings every session gets. Safe here, as a free connection holds no transaction. The
  // server lock's session may have ended with it, so it is checked (and taken again) first.
  if (!(*lease).Ok()) {
    HG_TRY(CheckLock());
    HG_TRY((*lease).Reset());
    HG_TRY(Configure(*lease));
  }
  return lease;
}

void PgStore::Release(std::unique_ptr<Conn> c) {
  // Whatever path gave it back (a failed BEGIN's script, an error between statements), the next
  // user must find it outside any transaction.
  if (c->InTransaction()) (void)c->Run("ROLLBACK");
  {
    std::lock_guard lock(mu_);
    free_.push_back(std::move(c));
  }
  free_cv_.notify_one();
}

Result<void> PgStore::Write(const std::function<Result<void>(Conn&)>& fn) {
  auto lease = Acquire();
  HG_TRY(lease);
  Conn& db = **lease;
  if (epoch_ == 0) {
    HG_TRY(db.Run("BEGIN"));
  } else {
    // The fence (see kServerLock), in the BEGIN's round trip.
    auto epoch = db.ExecScript("BEGIN; SELECT epoch FROM server_epoch FOR KEY SHARE");
    HG_TRY(epoch);
    if (epoch->size() != 1 || epoch->Int64(0, 0) != epoch_) {
      (void)db.Run("ROLLBACK");
      lock_lost_ = true;
      return LockLostError();
    }
  }
  Result<void> r;
  try {
    r = fn(db);
  } catch (const std::exception& e) {
    r = Fail("store", std::string("write failed with an exception: ") + e.what());
  }
  if (!r) {
    (void)db.Run("ROLLBACK");
    return r;
  }
  if (db.Failed()) {
    // COMMIT would answer with a silent ROLLBACK; the body must not be told it succeeded.
    (void)db.Run("ROLLBACK");
    return Fail("store",
                "a write in the transaction failed and the transaction body went on "
                "as if it had not; nothing was written");
  }
  // Acknowledged only when COMMIT has returned: the change is in PostgreSQL's WAL on disk.
  auto ok = db.Run("COMMIT");
  if (!ok && db.InTransaction()) (void)db.Run("ROLLBACK");
  return ok;
}

template <class T>
Result<T> PgStore::Read(const std::function<Result<T>(Conn&)>& fn) {
  auto lease = Acquire();
  HG_TRY(lease);
  return fn(**lease);
}

// ---- Writes: each one transaction.

Result<void> PgStore::PutPrincipal(const PrincipalRecord& p) {
  return Write([&](Conn& db) { return PutPrincipalOn(db, p); });
}
Result<void> PgStore::AddToken(const TokenRecord& t) {
  return Write([&](Conn& db) { return AddTokenOn(db, t); });
}
Result<void> PgStore::PutBudget(const BudgetRecord& b, const std::vector<AuditRecord>& audit) {
  return Write([&](Conn& db) { return PutBudgetOn(db, b, audit); });
}
Result<void> PgStore::DeleteBudget(const std::string& name, const AuditRecord& audit) {
  return Write([&](Conn& db) { return DeleteBudgetOn(db, name, audit); });
}
Result<int64_t> PgStore::InsertJob(const JobRecord& j) {
  int64_t id = 0;
  auto ok = Write([&](Conn& db) -> Result<void> {
    auto r = InsertJobOn(db, j);
    HG_TRY(r);
    id = *r;
    return {};
  });
  HG_TRY(ok);
  return id;
}
Result<void> PgStore::UpdateJob(const JobRecord& j) {
  return Write([&](Conn& db) { return UpdateJobOn(db, j); });
}
Result<void> PgStore::SetActivity(int64_t job, int64_t at) {
  return Write([&](Conn& db) { return SetActivityOn(db, job, at); });
}
Result<void> PgStore::AddJobEvent(const JobEventRecord& e) {
  return Write([&](Conn& db) { return AddJobEventOn(db, e); });
}
Result<void> PgStore::PutRun(const RunRecord& r) {
  return Write([&](Conn& db) { return PutRunOn(db, r); });
}
Result<void> PgStore::AddRecentStop(const RecentStopRecord& r) {
  return Write([&](Conn& db) { return AddRecentStopOn(db, r); });
}
Result<void> PgStore::PruneRecentStops(int64_t before) {
  return Write([&](Conn& db) { return PruneRecentStopsOn(db, before); });
}
Result<void> PgStore::PutNode(const NodeRecord& n) {
  return Write([&](Conn& db) { return PutNodeOn(db, n); });
}
Result<void> PgStore::Transaction(const std::function<Result<void>(Store&)>& body) {
  return Write([&](Conn& db) {
    TxStore tx(db);
    return body(tx);
  });
}

// ---- Reads: one statement each, except the budgets, read in one snapshot.

Result<std::vector<PrincipalRecord>> PgStore::Principals() {
  return Read<std::vector<PrincipalRecord>>(PrincipalsOn);
}
Result<std::optional<PrincipalRecord>> PgStore::PrincipalByTokenHash(const std::string& hash) {
  return Read<std::optional<PrincipalRecord>>(
      [&](Conn& db) { return PrincipalByTokenHashOn(db, hash); });
}
Result<std::vector<BudgetRecord>> PgStore::Budgets() {
  return Read<std::vector<BudgetRecord>>([](Conn& db) -> Result<std::vector<BudgetRecord>> {
    HG_TRY(db.Run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    auto r = BudgetsOn(db);
    (void)db.Run(r ? "COMMIT" : "ROLLBACK");  // a read transaction: nothing to lose
    return r;
  });
}
Result<std::vector<AuditRecord>> PgStore::Audit(const std::string& budget) {
  return Read<std::vector<AuditRecord>>([&](Conn& db) { return AuditOn(db, budget); });
}
Result<std::vector<JobRecord>> PgStore::Jobs() { return Read<std::vector<JobRecord>>(JobsOn); }
Result<std::optional<JobRecord>> PgStore::Job(int64_t id) {
  return Read<std::optional<JobRecord>>([&](Conn& db) { return JobOn(db, id); });
}
Result<std::vector<JobRecord>> PgStore::LiveJobs(int64_t ended_since) {
  return Read<std::vector<JobRecord>>([&](Conn& db) { return LiveJobsOn(db, ended_since); });
}
Result<Store::EndedPage> PgStore::EndedJobs(const std::string& user, int64_t before_id,
                                            int64_t limit, bool oldest_first) {
  return Read<EndedPage>(
      [&](Conn& db) { return EndedJobsOn(db, user, before_id, limit, oldest_first); });
}
Result<std::optional<JobRecord>> PgStore::JobBySubmitKey(const std::string& user,
                                                         const std::string& key) {
  return Read<std::optional<JobRecord>>([&](Conn& db) { return JobBySubmitKeyOn(db, user, key); });
}
Result<std::vector<JobEventRecord>> PgStore::JobEvents(int64_t job) {
  return Read<std::vector<JobEventRecord>>([&](Conn& db) { return JobEventsOn(db, job); });
}
Result<std::vector<JobEventRecord>> PgStore::AllJobEvents() {
  return Read<std::vector<JobEventRecord>>([&](Conn& db) { return AllJobEventsOn(db); });
}
Result<std::vector<RunRecord>> PgStore::RunsSince(int64_t t) {
  return Read<std::vector<RunRecord>>([&](Conn& db) { return RunsSinceOn(db, t); });
}
Result<std::vector<RecentStopRecord>> PgStore::RecentStopsSince(int64_t t) {
  return Read<std::vector<RecentStopRecord>>([&](Conn& db) { return RecentStopsSinceOn(db, t); });
}
Result<std::vector<NodeRecord>> PgStore::Nodes() { return Read<std::vector<NodeRecord>>(NodesOn); }
Result<std::vector<TokenRecord>> PgStore::Tokens() {
  return Read<std::vector<TokenRecord>>(TokensOn);
}
Result<void> PgStore::RestoreJob(const JobRecord& j) {
  return Write([&](Conn& db) { return RestoreJobOn(db, j); });
}
Result<bool> PgStore::DeleteToken(const std::string& hash) {
  bool deleted = false;
  auto ok = Write([&](Conn& db) -> Result<void> {
    auto r = DeleteTokenOn(db, hash);
    HG_TRY(r);
    deleted = *r;
    return {};
  });
  HG_TRY(ok);
  return deleted;
}
Result<void> PgStore::AppendAudit(const AuditRecord& a) {
  return Write([&](Conn& db) { return InsertAuditOn(db, a); });
}

Result<std::unique_ptr<Store>> OpenPgStore(const std::string& conninfo,
                                           const PgStoreOptions& options) {
  auto s = PgStore::Open(conninfo, options);
  HG_TRY(s);
  return std::unique_ptr<Store>(std::move(*s));
}

Result<std::unique_ptr<Store>> OpenPgStore(const std::string& conninfo) {
  return OpenPgStore(conninfo, PgStoreOptions{});
}

}  // namespace hg::store
