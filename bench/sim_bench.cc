// The simulator on the built-in month (issue 2, "Done when" item 5): the whole `lab-month` (30
// days, 1,024 GPUs, about 90,000 jobs) under each policy. Targets: >= 1M events/s and the month in
// < 10 s. A month takes many seconds, so each benchmark runs it exactly once (add
// --benchmark_repetitions=N for a spread); the scenario is generated outside the timed loop, and
// its generation is measured apart as a baseline. The policy runs with DeployedConfig(), as
// `hourglass sim` does, so the figure is the month a user's command takes, with the loop the server
// runs by default (a cycle on the first 10 s tick after an event, and at most 300 s apart while a
// job waits). `hourglass_every_tick` runs a cycle on every 10 s tick while a job waits
// (`--cycle-while-waiting`, the server with `--timer-ms 10000`, its loop in session 23), for its
// cost as a ratio in the same run.
//
// Run: cmake --build --preset release --target benchmarks && build/release/bench/sim_bench
#include <benchmark/benchmark.h>

#include "core/policy.h"
#include "sim/engine.h"
#include "sim/lab_month.h"

namespace {

constexpr uint64_t kSeed = 1;

void BM_LabMonth(benchmark::State& state, const char* policy_name, bool every_tick) {
  const hg::sim::Scenario sc = hg::sim::MakeLabMonth(kSeed);
  hg::sim::SimOptions options;
  options.policy = hg::DeployedConfig();
  options.cycle_while_waiting = every_tick;
  auto policy = hg::MakePolicy(policy_name, options.policy);
  if (!policy) {
    state.SkipWithError(policy.error().ToString().c_str());
    return;
  }
  int64_t events = 0, cycles = 0;
  for (auto _ : state) {
    auto r = hg::sim::Simulate(sc, **policy, options);
    if (!r) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
    events += r->events;
    cycles += r->cycles;
    benchmark::DoNotOptimize(r->allocated_gpu_hours);
  }
  using benchmark::Counter;
  state.counters["events_per_s"] = Counter(static_cast<double>(events), Counter::kIsRate);
  state.counters["events"] = Counter(static_cast<double>(events), Counter::kAvgIterations);
  state.counters["cycles"] = Counter(static_cast<double>(cycles), Counter::kAvgIterations);
  // Wall time per policy cycle in seconds (events and bookkeeping between cycles included).
  state.counters["s_per_cycle"] =
      Counter(static_cast<double>(cycles), Counter::kIsRate | Counter::kInvert);
  state.counters["jobs"] = static_cast<double>(sc.jobs.size());
}

// Baseline: generating the scenario itself (not part of the timed month above).
void BM_BaselineMakeLabMonth(benchmark::State& state) {
  size_t jobs = 0;
  for (auto _ : state) {
    const hg::sim::Scenario sc = hg::sim::MakeLabMonth(kSeed);
    jobs = sc.jobs.size();
    benchmark::DoNotOptimize(jobs);
  }
  state.counters["jobs"] = static_cast<double>(jobs);
}

BENCHMARK_CAPTURE(BM_LabMonth, hourglass, "hourglass", false)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_LabMonth, hourglass_every_tick, "hourglass", true)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_LabMonth, priority, "priority", false)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK(BM_BaselineMakeLabMonth)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace
