// Scheduling through the API: real HTTP, real SQLite, fake agents speaking the real protocol.
#include <gtest/gtest.h>

#include <thread>

#include "server/test_harness.h"

namespace hg::server::testing {
namespace {

using nlohmann::json;

struct Cluster {
  Harness h;
  std::string agent, alice;
  std::unique_ptr<FakeAgent> n1, n2;  // n2 only with two nodes

  // Nodes n1 and n2 of `gpus` GPUs each (or n1 alone), and budget "team" with alice a member.
  explicit Cluster(ServerOptions o = {}, int gpus = 4, bool two_nodes = true) : h(std::move(o)) {
    agent = h.Principal("agent1", "agent");
    alice = h.Principal("alice", "user");
    AddBudget("team");
    n1 = std::make_unique<FakeAgent>(h, agent, "n1", gpus);
    EXPECT_EQ(n1->Register().status, 200);
    if (!two_nodes) return;
    n2 = std::make_unique<FakeAgent>(h, agent, "n2", gpus);
    EXPECT_EQ(n2->Register().status, 200);
  }
  void AddBudget(const std::string& name, double share = 1.0) {
    EXPECT_EQ(
        h.Post("/v1/budgets", h.admin(), {{"name", name}, {"share", share}, {"members", {"alice"}}})
            .status,
        201);
  }
  int64_t Submit(const json& body) {
    Resp r = h.Post("/v1/jobs", alice, body);
    EXPECT_EQ(r.status, 201) << r.text;
    return r.body.value("id", int64_t{0});
  }
  json Job(int64_t id) { return h.Get("/v1/jobs/" + std::to_string(id), alice).body; }
  // Heartbeats from both nodes until `cond` holds.
  bool BeatUntil(const std::function<bool()>& cond) {
    return Eventually([&] {
      n1->Beat();
      if (n2) n2->Beat();
      return cond();
    });
  }
};

TEST(Scheduling, GangStartsOnTwoNodesWithRanks) {
  Cluster c;
  const int64_t id =
      c.Submit({{"name", "gang"}, {"gpus", 8}, {"gpus_per_node", 4}, {"command", {"true"}}});
  ASSERT_TRUE(c.BeatUntil([&] { return c.n1->Runs(id) && c.n2->Runs(id); }));
  const json a = *c.n1->StartOrderOf(id), b = *c.n2->StartOrderOf(id);
  EXPECT_EQ(a["num_nodes"], 2);
  EXPECT_EQ(b["num_nodes"], 2);
  EXPECT_EQ(std::set<int>({a["rank"].get<int>(), b["rank"].get<int>()}), std::set<int>({0, 1}));
  EXPECT_EQ(a["master_addr"], b["master_addr"]);
  EXPECT_EQ(a["master_port"], 29500 + id % 1000);
  EXPECT_EQ(a["gpus"], json({0, 1, 2, 3}));
  EXPECT_EQ(a["attempt"], 1);
  EXPECT_EQ(c.Job(id)["state"], "running");
  // Both parts exit 0: the job succeeded and its GPUs are free.
  c.n1->Exit(id, 0, std::nullopt);
  c.n2->Exit(id, 0, std::nullopt);
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(id)["state"] == "succeeded"; }));
  EXPECT_EQ(c.Job(id)["exit_code"], 0);
  const json nodes = c.h.Get("/v1/nodes", c.alice).body["nodes"];
  EXPECT_EQ(nodes[0]["used_gpus"], 0);
  EXPECT_EQ(nodes[1]["used_gpus"], 0);
}

