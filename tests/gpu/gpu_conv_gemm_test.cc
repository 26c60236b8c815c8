// GPU op tests for the compute ops: Conv (groups, depthwise, stride, dilation, asymmetric pads),
// Conv fused with residual Add and Relu/Clip by the pipeline, Gemm (transposes, alpha/beta, every
// bias shape) and batched MatMul. Sizes include 1, primes and channel counts past 64.
#include <tuple>

#include "tests/gpu/gpu_harness.h"

#include "ir/shape_inference.h"

namespace aotc::gpu_test {
namespace {

Graph conv_graph(Shape x, Shape w, Attributes attrs, bool bias) {
  GraphBuilder b;
  ValueId xi = b.input("x", x);
  std::vector<ValueId> ins = {xi, b.weight("w", w)};
  if (bias) ins.push_back(b.weight("b", {w[0]}));
  b.output(b.node("Conv", ins, attrs));
  return b.graph();
}

TEST(GpuConv, Plain3x3WithPadsAndBias) {
  AOTC_REQUIRE_GPU();
  run_case(conv_graph({1, 3, 13, 17}, {5, 3, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true), "conv_plain");
}

TEST(GpuConv, BatchTwoNoBiasOutputChannelsPast64) {
  AOTC_REQUIRE_GPU();
  run_case(conv_graph({2, 7, 11, 5}, {67, 7, 3, 3}, {}, false), "conv_c67");
}

TEST(GpuConv, Pointwise129To65) {
  AOTC_REQUIRE_GPU();
  run_case(conv_graph({1, 129, 5, 3}, {65, 129, 1, 1}, {}, true), "conv_1x1");
}

TEST(GpuConv, Groups) {
  AOTC_REQUIRE_GPU();
  run_case(conv_graph({2, 6, 11, 7}, {9, 2, 3, 3}, {{"group", i64(3)}, {"pads", ints({1, 0, 1, 0})}}, true),
           "conv_groups");
}

TEST(GpuConv, DepthwiseStride2) {
  AOTC_REQUIRE_GPU();
  run_case(conv_graph({1, 7, 19, 23}, {7, 1, 3, 3},
                      {{"group", i64(7)}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}, true),
           "conv_depthwise");
}

TEST(GpuConv, DepthwiseMultiplierTwo) {
  AOTC_REQUIRE_GPU();
  run_case(conv_graph({1, 5, 9, 9}, {10, 1, 5, 5}, {{"group", i64(5)}, {"pads", ints({2, 2, 2, 2})}}, false),
           "conv_depthwise_mult2");
}

TEST(GpuConv, DilationStrideAsymmetricPads) {
  AOTC_REQUIRE_GPU();
  run_case(conv_graph({1, 4, 31, 29}, {67, 4, 3, 5},
                      {{"dilations", ints({2, 1})}, {"strides", ints({2, 3})}, {"pads", ints({1, 2, 0, 3})}},
                      true),
           "conv_dilated");
}

TEST(GpuConv, ResidualAddReluFusedByPipeline) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {1, 8, 9, 11});
  ValueId r = b.input("residual", {1, 13, 9, 11});
  ValueId c = b.node("Conv", {x, b.weight("w", {13, 8, 3, 3}), b.weight("b", {13})},
                     {{"pads", ints({1, 1, 1, 1})}});
  b.output(b.node("Relu", {b.node("Add", {c, r})}));
  CaseOptions options;
  options.expect_ops_after_pipeline = {"FusedConv"};
  run_case(b.graph(), "conv_residual_relu", options);
}

TEST(GpuConv, ClipFusedByPipeline) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 3, 7, 7});
  ValueId c = b.node("Conv", {x, b.weight("w", {16, 3, 3, 3}), b.weight("b", {16})}, {{"strides", ints({2, 2})}});
  b.output(b.node("Clip", {c}, {{"min", f32(0.f)}, {"max", f32(0.5f)}}));
  CaseOptions options;
  options.expect_ops_after_pipeline = {"FusedConv"};
  run_case(b.graph(), "conv_clip", options);
}

// ---- fp16: the NHWC tensor-core paths (layout_nhwc, CUTLASS implicit GEMM, cuBLASLt for
// pointwise convolutions, the NHWC depthwise kernel). The graph is fp16 end to end, so the
// reference is the CPU reference in fp16 and the tolerance is fp16's (design.md §4).

// x [N, C, H, W] -> Conv(w [K, C/group, R, S], bias) (+ residual [N, K, P, Q]) (then Relu).
Graph conv_fp16_graph(Shape x, Shape w, Attributes attrs, bool residual, bool relu) {
  GraphBuilder b;
  ValueId xi = b.input("x", x, DType::kFloat16);
  ValueId c = b.node("Conv", {xi, b.weight("w", w, -0.5, 0.5, DType::kFloat16),
                              b.weight("b", {w[0]}, -1, 1, DType::kFloat16)}, attrs);
  if (residual) {
    Graph probe = b.graph();
    probe.outputs = {c};
    EXPECT_TRUE(infer_shapes(probe).is_ok());
    c = b.node("Add", {c, b.input("residual", probe.value(c).shape, DType::kFloat16)});
  }
  b.output(relu ? b.node("Relu", {c}) : c);
  return b.graph();
}

TEST(GpuConvFp16, PointwiseBiasResidualReluAsCublasLtGemm) {
  AOTC_REQUIRE_GPU();
  CaseOptions options;
  options.expect_ops_after_pipeline = {"FusedConv"};
  run_case(conv_fp16_graph({2, 40, 7, 9}, {24, 40, 1, 1}, {}, true, true), "conv16_pw_res_relu", options);
}

TEST(GpuConvFp16, PointwiseBiasOnlyBatchOne) {
  AOTC_REQUIRE_GPU();
  run_case(conv_fp16_graph({1, 64, 7, 7}, {256, 64, 1, 1}, {}, false, false), "conv16_pw_bias");
}

// These shapes leave most SMs idle, so by default they run as im2col + cuBLASLt GEMM; each also
// runs with that off (--conv-im2col off), through the CUTLASS implicit GEMM.
Graph cutlass_only(Graph g) {
  g.target.conv_im2col_gemm = false;
  return g;
}

TEST(GpuConvFp16, PointwiseStride2) {
  AOTC_REQUIRE_GPU();
  Graph g = conv_fp16_graph({2, 16, 9, 11}, {32, 16, 1, 1}, {{"strides", ints({2, 2})}}, false, true);
  run_case(g, "conv16_pw_s2");
  run_case(cutlass_only(g), "conv16_pw_s2_cutlass");
}

// Under-filled strided 1x1 convolutions (ResNet's downsample at batch 1) read their input in
// place as one strided batched cuBLASLt GEMM: two images with H = 2 * P (the batches step across
// the image boundary), and one image with an odd H (its last row is not read); im2col as before
// when forced (--conv-strided-pointwise im2col).
TEST(GpuConvFp16, StridedPointwiseAsBatchedGemm) {
  AOTC_REQUIRE_GPU();
  Graph g = conv_fp16_graph({2, 64, 28, 28}, {128, 64, 1, 1}, {{"strides", ints({2, 2})}}, true, true);
  run_case(g, "conv16_pw_s2_batched");
  Graph odd = conv_fp16_graph({1, 256, 13, 13}, {512, 256, 1, 1}, {{"strides", ints({2, 2})}}, true, false);
  run_case(odd, "conv16_pw_s2_batched_odd");
  odd.target.conv_strided_pointwise_gemm = false;
  odd.target.conv_cluster_splitk = false;  // else the cluster split-K kernel takes it (C 256)
  run_case(odd, "conv16_pw_s2_im2col");
}

