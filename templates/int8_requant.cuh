// int8 requantization: routes to the CPU reference's rounding, bit for bit, for the int8 kernels'
// epilogues (templates/cutlass_conv2d_fprop_i8.cu.in, _sm90_i8.cu.in, integer_conv.cu.in,
// integer_matmul.cu.in), the exact conversions templates/qlinear_add.cu.in uses, and their host
// test (tests/ops_quant/requant_test.cc).
//
// The reference computes rint(double(p) * double(m)) for an int32 sum p and a float multiplier m
// (ir/ops/integer_matmul.cc), then adds the zero point and clamps. Routes (aotc_requant_fragment):
// - the double path itself (I2F.F64, DMUL, FRND.F64, F2I.F64 an element): where FP64 runs at half
//   the FP32 rate or better (sm_80, sm_90, sm_100);
// - the fp32 route, branch-free (aotc_requant_rint_fp32_select): for |p| < 2^22 (p exact in float,
//   converted by a magic-number add), hi = fp32(p * m) and lo = fma(p, m, -hi) = the exact rounding
//   error, so p * m = hi + lo exactly. rint(hi) is the answer unless hi is exactly k + 1/2, where
//   the sign of lo decides (above: k + 1, below: k, zero: a true tie, to even). Rounding is
//   monotonic, so when hi is not a half-integer, p * m lies strictly between the same
//   half-integers as hi. The integer comes from adding 1.5 * 2^23 (exact round-to-nearest-even for
//   |hi| < 2^22); beyond that the result saturates at any int8 zero point and clamp. The double
//   product is exact for |p| < 2^29, so both round the same exact value. The rare elements outside
//   its range (|p| >= 2^22, m not finite) take the double path. The default where FP64 is slow
//   (sm_86 / sm_87 / sm_89 and sm_110+: 1/64 of the FP32 rate; Jetson Orin is sm_87);
// - the conversion-free double route (aotc_requant_rint_dmagic) where the lowering proved every
//   |m| < 0.5 (aotc's default for such layers; on FP64-poor GPUs the fp32 route instead), and its
//   one-FMA form (aotc_requant_rint_dfma) where the lowering also proved every |p| < 2^29.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define AOTC_REQUANT_FN __host__ __device__ __forceinline__
#define AOTC_REQUANT_UNROLL _Pragma("unroll")
#else
#define AOTC_REQUANT_FN inline
#define AOTC_REQUANT_UNROLL
#endif

// IEEE single operations that the compiler may not contract (an FMA in place of hi's product
// would change hi).
AOTC_REQUANT_FN float aotc_rq_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  volatile float r = a * b;
  return r;
#endif
}
AOTC_REQUANT_FN float aotc_rq_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  volatile float r = a + b;
  return r;
#endif
}
AOTC_REQUANT_FN float aotc_rq_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  volatile float r = a / b;
  return r;
#endif
}
AOTC_REQUANT_FN float aotc_rq_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return fmaf(a, b, c);
#endif
}
AOTC_REQUANT_FN int32_t aotc_rq_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_int(f);
#else
  int32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
#endif
}

AOTC_REQUANT_FN float aotc_rq_from_bits(int32_t b) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(b);
#else
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
#endif
}

// a + b modulo 2^32, without signed overflow.
AOTC_REQUANT_FN int32_t aotc_rq_wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// Integer <-> float conversions on the full-rate float and integer pipes instead of the converter
// (I2F / F2I run at a quarter of the FP32 rate on sm_80-sm_90).
// rint(q) as an integer for |q| < 2^22: adding 1.5 * 2^23 rounds to the nearest integer, ties to
// even, in the mantissa's low bits.
constexpr float kAotcRoundMagic = 12582912.0f;  // 1.5 * 2^23
constexpr int32_t kAotcRoundMagicBits = 0x4B400000;
AOTC_REQUANT_FN int32_t aotc_rint_small(float q) { return aotc_rq_bits(aotc_rq_add(q, kAotcRoundMagic)) - kAotcRoundMagicBits; }
// An 8-bit integer v (int8 or uint8) as a float, exactly: 2^23 + (v + 128) - (2^23 + 128).
AOTC_REQUANT_FN float aotc_int8_to_float(int v) { return aotc_rq_add(aotc_rq_from_bits(0x4B000000 | (v + 128)), -8388736.0f); }

