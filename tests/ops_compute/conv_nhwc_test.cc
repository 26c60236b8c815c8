// Channels-last (NHWC) convolution, pooling and packing: the channels_last references against
// independent loops written here (scatter-form convolution on data permuted to NCHW by hand, NHWC
// pooling loops, the PackNhwc layout), and the NHWC kernels (conv_depthwise_nhwc, conv_depthwise_nhwc_tile,
// pool_window_nhwc, pool_global_nhwc, pack_nhwc; fp16 and fp32), lowered through each op's lower(), run on the
// CPU emulation (tests/ops_compute/cuda_emulation.h) against the references, and compiled by nvcc
// for sm_90 and sm_87. Outputs are poisoned with 0xFF bytes before every kernel run, so an element
// a kernel does not write shows as NaN. The CUTLASS (group 1, 16-bit) lowering is not covered here:
// it needs the CUTLASS headers and a GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "tests/ops_compute/kernel_harness.h"
#include "tests/ops_compute/test_util.h"

namespace aotc {
namespace {

using testing_util::one_node;
using testing_util::OneNode;
using testing_util::random_tensor;
using testing_util::run_one;
using testing_util::tensors_close;

// ---- layout helpers, written here (not ir/layout.h's permute_channels) ----

// [A, B, C, D] (NCHW or KCRS) -> [A, C, D, B] (NHWC or KRSC).
Tensor to_last(const Tensor& t) {
  const Shape& s = t.shape();
  Tensor out(t.dtype(), {s[0], s[2], s[3], s[1]});
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t c = 0; c < s[2]; ++c)
        for (int64_t d = 0; d < s[3]; ++d)
          out.set(((a * s[2] + c) * s[3] + d) * s[1] + b, t.get(((a * s[1] + b) * s[2] + c) * s[3] + d));
  return out;
}

// [A, C, D, B] (NHWC or KRSC) -> [A, B, C, D] (NCHW or KCRS).
Tensor to_first(const Tensor& t) {
  const Shape& s = t.shape();  // s = {A, C, D, B}
  Tensor out(t.dtype(), {s[0], s[3], s[1], s[2]});
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t d = 0; d < s[2]; ++d)
        for (int64_t b = 0; b < s[3]; ++b)
          out.set(((a * s[3] + b) * s[1] + c) * s[2] + d, t.get(((a * s[1] + c) * s[2] + d) * s[3] + b));
  return out;
}

// NCHW doubles of dims (n, c, h, w) -> NHWC doubles.
std::vector<double> doubles_to_last(const std::vector<double>& v, int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<double> out(v.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          out[static_cast<size_t>(((a * h + y) * w + x) * c + b)] = v[static_cast<size_t>(((a * c + b) * h + y) * w + x)];
  return out;
}

Attributes conv_attrs(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dil, int64_t group) {
  return {{"strides", Attribute::of_ints(strides)}, {"pads", Attribute::of_ints(pads)},
          {"dilations", Attribute::of_ints(dil)}, {"group", Attribute::of_int(group)},
          {"channels_last", Attribute::of_int(1)}};
}

void set_activation(OneNode& g, const std::string& op, Attributes attrs = {}) {
  Node act;
  act.op_type = op;
  act.attrs = std::move(attrs);
  store_activation(g.node(), act);
}

// ---- 1. channels_last Conv reference vs a scatter-form convolution in NCHW ----

struct Conv2 {
  int64_t n, c, h, w, k, kh, kw, group;
  int64_t sh, sw, ph, pw, dh, dw;  // strides, begin pads, dilations
  int64_t oh, ow;                  // computed by hand in each case
};

// Scatter form over NCHW x and KCRS w: every input element adds to each output it reaches.
std::vector<double> scatter_conv(const Conv2& q, const Tensor& x, const Tensor& w, const Tensor* b) {
  std::vector<double> y(static_cast<size_t>(q.n * q.k * q.oh * q.ow), 0.0);
  const int64_t cg = q.c / q.group, kg = q.k / q.group;
  for (int64_t n = 0; n < q.n; ++n)
    for (int64_t c = 0; c < q.c; ++c)
      for (int64_t ih = 0; ih < q.h; ++ih)
        for (int64_t iw = 0; iw < q.w; ++iw) {
          const double xv = x.get(((n * q.c + c) * q.h + ih) * q.w + iw);
          const int64_t g = c / cg;
          for (int64_t k = g * kg; k < (g + 1) * kg; ++k)
            for (int64_t r = 0; r < q.kh; ++r)
              for (int64_t s = 0; s < q.kw; ++s) {
                const int64_t th = ih + q.ph - r * q.dh, tw = iw + q.pw - s * q.dw;
                if (th < 0 || tw < 0 || th % q.sh || tw % q.sw) continue;
                const int64_t oh = th / q.sh, ow = tw / q.sw;
                if (oh >= q.oh || ow >= q.ow) continue;
                const double wv = w.get(((k * cg + (c - g * cg)) * q.kh + r) * q.kw + s);
                y[static_cast<size_t>(((n * q.k + k) * q.oh + oh) * q.ow + ow)] += xv * wv;
              }
        }
  if (b)
    for (size_t i = 0; i < y.size(); ++i) y[i] += b->get(static_cast<int64_t>(i / static_cast<size_t>(q.oh * q.ow)) % q.k);
  return y;
}

// Runs a channels_last Conv (or FusedConv with a residual and Relu) through infer + reference and
// compares with the scatter form of the same data permuted to NCHW.
void check_nhwc_conv(const Conv2& q, const std::vector<int64_t>& pads4, bool bias, bool fused_residual_relu,
                     uint32_t seed) {
  SCOPED_TRACE("C " + std::to_string(q.c) + " K " + std::to_string(q.k) + " group " + std::to_string(q.group));
  const Shape xs{q.n, q.h, q.w, q.c}, ws{q.k, q.kh, q.kw, q.c / q.group}, ys{q.n, q.oh, q.ow, q.k};
  std::vector<std::pair<std::string, Shape>> ins = {{"x", xs}, {"w", ws}, {bias ? "b" : "", {q.k}}};
  if (fused_residual_relu) ins.push_back({"r", ys});
  auto g = one_node(fused_residual_relu ? "FusedConv" : "Conv", ins, conv_attrs({q.sh, q.sw}, pads4, {q.dh, q.dw}, q.group),
                    1, DType::kFloat32, fused_residual_relu ? "aotc" : "");
  if (fused_residual_relu) set_activation(g, "Relu");
  const DType f32 = DType::kFloat32;
  Tensor x = random_tensor(f32, xs, seed), w = random_tensor(f32, ws, seed + 1), b = random_tensor(f32, {q.k}, seed + 2);
  Tensor r = random_tensor(f32, ys, seed + 3);
  std::vector<Tensor> in = {x, w};
  if (bias) in.push_back(b);
  if (fused_residual_relu) in.push_back(r);
  auto out = run_one(g, in);
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  ASSERT_EQ(out.value()[0].shape(), ys);
  std::vector<double> want = scatter_conv(q, to_first(x), to_first(w), bias ? &b : nullptr);
  want = doubles_to_last(want, q.n, q.k, q.oh, q.ow);
  if (fused_residual_relu) {
    int negatives = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      want[i] += r.get(static_cast<int64_t>(i));  // the residual is NHWC like the output
      negatives += want[i] < 0;
      want[i] = std::max(want[i], 0.0);
    }
    EXPECT_GT(negatives, 5);  // the activation is exercised
  }
  EXPECT_TRUE(tensors_close(out.value()[0], want, f32));
}

