// What every Store must do, run against each implementation: the embedded SQLite store on a
// file, and the PostgreSQL store on a real server of the test's own (pg_test_server.h). "Open"
// opens the same database again, so a test can close a store and read what it left.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <memory>
#include <thread>

#include "store/pg_store.h"
#include "store/pg_test_server.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"
#include "store/test_dir.h"

namespace hg::store {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") {
      pg_ = std::make_unique<PgTestServer>();
      ASSERT_EQ(pg_->error(), "");
    }
  }
  // Opens (again) this test's database.
  std::unique_ptr<Store> Open() {
    auto s = GetParam() == "postgresql" ? OpenPgStore(pg_->Conninfo())
                                        : OpenSqliteStore(dir_.File("hg.db"));
    EXPECT_TRUE(s) << s.error().ToString();
    return s ? std::move(*s) : nullptr;
  }

 private:
  TestDir dir_;
  std::unique_ptr<PgTestServer> pg_;
};

TEST_P(StoreContract, PrincipalsAndTokensRoundTrip) {
  auto s = Open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->PutPrincipal({"bob", "user"}));
  ASSERT_TRUE(s->PutPrincipal({"alice", "admin"}));
  ASSERT_TRUE(s->PutPrincipal({"bob", "agent"}));  // upsert changes the role
  auto ps = s->Principals();
  ASSERT_TRUE(ps);
  ASSERT_EQ(ps->size(), 2u);
  EXPECT_EQ((*ps)[0].name, "alice");
  EXPECT_EQ((*ps)[0].role, "admin");
  EXPECT_EQ((*ps)[1].name, "bob");
  EXPECT_EQ((*ps)[1].role, "agent");

  ASSERT_TRUE(s->AddToken({"abc123", "alice", 42}));
  auto who = s->PrincipalByTokenHash("abc123");
  ASSERT_TRUE(who);
  ASSERT_TRUE(who->has_value());
  EXPECT_EQ((*who)->name, "alice");
  EXPECT_EQ((*who)->role, "admin");
  // A later read sees a later write (no cached statement holds an old snapshot open).
  ASSERT_TRUE(s->PutPrincipal({"alice", "user"}));
  who = s->PrincipalByTokenHash("abc123");
  ASSERT_TRUE(who && who->has_value());
  EXPECT_EQ((*who)->role, "user");
  auto nobody = s->PrincipalByTokenHash("zzz");
  ASSERT_TRUE(nobody);
  EXPECT_FALSE(nobody->has_value());

  // A token for an unknown principal and a duplicate hash are refused with a reason.
  auto orphan = s->AddToken({"def", "mallory", 1});
  ASSERT_FALSE(orphan);
  EXPECT_NE(Lower(orphan.error().reason).find("foreign key"), std::string::npos)
      << orphan.error().reason;
  auto dup = s->AddToken({"abc123", "bob", 2});
  ASSERT_FALSE(dup);
  EXPECT_NE(Lower(dup.error().reason).find("unique"), std::string::npos) << dup.error().reason;
}

