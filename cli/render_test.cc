// Request builders and renderers on JSON samples shaped like docs/api.md.
#include <gtest/gtest.h>

#include "cli/admin.h"
#include "cli/budgets.h"
#include "cli/client.h"
#include "cli/jobs.h"
#include "cli/table.h"

namespace hg::cli {
namespace {

TEST(TableTest, AlignsColumnsAndTrimsTrailingSpace) {
  Table t({"ID", "NAME", "GPUS"});
  t.AlignRight(0).AlignRight(2);
  t.Add({"7", "train", "16"});
  t.Add({"123", "x", "2"});
  t.Add({"9"});
  EXPECT_EQ(t.Render(),
            " ID  NAME   GPUS\n"
            "  7  train    16\n"
            "123  x         2\n"
            "  9\n");
}

TEST(TableTest, NumbersDropZeroDecimals) {
  EXPECT_EQ(FormatNumber(3.0), "3");
  EXPECT_EQ(FormatNumber(12.5), "12.5");
  EXPECT_EQ(FormatNumber(2.0 / 3.0, 2), "0.67");
}

TEST(ErrorRenderTest, ServerErrorBodyBecomesFieldAndReason) {
  const CliError e =
      ErrorFromResponse(400, R"({"error":{"field":"gpus","reason":"more than the cluster has"}})");
  EXPECT_EQ(e.exit_code, kExitRefused);
  EXPECT_EQ(RenderError("submit", e), "hourglass submit: gpus: more than the cluster has");
}

TEST(ErrorRenderTest, OtherBodiesShowTheStatus) {
  EXPECT_EQ(RenderError("jobs", ErrorFromResponse(502, "Bad gateway\n")),
            "hourglass jobs: server: HTTP 502: Bad gateway");
  EXPECT_EQ(RenderError("jobs", ErrorFromResponse(500, "")), "hourglass jobs: server: HTTP 500");
  EXPECT_EQ(RenderError("jobs", ErrorFromResponse(404, R"({"error":{}})")),
            "hourglass jobs: refused (HTTP 404)");
}

TEST(ErrorRenderTest, UsageErrorsKeepFileAndLine) {
  const CliError e = UsageError(Error{"tokn", "unknown key", "/home/a/.hourglass", 2});
  EXPECT_EQ(e.exit_code, kExitUsage);
  EXPECT_EQ(RenderError("whoami", e),
            "hourglass whoami: tokn: unknown key (file /home/a/.hourglass, line 2)");
}

TEST(SubmitTest, BuildsTheDocumentedBody) {
  SubmitArgs a;
  a.name = "train-1";
  a.budget = "alice";
  a.gpus = 4;
  a.gpus_per_node = 2;
  a.min_runtime = "2h";
  a.max_runtime = "1d";
  a.lease = "30m";
  a.grace = "90s";
  a.resumable = true;
  a.job_class = "batch";
  a.env = {"A=1", "B=x=y"};
  a.cwd = "/work";
  a.command = {"bash", "-c", "echo hi"};
  const auto r = BuildSubmit(a);
  ASSERT_TRUE(r.has_value()) << r.error().reason;
  EXPECT_EQ(r->method, "POST");
  EXPECT_EQ(r->path, "/v1/jobs");
  const Json want = {{"name", "train-1"},
                     {"budget", "alice"},
                     {"gpus", 4},
                     {"gpus_per_node", 2},
                     {"min_runtime_s", 7200},
                     {"max_runtime_s", 86400},
                     {"lease_s", 1800},
                     {"grace_s", 90},
                     {"resumable", true},
                     {"class", "batch"},
                     {"env", {{"A", "1"}, {"B", "x=y"}}},
                     {"cwd", "/work"},
                     {"command", {"bash", "-c", "echo hi"}}};
  EXPECT_EQ(*r->body, want);
}

TEST(SubmitTest, UnfundedByDefaultAndOnlyGivenFields) {
  SubmitArgs a;
  a.cwd = "/tmp";
  a.command = {"true"};
  const auto r = BuildSubmit(a);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r->body,
            (Json{{"budget", nullptr}, {"gpus", 1}, {"cwd", "/tmp"}, {"command", {"true"}}}));
}

TEST(SubmitTest, UsageErrors) {
  auto field_of = [](SubmitArgs a) {
    a.cwd = "/tmp";
    if (a.command.empty()) a.command = {"true"};
    const auto r = BuildSubmit(a);
    EXPECT_FALSE(r.has_value());
    if (r.has_value()) return std::string("accepted");
    EXPECT_EQ(r.error().exit_code, kExitUsage);
    return r.error().field;
  };
  SubmitArgs a;
  a.max_runtime = "2hours";
  EXPECT_EQ(field_of(a), "--max-runtime");
  a = {};
  a.min_runtime = "2h";
  a.max_runtime = "1h";
  EXPECT_EQ(field_of(a), "--max-runtime");
  a = {};
  a.env = {"NOEQUALS"};
  EXPECT_EQ(field_of(a), "--env");
  a = {};
  a.gpus = 0;
  EXPECT_EQ(field_of(a), "--gpus");
  a = {};
  a.grace = "soon";
  EXPECT_EQ(field_of(a), "--grace");
  a = {};
  a.lease = "a while";
  EXPECT_EQ(field_of(a), "--lease");
  a = {};
  a.lease = "30m";  // a session without the max_runtime that ends its protection
  EXPECT_EQ(field_of(a), "--lease");
  a.max_runtime = "12h";
  a.command = {"true"};
  a.cwd = "/tmp";
  EXPECT_TRUE(BuildSubmit(a).has_value());
  SubmitArgs none;
  none.cwd = "/tmp";
  const auto r = BuildSubmit(none);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, "command");
}

