// Issue 2, "Done when" item 2: the fair-share properties P1-P5 and the runtime contract of
// DESIGN.md section 1, each checked over many small generated scenarios that are run through the
// real simulator and the real `hourglass` policy.
//
// Scenarios come from hg::sim::Rng with a fixed seed and a fixed count per property (the count is
// in each test's name), so every run checks the same scenarios; rapidcheck was not used because
// its count and seed come from the environment (RC_PARAMS), which CI does not set;
// `scripts/soak.sh` runs the same checks on other scenarios (HOURGLASS_SOAK_ROUND, see RootSeed).
// Each property also asserts that its scenarios had the contention it is about (some job waited,
// a backlog remained, a preemption happened), so none of the checks can pass vacuously.
//
// Sizes are kept small (2-8 nodes of 4-8 GPUs, 2-4 budgets in 1-2 levels, hours to a few days) so
// the whole file runs in about two minutes in a RelWithDebInfo build (113 s in session 41, on one
// core). 6,565 scenarios in all, in 41 tests whose names give their counts (plus control runs).
//
// The properties found defects in the policy and the engine; the PropertiesRegression tests at the
// end reproduce each in a few jobs and are disabled until fixed, as are the generated variants
// that hit them (the enabled generators avoid their triggers, see MixKnobs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/policy.h"
#include "sim/engine.h"
#include "sim/result.h"
#include "sim/rng.h"
#include "sim/scenario.h"
#include "sim/scenario_io.h"

namespace hg::sim {
namespace {

// Soak runs (scripts/soak.sh) check every property on other scenarios: HOURGLASS_SOAK_ROUND=k
// (k > 0) mixes k into each property's root seed, so each round is a new, reproducible set of the
// same sizes. CI and scripts/test.sh run round 0, the fixed scenarios named above.
uint64_t SoakSeed(uint64_t base, uint64_t round) {
  if (round == 0) return base;
  uint64_t mix = base ^ (round * 0x9E3779B97F4A7C15ULL);
  return SplitMix64(mix);
}

uint64_t RootSeed(uint64_t base) {
  static const uint64_t round = [] {
    const char* v = std::getenv("HOURGLASS_SOAK_ROUND");
    return v == nullptr ? uint64_t{0} : std::strtoull(v, nullptr, 10);
  }();
  return SoakSeed(base, round);
}

// Scenarios per property (at least 1,000 in all, as the issue asks).
constexpr int kP1Scenarios = 150;
constexpr int kP2Scenarios = 150;
constexpr int kP3Scenarios = 120;
constexpr int kP4OneBudgetScenarios = 100;
constexpr int kP4UnfundedScenarios = 100;
constexpr int kP5Scenarios = 200;
constexpr int kContractScenarios = 200;
constexpr int kProtectedScenarios = 100;
constexpr int kUnfundedFirstScenarios = 100;  // twice: whole-node and smaller preemptors
constexpr int kPriorityScenarios = 25;

// "hourglass-large" is hourglass with the large-job hold on for multi-node jobs of these
// scenarios' 4- and 8-GPU nodes (PolicyConfig::large_job_gpus = 8); "hourglass-patient" preempts
// funded work only for budgets that got less than half of what they were owed
// (PolicyConfig::preempt_below = 0.5); "hourglass-quick-first" places debug jobs of every budget
// first and lets them preempt work of any budget over its share (PolicyConfig::quick_first);
// "hourglass-reserve-preempts" lets a reservation of a job of 8+ GPUs preempt work of budgets over
// their share once its protection ends (PolicyConfig::reservation_preempts_gpus = 8);
// "hourglass-spare" lets a preemptor wait for the spare GPUs of leaving jobs before it stops
// funded work (PolicyConfig::wait_for_spare); "hourglass-debug-stops-own" lets a debug job stop
// long work of its own budget past its protection (PolicyConfig::quick_stops_own);
// "hourglass-cooldown" keeps a leaf from stopping, for fair share, work of a leaf that took GPUs
// from it within the hour (PolicyConfig::take_back_cooldown). "hourglass-deployed" is what
// `hourglass sim` and `hourglass server` run unless told otherwise (DeployedConfig(): the debug
// headroom, sessions on it, whole-node reservations that preempt, the cool-down together); the
// other names change one thing of PolicyConfig{}'s defaults.
const Policy& NamedPolicy(std::string_view name) {
  static const auto hourglass = MakePolicy("hourglass", PolicyConfig{});
  static const auto hourglass_large = [] {
    PolicyConfig c;
    c.large_job_gpus = 8;
    return MakePolicy("hourglass", c);
  }();
  static const auto hourglass_patient = [] {
    PolicyConfig c;
    c.preempt_below = 0.5;
    return MakePolicy("hourglass", c);
  }();
  static const auto hourglass_quick_first = [] {
    PolicyConfig c;
    c.quick_first = true;
    return MakePolicy("hourglass", c);
  }();
  static const auto hourglass_reserve_preempts = [] {
    PolicyConfig c;
    c.reservation_preempts_gpus = 8;
    return MakePolicy("hourglass", c);
  }();
  static const auto hourglass_spare = [] {
    PolicyConfig c;
    c.wait_for_spare = true;
    return MakePolicy("hourglass", c);
  }();
  static const auto hourglass_quick_protect = [] {
    PolicyConfig c;
    c.quick_protect = Hours(1);  // longer than the work of any of Mixed's debug jobs (under 30 min)
    return MakePolicy("hourglass", c);
  }();
  static const auto hourglass_debug_stops_own = [] {
    PolicyConfig c;
    c.quick_stops_own = true;
    return MakePolicy("hourglass", c);
  }();
  static const auto hourglass_cooldown = [] {
    PolicyConfig c;
    c.take_back_cooldown = Hours(1);
    return MakePolicy("hourglass", c);
  }();
  static const auto hourglass_no_leases = [] {
    PolicyConfig c;
    c.leases = false;
    return MakePolicy("hourglass", c);
  }();
  static const auto hourglass_deployed = MakePolicy("hourglass", DeployedConfig());
  static const auto priority = MakePolicy("priority", PolicyConfig{});
  const auto& p = name == "hourglass"                    ? hourglass
                  : name == "hourglass-no-leases"        ? hourglass_no_leases
                  : name == "hourglass-large"            ? hourglass_large
                  : name == "hourglass-patient"          ? hourglass_patient
                  : name == "hourglass-quick-first"      ? hourglass_quick_first
                  : name == "hourglass-reserve-preempts" ? hourglass_reserve_preempts
                  : name == "hourglass-spare"            ? hourglass_spare
                  : name == "hourglass-quick-protect"    ? hourglass_quick_protect
                  : name == "hourglass-debug-stops-own"  ? hourglass_debug_stops_own
                  : name == "hourglass-cooldown"         ? hourglass_cooldown
                  : name == "hourglass-deployed"         ? hourglass_deployed
                                                         : priority;
  EXPECT_TRUE(p.has_value());
  return **p;
}

// ---------------------------------------------------------------------------------------------
// Building scenarios in code.

class Builder {
 public:
  explicit Builder(std::string name) { sc_.name = std::move(name); }

  void Nodes(int count, int gpus, int blocks) {
    for (int i = 0; i < count; ++i) {
      NodeSpec n;
      n.name = "n" + std::to_string(sc_.nodes.size());
      n.gpus = gpus;
      n.block = "b" + std::to_string(i % blocks);
      n.line = static_cast<int>(sc_.nodes.size()) + 1;
      sc_.nodes.push_back(std::move(n));
      capacity_ += gpus;
    }
  }

  void Budget(std::string name, std::string parent, double share,
              std::optional<int32_t> limit = std::nullopt) {
    BudgetSpec b;
    b.name = std::move(name);
    b.parent = std::move(parent);
    b.share = share;
    b.limit = limit;
    b.line = static_cast<int>(sc_.budgets.size()) + 1;
    sc_.budgets.push_back(std::move(b));
  }

  // A job with min_runtime 0, not resumable, grace 120 s; callers adjust the returned job before
  // adding the next one (the reference is invalidated by the next call).
  SimJob& Job(Seconds submit, int32_t gpus, std::string budget, Seconds duration) {
    SimJob j;
    j.spec.id = JobId(next_id_++);
    j.spec.submit = submit;
    j.spec.gpus = Gpus(gpus);
    j.spec.job_class = "batch";
    j.budget = std::move(budget);
    j.duration = duration;
    j.line = static_cast<int>(j.spec.id.value());
    sc_.jobs.push_back(std::move(j));
    return sc_.jobs.back();
  }

  void Event(TimedEvent e) {
    e.line = static_cast<int>(sc_.events.size()) + 1;
    sc_.events.push_back(std::move(e));
  }

  int32_t capacity() const { return capacity_; }

  Scenario Finish(Seconds end) {
    std::stable_sort(sc_.jobs.begin(), sc_.jobs.end(), [](const SimJob& a, const SimJob& b) {
      return a.spec.submit != b.spec.submit ? a.spec.submit < b.spec.submit : a.spec.id < b.spec.id;
    });
    std::stable_sort(sc_.events.begin(), sc_.events.end(),
                     [](const TimedEvent& a, const TimedEvent& b) { return a.at < b.at; });
    sc_.end = end;
    return std::move(sc_);
  }

