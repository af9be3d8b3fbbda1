// Ended jobs leave the server's memory StateOptions::keep_ended_s after their end (checked
// hourly, and at start they are not loaded) and stay in the store: their views, events, the
// history lists and idempotency keys are read from there. In process, on a real store (SQLite,
// or PostgreSQL under HOURGLASS_TEST_STORE=postgresql); a server that runs for years holds what
// is active.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/state_test_loop.h"

namespace hg::server {
namespace {

using nlohmann::json;
using testing::kAdmin;
using testing::Loop;

const json kBody = {{"gpus", 1}, {"command", {"sleep", "1"}}};

Reply<State::Submitted> SubmitKeyed(Loop& l, const json& body, const std::string& key) {
  auto rec = ParseJobRequest(body);
  EXPECT_TRUE(rec) << rec.error().reason;
  rec->submit_key = key;
  return l.state().Submit(kAdmin, *rec);
}

// The ids of a list, and its total.
std::pair<std::vector<int64_t>, int64_t> List(Loop& l, const std::string& state, int64_t limit = 0,
                                              int64_t before = 0) {
  auto list = l.state().JobsJson(kAdmin, state, "", limit, false, before);
  EXPECT_TRUE(list);
  std::vector<int64_t> ids;
  if (!list) return {ids, -1};
  for (const json& j : (*list)["jobs"]) ids.push_back(j["id"].get<int64_t>());
  return {ids, (*list)["total"].get<int64_t>()};
}

// The server's gauge of the jobs it holds in memory.
int64_t InMemory(Loop& l) {
  const std::string text = l.state().MetricsText();
  const std::string key = "\nhourglass_jobs_in_memory ";
  const size_t at = text.find(key);
  EXPECT_NE(at, std::string::npos) << text;
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + key.size()));
}

TEST(KeepEnded, EndedJobsLeaveMemoryAfterTheKeepAndAreStillReadFromTheStore) {
  Loop l(2, 0, 86400, 1.0, 0, [](StateOptions& o) { o.keep_ended_s = 3600; });
  l.At(0);
  l.Tick();
  auto first = SubmitKeyed(l, kBody, "k1");
  ASSERT_TRUE(first) << first.error().reason;
  const int64_t old_job = first->id;
  l.At(10);
  ASSERT_TRUE(l.state().Cancel(kAdmin, old_job));
  l.At(3000);
  const int64_t recent = l.Submit(kBody);
  ASSERT_TRUE(l.state().Cancel(kAdmin, recent));
  const int64_t waiting = l.Submit(kBody);  // stays in the system throughout
  EXPECT_EQ(InMemory(l), 3);

  // An hour after the first ended it leaves memory; the other one stays.
  l.At(3700);
  l.Tick();
  EXPECT_EQ(InMemory(l), 2);
  // The history lists come from the store, which keeps them all: newest first, in pages.
  using Ids = std::vector<int64_t>;
  EXPECT_EQ(List(l, "done"), std::make_pair(Ids{recent, old_job}, int64_t{2}));
  EXPECT_EQ(List(l, "all"), std::make_pair(Ids{waiting, recent, old_job}, int64_t{3}));
  EXPECT_EQ(List(l, "all", 2), std::make_pair(Ids{waiting, recent}, int64_t{3}));
  EXPECT_EQ(List(l, "all", 2, recent), std::make_pair(Ids{old_job}, int64_t{1}));
  EXPECT_EQ(List(l, ""), std::make_pair(Ids{waiting}, int64_t{1}));
  // By id it is still there, with its events, for its user only.
  auto view = l.state().JobJson(kAdmin, old_job);
  ASSERT_TRUE(view) << view.error().reason;
  EXPECT_EQ((*view)["state"], "cancelled");
  EXPECT_EQ((*view)["ended_at"], 1000010);
  auto events = l.state().JobEventsJson(kAdmin, old_job);
  ASSERT_TRUE(events) << events.error().reason;
  EXPECT_EQ((*events)["events"].back()["kind"], "cancelled");
  auto other = l.state().JobJson(store::PrincipalRecord{"alice", "user"}, old_job);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().status, 403);
  auto again = l.state().Cancel(kAdmin, old_job);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().status, 409);
  auto none = l.state().JobJson(kAdmin, recent + 100);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().status, 404);
  // A retried submission under its key finds it, and a new request under the key is refused,
  // as while it was in memory.
  auto retried = SubmitKeyed(l, kBody, "k1");
  ASSERT_TRUE(retried) << retried.error().reason;
  EXPECT_TRUE(retried->replayed);
  EXPECT_EQ(retried->id, old_job);
  EXPECT_EQ(retried->state, "cancelled");
  auto reused = SubmitKeyed(l, json{{"gpus", 2}, {"command", {"sleep", "1"}}}, "k1");
  ASSERT_FALSE(reused);
  EXPECT_EQ(reused.error().status, 409);
  EXPECT_EQ(reused.error().field, "Idempotency-Key");

  // Memory is looked at hourly: the second job goes at the first look after its hour.
  l.At(6700);
  l.Tick();
  EXPECT_EQ(InMemory(l), 2);
  l.At(7300);
  l.Tick();
  EXPECT_EQ(InMemory(l), 1);

  // A restart keeps to the same rule, and finds both by id and in the history.
  l.Restart();
  l.Tick();
  EXPECT_EQ(InMemory(l), 1);
  EXPECT_EQ(List(l, "all"), std::make_pair(Ids{waiting, recent, old_job}, int64_t{3}));
  EXPECT_EQ(l.StateOf(old_job), "cancelled");
  EXPECT_EQ(l.StateOf(recent), "cancelled");
  const int64_t next = l.Submit(kBody);
  EXPECT_GT(next, waiting);
  EXPECT_EQ(l.StateOf(next), "pending");
}

