// templates/int8_requant.cuh's requantization routes (the double path with its saturation, the
// branch-free fp32 route - the default on FP64-poor GPUs such as Jetson's sm_87 - and --int8-requant
// dmagic's conversion-free double route and its one-FMA form, alone and as aotc_requant_fragment composes them for each
// kind of GPU): every route must give
// the CPU reference's result, clamp(rint(double(p) * double(m)) + zero_point, qmin, qmax), bit
// for bit wherever it claims to apply, and decline where it does not (the fp32 route: p not exact in
// float, m not finite; dmagic: |m| >= 0.5; its FMA form also |p| >= 2^29). Checked on the rounding corners (products exactly on k + 1/2 and one ulp either side,
// both signs, both parities), saturation, subnormal and huge multipliers, and millions of random
// pairs of realistic and arbitrary magnitude.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "templates/int8_requant.cuh"

namespace aotc {
namespace {

float float_of(uint32_t b) {
  float m;
  std::memcpy(&m, &b, sizeof m);
  return m;
}

int64_t clamp_to(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// The reference's arithmetic (ir/ops/integer_matmul.cc; the template's double path).
int64_t reference(int32_t p, float m, int64_t zp, int64_t lo, int64_t hi) {
  const double v = std::rint(static_cast<double>(p) * static_cast<double>(m)) + static_cast<double>(zp);
  return static_cast<int64_t>(std::fmin(static_cast<double>(hi), std::fmax(static_cast<double>(lo), v)));
}

void expect_same(int32_t p, float m) {
  // The branch-free fp32 route: its own range (|p| < 2^22, m finite).
  bool rare = true;
  const int32_t rs = aotc_requant_rint_fp32_select(p, m, &rare);
  ASSERT_EQ(!rare, std::isfinite(m) && p < (1 << 22) && p > -(1 << 22)) << "p " << p << " m " << m;
  // The conversion-free double route: every int32 p, multipliers below 0.5 in magnitude.
  const bool dmagic = aotc_requant_dmagic_applies(m);
  ASSERT_EQ(dmagic, std::fabs(m) < 0.5f) << "m " << m;
  const int32_t rd = dmagic ? aotc_requant_rint_dmagic(p, static_cast<double>(m)) : 0;
  // Its one-FMA form: where the lowering also proved |p| < 2^29.
  const bool dfma = dmagic && p < kAotcRequantDfmaBound && p > -kAotcRequantDfmaBound;
  const int32_t rf = dfma ? aotc_requant_rint_dfma(p, static_cast<double>(m)) : 0;
  // The double path with its saturation, and every route of a one-element fragment as compiled
  // for a GPU with fast FP64 and for one without (the fp32 route there, the double path for the
  // rare elements).
  const int32_t rdouble = aotc_requant_rint_double_sat(p, m);
  const int32_t p1[1] = {p};
  const float m1[1] = {m};
  // Each route once with a wide clamp (zero point 0, +-2^30: the rounded value itself), compared
  // below after every zero point and clamp; and once with a real one.
  struct Route {
    int route;
    bool poor;
    int32_t v, clamped;
  };
  Route routes[8];
  int n_routes = 0;
  for (int route : {kAotcRequantAuto, kAotcRequantFp32, kAotcRequantDmagic, kAotcRequantDfma})
    for (bool poor : {false, true}) {
      if (route == kAotcRequantDmagic && !poor && !dmagic) continue;  // the lowering never picks it there
      if (route == kAotcRequantDfma && !poor && !dfma) continue;
      int32_t v1[1] = {0}, c1[1] = {0};
      aotc_requant_fragment(route, poor, p1, m1, 0, -(1 << 30), 1 << 30, v1);
      aotc_requant_fragment(route, poor, p1, m1, 5, -128, 100, c1);
      routes[n_routes++] = {route, poor, v1[0], c1[0]};
    }
  for (int k = 0; k < n_routes; ++k)
    ASSERT_EQ(int64_t{routes[k].clamped}, reference(p, m, 5, -128, 100))
        << "fragment route " << routes[k].route << (routes[k].poor ? " fp64-poor" : "") << ": p " << p << " m " << m;
  for (int64_t zp : {-128, -3, 0, 5, 127, 255})
    for (auto [lo, hi] : {std::pair<int64_t, int64_t>{-128, 127}, {0, 255}, {zp, 127}}) {
      if (lo > hi) continue;
      const int64_t want = reference(p, m, zp, lo, hi);
      if (!rare) {
        ASSERT_EQ(clamp_to(int64_t{rs} + zp, lo, hi), want) << "select: p " << p << " m " << m << " zp " << zp;
      }
      if (dfma) {
        ASSERT_EQ(clamp_to(int64_t{rf} + zp, lo, hi), want) << "dfma: p " << p << " m " << m << " zp " << zp;
      }
      if (dmagic) {
        ASSERT_EQ(clamp_to(int64_t{rd} + zp, lo, hi), want) << "dmagic: p " << p << " m " << m << " zp " << zp;
      }
      ASSERT_EQ(clamp_to(int64_t{rdouble} + zp, lo, hi), want) << "double: p " << p << " m " << m << " zp " << zp;
      for (int k = 0; k < n_routes; ++k)
        ASSERT_EQ(clamp_to(int64_t{routes[k].v} + zp, lo, hi), want)
            << "fragment route " << routes[k].route << (routes[k].poor ? " fp64-poor" : "") << ": p " << p << " m " << m
            << " zp " << zp;
    }
}

TEST(Int8Requant, HalfwayProductsAndTheirNeighboursRoundLikeTheDoublePath) {
  // p * m = k + 1/2 exactly (m = (2k + 1) / (2p) where representable), and m one ulp either side.
  for (int32_t p : {1, 2, 3, 5, 7, 8, 96, 1000, 65535, 3999999, (1 << 22) - 1, 1 << 22, (1 << 24) - 1, 1 << 24,
                    (1 << 29) - 3, (1 << 29) - 1, 1 << 29, (1 << 29) + 3, INT32_MAX}) {
    for (int32_t k : {0, 1, 2, 3, 10, 11, 126, 127, 1000}) {
      for (int sign : {1, -1}) {
        const float m = static_cast<float>((2.0 * k + 1.0) / (2.0 * p));
        for (float mm : {m, std::nextafter(m, 0.0f), std::nextafter(m, 1.0f)}) {
          expect_same(sign * p, mm);
          expect_same(p, sign * mm);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(Int8Requant, EdgesSaturationAndUnsupportedInputs) {
  for (int32_t p : {0, 1, -1, 77, -77, (1 << 24) - 1, 1 << 24, -(1 << 24), (1 << 24) + 1, -(1 << 24) - 1, INT32_MAX,
                    INT32_MIN}) {
    for (float m : {0.0f, -0.0f, 1e-45f, 3e-39f, 1.1754942e-38f, 1e-10f, 3.7e-4f, 0.0031f, 0.49999997f, -0.49999997f,
                    0.5f, -0.5f, 1.0f, 255.0f, 8388608.0f, 3e38f, -0.0031f, INFINITY, -INFINITY, NAN}) {
      expect_same(p, m);
    }
  }
}

// The bound of the one-FMA route is needed: beyond 2^29 a product can need more than a double's 53
// bits, and where its rounding to double lands exactly on k + 1/2 (k even) the double path rounds
// that tie to k while the FMA, which sees the bits below, rounds up. Built: m = M / 2^31 (M odd, 24
// bits) and p = (2^30 + 1) / M modulo 2^31, so p * M = (2k + 1) * 2^30 + 1 exactly.
TEST(Int8Requant, OneFmaRouteDiffersBeyondItsBound) {
  int found = 0;
  for (uint32_t M = (1u << 24) - 1; M > (1u << 23) && found < 3; M -= 2) {
    uint64_t inv = 1;  // M^-1 modulo 2^31 by Newton's iteration (M odd)
    for (int i = 0; i < 6; ++i) inv = inv * (2 - M * inv);
    const uint64_t mod = uint64_t{1} << 31;
    const uint64_t pu = (((uint64_t{1} << 30) + 1) * (inv % mod)) % mod;
    if (pu < (uint64_t{1} << 30)) continue;  // p * M under 2^53: exact in double, no difference
    const int32_t p = static_cast<int32_t>(pu);
    const float m = std::ldexp(static_cast<float>(M), -31);
    ASSERT_EQ((static_cast<unsigned __int128>(pu) * M) % mod, (uint64_t{1} << 30) + 1);
    const int64_t k = static_cast<int64_t>((static_cast<unsigned __int128>(pu) * M) >> 31);
    if (k % 2 != 0) continue;
    ASSERT_EQ(reference(p, m, 0, -(1 << 30), 1 << 30), k) << "p " << p << " M " << M;  // the tie to even
    EXPECT_EQ(aotc_requant_rint_dfma(p, static_cast<double>(m)), k + 1) << "p " << p << " M " << M;
    EXPECT_EQ(aotc_requant_rint_dmagic(p, static_cast<double>(m)), k) << "p " << p << " M " << M;
    ++found;
  }
  EXPECT_EQ(found, 3);
}

// A fragment of eight whose elements mix the fp32 route's range and the rare ones (|p| >= 2^22, m
// infinite or NaN): on an FP64-poor GPU the rare ones are fixed by the double path after the
// branch-free pass, and none of the others may be touched.
TEST(Int8Requant, FragmentsMixingRareAndCommonElements) {
  std::mt19937_64 rng(20261130);
  std::uniform_int_distribution<int32_t> small_p(-(1 << 21), 1 << 21);
  std::uniform_int_distribution<uint32_t> any_bits(0, 0xffffffffu);
  std::uniform_real_distribution<float> scale(1e-6f, 2e-2f);
  for (int iter = 0; iter < 20000; ++iter) {
    int32_t p[8];
    float m[8];
    for (int i = 0; i < 8; ++i) {
      const int kind = static_cast<int>(any_bits(rng) % 6);
      p[i] = kind == 0 ? static_cast<int32_t>(any_bits(rng)) : small_p(rng);
      m[i] = kind == 1 ? INFINITY : kind == 2 ? NAN : scale(rng);
    }
    for (int route : {kAotcRequantAuto, kAotcRequantFp32})
      for (bool poor : {false, true}) {
        int32_t v[8];
        aotc_requant_fragment(route, poor, p, m, 3, -128, 127, v);
        for (int i = 0; i < 8; ++i)
          ASSERT_EQ(int64_t{v[i]}, reference(p[i], m[i], 3, -128, 127))
              << "route " << route << (poor ? " fp64-poor" : "") << " element " << i << ": p " << p[i] << " m " << m[i];
      }
  }
}

// The kernels' entry point: a fragment of accumulators with their channels' epilogue words (m in
// the low half, the int32 bias b in the high one), each route against the reference on acc + b -
// the conversion-free double routes add dmagic's 2^31 offset to the bias instead of to each
// element. Channels repeat across the fragment as in the wgmma accumulator layout (a thread holds
// each channel for several rows). dfma only where |acc + b| < 2^29, as the lowering proves.
TEST(Int8Requant, FragmentsFromEpilogueWordsRoundLikeTheReference) {
  std::mt19937_64 rng(20261201);
  std::uniform_int_distribution<int32_t> acc_small(-(1 << 27), 1 << 27), any(INT32_MIN, INT32_MAX);
  std::uniform_real_distribution<float> scale(1e-7f, 0.49f);
  for (int iter = 0; iter < 100000; ++iter) {
    const bool bounded = iter % 2 == 0;
    uint64_t chan[4];
    for (uint64_t& w : chan)
      w = aotc_epilogue_word(scale(rng) * (rng() % 2 ? 1.0f : -1.0f), bounded ? acc_small(rng) : any(rng));
    int32_t acc[16];
    uint64_t words[16];
    for (int i = 0; i < 16; ++i) {
      acc[i] = bounded ? acc_small(rng) : any(rng);
      words[i] = chan[(i / 2) % 4];
    }
    for (int route : {kAotcRequantAuto, kAotcRequantFp32, kAotcRequantDmagic, kAotcRequantDfma})
      for (bool poor : {false, true}) {
        if (route == kAotcRequantDfma && !bounded && !poor) continue;  // |acc + b| may reach 2^29
        int32_t v[16];
        aotc_requant_words<16>(route, poor, acc, words, -3, -128, 127, v);
        for (int i = 0; i < 16; ++i) {
          const int32_t p = aotc_rq_wrap_add(acc[i], aotc_epilogue_word_bias(words[i]));
          ASSERT_EQ(int64_t{v[i]}, reference(p, aotc_epilogue_word_multiplier(words[i]), -3, -128, 127))
              << "route " << route << (poor ? " fp64-poor" : "") << " element " << i << ": acc " << acc[i];
        }
      }
  }
}

TEST(Int8Requant, RandomPairsRoundLikeTheDoublePath) {
  std::mt19937_64 rng(20261128);
  std::uniform_int_distribution<int32_t> conv_p(-(1 << 24), 1 << 24);
  std::uniform_int_distribution<int32_t> small_p(-4096, 4096);
  std::uniform_int_distribution<uint32_t> any_bits(0, 0xffffffffu);
  std::uniform_real_distribution<float> scale(1e-6f, 2e-2f);
  for (int i = 0; i < 2000000; ++i) {
    expect_same(conv_p(rng), scale(rng));
    expect_same(small_p(rng), scale(rng) * 64.0f);
    expect_same(conv_p(rng) >> (i % 24), float_of(any_bits(rng)));
    // Any int32 (the dmagic route's whole range) against multipliers below 0.5.
    expect_same(static_cast<int32_t>(any_bits(rng)) >> (i % 31), (scale(rng) * 25.0f) * (i % 2 ? 1.0f : -1.0f));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace aotc