TEST_P(StoreContract, BudgetsAndAuditRoundTrip) {
  auto s = Open();
  ASSERT_TRUE(s);
  BudgetRecord research{"research", "", 0.7, 64, {"lead1", "lead0"}, {"m2", "m1", "m3"}};
  BudgetRecord nlp{"research/nlp", "research", 0.25, std::nullopt, {}, {"alice"}};
  ASSERT_TRUE(s->PutBudget(research, {{10, "admin", "research", "created", "", "share=0.7"}}));
  ASSERT_TRUE(s->PutBudget(nlp, {{11, "lead1", "research/nlp", "created", "", "share=0.25"}}));
  auto bs = s->Budgets();
  ASSERT_TRUE(bs);
  ASSERT_EQ(bs->size(), 2u);
  const auto& r = (*bs)[0];
  EXPECT_EQ(r.name, "research");
  EXPECT_EQ(r.parent, "");
  EXPECT_DOUBLE_EQ(r.share, 0.7);
  EXPECT_EQ(r.limit, 64);
  EXPECT_EQ(r.leads, (std::vector<std::string>{"lead1", "lead0"}));  // order as written
  EXPECT_EQ(r.members, (std::vector<std::string>{"m2", "m1", "m3"}));
  EXPECT_EQ((*bs)[1].parent, "research");
  EXPECT_EQ((*bs)[1].limit, std::nullopt);
  EXPECT_TRUE((*bs)[1].leads.empty());

  // Changing a budget replaces its lists and keeps its children (no cascade on update).
  research.share = 0.5;
  research.limit = std::nullopt;
  research.leads = {"lead2"};
  ASSERT_TRUE(s->PutBudget(research, {{12, "admin", "research", "share", "0.7", "0.5"},
                                      {12, "admin", "research", "leads", "lead1,lead0", "lead2"}}));
  bs = s->Budgets();
  ASSERT_TRUE(bs);
  ASSERT_EQ(bs->size(), 2u);
  EXPECT_DOUBLE_EQ((*bs)[0].share, 0.5);
  EXPECT_EQ((*bs)[0].limit, std::nullopt);
  EXPECT_EQ((*bs)[0].leads, (std::vector<std::string>{"lead2"}));
  EXPECT_EQ((*bs)[0].members.size(), 3u);

  ASSERT_TRUE(s->DeleteBudget("research/nlp", {13, "admin", "research/nlp", "deleted", "", ""}));
  auto missing = s->DeleteBudget("nope", {14, "admin", "nope", "deleted", "", ""});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().field, "budget");
  bs = s->Budgets();
  ASSERT_TRUE(bs);
  ASSERT_EQ(bs->size(), 1u);

  auto all = s->Audit("");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 5u);  // the refused delete wrote nothing
  EXPECT_EQ((*all)[2].field, "share");
  EXPECT_EQ((*all)[2].old_value, "0.7");
  EXPECT_EQ((*all)[2].new_value, "0.5");
  EXPECT_EQ((*all)[2].who, "admin");
  EXPECT_EQ((*all)[2].at, 12);
  auto nlp_audit = s->Audit("research/nlp");
  ASSERT_TRUE(nlp_audit);
  ASSERT_EQ(nlp_audit->size(), 2u);  // the audit outlives the deleted budget
  EXPECT_EQ((*nlp_audit)[0].field, "created");
  EXPECT_EQ((*nlp_audit)[1].field, "deleted");
}

TEST_P(StoreContract, JobsRoundTripAndUpdate) {
  int64_t id1 = 0;
  int64_t id2 = 0;
  {
    auto s = Open();
    ASSERT_TRUE(s);
    JobRecord full = FullJob();
    full.id = 999;  // ignored: the store assigns ids
    full.submit_key = "retry-7f3a";
    auto a = s->InsertJob(full);
    ASSERT_TRUE(a) << a.error().ToString();
    id1 = *a;
    EXPECT_GT(id1, 0);
    auto b = s->InsertJob(JobRecord{});  // defaults: every optional empty
    ASSERT_TRUE(b);
    id2 = *b;
    EXPECT_GT(id2, id1);

    auto got = s->Job(id1);
    ASSERT_TRUE(got);
    ASSERT_TRUE(got->has_value());
    full.id = id1;
    ExpectSameJob(**got, full);
    auto none = s->Job(id2 + 100);
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->has_value());

    // UpdateJob writes the mutable fields, and only those.
    JobRecord upd = full;
    upd.name = "renamed";  // immutable: ignored
    upd.lease_s = 60;      // immutable: ignored
    upd.state = "preempted";
    upd.reason = "funded work";
    upd.reason_code = "preempted_for_funded";
    upd.queued_since = 2000;
    upd.started_at = std::nullopt;
    upd.ended_at = std::nullopt;
    upd.attempts = 3;
    upd.exit_code = std::nullopt;
    upd.exit_signal = std::nullopt;
    upd.placement_json = "[]";
    upd.active_at = std::nullopt;  // a new run starts without activity
    upd.stop_for = 0;              // no longer stopping for anyone
    upd.stop_holds = false;
    ASSERT_TRUE(s->UpdateJob(upd));
    upd.name = full.name;
    upd.lease_s = full.lease_s;
    got = s->Job(id1);
    ASSERT_TRUE(got && got->has_value());
    ExpectSameJob(**got, upd);

    JobRecord ghost;
    ghost.id = 12345;
    auto refused = s->UpdateJob(ghost);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().field, "job");
  }
  // Everything survives closing and re-opening.
  auto s = Open();
  ASSERT_TRUE(s);
  auto jobs = s->Jobs();
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, id1);
  EXPECT_EQ((*jobs)[0].state, "preempted");
  EXPECT_EQ((*jobs)[0].command, FullJob().command);
  EXPECT_EQ((*jobs)[1].id, id2);
  JobRecord defaults;
  defaults.id = id2;
  ExpectSameJob((*jobs)[1], defaults);
  auto c = s->InsertJob(JobRecord{});
  ASSERT_TRUE(c);
  EXPECT_GT(*c, id2);
}

