#include "cmd/up_command.h"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "server/clock.h"

namespace hg::cmd {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct UpArgs {
  std::string data;
  int gpus = 4;
  int port = 0;
  bool demo = false;
};

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A child process of ours (`hourglass server` or `hourglass agent`), logging to a file.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      std::vector<char*> a;
      for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      execv(a[0], a.data());
      _exit(127);
    }
  }
  ~Child() { Stop(); }
  bool Alive() {
    if (pid_ <= 0) return false;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) pid_ = -1;
    return pid_ > 0;
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// Waits by the server's clock (the one place that may), in small steps, until `done` holds.
bool Await(const std::function<bool()>& done, int64_t timeout_ms) {
  server::SystemClock clock;
  std::mutex mu;
  std::condition_variable cv;
  const int64_t deadline = clock.NowMs() + timeout_ms;
  while (!done()) {
    if (g_stop || clock.NowMs() >= deadline) return false;
    std::unique_lock<std::mutex> lock(mu);
    clock.WaitUntil(lock, cv, clock.NowMs() + 100);
  }
  return true;
}

class Api {
 public:
  Api(int port, std::string token) : port_(port), token_(std::move(token)) {}
  Json Call(const std::string& method, const std::string& path, const Json& body = Json()) const {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_connection_timeout(2, 0);
    const httplib::Headers h{{"Authorization", "Bearer " + token_}};
    httplib::Result r =
        method == "GET" ? cli.Get(path, h) : cli.Post(path, h, body.dump(), "application/json");
    if (!r) return Json();
    Json j = Json::parse(r->body, nullptr, false);
    if (j.is_discarded()) j = r->body;
    return j;
  }
  bool Healthy() const {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_connection_timeout(1, 0);
    auto r = cli.Get("/healthz");
    return r && r->status == 200;
  }
  std::string Logs(int64_t job) const {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Get("/v1/jobs/" + std::to_string(job) + "/logs?stream=stdout",
                     httplib::Headers{{"Authorization", "Bearer " + token_}});
    return r && r->status == 200 ? r->body : std::string();
  }

 private:
  int port_;
  std::string token_;
};

void Say(const std::string& s) { std::cout << s << std::endl; }

std::string JobLine(const Json& j) {
  std::string line = "  job " + std::to_string(j.value("id", int64_t{0})) + " (" +
                     j.value("name", std::string()) + ", " +
                     (j["budget"].is_string() && !j["budget"].get<std::string>().empty()
                          ? "budget " + j["budget"].get<std::string>()
                          : std::string("unfunded")) +
                     "): " + j.value("state", std::string("?"));
  const std::string reason = j.value("reason", std::string());
  if (!reason.empty()) line += " - " + reason;
  return line;
}

int Demo(const Api& api, int gpus, const std::string& dir) {
  Say("\ndemo: a funded job preempts unfunded work, under the contract");
  api.Call("POST", "/v1/budgets", {{"name", "lab"}, {"share", 1}});
  api.Call("POST", "/v1/budgets", {{"name", "team"}, {"parent", "lab"}, {"share", 1}});
  const Json sweep =
      api.Call("POST", "/v1/jobs",
               {{"name", "sweep"},
                {"gpus", gpus},
                {"grace_s", 5},
                {"command",
                 {"bash", "-c",
                  "trap 'echo sweep: got SIGTERM, saving a checkpoint; sleep 1; echo sweep: saved, "
                  "exiting; exit 0' TERM; echo sweep: running on GPUs $CUDA_VISIBLE_DEVICES; "
                  "while true; do sleep 0.2; done"}},
                {"cwd", dir}});
  if (!sweep.contains("id")) {
    std::cerr << "hourglass up: demo: submit refused: " << sweep.dump() << "\n";
    return 1;
  }
  const int64_t sid = sweep["id"].get<int64_t>();
  Say("1. submitted an unfunded sweep on all " + std::to_string(gpus) +
      " GPUs: it may use idle GPUs, and is preempted first");
  auto job = [&](int64_t id) { return api.Call("GET", "/v1/jobs/" + std::to_string(id)); };
  // Running for the scheduler is not yet running on the node: wait for the job's own words.
  if (!Await([&] { return api.Logs(sid).find("sweep: running") != std::string::npos; }, 30000))
    return 1;
  Say(JobLine(job(sid)));
  const Json train = api.Call(
      "POST", "/v1/jobs",
      {{"name", "train"},
       {"budget", "team"},
       {"gpus", gpus},
       {"min_runtime_s", 60},
       {"command",
        {"bash", "-c", "echo train: started on GPUs $CUDA_VISIBLE_DEVICES; sleep 3; echo done"}},
       {"cwd", dir}});
  const int64_t tid = train.value("id", int64_t{0});
  Say("2. submitted a funded job on budget lab/team, protected for 60 s once it starts");
  Await([&] { return job(sid).value("state", "") != "running"; }, 20000);
  Say(JobLine(job(sid)));
  if (!Await([&] { return job(tid).value("state", "") == "running"; }, 30000)) return 1;
  Say("3. the sweep had its grace period; the funded job runs:");
  Say(JobLine(job(sid)));
  Say(JobLine(job(tid)));
  std::string log = api.Logs(sid);
  Say("   sweep's own output:");
  std::istringstream lines(log);
  for (std::string l; std::getline(lines, l);) Say("     " + l);
  Await([&] { return job(tid).value("state", "") == "succeeded"; }, 30000);
  Say("4. done:");
  Say(JobLine(job(tid)));
  return 0;
}

