#include "agent/agent.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/log_retention.h"

namespace hg::agent {
namespace {

using nlohmann::json;

constexpr size_t kMaxEndedRemembered = 4096;
constexpr int64_t kMaxLogChunk = 1 << 20;  // bytes per log request; the caller pages on

// Compares without an early exit, so response timing does not leak how much of a token matched.
bool SameSecret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

std::string ErrorBody(const std::string& field, const std::string& reason) {
  return json{{"error", {{"field", field}, {"reason", reason}}}}.dump();
}

// "reason" from an API error body, or the body itself, for logs.
std::string ErrorText(const std::string& body) {
  try {
    const json j = json::parse(body);
    if (j.contains("error"))
      return j["error"].value("field", "") + ": " + j["error"].value("reason", "");
  } catch (const json::exception&) {
  }
  return body.substr(0, 200);
}

json ExitJson(const ExitReport& r) {
  json j = {{"job", r.job},      {"attempt", r.attempt}, {"exit_code", nullptr},
            {"signal", nullptr}, {"how", r.how},         {"at", r.at_s}};
  if (r.exit_code) j["exit_code"] = *r.exit_code;
  if (r.signal) j["signal"] = *r.signal;
  return j;
}

std::string StringOr(const json& o, const char* key, const std::string& def) {
  if (!o.contains(key) || o[key].is_null()) return def;
  return o[key].get<std::string>();
}

int64_t IntOr(const json& o, const char* key, int64_t def) {
  if (!o.contains(key) || o[key].is_null()) return def;
  return o[key].get<int64_t>();
}

}  // namespace

Agent::Agent(AgentOptions opt, Clock& clock)
    : opt_(std::move(opt)),
      clock_(clock),
      health_(opt_.health_cmd, opt_.health_interval_ms, opt_.health_timeout_ms, clock),
      log_dir_(opt_.data_dir + "/logs") {
  if (opt_.heartbeat_ms > 0) heartbeat_interval_ms_ = opt_.heartbeat_ms;
}

Agent::~Agent() { Shutdown(); }

Result<std::string> Agent::StartLogService() {
  std::error_code ec;
  std::filesystem::create_directories(log_dir_, ec);
  if (ec) return Fail("--data", fmt::format("cannot create {}: {}", log_dir_, ec.message()));

  const size_t colon = opt_.logs_listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Fail("--logs-listen", "'" + opt_.logs_listen + "' is not HOST:PORT");
  const std::string host = opt_.logs_listen.substr(0, colon);
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(opt_.logs_listen.substr(colon + 1), &used);
    if (used != opt_.logs_listen.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535)
    return Fail("--logs-listen", "'" + opt_.logs_listen + "' has no valid port");

  if (opt_.logs_tls_cert.empty() != opt_.logs_tls_key.empty())
    return Fail("--logs-tls-cert", "HTTPS needs both --logs-tls-cert and --logs-tls-key");
  const bool tls = !opt_.logs_tls_cert.empty();
  if (tls) {
    auto certs = tls::TlsCertificates::Load(opt_.logs_tls_cert, opt_.logs_tls_key,
                                            "--logs-tls-cert", "--logs-tls-key");
    if (!certs) return tl::unexpected(certs.error());
    auto server =
        std::make_unique<httplib::SSLServer>(opt_.logs_tls_cert.c_str(), opt_.logs_tls_key.c_str());
    if (!server->is_valid())
      return Fail("--logs-tls-cert", "cannot use " + opt_.logs_tls_cert + " with " +
                                         opt_.logs_tls_key +
                                         ": not a readable PEM certificate and its private key");
    logs_certs_ = std::move(*certs);
    logs_certs_->ServeOn(server->ssl_context());
    logs_server_ = std::move(server);
  } else {
    logs_server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& svr = *logs_server_;
  svr.new_task_queue = [] { return new httplib::ThreadPool(4); };
  svr.set_keep_alive_max_count(4);
  svr.set_read_timeout(5, 0);
  svr.set_write_timeout(5, 0);
  svr.Get(R"(/logs/(\d+)/(\d+)/(stdout|stderr))", [this](const httplib::Request& req,
                                                         httplib::Response& res) {
    const std::string auth = req.get_header_value("Authorization");
    if (!SameSecret(auth, "Bearer " + opt_.token)) {
      res.status = 401;
      res.set_content(ErrorBody("authorization", "missing or wrong agent token"),
                      "application/json");
      return;
    }
    int64_t job = 0, attempt = 0, offset = 0;
    try {
      job = std::stoll(req.matches[1]);
      attempt = std::stoll(req.matches[2]);
      if (req.has_param("offset")) {
        size_t used = 0;
        const std::string o = req.get_param_value("offset");
        offset = std::stoll(o, &used);
        if (used != o.size() || offset < 0) throw std::invalid_argument("offset");
      }
    } catch (const std::exception&) {
      res.status = 400;
      res.set_content(ErrorBody("offset", "must be a non-negative integer"), "application/json");
      return;
    }
    const std::string path = LogPath(log_dir_, job, attempt, req.matches[3]);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      res.status = 404;
      res.set_content(
          ErrorBody("job", fmt::format("no log for job {} attempt {} here", job, attempt)),
          "application/json");
      return;
    }
    in.seekg(0, std::ios::end);
    const int64_t size = static_cast<int64_t>(in.tellg());
    const int64_t from = std::min(offset, size);
    const int64_t n = std::min(size - from, kMaxLogChunk);
    std::string bytes(static_cast<size_t>(n), '\0');
    in.seekg(from);
    in.read(bytes.data(), n);
    bytes.resize(static_cast<size_t>(in.gcount()));
    bool running = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const RunningEntry& r : snap_running_)
        running = running || (r.job == job && r.attempt == attempt);
    }
    res.set_header("X-Hourglass-Offset", std::to_string(from + static_cast<int64_t>(bytes.size())));
    // Done: the attempt does not run here and everything written has been served.
    res.set_header("X-Hourglass-Done", !running && from + static_cast<int64_t>(bytes.size()) >= size
                                           ? "true"
                                           : "false");
    res.set_content(bytes, "text/plain");
  });

  int bound = port;
  if (port == 0) {
    bound = svr.bind_to_any_port(host);
    if (bound <= 0) return Fail("--logs-listen", "cannot bind " + opt_.logs_listen);
  } else if (!svr.bind_to_port(host, port)) {
    return Fail("--logs-listen", "cannot bind " + opt_.logs_listen);
  }
  // A wildcard bind is reached through the node's name, which is what the server knows it by.
  const std::string url_host = (host == "0.0.0.0" || host == "::") ? opt_.node : host;
  logs_url_ = fmt::format("{}://{}:{}", tls ? "https" : "http", url_host, bound);
  logs_thread_ = std::thread([this] { logs_server_->listen_after_bind(); });
  return logs_url_;
}

