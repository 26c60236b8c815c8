// fuse_epilogue: Conv/Gemm + bias Add + residual Add + activation -> aotc.FusedConv/FusedGemm.
// Structure after the pass, the reference of the fused graph against the unfused one on random
// inputs, and the cases where it must not fire (shared intermediates, graph outputs, broadcast
// residuals, activations the epilogue cannot take).
#include "ir/ops/epilogue.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

Expected<bool> fuse_and_verify(Graph& g) {
  Expected<bool> changed = fuse_epilogue(g);
  if (changed) {
    Status s = verify(g);
    if (!s) return s;
  }
  return changed;
}

TEST(FuseEpilogue, ConvBiasResidualReluBecomesOneNode) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Add", "Relu");
  AOTC_BUILD(g, R"(
    input %x : float[2x3x6x6]
    input %r : float[2x4x6x6]
    const %w : float[4x3x3x3] = random(1)
    const %b : float[1x4x1x1] = random(2)
    %c : float[?] = Conv(%x, %w) {pads=[1,1,1,1]}  # conv1
    %cb : float[?] = Add(%c, %b)
    %s : float[?] = Add(%r, %cb)
    %y : float[?] = Relu(%s)
    output %y
  )");
  Graph before = g;
  auto changed = fuse_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_EQ(op_list(g), "aotc.FusedConv");
  const Node& f = g.nodes[0];
  EXPECT_EQ(f.name, "conv1");
  EXPECT_EQ(f.input(0), g.find_value("x"));
  EXPECT_EQ(f.input(1), g.find_value("w"));
  ASSERT_NE(f.input(2), kNoValue);
  EXPECT_EQ(g.value(f.input(2)).shape, Shape{4});
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(g.value(f.input(2)).constant->get(i), g.value(g.find_value("b")).constant->get(i));
  EXPECT_EQ(f.input(3), g.find_value("r"));
  EXPECT_EQ(f.attr_string("activation", ""), "Relu");
  EXPECT_EQ(f.attr_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(f.outputs[0], g.find_value("y"));
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FuseEpilogue, ResidualProducedAfterTheConvIsStillDefinedBeforeTheFusedNode) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Add", "Sigmoid");
  AOTC_BUILD(g, R"(
    input %x : float[1x3x5x5]
    input %x2 : float[1x4x5x5]
    const %w : float[4x3x3x3] = random(1)
    const %b : float[4] = random(2)
    %c : float[?] = Conv(%x, %w, %b) {pads=[1,1,1,1]}
    %r : float[?] = Sigmoid(%x2)
    %y : float[?] = Add(%c, %r)
    output %y
  )");
  Graph before = g;
  auto changed = fuse_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Sigmoid,aotc.FusedConv");
  EXPECT_EQ(g.nodes[1].input(3), g.find_value("r"));
  EXPECT_FALSE(has_activation(g.nodes[1]));
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FuseEpilogue, ClipWithConstantBoundsIsAbsorbed) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Clip");
  AOTC_BUILD(g, R"(
    input %x : float[1x3x5x5]
    const %w : float[4x3x3x3] = random(1)
    const %b : float[4] = random(2)
    const %lo : float[scalar] = [0]
    const %hi : float[scalar] = [0.5]
    %c : float[?] = Conv(%x, %w, %b)
    %y : float[?] = Clip(%c, %lo, %hi)
    output %y
  )");
  Graph before = g;
  auto changed = fuse_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_EQ(op_list(g), "aotc.FusedConv");
  EXPECT_EQ(g.nodes[0].attr_string("activation", ""), "Clip");
  EXPECT_EQ(g.nodes[0].attr_float("act.max", 0), 0.5f);
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FuseEpilogue, GemmBiasAndActivation) {
  AOTC_REQUIRE_OPS("Gemm", "aotc.FusedGemm", "Add", "Sigmoid", "Relu");
  AOTC_BUILD(g, R"(
    input %a : float[3x5]
    const %w : float[4x5] = random(1)
    const %c : float[4] = random(2)
    const %w2 : float[4x4] = random(3)
    %g1 : float[?] = Gemm(%a, %w, %c) {transB=1, alpha=0.5, beta=2.0}
    %y1 : float[?] = Sigmoid(%g1)
    %g2 : float[?] = Gemm(%y1, %w2) {alpha=1.5, beta=0.25}
    %s2 : float[?] = Add(%g2, %c)
    %y2 : float[?] = Relu(%s2)
    output %y2
  )");
  Graph before = g;
  auto changed = fuse_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_EQ(op_list(g), "aotc.FusedGemm,aotc.FusedGemm");
  EXPECT_EQ(g.nodes[0].attr_string("activation", ""), "Sigmoid");
  EXPECT_EQ(g.nodes[0].attr_float("beta", 0), 2.0f);
  EXPECT_EQ(g.nodes[1].input(2), g.find_value("c"));
  EXPECT_EQ(g.nodes[1].attr_float("beta", 0), 1.0f);
  EXPECT_EQ(g.nodes[1].attr_string("activation", ""), "Relu");
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FuseEpilogue, GemmResidualEitherOrder) {
  AOTC_REQUIRE_OPS("Gemm", "aotc.FusedGemm", "Add");
  AOTC_BUILD(g, R"(
    input %a : float[3x5]
    input %r : float[3x4]
    const %w : float[5x4] = random(1)
    %g1 : float[?] = Gemm(%a, %w)
    %y : float[?] = Add(%r, %g1)
    output %y
  )");
  Graph before = g;
  auto changed = fuse_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_EQ(op_list(g), "aotc.FusedGemm");
  EXPECT_EQ(g.nodes[0].input(2), kNoValue);
  EXPECT_EQ(g.nodes[0].input(3), g.find_value("r"));
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FuseEpilogue, Float16ConvBiasSigmoid) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Add", "Sigmoid");
  AOTC_BUILD(g, R"(
    input %x : float16[1x3x5x5]
    const %w : float16[4x3x3x3] = random(1, -0.3, 0.3)
    const %b : float16[4x1x1] = random(2)
    %c : float16[?] = Conv(%x, %w) {pads=[1,1,1,1]}
    %s : float16[?] = Add(%c, %b)
    %y : float16[?] = Sigmoid(%s)
    output %y
  )");
  Graph before = g;
  auto changed = fuse_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_EQ(op_list(g), "aotc.FusedConv");
  EXPECT_EQ(g.value(g.nodes[0].input(2)).dtype, DType::kFloat16);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 2.5e-3, 1e-3));
}

