// The daemon against a real HTTP peer in this test that plays the server's side of docs/api.md
// (register, heartbeat, orders), with real job processes.
#include "agent/agent.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>

#include <deque>
#include <nlohmann/json.hpp>

#include "agent/test_util.h"
#include "tls/test_certs.h"

namespace hg::agent {
namespace {

using nlohmann::json;
using testing::Exists;
using testing::ReadFile;
using testing::TempDir;
using testing::WaitFor;

constexpr const char* kToken =
    "hg_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// The server side of the agent protocol, over real HTTP on 127.0.0.1.
class ServerPeer {
 public:
  struct Beat {
    json body;
    int status = 0;  // what the peer answered
  };

  explicit ServerPeer(int port = 0) {
    svr_.new_task_queue = [] { return new httplib::ThreadPool(2); };
    svr_.Post("/v1/agents/register", [this](const httplib::Request& req, httplib::Response& res) {
      if (!Authorized(req, res)) return;
      std::lock_guard<std::mutex> lock(mu_);
      const json b = json::parse(req.body);
      registers_.push_back(b);
      known_.insert(b.at("node").get<std::string>());
      res.set_content(json{{"heartbeat_s", 1}, {"lost_after_s", 10}}.dump(), "application/json");
    });
    svr_.Post("/v1/agents/heartbeat", [this](const httplib::Request& req, httplib::Response& res) {
      if (!Authorized(req, res)) return;
      std::lock_guard<std::mutex> lock(mu_);
      const json b = json::parse(req.body);
      int status = heartbeat_status_;
      if (known_.count(b.at("node").get<std::string>()) == 0) status = 404;
      beats_.push_back({b, status});
      if (status != 200) {
        res.status = status;
        res.set_content(R"({"error":{"field":"node","reason":"refused by test"}})",
                        "application/json");
        return;
      }
      json orders = json::array();
      for (const json& o : orders_) orders.push_back(o);
      orders_.clear();
      res.set_content(json{{"orders", orders}}.dump(), "application/json");
    });
    port_ = port == 0 ? svr_.bind_to_any_port("127.0.0.1")
                      : (svr_.bind_to_port("127.0.0.1", port) ? port : -1);
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
  }
  ~ServerPeer() { Stop(); }

  void Stop() {
    svr_.stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void Order(json o) {
    std::lock_guard<std::mutex> lock(mu_);
    orders_.push_back(std::move(o));
  }
  void SetHeartbeatStatus(int s) {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeat_status_ = s;
  }
  void Forget(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    known_.erase(node);
  }
  std::vector<json> registers() {
    std::lock_guard<std::mutex> lock(mu_);
    return registers_;
  }
  std::vector<Beat> beats() {
    std::lock_guard<std::mutex> lock(mu_);
    return beats_;
  }

 private:
  bool Authorized(const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") == std::string("Bearer ") + kToken) return true;
    res.status = 401;
    res.set_content(R"({"error":{"field":"authorization","reason":"bad token"}})",
                    "application/json");
    return false;
  }

  httplib::Server svr_;
  std::thread thread_;
  int port_ = -1;
  std::mutex mu_;
  std::set<std::string> known_;
  std::vector<json> registers_;
  std::vector<Beat> beats_;
  std::deque<json> orders_;
  int heartbeat_status_ = 200;
};

// An agent running its loop on a thread, with test-sized intervals.
class RunningAgent {
 public:
  RunningAgent(const std::string& url, const std::string& data_dir) {
    AgentOptions o;
    o.server_urls = {url};
    o.token = kToken;
    o.node = "n1";
    o.inventory.gpus = 4;
    o.inventory.gpu_source = "virtual";
    o.inventory.labels = {{"block", "b0"}};
    o.data_dir = data_dir;
    o.heartbeat_ms = 100;
    o.retry_ms = 100;
    o.connect_timeout_ms = 300;
    o.read_timeout_ms = 1000;
    o.exit_grace_ms = 500;  // jobs are stopped when the agent exits: none outlives the test
    agent_ = std::make_unique<Agent>(o, clock_);
    auto url_or = agent_->StartLogService();
    EXPECT_TRUE(url_or) << url_or.error().ToString();
    thread_ = std::thread([this] { agent_->Run(stop_); });
  }
  ~RunningAgent() {
    stop_ = true;
    thread_.join();
  }
  Agent& operator*() { return *agent_; }
  Agent* operator->() { return agent_.get(); }

