// The request parsers without HTTP or State: what each accepts, with its defaults, and which field
// each kind of mistake names. The HTTP layer on top is tested in api_test.cc.
#include "server/requests.h"

#include <gtest/gtest.h>

namespace hg::server {
namespace {

using nlohmann::json;

// `base` with the fields of `patch` set.
json With(json base, const json& patch) {
  base.update(patch);
  return base;
}

json Without(json base, const std::string& key) {
  base.erase(key);
  return base;
}

struct Mistake {
  json body;
  std::string field;
  std::string reason_part;
};

// Every case is refused with status 400, its field, and a reason containing `reason_part`.
template <class Parse>
void ExpectRefused(Parse parse, const std::vector<Mistake>& cases) {
  for (const Mistake& c : cases) {
    const auto r = parse(c.body);
    ASSERT_FALSE(r.has_value()) << c.body;
    EXPECT_EQ(r.error().status, 400) << c.body;
    EXPECT_EQ(r.error().field, c.field) << c.body;
    EXPECT_NE(r.error().reason.find(c.reason_part), std::string::npos)
        << c.body << " -> " << r.error().reason;
  }
}

const json kJob = {{"gpus", 2}, {"command", {"python", "train.py"}}};

TEST(ParseJobRequest, AcceptsEveryFieldAsGiven) {
  const json body = {
      {"name", "train-1"},      {"budget", "olmo.alice"}, {"gpus", 16},
      {"gpus_per_node", 8},     {"class", "interactive"}, {"min_runtime_s", 600},
      {"max_runtime_s", 7200},  {"lease_s", 1800},        {"resumable", true},
      {"grace_s", 30},          {"priority", -5},         {"command", {"python", "train.py"}},
      {"env", {{"SEED", "1"}}}, {"cwd", "/data"}};
  const auto j = ParseJobRequest(body);
  ASSERT_TRUE(j.has_value()) << j.error().field << ": " << j.error().reason;
  EXPECT_EQ(j->name, "train-1");
  EXPECT_EQ(j->budget, "olmo.alice");
  EXPECT_EQ(j->gpus, 16);
  EXPECT_EQ(j->gpus_per_node, 8);
  EXPECT_EQ(j->job_class, "interactive");
  EXPECT_EQ(j->min_runtime_s, 600);
  EXPECT_EQ(j->max_runtime_s, std::optional<int64_t>(7200));
  EXPECT_EQ(j->lease_s, 1800);
  EXPECT_TRUE(j->resumable);
  EXPECT_EQ(j->grace_s, 30);
  EXPECT_EQ(j->priority, -5);
  EXPECT_EQ(j->command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(j->env, (std::map<std::string, std::string>{{"SEED", "1"}}));
  EXPECT_EQ(j->cwd, "/data");
}

TEST(ParseJobRequest, FillsDefaultsForOptionalFields) {
  for (const json& body : {kJob, With(kJob, {{"budget", nullptr}})}) {
    const auto j = ParseJobRequest(body);
    ASSERT_TRUE(j.has_value()) << body;
    EXPECT_EQ(j->name, "job");
    EXPECT_EQ(j->budget, "");  // unfunded
    EXPECT_EQ(j->gpus, 2);
    EXPECT_EQ(j->gpus_per_node, 0);
    EXPECT_EQ(j->job_class, "batch");
    EXPECT_EQ(j->min_runtime_s, 0);
    EXPECT_FALSE(j->max_runtime_s.has_value());
    EXPECT_EQ(j->lease_s, 0);  // no lease
    EXPECT_FALSE(j->resumable);
    EXPECT_EQ(j->grace_s, 120);
    EXPECT_EQ(j->priority, 0);
    EXPECT_TRUE(j->env.empty());
    EXPECT_EQ(j->cwd, "/tmp");
  }
}

TEST(ParseJobRequest, RefusesEachMistakeByField) {
  ExpectRefused(
      ParseJobRequest,
      {
          {json::array(), "body", "JSON object"},
          {Without(kJob, "gpus"), "gpus", "required"},
          {With(kJob, {{"gpus", nullptr}}), "gpus", "required"},
          {With(kJob, {{"gpus", "2"}}), "gpus", "integer"},
          {With(kJob, {{"gpus", 1.5}}), "gpus", "integer"},
          {With(kJob, {{"gpus", 0}}), "gpus", "at least 1"},
          {With(kJob, {{"gpus", (1 << 20) + 1}}), "gpus", "at most 1048576"},
          {With(kJob, {{"gpus", UINT64_MAX}}), "gpus", "at most 1048576"},
          {With(kJob, {{"gpus_per_node", -1}}), "gpus_per_node", "at least 0"},
          {With(kJob, {{"min_runtime_s", (int64_t{1} << 40) + 1}}), "min_runtime_s", "at most"},
          {With(kJob, {{"max_runtime_s", 0}}), "max_runtime_s", "at least 1"},
          {With(kJob, {{"lease_s", -1}}), "lease_s", "at least 0"},
          {With(kJob, {{"lease_s", "30m"}}), "lease_s", "integer"},
          {With(kJob, {{"grace_s", -1}}), "grace_s", "at least 0"},
          {With(kJob, {{"priority", 1000001}}), "priority", "at most 1000000"},
          {With(kJob, {{"resumable", 1}}), "resumable", "true or false"},
          {With(kJob, {{"budget", "a/b"}}), "budget", "[A-Za-z0-9._-]"},
          {With(kJob, {{"budget", 7}}), "budget", "string"},
          {With(kJob, {{"class", ""}}), "class", "[A-Za-z0-9._-]"},
          {With(kJob, {{"name", std::string(65, 'a')}}), "name", "[A-Za-z0-9._-]"},
          {Without(kJob, "command"), "command", "required"},
          {With(kJob, {{"command", json::array()}}), "command", "empty"},
          {With(kJob, {{"command", "true"}}), "command", "list of strings"},
          {With(kJob, {{"command", {"ok", 1}}}), "command[1]", "string"},
          {With(kJob, {{"env", {{"K", 1}}}}), "env.K", "string"},
          {With(kJob, {{"env", {{"", "v"}}}}), "env.", "keys"},
          {With(kJob, {{"env", json::array()}}), "env", "object of strings"},
          {With(kJob, {{"cwd", std::string(4097, 'a')}}), "cwd", "4096"},
          {With(kJob, {{"gpu", 1}}), "gpu", "unknown field"},
      });
}

TEST(ParseJobRequest, ReportsTheFirstMistakeInFieldOrder) {
  // gpus is read before command, so its mistake is the one reported.
  const auto j = ParseJobRequest({{"gpus", 0}, {"command", json::array()}});
  ASSERT_FALSE(j.has_value());
  EXPECT_EQ(j.error().field, "gpus");
}

TEST(ParseBudgetCreate, AcceptsANewBudget) {
  const auto b = ParseBudgetCreate({{"name", "olmo"},
                                    {"parent", "ai"},
                                    {"share", 2.5},
                                    {"limit", 16},
                                    {"leads", {"bob"}},
                                    {"members", {"alice", "carol"}}});
  ASSERT_TRUE(b.has_value()) << b.error().field << ": " << b.error().reason;
  EXPECT_EQ(b->name, "olmo");
  EXPECT_EQ(b->change.parent, std::optional<std::string>("ai"));
  EXPECT_EQ(b->change.share, std::optional<double>(2.5));
  EXPECT_TRUE(b->change.set_limit);
  EXPECT_EQ(b->change.limit, std::optional<int32_t>(16));
  EXPECT_EQ(b->change.leads, std::optional<std::vector<std::string>>({"bob"}));
  EXPECT_EQ(b->change.members, std::optional<std::vector<std::string>>({"alice", "carol"}));

  const auto top = ParseBudgetCreate({{"name", "ai"}, {"parent", nullptr}, {"share", 1}});
  ASSERT_TRUE(top.has_value());
  EXPECT_FALSE(top->change.parent.has_value());
  EXPECT_FALSE(top->change.set_limit);
  EXPECT_FALSE(top->change.leads.has_value());
}

TEST(ParseBudgetCreate, RefusesEachMistakeByField) {
  const json ok = {{"name", "x"}, {"share", 1}};
  ExpectRefused(ParseBudgetCreate,
                {
                    {Without(ok, "name"), "name", "required"},
                    {With(ok, {{"name", "x/y"}}), "name", "[A-Za-z0-9._-]"},
                    {With(ok, {{"parent", "a b"}}), "parent", "[A-Za-z0-9._-]"},
                    {Without(ok, "share"), "share", "required"},
                    {With(ok, {{"share", "1"}}), "share", "number"},
                    {With(ok, {{"share", 0}}), "share", "greater than 0"},
                    {With(ok, {{"limit", -3}}), "limit", "at least 0"},
                    {With(ok, {{"limit", (1 << 30) + 1}}), "limit", "at most"},
                    {With(ok, {{"limit", 1.5}}), "limit", "integer"},
                    {With(ok, {{"leads", {"bob", "b@d"}}}), "leads[1]", "[A-Za-z0-9._-]"},
                    {With(ok, {{"members", "alice"}}), "members", "list of strings"},
                    {With(ok, {{"shares", 2}}), "shares", "unknown field"},
                });
}

TEST(ParseBudgetPatch, LeavesAbsentFieldsAlone) {
  const auto ch = ParseBudgetPatch({{"share", 3}});
  ASSERT_TRUE(ch.has_value());
  EXPECT_EQ(ch->share, std::optional<double>(3));
  EXPECT_FALSE(ch->set_limit);
  EXPECT_FALSE(ch->leads.has_value());
  EXPECT_FALSE(ch->members.has_value());
  // An explicit null limit clears it.
  const auto clear = ParseBudgetPatch({{"limit", nullptr}});
  ASSERT_TRUE(clear.has_value());
  EXPECT_TRUE(clear->set_limit);
  EXPECT_FALSE(clear->limit.has_value());
  EXPECT_FALSE(clear->share.has_value());
  EXPECT_TRUE(ParseBudgetPatch(json::object()).has_value());
}

TEST(ParseBudgetPatch, RefusesEachMistakeByField) {
  ExpectRefused(ParseBudgetPatch, {
                                      {{{"share", -1}}, "share", "greater than 0"},
                                      {{{"limit", -3}}, "limit", "at least 0"},
                                      // Name and parent are set at creation only.
                                      {{{"name", "x"}}, "name", "unknown field"},
                                      {{{"parent", "ai"}}, "parent", "unknown field"},
                                  });
}

TEST(ParsePrincipalRequest, AcceptsNameAndRole) {
  const auto p = ParsePrincipalRequest({{"name", "eve"}, {"role", "user"}});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->name, "eve");
  EXPECT_EQ(p->role, "user");
  ExpectRefused(ParsePrincipalRequest, {
                                           {{{"role", "user"}}, "name", "required"},
                                           {{{"name", "e ve"}, {"role", "user"}}, "name", "[A-Z"},
                                           {{{"name", "eve"}}, "role", "required"},
                                           {{{"name", "eve"}, {"role", 1}}, "role", "string"},
                                       });
}

TEST(ParseDrainRequest, DefaultsAndRanges) {
  const auto d = ParseDrainRequest(json::object());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->reason, "operator drain");
  EXPECT_FALSE(d->deadline_at.has_value());
  const auto e = ParseDrainRequest({{"reason", "bad fan"}, {"deadline_at", 1700000000}});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->reason, "bad fan");
  EXPECT_EQ(e->deadline_at, std::optional<int64_t>(1700000000));
  ExpectRefused(ParseDrainRequest, {
                                       {{{"deadline_at", -1}}, "deadline_at", "at least 0"},
                                       {{{"deadline_at", "soon"}}, "deadline_at", "integer"},
                                       {{{"reason", false}}, "reason", "string"},
                                       {{{"node", "n1"}}, "node", "unknown field"},
                                   });
}

