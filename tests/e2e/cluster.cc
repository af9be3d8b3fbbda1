#include "tests/e2e/cluster.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace hg::e2e {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

[[noreturn]] void ExecChild(const std::vector<std::string>& argv, const std::string& out,
                            const std::string& err) {
  setpgid(0, 0);  // so a test's teardown can signal the agent's job processes too
  const int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fo >= 0) dup2(fo, 1);
  if (fe >= 0) dup2(fe, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

Process::Process(const std::vector<std::string>& argv, const std::string& log_prefix)
    : out_path_(log_prefix + ".stdout"), err_path_(log_prefix + ".stderr") {
  pid_ = fork();
  if (pid_ == 0) ExecChild(argv, out_path_, err_path_);
}

Process::~Process() {
  if (pid_ > 0 && running()) Stop();
}

bool Process::running() {
  if (pid_ <= 0) return false;
  const pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) {
    pid_ = -pid_;  // reaped; keep the number for messages
    return false;
  }
  return r == 0;
}

void Process::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

int Process::Stop(std::chrono::milliseconds grace) {
  if (!running()) return status_;
  kill(pid_, SIGTERM);
  if (!WaitFor([&] { return !running(); }, grace, 20ms)) Kill();
  // Job processes the agent started are in their own groups; the agent stops them itself.
  return status_;
}

void Process::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, &status_, 0);
  pid_ = -pid_;
}

std::string Process::Output() const { return ReadFile(out_path_) + ReadFile(err_path_); }

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
             std::chrono::milliseconds step) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

bool FileExists(const std::string& path) { return fs::exists(path); }

