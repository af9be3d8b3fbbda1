#include "sim/lab_month.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "core/budget_tree.h"

namespace hg::sim {
namespace {

constexpr double kCapacity = 1024.0 * 30 * 86400;

// Every field of a scenario as text: equal text <=> equal scenarios.
std::string Dump(const Scenario& s) {
  std::ostringstream o;
  o << s.name << ' ' << s.end << '\n';
  for (const NodeSpec& n : s.nodes) o << n.name << ' ' << n.gpus << ' ' << n.block << '\n';
  for (const BudgetSpec& b : s.budgets) {
    o << b.name << ' ' << b.parent << ' ' << b.share << ' ' << b.limit.value_or(-1);
    for (const std::string& l : b.leads) o << ' ' << l;
    o << '\n';
  }
  for (const SimJob& j : s.jobs) {
    const JobSpec& p = j.spec;
    o << p.id << ' ' << p.submit << ' ' << p.gpus << ' ' << p.gpus_per_node << ' '
      << p.budget.value() << ' ' << p.job_class << ' ' << p.min_runtime << ' '
      << p.max_runtime.value_or(Seconds(-1)) << ' ' << p.resumable << ' ' << p.grace << ' '
      << p.priority << ' ' << p.tier << ' ' << j.budget << ' ' << j.duration << ' '
      << j.checkpoint_interval << '\n';
  }
  for (const TimedEvent& e : s.events) {
    o << e.at << ' ' << static_cast<int>(e.kind) << ' ' << e.target << ' ' << e.value << ' '
      << e.deadline.value_or(Seconds(-1)) << ' ' << e.reason << '\n';
  }
  return o.str();
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

struct Demand {
  double total = 0;
  double funded = 0;
  std::map<std::string, double> by_class;
};

Demand Offered(const Scenario& s) {
  Demand d;
  for (const SimJob& j : s.jobs) {
    const double g = GpuSeconds(j.spec.gpus, j.duration);
    d.total += g;
    if (!j.budget.empty()) d.funded += g;
    d.by_class[j.spec.job_class] += g;
  }
  return d;
}

class LabMonth : public ::testing::Test {
 protected:
  static const Scenario& Seed1() {
    static const Scenario s = MakeLabMonth(1);
    return s;
  }
};

TEST_F(LabMonth, SameSeedGivesIdenticalScenario) {
  const Scenario again = MakeLabMonth(1);
  EXPECT_EQ(Dump(Seed1()), Dump(again));
}

TEST_F(LabMonth, DifferentSeedsDiffer) {
  const Scenario other = MakeLabMonth(2);
  EXPECT_NE(Dump(Seed1()), Dump(other));
  // The workload and the events both depend on the seed, not just one of them.
  ASSERT_FALSE(other.jobs.empty());
  bool jobs_differ = Seed1().jobs.size() != other.jobs.size();
  for (size_t i = 0; !jobs_differ && i < other.jobs.size(); ++i) {
    jobs_differ = Seed1().jobs[i].spec.submit != other.jobs[i].spec.submit ||
                  Seed1().jobs[i].duration != other.jobs[i].duration;
  }
  EXPECT_TRUE(jobs_differ);
  bool events_differ = Seed1().events.size() != other.events.size();
  for (size_t i = 0; !events_differ && i < other.events.size(); ++i) {
    events_differ = Seed1().events[i].at != other.events[i].at ||
                    Seed1().events[i].target != other.events[i].target;
  }
  EXPECT_TRUE(events_differ);
}

// Pins the generator's output: the PRNG and distributions are our own, so these numbers are the
// same with every compiler and standard library. Update them only when changing the generator
// on purpose (and say so in the commit).
TEST_F(LabMonth, GoldenFingerprint) {
  const std::string dump = Dump(Seed1());
  std::printf("lab-month seed 1: %zu jobs, %zu events, fingerprint %016llx\n", Seed1().jobs.size(),
              Seed1().events.size(), static_cast<unsigned long long>(Fnv1a(dump)));
  EXPECT_EQ(Seed1().jobs.size(), 92772u);
  EXPECT_EQ(Fnv1a(dump), 0x2be99c84e2d1784aULL);
}

TEST_F(LabMonth, ClusterIs128NodesIn8Blocks) {
  const Scenario& s = Seed1();
  EXPECT_EQ(s.name, "lab-month");
  EXPECT_EQ(s.end, Seconds(2'592'000));
  ASSERT_EQ(s.nodes.size(), 128u);
  std::map<std::string, int> per_block;
  std::set<std::string> names;
  int gpus = 0;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    char want[24];
    std::snprintf(want, sizeof want, "n%03zu", i);
    EXPECT_EQ(s.nodes[i].name, want);
    EXPECT_EQ(s.nodes[i].block, "b" + std::to_string(i / 16));
    names.insert(s.nodes[i].name);
    per_block[s.nodes[i].block]++;
    gpus += s.nodes[i].gpus;
  }
  EXPECT_EQ(names.size(), 128u);
  EXPECT_EQ(gpus, 1024);
  ASSERT_EQ(per_block.size(), 8u);
  for (const auto& [block, n] : per_block) EXPECT_EQ(n, 16) << block;
}

TEST_F(LabMonth, BudgetTreeHasProgramsProjectsResearchers) {
  const Scenario& s = Seed1();
  auto tree = BudgetTree::Build(s.budgets);
  ASSERT_TRUE(tree.has_value()) << tree.error().ToString();
  std::map<std::string, const BudgetSpec*> by_name;
  for (const BudgetSpec& b : s.budgets) by_name[b.name] = &b;
  std::vector<const BudgetSpec*> programs, projects, people;
  for (const BudgetSpec& b : s.budgets) {
    if (b.parent.empty()) {
      programs.push_back(&b);
    } else if (by_name.at(b.parent)->parent.empty()) {
      projects.push_back(&b);
    } else {
      people.push_back(&b);
    }
  }
  EXPECT_EQ(programs.size(), 3u);
  EXPECT_GE(projects.size(), 10u);
  EXPECT_LE(projects.size(), 14u);
  EXPECT_GE(people.size(), 50u);
  EXPECT_LE(people.size(), 70u);
  std::set<double> project_shares;
  int limited = 0;
  for (const BudgetSpec* p : programs) EXPECT_EQ(p->leads.size(), 1u) << p->name;
  for (const BudgetSpec* p : projects) {
    EXPECT_EQ(p->leads.size(), 1u) << p->name;
    project_shares.insert(p->share);
    limited += p->limit.has_value();
    int members = 0;
    for (const BudgetSpec* r : people) members += r->parent == p->name;
    EXPECT_GE(members, 3) << p->name;
    EXPECT_LE(members, 8) << p->name;
  }
  EXPECT_GE(project_shares.size(), 3u);  // varied shares
  EXPECT_GE(limited, 1);
  EXPECT_LE(limited, 2);
  for (const BudgetSpec* r : people) {
    EXPECT_EQ(r->name.rfind(r->parent + ".", 0), 0u) << r->name;
    EXPECT_EQ(r->share, 1.0);
    // Leaves of the tree: nobody has a researcher as parent.
    auto id = tree->Find(r->name);
    ASSERT_TRUE(id.has_value());
    EXPECT_TRUE(tree->is_leaf(*id)) << r->name;
  }
}

TEST_F(LabMonth, JobsAreWellFormed) {
  const Scenario& s = Seed1();
  auto tree = BudgetTree::Build(s.budgets);
  ASSERT_TRUE(tree.has_value());
  ASSERT_GE(s.jobs.size(), 40'000u);
  ASSERT_LE(s.jobs.size(), 120'000u);
  for (size_t i = 0; i < s.jobs.size(); ++i) {
    const SimJob& j = s.jobs[i];
    const JobSpec& p = j.spec;
    SCOPED_TRACE("job " + std::to_string(p.id.value()) + " " + p.job_class);
    ASSERT_EQ(p.id, JobId(static_cast<int64_t>(i + 1)));
    if (i > 0) {
      ASSERT_LE(s.jobs[i - 1].spec.submit, p.submit);
    }
    ASSERT_GE(p.submit, Seconds(0));
    ASSERT_LT(p.submit, s.end);
    ASSERT_EQ(p.budget, kUnfunded);  // names are resolved by the engine
    if (!j.budget.empty()) {
      ASSERT_TRUE(tree->Find(j.budget).has_value()) << j.budget;
    }
    ASSERT_EQ(j.budget.empty(), p.job_class == "sweep");
    ASSERT_GE(p.gpus, Gpus(1));
    if (p.gpus <= Gpus(8)) {
      ASSERT_EQ(p.gpus_per_node, Gpus(0));
    } else {
      ASSERT_EQ(p.gpus_per_node, Gpus(8));
      ASSERT_EQ(p.gpus.value() % 8, 0);
    }
    ASSERT_GE(p.min_runtime, Seconds(0));
    ASSERT_LE(p.min_runtime, Hours(8));
    ASSERT_GT(j.duration, Seconds(0));
    ASSERT_GE(p.tier, 0);
    ASSERT_LE(p.tier, 2);
    ASSERT_EQ(j.checkpoint_interval > Seconds(0), p.resumable);
  }
}

TEST_F(LabMonth, ClassesFollowTheirProfiles) {
  const Scenario& s = Seed1();
  auto tree = BudgetTree::Build(s.budgets);
  ASSERT_TRUE(tree.has_value());
  std::map<std::string, int> count;
  int batch_multi = 0, batch_resumable = 0, batch_on_project = 0, prioritised = 0;
  for (const SimJob& j : s.jobs) {
    const JobSpec& p = j.spec;
    count[p.job_class]++;
    prioritised += p.priority != 0;
    SCOPED_TRACE("job " + std::to_string(p.id.value()) + " " + p.job_class);
    if (p.job_class == "debug") {
      ASSERT_LE(p.gpus, Gpus(2));
      ASSERT_GE(j.duration, Minutes(2));
      ASSERT_LE(j.duration, Minutes(30));
      ASSERT_LE(p.min_runtime, Minutes(5));
      ASSERT_EQ(p.max_runtime, Hours(1));
      ASSERT_EQ(p.grace, Seconds(30));
      ASSERT_FALSE(p.resumable);
      ASSERT_EQ(p.tier, 2);
      ASSERT_TRUE(tree->is_leaf(*tree->Find(j.budget)));
    } else if (p.job_class == "batch") {
      ASSERT_TRUE(p.gpus <= Gpus(8) || (p.gpus >= Gpus(16) && p.gpus <= Gpus(32)));
      batch_multi += p.gpus > Gpus(8);
      ASSERT_GE(j.duration, Hours(1));
      ASSERT_LE(j.duration, Hours(12));
      ASSERT_GE(p.min_runtime, Minutes(30));
      ASSERT_LE(p.min_runtime, Hours(2));
      if (p.resumable) {
        ++batch_resumable;
        ASSERT_GE(j.checkpoint_interval, Minutes(30));
        ASSERT_LE(j.checkpoint_interval, Minutes(60));
      }
      batch_on_project += !tree->is_leaf(*tree->Find(j.budget));
      ASSERT_GE(p.tier, 1);
    } else if (p.job_class == "training") {
      ASSERT_GE(p.gpus, Gpus(64));
      ASSERT_LE(p.gpus, Gpus(512));
      ASSERT_GE(j.duration, Days(1));
      ASSERT_LE(j.duration, Days(5));
      ASSERT_GE(p.min_runtime, Hours(4));
      ASSERT_TRUE(p.resumable);
      ASSERT_EQ(j.checkpoint_interval, Hours(1));
      ASSERT_EQ(p.grace, Seconds(300));
      ASSERT_EQ(p.tier, 2);
      ASSERT_FALSE(tree->is_leaf(*tree->Find(j.budget)));  // a project's internal budget
    } else if (p.job_class == "interactive") {
      ASSERT_LE(p.gpus, Gpus(4));
      ASSERT_GE(j.duration, Hours(1));
      ASSERT_LE(j.duration, Hours(10));
      ASSERT_EQ(p.min_runtime, std::min(j.duration, Hours(8)));
      ASSERT_EQ(p.max_runtime, Hours(12));
      ASSERT_FALSE(p.resumable);
      ASSERT_EQ(p.tier, 1);
    } else if (p.job_class == "sweep") {
      ASSERT_LE(p.gpus, Gpus(8));
      ASSERT_GE(j.duration, Minutes(30));
      ASSERT_LE(j.duration, Hours(6));
      ASSERT_EQ(p.min_runtime, Seconds(0));
      ASSERT_TRUE(p.resumable);
      ASSERT_GE(j.checkpoint_interval, Minutes(15));
      ASSERT_LE(j.checkpoint_interval, Minutes(30));
      ASSERT_EQ(p.grace, Seconds(60));
      ASSERT_EQ(p.tier, 0);
    } else {
      FAIL() << "unexpected class " << p.job_class;
    }
  }
  for (const char* c : {"debug", "batch", "training", "interactive", "sweep"}) {
    std::printf("%-12s %6d jobs\n", c, count[c]);
  }
  EXPECT_GE(count["debug"], 3000);
  EXPECT_GE(count["batch"], 3000);
  EXPECT_GE(count["training"], 9);  // at least a few per program
  EXPECT_LE(count["training"], 100);
  EXPECT_GE(count["interactive"], 300);
  EXPECT_GT(count["sweep"], count["batch"]);
  // Mixes inside batch: some multi-node, about half resumable, some charged to projects.
  EXPECT_GT(batch_multi, count["batch"] / 20);
  EXPECT_LT(batch_multi, count["batch"] / 4);
  EXPECT_GT(batch_resumable, count["batch"] * 4 / 10);
  EXPECT_LT(batch_resumable, count["batch"] * 6 / 10);
  EXPECT_GT(batch_on_project, count["batch"] / 20);
  // "priority 0 for all except a few"
  EXPECT_GT(prioritised, 0);
  EXPECT_LT(prioritised, static_cast<int>(s.jobs.size()) / 100);
}

TEST_F(LabMonth, TrainingIsPerProgramAndSubstantial) {
  const Scenario& s = Seed1();
  std::map<std::string, std::string> parent;
  for (const BudgetSpec& b : s.budgets) parent[b.name] = b.parent;
  std::map<std::string, int> per_program;
  for (const SimJob& j : s.jobs) {
    if (j.spec.job_class == "training") per_program[parent.at(j.budget)]++;
  }
  ASSERT_EQ(per_program.size(), 3u);
  for (const auto& [program, n] : per_program) {
    EXPECT_GE(n, 3) << program;
    EXPECT_LE(n, 30) << program;
  }
  const Demand d = Offered(s);
  EXPECT_GT(d.by_class.at("training") / d.funded, 0.35);
}

TEST_F(LabMonth, DemandIsCalibrated) {
  for (uint64_t seed : {1, 2, 3}) {
    const Scenario s = MakeLabMonth(seed);
    const Demand d = Offered(s);
    std::printf("seed %llu: %zu jobs, offered %.2fx capacity, funded %.2fx, unfunded %.2fx\n",
                static_cast<unsigned long long>(seed), s.jobs.size(), d.total / kCapacity,
                d.funded / kCapacity, (d.total - d.funded) / kCapacity);
    for (const auto& [cls, g] : d.by_class)
      std::printf("  %-12s %.3fx\n", cls.c_str(), g / kCapacity);
    EXPECT_GE(d.total / kCapacity, 2.0) << seed;
    EXPECT_LE(d.total / kCapacity, 3.0) << seed;
    EXPECT_GE(d.funded / kCapacity, 0.8) << seed;
    EXPECT_LE(d.funded / kCapacity, 1.3) << seed;
    EXPECT_GE(s.jobs.size(), 40'000u);
    EXPECT_LE(s.jobs.size(), 120'000u);
  }
}

TEST_F(LabMonth, FundedScaleScalesBatchAndTrainingOnly) {
  const Demand base = Offered(Seed1());
  const Scenario light = MakeLabMonth(1, LabMonthOptions{0.8});
  const Demand d = Offered(light);
  // Batch is drawn per researcher and day (Poisson), training per program until its target, so
  // both land near 0.8 of the default, not exactly on it.
  for (const char* cls : {"batch", "training"}) {
    const double ratio = d.by_class.at(cls) / base.by_class.at(cls);
    EXPECT_GT(ratio, 0.7) << cls;
    EXPECT_LT(ratio, 0.9) << cls;
  }
  // The other classes come from their own random streams: the same work, to the GPU-second.
  for (const char* cls : {"debug", "interactive", "sweep"})
    EXPECT_EQ(d.by_class.at(cls), base.by_class.at(cls)) << cls;
  // The cluster, the tree and the timed events do not depend on the load.
  const Scenario& one = Seed1();
  ASSERT_EQ(light.events.size(), one.events.size());
  for (size_t i = 0; i < light.events.size(); ++i) EXPECT_EQ(light.events[i].at, one.events[i].at);
  EXPECT_EQ(Dump(MakeLabMonth(1, LabMonthOptions{1.0})), Dump(one));
}

TEST_F(LabMonth, MonthStartsWithABacklog) {
  // Enough work is queued in the first hour to fill the cluster, so occupancy is not lost to a
  // cold start.
  int64_t gpus = 0;
  for (const SimJob& j : Seed1().jobs) {
    if (j.spec.submit < Hours(1)) gpus += j.spec.gpus.value();
  }
  EXPECT_GE(gpus, 1024);
}

TEST_F(LabMonth, HumanArrivalsFollowWorkingHoursAndWeekdays) {
  int64_t weekday = 0, weekend = 0, office = 0, night = 0;
  for (const SimJob& j : Seed1().jobs) {
    if (j.spec.job_class != "debug") continue;
    const int64_t t = j.spec.submit.value();
    const int64_t day = t / 86400, hour = t % 86400 / 3600;
    (day % 7 >= 5 ? weekend : weekday)++;
    if (hour >= 9 && hour < 18) office++;
    if (hour < 6) night++;
  }
  // 22 weekdays and 8 weekend days: per day, weekdays are several times busier.
  EXPECT_GT(static_cast<double>(weekday) / 22, 3.0 * static_cast<double>(weekend) / 8);
  // 9 office hours carry most of it, 6 night hours little.
  EXPECT_GT(office, (weekday + weekend) / 2);
  EXPECT_LT(night, (weekday + weekend) / 20);
}

TEST_F(LabMonth, SweepsArriveInBursts) {
  std::vector<int64_t> at;
  for (const SimJob& j : Seed1().jobs) {
    if (j.spec.job_class == "sweep") at.push_back(j.spec.submit.value());
  }
  ASSERT_GT(at.size(), 1000u);
  // Spread evenly over the month, the busiest 10% of hours would hold about 15% of the sweeps;
  // launched as campaigns of tens to hundreds of jobs, they hold over a third.
  std::vector<size_t> per_hour(30 * 24);
  for (int64_t t : at) per_hour[static_cast<size_t>(t / 3600)]++;
  std::sort(per_hour.rbegin(), per_hour.rend());
  size_t busiest = 0;
  for (size_t i = 0; i < per_hour.size() / 10; ++i) busiest += per_hour[i];
  EXPECT_GT(busiest, at.size() / 3);
  // And there are quiet hours without any new sweep.
  EXPECT_EQ(per_hour.back(), 0u);
}

TEST_F(LabMonth, EventsAreSortedAndConsistent) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Scenario s = MakeLabMonth(seed);
    auto tree = BudgetTree::Build(s.budgets);
    ASSERT_TRUE(tree.has_value());
    std::set<std::string> nodes;
    for (const NodeSpec& n : s.nodes) nodes.insert(n.name);
    std::map<std::string, std::pair<EventKind, Seconds>> down;  // node -> why, since
    int failures = 0, lost = 0, drains = 0, shares = 0;
    for (size_t i = 0; i < s.events.size(); ++i) {
      const TimedEvent& e = s.events[i];
      if (i > 0) {
        ASSERT_LE(s.events[i - 1].at, e.at);
      }
      ASSERT_GE(e.at, Seconds(0));
      ASSERT_LT(e.at, s.end);
      switch (e.kind) {
        case EventKind::kHealthFail:
        case EventKind::kNodeLost:
          ASSERT_TRUE(nodes.count(e.target)) << e.target;
          ASSERT_FALSE(down.count(e.target)) << e.target << " failed while down";
          down[e.target] = {e.kind, e.at};
          ++failures;
          lost += e.kind == EventKind::kNodeLost;
          break;
        case EventKind::kRepair: {
          ASSERT_TRUE(down.count(e.target)) << e.target << " repaired while up";
          const auto [why, since] = down.at(e.target);
          ASSERT_NE(why, EventKind::kDrain);
          const Seconds took = e.at - since;
          if (why == EventKind::kHealthFail) {
            EXPECT_GE(took, Hours(2));
            EXPECT_LE(took, Hours(12));
          } else {
            EXPECT_GE(took, Hours(4));
            EXPECT_LE(took, Hours(24));
          }
          down.erase(e.target);
          break;
        }
        case EventKind::kDrain:
          ASSERT_FALSE(down.count(e.target)) << e.target << " drained while down";
          ASSERT_TRUE(e.deadline.has_value());
          down[e.target] = {e.kind, e.at};
          ++drains;
          break;
        case EventKind::kUndrain:
          ASSERT_TRUE(down.count(e.target));
          ASSERT_EQ(down.at(e.target).first, EventKind::kDrain);
          down.erase(e.target);
          break;
        case EventKind::kBudgetShare:
          ASSERT_TRUE(tree->Find(e.target).has_value()) << e.target;
          ASSERT_GT(e.value, 0);
          ++shares;
          break;
        case EventKind::kBudgetLimit:
          break;
      }
    }
    const double per_node_day = failures / (128.0 * 30);
    std::printf(
        "seed %llu: %d node failures (%d lost), %.2f%% of nodes a day, %d drains, %d "
        "share changes\n",
        static_cast<unsigned long long>(seed), failures, lost, 100 * per_node_day, drains, shares);
    EXPECT_GE(per_node_day, 0.005);
    EXPECT_LE(per_node_day, 0.02);
    EXPECT_GE(lost, 1);
    EXPECT_LT(lost, failures / 2);
    EXPECT_GE(drains, 1);
    EXPECT_LE(drains, 2);
    EXPECT_GE(shares, 2);
    EXPECT_LE(shares, 3);
  }
}

}  // namespace
}  // namespace hg::sim
