// Conv / FusedConv: shape inference (explicit, SAME_*, VALID pads; error cases), the reference
// against an independent scatter-form convolution written here, and the lowering's choices.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "tests/ops_compute/test_util.h"

namespace aotc {
namespace {

using testing_util::one_node;
using testing_util::random_tensor;
using testing_util::run_one;
using testing_util::tensors_close;

struct Conv3 {  // a convolution in 3 spatial dims; lower ranks use size-1 leading dims
  int64_t n, c, d, h, w, k, kd, kh, kw, group;
  int64_t s[3], p[3], dil[3];  // strides, begin pads, dilations
  int64_t od, oh, ow;          // output dims, computed by hand in each test
};

// Scatter form: every input element adds its contribution to each output it reaches. The
// reference gathers per output instead, so the two share no loop structure.
std::vector<double> scatter_conv(const Conv3& q, const Tensor& x, const Tensor& w, const Tensor* b) {
  std::vector<double> y(static_cast<size_t>(q.n * q.k * q.od * q.oh * q.ow), 0.0);
  const int64_t cg = q.c / q.group, kg = q.k / q.group;
  for (int64_t n = 0; n < q.n; ++n)
    for (int64_t c = 0; c < q.c; ++c)
      for (int64_t id = 0; id < q.d; ++id)
        for (int64_t ih = 0; ih < q.h; ++ih)
          for (int64_t iw = 0; iw < q.w; ++iw) {
            double xv = x.get((((n * q.c + c) * q.d + id) * q.h + ih) * q.w + iw);
            int64_t g = c / cg;
            for (int64_t k = g * kg; k < (g + 1) * kg; ++k)
              for (int64_t a = 0; a < q.kd; ++a)
                for (int64_t r = 0; r < q.kh; ++r)
                  for (int64_t s = 0; s < q.kw; ++s) {
                    int64_t td = id + q.p[0] - a * q.dil[0], th = ih + q.p[1] - r * q.dil[1], tw = iw + q.p[2] - s * q.dil[2];
                    if (td % q.s[0] || th % q.s[1] || tw % q.s[2] || td < 0 || th < 0 || tw < 0) continue;
                    int64_t od = td / q.s[0], oh = th / q.s[1], ow = tw / q.s[2];
                    if (od >= q.od || oh >= q.oh || ow >= q.ow) continue;
                    double wv = w.get((((k * cg + (c - g * cg)) * q.kd + a) * q.kh + r) * q.kw + s);
                    y[static_cast<size_t>((((n * q.k + k) * q.od + od) * q.oh + oh) * q.ow + ow)] += xv * wv;
                  }
          }
  if (b)
    for (size_t i = 0; i < y.size(); ++i) y[i] += b->get(static_cast<int64_t>(i / (q.od * q.oh * q.ow)) % q.k);
  return y;
}

Attributes conv_attrs(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dil, int64_t group) {
  return {{"strides", Attribute::of_ints(strides)}, {"pads", Attribute::of_ints(pads)},
          {"dilations", Attribute::of_ints(dil)}, {"group", Attribute::of_int(group)}};
}

// Runs a 2-D Conv through infer + reference and compares with the scatter form.
void check_conv2d(const Conv3& q, const std::vector<int64_t>& pads4, bool bias, DType dtype = DType::kFloat32) {
  Shape xs{q.n, q.c, q.h, q.w}, ws{q.k, q.c / q.group, q.kh, q.kw};
  auto g = one_node("Conv", {{"x", xs}, {"w", ws}, {bias ? "b" : "", {q.k}}},
                    conv_attrs({q.s[1], q.s[2]}, pads4, {q.dil[1], q.dil[2]}, q.group), 1, dtype);
  Tensor x = random_tensor(dtype, xs, 1), w = random_tensor(dtype, ws, 2), b = random_tensor(dtype, {q.k}, 3);
  std::vector<Tensor> in = {x, w};
  if (bias) in.push_back(b);
  auto out = run_one(g, in);
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(out.value()[0].shape(), (Shape{q.n, q.k, q.oh, q.ow}));
  EXPECT_TRUE(tensors_close(out.value()[0], scatter_conv(q, x, w, bias ? &b : nullptr), dtype));
}

TEST(Conv, AsymmetricPadsStridesDilationsPrimes) {
  // H: (7 + 1 + 2 - 3) / 2 + 1 = 4; W: eff 3, (11 + 0 + 1 - 3) / 3 + 1 = 4.
  check_conv2d({1, 3, 1, 7, 11, 5, 1, 3, 2, 1, {1, 2, 3}, {0, 1, 0}, {1, 1, 2}, 1, 4, 4}, {1, 0, 2, 1}, true);
}

TEST(Conv, GroupedWithDilation) {
  // C 6, K 4, group 2; H: (9 + 2 + 2 - 5) / 1 + 1 = 9 (eff 5); W: (5 + 0 + 0 - 3) / 2 + 1 = 2.
  check_conv2d({2, 6, 1, 9, 5, 4, 1, 3, 3, 2, {1, 1, 2}, {0, 2, 0}, {1, 2, 1}, 1, 9, 2}, {2, 0, 2, 0}, true);
}

TEST(Conv, DepthwiseWithMultiplier) {
  // group = C = 3, K = 6 (two filters per channel); 13x13, 3x3, stride 2, pad 1: 7x7.
  check_conv2d({1, 3, 1, 13, 13, 6, 1, 3, 3, 3, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, 1, 7, 7}, {1, 1, 1, 1}, false);
}

TEST(Conv, OneByOneAndSizeOne) {
  check_conv2d({3, 5, 1, 1, 1, 7, 1, 1, 1, 1, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1, 1, 1}, {0, 0, 0, 0}, true);
  check_conv2d({1, 2, 1, 3, 2, 1, 1, 1, 1, 1, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1, 3, 2}, {0, 0, 0, 0}, false);
}

TEST(Conv, Float16MatchesFloat16Tolerance) {
  check_conv2d({1, 4, 1, 6, 5, 3, 1, 3, 3, 1, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 1, 6, 5}, {1, 1, 1, 1}, true,
               DType::kFloat16);
}

TEST(Conv, OneDAndThreeD) {
  {  // 1-D: L 10, k 3, stride 2, pads (2, 1), dilation 2: (10 + 3 - 5) / 2 + 1 = 5
    Conv3 q{2, 2, 1, 1, 10, 3, 1, 1, 3, 1, {1, 1, 2}, {0, 0, 2}, {1, 1, 2}, 1, 1, 5};
    auto g = one_node("Conv", {{"x", {2, 2, 10}}, {"w", {3, 2, 3}}},
                      conv_attrs({2}, {2, 1}, {2}, 1));
    Tensor x = random_tensor(DType::kFloat32, {2, 2, 10}, 4), w = random_tensor(DType::kFloat32, {3, 2, 3}, 5);
    auto out = run_one(g, {x, w});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value()[0].shape(), (Shape{2, 3, 5}));
    EXPECT_TRUE(tensors_close(out.value()[0], scatter_conv(q, x, w, nullptr), DType::kFloat32));
  }
  {  // 3-D: 4x5x3, kernel 2x3x2, pads d(1,0) h(1,1) w(0,1), stride (1,2,1): 4x3x3
    Conv3 q{1, 2, 4, 5, 3, 2, 2, 3, 2, 1, {1, 2, 1}, {1, 1, 0}, {1, 1, 1}, 4, 3, 3};
    auto g = one_node("Conv", {{"x", {1, 2, 4, 5, 3}}, {"w", {2, 2, 2, 3, 2}}, {"b", {2}}},
                      conv_attrs({1, 2, 1}, {1, 1, 0, 0, 1, 1}, {1, 1, 1}, 1));
    Tensor x = random_tensor(DType::kFloat32, {1, 2, 4, 5, 3}, 6), w = random_tensor(DType::kFloat32, {2, 2, 2, 3, 2}, 7);
    Tensor b = random_tensor(DType::kFloat32, {2}, 8);
    auto out = run_one(g, {x, w, b});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value()[0].shape(), (Shape{1, 2, 4, 3, 3}));
    EXPECT_TRUE(tensors_close(out.value()[0], scatter_conv(q, x, w, &b), DType::kFloat32));
  }
}

