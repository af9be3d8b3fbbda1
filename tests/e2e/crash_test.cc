// Issue 3, done-when item 6: repeated SIGKILL of the server during a stream of submissions from
// several clients loses no acknowledged job and duplicates none; running work survives.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "store/pg_test_server.h"
#include "tests/e2e/cluster.h"

namespace hg::e2e {
namespace {

using namespace std::chrono_literals;

// server_args: where the server keeps its state (nothing: SQLite in its data folder).
void KillNineDuringSubmissions(const std::vector<std::string>& server_args) {
  Cluster c(200, 3, server_args);
  const std::string alice = c.AddPrincipal("alice", "user");
  c.AddBudget("lab", "", 1, Json{{"members", {"alice"}}});
  c.AddAgent(Node("n1", 2));
  // A funded job holds the whole node, so the stream of unfunded jobs stays queued.
  const int64_t holder = c.Submit(Json{{"budget", "lab"},
                                       {"gpus", 2},
                                       {"command", c.Script("hold", "sleep 600\n")},
                                       {"cwd", c.dir()}},
                                  alice);
  ASSERT_TRUE(c.WaitState(holder, "running"));

  constexpr int kClients = 6;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::set<std::string> acked;
  std::map<std::string, int64_t> acked_id;
  int refused = 0;
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; !stop; ++i) {
        const std::string name = "c" + std::to_string(t) + "-" + std::to_string(i);
        const Response r = c.Call(
            "POST", "/v1/jobs",
            Json{{"name", name}, {"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}}, alice);
        std::lock_guard<std::mutex> lock(mu);
        if (r.status == 201) {
          acked.insert(name);
          acked_id[name] = r.body["id"].get<int64_t>();
        } else if (r.status != 0) {
          ++refused;  // an answer that is not an acknowledgement must be an error, not a 2xx
          ADD_FAILURE() << "unexpected status " << r.status << ": " << r.raw;
        }
      }
    });
  }
  for (int round = 0; round < 4; ++round) {
    std::this_thread::sleep_for(700ms);
    c.KillServer();
    std::this_thread::sleep_for(100ms);
    c.StartServer();
  }
  std::this_thread::sleep_for(500ms);
  stop = true;
  for (std::thread& t : clients) t.join();
  c.KillServer();
  c.StartServer();

  const Response all = c.Admin("GET", "/v1/jobs?state=all&limit=1000000");
  ASSERT_EQ(all.status, 200) << all.raw;
  std::map<std::string, int> seen;
  std::set<int64_t> ids;
  for (const Json& j : all.body["jobs"]) {
    ++seen[j.value("name", "")];
    EXPECT_TRUE(ids.insert(j["id"].get<int64_t>()).second) << "id listed twice: " << j.dump();
  }
  ASSERT_GT(acked.size(), 50u) << "too few submissions to mean anything";
  for (const std::string& name : acked) {
    EXPECT_EQ(seen[name], 1) << name << " (id " << acked_id[name] << ") after 5 kills";
  }
  for (const auto& [name, n] : seen) EXPECT_LE(n, 1) << name << " stored twice";
  EXPECT_EQ(refused, 0);
  // The job that was running through all of this is still running on its agent.
  EXPECT_EQ(c.Job(holder)["state"], "running") << c.Job(holder).dump();
  std::fprintf(stderr, "e2e crash: %zu acknowledged submissions survived 5 SIGKILLs\n",
               acked.size());
}

// Clients that name each submission (Idempotency-Key) and send it again until it is answered,
// across repeated kill -9 of the server: every submission is stored exactly once, acknowledged
// or not the first time, and a retry that finds its job gets that job's id.
TEST(E2eCrash, RetriedSubmissionsWithAKeyAreStoredExactlyOnce) {
  Cluster c;
  const std::string alice = c.AddPrincipal("alice", "user");
  c.AddBudget("lab", "", 1, Json{{"members", {"alice"}}});
  c.AddAgent(Node("n1", 2));
  constexpr int kClients = 6;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::string, int64_t> answered;  // every submission -> the id its answer gave
  int replays = 0;
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; !stop; ++i) {
        const std::string name = "k" + std::to_string(t) + "-" + std::to_string(i);
        const Json body{{"name", name}, {"gpus", 1}, {"command", {"true"}}, {"cwd", c.dir()}};
        // Until answered: no answer (the server died) and 503 (its store went with it) may hide
        // a commit, so the same key goes again. Bounded, so a broken server fails the test.
        Response r;
        for (int attempt = 0; attempt < 400; ++attempt) {
          r = c.Call("POST", "/v1/jobs", body, alice, {{"Idempotency-Key", name}});
          if (r.status != 0 && r.status != 503) break;
          std::this_thread::sleep_for(25ms);
        }
        std::lock_guard<std::mutex> lock(mu);
        if (r.status == 201 || r.status == 200) {
          answered[name] = r.body["id"].get<int64_t>();
          if (r.status == 200) ++replays;
        } else {
          ADD_FAILURE() << name << ": status " << r.status << ": " << r.raw;
          stop = true;
        }
      }
    });
  }
  for (int round = 0; round < 4; ++round) {
    std::this_thread::sleep_for(700ms);
    c.KillServer();
    std::this_thread::sleep_for(100ms);
    c.StartServer();
  }
  std::this_thread::sleep_for(300ms);
  stop = true;
  for (std::thread& t : clients) t.join();

  const Response all = c.Admin("GET", "/v1/jobs?state=all&limit=1000000");
  ASSERT_EQ(all.status, 200) << all.raw;
  std::map<std::string, std::vector<int64_t>> stored;
  for (const Json& j : all.body["jobs"]) stored[j.value("name", "")].push_back(j["id"]);
  ASSERT_GT(answered.size(), 50u) << "too few submissions to mean anything";
  for (const auto& [name, id] : answered) {
    ASSERT_EQ(stored[name].size(), 1u) << name << " stored " << stored[name].size() << " times";
    EXPECT_EQ(stored[name][0], id) << name;
  }
  for (const auto& [name, ids] : stored) EXPECT_EQ(ids.size(), 1u) << name;
  std::fprintf(stderr,
               "e2e crash: %zu keyed submissions, %d answered by a replay, each stored once\n",
               answered.size(), replays);
}

TEST(E2eCrash, RepeatedKillNineDuringSubmissionsLosesNothingAcknowledged) {
  KillNineDuringSubmissions({});
}

// The same with the state in PostgreSQL (a real server of the test's own): and a second
// hourglass server pointed at that database while the first runs is refused, before it binds a
// port or touches the state.
TEST(E2eCrash, OnPostgresqlNothingAcknowledgedIsLostAndOneServerRunsAtATime) {
  store::PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  {
    Cluster c(200, 3, {"--database", pg.Conninfo()});
    const std::string out = c.dir() + "/second.out";
    const std::string cmd = std::string(HOURGLASS_BIN) + " server --data " + c.dir() +
                            "/second --listen 127.0.0.1:0 --database '" + pg.Conninfo() + "' > " +
                            out + " 2>&1";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 2);
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("another hourglass server is using this database"), std::string::npos)
        << text.str();
  }
  ASSERT_TRUE(pg.CreateDatabase("crash"));
  KillNineDuringSubmissions({"--database", pg.Conninfo("crash")});
}

}  // namespace
}  // namespace hg::e2e