TEST(JobsTest, QueryFromFlags) {
  EXPECT_EQ(BuildJobs({})->path, "/v1/jobs");
  JobsArgs a;
  a.all = true;
  a.user = "al ice";
  EXPECT_EQ(BuildJobs(a)->path, "/v1/jobs?state=all&user=al%20ice");
  a = {};
  a.state = "running";
  a.limit = 5;
  EXPECT_EQ(BuildJobs(a)->path, "/v1/jobs?state=running&limit=5");
  a.state = "sleeping";
  EXPECT_EQ(BuildJobs(a).error().field, "--state");
  a = {};
  a.all = true;
  a.state = "done";
  EXPECT_EQ(BuildJobs(a).error().exit_code, kExitUsage);
  a = {};
  a.state = "done";
  a.limit = 50;
  a.before = 1234;
  EXPECT_EQ(BuildJobs(a)->path, "/v1/jobs?state=done&limit=50&before=1234");
  a.before = 0;
  EXPECT_EQ(BuildJobs(a).error().field, "--before");
}

TEST(JobsTest, RendersTheList) {
  const Json reply = Json::parse(R"({"jobs": [
    {"id": 18, "name": "debug", "user": "bob", "budget": null, "gpus": 1, "class": "debug",
     "state": "pending", "submitted_at": 1764691260, "reason": "waiting for 1 GPU"},
    {"id": 17, "name": "train-1", "user": "alice", "budget": "alice", "gpus": 16, "class": "batch",
     "state": "running", "submitted_at": 1764691200, "reason": "funded: within share"}]})");
  EXPECT_EQ(RenderJobs(reply),
            "ID  NAME     USER   BUDGET      GPUS  CLASS  STATE    SUBMITTED             REASON\n"
            "18  debug    bob    (unfunded)     1  debug  pending  2025-12-02 16:01:00Z  waiting "
            "for 1 GPU\n"
            "17  train-1  alice  alice         16  batch  running  2025-12-02 16:00:00Z  funded: "
            "within share\n");
  EXPECT_EQ(RenderJobs(Json::parse(R"({"jobs": []})")), "no jobs\n");
  // Cut by --limit: the server's total says how many there are.
  Json cut = reply;
  cut["total"] = 5;
  EXPECT_EQ(RenderJobs(cut), RenderJobs(reply) + "(2 of 5 jobs shown)\n");
  cut["total"] = 2;
  EXPECT_EQ(RenderJobs(cut), RenderJobs(reply));
}

