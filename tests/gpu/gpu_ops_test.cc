// GPU op tests for pools, Softmax (a long prime-length row), Concat, Transpose, binary
// broadcasting, BatchNormalization, the unary activations and views feeding a kernel.
#include "tests/gpu/gpu_harness.h"

namespace aotc::gpu_test {
namespace {

Graph unary(const std::string& op, Shape x, Attributes attrs = {}) {
  GraphBuilder b;
  b.output(b.node(op, {b.input("x", x)}, attrs));
  return b.graph();
}

TEST(GpuPool, MaxPoolStride2Pads) {
  AOTC_REQUIRE_GPU();
  run_case(unary("MaxPool", {1, 3, 17, 13},
                 {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}),
           "maxpool");
}

TEST(GpuPool, MaxPoolCeilModeDilation) {
  AOTC_REQUIRE_GPU();
  run_case(unary("MaxPool", {2, 5, 11, 10},
                 {{"kernel_shape", ints({2, 3})}, {"strides", ints({2, 2})}, {"ceil_mode", i64(1)},
                  {"dilations", ints({1, 2})}}),
           "maxpool_ceil");
}

TEST(GpuPool, AveragePoolPadsCountIncludePadBothWays) {
  AOTC_REQUIRE_GPU();
  for (int64_t include : {0, 1})
    run_case(unary("AveragePool", {1, 7, 13, 11},
                   {{"kernel_shape", ints({3, 2})}, {"strides", ints({2, 1})}, {"pads", ints({1, 0, 1, 1})},
                    {"count_include_pad", i64(include)}}),
             "avgpool_" + std::to_string(include));
}

TEST(GpuPool, GlobalAveragePool) {
  AOTC_REQUIRE_GPU();
  run_case(unary("GlobalAveragePool", {2, 67, 7, 11}), "global_avgpool");
}

TEST(GpuSoftmax, LongPrimeRow) {
  AOTC_REQUIRE_GPU();
  CaseOptions options;
  options.input_lo = -20;  // a wide range exercises the max subtraction
  options.input_hi = 20;
  run_case(unary("Softmax", {3, 4099}, {{"axis", i64(-1)}}), "softmax_4099", options);
}

TEST(GpuSoftmax, InnerAxisOfRank4) {
  AOTC_REQUIRE_GPU();
  run_case(unary("Softmax", {2, 5, 3, 7}, {{"axis", i64(1)}}), "softmax_axis1");
}

TEST(GpuConcat, ChannelsAndLeadingAxis) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.output(b.node("Concat", {b.input("a", {1, 3, 5}), b.input("b", {1, 1, 5}), b.input("c", {1, 7, 5})},
                  {{"axis", i64(1)}}));
  run_case(b.graph(), "concat_axis1");
  GraphBuilder b0;
  b0.output(b0.node("Concat", {b0.input("a", {2, 3}), b0.weight("w", {5, 3})}, {{"axis", i64(0)}}));
  run_case(b0.graph(), "concat_axis0_const");
}

TEST(GpuTranspose, Perms) {
  AOTC_REQUIRE_GPU();
  run_case(unary("Transpose", {2, 3, 5, 7}, {{"perm", ints({0, 3, 1, 2})}}), "transpose_nhwc");
  run_case(unary("Transpose", {67, 1, 13}, {{"perm", ints({2, 0, 1})}}), "transpose_201");
  run_case(unary("Transpose", {65, 33}), "transpose_default");
}

TEST(GpuBinary, BroadcastAddSubMul) {
  AOTC_REQUIRE_GPU();
  for (const char* op : {"Add", "Sub", "Mul"}) {
    GraphBuilder b;
    b.output(b.node(op, {b.input("a", {2, 3, 1, 7}), b.input("b", {5, 1})}));
    run_case(b.graph(), std::string("broadcast_") + op);
  }
  GraphBuilder s;
  s.output(s.node("Mul", {s.input("a", {1, 67, 3}), s.weight("k", {})}));
  run_case(s.graph(), "scalar_mul");
}

TEST(GpuBinary, DivByNonZero) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.output(b.node("Div", {b.input("a", {3, 1, 13}), b.weight("d", {1, 11, 1}, 0.5, 2.0)}));
  run_case(b.graph(), "div_broadcast");
}

TEST(GpuBatchNorm, Inference) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.output(b.node("BatchNormalization",
                  {b.input("x", {2, 5, 7, 3}), b.weight("scale", {5}), b.weight("bias", {5}),
                   b.weight("mean", {5}), b.weight("var", {5}, 0.1, 2.0)},
                  {{"epsilon", f32(1e-3f)}}));
  run_case(b.graph(), "batchnorm");
}