 private:
  Scenario sc_;
  int64_t next_id_ = 1;
  int32_t capacity_ = 0;
};

Seconds UniformSeconds(Rng& rng, Seconds lo, Seconds hi) {
  return Seconds(rng.UniformInt(lo.value(), hi.value()));
}

// Appends jobs charged to `budget` (empty: unfunded), each submitted just in time to keep the
// budget's submitted work `backlog` GPU-seconds ahead of `rate` GPUs: job i is submitted at
// max(0, (work before i - backlog) / rate). A budget that receives `rate` GPUs therefore always
// has at least `backlog` minus one job of work queued, until `until`; one that receives less
// builds up a growing queue, so the queue (and the per-cycle cost) stays small while the demand
// still saturates.
void Stream(Builder& b, Rng& rng, const std::string& budget, double rate, double backlog,
            Seconds until, Seconds dmin, Seconds dmax, std::span<const int32_t> sizes) {
  double work = 0;
  for (;;) {
    const double t = std::max(0.0, (work - backlog) / rate);
    if (t > static_cast<double>(until.value())) break;
    const int32_t g = sizes[rng.Index(sizes.size())];
    const Seconds d = UniformSeconds(rng, dmin, dmax);
    b.Job(Seconds(static_cast<int64_t>(t)), g, budget, d);
    work += GpuSeconds(Gpus(g), d);
  }
}

// No scenario here needs a million events; more means the virtual clock stopped advancing (see
// PreemptorBarredFromReservedGpusSpinsAtOneInstant), so the run is abandoned instead of
// hanging the test binary.
constexpr int64_t kMaxEvents = 5'000'000;

struct Spinning {
  Seconds at;
};

// The label of the scenario being checked (set by Trace), for DumpScenario.
std::string& CurrentTrace() {
  static std::string label = "scenario";
  return label;
}

// Odd-numbered scenarios run a cycle on every tick while a job waits
// (SimOptions::cycle_while_waiting; the server with --timer-ms equal to its interval, its loop in
// session 23), even ones the default loop (the server's since session 24): properties hold under
// both, and only the every-tick loop runs cycles between a stop and the victim's exit, where a
// livelock hid until session 23 (core/victim_hold.h). Set by Trace.
bool& EveryTick() {
  static bool every_tick = false;
  return every_tick;
}

// Each test starts on the default loop, whatever scenario the test before it traced last (a soak
// run executes every test in one process).
class DefaultLoopEachTest : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { EveryTick() = false; }
};
[[maybe_unused]] const bool kDefaultLoopEachTest = [] {
  // gtest's listener list takes ownership of the listener.
  ::testing::UnitTest::GetInstance()->listeners().Append(new DefaultLoopEachTest);
  return true;
}();

// With HOURGLASS_SOAK_DUMP=DIR, every scenario run is written to DIR/<label>-<policy>/ as files
// `hourglass sim --cluster/--budgets/--workload/--events --end-days` replays (the end in end_days;
// add --cycle-while-waiting for a label that says "every tick"), so a failure a soak round
// finds can be studied with the CLI and its decision log.
void DumpScenario(const Scenario& sc, std::string_view policy) {
  const char* dir = std::getenv("HOURGLASS_SOAK_DUMP");
  if (dir == nullptr) return;
  std::string label = CurrentTrace() + "-" + std::string(policy);
  std::replace(label.begin(), label.end(), ' ', '-');
  const std::string out = std::string(dir) + "/" + label;
  auto w = WriteScenario(sc, out);
  ASSERT_TRUE(w) << w.error().ToString();
  std::ofstream(out + "/end_days") << static_cast<double>(sc.end.value()) / 86400.0 << "\n";
}

// `max_gap`, if positive, bounds the gap between cycles (SimOptions::max_gap) on either loop.
std::optional<SimResult> RunSim(const Scenario& sc, std::string_view policy = "hourglass",
                                Seconds max_gap = Seconds(0)) {
  DumpScenario(sc, policy);
  SimOptions options;
  options.cycle_while_waiting = EveryTick();
  if (max_gap.value() > 0) options.max_gap = max_gap;
  options.progress = [](Seconds at, int64_t events) {
    if (events > kMaxEvents) throw Spinning{at};
  };
  try {
    auto r = Simulate(sc, NamedPolicy(policy), options);
    EXPECT_TRUE(r.has_value()) << sc.name << ": " << (r ? "" : r.error().ToString());
    if (!r) return std::nullopt;
    return std::move(*r);
  } catch (const Spinning& s) {
    ADD_FAILURE() << sc.name << ": more than " << kMaxEvents
                  << " events, the virtual clock is stuck at " << s.at << " s";
    return std::nullopt;
  }
}

double DeliveredHours(const SimResult& r, const std::string& path) {
  for (const BudgetTotals& b : r.budgets)
    if (b.path == path) return b.delivered_gpu_hours;
  ADD_FAILURE() << "no budget " << path;
  return 0;
}

std::map<int64_t, const SimJob*> JobsById(const Scenario& sc) {
  std::map<int64_t, const SimJob*> m;
  for (const SimJob& j : sc.jobs) m[j.spec.id.value()] = &j;
  return m;
}

// Start of a job's first run (the only one for jobs that were never stopped).
Seconds FirstStart(const SimJob& j, const JobRecord& rec) {
  return rec.waits.empty() ? kNever : j.spec.submit + rec.waits.front();
}

bool Terminal(JobState s) { return s != JobState::kPending && s != JobState::kRunning; }

std::string Trace(const char* property, int i) {
  EveryTick() = i % 2 == 1;
  CurrentTrace() = std::string(property) + " scenario " + std::to_string(i) +
                   (EveryTick() ? " (every tick)" : "");
  return CurrentTrace();
}

// ---------------------------------------------------------------------------------------------
// P1: equal shares and saturating demand give equal GPU-hours.

// GPUs `policy` keeps free for debug jobs while none runs or waits (the quiet headroom of
// DeployedConfig(), PolicyConfig::quick_headroom_quiet), on a cluster of `cap` GPUs: the share
// of capacity a saturated cluster may leave idle beyond the loop's gaps.
int32_t QuietHeadroom(std::string_view policy, int32_t cap) {
  if (policy != "hourglass-deployed") return 0;
  const PolicyConfig c = DeployedConfig();
  const auto base = static_cast<int32_t>(std::llround(c.quick_headroom * cap));
  return c.quick_headroom_quiet >= 0 ? std::min(base, c.quick_headroom_quiet) : base;
}

// The part of a cluster of `cap` GPUs that saturating work can hold under `policy`: all but the
// quiet headroom.
double UsableShare(std::string_view policy, int32_t cap) {
  return static_cast<double>(cap - QuietHeadroom(policy, cap)) / cap;
}

// GPUs that jobs of `job_gpus` GPUs each leave free beside the quiet headroom: the headroom
// rounded up to whole jobs, as a job does not start where it would leave less than it free.
int32_t KeptForHeadroom(std::string_view policy, int32_t cap, int32_t job_gpus) {
  return (QuietHeadroom(policy, cap) + job_gpus - 1) / job_gpus * job_gpus;
}

// What a saturated cluster of `cap` GPUs must at least deliver under `policy`: 99% of capacity
// beside the quiet headroom.
double FullBound(const SimResult& r, std::string_view policy, int32_t cap) {
  return 0.99 * r.capacity_gpu_hours * UsableShare(policy, cap);
}

void CheckEqualShares(std::string_view policy) {
  const Rng root(RootSeed(0x50310001));
  const std::vector<int32_t> one_gpu = {1};
  double worst_spread = 0;
  for (int i = 0; i < kP1Scenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("P1", i));
    Rng rng = root.Fork(static_cast<uint64_t>(i));
    Builder b("p1");
    b.Nodes(static_cast<int>(rng.UniformInt(2, 8)), rng.Bernoulli(0.5) ? 4 : 8, 1);
    const int32_t cap = b.capacity();
    // Equal entitlements in one level, or in two levels (2 programs x 2 projects); the common
    // share value is random, since only ratios may matter.
    const double share = std::vector<double>{0.5, 1.0, 3.0}[rng.Index(3)];
    std::vector<std::string> leaves;
    const int n = static_cast<int>(rng.UniformInt(2, 4));
    if (n == 4 && rng.Bernoulli(0.5)) {
      for (const char* p : {"x", "y"}) {
        b.Budget(p, "", share);
        for (const char* c : {"1", "2"}) {
          b.Budget(std::string(p) + c, p, share);
          leaves.push_back(std::string(p) + "/" + p + c);
        }
      }
    } else {
      for (int k = 0; k < n; ++k) {
        b.Budget("b" + std::to_string(k), "", share);
        leaves.push_back("b" + std::to_string(k));
      }
    }
    // The horizon gives each budget about 100 GPU-hours or more, so one 1-GPU job of at most an
    // hour (the granularity with which a budget can get ahead) is at most 1% of it.
    const int64_t hours = std::clamp<int64_t>((100 * n + cap - 1) / cap, 12, 48);
    const Seconds end = Hours(hours);
    for (size_t k = 0; k < leaves.size(); ++k) {
      const std::string name = leaves[k].substr(leaves[k].find('/') + 1);
      // Each budget alone keeps a whole cluster-hour of 1-GPU jobs queued: demand saturates.
      // Every other budget submits twice as fast as its share: first come, first served would
      // then deliver 2:1 (checked: the `priority` baseline fails this test), fair share 1:1.
      const double rate = static_cast<double>(cap) / n * (k % 2 == 0 ? 1.0 : 2.0);
      Stream(b, rng, name, rate, cap * 3600.0, end, Minutes(10), Minutes(60), one_gpu);
    }
    const Scenario sc = b.Finish(end);
    auto r = RunSim(sc, policy);
    ASSERT_TRUE(r);

    // Contention: every budget still had queued work at the end, and the cluster was full.
    std::map<std::string, int> pending;
    const auto jobs = JobsById(sc);
    for (const JobRecord& rec : r->jobs)
      if (rec.final_state == JobState::kPending) ++pending[jobs.at(rec.id.value())->budget];
    for (const std::string& leaf : leaves)
      EXPECT_GT(pending[leaf.substr(leaf.find('/') + 1)], 0) << leaf << " ran out of demand";
    EXPECT_GE(r->allocated_gpu_hours, FullBound(*r, policy, cap));

    double lo = 1e300, hi = 0, sum = 0;
    for (const std::string& leaf : leaves) {
      const double d = DeliveredHours(*r, leaf);
      lo = std::min(lo, d);
      hi = std::max(hi, d);
      sum += d;
    }
    const double mean = sum / static_cast<double>(leaves.size());
    // P1: the largest and smallest delivery differ by at most 2% of the mean (stricter than each
    // budget within 2% of the mean).
    EXPECT_LE(hi - lo, 0.02 * mean) << "delivered GPU-hours from " << lo << " to " << hi;
    worst_spread = std::max(worst_spread, (hi - lo) / mean);
  }
  ::testing::Test::RecordProperty("worst_spread_percent", std::to_string(worst_spread * 100));
}

TEST(PropertiesFairShare, P1EqualSharesDeliverEqualGpuHours_150Scenarios) {
  CheckEqualShares("hourglass");
}

// The same under what runs unless told otherwise (DeployedConfig()).
TEST(PropertiesFairShare, P1WithTheDeployedConfig_150Scenarios) {
  CheckEqualShares("hourglass-deployed");
}

// ---------------------------------------------------------------------------------------------
// P2: a budget under its share is served before one over its share.
//
// Budget `a` fills the cluster with protected jobs (min_runtime = duration, so nothing can take
// them back) for D1 = 6-8 h. Meanwhile `b` queues work (at s_B <= 30 min), so from s_B on `b` is
// owed half the cluster and receives nothing: `a` runs over its share, `b` under. `a` queues its
// next batch even earlier than `b` (s_A < s_B), so a first-come-first-served scheduler would serve
// `a` first. When the protected jobs end, both batches compete; each alone would fill the cluster
// for the rest of the run.

// Under `policy`, whose quiet headroom (QuietHeadroom) may keep GPUs of the freed cluster for
// debug jobs that never come: the two batches share what is left of it.
void CheckUnderShareServedFirst(std::string_view policy) {
  const Rng root(RootSeed(0x50320002));
  for (int i = 0; i < kP2Scenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("P2", i));
    Rng rng = root.Fork(static_cast<uint64_t>(i));
    Builder b("p2");
    const int gpus = rng.Bernoulli(0.5) ? 4 : 8;
    // At least 16 GPUs, so "more than half" is not decided by a single GPU.
    const int nodes = static_cast<int>(rng.UniformInt(16 / gpus, 6));
    b.Nodes(nodes, gpus, 1);
    const int32_t cap = b.capacity();
    std::string path_a = "a", path_b = "b";
    switch (rng.Index(3)) {
      case 0:  // siblings at the top, maybe with an idle third one
        b.Budget("a", "", 1);
        b.Budget("b", "", 1);
        if (rng.Bernoulli(0.5)) b.Budget("c", "", 1);
        break;
      case 1:  // siblings inside one program, next to an idle program
        b.Budget("p", "", 1);
        b.Budget("q", "", 1);
        b.Budget("a", "p", 1);
        b.Budget("b", "p", 1);
        path_a = "p/a";
        path_b = "p/b";
        break;
      default:  // in different programs
        b.Budget("pa", "", 1);
        b.Budget("pb", "", 1);
        b.Budget("a", "pa", 1);
        b.Budget("b", "pb", 1);
        path_a = "pa/a";
        path_b = "pb/b";
        break;
    }
    const Seconds d1 = Minutes(rng.UniformInt(6 * 60, 8 * 60));
    // `a` fills what the headroom leaves: the last node's jobs keep its GPUs free (or another job
    // of `a` would wait for them and start with the batches).
    const int32_t usable = cap - QuietHeadroom(policy, cap);
    for (int n = 0; n < nodes; ++n) {
      const int kept = n + 1 == nodes ? cap - usable : 0;
      const bool whole = rng.Bernoulli(0.5) && kept == 0;
      for (int k = 0; k < (whole ? 1 : gpus - kept); ++k)
        b.Job(Seconds(0), whole ? gpus : 1, "a", d1).spec.min_runtime = d1;
    }
    const Seconds s_a = UniformSeconds(rng, Seconds(60), Seconds(600));
    const Seconds s_b = UniformSeconds(rng, s_a + Seconds(60), Minutes(30));
    const Seconds post = Minutes(rng.UniformInt(120, 360));
    // Each batch alone fills the cluster for the whole rest of the run (mean job 1.75 h).
    const auto batch = static_cast<int>(
        std::ceil(1.3 * cap * static_cast<double>(post.value()) / (1.75 * 3600)) + cap);
    std::vector<int64_t> batch_a, batch_b;
    for (int k = 0; k < batch; ++k)
      batch_a.push_back(
          b.Job(s_a, 1, "a", UniformSeconds(rng, Minutes(30), Hours(3))).spec.id.value());
    for (int k = 0; k < batch; ++k)
      batch_b.push_back(
          b.Job(s_b, 1, "b", UniformSeconds(rng, Minutes(30), Hours(3))).spec.id.value());
    const Scenario sc = b.Finish(d1 + post);
    auto r = RunSim(sc, policy);
    ASSERT_TRUE(r);

    const auto jobs = JobsById(sc);
    std::map<int64_t, const JobRecord*> rec;
    for (const JobRecord& j : r->jobs) rec[j.id.value()] = &j;
    int32_t at_t_a = 0, at_t_b = 0;
    Seconds first_b = kNever;
    for (int64_t id : batch_a)
      if (FirstStart(*jobs.at(id), *rec.at(id)) == d1) ++at_t_a;
    for (int64_t id : batch_b) {
      const Seconds s = FirstStart(*jobs.at(id), *rec.at(id));
      first_b = std::min(first_b, s);
      if (s == d1) ++at_t_b;
    }
    // Contention: `b` waited through the whole protected phase, and the freed cluster was
    // handed out at once to the two batches.
    EXPECT_EQ(first_b, d1);
    EXPECT_EQ(at_t_a + at_t_b, usable);
    // P2: the budget under its share gets more than half of the GPUs when both queue ...
    EXPECT_GT(at_t_b, at_t_a) << "of " << cap << " GPUs freed at " << d1;
    // ... and more GPU-hours than the over-share budget for the rest of the run (the protected
    // phase ran exactly usable x D1 GPU-seconds for `a`).
    const double after_a = DeliveredHours(*r, path_a) - GpuSeconds(Gpus(usable), d1) / 3600.0;
    const double after_b = DeliveredHours(*r, path_b);
    EXPECT_GT(after_b, after_a);
    EXPECT_NEAR(after_a + after_b, GpuSeconds(Gpus(usable), post) / 3600.0, 0.02 * cap * 2);
  }
}