// What a server loads at start: every job still in the system, and the ended ones from a time
// on; the older ones stay, read by id and by their idempotency key, also inside a transaction.
TEST_P(StoreContract, LiveJobsAreThoseNotEndedOrEndedSinceAndOldOnesAreReadByIdKeyOrPage) {
  auto s = Open();
  ASSERT_TRUE(s);
  std::map<std::string, int64_t> id;
  auto add = [&](const std::string& name, const std::string& state, std::optional<int64_t> ended,
                 const std::string& key) {
    JobRecord j = FullJob();
    j.name = name;
    j.submit_key = key;
    auto a = s->InsertJob(j);
    ASSERT_TRUE(a) << a.error().ToString();
    j.id = *a;
    j.state = state;
    j.ended_at = ended;
    ASSERT_TRUE(s->UpdateJob(j));
    id[name] = *a;
  };
  add("old-done", "succeeded", 1000, "k-old");
  add("pending", "pending", std::nullopt, "");
  add("requeued", "pending", 900, "");  // ended_at of an attempt before its requeue
  add("running", "running", std::nullopt, "k-run");
  add("stopping", "stopping", std::nullopt, "");
  add("edge", "failed", 5000, "");
  add("recent", "cancelled", 7000, "");
  auto names = [&](const Result<std::vector<JobRecord>>& jobs) {
    std::vector<std::string> out;
    for (const JobRecord& j : *jobs) out.push_back(j.name);
    return out;
  };
  const std::vector<std::string> live{"pending",  "requeued", "running",
                                      "stopping", "edge",     "recent"};
  auto got = s->LiveJobs(5000);
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(names(got), live);
  got = s->LiveJobs(5001);
  ASSERT_TRUE(got);
  EXPECT_EQ(names(got),
            (std::vector<std::string>{"pending", "requeued", "running", "stopping", "recent"}));
  auto by_key = s->JobBySubmitKey("alice", "k-old");
  ASSERT_TRUE(by_key) << by_key.error().ToString();
  ASSERT_TRUE(by_key->has_value());
  EXPECT_EQ((*by_key)->id, id["old-done"]);
  EXPECT_EQ((*by_key)->state, "succeeded");
  for (auto [user, key] : std::vector<std::pair<std::string, std::string>>{
           {"bob", "k-old"}, {"alice", "k-none"}, {"alice", ""}}) {
    auto none = s->JobBySubmitKey(user, key);
    ASSERT_TRUE(none) << none.error().ToString();
    EXPECT_FALSE(none->has_value()) << user << " " << key;
  }
  // The history: ended jobs by user, newest first by default, in pages below an id.
  auto ended_names = [&](const Result<Store::EndedPage>& page) {
    std::vector<std::string> out;
    for (const JobRecord& j : page->jobs) out.push_back(j.name);
    return out;
  };
  auto all = s->EndedJobs("", 0, 0, false);
  ASSERT_TRUE(all) << all.error().ToString();
  EXPECT_EQ(ended_names(all), (std::vector<std::string>{"recent", "edge", "old-done"}));
  EXPECT_EQ(all->total, 3);
  auto page = s->EndedJobs("alice", 0, 2, false);
  ASSERT_TRUE(page);
  EXPECT_EQ(ended_names(page), (std::vector<std::string>{"recent", "edge"}));
  EXPECT_EQ(page->total, 3);
  page = s->EndedJobs("alice", id["edge"], 2, false);
  ASSERT_TRUE(page);
  EXPECT_EQ(ended_names(page), (std::vector<std::string>{"old-done"}));
  EXPECT_EQ(page->total, 1);
  page = s->EndedJobs("", 0, 2, true);
  ASSERT_TRUE(page);
  EXPECT_EQ(ended_names(page), (std::vector<std::string>{"old-done", "edge"}));
  page = s->EndedJobs("bob", 0, 0, false);
  ASSERT_TRUE(page);
  EXPECT_TRUE(page->jobs.empty());
  EXPECT_EQ(page->total, 0);
  auto in_tx = s->Transaction([&](Store& t) -> Result<void> {
    auto ended_tx = t.EndedJobs("alice", 0, 1, true);
    if (!ended_tx) return tl::unexpected(ended_tx.error());
    EXPECT_EQ(ended_names(ended_tx), (std::vector<std::string>{"old-done"}));
    EXPECT_EQ(ended_tx->total, 3);
    auto live_tx = t.LiveJobs(5000);
    if (!live_tx) return tl::unexpected(live_tx.error());
    EXPECT_EQ(names(live_tx), live);
    auto key_tx = t.JobBySubmitKey("alice", "k-run");
    if (!key_tx) return tl::unexpected(key_tx.error());
    EXPECT_TRUE(key_tx->has_value() && (*key_tx)->id == id["running"]);
    return {};
  });
  EXPECT_TRUE(in_tx) << in_tx.error().ToString();
}

