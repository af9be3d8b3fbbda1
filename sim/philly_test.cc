#include "sim/philly.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/budget_tree.h"
#include "sim/engine.h"

namespace hg::sim {
namespace {

Scenario MustParse(const std::string& text, const PhillyOptions& opt = {}) {
  auto sc = ParsePhilly(text, "in.csv", opt);
  EXPECT_TRUE(sc.has_value()) << (sc ? "" : sc.error().ToString());
  return sc ? *sc : Scenario{};
}

const BudgetSpec* FindBudget(const Scenario& sc, const std::string& name) {
  for (const BudgetSpec& b : sc.budgets)
    if (b.name == name) return &b;
  return nullptr;
}

const SimJob* JobAtLine(const Scenario& sc, int line) {
  for (const SimJob& j : sc.jobs)
    if (j.line == line) return &j;
  return nullptr;
}

int64_t ClusterGpus(const Scenario& sc) {
  int64_t g = 0;
  for (const NodeSpec& n : sc.nodes) g += n.gpus;
  return g;
}

// GPU-seconds per VC: aaa 28800, bbb 1800 + 14400 = 16200, ccc 2400, ddd 16 x ceil(100.2) = 1616.
constexpr const char* kFourVcs =
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-02 00:00:00,3600.0,8,28800.0,aaa\n"
    "2017-10-02 00:10:00,1800.0,1,1800.0,bbb\n"
    "2017-10-02 01:00:00,7200,2,14400,bbb\n"
    "2017-10-02 02:00:00,600,4,2400,ccc\n"
    "2017-10-02 03:00:00,100.2,16,1603.2,ddd\n";

TEST(Philly, VcsBecomeProjectsDealtIntoProgramsByGpuTimeShare) {
  PhillyOptions opt;
  opt.programs = 2;
  opt.researchers_per_vc = 3;
  const Scenario sc = MustParse(kFourVcs, opt);
  EXPECT_EQ(sc.name, "philly-dev");
  const double total = 28800 + 16200 + 2400 + 1616;
  ASSERT_EQ(sc.budgets.size(), 2u + 4u + 4u * 3u);
  // Descending share: aaa, bbb, ccc, ddd; round-robin over prog0, prog1.
  const std::map<std::string, std::pair<std::string, double>> projects = {
      {"aaa", {"prog0", 28800 / total}},
      {"bbb", {"prog1", 16200 / total}},
      {"ccc", {"prog0", 2400 / total}},
      {"ddd", {"prog1", 1616 / total}},
  };
  for (const auto& [name, want] : projects) {
    const BudgetSpec* b = FindBudget(sc, name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(b->parent, want.first) << name;
    EXPECT_NEAR(b->share, want.second, 1e-12) << name;
    for (int k = 0; k < 3; ++k) {
      const BudgetSpec* r = FindBudget(sc, name + ".r" + std::to_string(k));
      ASSERT_NE(r, nullptr) << name << k;
      EXPECT_EQ(r->parent, name);
      EXPECT_EQ(r->share, 1.0);
    }
    EXPECT_EQ(FindBudget(sc, name + ".r3"), nullptr);
  }
  ASSERT_NE(FindBudget(sc, "prog0"), nullptr);
  EXPECT_EQ(FindBudget(sc, "prog0")->parent, "");
  EXPECT_NEAR(FindBudget(sc, "prog0")->share, (28800 + 2400) / total, 1e-12);
  EXPECT_NEAR(FindBudget(sc, "prog1")->share, (16200 + 1616) / total, 1e-12);
  EXPECT_EQ(FindBudget(sc, "prog2"), nullptr);
  // Every job is charged to a researcher of its own VC.
  const std::map<int, std::string> vc_of_line = {
      {2, "aaa"}, {3, "bbb"}, {4, "bbb"}, {5, "ccc"}, {6, "ddd"}};
  for (const auto& [line, vc] : vc_of_line) {
    const SimJob* j = JobAtLine(sc, line);
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(j->budget.rfind(vc + ".r", 0), 0u) << j->budget;
  }
  auto tree = BudgetTree::Build(sc.budgets);
  ASSERT_TRUE(tree.has_value());
  EXPECT_NEAR(tree->entitlement(*tree->Find("aaa")), 28800 / total, 1e-12);
  EXPECT_TRUE(Validate(sc, PolicyConfig{}).has_value());
}

TEST(Philly, FewerVcsThanProgramsMakesOneProgramPerVc) {
  const Scenario sc = MustParse(
      "timestamp,duration,num_gpus,cluster\n"
      "2017-10-02 00:00:00,60,1,solo\n");
  ASSERT_NE(FindBudget(sc, "prog0"), nullptr);
  EXPECT_EQ(FindBudget(sc, "prog1"), nullptr);
  EXPECT_DOUBLE_EQ(FindBudget(sc, "prog0")->share, 1.0);
}

TEST(Philly, TimesAreRelativeToTheFirstArrivalAndRoundedUp) {
  const Scenario sc = MustParse(kFourVcs);
  ASSERT_EQ(sc.jobs.size(), 5u);
  EXPECT_EQ(sc.jobs[0].spec.submit, Seconds(0));
  EXPECT_EQ(sc.jobs[1].spec.submit, Seconds(600));
  EXPECT_EQ(sc.jobs[4].spec.submit, Seconds(3 * 3600));
  EXPECT_EQ(sc.jobs[4].duration, Seconds(101));
  EXPECT_EQ(sc.jobs[4].spec.id, JobId(5));
  EXPECT_EQ(sc.end, Seconds(3 * 3600) + Days(1));
  // A zero duration still takes one second; unsorted rows are sorted by arrival.
  const Scenario z = MustParse(
      "timestamp,duration,num_gpus,cluster\n"
      "2017-10-02 00:05:00,0.0,1,a\n"
      "2017-10-02 00:00:00,10,1,a\n");
  ASSERT_EQ(z.jobs.size(), 2u);
  EXPECT_EQ(z.jobs[0].line, 3);
  EXPECT_EQ(z.jobs[0].spec.submit, Seconds(0));
  EXPECT_EQ(z.jobs[1].spec.submit, Seconds(300));
  EXPECT_EQ(z.jobs[1].duration, Seconds(1));
}

TEST(Philly, DebugIsOneGpuAtMostTheThresholdAndSetsTheContract) {
  const std::string text =
      "timestamp,duration,num_gpus,cluster\n"
      "2017-10-02 00:00:00,1800.0,1,a\n"  // 2: exactly 30 min
      "2017-10-02 00:00:01,1800.4,1,a\n"  // 3: rounds up to 1801 s
      "2017-10-02 00:00:02,60,2,a\n"      // 4: 2 GPUs
      "2017-10-02 00:00:03,599,1,a\n"     // 5: under 10 min
      "2017-10-02 00:00:04,7200,1,a\n";   // 6: 2 h
  const Scenario sc = MustParse(text);
  EXPECT_EQ(JobAtLine(sc, 2)->spec.job_class, "debug");
  EXPECT_EQ(JobAtLine(sc, 3)->spec.job_class, "batch");
  EXPECT_EQ(JobAtLine(sc, 4)->spec.job_class, "batch");
  EXPECT_EQ(JobAtLine(sc, 5)->spec.job_class, "debug");
  EXPECT_EQ(JobAtLine(sc, 6)->spec.job_class, "batch");

  const JobSpec& dbg = JobAtLine(sc, 2)->spec;
  EXPECT_EQ(dbg.min_runtime, Seconds(0));
  EXPECT_EQ(dbg.grace, Seconds(30));
  EXPECT_EQ(dbg.tier, 2);
  EXPECT_FALSE(dbg.resumable);
  const JobSpec& short_batch = JobAtLine(sc, 4)->spec;
  EXPECT_EQ(short_batch.min_runtime, Seconds(60));  // min(duration, 30 min)
  EXPECT_EQ(short_batch.grace, Seconds(120));
  EXPECT_EQ(short_batch.tier, 1);
  const SimJob& long_batch = *JobAtLine(sc, 6);
  EXPECT_EQ(long_batch.spec.min_runtime, Seconds(1800));
  EXPECT_TRUE(long_batch.spec.resumable);
  EXPECT_EQ(long_batch.checkpoint_interval, Seconds(1800));
  EXPECT_FALSE(JobAtLine(sc, 3)->spec.resumable);

  PhillyOptions ten;
  ten.debug_max_minutes = 10;
  const Scenario t = MustParse(text, ten);
  EXPECT_EQ(JobAtLine(t, 2)->spec.job_class, "batch");
  EXPECT_EQ(JobAtLine(t, 5)->spec.job_class, "debug");
  PhillyOptions none;
  none.debug_max_minutes = 0;
  for (const SimJob& j : MustParse(text, none).jobs) EXPECT_EQ(j.spec.job_class, "batch");
}

TEST(Philly, GpusPerNodeIsEightOnlyForWholeMultiNodeJobs) {
  const Scenario sc = MustParse(
      "timestamp,duration,num_gpus,cluster\n"
      "2017-10-02 00:00:00,60,1,a\n"
      "2017-10-02 00:00:00,60,8,a\n"
      "2017-10-02 00:00:00,60,12,a\n"
      "2017-10-02 00:00:00,60,16,a\n"
      "2017-10-02 00:00:00,60,24,a\n"
      "2017-10-02 00:00:00,60,32.0,a\n");
  const std::map<int, int32_t> want = {{2, 0}, {3, 0}, {4, 0}, {5, 8}, {6, 8}, {7, 8}};
  for (const auto& [line, per_node] : want) {
    EXPECT_EQ(JobAtLine(sc, line)->spec.gpus_per_node, Gpus(per_node)) << line;
  }
  EXPECT_EQ(JobAtLine(sc, 7)->spec.gpus, Gpus(32));
  EXPECT_TRUE(Validate(sc, PolicyConfig{}).has_value());
}

// Mean offered load 80 GPUs: 8 x 36,000 + 8 x 324,000 GPU-seconds over 10 h of arrivals.
constexpr const char* kLoad80 =
    "timestamp,duration,num_gpus,cluster\n"
    "2017-10-02 00:00:00,36000,8,a\n"
    "2017-10-02 10:00:00,324000,8,b\n";

TEST(Philly, ClusterIsSizedFromTheOfferedLoadAndTheOversubscription) {
  const std::map<double, size_t> nodes = {{1.0, 10}, {2.0, 5}, {2.5, 4}, {3.0, 4}, {0.5, 20}};
  for (const auto& [k, n] : nodes) {
    PhillyOptions opt;
    opt.oversubscription = k;
    const Scenario sc = MustParse(kLoad80, opt);
    ASSERT_EQ(sc.nodes.size(), n) << k;
    for (const NodeSpec& node : sc.nodes) EXPECT_EQ(node.gpus, 8);
  }
  PhillyOptions half;
  half.oversubscription = 0.5;
  const Scenario sc = MustParse(kLoad80, half);
  EXPECT_EQ(sc.nodes[0].name, "n000");
  EXPECT_EQ(sc.nodes[15].block, "b0");
  EXPECT_EQ(sc.nodes[16].block, "b1");
  EXPECT_EQ(sc.nodes[19].block, "b1");

  // Never smaller than the largest job.
  PhillyOptions tiny;
  tiny.oversubscription = 100;
  const Scenario big_job = MustParse(std::string(kLoad80) + "2017-10-02 05:00:00,1,32,c\n", tiny);
  EXPECT_EQ(big_job.nodes.size(), 4u);
}

TEST(Philly, ClusterSizeMatchesTheReadmeForPhillysLoad) {
  // 569,001 GPU-seconds over 1,000 s of arrivals: the Philly window's mean load of ~569 GPUs.
  const std::string text =
      "timestamp,duration,num_gpus,cluster\n"
      "2017-10-02 00:00:00,71125,8,a\n"
      "2017-10-02 00:16:40,0,1,a\n";
  const std::map<double, int64_t> readme = {{2.0, 285}, {2.5, 228}, {3.0, 190}};
  for (const auto& [k, gpus] : readme) {
    PhillyOptions opt;
    opt.oversubscription = k;
    const int64_t got = ClusterGpus(MustParse(text, opt));
    EXPECT_LE(std::abs(got - gpus), 8) << "oversubscription " << k << ": " << got << " GPUs";
    EXPECT_GE(got, gpus) << "rounded up to whole nodes";
  }
}

std::string ManyJobs(int n, const char* vc = "a") {
  std::string text = "timestamp,duration,num_gpus,cluster\n";
  for (int i = 0; i < n; ++i)
    text += "2017-10-02 00:00:" + std::string(i % 60 < 10 ? "0" : "") + std::to_string(i % 60) +
            ",7200,1," + vc + "\n";
  return text;
}

TEST(Philly, ResearcherAssignmentIsASeededHashOfTheLine) {
  const std::string text = ManyJobs(400);
  const Scenario a = MustParse(text);
  const Scenario b = MustParse(text);
  std::map<std::string, int> per_researcher;
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].budget, b.jobs[i].budget);
    ++per_researcher[a.jobs[i].budget];
  }
  ASSERT_EQ(per_researcher.size(), 4u);
  for (const auto& [r, n] : per_researcher) EXPECT_GE(n, 60) << r;  // 100 expected each