void Agent::Shutdown() {
  if (logs_server_) {
    logs_server_->stop();
    if (logs_thread_.joinable()) logs_thread_.join();
    logs_server_.reset();
  }
  if (opt_.stop_jobs_on_exit)
    for (auto& [k, p] : jobs_) p->Kill();
}

Agent::Reply Agent::Post(const std::string& path, const std::string& body) {
  Reply out;
  assert(!opt_.server_urls.empty());
  // Only a server that could not be connected to is passed over (a standby binds its port when
  // it takes over); one that got the request and did not answer is asked again next time.
  for (size_t tried = 0; tried < opt_.server_urls.size(); ++tried) {
    const size_t at = (server_ + tried) % opt_.server_urls.size();
    httplib::Client cli(opt_.server_urls[at]);
    if (!opt_.ca_file.empty()) cli.set_ca_cert_path(opt_.ca_file);
    cli.set_connection_timeout(std::chrono::milliseconds(opt_.connect_timeout_ms));
    cli.set_read_timeout(std::chrono::milliseconds(opt_.read_timeout_ms));
    cli.set_write_timeout(std::chrono::milliseconds(opt_.read_timeout_ms));
    cli.set_bearer_token_auth(opt_.token);
    auto res = cli.Post(path, body, "application/json");
    if (!res) {
      out.error += (out.error.empty() ? "" : "; ") + opt_.server_urls[at] + ": " +
                   httplib::to_string(res.error());
      if (res.error() == httplib::Error::Connection) continue;
      return out;
    }
    if (at != server_)
      spdlog::info("agent {}: now reporting to {}", opt_.node, opt_.server_urls[at]);
    server_ = at;
    out.status = res->status;
    out.body = res->body;
    return out;
  }
  return out;
}

