// `hourglass server` as an object: the store, the state, the scheduling loop and the HTTP API,
// started and stopped together (tests run it in-process; cmd/server_command.cc wraps it).
#pragma once

#include <httplib.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/budget_tree.h"
#include "server/clock.h"
#include "server/scheduler.h"
#include "server/state.h"
#include "store/store.h"
#include "tls/tls_certificates.h"

namespace hg::server {

struct ServerOptions {
  std::string data_dir;  // admin.token, and hourglass.db unless `database` is set, live here
  // A PostgreSQL connection string or postgresql:// URL: the state lives in that database
  // (store/pg_store.h) instead of <data_dir>/hourglass.db. One server at a time per database.
  std::string database;
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (read it back with Port())
  // PEM files: when both are set the server speaks HTTPS only, so that tokens never cross the
  // network in clear. Clients verify the certificate (cli: ca_file, agent: --ca-file).
  std::string tls_cert;
  std::string tls_key;
  // The PEM CA the agents' log services' certificates are checked against (https:// log URLs);
  // empty: the system's CAs.
  std::string agents_ca_file;
  std::string policy = "hourglass";
  PolicyConfig config = DeployedConfig();  // the policy's tuning (hourglass server's flags)
  // The scheduling tick (server/scheduler.h): the simulator's interval, so that `hourglass sim`
  // runs the loop that is deployed.
  int64_t interval_ms = 10000;
  // The waiting timer (StateOptions::timer_ms): 0 or a multiple of interval_ms.
  int64_t timer_ms = 0;
  // The longest gap between cycles while a job waits (StateOptions::max_gap_ms; 0: no bound).
  int64_t max_gap_ms = 300000;
  int64_t heartbeat_s = 1;
  int64_t lost_after_s = 10;
  int64_t keep_ended_s = StateOptions{}.keep_ended_s;  // StateOptions::keep_ended_s
  int threads = 96;  // HTTP worker pool: 64 concurrent clients plus agents
  // With `database`: when another server holds it, wait and take over once it has gone (a hot
  // standby) instead of failing. Between attempts, a second apart, Start() calls
  // `keep_standing_by`, which returns false to give up (say, on SIGTERM).
  bool standby = false;
  std::function<bool()> keep_standing_by;
  // Without `standby`, the attempts Start() makes while another server holds the database before
  // it fails: a restarted server's predecessor lets go of the lock when its database session
  // ends, which may be a moment after its process did. Needs `keep_standing_by`.
  int takeover_attempts = 10;
  // Called once, from the scheduling thread, when the store has been taken by another server
  // (store::Store::Fenced): this one must stop. `hourglass server` exits with status 3.
  std::function<void(const Error&)> on_fenced;
  // Imported on first start only (when the store holds no budgets).
  std::vector<BudgetSpec> budgets;
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // Stop()

  // Opens the store, recovers the state, binds the port and starts serving. On the first start
  // the admin token is created, written to <data_dir>/admin.token (0600) and returned by
  // AdminToken() (later starts: empty).
  Result<void> Start();
  void Stop();
  int Port() const { return port_; }
  const std::string& NewAdminToken() const { return new_admin_token_; }
  std::string AdminTokenFile() const { return opt_.data_dir + "/admin.token"; }
  State& state() { return *state_; }

 private:
  ServerOptions opt_;
  SystemClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<State> state_;
  std::unique_ptr<Scheduler> scheduler_;
  // Before http_, which serves it on every handshake: destroyed after it.
  std::unique_ptr<tls::TlsCertificates> certs_;
  std::unique_ptr<httplib::Server> http_;
  std::thread http_thread_;
  int port_ = 0;
  std::string new_admin_token_;
};

}  // namespace hg::server
