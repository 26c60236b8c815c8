// templates/int8_requant.cuh: the int8 epilogue's integer requantization must equal the CPU
// reference's rint(double(p) * double(m)) bit for bit wherever it claims to apply, and decline
// (false) where the double product may be inexact. Checked on every rounding-relevant corner
// (exact halves, ties to even on both signs, subnormal and huge multipliers, |p| at the 2^29
// bound) and on millions of random pairs across the whole float exponent range.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "templates/int8_requant.cuh"

namespace aotc {
namespace {

uint32_t bits_of(float m) {
  uint32_t b;
  std::memcpy(&b, &m, sizeof b);
  return b;
}

float float_of(uint32_t b) {
  float m;
  std::memcpy(&m, &b, sizeof m);
  return m;
}

// The reference's arithmetic (ir/ops/integer_matmul.cc, the template's double path).
double reference(int32_t p, float m) { return std::rint(static_cast<double>(p) * static_cast<double>(m)); }

void expect_same(int32_t p, float m) {
  int64_t got = 0;
  const bool applies = aotc_requant_rint(p, bits_of(m), &got);
  const bool exact = std::isfinite(m) && p < (1 << 29) && p > -(1 << 29) && std::fabs(m) < 8589934592.0f;
  ASSERT_EQ(applies, exact) << "p " << p << " m " << m;
  if (applies) {
    ASSERT_EQ(static_cast<double>(got), reference(p, m)) << "p " << p << " m " << m;
  }
}

TEST(Int8Requant, CornersMatchTheDoubleRounding) {
  // Exact halves: p * m = k + 1/2 for both parities of k and both signs (ties to even).
  for (int32_t p : {1, -1, 3, -3, 5, -5, 7, 1023, -1023, (1 << 28) + 1, -(1 << 28) - 1}) {
    for (float m : {0.5f, 1.5f, 0.25f, 2.5f, 0.125f, 0.375f}) expect_same(p, m);
  }
  // Zero, signed zero, tiny, subnormal and large multipliers; p at the integer route's bound.
  for (int32_t p : {0, 1, -1, 77, -77, (1 << 29) - 1, -(1 << 29) + 1, 1 << 29, -(1 << 29), INT32_MAX, INT32_MIN}) {
    for (float m : {0.0f, -0.0f, 1e-45f, 3e-39f, 1.1754942e-38f, 1e-10f, 3.7e-4f, 0.0031f, 1.0f, 255.0f, 8388608.0f,
                    4294967296.0f, 8589934592.0f, -0.0031f, INFINITY, -INFINITY, NAN}) {
      expect_same(p, m);
    }
  }
}

TEST(Int8Requant, RandomPairsMatchTheDoubleRounding) {
  std::mt19937_64 rng(20261128);
  std::uniform_int_distribution<int32_t> any_p(INT32_MIN, INT32_MAX);
  std::uniform_int_distribution<int32_t> conv_p(-(1 << 24), 1 << 24);  // int8 sums of realistic layers
  std::uniform_int_distribution<uint32_t> any_bits(0, 0xffffffffu);
  std::uniform_real_distribution<float> scale(1e-7f, 1e-1f);
  for (int i = 0; i < 2000000; ++i) {
    expect_same(conv_p(rng), scale(rng));
    expect_same(any_p(rng) >> (i % 8), float_of(any_bits(rng)));
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Products landing exactly on halves: p * m = (2k + 1) / 2 with m = 2^-e.
  for (int e = 1; e < 40; ++e) {
    for (int32_t p : {1, 3, 5, -1, -3, 1 << 20, (1 << 20) + 1, -(1 << 20) - 1}) expect_same(p, std::ldexp(1.0f, -e));
  }
}

}  // namespace
}  // namespace aotc
