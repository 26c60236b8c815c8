// pixel_conv_to_gemm: a 1 x 1 Conv over a one-pixel input (squeeze-excitation after the global
// pool) becomes Reshape + Gemm(transB) + Reshape with the same outputs (the CPU reference of both
// graphs), and must not fire on anything with more than one pixel, groups, padding or a
// non-constant filter.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

TEST(PixelConvToGemm, SqueezeExcitationConvsBecomeGemms) {
  AOTC_REQUIRE_OPS("Conv", "Gemm", "Reshape", "GlobalAveragePool", "Sigmoid", "Mul");
  AOTC_BUILD(g, R"(
    input %x : float[3x24x5x5]
    const %w1 : float[6x24x1x1] = random(1)
    const %b1 : float[6] = random(2)
    const %w2 : float[24x6x1x1] = random(3)
    %p : float[?] = GlobalAveragePool(%x)
    %s : float[?] = Conv(%p, %w1, %b1) {kernel_shape=[1,1]}
    %a : float[?] = Sigmoid(%s)
    %e : float[?] = Conv(%a, %w2) {kernel_shape=[1,1], strides=[2,2]}
    %g : float[?] = Sigmoid(%e)
    %y : float[?] = Mul(%x, %g)
    output %y
  )");
  Graph before = g;
  auto changed = pixel_conv_to_gemm(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  // Each Sigmoid alone reads its conv's output: it moves onto the Gemm's rows (fuse_epilogue's).
  EXPECT_EQ(op_list(g), "GlobalAveragePool,Reshape,Gemm,Sigmoid,Reshape,Reshape,Gemm,Sigmoid,Reshape,Mul");
  const Node& fc1 = g.nodes[2];
  EXPECT_EQ(g.value(fc1.inputs[0]).shape, (Shape{3, 24}));
  EXPECT_EQ(g.value(fc1.inputs[1]).shape, (Shape{6, 24}));
  ASSERT_EQ(fc1.inputs.size(), 3u);  // the bias row
  EXPECT_EQ(fc1.attr_int("transB", 0), 1);
  EXPECT_EQ(g.nodes[6].inputs.size(), 2u);  // fc2 has no bias
  EXPECT_EQ(g.nodes[3].inputs[0], fc1.outputs[0]);
  EXPECT_EQ(g.value(g.nodes[3].outputs[0]).shape, (Shape{3, 6}));
  EXPECT_EQ(g.value(g.nodes[4].outputs[0]).shape, (Shape{3, 6, 1, 1}));
  EXPECT_EQ(g.value(g.nodes[8].outputs[0]).shape, (Shape{3, 24, 1, 1}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 5));
  // Idempotent: nothing left to rewrite.
  auto again = pixel_conv_to_gemm(g);
  ASSERT_TRUE(again.is_ok());
  EXPECT_FALSE(*again);
}

TEST(PixelConvToGemm, OneDimensionalAndThreeDimensionalPixels) {
  AOTC_REQUIRE_OPS("Conv", "Gemm", "Reshape");
  for (const char* text : {R"(
    input %x : float[2x8x1]
    const %w : float[4x8x1] = random(1)
    %y : float[?] = Conv(%x, %w) {kernel_shape=[1]}
    output %y
  )", R"(
    input %x : float[2x8x1x1x1]
    const %w : float[4x8x1x1x1] = random(1)
    const %b : float[4] = random(2)
    %y : float[?] = Conv(%x, %w, %b) {kernel_shape=[1,1,1], pads=[0,0,0,0,0,0]}
    output %y
  )"}) {
    AOTC_BUILD(g, text);
    Graph before = g;
    auto changed = pixel_conv_to_gemm(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed) << text;
    EXPECT_EQ(op_list(g), "Reshape,Gemm,Reshape");
    EXPECT_TRUE(testing_util::same_outputs(before, g, 6));
  }
}

// The channels (6 in, 3 out) are off fp32's tensor-core alignment of 4, so each case is refused
// for its stated reason only.
TEST(PixelConvToGemm, MustNotFire) {
  AOTC_REQUIRE_OPS("Conv", "Gemm", "Reshape");
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"more than one pixel", R"(
    input %x : float[2x6x2x1]
    const %w : float[3x6x1x1] = random(1)
    %y : float[?] = Conv(%x, %w) {kernel_shape=[1,1]}
    output %y
  )"},
      {"grouped (squeeze-excitation in RegNet-Y is not, but a grouped 1x1 is not one GEMM)", R"(
    input %x : float[2x6x1x1]
    const %w : float[2x3x1x1] = random(1)
    %y : float[?] = Conv(%x, %w) {kernel_shape=[1,1], group=2}
    output %y
  )"},
      {"padding (the output has pixels of bias only)", R"(
    input %x : float[2x6x1x1]
    const %w : float[3x6x1x1] = random(1)
    %y : float[?] = Conv(%x, %w) {kernel_shape=[1,1], pads=[1,1,1,1]}
    output %y
  )"},
      {"a 3x3 kernel padded down to one pixel", R"(
    input %x : float[2x6x1x1]
    const %w : float[3x6x3x3] = random(1)
    %y : float[?] = Conv(%x, %w) {kernel_shape=[3,3], pads=[1,1,1,1]}
    output %y
  )"},
      {"a filter computed at run time", R"(
    input %x : float[2x6x1x1]
    input %w : float[3x6x1x1]
    %y : float[?] = Conv(%x, %w) {kernel_shape=[1,1]}
    output %y
  )"},
      {"SAME padding spelled by auto_pad", R"(
    input %x : float[2x6x1x1]
    const %w : float[3x6x1x1] = random(1)
    %y : float[?] = Conv(%x, %w) {kernel_shape=[1,1], auto_pad="SAME_UPPER"}
    output %y
  )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    auto changed = pixel_conv_to_gemm(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first << ": " << op_list(g);
  }
}

