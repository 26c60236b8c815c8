// GPU tests of the int8 layers (issue 8): aotc.QLinearConv on the int8 tensor-core kernel
// (templates/cutlass_conv2d_fprop_i8.cu.in, moved there by opt/layout_nhwc) and on the direct
// kernel, against the CPU reference of the same graph. The epilogue does the reference's
// arithmetic (a double product for requantization, a float one for dequantization), so int8
// outputs must be identical and float outputs within the fp32 single-op tolerance.
#include "tests/gpu/gpu_harness.h"

namespace aotc::gpu_test {
namespace {

Attribute i64s(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

ValueId scalar(GraphBuilder& b, const std::string& name, double v, DType t = DType::kFloat32) {
  return b.weight(name, {}, v, v, t);
}

// x int8 [N, C, H, W] -> requantizing conv (bias, ReLU clamp, zero point 0 so the next conv can
// take the tensor-core kernel too) -> dequantizing 1x1 conv -> float output; the int8
// intermediate is a graph output as well.
Graph qconv_chain(Shape x, int64_t k1, int64_t k2, Attributes conv_attrs, bool y_zero_nonzero) {
  GraphBuilder b(3);
  ValueId xi = b.input("x", x, DType::kInt8);
  ValueId xs = scalar(b, "xs", 0.05);
  ValueId w1 = b.weight("w1", {k1, x[1], 3, 3}, -127, 128, DType::kInt8);
  ValueId ws1 = b.weight("ws1", {k1}, 0.001, 0.01);
  ValueId ys = scalar(b, "ys", 0.25);
  ValueId yz = scalar(b, "yz", y_zero_nonzero ? -5 : 0, DType::kInt8);
  ValueId b1 = b.weight("b1", {k1}, -2000, 2000, DType::kInt32);
  Attributes a1 = conv_attrs;
  a1["qmin"] = Attribute::of_int(y_zero_nonzero ? -5 : 0);  // a fused ReLU: Q(0) = the zero point
  ValueId y = b.node("QLinearConv", {xi, xs, kNoValue, w1, ws1, kNoValue, ys, yz, b1}, a1, "aotc");
  ValueId w2 = b.weight("w2", {k2, k1, 1, 1}, -127, 128, DType::kInt8);
  ValueId ws2 = b.weight("ws2", {k2}, 0.001, 0.01);
  ValueId f = b.node("QLinearConv", {y, ys, yz, w2, ws2}, {}, "aotc");
  b.output(y);
  b.output(f);
  return b.graph();
}

CaseOptions int8_inputs() {
  CaseOptions o;
  o.input_lo = -128;
  o.input_hi = 128;
  return o;
}

TEST(GpuQuantizedConv, TensorCoreKernelThreeByThreeStride2AndPointwise) {
  AOTC_REQUIRE_GPU();
  run_case(qconv_chain({2, 32, 13, 11}, 48, 32, {{"pads", i64s({1, 1, 1, 1})}, {"strides", i64s({2, 2})}}, false),
           "qconv_tc", int8_inputs());
}

TEST(GpuQuantizedConv, TensorCoreKernelBatchOneManyChannels) {
  AOTC_REQUIRE_GPU();
  run_case(qconv_chain({1, 64, 14, 14}, 128, 64, {{"pads", i64s({1, 1, 1, 1})}}, false), "qconv_tc_c64", int8_inputs());
}

// y at zero point -5: the 1x1 convolution that reads it takes the tensor-core kernel with the zero
// point folded into its bias words (no padding is read); the 3x3 before it reads x at zero point 0.
TEST(GpuQuantizedConv, NonzeroZeroPointOfAPointwiseLayerFoldsIntoItsBias) {
  AOTC_REQUIRE_GPU();
  run_case(qconv_chain({1, 16, 9, 9}, 16, 16, {{"pads", i64s({1, 1, 1, 1})}}, true), "qconv_direct", int8_inputs());
}

}  // namespace
}  // namespace aotc::gpu_test

namespace aotc::gpu_test {
namespace {

// aotc.QLinearMatMul by a constant B (K, N multiples of 16) on the int8 conv kernel as a 1x1
// convolution: requantizing with a bias and a clamp, then dequantizing to float.
TEST(GpuQuantizedMatMul, TensorCoreKernelRequantizeThenDequantize) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b(5);
  ValueId a = b.input("a", {3, 17, 64}, DType::kInt8);
  ValueId as = scalar(b, "as", 0.04);
  ValueId w1 = b.weight("w1", {64, 96}, -127, 128, DType::kInt8);
  ValueId ws1 = b.weight("ws1", {96}, 0.001, 0.01);
  ValueId ys = scalar(b, "ys", 0.3);
  ValueId yz = scalar(b, "yz", 0, DType::kInt8);
  ValueId b1 = b.weight("b1", {96}, -3000, 3000, DType::kInt32);
  ValueId y = b.node("QLinearMatMul", {a, as, kNoValue, w1, ws1, kNoValue, ys, yz, b1}, {{"qmin", Attribute::of_int(0)}}, "aotc");
  ValueId w2 = b.weight("w2", {96, 32}, -127, 128, DType::kInt8);
  ValueId ws2 = b.weight("ws2", {32}, 0.001, 0.01);
  ValueId f = b.node("QLinearMatMul", {y, ys, yz, w2, ws2}, {}, "aotc");
  b.output(y);
  b.output(f);
  run_case(b.graph(), "qmatmul_tc", int8_inputs());
}

}  // namespace
}  // namespace aotc::gpu_test

