// layout_nhwc: conv chains move to channels_last with KRSC weights, transposes only at the edges,
// small input channels padded, pooling and elementwise ops follow (16-bit and fp32 chains);
// checked against the CPU reference of the NCHW graph, and where it must not fire (no Sm80
// target, fp32 with --conv-fp32 nchw, fp64, unaligned fp32 channels, windows past 32, grouped
// convolutions, per-channel broadcasts).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/layout.h"
#include "ir/ops/conv_configs.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

const char* kResidualBlock = R"(
    input %x : float16[2x3x10x10]
    const %w1 : float16[16x3x3x3] = random(1)
    const %b1 : float16[16] = random(2)
    const %w2 : float16[16x16x3x3] = random(3)
    const %w3 : float16[16x1x3x3] = random(4)
    %c1 : float16[?] = Conv(%x, %w1, %b1) {pads=[1,1,1,1]}  # conv1
    %r1 : float16[?] = Relu(%c1)  # relu1
    %p1 : float16[?] = MaxPool(%r1) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}  # pool
    %c2 : float16[?] = Conv(%p1, %w2) {pads=[1,1,1,1]}  # conv2
    %s : float16[?] = Add(%c2, %p1)  # add
    %d : float16[?] = Conv(%s, %w3) {group=16, pads=[1,1,1,1]}  # dw
    %g : float16[?] = GlobalAveragePool(%d)  # gap
    %y : float16[?] = Flatten(%g)  # flatten
    output %y
  )";

TEST(LayoutNhwc, ChainRunsChannelsLastWithTransposesOnlyAtTheEdges) {
  AOTC_BUILD(g, kResidualBlock);
  Graph before = g;
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  // One pack in (transpose + the C = 3 input padded to 8), a view (Reshape) back to NCHW after the
  // global pool ([N,1,1,C] and [N,C,1,1] share their bytes).
  EXPECT_EQ(op_list(g), "aotc.PackNhwc,Conv,Relu,MaxPool,Conv,Add,Conv,GlobalAveragePool,Reshape,Flatten");
  for (const Node& n : g.nodes) {
    if (n.op_type == "Conv" || n.op_type == "MaxPool" || n.op_type == "GlobalAveragePool") {
      EXPECT_TRUE(channels_last(n)) << n.name;
    }
  }
  // conv1 (C = 3 -> 16) is a stem for the direct stem kernel: C padded to 4 (8-byte pixels).
  const Node& conv1 = g.nodes[1];
  EXPECT_EQ(g.value(conv1.inputs[0]).shape, (Shape{2, 10, 10, 4}));
  EXPECT_EQ(g.value(conv1.inputs[1]).shape, (Shape{16, 3, 3, 4}));  // KRSC, padded C
  EXPECT_EQ(g.value(conv1.outputs[0]).shape, (Shape{2, 10, 10, 16}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 2.5e-3, 1e-3));
}

// Without the stem kernel (--conv-stem cutlass) the same conv pads C to the tensor cores' 8.
TEST(LayoutNhwc, StemPadsToEightChannelsWithoutTheStemKernel) {
  AOTC_BUILD(g, kResidualBlock);
  g.target.conv_stem_kernel = false;
  Graph before = g;
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.PackNhwc,Conv,Relu,MaxPool,Conv,Add,Conv,GlobalAveragePool,Reshape,Flatten");
  const Node& conv1 = g.nodes[1];
  EXPECT_EQ(g.value(conv1.inputs[0]).shape, (Shape{2, 10, 10, 8}));
  EXPECT_EQ(g.value(conv1.inputs[1]).shape, (Shape{16, 3, 3, 8}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 2.5e-3, 1e-3));
}

TEST(LayoutNhwc, ValueReadInBothLayoutsIsTransposedBackOnce) {
  AOTC_BUILD(g, R"(
    input %x : float16[1x8x6x6]
    const %w : float16[8x8x1x1] = random(1)
    %c : float16[?] = Conv(%x, %w)  # conv
    %t : float16[?] = Transpose(%c) {perm=[0,1,3,2]}  # t1
    %u : float16[?] = ReduceMax(%c) {keepdims=1}  # rmax
    output %t
    output %u
  )");
  Graph before = g;
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Transpose,Conv,Transpose,Transpose,ReduceMax");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 2.5e-3, 1e-3));
}

TEST(LayoutNhwc, InputCastFoldsIntoThePack) {
  AOTC_BUILD(g, R"(
    input %x : float[2x3x8x8]
    const %w : float16[16x3x3x3] = random(1)
    %h : float16[?] = Cast(%x) {to=10}  # in_cast
    %y : float16[?] = Conv(%h, %w) {pads=[1,1,1,1]}  # conv
    output %y
  )");
  Graph before = g;
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.PackNhwc,Conv,Transpose");
  EXPECT_EQ(g.nodes[0].inputs[0], g.find_value("x"));  // reads the float input directly
  EXPECT_EQ(g.value(g.nodes[0].outputs[0]).dtype, DType::kFloat16);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3));
}

TEST(LayoutNhwc, CastReadTwiceStays) {
  AOTC_BUILD(g, R"(
    input %x : float[1x3x8x8]
    const %w : float16[8x3x1x1] = random(1)
    %h : float16[?] = Cast(%x) {to=10}  # in_cast
    %y : float16[?] = Conv(%h, %w)  # conv
    %z : float16[?] = Relu(%h)  # relu
    output %y
    output %z
  )");
  Graph before = g;
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  // The Cast stays for the NCHW Relu; the pack reads its fp16 output; conv's output goes back to
  // NCHW for the graph output, after the nodes that follow it.
  EXPECT_EQ(op_list(g), "Cast,aotc.PackNhwc,Conv,Relu,Transpose");
  EXPECT_EQ(g.nodes[1].inputs[0], g.find_value("h"));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 9, 2.5e-3, 1e-3));
}

