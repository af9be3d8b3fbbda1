#include "store/sqlite_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "store/migrations.h"
#include "store/store_test_util.h"
#include "store/test_dir.h"

namespace hg::store {
namespace {

std::unique_ptr<SqliteStore> MustOpen(const std::string& path) {
  auto s = SqliteStore::Open(path);
  EXPECT_TRUE(s) << s.error().ToString();
  return s ? std::move(*s) : nullptr;
}

TEST(SqliteStore, FailingItemDoesNotSinkItsBatch) {
  TestDir dir;
  auto s = MustOpen(dir.File("hg.db"));
  ASSERT_TRUE(s);
  // Hold the writer inside a first transaction until the others are queued, so they all land
  // in the next batch together.
  std::atomic<bool> in_body{false};
  std::atomic<bool> release{false};
  std::thread holder([&] {
    auto r = s->Transaction([&](Store&) -> Result<void> {
      in_body = true;
      while (!release.load()) std::this_thread::yield();
      return {};
    });
    EXPECT_TRUE(r);
  });
  ASSERT_TRUE(WaitFor([&] { return in_body.load(); }));

  constexpr int kGood = 6;
  std::vector<Result<int64_t>> good(kGood, Result<int64_t>(0));
  Result<void> bad_event;
  Result<void> bad_tx;
  std::vector<std::thread> threads;
  for (int i = 0; i < kGood / 2; ++i) {
    threads.emplace_back([&, i] { good[static_cast<size_t>(i)] = s->InsertJob(FullJob()); });
  }
  threads.emplace_back([&] { bad_event = s->AddJobEvent({777777, 1, "started", ""}); });
  threads.emplace_back([&] {
    bad_tx = s->Transaction([](Store& tx) -> Result<void> {
      if (auto id = tx.InsertJob(FullJob()); !id) return tl::unexpected(id.error());
      return Fail("test", "rolled back");
    });
  });
  for (int i = kGood / 2; i < kGood; ++i) {
    threads.emplace_back([&, i] { good[static_cast<size_t>(i)] = s->InsertJob(FullJob()); });
  }
  ASSERT_TRUE(WaitFor([&] { return s->PendingWrites() == kGood + 2; }));
  release = true;
  holder.join();
  for (auto& t : threads) t.join();

  const WriterStats stats = s->Stats();
  EXPECT_EQ(stats.items, kGood + 3);
  EXPECT_EQ(stats.largest_batch, kGood + 2);  // they really shared one transaction
  EXPECT_FALSE(bad_event);
  ASSERT_FALSE(bad_tx);
  EXPECT_EQ(bad_tx.error().reason, "rolled back");
  std::set<int64_t> ids;
  for (const auto& g : good) {
    ASSERT_TRUE(g) << g.error().ToString();
    ids.insert(*g);
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kGood));
  auto jobs = s->Jobs();
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), static_cast<size_t>(kGood));  // the failed transaction's job is gone
  for (const auto& j : *jobs) EXPECT_EQ(ids.count(j.id), 1u);
}

TEST(Migrations, FromEmptyAndReopenIsIdempotent) {
  TestDir dir;
  const std::string path = dir.File("hg.db");
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->PutPrincipal({"alice", "admin"}));
  }
  for (int round = 0; round < 2; ++round) {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
    auto ps = s->Principals();
    ASSERT_TRUE(ps);
    EXPECT_EQ(ps->size(), 1u);  // data untouched by re-running migrations
  }
  auto db = sql::Db::Open(path, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db);
  auto v = SchemaVersion(*db);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, LatestSchemaVersion());
  auto again = Migrate(*db);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, LatestSchemaVersion());
}

// A database written before leases (schema version 1) opens with its jobs intact and without a
// lease or activity.
TEST(Migrations, JobsFromVersionOneHaveNoLease) {
  TestDir dir;
  const std::string path = dir.File("hg.db");
  {
    auto db = sql::Db::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db);
    auto v = Migrate(*db, {SchemaSteps()[0]});
    ASSERT_TRUE(v) << v.error().ToString();
    ASSERT_EQ(*v, 1);
    ASSERT_TRUE(db->Exec(
        "INSERT INTO jobs (name, user, budget, gpus, gpus_per_node, job_class, min_runtime_s, "
        "max_runtime_s, resumable, grace_s, priority, command_json, env_json, cwd, state, reason, "
        "reason_code, submitted_at, queued_since, started_at, ended_at, attempts, exit_code, "
        "exit_signal, placement_json) VALUES ('old', 'alice', '', 2, 0, 'batch', 60, NULL, 0, "
        "120, 0, '[\"x\"]', '{}', '/tmp', 'running', 'r', 'start_free', 10, 10, 11, NULL, 1, "
        "NULL, NULL, '[]')"));
  }
  auto s = MustOpen(path);
  ASSERT_TRUE(s);
  auto jobs = s->Jobs();
  ASSERT_TRUE(jobs) << jobs.error().ToString();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].name, "old");
  EXPECT_EQ((*jobs)[0].min_runtime_s, 60);
  EXPECT_EQ((*jobs)[0].lease_s, 0);
  EXPECT_FALSE((*jobs)[0].active_at.has_value());
  EXPECT_EQ((*jobs)[0].stop_for, 0);  // version 4: stopping for nobody
  EXPECT_FALSE((*jobs)[0].stop_holds);
  ASSERT_TRUE(s->SetActivity((*jobs)[0].id, 12));
  auto got = s->Job((*jobs)[0].id);
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->active_at, std::optional<int64_t>(12));
}