// A session's activity is written alone (the rest of the row as it was), also inside a
// transaction, and read back after closing and reopening; an unknown job is refused.
TEST_P(StoreContract, ActivityIsRecordedAloneAndSurvivesReopening) {
  JobRecord want = FullJob();
  want.active_at.reset();
  {
    auto s = Open();
    ASSERT_TRUE(s);
    auto id = s->InsertJob(want);
    ASSERT_TRUE(id) << id.error().ToString();
    want.id = *id;
    auto got = s->Job(want.id);
    ASSERT_TRUE(got && got->has_value());
    EXPECT_FALSE((*got)->active_at.has_value());
    ASSERT_TRUE(s->SetActivity(want.id, 4000));
    want.active_at = 4000;
    got = s->Job(want.id);
    ASSERT_TRUE(got && got->has_value());
    ExpectSameJob(**got, want);
    auto tx = s->Transaction([&](Store& t) { return t.SetActivity(want.id, 4100); });
    ASSERT_TRUE(tx) << tx.error().ToString();
    want.active_at = 4100;
    auto refused = s->SetActivity(want.id + 1, 4200);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().field, "job");
    EXPECT_NE(refused.error().reason.find(std::to_string(want.id + 1)), std::string::npos)
        << refused.error().reason;
  }
  auto s = Open();
  ASSERT_TRUE(s);
  auto jobs = s->Jobs();
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 1u);
  ExpectSameJob((*jobs)[0], want);
}

TEST_P(StoreContract, InvalidUtf8IsRefusedNotThrown) {
  auto s = Open();
  ASSERT_TRUE(s);
  JobRecord j;
  j.command = {"echo", std::string("\xff\xfe")};
  auto r = s->InsertJob(j);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "command");
  auto jobs = s->Jobs();
  ASSERT_TRUE(jobs);
  EXPECT_TRUE(jobs->empty());
}