TEST(Scheduling, FundedPreemptsUnfundedWhichIsRequeuedAsAttempt2) {
  Cluster c;
  const int64_t u = c.Submit({{"name", "scavenger"},
                              {"gpus", 8},
                              {"resumable", true},
                              {"grace_s", 7},
                              {"command", {"sleep", "1000"}}});
  ASSERT_TRUE(c.BeatUntil([&] { return c.n1->Runs(u) && c.n2->Runs(u); }));
  EXPECT_EQ(c.Job(u)["budget"], nullptr);
  // Funded work arrives: the unfunded job gets stop orders with its grace period and a reason.
  const int64_t f =
      c.Submit({{"name", "funded"}, {"budget", "team"}, {"gpus", 4}, {"command", {"train"}}});
  auto stop_seen = [&](FakeAgent& a) {
    for (const auto& o : a.orders())
      if (o["type"] == "stop" && o["job"] == u) return true;
    return false;
  };
  ASSERT_TRUE(c.BeatUntil([&] { return stop_seen(*c.n1) && stop_seen(*c.n2); }));
  for (const auto& o : c.n1->orders())
    if (o["type"] == "stop") {
      EXPECT_EQ(o["grace_s"], 7);
    }
  json ju = c.Job(u);
  EXPECT_EQ(ju["state"], "stopping");
  EXPECT_NE(ju["reason"].get<std::string>().find("funded job " + std::to_string(f)),
            std::string::npos)
      << ju["reason"];
  EXPECT_EQ(c.Job(f)["state"], "pending");
  // The victim leaves (SIGTERM): requeued, keeping its submission time; the funded job starts.
  c.n1->Exit(u, std::nullopt, 15);
  c.n2->Exit(u, std::nullopt, 15);
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(f)["state"] == "running"; }));
  ju = c.Job(u);
  EXPECT_EQ(ju["state"], "pending");
  EXPECT_EQ(ju["attempts"], 1);
  EXPECT_EQ(ju["queued_since"], ju["submitted_at"]);
  // The funded job ends; the requeued one comes back as attempt 2. ("running" is the server's
  // decision; the start order reaches an agent with its next heartbeat.)
  ASSERT_TRUE(c.BeatUntil([&] { return c.n1->Runs(f) || c.n2->Runs(f); }));
  FakeAgent& fn = c.n1->Runs(f) ? *c.n1 : *c.n2;
  fn.Exit(f, 0, std::nullopt);
  ASSERT_TRUE(c.BeatUntil([&] { return c.n1->Runs(u) && c.n2->Runs(u); }))
      << c.Job(u).dump() << "\n"
      << c.Job(f).dump();
  EXPECT_EQ((*c.n1->StartOrderOf(u))["attempt"], 2);
  EXPECT_EQ(c.Job(u)["attempts"], 2);
  const json ev = c.h.Get("/v1/jobs/" + std::to_string(u) + "/events", c.alice).body["events"];
  std::vector<std::string> kinds;
  for (const auto& e : ev) kinds.push_back(e["kind"]);
  EXPECT_EQ(kinds, (std::vector<std::string>{"submitted", "started", "preempting", "requeued",
                                             "started"}));
  // The preemption is counted in the metrics.
  const std::string m = c.h.Get("/metrics", "").text;
  EXPECT_NE(m.find("hourglass_preemptions_total{reason=\"preempt_for_funded\"} 1"),
            std::string::npos)
      << m;
  // The funded start is in its budget's waits (GET /v1/usage); u's, unfunded, in none.
  const json usage = c.h.Get("/v1/usage", c.alice).body["budgets"];
  bool seen = false;
  for (const json& b : usage) {
    if (b["name"] != "team") continue;
    seen = true;
    EXPECT_EQ(b["wait_s"]["batch"]["count"], 1) << b.dump();
    EXPECT_LE(b["wait_s"]["batch"]["p90"].get<int64_t>(), 60) << b.dump();
  }
  EXPECT_TRUE(seen) << usage.dump();
  // So is each start's queue wait: u's two starts (the second from its requeue) and f's.
  EXPECT_NE(m.find("hourglass_queue_wait_seconds_count{class=\"batch\"} 3\n"), std::string::npos)
      << m;
  EXPECT_NE(m.find("hourglass_queue_wait_seconds_bucket{class=\"batch\",le=\"+Inf\"} 3\n"),
            std::string::npos)
      << m;
}

