// tools/compare.h with each dtype's default tolerance (the rule of the conformance runner and the
// GPU op tests; moved here from tests/conformance/compare_test.cc when the two comparison
// implementations became one): tolerance edges, NaN/Inf positions, integer exactness, dtype and
// shape mismatches, the multi-index message. Expected values follow from the stated rule.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tools/compare.h"

namespace aotc {
namespace {

Tensor f32(std::vector<float> v) { return Tensor::from_floats({static_cast<int64_t>(v.size())}, v); }

CompareResult compare(const Tensor& got, const Tensor& want) {
  return compare_tensors(got, want, default_tolerance(want.dtype()));
}

TEST(ComparePerElement, Fp32ToleranceEdge) {
  // want 2: allowed error 1e-5 + 1e-4 * 2 = 2.1e-4.
  EXPECT_TRUE(compare(f32({2.0f + 2.0e-4f}), f32({2.0f})).pass);
  EXPECT_FALSE(compare(f32({2.0f + 2.3e-4f}), f32({2.0f})).pass);
  // Near zero only atol counts.
  EXPECT_TRUE(compare(f32({9e-6f}), f32({0.0f})).pass);
  EXPECT_FALSE(compare(f32({1.2e-5f}), f32({0.0f})).pass);
}

TEST(ComparePerElement, NanAndInfPositionsMustMatch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(compare(f32({nan, inf, -inf}), f32({nan, inf, -inf})).pass);
  EXPECT_FALSE(compare(f32({nan}), f32({1.0f})).pass);
  EXPECT_FALSE(compare(f32({1.0f}), f32({nan})).pass);
  EXPECT_FALSE(compare(f32({inf}), f32({-inf})).pass);
  EXPECT_FALSE(compare(f32({3.0e38f}), f32({inf})).pass);
  EXPECT_FALSE(compare(f32({inf}), f32({3.0e38f})).pass);
}

TEST(ComparePerElement, Fp16UsesItsOwnTolerance) {
  Tensor want(DType::kFloat16, {1}), near(DType::kFloat16, {1}), far(DType::kFloat16, {1});
  want.set(0, 1.0);
  near.set(0, 1.0029296875);  // representable; error 2.93e-3 <= 2.5e-3 + 1e-3
  far.set(0, 1.0048828125);   // error 4.88e-3 > 3.5e-3
  EXPECT_TRUE(compare(near, want).pass);
  EXPECT_FALSE(compare(far, want).pass);
}

TEST(ComparePerElement, BFloat16HasFp16Tolerance) {
  // One bf16 ulp at 1.5 is 2^-7 = 7.8e-3 > 2.5e-3 + 1e-3 * 1.5: a 1-ulp difference fails.
  Tensor want(DType::kBFloat16, {1}), got(DType::kBFloat16, {1});
  want.set(0, 1.5);
  got.set(0, 1.5078125);
  EXPECT_FALSE(compare(got, want).pass);
  EXPECT_TRUE(compare(want, want).pass);
}

TEST(ComparePerElement, IntegersAndBoolAreExact) {
  Tensor a = Tensor::from_int64s({2}, {5, (int64_t{1} << 60) + 1});
  Tensor b = Tensor::from_int64s({2}, {5, int64_t{1} << 60});
  EXPECT_FALSE(compare(a, b).pass);  // differs beyond double precision
  EXPECT_TRUE(compare(b, b).pass);
  Tensor t(DType::kBool, {3}), u(DType::kBool, {3});
  t.set(1, 1);
  EXPECT_FALSE(compare(t, u).pass);
  u.set(1, 1);
  EXPECT_TRUE(compare(t, u).pass);
}

TEST(ComparePerElement, DtypeAndShapeMismatch) {
  CompareResult r = compare(f32({1, 2}), Tensor::from_int64s({2}, {1, 2}));
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.reason.find("dtype float"), std::string::npos) << r.reason;
  r = compare(Tensor::from_floats({2, 1}, {1, 2}), f32({1, 2}));
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.reason.find("shape 2x1"), std::string::npos) << r.reason;
}

TEST(ComparePerElement, ReportsFirstMismatchWithMultiIndexAndCount) {
  Tensor want = Tensor::from_floats({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor got = Tensor::from_floats({2, 3}, {0, 1, 2, 3, 7, 9});
  CompareResult r = compare(got, want);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_NE(r.reason.find("index 4 (1,1): got 7, expected 4"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("2 of 6 elements differ"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace aotc
