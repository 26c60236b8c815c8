// cancel_row_permutations: a Gemm between a row gather and the inverse row permutation reads and
// writes its rows in order; a residual Add of the result joins the Gemm. Same outputs, and where
// it must not fire (the permutations do not cancel, the gather is not whole rows, a reader in
// between).
#include <algorithm>

#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// ViT's output projection after fuse_attention_operands: attention rows y [B=2, S=3, E=8] gathered
// into [S*B, E] rows (s, b), projected, back to [S, B, E] and transposed to [B, S, E], plus the
// skip connection x. PERM / GATHER replaceable.
std::string projection(const std::string& perm = "[1,0,2]",
                       const std::string& gather = "dims=[3,2,8], strides=[8,24,1]", const std::string& extra = "") {
  return R"(
    input %y : float16[2x3x8]
    input %x : float16[2x3x8]
    const %w : float16[8x8] = random(1)
    const %b : float16[8] = random(2)
    const %s3 : int64[3] = [3,2,8]
    %a : float16[?] = aotc.StridedCopy(%y) {base=0, )" + gather + R"(, shape=[6,8]}
    %g : float16[?] = Gemm(%a, %w, %b) {transB=1}
    %r : float16[?] = Reshape(%g, %s3)
    %t : float16[?] = Transpose(%r) {perm=)" + perm + R"(}
    %o : float16[?] = Add(%x, %t)
  )" + (extra.empty() ? "    output %o\n" : extra);
}

TEST(CancelRowPermutations, ProjectionReadsRowsInOrderAndTakesTheResidual) {
  AOTC_REQUIRE_OPS("Gemm", "aotc.StridedCopy", "aotc.FusedGemm", "Transpose");
  AOTC_BUILD(g, projection());
  Graph before = g;
  auto changed = cancel_row_permutations(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Reshape,Reshape,aotc.FusedGemm,Reshape");
  const Node& f = g.nodes[2];
  EXPECT_EQ(g.value(f.inputs[0]).shape, (Shape{6, 8}));
  EXPECT_NE(f.input(3), kNoValue);  // the skip connection
  EXPECT_EQ(g.nodes[3].outputs[0], g.find_value("o"));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 2.5e-3, 1e-3));
}

TEST(CancelRowPermutations, WithoutAResidualAddTheTransposeBecomesAView) {
  AOTC_REQUIRE_OPS("Gemm", "aotc.StridedCopy", "Transpose", "Relu");
  AOTC_BUILD(g, projection("[1,0,2]", "dims=[3,2,8], strides=[8,24,1]",
                           "    %z : float16[?] = Relu(%t)\n    output %z\n    output %o\n"));
  Graph before = g;
  auto changed = cancel_row_permutations(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Reshape,Gemm,Reshape,Add,Relu");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 4, 2.5e-3, 1e-3));
}

// The input projection: LN rows transposed to (s, b) order, projected, read by the attention
// through views (rows (s, b): batch stride 1 row, row stride B rows). After: the rows in (b, s)
// order, the views rewritten (batch stride S rows, row stride 1 row), no Transpose.
std::string input_projection(const std::string& q_view = "[0,24,4,48]") {
  return R"(
    input %x : float16[2x3x8]
    const %w : float16[8x24] = random(1)
    const %b : float16[24] = random(2)
    const %s2 : int64[2] = [6,8]
    %t : float16[?] = Transpose(%x) {perm=[1,0,2]}
    %r : float16[?] = Reshape(%t, %s2)
    %g : float16[?] = Gemm(%r, %w, %b)
    %y : float16[?] = aotc.StridedAttention(%g, %g, %g) {q_shape=[2,3,8], k_shape=[2,3,8], v_shape=[2,3,8], q_view=)" +
         q_view + R"(, k_view=[8,24,4,48], v_view=[16,24,4,48], q_num_heads=2, kv_num_heads=2, scale=0.5}
    output %y
  )";
}

