#include "sim/scenario_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/csv.h"

namespace hg::sim {
namespace {

namespace fs = std::filesystem;

// One mistake in one file: where it must be reported and a phrase the reason must contain.
struct BadCase {
  const char* name;
  const char* text;
  int line;
  const char* field;
  const char* reason_has;
};

std::ostream& operator<<(std::ostream& os, const BadCase& c) { return os << c.name; }

template <class T>
void ExpectError(const Result<T>& r, const BadCase& c) {
  ASSERT_FALSE(r.has_value()) << c.name << ": accepted\n" << c.text;
  const Error& e = r.error();
  EXPECT_EQ(e.file, "in.txt") << c.name;
  EXPECT_EQ(e.line, c.line) << c.name << ": " << e.ToString();
  EXPECT_EQ(e.field, c.field) << c.name << ": " << e.ToString();
  EXPECT_NE(e.reason.find(c.reason_has), std::string::npos)
      << c.name << ": reason '" << e.reason << "' lacks '" << c.reason_has << "'";
}

// ---------------------------------------------------------------------------------------------
// CSV splitting

TEST(ScenarioIoCsv, SplitsQuotedFieldsAndTrimsUnquoted) {
  auto f = SplitCsvLine(R"( a , "b,""c""" ,, " d ",)");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(*f, (std::vector<std::string>{"a", "b,\"c\"", "", " d ", ""}));
}

TEST(ScenarioIoCsv, ReportsTheColumnOfASplitError) {
  auto f = SplitCsvLine(R"(a,"b"x,c)");
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().column, 1u);
  auto g = SplitCsvLine(R"(a,b,"c)");
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().column, 2u);
}

TEST(ScenarioIoCsv, QuoteThenSplitIsIdentity) {
  const std::vector<std::string> fields{"plain",  "a,b", "say \"hi\"", " lead",
                                        "trail ", "#x",  "",           "\t"};
  auto back = SplitCsvLine(CsvJoin(fields));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, fields);
}

// ---------------------------------------------------------------------------------------------
// Cluster

TEST(ScenarioIoCluster, ParsesNodesWithCommentsQuotesCrlfAndBom) {
  const char* text =
      "\xEF\xBB\xBF# the lab cluster\r\n"
      "name,gpus,block\r\n"
      "\r\n"
      "node-1, 8 ,b1\r\n"
      "  # a comment after blanks\n"
      "\"node,2\",4,\n";
  auto r = ParseClusterCsv(text, "c.csv");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "node-1");
  EXPECT_EQ((*r)[0].gpus, 8);
  EXPECT_EQ((*r)[0].block, "b1");
  EXPECT_EQ((*r)[0].line, 4);
  EXPECT_EQ((*r)[1].name, "node,2");
  EXPECT_EQ((*r)[1].gpus, 4);
  EXPECT_EQ((*r)[1].block, "");
  EXPECT_EQ((*r)[1].line, 6);
}

TEST(ScenarioIoCluster, ColumnsMayComeInAnyOrderAndBlockMayBeAbsent) {
  auto r = ParseClusterCsv("gpus,name\n2,a\n", "c.csv");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].name, "a");
  EXPECT_EQ((*r)[0].gpus, 2);
  EXPECT_EQ((*r)[0].block, "");
}

class ScenarioIoClusterErrors : public testing::TestWithParam<BadCase> {};

TEST_P(ScenarioIoClusterErrors, NamesLineAndField) {
  ExpectError(ParseClusterCsv(GetParam().text, "in.txt"), GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    , ScenarioIoClusterErrors,
    testing::Values(
        BadCase{"empty_file", "", 1, "", "no header"},
        BadCase{"only_comments", "# nothing\n\n", 1, "", "no header"},
        BadCase{"unknown_column", "name,gpus,rack\n", 1, "rack", "unknown column"},
        BadCase{"missing_column_in_header", "name,block\nn1,b\n", 1, "gpus", "required column"},
        BadCase{"duplicate_column", "name,gpus,name\n", 1, "name", "twice"},
        BadCase{"unnamed_column", "name,,gpus\n", 1, "", "no name"},
        BadCase{"missing_field", "name,gpus,block\nn1,8\n", 2, "block", "missing"},
        BadCase{"extra_field", "name,gpus,block\nn1,8,b1,x\n", 2, "", "too many fields"},
        BadCase{"gpus_not_integer", "name,gpus,block\nn1,x,b1\n", 2, "gpus",
                "must be a positive integer, got 'x'"},
        BadCase{"gpus_fraction", "name,gpus,block\nn1,1.5,b1\n", 2, "gpus",
                "must be a positive integer, got '1.5'"},
        BadCase{"gpus_zero", "name,gpus,block\nn1,0,b1\n", 2, "gpus",
                "must be a positive integer, got '0'"},
        BadCase{"gpus_negative", "name,gpus,block\nn1,-8,b1\n", 2, "gpus", "positive integer"},
        BadCase{"gpus_empty", "name,gpus,block\nn1,,b1\n", 2, "gpus", "got ''"},
        BadCase{"gpus_too_large", "name,gpus,block\nn1,3000000000,b1\n", 2, "gpus",
                "at most 2147483647"},
        BadCase{"empty_name", "name,gpus,block\n\"\",8,b1\n", 2, "name", "must not be empty"},
        BadCase{"duplicate_name", "name,gpus,block\nn1,8,\n# c\n\nn1,4,\n", 5, "name",
                "duplicate node name 'n1' (first on line 2)"},
        BadCase{"unclosed_quote", "name,gpus,block\n\"n1,8,b1\n", 2, "name", "not closed"},
        BadCase{"stray_quote", "name,gpus,block\nn1,8,b\"1\n", 2, "block", "inside an unquoted"},
        BadCase{"text_after_quote", "name,gpus,block\n\"n1\"x,8,b1\n", 2, "name",
                "after the closing quote"}),
    [](const testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

TEST(ScenarioIoCluster, MissingFileIsAnErrorNamingTheFile) {
  const std::string path = "/nonexistent-dir/cluster.csv";
  auto r = ReadCluster(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().file, path);
  EXPECT_EQ(r.error().reason, "no such file");
  EXPECT_EQ(r.error().ToString(), path + ": no such file");
}

// ---------------------------------------------------------------------------------------------
// Budgets

TEST(ScenarioIoBudgets, ParsesEveryKeyAndDefaults) {
  const char* text = R"(# the tree
[[budget]]
name = "ai2"
leads = ["ceo", "cto"]

[[budget]]
name = "olmo"
parent = "ai2"
share = 2
limit = 512

[[budget]]
name = "alice"
parent = "olmo"
share = 0.5
limit = 0
leads = []
)";
  auto r = ParseBudgetsToml(text, "b.toml");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 3u);
  const BudgetSpec& ai2 = (*r)[0];
  EXPECT_EQ(ai2.name, "ai2");
  EXPECT_EQ(ai2.parent, "");
  EXPECT_EQ(ai2.share, 1.0);
  EXPECT_FALSE(ai2.limit.has_value());
  EXPECT_EQ(ai2.leads, (std::vector<std::string>{"ceo", "cto"}));
  EXPECT_EQ(ai2.line, 2);
  const BudgetSpec& olmo = (*r)[1];
  EXPECT_EQ(olmo.parent, "ai2");
  EXPECT_EQ(olmo.share, 2.0);
  EXPECT_EQ(olmo.limit, 512);
  EXPECT_EQ(olmo.line, 6);
  const BudgetSpec& alice = (*r)[2];
  EXPECT_EQ(alice.share, 0.5);
  EXPECT_EQ(alice.limit, 0);
  EXPECT_TRUE(alice.leads.empty());
  EXPECT_EQ(alice.line, 12);
}

TEST(ScenarioIoBudgets, EmptyFileIsAnEmptyTree) {
  auto r = ParseBudgetsToml("# no budgets: everything unfunded\n", "b.toml");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_TRUE(r->empty());
}

class ScenarioIoBudgetErrors : public testing::TestWithParam<BadCase> {};

TEST_P(ScenarioIoBudgetErrors, NamesLineAndField) {
  ExpectError(ParseBudgetsToml(GetParam().text, "in.txt"), GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    , ScenarioIoBudgetErrors,
    testing::Values(
        BadCase{"toml_syntax", "[[budget]]\nname = \"a\"\nshare = \n", 3, "", "invalid TOML"},
        BadCase{"toml_unclosed_string", "[[budget]]\nname = \"a\n", 2, "", "invalid TOML"},
        BadCase{"unknown_top_level_key", "[[budget]]\nname = \"a\"\n[budgets]\nx = 1\n", 3,
                "budgets", "only [[budget]]"},
        BadCase{"budget_not_array_of_tables", "[budget]\nname = \"a\"\n", 1, "budget",
                "array of tables"},
        BadCase{"unknown_key", "[[budget]]\nname = \"a\"\nshares = 2\n", 3, "shares",
                "unknown key"},
        BadCase{"missing_name", "[[budget]]\nshare = 2\n", 1, "name", "required"},
        BadCase{"name_not_string", "[[budget]]\nname = 7\n", 2, "name",
                "must be a string, got an integer"},
        BadCase{"parent_not_string", "[[budget]]\nname = \"a\"\nparent = [\"x\"]\n", 3, "parent",
                "got an array"},
        BadCase{"share_not_number", "[[budget]]\nname = \"a\"\nshare = \"2\"\n", 3, "share",
                "must be a number > 0, got a string"},
        BadCase{"share_zero", "[[budget]]\nname = \"a\"\nshare = 0\n", 3, "share", "> 0"},
        BadCase{"share_negative", "[[budget]]\nname = \"a\"\nshare = -1.5\n", 3, "share", "> 0"},
        BadCase{"share_nan", "[[budget]]\nname = \"a\"\nshare = nan\n", 3, "share", "> 0"},
        BadCase{"limit_float", "[[budget]]\nname = \"a\"\nlimit = 1.5\n", 3, "limit",
                "must be an integer >= 0 (GPUs), got a float"},
        BadCase{"limit_negative", "[[budget]]\nname = \"a\"\nlimit = -1\n", 3, "limit", "got -1"},
        BadCase{"limit_too_large", "[[budget]]\nname = \"a\"\nlimit = 9999999999\n", 3, "limit",
                "0..2147483647"},
        BadCase{"leads_not_array", "[[budget]]\nname = \"a\"\nleads = \"bob\"\n", 3, "leads",
                "array of strings"},
        BadCase{"leads_element_not_string", "[[budget]]\nname = \"a\"\nleads = [\"bob\", 3]\n", 3,
                "leads", "got an integer"},
        BadCase{"empty_name", "[[budget]]\nname = \"\"\n", 1, "name", "must not be empty"},
        BadCase{"slash_in_name", "[[budget]]\nname = \"a/b\"\n", 1, "name", "'/'"},
        BadCase{"duplicate_name", "[[budget]]\nname = \"a\"\n\n[[budget]]\nname = \"a\"\n", 4,
                "name", "duplicate budget 'a'"},
        BadCase{"unknown_parent",
                "[[budget]]\nname = \"a\"\n\n[[budget]]\nname = \"b\"\nparent = \"zz\"\n", 4,
                "parent", "unknown parent 'zz'"},
        BadCase{"parent_cycle",
                "[[budget]]\nname = \"a\"\nparent = \"b\"\n[[budget]]\nname = \"b\"\n"
                "parent = \"a\"\n",
                1, "parent", "cycle"}),
    [](const testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------------------------
// Workload

TEST(ScenarioIoWorkload, MinimalColumnsGetDefaults) {
  auto r = ParseWorkloadCsv("id,submit,duration,gpus\n7,60,3600,2\n", "w.csv");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 1u);
  const SimJob& j = (*r)[0];
  EXPECT_EQ(j.spec.id, JobId(7));
  EXPECT_EQ(j.spec.submit, Seconds(60));
  EXPECT_EQ(j.duration, Seconds(3600));
  EXPECT_EQ(j.spec.gpus, Gpus(2));
  EXPECT_EQ(j.spec.gpus_per_node, Gpus(0));
  EXPECT_EQ(j.budget, "");
  EXPECT_EQ(j.spec.budget, kUnfunded);
  EXPECT_EQ(j.spec.job_class, "batch");
  EXPECT_EQ(j.spec.min_runtime, Seconds(0));
  EXPECT_FALSE(j.spec.max_runtime.has_value());
  EXPECT_FALSE(j.spec.resumable);
  EXPECT_EQ(j.checkpoint_interval, Seconds(0));
  EXPECT_EQ(j.spec.grace, Seconds(120));
  EXPECT_EQ(j.spec.priority, 0);
  EXPECT_EQ(j.spec.tier, 1);
  EXPECT_EQ(j.line, 2);
}

TEST(ScenarioIoWorkload, EmptyOptionalFieldsGetDefaults) {
  auto r = ParseWorkloadCsv(
      "id,submit,duration,gpus,gpus_per_node,budget,class,min_runtime,max_runtime,resumable,"
      "checkpoint,grace,priority,tier,lease,idle_after\n"
      "1,0,10,1,,,,,,,,,,,,\n",
      "w.csv");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const SimJob& j = (*r)[0];
  EXPECT_EQ(j.spec.lease, Seconds(0));
  EXPECT_FALSE(j.idle_after.has_value());
  EXPECT_EQ(j.spec.job_class, "batch");
  EXPECT_EQ(j.spec.grace, Seconds(120));
  EXPECT_EQ(j.spec.tier, 1);
  EXPECT_FALSE(j.spec.max_runtime.has_value());
  EXPECT_FALSE(j.spec.resumable);
}

TEST(ScenarioIoWorkload, ParsesEveryColumnInAnyOrderAndSortsBySubmitThenId) {
  const char* text =
      "tier,priority,grace,checkpoint,resumable,max_runtime,min_runtime,class,budget,"
      "gpus_per_node,gpus,duration,submit,id\n"
      "0,5,30,600,TRUE,86400,3600,train,olmo/pretrain,8,64,172800,100,3\n"
      "2,-2,0,0,0,,0,debug,,0,1,60,100,2\n"
      "1,0,120,0,false,,0,\"sweep, wide\",,0,1,60,50,9\n";
  auto r = ParseWorkloadCsv(text, "w.csv");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].spec.id, JobId(9));  // submit 50
  EXPECT_EQ((*r)[1].spec.id, JobId(2));  // submit 100, lower id first
  EXPECT_EQ((*r)[2].spec.id, JobId(3));
  EXPECT_EQ((*r)[0].spec.job_class, "sweep, wide");
  EXPECT_EQ((*r)[0].line, 4);
  const SimJob& big = (*r)[2];
  EXPECT_EQ(big.line, 2);
  EXPECT_EQ(big.spec.tier, 0);
  EXPECT_EQ(big.spec.priority, 5);
  EXPECT_EQ(big.spec.grace, Seconds(30));
  EXPECT_EQ(big.checkpoint_interval, Seconds(600));
  EXPECT_TRUE(big.spec.resumable);
  EXPECT_EQ(big.spec.max_runtime, Seconds(86400));
  EXPECT_EQ(big.spec.min_runtime, Seconds(3600));
  EXPECT_EQ(big.spec.job_class, "train");
  EXPECT_EQ(big.budget, "olmo/pretrain");
  EXPECT_EQ(big.spec.gpus_per_node, Gpus(8));
  EXPECT_EQ(big.spec.gpus, Gpus(64));
  EXPECT_EQ(big.duration, Seconds(172800));
  EXPECT_EQ(big.spec.submit, Seconds(100));
  const SimJob& dbg = (*r)[1];
  EXPECT_EQ(dbg.spec.tier, 2);
  EXPECT_EQ(dbg.spec.priority, -2);
  EXPECT_EQ(dbg.spec.grace, Seconds(0));
  EXPECT_FALSE(dbg.spec.resumable);
}

TEST(ScenarioIoWorkload, ASessionsLeaseAndIdleAfter) {
  auto r = ParseWorkloadCsv(
      "id,submit,duration,gpus,max_runtime,lease,idle_after\n"
      "1,0,36000,2,43200,1800,14400\n"
      "2,0,36000,2,43200,1800,\n"
      "3,0,600,1,,,\n",
      "w.csv");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ((*r)[0].spec.lease, Minutes(30));
  EXPECT_EQ((*r)[0].idle_after, Hours(4));
  EXPECT_EQ((*r)[1].idle_after, std::nullopt);  // active until it ends
  EXPECT_EQ((*r)[2].spec.lease, Seconds(0));
}

TEST(ScenarioIoWorkload, MinRuntimeIsNotCheckedAgainstACapHere) {
  // The policy config knows the cap; the reader must not invent one.
  auto r = ParseWorkloadCsv("id,submit,duration,gpus,min_runtime\n1,0,10,1,999999\n", "w.csv");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ((*r)[0].spec.min_runtime, Seconds(999999));
}

class ScenarioIoWorkloadErrors : public testing::TestWithParam<BadCase> {};

TEST_P(ScenarioIoWorkloadErrors, NamesLineAndField) {
  ExpectError(ParseWorkloadCsv(GetParam().text, "in.txt"), GetParam());
}

#define WL_HEAD "id,submit,duration,gpus,"
#define WL_ALL                                                                            \
  "id,submit,duration,gpus,gpus_per_node,budget,class,min_runtime,max_runtime,resumable," \
  "checkpoint,grace,priority,tier,lease,idle_after\n"

INSTANTIATE_TEST_SUITE_P(
    , ScenarioIoWorkloadErrors,
    testing::Values(
        BadCase{"empty_file", "\n\n", 1, "", "no header"},
        BadCase{"unknown_column", WL_HEAD "gpu\n1,0,10,1,1\n", 1, "gpu", "unknown column"},
        BadCase{"missing_required_column", "id,submit,gpus\n1,0,1\n", 1, "duration",
                "required column"},
        BadCase{"missing_field", WL_ALL "1,0,10,1,0,b,batch,0,,false,0,120,0,1,0\n", 2,
                "idle_after", "missing"},
        BadCase{"extra_field", "id,submit,duration,gpus\n1,0,10,1,5\n", 2, "", "too many"},
        BadCase{"id_zero", "id,submit,duration,gpus\n0,0,10,1\n", 2, "id",
                "must be a positive integer, got '0'"},
        BadCase{"id_text", "id,submit,duration,gpus\nj1,0,10,1\n", 2, "id", "got 'j1'"},
        BadCase{"id_duplicate", "id,submit,duration,gpus\n1,0,10,1\n2,0,10,1\n1,5,10,1\n", 4, "id",
                "duplicate job id 1 (first on line 2)"},
        BadCase{"submit_negative", "id,submit,duration,gpus\n1,-1,10,1\n", 2, "submit",
                "integer >= 0"},
        BadCase{"submit_missing", "id,submit,duration,gpus\n1,,10,1\n", 2, "submit", "got ''"},
        BadCase{"submit_too_large", "id,submit,duration,gpus\n1,99999999999999,10,1\n", 2, "submit",
                "at most"},
        BadCase{"submit_overflows_int64", "id,submit,duration,gpus\n1,99999999999999999999,10,1\n",
                2, "submit", "at most"},
        BadCase{"submit_float", "id,submit,duration,gpus\n1,1e3,10,1\n", 2, "submit", "got '1e3'"},
        BadCase{"duration_zero", "id,submit,duration,gpus\n1,0,0,1\n", 2, "duration",
                "positive integer"},
        BadCase{"gpus_zero", "id,submit,duration,gpus\n1,0,10,0\n", 2, "gpus",
                "must be a positive integer, got '0'"},
        BadCase{"gpus_per_node_negative", WL_HEAD "gpus_per_node\n1,0,10,8,-1\n", 2,
                "gpus_per_node", "integer >= 0"},
        BadCase{"gpus_per_node_not_divisor", WL_HEAD "gpus_per_node\n1,0,10,12,8\n", 2,
                "gpus_per_node", "must divide gpus (12)"},
        BadCase{"min_runtime_negative", WL_HEAD "min_runtime\n1,0,10,1,-5\n", 2, "min_runtime",
                "integer >= 0"},
        BadCase{"max_runtime_zero", WL_HEAD "max_runtime\n1,0,10,1,0\n", 2, "max_runtime",
                "positive integer"},
        BadCase{"max_runtime_below_min", WL_HEAD "min_runtime,max_runtime\n1,0,10,1,600,300\n", 2,
                "max_runtime", "must be >= min_runtime (600)"},
        BadCase{"resumable_yes", WL_HEAD "resumable\n1,0,10,1,yes\n", 2, "resumable",
                "must be true, false, 1 or 0, got 'yes'"},
        BadCase{"checkpoint_negative", WL_HEAD "checkpoint\n1,0,10,1,-60\n", 2, "checkpoint",
                "integer >= 0"},
        BadCase{"grace_text", WL_HEAD "grace\n1,0,10,1,2m\n", 2, "grace", "got '2m'"},
        BadCase{"priority_fraction", WL_HEAD "priority\n1,0,10,1,1.5\n", 2, "priority",
                "got '1.5'"},
        BadCase{"tier_three", WL_HEAD "tier\n1,0,10,1,3\n", 2, "tier", "at most 2"},
        BadCase{"tier_negative", WL_HEAD "tier\n1,0,10,1,-1\n", 2, "tier", "0, 1 or 2"},
        BadCase{"lease_negative", WL_HEAD "max_runtime,lease\n1,0,10,1,60,-1\n", 2, "lease",
                "integer >= 0"},
        BadCase{"idle_after_text", WL_HEAD "idle_after\n1,0,10,1,soon\n", 2, "idle_after",
                "got 'soon'"},
        BadCase{"unclosed_quote", WL_HEAD "class\n1,0,10,1,\"debug\n", 2, "class", "not closed"}),
    [](const testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------------------------
// Events

TEST(ScenarioIoEvents, ParsesEveryKindAndSortsStablyByTime) {
  const char* text =
      "time,kind,target,value,deadline,reason\n"
      "500,drain,n3,,3600,\"rack work, planned\"\n"
      "100,health_fail,n1,,,xid 79\n"
      "500,undrain,n3,,,\n"
      "100,share,olmo,2.5,,\n"
      "200,limit,olmo,-1,,\n"
      "300,limit,olmo,64,,\n"
      "50,node_lost,n2,,,\n"
      "600,repair,n1,,,\n"
      "500,drain,n4,,,\n";
  auto r = ParseEventsCsv(text, "e.csv");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 9u);
  std::vector<int> lines;
  for (const TimedEvent& e : *r) lines.push_back(e.line);
  // Equal times keep file order.
  EXPECT_EQ(lines, (std::vector<int>{8, 3, 5, 6, 7, 2, 4, 10, 9}));
  const TimedEvent& lost = (*r)[0];
  EXPECT_EQ(lost.kind, EventKind::kNodeLost);
  EXPECT_EQ(lost.at, Seconds(50));
  EXPECT_EQ(lost.target, "n2");
  EXPECT_EQ((*r)[1].kind, EventKind::kHealthFail);
  EXPECT_EQ((*r)[1].reason, "xid 79");
  EXPECT_EQ((*r)[2].kind, EventKind::kBudgetShare);
  EXPECT_EQ((*r)[2].value, 2.5);
  EXPECT_EQ((*r)[3].kind, EventKind::kBudgetLimit);
  EXPECT_EQ((*r)[3].value, -1.0);
  EXPECT_EQ((*r)[4].value, 64.0);
  const TimedEvent& drain = (*r)[5];
  EXPECT_EQ(drain.kind, EventKind::kDrain);
  EXPECT_EQ(drain.deadline, Seconds(3600));
  EXPECT_EQ(drain.reason, "rack work, planned");
  EXPECT_EQ((*r)[6].kind, EventKind::kUndrain);
  EXPECT_FALSE((*r)[7].deadline.has_value());
  EXPECT_EQ((*r)[8].kind, EventKind::kRepair);
}

TEST(ScenarioIoEvents, KindNamesRoundTrip) {
  for (EventKind k :
       {EventKind::kHealthFail, EventKind::kNodeLost, EventKind::kRepair, EventKind::kDrain,
        EventKind::kUndrain, EventKind::kBudgetShare, EventKind::kBudgetLimit})
    EXPECT_EQ(EventKindFromString(ToString(k)), k) << ToString(k);
  EXPECT_EQ(EventKindFromString("Drain"), std::nullopt);
}

class ScenarioIoEventErrors : public testing::TestWithParam<BadCase> {};

TEST_P(ScenarioIoEventErrors, NamesLineAndField) {
  ExpectError(ParseEventsCsv(GetParam().text, "in.txt"), GetParam());
}

#define EV_HEAD "time,kind,target,value,deadline,reason\n"

INSTANTIATE_TEST_SUITE_P(
    , ScenarioIoEventErrors,
    testing::Values(
        BadCase{"unknown_column", "time,kind,target,when\n", 1, "when", "unknown column"},
        BadCase{"missing_target_column", "time,kind\n", 1, "target", "required column"},
        BadCase{"missing_field", EV_HEAD "10,drain,n1\n", 2, "value", "missing"},
        BadCase{"time_negative", EV_HEAD "-1,drain,n1,,,\n", 2, "time", "integer >= 0"},
        BadCase{"time_text", EV_HEAD "1h,drain,n1,,,\n", 2, "time", "got '1h'"},
        BadCase{"unknown_kind", EV_HEAD "0,reboot,n1,,,\n", 2, "kind",
                "unknown kind 'reboot'; the kinds are health_fail, node_lost, repair, drain, "
                "undrain, share, limit"},
        BadCase{"empty_node_target", EV_HEAD "0,repair,,,,\n", 2, "target", "must name a node"},
        BadCase{"empty_budget_target", EV_HEAD "0,share,,2,,\n", 2, "target", "must name a budget"},
        BadCase{"share_without_value", EV_HEAD "0,share,olmo,,,\n", 2, "value",
                "needs a number > 0"},
        BadCase{"share_zero", EV_HEAD "0,share,olmo,0,,\n", 2, "value", "got '0'"},
        BadCase{"share_text", EV_HEAD "0,share,olmo,lots,,\n", 2, "value", "got 'lots'"},
        BadCase{"share_infinite", EV_HEAD "0,share,olmo,inf,,\n", 2, "value", "got 'inf'"},
        BadCase{"limit_fraction", EV_HEAD "0,limit,olmo,1.5,,\n", 2, "value", "needs an integer"},
        BadCase{"limit_without_value", EV_HEAD "0,limit,olmo,,,\n", 2, "value", "needs an integer"},
        BadCase{"limit_too_large", EV_HEAD "0,limit,olmo,99999999999,,\n", 2, "value", "at most"},
        BadCase{"value_on_node_event", EV_HEAD "0,health_fail,n1,3,,\n", 2, "value",
                "takes no value"},
        BadCase{"deadline_on_repair", EV_HEAD "0,repair,n1,,60,\n", 2, "deadline",
                "only kind 'drain'"},
        BadCase{"deadline_negative", EV_HEAD "0,drain,n1,,-60,\n", 2, "deadline", "integer >= 0"},
        BadCase{"line_counts_comments", EV_HEAD "# c\n0,drain,n1,,,\n\n\n7,node_lost,,,,\n", 6,
                "target", "must name a node"}),
    [](const testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------------------------
// Write and read back

Scenario SampleScenario() {
  Scenario s;
  s.name = "sample";
  s.end = Days(2);
  s.nodes = {
      {"n1", 8, "b1", 0},
      {"n,2", 4, "", 0},
      {"#n3", 8, " block \"x\" ", 0},
  };
  s.budgets = {
      {"ai2", "", 1.0, std::nullopt, {"ceo", "a \"quoted\" lead"}, 0},
      {"olmo", "ai2", 2.0 / 3.0, 512, {}, 0},
      {"alice", "olmo", 1e-5, 0, {"bob\\carol"}, 0},
      {"tulu", "ai2", 123456.0, std::nullopt, {}, 0},
  };
  auto job = [](int64_t id, int64_t submit) {
    SimJob j;
    j.spec.id = JobId(id);
    j.spec.submit = Seconds(submit);
    return j;
  };
  SimJob a = job(1, 0);
  a.spec.gpus = Gpus(64);
  a.spec.gpus_per_node = Gpus(8);
  a.spec.job_class = "train";
  a.spec.min_runtime = Hours(8);
  a.spec.max_runtime = Days(3);
  a.spec.resumable = true;
  a.spec.grace = Seconds(300);
  a.spec.priority = -3;
  a.spec.tier = 0;
  a.budget = "olmo";
  a.duration = Days(2);
  a.checkpoint_interval = Hours(1);
  SimJob b = job(2, 0);
  b.spec.job_class = "sweep, \"wide\"";
  b.duration = Seconds(1);
  b.spec.tier = 2;
  SimJob c = job(5, 3600);
  c.spec.job_class = "debug";
  c.budget = "alice";
  c.duration = Minutes(5);
  c.spec.grace = Seconds(0);
  SimJob d = job(7, 4000);
  d.spec.job_class = "interactive";
  d.budget = "alice";
  d.duration = Hours(10);
  d.spec.max_runtime = Hours(12);
  d.spec.lease = Minutes(30);
  d.idle_after = Hours(4);
  s.jobs = {a, b, c, d};
  auto ev = [](int64_t at, EventKind k, std::string target) {
    TimedEvent e;
    e.at = Seconds(at);
    e.kind = k;
    e.target = std::move(target);
    return e;
  };
  TimedEvent drain = ev(100, EventKind::kDrain, "n1");
  drain.deadline = Hours(2);
  drain.reason = "maintenance, rack 3";
  TimedEvent share = ev(100, EventKind::kBudgetShare, "olmo");
  share.value = 0.1;
  TimedEvent nolimit = ev(200, EventKind::kBudgetLimit, "olmo");
  nolimit.value = -1;
  TimedEvent limit = ev(300, EventKind::kBudgetLimit, "tulu");
  limit.value = 16;
  TimedEvent fail = ev(400, EventKind::kHealthFail, "n,2");
  fail.reason = "xid \"79\"";
  s.events = {drain,
              share,
              nolimit,
              limit,
              fail,
              ev(500, EventKind::kNodeLost, "#n3"),
              ev(900, EventKind::kRepair, "n,2"),
              ev(950, EventKind::kUndrain, "n1")};
  return s;
}

void ExpectSameNodes(const std::vector<NodeSpec>& a, const std::vector<NodeSpec>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name) << i;
    EXPECT_EQ(a[i].gpus, b[i].gpus) << i;
    EXPECT_EQ(a[i].block, b[i].block) << i;
  }
}

void ExpectSameBudgets(const std::vector<BudgetSpec>& a, const std::vector<BudgetSpec>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name) << i;
    EXPECT_EQ(a[i].parent, b[i].parent) << i;
    EXPECT_EQ(a[i].share, b[i].share) << i;  // exact: the writer prints round-trip digits
    EXPECT_EQ(a[i].limit, b[i].limit) << i;
    EXPECT_EQ(a[i].leads, b[i].leads) << i;
  }
}

void ExpectSameJobs(const std::vector<SimJob>& a, const std::vector<SimJob>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const JobSpec& x = a[i].spec;
    const JobSpec& y = b[i].spec;
    EXPECT_EQ(x.id, y.id) << i;
    EXPECT_EQ(x.submit, y.submit) << i;
    EXPECT_EQ(x.gpus, y.gpus) << i;
    EXPECT_EQ(x.gpus_per_node, y.gpus_per_node) << i;
    EXPECT_EQ(x.budget, y.budget) << i;
    EXPECT_EQ(x.job_class, y.job_class) << i;
    EXPECT_EQ(x.min_runtime, y.min_runtime) << i;
    EXPECT_EQ(x.max_runtime, y.max_runtime) << i;
    EXPECT_EQ(x.resumable, y.resumable) << i;
    EXPECT_EQ(x.grace, y.grace) << i;
    EXPECT_EQ(x.priority, y.priority) << i;
    EXPECT_EQ(x.tier, y.tier) << i;
    EXPECT_EQ(a[i].budget, b[i].budget) << i;
    EXPECT_EQ(a[i].duration, b[i].duration) << i;
    EXPECT_EQ(a[i].checkpoint_interval, b[i].checkpoint_interval) << i;
    EXPECT_EQ(x.lease, y.lease) << i;
    EXPECT_EQ(a[i].idle_after, b[i].idle_after) << i;
  }
}

void ExpectSameEvents(const std::vector<TimedEvent>& a, const std::vector<TimedEvent>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].at, b[i].at) << i;
    EXPECT_EQ(a[i].kind, b[i].kind) << i;
    EXPECT_EQ(a[i].target, b[i].target) << i;
    EXPECT_EQ(a[i].value, b[i].value) << i;
    EXPECT_EQ(a[i].deadline, b[i].deadline) << i;
    EXPECT_EQ(a[i].reason, b[i].reason) << i;
  }
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ScenarioIoRoundTrip : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("hg_scenario_io_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ScenarioIoRoundTrip, WriteThenReadGivesTheSameScenario) {
  const Scenario s = SampleScenario();
  const fs::path out = dir_ / "nested" / "scenario";  // directories are created
  auto w = WriteScenario(s, out.string());
  ASSERT_TRUE(w.has_value()) << w.error().ToString();

  auto nodes = ReadCluster((out / "cluster.csv").string());
  ASSERT_TRUE(nodes.has_value()) << nodes.error().ToString();
  ExpectSameNodes(*nodes, s.nodes);
  auto budgets = ReadBudgets((out / "budgets.toml").string());
  ASSERT_TRUE(budgets.has_value()) << budgets.error().ToString();
  ExpectSameBudgets(*budgets, s.budgets);
  auto jobs = ReadWorkload((out / "workload.csv").string());
  ASSERT_TRUE(jobs.has_value()) << jobs.error().ToString();
  ExpectSameJobs(*jobs, s.jobs);
  auto events = ReadEvents((out / "events.csv").string());
  ASSERT_TRUE(events.has_value()) << events.error().ToString();
  ExpectSameEvents(*events, s.events);
}

TEST_F(ScenarioIoRoundTrip, WritingTwiceGivesIdenticalBytes) {
  const Scenario s = SampleScenario();
  ASSERT_TRUE(WriteScenario(s, (dir_ / "a").string()).has_value());
  ASSERT_TRUE(WriteScenario(s, (dir_ / "b").string()).has_value());
  for (const char* f : {"cluster.csv", "budgets.toml", "workload.csv", "events.csv"}) {
    const std::string a = Slurp(dir_ / "a" / f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_EQ(a, Slurp(dir_ / "b" / f)) << f;
  }
}

TEST_F(ScenarioIoRoundTrip, ALineBreakInAFieldIsRefusedAndNothingIsWritten) {
  Scenario s = SampleScenario();
  s.events[0].reason = "two\nlines";
  auto w = WriteScenario(s, dir_.string());
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().field, "reason");
  EXPECT_FALSE(fs::exists(dir_));
}

TEST(ScenarioIoFiles, ReadErrorsCarryThePathAsFile) {
  const fs::path dir =
      fs::path(testing::TempDir()) / ("hg_scenario_io_files_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / "workload.csv";
  {
    std::ofstream out(p, std::ios::binary);
    out << "id,submit,duration,gpus\n1,0,10,0\n";
  }
  auto r = ReadWorkload(p.string());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().ToString(), p.string() + ":2: gpus: must be a positive integer, got '0'");
  auto d = ReadEvents(dir.string());
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().file, dir.string());
  EXPECT_NE(d.error().reason.find("directory"), std::string::npos);
  auto m = ReadBudgets((dir / "missing.toml").string());
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().file, (dir / "missing.toml").string());
  EXPECT_EQ(m.error().reason, "no such file");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hg::sim