namespace aotc::gpu_test {
namespace {

// ONNX Runtime's asymmetric activations: int8 with zero point -128 after a ReLU. The pipeline's
// reencode_uint8 stores them as uint8 with zero point 0 (the same bytes, top bit flipped), so both
// convolutions run on the u8 x s8 tensor-core kernel; the reference is the graph as written.
TEST(GpuQuantizedConv, ZeroPointMinus128RunsAsUint8OnTheTensorCoreKernel) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b(11);
  ValueId x = b.input("x", {2, 32, 12, 10});
  ValueId xs = scalar(b, "xs", 0.02);
  ValueId zp = scalar(b, "zp", -128, DType::kInt8);
  ValueId xq = b.node("QuantizeLinear", {x, xs, zp});
  ValueId w1 = b.weight("w1", {48, 32, 3, 3}, -127, 128, DType::kInt8);
  ValueId ws1 = b.weight("ws1", {48}, 0.001, 0.01);
  ValueId ys = scalar(b, "ys", 0.05);
  ValueId b1 = b.weight("b1", {48}, -2000, 2000, DType::kInt32);
  Attributes a1{{"pads", i64s({1, 1, 1, 1})}, {"strides", i64s({2, 1})}, {"qmin", Attribute::of_int(-128)}};
  ValueId y = b.node("QLinearConv", {xq, xs, zp, w1, ws1, kNoValue, ys, zp, b1}, a1, "aotc");
  ValueId w2 = b.weight("w2", {32, 48, 1, 1}, -127, 128, DType::kInt8);
  ValueId ws2 = b.weight("ws2", {32}, 0.001, 0.01);
  b.output(b.node("QLinearConv", {y, ys, zp, w2, ws2}, {}, "aotc"));
  run_case(b.graph(), "qconv_u8");
}

}  // namespace
}  // namespace aotc::gpu_test

