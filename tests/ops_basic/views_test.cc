// Flatten, Reshape, Identity (views: traits, lowering, reference keeps the bytes), the copy kernel
// step, and Constant's attribute forms.
#include "ir/ops/copy_lowering.h"
#include "ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;

Shape flatten_shape(Shape in, int64_t axis, Status* status = nullptr) {
  OneNode n("Flatten");
  n.input(DType::kFloat32, in).attr("axis", Attribute::of_int(axis));
  Status s = n.build();
  if (status) *status = s;
  return s.is_ok() ? n.out().shape : Shape{-1};
}

TEST(Flatten, AxisRangeIncludingNegativeAndRank) {
  EXPECT_EQ(flatten_shape({2, 3, 5}, 0), (Shape{1, 30}));
  EXPECT_EQ(flatten_shape({2, 3, 5}, 1), (Shape{2, 15}));
  EXPECT_EQ(flatten_shape({2, 3, 5}, 3), (Shape{30, 1}));
  EXPECT_EQ(flatten_shape({2, 3, 5}, -1), (Shape{6, 5}));
  EXPECT_EQ(flatten_shape({2, 3, 5}, -3), (Shape{1, 30}));
  EXPECT_EQ(flatten_shape({}, 0), (Shape{1, 1}));
  EXPECT_EQ(flatten_shape({4, 0, 3}, 2), (Shape{0, 3}));
  Status s = Status::ok();
  flatten_shape({2, 3}, 3, &s);
  EXPECT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "axis 3 out of range")) << s.message();
  // An empty input whose dims before the axis multiply past int64 (a fuzz find, UBSan): refused.
  flatten_shape({int64_t{1} << 62, 3, 0}, 2, &s);
  EXPECT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "over the int64 range")) << s.message();
  flatten_shape({2, 3}, -3, &s);
  EXPECT_FALSE(s.is_ok());
}

TEST(Flatten, DefaultAxisIsOne) {
  OneNode n("Flatten");
  n.input(DType::kUInt8, {3, 2, 2});
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{3, 4}));
  EXPECT_EQ(n.out().dtype, DType::kUInt8);
}

Status reshape(Shape in, std::vector<int64_t> target, Shape* out, int64_t allowzero = 0) {
  OneNode n("Reshape");
  n.input(DType::kFloat32, in).constant(Tensor::from_int64s({static_cast<int64_t>(target.size())}, target));
  if (allowzero) n.attr("allowzero", Attribute::of_int(allowzero));
  Status s = n.build();
  if (s.is_ok()) *out = n.out().shape;
  return s;
}

TEST(Reshape, ZeroCopiesMinusOneInfers) {
  Shape out;
  ASSERT_TRUE(reshape({2, 3, 4}, {4, -1}, &out).is_ok());
  EXPECT_EQ(out, (Shape{4, 6}));
  ASSERT_TRUE(reshape({2, 3, 4}, {0, -1}, &out).is_ok());
  EXPECT_EQ(out, (Shape{2, 12}));
  ASSERT_TRUE(reshape({2, 3, 4}, {0, 0, 2, 2}, &out).is_ok());
  EXPECT_EQ(out, (Shape{2, 3, 2, 2}));
  ASSERT_TRUE(reshape({7}, {-1, 1, 1}, &out).is_ok());
  EXPECT_EQ(out, (Shape{7, 1, 1}));
  ASSERT_TRUE(reshape({1}, {}, &out).is_ok());
  EXPECT_EQ(out, (Shape{}));
  // allowzero=1: 0 is a real zero dim.
  ASSERT_TRUE(reshape({0, 3}, {3, 0}, &out, 1).is_ok());
  EXPECT_EQ(out, (Shape{3, 0}));
}

TEST(Reshape, BadShapesAreRefused) {
  Shape out;
  Status s = reshape({2, 3}, {4, 2}, &out);
  EXPECT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "cannot reshape 2x3")) << s.message();
  EXPECT_FALSE(reshape({2, 3}, {-1, -1}, &out).is_ok());
  EXPECT_FALSE(reshape({2, 3}, {-1, 4}, &out).is_ok());
  EXPECT_FALSE(reshape({2, 3}, {-2, 3}, &out).is_ok());
  EXPECT_FALSE(reshape({2, 3}, {6, 0}, &out).is_ok());  // 0 copies a dim the input lacks
  EXPECT_FALSE(reshape({0, 3}, {0, -1}, &out, 1).is_ok());
  EXPECT_FALSE(reshape({2, 0}, {-1, 0}, &out).is_ok());  // -1 ambiguous next to a copied zero dim
  ASSERT_TRUE(reshape({2, 0}, {0, -1}, &out).is_ok());    // but 0 / 2 is a fine -1
  EXPECT_EQ(out, (Shape{2, 0}));

  OneNode runtime_shape("Reshape");
  runtime_shape.input(DType::kFloat32, {6}).input(DType::kInt64, {2});
  s = runtime_shape.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "must be a constant")) << s.message();
}