// The fp32 route (see the top): rint(double(p) * double(m)) saturated to +-2^30, without branches -
// every step runs for every element and selects replace the branches, so the compiler interleaves
// elements (a branchy form measured 2x slower than double arithmetic in the sm_90a kernel,
// docs/perf_notes.md v48). *rare is set where this route does not apply - |p| >= 2^22 (beyond the
// magic-number conversion) or m not finite - and the caller then takes the double path for that
// element; the result is meaningless there.
AOTC_REQUANT_FN int32_t aotc_requant_rint_fp32_select(int32_t p, float m, bool* rare) {
  *rare = !(p < (1 << 22) && p > -(1 << 22)) || !(m - m == 0.0f);
  // Every step runs for every element, also where its result is discarded (rare p up to INT32_MAX,
  // saturated hi), so the integer steps wrap in unsigned arithmetic (as the hardware adds) instead
  // of overflowing a signed int.
  const float f = aotc_rq_add(aotc_rq_from_bits(aotc_rq_wrap_add(kAotcRoundMagicBits, p)), -kAotcRoundMagic);  // p, exactly
  const float hi = aotc_rq_mul(f, m);
  const float t = aotc_rq_add(hi, kAotcRoundMagic);
  const int32_t r = aotc_rq_wrap_add(aotc_rq_bits(t), -kAotcRoundMagicBits);
  const float frac = aotc_rq_add(hi, -aotc_rq_add(t, -kAotcRoundMagic));  // hi - rint(hi)
  const float lo = aotc_rq_fma(f, m, -hi);                                 // p * m - hi, exactly
  const bool tie = (frac == 0.5f || frac == -0.5f) && lo != 0.0f && ((lo > 0.0f) == (frac > 0.0f));
  const int32_t rounded = aotc_rq_wrap_add(r, tie ? (frac > 0.0f ? 1 : -1) : 0);
  const bool saturated = !(hi < 4194304.0f && hi > -4194304.0f);
  return saturated ? (hi > 0.0f ? (1 << 30) : -(1 << 30)) : rounded;
}

// The same rounding as the double path for multipliers |m| < 0.5 (so |p * m| < 2^30 for every
// int32 p), in three FP64 additions / multiplications and integer steps, no conversion instruction
// (I2F.F64, FRND.F64 and F2I.F64 issue at a quarter of the FP64 rate or less on sm_80 / sm_90 by
// the CUDA C++ Programming Guide's throughput table, not measured here; the double path needs
// three an element). double(p) exactly: the double with high word 0x43300000 and
// low word p + 2^31 is 2^52 + 2^31 + p, minus 2^52 + 2^31. v = double(p) * dm is the double path's
// own rounded product (dm = double(m), exact). rint(v): adding 1.5 * 2^52 leaves an exponent whose
// unit is 1, so round-to-nearest-even picks rint(v) (1.5 * 2^52 is even: the tie goes to the even
// integer) and the low word holds it in two's complement (|v| < 2^31). Only where the lowering
// proved every multiplier of the layer finite with |m| < 0.5 (ir/ops/integer_matmul.cc); on FP64-
// poor GPUs (sm_86 / sm_87 / sm_89: 1/64 of the FP32 rate) the fp32 route is the cheaper one.
constexpr double kAotcDoubleOfIntBias = 4503601774854144.0;  // 2^52 + 2^31
constexpr double kAotcDoubleRoundMagic = 6755399441055744.0;  // 1.5 * 2^52
AOTC_REQUANT_FN double aotc_rq_dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  volatile double r = a * b;
  return r;
#endif
}
AOTC_REQUANT_FN double aotc_rq_dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  volatile double r = a + b;
  return r;
