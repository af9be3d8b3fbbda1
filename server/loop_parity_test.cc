// The server and the simulator run one loop: the same scenario, driven through State (a real
// SQLite store, a clock the test moves a second at a time, and an agent that runs each job for
// its duration and leaves a grace period after a stop order) and through sim::Simulate, gives the
// same starts, stops and final states, to the second. It covers what makes a tick run a cycle:
// submissions, ends, a victim leaving after its grace, a protection and a max_runtime running out
// (wake-ups), and an operator's drain; and, between them, ticks that must not decide anything.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/policy.h"
#include "server/requests.h"
#include "server/state.h"
#include "server/test_clock.h"
#include "sim/engine.h"
#include "sim/scenario.h"
#include "store/sqlite_store.h"
#include "store/test_dir.h"

namespace hg::server {
namespace {

using nlohmann::json;

// A job of the scenario; its id is its position + 1, the order the server numbers them in.
struct Job {
  int64_t submit = 0;
  int32_t gpus = 1;
  std::string budget;  // empty: unfunded
  int64_t duration = 0;
  int64_t min_runtime = 0;
  std::optional<int64_t> max_runtime;
  int64_t grace = 25;
};

// What happened to one job: its starts and preemptions (seconds since the start) and how it
// ended.
struct Story {
  std::vector<int64_t> starts, stops;
  std::string final_state;
  friend bool operator==(const Story&, const Story&) = default;
};

std::ostream& operator<<(std::ostream& o, const Story& s) {
  o << "starts";
  for (int64_t t : s.starts) o << " " << t;
  o << ", stops";
  for (int64_t t : s.stops) o << " " << t;
  return o << ", " << s.final_state;
}

constexpr int64_t kNodeGpus = 8;
constexpr int64_t kDrainAt = 2753;

// Event times avoid the multiples of 10 s where they need not meet a tick, so neither side
// depends on the order of an event and a cycle at one instant.
Job MakeJob(int64_t submit, int32_t gpus, std::string budget, int64_t duration) {
  Job j;
  j.submit = submit;
  j.gpus = gpus;
  j.budget = std::move(budget);
  j.duration = duration;
  return j;
}

std::vector<Job> Workload() {
  std::vector<Job> w;
  // An unfunded sweep fills the node until funded work comes.
  w.push_back(MakeJob(3, 8, "", 100000));
  // b's work stops it (unfunded first); it starts once the sweep's grace is over.
  w.push_back(MakeJob(13, 4, "b", 5000));
  w.back().min_runtime = 1000;
  w.push_back(MakeJob(57, 4, "b", 3000));
  // a, far below its share, needs the whole node: it waits for the protection of b's first job
  // to end (a wake-up, no event), then stops both of b's jobs.
  w.push_back(MakeJob(403, 8, "a", 1000));
  // Waits for the node; max_runtime ends its run (another wake-up).
  w.push_back(MakeJob(1203, 1, "a", 10000));
  w.back().max_runtime = 500;
  // Protected when the operator drains the node: stopped when its protection ends.
  w.push_back(MakeJob(2703, 2, "b", 5000));
  w.back().min_runtime = 200;
  return w;
}

constexpr int64_t kEnd = 3600;

std::vector<BudgetSpec> Budgets() {
  return {BudgetSpec{"a", "", 1000.0, std::nullopt, {}, 0},
          BudgetSpec{"b", "", 1.0, std::nullopt, {}, 0}};
}

// `timer`: the waiting timer's period in seconds, 0 for none; `max_gap` likewise.
std::map<int64_t, Story> Simulated(const std::vector<Job>& jobs, int64_t timer, int64_t max_gap,
                                   int64_t* cycles) {
  sim::Scenario sc;
  sc.name = "parity";
  sc.end = Seconds(kEnd);
  sc.nodes = {sim::NodeSpec{"n0", static_cast<int32_t>(kNodeGpus), "b0", 0}};
  sc.budgets = Budgets();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    sim::SimJob s;
    s.spec.id = JobId(static_cast<int64_t>(i) + 1);
    s.spec.submit = Seconds(j.submit);
    s.spec.gpus = Gpus(j.gpus);
    s.spec.job_class = j.budget.empty() ? "sweep" : "batch";
    s.spec.min_runtime = Seconds(j.min_runtime);
    if (j.max_runtime) s.spec.max_runtime = Seconds(*j.max_runtime);
    s.spec.grace = Seconds(j.grace);
    s.budget = j.budget;
    s.duration = Seconds(j.duration);
    sc.jobs.push_back(s);
  }
  sim::TimedEvent drain;
  drain.at = Seconds(kDrainAt);
  drain.kind = sim::EventKind::kDrain;
  drain.target = "n0";
  drain.reason = "disk";
  sc.events.push_back(drain);
  sim::SimOptions opt;  // the defaults: the 10 s tick, the server's
  opt.policy = DeployedConfig();
  opt.cycle_while_waiting = timer > 0;
  opt.timer = Seconds(timer);
  opt.max_gap = Seconds(max_gap);
  auto policy = MakePolicy("hourglass", opt.policy);
  EXPECT_TRUE(policy);
  auto r = sim::Simulate(sc, **policy, opt);
  EXPECT_TRUE(r) << r.error().ToString();
  std::map<int64_t, Story> out;
  if (!r) return out;
  *cycles = r->cycles;
  std::map<int64_t, int64_t> submit;
  for (size_t i = 0; i < jobs.size(); ++i) submit[static_cast<int64_t>(i) + 1] = jobs[i].submit;
  for (const sim::JobRecord& j : r->jobs) {
    Story& s = out[j.id.value()];
    // Each job here starts at most once, so its wait counts from its submission.
    EXPECT_LE(j.waits.size(), 1u);
    for (Seconds w : j.waits) s.starts.push_back(submit[j.id.value()] + w.value());
    s.final_state = ToString(j.final_state);
  }
  for (const sim::PreemptionRecord& p : r->preemptions)
    out[p.job.value()].stops.push_back(p.at.value());
  return out;
}

// An agent for node n0 that runs each attempt for its job's duration and ends a stopped one
// after its grace period, reporting on the heartbeats the test sends.
class Agent {
 public:
  Agent(State& state, const std::vector<Job>& jobs) : state_(state), jobs_(jobs) {}

