// Clip: opset differences resolved by the importer into the canonical attribute form, bounds
// that stay inputs, integer dtypes, NaN and min > max semantics, and the expressions the lowering
// and epilogue fusion use.
#include <cfloat>
#include <limits>

#include "ir/ops/epilogue.h"
#include "ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;

TEST(Clip, Opset11ConstantBoundsBecomeAttributes) {
  OneNode n("Clip", 13);
  n.input(DType::kFloat32, {5}).constant(Tensor::scalar_float(-1.f)).constant(Tensor::scalar_float(2.5f));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.built().inputs.size(), 1u);
  EXPECT_EQ(n.built().attr_float("min", 0), -1.f);
  EXPECT_EQ(n.built().attr_float("max", 0), 2.5f);
  auto out = n.run({Tensor::from_floats({5}, {-3.f, -1.f, 0.5f, 2.5f, 9.f})});
  ASSERT_TRUE(out.is_ok());
  EXPECT_TENSOR_NEAR(out.value()[0], Tensor::from_floats({5}, {-1.f, -1.f, 0.5f, 2.5f, 2.5f}));
}

TEST(Clip, OnlyMaxGivenLeavesLowSideOpen) {
  OneNode n("Clip", 13);
  n.input(DType::kFloat32, {3}).absent().constant(Tensor::scalar_float(0.f));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_FALSE(n.built().has_attr("min"));
  EXPECT_EQ(n.built().inputs.size(), 1u);
  auto out = n.run({Tensor::from_floats({3}, {-1e30f, 0.5f, -INFINITY})});
  ASSERT_TRUE(out.is_ok());
  EXPECT_TENSOR_NEAR(out.value()[0], Tensor::from_floats({3}, {-1e30f, 0.f, -INFINITY}));
}

TEST(Clip, Opset6DefaultsAreFltMaxSoInfinityIsClipped) {
  OneNode n("Clip", 6);
  n.input(DType::kFloat32, {3}).attr("min", Attribute::of_float(-2.f));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.built().attr_float("max", 0), FLT_MAX);
  auto out = n.run({Tensor::from_floats({3}, {INFINITY, -INFINITY, 1.f})});
  ASSERT_TRUE(out.is_ok());
  EXPECT_TENSOR_NEAR(out.value()[0], Tensor::from_floats({3}, {FLT_MAX, -2.f, 1.f}));
}

TEST(Clip, NaNPropagatesAndMinAboveMaxGivesMax) {
  OneNode n("Clip", 13);
  n.input(DType::kFloat32, {3}).attr("min", Attribute::of_float(4.f)).attr("max", Attribute::of_float(1.f));
  ASSERT_TRUE(n.build().is_ok());
  auto out = n.run({Tensor::from_floats({3}, {NAN, 0.f, 9.f})});
  ASSERT_TRUE(out.is_ok());
  const float* y = out.value()[0].data<float>();
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 1.f);  // spec: min > max sets every value to max
  EXPECT_EQ(y[2], 1.f);
}

TEST(Clip, RuntimeBoundsStayInputs) {
  OneNode n("Clip", 13);
  n.input(DType::kFloat32, {4}).input(DType::kFloat32, {}).constant(Tensor::scalar_float(3.f));
  ASSERT_TRUE(n.build().is_ok());
  const Node& node = n.built();
  ASSERT_EQ(node.inputs.size(), 2u);  // max moved to an attribute, min stays an input
  EXPECT_EQ(node.attr_float("max", 0), 3.f);
  auto out = n.run({Tensor::from_floats({4}, {-5.f, 0.f, 2.f, 7.f}), Tensor::scalar_float(-1.f)});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_TENSOR_NEAR(out.value()[0], Tensor::from_floats({4}, {-1.f, 0.f, 2.f, 3.f}));
  auto l = default_registry().find("Clip")->lower(node, n.graph);
  ASSERT_TRUE(l.is_ok());
  EXPECT_EQ(l->steps[0].kernel.template_name, "clip_dynamic");
  EXPECT_EQ(l->steps[0].kernel.args[2], kNullArg);
}

TEST(Clip, IntegerDtypesIncludingInt64BeyondFloat) {
  OneNode n("Clip", 13);
  Tensor lo(DType::kInt8, {}), hi(DType::kInt8, {});
  lo.set_int(0, -3);
  hi.set_int(0, 100);
  n.input(DType::kInt8, {4}).constant(lo).constant(hi);
  ASSERT_TRUE(n.build().is_ok());
  Tensor x(DType::kInt8, {4});
  for (int i = 0; i < 4; ++i) x.set_int(i, std::vector<int64_t>{-128, -3, 5, 127}[i]);
  auto out = n.run({x});
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out.value()[0].to_int64s(), (std::vector<int64_t>{-3, -3, 5, 100}));

  // 2^53 + 1 is no float: the bound stays an input and keeps every bit.
  const int64_t big = 9007199254740993LL;
  OneNode m("Clip", 13);
  m.input(DType::kInt64, {3}).absent().constant(Tensor::scalar_int64(big));
  ASSERT_TRUE(m.build().is_ok());
  EXPECT_FALSE(m.built().has_attr("max"));
  auto out2 = m.run({Tensor::from_int64s({3}, {big + 1, big, -7})});
  ASSERT_TRUE(out2.is_ok());
  EXPECT_EQ(out2.value()[0].to_int64s(), (std::vector<int64_t>{big, big, -7}));
}