TEST(ShowTest, RendersJobAndEvents) {
  const Json job = Json::parse(R"({"id": 17, "name": "train-1", "user": "alice",
    "budget": "alice", "gpus": 4, "gpus_per_node": 2, "class": "batch", "min_runtime_s": 7200,
    "max_runtime_s": null, "lease_s": 1800, "active_at": 1764695000, "resumable": true,
    "grace_s": 120,
    "command": ["bash", "-c", "echo hi"], "env": {}, "cwd": "/work", "state": "running",
    "reason": "started: funded within share", "reason_code": "funded", "submitted_at": 1764691200,
    "queued_since": 1764691200, "started_at": 1764691230, "ended_at": null, "attempts": 2,
    "exit_code": null, "exit_signal": null,
    "placement": [{"node": "n1", "gpus": [0, 1]}, {"node": "n2", "gpus": [2, 3]}],
    "estimated_start_at": null, "protected_until": 1764698430})");
  const Json events = Json::parse(R"({"events": [
    {"at": 1764691200, "kind": "submitted", "reason": ""},
    {"at": 1764691230, "kind": "started", "reason": "funded within share"}]})");
  EXPECT_EQ(RenderJob(job, events),
            "job:             17 train-1\n"
            "state:           running\n"
            "reason:          started: funded within share\n"
            "user:            alice\n"
            "budget:          alice\n"
            "gpus:            4 (2/node)\n"
            "class:           batch\n"
            "submitted:       2025-12-02 16:00:00Z\n"
            "queued since:    2025-12-02 16:00:00Z\n"
            "estimated start: -\n"
            "started:         2025-12-02 16:00:30Z\n"
            "protected until: 2025-12-02 18:00:30Z\n"
            "ended:           -\n"
            "min runtime:     2h\n"
            "max runtime:     -\n"
            "lease:           30m\n"
            "last active:     2025-12-02 17:03:20Z\n"
            "grace:           2m\n"
            "resumable:       yes\n"
            "attempts:        2\n"
            "placement:       n1[0,1] n2[2,3]\n"
            "exit:            -\n"
            "command:         bash -c \"echo hi\"\n"
            "cwd:             /work\n"
            "\n"
            "events:\n"
            "AT                    EVENT      REASON\n"
            "2025-12-02 16:00:00Z  submitted  -\n"
            "2025-12-02 16:00:30Z  started    funded within share\n");
}

TEST(LogsTest, PathCarriesStreamAttemptAndOffset) {
  LogsArgs a;
  a.id = 17;
  EXPECT_EQ(BuildLogs(a, 0).path, "/v1/jobs/17/logs?stream=stdout&offset=0");
  a.stderr_stream = true;
  a.attempt = 2;
  EXPECT_EQ(BuildLogs(a, 4096).path, "/v1/jobs/17/logs?stream=stderr&attempt=2&offset=4096");
}

TEST(BudgetsTest, RendersTheTreeIndented) {
  const Json reply = Json::parse(R"({"budgets": [
    {"path": "ai", "name": "ai", "parent": null, "share": 1.0, "limit": null, "leads": ["zed"],
     "members": [], "entitled_gpus": 64.0, "usage_7d_gpu_hours": 9000.0,
     "owed_7d_gpu_hours": 10000.0, "delivered_7d_gpu_hours": 9000.0, "running_gpus": 60,
     "pending_jobs": 3},
    {"path": "ai/olmo", "name": "olmo", "parent": "ai", "share": 2.0, "limit": 48,
     "leads": ["bob", "carol"], "members": [], "entitled_gpus": 42.5, "usage_7d_gpu_hours": 6000.0,
     "owed_7d_gpu_hours": 6000.0, "delivered_7d_gpu_hours": 6000.0, "running_gpus": 40,
     "pending_jobs": 1},
    {"path": "ai/olmo/alice", "name": "alice", "parent": "olmo", "share": 1.0, "limit": null,
     "leads": [], "members": ["alice"], "entitled_gpus": 12.5, "usage_7d_gpu_hours": 100.0,
     "owed_7d_gpu_hours": 120.0, "delivered_7d_gpu_hours": 100.0, "running_gpus": 8,
     "pending_jobs": 2}]})");
  EXPECT_EQ(RenderBudgets(reply),
            "BUDGET     SHARE  LIMIT  ENTITLED  RUNNING  PENDING  USED_7D  OWED_7D  DELIVERED_7D  "
            "DELIVERED%  LEADS\n"
            "ai             1   none        64       60        3     9000    10000          9000   "
            "      90%  zed\n"
            "  olmo         2     48      42.5       40        1     6000     6000          6000   "
            "     100%  bob,carol\n"
            "    alice      1   none      12.5        8        2      100      120           100   "
            "      83%  -\n"
            "(GPU-hours over the last 7 days; ENTITLED in GPUs now)\n");
}

