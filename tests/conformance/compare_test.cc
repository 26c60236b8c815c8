// The conformance comparison: tolerances at their exact edges, NaN/Inf positions, integer
// exactness, dtype/shape mismatches and the first-mismatch message. Expected values are computed
// here from the stated rule (|got - want| <= atol + rtol * |want|), not taken from any output.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tools/conformance/compare.h"

namespace aotc::conformance {
namespace {

Tensor f32(std::vector<float> v) { return Tensor::from_floats({static_cast<int64_t>(v.size())}, v); }

TEST(Compare, Fp32ToleranceEdge) {
  // want 2: allowed error 1e-5 + 1e-4 * 2 = 2.1e-4.
  EXPECT_TRUE(compare_tensors(f32({2.0f + 2.0e-4f}), f32({2.0f})).ok);
  EXPECT_FALSE(compare_tensors(f32({2.0f + 2.3e-4f}), f32({2.0f})).ok);
  // Near zero only atol counts.
  EXPECT_TRUE(compare_tensors(f32({9e-6f}), f32({0.0f})).ok);
  EXPECT_FALSE(compare_tensors(f32({1.2e-5f}), f32({0.0f})).ok);
}

TEST(Compare, NanAndInfPositionsMustMatch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(compare_tensors(f32({nan, inf, -inf}), f32({nan, inf, -inf})).ok);
  EXPECT_FALSE(compare_tensors(f32({nan}), f32({1.0f})).ok);
  EXPECT_FALSE(compare_tensors(f32({1.0f}), f32({nan})).ok);
  EXPECT_FALSE(compare_tensors(f32({inf}), f32({-inf})).ok);
  EXPECT_FALSE(compare_tensors(f32({3.0e38f}), f32({inf})).ok);
  EXPECT_FALSE(compare_tensors(f32({inf}), f32({3.0e38f})).ok);
}

TEST(Compare, Fp16UsesItsOwnTolerance) {
  Tensor want(DType::kFloat16, {1}), near(DType::kFloat16, {1}), far(DType::kFloat16, {1});
  want.set(0, 1.0);
  near.set(0, 1.0029296875);  // representable; error 2.93e-3 <= 2.5e-3 + 1e-3
  far.set(0, 1.0048828125);   // error 4.88e-3 > 3.5e-3
  EXPECT_TRUE(compare_tensors(near, want).ok);
  EXPECT_FALSE(compare_tensors(far, want).ok);
}

TEST(Compare, IntegersAndBoolAreExact) {
  Tensor a = Tensor::from_int64s({2}, {5, (int64_t{1} << 60) + 1});
  Tensor b = Tensor::from_int64s({2}, {5, int64_t{1} << 60});
  EXPECT_FALSE(compare_tensors(a, b).ok);  // differs beyond double precision
  EXPECT_TRUE(compare_tensors(b, b).ok);
  Tensor t(DType::kBool, {3}), u(DType::kBool, {3});
  t.set(1, 1);
  EXPECT_FALSE(compare_tensors(t, u).ok);
  u.set(1, 1);
  EXPECT_TRUE(compare_tensors(t, u).ok);
}

TEST(Compare, DtypeAndShapeMismatch) {
  CompareResult r = compare_tensors(f32({1, 2}), Tensor::from_int64s({2}, {1, 2}));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("dtype float"), std::string::npos) << r.message;
  r = compare_tensors(Tensor::from_floats({2, 1}, {1, 2}), f32({1, 2}));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("shape 2x1"), std::string::npos) << r.message;
}

TEST(Compare, ReportsFirstMismatchWithMultiIndexAndCount) {
  Tensor want = Tensor::from_floats({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor got = Tensor::from_floats({2, 3}, {0, 1, 2, 3, 7, 9});
  CompareResult r = compare_tensors(got, want);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_NE(r.message.find("index 4 (1,1): got 7 expected 4"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace aotc::conformance
