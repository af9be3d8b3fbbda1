// What only the PostgreSQL store has: a server to reach, which can refuse, go away and come back;
// and a schema migrated under a lock. The behaviour both stores share is in
// store_contract_test.cc.
#include "store/pg_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "store/pg_schema.h"
#include "store/pg_test_server.h"
#include "store/store_test_util.h"

namespace hg::store {
namespace {

// Opens the store as `hourglass server` does: holding the one-server lock.
Result<std::unique_ptr<Store>> OpenAsServer(const PgTestServer& pg) {
  PgStoreOptions server;
  server.exclusive = true;
  return OpenPgStore(pg.Conninfo(), server);
}

TEST(PgStore, AnUnreachableServerIsNamedWithTheReason) {
  auto s = OpenPgStore("host=/nonexistent-dir user=hourglass dbname=hg connect_timeout=2");
  ASSERT_FALSE(s);
  const std::string msg = s.error().ToString();
  EXPECT_NE(msg.find("cannot connect to PostgreSQL at /nonexistent-dir"), std::string::npos) << msg;
  auto bad = OpenPgStore("this is not a connection string");
  ASSERT_FALSE(bad);
  EXPECT_FALSE(bad.error().reason.empty());
}

TEST(PgStore, APasswordIsNeverInAnError) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto s = OpenPgStore(pg.Conninfo("no_such_db") + " password=hunter2");
  ASSERT_FALSE(s);
  const std::string msg = s.error().ToString();
  EXPECT_NE(msg.find("no_such_db"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
}

// A NUL byte cannot travel in PostgreSQL text; it must be refused, not cut short in silence.
TEST(PgStore, ANulByteIsRefusedAndNothingIsWritten) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto s = OpenPgStore(pg.Conninfo());
  ASSERT_TRUE(s) << s.error().ToString();
  JobRecord j = FullJob();
  j.name = std::string("a\0b", 3);
  auto r = (*s)->InsertJob(j);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().reason.find("NUL"), std::string::npos) << r.error().reason;
  auto jobs = (*s)->Jobs();
  ASSERT_TRUE(jobs);
  EXPECT_TRUE(jobs->empty());
}

// The database server crashes and comes back: writes acknowledged before are there, the store's
// connections reconnect by themselves, and writing goes on.
TEST(PgStore, TheStoreReconnectsAfterTheServerRestarts) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto s = OpenPgStore(pg.Conninfo());
  ASSERT_TRUE(s) << s.error().ToString();
  auto before = (*s)->InsertJob(FullJob());
  ASSERT_TRUE(before) << before.error().ToString();

  pg.Stop(/*immediate=*/true);  // no shutdown checkpoint: recovery replays the WAL
  auto down = (*s)->InsertJob(FullJob());
  EXPECT_FALSE(down);  // refused, not acknowledged
  ASSERT_TRUE(pg.Start());

  // Each pooled connection notices the loss on its next use; a few calls go through them all.
  Result<int64_t> after = Fail("test", "not tried");
  for (int i = 0; i < 8 && !after; ++i) after = (*s)->InsertJob(FullJob());
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_GT(*after, *before);
  for (int i = 0; i < 8; ++i) {
    auto more = (*s)->InsertJob(FullJob());
    ASSERT_TRUE(more) << "call " << i << ": " << more.error().ToString();
  }
  auto jobs = (*s)->Jobs();
  ASSERT_TRUE(jobs) << jobs.error().ToString();
  ASSERT_GE(jobs->size(), 10u);
  EXPECT_EQ(jobs->front().id, *before);
  ExpectSameJob(jobs->front(), [&] {
    JobRecord want = FullJob();
    want.id = *before;
    return want;
  }());
}

// A body that swallows the error of one of its writes is not told it succeeded: PostgreSQL has
// already aborted the transaction, and nothing of it is written.
TEST(PgStore, ABodyThatIgnoresAFailedWriteIsNotCommitted) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto s = OpenPgStore(pg.Conninfo());
  ASSERT_TRUE(s) << s.error().ToString();
  auto r = (*s)->Transaction([](Store& tx) -> Result<void> {
    if (auto id = tx.InsertJob(FullJob()); !id) return tl::unexpected(id.error());
    (void)tx.AddJobEvent({424242, 1, "started", ""});  // no such job: fails, error dropped
    return {};
  });
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().reason.find("nothing was written"), std::string::npos) << r.error().reason;
  auto jobs = (*s)->Jobs();
  ASSERT_TRUE(jobs);
  EXPECT_TRUE(jobs->empty());
  // The connection is fine for the next write.
  for (int i = 0; i < 8; ++i) ASSERT_TRUE((*s)->InsertJob(FullJob()));
}

// Two schedulers over one database would start the same job twice: a second server is refused
// while the first runs, and welcome once it has gone. Tools that only read are not servers.
TEST(PgStore, OneServerAtATime) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto first = OpenAsServer(pg);
  ASSERT_TRUE(first) << first.error().ToString();
  auto second = OpenAsServer(pg);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().reason.find("another hourglass server is using this database"),
            std::string::npos)
      << second.error().reason;
  auto reader = OpenPgStore(pg.Conninfo());
  ASSERT_TRUE(reader) << reader.error().ToString();
  ASSERT_TRUE((*first)->InsertJob(FullJob()));
  first->reset();
  // Closing a connection does not wait for its backend to exit, and the lock goes with the
  // backend: under load the next open can come first (seen once under `ctest -j2`). A standby
  // retries the same way (Server::Start).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(second = OpenAsServer(pg)) && IsServerLockHeld(second.error()) &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(second) << second.error().ToString();
  ASSERT_TRUE((*second)->InsertJob(FullJob()));
}