TEST_P(StoreContract, EventsRunsAndNodesRoundTrip) {
  auto s = Open();
  ASSERT_TRUE(s);
  auto j1 = s->InsertJob(FullJob());
  auto j2 = s->InsertJob(FullJob());
  ASSERT_TRUE(j1 && j2);
  ASSERT_TRUE(s->AddJobEvent({*j1, 5, "submitted", ""}));
  ASSERT_TRUE(s->AddJobEvent({*j2, 6, "submitted", ""}));
  ASSERT_TRUE(s->AddJobEvent({*j1, 7, "started", "on n1"}));
  auto ev = s->JobEvents(*j1);
  ASSERT_TRUE(ev);
  ASSERT_EQ(ev->size(), 2u);
  EXPECT_EQ((*ev)[0].kind, "submitted");
  EXPECT_EQ((*ev)[1].kind, "started");
  EXPECT_EQ((*ev)[1].reason, "on n1");
  EXPECT_EQ((*ev)[1].at, 7);
  EXPECT_EQ((*ev)[1].job, *j1);
  EXPECT_FALSE(s->AddJobEvent({*j2 + 50, 8, "started", ""}));  // unknown job
  // All of them: by job, then as added; the same inside a transaction.
  for (bool in_tx : {false, true}) {
    Result<std::vector<JobEventRecord>> all;
    if (in_tx) {
      ASSERT_TRUE(s->Transaction([&](Store& tx) -> Result<void> {
        all = tx.AllJobEvents();
        return {};
      }));
    } else {
      all = s->AllJobEvents();
    }
    ASSERT_TRUE(all);
    std::vector<std::pair<int64_t, int64_t>> order;
    for (const JobEventRecord& e : *all) order.push_back({e.job, e.at});
    EXPECT_EQ(order, (std::vector<std::pair<int64_t, int64_t>>{{*j1, 5}, {*j1, 7}, {*j2, 6}}))
        << "in a transaction: " << in_tx;
  }

  ASSERT_TRUE(s->PutRun({*j1, 1, "research", 8, 100, 200}));
  ASSERT_TRUE(s->PutRun({*j1, 2, "research", 8, 300, std::nullopt}));
  ASSERT_TRUE(s->PutRun({*j2, 1, "", 4, 50, 90}));
  auto runs = s->RunsSince(150);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 2u);  // (j2,1) ended before 150
  EXPECT_EQ((*runs)[0].attempt, 1);
  EXPECT_EQ((*runs)[0].ended_at, 200);
  EXPECT_EQ((*runs)[1].attempt, 2);
  EXPECT_EQ((*runs)[1].ended_at, std::nullopt);
  // Updating a run by (job, attempt): it ends.
  ASSERT_TRUE(s->PutRun({*j1, 2, "research", 8, 300, 400}));
  runs = s->RunsSince(0);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[1].ended_at, 400);
  EXPECT_EQ((*runs)[2].job, *j2);
  EXPECT_EQ((*runs)[2].budget, "");
  EXPECT_EQ((*runs)[2].gpus, 4);
  EXPECT_EQ((*runs)[2].started_at, 50);
  runs = s->RunsSince(401);
  ASSERT_TRUE(runs);
  EXPECT_TRUE(runs->empty());

  NodeRecord n;
  n.name = "n2";
  n.gpus = 8;
  n.block = "b1";
  n.labels = {{"block", "b1"}, {"gpu", "h100"}};
  n.logs_url = "http://n2:9000";
  ASSERT_TRUE(s->PutNode(n));
  NodeRecord m;
  m.name = "n1";
  m.gpus = 4;
  ASSERT_TRUE(s->PutNode(m));
  n.state = "draining";
  n.drain_cause = "health";
  n.drain_reason = "ecc errors";
  n.drain_deadline_at = 999;
  n.drain_since = 900;
  ASSERT_TRUE(s->PutNode(n));
  auto nodes = s->Nodes();
  ASSERT_TRUE(nodes);
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "n1");
  EXPECT_EQ((*nodes)[0].state, "ready");
  EXPECT_EQ((*nodes)[0].drain_deadline_at, std::nullopt);
  const auto& got = (*nodes)[1];
  EXPECT_EQ(got.gpus, 8);
  EXPECT_EQ(got.block, "b1");
  EXPECT_EQ(got.labels, n.labels);
  EXPECT_EQ(got.state, "draining");
  EXPECT_EQ(got.drain_cause, "health");
  EXPECT_EQ(got.drain_reason, "ecc errors");
  EXPECT_EQ(got.drain_deadline_at, 999);
  EXPECT_EQ(got.drain_since, 900);
  EXPECT_EQ(got.logs_url, "http://n2:9000");
}