TEST(Scheduling, NonResumableVictimEndsPreemptedAndCancelStopsWithGrace) {
  Cluster c;
  const int64_t u = c.Submit({{"gpus", 4}, {"gpus_per_node", 4}, {"command", {"x"}}});
  const int64_t v = c.Submit({{"gpus", 4}, {"gpus_per_node", 4}, {"command", {"x"}}});
  ASSERT_TRUE(c.BeatUntil(
      [&] { return (c.n1->Runs(u) || c.n2->Runs(u)) && (c.n1->Runs(v) || c.n2->Runs(v)); }));
  // Cancel v: a stop order, then "cancelled" once the agent reports the exit.
  ASSERT_EQ(c.h.Post("/v1/jobs/" + std::to_string(v) + "/cancel", c.alice, json::object()).status,
            200);
  FakeAgent& vn = c.n1->Runs(v) ? *c.n1 : *c.n2;
  ASSERT_TRUE(c.BeatUntil([&] {
    for (const auto& o : vn.orders())
      if (o["type"] == "stop" && o["job"] == v) return true;
    return false;
  }));
  vn.Exit(v, std::nullopt, 15);
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(v)["state"] == "cancelled"; }));
  // Funded work takes u's node: u is not resumable, so it ends preempted.
  const int64_t f =
      c.Submit({{"budget", "team"}, {"gpus", 8}, {"gpus_per_node", 4}, {"command", {"y"}}});
  FakeAgent& un = c.n1->Runs(u) ? *c.n1 : *c.n2;
  ASSERT_TRUE(c.BeatUntil([&] {
    for (const auto& o : un.orders())
      if (o["type"] == "stop" && o["job"] == u) return true;
    return false;
  }));
  un.Exit(u, std::nullopt, 15);
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(u)["state"] == "preempted"; }));
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(f)["state"] == "running"; }));
  // Cancelling an ended job is refused and changes nothing.
  const Resp again = c.h.Post("/v1/jobs/" + std::to_string(u) + "/cancel", c.alice, json::object());
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(c.Job(u)["state"], "preempted");
}

TEST(Scheduling, HealthDrainStopsUnfundedAndUndrainRestores) {
  Cluster c;
  const int64_t u = c.Submit({{"gpus", 4}, {"gpus_per_node", 4}, {"command", {"x"}}});
  ASSERT_TRUE(c.BeatUntil([&] { return c.n1->Runs(u) || c.n2->Runs(u); }));
  FakeAgent& un = c.n1->Runs(u) ? *c.n1 : *c.n2;
  const std::string node = &un == c.n1.get() ? "n1" : "n2";
  un.Beat(false);  // the health check fails
  auto node_state = [&] {
    const json nodes = c.h.Get("/v1/nodes", c.alice).body["nodes"];
    for (const auto& n : nodes)
      if (n["name"] == node) return n["state"].get<std::string>();
    return std::string();
  };
  EXPECT_EQ(node_state(), "draining");
  ASSERT_TRUE(Eventually([&] {
    un.Beat(false);
    for (const auto& o : un.orders())
      if (o["type"] == "stop" && o["job"] == u) return true;
    return false;
  }));
  un.Exit(u, std::nullopt, 15);
  ASSERT_TRUE(Eventually([&] {
    un.Beat(false);
    return node_state() == "drained";
  }));
  // Only an admin may undrain; then the node takes work again.
  EXPECT_EQ(c.h.Post("/v1/nodes/" + node + "/undrain", c.alice, json::object()).status, 403);
  EXPECT_EQ(c.h.Post("/v1/nodes/" + node + "/undrain", c.h.admin(), json::object()).status, 200);
  EXPECT_EQ(node_state(), "ready");
}

