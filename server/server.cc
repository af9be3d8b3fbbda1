#include "server/server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/timed_cycle.h"
#include "server/api.h"
#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace hg::server {
namespace {

// Writes the token readable by its owner only (created 0600, never wider).
Result<void> WriteSecret(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Fail(path, "cannot create the file");
  const std::string line = text + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Fail(path, "cannot write the file");
  return {};
}

}  // namespace

Server::Server(ServerOptions options) : opt_(std::move(options)) {}

Server::~Server() { Stop(); }

Result<void> Server::Start() {
  // The loop's settings, checked as the simulator checks its own (core/timed_cycle.h).
  if (auto ok = CheckTimedLoop(opt_.interval_ms, opt_.timer_ms, opt_.max_gap_ms,
                               {"--interval-ms", "--timer-ms", "--max-gap-ms"});
      !ok)
    return tl::unexpected(ok.error());
  // HTTPS is checked before the store is opened: a mistyped file must not take the database.
  std::unique_ptr<httplib::Server> http;
  if (opt_.tls_cert.empty() != opt_.tls_key.empty())
    return Fail(opt_.tls_cert.empty() ? "--tls-cert" : "--tls-key",
                "HTTPS needs both --tls-cert and --tls-key");
  std::unique_ptr<tls::TlsCertificates> certs;
  if (!opt_.tls_cert.empty()) {
    auto loaded =
        tls::TlsCertificates::Load(opt_.tls_cert, opt_.tls_key, "--tls-cert", "--tls-key");
    if (!loaded) return tl::unexpected(loaded.error());
    certs = std::move(*loaded);
    auto tls = std::make_unique<httplib::SSLServer>(opt_.tls_cert.c_str(), opt_.tls_key.c_str());
    if (!tls->is_valid())
      return Fail("--tls-cert", "cannot use " + opt_.tls_cert + " with " + opt_.tls_key +
                                    ": not a PEM certificate and its private key");
    certs->ServeOn(tls->ssl_context());
    http = std::move(tls);
  } else {
    http = std::make_unique<httplib::Server>();
  }
  std::error_code ec;
  std::filesystem::create_directories(opt_.data_dir, ec);
  if (ec) return Fail("--data", "cannot create " + opt_.data_dir + ": " + ec.message());
  Result<std::unique_ptr<store::Store>> st = Fail("store", "not opened");
  if (opt_.database.empty()) {
    store::SqliteStoreOptions so;
    so.exclusive = true;
    st = store::OpenSqliteStore(opt_.data_dir + "/hourglass.db", so);
  } else {
    store::PgStoreOptions po;
    // The HTTP workers and the scheduling loop share these; a write waits for a free one, and
    // PostgreSQL commits concurrent writers together.
    po.connections = 8;
    po.exclusive = true;
    // A standby tries again while the active server holds the database. It holds no state, binds
    // no port and answers nothing meanwhile, so clients and agents reach only the active one.
    // Any other server tries a few times: after a restart the stopped one's session, which holds
    // the lock, ends a moment after its process (PostgreSQL notices the closed connection).
    for (int attempt = 1;; ++attempt) {
      st = store::OpenPgStore(opt_.database, po);
      if (st || !store::IsServerLockHeld(st.error()) || !opt_.keep_standing_by) break;
      if (!opt_.standby && attempt > opt_.takeover_attempts) break;
      if (!opt_.keep_standing_by())
        return Fail(opt_.standby ? "--standby" : "--database",
                    "stopped while waiting for another server to let go of the database");
    }
  }
  if (!st) return tl::unexpected(st.error());
  store_ = std::move(*st);
  StateOptions so;
  so.policy = opt_.policy;
  so.config = opt_.config;
  so.heartbeat_s = opt_.heartbeat_s;
  so.lost_after_s = opt_.lost_after_s;
  so.keep_ended_s = opt_.keep_ended_s;
  so.timer_ms = opt_.timer_ms;
  so.max_gap_ms = opt_.max_gap_ms;
  so.initial_budgets = opt_.budgets;
  auto state = State::Open(*store_, clock_, so);
  if (!state) return tl::unexpected(state.error());
  state_ = std::move(*state);
  auto admin = state_->EnsureAdmin();
  if (!admin) return tl::unexpected(admin.error());
  if (*admin) {
    new_admin_token_ = **admin;
    if (auto ok = WriteSecret(AdminTokenFile(), new_admin_token_); !ok) return ok;
  }
  State* state_ptr = state_.get();
  store::Store* store_ptr = store_.get();
  auto on_fenced = opt_.on_fenced;
  certs_ = std::move(certs);
  tls::TlsCertificates* certs_ptr = certs_.get();
  scheduler_ = std::make_unique<Scheduler>(
      clock_, opt_.interval_ms,
      [state_ptr, store_ptr, on_fenced, certs_ptr, told = false]() mutable -> Result<void> {
        // A renewed certificate is served from the next handshake on, within an interval of
        // its files' change; a pair that does not match is told once and the old one kept.
        if (certs_ptr) tls::ReloadAndLog(*certs_ptr, "server");
        auto ran = state_ptr->Tick();
        // A server that lost its database to another decides nothing more: the other one does.
        if (auto fenced = store_ptr->Fenced(); fenced && !told) {
          told = true;
          if (on_fenced) on_fenced(*fenced);
        }
        if (!ran) return tl::unexpected(ran.error());
        return {};
      });

  http_ = std::move(http);
  const int threads = opt_.threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // httplib writes a reply's headers and body separately: without TCP_NODELAY, Nagle holds the
  // body until the client's delayed ACK (40 ms per request on Linux).
  http_->set_tcp_nodelay(true);
  http_->set_keep_alive_max_count(100);
  // A kept-alive connection holds a worker while it is open, idle or not. Browsers keep theirs
  // (the dashboard's polls open several), and a few open dashboards would otherwise hold the pool
  // for 5 s at a time while agents' heartbeats queued (KeepAlive.*). Busy clients, which send
  // their next request at once, keep their connections.
  http_->set_keep_alive_timeout(1);
  http_->set_read_timeout(10, 0);
  http_->set_write_timeout(10, 0);
  LogsOptions logs;
  logs.https_only = !opt_.tls_cert.empty();
  logs.agents_ca_file = opt_.agents_ca_file;
  InstallRoutes(*http_, *state_, logs);
  // The packaged httplib listens with a backlog of 5, so a burst of 64 clients connecting at
  // once overflows it and connections stall for a SYN retry. Remember the listening socket and
  // widen the backlog after the bind.
  int listen_fd = -1;
  http_->set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  if (opt_.port == 0) {
    port_ = http_->bind_to_any_port(opt_.host);
    if (port_ <= 0) return Fail("--listen", "cannot bind " + opt_.host);
  } else {
    if (!http_->bind_to_port(opt_.host, opt_.port))
      return Fail("--listen", "cannot bind " + opt_.host + ":" + std::to_string(opt_.port));
    port_ = opt_.port;
  }
  if (listen_fd >= 0) ::listen(listen_fd, 1024);
  http_->set_socket_options(httplib::default_socket_options);  // drop the reference to a local
  scheduler_->Start();
  http_thread_ = std::thread([this] { http_->listen_after_bind(); });
  return {};
}

void Server::Stop() {
  if (http_) http_->stop();
  if (http_thread_.joinable()) http_thread_.join();
  if (scheduler_) scheduler_->Stop();
  scheduler_.reset();
  http_.reset();
  certs_.reset();
  state_.reset();
  store_.reset();
}

}  // namespace hg::server