TEST(CancelRowPermutations, InputProjectionReadsRowsInOrderAndTheViewsFollow) {
  AOTC_REQUIRE_OPS("Gemm", "Transpose", "aotc.StridedAttention");
  AOTC_BUILD(g, input_projection());
  Graph before = g;
  auto changed = cancel_row_permutations(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Reshape,Gemm,aotc.StridedAttention");
  const Node& a = g.nodes[2];
  EXPECT_EQ(a.attr_ints("q_view"), (std::vector<int64_t>{0, 72, 4, 24}));
  EXPECT_EQ(a.attr_ints("k_view"), (std::vector<int64_t>{8, 72, 4, 24}));
  EXPECT_EQ(a.attr_ints("v_view"), (std::vector<int64_t>{16, 72, 4, 24}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3));
}

// Third form, one batch: the batch-first transposes are views already (a unit axis moves), so only
// the residual rule is left: Add(x, Reshape(G)) -> the GEMM's residual input, either operand order.
std::string one_batch(const std::string& add = "Add(%x, %t)", const std::string& x_shape = "1x6x8",
                      const std::string& t_shape = "[1,6,8]", const std::string& gemm = "Gemm(%y, %w, %b) {transB=1}") {
  return R"(
    input %y : float16[6x8]
    input %x : float16[)" + x_shape + R"(]
    const %w : float16[8x8] = random(1)
    const %b : float16[8] = random(2)
    const %s3 : int64[)" + std::to_string(std::count(t_shape.begin(), t_shape.end(), ',') + 1) + R"(] = )" + t_shape + R"(
    %g : float16[?] = )" + gemm + R"(
    %t : float16[?] = Reshape(%g, %s3)
    %o : float16[?] = )" + add + R"(
    output %o
  )";
}

TEST(CancelRowPermutations, OneBatchResidualBehindARowReshapeJoinsTheGemm) {
  AOTC_REQUIRE_OPS("Gemm", "aotc.FusedGemm", "Reshape", "Add");
  for (const std::string add : {"Add(%x, %t)", "Add(%t, %x)"}) {
    AOTC_BUILD(g, one_batch(add));
    Graph before = g;
    auto changed = cancel_row_permutations(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed) << add;
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(op_list(g), "Reshape,aotc.FusedGemm,Reshape") << add;
    const Node& f = g.nodes[1];
    EXPECT_NE(f.input(3), kNoValue);  // the skip connection
    EXPECT_EQ(g.value(f.outputs[0]).shape, (Shape{6, 8}));
    EXPECT_EQ(g.nodes[2].outputs[0], g.find_value("o"));
    EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 2.5e-3, 1e-3)) << add;
  }
}

TEST(CancelRowPermutations, MustNotFire) {
  AOTC_REQUIRE_OPS("Gemm", "aotc.StridedCopy", "Transpose");
  std::vector<std::pair<const char*, std::string>> cases = {
      {"the gather is the identity order but the transpose permutes (no cancellation)",
       projection("[1,0,2]", "dims=[2,3,8], strides=[24,8,1]")},
      {"the gather reverses the feature columns (not whole rows)", R"(
    input %y : float16[2x3x8]
    const %w : float16[8x8] = random(1)
    const %s3 : int64[3] = [3,2,8]
    %a : float16[?] = aotc.StridedCopy(%y) {base=7, dims=[3,2,8], strides=[8,24,-1], shape=[6,8]}
    %g : float16[?] = Gemm(%a, %w) {transB=1}
    %r : float16[?] = Reshape(%g, %s3)
    %t : float16[?] = Transpose(%r) {perm=[1,0,2]}
    output %t
  )"},
      {"the Gemm output is also read before the transpose", projection("[1,0,2]", "dims=[3,2,8], strides=[8,24,1]",
                                                                       "    output %o\n    output %g\n")},
  };
  {
    std::string also_read = input_projection();
    also_read.replace(also_read.find("    output %y"), 0, "    %z : float16[?] = Relu(%g)\n    output %z\n");
    cases.push_back({"the projection is also read by another op (in the permuted order)", also_read});
  }
  // The third form's must-not-fire: the reshape does not keep the rows, the skip connection
  // broadcasts, the GEMM has an activation (the residual would land inside it).
  cases.push_back({"one batch: the reshape regroups the columns", one_batch("Add(%x, %t)", "1x12x4", "[1,12,4]")});
  cases.push_back({"one batch: the skip connection broadcasts", one_batch("Add(%x, %t)", "8")});
  cases.push_back({"one batch: the GEMM applies Relu", one_batch("Add(%x, %t)", "1x6x8", "[1,6,8]",
                                                               "aotc.FusedGemm(%y, %w, %b, _) {transB=1, activation=\"Relu\"}")});
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    auto changed = cancel_row_permutations(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first << ": " << op_list(g);
  }
}

}  // namespace
}  // namespace aotc
