// MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool: output sizes (ceil_mode's rule,
// auto_pad), hand-computed values, Indices in both storage orders, and 2-D references against an
// independent pool over an explicitly padded copy of the input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/op_registry.h"
#include "tests/ops_compute/test_util.h"

namespace aotc {
namespace {

using testing_util::one_node;
using testing_util::random_tensor;
using testing_util::run_one;
using testing_util::tensors_close;

Attributes pool_attrs(std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads) {
  return {{"kernel_shape", Attribute::of_ints(kernel)}, {"strides", Attribute::of_ints(strides)},
          {"pads", Attribute::of_ints(pads)}};
}

Shape inferred(const std::string& op, Shape x, Attributes attrs) {
  auto g = one_node(op, {{"x", x}}, std::move(attrs));
  Status s = infer_shapes(g.graph);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return g.graph.value(g.node().outputs[0]).shape;
}

TEST(Pool, OutputSizesCeilModeAndAutoPad) {
  // floor((5 - 2) / 2) + 1 = 2; ceil gives 3 (the last window starts at 4, inside the input).
  EXPECT_EQ(inferred("MaxPool", {1, 1, 5}, pool_attrs({2}, {2}, {0, 0})), (Shape{1, 1, 2}));
  Attributes ceil = pool_attrs({2}, {2}, {0, 0});
  ceil["ceil_mode"] = Attribute::of_int(1);
  EXPECT_EQ(inferred("MaxPool", {1, 1, 5}, ceil), (Shape{1, 1, 3}));
  // in 6, pads (0, 1): span 5, ceil gives 4 windows, but the 4th would start at 6 (in the right
  // pad), so ONNX drops it: 3.
  Attributes ceil_pad = pool_attrs({2}, {2}, {0, 1});
  ceil_pad["ceil_mode"] = Attribute::of_int(1);
  EXPECT_EQ(inferred("AveragePool", {1, 1, 6}, ceil_pad), (Shape{1, 1, 3}));
  // SAME_UPPER: ceil(7 / 3) = 3; VALID: (7 - 3) / 3 + 1 = 2.
  EXPECT_EQ(inferred("MaxPool", {2, 3, 7, 7}, {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({3, 3})},
                                                {"auto_pad", Attribute::of_string("SAME_UPPER")}}),
            (Shape{2, 3, 3, 3}));
  EXPECT_EQ(inferred("MaxPool", {2, 3, 7, 7}, {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({3, 3})},
                                                {"auto_pad", Attribute::of_string("VALID")}}),
            (Shape{2, 3, 2, 2}));
  // dilation 2, kernel 3: eff 5; (8 - 5) / 1 + 1 = 4.
  EXPECT_EQ(inferred("MaxPool", {1, 1, 8, 8}, {{"kernel_shape", Attribute::of_ints({3, 3})}, {"dilations", Attribute::of_ints({2, 2})}}),
            (Shape{1, 1, 4, 4}));
  EXPECT_EQ(inferred("GlobalAveragePool", {2, 3, 4, 5, 6}, {}), (Shape{2, 3, 1, 1, 1}));
}

TEST(Pool, CeilModeHandValues) {
  // 1..16 in 4x4, kernel 3, stride 2, ceil: windows start at 0 and 2 (the second is clipped).
  std::vector<float> v;
  for (int i = 1; i <= 16; ++i) v.push_back(static_cast<float>(i));
  Attributes a = pool_attrs({3, 3}, {2, 2}, {0, 0, 0, 0});
  a["ceil_mode"] = Attribute::of_int(1);
  auto g = one_node("MaxPool", {{"x", {1, 1, 4, 4}}}, a);
  auto out = run_one(g, {Tensor::from_floats({1, 1, 4, 4}, v)});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_TRUE(tensors_close(out.value()[0], {11, 12, 15, 16}, DType::kFloat32));
  auto avg = one_node("AveragePool", {{"x", {1, 1, 4, 4}}}, a);
  auto out2 = run_one(avg, {Tensor::from_floats({1, 1, 4, 4}, v)});
  ASSERT_TRUE(out2.is_ok());
  // (1+2+3+5+6+7+9+10+11)/9 = 6; (3+4+7+8+11+12)/6 = 7.5; (9+10+11+13+14+15)/6 = 12; (11+12+15+16)/4 = 13.5
  EXPECT_TRUE(tensors_close(out2.value()[0], {6, 7.5, 12, 13.5}, DType::kFloat32));
}