// Without the stem kernel (--conv-stem cutlass), a stride-2 stem with 3 channels (ResNet's 7x7/2,
// pads 3; odd sizes and an asymmetric end pad here) reads a space-to-depth packing: 2x2 blocks -> 12 channels padded to 16, and a stride-1
// ceil(7/2) = 4 x 4 window; the outputs match the NCHW graph.
TEST(LayoutNhwc, StridedStemBecomesSpaceToDepth) {
  AOTC_BUILD(g, R"(
    input %x : float[2x3x17x14]
    const %w : float16[8x3x7x7] = random(1)
    const %b : float16[8] = random(2)
    %h : float16[?] = Cast(%x) {to=10}  # in_cast
    %y : float16[?] = Conv(%h, %w, %b) {strides=[2,2], pads=[3,3,2,3]}  # stem
    output %y
  )");
  g.target.conv_stem_kernel = false;  // the space-to-depth + CUTLASS path (--conv-stem cutlass)
  Graph before = g;
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.PackNhwc,Conv,Transpose");
  const Node& pack = g.nodes[0];
  const Node& conv = g.nodes[1];
  EXPECT_EQ(pack.inputs[0], g.find_value("x"));
  EXPECT_EQ(pack.attr_int("block", 1), 2);
  EXPECT_EQ(pack.attr_ints("pads"), (std::vector<int64_t>{3, 3}));
  // Output 8 x 7 (floor((17+5-7)/2)+1, floor((14+6-7)/2)+1); packed rows 8+4-1, columns 7+4-1.
  EXPECT_EQ(g.value(pack.outputs[0]).shape, (Shape{2, 11, 10, 16}));
  EXPECT_EQ(g.value(conv.inputs[1]).shape, (Shape{8, 4, 4, 16}));
  EXPECT_EQ(conv.attr_ints("strides"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(conv.attr_ints("pads"), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(g.value(conv.outputs[0]).shape, (Shape{2, 8, 7, 8}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 11, 2.5e-3, 1e-3));
}

// With 16 output channels the same stem takes the direct stem kernel (conv_stem_applies): a plain
// pack to 4 channels, the 7x7/2 window unchanged; a residual input keeps the space-to-depth path.
TEST(LayoutNhwc, StemWithSixteenOutputsPacksFourChannelsForTheStemKernel) {
  AOTC_BUILD(g, R"(
    input %x : float[2x3x17x14]
    const %w : float16[16x3x7x7] = random(1)
    const %b : float16[16] = random(2)
    %h : float16[?] = Cast(%x) {to=10}  # in_cast
    %y : float16[?] = Conv(%h, %w, %b) {strides=[2,2], pads=[3,3,2,3]}  # stem
    output %y
  )");
  Graph before = g;
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.PackNhwc,Conv,Transpose");
  const Node& pack = g.nodes[0];
  const Node& conv = g.nodes[1];
  EXPECT_FALSE(pack.has_attr("block"));
  EXPECT_EQ(g.value(pack.outputs[0]).shape, (Shape{2, 17, 14, 4}));
  EXPECT_EQ(g.value(conv.inputs[1]).shape, (Shape{16, 7, 7, 4}));
  EXPECT_EQ(conv.attr_ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 11, 2.5e-3, 1e-3));

  AOTC_BUILD(r, R"(
    input %x : float16[1x3x16x16]
    input %res : float16[1x16x8x8]
    const %w : float16[16x3x7x7] = random(1)
    %c : float16[?] = Conv(%x, %w) {strides=[2,2], pads=[3,3,3,3]}  # stem
    %y : float16[?] = Add(%c, %res)  # add
    output %y
  )");
  ASSERT_TRUE(fuse_epilogue(r).is_ok());
  ASSERT_TRUE(layout_nhwc(r).is_ok());
  EXPECT_EQ(r.nodes[0].attr_int("block", 1), 2) << "a stem with a residual is not the stem kernel's";
}

// Must not fire: stride 1, a dilated stride-2 stem, and C = 5 (20 channels would exceed 16) keep the
// plain channel padding to 8.
TEST(LayoutNhwc, SpaceToDepthOnlyForStride2SmallChannelStems) {
  for (const char* conv : {"Conv(%x, %w) {pads=[3,3,3,3]}", "Conv(%x, %w) {strides=[2,2], dilations=[2,2]}"}) {
    AOTC_BUILD(g, std::string(R"(
      input %x : float16[1x3x16x16]
      const %w : float16[8x3x7x7] = random(1)
      %y : float16[?] = )") + conv + R"(  # stem
      output %y
    )");
    g.target.conv_stem_kernel = false;
    Graph before = g;
    ASSERT_TRUE(layout_nhwc(g).is_ok());
    EXPECT_EQ(op_list(g), "aotc.PackNhwc,Conv,Transpose") << conv;
    EXPECT_FALSE(g.nodes[0].has_attr("block")) << conv;
    EXPECT_EQ(g.value(g.nodes[0].outputs[0]).shape[3], 8) << conv;
    EXPECT_TRUE(testing_util::same_outputs(before, g, 12, 2.5e-3, 1e-3)) << conv;
  }
  AOTC_BUILD(g, R"(
    input %x : float16[1x5x16x16]
    const %w : float16[8x5x7x7] = random(1)
    %y : float16[?] = Conv(%x, %w) {strides=[2,2]}  # stem
    output %y
  )");
  g.target.conv_stem_kernel = false;
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  EXPECT_FALSE(g.nodes[0].has_attr("block"));
  EXPECT_EQ(g.value(g.nodes[0].outputs[0]).shape[3], 8);
}

// The residual block in fp32: the same chain, the stem's 3 channels padded to 4 (16 bytes of
// fp32), results equal to the NCHW graph's at the fp32 tolerance.
TEST(LayoutNhwc, Fp32ChainRunsChannelsLast) {
  std::string text = kResidualBlock;
  for (size_t at = text.find("float16"); at != std::string::npos; at = text.find("float16", at)) text.replace(at, 7, "float");
  AOTC_BUILD(g, text);
  Graph before = g;
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.PackNhwc,Conv,Relu,MaxPool,Conv,Add,Conv,GlobalAveragePool,Reshape,Flatten");
  for (const Node& n : g.nodes)
    if (n.op_type == "Conv" || n.op_type == "MaxPool" || n.op_type == "GlobalAveragePool") {
      EXPECT_TRUE(channels_last(n)) << n.name;
    }
  const Node& conv1 = g.nodes[1];
  EXPECT_EQ(g.value(conv1.inputs[0]).shape, (Shape{2, 10, 10, 4}));
  EXPECT_EQ(g.value(conv1.inputs[1]).shape, (Shape{16, 3, 3, 4}));  // KRSC, padded C
  EXPECT_EQ(g.value(conv1.inputs[0]).dtype, DType::kFloat32);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 1e-5, 1e-4));
}

// The fp32 stride-2 RGB stem reads the space-to-depth packing too: 2x2 blocks of 3 channels are
// 12 channels, already a multiple of 4 (16-bit pads them to 16).
TEST(LayoutNhwc, Fp32StridedStemBecomesSpaceToDepthWithTwelveChannels) {
  AOTC_BUILD(g, R"(
    input %x : float[2x3x17x14]
    const %w : float[8x3x7x7] = random(1)
    const %b : float[8] = random(2)
    %y : float[?] = Conv(%x, %w, %b) {strides=[2,2], pads=[3,3,2,3]}  # stem
    output %y
  )");
  Graph before = g;
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.PackNhwc,Conv,Transpose");
  EXPECT_EQ(g.nodes[0].attr_int("block", 1), 2);
  EXPECT_EQ(g.value(g.nodes[0].outputs[0]).shape, (Shape{2, 11, 10, 12}));
  EXPECT_EQ(g.value(g.nodes[1].inputs[1]).shape, (Shape{8, 4, 4, 12}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 11, 1e-5, 1e-4));
}

// Must not fire: fp32 with the switch off (--conv-fp32 nchw), fp64 (no NHWC kernels), fp32
// channels that are not a multiple of 4 (and not a small stem), a window past CUTLASS's 32.
TEST(LayoutNhwc, Fp32MustNotFireWhenOffUnalignedOrTooWide) {
  struct Case {
    std::string label, dtype, c, k, hw;
    bool switch_on;
  };
  for (const Case& c : {Case{"switch off", "float", "8", "3", "6", false}, Case{"fp64", "double", "8", "3", "6", true},
                        Case{"C 6", "float", "6", "3", "6", true}, Case{"window 33", "float", "8", "33", "40", true}}) {
    const std::string text = "input %x : " + c.dtype + "[1x" + c.c + "x" + c.hw + "x" + c.hw + "]\n" +
                             "const %w : " + c.dtype + "[8x" + c.c + "x" + c.k + "x" + c.k + "] = random(1)\n" +
                             "%y : " + c.dtype + "[?] = Conv(%x, %w) {pads=[1,1,1,1]}  # conv\n" + "output %y\n";
    AOTC_BUILD(g, text);
    g.target.conv_fp32_nhwc = c.switch_on;
    auto changed = layout_nhwc(g);
    ASSERT_TRUE(changed.is_ok()) << c.label;
    EXPECT_FALSE(*changed) << c.label;
    EXPECT_EQ(op_list(g), "Conv") << c.label;
  }
}

// A depthwise fp32 conv after an fp32 chain follows it into NHWC; one that starts a graph does not
// (it alone does not pay for the transposes), as for 16-bit.
TEST(LayoutNhwc, Fp32DepthwiseFollowsAChainOnly) {
  AOTC_BUILD(g, R"(
    input %x : float[1x8x6x6]
    const %wd : float[8x1x3x3] = random(1)
    %y : float[?] = Conv(%x, %wd) {group=8, pads=[1,1,1,1]}  # dw_alone
    output %y
  )");
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  AOTC_BUILD(h, R"(
    input %x : float[1x8x6x6]
    const %w : float[16x8x1x1] = random(1)
    const %wd : float[16x1x3x3] = random(2)
    %c : float[?] = Conv(%x, %w)  # pw
    %y : float[?] = Conv(%c, %wd) {group=16, pads=[1,1,1,1]}  # dw
    output %y
  )");
  Graph before = h;
  ASSERT_TRUE(layout_nhwc(h).is_ok());
  ASSERT_TRUE(verify(h).is_ok());
  EXPECT_EQ(op_list(h), "Transpose,Conv,Conv,Transpose");
  EXPECT_TRUE(channels_last(h.nodes[2]));
  EXPECT_TRUE(testing_util::same_outputs(before, h, 13, 1e-5, 1e-4));
}

TEST(LayoutNhwc, TargetWithoutTensorCoresDoesNotFire) {
  AOTC_BUILD(g, kResidualBlock);
  g.target.sms = {75};
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
}

TEST(LayoutNhwc, GroupedConvAndChannelBroadcastStayNchw) {
  AOTC_BUILD(g, R"(
    input %x : float16[1x16x6x6]
    const %w : float16[16x8x3x3] = random(1)
    const %s : float16[1x16x1x1] = random(2)
    %c : float16[?] = Conv(%x, %w) {group=2, pads=[1,1,1,1]}  # grouped
    %y : float16[?] = Mul(%c, %s)  # scale
    output %y
  )");
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(op_list(g), "Conv,Mul");
}

// A squeeze-excitation block (MobileNetV3 / EfficientNet): the scale [N, C, 1, 1] comes from the
// pooled path, which runs NHWC as [N, 1, 1, C] (the same bytes), so the Mul reads it as it is and
// the block has no Transpose (it had two, around the Mul, before per-channel broadcasts followed).
TEST(LayoutNhwc, SqueezeExcitationScaleKeepsTheChainChannelsLast) {
  AOTC_BUILD(g, R"(
    input %x : float16[2x16x6x6]
    const %we : float16[32x16x1x1] = random(1)
    const %wd : float16[32x1x3x3] = random(2)
    const %w1 : float16[8x32x1x1] = random(3)
    const %w2 : float16[32x8x1x1] = random(4)
    const %wp : float16[16x32x1x1] = random(5)
    %e : float16[?] = Conv(%x, %we)  # expand
    %eh : float16[?] = HardSwish(%e)  # hs1
    %d : float16[?] = Conv(%eh, %wd) {group=32, pads=[1,1,1,1]}  # dw
    %p : float16[?] = GlobalAveragePool(%d)  # squeeze
    %f1 : float16[?] = Conv(%p, %w1)  # fc1
    %r1 : float16[?] = Relu(%f1)  # relu
    %f2 : float16[?] = Conv(%r1, %w2)  # fc2
    %s : float16[?] = HardSigmoid(%f2) {alpha=0.1666667, beta=0.5}  # gate
    %m : float16[?] = Mul(%d, %s)  # excite
    %y : float16[?] = Conv(%m, %wp)  # project
    output %y
  )");
  Graph before = g;
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Transpose,Conv,HardSwish,Conv,GlobalAveragePool,Conv,Relu,Conv,HardSigmoid,Mul,Conv,Transpose");
  for (const Node& n : g.nodes) {
    if (n.op_type != "Mul") continue;
    EXPECT_EQ(g.value(n.inputs[0]).shape, (Shape{2, 6, 6, 32}));
    EXPECT_EQ(g.value(n.inputs[1]).shape, (Shape{2, 1, 1, 32}));
    EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{2, 6, 6, 32}));
  }
  EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 2.5e-3, 1e-3));
}

