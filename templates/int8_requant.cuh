// int8 requantization in integer arithmetic, for the int8 tensor-core kernels' epilogue
// (templates/cutlass_conv2d_fprop_i8.cu.in) and its host tests.
//
// The CPU reference requantizes an int32 sum p with a float multiplier m as rint(double(p) *
// double(m)) (ir/ops/integer_matmul.cc). On the GPU that is an int -> double conversion, a double
// product, a double rint and a double -> int conversion per output, which run at a quarter of the
// integer rate or less: ResNet-50's int8 1x1 convolutions (K = 64) were bound by them (ncu on an
// H200: 61 us at 59% SM and 3% DRAM throughput). Here the same value comes from the exact integer
// product p * mantissa(m) (below 2^53), shifted right by m's exponent with round-half-to-even.
// Whenever |p| < 2^29 the double product is exact (29 + 24 significant bits fit its 53), so both
// round the same exact value and agree bit for bit; otherwise, and for an infinite or NaN m, the
// function returns false and the caller keeps the double arithmetic.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define AOTC_REQUANT_FN __host__ __device__ __forceinline__
#else
#define AOTC_REQUANT_FN inline
#endif

// *out = rint(double(p) * double(m)) for m given by its IEEE bits; false when the integer route
// does not apply (|p| >= 2^29, m infinite or NaN, or m >= 2^33).
AOTC_REQUANT_FN bool aotc_requant_rint(int32_t p, uint32_t m_bits, int64_t* out) {
  const uint32_t biased = (m_bits >> 23) & 0xffu;
  if (biased == 0xffu || p >= (int32_t{1} << 29) || p <= -(int32_t{1} << 29)) return false;
  int64_t mant = static_cast<int64_t>(m_bits & 0x7fffffu);
  int e = -149;  // subnormal: mant * 2^-149
  if (biased != 0) {
    mant |= int64_t{0x800000};
    e = static_cast<int>(biased) - 150;
  }
  if (m_bits >> 31) mant = -mant;
  const int64_t prod = static_cast<int64_t>(p) * mant;  // |prod| < 2^53: exact
  if (e >= 0) {
    if (e > 9) return false;  // keeps |prod| * 2^e below 2^62
    *out = prod * (int64_t{1} << e);
    return true;
  }
  const int s = -e;
  if (s >= 62) {  // |prod| * 2^-s < 2^-9: rounds to 0
    *out = 0;
    return true;
  }
  const int64_t q = prod >> s;  // floor (arithmetic shift)
  const uint64_t rem = static_cast<uint64_t>(prod) & ((uint64_t{1} << s) - 1u);  // prod - q * 2^s
  const uint64_t half = uint64_t{1} << (s - 1);
  *out = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
  return true;
}
