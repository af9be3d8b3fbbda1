// Issue 3, done-when items 4 and 5: a two-node gang starts on two agents together with
// consistent rank variables; a failing health check drains its node under the contract and
// `undrain` restores it.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "tests/e2e/cluster.h"

namespace hg::e2e {
namespace {

using namespace std::chrono_literals;

std::map<std::string, std::string> EnvFile(const std::string& path) {
  std::map<std::string, std::string> env;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

TEST(E2eGang, TwoNodeGangStartsTogetherWithConsistentRanks) {
  Cluster c;
  const std::string alice = c.AddPrincipal("alice", "user");
  c.AddBudget("lab", "", 1, Json{{"members", {"alice"}}});
  c.AddAgent(Node("n1", 2, "b0"));
  c.AddAgent(Node("n2", 2, "b0"));
  const auto cmd = c.Script("gang", R"SH(
f=rank.$HOURGLASS_NODE_RANK
{ env | grep -E '^(HOURGLASS_|CUDA_VISIBLE_DEVICES=)'; echo "START=$(date +%s.%N)"; } > $f.tmp
mv $f.tmp $f
sleep 1
)SH");
  const int64_t id = c.Submit(
      Json{
          {"budget", "lab"}, {"gpus", 4}, {"gpus_per_node", 2}, {"command", cmd}, {"cwd", c.dir()}},
      alice);
  ASSERT_TRUE(c.WaitState(id, "succeeded", 30s)) << c.Job(id).dump();
  const auto r0 = EnvFile(c.dir() + "/rank.0"), r1 = EnvFile(c.dir() + "/rank.1");
  ASSERT_FALSE(r0.empty());
  ASSERT_FALSE(r1.empty());
  for (const auto* r : {&r0, &r1}) {
    EXPECT_EQ(r->at("HOURGLASS_JOB_ID"), std::to_string(id));
    EXPECT_EQ(r->at("HOURGLASS_ATTEMPT"), "1");
    EXPECT_EQ(r->at("HOURGLASS_NUM_NODES"), "2");
    // Two GPUs each, named by index on that node.
    const std::string& cvd = r->at("CUDA_VISIBLE_DEVICES");
    EXPECT_EQ(std::count(cvd.begin(), cvd.end(), ','), 1) << cvd;
  }
  EXPECT_EQ(r0.at("HOURGLASS_NODE_RANK"), "0");
  EXPECT_EQ(r1.at("HOURGLASS_NODE_RANK"), "1");
  EXPECT_EQ(r0.at("HOURGLASS_MASTER_ADDR"), r1.at("HOURGLASS_MASTER_ADDR"));
  EXPECT_EQ(r0.at("HOURGLASS_MASTER_PORT"), r1.at("HOURGLASS_MASTER_PORT"));
  EXPECT_FALSE(r0.at("HOURGLASS_MASTER_ADDR").empty());
  // Started together: both ranks within one heartbeat or two of each other.
  EXPECT_LT(std::abs(std::stod(r0.at("START")) - std::stod(r1.at("START"))), 1.5);
  const Json j = c.Job(id);
  ASSERT_EQ(j["placement"].size(), 2u) << j.dump();
  EXPECT_NE(j["placement"][0]["node"], j["placement"][1]["node"]);
}

TEST(E2eDrain, FailingHealthCheckDrainsUnderTheContractAndUndrainRestores) {
  Cluster c;
  const std::string alice = c.AddPrincipal("alice", "user");
  c.AddBudget("lab", "", 1, Json{{"members", {"alice"}}});
  const std::string sick = c.dir() + "/n1.sick";
  c.AddAgent(Node("n1", 2, "b0", "test ! -e " + sick));
  const auto looping = c.Script("loop", R"(
trap 'date +%s.%N > job.$HOURGLASS_JOB_ID.term; exit 0' TERM
date +%s.%N > job.$HOURGLASS_JOB_ID.start
while true; do sleep 0.1; done
)");
  const int64_t unfunded =
      c.Submit(Json{{"gpus", 1}, {"command", looping}, {"cwd", c.dir()}, {"grace_s", 1}}, alice);
  const int64_t guarded = c.Submit(Json{{"budget", "lab"},
                                        {"gpus", 1},
                                        {"min_runtime_s", 8},
                                        {"grace_s", 1},
                                        {"command", looping},
                                        {"cwd", c.dir()}},
                                   alice);
  ASSERT_TRUE(c.WaitState(unfunded, "running"));
  ASSERT_TRUE(c.WaitState(guarded, "running"));
  ASSERT_TRUE(
      WaitFor([&] { return FileExists(c.dir() + "/job." + std::to_string(guarded) + ".start"); }));

  WriteFile(sick, "gpu 3 fell off the bus\n");
  const auto node_state = [&] {
    const Response r = c.Admin("GET", "/v1/nodes");
    for (const Json& n : r.body["nodes"])
      if (n["name"] == "n1") return n;
    return Json();
  };
  ASSERT_TRUE(WaitFor([&] { return node_state().value("state", "") == "draining"; }, 10s))
      << node_state().dump();
  EXPECT_EQ(node_state()["drain_cause"], "health");
  // Unfunded work leaves at once; the protected job stays until its min_runtime is over.
  ASSERT_TRUE(c.WaitState(unfunded, "preempted", 10s)) << c.Job(unfunded).dump();
  EXPECT_EQ(c.Job(guarded)["state"], "running");
  const int64_t later = c.Submit(Json{{"budget", "lab"},
                                      {"gpus", 1},
                                      {"command", c.Script("later", "true\n")},
                                      {"cwd", c.dir()}},
                                 alice);
  ASSERT_TRUE(WaitFor([&] { return node_state().value("state", "") == "drained"; }, 20s))
      << node_state().dump() << c.Job(guarded).dump();
  const double start = std::stod(ReadFile(c.dir() + "/job." + std::to_string(guarded) + ".start"));
  const double term = std::stod(ReadFile(c.dir() + "/job." + std::to_string(guarded) + ".term"));
  EXPECT_GE(term - start, 8.0) << "the drain broke the contract";
  EXPECT_EQ(c.Job(later)["state"], "pending") << "a job started on a drained node";

  // The operator repairs the node and brings it back with the CLI.
  std::remove(sick.c_str());
  std::this_thread::sleep_for(2500ms);  // the agent's next health checks pass
  const auto [rc, out] = c.Cli({"undrain", "n1"}, c.admin_token());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(WaitFor([&] { return node_state().value("state", "") == "ready"; }, 10s));
  EXPECT_TRUE(c.WaitState(later, "succeeded", 20s)) << c.Job(later).dump();
}

}  // namespace
}  // namespace hg::e2e