// Every Concat of `g` runs along `axis`.
void expect_concat_axis(const Graph& g, int64_t axis) {
  for (const Node& n : g.nodes) {
    if (n.op_type == "Concat") {
      EXPECT_EQ(n.attr_int("axis", 0), axis) << op_list(g);
    }
  }
}

// layout_nhwc on `text`: its Concat keeps `axis` (it did not move to NHWC; along another axis than
// C its inputs go back to NCHW, a Transpose right before it) and the outputs are the original
// graph's.
void expect_concat_stays(const std::string& text, int64_t axis) {
  AOTC_BUILD(g, text);
  Graph before = g;
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  expect_concat_axis(g, axis);
  if (axis != 1) {
    EXPECT_NE(op_list(g).find("Transpose,Concat"), std::string::npos) << op_list(g);
  }
  EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 2.5e-3, 1e-3));
}

// An Inception-style block: three branches (1x1, 3x3, a max pool then 1x1) joined by a Concat along
// C, read by the next conv: the Concat runs along NHWC's last axis (axis 3), no Transpose around
// it; DenseNet's BatchNormalization and Relu after its Concat follow channels-last. Must not fire:
// a Concat along H (its inputs go back to NCHW), one read by an NCHW op (a Softmax over C), or one
// with an input that has no NHWC form (a grouped convolution's output: NCHW).
TEST(LayoutNhwc, ChannelConcatOfBranchesStaysChannelsLast) {
  const std::string block = R"(
    input %x : float16[2x16x7x9]
    const %wa : float16[16x16x1x1] = random(1)
    const %wb : float16[8x16x3x3] = random(2)
    const %wc : float16[24x16x1x1] = random(3)
    const %wn : float16[16x48x1x1] = random(4)
    const %w0 : float16[16x16x1x1] = random(5)
    %x0 : float16[?] = Conv(%x, %w0)  # stem
    %a : float16[?] = Conv(%x0, %wa)  # branch_a
    %b : float16[?] = Conv(%x0, %wb) {pads=[1,1,1,1]}  # branch_b
    %p : float16[?] = MaxPool(%x0) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]}  # pool
    %c : float16[?] = Conv(%p, %wc)  # branch_c
    %cat : float16[?] = Concat(%a, %b, %c) {axis=AXIS}  # concat
    %y : float16[?] = Conv(%cat, %wn)  # next
    output %y
  )";
  auto with_axis = [&](const std::string& axis) {
    std::string t = block;
    t.replace(t.find("AXIS"), 4, axis);
    return t;
  };
  for (const char* axis : {"1", "-3"}) {
    SCOPED_TRACE(std::string("axis ") + axis);
    AOTC_BUILD(g, with_axis(axis));
    Graph before = g;
    auto changed = layout_nhwc(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(op_list(g), "Transpose,Conv,Conv,Conv,MaxPool,Conv,Concat,Conv,Transpose");
    for (const Node& n : g.nodes) {
      if (n.op_type != "Concat") continue;
      EXPECT_EQ(n.attr_int("axis", 0), 3);
      EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{2, 7, 9, 48}));
    }
    EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 2.5e-3, 1e-3));
  }
  {
    SCOPED_TRACE("along H");
    expect_concat_stays(R"(
      input %x : float16[2x16x7x9]
      const %wa : float16[16x16x1x1] = random(1)
      const %wb : float16[16x16x3x3] = random(2)
      const %wn : float16[16x16x1x1] = random(4)
      %a : float16[?] = Conv(%x, %wa)  # branch_a
      %b : float16[?] = Conv(%x, %wb) {pads=[1,1,1,1]}  # branch_b
      %cat : float16[?] = Concat(%a, %b) {axis=2}  # concat
      %y : float16[?] = Conv(%cat, %wn)  # next
      output %y
    )", 2);
  }
  {
    SCOPED_TRACE("DenseNet: BatchNormalization and Relu after the Concat follow it channels-last");
    AOTC_BUILD(g, R"(
      input %x : float16[2x16x7x9]
      const %wa : float16[16x16x1x1] = random(1)
      const %wb : float16[16x16x3x3] = random(2)
      const %s : float16[32] = random(3)
      const %bb : float16[32] = random(4)
      const %m : float16[32] = random(5)
      const %v : float16[32] = [1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3]
      const %wn : float16[16x32x1x1] = random(6)
      %a : float16[?] = Conv(%x, %wa)  # branch_a
      %b : float16[?] = Conv(%x, %wb) {pads=[1,1,1,1]}  # branch_b
      %cat : float16[?] = Concat(%a, %b) {axis=1}  # concat
      %n : float16[?] = BatchNormalization(%cat, %s, %bb, %m, %v)  # norm
      %r : float16[?] = Relu(%n)  # relu
      %y : float16[?] = Conv(%r, %wn)  # next
      output %y
    )");
    Graph before = g;
    ASSERT_TRUE(layout_nhwc(g).is_ok());
    EXPECT_EQ(op_list(g), "Transpose,Conv,Conv,Concat,BatchNormalization,Relu,Conv,Transpose");
    expect_concat_axis(g, 3);
    for (const Node& n : g.nodes) {
      if (n.op_type == "BatchNormalization") {
        EXPECT_TRUE(channels_last(n));
        EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{2, 7, 9, 32}));
      }
    }
    EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 2.5e-3, 1e-3));
  }
  {
    SCOPED_TRACE("read by an NCHW op (a Softmax over the channels)");
    expect_concat_stays(R"(
      input %x : float16[2x16x7x9]
      const %wa : float16[16x16x1x1] = random(1)
      const %wb : float16[16x16x3x3] = random(2)
      %a : float16[?] = Conv(%x, %wa)  # branch_a
      %b : float16[?] = Conv(%x, %wb) {pads=[1,1,1,1]}  # branch_b
      %cat : float16[?] = Concat(%a, %b) {axis=1}  # concat
      %y : float16[?] = Softmax(%cat) {axis=1}  # softmax
      output %y
    )", 1);
  }
  {
    SCOPED_TRACE("an input without an NHWC form (a grouped conv stays NCHW)");
    expect_concat_stays(R"(
      input %x : float16[2x16x7x9]
      const %wa : float16[16x16x1x1] = random(1)
      const %wg : float16[16x8x3x3] = random(2)
      const %wn : float16[16x32x1x1] = random(4)
      %a : float16[?] = Conv(%x, %wa)  # branch_a
      %gc : float16[?] = Conv(%x, %wg) {group=2, pads=[1,1,1,1]}  # grouped
      %cat : float16[?] = Concat(%a, %gc) {axis=1}  # concat
      %y : float16[?] = Conv(%cat, %wn)  # next
      output %y
    )", 1);
  }
}