TEST(GpuConvFp16, ThreeByThreeResidualRelu) {
  AOTC_REQUIRE_GPU();
  Graph g = conv_fp16_graph({3, 16, 11, 13}, {40, 16, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true, true);
  run_case(g, "conv16_3x3_res");
  run_case(cutlass_only(g), "conv16_3x3_res_cutlass");
}

// 16-bit convolutions that leave SMs idle, with channels a multiple of 64, run on sm_90 as one
// cluster split-K kernel (templates/conv_cluster_splitk_nhwc.cu.in); each case also runs as
// im2col + GEMM (--conv-cluster off). The configurations (ir/ops/conv_configs.h's rule, checked
// by ConvClusterSplitK.* on the CPU): 14x14 C64 -> K64: BN 32, split 3 (tile rows 22 / 22 / 20
// per CTA); the dilated strided one: BN 32, split 6, M = 42 (a partial 64-row tile); batch 2:
// M tiles across the image boundary.
Graph cluster_off(Graph g) {
  g.target.conv_cluster_splitk = false;
  return g;
}

Graph conv16_act_graph(DType t, Shape x, Shape w, Attributes attrs, bool bias, bool residual, const std::string& act) {
  GraphBuilder b;
  ValueId xi = b.input("x", x, t);
  std::vector<ValueId> ins = {xi, b.weight("w", w, -0.3, 0.3, t)};
  if (bias) ins.push_back(b.weight("b", {w[0]}, -1, 1, t));
  ValueId c = b.node("Conv", ins, attrs);
  if (residual) {
    Graph probe = b.graph();
    probe.outputs = {c};
    EXPECT_TRUE(infer_shapes(probe).is_ok());
    c = b.node("Add", {c, b.input("residual", probe.value(c).shape, t)});
  }
  if (act == "Relu") c = b.node("Relu", {c});
  if (act == "Clip") c = b.node("Clip", {c}, {{"min", f32(0.f)}, {"max", f32(1.5f)}});
  if (act == "SiLU") c = b.node("Mul", {c, b.node("Sigmoid", {c})});  // as the exporters write it
  b.output(c);
  return b.graph();
}

// SiLU (Mul(x, Sigmoid(x)) -> Swish by opt/fuse_silu) inside the convolution's own kernel where
// the convolution is not a pointwise GEMM: the cluster split-K 3x3 at batch 1 (with a residual
// before it), the sm_90a wgmma 3x3 (98 tiles of 128 x 128 fill half a wave; sm_90 GPUs) and a
// depthwise 3x3, with no Swish, Sigmoid or Mul kernel left; a 1x1 keeps its cuBLASLt GEMM and a
// Swish kernel after it (OpTraits::epilogue_not_on_gemm).
TEST(GpuConvFp16, SiluInsideTheConvolutionKernelsThatAreNotGemms) {
  AOTC_REQUIRE_GPU();
  CaseOptions options;
  options.expect_ops_after_pipeline = {"FusedConv"};
  options.absent_ops_after_pipeline = {"Swish", "Sigmoid", "Mul"};
  const Attributes pad1 = {{"pads", ints({1, 1, 1, 1})}};
  run_case(conv16_act_graph(DType::kFloat16, {1, 64, 14, 14}, {64, 64, 3, 3}, pad1, true, true, "SiLU"),
           "conv16_silu_cluster", options);
  if (gpu_arch() == "sm_90") {
    CaseOptions wgmma = options;
    wgmma.expect_templates = {"cutlass_conv2d_fprop_sm90"};
    run_case(conv16_act_graph(DType::kFloat16, {16, 128, 28, 28}, {128, 128, 3, 3}, pad1, true, false, "SiLU"),
             "conv16_silu_wgmma", wgmma);
  }
  run_case(conv16_act_graph(DType::kFloat16, {2, 64, 14, 14}, {64, 1, 3, 3}, {{"pads", ints({1, 1, 1, 1})}, {"group", i64(64)}},
                            true, false, "SiLU"),
           "conv16_silu_depthwise", options);
  CaseOptions pointwise;
  pointwise.expect_ops_after_pipeline = {"Swish"};
  run_case(conv16_act_graph(DType::kFloat16, {4, 64, 14, 14}, {128, 64, 1, 1}, {}, true, false, "SiLU"),
           "conv16_silu_pointwise", pointwise);
}

TEST(GpuConvFp16, ClusterSplitKResidualRelu) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {1, 64, 14, 14}, {64, 64, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true,
                             true, "Relu");
  CaseOptions options;
  options.expect_ops_after_pipeline = {"FusedConv"};
  run_case(g, "conv16_cluster_res", options);
  run_case(cluster_off(g), "conv16_cluster_res_off", options);
}

// --l2-prefetch: the first cluster convolution prefetches the 1x1's and the second 3x3's weights
// into L2 (a hint: the outputs must not change), the second one nothing.
TEST(GpuConvFp16, ClusterSplitKWithL2Prefetch) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {1, 64, 14, 14}, DType::kFloat16);
  ValueId c = b.node("Conv", {x, b.weight("w1", {64, 64, 3, 3}, -0.3, 0.3, DType::kFloat16),
                              b.weight("b1", {64}, -1, 1, DType::kFloat16)},
                     {{"pads", ints({1, 1, 1, 1})}});
  c = b.node("Relu", {c});
  c = b.node("Conv", {c, b.weight("w2", {256, 64, 1, 1}, -0.3, 0.3, DType::kFloat16),
                      b.weight("b2", {256}, -1, 1, DType::kFloat16)});
  c = b.node("Relu", {c});
  c = b.node("Conv", {c, b.weight("w3", {64, 256, 3, 3}, -0.1, 0.1, DType::kFloat16),
                      b.weight("b3", {64}, -1, 1, DType::kFloat16)},
             {{"pads", ints({1, 1, 1, 1})}});
  b.output(c);
  Graph g = b.graph();
  g.target.l2_prefetch = true;  // the default
  CaseOptions options;
  options.expect_templates = {"conv_cluster_splitk_nhwc"};
  run_case(g, "conv16_cluster_l2_prefetch", options);
  g.target.l2_prefetch = false;
  run_case(g, "conv16_cluster_l2_prefetch_off", options);
}

TEST(GpuConvFp16, ClusterSplitKStride2DilatedClipNoBias) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {1, 128, 15, 13}, {96, 128, 3, 3},
                             {{"strides", ints({2, 2})}, {"dilations", ints({1, 2})}, {"pads", ints({1, 2, 0, 1})}},
                             false, false, "Clip");
  run_case(g, "conv16_cluster_s2_clip");
  run_case(cluster_off(g), "conv16_cluster_s2_clip_off");
}

TEST(GpuConvFp16, ClusterSplitKBatchTwoAndBf16) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {2, 64, 7, 7}, {128, 64, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true,
                             false, "");
  run_case(g, "conv16_cluster_n2");
  Graph bf = conv16_act_graph(DType::kBFloat16, {1, 128, 9, 9}, {64, 128, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true,
                              false, "Relu");
  run_case(bf, "convbf16_cluster");
  run_case(cluster_off(bf), "convbf16_cluster_off");
}

