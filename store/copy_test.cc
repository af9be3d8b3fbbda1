// CopyStore between real stores: a SQLite file and databases of a PostgreSQL server the test
// starts. What a site's move to PostgreSQL must keep: every record of every table, the jobs under
// their ids (users and scripts know them), and ids never reused after the copy.
#include "store/copy.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>

#include "store/pg_store.h"
#include "store/pg_test_server.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"
#include "store/test_dir.h"

namespace hg::store {
namespace {

std::unique_ptr<Store> Must(Result<std::unique_ptr<Store>> s) {
  EXPECT_TRUE(s) << s.error().ToString();
  return s ? std::move(*s) : nullptr;
}

// A site's state with something in every table, and the awkward values: unicode, quotes, empty
// strings, NULLs and non-NULLs, a share no decimal writes exactly, a deleted budget's audit.
void FillSite(Store& s) {
  ASSERT_TRUE(s.PutPrincipal({"admin", "admin"}));
  ASSERT_TRUE(s.PutPrincipal({"alice", "user"}));
  ASSERT_TRUE(s.PutPrincipal({"Bob", "user"}));
  ASSERT_TRUE(s.PutPrincipal({"agent", "agent"}));
  ASSERT_TRUE(s.AddToken({std::string(64, 'a'), "admin", 10}));
  ASSERT_TRUE(s.AddToken({std::string(64, 'b'), "alice", 11}));
  ASSERT_TRUE(s.AddToken({std::string(64, 'c'), "alice", 12}));
  ASSERT_TRUE(s.AddToken({std::string(64, 'd'), "agent", 13}));
  BudgetRecord research{"research", "", 3, std::nullopt, {"alice"}, {}};
  BudgetRecord nlp{"research/nlp", "research", 1.0 / 3.0, 64, {"Bob", "alice"}, {"alice", "Bob"}};
  BudgetRecord vision{"Vision", "", 0.1, 8, {}, {"Bob"}};
  BudgetRecord gone{"gone", "", 1, std::nullopt, {}, {}};
  ASSERT_TRUE(s.PutBudget(research, {{20, "admin", "research", "created", "", "share=3"}}));
  ASSERT_TRUE(s.PutBudget(nlp, {{21, "alice", "research/nlp", "created", "", "share=0.333"},
                                {21, "alice", "research/nlp", "leads", "", "Bob,alice"}}));
  ASSERT_TRUE(s.PutBudget(vision, {}));
  ASSERT_TRUE(s.PutBudget(gone, {{22, "admin", "gone", "created", "", ""}}));
  ASSERT_TRUE(s.DeleteBudget("gone", {23, "admin", "gone", "deleted", "share=1", ""}));

  JobRecord running = FullJob();
  running.submit_key = "key-1";
  JobRecord pending;
  pending.name = "sweep ✓ 'quoted'";
  pending.user = "Bob";
  pending.command = {"sleep", "10"};
  pending.submitted_at = 30;
  pending.queued_since = 30;
  pending.reason = "waiting for 2 GPUs";
  JobRecord ended = FullJob();
  ended.state = "succeeded";
  ended.exit_signal = std::nullopt;
  ended.active_at = std::nullopt;
  ended.stop_for = 0;
  ended.stop_holds = false;
  std::vector<int64_t> ids;
  for (const JobRecord* j : {&running, &pending, &ended}) {
    auto id = s.InsertJob(*j);
    ASSERT_TRUE(id) << id.error().ToString();
    ids.push_back(*id);
  }
  ASSERT_TRUE(s.AddJobEvent({ids[0], 40, "submitted", ""}));
  ASSERT_TRUE(s.AddJobEvent({ids[0], 41, "started", "on n1 and n2"}));
  ASSERT_TRUE(s.AddJobEvent({ids[1], 42, "submitted", "ünïcode \"reason\""}));
  ASSERT_TRUE(s.AddJobEvent({ids[0], 43, "preempted", "for research/nlp"}));
  ASSERT_TRUE(s.PutRun({ids[0], 1, "research/nlp", 16, 41, 43}));
  ASSERT_TRUE(s.PutRun({ids[0], 2, "research/nlp", 16, 50, std::nullopt}));
  ASSERT_TRUE(s.PutRun({ids[2], 1, "", 2, 44, 45}));
  ASSERT_TRUE(s.AddRecentStop({43, "research/nlp", "Vision"}));
  ASSERT_TRUE(s.AddRecentStop({43, "Vision", "research/nlp"}));
  NodeRecord n1{"n1",    8,
                "b0",    {{"gpu", "h100"}, {"rack", "r1"}},
                "ready", "",
                "",      std::nullopt,
                0,       "http://n1:9000"};
  NodeRecord n2{"n2", 4, "b1", {}, "draining", "health", "ecc errors", 99, 60, ""};
  ASSERT_TRUE(s.PutNode(n1));
  ASSERT_TRUE(s.PutNode(n2));
}

int64_t MaxJobId(const StoreContents& c) { return c.jobs.empty() ? 0 : c.jobs.back().id; }

// There and back: SQLite to PostgreSQL to a new SQLite file, each copy read back equal to the
// source, and each store's next job numbered after every copied one.
TEST(StoreCopy, SqliteToPostgresqlAndBackKeepsEveryRecordAndEveryId) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  TestDir dir;
  auto sqlite = Must(OpenSqliteStore(dir.File("a.db")));
  ASSERT_TRUE(sqlite);
  ASSERT_NO_FATAL_FAILURE(FillSite(*sqlite));
  auto source = ReadContents(*sqlite);
  ASSERT_TRUE(source) << source.error().ToString();
  ASSERT_EQ(source->jobs.size(), 3u);
  ASSERT_EQ(source->audit.size(), 5u);