// Per-channel operands that no NHWC node wrote: constants of rank 3 and 4 are reshaped at compile
// time, an NCHW activation [N, C, 1, 1] is read through a Reshape view; a broadcast along H or W
// ([1, C, 6, 1]) has other bytes in NHWC order, so that Mul stays NCHW between transposes.
TEST(LayoutNhwc, PerChannelBroadcastOperandsFollowOthersDoNot) {
  AOTC_BUILD(g, R"(
    input %x : float16[2x16x6x6]
    input %t : float16[2x16x1x1]
    const %w : float16[16x16x3x3] = random(1)
    const %w2 : float16[16x16x1x1] = random(2)
    const %slope : float16[16x1x1] = random(3)
    const %bias : float16[1x16x1x1] = random(4)
    const %rows : float16[1x16x6x1] = random(5)
    %c : float16[?] = Conv(%x, %w) {pads=[1,1,1,1]}  # conv
    %a : float16[?] = PRelu(%c, %slope)  # prelu
    %b : float16[?] = Add(%a, %bias)  # addbias
    %m : float16[?] = Mul(%b, %t)  # scale_by_input
    %c2 : float16[?] = Conv(%m, %w2)  # conv2
    %h : float16[?] = Mul(%c2, %rows)  # by_rows
    output %h
  )");
  Graph before = g;
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Transpose,Conv,PRelu,Add,Reshape,Mul,Conv,Transpose,Mul");
  for (const Node& n : g.nodes) {
    if (n.op_type == "PRelu" || n.op_type == "Add") {
      EXPECT_EQ(g.value(n.inputs[1]).shape, (Shape{1, 1, 1, 16})) << n.name;
    }
    if (n.op_type == "Reshape") {
      EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{2, 1, 1, 16}));
    }
  }
  const Node& last = g.nodes.back();
  EXPECT_EQ(g.value(last.inputs[1]).shape, (Shape{1, 16, 6, 1}));  // NCHW, as declared
  EXPECT_TRUE(testing_util::same_outputs(before, g, 11, 2.5e-3, 1e-3));
}

