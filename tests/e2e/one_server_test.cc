// One server per data folder on SQLite, as an operator meets it: a second `hourglass server`
// started on a folder a running server uses (a second systemd unit, a restart racing the old
// process) would start every waiting job a second time. It is refused, and the first goes on.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>

#include "tests/e2e/cluster.h"

namespace hg::e2e {
namespace {

using namespace std::chrono_literals;

TEST(E2eOneServer, ASecondServerOnTheSameDataFolderIsRefusedAndTheFirstGoesOn) {
  Cluster c;
  c.AddAgent(Node("n1", 2));
  const std::string alice = c.AddPrincipal("alice", "user");
  const int64_t before =
      c.Submit(Json{{"gpus", 1}, {"command", {"sleep", "30"}}, {"cwd", c.dir()}}, alice);
  ASSERT_TRUE(c.WaitState(before, "running"));

  const std::string port_file = c.dir() + "/second.port";
  Process second({HOURGLASS_BIN, "server", "--data", c.dir() + "/server", "--listen", "127.0.0.1:0",
                  "--port-file", port_file, "--interval-ms", "200"},
                 c.dir() + "/second");
  ASSERT_TRUE(WaitFor([&] { return !second.running(); }, 10s)) << second.Output();
  const int status = second.status();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 2) << second.Output();
  EXPECT_NE(second.Output().find("another hourglass server is using this database"),
            std::string::npos)
      << second.Output();
  EXPECT_FALSE(FileExists(port_file)) << "the refused server bound a port";

  // The first one still serves: the running job is its, and it takes new work.
  EXPECT_EQ(c.Job(before)["state"], "running");
  const int64_t after = c.Submit(Json{{"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}}, alice);
  EXPECT_TRUE(c.WaitState(after, "succeeded")) << c.Job(after).dump();
  EXPECT_TRUE(c.ServerProcess().running()) << c.ServerOutput();
}

}  // namespace
}  // namespace hg::e2e