  void Beat(int64_t now) {
    json running = json::array(), exited = json::array();
    for (auto it = runs_.begin(); it != runs_.end();) {
      const Run& r = it->second;
      const bool done = now >= r.ends_at, killed = r.kill_at && now >= *r.kill_at;
      if (done || killed) {
        exited.push_back({{"job", it->first.first},
                          {"attempt", it->first.second},
                          {"exit_code", done && !killed ? json(0) : json(nullptr)},
                          {"signal", done && !killed ? json(nullptr) : json(15)},
                          {"how", done && !killed ? "exited" : "stopped"},
                          {"at", 0}});
        it = runs_.erase(it);
        continue;
      }
      running.push_back({{"job", it->first.first}, {"attempt", it->first.second}, {"pid", 1}});
      ++it;
    }
    auto hb = ParseHeartbeat({{"node", "n0"},
                              {"health", {{"ok", true}, {"detail", ""}}},
                              {"running", running},
                              {"exited", exited}});
    ASSERT_TRUE(hb) << hb.error().reason;
    auto reply = state_.OnHeartbeat(*hb);
    ASSERT_TRUE(reply) << reply.error().reason;
    for (const json& o : (*reply)["orders"]) {
      const std::pair<int64_t, int32_t> key{o["job"].get<int64_t>(), o["attempt"].get<int32_t>()};
      if (o["type"] == "start") {
        const Job& j = jobs_[static_cast<size_t>(key.first - 1)];
        runs_[key] = Run{now + j.duration, std::nullopt};
      } else if (o["type"] == "stop") {
        auto it = runs_.find(key);
        if (it != runs_.end() && !it->second.kill_at)
          it->second.kill_at = now + o["grace_s"].get<int64_t>();
      }
    }
  }

