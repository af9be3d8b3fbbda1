// `hourglass store copy` between SQLite folders, as an operator runs it: its mistakes refused with
// exit status 2 and nothing created, and a copied folder served by a new server as the old one was
// (the PostgreSQL move: postgresql_test.cc).
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/e2e/cluster.h"

namespace hg::e2e {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Starts a server on `data` (beside the cluster's) and checks that it has the jobs, answers
// `token`, and did not make a new admin (the copied admin.token stays valid).
void ExpectServedAsBefore(const std::string& data, const std::string& token,
                          const std::vector<int64_t>& ids) {
  const std::string port_file = data + ".port";
  Process server({HOURGLASS_BIN, "server", "--data", data, "--listen", "127.0.0.1:0", "--port-file",
                  port_file, "--interval-ms", "200"},
                 data + "-run");
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string p = ReadFile(port_file);
        return !p.empty() && p.back() == '\n';
      },
      10s))
      << server.Output();
  EXPECT_EQ(server.Output().find("admin token (shown once"), std::string::npos)
      << "a new admin was made: " << server.Output();
  httplib::Client cli("127.0.0.1", std::stoi(ReadFile(port_file)));
  for (int64_t id : ids) {
    auto job = cli.Get("/v1/jobs/" + std::to_string(id), {{"Authorization", "Bearer " + token}});
    ASSERT_TRUE(job);
    EXPECT_EQ(job->status, 200) << id << ": " << job->body;
  }
}

TEST(E2eStoreCopy, MistakesAreRefusedAndACopiedFolderServesTheSameJobs) {
  Cluster c;
  c.AddAgent(Node("n1", 2));
  const std::string alice = c.AddPrincipal("alice", "user");
  const int64_t id = c.Submit(Json{{"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}}, alice);
  ASSERT_TRUE(c.WaitState(id, "succeeded"));
  const std::string from = c.dir() + "/server";
  const std::string to = c.dir() + "/copy";

  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> mistakes{
      {{"store", "copy", "--to-data", to}, "exactly one of --from-data DIR and --from-database"},
      {{"store", "copy", "--from-data", from}, "exactly one of --to-data DIR and --to-database"},
      {{"store", "copy", "--from-data", from, "--from-database", "dbname=x", "--to-data", to},
       "exactly one of --from-data"},
      {{"store", "copy", "--from-data", c.dir() + "/none", "--to-data", to},
       "--from-data: no hourglass.db in"},
      {{"store", "copy", "--from-data", from, "--to-data", from + "/"}, "the same folder"},
      // The server still runs on `from`.
      {{"store", "copy", "--from-data", from, "--to-data", to},
       "another hourglass server is using this database"},
  };
  for (const Case& m : mistakes) {
    auto [rc, out] = c.Cli(m.args, "");
    EXPECT_EQ(rc, 2) << out;
    EXPECT_NE(out.find(m.says), std::string::npos) << out;
    EXPECT_FALSE(FileExists(to + "/hourglass.db")) << out;
  }

  c.StopServer();
  auto [rc, out] = c.Cli({"store", "copy", "--from-data", from, "--to-data", to}, "");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("1 job,"), std::string::npos) << out;
  EXPECT_TRUE(FileExists(to + "/admin.token")) << out;
  // Into a folder that now holds a site: refused, and it keeps what it holds (served below).
  auto [again_rc, again] = c.Cli({"store", "copy", "--from-data", from, "--to-data", to}, "");
  EXPECT_EQ(again_rc, 2) << again;
  EXPECT_NE(again.find("already holds"), std::string::npos) << again;

  ExpectServedAsBefore(to, alice, {id});
}

// An online backup, taken while the server runs and takes submissions: a server started on it
// has every job acknowledged before the backup began, and keeps the old admin token.
TEST(E2eStoreCopy, ABackupTakenWhileTheServerRunsIsServedByANewServer) {
  Cluster c;
  c.AddAgent(Node("n1", 2));
  const std::string alice = c.AddPrincipal("alice", "user");
  std::vector<int64_t> ids;
  for (int i = 0; i < 20; ++i)
    ids.push_back(c.Submit(Json{{"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}}, alice));
  const std::string restore = c.dir() + "/restore";
  fs::create_directories(restore);
  const std::vector<std::string> backup{
      "store", "backup", "--data", c.dir() + "/server", "--to", restore + "/hourglass.db"};
  auto [rc, out] = c.Cli(backup, "");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("(20 jobs,"), std::string::npos) << out;
  auto [again_rc, again] = c.Cli(backup, "");
  EXPECT_EQ(again_rc, 2) << again;
  EXPECT_NE(again.find("never overwrites"), std::string::npos) << again;
  // The server goes on meanwhile.
  EXPECT_TRUE(c.WaitState(ids.back(), "succeeded"));

  fs::copy_file(c.dir() + "/server/admin.token", restore + "/admin.token");
  ExpectServedAsBefore(restore, alice, ids);
}

}  // namespace
}  // namespace hg::e2e