TEST(Migrations, StepsApplyInOrderAndAFailingStepChangesNothing) {
  TestDir dir;
  auto db = sql::Db::Open(dir.File("m.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(db);
  std::vector<std::string> steps = {"CREATE TABLE a (x INTEGER)",
                                    "INSERT INTO a VALUES (1); ALTER TABLE a ADD COLUMN y TEXT"};
  auto v = Migrate(*db, steps);
  ASSERT_TRUE(v) << v.error().ToString();
  EXPECT_EQ(*v, 2);
  // A third step that fails half-way: its first statement is rolled back with it.
  steps.push_back("INSERT INTO a VALUES (2, 'two'); INSERT INTO nowhere VALUES (3)");
  v = Migrate(*db, steps);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().reason.find("migration to version 3"), std::string::npos) << v.error().reason;
  auto version = SchemaVersion(*db);
  ASSERT_TRUE(version);
  EXPECT_EQ(*version, 2);
  auto count = db->Prepare("SELECT count(*) FROM a");
  ASSERT_TRUE(count);
  ASSERT_TRUE(count->Step());
  EXPECT_EQ(count->Int64(0), 1);
  // Fixed step 3 applies on the next open.
  steps[2] = "INSERT INTO a VALUES (2, 'two')";
  v = Migrate(*db, steps);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, 3);
}

TEST(Migrations, NewerSchemaIsRefused) {
  TestDir dir;
  const std::string path = dir.File("hg.db");
  {
    auto s = MustOpen(path);
    ASSERT_TRUE(s);
  }
  {
    auto db = sql::Db::Open(path, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->Exec("UPDATE schema_version SET version = " +
                         std::to_string(LatestSchemaVersion() + 1)));
  }
  auto s = OpenSqliteStore(path);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().field, path);
  EXPECT_NE(s.error().reason.find("newer than this hourglass binary"), std::string::npos)
      << s.error().reason;
}

TEST(SqliteStore, UnopenablePathNamesTheFile) {
  auto s = OpenSqliteStore("/nonexistent-dir/x/hg.db");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().field, "/nonexistent-dir/x/hg.db");
  EXPECT_NE(s.error().reason.find("cannot open"), std::string::npos) << s.error().reason;
}

SqliteStoreOptions Exclusive() {
  SqliteStoreOptions o;
  o.exclusive = true;
  return o;
}

// Two servers on one SQLite file would both start every waiting job: the second is refused with
// a reason naming the lock, and changes nothing; a reader (not exclusive) still opens beside the
// server, and a second server opens once the first has closed.
TEST(SqliteStore, AnExclusiveStoreRefusesASecondServerUntilTheFirstCloses) {
  TestDir dir;
  const std::string path = dir.File("hg.db");
  auto first = SqliteStore::Open(path, Exclusive());
  ASSERT_TRUE(first) << first.error().ToString();
  auto id = (*first)->InsertJob(FullJob());
  ASSERT_TRUE(id) << id.error().ToString();

  auto second = SqliteStore::Open(path, Exclusive());
  ASSERT_FALSE(second);
  EXPECT_TRUE(IsServerLockHeld(second.error())) << second.error().ToString();
  EXPECT_NE(second.error().ToString().find(path + ".lock"), std::string::npos)
      << second.error().ToString();

  auto reader = SqliteStore::Open(path);
  ASSERT_TRUE(reader) << reader.error().ToString();
  auto jobs = (*reader)->Jobs();
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->size(), 1u);
  reader->reset();

  first->reset();
  auto third = SqliteStore::Open(path, Exclusive());
  ASSERT_TRUE(third) << third.error().ToString();
  jobs = (*third)->Jobs();
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ(jobs->front().id, *id);
}

// A server killed with SIGKILL leaves no stale lock: the next server opens at once, with what the
// killed one had committed.
TEST(SqliteStore, TheServerLockGoesWithAKilledProcess) {
  TestDir dir;
  const std::string path = dir.File("hg.db");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto s = SqliteStore::Open(path, Exclusive());
    if (!s || !(*s)->InsertJob(FullJob())) _exit(2);
    const char ready = 'r';
    if (write(fds[1], &ready, 1) != 1) _exit(3);
    for (;;) pause();
  }
  close(fds[1]);
  char ready = 0;
  ASSERT_EQ(read(fds[0], &ready, 1), 1) << "the child could not open the store";
  close(fds[0]);

  auto while_alive = SqliteStore::Open(path, Exclusive());
  ASSERT_FALSE(while_alive);
  EXPECT_TRUE(IsServerLockHeld(while_alive.error())) << while_alive.error().ToString();

  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto after = SqliteStore::Open(path, Exclusive());
  ASSERT_TRUE(after) << after.error().ToString();
  auto jobs = (*after)->Jobs();
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->size(), 1u);
}

}  // namespace
}  // namespace hg::store