  auto postgres = Must(OpenPgStore(pg.Conninfo()));
  ASSERT_TRUE(postgres);
  auto copied = CopyStore(*sqlite, *postgres);
  ASSERT_TRUE(copied) << copied.error().ToString();
  EXPECT_EQ(*copied, *source);
  auto on_pg = ReadContents(*postgres);
  ASSERT_TRUE(on_pg) << on_pg.error().ToString();
  EXPECT_EQ(FirstDifference(*source, *on_pg), "");
  EXPECT_EQ(*on_pg, *source);
  // Users keep their tokens, and an idempotency key still finds its job.
  auto alice = postgres->PrincipalByTokenHash(std::string(64, 'b'));
  ASSERT_TRUE(alice);
  ASSERT_TRUE(*alice);
  EXPECT_EQ((*alice)->name, "alice");

  auto back = Must(OpenSqliteStore(dir.File("b.db")));
  ASSERT_TRUE(back);
  auto again = CopyStore(*postgres, *back);
  ASSERT_TRUE(again) << again.error().ToString();
  auto on_sqlite = ReadContents(*back);
  ASSERT_TRUE(on_sqlite);
  EXPECT_EQ(FirstDifference(*source, *on_sqlite), "");

  for (Store* s : {postgres.get(), back.get()}) {
    auto next = s->InsertJob(FullJob());
    ASSERT_TRUE(next) << next.error().ToString();
    EXPECT_GT(*next, MaxJobId(*source));
  }
}

// PostgreSQL's ids can have gaps (a rolled-back insert spends its id): the copy keeps each job's
// id, gaps and all, and the new store goes on after the largest.
TEST(StoreCopy, JobIdsKeepTheirGaps) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto postgres = Must(OpenPgStore(pg.Conninfo()));
  ASSERT_TRUE(postgres);
  ASSERT_TRUE(postgres->InsertJob(FullJob()));
  auto rolled_back = postgres->Transaction([](Store& tx) -> Result<void> {
    if (auto id = tx.InsertJob(FullJob()); !id) return tl::unexpected(id.error());
    return Fail("test", "rolled back");
  });
  ASSERT_FALSE(rolled_back);
  auto last = postgres->InsertJob(FullJob());
  ASSERT_TRUE(last);
  ASSERT_EQ(*last, 3) << "the rolled-back insert should have spent id 2";

  TestDir dir;
  auto sqlite = Must(OpenSqliteStore(dir.File("hg.db")));
  ASSERT_TRUE(sqlite);
  auto copied = CopyStore(*postgres, *sqlite);
  ASSERT_TRUE(copied) << copied.error().ToString();
  auto jobs = sqlite->Jobs();
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, 1);
  EXPECT_EQ((*jobs)[1].id, 3);
  auto next = sqlite->InsertJob(FullJob());
  ASSERT_TRUE(next);
  EXPECT_EQ(*next, 4);
}

// A copy merges nothing: into a store that holds anything it is refused, with what the store
// holds in the reason, and the store keeps exactly what it held.
TEST(StoreCopy, IntoAStoreThatHoldsAnythingIsRefusedAndChangesNothing) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  TestDir dir;
  auto sqlite = Must(OpenSqliteStore(dir.File("hg.db")));
  ASSERT_TRUE(sqlite);
  ASSERT_NO_FATAL_FAILURE(FillSite(*sqlite));
  auto postgres = Must(OpenPgStore(pg.Conninfo()));
  ASSERT_TRUE(postgres);
  ASSERT_TRUE(postgres->PutNode({"other", 2, "b9", {}, "ready", "", "", std::nullopt, 0, ""}));
  auto before = ReadContents(*postgres);
  ASSERT_TRUE(before);

  auto copied = CopyStore(*sqlite, *postgres);
  ASSERT_FALSE(copied);
  EXPECT_EQ(copied.error().field, "target");
  EXPECT_NE(copied.error().reason.find("already holds"), std::string::npos)
      << copied.error().reason;
  EXPECT_NE(copied.error().reason.find("1 node"), std::string::npos) << copied.error().reason;
  auto after = ReadContents(*postgres);
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, *before);

  // The other way round too: the filled SQLite store is not a target either.
  auto back = CopyStore(*postgres, *sqlite);
  ASSERT_FALSE(back);
  EXPECT_NE(back.error().reason.find("3 jobs"), std::string::npos) << back.error().reason;
}

