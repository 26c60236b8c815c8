// templates/small_dtypes.cuh compiled as host code and compared with ir/small_dtypes.cc, the CPU
// reference's encode/decode (itself checked by the ONNX node tests of Cast / Q / DQ): every byte
// decoded, and values around every representable one (exact, ties, just off, beyond the range,
// Inf, NaN, signed zeros, a seeded random sweep) encoded with and without saturation. The GPU
// kernels call exactly these functions, so a difference here would be a GPU/CPU mismatch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ir/small_dtypes.h"
#include "ir/tensor.h"
#include "templates/small_dtypes.cuh"

namespace aotc {
namespace {

const DType kFloats[] = {DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
                         DType::kFloat8E5M2FNUZ, DType::kFloat4E2M1, DType::kFloat8E8M0};

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

int bytes_of(DType t) { return t == DType::kFloat4E2M1 ? 16 : 256; }

TEST(SmallDtypesDevice, DecodeMatchesTheReferenceOnEveryByte) {
  for (DType t : kFloats)
    for (int b = 0; b < bytes_of(t); ++b) {
      const double want = small_float_decode(t, static_cast<uint8_t>(b));
      const double got = aotc_sf_decode(static_cast<int>(t), static_cast<unsigned char>(b));
      EXPECT_TRUE(same(got, want)) << dtype_name(t) << " byte " << b << ": " << got << " vs " << want;
    }
}

std::vector<double> probe_values(DType t) {
  std::vector<double> v = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1e300, -1e300, 1e-300, -1e-300};
  std::vector<double> finite;
  for (int b = 0; b < bytes_of(t); ++b) {
    const double d = small_float_decode(t, static_cast<uint8_t>(b));
    if (std::isfinite(d)) finite.push_back(d);
  }
  std::sort(finite.begin(), finite.end());
  for (size_t i = 0; i < finite.size(); ++i) {
    const double d = finite[i];
    v.insert(v.end(), {d, std::nextafter(d, INFINITY), std::nextafter(d, -INFINITY), d * 1.5, d * 2, d * 4});
    if (i + 1 < finite.size()) {
      const double mid = (d + finite[i + 1]) / 2;  // ties: half to even
      v.insert(v.end(), {mid, std::nextafter(mid, INFINITY), std::nextafter(mid, -INFINITY)});
    }
  }
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> exponent(-150, 140), unit(-1, 1);
  for (int i = 0; i < 20000; ++i) v.push_back(unit(rng) * std::ldexp(1.0, static_cast<int>(exponent(rng))));
  return v;
}

TEST(SmallDtypesDevice, EncodeMatchesTheReferenceWithAndWithoutSaturation) {
  const E8M0Rounding kRoundings[] = {E8M0Rounding::kUp, E8M0Rounding::kDown, E8M0Rounding::kNearest};
  for (DType t : kFloats)
    for (double x : probe_values(t))
      for (bool saturate : {true, false})
        for (int r = 0; r < (t == DType::kFloat8E8M0 ? 3 : 1); ++r) {
          const uint8_t want = small_float_encode(t, x, saturate, kRoundings[r]);
          const unsigned char got = aotc_sf_encode(static_cast<int>(t), x, saturate, r);
          ASSERT_EQ(static_cast<int>(got), static_cast<int>(want))
              << dtype_name(t) << " of " << x << " saturate " << saturate << " rounding " << r;
        }
}

TEST(SmallDtypesDevice, IntegerWrapAndSaturationMatchTheReference) {
  const DType kInts[] = {DType::kUInt4, DType::kInt4, DType::kUInt2, DType::kInt2};
  std::vector<long long> values;
  for (long long v = -300; v <= 300; ++v) values.push_back(v);
  values.insert(values.end(), {std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max(),
                               (1ll << 40) + 7, -(1ll << 40) - 9});
  for (DType t : kInts)
    for (long long v : values)
      ASSERT_EQ(aotc_si_wrap(static_cast<int>(t), v), small_int_wrap(t, v)) << dtype_name(t) << " of " << v;
  for (double d : {0.0, -0.0, 7.9, -7.9, 1e19, -1e19, 9223372036854775807.0, -9223372036854775808.0,
                   static_cast<double>(NAN), static_cast<double>(INFINITY), -static_cast<double>(INFINITY), 123456.75})
    EXPECT_EQ(aotc_saturate_ll(d), saturating_float_to_int<int64_t>(d)) << d;
}

}  // namespace
}  // namespace aotc