// Stops between budgets come back in the order they were added, from a time on; pruning drops
// those before a time; in a transaction that fails, none is kept; and they outlive a reopening.
TEST_P(StoreContract, RecentStopsAreReadFromATimeAndPrunedBeforeOne) {
  auto at_budgets = [](const std::vector<RecentStopRecord>& v) {
    std::vector<std::string> out;
    for (const RecentStopRecord& r : v)
      out.push_back(std::to_string(r.at) + " " + r.budget + ">" + r.for_budget);
    return out;
  };
  {
    auto s = Open();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->AddRecentStop({100, "a", "b"}));
    ASSERT_TRUE(s->AddRecentStop({200, "b", "a"}));
    ASSERT_TRUE(s->AddRecentStop({200, "a", "c"}));  // the same second: kept in the order added
    ASSERT_TRUE(s->AddRecentStop({300, "c", "b"}));
    auto since = s->RecentStopsSince(200);
    ASSERT_TRUE(since);
    EXPECT_EQ(at_budgets(*since), std::vector<std::string>({"200 b>a", "200 a>c", "300 c>b"}));
    auto r = s->Transaction([&](Store& tx) -> Result<void> {
      if (auto ok = tx.AddRecentStop({400, "a", "b"}); !ok) return ok;
      return Fail("test", "changed my mind");
    });
    ASSERT_FALSE(r);
    ASSERT_TRUE(s->PruneRecentStops(200));
  }
  auto s = Open();
  ASSERT_TRUE(s);
  auto all = s->RecentStopsSince(0);
  ASSERT_TRUE(all);
  EXPECT_EQ(at_budgets(*all), std::vector<std::string>({"200 b>a", "200 a>c", "300 c>b"}));
}

TEST_P(StoreContract, TransactionIsAllOrNothing) {
  auto s = Open();
  ASSERT_TRUE(s);
  auto base = s->InsertJob(FullJob());
  ASSERT_TRUE(base);

  // A body that returns an error after writing: nothing it wrote remains.
  int64_t inner_id = 0;
  auto r = s->Transaction([&](Store& tx) -> Result<void> {
    auto id = tx.InsertJob(FullJob());
    if (!id) return tl::unexpected(id.error());
    inner_id = *id;
    JobRecord upd = FullJob();
    upd.id = *base;
    upd.state = "cancelled";
    if (auto ok = tx.UpdateJob(upd); !ok) return ok;
    if (auto ok = tx.AddJobEvent({*id, 1, "submitted", ""}); !ok) return ok;
    return Fail("test", "changed my mind");
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, "changed my mind");
  EXPECT_GT(inner_id, *base);
  auto jobs = s->Jobs();
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].state, "running");  // the update was undone too
  auto ev = s->JobEvents(inner_id);
  ASSERT_TRUE(ev);
  EXPECT_TRUE(ev->empty());

  // A body whose SQL fails half-way (event for an unknown job): same.
  r = s->Transaction([&](Store& tx) -> Result<void> {
    if (auto ok = tx.PutNode({"n9", 8, "", {}, "ready", "", "", std::nullopt, 0, ""}); !ok) {
      return ok;
    }
    return tx.AddJobEvent({424242, 1, "started", ""});
  });
  ASSERT_FALSE(r);
  auto nodes = s->Nodes();
  ASSERT_TRUE(nodes);
  EXPECT_TRUE(nodes->empty());

  // A body that succeeds commits everything, and reads inside it see its own writes.
  int64_t committed = 0;
  r = s->Transaction([&](Store& tx) -> Result<void> {
    auto id = tx.InsertJob(FullJob());
    if (!id) return tl::unexpected(id.error());
    committed = *id;
    auto seen = tx.Job(*id);
    if (!seen || !seen->has_value()) return Fail("test", "own write not visible");
    if (auto ok = tx.AddJobEvent({*id, 2, "submitted", "in tx"}); !ok) return ok;
    // A nested transaction that fails is undone alone.
    auto nested = tx.Transaction([&](Store& inner) -> Result<void> {
      if (auto ok = inner.AddJobEvent({*id, 3, "nested", ""}); !ok) return ok;
      return Fail("test", "nested fails");
    });
    if (nested) return Fail("test", "nested should have failed");
    return tx.PutRun({*id, 1, "", 2, 10, std::nullopt});
  });
  ASSERT_TRUE(r) << r.error().ToString();
  // A rolled-back insert's id was never acknowledged, so a store may hand it out again; ids of
  // committed rows are never reused, which is what callers can observe.
  EXPECT_GT(committed, *base);
  ev = s->JobEvents(committed);
  ASSERT_TRUE(ev);
  ASSERT_EQ(ev->size(), 1u);
  EXPECT_EQ((*ev)[0].reason, "in tx");
  auto runs = s->RunsSince(0);
  ASSERT_TRUE(runs);
  EXPECT_EQ(runs->size(), 1u);
}

