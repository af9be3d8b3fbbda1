#include "sim/html_report.h"

#include <gtest/gtest.h>

#include <string>

namespace hg::sim {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// A two-day run: `allocated` of 100 GPUs every hour, debug waits as given, budgets owed 100 GPU-h
// each and delivered as given.
SimResult Run(std::string policy, double allocated, const std::vector<int64_t>& debug_waits,
              double delivered_a, double delivered_b) {
  SimResult r;
  r.policy = std::move(policy);
  r.scenario = "two-day";
  r.start = Seconds(0);
  r.end = Days(2);
  r.capacity_gpu_hours = 100 * 48;
  r.allocated_gpu_hours = allocated * 48;
  for (int h = 0; h < 48; ++h)
    r.series.push_back({Seconds(h * 3600), 100, allocated, 0, static_cast<int32_t>(h % 9)});
  int64_t id = 1;
  for (int64_t w : debug_waits) {
    JobRecord j;
    j.id = JobId(id++);
    j.job_class = "debug";
    j.gpus = 1;
    j.funded = true;
    j.budget = j.id.value() % 2 == 1 ? "p/a" : "p/b";  // jobs 1, 3, 5... (the odd waits) to a
    j.waits = {Seconds(w)};
    j.attempts = 1;
    j.final_state = JobState::kSucceeded;
    r.jobs.push_back(j);
  }
  r.budgets = {{"p", 1, false, 200, delivered_a + delivered_b},
               {"p/a", 2, true, 100, delivered_a},
               {"p/b", 2, true, 100, delivered_b}};
  return r;
}

Comparison Sample() {
  Comparison c;
  c.runs.push_back(Run("hourglass", 95, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 100, 98));
  c.runs.push_back(Run("fifo-backfill", 90, {1, 2, 3, 4, 5, 6, 7, 8, 9, 3000}, 100, 60));
  PreemptionRecord p;
  p.at = Seconds(5 * 3600 + 10);
  p.job = JobId(1);
  p.job_class = "debug";
  p.gpus = 1;
  p.funded = true;
  p.lost_gpu_hours = 2.5;
  c.runs[0].preemptions.push_back(p);
  // Funded waiting: hourglass's 16-GPU jobs had room half the time, a quarter of it fragmented;
  // fifo-backfill's 1-GPU jobs always had room.
  c.runs[0].funded_wait_by_gpus[16] = WaitSplit{2.0, 1.0, 0.5, 0.5};
  c.runs[1].funded_wait_by_gpus[1] = WaitSplit{0.0, 0.0, 3.0, 0.0};
  c.mapping = "cluster: 13 nodes <derived>\n";
  return c;
}

size_t Col(const CompareTable& t, const std::string& key) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].key == key) return i;
  ADD_FAILURE() << "no column " << key;
  return 0;
}

TEST(CompareTable, MarksTheBestShownValuePerColumnAndWhereABaselineWins) {
  const CompareTable t = BuildCompareTable(Sample().runs);
  ASSERT_EQ(t.policies, (std::vector<std::string>{"hourglass", "fifo-backfill"}));
  const size_t occ = Col(t, "occupancy"), ent = Col(t, "entitlement_delivered"),
               p90 = Col(t, "wait_p90_s.debug"), pre = Col(t, "preemptions"),
               lost = Col(t, "lost_gpu_hours"), unf = Col(t, "unfunded_share"),
               vio = Col(t, "contract_violations"), p50 = Col(t, "wait_p50_s.debug");
  EXPECT_EQ(t.cells[0][occ], "95.0%");
  EXPECT_TRUE(t.best[0][occ]);
  EXPECT_FALSE(t.best[1][occ]);
  EXPECT_EQ(t.cells[0][ent], "99.0%");
  EXPECT_EQ(t.cells[1][ent], "80.0%");
  EXPECT_TRUE(t.best[0][ent]);
  EXPECT_EQ(t.cells[1][p90], "9s");
  EXPECT_EQ(t.cells[0][p90], "9s");
  EXPECT_FALSE(t.best[0][p90]);  // equal as shown: nobody wins
  EXPECT_FALSE(t.best[1][p90]);
  EXPECT_EQ(t.cells[0][p50], "5s");
  EXPECT_FALSE(t.best[0][p50]);
  // The baseline wins on preemptions and lost work; the table says so.
  EXPECT_TRUE(t.best[1][pre]);
  EXPECT_FALSE(t.best[0][pre]);
  EXPECT_TRUE(t.best[1][lost]);
  EXPECT_EQ(t.cells[0][lost], "2.5");
  EXPECT_FALSE(t.best[0][unf] || t.best[1][unf]);  // not ranked
  EXPECT_FALSE(t.best[0][vio] || t.best[1][vio]);  // all zero: no winner
  EXPECT_EQ(t.cells[0][Col(t, "drain_latency_p90_s")], "-");
}

