// fuse_matmul_transpose: a MatMul operand made by a Transpose whose second-last output axis is the
// input's last becomes a transposed operand of aotc.MatMulT (the Transpose goes, or keeps the rest
// of its permutation), also through a scalar Mul; same outputs on the CPU reference; and where it
// must not fire (other readers, graph outputs, permutations that would make the copy strided).
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

Expected<bool> run_and_verify(Graph& g) {
  Expected<bool> changed = fuse_matmul_transpose(g);
  if (changed) {
    Status s = verify(g);
    if (!s) return s;
  }
  return changed;
}

const Node& last(const Graph& g) { return g.nodes.back(); }

TEST(FuseMatmulTranspose, SwapOfTheLastTwoAxesBecomesTransB) {
  AOTC_BUILD(g, R"(
    input %q : float[2x3x5x4]
    input %k : float[2x3x6x4]
    %kt : float[?] = Transpose(%k) {perm=[0,1,3,2]}
    %s : float[?] = MatMul(%q, %kt)  # scores
    output %s
  )");
  Graph before = g;
  auto changed = run_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "aotc.MatMulT");
  EXPECT_EQ(last(g).name, "scores");
  EXPECT_EQ(last(g).inputs[1], g.find_value("k"));
  EXPECT_EQ(last(g).attr_int("transA", -1), 0);
  EXPECT_EQ(last(g).attr_int("transB", -1), 1);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{2, 3, 5, 6}));
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FuseMatmulTranspose, BothOperandsAndTheDefaultPermutation) {
  AOTC_BUILD(g, R"(
    input %a : float[4x3]
    input %b : float[5x4]
    %at : float[?] = Transpose(%a)
    %bt : float[?] = Transpose(%b)
    %y : float[?] = MatMul(%at, %bt)
    output %y
  )");
  Graph before = g;
  ASSERT_TRUE(run_and_verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.MatMulT");
  EXPECT_EQ(last(g).attr_int("transA", -1), 1);
  EXPECT_EQ(last(g).attr_int("transB", -1), 1);
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FuseMatmulTranspose, KeyHeadSplitKeepsARowContiguousTranspose) {
  // HF GPT-2 / BERT: k [B, S, H, D] -> Transpose [0, 2, 3, 1] -> [B, H, D, S]. The swap goes into
  // the GEMM and the Transpose becomes [0, 2, 1, 3] (rows of D contiguous), like q's and v's.
  AOTC_BUILD(g, R"(
    input %q : float16[2x3x5x4]
    input %k : float16[2x5x3x4]
    %kt : float16[?] = Transpose(%k) {perm=[0,2,3,1]}
    %s : float16[?] = MatMul(%q, %kt)
    output %s
  )");
  Graph before = g;
  ASSERT_TRUE(run_and_verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Transpose,aotc.MatMulT");
  EXPECT_EQ(g.nodes[0].attr_ints("perm"), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(g.value(g.nodes[0].outputs[0]).shape, (Shape{2, 3, 5, 4}));
  EXPECT_EQ(last(g).attr_int("transB", -1), 1);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 2.5e-3, 1e-3));
}

TEST(FuseMatmulTranspose, ThroughAScalarMul) {
  // torch MHA scales k^T: the Mul stays (fuse_copy_chains folds it into a copy), on [.., S, D].
  AOTC_BUILD(g, R"(
    input %q : float16[2x5x4]
    input %k : float16[2x6x4]
    const %c : float16[scalar] = [0.7071]
    %kt : float16[?] = Transpose(%k) {perm=[0,2,1]}
    %ks : float16[?] = Mul(%kt, %c)
    %s : float16[?] = MatMul(%q, %ks)
    output %s
  )");
  Graph before = g;
  ASSERT_TRUE(run_and_verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Mul,aotc.MatMulT");
  EXPECT_EQ(g.nodes[0].inputs[0], g.find_value("k"));
  EXPECT_EQ(g.value(g.nodes[0].outputs[0]).shape, (Shape{2, 6, 4}));
  EXPECT_EQ(last(g).inputs[1], g.nodes[0].outputs[0]);
  EXPECT_EQ(last(g).attr_int("transB", -1), 1);
  // Same products of the same rounded operands: identical.
  EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 0.0, 0.0));
}

TEST(FuseMatmulTranspose, MustNotFire) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"transpose read elsewhere", R"(
        input %q : float[2x5x4]
        input %k : float[2x6x4]
        %kt : float[?] = Transpose(%k) {perm=[0,2,1]}
        %s : float[?] = MatMul(%q, %kt)
        %r : float[?] = Relu(%kt)
        output %s, %r
      )"},
      {"transpose is a graph output", R"(
        input %q : float[2x5x4]
        input %k : float[2x6x4]
        %kt : float[?] = Transpose(%k) {perm=[0,2,1]}
        %s : float[?] = MatMul(%q, %kt)
        output %s, %kt
      )"},
      {"q's head split: the swap would make the copy read columns", R"(
        input %q : float[2x5x3x4]
        input %k : float[2x3x4x5]
        %qt : float[?] = Transpose(%q) {perm=[0,2,1,3]}
        %s : float[?] = MatMul(%qt, %k)
        output %s
      )"},
      {"mul by a tensor", R"(
        input %q : float[2x5x4]
        input %k : float[2x6x4]
        const %c : float[2x4x6] = random(1)
        %kt : float[?] = Transpose(%k) {perm=[0,2,1]}
        %ks : float[?] = Mul(%kt, %c)
        %s : float[?] = MatMul(%q, %ks)
        output %s
      )"},
      {"the mul's transpose read elsewhere", R"(
        input %q : float[2x5x4]
        input %k : float[2x6x4]
        const %c : float[scalar] = [0.5]
        %kt : float[?] = Transpose(%k) {perm=[0,2,1]}
        %ks : float[?] = Mul(%kt, %c)
        %s : float[?] = MatMul(%q, %ks)
        output %s, %kt
      )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    const std::string ops = op_list(g);
    auto changed = run_and_verify(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first;
    EXPECT_EQ(op_list(g), ops) << c.first;
  }
}

}  // namespace
}  // namespace aotc