TEST(Clip, Float16) {
  OneNode n("Clip", 13);
  Tensor lo(DType::kFloat16, {}), hi(DType::kFloat16, {});
  lo.set(0, 0.0);
  hi.set(0, 6.0);
  n.input(DType::kFloat16, {4}).constant(lo).constant(hi);
  ASSERT_TRUE(n.build().is_ok());
  auto out = n.run({test::make_tensor(DType::kFloat16, {4}, {-1.0, 0.333, 6.5, 65504.0})});
  ASSERT_TRUE(out.is_ok());
  EXPECT_TENSOR_NEAR(out.value()[0], test::make_tensor(DType::kFloat16, {4}, {0.0, 0.333, 6.0, 6.0}));
}

TEST(Clip, BadBoundsAreRefused) {
  OneNode wrong_type("Clip", 13);
  wrong_type.input(DType::kFloat32, {2}).input(DType::kFloat64, {});
  Status s = wrong_type.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "min input has dtype double")) << s.message();

  OneNode not_scalar("Clip", 13);
  not_scalar.input(DType::kFloat32, {2}).input(DType::kFloat32, {2});
  s = not_scalar.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "scalar")) << s.message();

  OneNode boolean("Clip", 13);
  boolean.input(DType::kBool, {2});
  EXPECT_FALSE(boolean.build().is_ok());
}

TEST(Clip, EpilogueActivationExpression) {
  const OpDef* def = default_registry().find("Clip");
  ASSERT_NE(def, nullptr);
  EXPECT_TRUE(def->traits.epilogue_activation);
  EXPECT_TRUE(def->traits.elementwise);
  // Relu6 as an absorbed activation: the fused node keeps Clip's attributes as act.min/act.max.
  Node clip;
  clip.op_type = "Clip";
  clip.attrs["min"] = Attribute::of_float(0.f);
  clip.attrs["max"] = Attribute::of_float(6.f);
  Node fused;
  fused.op_type = "FusedConv";
  store_activation(fused, clip);
  Graph g;
  std::string e = activation_expr(fused, g, "acc");
  EXPECT_EQ(e, "((acc < 0x0p+0f ? 0x0p+0f : acc) > 0x1.8p+2f ? 0x1.8p+2f : (acc < 0x0p+0f ? 0x0p+0f : acc))");
  Tensor t = Tensor::from_floats({3}, {-1.f, 3.f, 7.f});
  ASSERT_TRUE(apply_activation_reference(fused, t).is_ok());
  EXPECT_TENSOR_NEAR(t, Tensor::from_floats({3}, {0.f, 3.f, 6.f}));
}

TEST(Clip, IntegerLoweringComparesInItsOwnType) {
  OneNode n("Clip", 13);
  n.input(DType::kInt32, {8}).attr("min", Attribute::of_float(-5.f));
  ASSERT_TRUE(n.build().is_ok());
  auto l = default_registry().find("Clip")->lower(n.built(), n.graph);
  ASSERT_TRUE(l.is_ok());
  const KernelStep& k = l->steps[0].kernel;
  EXPECT_EQ(k.template_name, "unary_elementwise");
  std::string expr;
  for (auto& h : k.holes)
    if (h.first == "expr") expr = h.second;
  EXPECT_TRUE(test::contains(expr, "static_cast<int>(-0x1.4p+2f)")) << expr;
}

TEST(UnaryDtypes, ReluOnSignedIntegersAndSigmoidRefusesThem) {
  OneNode r("Relu");
  r.input(DType::kInt64, {3});
  ASSERT_TRUE(r.build().is_ok());
  auto out = r.run({Tensor::from_int64s({3}, {-9007199254740993LL, 0, 9007199254740993LL})});
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out.value()[0].to_int64s(), (std::vector<int64_t>{0, 0, 9007199254740993LL}));

  OneNode r8("Relu");
  r8.input(DType::kInt8, {2});
  ASSERT_TRUE(r8.build().is_ok());
  Tensor x(DType::kInt8, {2});
  x.set_int(0, -128);
  x.set_int(1, 127);
  auto out8 = r8.run({x});
  ASSERT_TRUE(out8.is_ok());
  EXPECT_EQ(out8.value()[0].to_int64s(), (std::vector<int64_t>{0, 127}));

  OneNode ru("Relu");
  ru.input(DType::kUInt8, {2});  // not in Relu-14's type list
  EXPECT_FALSE(ru.build().is_ok());

  OneNode s("Sigmoid");
  s.input(DType::kInt32, {2});
  EXPECT_FALSE(s.build().is_ok());

  OneNode sd("Sigmoid");
  sd.input(DType::kFloat64, {2});
  ASSERT_TRUE(sd.build().is_ok());
  Tensor xd(DType::kFloat64, {2});
  xd.set(0, 1.0);
  xd.set(1, -40.0);
  auto outd = sd.run({xd});
  ASSERT_TRUE(outd.is_ok());
  EXPECT_NEAR(outd.value()[0].get(0), 0.7310585786300049, 1e-15);
  EXPECT_NEAR(outd.value()[0].get(1), 4.248354255291589e-18, 1e-30);
}

}  // namespace
}  // namespace aotc