TEST(PropertiesFairShare, P2UnderShareServedBeforeOverShare_150Scenarios) {
  CheckUnderShareServedFirst("hourglass");
}

TEST(PropertiesFairShare, P2WithTheDeployedConfig_150Scenarios) {
  CheckUnderShareServedFirst("hourglass-deployed");
}

// ---------------------------------------------------------------------------------------------
// P3: shares apply at every level. Program x (share 1) with projects x1, x2 (shares 3, 1) and
// program y (share 1), as one leaf or as two equal projects; everyone saturates. Expected
// fractions of the delivered funded GPU-hours: x1 3/8, x2 1/8, y 1/2 (y1, y2 1/4 each).

// Under `policy`, a cluster that its quiet headroom would leave at a GPU short of a multiple of
// 8 gets one more node of that many GPUs, so the GPUs beside the headroom stay a multiple of 8
// (with 47 of 48 GPUs usable, x2 was owed 5.875 and x1:x2 moved by 2.6%: rounding, as above).
void CheckSharesAtEveryLevel(std::string_view policy) {
  const Rng root(RootSeed(0x50330003));
  const std::vector<int32_t> one_gpu = {1};
  double worst = 0;
  for (int i = 0; i < kP3Scenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("P3", i));
    Rng rng = root.Fork(static_cast<uint64_t>(i));
    Builder b("p3");
    // A multiple of 8 GPUs, at least 16, so every entitlement is a whole number of GPUs (x2's
    // eighth at least 2). With a fractional one (x2 owed 2.5 of 20 GPUs) the live-allocation term
    // of the fair-share key (live_weight 24 h) lets x2 hold 3 GPUs for about 10 h before the
    // history outweighs it: +5.9 GPU-hours, 6% over 40 h, under 2% over a 7-day window. That is
    // rounding, not a share applied at the wrong level, and would need week-long runs here.
    const bool eights = rng.Bernoulli(0.5);
    b.Nodes(eights ? static_cast<int>(rng.UniformInt(2, 8))
                   : 2 * static_cast<int>(rng.UniformInt(2, 4)),
            eights ? 8 : 4, 1);
    if (const int32_t h = QuietHeadroom(policy, b.capacity() + 1); h > 0) b.Nodes(1, h, 1);
    const int32_t usable = b.capacity() - QuietHeadroom(policy, b.capacity());
    ASSERT_EQ(usable % 8, 0) << b.capacity() << " GPUs";
    const int32_t cap = usable;
    b.Budget("x", "", 1);
    b.Budget("y", "", 1);
    b.Budget("x1", "x", 3);
    b.Budget("x2", "x", 1);
    struct Leaf {
      std::string name, path;
      double fraction;
    };
    std::vector<Leaf> leaves = {{"x1", "x/x1", 3.0 / 8}, {"x2", "x/x2", 1.0 / 8}};
    if (rng.Bernoulli(0.5)) {
      b.Budget("y1", "y", 1);
      b.Budget("y2", "y", 1);
      leaves.push_back({"y1", "y/y1", 0.25});
      leaves.push_back({"y2", "y/y2", 0.25});
    } else {
      leaves.push_back({"y", "y", 0.5});
    }
    // x2, the smallest, receives about 60 GPU-hours or more: one 1-GPU job of at most an hour
    // (the granularity with which a leaf can get ahead) is under 2% of it.
    const int64_t hours = std::clamp<int64_t>((60 * 8 + cap - 1) / cap, 12, 48);
    const Seconds end = Hours(hours);
    for (const Leaf& l : leaves)
      Stream(b, rng, l.name, l.fraction * cap, cap * 3600.0, end, Minutes(10), Minutes(60),
             one_gpu);
    const Scenario sc = b.Finish(end);
    auto r = RunSim(sc, policy);
    ASSERT_TRUE(r);

    std::map<std::string, int> pending;
    const auto jobs = JobsById(sc);
    for (const JobRecord& rec : r->jobs)
      if (rec.final_state == JobState::kPending) ++pending[jobs.at(rec.id.value())->budget];
    for (const Leaf& l : leaves) EXPECT_GT(pending[l.name], 0) << l.name << " ran out of demand";

    double total = 0;
    for (const Leaf& l : leaves) total += DeliveredHours(*r, l.path);
    EXPECT_GE(total, FullBound(*r, policy, b.capacity()));
    // Each leaf, and each program, within 2% (as P1) of its entitlement's part of what was
    // delivered.
    auto check = [&](const std::string& what, double got, double fraction) {
      const double want = fraction * total;
      EXPECT_NEAR(got, want, 0.02 * want) << what;
      worst = std::max(worst, std::abs(got / want - 1));
    };
    for (const Leaf& l : leaves) check(l.path, DeliveredHours(*r, l.path), l.fraction);
    check("x", DeliveredHours(*r, "x"), 0.5);
    check("y", DeliveredHours(*r, "y"), 0.5);
    // The ratios the issue names, x1:x2 = 3:1 inside x and x:y = 1:1.
    EXPECT_NEAR(DeliveredHours(*r, "x/x1") / DeliveredHours(*r, "x/x2"), 3.0, 3.0 * 0.02);
    EXPECT_NEAR(DeliveredHours(*r, "x") / DeliveredHours(*r, "y"), 1.0, 0.02);
  }
  ::testing::Test::RecordProperty("worst_relative_error_percent", std::to_string(worst * 100));
}

TEST(PropertiesFairShare, P3SharesApplyAtEveryLevel_120Scenarios) {
  CheckSharesAtEveryLevel("hourglass");
}

TEST(PropertiesFairShare, P3WithTheDeployedConfig_120Scenarios) {
  CheckSharesAtEveryLevel("hourglass-deployed");
}

// ---------------------------------------------------------------------------------------------
// P4: work conserving.
//
// (a) Only one of 2-4 budgets (random shares) has demand, more than the cluster: it gets the whole
// cluster, not its share. All its jobs have one size per scenario (1, 2 or 4 GPUs, dividing the
// nodes): with mixed sizes the queue fills up with the larger jobs that do not fit the holes the
// smaller ones leave, which is packing, not fair share. Bound: every hourly sample >= 98%
// occupied; what may be idle is the gap between a job's end and the next cycle (at most the 10 s
// interval, a fraction of a percent against jobs of 10-60 min).

// Under `policy` the busy budget gets the cluster beside its quiet headroom, rounded up to whole
// jobs: a 4-GPU job does not start where it would leave less than the headroom free.
void CheckOneBudgetGetsWholeCluster(std::string_view policy) {
  const Rng root(RootSeed(0x50340004));
  for (int i = 0; i < kP4OneBudgetScenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("P4a", i));
    Rng rng = root.Fork(static_cast<uint64_t>(i));
    Builder b("p4a");
    b.Nodes(static_cast<int>(rng.UniformInt(2, 8)), rng.Bernoulli(0.5) ? 4 : 8, 1);
    const int32_t cap = b.capacity();
    const int n = static_cast<int>(rng.UniformInt(2, 4));
    double shares = 0;
    std::vector<double> share(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      share[static_cast<size_t>(k)] = static_cast<double>(rng.UniformInt(1, 4));
      shares += share[static_cast<size_t>(k)];
      b.Budget("b" + std::to_string(k), "", share[static_cast<size_t>(k)]);
    }
    const auto busy = static_cast<int>(rng.Index(static_cast<size_t>(n)));
    const std::string name = "b" + std::to_string(busy);
    const Seconds end = Hours(rng.UniformInt(6, 24));
    const std::vector<int32_t> size = {std::vector<int32_t>{1, 2, 4}[rng.Index(3)]};
    Stream(b, rng, name, cap, cap * 3600.0, end, Minutes(10), Minutes(60), size);
    const Scenario sc = b.Finish(end);
    auto r = RunSim(sc, policy);
    ASSERT_TRUE(r);
    const double usable = static_cast<double>(cap - KeptForHeadroom(policy, cap, size[0])) / cap;

    // Contention: the budget's entitlement is below the cluster, and it still had queued work.
    ASSERT_LT(share[static_cast<size_t>(busy)] / shares, 1.0);
    int pending = 0;
    for (const JobRecord& rec : r->jobs) pending += rec.final_state == JobState::kPending;
    EXPECT_GT(pending, 0);
    for (const SeriesPoint& p : r->series)
      EXPECT_GE(p.allocated, 0.98 * usable * p.capacity) << "hour ending " << p.at;
    EXPECT_NEAR(DeliveredHours(*r, name), r->allocated_gpu_hours, 1e-6);
    EXPECT_GE(DeliveredHours(*r, name), 0.98 * usable * r->capacity_gpu_hours);
  }
}

TEST(PropertiesFairShare, P4OneBudgetGetsWholeCluster_100Scenarios) {
  CheckOneBudgetGetsWholeCluster("hourglass");
}

TEST(PropertiesFairShare, P4OneBudgetGetsWholeClusterWithTheDeployedConfig_100Scenarios) {
  CheckOneBudgetGetsWholeCluster("hourglass-deployed");
}

// (b) Funded demand below capacity and an unfunded backlog: idle GPUs go to unfunded work, and
// unfunded work never delays funded work beyond a victim's grace period. Funded work comes in
// "slots" (k < capacity sequences of protected 1-GPU jobs with gaps of at least 15 min, longer
// than any wait), so at most k funded GPUs are ever wanted and funded jobs never wait for each
// other.