// The entitlement gap's two parts: over-delivery from the leaves' totals, and owed time funded
// work did not hold, from the engine's record.
TEST(CompareTable, ShowsTheEntitlementGapInTwoParts) {
  Comparison c = Sample();
  c.runs[0].budgets.push_back({"q", 1, false, 10, 14});
  c.runs[0].budgets.push_back({"q/c", 2, true, 10, 14});  // 4 over
  c.runs[0].undelivered.idle = 2;
  c.runs[1].undelivered.waiting = 12.5;
  c.runs[1].undelivered.unfunded_alone = 30;
  const CompareTable t = BuildCompareTable(c.runs);
  const size_t over = Col(t, "over_delivered_gpu_hours"), unheld = Col(t, "undelivered_gpu_hours");
  EXPECT_EQ(t.cells[0][over], "4.0");
  EXPECT_EQ(t.cells[1][over], "0.0");
  EXPECT_TRUE(t.best[1][over]);
  EXPECT_EQ(t.cells[0][unheld], "2.0");
  EXPECT_EQ(t.cells[1][unheld], "42.5");
  EXPECT_TRUE(t.best[0][unheld]);
  EXPECT_FALSE(t.best[1][unheld]);
}

TEST(CompareTable, TextPutsAStarAfterEachBestValue) {
  const std::string text = RenderCompareText(BuildCompareTable(Sample().runs));
  const size_t hg = text.find("\nhourglass"), fifo = text.find("\nfifo-backfill");
  ASSERT_NE(hg, std::string::npos);
  ASSERT_NE(fifo, std::string::npos);
  const std::string hg_line = text.substr(hg + 1, text.find('\n', hg + 1) - hg - 1);
  const std::string fifo_line = text.substr(fifo + 1, text.find('\n', fifo + 1) - fifo - 1);
  EXPECT_NE(hg_line.find("95.0%*"), std::string::npos) << hg_line;
  EXPECT_NE(hg_line.find("99.0%*"), std::string::npos) << hg_line;
  EXPECT_EQ(fifo_line.find("90.0%*"), std::string::npos) << fifo_line;
  EXPECT_NE(fifo_line.find("0.0*"), std::string::npos) << fifo_line;  // lost GPU-h
  EXPECT_EQ(text.rfind("policy ", 0), 0u);
}

// The fragmentation column is for the largest size some funded job waited in (here 9-64 GPUs,
// hourglass's 16-GPU jobs): the job-hours spent fragmented, fewer is better.
TEST(CompareTable, FragmentedWaitOfTheLargestWaitingSize) {
  const CompareTable t = BuildCompareTable(Sample().runs);
  const size_t frag = Col(t, "fragmented_wait_job_hours.9-64");
  EXPECT_EQ(t.columns[frag].label, "frag. job-h 9-64");
  EXPECT_EQ(t.cells[0][frag], "1.0");
  EXPECT_EQ(t.cells[1][frag], "0.0");
  EXPECT_FALSE(t.best[0][frag]);
  EXPECT_TRUE(t.best[1][frag]);
}