// --epilogue-exclude (Target::epilogue_excluded) keeps an activation the epilogue would take a
// node of its own (the bias is still fused); the other op types stay absorbable.
TEST(FuseEpilogue, ExcludedActivationStaysANodeOfItsOwn) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Add", "Sigmoid", "Swish");
  auto text = [](const std::string& act) {
    return R"(
    input %x : float[1x3x5x5]
    const %w : float[4x3x3x3] = random(1)
    const %b : float[4x1x1] = random(2)
    %c : float[?] = Conv(%x, %w) {pads=[1,1,1,1]}
    %s : float[?] = Add(%c, %b)
    %y : float[?] = )" + act + R"((%s)
    output %y
  )";
  };
  AOTC_BUILD(g, text("Sigmoid"));
  g.target.epilogue_excluded = {"Relu", "Gelu"};
  Graph before = g;
  auto changed = fuse_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_EQ(op_list(g), "aotc.FusedConv");
  EXPECT_EQ(g.nodes[0].attr_string("activation", ""), "Sigmoid");
  AOTC_BUILD(excluded, text("Sigmoid"));
  excluded.target.epilogue_excluded = {"Relu", "Sigmoid"};
  changed = fuse_and_verify(excluded);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_EQ(op_list(excluded), "aotc.FusedConv,Sigmoid");
  EXPECT_TRUE(testing_util::same_outputs(before, excluded));
}

// Swish (SiLU; epilogue_not_on_gemm): absorbed by a 3x3 and a depthwise convolution, not by a
// 1x1 stride-1 one (it runs as a cuBLASLt GEMM, whose epilogues lack it: taking it would move it
// to a slower CUTLASS convolution, docs/perf_notes.md v64); a strided or padded 1x1 is not a
// pointwise GEMM and takes it. A Gemm takes it (its GEMV / SIMT kernels compute it, after
// cuBLASLt the epilogue kernel replaces the Swish kernel), except with --gemm-wgmma on, where it
// would move the Gemm to CUTLASS 3.x's kernel.
TEST(FuseEpilogue, SwishOnlyIntoConvolutionsThatAreNotGemms) {
  AOTC_REQUIRE_OPS("Conv", "Gemm", "aotc.FusedConv", "aotc.FusedGemm", "Add", "Swish");
  auto conv = [](const std::string& w, const std::string& attrs) {
    return R"(
    input %x : float[1x4x6x6]
    const %w : float[)" + w + R"(] = random(1)
    const %b : float[4x1x1] = random(2)
    %c : float[?] = Conv(%x, %w) )" + attrs + R"(
    %s : float[?] = Add(%c, %b)
    %y : float[?] = Swish(%s) {alpha=1.0}
    output %y
  )";
  };
  struct Case {
    const char* why;
    std::string text;
    const char* ops;
  };
  const std::vector<Case> cases = {
      {"3x3", conv("4x4x3x3", "{pads=[1,1,1,1]}"), "aotc.FusedConv"},
      {"depthwise 3x3", conv("4x1x3x3", "{pads=[1,1,1,1], group=4}"), "aotc.FusedConv"},
      {"1x1", conv("4x4x1x1", ""), "aotc.FusedConv,Swish"},
      {"1x1 stride 2", conv("4x4x1x1", "{strides=[2,2]}"), "aotc.FusedConv"},
      {"Gemm", R"(
    input %x : float[3x8]
    const %w : float[8x5] = random(1)
    const %b : float[5] = random(2)
    %g : float[?] = Gemm(%x, %w)
    %gb : float[?] = Add(%g, %b)
    %y : float[?] = Swish(%gb) {alpha=1.0}
    output %y
  )", "aotc.FusedGemm"},
  };
  for (bool gemm_wgmma : {false, true}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(c.why) + (gemm_wgmma ? ", --gemm-wgmma on" : ""));
      auto built = testing_util::build(c.text);
      ASSERT_TRUE(built.is_ok()) << built.status().message();
      Graph& g = *built;
      g.target.gemm_wgmma = gemm_wgmma;
      const std::string expected = gemm_wgmma && std::string(c.why) == "Gemm" ? "aotc.FusedGemm,Swish" : c.ops;
      Graph before = g;
      auto changed = fuse_and_verify(g);
      ASSERT_TRUE(changed.is_ok()) << changed.status().message();
      EXPECT_EQ(op_list(g), expected);
      if (op_list(g) == "aotc.FusedConv" || op_list(g) == "aotc.FusedGemm") {
        EXPECT_EQ(g.nodes[0].attr_string("activation", ""), "Swish");
      }
      EXPECT_TRUE(testing_util::same_outputs(before, g));
    }
  }
}