TEST(ConvNhwc, ReferenceMatchesScatterForm) {
  // Group 1, primes: H (11 + 1 + 2 - 5) / 2 + 1 = 5 (kernel 3, dilation 2: eff 5);
  // W (9 + 0 + 1 - 3) / 2 + 1 = 4 (kernel 2, dilation 2: eff 3).
  check_nhwc_conv({2, 5, 11, 9, 7, 3, 2, 1, 2, 2, 1, 0, 2, 2, 5, 4}, {1, 0, 2, 1}, true, false, 10);
  // Group 1 without bias, 1x1 on a 1x1 image.
  check_nhwc_conv({3, 5, 1, 1, 7, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1}, {0, 0, 0, 0}, false, false, 20);
  // Depthwise C = K = group = 16, 3x3 pad 1 stride 1 on 7x5 (same size), with bias.
  check_nhwc_conv({1, 16, 7, 5, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 7, 5}, {1, 1, 1, 1}, true, false, 30);
  // Depthwise stride 2, asymmetric pads, dilation 2: H (13 + 2 + 0 - 5) / 2 + 1 = 6, W (6 + 1 + 1 - 5) / 2 + 1 = 2.
  check_nhwc_conv({2, 16, 13, 6, 16, 3, 3, 16, 2, 2, 2, 1, 2, 2, 6, 2}, {2, 1, 0, 1}, true, false, 40);
  // Grouped (2 groups of 3 input channels, 2 output channels each).
  check_nhwc_conv({1, 6, 5, 7, 4, 3, 3, 2, 1, 2, 1, 1, 1, 1, 5, 4}, {1, 1, 1, 1}, false, false, 50);
  // FusedConv with residual and Relu: 3x3 pad 1 on 5x6.
  check_nhwc_conv({1, 4, 5, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 5, 6}, {1, 1, 1, 1}, true, true, 60);
  // FusedConv depthwise with residual and Relu.
  check_nhwc_conv({2, 8, 4, 7, 8, 3, 3, 8, 1, 1, 1, 1, 1, 1, 4, 7}, {1, 1, 1, 1}, true, true, 70);
}

// ---- kernels on the CPU emulation ----

// What templates/common.cuh gives device code, for the host emulation (no CUDA headers there).
const char* const kEmulatedCommon = R"(
template <class To, class From> inline To aotc_cast(From v) { return static_cast<To>(v); }
inline long long aotc_thread_index() { return blockIdx.x * (long long)blockDim.x + threadIdx.x; }
inline long long aotc_grid_stride() { return (long long)gridDim.x * blockDim.x; }
)";

struct KernelCase {
  std::string label;
  std::function<OneNode()> build;
  std::string template_name;  // what lower() must choose
};

Expected<Lowering> lower(OneNode& g) {
  Status s = infer_shapes(g.graph);
  if (!s.is_ok()) return s;
  const OpDef* def = default_registry().find(g.node().op_type, g.node().domain);
  if (!def) return Status::error("no op " + g.node().op_type);
  return def->lower(g.node(), g.graph);
}

// One depthwise channels_last node: X [n, h, w, c], W [c, kh, kw, 1].
OneNode depthwise(DType t, int64_t n, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, std::vector<int64_t> strides,
                  std::vector<int64_t> pads, std::vector<int64_t> dil, bool bias, bool residual, const std::string& act,
                  Attributes act_attrs = {}) {
  // Output dims as window.h computes them (floor), for the residual's shape.
  const int64_t oh = (h + pads[0] + pads[2] - ((kh - 1) * dil[0] + 1)) / strides[0] + 1;
  const int64_t ow = (w + pads[1] + pads[3] - ((kw - 1) * dil[1] + 1)) / strides[1] + 1;
  const bool fused = residual || !act.empty();
  std::vector<std::pair<std::string, Shape>> ins = {{"x", {n, h, w, c}}, {"w", {c, kh, kw, 1}}, {bias ? "b" : "", {c}}};
  if (fused) ins.push_back({residual ? "r" : "", {n, oh, ow, c}});
  OneNode g = one_node(fused ? "FusedConv" : "Conv", ins, conv_attrs(strides, pads, dil, c), 1, t, fused ? "aotc" : "");
  if (!act.empty()) set_activation(g, act, std::move(act_attrs));
  return g;
}