#endif
}
AOTC_REQUANT_FN double aotc_rq_double_from_words(int32_t hi, int32_t lo) {
#if defined(__CUDA_ARCH__)
  return __hiloint2double(hi, lo);
#else
  const uint64_t b = (static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32) | static_cast<uint32_t>(lo);
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
#endif
}
AOTC_REQUANT_FN int32_t aotc_rq_low_word(double d) {
#if defined(__CUDA_ARCH__)
  return __double2loint(d);
#else
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return static_cast<int32_t>(static_cast<uint32_t>(b));
#endif
}
AOTC_REQUANT_FN double aotc_rq_dfma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return fma(a, b, c);
#endif
}
// True where aotc_requant_rint_dmagic applies to multiplier m.
AOTC_REQUANT_FN bool aotc_requant_dmagic_applies(float m) { return m < 0.5f && m > -0.5f; }
// dmagic from low = p + 2^31 modulo 2^32 (the double's low word; aotc_requant_words adds the offset
// once a channel).
// p as a double from low = p + 2^31 (2^52 + low, less the bias 2^52 + 2^31: exact).
AOTC_REQUANT_FN double aotc_rq_double_of_low(int32_t low) {
  return aotc_rq_dadd(aotc_rq_double_from_words(0x43300000, low), -kAotcDoubleOfIntBias);
}
AOTC_REQUANT_FN int32_t aotc_requant_rint_dmagic_low(int32_t low, double dm) {
  return aotc_rq_low_word(aotc_rq_dadd(aotc_rq_dmul(aotc_rq_double_of_low(low), dm), kAotcDoubleRoundMagic));
}
AOTC_REQUANT_FN int32_t aotc_requant_rint_dmagic(int32_t p, double dm) {
  return aotc_requant_rint_dmagic_low(aotc_rq_wrap_add(p, INT32_MIN), dm);
}

// dmagic with the product and the rounding add as one FMA (kAotcRequantDfma): fma(double(p), dm,
// 1.5 * 2^52) rounds p * m + 1.5 * 2^52 once where dmagic rounds the product first. The two agree
// where the product is exact in double: |p| < 2^29 (29 significant bits and m's 24 fit in the 53 of
// a double), which the lowering proves for every output from the layer's constant weights and
// biases (ir/ops/integer_matmul.cc requant_route), and |m| < 0.5 as for dmagic. One FP64
// instruction fewer an element.
AOTC_REQUANT_FN int32_t aotc_requant_rint_dfma_low(int32_t low, double dm) {
  return aotc_rq_low_word(aotc_rq_dfma(aotc_rq_double_of_low(low), dm, kAotcDoubleRoundMagic));
}
AOTC_REQUANT_FN int32_t aotc_requant_rint_dfma(int32_t p, double dm) {
  return aotc_requant_rint_dfma_low(aotc_rq_wrap_add(p, INT32_MIN), dm);
}
// The bound under which aotc_requant_rint_dfma equals the double path: |p| < 2^29.
constexpr int64_t kAotcRequantDfmaBound = int64_t{1} << 29;

// The double path: rint(double(p) * double(m)) saturated to +-2^30 (beyond every 8-bit result after
// a zero point and clamp); NaN to -2^30 (fmax returns its other operand), which clamps to qmin as
// the reference's fmax(qmin, NaN) does. fmin / fmax rather than branches: selects, no divergence.
AOTC_REQUANT_FN int32_t aotc_requant_rint_double_sat(int32_t p, float m) {
  const double d = rint(static_cast<double>(p) * static_cast<double>(m));
  return static_cast<int32_t>(fmin(1073741824.0, fmax(-1073741824.0, d)));
}

// 1 where the GPU compiling this runs FP64 at 1/64 of the FP32 rate (sm_86 / sm_87 / sm_89,
// sm_110+, by the CUDA C++ Programming Guide's throughput table): the double path's arithmetic is
// then the epilogue's bottleneck (predicted from instruction counts, not measured: no such GPU
// here); 0 on sm_80 / sm_90 / sm_100 and on the host.
#if defined(__CUDA_ARCH__) && ((__CUDA_ARCH__ >= 860 && __CUDA_ARCH__ < 900) || __CUDA_ARCH__ >= 1100)
#define AOTC_REQUANT_FP64_POOR 1
#else
#define AOTC_REQUANT_FP64_POOR 0
#endif

// The requantization routes (the REQUANT_ROUTE of the int8 kernels, from ir/ops/integer_matmul.cc
// requant_route): kAotcRequantAuto the double path, or the fp32 route where FP64 is poor;
// kAotcRequantFp32 the fp32 route; kAotcRequantDmagic the conversion-free double route (the fp32
// route where FP64 is poor); kAotcRequantDfma dmagic's product and rounding as one FMA (only
// where every |p| < 2^29 is proven; the fp32 route where FP64 is poor).
constexpr int kAotcRequantAuto = 0, kAotcRequantFp32 = 1, kAotcRequantDmagic = 2, kAotcRequantDfma = 3;