// --conv-cluster-max-split 12 on ResNet-50's layer-4 shape (7x7x512, residual + Relu): 12-CTA
// clusters, sm_90's non-portable size, which create() must allow on the function; and 8.
TEST(GpuConvFp16, ClusterSplitKNonPortableCluster) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {1, 512, 7, 7}, {512, 512, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true,
                             true, "Relu");
  CaseOptions options;
  options.expect_templates = {"conv_cluster_splitk_nhwc"};
  for (int split : {12, 8}) {
    Graph v = g;
    v.target.conv_cluster_max_split = split;
    run_case(v, "conv16_cluster_split" + std::to_string(split), options);
  }
}

// --conv-cluster-warp-groups 4 (512 threads a CTA, one 16-wide K slice a group): ResNet-50's
// layer-3 shape (BN 64) and layer-4 shape (BN 32: half the threads load the B tile), residual + Relu.
TEST(GpuConvFp16, ClusterSplitKFourWarpGroups) {
  AOTC_REQUIRE_GPU();
  CaseOptions options;
  options.expect_templates = {"conv_cluster_splitk_nhwc"};
  for (int64_t c : {256, 512}) {
    const int64_t hw = c == 256 ? 14 : 7;
    Graph g = conv16_act_graph(DType::kFloat16, {1, c, hw, hw}, {c, c, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true,
                               true, "Relu");
    g.target.conv_cluster_warp_groups = 4;
    run_case(g, "conv16_cluster_kg4_" + std::to_string(c), options);
  }
}

// A 1x7 window (Inception's factorised convolutions): 7 taps of 64 channels, one K step each.
TEST(GpuConvFp16, ClusterSplitKOneBySevenWindow) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {1, 64, 9, 11}, {64, 64, 1, 7}, {{"pads", ints({0, 3, 0, 3})}}, true,
                             false, "Relu");
  run_case(g, "conv16_cluster_1x7");
  run_case(cluster_off(g), "conv16_cluster_1x7_off");
}

// 16-bit convolutions that fill half a wave on an sm_90-only target run on CUTLASS 3.x's TMA +
// wgmma implicit GEMM (templates/cutlass_conv2d_fprop_sm90.cu.in), whose params struct aotc
// builds at compile time and whose TMA descriptors create() encodes (codegen/host_params.h). The
// graph's NCHW input is packed to NHWC first, so the convolution reads and writes arena values
// (TMA descriptors need addresses fixed at create). One case per configuration of the table
// (ir/ops/conv_configs.h): 64 output channels (128x64, two CTAs a SM) with a residual; 192 output
// channels (a partial N tile) with stride 2, dilation and asymmetric pads, Clip, no bias, on
// 64x128 tiles; 256 channels on 128x128 tiles; a 1x7 window. Each also runs with --conv-wgmma off
// (CUTLASS 2.x), which must not use the template. No bf16 case: outputs of these sizes (K = 1152,
// |y| ~ 3, a bf16 ulp 0.016) cannot meet the 16-bit per-element tolerance (2.5e-3 + 1e-3 |y|)
// whenever the fp32 sums of the kernel and of the reference round to neighbouring bf16 values,
// which on a million outputs always happens somewhere (the CUTLASS 2.x kernel fails the same way,
// device call 2 of the twenty-second session); bf16 is checked on whole models against ONNX
// Runtime (relative L2) by the device script.
Graph wgmma_off(Graph g) {
  g.target.conv_wgmma = false;
  return g;
}

CaseOptions wgmma_case(bool on) {
  CaseOptions o;
  (on ? o.expect_templates : o.absent_templates) = {"cutlass_conv2d_fprop_sm90"};
  return o;
}

TEST(GpuConvFp16, WgmmaResidualReluSixtyFourChannels) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {8, 64, 34, 34}, {64, 64, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true,
                             true, "Relu");
  run_case(g, "conv16_wgmma_k64", wgmma_case(true));
  run_case(wgmma_off(g), "conv16_wgmma_k64_off", wgmma_case(false));
}

TEST(GpuConvFp16, WgmmaStride2DilatedAsymmetricPadsClipNoBias) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {16, 96, 33, 31}, {192, 96, 3, 3},
                             {{"strides", ints({2, 2})}, {"dilations", ints({1, 2})}, {"pads", ints({1, 2, 0, 1})}},
                             false, false, "Clip");
  run_case(g, "conv16_wgmma_s2_clip", wgmma_case(true));
  run_case(wgmma_off(g), "conv16_wgmma_s2_clip_off", wgmma_case(false));
}

TEST(GpuConvFp16, WgmmaTwoHundredFiftySixChannels) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {8, 128, 28, 28}, {256, 128, 3, 3}, {{"pads", ints({1, 1, 1, 1})}},
                             true, true, "Relu");
  run_case(g, "conv16_wgmma_k256", wgmma_case(true));
  run_case(wgmma_off(g), "conv16_wgmma_k256_off", wgmma_case(false));
}

// The 64x128 row with as many stages as fit one CTA an SM (wg64x128x64_auto, ResNet-50's layer4):
// 98 tiles of 64x128 (49 of 128x128 would be under half a wave), a residual and ReLU
// (WgmmaConv.ConfigurationRuleAndRefusals checks that the rule picks it for this shape).
TEST(GpuConvFp16, WgmmaOneTileAnSmDeepPipeline) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {8, 64, 28, 28}, {128, 64, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true,
                             true, "Relu");
  run_case(g, "conv16_wgmma_64x128_auto", wgmma_case(true));
}

// The few-channel rows (at most 48 input channels; EfficientNetV2-S's fused-MBConv 3x3s): 24
// channels (one 32-deep K step a filter tap, 8 of it zero-filled) to 24 with a residual and ReLU
// on wg128x32x32_s6_2cta; 40 channels (a second K step of 8) to 96 outputs (a partial second N
// tile) with stride 2 and SiLU on wg128x64x32_s6_2cta. WgmmaConv.ConfigurationRuleAndRefusals
// checks that the rule picks those rows for these shapes.
TEST(GpuConvFp16, WgmmaFewChannelsResidualRelu) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {8, 24, 56, 56}, {24, 24, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}, true,
                             true, "Relu");
  run_case(g, "conv16_wgmma_few_k24", wgmma_case(true));
}

TEST(GpuConvFp16, WgmmaFewChannelsStride2SecondKStep) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {16, 40, 57, 55}, {96, 40, 3, 3},
                             {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}, true, false, "SiLU");
  run_case(g, "conv16_wgmma_few_c40_s2", wgmma_case(true));
}

TEST(GpuConvFp16, WgmmaOneBySevenWindow) {
  AOTC_REQUIRE_GPU();
  Graph g = conv16_act_graph(DType::kFloat16, {16, 64, 17, 17}, {128, 64, 1, 7}, {{"pads", ints({0, 3, 0, 3})}}, true,
                             false, "Relu");
  run_case(g, "conv16_wgmma_1x7", wgmma_case(true));
}

TEST(GpuConvFp16, ThreeByThreeStride2DilatedNoBiasLargeK) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {1, 64, 15, 12}, DType::kFloat16);
  b.output(b.node("Conv", {x, b.weight("w", {72, 64, 3, 3}, -0.2, 0.2, DType::kFloat16)},
                  {{"strides", ints({2, 2})}, {"dilations", ints({2, 1})}, {"pads", ints({2, 1, 1, 0})}}));
  run_case(b.graph(), "conv16_3x3_s2_dil");
  run_case(cutlass_only(b.graph()), "conv16_3x3_s2_dil_cutlass");
}

