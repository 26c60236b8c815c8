// fold_constants: all-constant nodes (chains too) are evaluated at compile time; shape-only ops
// fold from a known shape alone; runtime inputs and oversized outputs are left alone.
#include <cmath>

#include "ir/evaluator.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

TEST(FoldConstants, FoldsAChainOfConstantNodes) {
  AOTC_BUILD(g, R"(
    input %x : float[2x3]
    const %c : float[5] = [-2, -0.5, 0, 0.25, 3]
    %a : float[?] = Relu(%c)
    %b : float[?] = Sigmoid(%a)
    %y : float[?] = Relu(%x)
    output %y, %b
  )");
  Graph before = g;
  auto changed = fold_constants(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Relu");
  ASSERT_TRUE(verify(g).is_ok());
  const Value& b = g.value(g.find_value("b"));
  ASSERT_TRUE(b.is_constant());
  // sigmoid(relu(c)) worked out independently.
  const double c[] = {-2, -0.5, 0, 0.25, 3};
  for (int i = 0; i < 5; ++i) {
    double want = 1.0 / (1.0 + std::exp(-(c[i] > 0 ? c[i] : 0.0)));
    EXPECT_NEAR(b.constant->get(i), want, 1e-5 + 1e-4 * want) << i;
  }
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(FoldConstants, DoesNotFireOnRuntimeInputs) {
  AOTC_BUILD(g, R"(
    input %x : float[4]
    const %c : float[4] = random(1)
    %a : float[?] = Relu(%x)
    output %a
  )");
  auto changed = fold_constants(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(op_list(g), "Relu");
}

TEST(FoldConstants, DoesNotFoldOutputsAbove64MiB) {
  // 16Mi + 64 floats: just over kMaxFoldedBytes.
  Graph g;
  g.opset = 17;
  const int64_t n = (kMaxFoldedBytes / 4) + 64;
  ValueId c = g.add_constant("c", Tensor(DType::kFloat32, {n}));
  ValueId a = g.add_value("a");
  g.nodes.push_back(Node{"big", "Relu", "", {c}, {a}, {}});
  g.outputs = {a};
  ASSERT_TRUE(infer_shapes(g).is_ok());
  auto changed = fold_constants(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(g.nodes.size(), 1u);
}

TEST(FoldConstants, ExpandingFillsAboveOneMiBRunOnTheGpuSmallOnesFold) {
  // ConstantOfShape: 8 bytes of shape in, 2 MiB out (kExpandingFoldRatio and
  // kMaxExpandingFoldBytes): left as a node; the same op at 1 KiB folds.
  AOTC_REQUIRE_OPS("ConstantOfShape");
  for (int64_t n : {int64_t{256}, (kMaxExpandingFoldBytes / 4) * 2}) {
    Graph g;
    g.opset = 17;
    Tensor shape(DType::kInt64, {1});
    shape.set(0, static_cast<double>(n));
    ValueId s = g.add_constant("s", shape);
    ValueId a = g.add_value("a");
    g.nodes.push_back(Node{"fill", "ConstantOfShape", "", {s}, {a}, {}});
    g.outputs = {a};
    ASSERT_TRUE(infer_shapes(g).is_ok());
    auto changed = fold_constants(g);
    ASSERT_TRUE(changed.is_ok());
    const bool small = n * 4 <= kMaxExpandingFoldBytes;
    EXPECT_EQ(*changed, small) << n;
    EXPECT_EQ(g.nodes.size(), small ? 0u : 1u) << n;
  }
}

TEST(FoldConstants, ShapeOfARuntimeInputFolds) {
  AOTC_REQUIRE_OPS("Shape");
  AOTC_BUILD(g, R"(
    input %x : float[2x3x5]
    %s : int64[?] = Shape(%x)
    %y : float[?] = Relu(%x)
    output %y, %s
  )");
  auto changed = fold_constants(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Relu");
  const Value& s = g.value(g.find_value("s"));
  ASSERT_TRUE(s.is_constant());
  EXPECT_EQ(s.constant->to_int64s(), (std::vector<int64_t>{2, 3, 5}));
}

TEST(FoldConstants, ShapeSubgraphFeedingReshapeVanishesWhileBuilding) {
  AOTC_REQUIRE_OPS("Shape", "Reshape", "Gather", "Concat");
  // Reshape x [2x3x4] to [shape(x)[0], -1] computed by a shape subgraph. Reshape can only be
  // inferred once its shape input is a constant, so the subgraph folds node by node while the
  // graph is built (the frontend does the same while importing).
  const char* text = R"(
    input %x : float[2x3x4]
    const %i0 : int64[1] = [0]
    const %m1 : int64[1] = [-1]
    %s : int64[?] = Shape(%x)
    %d0 : int64[?] = Gather(%s, %i0) {axis=0}
    %t : int64[?] = Concat(%d0, %m1) {axis=0}
    %y : float[?] = Reshape(%x, %t)
    output %y
  )";
  EXPECT_FALSE(testing_util::build(text).is_ok());  // without folding, Reshape cannot infer
  auto built = testing_util::build_folding(text);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  Graph& g = *built;
  EXPECT_EQ(op_list(g), "Reshape");
  const Value& t = g.value(g.nodes[0].inputs[1]);
  ASSERT_TRUE(t.is_constant());
  EXPECT_EQ(t.constant->to_int64s(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(g.value(g.find_value("y")).shape, (Shape{2, 12}));
  // The result is x laid out as 2x12: compare with the input itself.
  Tensor x = testing_util::random_inputs(g, 7)[0];
  auto out = evaluate_graph(g, {x});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(out.value()[0].get(i), x.get(i));
}

TEST(FoldConstants, ShapeOfRuntimeInputFoldsInThePass) {
  AOTC_REQUIRE_OPS("Shape");
  AOTC_BUILD(g, R"(
    input %x : float[2x3x4]
    %s : int64[?] = Shape(%x)
    output %s
  )");
  auto changed = fold_constants(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "");
  const Value& s = g.value(g.outputs[0]);
  ASSERT_TRUE(s.is_constant());
  EXPECT_EQ(s.constant->to_int64s(), (std::vector<int64_t>{2, 3, 4}));
}

TEST(FoldConstants, ConstantBinaryOpFoldsWithBroadcast) {
  AOTC_REQUIRE_OPS("Add", "Mul");
  AOTC_BUILD(g, R"(
    input %x : float[2x3]
    const %a : float[2x3] = random(1)
    const %b : float[3] = random(2)
    %s : float[?] = Add(%a, %b)
    %p : float[?] = Mul(%s, %b)
    %y : float[?] = Add(%x, %p)
    output %y
  )");
  Graph before = g;
  auto changed = fold_constants(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Add");
  const Tensor& a = *before.value(before.find_value("a")).constant;
  const Tensor& b = *before.value(before.find_value("b")).constant;
  const Tensor& p = *g.value(g.find_value("p")).constant;
  for (int64_t i = 0; i < 6; ++i) {
    double want = (a.get(i) + b.get(i % 3)) * b.get(i % 3);
    EXPECT_NEAR(p.get(i), want, 1e-5 + 1e-4 * std::fabs(want));
  }
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

}  // namespace
}  // namespace aotc
