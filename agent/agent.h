// The node agent daemon: registers the node with the server, heartbeats (running attempts, ended
// attempts, health), carries out start and stop orders, and serves job logs on its own port.
// docs/api.md ("Agents") is the protocol. Single-threaded loop (Step) plus the log service's
// threads; the loop never blocks longer than one HTTP exchange (short timeouts).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/clock.h"
#include "agent/health.h"
#include "agent/inventory.h"
#include "agent/process.h"
#include "core/error.h"
#include "tls/tls_certificates.h"

namespace httplib {
class Server;
}

namespace hg::agent {

struct AgentOptions {
  // http://host:port or https://host:port: the server, or it and its standbys. Requests go to the
  // one that answered last and move on to the next when it cannot be connected to.
  std::vector<std::string> server_urls;
  // https: the PEM file of the CA (or the certificate itself) that signed the server's
  // certificate; empty: the system's CAs.
  std::string ca_file;
  std::string token;  // the agent principal's bearer token
  std::string node;
  Inventory inventory;
  std::string data_dir = ".";  // job logs under <data_dir>/logs
  std::string health_cmd;      // empty: no health check
  int64_t health_interval_ms = 60'000;
  int64_t health_timeout_ms = 30'000;
  int64_t heartbeat_ms = 0;  // 0: the server's heartbeat_s
  std::string logs_listen = "127.0.0.1:0";
  // PEM files: when both are set the log service speaks HTTPS (the server calls it with this
  // agent's token, which must not cross the network in clear when the server speaks HTTPS).
  std::string logs_tls_cert;
  std::string logs_tls_key;
  // Logs of ended runs older than this are removed (log_retention.h), checked hourly; 0 keeps
  // them all.
  int64_t log_retention_ms = 14 * 86'400'000LL;
  int64_t connect_timeout_ms = 1'000;
  int64_t read_timeout_ms = 3'000;
  int64_t retry_ms = 1'000;  // between registration attempts while the server is away
  int64_t tick_ms = 20;      // the main loop's wait
  // On exit, stop every job (SIGTERM, up to exit_grace_ms, SIGKILL) and report them. A
  // restarted agent cannot adopt the jobs of its predecessor, so jobs left behind would hold
  // GPUs unseen; --keep-jobs-on-exit leaves them running anyway.
  bool stop_jobs_on_exit = true;
  int64_t exit_grace_ms = 2'000;
};

struct RunningEntry {
  int64_t job = 0;
  int64_t attempt = 0;
  int64_t pid = 0;
};

class Agent {
 public:
  Agent(AgentOptions opt, Clock& clock);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Creates the log directory and binds the log service; returns its URL (also sent at
  // registration). Call once before Step/Run.
  Result<std::string> StartLogService();

  // One pass of the loop: reap and escalate jobs, tick the health check, register or heartbeat
  // when due and carry out the orders of the reply.
  void Step();

  // Step() every tick until `stop` becomes true; then stops the jobs (unless told to keep them),
  // sends a last heartbeat with their exits, and Shutdown().
  void Run(const std::atomic<bool>& stop);

  // Stops the log service; with stop_jobs_on_exit, SIGKILLs every job still running.
  void Shutdown();

  // Thread-safe views for tests and logs.
  bool registered() const;
  std::vector<RunningEntry> Running() const;
  size_t UnackedExits() const;
  std::string logs_url() const { return logs_url_; }

 private:
  using Key = std::pair<int64_t, int64_t>;  // (job, attempt)
  struct Reply {
    int status = 0;  // 0: no answer (connection refused, timeout)
    std::string body;
    std::string error;
  };

  Reply Post(const std::string& path, const std::string& body);
  void Register();
  void Heartbeat();
  void HandleOrder(const std::string& order_json);
  void StartJob(const StartSpec& spec);
  void RememberEnded(const Key& k);
  void PublishSnapshot();
  void NoteServerFailure(const std::string& what);

  AgentOptions opt_;
  Clock& clock_;
  HealthChecker health_;
  std::string log_dir_;
  std::string logs_url_;

  std::map<Key, std::unique_ptr<JobProcess>> jobs_;
  std::vector<ExitReport> unacked_;  // oldest first, resent until a heartbeat reply comes back
  std::set<Key> ended_;              // recent attempts that ended: a repeated start is a no-op
  std::vector<Key> ended_order_;     // insertion order, to bound `ended_`
  bool registered_ = false;
  int64_t heartbeat_interval_ms_ = 1'000;
  int64_t next_register_ms_ = 0;
  int64_t next_heartbeat_ms_ = 0;
  int64_t next_prune_ms_ = 0;    // monotonic
  bool server_failing_ = false;  // log a failure streak once, not every tick
  size_t server_ = 0;            // the index in server_urls of the server that answered last

  mutable std::mutex mu_;  // guards the snapshot below (read by other threads)
  bool snap_registered_ = false;
  std::vector<RunningEntry> snap_running_;
  size_t snap_unacked_ = 0;

  // Before logs_server_, which serves it on every handshake: destroyed after it.
  std::unique_ptr<tls::TlsCertificates> logs_certs_;
  static constexpr int64_t kCertCheckMs = 10'000;  // how often its files are looked at
  int64_t next_cert_check_ms_ = 0;                 // monotonic
  std::unique_ptr<httplib::Server> logs_server_;
  std::thread logs_thread_;
};

}  // namespace hg::agent