TEST(Conv, AutoPadSameUpperLowerValid) {
  // 4x4 input, 3x3 kernel, stride 2: out 2x2 and total pad 1 per axis; SAME_UPPER puts it at the
  // end, SAME_LOWER at the beginning. VALID: (4 - 3) / 2 + 1 = 1.
  Tensor x = random_tensor(DType::kFloat32, {1, 1, 4, 4}, 9), w = random_tensor(DType::kFloat32, {1, 1, 3, 3}, 10);
  struct Case { const char* mode; int64_t pad_begin; int64_t out; };
  for (Case c : {Case{"SAME_UPPER", 0, 2}, Case{"SAME_LOWER", 1, 2}, Case{"VALID", 0, 1}}) {
    auto g = one_node("Conv", {{"x", {1, 1, 4, 4}}, {"w", {1, 1, 3, 3}}},
                      {{"auto_pad", Attribute::of_string(c.mode)}, {"strides", Attribute::of_ints({2, 2})}});
    auto out = run_one(g, {x, w});
    ASSERT_TRUE(out.is_ok()) << c.mode << ": " << out.status().message();
    EXPECT_EQ(out.value()[0].shape(), (Shape{1, 1, c.out, c.out})) << c.mode;
    Conv3 q{1, 1, 1, 4, 4, 1, 1, 3, 3, 1, {1, 2, 2}, {0, c.pad_begin, c.pad_begin}, {1, 1, 1}, 1, c.out, c.out};
    EXPECT_TRUE(tensors_close(out.value()[0], scatter_conv(q, x, w, nullptr), DType::kFloat32)) << c.mode;
  }
  // SAME with stride 1 and an even kernel: 5 -> 5, total pad 1.
  auto g = one_node("Conv", {{"x", {1, 1, 5, 5}}, {"w", {1, 1, 2, 2}}}, {{"auto_pad", Attribute::of_string("SAME_LOWER")}});
  ASSERT_TRUE(infer_shapes(g.graph).is_ok());
  EXPECT_EQ(g.graph.value(g.node().outputs[0]).shape, (Shape{1, 1, 5, 5}));
}

