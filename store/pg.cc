#include "store/pg.h"

#include <cassert>
#include <charconv>
#include <cstring>

namespace hg::store::pg {
namespace {

// libpq's messages end in a newline (and sometimes carry a second line of detail).
std::string Trim(const char* msg) {
  std::string s = msg ? msg : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (auto& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

std::string Where(const PGconn* c) {
  const char* host = PQhost(c);
  const char* port = PQport(c);
  const char* db = PQdb(c);
  return std::string("PostgreSQL at ") + (host && *host ? host : "localhost") + ":" +
         (port && *port ? port : "5432") + "/" + (db ? db : "");
}

}  // namespace

Param::Param(double v) {
  // Shortest text that reads back as the same double.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  assert(ec == std::errc());
  text_ = std::string(buf, end);
}

std::string Rows::Text(int row, int col) const {
  return std::string(PQgetvalue(res_.get(), row, col),
                     static_cast<size_t>(PQgetlength(res_.get(), row, col)));
}

namespace {

// The schema's numeric columns only ever hold numbers: anything else is a broken invariant.
template <class T>
T Parse(const char* v) {
  T out{};
  auto [end, ec] = std::from_chars(v, v + std::strlen(v), out);
  assert(ec == std::errc());
  (void)end;
  (void)ec;
  return out;
}

}  // namespace

int64_t Rows::Int64(int row, int col) const {
  return Parse<int64_t>(PQgetvalue(res_.get(), row, col));
}

double Rows::Double(int row, int col) const {
  return Parse<double>(PQgetvalue(res_.get(), row, col));
}

bool Rows::Bool(int row, int col) const { return PQgetvalue(res_.get(), row, col)[0] == 't'; }

std::optional<int64_t> Rows::OptInt64(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Int64(row, col);
}

std::optional<int32_t> Rows::OptInt32(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Int32(row, col);
}

int64_t Rows::Affected() const {
  const char* n = PQcmdTuples(res_.get());
  int64_t out = 0;
  std::from_chars(n, n + std::strlen(n), out);
  return out;
}

Result<Conn> Conn::Connect(const std::string& conninfo) {
  // PQconnectdb returns a connection object even when it fails (NULL only when out of memory).
  std::unique_ptr<PGconn, Finish> c(PQconnectdb(conninfo.c_str()));
  if (!c) return Fail("store", "cannot allocate a PostgreSQL connection");
  if (PQstatus(c.get()) != CONNECTION_OK) {
    return Fail("store",
                "cannot connect to " + Where(c.get()) + ": " + Trim(PQerrorMessage(c.get())));
  }
  // Server notices and warnings (e.g. "terminating connection" when it shuts down) would go to
  // stderr; every failure that matters comes back as an error value instead.
  PQsetNoticeProcessor(
      c.get(), [](void*, const char*) {}, nullptr);
  std::string where = Where(c.get());
  return Conn(std::move(c), std::move(where));
}

Result<Rows> Conn::Check(PGresult* r, std::string_view sql) {
  Rows rows(r);
  const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return rows;
  std::string msg = r ? Trim(PQresultErrorMessage(r)) : std::string();
  if (msg.empty()) msg = Trim(PQerrorMessage(conn_.get()));
  // The statement's first words say which operation failed without dumping the whole SQL.
  std::string head(sql.substr(0, std::min<size_t>(sql.size(), 40)));
  for (auto& c : head) {
    if (c == '\n') c = ' ';
  }
  return Fail(where_, msg + " (in: " + head + (sql.size() > 40 ? "..." : "") + ")");
}

Result<Rows> Conn::Exec(std::string_view sql, const std::vector<Param>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& t = params[i].text();
    // Text values travel NUL-terminated: a NUL inside one would silently cut it short.
    if (t && t->find('\0') != std::string::npos) {
      return Fail(where_, "value " + std::to_string(i + 1) +
                              " contains a NUL byte, which PostgreSQL text cannot hold");
    }
    values.push_back(t ? t->c_str() : nullptr);
  }
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = "s" + std::to_string(prepared_.size());
    const std::string text(sql);
    auto made = Check(PQprepare(conn_.get(), name.c_str(), text.c_str(), 0, nullptr), sql);
    if (!made) return made;
    it = prepared_.emplace(text, std::move(name)).first;
  }
  PGresult* r = PQexecPrepared(conn_.get(), it->second.c_str(), static_cast<int>(values.size()),
                               values.data(), nullptr, nullptr, 0);
  return Check(r, sql);
}

Result<Rows> Conn::Exec(std::string_view sql, std::initializer_list<Param> params) {
  return Exec(sql, std::vector<Param>(params));
}

Result<void> Conn::Run(std::string_view sql, std::initializer_list<Param> params) {
  auto r = Exec(sql, params);
  if (!r) return tl::unexpected(r.error());
  return {};
}

Result<Rows> Conn::ExecScript(std::string_view sql) {
  const std::string text(sql);
  return Check(PQexec(conn_.get(), text.c_str()), sql);
}

Result<void> Conn::Reset() {
  prepared_.clear();  // they lived in the session that ended
  PQreset(conn_.get());
  if (!Ok()) return Fail(where_, "connection lost: " + Trim(PQerrorMessage(conn_.get())));
  return {};
}

bool Conn::InTransaction() const {
  const PGTransactionStatusType t = PQtransactionStatus(conn_.get());
  return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

}  // namespace hg::store::pg