// A 2-D pointwise conv whose channels the tensor-core implicit GEMM takes (in the dtype the
// precision pass will store: --precision fp16 on a float model) already runs as a pointwise GEMM
// with its residual Add fused: it stays. Channels off that alignment (SE's 28) convert.
TEST(PixelConvToGemm, OnlyWhereNoTensorCoreConvolutionApplies) {
  AOTC_REQUIRE_OPS("Conv", "Gemm", "Reshape");
  const char* text = R"(
    input %x : float[1x64x1x1]
    const %w : float[OCx64x1x1] = random(1)
    %y : float[?] = Conv(%x, %w) {kernel_shape=[1,1]}
    output %y
  )";
  struct Case {
    const char* oc;
    DType precision;
    bool fires;
  };
  for (const Case& c : {Case{"32", DType::kFloat32, false}, Case{"32", DType::kFloat16, false},
                        Case{"28", DType::kFloat32, false}, Case{"28", DType::kFloat16, true},
                        Case{"30", DType::kFloat32, true}}) {
    std::string t = text;
    t.replace(t.find("OC"), 2, c.oc);
    AOTC_BUILD(g, t);
    g.target.precision.dtype = c.precision;
    ASSERT_TRUE(g.target.has_sm80_tensor_cores());
    auto changed = pixel_conv_to_gemm(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_EQ(*changed, c.fires) << "OC " << c.oc << " " << dtype_name(c.precision) << ": " << op_list(g);
  }
}

// The activation moves only when it alone reads the conv's output: with a second reader the
// 4-D output must exist, so the activation stays after the reshape back.
TEST(PixelConvToGemm, HoistsTheSoleReadingActivation) {
  AOTC_REQUIRE_OPS("Conv", "Gemm", "Reshape", "Swish", "Add");
  AOTC_BUILD(g, R"(
    input %x : float[2x6x1x1]
    const %w : float[3x6x1x1] = random(1)
    const %w2 : float[3x6x1x1] = random(2)
    %s : float[?] = Conv(%x, %w) {kernel_shape=[1,1]}
    %a : float[?] = Swish(%s)
    %t : float[?] = Conv(%x, %w2) {kernel_shape=[1,1]}
    %u : float[?] = Swish(%t)
    %y : float[?] = Add(%u, %t)
    output %a
    output %y
  )");
  Graph before = g;
  auto changed = pixel_conv_to_gemm(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Reshape,Gemm,Swish,Reshape,Reshape,Gemm,Reshape,Swish,Add");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3));
}

}  // namespace
}  // namespace aotc
