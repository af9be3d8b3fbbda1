// What GET /v1/usage costs the server: State::UsageJson runs under the state's lock, so while it
// works no request is answered and no cycle runs. A tree of 10 programs x 10 projects x 10
// researchers (1,110 budgets), a node of 8 GPUs, and `starts` funded starts in the window, whose
// queue waits the answer summarises per budget and class. The baseline in the same run is
// State::BudgetsJson, which walks the same tree once.
//
// Run: cmake --build --preset release --target usage_bench && build/release/bench/usage_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "server/requests.h"
#include "server/state.h"
#include "server/test_clock.h"
#include "store/sqlite_store.h"
#include "store/test_dir.h"

namespace {

using hg::BudgetSpec;
using nlohmann::json;
namespace server = hg::server;
namespace store = hg::store;

const store::PrincipalRecord kAdmin{"admin", "admin"};
constexpr int64_t kT0Ms = int64_t{1700000000} * 1000;

struct World {
  store::TestDir dir;
  server::ManualClock clock{kT0Ms};
  std::unique_ptr<store::Store> st;
  std::unique_ptr<server::State> state;
  std::vector<std::string> leaves;
};

// Builds the world and runs `starts` one-GPU jobs of the leaves in turn to their end, each
// started by a cycle: the funded starts the usage answer summarises.
std::unique_ptr<World> MakeWorld(int starts, benchmark::State& bs) {
  auto w = std::make_unique<World>();
  auto st = store::OpenSqliteStore(w->dir.path() + "/hourglass.db");
  if (!st) {
    bs.SkipWithError(st.error().ToString().c_str());
    return nullptr;
  }
  w->st = std::move(*st);
  server::StateOptions o;
  for (int p = 0; p < 10; ++p) {
    const std::string prog = "prog" + std::to_string(p);
    o.initial_budgets.push_back(BudgetSpec{prog, "", 1.0, std::nullopt, {}, 0});
    for (int q = 0; q < 10; ++q) {
      const std::string proj = prog + ".proj" + std::to_string(q);
      o.initial_budgets.push_back(BudgetSpec{proj, prog, 1.0, std::nullopt, {}, 0});
      for (int r = 0; r < 10; ++r) {
        w->leaves.push_back(proj + ".r" + std::to_string(r));
        o.initial_budgets.push_back(BudgetSpec{w->leaves.back(), proj, 1.0, std::nullopt, {}, 0});
      }
    }
  }
  auto s = server::State::Open(*w->st, w->clock, o);
  if (!s) {
    bs.SkipWithError(s.error().ToString().c_str());
    return nullptr;
  }
  w->state = std::move(*s);
  auto reg = server::ParseRegistration(
      {{"node", "n1"}, {"gpus", 8}, {"labels", {{"block", "b0"}}}, {"running", json::array()}});
  if (!reg || !w->state->Register(*reg)) {
    bs.SkipWithError("register");
    return nullptr;
  }
  int64_t now = kT0Ms;
  for (int i = 0; i < starts; ++i) {
    const std::string& leaf = w->leaves[static_cast<size_t>(i) % w->leaves.size()];
    auto rec = server::ParseJobRequest({{"budget", leaf}, {"gpus", 1}, {"command", {"x"}}});
    if (!rec) {
      bs.SkipWithError(rec.error().reason.c_str());
      return nullptr;
    }
    auto id = w->state->Submit(kAdmin, *rec);
    if (!id) {
      bs.SkipWithError(id.error().reason.c_str());
      return nullptr;
    }
    now += 1000;
    w->clock.Set(now);
    (void)w->state->Tick();  // starts it
    // Its end, reported by the agent, so the next job's start finds a free GPU.
    auto hb = server::ParseHeartbeat({{"node", "n1"},
                                      {"health", {{"ok", true}, {"detail", ""}}},
                                      {"running", json::array()},
                                      {"exited",
                                       {{{"job", id->id},
                                         {"attempt", 1},
                                         {"exit_code", 0},
                                         {"signal", nullptr},
                                         {"how", "exited"},
                                         {"at", 0}}}}});
    if (!hb || !w->state->OnHeartbeat(*hb)) {
      bs.SkipWithError("heartbeat");
      return nullptr;
    }
  }
  w->clock.Set(now + 1000);
  return w;
}

void BM_UsageJson(benchmark::State& bs) {
  auto w = MakeWorld(static_cast<int>(bs.range(0)), bs);
  if (!w) return;
  size_t budgets = 0;
  for (auto _ : bs) {
    auto r = w->state->UsageJson("");
    benchmark::DoNotOptimize(r);
    budgets = r ? (*r)["budgets"].size() : 0;
  }
  bs.counters["budgets"] = static_cast<double>(budgets);
}
BENCHMARK(BM_UsageJson)->Arg(0)->Arg(5000)->Unit(benchmark::kMillisecond);

void BM_BaselineBudgetsJson(benchmark::State& bs) {
  auto w = MakeWorld(0, bs);
  if (!w) return;
  for (auto _ : bs) benchmark::DoNotOptimize(w->state->BudgetsJson());
}
BENCHMARK(BM_BaselineBudgetsJson)->Unit(benchmark::kMillisecond);

}  // namespace