void Agent::NoteServerFailure(const std::string& what) {
  if (!server_failing_) spdlog::warn("agent {}: {}", opt_.node, what);
  server_failing_ = true;
}

void Agent::Register() {
  json running = json::array();
  for (const auto& [k, p] : jobs_)
    if (!p->ended())
      running.push_back({{"job", k.first}, {"attempt", k.second}, {"pid", p->pid()}});
  json labels = json::object();
  for (const auto& [k, v] : opt_.inventory.labels) labels[k] = v;
  const json body = {{"node", opt_.node},     {"gpus", opt_.inventory.gpus},
                     {"labels", labels},      {"gpu_source", opt_.inventory.gpu_source},
                     {"logs_url", logs_url_}, {"running", running}};
  const Reply r = Post("/v1/agents/register", body.dump());
  const int64_t now = clock_.MonotonicMs();
  if (r.status != 200) {
    NoteServerFailure(r.status == 0 ? "server unreachable (" + r.error + "); retrying"
                                    : fmt::format("register refused ({}): {}; retrying", r.status,
                                                  ErrorText(r.body)));
    next_register_ms_ = now + opt_.retry_ms;
    return;
  }
  int64_t heartbeat_s = 1;
  try {
    const json j = json::parse(r.body);
    heartbeat_s = IntOr(j, "heartbeat_s", 1);
  } catch (const json::exception& e) {
    spdlog::warn("agent {}: register reply unreadable ({}); heartbeat every 1 s", opt_.node,
                 e.what());
  }
  if (opt_.heartbeat_ms <= 0) heartbeat_interval_ms_ = std::max<int64_t>(100, heartbeat_s * 1000);
  registered_ = true;
  server_failing_ = false;
  next_heartbeat_ms_ = now;  // report exits and fetch orders at once
  spdlog::info("agent {}: registered ({} GPUs, {} running, heartbeat every {} ms)", opt_.node,
               opt_.inventory.gpus, running.size(), heartbeat_interval_ms_);
}

void Agent::Heartbeat() {
  // Each attempt's CPU time so far: the server reads a session's use from its growth.
  std::vector<pid_t> groups;
  for (const auto& [k, p] : jobs_)
    if (!p->ended() && p->pid() > 0) groups.push_back(p->pid());
  const std::map<pid_t, double> cpu = GroupCpuSeconds(groups);
  json running = json::array();
  for (const auto& [k, p] : jobs_) {
    if (p->ended()) continue;
    json entry = {{"job", k.first}, {"attempt", k.second}, {"pid", p->pid()}};
    if (auto c = cpu.find(p->pid()); c != cpu.end()) entry["cpu_s"] = c->second;
    running.push_back(std::move(entry));
  }
  json exited = json::array();
  for (const ExitReport& e : unacked_) exited.push_back(ExitJson(e));
  const size_t sent = unacked_.size();
  const HealthStatus& h = health_.status();
  const json body = {{"node", opt_.node},
                     {"health", {{"ok", h.ok}, {"detail", h.detail}}},
                     {"running", running},
                     {"exited", exited}};
  const Reply r = Post("/v1/agents/heartbeat", body.dump());
  const int64_t now = clock_.MonotonicMs();
  next_heartbeat_ms_ = now + heartbeat_interval_ms_;
  if (r.status == 0) {
    // The server is away: jobs keep running; register again (with them) once it answers.
    NoteServerFailure("server unreachable (" + r.error + "); jobs keep running, retrying");
    registered_ = false;
    next_register_ms_ = now + opt_.retry_ms;
    return;
  }
  if (r.status == 404 || r.status == 409) {
    spdlog::info("agent {}: server does not know this node ({}); registering again", opt_.node,
                 r.status);
    registered_ = false;
    next_register_ms_ = now;
    return;
  }
  if (r.status != 200) {
    NoteServerFailure(
        fmt::format("heartbeat refused ({}): {}; retrying", r.status, ErrorText(r.body)));
    return;
  }
  server_failing_ = false;
  // A reply came back after these were sent: the server has them (it ignores duplicates).
  unacked_.erase(unacked_.begin(), unacked_.begin() + static_cast<std::ptrdiff_t>(sent));
  json orders;
  try {
    const json j = json::parse(r.body);
    if (j.contains("orders") && j["orders"].is_array()) orders = j["orders"];
  } catch (const json::exception& e) {
    spdlog::warn("agent {}: heartbeat reply unreadable: {}", opt_.node, e.what());
    return;
  }
  if (orders.is_array())
    for (const json& o : orders) HandleOrder(o.dump());
}

