#include "sim/generic_trace.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/engine.h"
#include "sim/scenario_io.h"

namespace hg::sim {
namespace {

// What `sacct --parsable2 -o JobID,User,Account,QOS,Submit,Start,End,Elapsed,AllocTRES` prints.
constexpr const char* kSacct =
    "JobID|User|Account|QOS|Submit|Start|End|Elapsed|AllocTRES\n"
    "101|alice|nlp|normal|2024-03-01T10:00:00|2024-03-01T10:05:00|2024-03-01T12:05:00|02:00:00|"
    "billing=8,cpu=8,gres/gpu=4,mem=64G,node=1\n"
    "102|bob|vision|debug|2024-03-01T09:59:00|2024-03-01T10:00:00|2024-03-01T10:10:00|00:10:00|"
    "cpu=2,gres/gpu=1,node=1\n"
    "103|carol|nlp|normal|2024-03-01T10:30:00|2024-03-01T10:30:00|2024-03-03T10:30:00|"
    "2-00:00:00|cpu=4,mem=8G,node=1\n"  // no GPUs
    "104|dave|none|scavenger|2024-03-01T11:00:00|2024-03-01T11:00:00|Unknown|01:00:00|"
    "cpu=8,gres/gpu=16,node=2\n";

constexpr const char* kSacctMap =
    "submit=Submit,duration=Elapsed,gpus=AllocTRES:gres/gpu,budget=Account,class=QOS,user=User";

Scenario MustParse(std::string_view text, const GenericOptions& opt, GenericStats* st = nullptr) {
  auto sc = ParseGenericTrace(text, "in.txt", opt, st);
  EXPECT_TRUE(sc.has_value()) << (sc ? "" : sc.error().ToString());
  return sc ? *sc : Scenario{};
}

const SimJob* JobAtLine(const Scenario& sc, int line) {
  for (const SimJob& j : sc.jobs)
    if (j.line == line) return &j;
  return nullptr;
}

TEST(GenericTrace, TimeAndDurationForms) {
  EXPECT_EQ(ParseTraceTime("3600"), 3600);
  EXPECT_EQ(ParseTraceTime("1970-01-02 00:00:01"), 86401);
  EXPECT_EQ(ParseTraceTime("1970-01-02T00:00:01"), 86401);
  EXPECT_EQ(ParseTraceTime("2024-02-29 00:00:00"), 1709164800);
  EXPECT_FALSE(ParseTraceTime("2023-02-29 00:00:00"));
  EXPECT_FALSE(ParseTraceTime("2024-03-01 10:00"));
  EXPECT_FALSE(ParseTraceTime("-5"));
  EXPECT_EQ(ParseTraceDuration("90"), 90);
  EXPECT_EQ(ParseTraceDuration("90.2"), 91);
  EXPECT_EQ(ParseTraceDuration("02:00:00"), 7200);
  EXPECT_EQ(ParseTraceDuration("1-02:03:04"), 93784);
  EXPECT_EQ(ParseTraceDuration("05:30"), 330);
  EXPECT_FALSE(ParseTraceDuration("1-05:30:60"));
  EXPECT_FALSE(ParseTraceDuration("-3"));
  EXPECT_FALSE(ParseTraceDuration("1h"));
  EXPECT_FALSE(ParseTraceDuration(""));
}

TEST(GenericTrace, SacctExportWithPipesAndTresGpus) {
  GenericOptions opt;
  opt.map = kSacctMap;
  GenericStats st;
  const Scenario sc = MustParse(kSacct, opt, &st);
  EXPECT_EQ(st.rows, 4);
  EXPECT_EQ(st.no_gpu, 1);
  ASSERT_EQ(sc.jobs.size(), 3u);  // Elapsed is mapped, so the running job 104 is kept
  // Sorted by submit, shifted so the first (102, at 09:59) is at 0.
  EXPECT_EQ(sc.jobs[0].line, 3);
  EXPECT_EQ(sc.jobs[0].spec.submit, Seconds(0));
  const SimJob* a = JobAtLine(sc, 2);
  EXPECT_EQ(a->spec.submit, Seconds(60));
  EXPECT_EQ(a->duration, Seconds(7200));
  EXPECT_EQ(a->spec.gpus, Gpus(4));
  EXPECT_EQ(a->budget, "nlp.alice");
  EXPECT_EQ(a->spec.job_class, "normal");
  const SimJob* d = JobAtLine(sc, 5);
  EXPECT_EQ(d->budget, "");  // "none" is unfunded
  EXPECT_EQ(d->spec.tier, 0);
  EXPECT_EQ(d->spec.gpus, Gpus(16));
  // Derived tree: site > nlp, vision > leaves per user.
  ASSERT_EQ(sc.budgets.size(), 5u);
  EXPECT_EQ(sc.budgets[0].name, "site");
  EXPECT_EQ(sc.budgets[1].name, "nlp");
  EXPECT_EQ(sc.budgets[1].parent, "site");
  EXPECT_EQ(sc.budgets[3].name, "nlp.alice");
  EXPECT_EQ(sc.budgets[3].parent, "nlp");
  // Derived cluster: 8-GPU nodes, enough for the largest job (16 GPUs).
  EXPECT_GE(sc.nodes.size(), 2u);
  EXPECT_EQ(sc.nodes[0].gpus, 8);
  EXPECT_TRUE(Validate(sc, PolicyConfig{}).has_value());
  const std::string m = DescribeGenericMapping(sc, opt, st);
  EXPECT_NE(m.find("3 of 4 rows (1 without GPUs and 0 unfinished skipped)"), std::string::npos)
      << m;
  EXPECT_NE(m.find("one program 'site' with 2 projects"), std::string::npos) << m;
}

TEST(GenericTrace, EndMinusStartAndUnfinishedRowsAreSkipped) {
  GenericOptions opt;
  opt.map = "submit=Submit,start=Start,end=End,gpus=AllocTRES:gres/gpu,budget=Account";
  GenericStats st;
  const Scenario sc = MustParse(kSacct, opt, &st);
  EXPECT_EQ(st.unfinished, 1);
  ASSERT_EQ(sc.jobs.size(), 2u);
  EXPECT_EQ(JobAtLine(sc, 2)->duration, Seconds(7200));
  EXPECT_EQ(JobAtLine(sc, 2)->budget, "nlp");  // no user mapped: the project is the leaf
  EXPECT_EQ(JobAtLine(sc, 3)->duration, Seconds(600));
  // Without start, the run is counted from submit (wait included).
  opt.map = "submit=Submit,end=End,gpus=AllocTRES:gres/gpu";
  const Scenario w = MustParse(kSacct, opt);
  EXPECT_EQ(JobAtLine(w, 2)->duration, Seconds(7500));
}

TEST(GenericTrace, JsonlWithGivenClusterAndBudgets) {
  auto nodes = ParseClusterCsv("name,gpus,block\na,4,x\nb,4,x\n", "c.csv");
  auto budgets = ParseBudgetsToml(
      "[[budget]]\nname = \"lab\"\n[[budget]]\nname = \"ann\"\n"
      "parent = \"lab\"\n",
      "b.toml");
  ASSERT_TRUE(nodes && budgets);
  GenericOptions opt;
  opt.jsonl = true;
  opt.map =
      "submit=t,duration=d,gpus=res:gpu,budget=who,class=kind,min_runtime=protect,"
      "resumable=ckpt,gpus_per_node=gpn";
  opt.cluster = *nodes;
  opt.budgets = *budgets;
  const std::string text =
      "{\"t\": 100, \"d\": 3600, \"res\": {\"gpu\": 4}, \"who\": \"lab/ann\", \"kind\": "
      "\"train\", \"protect\": \"00:30:00\", \"ckpt\": true, \"gpn\": 2}\n"
      "\n"
      "{\"t\": 40, \"d\": 10.5, \"res\": \"cpu=1,gpu=1\", \"kind\": \"debug\"}\n";
  const Scenario sc = MustParse(text, opt);
  ASSERT_EQ(sc.jobs.size(), 2u);
  EXPECT_EQ(sc.nodes.size(), 2u);
  EXPECT_EQ(sc.budgets.size(), 2u);
  const SimJob& first = sc.jobs[0];
  EXPECT_EQ(first.line, 3);
  EXPECT_EQ(first.spec.submit, Seconds(0));
  EXPECT_EQ(first.duration, Seconds(11));
  EXPECT_EQ(first.budget, "");
  const SimJob& train = sc.jobs[1];
  EXPECT_EQ(train.spec.submit, Seconds(60));
  EXPECT_EQ(train.spec.gpus, Gpus(4));
  EXPECT_EQ(train.spec.gpus_per_node, Gpus(2));
  EXPECT_EQ(train.budget, "lab/ann");
  EXPECT_EQ(train.spec.min_runtime, Seconds(1800));
  EXPECT_TRUE(train.spec.resumable);
  EXPECT_TRUE(Validate(sc, PolicyConfig{}).has_value());
}

TEST(GenericTrace, BadMappingsNameTheMapping) {
  const std::pair<const char*, const char*> cases[] = {
      {"submit=a,gpus=b", "exactly one of duration and end"},
      {"submit=a,duration=b,end=c,gpus=d", "exactly one of duration and end"},
      {"duration=b,gpus=d", "map submit"},
      {"submit=a,duration=b", "map gpus"},
      {"submit=a,duration=b,gpus=c,owner=d", "unknown field 'owner'"},
      {"submit=a,duration=b,gpus=c,gpus=d", "mapped twice"},
      {"submit=a,duration=b,gpus", "must be FIELD=COLUMN"},
      {"submit=a,duration=b,gpus=c:", "nothing after ':'"},
      {"submit=,duration=b,gpus=c", "has no column name"},
  };
  for (const auto& [spec, want] : cases) {
    auto m = ParseColumnMap(spec);
    ASSERT_FALSE(m.has_value()) << spec;
    EXPECT_EQ(m.error().field, "--map") << spec;
    EXPECT_NE(m.error().reason.find(want), std::string::npos) << spec << ": " << m.error().reason;
  }
  GenericOptions opt;
  opt.map = "submit=Submit,duration=Elapsed,gpus=Gres";
  auto r = ParseGenericTrace(kSacct, "sacct.txt", opt);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().line, 1);
  EXPECT_EQ(r.error().field, "--map gpus");
  EXPECT_NE(r.error().reason.find("column 'Gres' is not in the header"), std::string::npos);
}

TEST(GenericTrace, MalformedRowsNameFileLineAndColumn) {
  struct Case {
    std::string text;
    bool jsonl;
    int line;
    std::string field;
  };
  const std::string head = "s,d,g,b\n";
  const Case cases[] = {
      {head + "0,60,1,x\n5,sixty,1,x\n", false, 3, "d (duration)"},
      {head + "2024-13-01 00:00:00,60,1,x\n", false, 2, "s (submit)"},
      {head + "0,60,-1,x\n", false, 2, "g (gpus)"},
      {head + "0,60,1.5,x\n", false, 2, "g (gpus)"},
      {head + "0,60,1,a/b\n", false, 2, "b (budget)"},
      {head + "0,60,1\n", false, 2, "b"},
      {"{\"s\": 0, \"d\": 60, \"g\": 1}\n{\"s\": 0, \"d\": -4, \"g\": 1}\n", true, 2,
       "d (duration)"},
      {"{\"s\": 0, \"d\": 60, \"g\": 1}\n[1, 2]\n", true, 2, ""},
      {"{\"s\": 0, \"d\": 60, \"g\": [1]}\n", true, 1, "g"},
      {"{\"d\": 60, \"g\": 1}\n", true, 1, "s (submit)"},
  };
  for (const Case& c : cases) {
    GenericOptions opt;
    opt.map = "submit=s,duration=d,gpus=g,budget=b";
    opt.jsonl = c.jsonl;
    auto r = ParseGenericTrace(c.text, "t", opt);
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_EQ(r.error().file, "t") << c.text;
    EXPECT_EQ(r.error().line, c.line) << c.text << r.error().ToString();
    EXPECT_EQ(r.error().field, c.field) << c.text << r.error().ToString();
  }
  GenericOptions opt;
  opt.map = "submit=s,duration=d,gpus=g";
  auto r = ParseGenericTrace("s,d,g\n0,1:99:00,2\n", "t.csv", opt);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().ToString(),
            "t.csv:2: d (duration): must be seconds or '[D-]HH:MM:SS', got '1:99:00'");
}

}  // namespace
}  // namespace hg::sim
