// Durable InsertJob throughput of the stores (issue 3): 1, 8 and 64 concurrent callers, each call
// acknowledged only after its COMMIT. SQLite: WAL, synchronous=FULL, group commit. PostgreSQL: a
// local server the benchmark starts (as the tests do), the store opened as the server opens it
// (8 connections, the one-server epoch read in each BEGIN). The two rows of one benchmark, run in
// one process, give the ratio. Target: >= 5,000 acknowledged InsertJob/s with 64 callers on the
// 2-core reference machine.
//
// Each run opens a fresh database (a file under /tmp; a new PostgreSQL database). Read
// items_per_second: it counts acknowledged inserts of all threads per wall-clock second.
//
// BM_Copy: `hourglass store copy` (store/copy.h) of a site with 10,000 jobs (each with three
// events and a run) between the stores, every record read back and compared before the commit;
// BM_ReadContents, reading the same site once, is its baseline in the same process.
//
// Run: cmake --build --preset release --target store_bench && build/release/bench/store_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "store/copy.h"
#include "store/pg_store.h"
#include "store/pg_test_server.h"
#include "store/sqlite_store.h"
#include "store/test_dir.h"

namespace {

using hg::store::JobRecord;
using hg::store::PgTestServer;
using hg::store::SqliteStore;
using hg::store::Store;
using hg::store::TestDir;

// Shared by the threads of one run: thread 0 sets them up before the timed loop and tears them
// down after it (Google Benchmark holds the other threads at the loop's start and end).
std::unique_ptr<TestDir> g_dir;
std::unique_ptr<Store> g_store;
// One PostgreSQL server for the process, started on first use; each run gets a database of its
// own in it.
std::unique_ptr<PgTestServer> g_pg;
int g_pg_runs = 0;

enum class Kind { kSqlite, kPostgresql };

JobRecord TypicalJob() {
  JobRecord j;
  j.name = "train-resnet";
  j.user = "alice";
  j.budget = "research/vision";
  j.gpus = 8;
  j.gpus_per_node = 8;
  j.job_class = "long";
  j.min_runtime_s = 3600;
  j.max_runtime_s = 86400;
  j.resumable = true;
  j.command = {"python", "train.py", "--epochs", "90", "--data", "/datasets/imagenet"};
  j.env = {{"WANDB_PROJECT", "resnet"}, {"OMP_NUM_THREADS", "8"}};
  j.cwd = "/home/alice/resnet";
  j.submitted_at = 1700000000000;
  j.queued_since = 1700000000000;
  return j;
}

void Setup(benchmark::State& state, Kind kind) {
  if (state.thread_index() != 0) return;
  g_dir = std::make_unique<TestDir>();
  hg::Result<std::unique_ptr<Store>> s = hg::Fail("store", "not opened");
  if (kind == Kind::kSqlite) {
    s = hg::store::OpenSqliteStore(g_dir->File("bench.db"));
  } else {
    if (!g_pg) g_pg = std::make_unique<PgTestServer>();
    const std::string db = "bench" + std::to_string(++g_pg_runs);
    if (!g_pg->error().empty() || !g_pg->CreateDatabase(db)) {
      state.SkipWithError(("cannot start PostgreSQL: " + g_pg->error()).c_str());
      return;
    }
    hg::store::PgStoreOptions options;
    options.connections = 8;
    options.exclusive = true;
    s = hg::store::OpenPgStore(g_pg->Conninfo(db), options);
  }
  if (!s) {
    state.SkipWithError(s.error().ToString().c_str());
    return;
  }
  g_store = std::move(*s);
}

void Teardown(benchmark::State& state) {
  if (state.thread_index() != 0) return;
  if (auto* sqlite = dynamic_cast<SqliteStore*>(g_store.get())) {
    const auto stats = sqlite->Stats();
    state.counters["items_per_commit"] =
        stats.batches ? static_cast<double>(stats.items) / static_cast<double>(stats.batches) : 0;
  }
  g_store.reset();
  g_dir.reset();
}

void BM_InsertJob(benchmark::State& state, Kind kind) {
  Setup(state, kind);
  const JobRecord job = TypicalJob();
  for (auto _ : state) {
    auto id = g_store->InsertJob(job);
    if (!id) {
      state.SkipWithError(id.error().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(*id);
  }
  state.SetItemsProcessed(state.iterations());
  Teardown(state);
}
BENCHMARK_CAPTURE(BM_InsertJob, sqlite, Kind::kSqlite)
    ->Threads(1)
    ->Threads(8)
    ->Threads(64)
    ->UseRealTime()
    ->MinTime(3.0);
BENCHMARK_CAPTURE(BM_InsertJob, postgresql, Kind::kPostgresql)
    ->Threads(1)
    ->Threads(8)
    ->Threads(64)
    ->UseRealTime()
    ->MinTime(3.0);

// What the server does per submission: the job and its "submitted" event in one Transaction.
void BM_SubmitTransaction(benchmark::State& state, Kind kind) {
  Setup(state, kind);
  const JobRecord job = TypicalJob();
  for (auto _ : state) {
    auto r = g_store->Transaction([&](Store& tx) -> hg::Result<void> {
      auto id = tx.InsertJob(job);
      if (!id) return tl::unexpected(id.error());
      return tx.AddJobEvent({*id, job.submitted_at, "submitted", ""});
    });
    if (!r) {
      state.SkipWithError(r.error().ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  Teardown(state);
}
BENCHMARK_CAPTURE(BM_SubmitTransaction, sqlite, Kind::kSqlite)
    ->Threads(1)
    ->Threads(8)
    ->Threads(64)
    ->UseRealTime()
    ->MinTime(3.0);
BENCHMARK_CAPTURE(BM_SubmitTransaction, postgresql, Kind::kPostgresql)
    ->Threads(1)
    ->Threads(8)
    ->Threads(64)
    ->UseRealTime()
    ->MinTime(3.0);

}  // namespace

namespace {

constexpr int kSiteJobs = 10000;

// A fresh store of `kind` (a new file, or a new database in the process's PostgreSQL server).
hg::Result<std::unique_ptr<Store>> FreshStore(Kind kind, const TestDir& dir, int n) {
  if (kind == Kind::kSqlite) return hg::store::OpenSqliteStore(dir.File("s" + std::to_string(n)));
  if (!g_pg) g_pg = std::make_unique<PgTestServer>();
  const std::string db = "copy" + std::to_string(++g_pg_runs);
  if (!g_pg->error().empty() || !g_pg->CreateDatabase(db))
    return hg::Fail("postgresql", "cannot start: " + g_pg->error());
  return hg::store::OpenPgStore(g_pg->Conninfo(db));
}

// The site: kSiteJobs jobs, each with three events and a run, in one transaction.
hg::Result<void> FillSite(Store& s) {
  return s.Transaction([](Store& tx) -> hg::Result<void> {
    const JobRecord job = TypicalJob();
    for (int i = 0; i < kSiteJobs; ++i) {
      auto id = tx.InsertJob(job);
      if (!id) return tl::unexpected(id.error());
      for (const char* kind : {"submitted", "started", "ended"}) {
        if (auto ok = tx.AddJobEvent({*id, job.submitted_at + i, kind, "on n1"}); !ok) return ok;
      }
      if (auto ok =
              tx.PutRun({*id, 1, job.budget, job.gpus, job.submitted_at, job.submitted_at + 60});
          !ok)
        return ok;
    }
    return {};
  });
}

void BM_Copy(benchmark::State& state, Kind from_kind, Kind to_kind) {
  TestDir dir;
  int n = 0;
  auto from = FreshStore(from_kind, dir, ++n);
  if (!from || !FillSite(**from)) {
    state.SkipWithError("cannot make the source site");
    return;
  }
  for (auto _ : state) {
    state.PauseTiming();
    auto to = FreshStore(to_kind, dir, ++n);
    state.ResumeTiming();
    if (!to) {
      state.SkipWithError(to.error().ToString().c_str());
      break;
    }
    auto copied = hg::store::CopyStore(**from, **to);
    if (!copied) {
      state.SkipWithError(copied.error().ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * kSiteJobs);
}
BENCHMARK_CAPTURE(BM_Copy, sqlite_to_sqlite, Kind::kSqlite, Kind::kSqlite)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Copy, sqlite_to_postgresql, Kind::kSqlite, Kind::kPostgresql)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Copy, postgresql_to_sqlite, Kind::kPostgresql, Kind::kSqlite)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

// The baseline: reading the same site once, as the copy does before it writes.
void BM_ReadContents(benchmark::State& state, Kind kind) {
  TestDir dir;
  auto from = FreshStore(kind, dir, 1);
  if (!from || !FillSite(**from)) {
    state.SkipWithError("cannot make the site");
    return;
  }
  for (auto _ : state) {
    auto c = hg::store::ReadContents(**from);
    if (!c) {
      state.SkipWithError(c.error().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(c->jobs.size());
  }
  state.SetItemsProcessed(state.iterations() * kSiteJobs);
}
BENCHMARK_CAPTURE(BM_ReadContents, sqlite, Kind::kSqlite)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_ReadContents, postgresql, Kind::kPostgresql)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