TEST(ParseRegistration, AcceptsAnAgentAndWhatItRuns) {
  const auto r = ParseRegistration({{"node", "n1"},
                                    {"gpus", 8},
                                    {"labels", {{"rack", "a"}}},
                                    {"gpu_source", "nvidia-smi"},
                                    {"logs_url", "http://n1:9000"},
                                    {"running", {{{"job", 4}, {"attempt", 2}, {"pid", 77}}}}});
  ASSERT_TRUE(r.has_value()) << r.error().field << ": " << r.error().reason;
  EXPECT_EQ(r->node, "n1");
  EXPECT_EQ(r->gpus, 8);
  EXPECT_EQ(r->labels, (std::map<std::string, std::string>{{"rack", "a"}}));
  EXPECT_EQ(r->logs_url, "http://n1:9000");
  EXPECT_EQ(r->running, (std::vector<AttemptRef>{{4, 2}}));
  EXPECT_EQ(r->token, "");  // the handler sets it from the header
}

TEST(ParseRegistration, RefusesEachMistakeByField) {
  const json ok = {{"node", "n1"}, {"gpus", 8}};
  ExpectRefused(ParseRegistration,
                {
                    {Without(ok, "node"), "node", "required"},
                    {With(ok, {{"gpus", 1025}}), "gpus", "at most 1024"},
                    {With(ok, {{"gpus", -1}}), "gpus", "at least 0"},
                    {With(ok, {{"labels", {{"rack", 1}}}}), "labels.rack", "string"},
                    {With(ok, {{"gpu_source", 1}}), "gpu_source", "string"},
                    {With(ok, {{"running", {{"job", 1}}}}), "running", "array"},
                    {With(ok, {{"running", {{{"attempt", 1}}}}}), "running[0].job", "required"},
                    {With(ok, {{"running", {{{"job", 1}, {"attempt", 0}}}}}), "running[0].attempt",
                     "at least 1"},
                    {With(ok, {{"running", {{{"job", 1}, {"attempt", 1}, {"x", 1}}}}}),
                     "running[0].x", "unknown field"},
                    {With(ok, {{"running", {7}}}), "running[0].body", "JSON object"},
                    {With(ok, {{"running", {{{"job", 1}, {"attempt", 1}}, {{"job", -2}}}}}),
                     "running[1].job", "at least 1"},
                });
}