  PhillyOptions other;
  other.seed = 2;
  const Scenario c = MustParse(text, other);
  int differ = 0;
  for (size_t i = 0; i < a.jobs.size(); ++i) differ += a.jobs[i].budget != c.jobs[i].budget;
  EXPECT_GT(differ, 200);  // ~300 expected

  // A job keeps its researcher when other rows change: the hash sees only (seed, line).
  std::string changed = text;
  const size_t line3 = changed.find('\n', changed.find('\n') + 1) + 1;
  changed.replace(changed.find(",a\n", line3), 3, ",zzz\n");
  const Scenario d = MustParse(changed);
  EXPECT_EQ(JobAtLine(d, 3)->budget.substr(0, 4), "zzz.");
  for (int line : {2, 4, 5, 100, 401})
    EXPECT_EQ(JobAtLine(d, line)->budget, JobAtLine(a, line)->budget);
}

TEST(Philly, UnfundedFractionMarksNonDebugJobsAsSweeps) {
  std::string text = ManyJobs(400);
  text += "2017-10-02 00:01:00,60,1,a\n";  // line 402: debug, never unfunded
  for (const SimJob& j : MustParse(text).jobs) EXPECT_NE(j.spec.job_class, "sweep");
  PhillyOptions half;
  half.unfunded_fraction = 0.5;
  const Scenario sc = MustParse(text, half);
  int sweeps = 0;
  for (const SimJob& j : sc.jobs) {
    if (j.spec.job_class != "sweep") {
      EXPECT_FALSE(j.budget.empty());
      continue;
    }
    ++sweeps;
    EXPECT_TRUE(j.budget.empty());
    EXPECT_EQ(j.spec.tier, 0);
    EXPECT_EQ(j.spec.min_runtime, Seconds(0));
  }
  EXPECT_GT(sweeps, 150);
  EXPECT_LT(sweeps, 250);
  PhillyOptions all;
  all.unfunded_fraction = 1;
  const Scenario everything = MustParse(text, all);
  for (const SimJob& j : everything.jobs)
    EXPECT_EQ(j.spec.job_class, j.line == 402 ? "debug" : "sweep") << j.line;
  EXPECT_TRUE(Validate(everything, PolicyConfig{}).has_value());
}