TEST(Scheduling, SilentNodeIsLostAndItsResumableJobRequeued) {
  ServerOptions o;
  o.lost_after_s = 1;
  Harness h(o);
  const std::string agent = h.Principal("agent1", "agent");
  const std::string alice = h.Principal("alice", "user");
  FakeAgent a(h, agent, "n1", 4), b(h, agent, "n2", 4);
  ASSERT_EQ(a.Register().status, 200);
  ASSERT_EQ(b.Register().status, 200);
  const Resp r =
      h.Post("/v1/jobs", alice,
             {{"gpus", 4}, {"gpus_per_node", 4}, {"resumable", true}, {"command", {"x"}}});
  ASSERT_EQ(r.status, 201);
  const int64_t id = r.body["id"];
  ASSERT_TRUE(Eventually([&] {
    a.Beat();
    b.Beat();
    return a.Runs(id) || b.Runs(id);
  }));
  FakeAgent& dead = a.Runs(id) ? a : b;
  FakeAgent& alive = a.Runs(id) ? b : a;
  // Only the other node keeps beating: the silent one turns lost, the job runs again there.
  ASSERT_TRUE(Eventually(
      [&] {
        alive.Beat();
        return alive.Runs(id);
      },
      8000));
  EXPECT_EQ((*alive.StartOrderOf(id))["attempt"], 2);
  bool lost = false;
  const json nodes = h.Get("/v1/nodes", alice).body["nodes"];
  for (const auto& n : nodes)
    if (n["state"] == "lost") lost = true;
  EXPECT_TRUE(lost);
  (void)dead;
}

TEST(Scheduling, ProtectedJobLeavesADrainOnlyAtTheOperatorsDeadline) {
  Cluster c;
  const int64_t f = c.Submit({{"budget", "team"},
                              {"gpus", 4},
                              {"gpus_per_node", 4},
                              {"min_runtime_s", 3600},
                              {"command", {"x"}}});
  ASSERT_TRUE(c.BeatUntil([&] { return c.n1->Runs(f) || c.n2->Runs(f); }));
  FakeAgent& fn = c.n1->Runs(f) ? *c.n1 : *c.n2;
  const std::string node = &fn == c.n1.get() ? "n1" : "n2";
  const json job = c.Job(f);
  // Protection counts from when the agent confirmed the start, at most a few seconds later.
  EXPECT_GE(job["protected_until"].get<int64_t>(), job["started_at"].get<int64_t>() + 3600);
  EXPECT_LE(job["protected_until"].get<int64_t>(), job["started_at"].get<int64_t>() + 3605);
  // A drain without a deadline leaves the protected job alone.
  ASSERT_EQ(c.h.Post("/v1/nodes/" + node + "/drain", c.h.admin(), {{"reason", "disk"}}).status,
            200);
  // Several cycles (every 50 ms) go by.
  (void)Eventually(
      [&] {
        c.n1->Beat();
        c.n2->Beat();
        return false;
      },
      400);
  EXPECT_EQ(c.Job(f)["state"], "running");
  // The node says when it will be empty at the latest, and what it waits for: the job's
  // protection, then its grace. The other node is not draining and says nothing.
  auto node_view = [&](const std::string& name) {
    const json nodes = c.h.Get("/v1/nodes", c.h.admin()).body["nodes"];
    for (const json& n : nodes)
      if (n["name"] == name) return n;
    return json();
  };
  const json drained = node_view(node);
  EXPECT_EQ(drained["drain_waits_for"], f) << drained.dump();
  EXPECT_EQ(drained["drain_empty_by"].get<int64_t>(),
            c.Job(f)["protected_until"].get<int64_t>() + c.Job(f)["grace_s"].get<int64_t>())
      << drained.dump();
  const json other = node_view(node == "n1" ? "n2" : "n1");
  EXPECT_TRUE(other["drain_empty_by"].is_null()) << other.dump();
  EXPECT_TRUE(other["drain_waits_for"].is_null()) << other.dump();
  // With a deadline that has passed, it is stopped, and the reason names the node.
  const int64_t now = c.Job(f)["started_at"];
  ASSERT_EQ(c.h.Post("/v1/nodes/" + node + "/drain", c.h.admin(),
                     {{"reason", "disk"}, {"deadline_at", now}})
                .status,
            200);
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(f)["state"] == "stopping"; }));
  EXPECT_NE(c.Job(f)["reason"].get<std::string>().find("node " + node + " is draining"),
            std::string::npos)
      << c.Job(f)["reason"];
  // Now the node is empty by the end of the job's grace, long before its protection ends.
  const int64_t empty_by = node_view(node)["drain_empty_by"];
  EXPECT_LE(empty_by, now + 60 + c.Job(f)["grace_s"].get<int64_t>());
  EXPECT_LT(empty_by, c.Job(f)["protected_until"].get<int64_t>());
}

