// A small RAII wrapper over the SQLite C API. No exceptions: every failure is an hg::Result whose
// reason carries sqlite3_errmsg. Bind errors are remembered and reported by the next Step, so
// call sites stay one line per parameter.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace hg::store::sql {

class Statement;
class StatementRef;

// One connection. Move-only; closes on destruction.
class Db {
 public:
  // flags: SQLITE_OPEN_* (READWRITE, CREATE, ...); NOMUTEX is always added (each connection is
  // used by one thread at a time, guarded by its owner).
  static Result<Db> Open(const std::string& path, int flags);

  Db(Db&&) noexcept = default;
  Db& operator=(Db&&) noexcept = default;
  ~Db() = default;

  // Runs one or more statements that return no rows of interest.
  Result<void> Exec(std::string_view sql);
  Result<Statement> Prepare(std::string_view sql);
  // A statement prepared once per connection and kept: parsing a 25-column INSERT costs more than
  // running it. The borrow resets the statement when it ends, so no cached statement keeps a
  // read transaction open between calls. One borrow per SQL text at a time.
  Result<StatementRef> Cached(std::string_view sql);
  // Cached(sql) run to completion.
  Result<void> RunCached(std::string_view sql);

  int64_t LastInsertRowid() const;
  // Rows changed by the last INSERT/UPDATE/DELETE on this connection.
  int64_t Changes() const;
  // True when no transaction is open (SQLite rolls a transaction back by itself on some errors).
  bool AutoCommit() const;
  const std::string& path() const { return path_; }
  sqlite3* raw() const { return db_.get(); }

  // An Error for the connection's last failure: field = file path, reason = what + errmsg.
  Error LastError(std::string_view what) const;

 private:
  struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  Db(std::unique_ptr<sqlite3, Closer> db, std::string path)
      : db_(std::move(db)), path_(std::move(path)) {}

  std::unique_ptr<sqlite3, Closer> db_;
  std::string path_;
  // After db_: destroyed (finalized) before the connection closes.
  std::map<std::string, std::unique_ptr<Statement>, std::less<>> cache_;
};

// One prepared statement. Parameters are 1-based, columns 0-based (as in SQLite).
class Statement {
 public:
  Statement(Statement&&) noexcept = default;
  Statement& operator=(Statement&&) noexcept = default;
  ~Statement() = default;

  Statement& Bind(int idx, int64_t v);
  Statement& Bind(int idx, int32_t v) { return Bind(idx, static_cast<int64_t>(v)); }
  Statement& Bind(int idx, bool v) { return Bind(idx, static_cast<int64_t>(v ? 1 : 0)); }
  Statement& Bind(int idx, double v);
  Statement& Bind(int idx, std::string_view v);
  Statement& Bind(int idx, const std::string& v) { return Bind(idx, std::string_view(v)); }
  Statement& Bind(int idx, const char* v) { return Bind(idx, std::string_view(v)); }
  Statement& BindNull(int idx);
  template <class T>
  Statement& Bind(int idx, const std::optional<T>& v) {
    return v ? Bind(idx, *v) : BindNull(idx);
  }

  // true: a row is ready to read; false: done.
  Result<bool> Step();
  // Steps to completion (for statements that return no rows) and resets.
  Result<void> Run();
  // Ready to run again with new bindings.
  void Reset();

  bool IsNull(int col) const;
  int64_t Int64(int col) const;
  int32_t Int32(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  std::optional<int64_t> OptInt64(int col) const;
  std::optional<int32_t> OptInt32(int col) const;

 private:
  friend class Db;
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  Statement(sqlite3* db, sqlite3_stmt* s) : db_(db), stmt_(s) {}
  void NoteBind(int rc, int idx);

  sqlite3* db_;  // not owned: the connection outlives its statements
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
  int bind_error_ = SQLITE_OK;
  int bind_error_idx_ = 0;
  bool borrowed_ = false;  // a cached statement currently lent out by Db::Cached
  friend class StatementRef;
};

// A borrowed cached statement (Db::Cached): use like a pointer; resets the statement on release.
class StatementRef {
 public:
  explicit StatementRef(Statement* s) : s_(s) { s_->borrowed_ = true; }
  StatementRef(StatementRef&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  StatementRef& operator=(StatementRef&&) = delete;
  StatementRef(const StatementRef&) = delete;
  ~StatementRef() {
    if (s_ == nullptr) return;
    s_->Reset();
    s_->borrowed_ = false;
  }
  Statement& operator*() const { return *s_; }
  Statement* operator->() const { return s_; }

 private:
  Statement* s_;
};

}  // namespace hg::store::sql