struct BadCase {
  const char* name;
  const char* text;
  int line;
  const char* field;
  const char* reason_has;
};

TEST(Philly, MalformedRowsNameFileLineAndColumn) {
  const BadCase cases[] = {
      {"slashes in timestamp",
       "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,1,a\n"
       "2017/10/02 00:01:00,60,1,a\n",
       3, "timestamp", "YYYY-MM-DD HH:MM:SS"},
      {"no such date", "timestamp,duration,num_gpus,cluster\n2017-02-29 00:00:00,60,1,a\n", 2,
       "timestamp", "got '2017-02-29 00:00:00'"},
      {"hour 24", "timestamp,duration,num_gpus,cluster\n2017-10-02 24:00:00,60,1,a\n", 2,
       "timestamp", "YYYY-MM-DD"},
      {"empty timestamp", "timestamp,duration,num_gpus,cluster\n,60,1,a\n", 2, "timestamp",
       "got ''"},
      {"text duration", "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,long,1,a\n", 2,
       "duration", "number >= 0"},
      {"negative duration",
       "# comment\ntimestamp,duration,num_gpus,cluster\n\n2017-10-02 00:00:00,-5,1,a\n", 4,
       "duration", "got '-5'"},
      {"nan duration", "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,nan,1,a\n", 2,
       "duration", "number >= 0"},
      {"zero gpus", "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,0,a\n", 2,
       "num_gpus", "positive integer, got '0'"},
      {"negative gpus", "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,-2,a\n", 2,
       "num_gpus", "positive integer"},
      {"fractional gpus", "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,1.5,a\n", 2,
       "num_gpus", "got '1.5'"},
      {"text gpus", "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,two,a\n", 2,
       "num_gpus", "positive integer"},
      {"empty cluster", "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,1,\n", 2,
       "cluster", "empty"},
      {"slash in cluster", "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,1,a/b\n", 2,
       "cluster", "'/'"},
      {"cluster named like a program",
       "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,1,a\n"
       "2017-10-02 00:00:00,60,1,prog0\n",
       3, "cluster", "prog0"},
      {"missing num_gpus column", "timestamp,duration,cluster\n2017-10-02 00:00:00,60,a\n", 1,
       "num_gpus", "missing from the header"},
      {"missing cluster column", "# c\ntimestamp,duration,num_gpus,gpu_time\n", 2, "cluster",
       "missing from the header"},
      {"short row", "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60\n", 2, "num_gpus",
       "missing"},
      {"no jobs", "timestamp,duration,num_gpus,gpu_time,cluster\n", 1, "", "no jobs"},
  };
  for (const BadCase& c : cases) {
    auto r = ParsePhilly(c.text, "in.csv", PhillyOptions{});
    ASSERT_FALSE(r.has_value()) << c.name << ": accepted";
    const Error& e = r.error();
    EXPECT_EQ(e.file, "in.csv") << c.name;
    EXPECT_EQ(e.line, c.line) << c.name << ": " << e.ToString();
    EXPECT_EQ(e.field, c.field) << c.name << ": " << e.ToString();
    EXPECT_NE(e.reason.find(c.reason_has), std::string::npos)
        << c.name << ": reason '" << e.reason << "' lacks '" << c.reason_has << "'";
  }
  auto r = ParsePhilly("timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,0,a\n",
                       "trace.csv", PhillyOptions{});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().ToString(), "trace.csv:2: num_gpus: must be a positive integer, got '0'");
}

