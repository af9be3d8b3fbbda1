#include "cli/duration.h"

#include <gtest/gtest.h>

namespace hg::cli {
namespace {

TEST(DurationTest, AcceptsUnitsAndBareSeconds) {
  EXPECT_EQ(ParseDuration("90s", "f").value(), 90);
  EXPECT_EQ(ParseDuration("30m", "f").value(), 1800);
  EXPECT_EQ(ParseDuration("2h", "f").value(), 7200);
  EXPECT_EQ(ParseDuration("1d", "f").value(), 86400);
  EXPECT_EQ(ParseDuration("3600", "f").value(), 3600);
  EXPECT_EQ(ParseDuration("0", "f").value(), 0);
  EXPECT_EQ(ParseDuration("1h30m", "f").value(), 5400);
  EXPECT_EQ(ParseDuration("1d2h3m4s", "f").value(), 93784);
}

TEST(DurationTest, RefusesMalformedWithTheField) {
  for (const char* bad : {"", "h", "2x", "-5", "-5m", "1.5h", "2 h", " 2h", "1h30", "h2", "2hh"}) {
    const auto r = ParseDuration(bad, "--max-runtime");
    ASSERT_FALSE(r.has_value()) << "'" << bad << "' was accepted as " << *r;
    EXPECT_EQ(r.error().field, "--max-runtime");
    EXPECT_FALSE(r.error().reason.empty());
  }
}

TEST(DurationTest, RefusesAbsurdlyLongAndOverflow) {
  EXPECT_FALSE(ParseDuration("99999999999999999999999", "f").has_value());
  EXPECT_FALSE(ParseDuration("4000d", "f").has_value());
  EXPECT_TRUE(ParseDuration("3650d", "f").has_value());
}

TEST(DurationTest, FormatsTheTwoLargestUnits) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(-3), "0s");
  EXPECT_EQ(FormatDuration(45), "45s");
  EXPECT_EQ(FormatDuration(90), "1m30s");
  EXPECT_EQ(FormatDuration(3600), "1h");
  EXPECT_EQ(FormatDuration(5400), "1h30m");
  EXPECT_EQ(FormatDuration(3605), "1h");  // seconds are below the two largest units
  EXPECT_EQ(FormatDuration(93784), "1d2h");
  EXPECT_EQ(FormatDuration(28800), "8h");
}

TEST(DurationTest, FormatsUtcTimes) {
  EXPECT_EQ(FormatTime(0), "-");
  EXPECT_EQ(FormatTime(1), "1970-01-01 00:00:01Z");
  EXPECT_EQ(FormatTime(1764691200), "2025-12-02 16:00:00Z");
}

}  // namespace
}  // namespace hg::cli