 private:
  SystemClock clock_;
  std::unique_ptr<Agent> agent_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

json StartOrder(int64_t job, int64_t attempt, const std::string& script,
                std::vector<int> gpus = {0}) {
  return {{"type", "start"},
          {"job", job},
          {"attempt", attempt},
          {"command", {"bash", "-c", script}},
          {"env", {{"FROM_ORDER", "yes"}}},
          {"cwd", nullptr},
          {"gpus", gpus},
          {"grace_s", 5},
          {"rank", 0},
          {"num_nodes", 1},
          {"master_addr", "n1"},
          {"master_port", 29500}};
}

bool HasEntry(const json& list, int64_t job, int64_t attempt) {
  for (const json& e : list)
    if (e.at("job") == job && e.at("attempt") == attempt) return true;
  return false;
}

const json* FindExit(const std::vector<ServerPeer::Beat>& beats, int64_t job, int64_t attempt) {
  for (const auto& b : beats)
    for (const json& e : b.body.at("exited"))
      if (e.at("job") == job && e.at("attempt") == attempt) return &e;
  return nullptr;
}

// The daemon removes the logs of runs that ended longer ago than its retention (14 days by
// default) when it starts and hourly after, and keeps recent ones.
TEST(Agent, OldLogsOfEndedRunsAreRemovedAndRecentOnesKept) {
  TempDir d;
  std::filesystem::create_directories(d / "logs");
  const std::string old_log = d / "logs/5.1.stdout";
  const std::string recent_log = d / "logs/6.1.stdout";
  std::ofstream(old_log) << "from a month ago";
  std::ofstream(recent_log) << "from yesterday";
  const auto now = std::chrono::system_clock::now();
  auto set_age = [](const std::string& path, std::chrono::system_clock::time_point at) {
    const timespec t{std::chrono::system_clock::to_time_t(at), 0};
    const timespec times[2] = {t, t};
    return ::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0;
  };
  ASSERT_TRUE(set_age(old_log, now - std::chrono::hours(24 * 30)));
  ASSERT_TRUE(set_age(recent_log, now - std::chrono::hours(24)));
  ServerPeer peer;
  RunningAgent agent(peer.url(), d.path());
  EXPECT_TRUE(WaitFor([&] { return !Exists(old_log); }, 5000));
  EXPECT_TRUE(Exists(recent_log));
}

// The log service's certificate, renewed in place, is served from the first look at its files
// after the change (every 10 s of the agent's clock), with no restart of the agent.
TEST(Agent, TheLogServiceServesARenewedCertificateWithoutARestart) {
  TempDir d;
  tls::TestCerts certs;
  ASSERT_TRUE(certs.Make("site") && certs.Make("renewed")) << "openssl could not make them";
  tls::TestCerts::Replace(certs.Cert("site"), certs.Cert("live"));
  tls::TestCerts::Replace(certs.Key("site"), certs.Key("live"));
  ServerPeer peer;
  AgentOptions o;
  o.server_urls = {peer.url()};
  o.token = kToken;
  o.node = "n1";
  o.inventory.gpus = 1;
  o.inventory.gpu_source = "virtual";
  o.data_dir = d.path();
  o.logs_tls_cert = certs.Cert("live");
  o.logs_tls_key = certs.Key("live");
  ManualClock clock;
  Agent agent(o, clock);
  auto url = agent.StartLogService();
  ASSERT_TRUE(url) << url.error().ToString();
  ASSERT_EQ(url->rfind("https://", 0), 0u) << *url;
  // Any answer means the handshake passed the client's check of the certificate.
  auto trusted = [&](const std::string& ca) {
    httplib::Client client(*url);
    client.set_ca_cert_path(ca.c_str());
    client.set_connection_timeout(5, 0);
    return static_cast<bool>(client.Get("/logs/1/1/stdout"));
  };
  agent.Step();
  EXPECT_TRUE(trusted(certs.Cert("site")));
  EXPECT_FALSE(trusted(certs.Cert("renewed")));
  tls::TestCerts::Replace(certs.Cert("renewed"), certs.Cert("live"));
  tls::TestCerts::Replace(certs.Key("renewed"), certs.Key("live"));
  clock.Advance(9'000);
  agent.Step();
  EXPECT_TRUE(trusted(certs.Cert("site"))) << "read before its time";
  clock.Advance(1'000);
  agent.Step();
  EXPECT_TRUE(trusted(certs.Cert("renewed")));
  EXPECT_FALSE(trusted(certs.Cert("site")));
  agent.Shutdown();
}

TEST(Agent, RegistersStartsJobsAndRepeatsExitsUntilAcknowledged) {
  TempDir d;
  ServerPeer peer;
  ASSERT_GT(peer.port(), 0);
  RunningAgent agent(peer.url(), d.path());

  ASSERT_TRUE(WaitFor([&] { return !peer.registers().empty(); }, 5000));
  const json reg = peer.registers()[0];
  EXPECT_EQ(reg["node"], "n1");
  EXPECT_EQ(reg["gpus"], 4);
  EXPECT_EQ(reg["labels"], (json{{"block", "b0"}}));
  EXPECT_EQ(reg["gpu_source"], "virtual");
  EXPECT_EQ(reg["logs_url"], agent->logs_url());
  EXPECT_EQ(reg["running"], json::array());

  // The job records each start, waits for a go signal, then fails with status 3.
  const std::string script = "echo run >> " + d / "runs" + "; env > " + d / "env.tmp" + "; mv " +
                             d / "env.tmp " + d / "env" + "; echo hello; while [ ! -e " + d / "go" +
                             " ]; do sleep 0.02; done; exit 3";
  peer.Order(StartOrder(17, 1, script, {2, 3}));
  peer.Order(StartOrder(17, 1, script, {2, 3}));  // a duplicate in the same reply: no-op
  ASSERT_TRUE(WaitFor([&] { return Exists(d / "env"); }, 5000));
  const std::string env = ReadFile(d / "env");
  EXPECT_NE(env.find("CUDA_VISIBLE_DEVICES=2,3\n"), std::string::npos);
  EXPECT_NE(env.find("FROM_ORDER=yes\n"), std::string::npos);
  EXPECT_NE(env.find("HOURGLASS_JOB_ID=17\n"), std::string::npos);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto beats = peer.beats();
        return !beats.empty() && HasEntry(beats.back().body["running"], 17, 1);
      },
      5000));
  EXPECT_GT(agent->Running().at(0).pid, 0);

