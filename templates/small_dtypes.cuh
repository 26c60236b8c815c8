// templates/small_dtypes.cuh: the sub-16-bit ONNX types on the GPU (float8 e4m3fn / e4m3fnuz /
// e5m2 / e5m2fnuz / e8m0, float4e2m1, int4 / uint4 / int2 / uint2). Storage is the host's: one byte
// per element (the integers sign- or zero-extended, the floats as their bit pattern); see
// ir/small_dtypes.h, whose encode/decode these functions reproduce bit for bit (the CPU test
// tests/codegen/small_dtypes_device_test.cc compiles this file as host code and compares them over
// every byte and a sweep of values). Inlined into a device source after common.cuh only when one
// of its kernels calls aotc_sf_* / aotc_si_*. A type is named by its ONNX number (17..26).
#ifndef AOTC_SMALL_DTYPES_CUH
#define AOTC_SMALL_DTYPES_CUH
#ifdef __CUDACC__
#define AOTC_SMALL_HD __host__ __device__ __forceinline__
#else  // host code (the unit test): the same functions from <cmath>
#include <cmath>
#include <cstring>
#define AOTC_SMALL_HD inline
using std::fabs; using std::floor; using std::fmod; using std::frexp; using std::isinf; using std::isnan;
using std::ldexp; using std::signbit;
#endif

// Sign/exponent/mantissa layout of a small float (not e8m0). nan: 0 none (float4e2m1), 1 all ones
// (e4m3fn), 2 IEEE (e5m2), 3 the negative-zero pattern 0x80 (the fnuz types).
struct aotc_sf_format {
  int exp_bits, man_bits, bias, has_inf, nan;
};

AOTC_SMALL_HD aotc_sf_format aotc_sf_format_of(int t) {
  switch (t) {
    case 17: return {4, 3, 7, 0, 1};   // float8e4m3fn
    case 18: return {4, 3, 8, 0, 3};   // float8e4m3fnuz
    case 19: return {5, 2, 15, 1, 2};  // float8e5m2
    case 20: return {5, 2, 16, 0, 3};  // float8e5m2fnuz
    default: return {2, 1, 1, 0, 0};   // 23: float4e2m1
  }
}

AOTC_SMALL_HD double aotc_sf_max(int t) {
  switch (t) {
    case 17: return 448.0;
    case 18: return 240.0;
    case 19: case 20: return 57344.0;
    case 24: return ldexp(1.0, 127);
    default: return 6.0;
  }
}

AOTC_SMALL_HD unsigned char aotc_sf_nan(aotc_sf_format f, bool negative) {
  const unsigned sign = negative ? 1u << (f.exp_bits + f.man_bits) : 0u;
  switch (f.nan) {
    case 1: return (unsigned char)(sign | ((1u << (f.exp_bits + f.man_bits)) - 1));
    case 2: return (unsigned char)(sign | (((1u << f.exp_bits) - 1) << f.man_bits) | (1u << (f.man_bits - 1)));
    case 3: return 0x80;
    default: return 0;
  }
}

// Bits of a finite, non-negative, exactly representable value.
AOTC_SMALL_HD unsigned char aotc_sf_exact(aotc_sf_format f, double r) {
  const double min_normal = ldexp(1.0, 1 - f.bias);
  if (r == 0) return 0;
  if (r < min_normal) return (unsigned char)(r / ldexp(1.0, 1 - f.bias - f.man_bits));
  int e;
  frexp(r, &e);
  const int exp_field = e - 1 + f.bias;
  const double man = (r / ldexp(1.0, e - 1) - 1.0) * ldexp(1.0, f.man_bits);
  return (unsigned char)((exp_field << f.man_bits) | (int)man);
}

AOTC_SMALL_HD double aotc_sf_decode(int t, unsigned char bits) {
  if (t == 24) return bits == 0xff ? (double)NAN : ldexp(1.0, (int)bits - 127);
  const aotc_sf_format f = aotc_sf_format_of(t);
  const int width = f.exp_bits + f.man_bits;
  bits &= (unsigned char)((1u << (width + 1)) - 1);
  if (f.nan == 3 && bits == 0x80) return (double)NAN;
  const bool negative = (bits >> width) & 1;
  const int exp_field = (bits >> f.man_bits) & ((1 << f.exp_bits) - 1);
  const int man = bits & ((1 << f.man_bits) - 1);
  const int exp_max = (1 << f.exp_bits) - 1;
  double v;
  if (f.nan == 1 && exp_field == exp_max && man == (1 << f.man_bits) - 1) v = (double)NAN;
  else if (f.nan == 2 && exp_field == exp_max) v = man ? (double)NAN : (double)INFINITY;
  else if (exp_field == 0) v = ldexp((double)man, 1 - f.bias - f.man_bits);
  else v = ldexp((double)(man + (1 << f.man_bits)), exp_field - f.bias - f.man_bits);
  return negative ? -v : v;
}

