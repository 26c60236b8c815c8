// fuse_stem_pool: a stem-kernel convolution (RGB input packed to 4 channels by layout_nhwc) whose
// only reader is a channels_last MaxPool absorbs it (aotc.FusedConv with attribute "pool", output
// the pooled tensor); the CPU reference of the fused node equals the two nodes' (fp16), and the
// pass must not fire on a second reader, an Indices output, average pooling, a dilated pool, a
// non-stem convolution or with --conv-stem cutlass. The fused kernel itself is checked on the GPU
// (tests/gpu: GpuConvFp16.StemKernelWithMaxPool*) and compiled by nvcc in tests/codegen.
#include "ir/layout.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// conv (3 -> 64, 7x7/2) + bias + ReLU + the pool `pool`, then `tail` (lines reading %p).
std::string stem_text(const std::string& pool, const std::string& tail = "output %p", const std::string& in = "2x3x21x18",
                      const std::string& w = "64x3x7x7") {
  return "input %x : float16[" + in + "]\n const %w : float16[" + w + "] = random(1)\n const %b : float16[64] = random(2)\n" +
         " %c : float16[?] = Conv(%x, %w, %b) {strides=[2,2], pads=[3,3,3,3]}  # conv1\n" +
         " %r : float16[?] = Relu(%c)  # relu\n %p : float16[?] = " + pool + "  # pool\n " + tail + "\n";
}

Expected<bool> pipeline(Graph& g) {
  auto e = fuse_epilogue(g);
  if (!e) return e;
  auto l = layout_nhwc(g);
  if (!l) return l;
  return fuse_stem_pool(g);
}

TEST(FuseStemPool, StemConvAbsorbsTheMaxPool) {
  for (const char* pool : {"MaxPool(%r) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}",
                           "MaxPool(%r) {kernel_shape=[3,2], pads=[0,1,1,0], strides=[2,2], ceil_mode=1}"}) {
    SCOPED_TRACE(pool);
    AOTC_BUILD(g, stem_text(pool));
    Graph before = g;
    auto changed = pipeline(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(op_list(g), "aotc.PackNhwc,aotc.FusedConv,Transpose");
    const Node& conv = g.nodes[1];
    EXPECT_TRUE(has_pool(conv));
    EXPECT_EQ(load_pool(conv).op_type, "MaxPool");
    EXPECT_TRUE(channels_last(conv));
    EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3));
  }
}

TEST(FuseStemPool, MustNotFire) {
  const std::string max = "MaxPool(%r) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}";
  struct Case {
    std::string label, text;
    bool stem_kernel = true;
  };
  const std::vector<Case> cases = {
      {"second reader", stem_text(max, "%q : float16[?] = Relu(%r)  # other\n output %p\n output %q")},
      {"average pool", stem_text("AveragePool(%r) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}")},
      {"dilated pool", stem_text("MaxPool(%r) {kernel_shape=[3,3], strides=[2,2], dilations=[2,2]}")},
      {"not a stem (16 input channels)", stem_text(max, "output %p", "2x16x21x18", "64x16x7x7")},
      {"--conv-stem cutlass", stem_text(max), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    AOTC_BUILD(g, c.text);
    g.target.conv_stem_kernel = c.stem_kernel;
    auto changed = pipeline(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_FALSE(*changed);
    for (const Node& n : g.nodes) EXPECT_FALSE(has_pool(n)) << n.name;
  }
  // An Indices output: the MaxPool stays.
  AOTC_BUILD(g, "input %x : float16[1x3x16x16]\n const %w : float16[64x3x7x7] = random(1)\n"
                " %c : float16[?] = Conv(%x, %w) {strides=[2,2], pads=[3,3,3,3]}  # conv1\n"
                " %p : float16[?], %i : int64[?] = MaxPool(%c) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}  # pool\n"
                " output %p\n output %i\n");
  auto changed = pipeline(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace aotc