void expect_ops_after(const std::string& text, const std::string& ops) {
  auto built = testing_util::build(text);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  Graph& g = *built;
  Graph before = g;
  auto changed = fuse_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_EQ(op_list(g), ops);
  EXPECT_EQ(*changed, op_list(before) != ops);
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FuseEpilogue, DoesNotFireOnALoneConv) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv");
  expect_ops_after(R"(
    input %x : float[1x3x5x5]
    const %w : float[4x3x3x3] = random(1)
    %y : float[?] = Conv(%x, %w)
    output %y
  )", "Conv");
}

TEST(FuseEpilogue, StopsAtAnIntermediateWithTwoConsumers) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Add", "Relu", "Sigmoid");
  // %cb feeds Relu and Sigmoid: the bias Add is absorbed, the activations are not.
  expect_ops_after(R"(
    input %x : float[1x3x5x5]
    const %w : float[4x3x3x3] = random(1)
    const %b : float[4x1x1] = random(2)
    %c : float[?] = Conv(%x, %w)
    %cb : float[?] = Add(%b, %c)
    %y1 : float[?] = Relu(%cb)
    %y2 : float[?] = Sigmoid(%cb)
    output %y1, %y2
  )", "aotc.FusedConv,Relu,Sigmoid");
}

TEST(FuseEpilogue, DoesNotFireWhenConvOutputIsAGraphOutput) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Relu");
  expect_ops_after(R"(
    input %x : float[1x3x5x5]
    const %w : float[4x3x3x3] = random(1)
    %c : float[?] = Conv(%x, %w)
    %y : float[?] = Relu(%c)
    output %y, %c
  )", "Conv,Relu");
}

TEST(FuseEpilogue, DoesNotTakeABroadcastResidualOrANonChannelBias) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Add");
  // %r broadcasts (not exactly the output shape); %k varies along W (not a per-channel bias).
  expect_ops_after(R"(
    input %x : float[1x3x5x5]
    input %r : float[1x4x1x5]
    const %w : float[4x3x3x3] = random(1)
    const %k : float[5] = random(2)
    %c : float[?] = Conv(%x, %w) {pads=[1,1,1,1]}
    %y : float[?] = Add(%c, %r)
    %c2 : float[?] = Conv(%x, %w) {pads=[1,1,1,1]}
    %y2 : float[?] = Add(%c2, %k)
    output %y, %y2
  )", "Conv,Add,Conv,Add");
}

TEST(FuseEpilogue, DoesNotAbsorbANonEpilogueOpOrClipWithRuntimeBounds) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Softmax", "Clip");
  expect_ops_after(R"(
    input %x : float[1x3x5x5]
    input %hi : float[scalar]
    const %w : float[4x3x3x3] = random(1)
    %c : float[?] = Conv(%x, %w)
    %y : float[?] = Softmax(%c) {axis=1}
    %c2 : float[?] = Conv(%x, %w)
    %y2 : float[?] = Clip(%c2, _, %hi)
    output %y, %y2
  )", "Conv,Softmax,Conv,Clip");
}

TEST(FuseEpilogue, ActivationAfterResidualOnlyOnce) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Add", "Relu", "Sigmoid");
  // conv + r -> Relu -> Sigmoid: one activation is absorbed, the second stays.
  expect_ops_after(R"(
    input %x : float[1x3x5x5]
    input %r : float[1x4x3x3]
    const %w : float[4x3x3x3] = random(1)
    %c : float[?] = Conv(%x, %w)
    %s : float[?] = Add(%c, %r)
    %a : float[?] = Relu(%s)
    %y : float[?] = Sigmoid(%a)
    output %y
  )", "aotc.FusedConv,Sigmoid");
}

}  // namespace
}  // namespace aotc