TEST(GpuConvFp16, StemSevenBySevenStride2ThreeChannels) {
  AOTC_REQUIRE_GPU();
  Graph g = conv_fp16_graph({2, 3, 30, 26}, {16, 3, 7, 7}, {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}},
                            false, true);
  run_case(g, "conv16_stem");
  run_case(cutlass_only(g), "conv16_stem_cutlass");
}

// The direct stem kernel (conv_stem_nhwc; --conv-stem cutlass is the space-to-depth + CUTLASS
// path): ResNet's 7x7/2 with 64 outputs over several partial tiles, MobileNet's 3x3/2 with 32
// outputs and a clip, a 1-channel 5x5/1 with 40 outputs (a multiple of 8, not 16) (bf16: compiled in CI, tests/codegen).
Graph stem_cutlass(Graph g) {
  g.target.conv_stem_kernel = false;
  return g;
}

TEST(GpuConvFp16, StemKernelSevenBySevenStride2SixtyFourOutputs) {
  AOTC_REQUIRE_GPU();
  Graph g = conv_fp16_graph({3, 3, 61, 67}, {64, 3, 7, 7}, {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}},
                            false, true);
  run_case(g, "conv16_stem64");
  run_case(stem_cutlass(g), "conv16_stem64_cutlass");
}

TEST(GpuConvFp16, StemKernelThreeByThreeStride2Clip) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 3, 37, 45}, DType::kFloat16);
  ValueId c = b.node("Conv", {x, b.weight("w", {32, 3, 3, 3}, -0.5, 0.5, DType::kFloat16),
                              b.weight("b", {32}, -1, 1, DType::kFloat16)},
                     {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  b.output(b.node("Clip", {c}, {{"min", f32(0.f)}, {"max", f32(0.5f)}}));
  run_case(b.graph(), "conv16_stem_clip");
}

TEST(GpuConvFp16, StemKernelOneChannelFiveByFiveNoBias) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {1, 1, 23, 19}, DType::kFloat16);
  b.output(b.node("Conv", {x, b.weight("w", {40, 1, 5, 5}, -0.5, 0.5, DType::kFloat16)}, {{"pads", ints({2, 1, 2, 1})}}));
  run_case(b.graph(), "conv16_stem_1ch");
}

// Long K loops of the staged filter (tests/codegen: stem_filter_smem_bytes): 9x9/2 with 32
// outputs (21 K steps) and 11x11/1 with 16 outputs (31 K steps, bias, ReLU).
TEST(GpuConvFp16, StemKernelLargeWindows) {
  AOTC_REQUIRE_GPU();
  run_case(conv_fp16_graph({2, 3, 41, 38}, {32, 3, 9, 9}, {{"strides", ints({2, 2})}, {"pads", ints({4, 4, 4, 4})}}, false,
                           false),
           "conv16_stem9x9");
  run_case(conv_fp16_graph({1, 2, 29, 35}, {16, 2, 11, 11}, {{"pads", ints({5, 5, 5, 5})}}, false, true), "conv16_stem11x11");
}

// The stem with an absorbed max pool (opt/fuse_stem_pool, templates/conv_stem_pool_nhwc.cu.in):
// ResNet's entry on an odd image (partial pooled tiles, pool windows past the conv output), and a
// 3x3/2 stem with 24 outputs under a 2x2 ceil-mode pool with asymmetric pads.
TEST(GpuConvFp16, StemKernelWithMaxPool) {
  AOTC_REQUIRE_GPU();
  {
    GraphBuilder b;
    ValueId x = b.input("x", {3, 3, 61, 67}, DType::kFloat16);
    ValueId c = b.node("Conv", {x, b.weight("w", {64, 3, 7, 7}, -0.5, 0.5, DType::kFloat16),
                                b.weight("b", {64}, -1, 1, DType::kFloat16)},
                       {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}});
    ValueId r = b.node("Relu", {c});
    b.output(b.node("MaxPool", {r}, {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}));
    run_case(b.graph(), "conv16_stem_pool");
    run_case(stem_cutlass(b.graph()), "conv16_stem_pool_cutlass");
  }
  {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 3, 45, 37}, DType::kFloat16);
    ValueId c = b.node("Conv", {x, b.weight("w", {24, 3, 3, 3}, -0.5, 0.5, DType::kFloat16)},
                       {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
    b.output(b.node("MaxPool", {c}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}, {"pads", ints({0, 1, 1, 0})},
                                     {"ceil_mode", i64(1)}}));
    run_case(b.graph(), "conv16_stem24_pool_ceil");
  }
}

// The stem + pool on sm_90a's wgmma (templates/conv_stem_pool_wgmma_nhwc.cu.in; it applies on an
// sm_90 GPU): the model's form, a float input cast to fp16 (the kernel reads the NCHW floats), at
// batch 1 and 3 of 224 x 224 (ResNet's 8 x 7 pooled tiles: one a block, 168 tiles over 2 a block)
// and batch 9 of 113 x 119 (11 x 5 tiles, partial at the right and bottom edges, conv pixels
// outside the conv output at every edge); each also with --conv-stem-wgmma off (the mma.sync
// kernel). Elsewhere (not sm_90) both run the mma.sync kernel.
TEST(GpuConvFp16, StemPoolOnWgmma) {
  AOTC_REQUIRE_GPU();
  for (const auto& [n, h, w] : {std::tuple<int64_t, int64_t, int64_t>{1, 224, 224}, {3, 224, 224}, {9, 113, 119}}) {
    GraphBuilder b;
    ValueId x = b.input("x", {n, 3, h, w}, DType::kFloat32);
    ValueId x16 = b.node("Cast", {x}, {{"to", i64(10)}});
    ValueId c = b.node("Conv", {x16, b.weight("w", {64, 3, 7, 7}, -0.5, 0.5, DType::kFloat16),
                                b.weight("b", {64}, -1, 1, DType::kFloat16)},
                       {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}});
    ValueId r = b.node("Relu", {c});
    b.output(b.node("MaxPool", {r}, {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}));
    const std::string label = "stem_pool_wgmma_" + std::to_string(n) + "x" + std::to_string(h);
    run_case(b.graph(), label);
    Graph off = b.graph();
    off.target.conv_stem_wgmma = false;
    run_case(off, label + "_off");
  }
}