// Budgets under a take-back cool-down get a line each under the table; none without.
TEST(BudgetsTest, TakeBackCooldownsAreListedUnderTheTable) {
  const Json reply = Json::parse(R"({"budgets": [
    {"path": "a", "name": "a", "parent": null, "share": 1,
     "take_back_cooldowns": [{"budget": "b", "until": 1796601600},
                             {"budget": "c", "until": 1796605200}]},
    {"path": "b", "name": "b", "parent": null, "share": 1, "take_back_cooldowns": []},
    {"path": "c", "name": "c", "parent": null, "share": 1}]})");
  const std::string out = RenderBudgets(reply);
  const std::string tail = "(GPU-hours over the last 7 days; ENTITLED in GPUs now)\n";
  ASSERT_NE(out.find(tail), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.find(tail) + tail.size()),
            "a may not take GPUs back from b until 2026-12-07 00:00:00Z (take-back cool-down)\n"
            "a may not take GPUs back from c until 2026-12-07 01:00:00Z (take-back cool-down)\n");
}

TEST(BudgetsTest, DepthFromParentsWhenThereIsNoPath) {
  const Json reply = Json::parse(R"({"budgets": [
    {"name": "ai", "parent": null, "share": 1}, {"name": "olmo", "parent": "ai", "share": 1},
    {"name": "alice", "parent": "olmo", "share": 1}]})");
  const std::string out = RenderBudgets(reply);
  EXPECT_NE(out.find("\n    alice "), std::string::npos) << out;
  EXPECT_NE(out.find("\n  olmo "), std::string::npos) << out;
}

TEST(BudgetSetTest, EditsListsRelativeToTheCurrentBudget) {
  const Json current =
      Json::parse(R"({"name": "olmo", "leads": ["bob", "carol"], "members": ["erin"]})");
  BudgetSetArgs a;
  a.name = "olmo";
  a.share = "2.5";
  a.limit = "none";
  a.lead = {"-carol", "+dave", "bob"};
  a.member = {"+frank"};
  const auto r = BuildBudgetSet(a, current);
  ASSERT_TRUE(r.has_value()) << r.error().reason;
  EXPECT_EQ(r->method, "PATCH");
  EXPECT_EQ(r->path, "/v1/budgets/olmo");
  EXPECT_EQ(*r->body, (Json{{"share", 2.5},
                            {"limit", nullptr},
                            {"leads", {"bob", "dave"}},
                            {"members", {"erin", "frank"}}}));
  a = {};
  a.name = "olmo";
  a.limit = "16";
  EXPECT_EQ(*BuildBudgetSet(a, current)->body, (Json{{"limit", 16}}));
}

TEST(BudgetSetTest, UsageErrors) {
  const Json current = Json::parse(R"({"name": "olmo", "leads": ["bob"], "members": []})");
  BudgetSetArgs a;
  a.name = "olmo";
  EXPECT_EQ(BuildBudgetSet(a, current).error().exit_code, kExitUsage);  // nothing to change
  a.lead = {"-zed"};
  EXPECT_EQ(BuildBudgetSet(a, current).error().reason, "zed is not in the leads of olmo");
  a = {};
  a.name = "olmo";
  a.share = "0";
  EXPECT_EQ(BuildBudgetSet(a, current).error().field, "--share");
  a.share = "1x";
  EXPECT_EQ(BuildBudgetSet(a, current).error().field, "--share");
  a = {};
  a.name = "olmo";
  a.limit = "-1";
  EXPECT_EQ(BuildBudgetSet(a, current).error().field, "--limit");
  a.limit = "4";
  EXPECT_EQ(BuildBudgetSet(a, Json(nullptr)).error().field, "budget");
}

TEST(BudgetAddTest, Body) {
  BudgetAddArgs a;
  a.name = "ablate";
  a.parent = "olmo";
  a.share = "0.5";
  a.leads = {"dave"};
  const auto r = BuildBudgetAdd(a);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v1/budgets");
  EXPECT_EQ(*r->body,
            (Json{{"name", "ablate"}, {"parent", "olmo"}, {"share", 0.5}, {"leads", {"dave"}}}));
}