// float8e8m0 from the float32 value; rounding 0 up, 1 down, 2 nearest (ties up).
AOTC_SMALL_HD unsigned char aotc_e8m0_encode(float v, bool saturate, int rounding) {
  unsigned bits;
#ifdef __CUDA_ARCH__
  bits = __float_as_uint(v);
#else
  std::memcpy(&bits, &v, 4);
#endif
  const unsigned exponent = (bits >> 23) & 0xff;
  if (exponent == 0xff) return 0xff;
  bool round_up = false;
  if (rounding == 0) {
    round_up = (bits & 0x7fffff) != 0;
  } else if (rounding == 2) {
    const bool g = bits & 0x400000, r = bits & 0x200000, s = bits & 0x1fffff, lsb = exponent > 0;
    round_up = g && (r || s || lsb);
  }
  if (round_up && saturate && exponent == 0xfe) round_up = false;
  return (unsigned char)(exponent + (round_up ? 1 : 0));
}

// A value into a small float: round to nearest even on the exact value, then ONNX Cast's overflow
// table (saturate: +-max; else NaN, or +-Inf for e5m2). float4e2m1 always saturates.
AOTC_SMALL_HD unsigned char aotc_sf_encode(int t, double v, bool saturate, int rounding) {
  if (t == 24) return aotc_e8m0_encode((float)v, saturate, rounding);
  const aotc_sf_format f = aotc_sf_format_of(t);
  if (f.nan == 0) saturate = true;
  const bool negative = signbit(v);
  if (isnan(v)) return aotc_sf_nan(f, negative);
  const unsigned char sign = negative ? (unsigned char)(1u << (f.exp_bits + f.man_bits)) : 0;
  const double max = aotc_sf_max(t);
  const double a = fabs(v);
  double r = a;
  if (!isinf(a)) {
    const double min_normal = ldexp(1.0, 1 - f.bias);
    int e = 0;
    if (a >= min_normal) frexp(a, &e);
    const double quantum = a < min_normal ? ldexp(1.0, 1 - f.bias - f.man_bits) : ldexp(1.0, e - 1 - f.man_bits);
    const double q = a / quantum, fl = floor(q), d = q - fl;
    r = (d > 0.5 ? fl + 1 : d < 0.5 ? fl : (fmod(fl, 2.0) == 0 ? fl : fl + 1)) * quantum;
  }
  if (r > max) {
    if (saturate) return (unsigned char)(sign | aotc_sf_exact(f, max));
    if (f.has_inf) return (unsigned char)(sign | (((1u << f.exp_bits) - 1) << f.man_bits));
    return aotc_sf_nan(f, negative);
  }
  if (r == 0 && f.nan == 3) return 0;
  return (unsigned char)(sign | aotc_sf_exact(f, r));
}

// The low bits of v, sign-extended for int4 (22) / int2 (26): ONNX's out-of-range integer rule.
AOTC_SMALL_HD long long aotc_si_wrap(int t, long long v) {
  const int bits = (t == 21 || t == 22) ? 4 : 2;
  const unsigned long long mask = (1ull << bits) - 1;
  const long long u = (long long)((unsigned long long)v & mask);
  const bool is_signed = t == 22 || t == 26;
  if (is_signed && (u >> (bits - 1)) != 0) return u - (1ll << bits);
  return u;
}

// A double to int64 as the CPU reference's saturating_float_to_int: NaN 0, clamped to the range.
AOTC_SMALL_HD long long aotc_saturate_ll(double v) {
  if (v != v) return 0;
  if (v <= -9223372036854775808.0) return (long long)(-9223372036854775807ll - 1);
  if (v >= 9223372036854775807.0) return 9223372036854775807ll;
  return (long long)v;
}

#endif  // AOTC_SMALL_DTYPES_CUH