 private:
  struct Run {
    int64_t ends_at;
    std::optional<int64_t> kill_at;
  };
  State& state_;
  const std::vector<Job>& jobs_;
  std::map<std::pair<int64_t, int32_t>, Run> runs_;
};

// The server's side: a second at a time, the submissions and the agent's report of that second
// first, then, on a multiple of 10 s, the scheduler's tick, after which the agent takes its
// orders and confirms the starts at once (its next heartbeat, in the same second).
std::map<int64_t, Story> Served(const std::vector<Job>& jobs, int64_t timer, int64_t max_gap,
                                int64_t* cycles, std::vector<int64_t>* max_runtime_stops) {
  store::TestDir dir;
  ManualClock clock;
  // The run's 0 s is a multiple of the tick and of the timer since the Unix epoch, as the
  // simulator's 0 s is of its own: both grids start there.
  const int64_t epoch = 999999960;  // 16,666,666 minutes
  EXPECT_EQ(epoch % 60, 0);
  auto st = store::OpenSqliteStore(dir.path() + "/hourglass.db");
  EXPECT_TRUE(st);
  StateOptions o;
  o.config = DeployedConfig();
  o.timer_ms = timer * 1000;
  o.max_gap_ms = max_gap * 1000;
  o.lost_after_s = 86400;
  o.initial_budgets = Budgets();
  auto state = State::Open(**st, clock, o);
  EXPECT_TRUE(state) << state.error().ToString();
  const store::PrincipalRecord admin{"admin", "admin"};
  auto reg = ParseRegistration({{"node", "n0"},
                                {"gpus", kNodeGpus},
                                {"labels", {{"block", "b0"}}},
                                {"running", json::array()}});
  EXPECT_TRUE(reg);
  // The node registers, and the server acts on it, a tick before the run: the simulator's
  // node is there from the start.
  clock.Set((epoch - 10) * 1000);
  EXPECT_TRUE((*state)->Register(*reg));
  EXPECT_TRUE((*state)->Tick().value_or(false));
  Agent agent(**state, jobs);
  *cycles = 0;
  size_t next = 0;
  for (int64_t t = 0; t < kEnd; ++t) {
    clock.Set((epoch + t) * 1000);
    while (next < jobs.size() && jobs[next].submit == t) {
      const Job& j = jobs[next++];
      json body = {{"gpus", j.gpus},
                   {"class", j.budget.empty() ? "sweep" : "batch"},
                   {"min_runtime_s", j.min_runtime},
                   {"grace_s", j.grace},
                   {"command", {"x"}}};
      if (!j.budget.empty()) body["budget"] = j.budget;
      if (j.max_runtime) body["max_runtime_s"] = *j.max_runtime;
      auto rec = ParseJobRequest(body);
      EXPECT_TRUE(rec) << rec.error().reason;
      auto id = (*state)->Submit(admin, *rec);
      EXPECT_TRUE(id) << id.error().reason;
      EXPECT_EQ(id->id, static_cast<int64_t>(next));
    }
    if (t == kDrainAt) {
      EXPECT_TRUE((*state)->Drain("n0", "disk", std::nullopt));
    }
    agent.Beat(t);
    if (t % 10 != 0) continue;
    auto ran = (*state)->Tick();
    EXPECT_TRUE(ran) << ran.error().ToString();
    *cycles += ran && *ran;
    agent.Beat(t);  // takes the orders
    agent.Beat(t);  // confirms the starts
  }
  std::map<int64_t, Story> out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const int64_t id = static_cast<int64_t>(i) + 1;
    auto events = (*state)->JobEventsJson(admin, id);
    EXPECT_TRUE(events);
    Story& s = out[id];
    for (const json& e : (*events)["events"]) {
      const int64_t at = e["at"].get<int64_t>() - epoch;
      if (e["kind"] == "started") s.starts.push_back(at);
      // Preemptions, as the simulator records them; a max_runtime stop is "stopping" and ends
      // the job "failed" (compared as the final state).
      if (e["kind"] == "preempting") s.stops.push_back(at);
      if (e["kind"] == "stopping") max_runtime_stops->push_back(at);
    }
    s.final_state = (*(*state)->JobJson(admin, id))["state"];
  }
  return out;
}