// clamp(v, lo, hi) for lo <= hi: integer min / max on the GPU (two instructions).
AOTC_REQUANT_FN int32_t aotc_rq_clamp(int32_t v, int32_t lo, int32_t hi) {
#if defined(__CUDA_ARCH__)
  return max(min(v, hi), lo);
#else
  return v < lo ? lo : (v > hi ? hi : v);
#endif
}

// The requantized fragment: clamp(rint(double(p[i]) * double(m[i])) + zp, qmin, qmax) (qmin <= qmax),
// by `route` as compiled for this GPU (fp64_poor: the arch's AOTC_REQUANT_FP64_POOR; a parameter
// so the host test runs both). The double path is the reference's own arithmetic (zero point and
// clamp in double); the fp32 route runs for the whole fragment before the double path fixes its
// rare elements, so the common case has no branch between elements.
template <int N>
AOTC_REQUANT_FN void aotc_requant_fragment(int route, bool fp64_poor, const int32_t (&p)[N], const float (&m)[N],
                                           int32_t zp, int32_t qmin, int32_t qmax, int32_t (&v)[N]) {
  if (route == kAotcRequantAuto && !fp64_poor) {
    const double dz = static_cast<double>(zp), dlo = static_cast<double>(qmin), dhi = static_cast<double>(qmax);
    AOTC_REQUANT_UNROLL
    for (int i = 0; i < N; ++i)
      v[i] = static_cast<int32_t>(fmin(dhi, fmax(dlo, rint(static_cast<double>(p[i]) * static_cast<double>(m[i])) + dz)));
    return;
  }
  if (route == kAotcRequantDmagic && !fp64_poor) {
    AOTC_REQUANT_UNROLL
    for (int i = 0; i < N; ++i) v[i] = aotc_requant_rint_dmagic(p[i], static_cast<double>(m[i]));
  } else if (route == kAotcRequantDfma && !fp64_poor) {
    AOTC_REQUANT_UNROLL
    for (int i = 0; i < N; ++i) v[i] = aotc_requant_rint_dfma(p[i], static_cast<double>(m[i]));
  } else {
    bool any_rare = false;
    bool rare[N];
    AOTC_REQUANT_UNROLL
    for (int i = 0; i < N; ++i) {
      v[i] = aotc_requant_rint_fp32_select(p[i], m[i], &rare[i]);
      any_rare |= rare[i];
    }
    if (any_rare) {
      AOTC_REQUANT_UNROLL
      for (int i = 0; i < N; ++i)
        if (rare[i]) v[i] = aotc_requant_rint_double_sat(p[i], m[i]);
    }
  }
  AOTC_REQUANT_UNROLL
  for (int i = 0; i < N; ++i) v[i] = aotc_rq_clamp(v[i] + zp, qmin, qmax);
}

// The int8 tensor-core kernels' per-output-channel epilogue word (built by opt/layout_nhwc): the
// low 32 bits the float multiplier m, the high 32 bits the int32 bias b.
AOTC_REQUANT_FN float aotc_epilogue_word_multiplier(uint64_t w) {
  return aotc_rq_from_bits(static_cast<int32_t>(static_cast<uint32_t>(w & 0xffffffffu)));
}
AOTC_REQUANT_FN int32_t aotc_epilogue_word_bias(uint64_t w) { return static_cast<int32_t>(static_cast<uint32_t>(w >> 32)); }
AOTC_REQUANT_FN uint64_t aotc_epilogue_word(float m, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(b)) << 32) | static_cast<uint32_t>(aotc_rq_bits(m));
}