// Under `policy` idle GPUs beside its quiet headroom go to the backlog: unfunded work keeps off
// the headroom.
void CheckIdleGpusGoToUnfunded(std::string_view policy) {
  const Rng root(RootSeed(0x50340005));
  // 1-GPU jobs only, like the funded ones, so no GPU is left idle for want of a job that fits.
  const std::vector<int32_t> one_gpu = {1};
  int64_t unfunded_preemptions = 0, one_grace = 0, funded_jobs = 0;
  for (int i = 0; i < kP4UnfundedScenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("P4b", i));
    Rng rng = root.Fork(static_cast<uint64_t>(i));
    Builder b("p4b");
    b.Nodes(static_cast<int>(rng.UniformInt(2, 8)), rng.Bernoulli(0.5) ? 4 : 8, 1);
    const int32_t cap = b.capacity();
    const int n = static_cast<int>(rng.UniformInt(1, 3));
    for (int k = 0; k < n; ++k)
      b.Budget("b" + std::to_string(k), "", static_cast<double>(rng.UniformInt(1, 3)));
    const Seconds end = Hours(rng.UniformInt(6, 24));
    const auto slots = static_cast<int>(rng.UniformInt(1, cap - 1));
    for (int s = 0; s < slots; ++s) {
      for (Seconds t = UniformSeconds(rng, Seconds(0), Hours(1)); t < end;) {
        const Seconds d = UniformSeconds(rng, Minutes(30), Hours(3));
        // Protected for the whole run: funded work of other budgets may not take these GPUs
        // back (a fair-share preemption is allowed, but not what this property is about).
        b.Job(t, 1, "b" + std::to_string(rng.Index(static_cast<size_t>(n))), d).spec.min_runtime =
            d;
        t = t + d + UniformSeconds(rng, Minutes(15), Hours(2));
      }
    }
    Stream(b, rng, "", cap, cap * 3600.0, end, Minutes(10), Minutes(90), one_gpu);
    // Unfunded jobs get random grace periods and resumability.
    Seconds max_grace{0};
    Scenario sc = b.Finish(end);
    const std::vector<int64_t> graces = {0, 30, 120, 600};
    for (SimJob& j : sc.jobs) {
      if (!j.budget.empty()) continue;
      j.spec.grace = Seconds(graces[rng.Index(graces.size())]);
      j.spec.resumable = rng.Bernoulli(0.5);
      max_grace = std::max(max_grace, j.spec.grace);
    }
    auto r = RunSim(sc, policy);
    ASSERT_TRUE(r);

    // Idle GPUs are used: every hour >= 98% occupied (the backlog is always there).
    const double usable = UsableShare(policy, cap);
    for (const SeriesPoint& p : r->series)
      EXPECT_GE(p.allocated, 0.98 * usable * p.capacity) << "hour ending " << p.at;
    double funded = 0;
    for (int k = 0; k < n; ++k) funded += DeliveredHours(*r, "b" + std::to_string(k));
    EXPECT_NEAR(r->unfunded_gpu_hours, r->allocated_gpu_hours - funded, 1e-6);
    EXPECT_GT(r->unfunded_gpu_hours, 0);
    // Funded work is not held up by the unfunded: it waits for a victim's grace period plus the
    // cycles before (when it is submitted) and after (when the victim has gone). Twice: when the
    // victim is gone its GPUs are free for whoever comes first in fair-share order, and a funded
    // job that arrived meanwhile may take them, so the first one evicts a second victim (seen in
    // scenario 32: waits of 120 s + 600 s).
    // (Jobs submitted too close to the end to have started are left out.)
    const Seconds bound = max_grace + max_grace + Seconds(30);
    const auto jobs = JobsById(sc);
    for (const JobRecord& rec : r->jobs) {
      if (!rec.funded || jobs.at(rec.id.value())->spec.submit + bound > end) continue;
      ASSERT_GE(rec.attempts, 1) << "job " << rec.id;
      EXPECT_LE(rec.waits.front(), bound) << "job " << rec.id;
      one_grace += rec.waits.front() <= max_grace + Seconds(20);
      ++funded_jobs;
    }
    // And funded work never needed to preempt funded work (there was always room).
    for (const PreemptionRecord& p : r->preemptions) {
      EXPECT_FALSE(p.funded) << "job " << p.job;
      unfunded_preemptions += !p.funded;
    }
  }
  // Contention: the unfunded backlog really sat on GPUs funded jobs then wanted.
  EXPECT_GT(unfunded_preemptions, kP4UnfundedScenarios);
  // The second grace period is the exception: 99% of funded jobs wait at most one.
  EXPECT_GE(one_grace, funded_jobs * 99 / 100);
  ::testing::Test::RecordProperty("funded_jobs_within_one_grace",
                                  std::to_string(one_grace) + " of " + std::to_string(funded_jobs));
}

TEST(PropertiesFairShare, P4IdleGpusGoToUnfundedBacklog_100Scenarios) {
  CheckIdleGpusGoToUnfunded("hourglass");
}

TEST(PropertiesFairShare, P4IdleGpusGoToUnfundedBacklogWithTheDeployedConfig_100Scenarios) {
  CheckIdleGpusGoToUnfunded("hourglass-deployed");
}

// ---------------------------------------------------------------------------------------------
// A mixed workload for P5 and the contract: gangs up to the whole cluster, random protection,
// resumable and not, checkpoints, grace periods, priorities, unfunded work, node failures.

struct MixKnobs {
  bool events = false;       // health failures with repairs, operator drains with undrains
  bool max_runtime = false;  // some jobs end at their max_runtime
  bool protect_all = false;  // every funded job has min_runtime = duration (<= 8 h)
  bool unprotected = false;  // every job has min_runtime 0 (a control for protect_all)
  bool flood = false;        // budget l0 floods first, the others come later
  // Each job draws its own grace period. Otherwise one grace period per scenario: the victims of
  // one preemption then leave together. Per-job grace periods found the livelock that
  // PropertiesRegression.WaitingPreemptorKeepsGpusOfVictimsKilledEarlier reproduces (fixed).
  bool mixed_grace = false;
  // Repairs may come while the node still drains (10 min - 4 h after the failure). Otherwise they
  // come once the node must be empty (8.5-12 h: protection is at most 8 h, grace 10 min). Quick
  // repairs found the stall that PropertiesRegression.NodeRepairedWhileDrainingTakesWorkWhenEmpty
  // reproduces (fixed; seen first in P5 scenario 30: four funded gangs waited on an empty cluster
  // for a week).
  bool quick_repairs = false;
  // About 40% of small funded jobs are sessions (a lease of 10 or 30 min, not resumable), half
  // of those parked: their user leaves at a random point of the run.
  bool sessions = false;
};

Scenario Mixed(Rng& rng, const MixKnobs& k) {
  Builder b("mixed");
  const int gpus = rng.Bernoulli(0.5) ? 4 : 8;
  const auto nodes = static_cast<int>(rng.UniformInt(2, 8));
  b.Nodes(nodes, gpus, static_cast<int>(rng.UniformInt(1, 2)));
  const int32_t cap = b.capacity();
  const auto nb = static_cast<int>(rng.UniformInt(2, 4));
  std::vector<std::string> leaves;
  const bool two_levels = nb >= 3 && rng.Bernoulli(0.5);
  if (two_levels) {
    b.Budget("p0", "", static_cast<double>(rng.UniformInt(1, 3)));
    b.Budget("p1", "", static_cast<double>(rng.UniformInt(1, 3)));
  }
  for (int l = 0; l < nb; ++l) {
    leaves.push_back("l" + std::to_string(l));
    b.Budget(leaves.back(), two_levels ? (l < 2 ? "p0" : "p1") : "",
             static_cast<double>(rng.UniformInt(1, 3)));
  }
  const Seconds span = Hours(rng.UniformInt(2, 24));
  const auto count = static_cast<int>(rng.UniformInt(10, 80));
  const std::vector<int64_t> protections = {0, 300, 1800, 7200, 8 * 3600};
  const std::vector<int64_t> checkpoints = {0, 600, 3600};
  const std::vector<int64_t> graces = {0, 30, 120, 600};
  const Seconds scenario_grace(graces[rng.Index(graces.size())]);
  Seconds work{0};
  for (int j = 0; j < count; ++j) {
    const bool funded = rng.Bernoulli(0.8);
    std::string budget;
    Seconds submit = UniformSeconds(rng, Seconds(0), span);
    if (funded) {
      const size_t leaf = rng.Index(leaves.size());
      budget = leaves[leaf];
      if (k.flood)
        submit = leaf == 0 ? UniformSeconds(rng, Seconds(0), span / 4)
                           : UniformSeconds(rng, span / 4, span);
    }
    int32_t g = 1;
    int32_t per_node = 0;
    const double shape = rng.Uniform01();
    if (shape < 0.5) {
      g = static_cast<int32_t>(rng.UniformInt(1, 2));
    } else if (shape < 0.8) {
      g = static_cast<int32_t>(rng.UniformInt(1, gpus));
    } else if (rng.Bernoulli(0.5)) {
      g = gpus * static_cast<int32_t>(rng.UniformInt(1, nodes));  // whole nodes
      per_node = gpus;
    } else {
      g = static_cast<int32_t>(rng.UniformInt(gpus, cap));  // as few nodes as possible
    }
    Seconds d(static_cast<int64_t>(std::clamp(rng.LogNormal(3600, 1.0), 300.0, 12 * 3600.0)));
    if (k.protect_all && funded) d = std::min(d, Hours(8));
    SimJob& job = b.Job(submit, g, budget, d);
    job.spec.gpus_per_node = Gpus(per_node);
    job.spec.min_runtime = Seconds(protections[rng.Index(protections.size())]);
    if (k.protect_all && funded) job.spec.min_runtime = d;
    if (k.unprotected) job.spec.min_runtime = Seconds(0);
    job.spec.resumable = rng.Bernoulli(0.5);
    if (job.spec.resumable) job.checkpoint_interval = Seconds(checkpoints[rng.Index(3)]);
    job.spec.grace = Seconds(graces[rng.Index(graces.size())]);
    if (!k.mixed_grace) job.spec.grace = scenario_grace;
    job.spec.priority = static_cast<int>(rng.UniformInt(0, 2));
    job.spec.tier = static_cast<int>(rng.UniformInt(0, 2));
    if (g <= 2 && d < Minutes(30)) job.spec.job_class = "debug";
    if (k.max_runtime && rng.Bernoulli(0.1))
      job.spec.max_runtime =
          std::max(job.spec.min_runtime, Seconds(1)) + UniformSeconds(rng, Seconds(0), d + d);
    if (k.sessions && funded && g <= 8 && rng.Bernoulli(0.4)) {
      job.spec.job_class = "interactive";
      job.spec.resumable = false;
      job.checkpoint_interval = Seconds(0);
      job.spec.lease = Minutes(rng.Bernoulli(0.5) ? 10 : 30);
      job.spec.max_runtime = Hours(24);  // beyond any duration here: protection ends with it
      if (rng.Bernoulli(0.5)) job.idle_after = UniformSeconds(rng, Seconds(0), d);
    }
    work += d;
  }
  if (k.events) {
    const auto failures = static_cast<int>(rng.UniformInt(0, 2));
    for (int f = 0; f < failures; ++f) {
      TimedEvent e;
      e.at = UniformSeconds(rng, Seconds(0), span);
      e.kind = rng.Bernoulli(0.7) ? EventKind::kHealthFail : EventKind::kDrain;
      e.target = "n" + std::to_string(rng.Index(static_cast<size_t>(nodes)));
      e.reason = "test";
      TimedEvent back = e;
      back.at = e.at + (k.quick_repairs ? UniformSeconds(rng, Minutes(10), Hours(4))
                                        : UniformSeconds(rng, Minutes(8 * 60 + 30), Hours(12)));
      back.kind = e.kind == EventKind::kHealthFail ? EventKind::kRepair : EventKind::kUndrain;
      b.Event(e);
      b.Event(back);
    }
  }
  // Long enough after the last submission to run every job one after the other three times over
  // (restarts, lost work), plus a day.
  return b.Finish(span + work * 3 + Days(1));
}

// ---------------------------------------------------------------------------------------------
// P5: no starvation. Every funded job (each fits the cluster: Simulate validates that) starts
// and ends, given a horizon long enough after submissions stop. Gangs up to the whole cluster,
// node failures and operator drains, max_runtime.

// Runs of one named policy. For a variant of hourglass it also runs the default and counts the
// scenarios where some job started at another time or another number of times: a variant that
// changes too few runs is not exercised, and the check over it says nothing new.
class PolicyRuns {
 public:
  explicit PolicyRuns(std::string_view policy) : policy_(policy) {}
  std::optional<SimResult> Run(const Scenario& sc) {
    auto r = RunSim(sc, policy_);
    base_.reset();
    if (r && policy_ != "hourglass") {
      base_ = RunSim(sc);
      if (base_ && Differ(*base_, *r)) ++changed_;
    }
    return r;
  }
  // The default's run of the last scenario (none for the default itself).
  const std::optional<SimResult>& base() const { return base_; }
  void ExpectExercised(int scenarios) const {
    if (policy_ == "hourglass") return;
    // A leaf seldom gets to take back GPUs in these small scenarios: the cool-down changes 6% of
    // them (12-13 of 200), so more than none is asked of it.
    EXPECT_GT(changed_, policy_ == "hourglass-cooldown" ? 0 : scenarios / 10) << policy_;
  }