// MobileNet's depthwise -> projection pairs as one kernel (opt/fuse_depthwise_pointwise,
// templates/conv_dw_pw_nhwc.cu.in) against the reference of the unfused graph: an inverted
// residual block with its Add (fp16, C 48, CO 24), bf16 at stride 2 with C 40 (K padded to 48) and
// a Relu on the projection, a 14 x 14 pair at batch 1 (C 192 -> CO 64: 16-pixel tiles, 13
// blocks), an early pair at batch 2 (C 144 on 56 x 56 with the residual) and a 5 x 5 stride-2
// depthwise conv (MnasNet / EfficientNet).
TEST(GpuConvFp16, DepthwisePointwiseFused) {
  AOTC_REQUIRE_GPU();
  struct Case {
    const char* label;
    DType t;
    int64_t n, cin, h, w, c, co, k, stride;
    bool residual, relu;
  };
  const std::vector<Case> cases = {
      {"dwpw_block", DType::kFloat16, 2, 24, 9, 11, 48, 24, 3, 1, true, false},
      {"dwpw_bf16_s2", DType::kBFloat16, 2, 24, 9, 11, 40, 56, 3, 2, false, true},
      {"dwpw_14x14", DType::kFloat16, 1, 64, 14, 14, 192, 64, 3, 1, false, false},
      {"dwpw_early", DType::kFloat16, 2, 24, 56, 56, 144, 24, 3, 1, true, false},
      {"dwpw_5x5_s2", DType::kFloat16, 1, 40, 28, 28, 240, 80, 5, 2, false, false},
  };
  for (const Case& c : cases) {
    GraphBuilder b;
    ValueId x = b.input("x", {c.n, c.cin, c.h, c.w}, c.t);
    ValueId e = b.node("Conv", {x, b.weight("w1", {c.c, c.cin, 1, 1}, -0.3, 0.3, c.t), b.weight("b1", {c.c}, -0.2, 1, c.t)});
    ValueId r = b.node("Clip", {e}, {{"min", f32(0.f)}, {"max", f32(1.5f)}});
    const int64_t pad = c.k / 2;
    ValueId d = b.node("Conv", {r, b.weight("w2", {c.c, 1, c.k, c.k}, -0.5, 0.5, c.t), b.weight("b2", {c.c}, -0.3, 0.3, c.t)},
                       {{"group", i64(c.c)}, {"pads", ints({pad, pad, pad, pad})}, {"strides", ints({c.stride, c.stride})}});
    ValueId dr = b.node("Clip", {d}, {{"min", f32(0.f)}, {"max", f32(6.f)}});
    ValueId p = b.node("Conv", {dr, b.weight("w3", {c.co, c.c, 1, 1}, -0.2, 0.2, c.t), b.weight("b3", {c.co}, -0.5, 0.5, c.t)});
    if (c.residual) p = b.node("Add", {p, x});
    if (c.relu) p = b.node("Relu", {p});
    b.output(p);
    CaseOptions o;
    o.expect_ops_after_pipeline = {"DepthwisePointwise"};
    o.expect_templates = {"conv_dw_pw_nhwc"};
    run_case(b.graph(), c.label, o);
  }
}

// ResNet's first bottleneck with its projection shortcut (opt/merge_projection_shortcut: one
// 1x1 conv over Concat(h, x), the Concat's slabs with 16-byte accesses) against the reference of
// the unmerged graph.
TEST(GpuConvFp16, MergedProjectionShortcut) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 64, 14, 13}, DType::kFloat16);
  ValueId h = b.node("Relu", {b.node("Conv", {x, b.weight("w1", {32, 64, 1, 1}, -0.2, 0.2, DType::kFloat16),
                                              b.weight("b1", {32}, -0.5, 0.5, DType::kFloat16)})});
  ValueId c3 = b.node("Conv", {h, b.weight("w3", {256, 32, 1, 1}, -0.2, 0.2, DType::kFloat16),
                               b.weight("b3", {256}, -0.5, 0.5, DType::kFloat16)});
  ValueId d = b.node("Conv", {x, b.weight("wd", {256, 64, 1, 1}, -0.2, 0.2, DType::kFloat16),
                              b.weight("bd", {256}, -0.5, 0.5, DType::kFloat16)});
  b.output(b.node("Relu", {b.node("Add", {c3, d})}));
  Graph aux = b.graph();
  aux.target.aux_streams = 1;
  CaseOptions merged;  // one stream (the default): merged
  merged.expect_ops_after_pipeline = {"Concat"};
  run_case(b.graph(), "conv16_merged_shortcut", merged);
  // The same block with the auxiliary stream: the projection moves beside conv1 / conv3 and its
  // values stay allocated until the join (run_case runs plainly, so this checks the order and the
  // memory plan; the CUDA graph's fork and join run in the models' library checks).
  CaseOptions beside;
  beside.absent_ops_after_pipeline = {"Concat"};
  beside.expect_side_nodes = 1;
  run_case(aux, "conv16_projection_beside", beside);
}

// ResNet's downsampling bottleneck (layers 2-4; opt/merge_strided_projection): conv1 and the
// projection stride 2 over x [8, 32, 55, 57] (ceil: a 28 x 29 grid), merged into one GEMM over
// aotc.SubsampleConcat(h, x at step 2): 6496 x 512 outputs, enough tiles for 132 SMs. Against the
// reference of the unmerged graph.
TEST(GpuConvFp16, MergedStridedProjectionShortcut) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {8, 32, 55, 57}, DType::kFloat16);
  ValueId h = b.node("Relu", {b.node("Conv", {x, b.weight("w1", {16, 32, 1, 1}, -0.3, 0.3, DType::kFloat16),
                                              b.weight("b1", {16}, -0.5, 0.5, DType::kFloat16)},
                                     {{"strides", ints({2, 2})}})});
  ValueId c3 = b.node("Conv", {h, b.weight("w3", {512, 16, 1, 1}, -0.3, 0.3, DType::kFloat16),
                               b.weight("b3", {512}, -0.5, 0.5, DType::kFloat16)});
  ValueId d = b.node("Conv", {x, b.weight("wd", {512, 32, 1, 1}, -0.3, 0.3, DType::kFloat16),
                              b.weight("bd", {512}, -0.5, 0.5, DType::kFloat16)},
                     {{"strides", ints({2, 2})}});
  b.output(b.node("Relu", {b.node("Add", {c3, d})}));
  CaseOptions merged;
  merged.expect_ops_after_pipeline = {"SubsampleConcat"};
  run_case(b.graph(), "conv16_merged_strided_shortcut", merged);
}

// opt/fuse_pointwise_pair at ResNet-50's batch-1 block boundaries: block i's conv3 (+ residual,
// ReLU) and block i+1's conv1 (+ ReLU) as one cluster kernel (templates/conv_pw_pair_nhwc.cu.in),
// the block output still read by the next conv3 as its residual. Shapes: layer 3 (196 rows, K1
// 256, N1 1024, N2 256: 7 tiles of 32 rows, clusters of 16), layer 3 -> 4 (N2 512: the partial
// product in 4 column blocks), an odd pixel count (15 x 13 = 195 rows), MobileNetV2's projection
// + residual then expansion (K1 384, N1 64, N2 384: clusters of 4, a one-step K range), and layer
// 2 in bf16 without the residual (784 rows, clusters of 8, 64-row tiles, a partial last one).
// Against the reference of the unfused graph. The bf16 case keeps its values under 0.5 and reads
// the block output as a graph output instead of through the next conv3's fused residual: one
// bf16 ulp above 0.5 (2^-8) is wider than the per-element tolerance, and an accumulation order
// other than the reference's flips the rounding of a few outputs; the fp16 cases take the whole
// block tail.
TEST(GpuConvFp16, PointwisePairFused) {
  AOTC_REQUIRE_GPU();
  struct Case {
    const char* name;
    DType t;
    int64_t h, w, k1, n1, n2;
    bool residual;
    double scale;  // of the weights, biases and inputs
  };
  const Case cases[] = {{"layer3", DType::kFloat16, 14, 14, 256, 1024, 256, true, 1.0},
                        {"layer3to4", DType::kFloat16, 14, 14, 256, 1024, 512, true, 1.0},
                        {"odd_rows", DType::kFloat16, 15, 13, 256, 1024, 256, true, 1.0},
                        {"mobilenet", DType::kFloat16, 14, 14, 384, 64, 384, true, 1.0},
                        {"layer2_bf16", DType::kBFloat16, 28, 28, 128, 512, 128, false, 0.3}};
  for (const Case& s : cases) {
    SCOPED_TRACE(s.name);
    const double k = s.scale;
    const bool bf16 = s.t == DType::kBFloat16;
    GraphBuilder b;
    ValueId h = b.input("h", {1, s.k1, s.h, s.w}, s.t);
    ValueId c3 = b.node("Conv", {h, b.weight("w3", {s.n1, s.k1, 1, 1}, -0.08 * k, 0.08 * k, s.t),
                                 b.weight("b3", {s.n1}, -0.5 * k, 0.5 * k, s.t)});
    if (s.residual) c3 = b.node("Add", {c3, b.input("s", {1, s.n1, s.h, s.w}, s.t)});
    ValueId o = b.node("Relu", {c3});
    ValueId h1 = b.node("Relu", {b.node("Conv", {o, b.weight("w1", {s.n2, s.n1, 1, 1}, -0.05 * k, 0.05 * k, s.t),
                                                 b.weight("b1", {s.n2}, -0.5 * k, 0.5 * k, s.t)})});
    if (bf16) {
      b.output(o);
    } else {
      ValueId c2 = b.node("Conv", {h1, b.weight("w2", {s.n1, s.n2, 1, 1}, -0.08, 0.08, s.t)});
      b.output(b.node("Add", {c2, o}));
    }
    b.output(h1);
    CaseOptions options;
    options.input_lo = -k;
    options.input_hi = k;
    options.expect_ops_after_pipeline = {"PointwisePair"};
    options.expect_templates = {"conv_pw_pair_nhwc"};
    Graph g = b.graph();
    g.target.conv_pw_pair = true;  // --conv-pw-pair on (off by default)
    run_case(g, std::string("conv16_pw_pair_") + s.name, options);
  }
}