std::vector<KernelCase> conv_cases() {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  const std::string scalar = "conv_depthwise_nhwc", tile = "conv_depthwise_nhwc_tile";
  // sm_count 0: nothing to fill, so the tile kernel keeps its largest tile (a real target shrinks
  // tiles of grids this small down to one vector of channels and a row or two).
  auto wide = [](OneNode g) {
    g.graph.target.sm_count = 0;
    return g;
  };
  const Attributes clip = {{"min", Attribute::of_float(-0.25f)}, {"max", Attribute::of_float(0.5f)}};
  std::vector<KernelCase> c;
  // C a multiple of one 16-byte vector (8 16-bit / 4 fp32 channels): the tile kernel.
  c.push_back({"fp16 C16 3x3 s1 p1 bias", [=] { return depthwise(f16, 2, 16, 7, 5, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, ""); }, tile});
  c.push_back({"fp16 C24 3x3 s2 asym pads dil2 residual relu", [=] {
                 return depthwise(f16, 1, 24, 11, 13, 3, 3, {2, 2}, {1, 0, 2, 1}, {2, 2}, false, true, "Relu");
               }, tile});
  c.push_back({"fp16 C16 1x3 image bias clip", [=] {
                 return depthwise(f16, 1, 16, 1, 3, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Clip", clip);
               }, tile});
  c.push_back({"fp16 C24 5x3 s(2,1) bias residual clip", [=] {
                 return depthwise(f16, 3, 24, 9, 7, 5, 3, {2, 1}, {2, 1, 2, 1}, {1, 1}, true, true, "Clip", clip);
               }, tile});
  c.push_back({"fp32 C16 3x3 asym pads dil(2,1) bias residual relu", [=] {
                 return depthwise(f32, 1, 16, 9, 7, 3, 3, {1, 1}, {0, 1, 2, 1}, {2, 1}, true, true, "Relu");
               }, tile});
  c.push_back({"fp32 C16 3x3 s2 plain", [=] { return depthwise(f32, 2, 16, 11, 5, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false, ""); }, tile});
  // Several tiles in both directions, the last ones partial (OW 19 > 16: 8-column tiles; OH 20:
  // 5-row tiles), 64 channels in one block (wide) or shrunk tiles (a 132-SM target).
  c.push_back({"fp16 C64 20x19 3x3 s1 p1 bias residual relu wide", [=] {
                 return wide(depthwise(f16, 2, 64, 20, 19, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true, "Relu"));
               }, tile});
  c.push_back({"fp16 C48 21x18 3x3 s2 p1 bias", [=] { return depthwise(f16, 1, 48, 21, 18, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, false, ""); }, tile});
  // The default (tow-first) on a 132-SM target: 4-column tiles (TILES_W 4) of one row, then the
  // channels shrink (8 of 48); --depthwise-tile cb-first: 8 channels, then rows.
  c.push_back({"fp16 C48 14x14 5x5 p2 bias sigmoid tow-first", [=] {
                 return depthwise(f16, 1, 48, 14, 14, 5, 5, {1, 1}, {2, 2, 2, 2}, {1, 1}, true, false, "Sigmoid");
               }, tile});
  c.push_back({"fp16 C48 14x14 5x5 p2 bias sigmoid cb-first", [=] {
                 OneNode g = depthwise(f16, 1, 48, 14, 14, 5, 5, {1, 1}, {2, 2, 2, 2}, {1, 1}, true, false, "Sigmoid");
                 g.graph.target.depthwise_tile_tow_first = false;
                 return g;
               }, tile});
  c.push_back({"fp32 C12 17x18 3x3 s1 p1 clip wide", [=] {
                 return wide(depthwise(f32, 1, 12, 17, 18, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, false, "Clip", clip));
               }, tile});
  // Not a multiple of the vector: the scalar kernel.
  c.push_back({"fp16 C6 5x5 s2 p2 bias residual clip", [=] {
                 return depthwise(f16, 2, 6, 5, 7, 5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}, true, true, "Clip", clip);
               }, scalar});
  c.push_back({"fp16 C6 3x3 s1 no bias relu", [=] { return depthwise(f16, 1, 6, 7, 3, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, false, "Relu"); }, scalar});
  c.push_back({"fp32 C5 2x2 s1 no pads bias", [=] { return depthwise(f32, 1, 5, 3, 2, 2, 2, {1, 1}, {0, 0, 0, 0}, {1, 1}, true, false, ""); }, scalar});
  // input_max (opt/clip_into_depthwise): the input clamped on load, both kernels; a negative
  // bound would clamp the tile's zero padding, so it stays on the scalar kernel.
  auto clamped = [](OneNode g, float m) {
    g.node().attrs["input_max"] = Attribute::of_float(m);
    return g;
  };
  c.push_back({"fp16 C6 3x3 s1 input_max 0.25", [=] { return clamped(depthwise(f16, 1, 6, 7, 5, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu"), 0.25f); }, scalar});
  c.push_back({"fp16 C16 3x3 s1 input_max -0.5", [=] { return clamped(depthwise(f16, 1, 16, 7, 5, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, ""), -0.5f); }, scalar});
  c.push_back({"fp16 C16 3x3 s2 input_max 0.5 wide", [=] {
                 return clamped(wide(depthwise(f16, 2, 16, 9, 11, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true, "Clip", clip)), 0.5f);
               }, tile});
  // input_activation (opt/activation_into_depthwise): the activation of every input element
  // inside the image, rounded to the input type; the padding stays zero. Sigmoid (sigmoid(0) =
  // 1/2) would change every border output if a kernel applied it to the padding.
  auto activated = [](OneNode g, const char* op) {
    Node a;
    a.op_type = op;
    store_input_activation(g.node(), a);
    return g;
  };
  c.push_back({"fp16 C48 14x14 5x5 p2 bias input Swish", [=] {
                 return activated(depthwise(f16, 1, 48, 14, 14, 5, 5, {1, 1}, {2, 2, 2, 2}, {1, 1}, true, false, "Swish"), "Swish");
               }, tile});
  c.push_back({"fp16 C16 3x3 s2 residual input Sigmoid wide", [=] {
                 return activated(wide(depthwise(f16, 2, 16, 9, 11, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true, "")), "Sigmoid");
               }, tile});
  c.push_back({"fp32 C12 3x3 s1 p1 input Sigmoid", [=] {
                 return activated(depthwise(f32, 1, 12, 7, 6, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, false, "Relu"), "Sigmoid");
               }, tile});
  c.push_back({"fp16 C6 3x3 s1 input Sigmoid", [=] {
                 return activated(depthwise(f16, 1, 6, 7, 5, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, ""), "Sigmoid");
               }, scalar});
  c.push_back({"fp16 C6 5x5 s2 input Swish", [=] {
                 return activated(depthwise(f16, 2, 6, 5, 7, 5, 5, {2, 2}, {2, 2, 2, 2}, {1, 1}, true, true, "Relu"), "Swish");
               }, scalar});
  // The largest tiles (wide): OW not a multiple of anything, stride 2, dilation.
  c.push_back({"fp16 C16 3x3 s1 p1 bias wide", [=] { return wide(depthwise(f16, 2, 16, 7, 5, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "")); }, tile});
  c.push_back({"fp16 C24 3x3 s2 asym pads dil2 residual relu wide", [=] {
                 return wide(depthwise(f16, 1, 24, 11, 13, 3, 3, {2, 2}, {1, 0, 2, 1}, {2, 2}, false, true, "Relu"));
               }, tile});
  c.push_back({"fp16 C8 5x3 s(1,2) p2 bias residual clip wide", [=] {
                 return wide(depthwise(f16, 2, 8, 6, 11, 5, 3, {1, 2}, {2, 1, 2, 0}, {1, 1}, true, true, "Clip", clip));
               }, tile});
  c.push_back({"fp16 C16 3x3 s1 dil(1,3) wide", [=] { return wide(depthwise(f16, 1, 16, 5, 9, 3, 3, {1, 1}, {1, 3, 1, 3}, {1, 3}, false, false, "")); }, tile});
  // fp32: 4 channels per 16-byte vector (C 4, 12, 8); C 6 is not a multiple of 4 -> scalar.
  c.push_back({"fp32 C8 3x3 s1 p1 bias wide", [=] { return wide(depthwise(f32, 2, 8, 7, 5, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "")); }, tile});
  c.push_back({"fp32 C12 3x3 s2 asym pads dil2 residual relu wide", [=] {
                 return wide(depthwise(f32, 1, 12, 11, 13, 3, 3, {2, 2}, {1, 0, 2, 1}, {2, 2}, false, true, "Relu"));
               }, tile});
  c.push_back({"fp32 C4 5x3 s(1,2) bias residual clip input_max 0.5 wide", [=] {
                 return clamped(wide(depthwise(f32, 2, 4, 6, 11, 5, 3, {1, 2}, {2, 1, 2, 0}, {1, 1}, true, true, "Clip", clip)), 0.5f);
               }, tile});
  c.push_back({"fp32 C6 3x3 wide -> scalar", [=] { return wide(depthwise(f32, 1, 6, 7, 5, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, false, "Relu")); }, scalar});
  return c;
}

Attributes pool_attrs(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p, int64_t ceil = 0,
                      int64_t include_pad = -1) {
  Attributes a = {{"kernel_shape", Attribute::of_ints(k)}, {"strides", Attribute::of_ints(s)}, {"pads", Attribute::of_ints(p)},
                  {"ceil_mode", Attribute::of_int(ceil)}, {"channels_last", Attribute::of_int(1)}};
  if (include_pad >= 0) a["count_include_pad"] = Attribute::of_int(include_pad);
  return a;
}

struct PoolCase {
  std::string label, op;
  DType dtype;
  Shape x;      // NHWC
  Attributes attrs;
  Shape y;      // NHWC, computed by hand
};

std::vector<PoolCase> pool_case_list() {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  const Attributes global = {{"channels_last", Attribute::of_int(1)}};
  return {
      // (9 + 2 - 3) / 2 + 1 = 5, (7 + 2 - 3) / 2 + 1 = 4
      {"maxpool 3x3 s2 p1 fp32", "MaxPool", f32, {2, 9, 7, 5}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}), {2, 5, 4, 5}},
      {"maxpool 3x3 s2 p1 fp16", "MaxPool", f16, {1, 9, 7, 13}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}), {1, 5, 4, 13}},
      // kernel 3x2, pads (h0 w1, h1 w0), ceil: H ceil((11 + 1 - 3) / 2) + 1 = 6 (floor: 5), last start
      // 10 < 11; W ceil((8 + 1 - 2) / 2) + 1 = 5 (floor: 4), last start 8 < 9.
      {"maxpool 3x2 ceil asym pads fp16", "MaxPool", f16, {1, 11, 8, 3}, pool_attrs({3, 2}, {2, 2}, {0, 1, 1, 0}, 1), {1, 6, 5, 3}},
      {"maxpool 3x2 ceil asym pads fp32", "MaxPool", f32, {2, 11, 8, 1}, pool_attrs({3, 2}, {2, 2}, {0, 1, 1, 0}, 1), {2, 6, 5, 1}},
      // (7 + 2 - 3) / 2 + 1 = 4, (11 + 2 - 3) / 2 + 1 = 6
      {"avgpool exclude pad fp32", "AveragePool", f32, {2, 7, 11, 3}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0), {2, 4, 6, 3}},
      {"avgpool exclude pad fp16", "AveragePool", f16, {1, 7, 11, 9}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0), {1, 4, 6, 9}},
      // pads (h1 w0, h0 w1), ceil: H ceil((9 + 1 - 3) / 2) + 1 = 5, W ceil((9 + 1 - 3) / 2) + 1 = 5;
      // the last W window covers 8, 9 (pad), 10 (beyond the pad: not counted).
      {"avgpool include pad ceil fp16", "AveragePool", f16, {1, 9, 9, 13}, pool_attrs({3, 3}, {2, 2}, {1, 0, 0, 1}, 1, 1), {1, 5, 5, 13}},
      {"avgpool include pad ceil fp32", "AveragePool", f32, {2, 9, 9, 2}, pool_attrs({3, 3}, {2, 2}, {1, 0, 0, 1}, 1, 1), {2, 5, 5, 2}},
      {"avgpool include pad 3x3 s1 p1 fp32", "AveragePool", f32, {1, 5, 3, 7}, pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, 0, 1), {1, 5, 3, 7}},
      {"global avg fp32", "GlobalAveragePool", f32, {2, 5, 7, 3}, global, {2, 1, 1, 3}},
      {"global avg fp16", "GlobalAveragePool", f16, {1, 3, 3, 13}, global, {1, 1, 1, 13}},
      {"global max fp32 1x1", "GlobalMaxPool", f32, {1, 1, 1, 7}, global, {1, 1, 1, 7}},
      {"global max fp16", "GlobalMaxPool", f16, {2, 7, 5, 9}, global, {2, 1, 1, 9}},
      {"global avg fp32 wide", "GlobalAveragePool", f32, {3, 4, 6, 300}, global, {3, 1, 1, 300}},
      // Rows cut into slices (templates/pool_global_nhwc_finish.cu.in combines them): 256 rows in 4
      // slices of 64 with 16-byte vectors, 144 rows in 2 slices with scalar loads (13 channels),
      // and 1028 fp32 channels (257 vectors) in two channel chunks.
      {"global avg fp16 split", "GlobalAveragePool", f16, {1, 16, 16, 8}, global, {1, 1, 1, 8}},
      {"global max fp16 split", "GlobalMaxPool", f16, {2, 12, 12, 13}, global, {2, 1, 1, 13}},
      {"global avg fp32 channel chunks split", "GlobalAveragePool", f32, {1, 8, 16, 1028}, global, {1, 1, 1, 1028}},
  };
}