TEST(Philly, BadOptionsAndMissingFilesAreErrors) {
  const std::string ok = "timestamp,duration,num_gpus,cluster\n2017-10-02 00:00:00,60,1,a\n";
  auto field_of = [&](PhillyOptions o) {
    auto r = ParsePhilly(ok, "in.csv", o);
    return r ? std::string("(accepted)") : r.error().field;
  };
  PhillyOptions o;
  o.oversubscription = 0;
  EXPECT_EQ(field_of(o), "oversubscription");
  o = {};
  o.oversubscription = -1;
  EXPECT_EQ(field_of(o), "oversubscription");
  o = {};
  o.unfunded_fraction = 1.5;
  EXPECT_EQ(field_of(o), "unfunded_fraction");
  o = {};
  o.debug_max_minutes = -1;
  EXPECT_EQ(field_of(o), "debug_max_minutes");
  o = {};
  o.researchers_per_vc = 0;
  EXPECT_EQ(field_of(o), "researchers_per_vc");
  o = {};
  o.programs = 0;
  EXPECT_EQ(field_of(o), "programs");
  auto missing = LoadPhilly("/nonexistent/philly.csv", PhillyOptions{});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().ToString(), "/nonexistent/philly.csv: no such file");
}

TEST(Philly, DescribeMappingStatesTheInventedParts) {
  PhillyOptions opt;
  opt.programs = 2;
  const Scenario sc = MustParse(kFourVcs, opt);
  const std::string d = DescribeMapping(sc, opt);
  for (const char* want :
       {"seeded hash of (seed 1, line number)", "4 synthetic researchers", "2 nodes x 8 GPUs",
        "2 programs", "prog0 63.7%: aaa 58.8%, ccc 4.9%", "prog1 36.3%: bbb 33.1%, ddd 3.3%",
        "debug 1 (1 GPU, at most 30 min) + batch 4 + sweep 0", "oversubscription 2.5"})
    EXPECT_NE(d.find(want), std::string::npos) << "missing '" << want << "' in\n" << d;
  EXPECT_EQ(d, DescribeMapping(MustParse(kFourVcs, opt), opt));
}

