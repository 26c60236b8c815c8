// Calibration (issue 8): the |x| histogram (range growth by merging bins), each calibrator's amax
// against an independent computation on the raw samples (not on the histogram), and the
// statistics of a whole graph run on the CPU reference.
#include "opt/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "opt_test_util.h"

namespace aotc {
namespace {

// Deterministic N(0, 1) samples: Box-Muller over a 64-bit LCG.
std::vector<double> gaussian(int n, uint64_t seed) {
  std::vector<double> out;
  uint64_t s = seed;
  auto uniform = [&]() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((s >> 11) + 0.5) / 9007199254740992.0;  // (0, 1)
  };
  while (static_cast<int>(out.size()) < n) {
    double u1 = uniform(), u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    out.push_back(r * std::cos(2 * M_PI * u2));
    out.push_back(r * std::sin(2 * M_PI * u2));
  }
  out.resize(static_cast<size_t>(n));
  return out;
}

// Mean squared error of symmetric int8 quantization with `amax`, on the raw samples.
double raw_mse(const std::vector<double>& xs, double amax) {
  const double step = amax / 127;
  double err = 0;
  for (double x : xs) {
    double q = std::clamp(std::nearbyint(x / step), -127.0, 127.0) * step;
    err += (x - q) * (x - q);
  }
  return err / static_cast<double>(xs.size());
}

TEST(Calibration, HistogramGrowsByMergingBins) {
  AbsHistogram h(8);
  h.add(0.0);  // before any range: counted once the range exists
  h.add(-1.0);  // range 1: |x| = 1 lands in the last bin
  EXPECT_EQ(h.range(), 1.0);
  h.add(0.3);   // bin 2 of [0, 1) / 8
  EXPECT_EQ(h.counts()[0], 1.0);
  EXPECT_EQ(h.counts()[2], 1.0);
  EXPECT_EQ(h.counts()[7], 1.0);
  h.add(3.0);   // range doubles twice to 4; bins merge pairwise each time
  EXPECT_EQ(h.range(), 4.0);
  // |x| 0 and 0.3 -> bin 0 of width 0.5; 3.0 -> bin 6. The 1.0 that sat in the last bin of the
  // old range [0, 1) (that bin also holds the range itself) moves with its bin: now bin 1,
  // [0.5, 1.0) -- off by at most one bin, the histogram's resolution.
  std::vector<double> want = {2, 1, 0, 0, 0, 0, 1, 0};
  EXPECT_EQ(h.counts(), want);
  EXPECT_EQ(h.total(), 4.0);
  EXPECT_EQ(h.min(), -1.0);
  EXPECT_EQ(h.max(), 3.0);
  EXPECT_EQ(h.max_abs(), 3.0);
  double sum = 0;
  for (double c : h.counts()) sum += c;
  EXPECT_EQ(sum, h.total());
  h.add(std::nan(""));  // ignored
  EXPECT_EQ(h.total(), 4.0);
}

TEST(Calibration, MinMaxAndPercentile) {
  AbsHistogram h;
  const int n = 100000;
  for (int i = 0; i < n; ++i) h.add((i % 2 ? -1.0 : 1.0) * (i + 0.5) / n);  // |x| uniform on (0, 1)
  EXPECT_DOUBLE_EQ(amax_minmax(h), (n - 0.5) / n);
  // The p-th percentile of U(0, 1) is p / 100; the histogram answers to within a bin.
  for (double p : {50.0, 99.0, 99.99}) EXPECT_NEAR(amax_percentile(h, p), p / 100, h.bin_width() + 1e-12) << p;
  AbsHistogram zeros;
  for (int i = 0; i < 10; ++i) zeros.add(0.0);
  EXPECT_EQ(amax_minmax(zeros), 0.0);
  EXPECT_EQ(amax_percentile(zeros, 99.9), 0.0);
  EXPECT_EQ(amax_entropy(zeros), 0.0);
  EXPECT_EQ(amax_mse(zeros), 0.0);
}

TEST(Calibration, MseMatchesTheRawSamplesOptimum) {
  std::vector<double> xs = gaussian(200000, 7);
  AbsHistogram h;
  for (double x : xs) h.add(x);
  const double chosen = amax_mse(h);
  // The optimum over a fine grid, on the raw samples with their own quantization.
  double best = 1e300, best_amax = 0;
  for (double a = 1.0; a <= h.max_abs(); a += 0.01) {
    double e = raw_mse(xs, a);
    if (e < best) {
      best = e;
      best_amax = a;
    }
  }
  EXPECT_LE(raw_mse(xs, chosen), best * 1.03) << "chosen " << chosen << ", raw optimum " << best_amax;
  EXPECT_LT(chosen, h.max_abs());  // clips the tail of a Gaussian
  EXPECT_LE(raw_mse(xs, chosen), raw_mse(xs, h.max_abs()));
}

TEST(Calibration, EntropyClipsOutliersAndKeepsUniformRanges) {
  // A Gaussian plus one outlier at 60: the KL threshold clips the outlier and keeps the bulk, so
  // the bulk's raw-sample quantization error is far below minmax's (whose range the outlier sets).
  std::vector<double> xs = gaussian(200000, 11);
  AbsHistogram h;
  for (double x : xs) h.add(x);
  h.add(60.0);
  const double e = amax_entropy(h);
  EXPECT_GT(e, 2.0) << e;
  EXPECT_LT(e, 20.0) << e;
  EXPECT_EQ(amax_minmax(h), 60.0);
  EXPECT_LT(raw_mse(xs, e), 0.05 * raw_mse(xs, amax_minmax(h))) << e;
  // Uniform magnitudes: no tail to clip, the threshold stays near the top of the range.
  AbsHistogram u;
  for (int i = 0; i < 100000; ++i) u.add((i + 0.5) / 100000);
  EXPECT_GT(amax_entropy(u), 0.9);
  EXPECT_LE(amax_entropy(u), amax_minmax(u));
}

TEST(Calibration, EntropyIgnoresTheExactZerosOfAReluOutput) {
  // Half exact zeros (a ReLU's output) and uniform magnitudes: zero is exact at any scale, so the
  // threshold must be the one the uniform half alone gets (near the top), not a clipped one.
  AbsHistogram relu, plain;
  for (int i = 0; i < 100000; ++i) {
    const double v = (i + 0.5) / 100000;
    relu.add(v);
    relu.add(0.0);
    plain.add(v);
  }
  EXPECT_EQ(relu.exact_zeros(), 100000);
  EXPECT_GT(amax_entropy(relu), 0.9);
  EXPECT_EQ(amax_entropy(relu), amax_entropy(plain));
}

TEST(Calibration, EntropyKeepsADiscreteInputsRange) {
  // 17 grey levels (0, 1/16, ..., 1; digit images): a threshold at the first level folds every
  // other value into P's last bin, a one-spike P that Q matches exactly (KL 0). Thresholds that
  // clip more than 1% of the non-zero values are not candidates, so the range stays.
  AbsHistogram h;
  for (int rep = 0; rep < 1000; ++rep)
    for (int level = 0; level <= 16; ++level) h.add(level / 16.0);
  EXPECT_GE(amax_entropy(h), 0.9);
  EXPECT_LE(amax_entropy(h), 1.0);
}

TEST(Calibration, GraphStatisticsOnTheCpuReference) {
  AOTC_BUILD(g, R"(
    input %x : float[2x4]
    %r : float[?] = Relu(%x)
    %n : float[?] = Neg(%r)
    output %n
  )");
  std::vector<std::vector<Tensor>> batches;
  double max_abs = 0, max_x = -1e9, min_x = 1e9;
  for (int b = 0; b < 3; ++b) {
    Tensor t(DType::kFloat32, {2, 4});
    for (int i = 0; i < 8; ++i) {
      double v = (i - 3.5) * (b + 1);
      t.set(i, v);
      max_abs = std::max(max_abs, std::fabs(v));
      max_x = std::max(max_x, v);
      min_x = std::min(min_x, v);
    }
    batches.push_back({t});
  }
  CalibrationOptions o;
  o.calibrator = Calibrator::kMinMax;
  int calls = 0;
  auto r = calibrate_graph(g, batches, o, [&](int done, int total) {
    ++calls;
    EXPECT_EQ(total, 3);
    EXPECT_EQ(done, calls);
  });
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r->batches, 3);
  EXPECT_EQ(r->calibrator, "minmax");
  ASSERT_EQ(r->tensors.size(), 3u);
  auto find = [&](const std::string& name) -> const TensorCalibration* {
    for (const auto& t : r->tensors)
      if (t.name == name) return &t;
    return nullptr;
  };
  const TensorCalibration* x = find("x");
  const TensorCalibration* rr = find("r");
  const TensorCalibration* nn = find("n");
  ASSERT_TRUE(x && rr && nn);
  EXPECT_EQ(x->count, 24);
  EXPECT_DOUBLE_EQ(x->amax, max_abs);
  EXPECT_DOUBLE_EQ(x->min, min_x);
  EXPECT_DOUBLE_EQ(x->max, max_x);
  EXPECT_DOUBLE_EQ(rr->min, 0.0);
  EXPECT_DOUBLE_EQ(rr->amax, max_x);         // Relu keeps the positives
  EXPECT_DOUBLE_EQ(nn->min, -max_x);         // Neg of them
  EXPECT_DOUBLE_EQ(nn->amax, max_x);
  EXPECT_FALSE(calibrate_graph(g, {}, o).is_ok());
  EXPECT_EQ(*parse_calibrator("entropy"), Calibrator::kEntropy);
  EXPECT_FALSE(parse_calibrator("kl").is_ok());
}

}  // namespace
}  // namespace aotc