namespace aotc::gpu_test {
namespace {

// MobileNetV2's inverted residual as ONNX Runtime quantizes it: the expansion reads a linear
// bottleneck at zero point 5 (pointwise, so the zero point folds into the tensor-core kernel's bias
// word), the ReLU6 outputs sit at zero point -128 (uint8 after reencode_uint8), the depthwise layer
// runs the direct kernel in NHWC between the two tensor-core convolutions.
Graph inverted_residual() {
  GraphBuilder b(13);
  ValueId x = b.input("x", {2, 16, 10, 10});
  ValueId s = scalar(b, "s", 0.04);
  ValueId z5 = scalar(b, "z5", 5, DType::kInt8);
  ValueId zm = scalar(b, "zm", -128, DType::kInt8);
  ValueId xq = b.node("QuantizeLinear", {x, s, z5});
  ValueId we = b.weight("we", {64, 16, 1, 1}, -127, 128, DType::kInt8);
  ValueId wse = b.weight("wse", {64}, 0.001, 0.01);
  ValueId be = b.weight("be", {64}, -3000, 3000, DType::kInt32);
  ValueId e = b.node("QLinearConv", {xq, s, z5, we, wse, kNoValue, s, zm, be}, {{"qmin", Attribute::of_int(-128)}}, "aotc");
  ValueId wd = b.weight("wd", {64, 1, 3, 3}, -127, 128, DType::kInt8);
  ValueId wsd = b.weight("wsd", {64}, 0.001, 0.01);
  ValueId d = b.node("QLinearConv", {e, s, zm, wd, wsd, kNoValue, s, zm},
                     {{"group", Attribute::of_int(64)}, {"pads", i64s({1, 1, 1, 1})}, {"strides", i64s({2, 2})},
                      {"qmin", Attribute::of_int(-128)}}, "aotc");
  ValueId wp = b.weight("wp", {16, 64, 1, 1}, -127, 128, DType::kInt8);
  ValueId wsp = b.weight("wsp", {16}, 0.001, 0.01);
  b.output(b.node("QLinearConv", {d, s, zm, wp, wsp}, {}, "aotc"));
  return b.graph();
}

TEST(GpuQuantizedConv, InvertedResidualPointwiseZeroPointAndNhwcDepthwise) {
  AOTC_REQUIRE_GPU();
  run_case(inverted_residual(), "qconv_inverted_residual");
}

}  // namespace
}  // namespace aotc::gpu_test

namespace aotc::gpu_test {
namespace {

// ONNX Runtime's QDQ RGB stem: a 7x7 stride-2 convolution with pads 3 over 3 input channels
// quantized at zero point 7. opt/layout_nhwc writes the input padded with the zero point (and 13
// more channels of it), so the layer runs on the int8 tensor-core kernel with the zero point
// folded into its bias words; the requantized output (ReLU clamp at zero point -128) feeds a
// dequantizing 1x1 convolution. The Pad in the pipeline's graph proves the path.
TEST(GpuQuantizedConv, PaddedStemWithAZeroPointRunsOnTheTensorCoreKernel) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b(17);
  ValueId x = b.input("x", {2, 3, 23, 19});
  ValueId xs = scalar(b, "xs", 0.03);
  ValueId z7 = scalar(b, "z7", 7, DType::kInt8);
  ValueId zm = scalar(b, "zm", -128, DType::kInt8);
  ValueId xq = b.node("QuantizeLinear", {x, xs, z7});
  ValueId w1 = b.weight("w1", {32, 3, 7, 7}, -127, 128, DType::kInt8);
  ValueId ws1 = b.weight("ws1", {32}, 0.001, 0.01);
  ValueId ys = scalar(b, "ys", 0.05);
  ValueId b1 = b.weight("b1", {32}, -2000, 2000, DType::kInt32);
  Attributes a1{{"pads", i64s({3, 3, 3, 3})}, {"strides", i64s({2, 2})}, {"qmin", Attribute::of_int(-128)}};
  ValueId y = b.node("QLinearConv", {xq, xs, z7, w1, ws1, kNoValue, ys, zm, b1}, a1, "aotc");
  ValueId w2 = b.weight("w2", {16, 32, 1, 1}, -127, 128, DType::kInt8);
  ValueId ws2 = b.weight("ws2", {16}, 0.001, 0.01);
  b.output(y);
  b.output(b.node("QLinearConv", {y, ys, zm, w2, ws2}, {}, "aotc"));
  CaseOptions o;
  o.expect_ops_after_pipeline = {"Pad"};
  run_case(b.graph(), "qconv_padded_stem", o);
}

}  // namespace
}  // namespace aotc::gpu_test

