// A real Hourglass cluster on loopback for end-to-end tests: the `hourglass` binary started as a
// server process and as agent processes, each with its own data directory under one temporary
// folder, plus an HTTP client that speaks docs/api.md. Everything is a real process; the
// destructor stops them all.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hg::e2e {

using Json = nlohmann::json;

// One child process with its stdout and stderr in files.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& log_prefix);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // The wait status once running() has seen the process end.
  int status() const { return status_; }
  void Signal(int sig);
  // SIGTERM, then SIGKILL after `grace`; returns the wait status.
  int Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));
  void Kill();                 // SIGKILL and reap
  std::string Output() const;  // stdout + stderr so far, for failure messages

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  std::string out_path_, err_path_;
};

struct Response {
  int status = 0;  // 0: no answer (connection refused or timed out)
  Json body;       // parsed JSON, or a string for non-JSON bodies
  std::string raw;
  std::map<std::string, std::string> headers;
};

// Polls `pred` until it holds or `timeout` passes; returns whether it held.
bool WaitFor(const std::function<bool()>& pred,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(15000),
             std::chrono::milliseconds step = std::chrono::milliseconds(50));

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);
bool FileExists(const std::string& path);

struct AgentOptions {
  std::string node;
  int gpus = 2;
  std::string block = "b0";
  std::string health_cmd;               // empty: none
  std::vector<std::string> extra_args;  // added to the agent's command line
  std::string server;                   // its --server; empty: this cluster's server
};

inline AgentOptions Node(std::string name, int gpus, std::string block = "b0",
                         std::string health_cmd = std::string()) {
  AgentOptions o;
  o.node = std::move(name);
  o.gpus = gpus;
  o.block = std::move(block);
  o.health_cmd = std::move(health_cmd);
  return o;
}

class Cluster {
 public:
  // Starts a server in a fresh temporary folder and waits until it answers /healthz.
  // `server_args` are added to the server's command line (say, policy tuning flags).
  // `tls_ca`: the server speaks HTTPS (server_args carry --tls-cert and --tls-key), and the test's
  // client, the agents and the CLI check its certificate against this PEM file.
  explicit Cluster(int interval_ms = 200, int lost_after_s = 3,
                   std::vector<std::string> server_args = {}, std::string tls_ca = "");
  ~Cluster();

  const std::string& dir() const { return dir_; }
  std::string url() const {
    return (tls_ca_.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(port_);
  }
  int port() const { return port_; }
  const std::string& admin_token() const { return admin_token_; }

  // Server lifecycle: kill -9 and start again on the same data folder and port.
  void KillServer();
  void StartServer();
  void StopServer();
  // The arguments the next StartServer adds (say, a move to PostgreSQL).
  void SetServerArgs(std::vector<std::string> args) { server_args_ = std::move(args); }
  std::string ServerOutput() const;
  Process& ServerProcess() { return *server_; }

  // Starts an agent (registering with an agent token the cluster creates once) and waits until
  // its node is listed `ready`.
  void AddAgent(const AgentOptions& opt);
  void StopAgent(const std::string& node);

  // A principal with a fresh token; returns the token.
  std::string AddPrincipal(const std::string& name, const std::string& role);
  // Creates a budget as admin; `extra` may hold limit, leads, members.
  void AddBudget(const std::string& name, const std::string& parent, double share,
                 const Json& extra = Json::object());

  Response Call(const std::string& method, const std::string& path,
                const std::optional<Json>& body = std::nullopt,
                const std::string& token = std::string(),
                const std::map<std::string, std::string>& headers = {}) const;
  Response Admin(const std::string& method, const std::string& path,
                 const std::optional<Json>& body = std::nullopt) const {
    return Call(method, path, body, admin_token_);
  }

  // Submits as `token`; returns the job id (fails the test on refusal).
  int64_t Submit(const Json& job, const std::string& token);
  Json Job(int64_t id) const;
  // Waits until the job's state is `state`; returns whether it happened in time.
  bool WaitState(int64_t id, const std::string& state,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) const;

  // Runs the CLI binary with HOURGLASS_URL (`url`, by default this cluster's server) and
  // HOURGLASS_TOKEN set; returns exit status and output (stdout then stderr).
  std::pair<int, std::string> Cli(const std::vector<std::string>& args, const std::string& token,
                                  const std::string& url = "") const;

  // A shell script in the cluster folder; returns a command vector running it with bash.
  std::vector<std::string> Script(const std::string& name, const std::string& body) const;

 private:
  std::string dir_;
  int port_ = 0;
  int interval_ms_;
  int lost_after_s_;
  std::vector<std::string> server_args_;
  std::string tls_ca_;
  std::string admin_token_;
  std::string agent_token_;
  int server_starts_ = 0;
  std::unique_ptr<Process> server_;
  std::map<std::string, std::unique_ptr<Process>> agents_;
};

}  // namespace hg::e2e
