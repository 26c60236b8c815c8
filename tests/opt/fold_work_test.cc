// The folding-work cap (ir/constant_folding.h, docs/reliability.md Limits): the estimate of a
// fold's work from shapes and attributes, the per-node cap and the graph's total, each at its
// value (folds) and one beyond (the node stays, to run on the GPU; an error only for an op with
// no GPU kernel), and small folds going on past the total.
#include "ir/constant_folding.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

// A constant MatMul [m, k] x [k, n] with its output shape inferred; the node is "mm".
Graph constant_matmul(int64_t m, int64_t k, int64_t n) {
  Graph g;
  g.opset = 17;
  ValueId a = g.add_constant("a", Tensor(DType::kFloat32, {m, k}));
  ValueId b = g.add_constant("b", Tensor(DType::kFloat32, {k, n}));
  ValueId y = g.add_value("y");
  g.nodes.push_back(Node{"mm", "MatMul", "", {a, b}, {y}, {}});
  g.outputs = {y};
  return g;
}

TEST(FoldWork, EstimatesFollowTheReductionNotTheOutput) {
  AOTC_REQUIRE_OPS("MatMul", "Conv", "Einsum", "Relu", "MaxPool");
  {  // m*n*k multiply-adds; the elements read and written are fewer.
    Graph g = constant_matmul(64, 128, 32);
    ASSERT_TRUE(infer_shapes(g).is_ok());
    EXPECT_EQ(estimate_fold_work(g.nodes[0], g), 64 * 32 * 128);
  }
  {  // Conv: output 1x4x16x16 (pads 1), each element 8 channels x 3x3.
    AOTC_BUILD(g, R"(
      const %x : float[1x8x16x16] = random(1)
      const %w : float[4x8x3x3] = random(2)
      %y : float[?] = Conv(%x, %w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
      output %y
    )");
    EXPECT_EQ(estimate_fold_work(g.nodes[0], g), int64_t{4 * 16 * 16} * (8 * 3 * 3));
  }
  {  // Einsum "ij,jk->ik" is a MatMul; "i,j->ij" sums nothing (the elements visited win).
    AOTC_BUILD(g, R"(
      const %a : float[10x20] = random(1)
      const %b : float[20x30] = random(2)
      const %u : float[10] = random(3)
      const %v : float[30] = random(4)
      %p : float[?] = Einsum(%a, %b) {equation="ij,jk->ik"}
      %q : float[?] = Einsum(%u, %v) {equation="i,j->ij"}
      output %p, %q
    )");
    EXPECT_EQ(estimate_fold_work(g.nodes[0], g), 10 * 30 * 20);
    EXPECT_EQ(estimate_fold_work(g.nodes[1], g), 10 + 30 + 10 * 30);
  }
  {  // Elementwise: inputs and outputs once; a 5x5 max pool: 25 reads per output.
    AOTC_BUILD(g, R"(
      const %x : float[1x1x20x20] = random(1)
      %r : float[?] = Relu(%x)
      %p : float[?] = MaxPool(%x) {kernel_shape=[5, 5]}
      output %r, %p
    )");
    EXPECT_EQ(estimate_fold_work(g.nodes[0], g), 400 + 400);
    EXPECT_EQ(estimate_fold_work(g.nodes[1], g), 16 * 16 * 25);
  }
}

TEST(FoldWork, HugeShapesSaturateInsteadOfOverflowing) {
  AOTC_REQUIRE_OPS("MatMul");
  Graph g;
  g.opset = 17;
  // Shapes only: no tensor of this size is ever made (the estimate reads shapes).
  ValueId a = g.add_value("a", DType::kFloat32, {int64_t{1} << 40, int64_t{1} << 20}, true);
  ValueId b = g.add_value("b", DType::kFloat32, {int64_t{1} << 20, int64_t{1} << 30}, true);
  ValueId y = g.add_value("y", DType::kFloat32, {int64_t{1} << 40, int64_t{1} << 30}, true);
  g.nodes.push_back(Node{"mm", "MatMul", "", {a, b}, {y}, {}});
  EXPECT_EQ(estimate_fold_work(g.nodes[0], g), INT64_MAX);
}

TEST(FoldWork, OneNodeAtTheCapFoldsOneBeyondRunsOnTheGpu) {
  AOTC_REQUIRE_OPS("MatMul");
  // 2^12 x 2^8 times 2^8 x 2^7: exactly kMaxFoldWork (2^27) multiply-adds; twice the rows is over.
  static_assert(kMaxFoldWork == int64_t{1} << 27, "the shapes below are chosen for 2^27");
  for (int64_t m : {int64_t{1} << 12, int64_t{1} << 13}) {
    Graph g = constant_matmul(m, 256, 128);
    ASSERT_TRUE(infer_shapes(g).is_ok());
    g.max_fold_work_total = INT64_MAX;  // the per-node cap alone
    auto changed = fold_constants(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    const bool at_cap = m == (int64_t{1} << 12);
    EXPECT_EQ(*changed, at_cap) << m;
    EXPECT_EQ(g.nodes.size(), at_cap ? 0u : 1u) << m;
  }
}

TEST(FoldWork, TheTotalAtItsValueFoldsOneBeyondRunsOnTheGpu) {
  AOTC_REQUIRE_OPS("MatMul");
  const int64_t work = 64 * 32 * 128;  // over kSmallFoldWork
  for (int64_t total : {work, work - 1}) {
    Graph g = constant_matmul(64, 128, 32);
    ASSERT_TRUE(infer_shapes(g).is_ok());
    g.max_fold_work_total = total;
    auto changed = fold_constants(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_EQ(*changed, total == work) << total;
    EXPECT_EQ(g.fold_work, total == work ? work : 0) << total;
    ASSERT_TRUE(verify(g).is_ok());
  }
}

TEST(FoldWork, SmallFoldsGoOnPastTheTotal) {
  AOTC_REQUIRE_OPS("Add", "Shape");
  AOTC_BUILD(g, R"(
    input %x : float[2x3]
    const %a : float[3] = random(1)
    const %b : float[3] = random(2)
    %s : int64[?] = Shape(%x)
    %c : float[?] = Add(%a, %b)
    %y : float[?] = Add(%x, %c)
    output %y, %s
  )");
  g.max_fold_work_total = 0;
  auto changed = fold_constants(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(testing_util::op_list(g), "Add");
}

TEST(FoldWork, OverTheCapWithoutAGpuKernelIsAnError) {
  AOTC_REQUIRE_OPS("MatMul");
  // A MatMul that only has its CPU reference: it cannot be left to the GPU.
  OpRegistry cpu_only;
  OpDef def = *default_registry().find("MatMul");
  def.lower = nullptr;
  cpu_only.add(def);
  Graph g = constant_matmul(64, 128, 32);
  ASSERT_TRUE(infer_shapes(g).is_ok());
  g.max_fold_work_total = 1000;
  auto folded = try_fold_node(g.nodes[0], g, cpu_only);
  ASSERT_FALSE(folded.is_ok());
  EXPECT_NE(folded.status().message().find(std::to_string(64 * 32 * 128) + " multiply-adds"), std::string::npos)
      << folded.status().message();
  EXPECT_NE(folded.status().message().find("no GPU kernel"), std::string::npos) << folded.status().message();
}

}  // namespace
}  // namespace aotc