Cluster::Cluster(int interval_ms, int lost_after_s, std::vector<std::string> server_args,
                 std::string tls_ca)
    : interval_ms_(interval_ms),
      lost_after_s_(lost_after_s),
      server_args_(std::move(server_args)),
      tls_ca_(std::move(tls_ca)) {
  std::string tmpl = (fs::temp_directory_path() / "hg-e2e-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  fs::create_directories(dir_ + "/server");
  StartServer();
  admin_token_ = ReadFile(dir_ + "/server/admin.token");
  while (!admin_token_.empty() && (admin_token_.back() == '\n' || admin_token_.back() == ' '))
    admin_token_.pop_back();
  if (admin_token_.empty()) throw std::runtime_error("no admin token in server/admin.token");
}

Cluster::~Cluster() {
  for (auto& [name, a] : agents_) a->Stop();
  agents_.clear();
  if (server_) server_->Stop();
  server_.reset();
  if (std::getenv("HOURGLASS_KEEP_E2E") == nullptr && !::testing::Test::HasFailure()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  } else {
    std::fprintf(stderr, "e2e: kept %s\n", dir_.c_str());
  }
}

void Cluster::StartServer() {
  const std::string listen = "127.0.0.1:" + std::to_string(port_);  // port 0 the first time
  const std::string port_file = dir_ + "/server/port";
  std::error_code ec;
  fs::remove(port_file, ec);
  ++server_starts_;
  std::vector<std::string> argv{HOURGLASS_BIN,    "server",
                                "--data",         dir_ + "/server",
                                "--listen",       listen,
                                "--port-file",    port_file,
                                "--interval-ms",  std::to_string(interval_ms_),
                                "--lost-after-s", std::to_string(lost_after_s_)};
  // On PostgreSQL a restarted server may open the database before the killed one's session has
  // ended; it waits for it by itself (ServerOptions::takeover_attempts).
  argv.insert(argv.end(), server_args_.begin(), server_args_.end());
  server_ = std::make_unique<Process>(argv, dir_ + "/server/run" + std::to_string(server_starts_));
  const bool up = WaitFor(
      [&] {
        if (port_ == 0) {
          const std::string p = ReadFile(port_file);
          if (p.empty() || p.back() != '\n') return false;
          port_ = std::stoi(p);
        }
        return Call("GET", "/healthz").status == 200;
      },
      20s);
  if (!up) throw std::runtime_error("server did not come up: " + server_->Output());
}

void Cluster::KillServer() {
  if (server_) server_->Kill();
}

void Cluster::StopServer() {
  if (server_) server_->Stop();
}

std::string Cluster::ServerOutput() const { return server_ ? server_->Output() : std::string(); }

void Cluster::AddAgent(const AgentOptions& opt) {
  if (agent_token_.empty()) {
    agent_token_ = AddPrincipal("agents", "agent");
    WriteFile(dir_ + "/agent.token", agent_token_ + "\n");
  }
  const std::string data = dir_ + "/agent-" + opt.node;
  fs::create_directories(data);
  std::vector<std::string> argv{HOURGLASS_BIN,    "agent",
                                "--server",       opt.server.empty() ? url() : opt.server,
                                "--token-file",   dir_ + "/agent.token",
                                "--node",         opt.node,
                                "--gpus",         std::to_string(opt.gpus),
                                "--block",        opt.block,
                                "--data",         data,
                                "--heartbeat-ms", "100",
                                "--logs-listen",  "127.0.0.1:0"};
  if (!opt.health_cmd.empty()) {
    argv.insert(argv.end(), {"--health-cmd", opt.health_cmd, "--health-interval-s", "1"});
  }
  if (!tls_ca_.empty()) argv.insert(argv.end(), {"--ca-file", tls_ca_});
  argv.insert(argv.end(), opt.extra_args.begin(), opt.extra_args.end());
  agents_[opt.node] = std::make_unique<Process>(argv, data + "/agent");
  const bool ready = WaitFor([&] {
    const Response r = Admin("GET", "/v1/nodes");
    if (r.status != 200) return false;
    for (const Json& n : r.body["nodes"])
      if (n["name"] == opt.node && n["state"] == "ready") return true;
    return false;
  });
  if (!ready)
    throw std::runtime_error("agent " + opt.node +
                             " did not register: " + agents_[opt.node]->Output());
}

void Cluster::StopAgent(const std::string& node) {
  auto it = agents_.find(node);
  if (it == agents_.end()) return;
  it->second->Stop();
  agents_.erase(it);
}

std::string Cluster::AddPrincipal(const std::string& name, const std::string& role) {
  const Response r = Admin("POST", "/v1/principals", Json{{"name", name}, {"role", role}});
  if (r.status != 201) throw std::runtime_error("principal " + name + ": " + r.raw);
  return r.body["token"].get<std::string>();
}

void Cluster::AddBudget(const std::string& name, const std::string& parent, double share,
                        const Json& extra) {
  Json b = extra;
  b["name"] = name;
  if (!parent.empty()) b["parent"] = parent;
  b["share"] = share;
  const Response r = Admin("POST", "/v1/budgets", b);
  if (r.status != 201) throw std::runtime_error("budget " + name + ": " + r.raw);
}

Response Cluster::Call(const std::string& method, const std::string& path,
                       const std::optional<Json>& body, const std::string& token,
                       const std::map<std::string, std::string>& extra) const {
  httplib::Client cli(url());
  if (!tls_ca_.empty()) cli.set_ca_cert_path(tls_ca_);
  cli.set_connection_timeout(2, 0);
  cli.set_read_timeout(10, 0);
  cli.set_tcp_nodelay(true);
  httplib::Headers headers(extra.begin(), extra.end());
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  const std::string payload = body ? body->dump() : std::string();
  httplib::Result res{nullptr, httplib::Error::Unknown};
  if (method == "GET") {
    res = cli.Get(path, headers);
  } else if (method == "POST") {
    res = cli.Post(path, headers, payload, "application/json");
  } else if (method == "PATCH") {
    res = cli.Patch(path, headers, payload, "application/json");
  } else if (method == "DELETE") {
    res = cli.Delete(path, headers);
  } else if (method == "PUT") {
    res = cli.Put(path, headers, payload, "application/json");
  }
  Response out;
  if (!res) return out;
  out.status = res->status;
  out.raw = res->body;
  for (const auto& [k, v] : res->headers) out.headers[k] = v;
  out.body = Json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (out.body.is_discarded()) out.body = res->body;
  return out;
}

int64_t Cluster::Submit(const Json& job, const std::string& token) {
  const Response r = Call("POST", "/v1/jobs", job, token);
  EXPECT_EQ(r.status, 201) << r.raw;
  if (r.status != 201) return -1;
  return r.body["id"].get<int64_t>();
}

Json Cluster::Job(int64_t id) const {
  const Response r = Admin("GET", "/v1/jobs/" + std::to_string(id));
  return r.status == 200 ? r.body : Json();
}

bool Cluster::WaitState(int64_t id, const std::string& state,
                        std::chrono::milliseconds timeout) const {
  return WaitFor(
      [&] {
        const Json j = Job(id);
        return j.is_object() && j.value("state", "") == state;
      },
      timeout);
}

std::pair<int, std::string> Cluster::Cli(const std::vector<std::string>& args,
                                         const std::string& token, const std::string& url) const {
  const std::string out = dir_ + "/cli.out";
  std::vector<std::string> argv{HOURGLASS_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("HOURGLASS_URL", (url.empty() ? this->url() : url).c_str(), 1);
    setenv("HOURGLASS_TOKEN", token.c_str(), 1);
    if (!tls_ca_.empty()) setenv("HOURGLASS_CA_FILE", tls_ca_.c_str(), 1);
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> a;
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ReadFile(out)};
}

std::vector<std::string> Cluster::Script(const std::string& name, const std::string& body) const {
  const std::string path = dir_ + "/" + name + ".sh";
  WriteFile(path, "set -u\n" + body);
  return {"bash", path};
}

}  // namespace hg::e2e