namespace aotc::gpu_test {
namespace {

// The sm_90a int8 wgmma convolution (templates/cutlass_conv2d_fprop_sm90_i8.cu.in): a float input
// quantized on the GPU (so the convolutions' operands live in the arena, as the kernel's
// compile-time TMA descriptors need) -> requantizing 3x3 (bias, ReLU clamp) -> requantizing 1x1
// -> DequantizeLinear to the float output. Sizes give each convolution at least half a wave of
// the configuration the rule picks on 132 SMs; every requantized value reaches the output through
// an exact dequantization, so one rounding step off shows as an error of a whole output scale.
// Zero point -128 makes the activations uint8 (opt/reencode_uint8: the u8 x s8 instantiation).
Graph qconv_wgmma_chain(Shape x, int64_t k1, int64_t stride, int64_t k2, int64_t zero_point) {
  GraphBuilder b(23);
  ValueId xf = b.input("x", x);
  ValueId xs = scalar(b, "xs", 0.02);
  ValueId zp = scalar(b, "zp", static_cast<double>(zero_point), DType::kInt8);
  ValueId xq = b.node("QuantizeLinear", {xf, xs, zp});
  ValueId w1 = b.weight("w1", {k1, x[1], 3, 3}, -127, 128, DType::kInt8);
  ValueId ws1 = b.weight("ws1", {k1}, 0.001, 0.01);
  ValueId ys = scalar(b, "ys", 0.05);
  ValueId b1 = b.weight("b1", {k1}, -2000, 2000, DType::kInt32);
  Attributes a1{{"pads", i64s({1, 1, 1, 1})}, {"strides", i64s({stride, stride})}, {"qmin", Attribute::of_int(zero_point)}};
  ValueId y = b.node("QLinearConv", {xq, xs, zp, w1, ws1, kNoValue, ys, zp, b1}, a1, "aotc");
  ValueId w2 = b.weight("w2", {k2, k1, 1, 1}, -127, 128, DType::kInt8);
  ValueId ws2 = b.weight("ws2", {k2}, 0.001, 0.01);
  ValueId zs = scalar(b, "zs", 0.1);
  ValueId y2 = b.node("QLinearConv", {y, ys, zp, w2, ws2, kNoValue, zs, zp}, {}, "aotc");
  b.output(b.node("DequantizeLinear", {y2, zs, zp}));
  Graph g = b.graph();
  g.target.conv_wgmma_int8 = true;  // --conv-wgmma-int8 on (the default)
  return g;
}

CaseOptions wgmma_int8() {
  CaseOptions o;
  o.input_lo = -2.5;  // past the int8 range of xs: saturation in the quantization
  o.input_hi = 2.5;
  o.expect_templates = {"cutlass_conv2d_fprop_sm90_i8"};
  return o;
}

// 8 x 34 x 34 = 9248 rows: 128x128 tiles (73 of them) for 128 channels, 128x64 two a SM for 64.
TEST(GpuQuantizedConv, WgmmaInt8Stride1Int8Activations) {
  AOTC_REQUIRE_GPU();
  run_case(qconv_wgmma_chain({8, 32, 34, 34}, 128, 1, 64, 0), "qconv_wgmma_s8", wgmma_int8());
}

// Stride 2, 16 x 17 x 17 = 4624 rows: 64x128 tiles; uint8 activations.
TEST(GpuQuantizedConv, WgmmaInt8Stride2Uint8Activations) {
  AOTC_REQUIRE_GPU();
  run_case(qconv_wgmma_chain({16, 48, 34, 34}, 128, 2, 128, -128), "qconv_wgmma_u8", wgmma_int8());
}

// --int8-conv-cluster 2: the convolution mode in clusters of two CTAs along M sharing each filter
// tile by TMA multicast (8 x 32 x 32 = 8192 rows: an even count of M tiles for both layers).
TEST(GpuQuantizedConv, WgmmaInt8ConvClusterOfTwo) {
  AOTC_REQUIRE_GPU();
  Graph g = qconv_wgmma_chain({8, 32, 32, 32}, 128, 1, 64, 0);
  g.target.int8_conv_cluster_m = 2;
  CaseOptions o = wgmma_int8();
  o.expect_holes = {{"CLUSTER_M", "2"}};
  run_case(g, "qconv_wgmma_cluster2", o);
}

}  // namespace
}  // namespace aotc::gpu_test

