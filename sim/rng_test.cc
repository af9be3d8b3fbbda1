#include "sim/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace hg::sim {
namespace {

TEST(Rng, SplitMix64MatchesReferenceVector) {
  // First outputs of the reference splitmix64 seeded with 0.
  uint64_t state = 0;
  EXPECT_EQ(SplitMix64(state), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(SplitMix64(state), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(SplitMix64(state), 0x06C45D188009454FULL);
}

TEST(Rng, Xoshiro256StarStarMatchesReferenceVector) {
  // The reference implementation from state {1, 2, 3, 4}.
  Rng r = Rng::FromState(1, 2, 3, 4);
  EXPECT_EQ(r.Next(), 11520u);
  EXPECT_EQ(r.Next(), 0u);
  EXPECT_EQ(r.Next(), 1509978240u);
  EXPECT_EQ(r.Next(), 1215971899390074240u);
}

TEST(Rng, SameSeedSameStreamDifferentSeedsDiffer) {
  Rng a(42), b(42), c(43);
  bool differ = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differ |= x != c.Next();
  }
  EXPECT_TRUE(differ);
}

TEST(Rng, ForksAreDeterministicAndIndependent) {
  const Rng root(7);
  Rng f1 = root.Fork(1), f1again = root.Fork(1), f2 = root.Fork(2);
  int same = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = f1.Next();
    EXPECT_EQ(x, f1again.Next());
    same += x == f2.Next();
  }
  EXPECT_EQ(same, 0);
}

TEST(Rng, UniformIntCoversItsRangeEvenly) {
  Rng r(1);
  std::array<int, 7> count{};
  for (int i = 0; i < 70'000; ++i) {
    const int64_t x = r.UniformInt(-3, 3);
    ASSERT_GE(x, -3);
    ASSERT_LE(x, 3);
    count[static_cast<size_t>(x + 3)]++;
  }
  for (int c : count) EXPECT_NEAR(c, 10'000, 500);
  EXPECT_EQ(r.UniformInt(5, 5), 5);
}

TEST(Rng, Uniform01StaysInHalfOpenInterval) {
  Rng r(2);
  double sum = 0;
  for (int i = 0; i < 100'000; ++i) {
    const double u = r.Uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100'000, 0.5, 0.01);
}

TEST(Rng, DistributionsHaveTheirMoments) {
  Rng r(3);
  const int n = 200'000;
  double exp_sum = 0, norm_sum = 0, norm_sq = 0, pois_sum = 0;
  std::vector<double> logn;
  for (int i = 0; i < n; ++i) {
    exp_sum += r.Exponential(5.0);
    const double z = r.Normal();
    norm_sum += z;
    norm_sq += z * z;
    pois_sum += r.Poisson(3.5);
    logn.push_back(r.LogNormal(100.0, 0.8));
  }
  EXPECT_NEAR(exp_sum / n, 5.0, 0.1);
  EXPECT_NEAR(norm_sum / n, 0.0, 0.01);
  EXPECT_NEAR(norm_sq / n, 1.0, 0.02);
  EXPECT_NEAR(pois_sum / n, 3.5, 0.03);
  std::nth_element(logn.begin(), logn.begin() + n / 2, logn.end());
  EXPECT_NEAR(logn[static_cast<size_t>(n / 2)], 100.0, 2.0);  // the median is the parameter
  EXPECT_EQ(r.Poisson(0.0), 0);
}

TEST(Rng, ChoiceFollowsWeightsAndSkipsZeroWeights) {
  Rng r(4);
  const std::array<double, 4> w = {1, 0, 3, 6};
  std::array<int, 4> count{};
  for (int i = 0; i < 100'000; ++i) count[r.Choice(w)]++;
  EXPECT_EQ(count[1], 0);
  EXPECT_NEAR(count[0], 10'000, 600);
  EXPECT_NEAR(count[2], 30'000, 900);
  EXPECT_NEAR(count[3], 60'000, 900);
}

}  // namespace
}  // namespace hg::sim