// Into PostgreSQL the rows go in multi-row INSERTs of 500: a site of 1,201 jobs (three
// statements of jobs; their events and runs, with ids out of order, in more) reads back the same,
// events in the order each job got them.
TEST(StoreCopy, ALargerSiteCrossesTheBatchesIntactAndInOrder) {
  TestDir dir;
  auto sqlite = Must(OpenSqliteStore(dir.File("hg.db")));
  ASSERT_TRUE(sqlite);
  auto filled = sqlite->Transaction([](Store& tx) -> Result<void> {
    for (int i = 0; i < 1201; ++i) {
      JobRecord j = FullJob();
      j.name = "job " + std::to_string(i);
      j.submit_key = "key-" + std::to_string(i);
      j.id = 3 * i + 2;  // ids with gaps
      if (auto ok = tx.RestoreJob(j); !ok) return ok;
    }
    // Events added newest job first, two each, so that event ids do not follow job ids.
    for (int i = 1200; i >= 0; --i) {
      for (int k = 0; k < 2; ++k)
        if (auto ok =
                tx.AddJobEvent({3 * i + 2, 100 + k, k ? "started" : "queued",
                                "event " + std::to_string(k) + " of job " + std::to_string(i)});
            !ok)
          return ok;
      if (auto ok = tx.PutRun({3 * i + 2, 1, "research", 8, 50 + i, std::nullopt}); !ok) return ok;
    }
    return {};
  });
  ASSERT_TRUE(filled) << filled.error().ToString();
  auto source = ReadContents(*sqlite);
  ASSERT_TRUE(source);
  ASSERT_EQ(source->events.size(), 2402u);
  EXPECT_EQ(source->events[0].reason, "event 0 of job 0");
  EXPECT_EQ(source->events[1].reason, "event 1 of job 0");

  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto postgres = Must(OpenPgStore(pg.Conninfo()));
  ASSERT_TRUE(postgres);
  auto copied = CopyStore(*sqlite, *postgres);
  ASSERT_TRUE(copied) << copied.error().ToString();
  auto on_pg = ReadContents(*postgres);
  ASSERT_TRUE(on_pg) << on_pg.error().ToString();
  EXPECT_EQ(FirstDifference(*source, *on_pg), "");
  EXPECT_EQ(*on_pg, *source);
  auto next = postgres->InsertJob(FullJob());
  ASSERT_TRUE(next);
  EXPECT_EQ(*next, 3 * 1200 + 3);
}

// PutRuns is PutRun on each in turn, also where a run comes twice (one statement cannot update a
// row twice): the later values stand.
TEST(StoreCopy, PutRunsOfTheSameRunTwiceKeepsTheLater) {
  PgTestServer pg;
  ASSERT_EQ(pg.error(), "");
  auto postgres = Must(OpenPgStore(pg.Conninfo()));
  ASSERT_TRUE(postgres);
  auto id = postgres->InsertJob(FullJob());
  ASSERT_TRUE(id);
  auto ok = postgres->Transaction([&](Store& tx) -> Result<void> {
    return tx.PutRuns({{*id, 1, "a", 8, 10, std::nullopt},
                       {*id, 2, "a", 8, 20, std::nullopt},
                       {*id, 1, "a", 8, 10, 15}});
  });
  ASSERT_TRUE(ok) << ok.error().ToString();
  auto runs = postgres->RunsSince(std::numeric_limits<int64_t>::min());
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].ended_at, std::optional<int64_t>(15));
  EXPECT_EQ((*runs)[1].started_at, 20);
}

// A restored id is refused where it could not be the job's own: zero, or one already taken.
TEST(StoreCopy, RestoreJobRefusesAnIdItCannotKeep) {
  TestDir dir;
  auto sqlite = Must(OpenSqliteStore(dir.File("hg.db")));
  ASSERT_TRUE(sqlite);
  JobRecord j = FullJob();
  j.id = 0;
  auto zero = sqlite->RestoreJob(j);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().field, "id");
  j.id = 5;
  ASSERT_TRUE(sqlite->RestoreJob(j));
  EXPECT_FALSE(sqlite->RestoreJob(j));
  auto jobs = sqlite->Jobs();
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ(jobs->front().id, 5);
}

}  // namespace
}  // namespace hg::store
