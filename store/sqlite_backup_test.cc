// Online backups of the SQLite store, taken while a server-like writer commits from several
// threads: the backup is one moment's state (every job with the event written in its
// transaction, ids without holes) and holds everything acknowledged before it began.
#include "store/sqlite_backup.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"
#include "store/test_dir.h"

namespace hg::store {
namespace {

TEST(SqliteBackup, ATakenWhileWritesCommitIsOneMomentWithEverythingAcknowledgedBefore) {
  TestDir dir;
  SqliteStoreOptions server;
  server.exclusive = true;
  auto live = SqliteStore::Open(dir.File("hg.db"), server);
  ASSERT_TRUE(live) << live.error().ToString();
  std::mutex mu;
  std::set<int64_t> acked;
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&] {
      while (!stop) {
        int64_t id = 0;
        // A job and its event in one transaction: a consistent backup has both or neither.
        auto ok = (*live)->Transaction([&](Store& tx) -> Result<void> {
          auto made = tx.InsertJob(FullJob());
          if (!made) return tl::unexpected(made.error());
          id = *made;
          return tx.AddJobEvent({id, 1, "submitted", ""});
        });
        if (!ok) {
          failed = true;
          return;
        }
        std::lock_guard lock(mu);
        acked.insert(id);
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard lock(mu);
    return acked.size() >= 200;
  }));
  std::set<int64_t> before;
  {
    std::lock_guard lock(mu);
    before = acked;
  }
  auto jobs_in_backup = BackupSqlite(dir.File("hg.db"), dir.File("backup.db"));
  // Writers go on a little after the backup, as a server would.
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard lock(mu);
    return acked.size() >= before.size() + 100;
  }));
  stop = true;
  for (auto& w : writers) w.join();
  ASSERT_FALSE(failed);
  ASSERT_TRUE(jobs_in_backup) << jobs_in_backup.error().ToString();

  auto restored = SqliteStore::Open(dir.File("backup.db"));
  ASSERT_TRUE(restored) << restored.error().ToString();
  auto jobs = (*restored)->Jobs();
  ASSERT_TRUE(jobs);
  EXPECT_EQ(static_cast<int64_t>(jobs->size()), *jobs_in_backup);
  std::set<int64_t> ids;
  for (const JobRecord& j : *jobs) {
    ids.insert(j.id);
    auto events = (*restored)->JobEvents(j.id);
    ASSERT_TRUE(events);
    EXPECT_EQ(events->size(), 1u) << "job " << j.id << " without the event of its transaction";
  }
  for (int64_t id : before) EXPECT_EQ(ids.count(id), 1u) << "acknowledged job " << id << " lost";
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(*ids.rbegin(), static_cast<int64_t>(ids.size())) << "ids with holes: not one moment";
  std::lock_guard lock(mu);
  EXPECT_LT(ids.size(), acked.size()) << "the backup holds jobs committed after it";
}

TEST(SqliteBackup, NeverOverwritesAndMakesNothingFromAMissingDatabase) {
  TestDir dir;
  {
    auto s = SqliteStore::Open(dir.File("hg.db"));
    ASSERT_TRUE(s);
    ASSERT_TRUE((*s)->InsertJob(FullJob()));
  }
  { std::ofstream(dir.File("taken.db")) << "keep me"; }
  auto over = BackupSqlite(dir.File("hg.db"), dir.File("taken.db"));
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().field, dir.File("taken.db"));
  EXPECT_NE(over.error().reason.find("never overwrites"), std::string::npos);
  std::ifstream in(dir.File("taken.db"));
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "keep me");

  auto missing = BackupSqlite(dir.File("none.db"), dir.File("b.db"));
  ASSERT_FALSE(missing);
  EXPECT_FALSE(std::filesystem::exists(dir.File("none.db")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("b.db")));

  auto good = BackupSqlite(dir.File("hg.db"), dir.File("b.db"));
  ASSERT_TRUE(good) << good.error().ToString();
  EXPECT_EQ(*good, 1);
}

}  // namespace
}  // namespace hg::store
