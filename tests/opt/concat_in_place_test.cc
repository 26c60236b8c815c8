// concat_in_place: ResNet's merged projection (opt/merge_projection_shortcut) concatenates h, the
// output of the block's 3x3 convolution, and x; h is read by nothing else, so its producer
// writes it straight into the Concat's rows (row stride = the Concat's channels), the Concat
// lowers to one slab kernel (x's) instead of two, and the memory plan puts h inside the Concat's
// buffer. Must not fire: an input at a column that is not a whole 256 bytes, an input read by a
// second node (here: also a graph output), a Concat whose output is a graph output, a producer
// whose lowering cannot write strided rows (NCHW convolutions, Relu). The CPU reference of the
// rewritten graph equals the merged graph's (the layout is physical only); the GPU runs are
// GpuConvFp16.ConcatInPlace*.
#include "ir/op_registry.h"
#include "opt/memory_plan.h"
#include "opt/pipeline.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// x [1, 64, 14, 14]: h = relu(conv3x3(x)) (64 channels), y = relu(conv1x1(h) + conv1x1(x)) with
// 256 outputs: merge_projection_shortcut makes Concat(h, x) (128 channels).
std::string block(const std::string& t, bool h_also_output = false) {
  std::string s = "input %x : " + t + "[1x64x14x14]\n const %w1 : " + t + "[64x64x3x3] = random(1)\n const %b1 : " + t +
                  "[64] = random(2)\n const %w3 : " + t + "[256x64x1x1] = random(3)\n const %b3 : " + t +
                  "[256] = random(4)\n const %wd : " + t + "[256x64x1x1] = random(5)\n const %bd : " + t +
                  "[256] = random(6)\n";
  s += " %c1 : " + t + "[?] = Conv(%x, %w1, %b1) {pads=[1,1,1,1]}  # conv1\n %h : " + t + "[?] = Relu(%c1)  # relu1\n";
  s += " %c3 : " + t + "[?] = Conv(%h, %w3, %b3)  # conv3\n %d : " + t + "[?] = Conv(%x, %wd, %bd)  # downsample\n";
  s += " %s : " + t + "[?] = Add(%c3, %d)  # add\n %y : " + t + "[?] = Relu(%s)  # relu3\n output %y\n";
  if (h_also_output) s += " output %h\n";
  return s;
}

Expected<bool> merged(Graph& g) {
  g.target.aux_stream_max_bytes = 0;
  for (auto pass : {fuse_epilogue, layout_nhwc, merge_projection_shortcut}) {
    auto r = pass(g);
    if (!r) return r;
  }
  return true;
}

const Node* find_op(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

TEST(ConcatInPlace, TheBlocksConvolutionWritesItsSlabOfTheMergedConcat) {
  // Each convolution strategy that writes strided rows: the cluster split-K kernel (16-bit on
  // sm_90 at batch 1), im2col + GEMM (cluster off), the CUTLASS implicit GEMM (im2col off too).
  for (int variant = 0; variant < 3; ++variant)
  for (const char* dtype : {"float16", "float"}) {
    SCOPED_TRACE(std::string(dtype) + " variant " + std::to_string(variant));
    AOTC_BUILD(g, block(dtype));
    g.target.conv_cluster_splitk = variant == 0;
    g.target.conv_im2col_gemm = variant < 2;
    auto m = merged(g);
    ASSERT_TRUE(m.is_ok()) << m.status().message();
    Graph before = g;  // merged: what concat_in_place changes is only where bytes live
    const Node* cat = find_op(g, "Concat");
    ASSERT_NE(cat, nullptr) << op_list(g);
    const ValueId h = cat->inputs[0], x = cat->inputs[1], out = cat->outputs[0];
    auto changed = concat_in_place(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(g.value(h).stored_in, out);
    EXPECT_EQ(g.value(h).stored_at, 0);
    EXPECT_EQ(g.row_stride(h), 128);
    EXPECT_EQ(g.value(x).stored_in, kNoValue) << "a graph input stays where the caller put it";
    EXPECT_EQ(g.row_stride(x), 0);
    // The Concat copies x only; h's producer (the 3x3 convolution) writes strided rows.
    auto l = default_registry().find("Concat", "")->lower(*cat, g);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    ASSERT_EQ(l->steps.size(), 1u);
    EXPECT_EQ(l->steps[0].kernel.args[0], x);
    const int p = g.producers()[static_cast<size_t>(h)];
    ASSERT_GE(p, 0);
    const Node& conv = g.nodes[static_cast<size_t>(p)];
    auto pl = default_registry().find(conv.op_type, conv.domain)->lower(conv, g);
    ASSERT_TRUE(pl.is_ok()) << pl.status().message();
    EXPECT_TRUE(pl->strided_output);
    // (fp32 at this size: the SIMT CUTLASS kernel in every variant.)
    const bool fp16 = std::string(dtype) == "float16";
    const std::string want = fp16 && variant == 0 ? "conv_cluster_splitk_nhwc"
                             : fp16 && variant == 1 ? "im2col_nhwc"
                                                    : "cutlass_conv2d_fprop";
    EXPECT_EQ(pl->steps[0].kernel.template_name, want);
    // No buffer of its own: h sits at the start of the Concat's buffer, which is live from h's
    // producer on.
    auto plan = plan_memory(g);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    EXPECT_GE(g.value(out).arena_offset, 0);
    EXPECT_EQ(g.value(h).arena_offset, g.value(out).arena_offset);
    EXPECT_NE(plan->text.find("in the rows of"), std::string::npos) << plan->text;
    EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 0.0, 0.0));
    // A second run changes nothing.
    auto again = concat_in_place(g);
    ASSERT_TRUE(again.is_ok());
    EXPECT_FALSE(*again);
  }
}

