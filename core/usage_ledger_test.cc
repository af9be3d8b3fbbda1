#include "core/usage_ledger.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace hg {
namespace {

// p > {x, y}; q. A 4-hour window of hourly buckets keeps the arithmetic readable.
struct Fixture {
  BudgetTree tree;
  BudgetId p, x, y, q;
  Fixture() : tree(Make()) {
    p = *tree.Find("p");
    x = *tree.Find("x");
    y = *tree.Find("y");
    q = *tree.Find("q");
  }
  static BudgetTree Make() {
    BudgetSpec sp{"p", "", 1.0, {}, {}, 0}, sx{"x", "p", 1.0, {}, {}, 0},
        sy{"y", "p", 1.0, {}, {}, 0}, sq{"q", "", 1.0, {}, {}, 0};
    auto t = BudgetTree::Build({sp, sx, sy, sq});
    EXPECT_TRUE(t.has_value());
    return std::move(*t);
  }
};

constexpr Seconds kWindow = Hours(4);
constexpr Seconds kBucket = Hours(1);

TEST(UsageLedger, DefaultsToASevenDayWindow) {
  Fixture f;
  UsageLedger l(f.tree);
  EXPECT_EQ(l.window(), Days(7));
  EXPECT_EQ(l.now(), Seconds(0));
  l.Charge(f.x, Seconds(0), Days(6), 1.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 6.0 * 86400);
}

TEST(UsageLedger, ChargeReachesEveryAncestorAndNoSibling) {
  Fixture f;
  UsageLedger l(f.tree, kWindow, kBucket);
  l.Charge(f.x, Seconds(0), Seconds(1800), 2.0);
  EXPECT_EQ(l.now(), Seconds(1800));  // time moved forward to the end of the charge
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 3600.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.p), 3600.0);
  EXPECT_DOUBLE_EQ(l.Usage(kRootBudget), 3600.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.y), 0.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.q), 0.0);
  l.Charge(f.q, Seconds(1800), Seconds(3600), 0.5);
  EXPECT_DOUBLE_EQ(l.Usage(f.q), 900.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.p), 3600.0);
  EXPECT_DOUBLE_EQ(l.Usage(kRootBudget), 4500.0);
}

TEST(UsageLedger, ChargeToAnInnerBudgetsDirectChildCountsForTheParentOnly) {
  Fixture f;
  UsageLedger l(f.tree, kWindow, kBucket);
  const BudgetId direct = f.tree.ChargeTarget(f.p);
  ASSERT_NE(direct, f.p);
  l.Charge(direct, Seconds(0), Seconds(100), 1.0);
  EXPECT_DOUBLE_EQ(l.Usage(direct), 100.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.p), 100.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 0.0);
}

TEST(UsageLedger, EmptyOrZeroRateChargesChangeNothing) {
  Fixture f;
  UsageLedger l(f.tree, kWindow, kBucket);
  l.Charge(f.x, Seconds(100), Seconds(100), 5.0);
  l.Charge(f.x, Seconds(200), Seconds(100), 5.0);
  l.Charge(f.x, Seconds(0), Seconds(500), 0.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 0.0);
  EXPECT_DOUBLE_EQ(l.Usage(kRootBudget), 0.0);
}

TEST(UsageLedger, ChargeSpanningBucketsIsSplitExactly) {
  Fixture f;
  UsageLedger l(f.tree, kWindow, kBucket);
  // [30 min, 2.5 h) at 4 GPUs: 30 + 60 + 30 minutes.
  l.Charge(f.y, Minutes(30), Minutes(150), 4.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.y), 4.0 * 7200);
  // Slide until the first bucket [0, 1 h) is the oldest one and half outside the window: the
  // prorated part of it goes (it held 1800 s x 4, spread over the bucket as far as the ledger
  // knows), the later buckets stay.
  l.AdvanceTo(kWindow + Minutes(30));
  EXPECT_DOUBLE_EQ(l.Usage(f.y), 4.0 * 7200 - 4.0 * 1800 * 0.5);
  // Once the first bucket is gone entirely only 1.5 h remain.
  l.AdvanceTo(kWindow + Hours(1));
  EXPECT_DOUBLE_EQ(l.Usage(f.y), 4.0 * 5400);
}

