// For server/*_test.cc that drive State in process: a real store (SQLite in a fresh temp dir;
// PostgreSQL when HOURGLASS_TEST_STORE=postgresql, see test_store.h), a clock the test moves, one
// node "n1" and an agent the test beats by hand.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "server/requests.h"
#include "server/state.h"
#include "server/test_clock.h"
#include "server/test_store.h"
#include "store/sqlite_store.h"
#include "store/test_dir.h"

namespace hg::server::testing {

inline const store::PrincipalRecord kAdmin{"admin", "admin"};

// One node "n1" of `gpus` GPUs, registered at 0 s; budgets "a" (share `share_a`) and "b" (share
// 1). Times are seconds after 1,000,000 s since the epoch. No max gap unless given (the server's
// default is 300 s), so that each test sees only the rule it is about.
class Loop {
 public:
  explicit Loop(int gpus, int64_t timer_ms = 0, int64_t lost_after_s = 86400, double share_a = 1.0,
                int64_t max_gap_ms = 0, const std::function<void(StateOptions&)>& tweak = {})
      : clock_(int64_t{1000000} * 1000), gpus_(gpus) {
    if (TestOnPostgresql()) {
      pg_ = std::make_unique<store::PgTestServer>();
      EXPECT_EQ(pg_->error(), "");
    }
    auto st = pg_ ? store::OpenPgStore(pg_->Conninfo())
                  : store::OpenSqliteStore(dir_.path() + "/hourglass.db");
    EXPECT_TRUE(st) << st.error().ToString();
    store_ = std::move(*st);
    opt_.lost_after_s = lost_after_s;  // by default long: the test beats only when it needs to
    opt_.timer_ms = timer_ms;
    opt_.max_gap_ms = max_gap_ms;
    opt_.initial_budgets = {BudgetSpec{"a", "", share_a, std::nullopt, {}, 0},
                            BudgetSpec{"b", "", 1.0, std::nullopt, {}, 0}};
    if (tweak) tweak(opt_);
    Open();
  }

  // The server restarts on the same store (its clock where it was); the node registers again
  // with the attempts it runs.
  void Restart() {
    state_.reset();
    Open();
  }

  // Seconds since the start.
  void At(int64_t s) { clock_.Set((int64_t{1000000} + s) * 1000); }
  bool Tick() {
    auto ran = state_->Tick();
    EXPECT_TRUE(ran) << ran.error().ToString();
    return ran && *ran;
  }
  int64_t Submit(const nlohmann::json& body) {
    auto rec = ParseJobRequest(body);
    EXPECT_TRUE(rec) << rec.error().reason;
    auto done = state_->Submit(kAdmin, *rec);
    EXPECT_TRUE(done) << done.error().reason;
    return done ? done->id : 0;
  }
  std::string StateOf(int64_t id) { return Field(id, "state"); }
  std::string Field(int64_t id, const char* field) {
    auto j = state_->JobJson(kAdmin, id);
    EXPECT_TRUE(j);
    return j ? (*j)[field].get<std::string>() : "";
  }
  // A heartbeat from n1 that lists every start order as running (confirms the starts). With
  // `end_stopped`, the attempts it was told to stop before this beat are reported as ended (by
  // signal 15) instead, as an agent does once their grace is over.
  void Beat(bool end_stopped = false) {
    nlohmann::json running = nlohmann::json::array(), exited = nlohmann::json::array();
    for (const nlohmann::json& r : running_) {
      const std::pair<int64_t, int32_t> key{r["job"].get<int64_t>(), r["attempt"].get<int32_t>()};
      if (end_stopped && stop_ordered_.count(key))
        exited.push_back({{"job", key.first},
                          {"attempt", key.second},
                          {"exit_code", nullptr},
                          {"signal", 15},
                          {"how", "stopped"},
                          {"at", 0}});
      else
        running.push_back(r);
    }
    running_ = running;
    auto hb = ParseHeartbeat({{"node", "n1"},
                              {"health", {{"ok", true}, {"detail", ""}}},
                              {"running", running_},
                              {"exited", exited}});
    ASSERT_TRUE(hb);
    auto r = state_->OnHeartbeat(*hb);
    ASSERT_TRUE(r);
    for (const nlohmann::json& o : (*r)["orders"]) {
      if (o["type"] == "start")
        running_.push_back({{"job", o["job"]}, {"attempt", o["attempt"]}, {"pid", 1}});
      if (o["type"] == "stop")
        stop_ordered_.insert({o["job"].get<int64_t>(), o["attempt"].get<int32_t>()});
    }
  }
  State& state() { return *state_; }

 private:
  void Open() {
    auto s = State::Open(*store_, clock_, opt_);
    EXPECT_TRUE(s) << s.error().ToString();
    state_ = std::move(*s);
    auto reg = ParseRegistration(
        {{"node", "n1"}, {"gpus", gpus_}, {"labels", {{"block", "b0"}}}, {"running", running_}});
    EXPECT_TRUE(reg);
    EXPECT_TRUE(state_->Register(*reg));
  }

  store::TestDir dir_;
  std::unique_ptr<store::PgTestServer> pg_;  // before store_: it outlives the store
  ManualClock clock_;
  int gpus_;
  StateOptions opt_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<State> state_;
  nlohmann::json running_ = nlohmann::json::array();
  std::set<std::pair<int64_t, int32_t>> stop_ordered_;
};

}  // namespace hg::server::testing