 private:
  static bool Differ(const SimResult& a, const SimResult& b) {
    if (a.jobs.size() != b.jobs.size()) return true;
    for (size_t i = 0; i < a.jobs.size(); ++i)
      if (a.jobs[i].waits != b.jobs[i].waits || a.jobs[i].attempts != b.jobs[i].attempts)
        return true;
    return false;
  }
  std::string_view policy_;
  std::optional<SimResult> base_;
  int changed_ = 0;
};

void CheckNoStarvation(uint64_t seed, int scenarios, bool mixed_grace, bool quick_repairs,
                       std::string_view policy = "hourglass") {
  const Rng root(RootSeed(seed));
  int large_waited = 0;
  PolicyRuns runs(policy);
  for (int i = 0; i < scenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("P5", i));
    Rng rng = root.Fork(static_cast<uint64_t>(i));
    MixKnobs k;
    k.events = rng.Bernoulli(0.5);
    k.max_runtime = true;
    k.mixed_grace = mixed_grace;
    k.quick_repairs = quick_repairs;
    const Scenario sc = Mixed(rng, k);
    auto r = runs.Run(sc);
    ASSERT_TRUE(r);
    int32_t cap = 0;
    for (const NodeSpec& n : sc.nodes) cap += n.gpus;
    ASSERT_EQ(r->jobs.size(), sc.jobs.size());
    Seconds longest_wait{0};
    for (const JobRecord& rec : r->jobs) {
      if (!rec.funded) continue;
      EXPECT_GE(rec.attempts, 1) << "funded job " << rec.id << " never started";
      EXPECT_TRUE(Terminal(rec.final_state))
          << "funded job " << rec.id << " ends " << ToString(rec.final_state);
      if (rec.waits.empty()) continue;
      longest_wait = std::max(longest_wait, rec.waits.front());
      if (rec.gpus * 2 > cap && rec.waits.front() > Hours(1)) ++large_waited;
    }
    // Contention: some funded job had to wait.
    EXPECT_GT(longest_wait, Seconds(0));
    // Unfunded work too runs once funded work is done (not part of P5, a liveness check).
    for (const JobRecord& rec : r->jobs) {
      if (rec.funded) continue;
      EXPECT_GE(rec.attempts, 1) << "unfunded job " << rec.id;
    }
  }
  // Large gangs (more than half the cluster) really had to wait for the cluster to free up.
  EXPECT_GT(large_waited, scenarios / 4);
  runs.ExpectExercised(scenarios);
}

TEST(PropertiesFairShare, P5EveryFundedJobEventuallyStarts_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, false, false);
}

// The same with the large-job hold on (--large-job-gpus): a budget's later jobs held back behind
// its blocked gang must not starve anyone either.
TEST(PropertiesFairShare, P5WithLargeJobHolds_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, false, false, "hourglass-large");
}

// And with preemption kept for budgets far below their share (--preempt-below): jobs that may
// no longer preempt wait for GPUs to come free, and must still get them.
TEST(PropertiesFairShare, P5WithPreemptBelow_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, false, false, "hourglass-patient");
}

// And with debug jobs first (--quick-first): long work of budgets below their share waits behind
// every budget's debug jobs and loses GPUs to them, and must still start.
TEST(PropertiesFairShare, P5WithQuickFirst_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, false, false, "hourglass-quick-first");
}

// And with reservations that preempt work of budgets over their share for large jobs
// (--reservation-preempts-gpus): the gangs gain GPUs, and the work they stop must still finish.
TEST(PropertiesFairShare, P5WithReservationsThatPreempt_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, false, false, "hourglass-reserve-preempts");
}

// And with the take-back cool-down: a leaf kept from taking back GPUs for an hour must still get
// them.
TEST(PropertiesFairShare, P5WithTheTakeBackCoolDown_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, false, false, "hourglass-cooldown");
}

// And with what runs unless told otherwise (DeployedConfig()): every option it turns on at once.
TEST(PropertiesFairShare, P5WithTheDeployedConfig_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, false, false, "hourglass-deployed");
}

TEST(PropertiesFairShare, P5WithGracePeriodsPerJobAndTheDeployedConfig_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, true, false, "hourglass-deployed");
}

// And with debug jobs stopping their own budget's long work (--debug-stops-own): the work they
// stop is requeued behind them and must still start and end.
TEST(PropertiesFairShare, P5WithDebugStoppingOwnWork_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, false, false, "hourglass-debug-stops-own");
}

// The same with a grace period per job. It found the livelock that
// PropertiesRegression.WaitingPreemptorKeepsGpusOfVictimsKilledEarlier reproduces, fixed since
// (scenario 81: a funded job never started while its victims were stopped and restarted every
// protection period).
TEST(PropertiesFairShare, P5WithGracePeriodsPerJob_200Scenarios) {
  CheckNoStarvation(0x50350006, kP5Scenarios, true, false);
}

// ---------------------------------------------------------------------------------------------
// The contract, recomputed from the run's records independently of the engine's own
// contract_violation flag.

struct ContractStats {
  int64_t funded_stops = 0;    // funded jobs stopped by the policy
  int64_t unfunded_stops = 0;  // unfunded jobs stopped
  int64_t drain_stops = 0;
  int64_t requeued = 0;         // resumable jobs that ran again after a stop
  int64_t ended_preempted = 0;  // non-resumable jobs that ended `preempted`
  int64_t funded_waited = 0;    // funded jobs that waited before their first start
  int64_t session_stops = 0;    // sessions stopped for fair share
  int64_t stopped_in_use = 0;   // sessions stopped for fair share within a lease of activity
};

// Replays one job's runs from its waits and its stop records with the documented rules (a stop
// at t kills at t + grace; a job that finishes within its grace succeeds; a resumable job keeps
// the work up to its last checkpoint, then reloads for restart_overhead), and checks:
//  - no funded job is stopped by the policy before its run is min_runtime old;
//  - a resumable stopped job is requeued (runs again) and, the horizon being long, succeeds;
//  - a non-resumable stopped job ends `preempted` after a single run;
//  - with `leases`, a session is not stopped for fair share while its user is active nor within a
//    lease after (only a drain or a due reservation whose GPUs it borrowed may stop it then).
// Assumes no node is lost and no drain deadline is set (the generator makes none).
void CheckContract(const SimJob& j, const JobRecord& rec,
                   const std::vector<const PreemptionRecord*>& stops, Seconds end,
                   ContractStats& st, bool leases) {
  SCOPED_TRACE("job " + std::to_string(j.spec.id.value()));
  ASSERT_EQ(rec.waits.size(), static_cast<size_t>(rec.attempts));
  const Seconds restart = SimOptions{}.restart_overhead;
  Seconds queued = j.spec.submit;
  Seconds remaining = j.duration;
  size_t next = 0;
  std::optional<JobState> expect;
  for (int k = 0; k < rec.attempts; ++k) {
    ASSERT_FALSE(expect.has_value()) << "ran again after its end";
    const Seconds start = queued + rec.waits[static_cast<size_t>(k)];
    const Seconds finish = start + remaining;
    if (next < stops.size() && stops[next]->at < finish) {
      const PreemptionRecord& s = *stops[next++];
      ASSERT_GE(s.at, start) << "stopped before it started";
      EXPECT_NE(s.cause, StopCause::kNodeLost);
      EXPECT_NE(s.cause, StopCause::kDrainForced);
      if (s.funded) {
        ++st.funded_stops;
        // The contract: protected for min_runtime from the start of each run.
        EXPECT_GE(s.at - start, j.spec.min_runtime)
            << "stopped " << (s.at - start) << " s into a run protected for " << j.spec.min_runtime
            << " s, cause " << ToString(s.cause);
      } else {
        ++st.unfunded_stops;
      }
      if (s.cause == StopCause::kDrain) ++st.drain_stops;
      EXPECT_FALSE(s.contract_violation);
      if (j.spec.lease.value() > 0 && s.cause == StopCause::kFairShare) {
        // In use until idle_after into the run (or its end), protected a lease longer.
        const Seconds until =
            j.idle_after ? start + std::min(*j.idle_after, remaining) + j.spec.lease : finish;
        ++st.session_stops;
        if (s.at < until) ++st.stopped_in_use;
        if (leases) {
          EXPECT_GE(s.at, until) << "a session stopped for fair share " << (until - s.at)
                                 << " s before its lease ran out";
          EXPECT_FALSE(s.active_session);
        }
      }
      if (leases && s.active_session) {
        EXPECT_TRUE(s.cause == StopCause::kDrain || s.cause == StopCause::kReservation)
            << ToString(s.cause);
      }
      const Seconds kill = s.at + j.spec.grace;
      if (finish <= kill) {
        expect = JobState::kSucceeded;  // finished within its grace period
        continue;
      }
      if (!j.spec.resumable) {
        expect = JobState::kPreempted;
        ++st.ended_preempted;
        continue;
      }
      const Seconds ran = kill - start;
      const int64_t ci = j.checkpoint_interval.value();
      const Seconds saved(ci > 0 ? ran.value() / ci * ci : 0);
      remaining = remaining - saved + restart;
      queued = kill;
      if (k + 1 < rec.attempts) ++st.requeued;
    } else {
      expect = JobState::kSucceeded;
      ASSERT_LE(finish, end) << "the horizon is too short for this job";
    }
  }
  EXPECT_EQ(next, stops.size()) << "stop records left over";
  // The horizon is long enough for everything to end: a resumable job that was stopped must
  // have run again, and every job has reached the end its records predict.
  ASSERT_TRUE(expect.has_value()) << "job still " << ToString(rec.final_state) << " after "
                                  << rec.attempts << " runs";
  EXPECT_EQ(rec.final_state, *expect)
      << "resumable " << j.spec.resumable << ", attempts " << rec.attempts;
  if (*expect == JobState::kPreempted) {
    EXPECT_EQ(rec.attempts, 1);
  }
}

void CheckAllContracts(const Scenario& sc, const SimResult& r, ContractStats& st,
                       bool leases = false) {
  const auto jobs = JobsById(sc);
  std::map<int64_t, std::vector<const PreemptionRecord*>> stops;
  for (const PreemptionRecord& p : r.preemptions) stops[p.job.value()].push_back(&p);
  for (const JobRecord& rec : r.jobs) {
    const SimJob& j = *jobs.at(rec.id.value());
    CheckContract(j, rec, stops[rec.id.value()], sc.end, st, leases);
    if (rec.funded && !rec.waits.empty() && rec.waits.front() > Seconds(0)) ++st.funded_waited;
  }
}

// Contention-heavy mixed scenarios: budget l0 floods the cluster first with work of random
// protection, the other budgets come later and take their share back by preemption; unfunded
// work comes and goes; nodes fail health checks or are drained by operators.
// Scenario i of a contract property: mixed work with node events and a budget that floods first.
Scenario ContractScenario(const Rng& root, int i, bool mixed_grace = false, bool sessions = false) {
  Rng rng = root.Fork(static_cast<uint64_t>(i));
  MixKnobs k;
  k.events = true;
  k.flood = true;
  k.mixed_grace = mixed_grace;
  k.sessions = sessions;
  return Mixed(rng, k);
}

void CheckContractOverMixed(uint64_t seed, int scenarios, bool mixed_grace,
                            std::string_view policy = "hourglass") {
  const Rng root(RootSeed(seed));
  ContractStats st;
  PolicyRuns runs(policy);
  for (int i = 0; i < scenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("contract", i));
    const Scenario sc = ContractScenario(root, i, mixed_grace);
    auto r = runs.Run(sc);
    ASSERT_TRUE(r);
    for (const PreemptionRecord& p : r->preemptions)
      EXPECT_FALSE(p.contract_violation) << "job " << p.job << " cause " << ToString(p.cause);
    CheckAllContracts(sc, *r, st);
  }
  // Contention: every kind of stop the contract speaks of happened, many times.
  EXPECT_GT(st.funded_stops, scenarios / 2);
  EXPECT_GT(st.unfunded_stops, scenarios / 2);
  EXPECT_GT(st.drain_stops, 0);
  EXPECT_GT(st.requeued, scenarios / 4);
  EXPECT_GT(st.ended_preempted, scenarios / 4);
  EXPECT_GT(st.funded_waited, scenarios);
  runs.ExpectExercised(scenarios);
}

