// A small deterministic random number generator and the distributions the workload generators
// need. std:: distributions are avoided on purpose: their output is not specified by the standard
// and differs between standard libraries, and a seeded scenario must be the same everywhere.
//
// Engine: xoshiro256** (Blackman & Vigna), seeded through splitmix64 as its authors recommend.
// Only integer arithmetic, IEEE-exact operations (+, *, /, sqrt) and std::log / std::exp are used;
// the latter two are the only libm calls and they are correctly rounded on the platforms we build
// for (glibc).
#pragma once

#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace hg::sim {

// One step of splitmix64: advances `state` and returns a well-mixed 64-bit value.
inline uint64_t SplitMix64(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t sm = seed;
    for (uint64_t& w : s_) w = SplitMix64(sm);
  }

  // The raw state, for tests against the published reference vectors.
  static Rng FromState(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3) {
    Rng r(0);
    r.s_[0] = s0;
    r.s_[1] = s1;
    r.s_[2] = s2;
    r.s_[3] = s3;
    return r;
  }

  // An independent stream derived from this generator's current state and `stream` (this one is
  // not advanced). Forking every part of a generator from one fresh root keeps the parts apart:
  // adding draws to one part does not shift the numbers any other part sees.
  Rng Fork(uint64_t stream) const {
    uint64_t sm = s_[0] ^ Rotl(s_[1], 17) ^ Rotl(s_[2], 31) ^ Rotl(s_[3], 47) ^
                  (stream * 0xD1342543DE82EF95ULL);
    return Rng(SplitMix64(sm));
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform01() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Uniform in [lo, hi).
  double UniformReal(double lo, double hi) { return lo + (hi - lo) * Uniform01(); }

  // Uniform integer in [lo, hi], without modulo bias (rejection on the top of the range).
  int64_t UniformInt(int64_t lo, int64_t hi) {
    assert(lo <= hi);
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    if (span == UINT64_MAX) return static_cast<int64_t>(Next());
    const uint64_t n = span + 1;
    const uint64_t limit = UINT64_MAX - (UINT64_MAX % n);  // accept x < limit
    uint64_t x = Next();
    while (x >= limit) x = Next();
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % n);
  }

  bool Bernoulli(double p) { return Uniform01() < p; }

  // Exponential with the given mean (inverse transform; 1 - u is in (0, 1]).
  double Exponential(double mean) { return -mean * std::log(1.0 - Uniform01()); }

  // Standard normal by Marsaglia's polar method (needs only log and sqrt, unlike Box-Muller).
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0;
    double v = 0;
    double s = 0;
    do {
      u = 2.0 * Uniform01() - 1.0;
      v = 2.0 * Uniform01() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }

  // Log-normal given its median (= exp(mu)) and the sigma of the underlying normal.
  double LogNormal(double median, double sigma) { return median * std::exp(sigma * Normal()); }

  // Poisson by counting uniform products (Knuth); fine for the small means used here (< 500).
  int Poisson(double mean) {
    assert(mean >= 0 && mean < 500);
    const double limit = std::exp(-mean);
    int k = 0;
    double p = Uniform01();
    while (p > limit) {
      ++k;
      p *= Uniform01();
    }
    return k;
  }

  // Index drawn with probability proportional to `weights` (all >= 0, sum > 0).
  size_t Choice(std::span<const double> weights) {
    double total = 0;
    for (double w : weights) total += w;
    assert(total > 0);
    const double x = Uniform01() * total;
    double acc = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      acc += weights[i];
      if (x < acc) return i;
    }
    // Rounding can leave x just at the total: return the last index with positive weight.
    for (size_t i = weights.size(); i-- > 0;) {
      if (weights[i] > 0) return i;
    }
    return 0;
  }

  // Uniform index in [0, n).
  size_t Index(size_t n) {
    assert(n > 0);
    return static_cast<size_t>(UniformInt(0, static_cast<int64_t>(n) - 1));
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  uint64_t s_[4] = {0, 0, 0, 0};
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace hg::sim