// int8 (measured per convolution on ResNet-50 bs32, H100): 128x64 where 128-row tiles give half a
// wave by themselves (layers 1-2), 64x128 where they do not (layer3: M = 32*14*14, layer4: 32*7*7).
TEST(LayoutNhwc, Int8ConfigRuleFollowsTheMeasurement) {
  Target t;  // 132 SMs
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kTensorOpInt8, 32 * 56 * 56, 256).name, "i8tc128x64x64_w64x32_s4");
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kTensorOpInt8, 32 * 28 * 28, 512).name, "i8tc128x64x64_w64x32_s4");
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kTensorOpInt8, 32 * 14 * 14, 256).name, "i8tc64x128x64_w32x64_s4");
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kTensorOpInt8, 32 * 7 * 7, 2048).name, "i8tc64x128x64_w32x64_s4");
  // Must not change the 16-bit rule: layer3 at bs32 keeps the 128x128 tile (98 tiles).
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kTensorOp, 32 * 14 * 14, 256).name, "tc128x128x64_w64x64_s3");
}

TEST(LayoutNhwc, ConfigTablePicksAWaveFillingTileOrTheSmallest) {
  Target t;  // sm_90, 132 SMs
  const std::vector<ConvKernelConfig> configs = conv_configs_of(ConvMath::kTensorOp);
  ASSERT_GE(configs.size(), 2u);
  // Batch 32 ResNet-50 layer 1: M = 32*56*56, N = 64 -> the largest tile already fills the GPU.
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kTensorOp, 32 * 56 * 56, 256).name, configs.front().name);
  // Batch 1, 7x7 output: nothing fills the GPU -> the smallest tile (most blocks).
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kTensorOp, 49, 512).name, configs.back().name);
  // Jetson Orin (16 SMs) fills with larger tiles than the H100 on the same problem.
  Target orin = target_from_archs({"sm_87"});
  EXPECT_EQ(orin.sm_count, 16);
  EXPECT_GE(pick_conv_config(orin, ConvMath::kTensorOp, 56 * 56, 64).tb_m * pick_conv_config(orin, ConvMath::kTensorOp, 56 * 56, 64).tb_n,
            pick_conv_config(t, ConvMath::kTensorOp, 56 * 56, 64).tb_m * pick_conv_config(t, ConvMath::kTensorOp, 56 * 56, 64).tb_n);
  // 64 output channels: no configuration with a 128-wide N tile (half of it would be wasted).
  EXPECT_LE(pick_conv_config(t, ConvMath::kTensorOp, 32 * 112 * 112, 64).tb_n, 64);
  // Split-K: none when the tiles fill a wave; batch-1 layer4 3x3 (M 49, N 512, K 4608) splits to
  // about one wave, capped at 16 and at K-iterations / 4.
  const ConvKernelConfig& big = pick_conv_config(t, ConvMath::kTensorOp, 32 * 56 * 56, 256);
  EXPECT_EQ(pick_split_k(t, big, 32 * 56 * 56, 256, 576), 1);
  const ConvKernelConfig& small = pick_conv_config(t, ConvMath::kTensorOp, 49, 512);
  EXPECT_EQ(pick_split_k(t, small, 49, 512, 4608), 1);  // off by default (measured slower)
  t.max_split_k = 16;
  const int64_t tiles = conv_config_tiles(small, 49, 512);
  const int64_t split = pick_split_k(t, small, 49, 512, 4608);
  EXPECT_GT(split, 1);
  EXPECT_LE(split, kMaxSplitK);
  EXPECT_LE(tiles * split, 2 * t.sm_count);
  EXPECT_EQ(pick_split_k(t, small, 49, 512, 64), 1);  // 2 K-iterations: nothing to split
  for (const ConvKernelConfig& c : conv_kernel_configs()) {
    EXPECT_EQ(c.tb_m % c.warp_m, 0) << c.name;
    EXPECT_EQ(c.tb_n % c.warp_n, 0) << c.name;
    EXPECT_GE(c.min_sm, 80) << c.name;
  }
}

// The SIMT (fp32) rows follow the same rule within their math; a forced configuration applies to
// its own math only; every row is one of CUTLASS's SIMT shapes (8x8 or 8x16 outputs per thread)
// and its operand stages fit in shared memory.
TEST(LayoutNhwc, SimtConfigurationsPickLikeTheTensorCoreOnes) {
  Target t;  // sm_90, 132 SMs
  const std::vector<ConvKernelConfig> simt = conv_configs_of(ConvMath::kSimt);
  ASSERT_GE(simt.size(), 2u);
  for (const ConvKernelConfig& c : simt) EXPECT_EQ(std::string(c.name).rfind("simt", 0), 0u) << c.name;
  // ResNet-50 bs32 layer3 3x3 (M 32*14*14, N 256): the largest tile already gives 98 tiles.
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kSimt, 32 * 14 * 14, 256).name, simt.front().name);
  // 64 output channels: a tile at most 64 wide.
  EXPECT_LE(pick_conv_config(t, ConvMath::kSimt, 32 * 56 * 56, 64).tb_n, 64);
  // Batch 1 7x7: the smallest.
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kSimt, 49, 512).name, simt.back().name);
  // Forcing a tensor-core configuration leaves fp32 on its rule, and the other way round.
  t.conv_config = "tc64x64x32_w32x32_s4";
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kSimt, 49, 512).name, simt.back().name);
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kTensorOp, 32 * 56 * 56, 256).name, "tc64x64x32_w32x32_s4");
  t.conv_config = "simt128x64x8_w64x32_s4";
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kSimt, 49, 512).name, "simt128x64x8_w64x32_s4");
  EXPECT_EQ(std::string(pick_conv_config(t, ConvMath::kTensorOp, 49, 512).name).rfind("tc", 0), 0u);
  for (const auto* list : {&conv_kernel_configs(), &conv_candidate_configs()})
    for (const ConvKernelConfig& c : *list) {
      if (c.math != ConvMath::kSimt) continue;
      EXPECT_EQ(c.tb_k, c.warp_k) << c.name;
      const int per_thread = c.warp_m * c.warp_n / 32;  // 8x8 or 8x16 outputs per thread
      EXPECT_TRUE(per_thread == 64 || per_thread == 128) << c.name;
      EXPECT_LE((c.tb_m + c.tb_n) * c.tb_k * 4 * c.stages, 96 * 1024) << c.name;  // operand stages in smem
    }
}

