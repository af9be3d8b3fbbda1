#include "sim/openb.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "sim/engine.h"

namespace hg::sim {
namespace {

constexpr const char* kNodes =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "node-a,64000,262144,2,P100\n"
    "node-cpu,64000,262144,0,\n"
    "node-b,96000,786432,8,G2\n";

constexpr const char* kPods =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "pod-0,12000,16384,1,1000,,LS,Running,100,10100,100\n"         // line 2: batch, 10000 s
    "pod-1,6000,12288,1,460,,BE,Running,200,1400,300\n"            // line 3: sweep, fraction
    "pod-2,6000,12288,0,0,,LS,Running,300,400,300\n"               // line 4: no GPU
    "pod-3,6000,12288,1,1000,,LS,Pending,400,500,\n"               // line 5: never scheduled
    "pod-4,88000,327680,8,1000,,Burstable,Failed,500,500,500\n"    // line 6: zero length
    "pod-5,6000,12288,1,1000,,Guaranteed,Succeeded,150,800,160\n"  // line 7: debug, 640 s
    "pod-6,88000,327680,2,1000,,LS,Running,600,4600,600\n";        // line 8: batch 2 GPUs

Scenario MustParse(const OpenbOptions& opt = {}, OpenbStats* st = nullptr) {
  auto sc = ParseOpenb(kNodes, "nodes.csv", kPods, "pods.csv", opt, st);
  EXPECT_TRUE(sc.has_value()) << (sc ? "" : sc.error().ToString());
  return sc ? *sc : Scenario{};
}

const SimJob* JobAtLine(const Scenario& sc, int line) {
  for (const SimJob& j : sc.jobs)
    if (j.line == line) return &j;
  return nullptr;
}

TEST(Openb, NodesKeepTheirGpusAndModelAsBlockAndCpuNodesAreSkipped) {
  auto n = ParseOpenbNodes(kNodes, "nodes.csv");
  ASSERT_TRUE(n.has_value()) << n.error().ToString();
  EXPECT_EQ(n->rows, 3);
  EXPECT_EQ(n->no_gpu, 1);
  ASSERT_EQ(n->nodes.size(), 2u);
  EXPECT_EQ(n->nodes[0].name, "node-a");
  EXPECT_EQ(n->nodes[0].gpus, 2);
  EXPECT_EQ(n->nodes[0].block, "P100");
  EXPECT_EQ(n->nodes[1].gpus, 8);
  EXPECT_EQ(n->nodes[1].block, "G2");
  EXPECT_EQ(n->nodes[1].line, 4);
}

TEST(Openb, TasksMapTimesQosAndFractionsAsDocumented) {
  OpenbStats st;
  const Scenario sc = MustParse({}, &st);
  EXPECT_EQ(st.pod_rows, 7);
  EXPECT_EQ(st.non_gpu, 1);
  EXPECT_EQ(st.never_scheduled, 1);
  EXPECT_EQ(st.not_positive, 1);
  EXPECT_EQ(st.fractional, 1);
  ASSERT_EQ(sc.jobs.size(), 4u);
  // Sorted by submit = creation - first creation (100).
  EXPECT_EQ(sc.jobs[0].line, 2);
  EXPECT_EQ(sc.jobs[1].line, 7);
  EXPECT_EQ(sc.jobs[2].line, 3);
  EXPECT_EQ(sc.jobs[3].line, 8);
  const SimJob* batch = JobAtLine(sc, 2);
  EXPECT_EQ(batch->spec.submit, Seconds(0));
  EXPECT_EQ(batch->duration, Seconds(10000));
  EXPECT_EQ(batch->spec.job_class, "batch");
  EXPECT_EQ(batch->spec.min_runtime, Seconds(30 * 60));
  EXPECT_TRUE(batch->spec.resumable);
  EXPECT_EQ(batch->budget.rfind("proj", 0), 0u);
  const SimJob* sweep = JobAtLine(sc, 3);
  EXPECT_EQ(sweep->spec.submit, Seconds(100));
  EXPECT_EQ(sweep->duration, Seconds(1100));  // deletion - scheduled, not - creation
  EXPECT_EQ(sweep->spec.gpus, Gpus(1));       // 460 milli -> one whole GPU
  EXPECT_EQ(sweep->budget, "");
  EXPECT_EQ(sweep->spec.job_class, "sweep");
  EXPECT_EQ(sweep->spec.min_runtime, Seconds(0));
  const SimJob* debug = JobAtLine(sc, 7);
  EXPECT_EQ(debug->spec.job_class, "debug");
  EXPECT_EQ(debug->duration, Seconds(640));
  EXPECT_EQ(JobAtLine(sc, 8)->spec.gpus, Gpus(2));
  EXPECT_EQ(sc.end, Seconds(500) + Days(1));
  EXPECT_TRUE(Validate(sc, PolicyConfig{}).has_value());
}

TEST(Openb, FundedTasksAreDealtOverProjectsByASeededHashOfTheName) {
  // 60 funded tasks: every one of 6 projects gets some, and a different seed moves some.
  std::string pods = "name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\n";
  for (int i = 0; i < 60; ++i)
    pods += fmt::format("task-{},1,1000,LS,{},{},{}\n", i, i, i + 7200, i);
  OpenbOptions a, b;
  b.seed = 2;
  auto sa = ParseOpenb(kNodes, "n.csv", pods, "p.csv", a);
  auto sb = ParseOpenb(kNodes, "n.csv", pods, "p.csv", b);
  ASSERT_TRUE(sa && sb);
  std::map<std::string, int> per;
  int moved = 0;
  for (size_t i = 0; i < sa->jobs.size(); ++i) {
    ++per[sa->jobs[i].budget];
    moved += sa->jobs[i].budget != sb->jobs[i].budget;
  }
  EXPECT_EQ(per.size(), 6u);
  EXPECT_GT(moved, 10);
  // Same input, same seed: same assignment.
  auto again = ParseOpenb(kNodes, "n.csv", pods, "p.csv", a);
  for (size_t i = 0; i < sa->jobs.size(); ++i) EXPECT_EQ(sa->jobs[i].budget, again->jobs[i].budget);
  // Tree: prog0 > proj0..2, prog1 > proj3..5.
  ASSERT_EQ(sa->budgets.size(), 8u);
  EXPECT_EQ(sa->budgets[2].name, "proj0");
  EXPECT_EQ(sa->budgets[2].parent, "prog0");
  EXPECT_EQ(sa->budgets[7].name, "proj5");
  EXPECT_EQ(sa->budgets[7].parent, "prog1");
}

TEST(Openb, PodListWithoutTimesServesOnlyThePlacementStudy) {
  const std::string pods =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "p0,1,1,4,1000\n"
      "p1,1,1,1,250\n"
      "p2,1,1,0,0\n";
  auto parsed = ParseOpenbPods(pods, "m.csv");
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_FALSE(parsed->has_times);
  ASSERT_EQ(parsed->tasks.size(), 2u);
  EXPECT_EQ(parsed->tasks[0].gpus, 4);
  EXPECT_EQ(parsed->tasks[1].gpus, 1);
  EXPECT_FALSE(parsed->tasks[1].best_effort);
  EXPECT_EQ(parsed->non_gpu, 1);
  auto sc = ParseOpenb(kNodes, "n.csv", pods, "m.csv", {});
  ASSERT_FALSE(sc.has_value());
  EXPECT_EQ(sc.error().file, "m.csv");
  EXPECT_NE(sc.error().reason.find("placement"), std::string::npos) << sc.error().reason;
}

TEST(Openb, MalformedRowsNameFileLineAndColumn) {
  struct Case {
    const char* name;
    std::string nodes, pods;
    std::string file, field;
    int line;
  };
  const std::string node_head = "sn,gpu,model\n";
  const std::string pod_head =
      "name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\n";
  const std::string ok_nodes = node_head + "a,8,G2\n";
  const std::string ok_pod = "p0,1,1000,LS,0,100,0\n";
  const Case cases[] = {
      {"node gpu not integer", node_head + "a,8,G2\nb,x,G2\n", pod_head + ok_pod, "n.csv", "gpu",
       3},
      {"node gpu negative", node_head + "a,-2,G2\n", pod_head + ok_pod, "n.csv", "gpu", 2},
      {"node missing column", "sn,model\na,G2\n", pod_head + ok_pod, "n.csv", "gpu", 1},
      {"node too few fields", node_head + "a,8\n", pod_head + ok_pod, "n.csv", "model", 2},
      {"node twice", node_head + "a,8,G2\na,2,T4\n", pod_head + ok_pod, "n.csv", "sn", 3},
      {"pod num_gpu", ok_nodes, pod_head + ok_pod + "p1,1.5,1000,LS,0,100,0\n", "p.csv", "num_gpu",
       3},
      {"pod milli over", ok_nodes, pod_head + "p1,1,1200,LS,0,100,0\n", "p.csv", "gpu_milli", 2},
      {"pod negative time", ok_nodes, pod_head + "p1,1,1000,LS,-5,100,0\n", "p.csv",
       "creation_time", 2},
      {"pod bad scheduled", ok_nodes, pod_head + "p1,1,1000,LS,0,100,soon\n", "p.csv",
       "scheduled_time", 2},
      {"pod missing column", ok_nodes, "name,gpu_milli\np,1000\n", "p.csv", "num_gpu", 1},
      {"pod only some times", ok_nodes, "name,num_gpu,gpu_milli,creation_time\np,1,1000,0\n",
       "p.csv", "deletion_time", 1},
      // A pod runs on one node: more GPUs than the largest node has can never run (found by
      // fuzz/trace_fuzz.cc; the simulator refused it only later, as "workload:N").
      {"pod larger than any node", ok_nodes, pod_head + ok_pod + "p1,16,1000,LS,0,100,0\n", "p.csv",
       "num_gpu", 3},
  };
  for (const Case& c : cases) {
    auto r = ParseOpenb(c.nodes, "n.csv", c.pods, "p.csv", {});
    ASSERT_FALSE(r.has_value()) << c.name;
    EXPECT_EQ(r.error().file, c.file) << c.name << ": " << r.error().ToString();
    EXPECT_EQ(r.error().line, c.line) << c.name << ": " << r.error().ToString();
    EXPECT_EQ(r.error().field, c.field) << c.name << ": " << r.error().ToString();
  }
  auto r = ParseOpenb(ok_nodes, "n.csv", pod_head + "p1,x,1000,LS,0,100,0\n", "p.csv", {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().ToString(), "p.csv:2: num_gpu: must be an integer >= 0, got 'x'");
  auto big = ParseOpenb(ok_nodes, "n.csv", pod_head + "p1,9,1000,LS,0,100,0\n", "p.csv", {});
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().ToString(),
            "p.csv:2: num_gpu: a pod runs on one node, and this one needs 9 GPUs; the largest node "
            "of n.csv has 8");
}

TEST(Openb, DescribeMappingStatesSkipsRoundingAndBudgets) {
  OpenbStats st;
  const Scenario sc = MustParse({}, &st);
  const std::string m = DescribeOpenbMapping(sc, {}, st);
  for (const char* want : {"2 GPU nodes", "1 without GPUs skipped", "10 GPUs", "G2 1x/8 GPUs",
                           "skipped 1 with num_gpu=0", "1 never scheduled", "rounded UP",
                           "qos BE = sweep", "seeded hash of (seed 1, task name)"})
    EXPECT_NE(m.find(want), std::string::npos) << want << "\n" << m;
}

std::string RealOpenbDir() {
  const char* src = std::getenv("HOURGLASS_SOURCE_DIR");
  if (src != nullptr) {
    std::string p = std::string(src) + "/../shared/traces/openb";
    if (std::filesystem::exists(p)) return p;
  }
  const std::string abs = "/work/shared/traces/openb";
  return std::filesystem::exists(abs) ? abs : "";
}

TEST(Openb, RealTraceLoadsWithTheReadmesFigures) {
  const std::string dir = RealOpenbDir();
  if (dir.empty()) GTEST_SKIP() << "openb trace not found";
  OpenbStats st;
  OpenbOptions opt;
  opt.pods = dir;
  auto sc = LoadOpenb(opt, &st);
  ASSERT_TRUE(sc.has_value()) << sc.error().ToString();
  EXPECT_EQ(sc->nodes.size(), 1213u);
  int64_t gpus = 0;
  for (const NodeSpec& n : sc->nodes) gpus += n.gpus;
  EXPECT_EQ(gpus, 6212);
  EXPECT_EQ(st.pod_rows, 8152);
  EXPECT_EQ(st.non_gpu, 1088);
  EXPECT_EQ(st.never_scheduled, 861);  // 897 pending pods, 36 of them without GPUs
  EXPECT_EQ(sc->jobs.size(), 8152u - 1088u - 861u - st.not_positive);
  EXPECT_TRUE(Validate(*sc, PolicyConfig{}).has_value());
}

}  // namespace
}  // namespace hg::sim