TEST(UsageLedger, UsageDecaysContinuouslyAsTheWindowSlides) {
  Fixture f;
  UsageLedger l(f.tree, kWindow, kBucket);
  l.Charge(f.x, Seconds(0), Hours(1), 1.0);  // one full bucket
  l.AdvanceTo(kWindow);                      // window [0, 4 h]: all of it counts
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 3600.0);
  l.AdvanceTo(kWindow + Seconds(900));  // window starts 15 min into the bucket
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 2700.0);
  l.AdvanceTo(kWindow + Seconds(1800));
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 1800.0);
  l.AdvanceTo(kWindow + Seconds(3599));
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 1.0);
  l.AdvanceTo(kWindow + Hours(1));
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 0.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.p), 0.0);
  EXPECT_DOUBLE_EQ(l.Usage(kRootBudget), 0.0);
}

TEST(UsageLedger, SteadyChargeSaturatesAtRateTimesWindowAcrossRingWraps) {
  // A constant rate charged in 15-minute steps for 5 windows: usage is always exactly
  // rate * min(t, W), also mid-bucket and after the ring buffer has wrapped several times.
  Fixture f;
  UsageLedger l(f.tree, kWindow, kBucket);
  const double rate = 3.0;
  for (Seconds t(0); t < kWindow * 5; t += Minutes(15)) {
    l.Charge(f.x, t, t + Minutes(15), rate);
    const Seconds now = t + Minutes(15);
    ASSERT_EQ(l.now(), now);
    const double want = rate * static_cast<double>(std::min(now, kWindow).value());
    ASSERT_DOUBLE_EQ(l.Usage(f.x), want) << "at " << now;
    ASSERT_DOUBLE_EQ(l.Usage(f.p), want) << "at " << now;
  }
}

TEST(UsageLedger, AdvancingPastTheWholeWindowClearsEverything) {
  Fixture f;
  UsageLedger l(f.tree, kWindow, kBucket);
  l.Charge(f.x, Seconds(0), Hours(3), 2.0);
  l.Charge(f.q, Hours(2), Hours(3), 1.0);
  ASSERT_GT(l.Usage(kRootBudget), 0.0);
  l.AdvanceTo(Hours(3) + kWindow + kBucket * 3);
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 0.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.q), 0.0);
  EXPECT_DOUBLE_EQ(l.Usage(kRootBudget), 0.0);
  // And the ledger keeps working after the jump.
  l.Charge(f.y, l.now(), l.now() + Seconds(10), 1.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.y), 10.0);
  EXPECT_DOUBLE_EQ(l.Usage(kRootBudget), 10.0);
}

TEST(UsageLedger, TimeNeverMovesBackwards) {
  Fixture f;
  UsageLedger l(f.tree, kWindow, kBucket);
  l.Charge(f.x, Seconds(0), Hours(1), 1.0);
  l.AdvanceTo(Hours(5) + Minutes(30));
  const double u = l.Usage(f.x);
  l.AdvanceTo(Hours(2));
  EXPECT_EQ(l.now(), Hours(5) + Minutes(30));
  EXPECT_DOUBLE_EQ(l.Usage(f.x), u);
}

TEST(UsageLedger, ChargesOlderThanTheWindowAreDropped) {
  Fixture f;
  UsageLedger l(f.tree, kWindow, kBucket);
  l.AdvanceTo(Hours(10));  // window [6 h, 10 h]
  l.Charge(f.x, Hours(1), Hours(5), 1.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 0.0);
  EXPECT_DOUBLE_EQ(l.Usage(kRootBudget), 0.0);
  EXPECT_EQ(l.now(), Hours(10));  // a late charge does not move time
  // A late charge that reaches into the window keeps only the part inside it.
  l.Charge(f.y, Hours(4), Hours(7), 2.0);
  EXPECT_DOUBLE_EQ(l.Usage(f.y), 2.0 * 3600);
  EXPECT_DOUBLE_EQ(l.Usage(f.p), 2.0 * 3600);
}

TEST(UsageLedger, SmallBucketsTrackTheWindowPrecisely) {
  Fixture f;
  UsageLedger l(f.tree, Seconds(100), Seconds(10));
  l.Charge(f.x, Seconds(0), Seconds(10), 1.0);
  l.Charge(f.x, Seconds(50), Seconds(60), 1.0);
  l.AdvanceTo(Seconds(105));  // window [5, 105]: half of the first charge left
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 15.0);
  l.AdvanceTo(Seconds(155));  // window [55, 155]: half of the second
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 5.0);
  l.AdvanceTo(Seconds(160));
  EXPECT_DOUBLE_EQ(l.Usage(f.x), 0.0);
}

}  // namespace
}  // namespace hg
