// One policy cycle on a large, busy cluster (issue 2, "Done when" item 5): 1k and 10k nodes of
// 8 GPUs, 10k and 100k pending jobs, a 1,000-leaf budget tree, the cluster nearly full of running
// jobs and the fair-share ledgers charged with a week of uneven usage. Target: a cycle <= 50 ms at
// 10k nodes and 100k pending.
//
// The snapshot is built once per size, outside the timed loop, and reused: Cycle() is const and
// pure, so every iteration does the same work. Two baselines run on the same snapshots so results
// can be read as ratios on any machine: building the ClusterState index (which every cycle does
// first) and sorting the pending queue once (what a policy that did not rely on the driver's
// order would pay every cycle).
//
// Run: cmake --build --preset release --target benchmarks && build/release/bench/cycle_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/budget_tree.h"
#include "core/cluster_state.h"
#include "core/model.h"
#include "core/policy.h"
#include "core/usage_ledger.h"
#include "sim/rng.h"

namespace {

using hg::BudgetId;
using hg::Gpus;
using hg::JobId;
using hg::JobSpec;
using hg::NodeId;
using hg::PendingJob;
using hg::RunningJob;
using hg::Seconds;

constexpr int32_t kGpusPerNode = 8;
constexpr int32_t kNodesPerBlock = 16;  // as in lab-month: 128 GPUs per network block
constexpr int kPrograms = 10, kProjects = 10, kResearchers = 10;  // 1,000 leaves
constexpr Seconds kNow = hg::Days(14);

// Everything a Snapshot points into. Held by unique_ptr so the addresses stay put.
struct World {
  std::vector<hg::Node> nodes;
  std::unique_ptr<hg::BudgetTree> tree;
  std::unique_ptr<hg::UsageLedger> delivered, owed;
  std::deque<JobSpec> specs;  // a deque keeps the addresses that jobs point to
  std::vector<RunningJob> running;
  std::vector<PendingJob> pending_funded, pending_unfunded;
  std::vector<PendingJob> shuffled;  // all pending jobs in a random order, for the sort baseline
  int64_t free_gpus = 0;

