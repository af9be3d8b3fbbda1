// For server/*_test.cc: an in-process Server on 127.0.0.1 (port 0) over a real store (SQLite in a
// fresh temp dir; PostgreSQL when HOURGLASS_TEST_STORE=postgresql, see test_store.h), JSON calls
// over real HTTP, and a fake agent that speaks the agent protocol.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "server/clock.h"
#include "server/server.h"
#include "server/test_store.h"
#include "store/test_dir.h"

namespace hg::server::testing {

struct Resp {
  int status = 0;
  nlohmann::json body;
  std::string text;
};

// Polls `cond` every 20 ms until it holds or `ms` pass; waits through SystemClock.
inline bool Eventually(const std::function<bool()>& cond, int64_t ms = 5000) {
  SystemClock clock;
  std::mutex mu;
  std::condition_variable cv;
  const int64_t end = clock.NowMs() + ms;
  std::unique_lock lock(mu);
  while (true) {
    if (cond()) return true;
    if (clock.NowMs() >= end) return false;
    clock.WaitUntil(lock, cv, std::min(end, clock.NowMs() + 20));
  }
}

class Harness {
 public:
  explicit Harness(ServerOptions o = {}) : opt_(std::move(o)) {
    opt_.data_dir = dir_.path();
    if (TestOnPostgresql()) {
      pg_ = std::make_unique<store::PgTestServer>();
      EXPECT_EQ(pg_->error(), "");
      opt_.database = pg_->Conninfo();
    }
    opt_.port = 0;
    // A fast loop, so tests wait milliseconds for each decision rather than the deployed tick.
    if (opt_.interval_ms == ServerOptions{}.interval_ms) opt_.interval_ms = 50;
    StartServer();
  }

  void StartServer() {
    // A restart on PostgreSQL: the stopped server's lock goes with its database session, whose
    // backend may not have exited when the new server opens the database (seen under ctest -j2).
    // The new one waits for it (ServerOptions::takeover_attempts), here in tenths of a second.
    if (!opt_.keep_standing_by) {
      opt_.keep_standing_by = [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return true;
      };
      opt_.takeover_attempts = 100;
    }
    server_ = std::make_unique<Server>(opt_);
    auto ok = server_->Start();
    ASSERT_TRUE(ok) << ok.error().ToString();
    if (!server_->NewAdminToken().empty()) admin_ = server_->NewAdminToken();
  }
  void StopServer() { server_.reset(); }
  Server& server() { return *server_; }
  const std::string& admin() const { return admin_; }
  const std::string& dir() const { return dir_.path(); }

  Resp Call(const std::string& method, const std::string& path, const std::string& token,
            const std::string& body = "", const httplib::Headers& extra = {}) {
    httplib::Client cli("127.0.0.1", server_->Port());
    cli.set_connection_timeout(5, 0);
    cli.set_read_timeout(10, 0);
    httplib::Headers h = extra;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    httplib::Result r = method == "GET"      ? cli.Get(path.c_str(), h)
                        : method == "DELETE" ? cli.Delete(path.c_str(), h)
                        : method == "PATCH"  ? cli.Patch(path.c_str(), h, body, "application/json")
                                             : cli.Post(path.c_str(), h, body, "application/json");
    Resp out;
    if (!r) return out;
    out.status = r->status;
    out.text = r->body;
    try {
      out.body = nlohmann::json::parse(r->body);
    } catch (const std::exception&) {
    }
    return out;
  }
  Resp Get(const std::string& path, const std::string& token) { return Call("GET", path, token); }
  Resp Post(const std::string& path, const std::string& token, const nlohmann::json& body) {
    return Call("POST", path, token, body.dump());
  }

  // A new principal's token.
  std::string Principal(const std::string& name, const std::string& role) {
    Resp r = Post("/v1/principals", admin_, {{"name", name}, {"role", role}});
    EXPECT_EQ(r.status, 201) << r.text;
    return r.body.value("token", "");
  }