TEST(PropertiesContract, NoFundedJobStoppedWhileProtectedAndRequeueRules_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, false);
}

TEST(PropertiesContract, ContractWithLargeJobHolds_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, false, "hourglass-large");
}

TEST(PropertiesContract, ContractWithPreemptBelow_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, false, "hourglass-patient");
}

TEST(PropertiesContract, ContractWithQuickFirst_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, false, "hourglass-quick-first");
}

// With the take-back cool-down the contract holds as ever. (That no fair-share stop then answers
// a stop the other way within the hour: Engine.WithTheCoolDownNoFairShareStopTakesBackGpus, on
// lab-month, as these scenarios rarely give a leaf the chance.)
TEST(PropertiesContract, ContractWithTheTakeBackCoolDown_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, false, "hourglass-cooldown");
}

TEST(PropertiesContract, ContractWithTheDeployedConfig_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, false, "hourglass-deployed");
}

// And with a grace period per job, under which the default found two livelocks.
TEST(PropertiesContract, RequeueRulesWithGracePeriodsPerJobAndTheDeployedConfig_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, true, "hourglass-deployed");
}

TEST(PropertiesContract, ContractWithReservationsThatPreempt_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, false, "hourglass-reserve-preempts");
}

// Stops of a debug job's own budget's work keep the contract, and stop only funded long work:
// never a debug job, never unfunded work (which any funded job stops for its own reason first).
TEST(PropertiesContract, ContractWithDebugStoppingOwnWork_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, false, "hourglass-debug-stops-own");
  const Rng root(RootSeed(0x50430007));
  int own = 0;
  for (int i = 0; i < kContractScenarios / 4 && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("contract", i));
    auto r = RunSim(ContractScenario(root, i), "hourglass-debug-stops-own");
    ASSERT_TRUE(r);
    for (const PreemptionRecord& p : r->preemptions) {
      if (p.cause != StopCause::kOwnBudget) continue;
      ++own;
      EXPECT_NE(p.job_class, "debug") << "job " << p.job;
      EXPECT_TRUE(p.funded) << "job " << p.job;
    }
  }
  EXPECT_GT(own, 0);  // the option did stop such work
}

// The same with a grace period per job. It found the livelock that
// PropertiesRegression.WaitingPreemptorKeepsGpusOfVictimsKilledEarlier reproduces, fixed since
// (scenario 57: a resumable job was still running after 850 runs, stopped every time its
// protection ended).
TEST(PropertiesContract, RequeueRulesWithGracePeriodsPerJob_200Scenarios) {
  CheckContractOverMixed(0x50430007, kContractScenarios, true);
}

// PolicyConfig::quick_protect (1 h) longer than any debug job's work: the contract holds, and no
// debug job is stopped for fair share while its run is younger than that. (A run can outlast the
// hour: a resumable debug job stopped again and again by due reservations reloads for 5 minutes
// at every restart, soak round 418.) The default policy on the same scenarios is the control:
// there debug jobs, which have lost least when stopped, are fair-share victims, so the check can
// fail.
TEST(PropertiesContract, DebugJobsUnderQuickProtectAreNotStoppedForFairShare_200Scenarios) {
  const Rng root(RootSeed(0x50430007));
  const Seconds spared = Hours(1);  // hourglass-quick-protect's quick_protect
  ContractStats st;
  int debug_fair_share = 0, control_debug_fair_share = 0;
  for (int i = 0; i < kContractScenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("quick-protect", i));
    const Scenario sc = ContractScenario(root, i);
    auto r = RunSim(sc, "hourglass-quick-protect");
    ASSERT_TRUE(r);
    CheckAllContracts(sc, *r, st);
    for (const PreemptionRecord& p : r->preemptions) {
      EXPECT_FALSE(p.contract_violation) << "job " << p.job << " cause " << ToString(p.cause);
      if (p.job_class != "debug" || p.cause != StopCause::kFairShare) continue;
      const Seconds age = p.run;  // how long the stopped run had lasted
      if (age < spared) {
        ++debug_fair_share;
        ADD_FAILURE() << "debug job " << p.job << " stopped for fair share at " << p.at.value()
                      << ", " << age.value() << " s into its run";
      }
    }
    auto control = RunSim(sc);
    ASSERT_TRUE(control);
    for (const PreemptionRecord& p : control->preemptions)
      control_debug_fair_share += p.job_class == "debug" && p.cause == StopCause::kFairShare;
  }
  EXPECT_EQ(debug_fair_share, 0);
  // The control stopped debug jobs for fair share 6 or more times in each of soak rounds 300-340.
  EXPECT_GT(control_debug_fair_share, 2);
  EXPECT_GT(st.funded_stops, kContractScenarios / 2);  // other work is still stopped for them
}

// Sessions (jobs with a lease, half of them parked) among the mixed scenarios' funded work: the
// contract holds, and no session is stopped for fair share while its user is active or within a
// lease after. The same scenarios with leases off are the control: there sessions in use are
// stopped for fair share, so the check can fail.
TEST(PropertiesContract, SessionsInUseAreNotStoppedForFairShare_200Scenarios) {
  const Rng root(RootSeed(0x5e551045));
  ContractStats with, control;
  for (int i = 0; i < kContractScenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("sessions", i));
    const Scenario sc = ContractScenario(root, i, true, true);
    auto r = RunSim(sc, "hourglass");
    ASSERT_TRUE(r);
    for (const PreemptionRecord& p : r->preemptions)
      EXPECT_FALSE(p.contract_violation) << "job " << p.job << " cause " << ToString(p.cause);
    CheckAllContracts(sc, *r, with, true);
    auto off = RunSim(sc, "hourglass-no-leases");
    ASSERT_TRUE(off);
    CheckAllContracts(sc, *off, control, false);
  }
  // Parked sessions are stopped once their lease has run out; without leases, sessions in use.
  // Over soak rounds 300-335 the first count was 20-37 (30 in CI's round), the control's 86-136:
  // a twentieth keeps the check on the path without failing at the low tail (round 321: 20).
  EXPECT_GT(with.session_stops, kContractScenarios / 20);
  EXPECT_EQ(with.stopped_in_use, 0);
  EXPECT_GT(control.stopped_in_use, kContractScenarios / 10);
  EXPECT_GT(with.funded_stops, kContractScenarios / 2);
}

// The same sessions under what runs unless told otherwise (DeployedConfig()), where they may
// also start on the debug headroom: the lease holds as by default.
TEST(PropertiesContract, SessionsInUseAreNotStoppedForFairShareWithTheDeployedConfig_200Scenarios) {
  const Rng root(RootSeed(0x5e551045));
  ContractStats st;
  PolicyRuns runs("hourglass-deployed");
  for (int i = 0; i < kContractScenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("sessions", i));
    const Scenario sc = ContractScenario(root, i, true, true);
    auto r = runs.Run(sc);
    ASSERT_TRUE(r);
    for (const PreemptionRecord& p : r->preemptions)
      EXPECT_FALSE(p.contract_violation) << "job " << p.job << " cause " << ToString(p.cause);
    CheckAllContracts(sc, *r, st, true);
  }
  EXPECT_GT(st.session_stops, kContractScenarios / 20);
  EXPECT_EQ(st.stopped_in_use, 0);
  EXPECT_GT(st.funded_stops, kContractScenarios / 2);
  runs.ExpectExercised(kContractScenarios);
}

// Every funded job is protected for its whole duration (min_runtime = duration <= 8 h): then no
// funded job may be stopped at all (there are no node events here). The same scenarios with no
// protection are run as a control: there funded jobs are stopped, so the check can fail.
void CheckFullyProtectedNeverStopped(std::string_view policy) {
  const Rng root(RootSeed(0x50430008));
  int64_t control_funded_stops = 0, unfunded_stops = 0, funded_waited = 0;
  for (int i = 0; i < kProtectedScenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("protected", i));
    Rng rng = root.Fork(static_cast<uint64_t>(i));
    MixKnobs k;
    k.flood = true;
    k.protect_all = true;
    Rng control_rng = rng;
    const Scenario sc = Mixed(rng, k);
    auto r = RunSim(sc, policy);
    ASSERT_TRUE(r);
    for (const PreemptionRecord& p : r->preemptions) {
      EXPECT_FALSE(p.funded) << "funded job " << p.job << " stopped, cause " << ToString(p.cause);
      unfunded_stops += !p.funded;
    }
    for (const JobRecord& rec : r->jobs)
      funded_waited += rec.funded && !rec.waits.empty() && rec.waits.front() > Seconds(0);

    // Same draws, same durations (protect_all still caps them at 8 h), but no protection at all.
    k.unprotected = true;
    const Scenario control = Mixed(control_rng, k);
    auto c = RunSim(control, policy);
    ASSERT_TRUE(c);
    for (const PreemptionRecord& p : c->preemptions) control_funded_stops += p.funded;
  }
  EXPECT_GT(control_funded_stops, kProtectedScenarios / 4);
  EXPECT_GT(unfunded_stops, kProtectedScenarios / 4);
  EXPECT_GT(funded_waited, kProtectedScenarios);
}

TEST(PropertiesContract, FullyProtectedFundedJobsAreNeverStopped_100Scenarios) {
  CheckFullyProtectedNeverStopped("hourglass");
}

// Under DeployedConfig() too, where whole-node jobs' reservations may also stop funded work, but
// only past its protection.
TEST(PropertiesContract,
     FullyProtectedFundedJobsAreNeverStoppedWithTheDeployedConfig_100Scenarios) {
  CheckFullyProtectedNeverStopped("hourglass-deployed");
}

