// Durable InsertJob throughput of the SQLite store (issue 3): 1, 8 and 64 concurrent callers, each
// call acknowledged only after its batch's COMMIT (WAL, synchronous=FULL, group commit).
// Target: >= 5,000 acknowledged InsertJob/s with 64 callers on the 2-core reference machine.
//
// Each run opens a fresh database in a temp dir under /tmp (a real file, real fsyncs). Read
// items_per_second: it counts acknowledged inserts of all threads per wall-clock second.
//
// Run: cmake --build --preset release --target store_bench && build/release/bench/store_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "store/sqlite_store.h"
#include "store/test_dir.h"

namespace {

using hg::store::JobRecord;
using hg::store::SqliteStore;
using hg::store::Store;
using hg::store::TestDir;

// Shared by the threads of one run: thread 0 sets them up before the timed loop and tears them
// down after it (Google Benchmark holds the other threads at the loop's start and end).
std::unique_ptr<TestDir> g_dir;
std::unique_ptr<SqliteStore> g_store;

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

void Setup(benchmark::State& state) {
  if (state.thread_index() != 0) return;
  g_dir = std::make_unique<TestDir>();
  auto s = SqliteStore::Open(g_dir->File("bench.db"));
  if (!s) {
    state.SkipWithError(s.error().ToString().c_str());
    return;
  }
  g_store = std::move(*s);
}

void Teardown(benchmark::State& state) {
  if (state.thread_index() != 0) return;
  if (g_store) {
    const auto stats = g_store->Stats();
    state.counters["items_per_commit"] =
        stats.batches ? static_cast<double>(stats.items) / static_cast<double>(stats.batches) : 0;
  }
  g_store.reset();
  g_dir.reset();
}

void BM_InsertJob(benchmark::State& state) {
  Setup(state);
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
BENCHMARK(BM_InsertJob)->Threads(1)->Threads(8)->Threads(64)->UseRealTime()->MinTime(3.0);

// What the server does per submission: the job and its "submitted" event in one Transaction.
void BM_SubmitTransaction(benchmark::State& state) {
  Setup(state);
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
BENCHMARK(BM_SubmitTransaction)->Threads(1)->Threads(8)->Threads(64)->UseRealTime()->MinTime(3.0);

}  // namespace
