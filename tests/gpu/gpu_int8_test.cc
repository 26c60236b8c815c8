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
TEST(GpuQuantizedConv, InvertedResidualPointwiseZeroPointAndNhwcDepthwise) {
  AOTC_REQUIRE_GPU();
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
  run_case(b.graph(), "qconv_inverted_residual");
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