TEST(Conv, FusedConvResidualAndActivation) {
  Conv3 q{1, 4, 1, 5, 6, 3, 1, 3, 3, 1, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 1, 5, 6};
  auto g = one_node("FusedConv", {{"x", {1, 4, 5, 6}}, {"w", {3, 4, 3, 3}}, {"b", {3}}, {"r", {1, 3, 5, 6}}},
                    conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), 1, DType::kFloat32, "aotc");
  Node relu;
  relu.op_type = "Relu";
  store_activation(g.node(), relu);
  Tensor x = random_tensor(DType::kFloat32, {1, 4, 5, 6}, 11), w = random_tensor(DType::kFloat32, {3, 4, 3, 3}, 12);
  Tensor b = random_tensor(DType::kFloat32, {3}, 13), r = random_tensor(DType::kFloat32, {1, 3, 5, 6}, 14);
  auto out = run_one(g, {x, w, b, r});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  std::vector<double> want = scatter_conv(q, x, w, &b);
  int negatives = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] += r.get(static_cast<int64_t>(i));
    negatives += want[i] < 0;
    want[i] = std::max(want[i], 0.0);
  }
  EXPECT_GT(negatives, 5);  // the activation is exercised
  EXPECT_TRUE(tensors_close(out.value()[0], want, DType::kFloat32));
}

Status infer_status(const std::string& op, const std::vector<std::pair<std::string, Shape>>& inputs, Attributes attrs,
                    DType dtype = DType::kFloat32) {
  auto g = one_node(op, inputs, std::move(attrs), 1, dtype);
  return infer_shapes(g.graph);
}

void expect_error(const Status& s, const std::string& part) {
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'n0' (Conv)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
}

TEST(Conv, ErrorsNameNodeAndReason) {
  expect_error(infer_status("Conv", {{"x", {1, 3, 5, 5}}, {"w", {2, 4, 3, 3}}}, {}), "input channels per group");
  expect_error(infer_status("Conv", {{"x", {1, 3, 5, 5}}, {"w", {2, 1, 3, 3}}}, {{"group", Attribute::of_int(2)}}),
               "not divisible by group");
  expect_error(infer_status("Conv", {{"x", {1, 3, 5, 5}}, {"w", {2, 3, 3, 3}}}, {{"kernel_shape", Attribute::of_ints({2, 2})}}),
               "kernel_shape");
  expect_error(infer_status("Conv", {{"x", {1, 3, 5, 5}}, {"w", {2, 3, 3, 3}}, {"b", {3}}}, {}), "(B)");
  expect_error(infer_status("Conv", {{"x", {1, 3, 5, 5}}, {"w", {2, 3, 3, 3}}}, {}, DType::kInt32), "int32");
  expect_error(infer_status("Conv", {{"x", {1, 3, 5, 5}}, {"w", {2, 3, 3, 3}}}, {{"strides", Attribute::of_ints({0, 1})}}),
               "strides");
  expect_error(infer_status("Conv", {{"x", {1, 3, 2, 2}}, {"w", {2, 3, 3, 3}}}, {}), "does not fit");
  expect_error(infer_status("Conv", {{"x", {1, 3, 5, 5}}, {"w", {2, 3, 3, 3}}}, {{"pads", Attribute::of_ints({1, 1})}}),
               "pads");
  expect_error(infer_status("Conv", {{"x", {1, 3, 5, 5}}, {"w", {2, 3, 3, 3}}}, {{"auto_pad", Attribute::of_string("SAME")}}),
               "auto_pad");
}