TEST(Reshape, LegacyShapeAttributeBecomesInput) {
  OneNode n("Reshape", 4);
  n.input(DType::kFloat32, {2, 6}).attr("shape", Attribute::of_ints({3, -1}));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.built().inputs.size(), 2u);
  EXPECT_FALSE(n.built().has_attr("shape"));
  EXPECT_EQ(n.out().shape, (Shape{3, 4}));
}

TEST(Views, TraitsLoweringAndBytes) {
  for (const char* op : {"Flatten", "Reshape", "Identity"}) {
    const OpDef* def = default_registry().find(op);
    ASSERT_NE(def, nullptr);
    EXPECT_TRUE(def->traits.is_view) << op;
  }
  OneNode n("Reshape");
  n.input(DType::kInt32, {2, 3}).constant(Tensor::from_int64s({1}, {6}));
  ASSERT_TRUE(n.build().is_ok());
  auto l = default_registry().find("Reshape")->lower(n.built(), n.graph);
  ASSERT_TRUE(l.is_ok());
  EXPECT_TRUE(l->is_view);
  EXPECT_TRUE(l->steps.empty());
  Tensor x(DType::kInt32, {2, 3});
  for (int i = 0; i < 6; ++i) x.set_int(i, 10 * i - 7);
  auto out = n.run({x});
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out.value()[0].shape(), (Shape{6}));
  EXPECT_EQ(out.value()[0].to_int64s(), (std::vector<int64_t>{-7, 3, 13, 23, 33, 43}));

  OneNode id("Identity");
  id.input(DType::kBool, {3});
  ASSERT_TRUE(id.build().is_ok());
  Tensor b(DType::kBool, {3});
  b.set(1, 1);
  auto outb = id.run({b});
  ASSERT_TRUE(outb.is_ok());
  EXPECT_EQ(outb.value()[0].to_int64s(), (std::vector<int64_t>{0, 1, 0}));
}

TEST(CopyKernelStep, CoversTheBytes) {
  KernelStep k = copy_kernel_step(3, 5, 1000);
  EXPECT_EQ(k.template_name, "copy");
  EXPECT_EQ(k.args, (std::vector<ValueId>{3, 5}));
  EXPECT_GE(k.grid.x * k.block.x, 1000);
  bool saw = false;
  for (auto& h : k.holes) saw |= h.first == "bytes" && h.second == "1000LL";
  EXPECT_TRUE(saw);
}

TEST(Constant, AttributeForms) {
  struct Case {
    const char* attr;
    Attribute value;
    DType dtype;
    Shape shape;
    std::vector<double> values;
  };
  Tensor t(DType::kFloat16, {2});
  t.set(0, 1.5);
  t.set(1, -2.0);
  const Case cases[] = {
      {"value", Attribute::of_tensor(t), DType::kFloat16, {2}, {1.5, -2.0}},
      {"value_float", Attribute::of_float(0.25f), DType::kFloat32, {}, {0.25}},
      {"value_floats", Attribute::of_floats({1.f, 2.f, 3.f}), DType::kFloat32, {3}, {1, 2, 3}},
      {"value_int", Attribute::of_int(-4), DType::kInt64, {}, {-4}},
      {"value_ints", Attribute::of_ints({7, 8}), DType::kInt64, {2}, {7, 8}},
  };
  for (const Case& c : cases) {
    OneNode n("Constant");
    n.attr(c.attr, c.value);
    ASSERT_TRUE(n.build().is_ok()) << c.attr;
    EXPECT_EQ(n.out().dtype, c.dtype) << c.attr;
    EXPECT_EQ(n.out().shape, c.shape) << c.attr;
    auto out = n.run({});
    ASSERT_TRUE(out.is_ok()) << c.attr;
    EXPECT_EQ(out.value()[0].to_doubles(), c.values) << c.attr;
  }
  OneNode none("Constant");
  EXPECT_FALSE(none.build().is_ok());
  OneNode two("Constant");
  two.attr("value_int", Attribute::of_int(1)).attr("value_float", Attribute::of_float(1));
  Status s = two.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "has both")) << s.message();
  OneNode str("Constant");
  str.attr("value_string", Attribute::of_string("x"));
  EXPECT_FALSE(str.build().is_ok());
}

}  // namespace
}  // namespace aotc
