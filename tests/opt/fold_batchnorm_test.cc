// fold_batchnorm: Conv -> BatchNormalization becomes one Conv with new weights and bias. Checked
// against hand-computed values and against the unfused graph's reference (Conv then BN) on
// random inputs; and the cases where it must not fire.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// The BN parameters: gamma in [0.5, 2), var in [0.1, 2) so the fold is well conditioned.
const char* kBnParams = R"(
  const %g : float[4] = random(3, 0.5, 2)
  const %be : float[4] = random(4)
  const %m : float[4] = random(5)
  const %v : float[4] = random(6, 0.1, 2)
)";

Expected<bool> fold_and_check(Graph& g) {
  Expected<bool> changed = fold_batchnorm(g);
  if (changed && *changed) {
    Status s = verify(g);
    if (!s) return s;
  }
  return changed;
}

TEST(FoldBatchnorm, HandComputedOneByOneConv) {
  AOTC_REQUIRE_OPS("Conv", "BatchNormalization");
  // s = 3 / sqrt(3 + 1) = 1.5; W' = 2 * 1.5 = 3; b' = (1 - 2) * 1.5 + 0.5 = -1.
  AOTC_BUILD(g, R"(
    input %x : float[1x1x2x2]
    const %w : float[1x1x1x1] = [2]
    const %b : float[1] = [1]
    const %g : float[1] = [3]
    const %be : float[1] = [0.5]
    const %m : float[1] = [2]
    const %v : float[1] = [3]
    %c : float[?] = Conv(%x, %w, %b)
    %y : float[?] = BatchNormalization(%c, %g, %be, %m, %v) {epsilon=1.0}
    output %y
  )");
  auto changed = fold_and_check(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  ASSERT_TRUE(*changed);
  ASSERT_EQ(op_list(g), "Conv");
  const Node& conv = g.nodes[0];
  EXPECT_EQ(conv.outputs[0], g.find_value("y"));
  EXPECT_EQ(g.value(conv.inputs[1]).constant->get(0), 3.0);
  EXPECT_EQ(g.value(conv.inputs[2]).constant->get(0), -1.0);
  // The original weights are untouched (another conv may share them).
  EXPECT_EQ(g.value(g.find_value("w")).constant->get(0), 2.0);
}

TEST(FoldBatchnorm, ConvWithBiasMatchesConvThenBn) {
  AOTC_REQUIRE_OPS("Conv", "BatchNormalization");
  AOTC_BUILD(g, std::string(kBnParams) + R"(
    input %x : float[2x3x7x6]
    const %w : float[4x3x3x3] = random(1)
    const %b : float[4] = random(2)
    %c : float[?] = Conv(%x, %w, %b) {pads=[1,1,1,1], strides=[2,1]}
    %y : float[?] = BatchNormalization(%c, %g, %be, %m, %v) {epsilon=0.001}
    output %y
  )");
  Graph before = g;
  auto changed = fold_and_check(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Conv");
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FoldBatchnorm, ConvWithoutBiasGetsOne) {
  AOTC_REQUIRE_OPS("Conv", "BatchNormalization", "Relu");
  AOTC_BUILD(g, std::string(kBnParams) + R"(
    input %x : float[1x3x5x5]
    const %w : float[4x3x1x1] = random(1)
    %c : float[?] = Conv(%x, %w)
    %n : float[?] = BatchNormalization(%c, %g, %be, %m, %v)
    %y : float[?] = Relu(%n)
    output %y
  )");
  Graph before = g;
  auto changed = fold_and_check(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Conv,Relu");
  EXPECT_NE(g.nodes[0].input(2), kNoValue);
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FoldBatchnorm, DepthwiseConvAndTwoBnsInARow) {
  AOTC_REQUIRE_OPS("Conv", "BatchNormalization");
  AOTC_BUILD(g, std::string(kBnParams) + R"(
    input %x : float[1x4x6x6]
    const %w : float[4x1x3x3] = random(1)
    const %g2 : float[4] = random(13, 0.5, 2)
    const %v2 : float[4] = random(16, 0.1, 2)
    %c : float[?] = Conv(%x, %w) {group=4, pads=[1,1,1,1]}
    %n : float[?] = BatchNormalization(%c, %g, %be, %m, %v)
    %y : float[?] = BatchNormalization(%n, %g2, %be, %m, %v2)
    output %y
  )");
  Graph before = g;
  auto changed = fold_and_check(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Conv");
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FoldBatchnorm, FusedConvWithoutEpilogueFoldsWithActivationDoesNot) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "BatchNormalization");
  AOTC_BUILD(g, std::string(kBnParams) + R"(
    input %x : float[1x3x5x5]
    const %w : float[4x3x3x3] = random(1)
    const %b : float[4] = random(2)
    %c : float[?] = aotc.FusedConv(%x, %w, %b)
    %y : float[?] = BatchNormalization(%c, %g, %be, %m, %v)
    %c2 : float[?] = aotc.FusedConv(%x, %w, %b) {activation="Relu"}
    %y2 : float[?] = BatchNormalization(%c2, %g, %be, %m, %v)
    output %y, %y2
  )");
  Graph before = g;
  auto changed = fold_and_check(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "aotc.FusedConv,aotc.FusedConv,BatchNormalization");
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

void expect_no_fold(const std::string& text) {
  auto built = testing_util::build(std::string(kBnParams) + text);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  Graph& g = *built;
  std::string ops = op_list(g);
  auto changed = fold_batchnorm(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(op_list(g), ops);
}

TEST(FoldBatchnorm, DoesNotFireWhenConvOutputHasAnotherConsumer) {
  AOTC_REQUIRE_OPS("Conv", "BatchNormalization", "Relu");
  expect_no_fold(R"(
    input %x : float[1x3x5x5]
    const %w : float[4x3x3x3] = random(1)
    %c : float[?] = Conv(%x, %w)
    %y : float[?] = BatchNormalization(%c, %g, %be, %m, %v)
    %r : float[?] = Relu(%c)
    output %y, %r
  )");
}

TEST(FoldBatchnorm, DoesNotFireWhenConvOutputIsAGraphOutput) {
  AOTC_REQUIRE_OPS("Conv", "BatchNormalization");
  expect_no_fold(R"(
    input %x : float[1x3x5x5]
    const %w : float[4x3x3x3] = random(1)
    %c : float[?] = Conv(%x, %w)
    %y : float[?] = BatchNormalization(%c, %g, %be, %m, %v)
    output %y, %c
  )");
}

TEST(FoldBatchnorm, DoesNotFireWhenBnParamsAreNotConstant) {
  AOTC_REQUIRE_OPS("Conv", "BatchNormalization");
  expect_no_fold(R"(
    input %x : float[1x3x5x5]
    input %mean : float[4]
    const %w : float[4x3x3x3] = random(1)
    %c : float[?] = Conv(%x, %w)
    %y : float[?] = BatchNormalization(%c, %g, %be, %mean, %v)
    output %y
  )");
}

TEST(FoldBatchnorm, DoesNotFireWhenWeightsAreNotConstant) {
  AOTC_REQUIRE_OPS("Conv", "BatchNormalization");
  expect_no_fold(R"(
    input %x : float[1x3x5x5]
    input %w : float[4x3x3x3]
    %c : float[?] = Conv(%x, %w)
    %y : float[?] = BatchNormalization(%c, %g, %be, %m, %v)
    output %y
  )");
}

TEST(FoldBatchnorm, DoesNotFireWithoutAConvBeforeIt) {
  AOTC_REQUIRE_OPS("BatchNormalization", "Relu");
  expect_no_fold(R"(
    input %x : float[1x4x5x5]
    %c : float[?] = Relu(%x)
    %y : float[?] = BatchNormalization(%c, %g, %be, %m, %v)
    output %y
  )");
}

}  // namespace
}  // namespace aotc
