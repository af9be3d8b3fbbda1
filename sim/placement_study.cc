#include "sim/placement_study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/cluster_state.h"
#include "sim/openb.h"
#include "sim/text_input.h"

namespace hg::sim {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPodLists[] = {"openb_pod_list_default.csv", "openb_pod_list_multigpu50.csv"};

// First-fit over nodes in id order: single-node jobs take the first node with room; a job wider
// than the largest node is cut like ClusterState::ShapeOf and each slice takes the first node
// with room that is not used yet.
std::optional<std::vector<Slice>> FirstFit(const std::vector<int32_t>& free, const Shape& shape) {
  std::vector<Slice> out;
  std::vector<bool> used(free.size(), false);
  auto take = [&](int32_t g) {
    for (size_t i = 0; i < free.size(); ++i)
      if (!used[i] && free[i] >= g) {
        used[i] = true;
        out.push_back(Slice{NodeId(static_cast<int32_t>(i)), Gpus(g)});
        return true;
      }
    return false;
  };
  for (int32_t k = 0; k < shape.count; ++k)
    if (!take(shape.per_node)) return std::nullopt;
  if (shape.rest > 0 && !take(shape.rest)) return std::nullopt;
  return out;
}

PlacementPoint Snapshot(const std::vector<int32_t>& free, std::span<const NodeSpec> nodes,
                        PlacementPoint p) {
  p.free = 0;
  p.largest = 0;
  p.free_nodes8 = 0;
  for (size_t i = 0; i < free.size(); ++i) {
    p.free += free[i];
    p.largest = std::max(p.largest, free[i]);
    p.free_nodes8 += nodes[i].gpus == 8 && free[i] == 8;
  }
  return p;
}

}  // namespace

const char* ToString(Placer p) { return p == Placer::kHourglass ? "hourglass" : "first-fit"; }

PlacementRun RunPlacement(std::span<const NodeSpec> nodes, std::span<const PlacementTask> tasks,
                          Placer placer, double step) {
  assert(step > 0);
  std::vector<Node> model;
  model.reserve(nodes.size());
  std::vector<int32_t> free;
  PlacementRun run;
  run.placer = ToString(placer);
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node n;
    n.id = NodeId(static_cast<int32_t>(i));
    n.name = nodes[i].name;
    n.gpus = Gpus(nodes[i].gpus);
    n.block = nodes[i].block;
    model.push_back(std::move(n));
    free.push_back(nodes[i].gpus);
    run.capacity += nodes[i].gpus;
  }
  run.nodes = static_cast<int64_t>(nodes.size());
  run.tasks = static_cast<int64_t>(tasks.size());
  ClusterState cs(model, {});
  PlacementPoint cur;
  int next_level = 1;
  auto level = [&](int k) { return step * k; };
  for (const PlacementTask& t : tasks) {
    ++cur.tasks;
    cur.requested += t.gpus;
    const Shape shape = cs.ShapeOf(Gpus(t.gpus), Gpus(0));
    std::optional<std::vector<Slice>> slices =
        placer == Placer::kHourglass ? cs.Find(shape, false, t.funded) : FirstFit(free, shape);
    if (slices) {
      // Both placers update the same state, so the measures are taken the same way.
      cs.Take(*slices, t.funded);
      for (const Slice& s : *slices) free[static_cast<size_t>(s.node.value())] -= s.gpus.value();
      cur.allocated += t.gpus;
    } else {
      ++cur.failed;
      cur.failed_gpus += t.gpus;
      if (cur.failed == 1) run.first_failure = Snapshot(free, nodes, cur);
    }
    while (static_cast<double>(cur.requested) >=
           level(next_level) * static_cast<double>(run.capacity) - 1e-9) {
      PlacementPoint p = Snapshot(free, nodes, cur);
      p.level = level(next_level);
      run.points.push_back(p);
      ++next_level;
    }
  }
  PlacementPoint end = Snapshot(free, nodes, cur);
  end.level =
      run.capacity > 0 ? static_cast<double>(cur.requested) / static_cast<double>(run.capacity) : 0;
  run.requested = cur.requested;
  if (run.first_failure.tasks > 0)
    run.first_failure.level =
        static_cast<double>(run.first_failure.requested) / static_cast<double>(run.capacity);
  run.points.push_back(end);
  return run;
}