std::vector<KernelCase> pool_cases() {
  std::vector<KernelCase> c;
  for (const PoolCase& p : pool_case_list()) {
    const bool global = p.op.rfind("Global", 0) == 0;
    c.push_back({p.label, [p] { return one_node(p.op, {{"x", p.x}}, p.attrs, 1, p.dtype); },
                 global ? "pool_global_nhwc" : "pool_window_nhwc"});
  }
  return c;
}

OneNode pack(DType from, DType to, Shape x, int64_t channels) {
  return one_node("PackNhwc", {{"x", x}},
                  {{"to", Attribute::of_int(static_cast<int64_t>(to))}, {"channels", Attribute::of_int(channels)}}, 1, from,
                  "aotc");
}

std::vector<KernelCase> pack_cases() {
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  return {{"pack fp32 [2,3,5,7] -> fp16 C8", [=] { return pack(f32, f16, {2, 3, 5, 7}, 8); }, "pack_nhwc"},
          {"pack fp16 [2,3,5,7] -> fp16 C3", [=] { return pack(f16, f16, {2, 3, 5, 7}, 3); }, "pack_nhwc"},
          {"pack fp32 [2,3,5,7] -> fp16 C4 (8-byte rows)", [=] { return pack(f32, f16, {2, 3, 5, 7}, 4); }, "pack_nhwc"},
          {"pack fp32 [1,1,1,1] -> fp32 C5", [=] { return pack(f32, f32, {1, 1, 1, 1}, 5); }, "pack_nhwc"},
          {"pack fp16 [1,5,3,1] -> fp32 C7", [=] { return pack(f16, f32, {1, 5, 3, 1}, 7); }, "pack_nhwc"}};
}