// A fragment of accumulators requantized with their channels' words: aotc_requant_fragment of
// (acc[i] + b[i], m[i]). The conversion-free double routes take p + 2^31 (their double's low word)
// as acc + (b + 2^31): the offset added to a channel's bias, once a channel (a thread's fragment
// holds each channel for several rows), instead of to every element.
template <int N>
AOTC_REQUANT_FN void aotc_requant_words(int route, bool fp64_poor, const int32_t* acc, const uint64_t* words, int32_t zp,
                                        int32_t qmin, int32_t qmax, int32_t (&v)[N]) {
  if ((route == kAotcRequantDmagic || route == kAotcRequantDfma) && !fp64_poor) {
    AOTC_REQUANT_UNROLL
    for (int i = 0; i < N; ++i) {
      const double dm = static_cast<double>(aotc_epilogue_word_multiplier(words[i]));
      const int32_t low = aotc_rq_wrap_add(acc[i], aotc_rq_wrap_add(aotc_epilogue_word_bias(words[i]), INT32_MIN));
      v[i] = route == kAotcRequantDfma ? aotc_requant_rint_dfma_low(low, dm) : aotc_requant_rint_dmagic_low(low, dm);
    }
    AOTC_REQUANT_UNROLL
    for (int i = 0; i < N; ++i) v[i] = aotc_rq_clamp(v[i] + zp, qmin, qmax);
    return;
  }
  int32_t p[N];
  float m[N];
  AOTC_REQUANT_UNROLL
  for (int i = 0; i < N; ++i) {
    m[i] = aotc_epilogue_word_multiplier(words[i]);
    p[i] = aotc_rq_wrap_add(acc[i], aotc_epilogue_word_bias(words[i]));
  }
  aotc_requant_fragment(route, fp64_poor, p, m, zp, qmin, qmax, v);
}

// One value (the direct int8 kernels, a thread an output).
AOTC_REQUANT_FN int32_t aotc_requant_one(int route, bool fp64_poor, int32_t p, float m, int32_t zp, int32_t qmin,
                                         int32_t qmax) {
  const int32_t p1[1] = {p};
  const float m1[1] = {m};
  int32_t v[1];
  aotc_requant_fragment(route, fp64_poor, p1, m1, zp, qmin, qmax, v);
  return v[0];
}

// The scalars of an aotc.QLinearAdd fused into an int8 convolution's epilogue (the residual r
// added to the convolution's requantized output t), as the lowering hands them to the kernels'
// compile-time params builders: six 64-bit arguments (the library protocol carries at most 24) -
// the float bits of t_scale, r_scale and out_scale, the zero points t_zp | r_zp | out_zp and the
// clamp add_qmin | add_qmax packed 10 bits each (value + 256, lowest first), and the float bits of
// the proven-exact reciprocal of out_scale (0 where none is proven: the kernel divides; its
// instantiation knows which, ADD_RECIPROCAL, ir/ops/qlinear_add.cc qlinear_add_exact_reciprocal).
// The integer form where one is proven (ADD_FIXED, ir/ops/qlinear_add.cc qlinear_add_exact_fixed):
// fx_a, fx_b, fx_c in the high halves of the three scale words, fx_k as the clamp word's third field.
struct aotc_fused_add_scalars {
  float t_scale = 1.f, t_zp = 0.f, r_scale = 1.f, r_zp = 0.f, out_scale = 1.f, rcp = 0.f;
  int out_zp = 0, add_qmin = -128, add_qmax = 127;
  int fx_a = 0, fx_b = 0, fx_c = 0, fx_k = 0;  // aotc_qlinear_add_fixed's constants (fx_k 0: none)
};
constexpr int kAotcFusedAddArgs = 6;
AOTC_REQUANT_FN void aotc_fused_add_pack(const aotc_fused_add_scalars& s, long long* out) {
  auto pack = [](const int* v, int n) {
    long long w = 0;
    for (int i = 0; i < n; ++i) w |= static_cast<long long>(v[i] + 256) << (10 * i);
    return w;
  };
  auto word = [](float low, int high) {
    return static_cast<long long>(static_cast<uint64_t>(static_cast<uint32_t>(aotc_rq_bits(low))) |
                                  (static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32));
  };
  const int zps[3] = {static_cast<int>(s.t_zp), static_cast<int>(s.r_zp), s.out_zp};
  const int clamp[3] = {s.add_qmin, s.add_qmax, s.fx_k};
  out[0] = word(s.t_scale, s.fx_a);
  out[1] = word(s.r_scale, s.fx_b);
  out[2] = word(s.out_scale, s.fx_c);
  out[3] = pack(zps, 3);
  out[4] = pack(clamp, 3);
  out[5] = static_cast<uint32_t>(aotc_rq_bits(s.rcp));
}
AOTC_REQUANT_FN aotc_fused_add_scalars aotc_fused_add_unpack(const long long* a) {
  auto field = [](long long w, int i) { return static_cast<int>((w >> (10 * i)) & 1023) - 256; };
  auto flt = [](long long bits) { return aotc_rq_from_bits(static_cast<int32_t>(static_cast<uint32_t>(bits))); };
  aotc_fused_add_scalars s;
  s.t_scale = flt(a[0]);
  s.r_scale = flt(a[1]);
  s.out_scale = flt(a[2]);
  s.t_zp = static_cast<float>(field(a[3], 0));
  s.r_zp = static_cast<float>(field(a[3], 1));
  s.out_zp = field(a[3], 2);
  s.add_qmin = field(a[4], 0);
  s.add_qmax = field(a[4], 1);
  s.rcp = flt(a[5]);
  auto high = [](long long w) { return static_cast<int>(static_cast<uint32_t>(static_cast<uint64_t>(w) >> 32)); };
  s.fx_a = high(a[0]);
  s.fx_b = high(a[1]);
  s.fx_c = high(a[2]);
  s.fx_k = field(a[4], 2);
  return s;
}