void Agent::HandleOrder(const std::string& order_json) {
  StartSpec spec;
  std::string type;
  std::string invalid;  // a start order we cannot carry out: reported as failed_to_start
  try {
    const json o = json::parse(order_json);
    type = o.at("type").get<std::string>();
    spec.job = o.at("job").get<int64_t>();
    spec.attempt = o.at("attempt").get<int64_t>();
    if (type == "stop") {
      auto it = jobs_.find({spec.job, spec.attempt});
      if (it == jobs_.end()) return;  // not running here: nothing to report
      const int64_t grace_s = std::max<int64_t>(0, IntOr(o, "grace_s", 0));
      spdlog::info("agent {}: stop job {} attempt {} (grace {} s): {}", opt_.node, spec.job,
                   spec.attempt, grace_s, StringOr(o, "reason", ""));
      it->second->Stop(grace_s * 1000);
      return;
    }
    if (type != "start") {
      spdlog::warn("agent {}: unknown order type '{}' ignored", opt_.node, type);
      return;
    }
    try {
      spec.command = o.at("command").get<std::vector<std::string>>();
      if (o.contains("env") && !o["env"].is_null())
        spec.env = o["env"].get<std::map<std::string, std::string>>();
      spec.cwd = StringOr(o, "cwd", "");
      if (o.contains("gpus") && !o["gpus"].is_null()) spec.gpus = o["gpus"].get<std::vector<int>>();
      spec.grace_s = IntOr(o, "grace_s", 0);
      spec.rank = IntOr(o, "rank", 0);
      spec.num_nodes = IntOr(o, "num_nodes", 1);
      spec.master_addr = StringOr(o, "master_addr", "");
      spec.master_port = IntOr(o, "master_port", 0);
    } catch (const json::exception& e) {
      invalid = std::string("malformed start order: ") + e.what();
    }
  } catch (const json::exception& e) {
    spdlog::warn("agent {}: malformed order ignored: {}", opt_.node, e.what());
    return;
  }
  const Key key{spec.job, spec.attempt};
  if (jobs_.count(key) != 0 || ended_.count(key) != 0) return;  // idempotent per attempt
  std::set<int> seen;
  for (int g : spec.gpus) {
    if (!invalid.empty()) break;
    if (g < 0 || g >= opt_.inventory.gpus)
      invalid = fmt::format("GPU {} does not exist on this node ({} GPUs)", g, opt_.inventory.gpus);
    else if (!seen.insert(g).second)
      invalid = fmt::format("GPU {} given twice", g);
  }
  if (!invalid.empty()) {
    spdlog::warn("agent {}: job {} attempt {} not started: {}", opt_.node, spec.job, spec.attempt,
                 invalid);
    ExitReport r;
    r.job = spec.job;
    r.attempt = spec.attempt;
    r.how = "failed_to_start";
    r.detail = invalid;
    r.at_s = clock_.NowMs() / 1000;
    unacked_.push_back(r);
    RememberEnded(key);
    return;
  }
  StartJob(spec);
}

