// Unary elementwise ops: shape inference, reference values and lowering holes.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/evaluator.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace aotc {
namespace {

Graph single_unary(const std::string& op, Shape shape) {
  Graph g;
  g.opset = 17;
  ValueId x = g.add_value("x", DType::kFloat32, shape, true);
  ValueId y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(Node{"n0", op, "", {x}, {y}, {}});
  return g;
}

TEST(UnaryElementwise, ReluMatchesDefinitionIncludingNaN) {
  Graph g = single_unary("Relu", {2, 3});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{2, 3}));
  Tensor x = Tensor::from_floats({2, 3}, {-1.5f, 0.f, 2.f, NAN, -0.f, 7.25f});
  auto out = evaluate_graph(g, {x});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const float* y = out.value()[0].data<float>();
  EXPECT_EQ(y[0], 0.f);
  EXPECT_EQ(y[2], 2.f);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(y[5], 7.25f);
}

TEST(UnaryElementwise, SigmoidReference) {
  Graph g = single_unary("Sigmoid", {3});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  auto out = evaluate_graph(g, {Tensor::from_floats({3}, {0.f, 2.f, -30.f})});
  ASSERT_TRUE(out.is_ok());
  const float* y = out.value()[0].data<float>();
  EXPECT_FLOAT_EQ(y[0], 0.5f);
  EXPECT_NEAR(y[1], 1.0 / (1.0 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(y[2], 9.357622968840175e-14, 1e-20);
}

TEST(UnaryElementwise, RejectsIntegerInputWithNodeName) {
  Graph g;
  ValueId x = g.add_value("x", DType::kInt64, {4}, true);
  ValueId y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(Node{"bad\nname", "Sigmoid", "", {x}, {y}, {}});
  Status s = infer_shapes(g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'bad\\x0aname' (Sigmoid)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("int64"), std::string::npos);
}

TEST(UnaryElementwise, UnknownOpIsRefused) {
  Graph g = single_unary("NoSuchOp", {1});
  Status s = infer_shapes(g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("unsupported op"), std::string::npos);
}

TEST(UnaryElementwise, LoweringUsesTemplateWithExpression) {
  Graph g = single_unary("Relu", {5, 7});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  const OpDef* def = default_registry().find("Relu");
  ASSERT_NE(def, nullptr);
  auto lowering = def->lower(g.nodes[0], g);
  ASSERT_TRUE(lowering.is_ok());
  ASSERT_EQ(lowering->steps.size(), 1u);
  const KernelStep& k = lowering->steps[0].kernel;
  EXPECT_EQ(k.template_name, "unary_elementwise");
  EXPECT_EQ(k.args, (std::vector<ValueId>{0, 1}));
  bool saw_numel = false;
  for (auto& h : k.holes)
    if (h.first == "numel") saw_numel = h.second == "35LL";
  EXPECT_TRUE(saw_numel);
}

}  // namespace
}  // namespace aotc
