// Durable submissions per second against a real `hourglass server` process on loopback, with 1, 8
// and 64 concurrent clients (issue 3, item 9). Each client is a thread with its own connection
// that submits jobs back to back; a submission counts when the server answered 201, which it does
// only after the job is committed to its store. The baseline, measured in the same run at the same
// concurrency, is GET /healthz: the cost of an HTTP round trip with no store work, so the ratio
// says what durability and validation cost. Each concurrency is measured twice: plain submissions,
// and submissions that carry an Idempotency-Key as `hourglass submit` sends (a new key each), whose
// ratio to the plain ones is what the key costs. With `--stores sqlite,postgresql` the server runs
// once per store (PostgreSQL: a server of the bench's own, as in the tests), one after the other.
//
//   build/release/bench/submit_load [--seconds 5] [--clients 1,8,64] [--stores sqlite]
//   [--bin build/release/cmd/hourglass]
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "store/pg_test_server.h"

namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Run {
  std::vector<double> lat_ms;  // every answered request's latency
  double seconds = 0;
  int64_t errors = 0;

  void Add(const Run& o) {
    lat_ms.insert(lat_ms.end(), o.lat_ms.begin(), o.lat_ms.end());
    seconds += o.seconds;
    errors += o.errors;
  }
  double PerS() const { return seconds > 0 ? static_cast<double>(lat_ms.size()) / seconds : 0; }
  // The q-th quantile of the latencies, in ms.
  double Ms(double q) {
    if (lat_ms.empty()) return 0;
    std::sort(lat_ms.begin(), lat_ms.end());
    return lat_ms[std::min(lat_ms.size() - 1,
                           static_cast<size_t>(q * static_cast<double>(lat_ms.size())))];
  }
};

enum class Ask { kHealth, kSubmit, kSubmitKeyed };

// Idempotency keys unique over the whole run (the server keeps them per user for good).
std::atomic<int64_t> next_key{0};