void Agent::StartJob(const StartSpec& spec) {
  auto p = JobProcess::Start(spec, log_dir_, clock_);
  if (!p->start_error().empty())
    spdlog::warn("agent {}: job {} attempt {} failed to start: {}", opt_.node, spec.job,
                 spec.attempt, p->start_error());
  else
    spdlog::info("agent {}: started job {} attempt {} as pid {}", opt_.node, spec.job, spec.attempt,
                 p->pid());
  jobs_[{spec.job, spec.attempt}] = std::move(p);
}

void Agent::RememberEnded(const Key& k) {
  if (!ended_.insert(k).second) return;
  ended_order_.push_back(k);
  if (ended_order_.size() > kMaxEndedRemembered) {
    ended_.erase(ended_order_.front());
    ended_order_.erase(ended_order_.begin());
  }
}

void Agent::Step() {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (auto r = it->second->Poll()) {
      spdlog::info("agent {}: job {} attempt {} ended: {} (code {}, signal {})", opt_.node, r->job,
                   r->attempt, r->how, r->exit_code ? *r->exit_code : -1,
                   r->signal ? *r->signal : 0);
      unacked_.push_back(*r);
      RememberEnded(it->first);
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
  // Published before the heartbeat too: once the server has an exit, Running() no longer lists
  // the job (a test saw the exit at the server while the old snapshot still held the job).
  PublishSnapshot();
  health_.Tick();
  const int64_t now = clock_.MonotonicMs();
  if (opt_.log_retention_ms > 0 && now >= next_prune_ms_) {
    next_prune_ms_ = now + 3'600'000;
    const PruneResult pruned = PruneLogs(log_dir_, clock_.NowMs(), opt_.log_retention_ms,
                                         [&](int64_t job, int64_t attempt) {
                                           return jobs_.count({job, attempt}) > 0;
                                         });
    if (pruned.files > 0)
      spdlog::info("agent {}: removed {} log files ({} bytes) of runs ended over {} days ago",
                   opt_.node, pruned.files, pruned.bytes, opt_.log_retention_ms / 86'400'000);
  }
  // A renewed log-service certificate is served from the next handshake on (as the server's).
  if (logs_certs_ && now >= next_cert_check_ms_) {
    next_cert_check_ms_ = now + kCertCheckMs;
    tls::ReloadAndLog(*logs_certs_, "agent " + opt_.node + " log service");
  }
  if (!registered_ && now >= next_register_ms_) Register();
  if (registered_ && clock_.MonotonicMs() >= next_heartbeat_ms_) Heartbeat();
  PublishSnapshot();
}

void Agent::PublishSnapshot() {
  std::vector<RunningEntry> running;
  for (const auto& [k, p] : jobs_)
    if (!p->ended()) running.push_back({k.first, k.second, p->pid()});
  std::lock_guard<std::mutex> lock(mu_);
  snap_registered_ = registered_;
  snap_running_ = std::move(running);
  snap_unacked_ = unacked_.size();
}

void Agent::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    Step();
    // The daemon's one wait: short, so grace deadlines and reaping stay within a tick.
    std::this_thread::sleep_for(std::chrono::milliseconds(opt_.tick_ms));
  }
  if (opt_.stop_jobs_on_exit && !jobs_.empty()) {
    spdlog::info("agent {}: exiting; stopping {} job(s)", opt_.node, jobs_.size());
    for (auto& [k, p] : jobs_) p->Stop(opt_.exit_grace_ms);
    while (!jobs_.empty()) {  // bounded: Poll SIGKILLs each group at its deadline
      for (auto it = jobs_.begin(); it != jobs_.end();) {
        if (auto r = it->second->Poll()) {
          unacked_.push_back(*r);
          it = jobs_.erase(it);
        } else {
          ++it;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(opt_.tick_ms));
    }
    if (registered_) Heartbeat();  // best effort: tell the server how they ended
  }
  Shutdown();
}

bool Agent::registered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snap_registered_;
}

std::vector<RunningEntry> Agent::Running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snap_running_;
}

size_t Agent::UnackedExits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snap_unacked_;
}

}  // namespace hg::agent
