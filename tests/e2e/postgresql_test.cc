// The server on PostgreSQL, as an operator meets it: one server per database, a server whose
// database another has taken stops by itself, and a standby takes over from a server that died.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "store/pg_test_server.h"
#include "tests/e2e/cluster.h"

namespace hg::e2e {
namespace {

using namespace std::chrono_literals;

// The first server's lock session is ended (as by an operator, or a network cut), a second server
// starts on the database: the first refuses changes from then on and exits with status 3 within a
// few ticks, even though nothing asked it to write; the second serves with the same tokens.
TEST(E2ePostgresql, AServerWhoseDatabaseAnotherTookStopsWithStatusThree) {
  store::PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  Cluster c(200, 3, {"--database", pg.Conninfo()});
  c.AddAgent(Node("n1", 2));
  const std::string alice = c.AddPrincipal("alice", "user");
  const int64_t before =
      c.Submit(Json{{"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}}, alice);

  const std::string held =
      "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1";
  ASSERT_EQ(pg.Query(held), "1");
  ASSERT_TRUE(
      pg.Sql("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
             "AND granted AND objsubid = 1"));
  // The session ends a moment after the call returns, and the lock with it.
  ASSERT_TRUE(WaitFor([&] { return pg.Query(held) == "0"; }, 10s));
  const std::string port_file = c.dir() + "/second.port";
  Process second({HOURGLASS_BIN, "server", "--data", c.dir() + "/second", "--listen", "127.0.0.1:0",
                  "--port-file", port_file, "--interval-ms", "200", "--database", pg.Conninfo()},
                 c.dir() + "/second");
  ASSERT_TRUE(WaitFor([&] { return FileExists(port_file) || !second.running(); }, 10s))
      << second.Output();
  ASSERT_TRUE(second.running()) << second.Output();

  ASSERT_TRUE(WaitFor([&] { return !c.ServerProcess().running(); }, 10s)) << c.ServerOutput();
  const int status = c.ServerProcess().status();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3) << c.ServerOutput();
  EXPECT_NE(c.ServerOutput().find("another hourglass server took this database"), std::string::npos)
      << c.ServerOutput();

  // The second one has the state: the job submitted to the first, and the same tokens.
  std::string port = ReadFile(port_file);
  while (!port.empty() && port.back() == '\n') port.pop_back();
  httplib::Client cli("127.0.0.1", std::stoi(port));
  const httplib::Headers h{{"Authorization", "Bearer " + alice}};
  auto job = cli.Get("/v1/jobs/" + std::to_string(before), h);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, 200) << job->body;
  auto sub =
      cli.Post("/v1/jobs", h, R"({"gpus":1,"command":["true"],"cwd":"/tmp"})", "application/json");
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->status, 201) << sub->body;
}

// Reads a port file once it is whole; 0 until then.
int PortIn(const std::string& port_file) {
  std::string port = ReadFile(port_file);
  if (port.empty() || port.back() != '\n') return 0;
  return std::stoi(port);
}

// A standby binds nothing while the active server runs; when the active one is killed (kill -9:
// its database sessions end, and the lock with them) the standby takes over within seconds, with
// every acknowledged submission and the same tokens.
TEST(E2ePostgresql, AStandbyTakesOverWhenTheActiveServerDies) {
  store::PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  Cluster c(200, 3, {"--database", pg.Conninfo()});
  c.AddAgent(Node("n1", 2));
  const std::string alice = c.AddPrincipal("alice", "user");
  const std::string port_file = c.dir() + "/standby.port";
  Process standby(
      {HOURGLASS_BIN, "server", "--data", c.dir() + "/standby", "--listen", "127.0.0.1:0",
       "--port-file", port_file, "--interval-ms", "200", "--database", pg.Conninfo(), "--standby"},
      c.dir() + "/standby");
  ASSERT_TRUE(
      WaitFor([&] { return standby.Output().find("standing by") != std::string::npos; }, 10s))
      << standby.Output();
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i)
    ids.push_back(c.Submit(Json{{"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}}, alice));
  EXPECT_TRUE(standby.running()) << standby.Output();
  EXPECT_FALSE(FileExists(port_file)) << "the standby bound a port beside the active server";

  c.KillServer();
  ASSERT_TRUE(WaitFor([&] { return PortIn(port_file) > 0; }, 15s)) << standby.Output();
  httplib::Client cli("127.0.0.1", PortIn(port_file));
  const httplib::Headers h{{"Authorization", "Bearer " + alice}};
  for (int64_t id : ids) {
    auto job = cli.Get("/v1/jobs/" + std::to_string(id), h);
    ASSERT_TRUE(job);
    EXPECT_EQ(job->status, 200) << id << ": " << job->body;
  }
  EXPECT_EQ(standby.Stop(), 0) << standby.Output();
}

// A server started while another holds the database (no --standby) waits a few seconds for it
// to let go, as after a restart, when the stopped server's session may outlive its process by a
// moment: it takes over if the holder goes within them, and otherwise fails saying why.
TEST(E2ePostgresql, AServerStartedBesideAnotherWaitsAMomentForItThenSaysWhy) {
  store::PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  Cluster c(200, 3, {"--database", pg.Conninfo()});
  c.AddAgent(Node("n1", 2));
  const std::string alice = c.AddPrincipal("alice", "user");
  const int64_t id = c.Submit(Json{{"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}}, alice);
  auto start = [&](const std::string& name) {
    return std::make_unique<Process>(
        std::vector<std::string>{HOURGLASS_BIN, "server", "--data", c.dir() + "/" + name,
                                 "--listen", "127.0.0.1:0", "--port-file",
                                 c.dir() + "/" + name + ".port", "--interval-ms", "200",
                                 "--database", pg.Conninfo()},
        c.dir() + "/" + name);
  };

  // The holder stays: the newcomer waits about ten seconds, binds nothing, then fails.
  const auto t0 = std::chrono::steady_clock::now();
  auto late = start("late");
  ASSERT_TRUE(
      WaitFor([&] { return late->Output().find("waiting up to 10 s") != std::string::npos; }, 10s))
      << late->Output();
  ASSERT_TRUE(WaitFor([&] { return !late->running(); }, 30s)) << late->Output();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited, 9.0) << late->Output();
  EXPECT_TRUE(WIFEXITED(late->status()) && WEXITSTATUS(late->status()) != 0) << late->Output();
  EXPECT_NE(late->Output().find("another hourglass server is using this database"),
            std::string::npos)
      << late->Output();
  EXPECT_NE(late->Output().find("--standby"), std::string::npos) << late->Output();
  EXPECT_FALSE(FileExists(c.dir() + "/late.port"));

  // The holder dies while the next one waits: that one takes the database and serves its jobs.
  auto next = start("next");
  ASSERT_TRUE(
      WaitFor([&] { return next->Output().find("waiting up to 10 s") != std::string::npos; }, 10s))
      << next->Output();
  c.KillServer();
  ASSERT_TRUE(WaitFor([&] { return PortIn(c.dir() + "/next.port") > 0; }, 15s)) << next->Output();
  httplib::Client cli("127.0.0.1", PortIn(c.dir() + "/next.port"));
  auto job = cli.Get("/v1/jobs/" + std::to_string(id),
                     httplib::Headers{{"Authorization", "Bearer " + alice}});
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, 200) << job->body;
  EXPECT_EQ(next->Stop(), 0) << next->Output();
}

// A port nobody listens on now (bound and let go), for a server started later.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) close(fd);
    return 0;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// Agents and the CLI given the active server and its standby (`--server A,B`, HOURGLASS_URL=A,B)
// follow a takeover by themselves, with no load balancer between: after kill -9 of the active
// server the CLI submits through the standby, and the agent, now reporting to it, runs the job.
TEST(E2ePostgresql, AgentsAndTheCliGivenBothServersFollowATakeover) {
  store::PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  Cluster c(200, 3, {"--database", pg.Conninfo()});
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string standby_url = "http://127.0.0.1:" + std::to_string(port);
  Process standby({HOURGLASS_BIN, "server", "--data", c.dir() + "/standby", "--listen",
                   "127.0.0.1:" + std::to_string(port), "--interval-ms", "200", "--lost-after-s",
                   "3", "--database", pg.Conninfo(), "--standby"},
                  c.dir() + "/standby");
  ASSERT_TRUE(
      WaitFor([&] { return standby.Output().find("standing by") != std::string::npos; }, 10s))
      << standby.Output();
  const std::string both = c.url() + "," + standby_url;
  AgentOptions node = Node("n1", 2);
  node.server = both;
  c.AddAgent(node);
  const std::string alice = c.AddPrincipal("alice", "user");
  auto submit = [&](const std::string& name) -> int64_t {
    auto [rc, out] = c.Cli(
        {"submit", "--name", name, "--gpus", "1", "--json", "--", "sh", "-c", "echo ran " + name},
        alice, both);
    if (rc != 0) {
      ADD_FAILURE() << out;
      return 0;
    }
    return Json::parse(out)["id"].get<int64_t>();
  };
  auto state = [&](int64_t id) {
    auto [rc, out] = c.Cli({"show", std::to_string(id), "--json"}, alice, both);
    return rc == 0 ? Json::parse(out)["state"].get<std::string>() : std::string();
  };
  const int64_t before = submit("before");
  ASSERT_GT(before, 0);
  ASSERT_TRUE(WaitFor([&] { return state(before) == "succeeded"; }, 20s)) << state(before);

  c.KillServer();
  // The first URL refuses connections now; the CLI goes on to the standby once it has taken over.
  ASSERT_TRUE(WaitFor([&] { return c.Cli({"jobs"}, alice, both).first == 0; }, 20s))
      << standby.Output();
  const int64_t after = submit("after");
  ASSERT_GT(after, before);
  EXPECT_TRUE(WaitFor([&] { return state(after) == "succeeded"; }, 20s)) << state(after) << "\n"
                                                                         << standby.Output();
  EXPECT_EQ(state(before), "succeeded");
  // With only the dead server's URL the CLI says it cannot reach it (exit 3).
  auto [dead_rc, dead] = c.Cli({"jobs"}, alice, c.url());
  EXPECT_EQ(dead_rc, 3) << dead;
  EXPECT_EQ(standby.Stop(), 0) << standby.Output();
}

// SIGTERM ends a standby that is still waiting, with status 0.
TEST(E2ePostgresql, AStandbyStopsOnSigtermWhileWaiting) {
  store::PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  Cluster c(200, 3, {"--database", pg.Conninfo()});
  Process standby({HOURGLASS_BIN, "server", "--data", c.dir() + "/standby", "--listen",
                   "127.0.0.1:0", "--database", pg.Conninfo(), "--standby"},
                  c.dir() + "/standby");
  ASSERT_TRUE(
      WaitFor([&] { return standby.Output().find("standing by") != std::string::npos; }, 10s))
      << standby.Output();
  const int status = standby.Stop(std::chrono::milliseconds(5000));
  ASSERT_TRUE(WIFEXITED(status)) << "killed after the grace: " << standby.Output();
  EXPECT_EQ(WEXITSTATUS(status), 0) << standby.Output();
}

// A site that began on SQLite moves to PostgreSQL: `hourglass store copy` is refused while the
// server runs (it would copy a state still changing), then copies everything once it has stopped;
// the server started on PostgreSQL with the same --data has the jobs under their ids, the users'
// tokens, and the agents' running job, whose end it records; new jobs are numbered after the old.
TEST(E2ePostgresql, ASiteMovesFromSqliteWithItsJobsTokensAndRunningWork) {
  store::PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  Cluster c;
  c.AddAgent(Node("n1", 2));
  const std::string alice = c.AddPrincipal("alice", "user");
  const int64_t done = c.Submit(Json{{"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}}, alice);
  ASSERT_TRUE(c.WaitState(done, "succeeded"));
  const int64_t running =
      c.Submit(Json{{"gpus", 1}, {"command", {"sleep", "6"}}, {"cwd", c.dir()}}, alice);
  ASSERT_TRUE(c.WaitState(running, "running"));

  const std::vector<std::string> copy{
      "store", "copy", "--from-data", c.dir() + "/server", "--to-database", pg.Conninfo()};
  auto [refused_rc, refused] = c.Cli(copy, "");
  EXPECT_EQ(refused_rc, 2) << refused;
  EXPECT_NE(refused.find("another hourglass server is using this database"), std::string::npos)
      << refused;
  EXPECT_EQ(pg.Query("SELECT count(*) FROM pg_tables WHERE tablename = 'jobs'"), "0")
      << "a refused copy touched the target";

  c.StopServer();
  auto [rc, out] = c.Cli(copy, "");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("2 jobs"), std::string::npos) << out;
  EXPECT_NE(out.find("read back equal"), std::string::npos) << out;

  c.SetServerArgs({"--database", pg.Conninfo()});
  c.StartServer();
  EXPECT_NE(c.ServerOutput().find("state in PostgreSQL"), std::string::npos) << c.ServerOutput();
  EXPECT_EQ(c.Job(done)["state"], "succeeded");
  EXPECT_TRUE(c.WaitState(running, "succeeded")) << c.Job(running).dump();
  const int64_t next = c.Submit(Json{{"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}}, alice);
  EXPECT_GT(next, running);
  EXPECT_TRUE(c.WaitState(next, "succeeded"));
  EXPECT_EQ(pg.Query("SELECT count(*) FROM jobs"), "3");
}

}  // namespace
}  // namespace hg::e2e
