#include "sim/placement_study.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hg::sim {
namespace {

std::vector<PlacementTask> Tasks(std::initializer_list<int32_t> gpus) {
  std::vector<PlacementTask> out;
  int line = 2;
  for (int32_t g : gpus) out.push_back(PlacementTask{"t" + std::to_string(line), g, true, line++});
  return out;
}

// An 8-GPU node listed before a 2-GPU node: first-fit puts small tasks on the big node and so
// fragments it; best-fit fills the small node first and keeps the big one whole.
const std::vector<NodeSpec> kBigThenSmall = {{"big", 8, "A", 2}, {"small", 2, "B", 3}};

TEST(PlacementStudy, FirstFitFragmentsTheBigNodeBestFitKeepsItWhole) {
  const auto tasks = Tasks({1, 1, 8});
  const PlacementRun ff = RunPlacement(kBigThenSmall, tasks, Placer::kFirstFit, 0.5);
  const PlacementRun hg = RunPlacement(kBigThenSmall, tasks, Placer::kHourglass, 0.5);
  EXPECT_EQ(ff.capacity, 10);
  EXPECT_EQ(ff.requested, 10);
  ASSERT_EQ(ff.points.size(), 3u);  // 50%, 100%, end
  ASSERT_EQ(hg.points.size(), 3u);
  // After the two 1-GPU tasks (20%): no point yet; the 8-GPU task crosses 50% and 100%.
  const PlacementPoint& f = ff.points.back();
  const PlacementPoint& h = hg.points.back();
  EXPECT_EQ(f.failed, 1);
  EXPECT_EQ(f.failed_gpus, 8);
  EXPECT_EQ(f.allocated, 2);
  EXPECT_EQ(f.free, 8);
  EXPECT_EQ(f.largest, 6);  // the big node lost 2 GPUs
  EXPECT_EQ(f.free_nodes8, 0);
  EXPECT_EQ(ff.first_failure.tasks, 3);
  EXPECT_EQ(h.failed, 0);
  EXPECT_EQ(h.allocated, 10);
  EXPECT_EQ(h.free, 0);
  EXPECT_EQ(h.largest, 0);
  EXPECT_EQ(hg.first_failure.tasks, 0);
}

TEST(PlacementStudy, LevelsAreRecordedAsRequestsCrossThemAndFailuresDoNotStopTheFill) {
  // Two 4-GPU nodes; tasks 3, 3, 4 (fails), 1, 1: first-fit and best-fit agree here.
  const std::vector<NodeSpec> nodes = {{"a", 4, "", 0}, {"b", 4, "", 0}};
  const auto tasks = Tasks({3, 3, 4, 1, 1});
  for (Placer p : {Placer::kFirstFit, Placer::kHourglass}) {
    const PlacementRun r = RunPlacement(nodes, tasks, p, 0.25);
    // Requested: 3, 6, 10, 11, 12 of 8 -> levels 0.25 (at 3), 0.5 and 0.75 (at 6), 1.0 and 1.25
    // (at 10), 1.5 (at 12), then the end.
    ASSERT_EQ(r.points.size(), 7u) << ToString(p);
    EXPECT_DOUBLE_EQ(r.points[0].level, 0.25);
    EXPECT_EQ(r.points[0].tasks, 1);
    EXPECT_EQ(r.points[2].tasks, 2);
    EXPECT_EQ(r.points[3].failed, 1);
    EXPECT_EQ(r.points[3].largest, 1);
    EXPECT_EQ(r.points.back().tasks, 5);
    EXPECT_EQ(r.points.back().allocated, 8);  // the 1-GPU tasks still went in after the refusal
    EXPECT_EQ(r.points.back().free, 0);
    EXPECT_DOUBLE_EQ(r.points.back().level, 1.5);
  }
}

TEST(PlacementStudy, HourglassKeepsBestEffortWorkOffNodesWithFundedWork) {
  // Two 4-GPU nodes. A funded 1-GPU task, then a best-effort 1-GPU task: hourglass puts the
  // best-effort task on the other node (its kinds are kept apart), first-fit packs it next to
  // the funded one.
  const std::vector<NodeSpec> nodes = {{"a", 4, "", 0}, {"b", 4, "", 0}};
  std::vector<PlacementTask> tasks = Tasks({1, 1});
  tasks[1].funded = false;
  const PlacementRun hg = RunPlacement(nodes, tasks, Placer::kHourglass, 1.0);
  const PlacementRun ff = RunPlacement(nodes, tasks, Placer::kFirstFit, 1.0);
  EXPECT_EQ(hg.points.back().largest, 3);
  EXPECT_EQ(ff.points.back().largest, 4);
}

TEST(PlacementStudy, GangsWiderThanANodeLeaveTheirRestWhereItFitsTightest) {
  const std::vector<NodeSpec> nodes = {
      {"a", 8, "x", 0}, {"b", 8, "x", 0}, {"c", 8, "y", 0}, {"d", 2, "y", 0}};
  const auto tasks = Tasks({18, 8});  // 8 + 8 + a rest of 2, then one more whole node
  // First-fit puts the rest of 2 on node c, the first with room, and the 8-GPU task no longer
  // fits; best-fit puts it on d and keeps c whole.
  const PlacementRun ff = RunPlacement(nodes, tasks, Placer::kFirstFit, 1.0);
  EXPECT_EQ(ff.points.back().failed, 1);
  EXPECT_EQ(ff.points.back().allocated, 18);
  EXPECT_EQ(ff.points.back().largest, 6);
  const PlacementRun hg = RunPlacement(nodes, tasks, Placer::kHourglass, 1.0);
  EXPECT_EQ(hg.points.back().failed, 0);
  EXPECT_EQ(hg.points.back().allocated, 26);
  EXPECT_EQ(hg.points.back().free_nodes8, 0);
}

TEST(PlacementStudy, TableAndJsonCarryTheSameFigures) {
  std::vector<PlacementRun> runs;
  const auto tasks = Tasks({1, 1, 8});
  for (Placer p : {Placer::kHourglass, Placer::kFirstFit}) {
    runs.push_back(RunPlacement(kBigThenSmall, tasks, p, 0.5));
    runs.back().workload = "tiny";
  }
  const std::string table = RenderPlacementTable(runs);
  EXPECT_NE(table.find("tiny: 3 tasks asking 10 GPUs; cluster 10 GPUs on 2 nodes"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("first-fit: first refusal at task 3"), std::string::npos) << table;
  EXPECT_NE(table.find("hourglass: every task fitted"), std::string::npos) << table;
  const nlohmann::json j = nlohmann::json::parse(RenderPlacementJson(runs));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["placer"], "first-fit");
  EXPECT_EQ(j[1]["points"].back()["failed"], 1);
  EXPECT_EQ(j[1]["points"].back()["largest"], 6);
  EXPECT_TRUE(j[0]["first_failure"].is_null());
}

TEST(PlacementStudy, MissingDirectoryIsAnErrorNamingTheFile) {
  auto r = RunOpenbPlacementStudy("/nonexistent/openb");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().ToString(), "/nonexistent/openb/openb_node_list_gpu_node.csv: no such file");
}

}  // namespace
}  // namespace hg::sim
