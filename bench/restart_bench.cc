// What a server's start (State::Open, the recovery) costs as the site's history grows, and what
// keeping ended jobs out of memory saves. A SQLite store holds `history` ended jobs (with an event
// each) that ended `ago_days` days before the start: with 30, beyond the server's
// --keep-ended-days (7) and the fair-share window, they stay in the store; with 1 they are loaded.
// The baseline in the same run opens a store without history. Counter `in_memory`: the jobs the
// started server holds (the hourglass_jobs_in_memory gauge). BM_HistoryPage: a page of the history
// list once it is read from the store; its baseline is the same page on an empty store.
//
// Run: cmake --build --preset release --target restart_bench && build/release/bench/restart_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "server/state.h"
#include "server/test_clock.h"
#include "store/sqlite_store.h"
#include "store/test_dir.h"

namespace {

namespace server = hg::server;
namespace store = hg::store;

constexpr int64_t kNowS = 1700000000;

// A store of `history` jobs that ended `ago_days` before kNowS.
std::unique_ptr<store::Store> MakeStore(const store::TestDir& dir, int64_t history,
                                        int64_t ago_days, benchmark::State& bs) {
  auto st = store::OpenSqliteStore(dir.path() + "/hourglass.db");
  if (!st) {
    bs.SkipWithError(st.error().ToString().c_str());
    return nullptr;
  }
  const int64_t end = kNowS - ago_days * 86400;
  auto ok = (*st)->Transaction([&](store::Store& tx) -> hg::Result<void> {
    for (int64_t i = 0; i < history; ++i) {
      store::JobRecord j;
      j.name = "job-" + std::to_string(i);
      j.user = "alice";
      j.command = {"python", "train.py", "--seed", std::to_string(i)};
      j.cwd = "/home/alice/experiments";
      j.submitted_at = end - 3600;
      auto id = tx.InsertJob(j);
      if (!id) return tl::unexpected(id.error());
      j.id = *id;
      j.state = "succeeded";
      j.reason = "exited 0";
      j.started_at = end - 3000;
      j.ended_at = end;
      j.attempts = 1;
      j.exit_code = 0;
      if (auto u = tx.UpdateJob(j); !u) return u;
      if (auto e = tx.AddJobEvent({*id, end, "succeeded", "exited 0"}); !e) return e;
    }
    return {};
  });
  if (!ok) {
    bs.SkipWithError(ok.error().ToString().c_str());
    return nullptr;
  }
  return std::move(*st);
}

int64_t InMemory(server::State& s) {
  const std::string text = s.MetricsText();
  const std::string key = "\nhourglass_jobs_in_memory ";
  const size_t at = text.find(key);
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + key.size()));
}

void Open(benchmark::State& bs, int64_t history, int64_t ago_days) {
  store::TestDir dir;
  auto st = MakeStore(dir, history, ago_days, bs);
  if (!st) return;
  server::ManualClock clock(kNowS * 1000);
  int64_t held = 0;
  for (auto _ : bs) {
    auto s = server::State::Open(*st, clock, server::StateOptions{});
    if (!s) {
      bs.SkipWithError(s.error().ToString().c_str());
      return;
    }
    held = InMemory(**s);
  }
  bs.counters["in_memory"] = static_cast<double>(held);
}

void BM_Open(benchmark::State& bs) { Open(bs, bs.range(0), bs.range(1)); }
BENCHMARK(BM_Open)
    ->ArgNames({"history", "ago_days"})
    ->Args({10000, 1})
    ->Args({10000, 30})
    ->Args({100000, 1})
    ->Args({100000, 30})
    ->Unit(benchmark::kMillisecond);

void BM_BaselineOpenEmpty(benchmark::State& bs) { Open(bs, 0, 0); }
BENCHMARK(BM_BaselineOpenEmpty)->Unit(benchmark::kMillisecond);

// One page of the history list (`hourglass jobs --state all`, 50 newest, with its total) and the
// same for one user (`alice`, who owns every job here), once the history has left memory: read
// from the store. history 0 is the baseline.
void BM_HistoryPage(benchmark::State& bs) {
  store::TestDir dir;
  auto st = MakeStore(dir, bs.range(0), 30, bs);
  if (!st) return;
  server::ManualClock clock(kNowS * 1000);
  auto s = server::State::Open(*st, clock, server::StateOptions{});
  if (!s) {
    bs.SkipWithError(s.error().ToString().c_str());
    return;
  }
  const store::PrincipalRecord admin{"admin", "admin"};
  const std::string user = bs.range(1) ? "alice" : "";
  for (auto _ : bs) {
    auto page = (*s)->JobsJson(admin, "all", user, 50, false, 0);
    if (!page) {
      bs.SkipWithError(page.error().reason.c_str());
      return;
    }
    benchmark::DoNotOptimize(page);
  }
}
BENCHMARK(BM_HistoryPage)
    ->ArgNames({"history", "one_user"})
    ->Args({0, 0})
    ->Args({10000, 0})
    ->Args({100000, 0})
    ->Args({100000, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
