// GPU op tests for the fp32 NHWC convolution paths (opt/layout_nhwc on fp32 chains,
// ir/ops/conv_nhwc.cc): cuBLASLt SGEMM for 1x1 stride-1 convolutions, im2col + SGEMM for
// under-filled convolutions with a long K loop, the CUTLASS SIMT implicit GEMM for the rest, the
// vectorised NHWC depthwise kernel with 4 fp32 lanes. fp32 end to end: the reference is the CPU
// reference and the tolerance fp32's (design.md section 4); the paths are IEEE fp32 (no TF32), so
// a TF32 kernel (10-bit mantissa products) would fail these. Each shape that has a cheaper
// strategy also runs with that strategy off (--conv-im2col off / --conv-pointwise cutlass), and
// once with --conv-fp32 nchw (the NCHW kernels) as the baseline.
#include "tests/gpu/gpu_harness.h"

#include "ir/shape_inference.h"

namespace aotc::gpu_test {
namespace {

// x [N, C, H, W] -> Conv(w [K, C/group, R, S], bias) (+ residual [N, K, P, Q]) (then Relu).
Graph conv_fp32_graph(Shape x, Shape w, Attributes attrs, bool residual, bool relu) {
  GraphBuilder b;
  ValueId xi = b.input("x", x);
  ValueId c = b.node("Conv", {xi, b.weight("w", w, -0.5, 0.5), b.weight("b", {w[0]}, -1, 1)}, attrs);
  if (residual) {
    Graph probe = b.graph();
    probe.outputs = {c};
    EXPECT_TRUE(infer_shapes(probe).is_ok());
    c = b.node("Add", {c, b.input("residual", probe.value(c).shape)});
  }
  b.output(relu ? b.node("Relu", {c}) : c);
  return b.graph();
}

Graph with(Graph g, bool im2col, bool pointwise, bool nhwc) {
  g.target.conv_im2col_gemm = im2col;
  g.target.conv_pointwise_gemm = pointwise;
  g.target.conv_fp32_nhwc = nhwc;
  return g;
}

// Every strategy switch: default, CUTLASS only, NCHW.
void run_variants(const Graph& g, const std::string& label, const CaseOptions& options = {}) {
  run_case(g, label, options);
  run_case(with(g, false, false, true), label + "_cutlass", options);
  run_case(with(g, true, true, false), label + "_nchw");
}

TEST(GpuConvFp32Nhwc, PointwiseBiasResidualReluAsSgemm) {
  AOTC_REQUIRE_GPU();
  CaseOptions options;
  options.expect_ops_after_pipeline = {"FusedConv"};
  run_variants(conv_fp32_graph({2, 40, 7, 9}, {24, 40, 1, 1}, {}, true, true), "conv32_pw_res_relu", options);
}

TEST(GpuConvFp32Nhwc, ThreeByThreeResidualReluSimt) {
  AOTC_REQUIRE_GPU();
  run_variants(conv_fp32_graph({3, 16, 11, 13}, {40, 16, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true, true),
               "conv32_3x3_res");
}

// K = 3*3*128 = 1152 >= 1024 and few tiles: im2col + SGEMM by default.
TEST(GpuConvFp32Nhwc, LongKUnderfilledAsIm2colSgemm) {
  AOTC_REQUIRE_GPU();
  run_variants(conv_fp32_graph({1, 128, 9, 7}, {36, 128, 3, 3}, {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}},
                               false, true),
               "conv32_3x3_longk");
}

TEST(GpuConvFp32Nhwc, StrideDilationAsymmetricPadsNoBias) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {1, 64, 15, 12});
  b.output(b.node("Conv", {x, b.weight("w", {72, 64, 3, 3}, -0.2, 0.2)},
                  {{"strides", ints({2, 2})}, {"dilations", ints({2, 1})}, {"pads", ints({2, 1, 1, 0})}}));
  run_variants(b.graph(), "conv32_3x3_s2_dil");
}

// ResNet's stem: C = 3 read through the space-to-depth packing (12 channels, 4x4 window).
TEST(GpuConvFp32Nhwc, StemSevenBySevenStride2ThreeChannels) {
  AOTC_REQUIRE_GPU();
  run_variants(conv_fp32_graph({2, 3, 30, 26}, {16, 3, 7, 7}, {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}},
                               false, true),
               "conv32_stem");
}

// A depthwise conv after a pointwise one (it joins the NHWC chain): the 4-lane vectorised kernel
// when the grid is large enough, else the scalar one; with a ReLU6 that clip_into_depthwise moves
// into the depthwise input.
TEST(GpuConvFp32Nhwc, PointwiseThenDepthwiseRelu6) {
  AOTC_REQUIRE_GPU();
  for (int64_t batch : {1, 16}) {
    GraphBuilder b;
    ValueId x = b.input("x", {batch, 16, 28, 28});
    ValueId e = b.node("Conv", {x, b.weight("we", {96, 16, 1, 1}, -0.5, 0.5), b.weight("be", {96})});
    ValueId r = b.node("Clip", {e}, {{"min", f32(0.f)}, {"max", f32(6.f)}});
    ValueId d = b.node("Conv", {r, b.weight("wd", {96, 1, 3, 3}, -0.5, 0.5), b.weight("bd", {96})},
                       {{"group", i64(96)}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
    b.output(b.node("Clip", {d}, {{"min", f32(0.f)}, {"max", f32(6.f)}}));
    run_variants(b.graph(), "conv32_pw_dw_b" + std::to_string(batch));
  }
}

}  // namespace
}  // namespace aotc::gpu_test