// The same at batch 1 (ResNet-50's layer-3 shape, x [1, 512, 28, 28]): the merged GEMM is far
// from filling the GPU, so merge_strided_projection fires only because h comes from the block's
// 3x3 / stride-2 convolution, which writes it into the SubsampleConcat's rows (concat_in_place;
// the cluster split-K kernel on sm_90); the copy of x's pixels replaces the projection's GEMM.
// Against the reference of the unmerged graph.
TEST(GpuConvFp16, MergedStridedProjectionBatch1WritesHInPlace) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  const DType t = DType::kFloat16;
  ValueId x = b.input("x", {1, 512, 28, 28}, t);
  ValueId c1 = b.node("Relu", {b.node("Conv", {x, b.weight("w1", {256, 512, 1, 1}, -0.06, 0.06, t),
                                               b.weight("b1", {256}, -0.5, 0.5, t)})});
  ValueId h = b.node("Relu", {b.node("Conv", {c1, b.weight("w2", {256, 256, 3, 3}, -0.03, 0.03, t),
                                              b.weight("b2", {256}, -0.5, 0.5, t)},
                                     {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}})});
  ValueId c3 = b.node("Conv", {h, b.weight("w3", {1024, 256, 1, 1}, -0.06, 0.06, t), b.weight("b3", {1024}, -0.5, 0.5, t)});
  ValueId d = b.node("Conv", {x, b.weight("wd", {1024, 512, 1, 1}, -0.05, 0.05, t), b.weight("bd", {1024}, -0.5, 0.5, t)},
                     {{"strides", ints({2, 2})}});
  b.output(b.node("Relu", {b.node("Add", {c3, d})}));
  CaseOptions options;
  options.expect_ops_after_pipeline = {"SubsampleConcat"};
  options.expect_stored_values = 1;
  run_case(b.graph(), "conv16_merged_strided_batch1", options);
}

// opt/concat_in_place: in ResNet's merged projection, h (the block's 3x3 convolution output) is
// written by that convolution straight into the Concat's rows (row stride 128), by each
// convolution strategy that can: the cluster split-K kernel (batch 1 on sm_90), im2col + cuBLASLt
// (--conv-cluster off), the CUTLASS implicit GEMM (--conv-im2col off too), in fp16 and fp32
// (SIMT CUTLASS / im2col). Against the reference of the unmerged graph.
TEST(GpuConvFp16, ConcatInPlaceEveryConvStrategy) {
  AOTC_REQUIRE_GPU();
  for (DType t : {DType::kFloat16, DType::kFloat32}) {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 64, 14, 13}, t);
    ValueId h = b.node("Relu", {b.node("Conv", {x, b.weight("w1", {64, 64, 3, 3}, -0.1, 0.1, t),
                                                b.weight("b1", {64}, -0.5, 0.5, t)},
                                       {{"pads", ints({1, 1, 1, 1})}})});
    ValueId c3 = b.node("Conv", {h, b.weight("w3", {256, 64, 1, 1}, -0.2, 0.2, t), b.weight("b3", {256}, -0.5, 0.5, t)});
    ValueId d = b.node("Conv", {x, b.weight("wd", {256, 64, 1, 1}, -0.2, 0.2, t), b.weight("bd", {256}, -0.5, 0.5, t)});
    b.output(b.node("Relu", {b.node("Add", {c3, d})}));
    const std::string name = t == DType::kFloat16 ? "conv16" : "conv32";
    for (int variant = t == DType::kFloat16 ? 0 : 2; variant < 3; ++variant) {  // fp32: CUTLASS SIMT in each
      Graph g = b.graph();
      g.target.conv_cluster_splitk = variant == 0;
      g.target.conv_im2col_gemm = variant < 2;
      CaseOptions options;
      options.expect_ops_after_pipeline = {"Concat"};
      options.expect_stored_values = 1;
      run_case(g, name + "_concat_in_place_" + std::to_string(variant), options);
    }
  }
}

// An Inception-style block (layout_nhwc keeps the channel Concat NHWC; opt/concat_in_place): branch
// a (1x1, 128 channels) and branch b (3x3, 64 channels) write their slabs of the Concat's rows
// themselves, branch c (pool + 1x1, at a column of 384 bytes) is copied. Against the reference.
TEST(GpuConvFp16, InceptionConcatWrittenInPlace) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  const DType t = DType::kFloat16;
  ValueId x = b.input("x", {2, 32, 14, 14}, t);
  ValueId a = b.node("Conv", {x, b.weight("wa", {128, 32, 1, 1}, -0.2, 0.2, t)});
  ValueId c3 = b.node("Conv", {x, b.weight("wb", {64, 32, 3, 3}, -0.1, 0.1, t)}, {{"pads", ints({1, 1, 1, 1})}});
  ValueId p = b.node("MaxPool", {x}, {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}, {"strides", ints({1, 1})}});
  ValueId c = b.node("Conv", {p, b.weight("wc", {32, 32, 1, 1}, -0.2, 0.2, t)});
  ValueId cat = b.node("Concat", {a, c3, c}, {{"axis", i64(1)}});
  b.output(b.node("Conv", {cat, b.weight("wn", {32, 224, 1, 1}, -0.1, 0.1, t)}));
  CaseOptions options;
  options.expect_ops_after_pipeline = {"Concat"};
  options.expect_stored_values = 2;
  run_case(b.graph(), "conv16_inception_concat_in_place", options);
}

// MobileNetV2's head: the last 1x1 conv with ReLU6 read only by the global average pool. The
// conv runs on cuBLASLt with a ReLU epilogue and the pool clamps what it reads
// (opt/clip_into_depthwise, input_max); biases up to 8 so that many values pass the bound of 6.
TEST(GpuConvFp16, LastConvRelu6SplitIntoThePool) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 32, 7, 7}, DType::kFloat16);
  ValueId c = b.node("Conv", {x, b.weight("w", {64, 32, 1, 1}, -0.3, 0.3, DType::kFloat16),
                              b.weight("bias", {64}, 0, 8, DType::kFloat16)});
  ValueId r = b.node("Clip", {c}, {{"min", f32(0.f)}, {"max", f32(6.f)}});
  b.output(b.node("GlobalAveragePool", {r}));
  CaseOptions options;
  options.absent_ops_after_pipeline = {"Clip"};
  run_case(b.graph(), "conv16_head_relu6_pool", options);
}