TEST(Pool, AverageCountIncludePad) {
  // 3x3 = 1..9, kernel 2, stride 2, pads 1 on every side: windows start at -1 and 1.
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int include : {0, 1}) {
    Attributes a = pool_attrs({2, 2}, {2, 2}, {1, 1, 1, 1});
    a["count_include_pad"] = Attribute::of_int(include);
    auto g = one_node("AveragePool", {{"x", {1, 1, 3, 3}}}, a);
    auto out = run_one(g, {Tensor::from_floats({1, 1, 3, 3}, v)});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    if (include)  // every window has 4 positions inside input + pads
      EXPECT_TRUE(tensors_close(out.value()[0], {1 / 4.0, 5 / 4.0, 11 / 4.0, 28 / 4.0}, DType::kFloat32));
    else
      EXPECT_TRUE(tensors_close(out.value()[0], {1, 5 / 2.0, 11 / 2.0, 28 / 4.0}, DType::kFloat32));
  }
}

// LpPool-18: (sum over the window's elements inside the input of |x|^p)^(1/p); pads add nothing.
TEST(Pool, LpPoolHandValues) {
  std::vector<float> v = {1, -2, 3, 4, 5, -6, 7, 8, 9};
  Attributes a = pool_attrs({2, 2}, {2, 2}, {1, 1, 1, 1});
  auto g = one_node("LpPool", {{"x", {1, 1, 3, 3}}}, a);  // p defaults to 2
  auto out = run_one(g, {Tensor::from_floats({1, 1, 3, 3}, v)});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_TRUE(tensors_close(out.value()[0], {1, std::sqrt(13.0), std::sqrt(65.0), std::sqrt(206.0)}, DType::kFloat32));
  a["p"] = Attribute::of_int(1);
  auto g1 = one_node("LpPool", {{"x", {1, 1, 3, 3}}}, a);
  out = run_one(g1, {Tensor::from_floats({1, 1, 3, 3}, v)});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_TRUE(tensors_close(out.value()[0], {1, 5, 11, 28}, DType::kFloat32));
  a["p"] = Attribute::of_int(0);
  auto bad = one_node("LpPool", {{"x", {1, 1, 3, 3}}}, a);
  Status s = infer_shapes(bad.graph);
  EXPECT_NE(s.message().find("p 0 must be at least 1"), std::string::npos) << s.message();
}

// Windows over 4 spatial dims are refused at inference: every reference and kernel runs 1 to 3 (a
// 4-D Conv reached the reference through constant folding and threw std::length_error: a fuzz
// find, 2026-11-27).
TEST(Pool, FourSpatialDimsAreRefused) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    auto g = one_node(op, {{"x", {1, 1, 2, 2, 2, 2}}}, pool_attrs({1, 1, 1, 1}, {1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 0}));
    Status s = infer_shapes(g.graph);
    EXPECT_NE(s.message().find("4 spatial dims"), std::string::npos) << op << ": " << s.message();
  }
  auto conv = one_node("Conv", {{"x", {1, 1, 2, 2, 2, 2}}, {"w", {1, 1, 1, 1, 1, 1}}}, {});
  Status s = infer_shapes(conv.graph);
  EXPECT_NE(s.message().find("4 spatial dims"), std::string::npos) << s.message();
}

TEST(Pool, MaxPoolIndicesBothStorageOrders) {
  // [[1, 5, 2], [7, 3, 4]], kernel 2x2, stride 1: maxima 7 at (1, 0) and 5 at (0, 1).
  for (int order : {0, 1}) {
    Attributes a = pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0});
    a["storage_order"] = Attribute::of_int(order);
    auto g = one_node("MaxPool", {{"x", {2, 1, 2, 3}}}, a, 2);
    auto out = run_one(g, {Tensor::from_floats({2, 1, 2, 3}, {1, 5, 2, 7, 3, 4, 0, 0, 9, 0, 0, 0})});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_TRUE(tensors_close(out.value()[0], {7, 5, 0, 9}, DType::kFloat32));
    ASSERT_EQ(out.value()[1].dtype(), DType::kInt64);
    // Row-major: h * 3 + w (+ 6 for the second image); column-major: h + 2 * w.
    std::vector<int64_t> want = order == 0 ? std::vector<int64_t>{3, 1, 6 + 0, 6 + 2}
                                           : std::vector<int64_t>{1, 2, 6 + 0, 6 + 4};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out.value()[1].get_int(i), want[static_cast<size_t>(i)]) << "order " << order << " i " << i;
  }
}

