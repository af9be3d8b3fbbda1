// Ended jobs leave the server's memory StateOptions::keep_ended_s after their end (checked
// hourly, and at start they are not loaded) and stay in the store: their views, events and
// idempotency keys are read from there. In process, on a real store (SQLite, or PostgreSQL under
// HOURGLASS_TEST_STORE=postgresql); a server that runs for years holds what is active.
#include <gtest/gtest.h>

#include <string>

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

std::vector<int64_t> Done(Loop& l) {
  auto list = l.state().JobsJson(kAdmin, "done", "", 0, true);
  EXPECT_TRUE(list);
  std::vector<int64_t> ids;
  for (const json& j : (*list)["jobs"]) ids.push_back(j["id"].get<int64_t>());
  EXPECT_EQ((*list)["total"].get<size_t>(), ids.size());
  return ids;
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
  EXPECT_EQ(Done(l), (std::vector<int64_t>{old_job, recent}));

  // An hour after the first ended it is listed no more; the other one is.
  l.At(3700);
  l.Tick();
  EXPECT_EQ(Done(l), (std::vector<int64_t>{recent}));
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
  EXPECT_EQ(Done(l), (std::vector<int64_t>{recent}));
  l.At(7300);
  l.Tick();
  EXPECT_EQ(Done(l), (std::vector<int64_t>{}));

  // A restart keeps to the same rule, and finds both by id.
  l.Restart();
  l.Tick();
  EXPECT_EQ(Done(l), (std::vector<int64_t>{}));
  EXPECT_EQ(l.StateOf(old_job), "cancelled");
  EXPECT_EQ(l.StateOf(recent), "cancelled");
  const int64_t next = l.Submit(kBody);
  EXPECT_GT(next, recent);
  EXPECT_EQ(l.StateOf(next), "pending");
}

}  // namespace
}  // namespace hg::server
