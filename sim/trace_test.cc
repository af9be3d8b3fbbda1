#include "sim/trace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace hg::sim {
namespace {

namespace fs = std::filesystem;

// A scratch directory for this test binary (removed at the end of each test).
class TraceFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hg_trace_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  fs::path dir_;
};

constexpr const char* kPhilly =
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-02 00:00:00,3600,8,28800,aaa\n"
    "2017-10-02 00:10:00,60,1,60,bbb\n";

TEST_F(TraceFiles, AutoPicksTheFormatByNameAndHeader) {
  EXPECT_EQ(*DetectTraceFormat(Write("x.csv", kPhilly)), "philly");
  EXPECT_EQ(*DetectTraceFormat(Write("pods.csv", "# c\nname,num_gpu,gpu_milli\np,1,1000\n")),
            "openb");
  EXPECT_EQ(*DetectTraceFormat(Write("openb_pod_list_x.csv", "a,b\n")), "openb");
  EXPECT_EQ(*DetectTraceFormat(dir_.string()), "openb");
  EXPECT_EQ(*DetectTraceFormat(Write("jobs.jsonl", "")), "jsonl");
  EXPECT_EQ(*DetectTraceFormat(Write("jobs.txt", "\n{\"a\": 1}\n")), "jsonl");
  EXPECT_EQ(*DetectTraceFormat(Write("sacct.txt", "JobID|Submit|Elapsed\n")), "csv");
  auto missing = DetectTraceFormat((dir_ / "nope.csv").string());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().reason, "no such file");
}

TEST_F(TraceFiles, PhillyThroughTheDispatchCarriesItsOptionsAndMapping) {
  TraceOptions opt;
  opt.path = Write("p.csv", kPhilly);
  opt.oversubscription = 0.5;
  auto t = LoadTrace(opt);
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(t->format, "philly");
  EXPECT_EQ(t->scenario.jobs.size(), 2u);
  EXPECT_NE(t->mapping.find("oversubscription 0.5"), std::string::npos) << t->mapping;
  // Load 28860 GPU-s over 600 s = 48.1 GPUs; / 0.5 = 96.2 -> 13 nodes.
  EXPECT_EQ(t->scenario.nodes.size(), 13u);
}

TEST_F(TraceFiles, OpenbThroughTheDispatchReadsTheDirectory) {
  Write("openb_node_list_gpu_node.csv", "sn,gpu,model\na,8,G2\n");
  Write("openb_pod_list_default.csv",
        "name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\n"
        "p0,1,1000,BE,0,100,0\n");
  TraceOptions opt;
  opt.path = dir_.string();
  auto t = LoadTrace(opt);
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(t->format, "openb");
  EXPECT_EQ(t->scenario.nodes.size(), 1u);
  EXPECT_NE(t->mapping.find("openb"), std::string::npos);
}

TEST_F(TraceFiles, OptionsForAnotherFormatAndUnknownFormatsAreRefused) {
  TraceOptions opt;
  opt.path = Write("p.csv", kPhilly);
  opt.map = "submit=a";
  auto t = LoadTrace(opt);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().field, "--map");
  opt.map.clear();
  opt.format = "parquet";
  t = LoadTrace(opt);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().field, "--format");
  EXPECT_NE(t.error().reason.find("philly"), std::string::npos);
}

TEST_F(TraceFiles, CsvThroughTheDispatchTakesTheMapClusterAndBudgets) {
  TraceOptions opt;
  opt.path = Write("sacct.txt",
                   "JobID|Account|Submit|Elapsed|AllocTRES\n"
                   "1|lab|2024-01-01T00:00:00|01:00:00|gres/gpu=2\n"
                   "2|lab|2024-01-01T00:10:00|00:05:00|gres/gpu=1\n");
  opt.map = "submit=Submit,duration=Elapsed,gpus=AllocTRES:gres/gpu,budget=Account";
  opt.cluster = Write("cluster.csv", "name,gpus\nx,4\n");
  opt.budgets = Write("budgets.toml", "[[budget]]\nname = \"lab\"\n");
  auto t = LoadTrace(opt);
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(t->format, "csv");
  EXPECT_EQ(t->scenario.nodes.size(), 1u);
  EXPECT_EQ(t->scenario.budgets.size(), 1u);
  EXPECT_EQ(t->scenario.jobs[1].spec.submit, Seconds(600));
  EXPECT_NE(t->mapping.find("cluster (given): 1 nodes, 4 GPUs"), std::string::npos) << t->mapping;
  // A bad cluster file is reported with its own name.
  opt.cluster = Write("bad.csv", "name,gpus\nx,zero\n");
  t = LoadTrace(opt);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().file, opt.cluster);
  EXPECT_EQ(t.error().line, 2);
}

}  // namespace
}  // namespace hg::sim