 private:
  store::TestDir dir_;
  std::unique_ptr<store::PgTestServer> pg_;  // before server_: it outlives the server's store
  ServerOptions opt_;
  std::unique_ptr<Server> server_;
  std::string admin_;
};

// An agent for one node, speaking the protocol of docs/api.md over HTTP.
class FakeAgent {
 public:
  FakeAgent(Harness& h, std::string token, std::string node, int gpus)
      : h_(h), token_(std::move(token)), node_(std::move(node)), gpus_(gpus) {}

  Resp Register() {
    nlohmann::json running = nlohmann::json::array();
    for (const auto& [k, v] : running_)
      running.push_back({{"job", k.first}, {"attempt", k.second}});
    return h_.Post("/v1/agents/register", token_,
                   {{"node", node_},
                    {"gpus", gpus_},
                    {"labels", {{"block", "b0"}}},
                    {"gpu_source", "virtual"},
                    {"logs_url", logs_url_},
                    {"running", running}});
  }
  // One heartbeat; start orders become running attempts, the orders are returned.
  nlohmann::json Beat(bool health_ok = true) {
    nlohmann::json running = nlohmann::json::array();
    for (const auto& [k, v] : running_) {
      running.push_back({{"job", k.first}, {"attempt", k.second}, {"pid", 1000}});
      if (auto c = cpu_.find(k.first); c != cpu_.end()) running.back()["cpu_s"] = c->second;
    }
    Resp r = h_.Post("/v1/agents/heartbeat", token_,
                     {{"node", node_},
                      {"health", {{"ok", health_ok}, {"detail", health_ok ? "" : "gpu error"}}},
                      {"running", running},
                      {"exited", exited_}});
    EXPECT_EQ(r.status, 200) << r.text;
    exited_ = nlohmann::json::array();
    nlohmann::json orders = r.body.value("orders", nlohmann::json::array());
    for (const auto& o : orders) {
      if (o["type"] == "start") {
        running_[{o["job"].get<int64_t>(), o["attempt"].get<int32_t>()}] = o;
        all_orders_.push_back(o);
      } else {
        all_orders_.push_back(o);
      }
    }
    return orders;
  }
  // The attempt ends; reported at the next heartbeat.
  void Exit(int64_t job, std::optional<int> code, std::optional<int> signal) {
    for (auto it = running_.begin(); it != running_.end(); ++it) {
      if (it->first.first != job) continue;
      exited_.push_back({{"job", job},
                         {"attempt", it->first.second},
                         {"exit_code", code ? nlohmann::json(*code) : nlohmann::json(nullptr)},
                         {"signal", signal ? nlohmann::json(*signal) : nlohmann::json(nullptr)},
                         {"how", signal ? "stopped" : "exited"},
                         {"at", 0}});
      running_.erase(it);
      return;
    }
  }
  bool Runs(int64_t job) const {
    for (const auto& [k, v] : running_)
      if (k.first == job) return true;
    return false;
  }
  const nlohmann::json* StartOrderOf(int64_t job) const {
    for (const auto& [k, v] : running_)
      if (k.first == job) return &v;
    return nullptr;
  }
  const std::vector<nlohmann::json>& orders() const { return all_orders_; }
  // The CPU seconds the next heartbeats report for the job's running attempt (`cpu_s`).
  void set_cpu(int64_t job, double cpu_s) { cpu_[job] = cpu_s; }
  void set_logs_url(std::string url) { logs_url_ = std::move(url); }

 private:
  Harness& h_;
  std::string token_, node_;
  int gpus_;
  std::string logs_url_;
  std::map<std::pair<int64_t, int32_t>, nlohmann::json> running_;
  nlohmann::json exited_ = nlohmann::json::array();
  std::vector<nlohmann::json> all_orders_;
  std::map<int64_t, double> cpu_;
};

}  // namespace hg::server::testing