TEST_P(StoreContract, ConcurrentInsertsAllPresentWithUniqueIds) {
  constexpr int kThreads = 64;
  constexpr int kPerThread = 40;
  std::vector<std::vector<int64_t>> ids(kThreads);
  {
    auto s = Open();
    ASSERT_TRUE(s);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          JobRecord j;
          j.name = "t" + std::to_string(t) + "-" + std::to_string(i);
          auto id = s->InsertJob(j);
          ASSERT_TRUE(id) << id.error().ToString();
          ids[static_cast<size_t>(t)].push_back(*id);
        }
      });
    }
    for (auto& t : threads) t.join();
    if (auto* sqlite = dynamic_cast<SqliteStore*>(s.get())) {
      // 64 writers and one fsync at a time: the writer's batches must have formed.
      EXPECT_GT(sqlite->Stats().largest_batch, 1);
      EXPECT_LT(sqlite->Stats().batches, kThreads * kPerThread);
    }
  }
  auto s = Open();
  ASSERT_TRUE(s);
  auto jobs = s->Jobs();
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), static_cast<size_t>(kThreads * kPerThread));
  std::map<int64_t, std::string> by_id;
  for (const auto& j : *jobs) by_id[j.id] = j.name;
  EXPECT_EQ(by_id.size(), jobs->size());
  for (int t = 0; t < kThreads; ++t) {
    const auto& mine = ids[static_cast<size_t>(t)];
    ASSERT_EQ(mine.size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) {
      const int64_t id = mine[static_cast<size_t>(i)];
      if (i > 0) {
        EXPECT_GT(id, mine[static_cast<size_t>(i - 1)]);  // later call, larger id
      }
      EXPECT_EQ(by_id[id], "t" + std::to_string(t) + "-" + std::to_string(i));
    }
  }
}

TEST_P(StoreContract, ReadsRunBesideWrites) {
  auto s = Open();
  ASSERT_TRUE(s);
  std::atomic<bool> in_body{false};
  std::atomic<bool> release{false};
  std::thread holder([&] {
    auto r = s->Transaction([&](Store& tx) -> Result<void> {
      if (auto id = tx.InsertJob(FullJob()); !id) return tl::unexpected(id.error());
      in_body = true;
      while (!release.load()) std::this_thread::yield();
      return {};
    });
    EXPECT_TRUE(r);
  });
  ASSERT_TRUE(WaitFor([&] { return in_body.load(); }));
  // The writer holds an open transaction with an insert: a read completes beside it and sees
  // only what was committed.
  auto jobs = s->Jobs();
  ASSERT_TRUE(jobs) << jobs.error().ToString();
  EXPECT_TRUE(jobs->empty());
  release = true;
  holder.join();
  jobs = s->Jobs();
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->size(), 1u);
}

// An idempotency key names one submission of one user: a second job of the same user with the
// same key is refused (the server's guard when two retries race), another user's is not, and
// jobs without a key are never in each other's way.
TEST_P(StoreContract, ASubmitKeyIsUniquePerUser) {
  auto s = Open();
  ASSERT_TRUE(s);
  JobRecord a = FullJob();
  a.submit_key = "k1";
  ASSERT_TRUE(s->InsertJob(a));
  auto again = s->InsertJob(a);
  ASSERT_FALSE(again);
  EXPECT_NE(Lower(again.error().reason).find("unique"), std::string::npos) << again.error().reason;
  JobRecord other_user = a;
  other_user.user = "bob";
  ASSERT_TRUE(s->InsertJob(other_user));
  JobRecord no_key = a;
  no_key.submit_key.clear();
  ASSERT_TRUE(s->InsertJob(no_key));
  ASSERT_TRUE(s->InsertJob(no_key));
  auto jobs = s->Jobs();
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContract, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace hg::store
