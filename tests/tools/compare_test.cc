// Output comparison and timing statistics (tools/compare.h) on hand-computed cases: tolerance
// edges, NaN/Inf positions, relative L2 and the whole-model metric, median and percentiles.
#include "tools/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <algorithm>
#include <cstring>

#include "tools/random_tensor.h"

namespace aotc {
namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Tensor floats(std::vector<float> v) { return Tensor::from_floats({static_cast<int64_t>(v.size())}, v); }

TEST(Compare, PerElementTolerance) {
  Tolerance t = default_tolerance(DType::kFloat32);
  EXPECT_DOUBLE_EQ(t.atol, 1e-5);
  EXPECT_DOUBLE_EQ(t.rtol, 1e-4);
  // |got-ref| <= 1e-5 + 1e-4*|ref|: at ref 100 the bound is 0.01001.
  EXPECT_TRUE(compare_tensors(floats({100.01f}), floats({100.0f}), t).pass);
  auto r = compare_tensors(floats({1.0f, 100.02f}), floats({1.0f, 100.0f}), t);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_mismatch, 1);
  EXPECT_NEAR(r.max_abs_error, 0.02, 1e-5);
  EXPECT_FALSE(r.reason.empty());
  Tolerance h = default_tolerance(DType::kFloat16);
  EXPECT_DOUBLE_EQ(h.atol, 2.5e-3);
  EXPECT_DOUBLE_EQ(h.rtol, 1e-3);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::kInt64).atol, 0);
}

TEST(Compare, NanAndInfPositionsMustMatch) {
  Tolerance t = default_tolerance(DType::kFloat32);
  EXPECT_TRUE(compare_tensors(floats({1, float(kNan), float(kInf)}), floats({1, float(kNan), float(kInf)}), t).pass);
  EXPECT_FALSE(compare_tensors(floats({1, 2}), floats({1, float(kNan)}), t).pass);
  EXPECT_FALSE(compare_tensors(floats({float(kNan)}), floats({0}), t).pass);
  EXPECT_FALSE(compare_tensors(floats({float(-kInf)}), floats({float(kInf)}), t).pass);
  Tolerance m = t;
  m.model_metric = true;
  auto r = compare_tensors(floats({float(kNan), 1}), floats({0, 1}), m);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.nonfinite_mismatches, 1);
}

TEST(Compare, RelativeL2AndModelMetric) {
  // ref = (3, 4): ||ref|| = 5; error (0, 5e-4): rel L2 = 1e-4 exactly -> fails "< 1e-4".
  Tolerance m;
  m.model_metric = true;
  auto r = compare_tensors(Tensor::from_floats({2}, {3.0f, 4.0005f}), Tensor::from_floats({2}, {3.0f, 4.0f}), m);
  EXPECT_NEAR(r.rel_l2, 1e-4, 1e-7);
  // Error (0, 2.5e-4): rel L2 5e-5 passes; max abs 2.5e-4 < 1e-3 * 4 passes.
  auto ok = compare_tensors(Tensor::from_floats({2}, {3.0f, 4.00025f}), Tensor::from_floats({2}, {3.0f, 4.0f}), m);
  EXPECT_NEAR(ok.rel_l2, 5e-5, 1e-7);
  EXPECT_TRUE(ok.pass) << ok.reason;
  EXPECT_DOUBLE_EQ(ok.max_abs_ref, 4.0);
  // One large element among many small errors: rel L2 small, but max abs above 1e-3 * max|ref|.
  std::vector<float> ref(10000, 1.0f), got(10000, 1.0f);
  got[5] = 1.002f;  // abs 2e-3 > 1e-3 * 1; rel L2 = 2e-3 / 100 = 2e-5
  auto spike = compare_tensors(floats(got), floats(ref), m);
  EXPECT_LT(spike.rel_l2, 1e-4);
  EXPECT_FALSE(spike.pass);
  EXPECT_NE(spike.reason.find("max abs"), std::string::npos);
}

TEST(Compare, DtypeShapeAndIntegers) {
  Tolerance t;
  EXPECT_FALSE(compare_tensors(floats({1, 2}), Tensor::from_floats({1, 2}, {1, 2}), t).pass);
  EXPECT_FALSE(compare_tensors(floats({1}), Tensor::from_int64s({1}, {1}), t).pass);
  Tolerance exact = default_tolerance(DType::kInt64);
  int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_TRUE(compare_tensors(Tensor::from_int64s({1}, {big}), Tensor::from_int64s({1}, {big}), exact).pass);
  // Beyond 2^53, doubles cannot tell these apart; the integer path must.
  EXPECT_FALSE(compare_tensors(Tensor::from_int64s({1}, {big}), Tensor::from_int64s({1}, {big - 1}), exact).pass);
}

TEST(Timing, MedianAndPercentiles) {
  std::vector<double> ms;
  for (int i = 100; i >= 1; --i) ms.push_back(i);  // 1..100, unsorted
  TimingSummary s = summarize_timings(ms);
  EXPECT_EQ(s.runs, 100);
  EXPECT_DOUBLE_EQ(s.median_ms, 50.5);
  EXPECT_DOUBLE_EQ(s.p90_ms, 90);
  EXPECT_DOUBLE_EQ(s.p99_ms, 99);
  EXPECT_DOUBLE_EQ(s.mean_ms, 50.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 100);
  TimingSummary three = summarize_timings({3, 1, 2});
  EXPECT_DOUBLE_EQ(three.median_ms, 2);
  EXPECT_DOUBLE_EQ(three.p90_ms, 3);
  EXPECT_EQ(summarize_timings({}).runs, 0);
}

TEST(RandomTensor, SeededNeverZeroInRange) {
  Tensor a = random_tensor(DType::kFloat32, {1000}, 5, 0);
  Tensor b = random_tensor(DType::kFloat32, {1000}, 5, 0);
  Tensor c = random_tensor(DType::kFloat32, {1000}, 5, 1);
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), 4000), 0);
  EXPECT_NE(std::memcmp(a.raw(), c.raw(), 4000), 0);
  double lo = 1, hi = -1;
  int zeros = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    lo = std::min(lo, a.get(i));
    hi = std::max(hi, a.get(i));
    zeros += a.get(i) == 0;
  }
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_LT(lo, -0.9);
  EXPECT_GT(hi, 0.9);
  EXPECT_LE(zeros, 1);
  Tensor ints = random_tensor(DType::kInt64, {500}, 5, 0);
  for (int64_t i = 0; i < ints.numel(); ++i) {
    EXPECT_GE(ints.get_int(i), 1);
    EXPECT_LE(ints.get_int(i), 4);
  }
  Tensor halfs = random_tensor(DType::kFloat16, {100}, 5, 0);
  EXPECT_NE(halfs.get(0), 0.0);
}

}  // namespace
}  // namespace aotc