TEST(GpuUnary, ReluSigmoidClipOddSizes) {
  AOTC_REQUIRE_GPU();
  CaseOptions wide;
  wide.input_lo = -8;
  wide.input_hi = 8;
  run_case(unary("Relu", {1, 1031}), "relu", wide);
  run_case(unary("Sigmoid", {3, 5, 7}), "sigmoid", wide);
  run_case(unary("Clip", {257}, {{"min", f32(-0.25f)}, {"max", f32(0.75f)}}), "clip", wide);
}

TEST(GpuViews, ReshapeAndFlattenFeedAKernel) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 3, 5, 7});
  ValueId shape = b.graph().add_constant("shape", Tensor::from_int64s({2}, {6, 35}));
  ValueId r = b.node("Reshape", {x, shape});
  ValueId f = b.node("Flatten", {b.node("Relu", {r})}, {{"axis", i64(1)}});
  b.output(b.node("Sigmoid", {f}));
  run_case(b.graph(), "views");
}

// CausalConvWithState-27 (onnx 1.23 data): fp16 with bias, past state and SiLU (both outputs), fp32
// without the optional inputs and with k = 1 (an empty present_state).
TEST(GpuCausalConvWithState, BiasPastStateSiluAndKernelOne) {
  AOTC_REQUIRE_GPU();
  {
    GraphBuilder b;
    b.graph().opset = 27;
    const DType t = DType::kFloat16;
    ValueId x = b.input("x", {2, 64, 37}, t), past = b.input("past", {2, 64, 3}, t);
    ValueId w = b.weight("w", {64, 1, 4}, -0.5, 0.5, t), bias = b.weight("bias", {64}, -0.5, 0.5, t);
    std::vector<ValueId> outs =
        b.node_outputs("CausalConvWithState", {x, w, bias, past}, 2, {{"activation", Attribute::of_string("silu")}});
    b.output(outs[0]);
    b.output(outs[1]);
    run_case(b.graph(), "causal_conv_f16_silu_past");
  }
  {
    GraphBuilder b;
    b.graph().opset = 27;
    ValueId x = b.input("x", {3, 5, 11});
    std::vector<ValueId> outs = b.node_outputs("CausalConvWithState", {x, b.weight("w", {5, 1, 1})}, 2);
    b.output(outs[0]);
    run_case(b.graph(), "causal_conv_f32_k1");
  }
}

// LinearAttention-27 (onnx 1.23 data): gated_delta with grouped heads (8 query heads over 2 KV
// heads), per-key-dim decay and a past state in fp16; linear in fp32 without past, T = 1; delta
// with one beta for all heads and d_k != d_v.
TEST(GpuLinearAttention, RulesGroupsAndStates) {
  AOTC_REQUIRE_GPU();
  {
    GraphBuilder b;
    b.graph().opset = 27;
    const DType t = DType::kFloat16;
    const int64_t batch = 2, len = 9, hq = 8, hkv = 2, dk = 16, dv = 32;
    ValueId q = b.input("q", {batch, len, hq * dk}, t), k = b.input("k", {batch, len, hkv * dk}, t),
            v = b.input("v", {batch, len, hkv * dv}, t), past = b.input("past", {batch, hkv, dk, dv}, t);
    ValueId decay = b.weight("decay", {batch, len, hkv * dk}, -0.3, 0.0, t);
    ValueId beta = b.weight("beta", {batch, len, hkv}, 0.1, 0.9, t);
    std::vector<ValueId> outs = b.node_outputs("LinearAttention", {q, k, v, past, decay, beta}, 2,
                                               {{"q_num_heads", i64(hq)}, {"kv_num_heads", i64(hkv)}});
    b.output(outs[0]);
    b.output(outs[1]);
    run_case(b.graph(), "linear_attention_f16_gated_delta_gqa");
  }
  {
    GraphBuilder b;
    b.graph().opset = 27;
    ValueId q = b.input("q", {3, 1, 4 * 8}), k = b.input("k", {3, 1, 4 * 8}), v = b.input("v", {3, 1, 4 * 8});
    std::vector<ValueId> outs = b.node_outputs(
        "LinearAttention", {q, k, v}, 2,
        {{"q_num_heads", i64(4)}, {"kv_num_heads", i64(4)}, {"update_rule", Attribute::of_string("linear")}});
    b.output(outs[0]);
    b.output(outs[1]);
    run_case(b.graph(), "linear_attention_f32_linear_t1");
  }
  {
    GraphBuilder b;
    b.graph().opset = 27;
    const int64_t batch = 1, len = 6, h = 3, dk = 8, dv = 12;
    ValueId q = b.input("q", {batch, len, h * dk}), k = b.input("k", {batch, len, h * dk}),
            v = b.input("v", {batch, len, h * dv});
    ValueId beta = b.weight("beta", {batch, len, 1}, 0.2, 0.8);
    ValueId none = kNoValue;
    std::vector<ValueId> outs = b.node_outputs(
        "LinearAttention", {q, k, v, none, none, beta}, 2,
        {{"q_num_heads", i64(h)}, {"kv_num_heads", i64(h)}, {"update_rule", Attribute::of_string("delta")},
         {"scale", f32(0.5f)}});
    b.output(outs[0]);
    run_case(b.graph(), "linear_attention_f32_delta_shared_beta");
  }
}

