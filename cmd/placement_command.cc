#include "cmd/placement_command.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "sim/placement_study.h"

namespace hg::cmd {
namespace {

struct PlacementArgs {
  std::string openb_dir = "../shared/traces/openb";
  std::string json;
  double step = 5;  // percent
};

int RunPlacementStudy(const PlacementArgs& a) {
  auto fail = [](const Error& e) {
    std::cerr << "hourglass placement: " << e.ToString() << "\n";
    return 2;
  };
  if (!std::isfinite(a.step) || a.step < 0.1 || a.step > 100)
    return fail(Error{"--step", "must be a percentage within [0.1, 100]", {}, 0});
  auto runs = sim::RunOpenbPlacementStudy(a.openb_dir, a.step / 100.0);
  if (!runs) return fail(runs.error());
  std::cout << sim::RenderPlacementTable(*runs);
  if (!a.json.empty()) {
    std::ofstream out(a.json, std::ios::binary | std::ios::trunc);
    out << sim::RenderPlacementJson(*runs);
    if (!out) return fail(Error{"--json", "cannot write '" + a.json + "'", {}, 0});
  }
  return 0;
}

}  // namespace

void AddPlacementCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PlacementArgs>();
  CLI::App* cmd = app.add_subcommand(
      "placement",
      "openb placement study: allocatable GPUs and the largest job that fits as the cluster "
      "fills, hourglass's placement vs first-fit, both pod lists");
  cmd->add_option("--openb-dir", args->openb_dir,
                  "Directory with openb_node_list_gpu_node.csv and the two pod lists")
      ->capture_default_str();
  cmd->add_option("--json", args->json, "Also write the same data as JSON to FILE");
  cmd->add_option("--step", args->step, "Record a row every this many percent of GPUs requested")
      ->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = RunPlacementStudy(*args); });
}

}  // namespace hg::cmd