struct Built {
  std::string label;
  OneNode graph;
  Lowering lowering;
};

// Lowers every case (checking the first step's template) and renders its kernels as c<r>_k<i>
// (a split global pool has two: the slices, then their combination through the scratch).
::testing::AssertionResult build(const std::vector<KernelCase>& cases, std::vector<Built>& built, std::string& source) {
  for (const KernelCase& c : cases) {
    OneNode g = c.build();
    auto l = lower(g);
    if (!l) return ::testing::AssertionFailure() << c.label << ": " << l.status().message();
    if (l->steps.empty() || l->steps[0].kernel.template_name != c.template_name)
      return ::testing::AssertionFailure() << c.label << ": template "
                                           << (l->steps.empty() ? "<none>" : l->steps[0].kernel.template_name)
                                           << ", expected " << c.template_name;
    const size_t r = built.size();
    for (size_t i = 0; i < l->steps.size(); ++i) {
      if (l->steps[i].kind != LoweredStep::Kind::kKernel)
        return ::testing::AssertionFailure() << c.label << ": step " << i << " is not a kernel";
      auto text = testing_util::render_kernel(l->steps[i].kernel, "c" + std::to_string(r) + "_k" + std::to_string(i));
      if (!text) return ::testing::AssertionFailure() << c.label << ": " << text.status().message();
      source += "// case: " + c.label + "\n" + *text + "\n";
    }
    built.push_back({c.label, g, *l});
  }
  return ::testing::AssertionSuccess();
}

// Runs built[r] on the emulation with seeded inputs and poisoned outputs; returns the inputs and
// the kernel's output.
::testing::AssertionResult run_emulated(void* handle, size_t r, Built& b, uint32_t seed, std::vector<Tensor>& inputs,
                                        Tensor& got) {
  std::map<ValueId, Tensor> values;
  inputs.clear();
  for (ValueId id : b.graph.graph.inputs) {
    const Value& v = b.graph.graph.value(id);
    Tensor t = random_tensor(v.dtype, v.shape, seed++);
    inputs.push_back(t);
    values[id] = t;
  }
  const ValueId out = b.graph.node().outputs[0];
  Tensor poisoned(b.graph.graph.value(out).dtype, b.graph.graph.value(out).shape);
  std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
  values[out] = poisoned;
  Status s = testing_util::run_on_cpu(handle, "c" + std::to_string(r) + "_", b.lowering, values);
  if (!s.is_ok()) return ::testing::AssertionFailure() << b.label << ": " << s.message();
  got = values[out];
  return ::testing::AssertionSuccess();
}