Result<std::vector<PlacementRun>> RunOpenbPlacementStudy(const std::string& openb_dir,
                                                         double step) {
  const std::string node_path = (fs::path(openb_dir) / kOpenbNodeFile).string();
  auto node_text = ReadTextFile(node_path);
  if (!node_text) return tl::unexpected(node_text.error());
  auto nodes = ParseOpenbNodes(*node_text, node_path);
  if (!nodes) return tl::unexpected(nodes.error());
  std::vector<PlacementRun> out;
  for (const char* list : kPodLists) {
    const std::string path = (fs::path(openb_dir) / list).string();
    auto text = ReadTextFile(path);
    if (!text) return tl::unexpected(text.error());
    auto pods = ParseOpenbPods(*text, path);
    if (!pods) return tl::unexpected(pods.error());
    std::vector<PlacementTask> tasks;
    tasks.reserve(pods->tasks.size());
    for (const OpenbTask& k : pods->tasks)
      tasks.push_back(PlacementTask{k.name, k.gpus, !k.best_effort, k.line});
    for (Placer p : {Placer::kHourglass, Placer::kFirstFit}) {
      PlacementRun run = RunPlacement(nodes->nodes, tasks, p, step);
      run.workload = fs::path(list).stem().string();
      out.push_back(std::move(run));
    }
  }
  return out;
}

std::string RenderPlacementTable(const std::vector<PlacementRun>& runs) {
  std::string out;
  for (size_t i = 0; i < runs.size();) {
    // Runs of one workload side by side.
    size_t j = i;
    while (j < runs.size() && runs[j].workload == runs[i].workload) ++j;
    const PlacementRun& a = runs[i];
    out += fmt::format("{}: {} tasks asking {} GPUs; cluster {} GPUs on {} nodes\n", a.workload,
                       a.tasks, a.requested, a.capacity, a.nodes);
    std::string head = fmt::format("{:>9}", "requested");
    std::string sub = fmt::format("{:>9}", "% of GPUs");
    for (size_t k = i; k < j; ++k) {
      head += fmt::format(" | {:<41}", runs[k].placer);
      sub += fmt::format(" | {:>7} {:>6} {:>7} {:>7} {:>10}", "alloc", "free", "largest", "free8",
                         "failed");
    }
    out += head + "\n" + sub + "\n";
    const size_t rows = a.points.size();
    for (size_t r = 0; r < rows; ++r) {
      const bool last = r + 1 == rows;
      std::string line = fmt::format("{:>8.0f}%", a.points[r].level * 100.0);
      if (last) line = fmt::format("{:>9}", fmt::format("end {:.0f}%", a.points[r].level * 100));
      for (size_t k = i; k < j; ++k) {
        if (r >= runs[k].points.size()) continue;
        const PlacementPoint& p = runs[k].points[r];
        line += fmt::format(" | {:>7} {:>6} {:>7} {:>7} {:>10}", p.allocated, p.free, p.largest,
                            p.free_nodes8, fmt::format("{}/{}", p.failed, p.failed_gpus));
      }
      out += line + "\n";
    }
    for (size_t k = i; k < j; ++k) {
      const PlacementPoint& f = runs[k].first_failure;
      if (f.tasks == 0)
        out += fmt::format("  {}: every task fitted\n", runs[k].placer);
      else
        out += fmt::format(
            "  {}: first refusal at task {} ({:.1f}% of GPUs requested, {} allocated, {} free, "
            "largest fit {})\n",
            runs[k].placer, f.tasks, f.level * 100.0, f.allocated, f.free, f.largest);
    }
    out += "\n";
    i = j;
  }
  out +=
      "alloc: GPUs placed; free: allocatable GPUs left; largest: most free GPUs on one node (the "
      "largest single-node job that fits); free8: 8-GPU nodes wholly free (a gang of 8 x free8 "
      "fits); failed: tasks/GPUs refused so far. Tasks are placed in list order and never leave; "
      "fractional GPUs are rounded up to whole GPUs.\n";
  return out;
}

std::string RenderPlacementJson(const std::vector<PlacementRun>& runs) {
  auto point = [](const PlacementPoint& p) {
    return nlohmann::json{{"level", p.level},
                          {"tasks", p.tasks},
                          {"requested", p.requested},
                          {"allocated", p.allocated},
                          {"free", p.free},
                          {"largest", p.largest},
                          {"free_nodes8", p.free_nodes8},
                          {"failed", p.failed},
                          {"failed_gpus", p.failed_gpus}};
  };
  nlohmann::json out = nlohmann::json::array();
  for (const PlacementRun& r : runs) {
    nlohmann::json pts = nlohmann::json::array();
    for (const PlacementPoint& p : r.points) pts.push_back(point(p));
    out.push_back({{"workload", r.workload},
                   {"placer", r.placer},
                   {"capacity", r.capacity},
                   {"nodes", r.nodes},
                   {"tasks", r.tasks},
                   {"requested", r.requested},
                   {"first_failure",
                    r.first_failure.tasks > 0 ? point(r.first_failure) : nlohmann::json(nullptr)},
                   {"points", pts}});
  }
  return out.dump(2) + "\n";
}

}  // namespace hg::sim