TEST(Scheduling, MaxRuntimeEndsTheJobFailed) {
  Cluster c;
  const int64_t id = c.Submit({{"gpus", 1}, {"max_runtime_s", 1}, {"command", {"x"}}});
  FakeAgent* on = nullptr;
  ASSERT_TRUE(c.BeatUntil([&] {
    on = c.n1->Runs(id) ? c.n1.get() : c.n2->Runs(id) ? c.n2.get() : nullptr;
    return on != nullptr;
  }));
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(id)["state"] == "stopping"; }));
  on->Exit(id, std::nullopt, 15);
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(id)["state"] == "failed"; }));
  EXPECT_EQ(c.Job(id)["reason"], "reached its max_runtime");
}

// A job that starts on GPUs reserved for a larger one (backfill) is stopped for it once its
// protection has ended and the reservation is due, as in the simulator: the server must tell the
// policy which running jobs backfilled. Budget big (share 9) is below its share, small (share 1)
// above it, but not so far that fair share alone would move small's job to big.
TEST(Scheduling, WorkThatBackfilledAReservationIsPreemptedForIt) {
  Cluster c;
  for (const auto& [name, share] : {std::pair{"big", 9.0}, std::pair{"small", 1.0}})
    ASSERT_EQ(c.h.Post("/v1/budgets", c.h.admin(),
                       {{"name", name}, {"share", share}, {"members", {"alice"}}})
                  .status,
              201);
  FakeAgent n3(c.h, c.agent, "n3", 1);
  ASSERT_EQ(n3.Register().status, 200);
  auto beat_until = [&](const std::function<bool()>& cond) {
    return c.BeatUntil([&] {
      n3.Beat();
      return cond();
    });
  };
  // small holds n3's one GPU throughout, so it is over its share and comes after big.
  const int64_t s = c.Submit({{"budget", "small"}, {"gpus", 1}, {"command", {"sleep", "1000"}}});
  ASSERT_TRUE(beat_until([&] { return n3.Runs(s); })) << c.Job(s).dump();
  // big's first job holds a 4-GPU node for at most 4 s.
  const int64_t r = c.Submit({{"budget", "big"},
                              {"gpus", 4},
                              {"gpus_per_node", 4},
                              {"max_runtime_s", 4},
                              {"command", {"x"}}});
  FakeAgent* r_on = nullptr;
  ASSERT_TRUE(beat_until([&] {
    r_on = c.n1->Runs(r) ? c.n1.get() : c.n2->Runs(r) ? c.n2.get() : nullptr;
    return r_on != nullptr;
  }));
  FakeAgent* other = r_on == c.n1.get() ? c.n2.get() : c.n1.get();
  // big's gang needs both 4-GPU nodes: it reserves them, due when the first job must end.
  const int64_t p =
      c.Submit({{"budget", "big"}, {"gpus", 8}, {"gpus_per_node", 4}, {"command", {"train"}}});
  ASSERT_TRUE(beat_until([&] { return c.Job(p)["reason_code"] == "wait_reservation"; }))
      << c.Job(p).dump();
  // small's next job is protected for 1 s, which ends before the reservation is due: it backfills.
  const int64_t v = c.Submit({{"budget", "small"},
                              {"gpus", 4},
                              {"gpus_per_node", 4},
                              {"min_runtime_s", 1},
                              {"resumable", true},
                              {"command", {"sleep", "1000"}}});
  ASSERT_TRUE(beat_until([&] { return other->Runs(v); })) << c.Job(v).dump();
  EXPECT_EQ(c.Job(v)["reason_code"], "start_backfill");
  // The first job reaches its max_runtime and leaves; then the backfilled job is stopped for the
  // gang, with the reservation as its reason.
  ASSERT_TRUE(beat_until([&] { return c.Job(r)["state"] == "stopping"; }));
  r_on->Exit(r, std::nullopt, 15);
  ASSERT_TRUE(beat_until([&] { return c.Job(v)["state"] == "stopping"; }))
      << c.Job(v).dump() << "\n"
      << c.Job(p).dump();
  const json jv = c.Job(v);
  EXPECT_EQ(jv["reason_code"], "preempt_reservation") << jv.dump();
  EXPECT_NE(jv["reason"].get<std::string>().find(std::to_string(p)), std::string::npos) << jv;
  other->Exit(v, std::nullopt, 15);
  ASSERT_TRUE(beat_until([&] { return c.Job(p)["state"] == "running"; })) << c.Job(p).dump();
  EXPECT_EQ(c.Job(v)["state"], "pending");  // resumable: requeued
}