TEST(Pool, MaxPoolInt8AndUint8) {
  for (DType t : {DType::kInt8, DType::kUInt8}) {
    auto g = one_node("MaxPool", {{"x", {1, 1, 1, 4}}}, pool_attrs({1, 2}, {1, 2}, {0, 0, 0, 0}), 1, t);
    Tensor x(t, {1, 1, 1, 4});
    std::vector<int64_t> v = t == DType::kInt8 ? std::vector<int64_t>{-128, -7, 127, -1} : std::vector<int64_t>{0, 200, 255, 3};
    for (int i = 0; i < 4; ++i) x.set_int(i, v[static_cast<size_t>(i)]);
    auto out = run_one(g, {x});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value()[0].dtype(), t);
    EXPECT_EQ(out.value()[0].get_int(0), t == DType::kInt8 ? -7 : 200);
    EXPECT_EQ(out.value()[0].get_int(1), t == DType::kInt8 ? 127 : 255);
  }
}

// Independent 2-D pool: copy the input into a padded buffer (NaN marks padding, and the buffer is
// wide enough for ceil-mode windows), then reduce each window of that buffer.
std::vector<double> padded_pool(const Tensor& x, bool max, bool include_pad, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                                int64_t dh, int64_t dw, int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t oh, int64_t ow) {
  const int64_t nc = x.shape()[0] * x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t ph = std::max(h + pt + pb, (oh - 1) * sh + (kh - 1) * dh + 1);
  const int64_t pw = std::max(w + pl + pr, (ow - 1) * sw + (kw - 1) * dw + 1);
  std::vector<double> y;
  for (int64_t p = 0; p < nc; ++p) {
    std::vector<double> buf(static_cast<size_t>(ph * pw), std::nan(""));
    std::vector<char> in_pad_area(static_cast<size_t>(ph * pw), 0);
    for (int64_t i = 0; i < ph; ++i)
      for (int64_t j = 0; j < pw; ++j) {
        in_pad_area[static_cast<size_t>(i * pw + j)] = i < h + pt + pb && j < w + pl + pr;
        if (i >= pt && i < pt + h && j >= pl && j < pl + w) buf[static_cast<size_t>(i * pw + j)] = x.get((p * h + i - pt) * w + j - pl);
      }
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -INFINITY, sum = 0;
        int64_t count = 0;
        for (int64_t a = 0; a < kh; ++a)
          for (int64_t b = 0; b < kw; ++b) {
            size_t at = static_cast<size_t>((i * sh + a * dh) * pw + j * sw + b * dw);
            if (!std::isnan(buf[at])) {
              best = std::max(best, buf[at]);
              sum += buf[at];
              ++count;
            } else if (include_pad && in_pad_area[at]) {
              ++count;
            }
          }
        y.push_back(max ? best : sum / static_cast<double>(count));
      }
  }
  return y;
}