namespace aotc::gpu_test {
namespace {

// The residual aotc.QLinearAdd in the int8 wgmma kernel's epilogue (opt/fuse_residual_qadd): a
// ResNet block's shape in int8, x -> 3x3 (ReLU clamp: h) -> 1x1 (t) -> QLinearAdd(t, h) with a
// ReLU -> DequantizeLinear. The reference is the unfused graph; no qlinear_add kernel may run.
// `swap`: QLinearAdd(h, t). Zero point -128: uint8 activations and residual.
// `integer_scales`: scales whose fused Add has a proven integer form (ADD_FIXED; the default ones
// make exact halves, so the float form runs).
Graph residual_block(int64_t zero_point, bool swap, bool wgmma = true, bool integer_scales = false, int64_t c = 64) {
  GraphBuilder b(29);
  ValueId xf = b.input("x", {8, 32, 34, 34});
  ValueId s = scalar(b, "s", integer_scales ? 0.0371 : 0.03);
  ValueId st = scalar(b, "st", integer_scales ? 0.0529 : 0.05);
  ValueId sa = scalar(b, "sa", integer_scales ? 0.0611 : 0.04);
  ValueId zp = scalar(b, "zp", static_cast<double>(zero_point), DType::kInt8);
  ValueId xq = b.node("QuantizeLinear", {xf, s, zp});
  ValueId w1 = b.weight("w1", {c, 32, 3, 3}, -127, 128, DType::kInt8);
  ValueId ws1 = b.weight("ws1", {c}, 0.001, 0.01);
  ValueId b1 = b.weight("b1", {c}, -300, 300, DType::kInt32);
  ValueId h = b.node("QLinearConv", {xq, s, zp, w1, ws1, kNoValue, s, zp, b1},
                     {{"pads", i64s({1, 1, 1, 1})}, {"qmin", Attribute::of_int(zero_point)}}, "aotc");
  ValueId w2 = b.weight("w2", {c, c, 1, 1}, -127, 128, DType::kInt8);
  ValueId ws2 = b.weight("ws2", {c}, 0.001, 0.01);
  ValueId b2 = b.weight("b2", {c}, -300, 300, DType::kInt32);
  ValueId t = b.node("QLinearConv", {h, s, zp, w2, ws2, kNoValue, st, zp, b2}, {}, "aotc");
  std::vector<ValueId> add_in = swap ? std::vector<ValueId>{h, s, zp, t, st, zp, sa, zp}
                                     : std::vector<ValueId>{t, st, zp, h, s, zp, sa, zp};
  ValueId a = b.node("QLinearAdd", add_in, {{"qmin", Attribute::of_int(zero_point + 2)}}, "aotc");
  b.output(b.node("DequantizeLinear", {a, sa, zp}));
  Graph g = b.graph();
  g.target.conv_wgmma_int8 = wgmma;     // --conv-wgmma-int8 on|off
  g.target.int8_fuse_residual = Int8FuseResidual::kOn;  // --int8-fuse-residual on (default auto: GEMM mode only)
  return g;
}

CaseOptions fused_residual(bool wgmma = true) {
  CaseOptions o = wgmma_int8();
  if (!wgmma) o.expect_templates = {"cutlass_conv2d_fprop_i8"};
  o.input_lo = -5;
  o.input_hi = 5;
  o.absent_ops_after_pipeline = {"QLinearAdd"};
  o.absent_templates = {"qlinear_add"};
  return o;
}

TEST(GpuQuantizedConv, WgmmaInt8FusedResidualAddInt8) {
  AOTC_REQUIRE_GPU();
  run_case(residual_block(0, false), "qconv_wgmma_residual_s8", fused_residual());
}

TEST(GpuQuantizedConv, WgmmaInt8FusedResidualAddUint8Swapped) {
  AOTC_REQUIRE_GPU();
  run_case(residual_block(-128, true), "qconv_wgmma_residual_u8", fused_residual());
}

// --conv-gemm-int8 on (the default): the pointwise layers of these chains and blocks (1x1 128 ->
// 64, 128 -> 128, the residual block's 64 -> 64 with the fused Add) on the template's GEMM mode -
// CUTLASS 3.x's persistent ping-pong GEMM, the same requantizing epilogue tree - bit for bit the
// reference. Planned for 16 SMs (37-73 tiles: the mode's one-wave floor holds, and the persistent
// grid of 16 CTAs loops over several tiles each).
Graph as_gemm(Graph g, ConvGemmInt8 schedule = ConvGemmInt8::kPingpong) {
  g.target.conv_gemm_int8 = schedule;
  return g;
}

CaseOptions gemm_mode(CaseOptions o, bool pingpong = true) {
  o.expect_holes = {{"AS_GEMM", "1"}, {"PINGPONG", pingpong ? "true" : "false"}};
  o.sm_count = 16;
  return o;
}

TEST(GpuQuantizedConv, PointwiseAsPersistentGemm) {
  AOTC_REQUIRE_GPU();
  run_case(as_gemm(qconv_wgmma_chain({8, 32, 34, 34}, 128, 1, 64, 0)), "qconv_gemm_s8", gemm_mode(wgmma_int8()));
  run_case(as_gemm(qconv_wgmma_chain({16, 48, 34, 34}, 128, 2, 128, -128)), "qconv_gemm_u8", gemm_mode(wgmma_int8()));
}

// Under ping-pong a layer with the fused Add takes the cooperative schedule (PINGPONG false: the
// block's only GEMM-mode layer is t, the one with the Add).
TEST(GpuQuantizedConv, PointwiseAsPersistentGemmFusedResidualAdd) {
  AOTC_REQUIRE_GPU();
  CaseOptions o = gemm_mode(fused_residual());
  o.expect_holes = {{"AS_GEMM", "1"}, {"HAS_RESIDUAL", "true"}, {"PINGPONG", "false"}};
  run_case(as_gemm(residual_block(0, false)), "qconv_gemm_residual_s8", o);
  run_case(as_gemm(residual_block(-128, true)), "qconv_gemm_residual_u8", o);
}

// --conv-gemm-int8 coop: the same cases on CUTLASS's cooperative schedule (both consumer warp
// groups on one tile's halves); PINGPONG = false.
constexpr ConvGemmInt8 kCoop = ConvGemmInt8::kCooperative;

TEST(GpuQuantizedConv, PointwiseAsCooperativeGemm) {
  AOTC_REQUIRE_GPU();
  run_case(as_gemm(qconv_wgmma_chain({8, 32, 34, 34}, 128, 1, 64, 0), kCoop), "qconv_coop_s8", gemm_mode(wgmma_int8(), false));
  run_case(as_gemm(qconv_wgmma_chain({16, 48, 34, 34}, 128, 2, 128, -128), kCoop), "qconv_coop_u8",
           gemm_mode(wgmma_int8(), false));
}

TEST(GpuQuantizedConv, PointwiseAsCooperativeGemmFusedResidualAdd) {
  AOTC_REQUIRE_GPU();
  run_case(as_gemm(residual_block(0, false), kCoop), "qconv_coop_residual_s8", gemm_mode(fused_residual(), false));
  run_case(as_gemm(residual_block(-128, true), kCoop), "qconv_coop_residual_u8", gemm_mode(fused_residual(), false));
}

// The cooperative GEMM's 128 x 256 tiles (ir/ops/conv_configs.h int8_gemm_tile_n), chosen by the
// wave rule on 16 SMs: the chain's 1x1 128 -> 256 over 8192 rows (128 tiles of 128: 8 waves; 64
// of 256: 4), the block's 256 -> 256 with the fused Add over 9248 rows (146 / 73 tiles: 10 / 5).
TEST(GpuQuantizedConv, CooperativeGemmTilesOf256Channels) {
  AOTC_REQUIRE_GPU();
  CaseOptions o = gemm_mode(wgmma_int8(), false);
  o.expect_holes = {{"AS_GEMM", "1"}, {"PINGPONG", "false"}, {"TILE_N", "256LL"}};
  run_case(as_gemm(qconv_wgmma_chain({8, 32, 32, 32}, 128, 1, 256, 0), kCoop), "qconv_coop256_s8", o);
  CaseOptions r = gemm_mode(fused_residual(), false);
  r.expect_holes = {{"AS_GEMM", "1"}, {"HAS_RESIDUAL", "true"}, {"TILE_N", "256LL"}};
  run_case(as_gemm(residual_block(-128, true, true, false, 256)), "qconv_coop256_residual_u8", r);
}

// The stem + pool's absorbed QuantizeLinear (opt/fuse_stem_quantize) on sm_90a's wgmma stem, as
// ResNet's int8 libraries run it: integer inputs and filter, so every sum is exact in the
// kernel's fp32 and in fp16 and the quantized bytes must equal the reference's; scale 2 makes
// exact halves (rint's ties to even) and saturates both ways; no Relu, so negative values too.
// Scale 2 quantizes by the proven reciprocal product, 0.3 by the division (fp16_quantize_reciprocal
// refuses it).
void run_stem_pool_quantize(double scale, const std::string& label) {
  GraphBuilder b(31);
  ValueId x = b.input("x", {4, 3, 64, 60});
  ValueId xh = b.node("Cast", {x}, {{"to", i64(static_cast<int64_t>(DType::kFloat16))}});
  ValueId w = b.weight("w", {64, 3, 7, 7}, -2.4, 2.4, DType::kFloat16);
  ValueId bias = b.weight("bias", {64}, -8, 8, DType::kFloat16);
  ValueId c = b.node("Conv", {xh, w, bias}, {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}});
  ValueId p = b.node("MaxPool", {c}, {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}});
  b.output(b.node("QuantizeLinear", {p, scalar(b, "s", scale), scalar(b, "z", -5, DType::kInt8)}));
  Graph g = b.graph();
  for (ValueId id : {w, bias}) {  // integer filter and bias: |sum| <= 147 * 2 * 3 + 8, exact in fp16
    Tensor t = *g.value(id).constant;
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::nearbyint(t.get(i)));
    g.value(id).constant = std::make_shared<const Tensor>(std::move(t));
  }
  CaseOptions o;
  o.input_lo = -3.4;
  o.input_hi = 3.4;
  o.integer_inputs = true;
  o.expect_templates = {"conv_stem_pool_wgmma_nhwc"};
  o.absent_templates = {"quantize_linear"};
  o.expect_holes = {{"QUANT", "true"}};
  run_case(g, label, o);
}