// The server's part of the freed-GPU hold (StopDecision::hold_for -> PendingJob::freed_for). With
// --quick-first a debug job of budget a stops b's batch job, although a is not further below its
// share (a has used more): a stop outside the fair-share order. While it stops, b's own debug job
// arrives. When the victim has gone, the first walk (debug jobs) would serve b first, being
// further below, and b's debug job would take the GPU freed for a's; the hold gives it to a's.
TEST(Scheduling, GpusFreedOutsideTheFairShareOrderGoToTheJobTheyWereFreedFor) {
  ServerOptions o;
  o.config.quick_first = true;
  Cluster c(o, 1, false);
  c.AddBudget("a");
  c.AddBudget("b");
  FakeAgent& n1 = *c.n1;
  // a uses the GPU for 4 s, so it has received more than b by the time the GPU changes hands.
  const int64_t a0 = c.Submit({{"budget", "a"}, {"gpus", 1}, {"command", {"x"}}});
  ASSERT_TRUE(c.BeatUntil([&] { return n1.Runs(a0); }));
  SystemClock clock;
  const int64_t until = clock.NowMs() + 4000;
  ASSERT_TRUE(Eventually([&] { return clock.NowMs() >= until; }, 6000));
  n1.Exit(a0, 0, std::nullopt);
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(a0)["state"] == "succeeded"; }));
  const int64_t b1 = c.Submit({{"budget", "b"},
                               {"gpus", 1},
                               {"min_runtime_s", 1},
                               {"resumable", true},
                               {"command", {"train"}}});
  ASSERT_TRUE(c.BeatUntil([&] { return n1.Runs(b1); }));
  // a's debug job stops b's batch job once its 1 s of protection is over.
  const int64_t a1 =
      c.Submit({{"budget", "a"}, {"gpus", 1}, {"class", "debug"}, {"command", {"d"}}});
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(b1)["state"] == "stopping"; })) << c.Job(b1).dump();
  const int64_t b2 =
      c.Submit({{"budget", "b"}, {"gpus", 1}, {"class", "debug"}, {"command", {"d"}}});
  n1.Exit(b1, std::nullopt, 15);
  ASSERT_TRUE(c.BeatUntil([&] { return n1.Runs(a1) || n1.Runs(b2); })) << c.Job(a1).dump() << "\n"
                                                                       << c.Job(b2).dump();
  EXPECT_TRUE(n1.Runs(a1)) << c.Job(a1).dump() << "\n" << c.Job(b2).dump();
  // Its start reason says how it got the GPU; the server reads it back into the snapshot
  // (RunningJob::took_freed), as it does for backfilled work.
  EXPECT_EQ(c.Job(a1)["reason_code"], "start_after_preempt") << c.Job(a1).dump();
  EXPECT_EQ(c.Job(a1)["reason"], "started on GPUs that preemption freed for it");
  EXPECT_EQ(c.Job(b2)["state"], "pending");
  EXPECT_EQ(c.Job(b1)["state"], "pending");  // resumable: requeued
}