// Runs both sides and compares every job's story and the number of cycles.
void ExpectParity(int64_t timer, int64_t max_gap, std::map<int64_t, Story>* served_out,
                  int64_t* cycles_out, std::vector<int64_t>* max_runtime_stops) {
  const std::vector<Job> jobs = Workload();
  int64_t sim_cycles = 0;
  const std::map<int64_t, Story> simulated = Simulated(jobs, timer, max_gap, &sim_cycles);
  int64_t cycles = 0;
  const std::map<int64_t, Story> served = Served(jobs, timer, max_gap, &cycles, max_runtime_stops);
  ASSERT_EQ(served.size(), jobs.size());
  for (const auto& [id, story] : served)
    EXPECT_EQ(story, simulated.at(id))
        << "job " << id << ": server " << story << "; simulator " << simulated.at(id);
  EXPECT_EQ(cycles, sim_cycles);
  *served_out = served;
  *cycles_out = cycles;
}

// The two sides' default loops are the same: no waiting timer, and the same max gap.
int64_t DefaultMaxGap() {
  const int64_t gap = sim::SimOptions{}.max_gap.value();
  EXPECT_EQ(StateOptions{}.max_gap_ms, gap * 1000);
  EXPECT_EQ(StateOptions{}.timer_ms, 0);
  EXPECT_FALSE(sim::SimOptions{}.cycle_while_waiting);
  return gap;
}

TEST(LoopParity, TheServerAndTheSimulatorStartAndStopTheSameJobsAtTheSameSeconds) {
  std::map<int64_t, Story> served;
  int64_t cycles = 0;
  std::vector<int64_t> max_runtime_stops;
  ExpectParity(0, DefaultMaxGap(), &served, &cycles, &max_runtime_stops);
  ASSERT_EQ(served.size(), 6u);
  // The scenario does what it is meant to: the sweep is stopped for b; a's gang waits for the
  // protection of b's first job (started at 50 s, 1,000 s) and then stops both; max_runtime ends
  // a's second job; the drain waits for the protection of b's last job.
  EXPECT_EQ(served.at(1).stops, std::vector<int64_t>({20}));
  EXPECT_EQ(served.at(2).starts, std::vector<int64_t>({50}));
  EXPECT_EQ(served.at(2).stops, std::vector<int64_t>({1050}));
  EXPECT_EQ(served.at(4).starts, std::vector<int64_t>({1080}));
  EXPECT_EQ(served.at(5).starts, std::vector<int64_t>({2080}));
  EXPECT_EQ(max_runtime_stops, std::vector<int64_t>({2580}));
  EXPECT_EQ(served.at(5).final_state, "failed");
  EXPECT_EQ(served.at(6).stops.size(), 1u);
  // Far fewer cycles than the 360 ticks: the loop idles between events.
  EXPECT_LT(cycles, 40);
}

// The cycles a loop with `timer` and `max_gap` (seconds) runs beyond one on events only, the
// server and the simulator agreeing under both.
int64_t ExtraCycles(int64_t timer, int64_t max_gap) {
  std::map<int64_t, Story> served;
  int64_t cycles = 0, cycles_events = 0;
  std::vector<int64_t> stops;
  ExpectParity(timer, max_gap, &served, &cycles, &stops);
  ExpectParity(0, 0, &served, &cycles_events, &stops);
  return cycles - cycles_events;
}

// With a waiting timer of 60 s (`hourglass server --timer-ms 60000`, `hourglass sim --timer 60`):
// while a's gang waits (410-1050 s) and a's second job waits (1203-2080 s), the timer's ticks on
// the multiples of 60 s are cycles no event asked for.
TEST(LoopParity, WithAWaitingTimerTheyStillAgree) { EXPECT_GE(ExtraCycles(60, 0), 20); }

// The default bound on the gap between cycles while a job waits (`--max-gap-ms 300000`, `--max-gap
// 300`): those waits of 640 s and 877 s get a cycle every 300 s, which events only would not.
TEST(LoopParity, TheDefaultMaxGapAddsCyclesWhereEventsOnlyWouldNot) {
  EXPECT_GE(ExtraCycles(0, DefaultMaxGap()), 4);
}

}  // namespace
}  // namespace hg::server