// `clients` threads, each with one keep-alive connection, for `seconds`.
Run Load(int port, const std::string& token, int clients, double seconds, Ask ask) {
  const bool submit = ask != Ask::kHealth;
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::vector<int64_t> errors(static_cast<size_t>(clients), 0);
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);  // headers and body go out in two writes: no Nagle wait
      cli.set_read_timeout(30, 0);
      httplib::Headers h{{"Authorization", "Bearer " + token}};
      const std::string body =
          Json{{"name", "load-" + std::to_string(c)}, {"gpus", 1}, {"command", {"true"}}}.dump();
      auto& mine = lat[static_cast<size_t>(c)];
      while (!stop.load(std::memory_order_relaxed)) {
        if (ask == Ask::kSubmitKeyed) {
          h.erase("Idempotency-Key");
          h.emplace("Idempotency-Key", "load-" + std::to_string(next_key++));
        }
        const auto s = Clock::now();
        auto res = submit ? cli.Post("/v1/jobs", h, body, "application/json") : cli.Get("/healthz");
        const auto e = Clock::now();
        if (!res || res->status != (submit ? 201 : 200)) {
          ++errors[static_cast<size_t>(c)];
          continue;
        }
        mine.push_back(std::chrono::duration<double, std::milli>(e - s).count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  Run r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (size_t c = 0; c < lat.size(); ++c) {
    r.lat_ms.insert(r.lat_ms.end(), lat[c].begin(), lat[c].end());
    r.errors += errors[c];
  }
  return r;
}

// Starts a server on `store`, loads it, stops it. Returns 0 when it ran.
int Bench(const std::string& bin, const std::string& store, const std::vector<int>& clients,
          double seconds) {
  namespace fs = std::filesystem;
  std::unique_ptr<hg::store::PgTestServer> pg;
  if (store == "postgresql") {
    pg = std::make_unique<hg::store::PgTestServer>();
    if (!pg->error().empty()) {
      std::fprintf(stderr, "submit_load: cannot start PostgreSQL: %s\n", pg->error().c_str());
      return 1;
    }
  }
  std::string dir = (fs::temp_directory_path() / "hg-submit-XXXXXX").string();
  if (!mkdtemp(dir.data())) return 1;
  const std::string port_file = dir + "/port";
  std::vector<std::string> args{
      bin,           "server",  "--data",         dir,    "--listen", "127.0.0.1:0",
      "--port-file", port_file, "--lost-after-s", "86400"};
  if (pg) {
    args.push_back("--database");
    args.push_back(pg->Conninfo());
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t server = fork();
  if (server == 0) {
    const int fd = open((dir + "/server.log").c_str(), O_WRONLY | O_CREAT, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int port = 0;
  for (int i = 0; i < 400 && port == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string p = ReadFile(port_file);
    if (!p.empty() && p.back() == '\n') port = std::stoi(p);
  }
  std::string token = ReadFile(dir + "/admin.token");
  while (!token.empty() && token.back() == '\n') token.pop_back();
  int rc = 0;
  if (port == 0 || token.empty()) {
    std::fprintf(stderr, "submit_load: server did not start: %s\n",
                 ReadFile(dir + "/server.log").c_str());
    rc = 1;
  } else {
    // One node, so that submissions fit the cluster; nobody runs its jobs, which stay queued
    // or "running" on paper, so the machine's two cores serve only the server and the clients.
    httplib::Client cli("127.0.0.1", port);
    const httplib::Headers h{{"Authorization", "Bearer " + token}};
    auto agent = cli.Post("/v1/principals", h, R"({"name":"bench-agent","role":"agent"})",
                          "application/json");
    const std::string agent_token =
        agent && agent->status == 201 ? Json::parse(agent->body)["token"].get<std::string>() : "";
    cli.Post("/v1/agents/register", {{"Authorization", "Bearer " + agent_token}},
             R"({"node":"bench-node","gpus":8,"labels":{"block":"b0"},"running":[]})",
             "application/json");
    for (int c : clients) {
      Run base = Load(port, token, c, seconds / 2, Ask::kHealth);
      // Plain and keyed in turns, a quarter of the time each, so that neither gets the emptier
      // store or the quieter minute.
      Run sub, keyed;
      for (int turn = 0; turn < 4; ++turn) {
        sub.Add(Load(port, token, c, seconds / 4, Ask::kSubmit));
        keyed.Add(Load(port, token, c, seconds / 4, Ask::kSubmitKeyed));
      }
      std::printf("%-11s %-8d %14.0f %10.2f %10.2f %16.0f %8.3f %10.0f %10.2f %8.3f%s\n",
                  store.c_str(), c, sub.PerS(), sub.Ms(0.5), sub.Ms(0.99), base.PerS(),
                  base.PerS() > 0 ? sub.PerS() / base.PerS() : 0.0, keyed.PerS(), keyed.Ms(0.99),
                  sub.PerS() > 0 ? keyed.PerS() / sub.PerS() : 0.0,
                  sub.errors || base.errors || keyed.errors ? "  (errors seen)" : "");
      std::fflush(stdout);
    }
  }
  kill(server, SIGTERM);
  int status = 0;
  waitpid(server, &status, 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  std::vector<int> clients{1, 8, 64};
  std::vector<std::string> stores{"sqlite"};
  std::string bin = HOURGLASS_BIN;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--seconds") {
      seconds = std::stod(v);
    } else if (a == "--bin") {
      bin = v;
    } else if (a == "--clients") {
      clients.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) clients.push_back(std::stoi(x));
    } else if (a == "--stores") {
      stores.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) {
        if (x != "sqlite" && x != "postgresql") {
          std::fprintf(stderr, "submit_load: --stores: '%s' is not sqlite or postgresql\n",
                       x.c_str());
          return 2;
        }
        stores.push_back(x);
      }
    } else {
      std::fprintf(stderr, "submit_load: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::printf("%-11s %-8s %14s %10s %10s %16s %8s %10s %10s %8s\n", "store", "clients",
              "submissions/s", "p50 ms", "p99 ms", "healthz/s (base)", "ratio", "keyed/s",
              "keyed p99", "keyed/plain");
  int rc = 0;
  for (const std::string& store : stores) rc |= Bench(bin, store, clients, seconds);
  return rc;
}