// Session leases through the server: a session of b past its min_runtime (1 s) whose user keeps
// reporting activity is not preempted for a, which is owed the GPU; once the reports stop, it is
// preempted a lease (2 s) later. Its next run starts without the old run's activity.
TEST(Scheduling, ASessionInUseKeepsItsGpuAndOneLeftIdleIsPreemptedALeaseLater) {
  Cluster c({}, 2, false);
  c.AddBudget("a");
  c.AddBudget("b");
  FakeAgent& n1 = *c.n1;
  // b's other job holds the second GPU under its min_runtime: the session is the only candidate.
  const int64_t hold =
      c.Submit({{"budget", "b"}, {"gpus", 1}, {"min_runtime_s", 3600}, {"command", {"x"}}});
  const int64_t s = c.Submit({{"budget", "b"},
                              {"gpus", 1},
                              {"class", "interactive"},
                              {"min_runtime_s", 1},
                              {"lease_s", 2},
                              {"max_runtime_s", 3600},
                              {"resumable", true},
                              {"command", {"jupyter"}}});
  ASSERT_TRUE(c.BeatUntil([&] { return n1.Runs(hold) && n1.Runs(s); }));
  const std::string touch = "/v1/jobs/" + std::to_string(s) + "/activity";
  ASSERT_EQ(c.h.Post(touch, c.alice, json::object()).status, 200);
  const int64_t p = c.Submit({{"budget", "a"}, {"gpus", 1}, {"command", {"y"}}});
  // In use for three leases: reported at every beat, never stopped.
  SystemClock clock;
  const int64_t until = clock.NowMs() + 6000;
  (void)Eventually(
      [&] {
        const Resp r = c.h.Post(touch, c.alice, json::object());
        EXPECT_EQ(r.status, 200) << r.text;
        n1.Beat();
        return clock.NowMs() >= until || c.Job(s)["state"] != "running";
      },
      8000);
  const json in_use = c.Job(s);
  EXPECT_EQ(in_use["state"], "running") << in_use.dump();
  EXPECT_GE(in_use["protected_until"].get<int64_t>(), in_use["active_at"].get<int64_t>() + 2);
  EXPECT_EQ(c.Job(p)["state"], "pending");
  // Left idle: preempted for a once its lease has run out.
  const int64_t idle_since = clock.NowMs() / 1000;
  ASSERT_TRUE(c.BeatUntil([&] { return c.Job(s)["state"] == "stopping"; })) << c.Job(s).dump();
  EXPECT_GE(clock.NowMs() / 1000, idle_since + 1);
  const json stopped = c.Job(s);
  EXPECT_EQ(stopped["reason_code"], "preempt_fair_share") << stopped.dump();
  EXPECT_EQ(c.Job(hold)["state"], "running");
  // Requeued (resumable); when a's job is done it runs again, its lease counting from the start.
  n1.Exit(s, std::nullopt, 15);
  ASSERT_TRUE(c.BeatUntil([&] { return n1.Runs(p); })) << c.Job(p).dump();
  n1.Exit(p, 0, std::nullopt);
  ASSERT_TRUE(c.BeatUntil([&] { return n1.Runs(s) && c.Job(s)["attempts"] == 2; }))
      << c.Job(s).dump();
  const json again = c.Job(s);
  EXPECT_TRUE(again["active_at"].is_null()) << again.dump();
  EXPECT_EQ(again["protected_until"], again["started_at"].get<int64_t>() + 2) << again.dump();
}