TEST(Pool, ReferencesMatchPaddedCopy) {
  struct Case { const char* op; int64_t h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr; int ceil, include; int64_t oh, ow; };
  const Case cases[] = {
      // (11 + 1 + 2 - 3) / 2 + 1 = 6; (7 + 0 + 1 - 2) / 3 + 1 = 3
      {"MaxPool", 11, 7, 3, 2, 2, 3, 1, 1, 1, 0, 2, 1, 0, 0, 6, 3},
      // ceil: (13 + 0 + 0 - 3) / 2 -> 5 + 1 = 6 (start 10 < 13); w: (5 + 1 + 1 - 2) / 2 = 2.5 -> 3 + 1 = 4, start 6 >= 5 + 1 -> 3
      {"MaxPool", 13, 5, 3, 2, 2, 2, 1, 1, 0, 1, 0, 1, 1, 0, 6, 3},
      // dilations 2: eff 5 and 3; (9 + 2 - 5) + 1 = 7; (6 + 0 - 3) / 2 + 1 = 2
      {"MaxPool", 9, 6, 3, 2, 1, 2, 2, 2, 1, 0, 1, 0, 0, 0, 7, 2},
      {"AveragePool", 11, 7, 3, 2, 2, 3, 1, 1, 1, 0, 2, 1, 0, 0, 6, 3},
      {"AveragePool", 11, 7, 3, 2, 2, 3, 1, 1, 1, 0, 2, 1, 0, 1, 6, 3},
      {"AveragePool", 13, 5, 3, 2, 2, 2, 1, 1, 0, 1, 0, 1, 1, 0, 6, 3},
      {"AveragePool", 13, 5, 3, 2, 2, 2, 1, 1, 0, 1, 0, 1, 1, 1, 6, 3},
  };
  int index = 0;
  for (const Case& c : cases) {
    Attributes a = {{"kernel_shape", Attribute::of_ints({c.kh, c.kw})}, {"strides", Attribute::of_ints({c.sh, c.sw})},
                    {"dilations", Attribute::of_ints({c.dh, c.dw})}, {"pads", Attribute::of_ints({c.pt, c.pl, c.pb, c.pr})},
                    {"ceil_mode", Attribute::of_int(c.ceil)}};
    if (std::string(c.op) == "AveragePool") a["count_include_pad"] = Attribute::of_int(c.include);
    if (std::string(c.op) == "MaxPool" && c.dh == 1) a.erase("dilations");
    auto g = one_node(c.op, {{"x", {2, 3, c.h, c.w}}}, a);
    Tensor x = random_tensor(DType::kFloat32, {2, 3, c.h, c.w}, 20 + index);
    auto out = run_one(g, {x});
    ASSERT_TRUE(out.is_ok()) << "case " << index << ": " << out.status().message();
    EXPECT_EQ(out.value()[0].shape(), (Shape{2, 3, c.oh, c.ow})) << "case " << index;
    EXPECT_TRUE(tensors_close(out.value()[0],
                              padded_pool(x, std::string(c.op) == "MaxPool", c.include, c.kh, c.kw, c.sh, c.sw, c.dh, c.dw,
                                          c.pt, c.pl, c.pb, c.pr, c.oh, c.ow),
                              DType::kFloat32))
        << "case " << index;
    ++index;
  }
}

TEST(Pool, GlobalPoolsAnyRank) {
  Tensor x = random_tensor(DType::kFloat32, {2, 3, 4, 5, 2}, 30);
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    auto g = one_node(op, {{"x", {2, 3, 4, 5, 2}}}, {});
    auto out = run_one(g, {x});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    std::vector<double> want;
    for (int p = 0; p < 6; ++p) {
      double sum = 0, best = -INFINITY;
      for (int i = 0; i < 40; ++i) {
        sum += x.get(p * 40 + i);
        best = std::max(best, x.get(p * 40 + i));
      }
      want.push_back(std::string(op) == "GlobalMaxPool" ? best : sum / 40);
    }
    EXPECT_TRUE(tensors_close(out.value()[0], want, DType::kFloat32)) << op;
  }
}

void expect_error(const std::string& op, Shape x, Attributes a, int outputs, DType t, const std::string& part) {
  auto g = one_node(op, {{"x", x}}, std::move(a), outputs, t);
  Status s = infer_shapes(g.graph);
  ASSERT_FALSE(s.is_ok()) << op << " " << part;
  EXPECT_NE(s.message().find("node 'n0' (" + op + ")"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
}

TEST(Pool, ErrorsNameNodeAndReason) {
  expect_error("MaxPool", {1, 1, 4, 4}, {}, 1, DType::kFloat32, "kernel_shape is required");
  expect_error("AveragePool", {1, 1, 4, 4}, pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}), 1, DType::kInt8, "int8");
  expect_error("AveragePool", {1, 1, 4, 4}, pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}), 2, DType::kFloat32, "1 output");
  expect_error("MaxPool", {1, 1, 4, 4}, pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}), 1, DType::kInt32, "int32");
  Attributes so = pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0});
  so["storage_order"] = Attribute::of_int(2);
  expect_error("MaxPool", {1, 1, 4, 4}, so, 1, DType::kFloat32, "storage_order");
  expect_error("MaxPool", {1, 1, 4, 4}, pool_attrs({5, 2}, {1, 1}, {0, 0, 0, 0}), 1, DType::kFloat32, "does not fit");
  expect_error("GlobalAveragePool", {1, 4}, {}, 1, DType::kFloat32, "rank 2");
}

}  // namespace
}  // namespace aotc