// Unfunded work is preempted first. Unfunded whole-node jobs hold U nodes; budget a holds the
// other N - U >= U + 2 nodes with quarter-node jobs whose protection has ended. Then budget b
// (nothing used so far) asks for more than half the cluster. Each of b's jobs could be placed by
// stopping either an unfunded job or some of a's; the unfunded must go first: no fair-share stop
// of a's jobs while an unfunded job still runs unstopped, and no more of a's GPUs stopped than b
// wants beyond what the unfunded jobs free. That a's jobs are stopped at all shows they were
// eligible victims all along (a holds more than its half, b nothing).
void CheckUnfundedFirst(uint64_t seed, int scenarios, bool whole_node_preemptors,
                        std::string_view policy = "hourglass") {
  const Rng root(RootSeed(seed));
  PolicyRuns runs(policy);
  const bool reservations_stop = policy == "hourglass-deployed";
  int fewer = 0;  // scenarios where `policy` stopped fewer funded GPUs than the default
  for (int i = 0; i < scenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("unfunded-first", i));
    Rng rng = root.Fork(static_cast<uint64_t>(i));
    Builder b("unfunded-first");
    const int gpus = rng.Bernoulli(0.5) ? 4 : 8;
    const auto nodes = static_cast<int>(rng.UniformInt(4, 8));
    b.Nodes(nodes, gpus, static_cast<int>(rng.UniformInt(1, 2)));
    const int32_t cap = b.capacity();
    b.Budget("a", "", 1);
    b.Budget("b", "", 1);
    const auto unfunded_nodes = static_cast<int>(rng.UniformInt(1, (nodes - 2) / 2));
    const Seconds protection = UniformSeconds(rng, Seconds(0), Hours(1));
    // a leaves the quiet headroom free (whole jobs of it), or an unfunded job would wait for it.
    const int a_jobs =
        (nodes - unfunded_nodes) * 4 - KeptForHeadroom(policy, cap, gpus / 4) / (gpus / 4);
    for (int n = 0; n < a_jobs; ++n) {
      SimJob& j = b.Job(Seconds(0), gpus / 4, "a", Days(2));
      j.spec.min_runtime = protection;
      j.spec.resumable = rng.Bernoulli(0.5);
      j.spec.grace = UniformSeconds(rng, Seconds(0), Seconds(300));
    }
    std::vector<int64_t> unfunded;
    for (int n = 0; n < unfunded_nodes; ++n) {
      SimJob& j = b.Job(Seconds(0), gpus, "", Days(2));
      j.spec.grace = UniformSeconds(rng, Seconds(0), Seconds(300));
      unfunded.push_back(j.spec.id.value());
    }
    const Seconds arrive = protection + UniformSeconds(rng, Minutes(10), Hours(2));
    int32_t wanted = 0, b_jobs = 0;
    while (wanted <= cap / 2 + unfunded_nodes * gpus) {
      const auto g =
          whole_node_preemptors ? gpus : static_cast<int32_t>(rng.UniformInt(1, gpus / 2));
      b.Job(arrive, g, "b", UniformSeconds(rng, Hours(1), Hours(4)));
      wanted += g;
      ++b_jobs;
    }
    const Scenario sc = b.Finish(arrive + Hours(6));
    auto r = runs.Run(sc);
    ASSERT_TRUE(r);
    if (policy == "hourglass-spare") {  // the variant must change something: where it saves
      const std::optional<SimResult>& base = runs.base();
      ASSERT_TRUE(base);
      int32_t mine = 0, theirs = 0;
      for (const PreemptionRecord& p : r->preemptions) mine += p.funded ? p.gpus : 0;
      for (const PreemptionRecord& p : base->preemptions) theirs += p.funded ? p.gpus : 0;
      if (mine < theirs) ++fewer;
    }

    const auto jobs = JobsById(sc);
    std::map<int64_t, Seconds> start, stopped;
    for (const JobRecord& rec : r->jobs)
      if (!rec.funded) start[rec.id.value()] = FirstStart(*jobs.at(rec.id.value()), rec);
    int fair_share = 0, for_funded = 0;
    int32_t funded_gpus = 0;  // of a's jobs stopped for fair share, each job once
    std::set<int64_t> a_stopped;
    Seconds first_unfunded = kNever, first_fair_share = kNever;
    for (const PreemptionRecord& p : r->preemptions) {
      if (!p.funded) {
        EXPECT_EQ(p.cause, StopCause::kUnfunded);
        ++for_funded;
        first_unfunded = std::min(first_unfunded, p.at);
        stopped.emplace(p.job.value(), p.at);
        continue;
      }
      // Later in the run, work that backfilled a reservation may be stopped for it once its
      // holder's budget is served no better than the work's: b's small jobs, or a's victims
      // requeued onto reserved GPUs (soak round 231, scenario 3: a's job 15, stopped for b at
      // 2,380 s, restarted on GPUs reserved for b's job 38 and gave them back when it was due).
      // Neither is a's running work chosen as a victim for b.
      // Under DeployedConfig() a whole-node job's reservation may also stop a's work once its
      // protection has ended (contract case (c), PolicyConfig::whole_node_reservation_preempts):
      // such stops choose their victims for b too, so they are held to the same rules.
      if (p.cause == StopCause::kReservation && !reservations_stop) continue;
      EXPECT_TRUE(p.cause == StopCause::kFairShare || p.cause == StopCause::kReservation)
          << "job " << p.job << " cause " << ToString(p.cause);
      for (int64_t u : unfunded) {
        const bool running = start.at(u) <= p.at;
        const auto it = stopped.find(u);
        EXPECT_FALSE(running && (it == stopped.end() || it->second > p.at))
            << "funded job " << p.job << " stopped at " << p.at << " while unfunded job " << u
            << " still ran";
      }
      // A stop of b's work is a's requeued job taking GPUs back once b's later jobs put b over
      // a (the policy under test has no take-back cool-down). It frees b's GPUs, not a's, so
      // the bound below does not count it (soak round 920: a's requeued job 10 stopped b's
      // 1-GPU job 28 100 s after it started, b's jobs having taken a victim's spare GPUs).
      if (jobs.at(p.job.value())->budget == "b") continue;
      ++fair_share;
      first_fair_share = std::min(first_fair_share, p.at);
      // Each of a's jobs counts once. A resumable victim requeued while its preemptor waits out
      // the grace may restart on the GPUs freed for it, if b's other starts have meanwhile put b
      // over a: the fair-share order holds no freed GPUs for their preemptor, which stops the
      // victim again (soak round 926: a's job 14, stopped twice for b's job 41). Holding those
      // GPUs was measured and not kept (docs/open-work.md, "Preemptions whose preemptor does
      // not get the GPUs"). That is churn within a's work, not a's GPUs stopped in place of the
      // unfunded ones this bound is about.
      if (a_stopped.insert(p.job.value()).second) funded_gpus += p.gpus;
    }
    // Both kinds of victim were available and were used, the unfunded first, all of them.
    EXPECT_EQ(for_funded, unfunded_nodes);
    EXPECT_GT(fair_share, 0);
    EXPECT_LE(first_unfunded, first_fair_share);
    // No funded GPUs stopped that the unfunded victims could have provided. A preemptor smaller
    // than a's jobs (quarter nodes) frees a whole one and leaves the rest of it idle until the
    // victim has gone: by default the next small preemptor does not count on it and stops
    // another (PropertiesRegression.SpareGpusOfAStoppingVictim...). Each of b's jobs may waste
    // less than one of a's jobs so, and each unfunded victim (a whole node) less than a node:
    // soak round 813, scenario 89, where b's job 33 stopped two of a's 1-GPU jobs 110 s before
    // the unfunded job 21, stopped for a 1-GPU job, left 3 spare GPUs on its node. With
    // wait_for_spare, which counts those spare GPUs, only the last of b's jobs may waste any.
    const int32_t rounding = whole_node_preemptors ? 0
                             : policy == "hourglass-spare"
                                 ? gpus / 4 - 1
                                 : b_jobs * (gpus / 4 - 1) + unfunded_nodes * (gpus - 1);
    EXPECT_LE(funded_gpus, wanted - unfunded_nodes * gpus + rounding)
        << "b wanted " << wanted << " GPUs in " << b_jobs << " jobs, unfunded jobs freed "
        << unfunded_nodes * gpus;
  }
  // With wait_for_spare, b's small jobs share the spare GPUs of their victims instead of each
  // stopping more of a's work (86 of the 100 scenarios of CI's round). Counted over a whole round
  // only: a failure above ends the round early.
  if (policy == "hourglass-spare" && !::testing::Test::HasFailure()) {
    EXPECT_GT(fewer, scenarios / 2) << policy;
  }
  runs.ExpectExercised(scenarios);
}

TEST(PropertiesContract, UnfundedJobsArePreemptedFirst_100Scenarios) {
  CheckUnfundedFirst(0x50430009, kUnfundedFirstScenarios, true);
}

// The same with b's jobs smaller than a node (1 to G/2 GPUs), whose GPU bound allows for the
// rounding above. (With a 24 h live weight b never got all it wanted here, and the bound held
// without it; with 12 h, a's non-resumable victims leave, its demand and so its share fall, and
// b may take everything it asked for.)
TEST(PropertiesContract, UnfundedJobsArePreemptedFirstSmallPreemptors_100Scenarios) {
  CheckUnfundedFirst(0x50430009, kUnfundedFirstScenarios, false);
}

// With wait_for_spare, the small preemptors share the spare GPUs of each victim: the bound above
// without the rounding per job, and fewer funded GPUs stopped than by default in most scenarios.
TEST(PropertiesContract, UnfundedJobsArePreemptedFirstSmallPreemptorsWaitForSpare_100Scenarios) {
  CheckUnfundedFirst(0x50430009, kUnfundedFirstScenarios, false, "hourglass-spare");
}

// Under DeployedConfig(), where b's whole-node jobs also stop a's work through their reservations
// (held to the same rules above) and a leaves the quiet headroom free.
TEST(PropertiesContract, UnfundedJobsArePreemptedFirstWithTheDeployedConfig_100Scenarios) {
  CheckUnfundedFirst(0x50430009, kUnfundedFirstScenarios, true, "hourglass-deployed");
}

TEST(PropertiesContract,
     UnfundedJobsArePreemptedFirstSmallPreemptorsWithTheDeployedConfig_100Scenarios) {
  CheckUnfundedFirst(0x50430009, kUnfundedFirstScenarios, false, "hourglass-deployed");
}

