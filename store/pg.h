// A small RAII wrapper over libpq, PostgreSQL's C client. No exceptions: every failure is an
// hg::Result whose reason carries the server's message. Values travel as text (libpq's text
// format), so one parameter type covers every column type the store uses.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace hg::store::pg {

// One statement parameter: SQL NULL or a value in PostgreSQL's text form.
class Param {
 public:
  Param(std::nullopt_t) {}  // NOLINT(google-explicit-constructor): reads as NULL at call sites
  Param(int64_t v) : text_(std::to_string(v)) {}        // NOLINT(google-explicit-constructor)
  Param(int32_t v) : text_(std::to_string(v)) {}        // NOLINT(google-explicit-constructor)
  Param(bool v) : text_(v ? "true" : "false") {}        // NOLINT(google-explicit-constructor)
  Param(double v);                                      // NOLINT(google-explicit-constructor)
  Param(std::string_view v) : text_(std::string(v)) {}  // NOLINT(google-explicit-constructor)
  Param(const std::string& v) : text_(v) {}             // NOLINT(google-explicit-constructor)
  Param(const char* v) : text_(std::string(v)) {}       // NOLINT(google-explicit-constructor)
  template <class T>
  Param(const std::optional<T>& v) {  // NOLINT(google-explicit-constructor)
    if (v) text_ = Param(*v).text_;
  }

  const std::optional<std::string>& text() const { return text_; }

 private:
  std::optional<std::string> text_;
};

// The rows (or command status) of one statement. Columns and rows are 0-based.
class Rows {
 public:
  int size() const { return PQntuples(res_.get()); }
  bool IsNull(int row, int col) const { return PQgetisnull(res_.get(), row, col) != 0; }
  std::string Text(int row, int col) const;
  int64_t Int64(int row, int col) const;
  int32_t Int32(int row, int col) const { return static_cast<int32_t>(Int64(row, col)); }
  double Double(int row, int col) const;
  bool Bool(int row, int col) const;  // PostgreSQL's text form of boolean is "t" / "f"
  std::optional<int64_t> OptInt64(int row, int col) const;
  std::optional<int32_t> OptInt32(int row, int col) const;
  // Rows an INSERT/UPDATE/DELETE changed.
  int64_t Affected() const;

 private:
  friend class Conn;
  struct Clear {
    void operator()(PGresult* r) const { PQclear(r); }
  };
  explicit Rows(PGresult* r) : res_(r) {}
  std::unique_ptr<PGresult, Clear> res_;
};

// One connection. Move-only; closes on destruction. Used by one thread at a time.
class Conn {
 public:
  // conninfo: a libpq connection string, "host=... dbname=..." or "postgresql://...". Errors name
  // the server (never the password) and say why the connection failed.
  static Result<Conn> Connect(const std::string& conninfo);

  Conn(Conn&&) noexcept = default;
  Conn& operator=(Conn&&) noexcept = default;
  ~Conn() = default;

  // Runs one statement with $1.. parameters and returns its rows. The statement is prepared on
  // its first use on this connection and reused after.
  Result<Rows> Exec(std::string_view sql, std::initializer_list<Param> params = {});
  Result<Rows> Exec(std::string_view sql, const std::vector<Param>& params);
  // Exec without the rows.
  Result<void> Run(std::string_view sql, std::initializer_list<Param> params = {});
  // Runs one or more statements without parameters in one round trip (schema steps); returns
  // the last one's rows.
  Result<Rows> ExecScript(std::string_view sql);

  // False once the server has gone (restarted, network cut); Reset() tries a new session.
  bool Ok() const { return PQstatus(conn_.get()) == CONNECTION_OK; }
  Result<void> Reset();
  // True while a transaction is open (or failed and not yet rolled back).
  bool InTransaction() const;
  // True when a statement of the open transaction failed: the server refuses every other until
  // ROLLBACK (or ROLLBACK TO a savepoint).
  bool Failed() const { return PQtransactionStatus(conn_.get()) == PQTRANS_INERROR; }
  // "PostgreSQL at <host>:<port>/<db>": names the server in errors, without the password.
  const std::string& where() const { return where_; }

 private:
  struct Finish {
    void operator()(PGconn* c) const { PQfinish(c); }
  };
  Conn(std::unique_ptr<PGconn, Finish> c, std::string where)
      : conn_(std::move(c)), where_(std::move(where)) {}
  Result<Rows> Check(PGresult* r, std::string_view sql);

  std::unique_ptr<PGconn, Finish> conn_;
  std::string where_;
  // Statements prepared on this session, by SQL text: parsing and planning a 29-column INSERT
  // costs the server more than running it. A new session (Reset) starts without any.
  std::map<std::string, std::string, std::less<>> prepared_;
};

}  // namespace hg::store::pg