TEST(ParseHeartbeat, AcceptsHealthRunningAndExited) {
  const auto hb = ParseHeartbeat(
      {{"node", "n1"},
       {"health", {{"ok", false}, {"detail", "Xid 79"}}},
       {"running", {{{"job", 4}, {"attempt", 1}}}},
       {"exited",
        {{{"job", 3}, {"attempt", 2}, {"exit_code", 1}, {"how", "killed_after_grace"}},
         {{"job", 5}, {"attempt", 1}, {"signal", 9}, {"at", 1700000000}}}}});
  ASSERT_TRUE(hb.has_value()) << hb.error().field << ": " << hb.error().reason;
  EXPECT_EQ(hb->node, "n1");
  EXPECT_FALSE(hb->health_ok);
  EXPECT_EQ(hb->health_detail, "Xid 79");
  EXPECT_EQ(hb->running, (std::vector<AttemptRef>{{4, 1}}));
  ASSERT_EQ(hb->exited.size(), 2u);
  EXPECT_EQ(hb->exited[0].job, 3);
  EXPECT_EQ(hb->exited[0].attempt, 2);
  EXPECT_EQ(hb->exited[0].exit_code, std::optional<int32_t>(1));
  EXPECT_FALSE(hb->exited[0].signal.has_value());
  EXPECT_EQ(hb->exited[0].how, "killed_after_grace");
  EXPECT_EQ(hb->exited[1].signal, std::optional<int32_t>(9));
  EXPECT_EQ(hb->exited[1].how, "exited");  // the default

  const auto bare = ParseHeartbeat({{"node", "n1"}});
  ASSERT_TRUE(bare.has_value());
  EXPECT_TRUE(bare->health_ok);
  EXPECT_TRUE(bare->running.empty());
  EXPECT_TRUE(bare->exited.empty());
}