TEST(CompareReport, PrintsTheMappingWithTheTable) {
  const std::string out = RenderCompareReport(Sample());
  EXPECT_NE(out.find("cluster: 13 nodes <derived>"), std::string::npos);
  EXPECT_LT(out.find("cluster: 13 nodes"), out.find("policy "));
}

TEST(CompareHtml, IsSelfContainedWithSixChartsAndEveryPolicyInEachLegend) {
  const std::string h = RenderCompareHtml(Sample());
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  for (const std::string& id : CompareChartIds())
    EXPECT_EQ(Count(h, "data-chart=\"" + id + "\""), 1u) << id;
  EXPECT_EQ(Count(h, "<figure "), 6u);
  // Charts: owed/delivered, occupancy, one wait panel per class (debug), preemptions + lost,
  // largest free, funded wait: 7 svgs, each with a legend entry per policy.
  EXPECT_EQ(Count(h, "<svg "), 7u);
  EXPECT_EQ(Count(h, "class=\"legend-entry\" data-series=\"hourglass\""), 7u);
  EXPECT_EQ(Count(h, "class=\"legend-entry\" data-series=\"fifo-backfill\""), 7u);
  // One colour per policy across charts: hourglass's lines all use the first colour.
  EXPECT_EQ(Count(h, "data-series=\"fifo-backfill\" d="), 5u);  // 5 line charts
  EXPECT_EQ(Count(h, "stroke=\"#D55E00\" stroke-width=\"1.6\""), 5u);
  // Nothing is fetched: no external scripts, styles, images or links.
  EXPECT_EQ(h.find("src="), std::string::npos);
  EXPECT_EQ(h.find("<link"), std::string::npos);
  EXPECT_EQ(h.find("href="), std::string::npos);
  std::string rest = h;
  for (size_t at = 0;
       (at = rest.find("xmlns=\"http://www.w3.org/2000/svg\"")) != std::string::npos;)
    rest.erase(at, 34);
  EXPECT_EQ(rest.find("http"), std::string::npos);
  EXPECT_EQ(Count(h, "<script"), 1u);  // only the inline render check
  // The mapping and the table appear too.
  EXPECT_NE(h.find("<pre id=\"mapping\">cluster: 13 nodes &lt;derived&gt;"), std::string::npos);
  EXPECT_NE(h.find("<td class=\"best\">95.0%*</td>"), std::string::npos);
}

