#include "cmd/agent_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "agent/agent.h"
#include "agent/clock.h"
#include "agent/inventory.h"
#include "cli/config.h"

namespace hg::cmd {
namespace {

struct AgentArgs {
  std::string server;
  std::string ca_file;
  std::string token_file;
  std::string node;
  int gpus = -1;
  std::string gpu_source = "auto";
  std::string block;
  std::vector<std::string> labels;
  std::string data = "hourglass-agent";
  std::string health_cmd;
  int64_t health_interval_s = 60;
  int64_t health_timeout_s = 30;
  int64_t heartbeat_ms = 0;
  std::string logs_listen = "127.0.0.1:0";
  std::string logs_tls_cert, logs_tls_key;
  int64_t log_retention_days = 14;
  bool keep_jobs = false;
};

std::atomic<bool> g_agent_stop{false};

void OnSignal(int) { g_agent_stop = true; }

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

Result<agent::AgentOptions> BuildOptions(const AgentArgs& a) {
  agent::AgentOptions o;
  o.server_urls = cli::SplitUrls(a.server);
  if (o.server_urls.empty()) return Fail("--server", "is empty");
  for (const std::string& url : o.server_urls)
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
      return Fail("--server", "'" + url + "' is not an http:// or https:// URL");
  if (!a.ca_file.empty()) {
    for (const std::string& url : o.server_urls)
      if (url.rfind("https://", 0) != 0)
        return Fail("--ca-file", "only for https:// servers (--server has " + url + ")");
    if (::access(a.ca_file.c_str(), R_OK) != 0)
      return Fail("--ca-file", "cannot read " + a.ca_file);
    o.ca_file = a.ca_file;
  }
  if (!a.token_file.empty()) {
    std::ifstream in(a.token_file);
    if (!in) return Fail("--token-file", "cannot read " + a.token_file);
    std::stringstream ss;
    ss << in.rdbuf();
    o.token = Trim(ss.str());
    if (o.token.empty()) return Fail("--token-file", a.token_file + " is empty");
  } else if (const char* t = std::getenv("HOURGLASS_TOKEN"); t != nullptr && *t != '\0') {
    o.token = Trim(t);
  } else {
    return Fail("--token-file", "give --token-file FILE or set HOURGLASS_TOKEN");
  }
  if (!agent::ValidName(a.node))
    return Fail("--node", "'" + a.node + "' is not [A-Za-z0-9._-]{1,64}");
  o.node = a.node;
  agent::InventoryOptions inv;
  inv.gpu_source = a.gpu_source;
  inv.virtual_gpus = a.gpus;
  inv.labels = a.labels;
  inv.block = a.block;
  auto detected = agent::DetectInventory(inv);
  if (!detected) return tl::unexpected(detected.error());
  o.inventory = *detected;
  if (a.data.empty()) return Fail("--data", "must not be empty");
  o.data_dir = a.data;
  o.health_cmd = a.health_cmd;
  if (a.health_interval_s < 1) return Fail("--health-interval-s", "must be at least 1");
  if (a.health_timeout_s < 1) return Fail("--health-timeout-s", "must be at least 1");
  o.health_interval_ms = a.health_interval_s * 1000;
  o.health_timeout_ms = a.health_timeout_s * 1000;
  if (a.heartbeat_ms < 0 || (a.heartbeat_ms > 0 && a.heartbeat_ms < 10))
    return Fail("--heartbeat-ms", "must be at least 10 (or 0: the server's heartbeat_s)");
  o.heartbeat_ms = a.heartbeat_ms;
  if (a.heartbeat_ms > 0) o.retry_ms = std::min<int64_t>(o.retry_ms, a.heartbeat_ms);
  o.logs_listen = a.logs_listen;
  o.logs_tls_cert = a.logs_tls_cert;
  o.logs_tls_key = a.logs_tls_key;
  o.log_retention_ms = a.log_retention_days * 86'400'000LL;
  o.stop_jobs_on_exit = !a.keep_jobs;
  return o;
}

int RunAgent(const AgentArgs& a) {
  auto opt = BuildOptions(a);
  if (!opt) {
    std::cerr << "hourglass agent: " << opt.error().ToString() << "\n";
    return 2;
  }
  agent::SystemClock clock;
  agent::Agent daemon(*opt, clock);
  auto url = daemon.StartLogService();
  if (!url) {
    std::cerr << "hourglass agent: " << url.error().ToString() << "\n";
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a peer hanging up is an error value, not a death (jobs reset it)
  std::cout << "hourglass agent: node " << opt->node << ", " << opt->inventory.gpus << " GPUs ("
            << opt->inventory.gpu_source << "), logs at " << *url << ", server " << a.server
            << std::endl;
  daemon.Run(g_agent_stop);
  return 0;
}

}  // namespace

void AddAgentCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<AgentArgs>();
  auto* cmd = app.add_subcommand("agent", "run the node agent: start and stop jobs on this node");
  cmd->add_option("--server", args->server,
                  "Server URL, e.g. http://10.0.0.1:8080; with standbys, their URLs after it, "
                  "comma-separated")
      ->required();
  cmd->add_option("--ca-file", args->ca_file,
                  "https: the PEM CA (or certificate) the server's certificate is checked "
                  "against (default: the system's CAs)")
      ->envname("HOURGLASS_CA_FILE");
  cmd->add_option("--token-file", args->token_file,
                  "File holding the agent token (else HOURGLASS_TOKEN)");
  cmd->add_option("--node", args->node, "This node's name")->required();
  cmd->add_option("--gpus", args->gpus, "Virtual GPUs when NVML is not present");
  cmd->add_option("--gpu-source", args->gpu_source,
                  "auto (NVML when present, else --gpus), nvml, or virtual");
  cmd->add_option("--block", args->block, "The node's block (label block=B)");
  cmd->add_option("--label", args->labels, "A label k=v (repeatable)");
  cmd->add_option("--data", args->data, "Directory for job logs (DIR/logs)");
  cmd->add_option("--health-cmd", args->health_cmd, "Shell command; non-zero exit = unhealthy");
  cmd->add_option("--health-interval-s", args->health_interval_s, "Seconds between checks");
  cmd->add_option("--health-timeout-s", args->health_timeout_s, "A check running longer fails");
  cmd->add_option("--heartbeat-ms", args->heartbeat_ms,
                  "Heartbeat period (default: the server's heartbeat_s)");
  cmd->add_option("--logs-listen", args->logs_listen, "HOST:PORT of the log service (0: any)");
  cmd->add_option("--logs-tls-cert", args->logs_tls_cert,
                  "serve the log service over HTTPS with this PEM certificate (the server checks "
                  "it with its --agents-ca-file); needs --logs-tls-key");
  cmd->add_option("--logs-tls-key", args->logs_tls_key, "the log certificate's PEM private key");
  cmd->add_option("--log-retention-days", args->log_retention_days,
                  "remove the logs of runs that ended longer ago than this, checked hourly "
                  "(default 14; 0 keeps them all)")
      ->check(CLI::Range(int64_t{0}, int64_t{3650}));
  cmd->add_flag("--keep-jobs-on-exit", args->keep_jobs,
                "Leave jobs running when the agent exits (default: stop them)");
  cmd->callback([args, &exit_code] { exit_code = RunAgent(*args); });
}

}  // namespace hg::cmd