std::string RealTracePath() {
  const char* src = std::getenv("HOURGLASS_SOURCE_DIR");
  if (src != nullptr) {
    std::string p = std::string(src) + "/../shared/traces/philly-dev.csv";
    if (std::filesystem::exists(p)) return p;
  }
  const std::string abs = "/work/shared/traces/philly-dev.csv";
  return std::filesystem::exists(abs) ? abs : "";
}

TEST(Philly, RealTraceLoadsWithTheReadmesFigures) {
  const std::string path = RealTracePath();
  if (path.empty()) GTEST_SKIP() << "philly-dev.csv not found";
  auto sc = LoadPhilly(path, PhillyOptions{});
  ASSERT_TRUE(sc.has_value()) << sc.error().ToString();
  EXPECT_EQ(sc->jobs.size(), 49'875u);
  EXPECT_LE(std::abs(ClusterGpus(*sc) - 228), 8) << ClusterGpus(*sc);
  size_t debug = 0;
  for (const SimJob& j : sc->jobs) debug += j.spec.job_class == "debug";
  EXPECT_EQ(debug, 25'188u);  // "half of all jobs are 1 GPU and at most 30 minutes"
  size_t projects = 0;
  for (const BudgetSpec& b : sc->budgets) projects += b.parent.rfind("prog", 0) == 0;
  // The README lists 11 VCs; the file has a twelfth, 795a4c, with 5 GPU-hours (0.001%).
  EXPECT_EQ(projects, 12u);
  EXPECT_NEAR(FindBudget(*sc, "ee9e8c")->share, 0.270, 0.0006);
  EXPECT_NEAR(FindBudget(*sc, "e13805")->share, 0.006, 0.0006);
  EXPECT_TRUE(Validate(*sc, PolicyConfig{}).has_value());
  for (const auto& [k, gpus] : std::map<double, int64_t>{{2.0, 285}, {3.0, 190}}) {
    PhillyOptions opt;
    opt.oversubscription = k;
    auto other = LoadPhilly(path, opt);
    ASSERT_TRUE(other.has_value());
    EXPECT_LE(std::abs(ClusterGpus(*other) - gpus), 8) << k << ": " << ClusterGpus(*other);
  }
}

}  // namespace
}  // namespace hg::sim