// Which fp32 convolutions have an NHWC implementation: group 1 with 4-aligned channels, on Sm80+,
// unless switched off; depthwise ones through the depthwise kernels. fp64 never.
TEST(LayoutNhwc, Fp32ApplicabilityChecks) {
  Target t;
  EXPECT_TRUE(conv_implicit_gemm_applies(t, DType::kFloat32, 1, 4, 12));
  EXPECT_FALSE(conv_implicit_gemm_applies(t, DType::kFloat32, 1, 6, 12));
  EXPECT_FALSE(conv_implicit_gemm_applies(t, DType::kFloat32, 2, 8, 8));
  EXPECT_FALSE(conv_implicit_gemm_applies(t, DType::kFloat64, 1, 8, 8));
  EXPECT_FALSE(conv_implicit_gemm_applies(t, DType::kFloat16, 1, 4, 12));  // 16-bit needs 8
  EXPECT_TRUE(conv_depthwise_nhwc_applies(t, DType::kFloat32, 6, 6, 6));
  EXPECT_EQ(conv_padded_channels(DType::kFloat32, 3), 4);
  EXPECT_EQ(conv_padded_channels(DType::kFloat16, 3), 8);
  EXPECT_TRUE(conv_pointwise_gemm_applies(t, DType::kFloat32, 1, 64, 256, {1, 1}, {1, 1}, {0, 0, 0, 0}, true));
  // Batch 1 ResNet-50 layer4 3x3 (M 49, K 4608): under-filled, 0.9 MB of fp32 im2col -> im2col.
  EXPECT_TRUE(conv_im2col_gemm_applies(t, DType::kFloat32, 1, 512, 512, 49, 4608, true));
  // Batch 1 layer1 3x3 (M 3136, K 576: 49 tiles, a short K loop) and the stem (98 tiles): CUTLASS.
  EXPECT_FALSE(conv_im2col_gemm_applies(t, DType::kFloat32, 1, 64, 64, 56 * 56, 576, true));
  EXPECT_FALSE(conv_im2col_gemm_applies(t, DType::kFloat32, 1, 12, 64, 112 * 112, 192, true));
  // Batch 1 layer2 3x3 (M 784, K 1152, 26 tiles): im2col; the fp16 rule takes layer1 too.
  EXPECT_TRUE(conv_im2col_gemm_applies(t, DType::kFloat32, 1, 128, 128, 28 * 28, 1152, true));
  EXPECT_TRUE(conv_im2col_gemm_applies(t, DType::kFloat16, 1, 64, 64, 56 * 56, 576, true));
  // Batch 32 layer1 3x3 (M 100352, K 576): fills the GPU (and 231 MB) -> CUTLASS SIMT.
  EXPECT_FALSE(conv_im2col_gemm_applies(t, DType::kFloat32, 1, 64, 64, 32 * 56 * 56, 576, true));
  Target older = target_from_archs({"sm_75"});
  EXPECT_FALSE(conv_implicit_gemm_applies(older, DType::kFloat32, 1, 8, 8));
  t.conv_fp32_nhwc = false;
  EXPECT_FALSE(conv_implicit_gemm_applies(t, DType::kFloat32, 1, 8, 8));
  EXPECT_FALSE(conv_depthwise_nhwc_applies(t, DType::kFloat32, 6, 6, 6));
  EXPECT_FALSE(conv_pointwise_gemm_applies(t, DType::kFloat32, 1, 64, 256, {1, 1}, {1, 1}, {0, 0, 0, 0}, true));
  EXPECT_TRUE(conv_implicit_gemm_applies(t, DType::kFloat16, 1, 8, 8));  // 16-bit unaffected
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// aotc.QLinearConv with int8 activations of zero point 0 and symmetric weights: channels_last on
// the int8 tensor-core kernel, KRSC weights, one epilogue word per output channel (the float
// multiplier in the low half, the int32 bias in the high half), results bit-identical to the NCHW
// reference; with a nonzero activation zero point a Pad filled with it comes first (the kernel
// has no zero-point term; Int8PaddedConvReadsAPadFilledWithTheZeroPoint checks its arithmetic).
TEST(LayoutNhwc, Int8ConvRunsOnTheInt8KernelWithItsEpilogueWords) {
  AOTC_REQUIRE_OPS("aotc.QLinearConv");
  const char* text = R"(
    input %x : int8[2x16x7x9]
    const %xs : float[scalar] = [0.05]
    const %xz : int8[scalar] = [XZ]
    const %w : int8[32x16x3x3] = random(5, -127, 128)
    const %ws : float[32] = random(6, 0.001, 0.01)
    const %ys : float[scalar] = [0.2]
    const %yz : int8[scalar] = [0]
    const %b : int32[32] = random(7, -500, 500)
    const %w2 : int8[16x32x1x1] = random(8, -127, 128)
    const %ws2 : float[16] = random(9, 0.001, 0.01)
    %y : int8[?] = aotc.QLinearConv(%x, %xs, %xz, %w, %ws, _, %ys, %yz, %b) {pads=[1,1,1,1], strides=[1,2], qmin=0}  # qconv
    %f : float[?] = aotc.QLinearConv(%y, %ys, _, %w2, %ws2)  # deq
    output %f
  )";
  for (const char* xz : {"0", "3"}) {
    SCOPED_TRACE(std::string("x zero point ") + xz);
    std::string t = text;
    t.replace(t.find("XZ"), 2, xz);
    AOTC_BUILD(g, t);
    Graph before = g;
    auto changed = layout_nhwc(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 0, 0));
    if (std::string(xz) != "0") {
      // Both convolutions move; the first reads the input padded with its zero point.
      EXPECT_EQ(op_list(g), "Transpose,Pad,aotc.QLinearConv,aotc.QLinearConv,Transpose");
      EXPECT_TRUE(channels_last(g.nodes[2]));
      EXPECT_EQ(g.value(g.nodes[2].inputs[0]).shape, (Shape{2, 9, 11, 16}));
      continue;
    }
    EXPECT_EQ(op_list(g), "Transpose,aotc.QLinearConv,aotc.QLinearConv,Transpose");
    const Node& q = g.nodes[1];
    ASSERT_TRUE(channels_last(q));
    EXPECT_EQ(g.value(q.inputs[3]).shape, (Shape{32, 3, 3, 16}));  // KRSC
    const Tensor& words = *g.value(q.inputs[9]).constant;
    ASSERT_EQ(words.dtype(), DType::kUInt64);
    const Tensor& ws = *before.value(before.find_value("ws")).constant;
    const Tensor& b = *before.value(before.find_value("b")).constant;
    for (int64_t k : {0, 3, 31}) {
      uint64_t word;
      std::memcpy(&word, words.raw() + k * 8, 8);
      const float want_m = (0.05f * static_cast<float>(ws.get(k))) / 0.2f;
      uint32_t m_bits = static_cast<uint32_t>(word & 0xffffffffu);
      float m;
      std::memcpy(&m, &m_bits, 4);
      EXPECT_EQ(m, want_m) << k;
      EXPECT_EQ(static_cast<int32_t>(static_cast<uint32_t>(word >> 32)), b.get_int(k)) << k;
    }
    EXPECT_TRUE(channels_last(g.nodes[2]));
  }
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// aotc.QLinearMatMul by a constant B with K and N multiples of 16: B stored [N, K] with epilogue
// words (channels_last), results bit-identical to the plain reference; N = 12 stays as it is.
TEST(LayoutNhwc, Int8MatMulRunsAsAOneByOneConvolutionOnTheInt8Kernel) {
  AOTC_REQUIRE_OPS("aotc.QLinearMatMul");
  const char* text = R"(
    input %a : int8[2x7x32]
    const %as : float[scalar] = [0.05]
    const %b : int8[32xN] = random(5, -127, 128)
    const %bs : float[N] = random(6, 0.001, 0.01)
    const %ys : float[scalar] = [0.2]
    const %yz : int8[scalar] = [3]
    const %bias : int32[N] = random(7, -500, 500)
    %y : int8[?] = aotc.QLinearMatMul(%a, %as, _, %b, %bs, _, %ys, %yz, %bias) {qmin=3}  # qmm
    output %y
  )";
  for (const char* n : {"48", "12"}) {
    SCOPED_TRACE(std::string("N ") + n);
    std::string t = text;
    for (size_t at = t.find("N]"); at != std::string::npos; at = t.find("N]")) t.replace(at, 1, n);
    AOTC_BUILD(g, t);
    Graph before = g;
    auto changed = layout_nhwc(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 0, 0));
    EXPECT_EQ(op_list(g), "aotc.QLinearMatMul");
    const bool moved = std::string(n) == "48";
    EXPECT_EQ(channels_last(g.nodes[0]), moved);
    if (moved) {
      EXPECT_EQ(g.value(g.nodes[0].inputs[3]).shape, (Shape{48, 32}));
    }
  }
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// The int8 tensor-core epilogue as templates/cutlass_conv2d_fprop_i8.cu.in computes it, on the
// CPU: raw int32 sum of x * w (no zero point: the kernel has none), plus the bias word, times the
// multiplier word (double product, rint), plus y's zero point, clamped. NHWC x [P, C], KRSC w [K, C].
std::vector<int64_t> tensor_core_epilogue(const Tensor& x, const Tensor& w, const Tensor& words, int64_t yzp, int64_t lo,
                                          int64_t hi) {
  const int64_t k_out = w.shape()[0], c = w.shape().back(), pixels = x.numel() / c;
  std::vector<int64_t> y;
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t k = 0; k < k_out; ++k) {
      int32_t acc = 0;
      for (int64_t i = 0; i < c; ++i) acc += static_cast<int32_t>(x.get_int(p * c + i) * w.get_int(k * c + i));
      uint64_t word;
      std::memcpy(&word, words.raw() + k * 8, 8);
      const uint32_t m_bits = static_cast<uint32_t>(word & 0xffffffffu);
      float m;
      std::memcpy(&m, &m_bits, 4);
      const int32_t b = static_cast<int32_t>(static_cast<uint32_t>(word >> 32));
      double v = std::rint(static_cast<double>(acc + b) * static_cast<double>(m)) + static_cast<double>(yzp);
      y.push_back(static_cast<int64_t>(std::min(static_cast<double>(hi), std::max(static_cast<double>(lo), v))));
    }
  return y;
}