// The measure can fail: under the `priority` baseline a higher tier preempts a lower tier's
// protected job, and the run records it as a contract violation (which the records confirm
// independently). Hourglass on the same scenarios records none and lets the newcomers wait for the
// protection to end.
TEST(PropertiesContract, PriorityBaselineViolatesContractHourglassDoesNot_25Scenarios) {
  const Rng root(RootSeed(0x5043000a));
  for (int i = 0; i < kPriorityScenarios && !::testing::Test::HasFailure(); ++i) {
    SCOPED_TRACE(Trace("priority", i));
    Rng rng = root.Fork(static_cast<uint64_t>(i));
    Builder b("priority");
    const int gpus = rng.Bernoulli(0.5) ? 4 : 8;
    const auto nodes = static_cast<int>(rng.UniformInt(2, 6));
    b.Nodes(nodes, gpus, 1);
    b.Budget("lo", "", 1);
    b.Budget("hi", "", 1);
    const Seconds protection = Minutes(rng.UniformInt(2 * 60, 8 * 60));
    for (int n = 0; n < nodes; ++n) {
      SimJob& j =
          b.Job(Seconds(0), gpus, "lo", protection + UniformSeconds(rng, Hours(1), Hours(4)));
      j.spec.min_runtime = protection;
      j.spec.tier = 0;
      j.spec.resumable = rng.Bernoulli(0.5);
    }
    const Seconds arrive = UniformSeconds(rng, Minutes(10), protection - Minutes(30));
    std::vector<int64_t> high;
    for (int n = static_cast<int>(rng.UniformInt(1, nodes)); n > 0; --n) {
      SimJob& j = b.Job(arrive, gpus, "hi", UniformSeconds(rng, Hours(1), Hours(2)));
      j.spec.tier = 2;
      high.push_back(j.spec.id.value());
    }
    const Scenario sc = b.Finish(protection + Hours(12));
    const auto jobs = JobsById(sc);

    auto p = RunSim(sc, "priority");
    ASSERT_TRUE(p);
    int violations = 0;
    for (const PreemptionRecord& rec : p->preemptions) {
      if (!rec.contract_violation) continue;
      ++violations;
      // Independently: the victim's only run started at 0 and was protected until `protection`.
      EXPECT_LT(rec.at, jobs.at(rec.job.value())->spec.min_runtime);
    }
    EXPECT_EQ(violations, static_cast<int>(high.size()));

    auto h = RunSim(sc, "hourglass");
    ASSERT_TRUE(h);
    for (const PreemptionRecord& rec : h->preemptions) {
      EXPECT_FALSE(rec.contract_violation);
      EXPECT_GE(rec.at, protection);
    }
    std::map<int64_t, const JobRecord*> rec;
    for (const JobRecord& j : h->jobs) rec[j.id.value()] = &j;
    for (int64_t id : high) {
      ASSERT_GE(rec.at(id)->attempts, 1);
      EXPECT_GE(FirstStart(*jobs.at(id), *rec.at(id)), protection);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Minimal reproductions of the defects the properties above found. Each asserts what the design
// promises.

// Policy (core/hourglass_policy.cc, Cycle::Setup), fixed in acef8ea: a job waiting for its
// victims held only the free GPUs on nodes where a victim was still stopping. A victim killed
// earlier (shorter grace) freed GPUs nobody held; being resumable it was requeued and restarted
// there at once, protected anew. When the last victim had gone the preemptor no longer fit, and
// it preempted the same jobs again when their protection ended: a livelock. Here b's 8-GPU job
// never started in two days and a's two jobs were stopped every 30 min (about 95 times each).
TEST(PropertiesRegression, WaitingPreemptorKeepsGpusOfVictimsKilledEarlier) {
  Builder b("livelock");
  b.Nodes(2, 4, 1);
  b.Budget("a", "", 1);
  b.Budget("b", "", 100);  // b is owed nearly all, so it may preempt a
  {
    SimJob& j = b.Job(Seconds(0), 3, "a", Hours(10));  // on n0
    j.spec.resumable = true;
    j.spec.min_runtime = Minutes(30);
    j.spec.grace = Seconds(0);
  }
  {
    SimJob& j = b.Job(Seconds(0), 2, "a", Hours(10));  // on n1
    j.spec.resumable = true;
    j.spec.grace = Seconds(600);
  }
  const int64_t gang = b.Job(Hours(1), 8, "b", Hours(1)).spec.id.value();
  const Scenario sc = b.Finish(Days(2));
  auto r = RunSim(sc);
  ASSERT_TRUE(r);
  for (const JobRecord& rec : r->jobs) {
    if (rec.id.value() == gang) {
      // Expected: starts once a's jobs have gone (at 1 h + 600 s grace + one cycle).
      EXPECT_EQ(rec.final_state, JobState::kSucceeded);
      ASSERT_GE(rec.attempts, 1);
      EXPECT_LE(rec.waits.front(), Seconds(600 + 20));
    } else {
      EXPECT_EQ(rec.final_state, JobState::kSucceeded) << "job " << rec.id;
      EXPECT_LE(rec.attempts, 2) << "job " << rec.id;
    }
  }
}

// Engine (sim/engine.cc, Engine::RunCycle), fixed in acef8ea: a node repaired while it drained
// returned to service when it became empty, inside RunCycle's node decisions, but no further
// cycle was scheduled. Work that needed that node waited until some unrelated event happened;
// here none does, and the 16-GPU job waited on an idle cluster until the end.
TEST(PropertiesRegression, NodeRepairedWhileDrainingTakesWorkWhenEmpty) {
  Builder b("repair");
  b.Nodes(2, 8, 1);
  b.Budget("a", "", 1);
  b.Job(Seconds(0), 8, "a", Hours(3)).spec.min_runtime = Hours(2);  // on n0
  const int64_t big = b.Job(Minutes(70), 16, "a", Hours(1)).spec.id.value();
  TimedEvent e;
  e.at = Hours(1);
  e.kind = EventKind::kHealthFail;
  e.target = "n0";
  b.Event(e);
  e.at = Minutes(90);  // while the protected job still holds n0
  e.kind = EventKind::kRepair;
  b.Event(e);
  const Scenario sc = b.Finish(Days(1));
  auto r = RunSim(sc);
  ASSERT_TRUE(r);
  for (const JobRecord& rec : r->jobs) {
    if (rec.id.value() != big) continue;
    // Expected: n0 empties at 2 h + 120 s grace and is back at once; the job starts in the
    // next cycle.
    ASSERT_GE(rec.attempts, 1) << "never started";
    EXPECT_LE(Minutes(70) + rec.waits.front(), Hours(2) + Seconds(120 + 20));
  }
}

// Policy (core/preemption.cc, PlanPreemption): jobs already stopping are skipped as candidates,
// and by default the GPUs they will free beyond what their own preemptor needs are not counted
// either. Six 2-GPU jobs of b arrive; one unfunded 8-GPU job could host four of them, a's 2-GPU
// jobs the rest. By default the unfunded job and three of a's are stopped (14 GPUs for 12): the
// second to fourth of b's jobs each stop one of a's instead of using the GPUs the stopping
// unfunded job is about to free. That is the default on purpose: a is over its share, and each
// such stop moves GPUs from it to b, further below, which is what entitlement delivered rewards
// (waiting for the spare GPUs lost 8% less work and delivered 0.3 points less on lab-month:
// docs/open-work.md). With wait_for_spare, the unfunded job and two of a's (12 GPUs for 12).
TEST(PropertiesRegression, SpareGpusOfAStoppingVictimComeBeforeFundedVictimsWithWaitForSpare) {
  Builder b("spare");
  b.Nodes(3, 8, 1);
  b.Budget("a", "", 1);
  b.Budget("b", "", 1);
  for (int k = 0; k < 8; ++k) b.Job(Seconds(0), 2, "a", Days(1));
  b.Job(Seconds(0), 8, "", Days(1));
  for (int k = 0; k < 6; ++k) b.Job(Hours(1), 2, "b", Hours(4));
  const Scenario sc = b.Finish(Hours(8));
  for (std::string_view policy : {"hourglass-spare", "hourglass"}) {
    SCOPED_TRACE(policy);
    auto r = RunSim(sc, policy);
    ASSERT_TRUE(r);
    int unfunded = 0, funded = 0;
    for (const PreemptionRecord& p : r->preemptions) (p.funded ? funded : unfunded) += p.gpus;
    EXPECT_EQ(unfunded, 8);
    EXPECT_EQ(funded, policy == "hourglass" ? 6 : 4);
  }
}

// Policy (PlanPreemption with may_use_reserved = false, and backfill): a job whose protection
// outlasts a reservation (job 55 here, min_runtime 8 h) may not use reserved GPUs, yet its plan
// counts the GPUs of backfilled victims sitting on reserved GPUs as freed for it. Each victim
// (resumable, min_runtime 0, grace 0) is killed at once; its GPUs fall back into the reservation
// of job 21; the victim, or another such job, backfills them again in the same instant, and job
// 55 stops it again. The virtual clock stayed at 2,910 s forever and `hourglass sim` hung, until
// acef8ea made the loop never run twice at one instant. The scenario is P5's generator (seed
// 0x5035000b, scenario 167, repairs during drains; the node events come later and play no part).
TEST(PropertiesRegression, PreemptorBarredFromReservedGpusSpinsAtOneInstant) {
  const Rng root(0x5035000b);
  Rng rng = root.Fork(167);
  MixKnobs k;
  k.events = rng.Bernoulli(0.5);
  k.max_runtime = true;
  k.quick_repairs = true;
  const Scenario sc = Mixed(rng, k);
  auto r = RunSim(sc);  // fails with "the virtual clock is stuck at 2910 s"
  ASSERT_TRUE(r);
  for (const JobRecord& rec : r->jobs) EXPECT_TRUE(Terminal(rec.final_state)) << rec.id;
}

// Policy (core/hourglass_policy.cc), found by soak rounds (scripts/soak.sh) and fixed by
// StopDecision::hold_for: a stop made outside the fair-share order (a due reservation under
// reservation_preempts_gpus, or a quick job under quick_first) freed GPUs that the fair-share walk
// gave back to the victim's budget in the cycle after the victim had gone. The victim restarted,
// protected anew, and was stopped again when its protection ended, without end: in soak round 11,
// P5 scenario 92, a 28-GPU job restarted 2,066 times while two funded jobs never started; in
// round 3, contract scenario 67 (quick_first), jobs stayed pending to the end. Each scenario is
// the generator's, as the property tests draw it in that round.
void CheckSoakScenario(uint64_t base, uint64_t round, int index, bool p5, std::string_view policy,
                       Seconds max_gap = Seconds(0)) {
  // The loop the round ran it with: odd scenarios every tick, as Trace sets it in the properties.
  SCOPED_TRACE(Trace(p5 ? "P5" : "contract", index));
  const Rng root(SoakSeed(base, round));
  Rng rng = root.Fork(static_cast<uint64_t>(index));
  MixKnobs k;
  if (p5) {
    k.events = rng.Bernoulli(0.5);
    k.max_runtime = true;
  } else {
    k.events = true;
    k.flood = true;
  }
  const Scenario sc = Mixed(rng, k);
  auto r = RunSim(sc, policy, max_gap);
  ASSERT_TRUE(r);
  for (const JobRecord& rec : r->jobs) {
    EXPECT_TRUE(Terminal(rec.final_state))
        << "job " << rec.id << " ends " << ToString(rec.final_state);
    EXPECT_LE(rec.attempts, 20) << "job " << rec.id;
  }
}

TEST(PropertiesRegression, StopsForADueReservationHoldTheFreedGpus) {
  CheckSoakScenario(0x50350006, 11, 92, true, "hourglass-reserve-preempts");
}

// With the hold, soak round 14 (contract scenario 92) found two gangs of reservation_preempts_gpus
// taking the GPUs back and forth each time the other's protection ended (26 and 37 started about
// 2,000 times each): keys with the live allocation swap when the gangs do. Fixed in
// FairShare::StaysBelowVictim (the window alone must order them too).
TEST(PropertiesRegression, TwoGangsDoNotTakeAReservationsGpusBackAndForth) {
  CheckSoakScenario(0x50430007, 14, 92, false, "hourglass-reserve-preempts");
}

// Soak round 46 (P5 scenario 59) found it again on two whole-cluster gangs of equal shares, each
// taking the GPUs once the other's protection (1,800 s) had ended: after that long the window
// alone ordered them the other way. Their checkpoints came every 3,600 s, so each run was lost
// and neither ever ended (142 stops each). Fixed in HourglassPolicy's YieldsToReservation: work
// that got its GPUs by such a stop does not give them up the same way.
TEST(PropertiesRegression, AGangThatTookAReservationsGpusKeepsThemFromTheNext) {
  CheckSoakScenario(0x50350006, 46, 59, true, "hourglass-reserve-preempts");
}

TEST(PropertiesRegression, StopsForQuickJobsUnderQuickFirstHoldTheFreedGpus) {
  CheckSoakScenario(0x50430007, 3, 67, false, "hourglass-quick-first");
  CheckSoakScenario(0x50350006, 8, 161, true, "hourglass-quick-first");
}

// Policy (core/hourglass_policy.cc, TryPreempt), found in session 24 when the first scenario
// above ran with a 300 s max gap: a debug job stopped a batch job of a budget over its share
// under quick_first, leaving that budget below the debug job's, so the batch job, requeued,
// stopped the debug job by fair share at the next gap cycle, and so on: each started 28 times.
// Under quick_first non-quick work no longer stops quick jobs for fair share.
TEST(PropertiesRegression, QuickFirstStopsDoNotPingPongWithFairShare) {
  CheckSoakScenario(0x50430007, 3, 67, false, "hourglass-quick-first", Seconds(300));
}

// Soak rounds 153 (contract scenario 63) and 144 (P5 scenario 50), quick_first: the GPUs held
// for a job whose debug victim was requeued went back to that victim. The waiting debug job grew
// the debug headroom, the headroom kept the job from its freed GPUs, and the quick-first walk
// gave them to the debug job; once its protection ended the job stopped it again (in round 153
// an 8-GPU job stopped the same four jobs about 3,190 times each; in round 144 four funded jobs
// never started). Under quick_first the held GPUs now go to the job whatever the headroom.
TEST(PropertiesRegression, UnderQuickFirstTheHeldGpusGoToTheirJobWhateverTheHeadroom) {
  CheckSoakScenario(0x50430007, 153, 63, false, "hourglass-quick-first");
  CheckSoakScenario(0x50350006, 144, 50, true, "hourglass-quick-first");
}

// Soak round 796 (contract scenario 173, every tick), reservation_preempts_gpus: a 1-GPU job of l1
// stopped l0's 16-GPU gang for fair share; l1's own 16-GPU gang, earlier in l1's queue, took the
// freed GPUs, and once its 300 s protection ended the stopped gang's reservation took them back
// (contract case (c)), so the 1-GPU job stopped it again: 838 rounds, the 1-GPU job never
// started. Now a fair-share stop of a gang that got its GPUs by a due reservation's stop, and is
// as large as the option's threshold, holds the freed GPUs for its preemptor.
TEST(PropertiesRegression, WithReservationsThatPreemptAStopOfAGangThatTookItsGpusHoldsThem) {
  CheckSoakScenario(0x50430007, 796, 173, false, "hourglass-reserve-preempts");
}

// Soak round 628 (contract scenario 169, every tick), reservation_preempts_gpus: l2's 2-GPU job
// stopped l1's 24-GPU gang for fair share, l2's 20-GPU job started on the 22 spare GPUs, and the
// gang, once its protection ended, stopped the first for fair share and the second for its
// reservation: 103 times. Now, under the option, a smaller job's fair-share stop of a gang that
// large counts the gang's spare GPUs as the preemptor side's.
TEST(PropertiesRegression, WithReservationsThatPreemptAGangsSpareGpusCountAsItsPreemptorsSide) {
  CheckSoakScenario(0x50430007, 628, 169, false, "hourglass-reserve-preempts");
}

}  // namespace
}  // namespace hg::sim