// aotc.QLinearAdd's rounded sum before its zero point and clamp, for its kernel and the fused
// residual Adds of the int8 convolutions (one definition): rint(((va - za) * sa + (vb - zb) * sb) /
// sy) in the CPU reference's order and IEEE roundings (ir/ops/qlinear_add.cc), 8-bit values as
// floats. The quotient is clamped to +-1e6 first (aotc_rint_small's exact range), which changes no
// clamped result (|y_zp| <= 255; NaN goes to -1e6 and so to qmin, as fmaxf(qmin, NaN) did).
// by_reciprocal: the quotient as s * rcp plus one FMA correction instead of the IEEE division, valid
// only where the lowering proved it gives the same result for every pair of 8-bit inputs
// (ir/ops/qlinear_add.cc qlinear_add_exact_reciprocal, which calls this function both ways); the
// kernels pass it as a compile-time constant, so only one of the two sequences is compiled.
AOTC_REQUANT_FN int32_t aotc_qlinear_add_rint(float va, float za, float sa, float vb, float zb, float sb, float sy,
                                              bool by_reciprocal, float rcp) {
  const float fa = aotc_rq_mul(aotc_rq_add(va, -za), sa);
  const float fb = aotc_rq_mul(aotc_rq_add(vb, -zb), sb);
  const float s = aotc_rq_add(fa, fb);
  float q;
  if (by_reciprocal) {
    const float q0 = aotc_rq_mul(s, rcp);
    q = aotc_rq_fma(aotc_rq_fma(-q0, sy, s), rcp, q0);
  } else {
    q = aotc_rq_div(s, sy);
  }
  return aotc_rint_small(fminf(1e6f, fmaxf(-1e6f, q)));
}

// aotc.QLinearAdd in integers, where the lowering proved it equal to aotc_qlinear_add_rint plus the
// output zero point, then the clamp, for every pair of 8-bit inputs of the layer's types and scales
// (ir/ops/qlinear_add.cc qlinear_add_exact_fixed, which calls this function): floor((a * va + b *
// vb + c) / 2^k), no product or sum beyond int32 for 8-bit va, vb (checked there). Two integer
// multiply-adds and a shift where the float form takes ~15 instructions (int8_to_float, the zero
// points, the scales, the division, the rounding).
AOTC_REQUANT_FN int32_t aotc_qlinear_add_fixed(int32_t va, int32_t vb, int32_t a, int32_t b, int32_t c, int k) {
  return (a * va + b * vb + c) >> k;
}

// The residual Add fused into an int8 convolution's epilogue: aotc.QLinearAdd on the
// convolution's requantized value t and the residual r (either operand order: IEEE addition
// commutes), its zero point and clamp - for both int8 tensor-core kernels. fixed: the integer form
// (only where the lowering proved it: ADD_FIXED; the zero point is inside fx_c).
AOTC_REQUANT_FN int32_t aotc_fused_add(int32_t t, int32_t r, const aotc_fused_add_scalars& s, bool by_reciprocal,
                                       bool fixed = false) {
  if (fixed) return aotc_rq_clamp(aotc_qlinear_add_fixed(t, r, s.fx_a, s.fx_b, s.fx_c, s.fx_k), s.add_qmin, s.add_qmax);
  return aotc_rq_clamp(aotc_qlinear_add_rint(aotc_int8_to_float(t), s.t_zp, s.t_scale, aotc_int8_to_float(r), s.r_zp,
                                             s.r_scale, s.out_scale, by_reciprocal, s.rcp) + s.out_zp,
                       s.add_qmin, s.add_qmax);
}