TEST(UsageTest, RendersDailyColumns) {
  EXPECT_EQ(BuildUsage(std::nullopt).path, "/v1/usage");
  EXPECT_EQ(BuildUsage("olmo").path, "/v1/usage?budget=olmo");
  // The server's shape: 7 days oldest first; three here to keep the sample short.
  const Json reply = Json::parse(R"({"budgets": [
    {"name": "olmo", "path": "ai/olmo", "owed_7d_gpu_hours": 50, "delivered_7d_gpu_hours": 25,
     "wait_s": {"batch": {"p50": 120, "p90": 11100, "count": 9},
                "debug": {"p50": 5, "p90": 12, "count": 40}},
     "daily": [{"from": 0, "to": 86400, "delivered_gpu_hours": 10, "owed_gpu_hours": 20},
               {"from": 86400, "to": 172800, "delivered_gpu_hours": 10, "owed_gpu_hours": 20},
               {"from": 172800, "to": 259200, "delivered_gpu_hours": 5.5,
                "owed_gpu_hours": 10}]},
    {"name": "ai", "path": "ai", "owed_7d_gpu_hours": 50, "delivered_7d_gpu_hours": 25,
     "wait_s": {}, "daily": []}]})");
  EXPECT_EQ(RenderUsage(reply),
            "BUDGET   OWED_7D  DELIVERED_7D  DELIVERED%  DAY-2  DAY-1  LAST_24H  WAIT_P50/P90\n"
            "ai/olmo       50            25         50%  10/20  10/20    5.5/10  batch 2m/3h5m, "
            "debug 5s/12s\n"
            "ai            50            25         50%      -      -         -  -\n"
            "(GPU-hours; daily columns are delivered/owed per 24 hours, oldest first; waits are "
            "the queue waits of the window's starts by class)\n");
}

TEST(NodesTest, RendersStateAndDrain) {
  const Json reply = Json::parse(R"({"nodes": [
    {"name": "n1", "gpus": 8, "block": "b0", "labels": {}, "state": "ready", "drain_cause": null,
     "drain_reason": "", "drain_deadline_at": null, "last_heartbeat_at": 1764691200,
     "used_gpus": 6, "jobs": [17, 18]},
    {"name": "n2", "gpus": 8, "block": "b0", "labels": {}, "state": "draining",
     "drain_cause": "operator", "drain_reason": "kernel update", "drain_deadline_at": 1764698400,
     "drain_empty_by": 1764694920, "drain_waits_for": 19,
     "last_heartbeat_at": 1764691201, "used_gpus": 4, "jobs": [19]},
    {"name": "n3", "gpus": 8, "block": "b0", "labels": {}, "state": "draining",
     "drain_cause": "health", "drain_reason": "ECC", "drain_deadline_at": null,
     "drain_empty_by": 1764691201, "drain_waits_for": null,
     "last_heartbeat_at": 1764691201, "used_gpus": 0, "jobs": []}]})");
  EXPECT_EQ(RenderNodes(reply),
            "NODE  GPUS  USED  BLOCK  STATE     HEARTBEAT             JOBS   DRAIN\n"
            "n1       8     6  b0     ready     2025-12-02 16:00:00Z  17,18  -\n"
            "n2       8     4  b0     draining  2025-12-02 16:00:01Z  19     operator: kernel "
            "update (until 2025-12-02 18:00:00Z), empty by 2025-12-02 17:02:00Z for job 19\n"
            "n3       8     0  b0     draining  2025-12-02 16:00:01Z  -      health: ECC, empty by "
            "2025-12-02 16:00:01Z\n");
}

TEST(DrainTest, DeadlineIsNowPlusTheDuration) {
  DrainArgs a{"n1", "2h", "kernel update"};
  const auto r = BuildDrain(a, 1000);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v1/nodes/n1/drain");
  EXPECT_EQ(*r->body, (Json{{"reason", "kernel update"}, {"deadline_at", 8200}}));
  // Without them, both are left out so the server's defaults apply.
  EXPECT_EQ(*BuildDrain(DrainArgs{"n1", std::nullopt, ""}, 1000)->body, Json::object());
  a.deadline = "later";
  EXPECT_EQ(BuildDrain(a, 1000).error().field, "--deadline");
  EXPECT_EQ(BuildUndrain("n 1").path, "/v1/nodes/n%201/undrain");
}

TEST(WhoamiTest, Renders) {
  EXPECT_EQ(RenderWhoami(Json::parse(
                R"({"name": "alice", "role": "user", "budgets": ["alice"], "leads": []})")),
            "name:       alice\n"
            "role:       user\n"
            "member of:  alice\n"
            "leads:      (none)\n");
}

TEST(PrincipalTest, BodyAndTokenShownOnce) {
  EXPECT_EQ(BuildPrincipalAdd({"alice", "lead"}).error().field, "--role");
  const auto r = BuildPrincipalAdd({"alice", "user"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r->body, (Json{{"name", "alice"}, {"role", "user"}}));
  const std::string out = RenderPrincipalAdded(Json{{"name", "alice"}, {"token", "hg_abc"}});
  EXPECT_NE(out.find("token: hg_abc\n"), std::string::npos);
  EXPECT_NE(out.find("shown once"), std::string::npos);
}

}  // namespace
}  // namespace hg::cli