TEST(GpuQuantizedConv, StemPoolWritesTheQuantizedTensor) {
  AOTC_REQUIRE_GPU();
  run_stem_pool_quantize(2.0, "stem_pool_quantize_s8");
  run_stem_pool_quantize(0.3, "stem_pool_quantize_div_s8");
}

// The same blocks on the Sm80 int8 kernel (Jetson's): r read as the epilogue's source.
TEST(GpuQuantizedConv, Sm80Int8FusedResidualAddInt8) {
  AOTC_REQUIRE_GPU();
  run_case(residual_block(0, false, false), "qconv_sm80_residual_s8", fused_residual(false));
}

TEST(GpuQuantizedConv, Sm80Int8FusedResidualAddUint8Swapped) {
  AOTC_REQUIRE_GPU();
  run_case(residual_block(-128, true, false), "qconv_sm80_residual_u8", fused_residual(false));
}

// The default route of these layers (every multiplier below 0.5) is the conversion-free double one
// (dmagic), which the other GpuQuantizedConv tests run; --int8-requant double keeps the double
// path with its conversions, in both kernels' epilogues, plain and with the fused residual Add,
// bit for bit as well (layers with a multiplier of 0.5 or more take it by default).
Graph with_double(Graph g) {
  g.target.int8_requant = Int8Requant::kDouble;
  return g;
}