// A squeeze-excitation gate (MobileNetV3): the Mul of the activation [N, H, W, C] by the pooled
// path's [N, 1, 1, C] runs channels_last as one broadcasting kernel (layout_nhwc's per-channel
// broadcast; the CPU tests check that no Transpose is left around it), with a different gate
// per image and channel.
TEST(GpuConvFp16, SqueezeExcitationGateChannelsLast) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 16, 9, 9}, DType::kFloat16);
  ValueId e = b.node("Conv", {x, b.weight("we", {32, 16, 1, 1}, -0.4, 0.4, DType::kFloat16)});
  ValueId p = b.node("GlobalAveragePool", {e});
  ValueId f1 = b.node("Conv", {p, b.weight("w1", {8, 32, 1, 1}, -0.5, 0.5, DType::kFloat16),
                               b.weight("b1", {8}, -0.2, 0.2, DType::kFloat16)});
  ValueId r = b.node("Relu", {f1});
  ValueId f2 = b.node("Conv", {r, b.weight("w2", {32, 8, 1, 1}, -1, 1, DType::kFloat16),
                               b.weight("b2", {32}, -1, 1, DType::kFloat16)});
  ValueId gate = b.node("HardSigmoid", {f2}, {{"alpha", f32(1.f / 6.f)}, {"beta", f32(0.5f)}});
  ValueId m = b.node("Mul", {e, gate});
  b.output(b.node("Conv", {m, b.weight("wp", {16, 32, 1, 1}, -0.4, 0.4, DType::kFloat16)}));
  CaseOptions options;
  options.expect_ops_after_pipeline = {"Mul"};
  run_case(b.graph(), "conv16_squeeze_excitation", options);
}

// NHWC global pooling with its rows cut into slices (templates/pool_global_nhwc.cu.in, then the
// _finish kernel through the scratch): EfficientNet-B0's first squeeze-excitation pool (32
// channels of 112 x 112, batch 4), a max pool of 24 channels, and a 7 x 7 pool of 1280 channels
// (one slice: no scratch), each after an fp16 1x1 conv so that they run channels_last (the scalar
// loads of a channel count that is not a multiple of 8: the CPU emulation, ConvNhwc tests).
TEST(GpuConvFp16, GlobalPoolChannelsLastInRowSlices) {
  AOTC_REQUIRE_GPU();
  auto pooled = [](Shape x, int64_t cout, const char* pool) {
    GraphBuilder b;
    ValueId xi = b.input("x", x, DType::kFloat16);
    ValueId c = b.node("Conv", {xi, b.weight("w", {cout, x[1], 1, 1}, -0.3, 0.3, DType::kFloat16),
                                b.weight("b", {cout}, -1, 1, DType::kFloat16)});
    b.output(b.node(pool, {b.node("Relu", {c})}));
    return b.graph();
  };
  CaseOptions split;
  split.expect_templates = {"pool_global_nhwc", "pool_global_nhwc_finish"};
  run_case(pooled({4, 16, 112, 112}, 32, "GlobalAveragePool"), "gap_nhwc_slices", split);
  run_case(pooled({2, 16, 40, 24}, 24, "GlobalMaxPool"), "gmp_nhwc_slices", split);
  CaseOptions one;
  one.expect_templates = {"pool_global_nhwc"};
  one.absent_templates = {"pool_global_nhwc_finish"};
  run_case(pooled({2, 320, 7, 7}, 1280, "GlobalAveragePool"), "gap_nhwc_head", one);
}

TEST(GpuConvFp16, DepthwiseStride2) {
  AOTC_REQUIRE_GPU();
  run_case(conv_fp16_graph({2, 24, 9, 10}, {24, 1, 3, 3},
                           {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"group", i64(24)}}, false, true),
           "conv16_dw");
}

// The depthwise tile kernel on MobileNet-like shapes: several tiles with partial edges (OW > 16:
// 8-column tiles), 96 and 144 channels (48-channel blocks), stride 1 and 2, a residual.
TEST(GpuConvFp16, DepthwiseTilesManyChannels) {
  AOTC_REQUIRE_GPU();
  run_case(conv_fp16_graph({3, 96, 29, 31}, {96, 1, 3, 3}, {{"pads", ints({1, 1, 1, 1})}, {"group", i64(96)}}, true, true),
           "conv16_dw96");
  run_case(conv_fp16_graph({2, 144, 30, 27}, {144, 1, 3, 3},
                           {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"group", i64(144)}}, false, true),
           "conv16_dw144_s2");
  run_case(conv_fp16_graph({1, 64, 14, 14}, {64, 1, 5, 5}, {{"pads", ints({2, 2, 2, 2})}, {"group", i64(64)}}, false, false),
           "conv16_dw64_5x5");
}

// opt/activation_into_depthwise: the SiLU after a cuBLASLt 1x1 expansion, and a Sigmoid after an
// Add (sigmoid(0) = 1/2: the padding must stay zero), applied by the depthwise kernel as it stages
// its input; EfficientNet-like shapes (96 and 144 channels, 3x3 and 5x5, stride 1 and 2). Planned
// for 2 SMs, so that these small grids pass the pass's four blocks an SM.
TEST(GpuConvFp16, DepthwiseInputActivation) {
  AOTC_REQUIRE_GPU();
  auto block = [](int64_t n, int64_t c, int64_t hw, int64_t k, int64_t stride, const char* act, bool add) {
    GraphBuilder b;
    ValueId x = b.input("x", {n, 16, hw, hw}, DType::kFloat16);
    ValueId e = b.node("Conv", {x, b.weight("we", {c, 16, 1, 1}, -0.4, 0.4, DType::kFloat16),
                                b.weight("be", {c}, -1, 1, DType::kFloat16)});
    if (add) e = b.node("Add", {e, e});
    ValueId a = std::string(act) == "Silu" ? b.node("Mul", {e, b.node("Sigmoid", {e})}) : b.node(act, {e});
    const int64_t p = k / 2;
    b.output(b.node("Conv", {a, b.weight("wd", {c, 1, k, k}, -0.5, 0.5, DType::kFloat16), b.weight("bd", {c}, -0.5, 0.5, DType::kFloat16)},
                    {{"group", i64(c)}, {"pads", ints({p, p, p, p})}, {"strides", ints({stride, stride})}}));
    return b.graph();
  };
  CaseOptions o;
  o.absent_ops_after_pipeline = {"Swish", "Sigmoid"};
  o.expect_templates = {"conv_depthwise_nhwc_tile"};
  o.sm_count = 2;
  run_case(block(2, 96, 28, 3, 1, "Silu", false), "dw_in_silu_96_3x3", o);
  run_case(block(4, 144, 15, 5, 2, "Silu", false), "dw_in_silu_144_5x5_s2", o);
  run_case(block(2, 96, 14, 3, 1, "Sigmoid", true), "dw_in_sigmoid_after_add", o);
}

Graph gemm_graph(Shape a, Shape bshape, Shape c, Attributes attrs, bool b_const) {
  GraphBuilder b;
  ValueId ai = b.input("a", a);
  ValueId bi = b_const ? b.weight("b", bshape) : b.input("b", bshape);
  std::vector<ValueId> ins = {ai, bi};
  if (!c.empty() || attrs.count("scalar_c")) ins.push_back(b.weight("c", c));
  attrs.erase("scalar_c");
  b.output(b.node("Gemm", ins, attrs));
  return b.graph();
}