// TensorScatter-24: a [2, 3, 16, 8] fp16 cache updated at positions 14.. (circular: wraps to 0..)
// and -2.. (linear: the writes before 0 dropped) of the sequence axis.
TEST(GpuTensorScatter, LinearAndCircular) {
  AOTC_REQUIRE_GPU();
  for (const char* mode : {"circular", "linear"}) {
    GraphBuilder b;
    b.graph().opset = 24;
    const DType t = DType::kFloat16;
    ValueId past = b.input("past", {2, 3, 16, 8}, t), update = b.input("update", {2, 3, 5, 8}, t);
    ValueId where = b.graph().add_constant("where", Tensor::from_int64s({2}, {14, -2}));
    b.output(b.node("TensorScatter", {past, update, where}, {{"mode", Attribute::of_string(mode)}}));
    run_case(b.graph(), std::string("tensor_scatter_") + mode);
  }
}

// DeformConv-22: 2 groups over 4 input channels, 2 offset groups, stride 2, dilation 2, padding,
// offsets up to +-2.5 pixels (taps leave the input: zero there), mask and bias; fp16 and fp32.
TEST(GpuDeformConv, GroupsOffsetGroupsMaskBias) {
  AOTC_REQUIRE_GPU();
  for (DType t : {DType::kFloat16, DType::kFloat32}) {
    GraphBuilder b;
    b.graph().opset = 22;
    const int64_t n = 2, c = 4, h = 11, w = 9, oc = 6, k = 3, og = 2;
    const int64_t oh = (h + 2 - ((k - 1) * 2 + 1)) / 2 + 1, ow = (w + 2 - ((k - 1) * 2 + 1)) / 2 + 1;
    ValueId x = b.input("x", {n, c, h, w}, t);
    ValueId off = b.input("offset", {n, og * k * k * 2, oh, ow}, t);
    ValueId mask = b.input("mask", {n, og * k * k, oh, ow}, t);
    ValueId wt = b.weight("w", {oc, c / 2, k, k}, -0.5, 0.5, t), bias = b.weight("b", {oc}, -0.5, 0.5, t);
    ValueId scaled = b.node("Mul", {off, b.weight("spread", {}, 2.5, 2.5, t)});
    b.output(b.node("DeformConv", {x, wt, scaled, bias, mask},
                    {{"group", i64(2)}, {"offset_group", i64(og)}, {"strides", ints({2, 2})},
                     {"dilations", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({k, k})}}));
    run_case(b.graph(), std::string("deform_conv_") + dtype_name(t));
  }
}

// Volumetric GridSample-20 ([N, C, D, H, W], grid [N, Do, Ho, Wo, 3]): linear with zero padding and
// align_corners 0, nearest with reflection and align_corners 1, linear with border; the grid
// reaches past [-1, 1] so every padding rule is exercised.
TEST(GpuGridSample, Volumetric) {
  AOTC_REQUIRE_GPU();
  struct Case { const char* mode; const char* pad; int64_t align; };
  for (const Case& c : {Case{"linear", "zeros", 0}, Case{"nearest", "reflection", 1}, Case{"linear", "border", 0}}) {
    GraphBuilder b;
    b.graph().opset = 20;
    ValueId x = b.input("x", {2, 3, 4, 5, 6}), grid = b.input("grid", {2, 3, 4, 5, 3});
    ValueId wide = b.node("Mul", {grid, b.weight("spread", {}, 1.3, 1.3)});
    b.output(b.node("GridSample", {x, wide},
                    {{"mode", Attribute::of_string(c.mode)}, {"padding_mode", Attribute::of_string(c.pad)},
                     {"align_corners", i64(c.align)}}));
    run_case(b.graph(), std::string("grid_sample_3d_") + c.mode + "_" + c.pad);
  }
}

}  // namespace
}  // namespace aotc::gpu_test