TEST(ParseHeartbeat, RefusesEachMistakeByField) {
  const json ok = {{"node", "n1"}};
  ExpectRefused(
      ParseHeartbeat,
      {
          {json::object(), "node", "required"},
          {With(ok, {{"health", true}}), "health", "object"},
          {With(ok, {{"health", json::object()}}), "health.ok", "required"},
          {With(ok, {{"health", {{"ok", true}, {"load", 1}}}}), "health.load", "unknown field"},
          {With(ok, {{"running", {{{"job", 0}, {"attempt", 1}}}}}), "running[0].job", "at least 1"},
          {With(ok, {{"exited", {{{"job", 1}}}}}), "exited[0].attempt", "required"},
          {With(ok, {{"exited", {{{"job", 1}, {"attempt", 1}, {"exit_code", 1001}}}}}),
           "exited[0].exit_code", "at most 1000"},
          {With(ok, {{"exited", {{{"job", 1}, {"attempt", 1}, {"signal", -1}}}}}),
           "exited[0].signal", "at least 0"},
          {With(ok, {{"exited", {{{"job", 1}, {"attempt", 1}, {"how", 2}}}}}), "exited[0].how",
           "string"},
          {With(ok, {{"exited", json(std::vector<int>(4097, 0))}}), "exited", "4096 entries"},
          {With(ok, {{"running", {{{"job", 1}, {"attempt", 1}, {"cpu_s", -0.5}}}}}),
           "running[0].cpu_s", "at least 0"},
          {With(ok, {{"running", {{{"job", 1}, {"attempt", 1}, {"cpu_s", "12"}}}}}),
           "running[0].cpu_s", "number"},
      });
}

