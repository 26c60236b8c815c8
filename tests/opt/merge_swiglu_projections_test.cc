// merge_swiglu_projections: a SwiGLU of two projections of one input (LLaMA's gate and up, Gemms
// through reshape views) becomes one Gemm with the weights side by side and aotc.SwiGLUPacked over
// its rows; same outputs on the CPU reference, and where it must not fire.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// LLaMA's MLP after matmul_to_gemm and fuse_swiglu: h [2, 8, 32], gate and up [2, 8, 48].
// GATE / UP: the two projections' lines (weights %wg / %wu, or whatever the case swaps in).
std::string llama_mlp(const std::string& gate = "%g2 : float16[?] = Gemm(%hr1, %wg)",
                      const std::string& up = "%u2 : float16[?] = Gemm(%hr2, %wu)", const std::string& extra = "") {
  return R"(
    input %h : float16[2x8x32]
    input %h2 : float16[2x8x32]
    input %wx : float16[32x48]
    const %rs : int64[2] = [16,32]
    const %us : int64[3] = [2,8,48]
    const %wg : float16[32x48] = random(1)
    const %wu : float16[32x48] = random(2)
    %hr1 : float16[?] = Reshape(%h, %rs)
    %hr2 : float16[?] = Reshape(%h, %rs)
    %hx : float16[?] = Reshape(%h2, %rs)
    )" + gate + "\n    " + up + R"(
    %g : float16[?] = Reshape(%g2, %us)
    %u : float16[?] = Reshape(%u2, %us)
    %y : float16[?] = SwiGLU(%g, %u)
    output %y
  )" + extra;
}

TEST(MergeSwigluProjections, GateAndUpBecomeOneGemmAndAPackedSwiglu) {
  AOTC_REQUIRE_OPS("Gemm", "SwiGLU", "aotc.SwiGLUPacked");
  AOTC_BUILD(g, llama_mlp());
  Graph before = g;
  auto changed = merge_swiglu_projections(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Reshape,Gemm,aotc.SwiGLUPacked,Reshape");
  EXPECT_EQ(g.value(g.nodes[1].inputs[1]).shape, (Shape{32, 96}));
  EXPECT_EQ(g.value(g.nodes[2].outputs[0]).shape, (Shape{16, 48}));
  EXPECT_EQ(g.nodes[3].outputs[0], g.find_value("y"));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 2.5e-3, 1e-3));
}

// Transposed weights with biases (nn.Linear with bias, as FusedGemm), in float32, alpha kept.
TEST(MergeSwigluProjections, TransposedWeightsWithBiasesAndAlpha) {
  AOTC_REQUIRE_OPS("aotc.FusedGemm", "SwiGLU", "aotc.SwiGLUPacked");
  AOTC_BUILD(g, R"(
    input %h : float[6x16]
    const %wg : float[24x16] = random(1)
    const %wu : float[24x16] = random(2)
    const %bg : float[24] = random(3)
    const %bu : float[24] = random(4)
    %g : float[?] = aotc.FusedGemm(%h, %wg, %bg, _) {transB=1, beta=1.0}
    %u : float[?] = aotc.FusedGemm(%h, %wu, %bu, _) {transB=1, beta=1.0}
    %y : float[?] = SwiGLU(%g, %u) {alpha=1.702}
    output %y
  )");
  Graph before = g;
  auto changed = merge_swiglu_projections(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.FusedGemm,aotc.SwiGLUPacked,Reshape");
  EXPECT_EQ(g.value(g.nodes[0].inputs[1]).shape, (Shape{48, 16}));
  EXPECT_EQ(g.nodes[1].attr_float("alpha", 0.0f), 1.702f);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 5));
}

// The one-wave rule: 16 rows x 2 x 136 columns are 3 tiles of 128 x 128; on a target of 2 SMs the
// two products keep their own GEMMs, on the H200's 132 they merge.
TEST(MergeSwigluProjections, MoreThanOneWaveOfTilesKeepsTwoGemms) {
  AOTC_REQUIRE_OPS("Gemm", "SwiGLU", "aotc.SwiGLUPacked");
  const std::string text = R"(
    input %h : float16[16x32]
    const %wg : float16[32x136] = random(1)
    const %wu : float16[32x136] = random(2)
    %g : float16[?] = Gemm(%h, %wg)
    %u : float16[?] = Gemm(%h, %wu)
    %y : float16[?] = SwiGLU(%g, %u)
    output %y
  )";
  AOTC_BUILD(small, text);
  small.target.sm_count = 2;
  auto changed = merge_swiglu_projections(small);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(op_list(small), "Gemm,Gemm,SwiGLU");
  AOTC_BUILD(h200, text);
  h200.target.sm_count = 132;
  changed = merge_swiglu_projections(h200);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(h200), "Gemm,aotc.SwiGLUPacked,Reshape");
  EXPECT_EQ(h200.nodes[0].name.find("_gate_up") != std::string::npos, true) << h200.nodes[0].name;
}

TEST(MergeSwigluProjections, MustNotFire) {
  AOTC_REQUIRE_OPS("Gemm", "SwiGLU");
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"the projections read different inputs",
       llama_mlp("%g2 : float16[?] = Gemm(%hr1, %wg)", "%u2 : float16[?] = Gemm(%hx, %wu)")},
      {"the gate's product is also a graph output", llama_mlp("%g2 : float16[?] = Gemm(%hr1, %wg)",
                                                              "%u2 : float16[?] = Gemm(%hr2, %wu)", "    output %g2\n")},
      {"a weight that is not a constant",
       llama_mlp("%g2 : float16[?] = Gemm(%hr1, %wx)", "%u2 : float16[?] = Gemm(%hr2, %wu)")},
      {"one projection for both operands", R"(
    input %h : float16[16x32]
    const %wg : float16[32x48] = random(1)
    %g2 : float16[?] = Gemm(%h, %wg)
    %y : float16[?] = SwiGLU(%g2, %g2)
    output %y
  )"},
  };
  for (const auto& [what, text] : cases) {
    AOTC_BUILD(g, text);
    Graph before = g;
    auto changed = merge_swiglu_projections(g);
    ASSERT_TRUE(changed.is_ok()) << what << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << what;
    EXPECT_EQ(op_list(g), op_list(before)) << what;
  }
}

}  // namespace
}  // namespace aotc