// A retry answers as the first attempt did even when its checks would now refuse it (here its
// budget is gone), as while the first job was in memory; the store is read on that path too.
TEST(KeepEnded, ARetryOfAJobThatLeftMemoryAnswersAsItsFirstAttemptAfterItsBudgetWentAway) {
  Loop l(2, 0, 86400, 1.0, 0, [](StateOptions& o) { o.keep_ended_s = 3600; });
  l.At(0);
  l.Tick();
  const json body = {{"gpus", 1}, {"budget", "b"}, {"command", {"sleep", "1"}}};
  auto first = SubmitKeyed(l, body, "k1");
  ASSERT_TRUE(first) << first.error().reason;
  l.At(10);
  ASSERT_TRUE(l.state().Cancel(kAdmin, first->id));
  l.At(3700);
  l.Tick();
  ASSERT_EQ(InMemory(l), 0);
  ASSERT_TRUE(l.state().DeleteBudget(kAdmin, "b"));

  auto retried = SubmitKeyed(l, body, "k1");
  ASSERT_TRUE(retried) << retried.error().reason;
  EXPECT_TRUE(retried->replayed);
  EXPECT_EQ(retried->id, first->id);
  EXPECT_EQ(retried->state, "cancelled");
  // A new key gets the check's refusal, naming the field.
  auto fresh = SubmitKeyed(l, body, "k2");
  ASSERT_FALSE(fresh);
  EXPECT_EQ(fresh.error().status, 400);
  EXPECT_EQ(fresh.error().field, "budget");
  // The key of a job still in memory is answered from memory.
  auto kept = SubmitKeyed(l, kBody, "k3");
  ASSERT_TRUE(kept) << kept.error().reason;
  auto again = SubmitKeyed(l, kBody, "k3");
  ASSERT_TRUE(again) << again.error().reason;
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->id, kept->id);
  EXPECT_EQ(InMemory(l), 1);
}

}  // namespace
}  // namespace hg::server