// Builds `cases`, compiles them for the CPU emulation (skipping without a host compiler) and runs
// each with inputs seeded from seed_base + 10 * index; `check` compares the output.
void for_each_emulated(const std::vector<KernelCase>& cases, uint32_t seed_base,
                       const std::function<void(Built&, std::vector<Tensor>&, Tensor&)>& check) {
  std::vector<Built> built;
  std::string source;
  ASSERT_TRUE(build(cases, built, source));
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, std::string(kEmulatedCommon) + source);
  for (size_t r = 0; r < built.size(); ++r) {
    SCOPED_TRACE(built[r].label);
    std::vector<Tensor> inputs;
    Tensor got;
    ASSERT_TRUE(run_emulated(*handle, r, built[r], seed_base + 10 * static_cast<uint32_t>(r), inputs, got));
    check(built[r], inputs, got);
  }
}

// ---- 2. depthwise kernels ----

TEST(ConvNhwc, DepthwiseKernelsEmulatedMatchReference) {
  for_each_emulated(conv_cases(), 1000, [&](Built& b, std::vector<Tensor>& inputs, Tensor& got) {
    auto want = evaluate_graph(b.graph.graph, inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    EXPECT_TRUE(tensors_close(got, want.value()[0]));
    // The activation and the epilogue must matter for the data: a kernel that ignored them would fail.
    const Node& n = b.graph.node();
    if (has_activation(n)) {
      int clipped = 0;
      const Tensor& y = want.value()[0];
      for (int64_t i = 0; i < y.numel(); ++i) clipped += y.get(i) == 0.0 || y.get(i) == 0.5 || y.get(i) == -0.25;
      EXPECT_GT(clipped, 0) << "activation never changes a value";
    }
  });
}

// ---- 3. pooling kernels and references ----

// Independent NHWC window pooling over the NHWC input (max skips nothing: inputs are finite).
std::vector<double> hand_pool_nhwc(const PoolCase& p, const Tensor& x) {
  const int64_t n = p.x[0], h = p.x[1], w = p.x[2], c = p.x[3], oh = p.y[1], ow = p.y[2];
  std::vector<double> y(static_cast<size_t>(n * oh * ow * c));
  const bool global = p.op.rfind("Global", 0) == 0, max = p.op.find("Max") != std::string::npos;
  std::vector<int64_t> k = global ? std::vector<int64_t>{h, w} : p.attrs.at("kernel_shape").ints;
  std::vector<int64_t> s = global ? std::vector<int64_t>{1, 1} : p.attrs.at("strides").ints;
  std::vector<int64_t> pads = global ? std::vector<int64_t>{0, 0, 0, 0} : p.attrs.at("pads").ints;
  const bool include_pad = p.attrs.count("count_include_pad") && p.attrs.at("count_include_pad").i == 1;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t ch = 0; ch < c; ++ch) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int64_t inside = 0, padded = 0;
          for (int64_t a = i * s[0] - pads[0]; a < i * s[0] - pads[0] + k[0]; ++a)
            for (int64_t e = j * s[1] - pads[1]; e < j * s[1] - pads[1] + k[1]; ++e) {
              // The padded region is [-pad_begin, in + pad_end); window positions past it (ceil
              // mode) count for nothing.
              if (a < h + pads[2] && e < w + pads[3]) ++padded;
              if (a < 0 || a >= h || e < 0 || e >= w) continue;
              ++inside;
              const double v = x.get(((b * h + a) * w + e) * c + ch);
              sum += v;
              best = std::max(best, v);
            }
          y[static_cast<size_t>(((b * oh + i) * ow + j) * c + ch)] =
              max ? best : sum / static_cast<double>(include_pad ? padded : inside);
        }
  return y;
}

TEST(ConvNhwc, PoolKernelsEmulatedMatchReference) {
  const std::vector<PoolCase> list = pool_case_list();
  std::vector<Built> built;
  std::string source;
  ASSERT_TRUE(build(pool_cases(), built, source));
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, std::string(kEmulatedCommon) + source);
  for (size_t r = 0; r < built.size(); ++r) {
    SCOPED_TRACE(built[r].label);
    const PoolCase& p = list[r];
    std::vector<Tensor> inputs;
    Tensor got;
    ASSERT_TRUE(run_emulated(*handle, r, built[r], 2000 + 10 * static_cast<uint32_t>(r), inputs, got));
    auto want = evaluate_graph(built[r].graph.graph, inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    ASSERT_EQ(want.value()[0].shape(), p.y);
    if (p.label.find("split") != std::string::npos) {  // the slices' path is the one tested
      EXPECT_EQ(built[r].lowering.steps.size(), 2u);
      EXPECT_GT(built[r].lowering.scratch_bytes, 0);
    }
    // The kernel against the channels_last reference.
    EXPECT_TRUE(tensors_close(got, want.value()[0]));
    // The channels_last reference against a hand-written NHWC pool.
    EXPECT_TRUE(tensors_close(want.value()[0], hand_pool_nhwc(p, inputs[0]), p.dtype)) << "reference vs hand-written pool";
    // The channels_last reference against the NCHW reference of the same op on permuted data.
    Attributes nchw_attrs = p.attrs;
    nchw_attrs.erase("channels_last");
    auto g = one_node(p.op, {{"x", {p.x[0], p.x[3], p.x[1], p.x[2]}}}, nchw_attrs, 1, p.dtype);
    auto nchw = run_one(g, {to_first(inputs[0])});
    ASSERT_TRUE(nchw.is_ok()) << nchw.status().message();
    ASSERT_EQ(nchw.value()[0].shape(), (Shape{p.y[0], p.y[3], p.y[1], p.y[2]}));
    EXPECT_TRUE(tensors_close(want.value()[0], to_last(nchw.value()[0]))) << "NHWC vs NCHW reference";
  }
}