  hg::Snapshot Snap(bool explain) const {
    hg::Snapshot s;
    s.now = kNow;
    s.nodes = nodes;
    s.tree = tree.get();
    s.delivered = delivered.get();
    s.owed = owed.get();
    s.pending_funded = pending_funded;
    s.pending_unfunded = pending_unfunded;
    s.unfunded_above_tier0 = 0;  // unfunded jobs are all tier 0 here, as the simulator counts
    s.running = running;
    s.explain = explain;
    return s;
  }
};

bool QueueOrder(const PendingJob& a, const PendingJob& b) {
  return a.queued_since != b.queued_since ? a.queued_since < b.queued_since
                                          : a.spec->id < b.spec->id;
}

int64_t Pick(hg::sim::Rng& rng, std::initializer_list<int64_t> values) {
  const auto i = rng.UniformInt(0, static_cast<int64_t>(values.size()) - 1);
  return *(values.begin() + i);
}

std::unique_ptr<hg::BudgetTree> MakeTree(int64_t capacity) {
  std::vector<hg::BudgetSpec> specs;
  for (int p = 0; p < kPrograms; ++p) {
    const std::string prog = "prog" + std::to_string(p);
    specs.push_back({prog, "", 1.0 + p % 4, std::nullopt, {"lead" + std::to_string(p)}, 0});
    for (int j = 0; j < kProjects; ++j) {
      const std::string proj = prog + ".proj" + std::to_string(j);
      // Every fifth project is capped at 2% of the cluster, so limits are checked on the way.
      std::optional<int32_t> limit;
      if (j % 5 == 4) limit = static_cast<int32_t>(capacity / 50);
      specs.push_back({proj, prog, 1.0 + j % 3, limit, {}, 0});
      for (int k = 0; k < kResearchers; ++k)
        specs.push_back({proj + ".r" + std::to_string(k), proj, 1.0, std::nullopt, {}, 0});
    }
  }
  auto tree = hg::BudgetTree::Build(specs);
  if (!tree) {
    std::fprintf(stderr, "budget tree: %s\n", tree.error().ToString().c_str());
    std::abort();
  }
  return std::make_unique<hg::BudgetTree>(std::move(*tree));
}

std::unique_ptr<World> MakeWorld(int32_t num_nodes, int64_t num_pending) {
  auto w = std::make_unique<World>();
  // The cluster, tree and ledgers depend on the node count only, so the two queue lengths are
  // measured against the very same running cluster.
  hg::sim::Rng rng(static_cast<uint64_t>(num_nodes));
  for (int32_t i = 0; i < num_nodes; ++i) {
    hg::Node n;
    n.id = NodeId(i);
    n.name = "n" + std::to_string(i);
    n.gpus = Gpus(kGpusPerNode);
    n.block = "b" + std::to_string(i / kNodesPerBlock);
    w->nodes.push_back(std::move(n));
  }
  const int64_t capacity = int64_t{num_nodes} * kGpusPerNode;
  w->tree = MakeTree(capacity);
  std::vector<BudgetId> leaves;
  for (BudgetId b : w->tree->Visible())
    if (w->tree->is_leaf(b)) leaves.push_back(b);

  // A week of usage, hour by hour: each leaf gets an activity factor, so some budgets are far
  // above their share and some far below, and the fair-share order has something to decide.
  w->delivered = std::make_unique<hg::UsageLedger>(*w->tree);
  w->owed = std::make_unique<hg::UsageLedger>(*w->tree);
  std::vector<double> activity;
  for (size_t i = 0; i < leaves.size(); ++i) activity.push_back(rng.UniformReal(0.1, 2.5));
  const auto cap = static_cast<double>(capacity);
  for (Seconds t = kNow - hg::Days(7); t < kNow; t = t + hg::Hours(1)) {
    for (size_t i = 0; i < leaves.size(); ++i) {
      const double due = w->tree->entitlement(leaves[i]) * cap;
      w->delivered->Charge(leaves[i], t, t + hg::Hours(1),
                           due * activity[i] * rng.UniformReal(0.5, 1.5));
      w->owed->Charge(leaves[i], t, t + hg::Hours(1), due * rng.UniformReal(0.9, 1.1));
    }
  }

  int64_t next_id = 1;
  auto leaf = [&] {
    return leaves[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(leaves.size()) - 1))];
  };
  auto new_spec = [&](int32_t gpus, int32_t per_node, bool funded) -> JobSpec& {
    JobSpec& s = w->specs.emplace_back();
    s.id = JobId(next_id++);
    s.gpus = Gpus(gpus);
    s.gpus_per_node = Gpus(per_node);
    s.budget = funded ? leaf() : hg::kUnfunded;
    s.job_class = funded ? (gpus >= 64 ? "training" : "batch") : "sweep";
    s.min_runtime = funded ? hg::Minutes(rng.UniformInt(30, 8 * 60)) : Seconds(0);
    s.resumable = !funded || rng.Uniform01() < 0.5;
    s.grace = Seconds(funded ? 120 : 60);
    s.tier = funded ? static_cast<int>(rng.UniformInt(1, 2)) : 0;
    return s;
  };
  // Started up to two days ago: with min_runtime of 0.5-8 h, most funded runs are past their
  // protection (preemptible for fair share) and some are still protected.
  auto run = [&](const JobSpec& s, std::vector<hg::Slice> placement) {
    RunningJob r;
    r.spec = &s;
    r.started = kNow - Seconds(rng.UniformInt(60, 2 * 86400));
    r.placement = std::move(placement);
    r.checkpointed = r.started;
    w->running.push_back(std::move(r));
  };

  // Fill the cluster block by block: about half the blocks carry one large training gang over
  // part of the block; every other node is packed with single-node jobs, and about one node in
  // twenty keeps a GPU or two free, so small jobs can still start and large ones must preempt.
  for (int32_t b0 = 0; b0 < num_nodes; b0 += kNodesPerBlock) {
    const int32_t b1 = std::min(num_nodes, b0 + kNodesPerBlock);
    int32_t n = b0;
    if (rng.Uniform01() < 0.5) {
      const auto k = static_cast<int32_t>(std::min<int64_t>(rng.UniformInt(4, 16), b1 - b0));
      const JobSpec& s = new_spec(k * kGpusPerNode, kGpusPerNode, rng.Uniform01() < 0.9);
      std::vector<hg::Slice> placement;
      for (int32_t i = 0; i < k; ++i) placement.push_back({NodeId(n + i), Gpus(kGpusPerNode)});
      run(s, std::move(placement));
      n += k;
    }
    for (; n < b1; ++n) {
      int32_t free = kGpusPerNode;
      const int32_t keep = rng.Uniform01() < 0.05 ? static_cast<int32_t>(rng.UniformInt(1, 2)) : 0;
      while (free > keep) {
        auto g = static_cast<int32_t>(Pick(rng, {1, 2, 4, 8}));
        while (g > free - keep) g /= 2;
        const JobSpec& s = new_spec(g, 0, rng.Uniform01() < 0.7);
        run(s, {{NodeId(n), Gpus(g)}});
        free -= g;
      }
      w->free_gpus += free;
    }
  }

  // The queue: 60% funded; half single GPUs, a quarter 2-8 GPUs on one node, a fifth multi-node
  // batch (16-64 GPUs) and 5% large training gangs (128-512 GPUs). Waiting up to three days.
  rng = hg::sim::Rng(static_cast<uint64_t>(num_nodes) * 1'000'003u +
                     static_cast<uint64_t>(num_pending));
  for (int64_t i = 0; i < num_pending; ++i) {
    const bool funded = rng.Uniform01() < 0.6;
    const double u = rng.Uniform01();
    int32_t gpus = 1, per_node = 0;
    if (u < 0.5) {
      gpus = 1;
    } else if (u < 0.75) {
      gpus = static_cast<int32_t>(Pick(rng, {2, 4, 8}));
    } else if (u < 0.95) {
      gpus = static_cast<int32_t>(Pick(rng, {16, 24, 32, 64}));
      per_node = kGpusPerNode;
    } else {
      gpus = static_cast<int32_t>(Pick(rng, {128, 256, 512}));
      per_node = kGpusPerNode;
    }
    JobSpec& s = new_spec(gpus, per_node, funded);
    if (funded && gpus <= 2 && rng.Uniform01() < 0.3) {
      s.job_class = "debug";
      s.min_runtime = hg::Minutes(rng.UniformInt(0, 5));
      s.max_runtime = hg::Hours(1);
      s.grace = Seconds(30);
    } else {
      s.min_runtime = funded ? hg::Minutes(rng.UniformInt(0, 4 * 60)) : Seconds(0);
    }
    if (rng.Uniform01() < 0.03) s.priority = static_cast<int>(rng.UniformInt(1, 5));
    const PendingJob p{&s, kNow - Seconds(rng.UniformInt(0, 3 * 86400)), 1};
    (funded ? w->pending_funded : w->pending_unfunded).push_back(p);
  }
  std::sort(w->pending_funded.begin(), w->pending_funded.end(), QueueOrder);
  std::sort(w->pending_unfunded.begin(), w->pending_unfunded.end(), QueueOrder);
  w->shuffled = w->pending_funded;
  w->shuffled.insert(w->shuffled.end(), w->pending_unfunded.begin(), w->pending_unfunded.end());
  for (size_t i = w->shuffled.size(); i > 1; --i)
    std::swap(w->shuffled[i - 1],
              w->shuffled[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(i) - 1))]);
  return w;
}

