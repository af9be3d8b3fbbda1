// Crash durability with a real process: a child inserts jobs from several threads and reports
// every acknowledged id through a pipe; the parent SIGKILLs it at a random moment, re-opens the
// store and checks that nothing acknowledged was lost or duplicated. For the PostgreSQL store the
// database server itself crashes too, every other round.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "store/pg_test_server.h"
#include "store/sqlite_store.h"
#include "store/test_dir.h"

namespace hg::store {
namespace {

// One acknowledgement. 16 bytes: far below PIPE_BUF, so each write() is atomic and records from
// different threads never interleave.
struct Ack {
  int32_t thread;
  int32_t seq;
  int64_t id;
};
static_assert(sizeof(Ack) == 16);

std::string JobName(int round, int thread, int seq) {
  return "r" + std::to_string(round) + "-t" + std::to_string(thread) + "-" + std::to_string(seq);
}

using Opener = std::function<Result<std::unique_ptr<Store>>()>;

// The child: never returns. Exit codes other than death by SIGKILL are failures.
[[noreturn]] void ChildInsertLoop(const Opener& open, int fd, int round) {
  auto store = open();
  if (!store) _exit(2);
  constexpr int kThreads = 8;
  // Bounded so an orphaned child stops by itself (the parent kills it long before).
  constexpr int kMaxPerThread = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kMaxPerThread; ++i) {
        JobRecord j;
        j.name = JobName(round, t, i);
        j.user = "crash";
        auto id = (*store)->InsertJob(j);
        if (!id) _exit(3);
        // Only now, after InsertJob returned (= after COMMIT), does the id count as acknowledged.
        const Ack ack{t, i, *id};
        if (write(fd, &ack, sizeof ack) != static_cast<ssize_t>(sizeof ack)) _exit(4);
      }
    });
  }
  for (auto& t : threads) t.join();
  _exit(5);
}

// after_kill(round) runs once the child is dead and before the store is opened again.
void CheckCrashRounds(const Opener& open, const std::function<void(int)>& after_kill) {
  std::mt19937 rng(20261202);  // fixed seed: the same kill points on every run
  constexpr int kRounds = 8;
  int64_t max_id_before = 0;
  size_t total_acked = 0;
  std::map<int64_t, std::string> expected;  // every acknowledged id -> its job name

  for (int round = 0; round < kRounds; ++round) {
    // Rounds 0 and 1 kill right after fork: during open, WAL setup or the first migration.
    const size_t kill_after = round < 2 ? 0 : 1 + rng() % 1500;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      ChildInsertLoop(open, fds[1], round);
    }
    close(fds[1]);

    std::vector<Ack> acks;
    std::vector<char> buf;
    bool killed = false;
    if (kill_after == 0) {
      kill(pid, SIGKILL);
      killed = true;
    }
    char chunk[4096];
    for (;;) {
      const ssize_t n = read(fds[0], chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      ASSERT_GE(n, 0) << strerror(errno);
      if (n == 0) break;  // the child is gone and every ack it wrote has been read
      buf.insert(buf.end(), chunk, chunk + n);
      size_t whole = buf.size() / sizeof(Ack);
      for (size_t k = 0; k < whole; ++k) {
        Ack a;
        std::memcpy(&a, buf.data() + k * sizeof(Ack), sizeof(Ack));
        acks.push_back(a);
      }
      buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(whole * sizeof(Ack)));
      if (!killed && acks.size() >= kill_after) {
        kill(pid, SIGKILL);
        killed = true;
      }
    }
    close(fds[0]);
    EXPECT_TRUE(buf.empty()) << "torn acknowledgement record";
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "round " << round << ": the child ended by itself, status " << status;
    if (round >= 2) {
      EXPECT_GE(acks.size(), kill_after) << "round " << round;
    }

    // Ids are unique and increasing: across restarts (never reused) and within each thread.
    std::map<int32_t, int64_t> last_by_thread;
    for (const Ack& a : acks) {
      EXPECT_GT(a.id, max_id_before) << "round " << round << ": id " << a.id << " reused";
      auto [it, fresh] = last_by_thread.emplace(a.thread, a.id);
      if (!fresh) {
        EXPECT_GT(a.id, it->second) << "round " << round << " thread " << a.thread;
        it->second = a.id;
      }
      EXPECT_TRUE(expected.emplace(a.id, JobName(round, a.thread, a.seq)).second)
          << "id " << a.id << " acknowledged twice";
    }
    total_acked += acks.size();

    after_kill(round);
    // Re-open after the crash: every acknowledged id is there exactly once, with its own job.
    auto store = open();
    ASSERT_TRUE(store) << "round " << round << ": " << store.error().ToString();
    auto jobs = (*store)->Jobs();
    ASSERT_TRUE(jobs) << jobs.error().ToString();
    std::map<int64_t, std::string> present;
    std::map<std::string, int> names;
    for (const auto& j : *jobs) {
      EXPECT_TRUE(present.emplace(j.id, j.name).second) << "id " << j.id << " twice";
      EXPECT_EQ(++names[j.name], 1) << "job " << j.name << " stored twice";
      max_id_before = std::max(max_id_before, j.id);
    }
    size_t missing = 0;
    for (const auto& [id, name] : expected) {
      auto it = present.find(id);
      if (it == present.end()) {
        ++missing;
        ADD_FAILURE() << "round " << round << ": acknowledged id " << id << " lost";
      } else {
        EXPECT_EQ(it->second, name) << "id " << id;
      }
      if (missing > 5) break;
    }
    ASSERT_EQ(missing, 0u);
  }
  // The kills must have happened while writes were flowing, or the test proves nothing.
  EXPECT_GT(total_acked, 1000u);
}

TEST(SqliteStoreCrash, AcknowledgedInsertsSurviveSigkill) {
  TestDir dir;
  const std::string path = dir.File("hg.db");
  CheckCrashRounds([&] { return OpenSqliteStore(path); }, [](int) {});
}

TEST(PgStoreCrash, AcknowledgedInsertsSurviveSigkillOfTheClientAndOfTheServer) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  CheckCrashRounds([&] { return OpenPgStore(pg.Conninfo()); },
                   [&](int round) {
                     if (round % 2 == 1) return;
                     // As if the machine lost power: no shutdown checkpoint, recovery from the
                     // WAL alone.
                     pg.Stop(/*immediate=*/true);
                     ASSERT_TRUE(pg.Start());
                   });
}

}  // namespace
}  // namespace hg::store