// The lock's session ends (an operator terminates it) and another server takes the database:
// the first one's next write is refused, and so is every later one, even once its connections
// are fine again. Nothing it tried is written.
TEST(PgStore, AServerThatLostTheLockStopsWriting) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto first = OpenAsServer(pg);
  ASSERT_TRUE(first) << first.error().ToString();
  ASSERT_TRUE((*first)->InsertJob(FullJob()));
  auto admin = pg::Conn::Connect(pg.Conninfo());
  ASSERT_TRUE(admin) << admin.error().ToString();
  auto ended = admin->Exec(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND "
      "granted AND objsubid = 1");
  ASSERT_TRUE(ended) << ended.error().ToString();
  ASSERT_EQ(ended->Int64(0, 0), 1);
  // The session goes asynchronously; the lock is free once it has.
  Result<std::unique_ptr<Store>> second = Fail("test", "not tried");
  for (int i = 0; i < 200 && !second; ++i) {
    second = OpenAsServer(pg);
    if (!second) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(second) << second.error().ToString();

  for (int i = 0; i < 3; ++i) {
    auto refused = (*first)->InsertJob(FullJob());
    ASSERT_FALSE(refused) << "write " << i << " went through";
    EXPECT_NE(refused.error().reason.find("another hourglass server took this database"),
              std::string::npos)
        << refused.error().reason;
  }
  auto jobs = (*second)->Jobs();
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->size(), 1u);
  ASSERT_TRUE((*second)->InsertJob(FullJob()));
}

// A database restart ends every session, the lock's too: with nobody else waiting for it, the
// server takes it again and goes on writing.
TEST(PgStore, AServerTakesItsLockBackAfterTheDatabaseRestarts) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto s = OpenAsServer(pg);
  ASSERT_TRUE(s) << s.error().ToString();
  ASSERT_TRUE((*s)->InsertJob(FullJob()));
  pg.Stop(/*immediate=*/true);
  ASSERT_TRUE(pg.Start());
  Result<int64_t> after = Fail("test", "not tried");
  for (int i = 0; i < 8 && !after; ++i) after = (*s)->InsertJob(FullJob());
  ASSERT_TRUE(after) << after.error().ToString();
  // It holds the lock again: another server is refused.
  auto other = OpenAsServer(pg);
  ASSERT_FALSE(other);
}

TEST(PgMigrations, FromEmptyAndReopenIsIdempotent) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  for (int i = 0; i < 2; ++i) {
    auto s = OpenPgStore(pg.Conninfo());
    ASSERT_TRUE(s) << s.error().ToString();
  }
  auto c = pg::Conn::Connect(pg.Conninfo());
  ASSERT_TRUE(c);
  auto v = PgSchemaVersion(*c);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, static_cast<int>(PgSchemaSteps().size()));
}

// Server replicas may start together on one database: the advisory lock lets one apply the
// steps while the others wait, so no step runs twice (a second CREATE TABLE would fail).
TEST(PgMigrations, OpenersRacingOnAnEmptyDatabaseAllSucceed) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  constexpr int kOpeners = 6;
  std::vector<Result<std::unique_ptr<Store>>> opened;
  for (int i = 0; i < kOpeners; ++i) opened.emplace_back(Fail("test", "not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i) {
    threads.emplace_back(
        [&, i] { opened[static_cast<size_t>(i)] = OpenPgStore(pg.Conninfo(), PgStoreOptions{1}); });
  }
  for (auto& t : threads) t.join();
  for (const auto& o : opened) EXPECT_TRUE(o) << o.error().ToString();
}

TEST(PgMigrations, AFailingStepChangesNothing) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto c = pg::Conn::Connect(pg.Conninfo());
  ASSERT_TRUE(c) << c.error().ToString();
  const std::vector<std::string> steps = {"CREATE TABLE a (x INTEGER);",
                                          "CREATE TABLE b (y INTEGER); SELECT no_such_column;"};
  auto r = PgMigrate(*c, steps);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().reason.find("schema step 2"), std::string::npos) << r.error().reason;
  EXPECT_FALSE(c->InTransaction());
  // Neither step's table, nor the version, remains.
  auto v = PgSchemaVersion(*c);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, 0);
  auto a = c->Exec("SELECT to_regclass('a') IS NULL AND to_regclass('b') IS NULL");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->Bool(0, 0));
  // The first step alone applies.
  auto ok = PgMigrate(*c, {steps[0]});
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(*ok, 1);
}

TEST(PgMigrations, NewerSchemaIsRefused) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  ASSERT_TRUE(OpenPgStore(pg.Conninfo()));
  auto c = pg::Conn::Connect(pg.Conninfo());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Run("UPDATE schema_version SET version = 99"));
  auto s = OpenPgStore(pg.Conninfo());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().reason.find("schema version 99 is newer"), std::string::npos)
      << s.error().reason;
}

}  // namespace
}  // namespace hg::store