// Worlds are expensive to build (the 100k-job ones take a while); Google Benchmark calls each
// function several times while it sizes the run, so each size is built once per process.
const World& GetWorld(int32_t nodes, int64_t pending) {
  static std::map<std::pair<int32_t, int64_t>, std::unique_ptr<World>> cache;
  auto& w = cache[{nodes, pending}];
  if (!w) w = MakeWorld(nodes, pending);
  return *w;
}

void SetSizeCounters(benchmark::State& state, const World& w) {
  state.counters["nodes"] = static_cast<double>(w.nodes.size());
  state.counters["pending"] =
      static_cast<double>(w.pending_funded.size() + w.pending_unfunded.size());
  state.counters["running"] = static_cast<double>(w.running.size());
  state.counters["free_gpus"] = static_cast<double>(w.free_gpus);
}

void RunCycle(benchmark::State& state, const char* policy_name, bool explain) {
  const World& w = GetWorld(static_cast<int32_t>(state.range(0)), state.range(1));
  auto policy = hg::MakePolicy(policy_name, hg::PolicyConfig{});
  if (!policy) {
    state.SkipWithError(policy.error().ToString().c_str());
    return;
  }
  const hg::Snapshot snap = w.Snap(explain);
  int64_t starts = 0, stops = 0, reservations = 0, notes = 0;
  for (auto _ : state) {
    hg::Decisions d = (*policy)->Cycle(snap);
    starts += static_cast<int64_t>(d.starts.size());
    stops += static_cast<int64_t>(d.stops.size());
    reservations += static_cast<int64_t>(d.reservations.size());
    notes += static_cast<int64_t>(d.pending.size());
    benchmark::DoNotOptimize(d);
  }
  SetSizeCounters(state, w);
  using benchmark::Counter;
  // Per cycle (averaged over iterations), and decisions (starts, stops, reservations) per second.
  state.counters["starts"] = Counter(static_cast<double>(starts), Counter::kAvgIterations);
  state.counters["stops"] = Counter(static_cast<double>(stops), Counter::kAvgIterations);
  state.counters["reservations"] =
      Counter(static_cast<double>(reservations), Counter::kAvgIterations);
  if (explain)
    state.counters["notes"] = Counter(static_cast<double>(notes), Counter::kAvgIterations);
  state.counters["decisions_per_s"] =
      Counter(static_cast<double>(starts + stops + reservations), Counter::kIsRate);
}

