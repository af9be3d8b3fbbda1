#include "store/sqlite.h"

#include <cassert>
#include <utility>

namespace hg::store::sql {
namespace {

// The file a connection works on, for error messages ("" for in-memory databases).
std::string FileOf(sqlite3* db) {
  const char* f = db ? sqlite3_db_filename(db, "main") : nullptr;
  return f ? std::string(f) : std::string();
}

Error ErrorOf(sqlite3* db, std::string_view what) {
  std::string reason(what);
  reason += ": ";
  reason += db ? sqlite3_errmsg(db) : "out of memory";
  return Error{FileOf(db), std::move(reason), {}, 0};
}

}  // namespace

Result<Db> Db::Open(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<sqlite3, Closer> db(raw);  // sqlite3_open_v2 may return a handle on failure too
  if (rc != SQLITE_OK) {
    return Fail(path, std::string("cannot open database: ") +
                          (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  // Extended result codes tell SQLITE_CONSTRAINT_PRIMARYKEY from _FOREIGNKEY etc. in messages.
  sqlite3_extended_result_codes(raw, 1);
  return Db(std::move(db), path);
}

Result<void> Db::Exec(std::string_view sql) {
  const std::string text(sql);
  if (sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    // Name the statement, but not a whole multi-line script.
    return tl::unexpected(LastError(text.size() > 60 ? text.substr(0, 60) + "..." : text));
  }
  return {};
}

Result<Statement> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc =
      sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(raw);
    return tl::unexpected(LastError(std::string("prepare ") + std::string(sql)));
  }
  return Statement(db_.get(), raw);
}

Result<StatementRef> Db::Cached(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    auto st = Prepare(sql);
    if (!st) return tl::unexpected(st.error());
    it = cache_.emplace(std::string(sql), std::make_unique<Statement>(std::move(*st))).first;
  }
  // Two live borrows of one statement would interleave their bindings and rows.
  assert(!it->second->borrowed_);
  return StatementRef(it->second.get());
}

Result<void> Db::RunCached(std::string_view sql) {
  auto st = Cached(sql);
  if (!st) return tl::unexpected(st.error());
  return (*st)->Run();
}

int64_t Db::LastInsertRowid() const { return sqlite3_last_insert_rowid(db_.get()); }

int64_t Db::Changes() const { return sqlite3_changes64(db_.get()); }

bool Db::AutoCommit() const { return sqlite3_get_autocommit(db_.get()) != 0; }

Error Db::LastError(std::string_view what) const {
  Error e = ErrorOf(db_.get(), what);
  if (e.field.empty()) e.field = path_;
  return e;
}

void Statement::NoteBind(int rc, int idx) {
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) {
    bind_error_ = rc;
    bind_error_idx_ = idx;
  }
}

Statement& Statement::Bind(int idx, int64_t v) {
  NoteBind(sqlite3_bind_int64(stmt_.get(), idx, v), idx);
  return *this;
}

Statement& Statement::Bind(int idx, double v) {
  NoteBind(sqlite3_bind_double(stmt_.get(), idx, v), idx);
  return *this;
}

Statement& Statement::Bind(int idx, std::string_view v) {
  // SQLITE_TRANSIENT: SQLite copies the bytes, so the caller's string may die before Step.
  NoteBind(sqlite3_bind_text64(stmt_.get(), idx, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
           idx);
  return *this;
}

Statement& Statement::BindNull(int idx) {
  NoteBind(sqlite3_bind_null(stmt_.get(), idx), idx);
  return *this;
}

Result<bool> Statement::Step() {
  if (bind_error_ != SQLITE_OK) {
    const std::string why = std::string("bind parameter ") + std::to_string(bind_error_idx_) +
                            ": " + sqlite3_errstr(bind_error_);
    return tl::unexpected(Error{FileOf(db_), why, {}, 0});
  }
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const char* sql = sqlite3_sql(stmt_.get());
  Error e = ErrorOf(db_, sql ? sql : "step");
  // A failed statement must be reset before it can run again; the error stays in e.
  sqlite3_reset(stmt_.get());
  return tl::unexpected(std::move(e));
}

Result<void> Statement::Run() {
  for (;;) {
    auto row = Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
  }
  Reset();
  return {};
}

void Statement::Reset() {
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
  bind_error_ = SQLITE_OK;
  bind_error_idx_ = 0;
}

bool Statement::IsNull(int col) const {
  return sqlite3_column_type(stmt_.get(), col) == SQLITE_NULL;
}

int64_t Statement::Int64(int col) const { return sqlite3_column_int64(stmt_.get(), col); }

int32_t Statement::Int32(int col) const {
  const int64_t v = Int64(col);
  // The schema only stores values the records' int32 fields produced.
  assert(v >= INT32_MIN && v <= INT32_MAX);
  return static_cast<int32_t>(v);
}

double Statement::Double(int col) const { return sqlite3_column_double(stmt_.get(), col); }

std::string Statement::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_.get(), col));
  const int n = sqlite3_column_bytes(stmt_.get(), col);  // after _text, as SQLite documents
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

std::optional<int64_t> Statement::OptInt64(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int64(col);
}

std::optional<int32_t> Statement::OptInt32(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int32(col);
}

}  // namespace hg::store::sql
