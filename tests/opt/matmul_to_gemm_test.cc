// matmul_to_gemm: MatMul([.., K] activations, constant [K, N]) -> Gemm over flattened rows, the
// reshape back moved past bias / residual Adds and an activation so fuse_epilogue can absorb them;
// CPU reference before/after on random inputs, and the cases where it must not fire.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

Expected<bool> run_verified(Graph& g, Expected<bool> (*pass)(Graph&)) {
  Expected<bool> changed = pass(g);
  if (changed) {
    Status s = verify(g);
    if (!s) return s;
  }
  return changed;
}

const char* kLinearBlock = R"(
    input %x : float[2x5x8]
    input %r : float[2x5x6]
    const %w : float[8x6] = random(1)
    const %b : float[6] = random(2)
    %m : float[?] = MatMul(%x, %w)  # fc
    %mb : float[?] = Add(%m, %b)
    %s : float[?] = Add(%r, %mb)
    %y : float[?] = Relu(%s)
    output %y
  )";

TEST(MatmulToGemm, LinearWithBiasResidualAndActivationBecomesGemmOnRows) {
  AOTC_REQUIRE_OPS("MatMul", "Gemm", "Add", "Relu", "Reshape");
  AOTC_BUILD(g, kLinearBlock);
  Graph before = g;
  auto changed = run_verified(g, matmul_to_gemm);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Reshape,Gemm,Add,Reshape,Add,Relu,Reshape");
  const Node& gemm = g.nodes[1];
  EXPECT_EQ(gemm.name, "fc");
  EXPECT_EQ(g.value(gemm.outputs[0]).shape, (Shape{10, 6}));
  EXPECT_EQ(g.value(g.nodes[2].outputs[0]).shape, (Shape{10, 6}));  // bias Add on the 2-D rows
  EXPECT_EQ(g.nodes[2].inputs[1], g.find_value("b"));               // the bias keeps its shape
  EXPECT_EQ(g.value(g.nodes[3].outputs[0]).shape, (Shape{10, 6}));  // view of the residual
  EXPECT_EQ(g.nodes[3].inputs[0], g.find_value("r"));
  EXPECT_EQ(g.nodes.back().outputs[0], g.find_value("y"));
  EXPECT_EQ(g.value(g.find_value("y")).shape, (Shape{2, 5, 6}));
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(MatmulToGemm, ThenFuseEpilogueMakesOneFusedGemm) {
  AOTC_REQUIRE_OPS("MatMul", "Gemm", "aotc.FusedGemm", "Add", "Relu", "Reshape");
  AOTC_BUILD(g, kLinearBlock);
  Graph before = g;
  ASSERT_TRUE(run_verified(g, matmul_to_gemm).is_ok());
  auto fused = run_verified(g, fuse_epilogue);
  ASSERT_TRUE(fused.is_ok()) << fused.status().message();
  EXPECT_TRUE(*fused);
  EXPECT_EQ(op_list(g), "Reshape,Reshape,aotc.FusedGemm,Reshape");
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(MatmulToGemm, TwoDimensionalMatMulNeedsNoViews) {
  AOTC_REQUIRE_OPS("MatMul", "Gemm", "Add");
  AOTC_BUILD(g, R"(
    input %x : float[3x4]
    const %w : float[4x5] = random(1)
    const %b : float[1x5] = random(2)
    %m : float[?] = MatMul(%x, %w)
    %y : float[?] = Add(%b, %m)
    output %y
  )");
  Graph before = g;
  auto changed = run_verified(g, matmul_to_gemm);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Gemm,Add");
  EXPECT_EQ(g.nodes[1].outputs[0], g.find_value("y"));
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(MatmulToGemm, StopsSinkingAtABroadcastPartnerAndKeepsTheChainCorrect) {
  AOTC_REQUIRE_OPS("MatMul", "Gemm", "Add", "Reshape");
  AOTC_BUILD(g, R"(
    input %x : float[2x3x4]
    input %z : float[2x1x5]
    const %w : float[4x5] = random(1)
    %m : float[?] = MatMul(%x, %w)
    %y : float[?] = Add(%m, %z)
    output %y
  )");
  Graph before = g;
  auto changed = run_verified(g, matmul_to_gemm);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Reshape,Gemm,Reshape,Add");  // the broadcast Add stays N-D
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

// GPT-2's Conv1D: Gemm(bias) on flattened rows, reshaped back, then the residual Add and an
// activation: the Reshape moves to the end so fuse_epilogue makes one FusedGemm.
TEST(MatmulToGemm, ReshapeAfterAGemmIsSunkPastResidualAndActivation) {
  AOTC_REQUIRE_OPS("Gemm", "aotc.FusedGemm", "Add", "Relu", "Reshape");
  AOTC_BUILD(g, R"(
    input %x : float[6x4]
    input %r : float[2x3x5]
    const %w : float[4x5] = random(1)
    const %b : float[5] = random(2)
    const %s : int64[3] = [2,3,5]
    %m : float[?] = Gemm(%x, %w, %b)  # c_proj
    %m3 : float[?] = Reshape(%m, %s)
    %a : float[?] = Add(%r, %m3)
    %y : float[?] = Relu(%a)
    output %y
  )");
  Graph before = g;
  auto changed = run_verified(g, matmul_to_gemm);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Gemm,Reshape,Add,Relu,Reshape");
  EXPECT_EQ(g.nodes.back().outputs[0], g.find_value("y"));
  EXPECT_TRUE(testing_util::same_outputs(before, g));
  auto fused = run_verified(g, fuse_epilogue);
  ASSERT_TRUE(fused.is_ok()) << fused.status().message();
  EXPECT_EQ(op_list(g), "Reshape,aotc.FusedGemm,Reshape");
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(MatmulToGemm, GemmWithNothingToAbsorbStays) {
  AOTC_REQUIRE_OPS("Gemm", "Reshape", "Softmax");
  AOTC_BUILD(g, R"(
    input %x : float[6x4]
    const %w : float[4x5] = random(1)
    const %s : int64[3] = [2,3,5]
    %m : float[?] = Gemm(%x, %w)
    %m3 : float[?] = Reshape(%m, %s)
    %y : float[?] = Softmax(%m3) {axis=-1}
    output %y
  )");
  auto changed = matmul_to_gemm(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(op_list(g), "Gemm,Reshape,Softmax");
}

TEST(MatmulToGemm, MustNotFire) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"B not a constant", R"(
    input %x : float[2x3x4]
    input %w : float[4x5]
    %y : float[?] = MatMul(%x, %w)
    output %y
  )"},
      {"batched constant B", R"(
    input %x : float[2x3x4]
    const %w : float[2x4x5] = random(1)
    %y : float[?] = MatMul(%x, %w)
    output %y
  )"},
      {"1-D activation", R"(
    input %x : float[4]
    const %w : float[4x5] = random(1)
    %y : float[?] = MatMul(%x, %w)
    output %y
  )"},
      {"double MatMul (no cuBLASLt Gemm for it)", R"(
    input %x : double[2x3x4]
    const %w : double[4x5] = random(1)
    %y : double[?] = MatMul(%x, %w)
    output %y
  )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    auto changed = matmul_to_gemm(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first;
    EXPECT_EQ(op_list(g), "MatMul") << c.first;
  }
}

// A tied embedding read as the LM head (the dynamo exporter keeps Transpose(wte) because the
// 154 MB transpose is over the folding limit): the Gemm reads the constant with transB, and the
// Gather of the embedding keeps reading the same constant.
TEST(MatmulToGemm, TransposedConstantIsReadWithTransB) {
  AOTC_REQUIRE_OPS("MatMul", "Gemm", "Transpose", "Gather", "Reshape");
  AOTC_BUILD(g, R"(
    input %ids : int64[2x3]
    const %wte : float[7x4] = random(1)
    %h : float[?] = Gather(%wte, %ids)
    %wt : float[?] = Transpose(%wte) {perm=[1,0]}
    %y : float[?] = MatMul(%h, %wt)  # lm_head
    output %y
  )");
  Graph before = g;
  auto changed = run_verified(g, matmul_to_gemm);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Gather,Reshape,Gemm,Reshape");
  const Node& gemm = g.nodes[2];
  EXPECT_EQ(gemm.inputs[1], g.find_value("wte"));
  EXPECT_EQ(gemm.attr_int("transB", 0), 1);
  EXPECT_EQ(g.value(gemm.outputs[0]).shape, (Shape{6, 7}));
  EXPECT_EQ(g.value(g.find_value("y")).shape, (Shape{2, 3, 7}));
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(MatmulToGemm, TransposedConstantMustNotFire) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"the transpose has another reader", R"(
    input %x : float[2x3x4]
    const %w : float[5x4] = random(1)
    %wt : float[?] = Transpose(%w) {perm=[1,0]}
    %y : float[?] = MatMul(%x, %wt)
    %z : float[?] = Relu(%wt)
    output %y
    output %z
  )"},
      {"transpose of an activation", R"(
    input %x : float[2x3x4]
    input %w : float[5x4]
    %wt : float[?] = Transpose(%w) {perm=[1,0]}
    %y : float[?] = MatMul(%x, %wt)
    output %y
  )"},
      {"transpose of a 3-D constant", R"(
    input %x : float[2x3x4]
    const %w : float[2x5x4] = random(1)
    %wt : float[?] = Transpose(%w) {perm=[0,2,1]}
    %y : float[?] = MatMul(%x, %wt)
    output %y
  )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    const std::string ops = op_list(g);
    auto changed = matmul_to_gemm(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first;
    EXPECT_EQ(op_list(g), ops) << c.first;
  }
}

TEST(MatmulToGemm, ASharedIntermediateIsNotSunkPast) {
  AOTC_REQUIRE_OPS("MatMul", "Gemm", "Add", "Reshape");
  AOTC_BUILD(g, R"(
    input %x : float[2x3x4]
    const %w : float[4x5] = random(1)
    const %b : float[5] = random(2)
    %m : float[?] = MatMul(%x, %w)
    %y : float[?] = Add(%m, %b)
    %z : float[?] = Relu(%m)
    output %y
    output %z
  )");
  Graph before = g;
  auto changed = run_verified(g, matmul_to_gemm);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_EQ(op_list(g), "Reshape,Gemm,Reshape,Add,Relu");  // %m has two readers: nothing sunk
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

}  // namespace
}  // namespace aotc