TEST(ConcatInPlace, MustNotFire) {
  {
    SCOPED_TRACE("h at column 64 of 16-bit rows: 128 bytes, not a whole 256");
    AOTC_BUILD(g, block("float16"));
    ASSERT_TRUE(merged(g).is_ok());
    Node* cat = nullptr;
    for (Node& n : g.nodes)
      if (n.op_type == "Concat") cat = &n;
    ASSERT_NE(cat, nullptr);
    std::swap(cat->inputs[0], cat->inputs[1]);
    ASSERT_TRUE(default_registry().find("Concat", "")->infer(*cat, g).is_ok());
    auto c = concat_in_place(g);
    ASSERT_TRUE(c.is_ok());
    EXPECT_FALSE(*c);
  }
  {
    SCOPED_TRACE("h also a graph output");
    AOTC_BUILD(g, block("float16", true));
    ASSERT_TRUE(merged(g).is_ok());
    if (find_op(g, "Concat") != nullptr) {  // (merge_projection_shortcut may leave it alone)
      auto c = concat_in_place(g);
      ASSERT_TRUE(c.is_ok());
      EXPECT_FALSE(*c);
    }
  }
  {
    SCOPED_TRACE("the Concat's output is a graph output");
    AOTC_BUILD(g, block("float16"));
    ASSERT_TRUE(merged(g).is_ok());
    const Node* cat = find_op(g, "Concat");
    ASSERT_NE(cat, nullptr);
    g.outputs.push_back(cat->outputs[0]);
    auto c = concat_in_place(g);
    ASSERT_TRUE(c.is_ok());
    EXPECT_FALSE(*c);
  }
  {
    SCOPED_TRACE("producers that write packed rows only: NCHW convolutions, Relu");
    AOTC_BUILD(g, R"(
      input %x : float[1x8x6x64]
      const %w1 : float[8x8x1x1] = random(1)
      %a : float[?] = Conv(%x, %w1)
      %b : float[?] = Relu(%x)
      %c : float[?] = Concat(%a, %b) {axis=3}
      %y : float[?] = Sigmoid(%c)
      output %y
    )");
    Graph before = g;
    auto c = concat_in_place(g);
    ASSERT_TRUE(c.is_ok());
    EXPECT_FALSE(*c) << op_list(g);
    for (size_t id = 0; id < g.values.size(); ++id) {
      const Value& v = g.values[id];
      EXPECT_EQ(g.row_stride(static_cast<ValueId>(id)), 0) << v.name << ": a refused trial leaves no stride behind";
      EXPECT_EQ(v.stored_in, kNoValue) << v.name;
    }
  }
}

// The whole pipeline on an Inception-style block (layout_nhwc keeps the channel Concat NHWC):
// branch a (1x1, 128 channels, column 0) and branch b (3x3, 64 channels, column 128 = 256 bytes)
// are written in place by their convolutions; branch c (pool + 1x1, column 192 = 384 bytes, not a
// whole 256) is copied by the one slab kernel left. The plan places a and b in the Concat's
// buffer; outputs equal the unoptimized graph's within fp16 rounding (GPU: GpuConvFp16.
// InceptionConcatWrittenInPlace).
TEST(ConcatInPlace, InceptionBranchesAtWhole256ByteColumns) {
  AOTC_BUILD(g, R"(
    input %x : float16[2x32x14x14]
    const %wa : float16[128x32x1x1] = random(1)
    const %wb : float16[64x32x3x3] = random(2)
    const %wc : float16[32x32x1x1] = random(3)
    const %wn : float16[32x224x1x1] = random(4)
    %a : float16[?] = Conv(%x, %wa)  # branch_a
    %b : float16[?] = Conv(%x, %wb) {pads=[1,1,1,1]}  # branch_b
    %p : float16[?] = MaxPool(%x) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]}  # pool
    %c : float16[?] = Conv(%p, %wc)  # branch_c
    %cat : float16[?] = Concat(%a, %b, %c) {axis=1}  # concat
    %y : float16[?] = Conv(%cat, %wn)  # next
    output %y
  )");
  Graph before = g;
  auto stats = run_pipeline(g, PipelineOptions{});
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  const Node* cat = find_op(g, "Concat");
  ASSERT_NE(cat, nullptr) << op_list(g);
  EXPECT_EQ(cat->attr_int("axis", 0), 3);
  ASSERT_EQ(cat->inputs.size(), 3u);
  EXPECT_EQ(g.value(cat->inputs[0]).stored_at, 0);
  EXPECT_EQ(g.value(cat->inputs[0]).stored_in, cat->outputs[0]);
  EXPECT_EQ(g.value(cat->inputs[1]).stored_at, 128);
  EXPECT_EQ(g.value(cat->inputs[1]).stored_in, cat->outputs[0]);
  EXPECT_EQ(g.value(cat->inputs[2]).stored_in, kNoValue);
  auto l = default_registry().find("Concat", "")->lower(*cat, g);
  ASSERT_TRUE(l.is_ok()) << l.status().message();
  EXPECT_EQ(l->steps.size(), 1u);
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const int64_t base = g.value(cat->outputs[0]).arena_offset;
  EXPECT_EQ(g.value(cat->inputs[0]).arena_offset, base);
  EXPECT_EQ(g.value(cat->inputs[1]).arena_offset, base + 256);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 1e-2, 1e-2));
}

}  // namespace
}  // namespace aotc