TEST(GpuQuantizedConv, DoublePathSm80Kernel) {
  AOTC_REQUIRE_GPU();
  run_case(with_double(qconv_chain({2, 32, 13, 11}, 48, 32, {{"pads", i64s({1, 1, 1, 1})}, {"strides", i64s({2, 2})}}, false)),
           "qconv_tc_double", int8_inputs());
  run_case(with_double(residual_block(-128, true, false)), "qconv_sm80_residual_u8_double", fused_residual(false));
}

// Jetson's route: the library built as compute_87 PTX (the Sm80 kernel, the direct kernel of a
// depthwise layer), JIT-compiled here, where __CUDA_ARCH__ is 870 - the exact fp32 requantization
// of an FP64-poor GPU, with the double path for its rare elements - bit for bit the reference.
TEST(GpuQuantizedConv, JetsonFp32RouteAsPtx) {
  AOTC_REQUIRE_GPU();
  CaseOptions o = int8_inputs();
  o.archs = {"compute_87"};
  o.expect_templates = {"cutlass_conv2d_fprop_i8"};
  run_case(qconv_chain({2, 32, 13, 11}, 48, 32, {{"pads", i64s({1, 1, 1, 1})}, {"strides", i64s({2, 2})}}, false),
           "qconv_tc_sm87_ptx", o);
  CaseOptions r = fused_residual(false);
  r.archs = {"compute_87"};
  run_case(residual_block(-128, true, false), "qconv_sm80_residual_u8_sm87_ptx", r);
  CaseOptions d;
  d.archs = {"compute_87"};
  d.expect_templates = {"integer_conv", "cutlass_conv2d_fprop_i8"};
  run_case(inverted_residual(), "qconv_inverted_residual_sm87_ptx", d);
}