// A 1x1 convolution with zero pads reads no padding, so a nonzero x zero point zx folds into the
// bias word (bias - zx * sum_c w[k, c]) and the layer runs on the tensor-core kernel; the kernel's
// arithmetic on the words reproduces the reference exactly. A 3x3 with pads keeps the direct kernel.
TEST(LayoutNhwc, Int8PointwiseConvFoldsAnXZeroPointIntoTheBiasWord) {
  AOTC_REQUIRE_OPS("aotc.QLinearConv");
  AOTC_BUILD(g, R"(
    input %x : uint8[2x32x5x3]
    const %xs : float[scalar] = [0.04]
    const %xz : uint8[scalar] = [131]
    const %w : int8[48x32x1x1] = random(5, -127, 128)
    const %ws : float[48] = random(6, 0.001, 0.01)
    const %ys : float[scalar] = [0.3]
    const %yz : int8[scalar] = [-3]
    const %b : int32[48] = random(7, -5000, 5000)
    %y : int8[?] = aotc.QLinearConv(%x, %xs, %xz, %w, %ws, _, %ys, %yz, %b) {qmin=-3, strides=[1,1]}  # pw
    output %y
  )");
  Graph before = g;
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 0, 0));
  EXPECT_EQ(op_list(g), "Transpose,aotc.QLinearConv,Transpose");
  const Node& q = g.nodes[1];
  ASSERT_TRUE(channels_last(q));
  const Tensor& words = *g.value(q.inputs[9]).constant;
  const Tensor& w = *before.value(before.find_value("w")).constant;
  const Tensor& b = *before.value(before.find_value("b")).constant;
  for (int64_t k : {0, 17, 47}) {
    int64_t wsum = 0;
    for (int64_t c = 0; c < 32; ++c) wsum += w.get_int(k * 32 + c);
    uint64_t word;
    std::memcpy(&word, words.raw() + k * 8, 8);
    EXPECT_EQ(static_cast<int32_t>(static_cast<uint32_t>(word >> 32)), b.get_int(k) - 131 * wsum) << k;
  }
  // The kernel's arithmetic on NHWC input against the reference's NCHW result.
  const Tensor x = seeded_random_tensor(DType::kUInt8, {2, 32, 5, 3}, 9, 0, 256);
  auto want = evaluate_graph(before, {x});
  ASSERT_TRUE(want.is_ok());
  const Tensor y_nhwc = permute_channels((*want)[0], /*to_nchw=*/false);
  const std::vector<int64_t> got = tensor_core_epilogue(permute_channels(x, false), *g.value(q.inputs[3]).constant, words, -3, -3, 127);
  ASSERT_EQ(static_cast<int64_t>(got.size()), y_nhwc.numel());
  int64_t wrong = 0;
  for (int64_t i = 0; i < y_nhwc.numel(); ++i) wrong += got[static_cast<size_t>(i)] != y_nhwc.get_int(i) ? 1 : 0;
  EXPECT_EQ(wrong, 0);
}