TEST(GpuGemm, VectorBiasConstantB) {
  AOTC_REQUIRE_GPU();
  run_case(gemm_graph({7, 13}, {13, 67}, {67}, {}, true), "gemm_vector_bias");
}

TEST(GpuGemm, TransposesAlphaBetaMatrixC) {
  AOTC_REQUIRE_GPU();
  run_case(gemm_graph({13, 7}, {67, 13}, {7, 67},
                      {{"transA", i64(1)}, {"transB", i64(1)}, {"alpha", f32(0.5f)}, {"beta", f32(2.f)}}, false),
           "gemm_trans_alpha_beta");
}

TEST(GpuGemm, ColumnBiasAndScalarBias) {
  AOTC_REQUIRE_GPU();
  run_case(gemm_graph({5, 3}, {3, 1}, {5, 1}, {{"beta", f32(-1.5f)}}, false), "gemm_column_bias");
  run_case(gemm_graph({1, 31}, {31, 129}, {}, {{"scalar_c", i64(1)}}, true), "gemm_scalar_bias");
}

TEST(GpuGemm, NoBias) {
  AOTC_REQUIRE_GPU();
  run_case(gemm_graph({3, 65}, {65, 1}, {}, {{"transB", i64(0)}}, true), "gemm_no_bias");
}

TEST(GpuMatMul, BatchedBothRuntime) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.output(b.node("MatMul", {b.input("a", {3, 5, 17}), b.input("b", {3, 17, 11})}));
  run_case(b.graph(), "matmul_batched");
}

TEST(GpuMatMul, BroadcastConstantRightHandSide) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.output(b.node("MatMul", {b.input("a", {2, 3, 5, 67}), b.weight("w", {67, 1})}));
  run_case(b.graph(), "matmul_broadcast");
}

TEST(GpuMatMul, Plain2D) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.output(b.node("MatMul", {b.input("a", {1, 127}), b.input("b", {127, 65})}));
  run_case(b.graph(), "matmul_2d");
}

}  // namespace
}  // namespace aotc::gpu_test

namespace aotc::gpu_test {
namespace {

// A batch-1 CNN's head as one cluster kernel (--pool-gemm on: opt/fuse_pool_gemm, aotc.PoolGemm,
// templates/pool_gemv_cluster.cu.in): 1x1 conv + ReLU (or ReLU6, whose clamp clip_into_pool moves
// into the pool), GlobalAveragePool, Flatten, the classifier Gemm. ResNet-50's 2048 -> 1000 at 7x7,
// MobileNetV2's 1280 -> 37 classes with the ReLU6 (N not a multiple of the 8 columns a CTA), and
// a bf16 64 -> 5 (one cluster, most warps idle).
Graph pooled_head(int64_t c, int64_t n, DType t, bool relu6) {
  GraphBuilder b;
  b.graph().opset = 17;
  ValueId x = b.input("x", {1, 32, 7, 7}, t);
  ValueId e = b.node("Conv", {x, b.weight("w", {c, 32, 1, 1}, -0.3, 0.3, t), b.weight("b", {c}, -0.2, 1.0, t)});
  ValueId r = relu6 ? b.node("Clip", {e, b.weight("lo", {}, 0, 0, t), b.weight("hi", {}, 0.5, 0.5, t)}) : b.node("Relu", {e});
  ValueId f = b.node("Flatten", {b.node("GlobalAveragePool", {r})}, {{"axis", i64(1)}});
  b.output(b.node("Gemm", {f, b.weight("fc", {n, c}, -0.2, 0.2, t), b.weight("fb", {n}, -1.0, 1.0, t)}, {{"transB", i64(1)}}));
  Graph g = b.graph();
  g.target.pool_gemm = true;
  return g;
}

// Squeeze-excitation (EfficientNet's, MobileNetV3's): the global pool, a 1 x 1 conv over the
// pooled pixel + SiLU, a 1 x 1 conv back + Sigmoid, the channel scale. opt/pixel_conv_to_gemm
// turns both convs into Gemms where their channels are off the tensor-core alignment (28 and 10
// in 16 bits; 10 in fp32, whose alignment is 4): at batch 1 in 16 bits two gemv_rows kernels
// with the SiLU / Sigmoid inside (the expansion's K = 28 in element-wise rows), at batch 4 and
// in fp32 the GEMM paths; EfficientNet-B0's 672 -> 28 -> 672 at 7 x 7 and a 40 -> 10 -> 40.
// fp32's 672 -> 28 stays a convolution (the NHWC SIMT one) and is checked for its result.
Graph squeeze_excitation(int64_t batch, int64_t c, int64_t r, DType t) {
  GraphBuilder b;
  b.graph().opset = 17;
  ValueId x = b.input("x", {batch, c, 7, 7}, t);
  ValueId p = b.node("GlobalAveragePool", {x});
  ValueId s = b.node("Conv", {p, b.weight("w1", {r, c, 1, 1}, -0.3, 0.3, t), b.weight("b1", {r}, -0.5, 0.5, t)});
  ValueId a = b.node("Mul", {s, b.node("Sigmoid", {s})});
  ValueId e = b.node("Conv", {a, b.weight("w2", {c, r, 1, 1}, -0.5, 0.5, t), b.weight("b2", {c}, -0.5, 0.5, t)});
  b.output(b.node("Mul", {x, b.node("Sigmoid", {e})}));
  return b.graph();
}

TEST(GpuCnnHead, SqueezeExcitationConvsAsGemms) {
  AOTC_REQUIRE_GPU();
  CaseOptions o;
  o.absent_ops_after_pipeline = {"Conv", "FusedConv"};
  CaseOptions gemv = o;
  gemv.expect_templates = {"gemv_rows"};
  gemv.absent_ops_after_pipeline.push_back("Swish");  // inside the GEMV
  run_case(squeeze_excitation(1, 672, 28, DType::kFloat16), "se_b0_fp16_bs1", gemv);
  run_case(squeeze_excitation(1, 40, 10, DType::kFloat16), "se_small_fp16_bs1", gemv);
  run_case(squeeze_excitation(4, 672, 28, DType::kFloat16), "se_b0_fp16_bs4", o);
  run_case(squeeze_excitation(1, 40, 10, DType::kFloat32), "se_small_fp32_bs1", o);
  run_case(squeeze_excitation(4, 40, 10, DType::kFloat32), "se_small_fp32_bs4", o);
  run_case(squeeze_excitation(1, 672, 28, DType::kFloat32), "se_b0_fp32_bs1", CaseOptions{});
}

TEST(GpuCnnHead, PoolAndClassifierAsOneClusterKernel) {
  AOTC_REQUIRE_GPU();
  CaseOptions o;
  o.expect_ops_after_pipeline = {"PoolGemm"};
  o.absent_ops_after_pipeline = {"GlobalAveragePool"};
  o.expect_templates = {"pool_gemv_cluster"};
  run_case(pooled_head(2048, 1000, DType::kFloat16, false), "pool_gemm_resnet", o);
  run_case(pooled_head(1280, 37, DType::kFloat16, true), "pool_gemm_mobilenet_relu6", o);
  run_case(pooled_head(64, 5, DType::kBFloat16, false), "pool_gemm_bf16", o);
}

}  // namespace
}  // namespace aotc::gpu_test