int Up(const UpArgs& a) {
  std::error_code ec;
  fs::create_directories(a.data + "/server", ec);
  fs::create_directories(a.data + "/agent", ec);
  if (ec) {
    std::cerr << "hourglass up: --data: cannot create " << a.data << ": " << ec.message() << "\n";
    return 2;
  }
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  const std::string port_file = a.data + "/server/port";
  fs::remove(port_file, ec);
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  auto server = std::make_unique<Child>(
      std::vector<std::string>{self, "server", "--data", a.data + "/server", "--listen",
                               "127.0.0.1:" + std::to_string(a.port), "--port-file", port_file},
      a.data + "/server.log");
  int port = 0;
  Await(
      [&] {
        const std::string p = ReadAll(port_file);
        if (!p.empty() && p.back() == '\n') port = std::stoi(p);
        return port != 0 || !server->Alive();
      },
      20000);
  const std::string admin = Trim(ReadAll(a.data + "/server/admin.token"));
  if (port == 0 || admin.empty()) {
    std::cerr << "hourglass up: the server did not start; see " << a.data << "/server.log\n";
    return 1;
  }
  Api api(port, admin);
  Await([&] { return api.Healthy(); }, 10000);
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  // The local agent's token: made once, kept under --data.
  const std::string agent_token_file = a.data + "/agent.token";
  if (Trim(ReadAll(agent_token_file)).empty()) {
    const Json p = api.Call("POST", "/v1/principals", {{"name", "local-agent"}, {"role", "agent"}});
    std::ofstream(agent_token_file) << p.value("token", std::string()) << "\n";
    chmod(agent_token_file.c_str(), 0600);
  }
  auto agent = std::make_unique<Child>(
      std::vector<std::string>{self, "agent", "--server", url, "--token-file", agent_token_file,
                               "--node", "local", "--gpus", std::to_string(a.gpus), "--gpu-source",
                               "virtual", "--data", a.data + "/agent"},
      a.data + "/agent.log");
  const bool ready = Await(
      [&] {
        const Json n = api.Call("GET", "/v1/nodes");
        if (!n.contains("nodes")) return false;
        for (const Json& x : n["nodes"])
          if (x.value("name", "") == "local" && x.value("state", "") == "ready") return true;
        return false;
      },
      20000);
  if (!ready) {
    std::cerr << "hourglass up: the local agent did not register; see " << a.data << "/agent.log\n";
    return 1;
  }
  Say("hourglass is up: server " + url + ", one agent (node local, " + std::to_string(a.gpus) +
      " GPUs), data in " + a.data);
  Say("admin token (shown once, also in " + a.data + "/server/admin.token):");
  Say("  export HOURGLASS_URL=" + url + " HOURGLASS_TOKEN=" + admin);
  Say("dashboard: " + url + "/ (it asks for the token; " + url +
      "/#token=... opens it with one, kept in the browser tab)");
  if (a.demo) {
    const int rc = Demo(api, a.gpus, a.data);
    agent.reset();
    server.reset();
    return rc;
  }
  Say("Ctrl-C stops both.");
  Await([&] { return g_stop || !server->Alive(); }, int64_t{1} << 60);
  return 0;
}

}  // namespace

void AddUpCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<UpArgs>();
  auto* up = app.add_subcommand("up", "run a server and one local agent: the embedded default");
  up->add_option("--data", args->data, "Folder for the SQLite store, logs and tokens")->required();
  up->add_option("--gpus", args->gpus, "Virtual GPUs of the local agent")
      ->check(CLI::Range(1, 1024));
  up->add_option("--port", args->port, "Port of the server (0: any free port)")
      ->check(CLI::Range(0, 65535));
  up->add_flag("--demo", args->demo,
               "Show funded work preempting unfunded work, with reasons, then stop");
  up->callback([args, &exit_code] { exit_code = Up(*args); });
}

}  // namespace hg::cmd
