#include "cmd/server_command.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "cmd/policy_flags.h"
#include "server/server.h"
#include "sim/scenario_io.h"

namespace hg::cmd {
namespace {

struct Args {
  std::string data;
  std::string database;
  bool standby = false;
  std::string listen = "127.0.0.1:8080";
  std::string port_file;
  std::string tls_cert, tls_key, agents_ca_file;
  std::string policy = "hourglass";
  int64_t interval_ms = server::ServerOptions{}.interval_ms;
  int64_t timer_ms = server::ServerOptions{}.timer_ms;
  int64_t max_gap_ms = server::ServerOptions{}.max_gap_ms;
  int64_t lost_after_s = 10;
  int64_t heartbeat_s = 1;
  double keep_ended_days = static_cast<double>(server::ServerOptions{}.keep_ended_s) / 86400;
  std::string budgets;
  PolicyFlags tuning;
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "hourglass server: %s\n", what.c_str());
  return 2;
}

int Run(const Args& a) {
  server::ServerOptions o;
  o.data_dir = a.data;
  o.database = a.database;
  if (a.standby && a.database.empty())
    return Fail("--standby: needs --database (a standby waits for another server's database)");
  o.standby = a.standby;
  o.tls_cert = a.tls_cert;
  o.tls_key = a.tls_key;
  o.agents_ca_file = a.agents_ca_file;
  const size_t colon = a.listen.rfind(':');
  if (colon == std::string::npos) return Fail("--listen: '" + a.listen + "' is not HOST:PORT");
  o.host = a.listen.substr(0, colon);
  try {
    size_t used = 0;
    o.port = std::stoi(a.listen.substr(colon + 1), &used);
    if (used != a.listen.size() - colon - 1 || o.port < 0 || o.port > 65535) throw 0;
  } catch (...) {
    return Fail("--listen: '" + a.listen + "' has no valid port");
  }
  o.policy = a.policy;
  auto config = PolicyConfigFrom(a.tuning);
  if (!config) return Fail(config.error().ToString());
  o.config = *config;
  o.interval_ms = a.interval_ms;
  o.timer_ms = a.timer_ms;
  o.max_gap_ms = a.max_gap_ms;
  o.lost_after_s = a.lost_after_s;
  o.heartbeat_s = a.heartbeat_s;
  o.keep_ended_s = std::llround(a.keep_ended_days * 86400);
  if (!a.budgets.empty()) {
    auto b = sim::ReadBudgets(a.budgets);
    if (!b) return Fail(b.error().ToString());
    o.budgets = std::move(*b);
  }
  // Signals are taken by sigwait below, not by whichever thread happens to run: block them
  // before any thread starts (threads inherit the mask).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  // SIGUSR1: the store was taken by another server (on_fenced below).
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // Declared before the server, so they outlive its scheduling thread, which calls on_fenced.
  std::string fenced;
  std::mutex fenced_mu;
  o.on_fenced = [&fenced, &fenced_mu](const Error& e) {
    {
      std::lock_guard lock(fenced_mu);
      fenced = e.ToString();
    }
    kill(getpid(), SIGUSR1);
  };
  // A standby waits in Start(), before sigwait below: it looks for SIGTERM and SIGINT itself. So
  // does a server started while another holds the database, for a few seconds (a restart).
  bool stopped_standing_by = false;
  o.keep_standing_by = [&set, &stopped_standing_by, &o, told = false]() mutable {
    if (!told) {
      if (o.standby)
        std::printf("hourglass server: standing by; another server holds the database\n");
      else
        std::printf(
            "hourglass server: another server holds the database; waiting up to %d s for it to "
            "let go (as it does a moment after it stopped)\n",
            o.takeover_attempts);
      std::fflush(stdout);
      told = true;
    }
    const timespec second{1, 0};
    const int sig = sigtimedwait(&set, nullptr, &second);
    if (sig == SIGTERM || sig == SIGINT) stopped_standing_by = true;
    return !stopped_standing_by;
  };
  server::Server srv(o);
  if (auto ok = srv.Start(); !ok) {
    if (stopped_standing_by) return 0;
    return Fail(ok.error().ToString());
  }
  if (!srv.NewAdminToken().empty())
    std::printf("admin token (shown once, also in %s): %s\n", srv.AdminTokenFile().c_str(),
                srv.NewAdminToken().c_str());
  std::printf("hourglass server listening on %s://%s:%d (data in %s%s)\n",
              o.tls_cert.empty() ? "http" : "https", o.host.c_str(), srv.Port(), o.data_dir.c_str(),
              o.database.empty() ? "" : ", state in PostgreSQL");
  std::printf("policy %s: %s\n", o.policy.c_str(), Describe(o.config).c_str());
  std::fflush(stdout);
  if (!a.port_file.empty()) {
    // Written whole, then renamed: a reader never sees a half-written port.
    const std::string tmp = a.port_file + ".tmp";
    {
      std::ofstream f(tmp, std::ios::trunc);
      f << srv.Port() << "\n";
      if (!f) return Fail("--port-file: cannot write " + tmp);
    }
    std::error_code ec;
    std::filesystem::rename(tmp, a.port_file, ec);
    if (ec) return Fail("--port-file: cannot write " + a.port_file);
  }
  int sig = 0;
  sigwait(&set, &sig);
  if (sig == SIGUSR1) {
    std::string why;
    {
      std::lock_guard lock(fenced_mu);
      why = fenced;
    }
    std::fprintf(stderr, "hourglass server: %s; stopping\n", why.c_str());
    srv.Stop();
    return 3;
  }
  std::printf("hourglass server: signal %d, shutting down\n", sig);
  std::fflush(stdout);
  srv.Stop();
  return 0;
}

}  // namespace

void AddServerCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("server", "run the control plane (HTTP API + scheduler)");
  cmd->add_option("--data", args->data, "data directory (SQLite store, admin.token)")->required();
  cmd->add_option("--database", args->database,
                  "keep the state in PostgreSQL instead of <data>/hourglass.db: a libpq "
                  "connection string or postgresql:// URL (put a password in ~/.pgpass or "
                  "PGPASSWORD, not here); one server at a time per database")
      ->envname("HOURGLASS_DATABASE");
  cmd->add_flag("--standby", args->standby,
                "with --database: while another server holds the database, wait (binding no "
                "port) and take over once it has gone, instead of failing");
  cmd->add_option("--listen", args->listen, "HOST:PORT to listen on (port 0: any free port)");
  cmd->add_option("--port-file", args->port_file, "write the bound port to this file");
  cmd->add_option("--tls-cert", args->tls_cert,
                  "serve HTTPS only, with this PEM certificate (chain); needs --tls-key. Agents "
                  "and the CLI verify it (--ca-file, HOURGLASS_CA_FILE)");
  cmd->add_option("--tls-key", args->tls_key, "the certificate's PEM private key");
  cmd->add_option("--agents-ca-file", args->agents_ca_file,
                  "the PEM CA the agents' HTTPS log services (agent --logs-tls-cert) are checked "
                  "against (default: the system's CAs)");
  cmd->add_option("--policy", args->policy, "scheduling policy (default hourglass)");
  cmd->add_option("--interval-ms", args->interval_ms,
                  "scheduling tick in ms (default 10000, the simulator's)")
      ->check(CLI::Range(int64_t{1}, int64_t{3600000}));
  cmd->add_option("--timer-ms", args->timer_ms,
                  "also run a cycle on each multiple of this while a job waits (0, the default: "
                  "cycles on changes and wake-ups only, as `hourglass sim` by default; a multiple "
                  "of --interval-ms, as `hourglass sim --timer`)");
  cmd->add_option(
      "--max-gap-ms", args->max_gap_ms,
      "while a job waits, run a cycle on the first tick this long after the last one "
      "if nothing brought one sooner (default 300000; 0: no bound; hourglass sim --max-gap)");
  cmd->add_option("--lost-after-s", args->lost_after_s,
                  "a node without heartbeat this long is lost (default 10)")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  cmd->add_option("--heartbeat-s", args->heartbeat_s, "heartbeat period agents are told (1)")
      ->check(CLI::Range(int64_t{1}, int64_t{3600}));
  cmd->add_option("--keep-ended-days", args->keep_ended_days,
                  "ended jobs stay in the server's memory this long, then only in its store, from "
                  "which views and history lists read them (default 7)")
      ->check(CLI::Range(0.0, 3650.0));
  cmd->add_option("--budgets", args->budgets, "budget tree TOML, imported on first start only");
  AddPolicyFlags(cmd, &args->tuning);
  cmd->callback([args, &exit_code] { exit_code = Run(*args); });
}

}  // namespace hg::cmd