// What a user reads of a job that waits: a's work holds both nodes under its min_runtime. b's
// first job holds the reservation of the node whose work leaves protection first, and starts
// then at the latest; b's second is told it waits for protected work, and when it could start
// at the earliest: once a's job on the other node is past its min_runtime and grace period.
// b's share is twice a's, so that b is plainly below its share. With equal shares the keys of a,
// served all it was owed, and of b, owed nothing yet, differ by a second of accounting: when a's
// start fell in the second after its submission, a's delivered time lagged its owed time by 8
// GPU-seconds, which put a below b, and b's jobs could neither reserve nor stop a's work (2 of 24
// runs under load failed so).
TEST(Scheduling, AJobWaitingForProtectedWorkIsToldItsEarliestStart) {
  Cluster c;
  c.AddBudget("a");
  c.AddBudget("b", 2.0);
  const int64_t early = c.Submit({{"budget", "a"},
                                  {"gpus", 4},
                                  {"gpus_per_node", 4},
                                  {"min_runtime_s", 3600},
                                  {"command", {"x"}}});
  const int64_t late = c.Submit({{"budget", "a"},
                                 {"gpus", 4},
                                 {"gpus_per_node", 4},
                                 {"min_runtime_s", 7200},
                                 {"command", {"x"}}});
  ASSERT_TRUE(c.BeatUntil(
      [&] { return c.Job(early)["state"] == "running" && c.Job(late)["state"] == "running"; }));
  const int64_t first =
      c.Submit({{"budget", "b"}, {"gpus", 4}, {"gpus_per_node", 4}, {"command", {"y"}}});
  const int64_t second =
      c.Submit({{"budget", "b"}, {"gpus", 4}, {"gpus_per_node", 4}, {"command", {"y"}}});
  ASSERT_TRUE(c.BeatUntil([&] {
    return c.Job(first)["reason_code"] == "wait_reservation" &&
           c.Job(second)["reason_code"] == "wait_gpus";
  })) << c.Job(first).dump()
      << c.Job(second).dump();
  EXPECT_EQ(c.Job(first)["estimated_start_at"], c.Job(early)["started_at"].get<int64_t>() + 3600);
  const json waiting = c.Job(second);
  EXPECT_EQ(waiting["estimated_start_at"],
            c.Job(late)["started_at"].get<int64_t>() + 7200 + c.Job(late)["grace_s"].get<int64_t>())
      << waiting.dump();
  EXPECT_NE(waiting["reason"].get<std::string>().find("still protected"), std::string::npos)
      << waiting.dump();
}

TEST(Scheduling, LogsAreFetchedFromTheAgentWithItsToken) {
  Harness h;
  const std::string agent = h.Principal("agent1", "agent");
  const std::string alice = h.Principal("alice", "user");
  const std::string carol = h.Principal("carol", "user");
  // The agent's log service: the agent token, bytes from an offset, the next offset.
  httplib::Server logs;
  std::string seen_path;
  logs.Get(R"(/logs/(\d+)/(\d+)/(stdout|stderr))",
           [&](const httplib::Request& req, httplib::Response& res) {
             if (req.get_header_value("Authorization") != "Bearer " + agent) {
               res.status = 401;
               return;
             }
             seen_path = req.matches[0];
             const std::string text = req.matches[3] == "stdout" ? "hello world\n" : "oops\n";
             const size_t off = std::min(text.size(), std::stoul(req.get_param_value("offset")));
             res.set_header("X-Hourglass-Offset", std::to_string(text.size()));
             res.set_content(text.substr(off), "text/plain");
           });
  const int port = logs.bind_to_any_port("127.0.0.1");
  std::thread t([&] { logs.listen_after_bind(); });
  FakeAgent n1(h, agent, "n1", 1);
  n1.set_logs_url("http://127.0.0.1:" + std::to_string(port));
  ASSERT_EQ(n1.Register().status, 200);
  const int64_t id = h.Post("/v1/jobs", alice, {{"gpus", 1}, {"command", {"echo"}}}).body["id"];
  const std::string base = "/v1/jobs/" + std::to_string(id) + "/logs";
  // (Whether it has started yet depends on the scheduler thread's timing: no check here.)
  ASSERT_TRUE(Eventually([&] {
    n1.Beat();
    return n1.Runs(id);
  }));
  Resp r = h.Get(base + "?offset=6", alice);
  EXPECT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.text, "world\n");
  EXPECT_EQ(seen_path, "/logs/" + std::to_string(id) + "/1/stdout");
  r = h.Get(base + "?stream=stderr", alice);
  EXPECT_EQ(r.text, "oops\n");
  EXPECT_EQ(h.Get(base, carol).status, 403);
  EXPECT_EQ(h.Get(base + "?stream=both", alice).status, 400);
  EXPECT_EQ(h.Get(base + "?attempt=2", alice).status, 404);
  logs.stop();
  t.join();
}

}  // namespace
}  // namespace hg::server::testing