// A padded convolution with a nonzero x zero point, on 3 input channels (ONNX Runtime's QDQ RGB
// stem): the kernel's zero fill would read -zx where the spec reads 0, and 3 channels are not a
// 16-byte vector. A Pad node writes the input with the spatial padding and 13 more channels all
// filled with zx; the convolution reads no padding, so zx folds into the bias word exactly, and
// the tensor-core arithmetic over the padded input reproduces the reference. Weights with a zero
// point, or a grouped layer, keep the direct kernel.
TEST(LayoutNhwc, Int8PaddedConvReadsAPadFilledWithTheZeroPoint) {
  AOTC_REQUIRE_OPS("aotc.QLinearConv", "Pad");
  const char* text = R"(
    input %x : uint8[2x3x7x6]
    const %xs : float[scalar] = [0.04]
    const %xz : uint8[scalar] = [131]
    const %w : int8[32x3x3x3] = random(5, -127, 128)
    const %ws : float[32] = random(6, 0.001, 0.01)
    const %wz : int8[32] = WZ
    const %ys : float[scalar] = [0.3]
    const %yz : int8[scalar] = [-3]
    const %b : int32[32] = random(7, -5000, 5000)
    %y : int8[?] = aotc.QLinearConv(%x, %xs, %xz, %w, %ws, %wz, %ys, %yz, %b) {pads=[1,2,1,0], strides=[2,1]}  # c3
    output %y
  )";
  auto build = [&](std::string wz) {
    if (wz == "zeros") {
      wz = "[0";
      for (int k = 1; k < 32; ++k) wz += ", 0";
      wz += "]";
    }
    std::string t = text;
    t.replace(t.find("WZ"), 2, wz);
    return t;
  };
  AOTC_BUILD(g, build("zeros"));
  Graph before = g;
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 0, 0));
  ASSERT_EQ(op_list(g), "Transpose,Pad,aotc.QLinearConv,Transpose");
  const Node& q = g.nodes[2];
  ASSERT_TRUE(channels_last(q));
  ASSERT_NE(q.input(9), kNoValue);  // the tensor-core kernel's words
  EXPECT_EQ(g.value(q.inputs[0]).shape, (Shape{2, 9, 8, 16}));  // H 1 + 7 + 1, W 2 + 6 + 0
  EXPECT_EQ(g.value(q.inputs[3]).shape, (Shape{32, 3, 3, 16}));  // KRSC, zero channels added
  // The kernel's arithmetic: the padded NHWC input (zx outside the image and in channels 3..15),
  // each output's 3x3x16 window against the KRSC filter, then the epilogue words.
  const Tensor x = seeded_random_tensor(DType::kUInt8, {2, 3, 7, 6}, 9, 0, 256);
  auto want = evaluate_graph(before, {x});
  ASSERT_TRUE(want.is_ok());
  const Tensor y_nhwc = permute_channels((*want)[0], /*to_nchw=*/false);  // [2, 4, 6, 32]
  const int64_t oh = 4, ow = 6, taps = 9 * 16;
  Tensor rows(DType::kInt64, {2 * oh * ow, taps});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t p = 0; p < oh; ++p)
      for (int64_t qq = 0; qq < ow; ++qq)
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t s = 0; s < 3; ++s)
            for (int64_t c = 0; c < 16; ++c) {
              const int64_t ih = p * 2 - 1 + r, iw = qq - 2 + s;
              const bool inside = c < 3 && ih >= 0 && ih < 7 && iw >= 0 && iw < 6;
              const int64_t v = inside ? x.get_int(((n * 3 + c) * 7 + ih) * 6 + iw) : 131;
              rows.set_int(((n * oh + p) * ow + qq) * taps + (r * 3 + s) * 16 + c, v);
            }
  const Tensor& wk = *g.value(q.inputs[3]).constant;
  Tensor wflat(DType::kInt8, {32, taps});
  std::memcpy(wflat.raw(), wk.raw(), static_cast<size_t>(32 * taps));
  const std::vector<int64_t> got = tensor_core_epilogue(rows, wflat, *g.value(q.inputs[9]).constant, -3, -128, 127);
  ASSERT_EQ(static_cast<int64_t>(got.size()), y_nhwc.numel());
  int64_t wrong = 0;
  for (int64_t i = 0; i < y_nhwc.numel(); ++i) wrong += got[static_cast<size_t>(i)] != y_nhwc.get_int(i) ? 1 : 0;
  EXPECT_EQ(wrong, 0);
  // Must not fire: a weight zero point (the fold has no term for it), or two groups.
  AOTC_BUILD(gz, build("random(8, -3, 4)"));
  ASSERT_TRUE(layout_nhwc(gz).is_ok());
  EXPECT_FALSE(channels_last(gz.nodes.back()));
  std::string grouped = build("zeros");
  grouped.replace(grouped.find("int8[32x3x3x3]"), 14, "int8[32x1x3x3]");
  grouped.replace(grouped.find("uint8[2x3x7x6]"), 14, "uint8[2x2x7x6]");
  grouped.replace(grouped.find("strides=[2,1]"), 13, "strides=[2,1], group=2");
  AOTC_BUILD(gg, grouped);
  ASSERT_TRUE(layout_nhwc(gg).is_ok());
  for (const Node& n : gg.nodes) EXPECT_NE(n.op_type, "Pad");
  // No Pad where none is needed: the same 3x3 unpadded over 16 channels reads only real inputs,
  // so the zero point folds as it is (a Pad would only copy the input).
  std::string unpadded = build("zeros");
  unpadded.replace(unpadded.find("int8[32x3x3x3]"), 14, "int8[32x16x3x3]");
  unpadded.replace(unpadded.find("uint8[2x3x7x6]"), 14, "uint8[2x16x7x6]");
  unpadded.replace(unpadded.find("pads=[1,2,1,0], "), 16, "");
  AOTC_BUILD(gu, unpadded);
  Graph gu_before = gu;
  ASSERT_TRUE(layout_nhwc(gu).is_ok());
  EXPECT_EQ(op_list(gu), "Transpose,aotc.QLinearConv,Transpose");
  EXPECT_TRUE(channels_last(gu.nodes[1]));
  EXPECT_TRUE(testing_util::same_outputs(gu_before, gu, 42, 0, 0));
}

// MobileNetV2's inverted residual in int8: tensor-core expansion -> depthwise -> tensor-core
// projection. The depthwise layer (group = C, zero points anywhere) stays in the NHWC chain on the
// direct kernel (KRSC weights, no epilogue words) instead of a Transpose on each side.
TEST(LayoutNhwc, Int8DepthwiseBetweenTensorCoreConvsStaysChannelsLast) {
  AOTC_REQUIRE_OPS("aotc.QLinearConv");
  AOTC_BUILD(g, R"(
    input %x : int8[1x16x6x6]
    const %s : float[scalar] = [0.05]
    const %z : uint8[scalar] = [0]
    const %zx : int8[scalar] = [5]
    const %we : int8[32x16x1x1] = random(1, -127, 128)
    const %wse : float[32] = random(2, 0.001, 0.01)
    const %wd : int8[32x1x3x3] = random(3, -127, 128)
    const %wsd : float[32] = random(4, 0.001, 0.01)
    const %wp : int8[16x32x1x1] = random(5, -127, 128)
    const %wsp : float[16] = random(6, 0.001, 0.01)
    %e : uint8[?] = aotc.QLinearConv(%x, %s, %zx, %we, %wse, _, %s, %z)  # expand
    %d : uint8[?] = aotc.QLinearConv(%e, %s, %z, %wd, %wsd, _, %s, %z) {group=32, pads=[1,1,1,1], strides=[2,2]}  # dw
    %y : float[?] = aotc.QLinearConv(%d, %s, %z, %wp, %wsp)  # project
    output %y
  )");
  Graph before = g;
  auto changed = layout_nhwc(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 0, 0));
  EXPECT_EQ(op_list(g), "Transpose,aotc.QLinearConv,aotc.QLinearConv,aotc.QLinearConv,Transpose");
  for (int i : {1, 2, 3}) EXPECT_TRUE(channels_last(g.nodes[static_cast<size_t>(i)])) << i;
  const Node& dw = g.nodes[2];
  EXPECT_EQ(dw.input(9), kNoValue);                                 // the direct kernel
  EXPECT_EQ(g.value(dw.inputs[3]).shape, (Shape{32, 3, 3, 1}));     // KRSC
  EXPECT_NE(g.nodes[1].input(9), kNoValue);                         // the tensor-core kernel
  EXPECT_NE(g.nodes[3].input(9), kNoValue);
}

}  // namespace
}  // namespace aotc