TEST(GpuQuantizedConv, DoublePathWgmmaKernel) {
  AOTC_REQUIRE_GPU();
  run_case(with_double(qconv_wgmma_chain({8, 32, 34, 34}, 128, 1, 64, 0)), "qconv_wgmma_s8_double", wgmma_int8());
  run_case(with_double(residual_block(0, false)), "qconv_wgmma_residual_s8_double", fused_residual());
}

// The fused Adds in integers (ADD_FIXED: int8_requant.cuh aotc_qlinear_add_fixed, proven for every
// pair of 8-bit inputs by the lowering) on the three kernels that fuse them: the wgmma
// convolution, the persistent GEMM (cooperative for a fused Add), the Sm80 convolution.
TEST(GpuQuantizedConv, FusedResidualAddInIntegers) {
  AOTC_REQUIRE_GPU();
  CaseOptions o = fused_residual();
  o.expect_holes = {{"ADD_FIXED", "true"}};
  run_case(residual_block(0, false, true, true), "qconv_wgmma_residual_fixed_s8", o);
  run_case(residual_block(-128, true, true, true), "qconv_wgmma_residual_fixed_u8", o);
  CaseOptions gm = gemm_mode(fused_residual());
  gm.expect_holes = {{"AS_GEMM", "1"}, {"HAS_RESIDUAL", "true"}, {"ADD_FIXED", "true"}};
  run_case(as_gemm(residual_block(0, false, true, true)), "qconv_gemm_residual_fixed_s8", gm);
  CaseOptions s80 = fused_residual(false);
  s80.expect_holes = {{"ADD_FIXED", "true"}};
  run_case(residual_block(-128, true, false, true), "qconv_sm80_residual_fixed_u8", s80);
}

// opt/fuse_dequantize_add: DequantizeLinear(a) + DequantizeLinear(b) -> Relu with a float result
// (an int8 network's last residual Add) as one dequantizing aotc.QLinearAdd, in float32 and
// float16 (the graph written in fp16, as the precision pass leaves it); 16 elements a thread
// where the count divides (8 x 64 x 7 x 7), one where it does not (3 x 5 x 7).
Graph dequantize_add(Shape shape, DType to) {
  GraphBuilder b(41);
  ValueId a = b.input("a", shape, DType::kInt8);
  ValueId r = b.input("r", shape, DType::kUInt8);
  ValueId sa = scalar(b, "sa", 0.043), sr = scalar(b, "sr", 0.029);
  ValueId za = scalar(b, "za", 5, DType::kInt8), zr = scalar(b, "zr", 131, DType::kUInt8);
  Attributes out{{"output_dtype", Attribute::of_int(static_cast<int64_t>(to))}};
  ValueId da = b.node("DequantizeLinear", {a, sa, za}, out);
  ValueId dr = b.node("DequantizeLinear", {r, sr, zr}, out);
  b.output(b.node("Relu", {b.node("Add", {da, dr})}));
  return b.graph();
}

TEST(GpuQuantizedAdd, DequantizingAddAsOneKernel) {
  AOTC_REQUIRE_GPU();
  CaseOptions o;
  o.input_lo = 0;  // [0, 256): uint8 r over its range, int8 a too (Tensor::set wraps 128-255 to -128..-1)
  o.input_hi = 256;
  o.expect_ops_after_pipeline = {"QLinearAdd"};
  o.absent_ops_after_pipeline = {"DequantizeLinear", "Add", "Relu"};
  o.expect_holes = {{"FLOAT_OUT", "true"}, {"RELU", "true"}};
  for (DType to : {DType::kFloat32, DType::kFloat16}) {
    const std::string t = to == DType::kFloat32 ? "f32" : "f16";
    run_case(dequantize_add({8, 64, 7, 7}, to), "dequantize_add_vec_" + t, o);
    run_case(dequantize_add({3, 5, 7}, to), "dequantize_add_" + t, o);
  }
}

}  // namespace
}  // namespace aotc::gpu_test