// Each budget of the owed/delivered chart gets its p50 / p90 wait per policy, by class: here
// fifo-backfill's one long wait (3,000 s) is b's, and a's waits match under both policies.
TEST(CompareHtml, TablesTheWaitsOfEachBudgetByClassAndPolicy) {
  const std::string h = RenderCompareHtml(Sample());
  EXPECT_EQ(Count(h, "<table class=\"budget-waits\""), 1u);  // one class: debug
  const size_t at = h.find("<table class=\"budget-waits\" data-class=\"debug\">");
  ASSERT_NE(at, std::string::npos);
  const std::string table = h.substr(at, h.find("</table>", at) - at);
  EXPECT_NE(table.find("<tr><td>p/a</td><td>5s / 9s (5)</td><td>5s / 9s (5)</td></tr>"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("<tr><td>p/b</td><td>6s / 10s (5)</td><td>6s / 50.0m (5)</td></tr>"),
            std::string::npos)
      << table;
}

TEST(CompareHtml, EscapesNamesFromTheInput) {
  Comparison c = Sample();
  for (SimResult& r : c.runs) {
    r.scenario = "<script>alert(1)</script>";
    r.budgets[1].path = "p/<b>&amp";
    for (JobRecord& j : r.jobs) j.job_class = "dbg\"<x>";
  }
  const std::string h = RenderCompareHtml(c);
  EXPECT_EQ(h.find("<script>alert"), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(h.find("<b>&amp"), std::string::npos);
  EXPECT_NE(h.find("p/&lt;b&gt;&amp;amp"), std::string::npos);
  EXPECT_EQ(h.find("dbg\"<x>"), std::string::npos);
  EXPECT_NE(h.find("dbg&quot;&lt;x&gt;"), std::string::npos);
  EXPECT_EQ(Count(h, "<script"), 1u);
}

TEST(CompareJson, HoldsTheTableTheWinnersAndTheChartSeries) {
  const nlohmann::json j = CompareJson(Sample());
  EXPECT_EQ(j["scenario"], "two-day");
  EXPECT_EQ(j["mapping"], "cluster: 13 nodes <derived>\n");
  EXPECT_EQ(j["table"]["hourglass"]["occupancy"], 0.95);
  EXPECT_EQ(j["table"]["fifo-backfill"]["entitlement_delivered"], 0.8);
  EXPECT_EQ(j["best"]["occupancy"], nlohmann::json::array({"hourglass"}));
  EXPECT_EQ(j["best"]["preemptions"], nlohmann::json::array({"fifo-backfill"}));
  EXPECT_EQ(j["best"]["unfunded_share"], nlohmann::json::array());
  // Two days: hourly bins. The preemption at 5h10s counts in bin 5 with its lost work.
  const auto& pre = j["charts"]["preemptions"];
  EXPECT_EQ(pre["bin"], "hour");
  ASSERT_EQ(pre["policies"]["hourglass"].size(), 48u);
  EXPECT_EQ(pre["policies"]["hourglass"][5], nlohmann::json::array({18000.0, 1.0}));
  EXPECT_EQ(pre["policies"]["hourglass"][4][1], 0.0);
  EXPECT_EQ(j["charts"]["lost_gpu_hours"]["policies"]["hourglass"][5][1], 2.5);
  EXPECT_EQ(j["charts"]["occupancy"]["policies"]["fifo-backfill"][0][1], 0.9);
  EXPECT_EQ(j["charts"]["largest_free"]["policies"]["hourglass"][8][1], 8.0);
  EXPECT_EQ(j["charts"]["owed_delivered"]["budgets"], nlohmann::json::array({"p/a", "p/b"}));
  EXPECT_EQ(j["charts"]["owed_delivered"]["policies"]["fifo-backfill"]["delivered_gpu_hours"],
            nlohmann::json::array({100.0, 60.0}));
  // The CDF ends at the largest wait: fifo's 3000 s outlier.
  const auto& cdf = j["charts"]["wait_cdf"]["classes"]["debug"]["fifo-backfill"];
  EXPECT_EQ(cdf.back(), nlohmann::json::array({3000.0, 1.0}));
  EXPECT_EQ(cdf.front(), nlohmann::json::array({1.0, 0.0}));
  // The funded wait chart: only the sizes someone waited in, as shares of the waiting.
  const auto& fw = j["charts"]["funded_wait"];
  EXPECT_EQ(fw["sizes"], nlohmann::json::array({"1 GPU", "9-64 GPUs"}));
  EXPECT_EQ(fw["policies"]["hourglass"]["room"], nlohmann::json::array({0.0, 0.5}));
  EXPECT_EQ(fw["policies"]["hourglass"]["fragmented"], nlohmann::json::array({0.0, 0.25}));
  EXPECT_EQ(fw["policies"]["fifo-backfill"]["room"], nlohmann::json::array({1.0, 0.0}));
  // Every measure of the full report rides along.
  EXPECT_TRUE(j["measures"]["policies"]["hourglass"].contains("wait_s_by_size"));
}

TEST(CompareOutput, SameInputGivesTheSameBytes) {
  EXPECT_EQ(RenderCompareHtml(Sample()), RenderCompareHtml(Sample()));
  EXPECT_EQ(RenderCompareJson(Sample()), RenderCompareJson(Sample()));
  Comparison other = Sample();
  other.runs[1].series[3].largest_free = 99;
  EXPECT_NE(RenderCompareHtml(Sample()), RenderCompareHtml(other));
  EXPECT_NE(RenderCompareJson(Sample()), RenderCompareJson(other));
}

}  // namespace
}  // namespace hg::sim