TEST(ParseHeartbeat, KeepsEachRunningEntrysCpuSeconds) {
  const auto hb = ParseHeartbeat({{"node", "n1"},
                                  {"running",
                                   {{{"job", 4}, {"attempt", 1}, {"cpu_s", 12.5}},
                                    {{"job", 6}, {"attempt", 2}, {"pid", 77}},
                                    {{"job", 7}, {"attempt", 1}, {"cpu_s", 0}}}}});
  ASSERT_TRUE(hb.has_value()) << hb.error().field << ": " << hb.error().reason;
  EXPECT_EQ(hb->running, (std::vector<AttemptRef>{{4, 1}, {6, 2}, {7, 1}}));
  EXPECT_EQ(hb->cpu_s, (std::map<AttemptRef, double>{{{4, 1}, 12.5}, {{7, 1}, 0.0}}));
  // Registration lists running attempts without it.
  ExpectRefused(
      ParseRegistration,
      {{{{"node", "n1"}, {"gpus", 1}, {"running", {{{"job", 1}, {"attempt", 1}, {"cpu_s", 1}}}}},
        "running[0].cpu_s",
        "unknown field"}});
}

// Found by fuzz/request_fuzz.cc: an unknown field named "" was refused with an empty field.
TEST(JsonCheck, NamesTheBodyForAFieldWithAnEmptyName) {
  ExpectRefused(ParseDrainRequest, {{{{"", "x"}}, "body", "empty name"}});
  ExpectRefused(ParseHeartbeat,
                {{{{"node", "n1"}, {"running", {{{"job", 1}, {"attempt", 1}, {"", 2}}}}},
                  "running[0].body",
                  "empty name"}});
}

TEST(ParseEmptyBody, AcceptsOnlyNoFields) {
  EXPECT_TRUE(ParseEmptyBody(json::object()).has_value());
  ExpectRefused(ParseEmptyBody, {
                                    {{{"force", true}}, "force", "unknown field"},
                                    {json::array(), "body", "JSON object"},
                                });
}

}  // namespace
}  // namespace hg::server