// The channels_last global average pool with input_max (opt/clip_into_depthwise: MobileNetV2's last
// ReLU6 split into its conv's ReLU and this clamp): kernel vs reference, reference vs a hand-written
// clamp-then-mean. Random inputs lie in [-1, 1), so a bound of 0.25 clamps about 3/8 of them.
TEST(ConvNhwc, GlobalAveragePoolInputMaxEmulatedMatchesHandWritten) {
  const Attributes attrs = {{"channels_last", Attribute::of_int(1)}, {"input_max", Attribute::of_float(0.25f)}};
  const std::vector<KernelCase> cases = {
      {"global avg input_max fp16", [=] { return one_node("GlobalAveragePool", {{"x", {2, 7, 5, 24}}}, attrs, 1, DType::kFloat16); },
       "pool_global_nhwc"},
      {"global avg input_max fp32", [=] { return one_node("GlobalAveragePool", {{"x", {1, 3, 4, 9}}}, attrs, 1, DType::kFloat32); },
       "pool_global_nhwc"}};
  int clamped = 0;
  for_each_emulated(cases, 4100, [&](Built& b, std::vector<Tensor>& inputs, Tensor& got) {
    auto want = evaluate_graph(b.graph.graph, inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    EXPECT_TRUE(tensors_close(got, want.value()[0]));
    const Tensor& x = inputs[0];
    const Shape& xs = x.shape();
    const int64_t sp = xs[1] * xs[2], c = xs[3];
    std::vector<double> hand(static_cast<size_t>(xs[0] * c), 0.0);
    for (int64_t n = 0; n < xs[0]; ++n)
      for (int64_t s = 0; s < sp; ++s)
        for (int64_t k = 0; k < c; ++k) {
          const double v = x.get((n * sp + s) * c + k);
          clamped += v > 0.25 ? 1 : 0;
          hand[static_cast<size_t>(n * c + k)] += (v > 0.25 ? 0.25 : v) / static_cast<double>(sp);
        }
    EXPECT_TRUE(tensors_close(want.value()[0], hand, x.dtype())) << "reference vs hand-written clamp and mean";
  });
  EXPECT_GT(clamped, 100);  // the bound was exercised
}

// ---- 4. PackNhwc ----

TEST(ConvNhwc, PackNhwcEmulatedMatchesHandWritten) {
  const std::vector<KernelCase> cases = pack_cases();
  for_each_emulated(cases, 3000, [&](Built& b, std::vector<Tensor>& inputs, Tensor& got) {
    const Tensor& x = inputs[0];
    const Shape& s = x.shape();
    const Node& node = b.graph.node();
    const int64_t cp = node.attr_int("channels", 0);
    const DType to = static_cast<DType>(node.attr_int("to", 0));
    // Hand-written: y[n, h, w, c] = (to) x[n, c, h, w] for c < C, exactly 0 (all bits) beyond.
    Tensor expected(to, {s[0], s[2], s[3], cp});
    std::vector<bool> is_pad(static_cast<size_t>(expected.numel()), false);
    int64_t i = 0;
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t h = 0; h < s[2]; ++h)
        for (int64_t w = 0; w < s[3]; ++w)
          for (int64_t c = 0; c < cp; ++c, ++i) {
            is_pad[static_cast<size_t>(i)] = c >= s[1];
            expected.set(i, c < s[1] ? x.get(((n * s[1] + c) * s[2] + h) * s[3] + w) : 0.0);
          }
    auto want = evaluate_graph(b.graph.graph, inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    for (const Tensor* t : {&got, &want.value()[0]}) {
      const char* what = t == &got ? "kernel" : "reference";
      ASSERT_EQ(t->shape(), expected.shape()) << what;
      ASSERT_EQ(t->dtype(), to) << what;
      // Conversion is one rounding of the source value: bit-exact.
      EXPECT_EQ(std::memcmp(t->raw(), expected.raw(), static_cast<size_t>(expected.byte_size())), 0) << what << " differs";
      const int64_t elem = dtype_size(to);
      int bad_pad = 0;
      for (int64_t e = 0; e < expected.numel(); ++e) {
        if (!is_pad[static_cast<size_t>(e)]) continue;
        for (int64_t byte = 0; byte < elem; ++byte) bad_pad += t->raw()[e * elem + byte] != 0;
      }
      EXPECT_EQ(bad_pad, 0) << what << ": padded channels are not all-zero bits";
      for (int64_t e = 0; e < expected.numel() && e < 2000; ++e)
        if (t->get(e) != expected.get(e)) {
          ADD_FAILURE() << what << " element " << e << ": " << t->get(e) << " vs " << expected.get(e);
          break;
        }
    }
  });
}

// Space-to-depth packing (block 2, begin pads, spatial extent past the input), checked against a
// scatter written here: every input element lands at (h + PT) / 2, (w + PL) / 2, channel
// (((h + PT) % 2) * 2 + (w + PL) % 2) * C + c; everything else is zero.
TEST(ConvNhwc, PackSpaceToDepthEmulatedMatchesScatter) {
  auto s2d = [](DType from, DType to, Shape x, int64_t channels, std::vector<int64_t> pads, std::vector<int64_t> spatial) {
    return one_node("PackNhwc", {{"x", x}},
                    {{"to", Attribute::of_int(static_cast<int64_t>(to))}, {"channels", Attribute::of_int(channels)},
                     {"block", Attribute::of_int(2)}, {"pads", Attribute::of_ints(pads)},
                     {"spatial", Attribute::of_ints(spatial)}},
                    1, from, "aotc");
  };
  const DType f16 = DType::kFloat16, f32 = DType::kFloat32;
  const std::vector<KernelCase> cases = {
      {"s2d fp32 [2,3,9,8] pads 3,3 -> [2,8,7,16] fp16", [=] { return s2d(f32, f16, {2, 3, 9, 8}, 16, {3, 3}, {8, 7}); }, "pack_nhwc"},
      {"s2d fp16 [1,2,5,7] pads 0,1 -> [1,2,3,8] fp16 (cropped)", [=] { return s2d(f16, f16, {1, 2, 5, 7}, 8, {0, 1}, {2, 3}); }, "pack_nhwc"},
      {"s2d fp32 [1,1,4,4] pads 1,0 -> [1,3,2,5] fp32", [=] { return s2d(f32, f32, {1, 1, 4, 4}, 5, {1, 0}, {3, 2}); }, "pack_nhwc"}};
  for_each_emulated(cases, 5000, [&](Built& b, std::vector<Tensor>& inputs, Tensor& got) {
    const Tensor& x = inputs[0];
    const Shape& s = x.shape();
    const Node& node = b.graph.node();
    const std::vector<int64_t> pads = node.attr_ints("pads"), sp = node.attr_ints("spatial");
    const int64_t cp = node.attr_int("channels", 0);
    Tensor expected(static_cast<DType>(node.attr_int("to", 0)), {s[0], sp[0], sp[1], cp});
    for (int64_t e = 0; e < expected.numel(); ++e) expected.set(e, 0.0);
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t c = 0; c < s[1]; ++c)
        for (int64_t h = 0; h < s[2]; ++h)
          for (int64_t w = 0; w < s[3]; ++w) {
            const int64_t hp = h + pads[0], wp = w + pads[1];
            if (hp / 2 >= sp[0] || wp / 2 >= sp[1]) continue;
            expected.set(((n * sp[0] + hp / 2) * sp[1] + wp / 2) * cp + ((hp % 2) * 2 + wp % 2) * s[1] + c,
                         x.get(((n * s[1] + c) * s[2] + h) * s[3] + w));
          }
    auto want = evaluate_graph(b.graph.graph, inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    for (const Tensor* t : {&got, &want.value()[0]}) {
      const char* what = t == &got ? "kernel" : "reference";
      ASSERT_EQ(t->shape(), expected.shape()) << what;
      EXPECT_EQ(std::memcmp(t->raw(), expected.raw(), static_cast<size_t>(expected.byte_size())), 0) << what << " differs";
    }
  });
}

// The depthwise tile rule on EfficientNet-B0's batch-1 5x5 (672 channels, 14 x 14, a 132-SM
// target): cb-first shrinks the channels to one vector and the rows to 4 (16-thread blocks, 14
// outputs a thread); tow-first (the default) keeps 48 channels and cuts the width to 4 columns
// and the rows to 2 (48-thread blocks, 4 outputs a thread, 392 blocks).
TEST(ConvNhwc, DepthwiseTileRules) {
  auto holes = [](bool tow_first) {
    OneNode g = depthwise(DType::kFloat16, 1, 672, 14, 14, 5, 5, {1, 1}, {2, 2, 2, 2}, {1, 1}, true, false, "");
    g.graph.target.depthwise_tile_tow_first = tow_first;
    auto l = lower(g);
    EXPECT_TRUE(l.is_ok()) << l.status().message();
    std::map<std::string, std::string> h;
    if (l.is_ok())
      for (const auto& kv : l->steps[0].kernel.holes) h[kv.first] = kv.second;
    return h;
  };
  std::map<std::string, std::string> d = holes(false), t = holes(true);
  EXPECT_TRUE(Target{}.depthwise_tile_tow_first);  // the default
  EXPECT_EQ(d["CB"], "8LL");
  EXPECT_EQ(d["TOH"], "4LL");
  EXPECT_EQ(d["TOW"], "14LL");
  EXPECT_EQ(d["THREADS"], "16LL");
  EXPECT_EQ(t["CB"], "48LL");
  EXPECT_EQ(t["TOH"], "2LL");
  EXPECT_EQ(t["TOW"], "4LL");
  EXPECT_EQ(t["TILES_W"], "4LL");
  EXPECT_EQ(t["THREADS"], "48LL");
}

// The NHWC global pool's slice plan on an empty spatial extent (no rows): one slice, no division
// by zero in the plan (the kernel then writes the empty mean, NaN, as the reference does).
TEST(ConvNhwc, GlobalPoolOfNoRowsIsOneSlice) {
  OneNode g = one_node("GlobalAveragePool", {{"x", {2, 0, 5, 16}}}, {{"channels_last", Attribute::of_int(1)}}, 1,
                       DType::kFloat16);
  auto l = lower(g);
  ASSERT_TRUE(l.is_ok()) << l.status().message();
  ASSERT_EQ(l->steps.size(), 1u);
  EXPECT_EQ(l->scratch_bytes, 0);
  EXPECT_EQ(l->steps[0].kernel.grid.x, 1);
}

// ---- 5. nvcc ----

TEST(ConvNhwc, KernelsCompileWithNvcc) {
  std::vector<Built> built;
  std::string source;
  ASSERT_TRUE(build(conv_cases(), built, source));
  ASSERT_TRUE(build(pool_cases(), built, source));
  ASSERT_TRUE(build(pack_cases(), built, source));
  std::set<std::string> used;
  for (const Built& b : built) used.insert(b.lowering.steps[0].kernel.template_name);
  for (const char* t : {"conv_depthwise_nhwc", "conv_depthwise_nhwc_tile", "pool_window_nhwc", "pool_global_nhwc", "pack_nhwc"})
    EXPECT_TRUE(used.count(t)) << "template not exercised: " << t;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc: NHWC kernels rendered, not compiled";
  char dir[] = "/tmp/aotc_nhwc_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  bool ok = true;
  for (const char* arch : {"sm_90", "sm_87"}) {
    Status s = testing_util::nvcc_compile(source, arch, false, std::string(dir) + "/all_" + arch + ".o");
    EXPECT_TRUE(s.is_ok()) << arch << ": " << s.message();
    ok = ok && s.is_ok();
  }
  if (ok) std::filesystem::remove_all(dir);  // kept on failure, for a look at the source
}

}  // namespace
}  // namespace aotc