const KernelStep& only_kernel(const Expected<Lowering>& l) {
  EXPECT_TRUE(l.is_ok()) << l.status().message();
  EXPECT_EQ(l->steps.size(), 1u);
  return l->steps[0].kernel;
}

std::string hole(const KernelStep& k, const std::string& key) {
  for (const auto& kv : k.holes)
    if (kv.first == key) return kv.second;
  ADD_FAILURE() << "no hole " << key;
  return "";
}

TEST(Conv, LoweringPicksDepthwiseOrImplicitGemm) {
  const OpDef* def = default_registry().find("Conv");
  ASSERT_NE(def, nullptr);
  auto dw = one_node("Conv", {{"x", {2, 8, 9, 9}}, {"w", {8, 1, 3, 3}}}, conv_attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 8));
  ASSERT_TRUE(infer_shapes(dw.graph).is_ok());
  auto l1 = def->lower(dw.node(), dw.graph);
  const KernelStep& k1 = only_kernel(l1);
  EXPECT_EQ(k1.template_name, "conv_depthwise");
  EXPECT_EQ(hole(k1, "OH"), "5LL");
  EXPECT_EQ(k1.args.size(), 5u);
  EXPECT_EQ(k1.args[2], kNullArg);

  auto ig = one_node("Conv", {{"x", {2, 6, 9, 7}}, {"w", {40, 3, 3, 1}}, {"b", {40}}},
                     conv_attrs({1, 1}, {1, 0, 1, 0}, {2, 1}, 2));
  ASSERT_TRUE(infer_shapes(ig.graph).is_ok());
  auto l2 = def->lower(ig.node(), ig.graph);
  const KernelStep& k2 = only_kernel(l2);
  EXPECT_EQ(k2.template_name, "conv_implicit_gemm");
  EXPECT_EQ(hole(k2, "DH"), "2LL");
  EXPECT_EQ(hole(k2, "HAS_BIAS"), "1");
  EXPECT_EQ(k2.grid.z, 2);  // one z-slice per group
  // GEMM N = batch * OH * OW = 2 * 7 * 7 = 98, M per group = 20.
  const int64_t bn = std::stoll(hole(k2, "BN")), bm = std::stoll(hole(k2, "BM"));
  EXPECT_EQ(k2.grid.x, (98 + bn - 1) / bn);
  EXPECT_EQ(k2.grid.y, (20 + bm - 1) / bm);

  // 4 spatial dims: refused at inference (the reference and the kernels run 1 to 3; the rank-3
  // reference used to be reached through constant folding and threw, a fuzz find).
  auto four_d = one_node("Conv", {{"x", {1, 1, 3, 3, 3, 3}}, {"w", {1, 1, 1, 1, 1, 1}}}, {});
  Status s4 = infer_shapes(four_d.graph);
  ASSERT_FALSE(s4.is_ok());
  EXPECT_NE(s4.message().find("4 spatial dims"), std::string::npos) << s4.message();
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

TEST(Conv, TileChoiceFollowsShape) {
  const OpDef* def = default_registry().find("Conv");
  auto tile_of = [def](Shape x, Shape w) {
    auto g = one_node("Conv", {{"x", x}, {"w", w}}, {});
    EXPECT_TRUE(infer_shapes(g.graph).is_ok());
    auto l = def->lower(g.node(), g.graph);
    EXPECT_TRUE(l.is_ok());
    return hole(l->steps[0].kernel, "BM") + "x" + hole(l->steps[0].kernel, "BN");
  };
  EXPECT_EQ(tile_of({1, 8, 10, 10}, {12, 8, 1, 1}), "16LLx128LL");     // few output channels
  EXPECT_EQ(tile_of({1, 8, 10, 10}, {256, 8, 1, 1}), "64LLx64LL");     // too few tiles to fill the GPU
  EXPECT_EQ(tile_of({32, 64, 56, 56}, {256, 64, 1, 1}), "128LLx128LL");  // ResNet-50 layer1 at batch 32
}

}  // namespace
}  // namespace aotc