void BM_Cycle(benchmark::State& state, const char* policy_name) {
  RunCycle(state, policy_name, false);
}

// The same cycle with a reason for every pending job (what `hourglass status` would ask for).
void BM_CycleExplain(benchmark::State& state, const char* policy_name) {
  RunCycle(state, policy_name, true);
}

// Baseline 1: the free-GPU index every cycle builds first, O(nodes + running).
void BM_BaselineClusterState(benchmark::State& state) {
  const World& w = GetWorld(static_cast<int32_t>(state.range(0)), state.range(1));
  for (auto _ : state) {
    hg::ClusterState cs(w.nodes, w.running);
    benchmark::DoNotOptimize(cs.total_free());
  }
  SetSizeCounters(state, w);
}

// Baseline 2: copying and sorting the whole pending queue by (queued_since, id) once.
void BM_BaselineSortQueue(benchmark::State& state) {
  const World& w = GetWorld(static_cast<int32_t>(state.range(0)), state.range(1));
  std::vector<PendingJob> q;
  for (auto _ : state) {
    q = w.shuffled;
    std::sort(q.begin(), q.end(), QueueOrder);
    benchmark::DoNotOptimize(q.data());
  }
  SetSizeCounters(state, w);
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nodes", "pending"});
  b->ArgsProduct({{1'000, 10'000}, {10'000, 100'000}});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_Cycle, hourglass, "hourglass")->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Cycle, priority, "priority")->Apply(Sizes);
BENCHMARK_CAPTURE(BM_CycleExplain, hourglass, "hourglass")
    ->ArgNames({"nodes", "pending"})
    ->Args({10'000, 100'000})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BaselineClusterState)->Apply(Sizes);
BENCHMARK(BM_BaselineSortQueue)->Apply(Sizes);

}  // namespace