  // Replies stop arriving (503): the exit must be repeated in every heartbeat.
  peer.SetHeartbeatStatus(503);
  const size_t before = peer.beats().size();
  { std::ofstream(d / "go") << "go"; }
  ASSERT_TRUE(WaitFor(
      [&] {
        int n = 0;
        auto beats = peer.beats();
        for (size_t i = before; i < beats.size(); ++i)
          n += HasEntry(beats[i].body["exited"], 17, 1);
        return n >= 3;
      },
      5000));
  EXPECT_EQ(agent->UnackedExits(), 1u);
  peer.SetHeartbeatStatus(200);
  // After the first heartbeat answered 200 that carried it, the exit is not sent again.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto beats = peer.beats();
        for (size_t i = 0; i < beats.size(); ++i)
          if (beats[i].status == 200 && HasEntry(beats[i].body["exited"], 17, 1))
            return beats.size() >= i + 4;
        return false;
      },
      5000));
  auto beats = peer.beats();
  size_t acked = 0;
  while (!(beats[acked].status == 200 && HasEntry(beats[acked].body["exited"], 17, 1))) ++acked;
  for (size_t i = acked + 1; i < beats.size(); ++i)
    EXPECT_FALSE(HasEntry(beats[i].body["exited"], 17, 1)) << "heartbeat " << i;
  const json* ex = FindExit(beats, 17, 1);
  ASSERT_NE(ex, nullptr);
  EXPECT_EQ((*ex)["exit_code"], 3);
  EXPECT_TRUE((*ex)["signal"].is_null());
  EXPECT_EQ((*ex)["how"], "exited");
  EXPECT_EQ(agent->UnackedExits(), 0u);

  // Starting the attempt again after it ended is a no-op too.
  peer.Order(StartOrder(17, 1, script, {2, 3}));
  const size_t n_beats = peer.beats().size();
  ASSERT_TRUE(WaitFor([&] { return peer.beats().size() >= n_beats + 3; }, 5000));
  EXPECT_EQ(ReadFile(d / "runs"), "run\n");

  // A start order for a GPU the node does not have is reported as failed_to_start.
  peer.Order(StartOrder(18, 1, "true", {7}));
  ASSERT_TRUE(WaitFor([&] { return FindExit(peer.beats(), 18, 1) != nullptr; }, 5000));
  EXPECT_EQ((*FindExit(peer.beats(), 18, 1))["how"], "failed_to_start");

  // The log service serves what the job wrote, from an offset, with the agent token only.
  httplib::Client logs(agent->logs_url());
  auto no_auth = logs.Get("/logs/17/1/stdout");
  ASSERT_TRUE(no_auth);
  EXPECT_EQ(no_auth->status, 401);
  logs.set_bearer_token_auth(kToken);
  auto all = logs.Get("/logs/17/1/stdout");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->status, 200);
  EXPECT_EQ(all->body, "hello\n");
  EXPECT_EQ(all->get_header_value("X-Hourglass-Offset"), "6");
  EXPECT_EQ(all->get_header_value("X-Hourglass-Done"), "true");
  auto tail = logs.Get("/logs/17/1/stdout?offset=2");
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->body, "llo\n");
  auto bad = logs.Get("/logs/17/1/stdout?offset=-1");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto missing = logs.Get("/logs/99/1/stderr");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST(Agent, StopOrdersSignalTheGroupAndHonourGrace) {
  TempDir d;
  ServerPeer peer;
  RunningAgent agent(peer.url(), d.path());
  ASSERT_TRUE(WaitFor([&] { return agent->registered(); }, 5000));
  peer.Order(StartOrder(20, 1,
                        "trap 'echo term > " + d / "term" + "; exit 0' TERM; touch " + d / "r20" +
                            "; sleep 30 & wait"));
  peer.Order(StartOrder(21, 1, "trap '' TERM; touch " + d / "r21" + "; sleep 30"));
  ASSERT_TRUE(WaitFor([&] { return Exists(d / "r20") && Exists(d / "r21"); }, 5000));
  peer.Order({{"type", "stop"}, {"job", 20}, {"attempt", 1}, {"grace_s", 10}, {"reason", "t"}});
  peer.Order({{"type", "stop"}, {"job", 21}, {"attempt", 1}, {"grace_s", 1}, {"reason", "t"}});
  peer.Order({{"type", "stop"}, {"job", 99}, {"attempt", 1}, {"grace_s", 1}});  // not here
  ASSERT_TRUE(WaitFor(
      [&] {
        auto b = peer.beats();
        return FindExit(b, 20, 1) != nullptr && FindExit(b, 21, 1) != nullptr;
      },
      5000));
  auto beats = peer.beats();
  const json e20 = *FindExit(beats, 20, 1), e21 = *FindExit(beats, 21, 1);
  EXPECT_EQ(e20["how"], "stopped");
  EXPECT_EQ(e20["exit_code"], 0);
  EXPECT_TRUE(Exists(d / "term"));
  EXPECT_EQ(e21["how"], "killed_after_grace");
  EXPECT_EQ(e21["signal"], SIGKILL);
  EXPECT_EQ(FindExit(beats, 99, 1), nullptr);
  EXPECT_TRUE(agent->Running().empty());
}

TEST(Agent, ServerAwayJobsKeepRunningAndTheNodeRegistersAgainWithThem) {
  TempDir d;
  auto peer = std::make_unique<ServerPeer>();
  const int port = peer->port();
  auto agent_ptr = std::make_unique<RunningAgent>(peer->url(), d.path());
  RunningAgent& agent = *agent_ptr;
  ASSERT_TRUE(WaitFor([&] { return agent->registered(); }, 5000));
  peer->Order(StartOrder(30, 2, "touch " + d / "r30" + "; sleep 30"));
  ASSERT_TRUE(WaitFor([&] { return Exists(d / "r30"); }, 5000));
  ASSERT_TRUE(WaitFor([&] { return !agent->Running().empty(); }, 5000));
  const int64_t pid = agent->Running().at(0).pid;

  peer.reset();  // the server goes away
  ASSERT_TRUE(WaitFor([&] { return !agent->registered(); }, 5000));
  // Several heartbeat periods without a server: the job is untouched.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(kill(static_cast<pid_t>(pid), 0), 0);
  ASSERT_EQ(agent->Running().size(), 1u);

  peer = std::make_unique<ServerPeer>(port);  // back, on the same address, knowing nothing
  ASSERT_EQ(peer->port(), port);
  ASSERT_TRUE(WaitFor([&] { return !peer->registers().empty(); }, 5000));
  const json reg = peer->registers()[0];
  ASSERT_EQ(reg["running"].size(), 1u);
  EXPECT_EQ(reg["running"][0]["job"], 30);
  EXPECT_EQ(reg["running"][0]["attempt"], 2);
  EXPECT_EQ(reg["running"][0]["pid"], pid);

  // A server that forgets the node (404 to a heartbeat) gets a new registration too.
  ASSERT_TRUE(WaitFor([&] { return !peer->beats().empty(); }, 5000));
  peer->Forget("n1");
  ASSERT_TRUE(WaitFor([&] { return peer->registers().size() >= 2; }, 5000));
  EXPECT_TRUE(HasEntry(peer->registers()[1]["running"], 30, 2));
  bool saw_404 = false;
  for (const auto& b : peer->beats()) saw_404 = saw_404 || b.status == 404;
  EXPECT_TRUE(saw_404);
  EXPECT_EQ(kill(static_cast<pid_t>(pid), 0), 0);

  // The agent exits: it stops its jobs and tells the server in a last heartbeat.
  agent_ptr.reset();
  const auto final_beats = peer->beats();
  const json* ex = FindExit(final_beats, 30, 2);
  ASSERT_NE(ex, nullptr);
  EXPECT_EQ((*ex)["how"], "stopped");
  EXPECT_EQ((*ex)["signal"], SIGTERM);
  EXPECT_NE(kill(static_cast<pid_t>(pid), 0), 0);
}

}  // namespace
}  // namespace hg::agent
