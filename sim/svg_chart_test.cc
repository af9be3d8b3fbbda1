#include "sim/svg_chart.h"

#include <gtest/gtest.h>

#include <string>

namespace hg::sim::svg {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(SvgChart, EscapesMarkupCharacters) {
  EXPECT_EQ(Escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(Escape("plain/path-1"), "plain/path-1");
}

TEST(SvgChart, PaletteIsFixedByPositionAndDistinct) {
  EXPECT_EQ(Colour(0), "#0072B2");
  EXPECT_EQ(Colour(1), "#D55E00");
  for (size_t i = 0; i < 7; ++i)
    for (size_t j = i + 1; j < 7; ++j) EXPECT_NE(Colour(i), Colour(j)) << i << " " << j;
  EXPECT_EQ(Colour(7), Colour(0));  // repeats only after the palette is used up
}

TEST(SvgChart, LinearTicksUseNiceStepsCoveringTheRange) {
  EXPECT_EQ(LinearTicks(0, 97, 5), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  std::vector<std::string> labels;
  for (double v : LinearTicks(0, 1, 5)) labels.push_back(FormatTick(v, TickFormat::kPercent, 0.2));
  EXPECT_EQ(labels, (std::vector<std::string>{"0%", "20%", "40%", "60%", "80%", "100%"}));
  const auto t = LinearTicks(0.9, 1.0, 5);
  ASSERT_GE(t.size(), 2u);
  EXPECT_LE(t.front(), 0.9);
  EXPECT_GE(t.back(), 1.0);
  const auto flat = LinearTicks(3, 3, 5);  // a flat range still gets an axis
  ASSERT_GE(flat.size(), 2u);
  EXPECT_LE(flat.front(), 3);
  EXPECT_GT(flat.back(), 3);
}

TEST(SvgChart, LogTicksForDurationsAreReadableSteps) {
  EXPECT_EQ(LogTicks(5, 5000, TickFormat::kSeconds),
            (std::vector<double>{1, 10, 60, 600, 3600, 36000}));
  EXPECT_EQ(LogTicks(1, 10, TickFormat::kSeconds), (std::vector<double>{1, 10}));
  EXPECT_EQ(LogTicks(2, 300, TickFormat::kNumber), (std::vector<double>{1, 10, 100, 1000}));
}

TEST(SvgChart, TickLabelsCarryUnits) {
  EXPECT_EQ(FormatTick(0.25, TickFormat::kPercent, 0.05), "25%");
  EXPECT_EQ(FormatTick(0.975, TickFormat::kPercent, 0.005), "97.5%");
  EXPECT_EQ(FormatTick(30, TickFormat::kSeconds, 0), "30s");
  EXPECT_EQ(FormatTick(600, TickFormat::kSeconds, 0), "10m");
  EXPECT_EQ(FormatTick(5400, TickFormat::kSeconds, 0), "1.5h");
  EXPECT_EQ(FormatTick(86400, TickFormat::kSeconds, 0), "1d");
  EXPECT_EQ(FormatTick(172800, TickFormat::kDays, 86400), "2");
  EXPECT_EQ(FormatTick(43200, TickFormat::kDays, 43200), "0.5");
  EXPECT_EQ(FormatTick(2.5, TickFormat::kNumber, 0.5), "2.5");
  EXPECT_EQ(FormatTick(1000, TickFormat::kNumber, 200), "1000");
}

LineChart Sample() {
  LineChart c;
  c.id = "c1";
  c.title = "Occupancy <over> time";
  c.x = {"time since start (days)", TickFormat::kDays, false, false, 0, 1};
  c.y = {"occupancy (% of capacity)", TickFormat::kPercent, false, true, 0, 1};
  c.series.push_back({"hourglass", Colour(0), {{0, 0.5}, {86400, 0.9}, {172800, 1.0}}, false});
  c.series.push_back({"a&b", Colour(1), {{0, 0.2}, {172800, 0.4}}, true});
  return c;
}

TEST(SvgChart, LineChartHasTitleAxesTicksLegendAndMarks) {
  const std::string s = Render(Sample());
  EXPECT_EQ(s.rfind("<svg ", 0), 0u);
  EXPECT_NE(s.find("class=\"chart\" id=\"c1\""), std::string::npos);
  EXPECT_NE(s.find("<title>Occupancy &lt;over&gt; time</title>"), std::string::npos);
  EXPECT_NE(s.find(">time since start (days)</text>"), std::string::npos);
  EXPECT_NE(s.find(">occupancy (% of capacity)</text>"), std::string::npos);
  // Fixed 0..1 percent axis: ticks every 20%; time axis: day ticks 0, 1, 2.
  for (const char* tick :
       {">0%<", ">20%<", ">40%<", ">60%<", ">80%<", ">100%<", ">0<", ">1<", ">2<"})
    EXPECT_NE(s.find(tick), std::string::npos) << tick;
  EXPECT_EQ(Count(s, "class=\"legend-entry\""), 2u);
  EXPECT_NE(s.find("data-series=\"hourglass\""), std::string::npos);
  EXPECT_NE(s.find("data-series=\"a&amp;b\""), std::string::npos);
  EXPECT_EQ(s.find("a&b"), std::string::npos);  // never unescaped
  EXPECT_EQ(Count(s, "<path class=\"mark\""), 2u);
  // The step series draws horizontal-then-vertical segments.
  EXPECT_NE(s.find('H'), std::string::npos);
  EXPECT_NE(s.find("stroke=\"#D55E00\""), std::string::npos);
}

TEST(SvgChart, PointsLandWhereTheAxesSay) {
  LineChart c = Sample();
  c.series.resize(1);
  c.series[0].points = {{0, 0}, {172800, 1.0}};
  const std::string s = Render(c);
  // Plot area: x from 74 to width-20 = 840; y=1.0 at the top of the plot, y=0 at its bottom.
  const size_t at = s.find("<path class=\"mark\"");
  ASSERT_NE(at, std::string::npos);
  const std::string path = s.substr(at, s.find("/>", at) - at);
  EXPECT_NE(path.find("d=\"M74 "), std::string::npos) << path;
  EXPECT_NE(path.find("L840 "), std::string::npos) << path;
}

TEST(SvgChart, SinglePointSeriesGetsAVisibleDot) {
  LineChart c = Sample();
  c.series[1].points = {{86400, 0.3}};
  const std::string s = Render(c);
  EXPECT_EQ(Count(s, "<circle class=\"mark\" data-series=\"a&amp;b\""), 1u);
}

TEST(SvgChart, BarChartDrawsOutlinedAndFilledBarsPerSeriesAndCategory) {
  BarChart b;
  b.id = "bars";
  b.title = "Owed vs delivered";
  b.categories = {"prog0/x", "prog1/<y>"};
  b.y.label = "GPU-hours";
  b.outline_label = "owed (outline)";
  b.filled_label = "delivered (filled)";
  b.series.push_back({"hourglass", Colour(0), {100, 50}, {98, 50}});
  b.series.push_back({"fifo", Colour(1), {100, 50}, {60, 80}});
  const std::string s = Render(b);
  EXPECT_EQ(Count(s, "<rect class=\"mark\""), 8u);  // 2 series x 2 categories x 2 bars
  EXPECT_EQ(Count(s, "class=\"legend-entry\""), 2u);
  EXPECT_EQ(Count(s, "class=\"legend-key\""), 2u);
  EXPECT_NE(s.find(">owed (outline)<"), std::string::npos);
  EXPECT_NE(s.find(">prog1/&lt;y&gt;<"), std::string::npos);
  EXPECT_NE(s.find(">GPU-hours<"), std::string::npos);
  // The value axis covers the largest bar: ticks 0..100.
  EXPECT_NE(s.find(">100<"), std::string::npos);
  EXPECT_NE(s.find(">0<"), std::string::npos);
}

TEST(SvgChart, OutputIsAPureFunctionOfTheData) {
  EXPECT_EQ(Render(Sample()), Render(Sample()));
  LineChart other = Sample();
  other.series[0].points[1].y = 0.8;
  EXPECT_NE(Render(Sample()), Render(other));
}

}  // namespace
}  // namespace hg::sim::svg
