// The issue-3 elementwise references against values computed here from the ONNX definitions
// (hand-worked integers, std:: math on the spec formulas), plus shape inference, opset imports,
// traits and the errors that refuse what we do not support (by name).
#include <map>
#include <cmath>
#include <functional>
#include <limits>

#include "tests/ops_basic/ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;
using test::make_tensor;

Tensor run1(OneNode& n, const std::vector<Tensor>& in) {
  Status s = n.build();
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return Tensor();
  auto out = n.run(in);
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? out.value()[0] : Tensor();
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_int(i));
  return v;
}

TEST(Elementwise3Reference, UnaryFloatOpsFollowTheirDefinitions) {
  struct Case {
    const char* op;
    std::function<double(double)> f;
    double lo, hi;
  };
  const double a = 1.6732632423543772848170429916717, g = 1.0507009873554804934193349852946;
  const Case cases[] = {
      {"Tanh", [](double x) { return std::tanh(x); }, -4, 4},
      {"Erf", [](double x) { return std::erf(x); }, -3, 3},
      {"Exp", [](double x) { return std::exp(x); }, -4, 4},
      {"Log", [](double x) { return std::log(x); }, 0.01, 9},
      {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 9},
      {"Reciprocal", [](double x) { return 1 / x; }, 0.5, 9},
      {"Sin", [](double x) { return std::sin(x); }, -4, 4},
      {"Cos", [](double x) { return std::cos(x); }, -4, 4},
      {"Floor", [](double x) { return std::floor(x); }, -4, 4},
      {"Ceil", [](double x) { return std::ceil(x); }, -4, 4},
      {"Softplus", [](double x) { return std::log(std::exp(x) + 1); }, -10, 10},
      {"Softsign", [](double x) { return x / (1 + std::fabs(x)); }, -4, 4},
      {"HardSwish", [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }, -5, 5},
      {"HardSigmoid", [](double x) { return std::max(0.0, std::min(1.0, 0.2 * x + 0.5)); }, -5, 5},
      {"LeakyRelu", [](double x) { return x >= 0 ? x : 0.01 * x; }, -4, 4},
      {"Elu", [](double x) { return x >= 0 ? x : std::exp(x) - 1; }, -4, 4},
      {"Selu", [=](double x) { return x > 0 ? g * x : g * (a * std::exp(x) - a); }, -4, 4},
      {"Gelu", [](double x) { return x * 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    OneNode n(c.op, 20);
    n.input(DType::kFloat32, {3, 17});
    std::vector<double> x = test::lcg_values(51, c.lo, c.hi, 3);
    Tensor in = make_tensor(DType::kFloat32, {3, 17}, x);
    Tensor want(DType::kFloat32, {3, 17});
    for (int64_t i = 0; i < 51; ++i) want.set(i, c.f(in.get(i)));
    EXPECT_TENSOR_NEAR(run1(n, {in}), want);
  }
}

TEST(Elementwise3Reference, GeluTanhApproximationAndBadAttribute) {
  OneNode n("Gelu", 20);
  n.input(DType::kFloat64, {4}).attr("approximate", Attribute::of_string("tanh"));
  Tensor in = make_tensor(DType::kFloat64, {4}, {-2, -0.5, 0.7, 3});
  Tensor want(DType::kFloat64, {4});
  for (int i = 0; i < 4; ++i) {
    double x = in.get(i);
    want.set(i, 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))));
  }
  EXPECT_TENSOR_NEAR(run1(n, {in}), want);
  OneNode bad("Gelu", 20);
  bad.input(DType::kFloat32, {4}).attr("approximate", Attribute::of_string("erf"));
  Status s = bad.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "approximate")) << s.message();
}

TEST(Elementwise3Reference, RoundIsHalfToEvenAndSignKeepsNaN) {
  OneNode n("Round");
  n.input(DType::kFloat32, {8});
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {8}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, 3.5})});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 2, 2, 0, -2, 2, -3, 4}));
  OneNode s("Sign");
  s.input(DType::kFloat32, {4});
  Tensor z = run1(s, {make_tensor(DType::kFloat32, {4}, {-3, 0, 7, NAN})});
  EXPECT_EQ(z.get(0), -1);
  EXPECT_EQ(z.get(1), 0);
  EXPECT_EQ(z.get(2), 1);
  EXPECT_TRUE(std::isnan(z.get(3)));
}

TEST(Elementwise3Reference, IntegerUnaryOpsWrapAndUnsignedAbsIsIdentity) {
  OneNode n("Neg");
  n.input(DType::kInt8, {4});
  EXPECT_EQ(ints(run1(n, {make_tensor(DType::kInt8, {4}, {-128, 127, 0, -5})})),
            (std::vector<int64_t>{-128, -127, 0, 5}));
  OneNode a("Abs");
  a.input(DType::kInt32, {3});
  EXPECT_EQ(ints(run1(a, {make_tensor(DType::kInt32, {3}, {-2147483648.0, -9, 9})})),
            (std::vector<int64_t>{-2147483648LL, 9, 9}));
  OneNode u("Abs");
  u.input(DType::kUInt64, {2});
  Tensor big(DType::kUInt64, {2});
  big.data<uint64_t>()[0] = 18446744073709551615ULL;
  big.data<uint64_t>()[1] = 3;
  Tensor y = run1(u, {big});
  EXPECT_EQ(y.data<uint64_t>()[0], 18446744073709551615ULL);
  OneNode sg("Sign");
  sg.input(DType::kUInt8, {3});
  EXPECT_EQ(ints(run1(sg, {make_tensor(DType::kUInt8, {3}, {0, 1, 255})})), (std::vector<int64_t>{0, 1, 1}));
  OneNode neg_u("Neg");
  neg_u.input(DType::kUInt8, {1});
  Status s = neg_u.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "uint8")) << s.message();
}

TEST(Elementwise3Reference, IsNaNIsInfAndNot) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor in = make_tensor(DType::kFloat32, {5}, {1, NAN, inf, -inf, 0});
  OneNode nan("IsNaN");
  nan.input(DType::kFloat32, {5});
  Tensor y = run1(nan, {in});
  EXPECT_EQ(y.dtype(), DType::kBool);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 1, 0, 0, 0}));
  OneNode pos("IsInf");
  pos.input(DType::kFloat32, {5}).attr("detect_negative", Attribute::of_int(0));
  EXPECT_EQ(ints(run1(pos, {in})), (std::vector<int64_t>{0, 0, 1, 0, 0}));
  OneNode both("IsInf");
  both.input(DType::kFloat32, {5});
  EXPECT_EQ(ints(run1(both, {in})), (std::vector<int64_t>{0, 0, 1, 1, 0}));
  OneNode no("Not");
  no.input(DType::kBool, {3});
  EXPECT_EQ(ints(run1(no, {make_tensor(DType::kBool, {3}, {1, 0, 1})})), (std::vector<int64_t>{0, 1, 0}));
}

TEST(Elementwise3Reference, ModSignRulesAndZeroDivisor) {
  // Python: 7 % -3 == -2, -7 % 3 == 2; C fmod: 7 % -3 == 1, -7 % 3 == -1.
  Tensor a = make_tensor(DType::kInt32, {6}, {7, -7, 7, -7, 5, -2147483648.0});
  Tensor b = make_tensor(DType::kInt32, {6}, {-3, 3, 3, -3, 0, -1});
  OneNode m("Mod");
  m.input(DType::kInt32, {6}).input(DType::kInt32, {6});
  EXPECT_EQ(ints(run1(m, {a, b})), (std::vector<int64_t>{-2, 2, 1, -1, 0, 0}));
  OneNode f("Mod");
  f.input(DType::kInt32, {6}).input(DType::kInt32, {6}).attr("fmod", Attribute::of_int(1));
  EXPECT_EQ(ints(run1(f, {a, b})), (std::vector<int64_t>{1, -1, 1, -1, 0, 0}));
  OneNode fl("Mod");
  fl.input(DType::kFloat32, {2}).input(DType::kFloat32, {2}).attr("fmod", Attribute::of_int(1));
  Tensor y = run1(fl, {make_tensor(DType::kFloat32, {2}, {-5.5, 5.5}), make_tensor(DType::kFloat32, {2}, {2, -2})});
  EXPECT_FLOAT_EQ(static_cast<float>(y.get(0)), -1.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(y.get(1)), 1.5f);
  // fmod=0 on floats (allowed since Mod-28): the floor modulo, the divisor's sign.
  OneNode floor_mod("Mod");
  floor_mod.input(DType::kFloat32, {2}).input(DType::kFloat32, {2});
  Tensor z = run1(floor_mod, {make_tensor(DType::kFloat32, {2}, {-5.5, 5.5}), make_tensor(DType::kFloat32, {2}, {2, -2})});
  EXPECT_FLOAT_EQ(static_cast<float>(z.get(0)), 0.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(z.get(1)), -0.5f);
}

TEST(Elementwise3Reference, PowMixedTypesAndBroadcast) {
  OneNode n("Pow");
  n.input(DType::kFloat32, {2, 3}).input(DType::kInt64, {3});
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {2, 3}, {2, -3, 0.5, 1.5, 4, -2}),
                      make_tensor(DType::kInt64, {3}, {3, 2, -1})});
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {2, 3}, {8, 9, 2, 3.375, 16, -0.5}));
  OneNode i("Pow");
  i.input(DType::kInt64, {3}).input(DType::kFloat32, {3});
  EXPECT_EQ(ints(run1(i, {make_tensor(DType::kInt64, {3}, {2, 9, 3}), make_tensor(DType::kFloat32, {3}, {10, 0.5, 2})})),
            (std::vector<int64_t>{1024, 3, 9}));
  OneNode bad("Pow");
  bad.input(DType::kInt8, {3}).input(DType::kInt8, {3});
  EXPECT_FALSE(bad.build().is_ok());
}

TEST(Elementwise3Reference, BitShiftAndShrink) {
  OneNode l("BitShift");
  l.input(DType::kUInt8, {4}).input(DType::kUInt8, {4}).attr("direction", Attribute::of_string("LEFT"));
  Tensor a = make_tensor(DType::kUInt8, {4}, {1, 3, 255, 7}), b = make_tensor(DType::kUInt8, {4}, {3, 7, 1, 8});
  EXPECT_EQ(ints(run1(l, {a, b})), (std::vector<int64_t>{8, 128, 254, 0}));  // 3 << 7 = 384 -> 128; << 8 -> 0
  OneNode r("BitShift");
  r.input(DType::kUInt8, {4}).input(DType::kUInt8, {4}).attr("direction", Attribute::of_string("RIGHT"));
  EXPECT_EQ(ints(run1(r, {a, b})), (std::vector<int64_t>{0, 0, 127, 0}));
  OneNode bad("BitShift");
  bad.input(DType::kUInt8, {1}).input(DType::kUInt8, {1}).attr("direction", Attribute::of_string("UP"));
  EXPECT_FALSE(bad.build().is_ok());
  OneNode s("Shrink");
  s.input(DType::kFloat32, {5}).attr("lambd", Attribute::of_float(1.5f)).attr("bias", Attribute::of_float(0.5f));
  EXPECT_TENSOR_NEAR(run1(s, {make_tensor(DType::kFloat32, {5}, {-2, -1.5, 0, 1.5, 3})}),
                     make_tensor(DType::kFloat32, {5}, {-1.5, 0, 0, 0, 2.5}));
}

TEST(Elementwise3Reference, PReluSlopeBroadcastsOneWay) {
  OneNode n("PRelu");
  n.input(DType::kFloat32, {2, 3, 2}).input(DType::kFloat32, {3, 1});
  Tensor x = make_tensor(DType::kFloat32, {2, 3, 2}, {-1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6});
  Tensor slope = make_tensor(DType::kFloat32, {3, 1}, {0.5, 0.25, 2});
  EXPECT_TENSOR_NEAR(run1(n, {x, slope}),
                     make_tensor(DType::kFloat32, {2, 3, 2}, {-0.5, 1, -0.5, 2, -6, 3, -2, 4, -1.25, 5, -12, 6}));
  OneNode bad("PRelu");
  bad.input(DType::kFloat32, {3}).input(DType::kFloat32, {2, 3});
  Status s = bad.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "unidirectional")) << s.message();
}

TEST(Elementwise3Reference, ComparisonsAndLogicGiveBool) {
  Tensor a = make_tensor(DType::kFloat32, {2, 3}, {1, 2, NAN, 4, 5, 6});
  Tensor b = make_tensor(DType::kFloat32, {3}, {2, 2, NAN});
  struct Case {
    const char* op;
    std::vector<int64_t> want;
  };
  const Case cases[] = {{"Equal", {0, 1, 0, 0, 0, 0}},          {"Less", {1, 0, 0, 0, 0, 0}},
                        {"Greater", {0, 0, 0, 1, 1, 0}},        {"LessOrEqual", {1, 1, 0, 0, 0, 0}},
                        {"GreaterOrEqual", {0, 1, 0, 1, 1, 0}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    OneNode n(c.op);
    n.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {3});
    Tensor y = run1(n, {a, b});
    EXPECT_EQ(y.dtype(), DType::kBool);
    EXPECT_EQ(ints(y), c.want);
  }
  // int64 beyond 2^53 compares exactly.
  OneNode e("Equal");
  e.input(DType::kInt64, {1}).input(DType::kInt64, {1});
  Tensor x = Tensor::from_int64s({1}, {(int64_t{1} << 60) + 1}), z = Tensor::from_int64s({1}, {int64_t{1} << 60});
  EXPECT_EQ(ints(run1(e, {x, z})), (std::vector<int64_t>{0}));
  Tensor p = make_tensor(DType::kBool, {4}, {0, 0, 1, 1}), q = make_tensor(DType::kBool, {4}, {0, 1, 0, 1});
  const std::pair<const char*, std::vector<int64_t>> logic[] = {
      {"And", {0, 0, 0, 1}}, {"Or", {0, 1, 1, 1}}, {"Xor", {0, 1, 1, 0}}};
  for (const auto& l : logic) {
    OneNode n(l.first);
    n.input(DType::kBool, {4}).input(DType::kBool, {4});
    EXPECT_EQ(ints(run1(n, {p, q})), l.second) << l.first;
  }
  OneNode bad("And");
  bad.input(DType::kInt32, {4}).input(DType::kInt32, {4});
  EXPECT_FALSE(bad.build().is_ok());
}

TEST(Elementwise3Reference, VariadicMinMaxSumMean) {
  Tensor a = make_tensor(DType::kFloat32, {2, 1}, {1, 5});
  Tensor b = make_tensor(DType::kFloat32, {3}, {0, 3, NAN});
  Tensor c = make_tensor(DType::kFloat32, {}, {2});
  OneNode mx("Max");
  mx.input(DType::kFloat32, {2, 1}).input(DType::kFloat32, {3}).input(DType::kFloat32, {});
  Tensor y = run1(mx, {a, b, c});
  ASSERT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_TENSOR_NEAR(y, make_tensor(DType::kFloat32, {2, 3}, {2, 3, NAN, 5, 5, NAN}));
  OneNode mn("Min");
  mn.input(DType::kFloat32, {2, 1}).input(DType::kFloat32, {3}).input(DType::kFloat32, {});
  EXPECT_TENSOR_NEAR(run1(mn, {a, b, c}), make_tensor(DType::kFloat32, {2, 3}, {0, 1, NAN, 0, 2, NAN}));
  OneNode mean("Mean");
  mean.input(DType::kFloat32, {2, 1}).input(DType::kFloat32, {3}).input(DType::kFloat32, {});
  Tensor b2 = make_tensor(DType::kFloat32, {3}, {0, 3, 6});
  EXPECT_TENSOR_NEAR(run1(mean, {a, b2, c}), make_tensor(DType::kFloat32, {2, 3}, {1, 2, 3, 7. / 3, 10. / 3, 13. / 3}));
  OneNode sum("Sum");
  sum.input(DType::kFloat32, {2, 1});
  EXPECT_TENSOR_NEAR(run1(sum, {a}), a);
  OneNode imin("Min");
  imin.input(DType::kUInt64, {1}).input(DType::kUInt64, {1});
  Tensor u1(DType::kUInt64, {1}), u2(DType::kUInt64, {1});
  u1.data<uint64_t>()[0] = 18446744073709551615ULL;
  u2.data<uint64_t>()[0] = 18446744073709551614ULL;
  EXPECT_EQ(run1(imin, {u1, u2}).data<uint64_t>()[0], 18446744073709551614ULL);
  OneNode isum("Sum");
  isum.input(DType::kInt32, {1}).input(DType::kInt32, {1});
  EXPECT_FALSE(isum.build().is_ok());  // Sum is float-only in the spec
}

TEST(Elementwise3Reference, WhereBroadcastsThreeWays) {
  OneNode n("Where");
  n.input(DType::kBool, {2, 1}).input(DType::kInt64, {3}).input(DType::kInt64, {2, 3});
  Tensor cond = make_tensor(DType::kBool, {2, 1}, {1, 0});
  Tensor x = Tensor::from_int64s({3}, {1, 2, 3});
  Tensor y = Tensor::from_int64s({2, 3}, {10, 20, 30, 40, 50, (int64_t{1} << 62) + 1});
  Tensor out = run1(n, {cond, x, y});
  EXPECT_EQ(ints(out), (std::vector<int64_t>{1, 2, 3, 40, 50, (int64_t{1} << 62) + 1}));
  OneNode bad("Where");
  bad.input(DType::kFloat32, {2}).input(DType::kFloat32, {2}).input(DType::kFloat32, {2});
  EXPECT_FALSE(bad.build().is_ok());
}

TEST(Elementwise3Reference, CastRules) {
  OneNode f2i("Cast");
  f2i.input(DType::kFloat32, {6}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kInt8)));
  EXPECT_EQ(ints(run1(f2i, {make_tensor(DType::kFloat32, {6}, {-2.7, 2.7, 300, -300, NAN, 127.9})})),
            (std::vector<int64_t>{-2, 2, 127, -128, 0, 127}));
  OneNode i2i("Cast");
  i2i.input(DType::kInt64, {3}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kUInt8)));
  EXPECT_EQ(ints(run1(i2i, {Tensor::from_int64s({3}, {256, -1, 511})})), (std::vector<int64_t>{0, 255, 255}));
  OneNode tob("Cast");
  tob.input(DType::kFloat32, {3}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kBool)));
  EXPECT_EQ(ints(run1(tob, {make_tensor(DType::kFloat32, {3}, {0, -0.5, NAN})})), (std::vector<int64_t>{0, 1, 1}));
  OneNode h("Cast");
  h.input(DType::kFloat32, {2}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat16)));
  Tensor y = run1(h, {make_tensor(DType::kFloat32, {2}, {1.0 + 1.0 / 4096, 70000})});
  EXPECT_EQ(y.data<uint16_t>()[0], 0x3C00);  // 1 + 2^-12 rounds to 1 (half has 10 mantissa bits)
  EXPECT_EQ(y.data<uint16_t>()[1], 0x7C00);  // overflow -> +inf
  // Cast-1 spells the target as a string.
  OneNode old("Cast", 5);
  old.input(DType::kInt32, {1}).attr("to", Attribute::of_string("DOUBLE"));
  ASSERT_TRUE(old.build().is_ok());
  EXPECT_EQ(old.out().dtype, DType::kFloat64);
  for (int64_t refused : {8, 14, 27}) {
    OneNode r("Cast", 19);
    r.input(DType::kFloat32, {1}).attr("to", Attribute::of_int(refused));
    Status s = r.build();
    ASSERT_FALSE(s.is_ok());
    EXPECT_TRUE(test::contains(s.message(), refused == 8 ? "string" : refused == 14 ? "complex" : "float6")) << s.message();
  }
  OneNode like("CastLike");
  like.input(DType::kFloat64, {2}).input(DType::kInt16, {1});
  Tensor z = run1(like, {make_tensor(DType::kFloat64, {2}, {-3.9, 40000}), make_tensor(DType::kInt16, {1}, {0})});
  EXPECT_EQ(z.dtype(), DType::kInt16);
  EXPECT_EQ(ints(z), (std::vector<int64_t>{-3, 32767}));
}

TEST(Elementwise3Reference, TraitsAndEpilogueExpressions) {
  for (const char* op : {"LeakyRelu", "Elu", "Selu", "HardSigmoid", "HardSwish", "Tanh", "Gelu", "Softplus"}) {
    const OpDef* def = default_registry().find(op);
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(def->traits.epilogue_activation) << op;
    EXPECT_TRUE(def->traits.elementwise) << op;
    ASSERT_NE(def->scalar_expr, nullptr) << op;
  }
  // Attributes reach the expression (hex float of 0.25).
  Node leaky;
  leaky.op_type = "LeakyRelu";
  leaky.attrs["alpha"] = Attribute::of_float(0.25f);
  Graph g;
  std::string e = default_registry().find("LeakyRelu")->scalar_expr(leaky, g, "v");
  EXPECT_TRUE(test::contains(e, "0x1p-2f")) << e;
  // Ops whose output dtype differs have no fusable expression.
  EXPECT_EQ(default_registry().find("IsNaN")->scalar_expr, nullptr);
  EXPECT_FALSE(default_registry().find("Exp")->traits.epilogue_activation);
}

TEST(Elementwise3Reference, DefaultsAreFilledByImport) {
  OneNode n("Selu", 6);
  n.input(DType::kFloat32, {1}).attr("consumed_inputs", Attribute::of_ints({0}));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_FALSE(n.built().has_attr("consumed_inputs"));
  EXPECT_FLOAT_EQ(n.built().attr_float("alpha", 0), 1.67326319217681884765625f);
  EXPECT_FLOAT_EQ(n.built().attr_float("gamma", 0), 1.05070102214813232421875f);
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// Casts to and from the sub-16-bit types (issue 9). Expected values: the ONNX Cast tables and what
// onnx 1.23.2's reference (ml_dtypes astype / saturate_cast / to_float8e8m0) gives for them.
Tensor cast_small(DType from, std::vector<double> values, DType to, int64_t saturate = 1, const char* round_mode = nullptr) {
  OneNode n("Cast", 25);
  n.input(from, {static_cast<int64_t>(values.size())}).attr("to", Attribute::of_int(static_cast<int64_t>(to)));
  n.attr("saturate", Attribute::of_int(saturate));
  if (round_mode) n.attr("round_mode", Attribute::of_string(round_mode));
  return run1(n, {make_tensor(from, {static_cast<int64_t>(values.size())}, values)});
}

std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get(i));
  return v;
}

TEST(Elementwise3Reference, CastToSmallIntegersTruncatesAndWraps) {
  Tensor y = cast_small(DType::kFloat32, {-9, -3.7, 7.9, 8, 15, NAN}, DType::kInt4);
  EXPECT_EQ(y.dtype(), DType::kInt4);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{7, -3, 7, -8, -1, 0}));
  EXPECT_EQ(ints(cast_small(DType::kFloat32, {-1, 5, 2.9}, DType::kUInt2)), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(ints(cast_small(DType::kInt8, {100, -100}, DType::kUInt4)), (std::vector<int64_t>{4, 12}));
  EXPECT_EQ(ints(cast_small(DType::kInt4, {-8, 7}, DType::kInt8)), (std::vector<int64_t>{-8, 7}));
  EXPECT_EQ(doubles(cast_small(DType::kInt2, {-2, 1}, DType::kFloat16)), (std::vector<double>{-2, 1}));
}

TEST(Elementwise3Reference, CastToFloat8FollowsTheSaturateTable) {
  const std::vector<double> x = {1000, -1000, INFINITY, -INFINITY, 0.1};
  EXPECT_EQ(doubles(cast_small(DType::kFloat32, x, DType::kFloat8E4M3FN)),
            (std::vector<double>{448, -448, 448, -448, 0.1015625}));
  Tensor nosat = cast_small(DType::kFloat32, x, DType::kFloat8E4M3FN, 0);
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(nosat.get(i))) << i;
  Tensor e5m2 = cast_small(DType::kFloat16, {70000 / 2.0, -INFINITY}, DType::kFloat8E5M2, 0);
  EXPECT_EQ(doubles(e5m2), (std::vector<double>{32768, -INFINITY}));  // 35008 (the half) rounds to 32768
  EXPECT_EQ(doubles(cast_small(DType::kFloat32, {-0.0}, DType::kFloat8E5M2FNUZ)), (std::vector<double>{0}));
  EXPECT_FALSE(std::signbit(cast_small(DType::kFloat32, {-0.0}, DType::kFloat8E5M2FNUZ).get(0)));
  EXPECT_EQ(doubles(cast_small(DType::kFloat32, {7, -0.25, 2.5}, DType::kFloat4E2M1)), (std::vector<double>{6, -0.0, 2}));
}

TEST(Elementwise3Reference, CastToFloat8E8M0RoundingModes) {
  EXPECT_EQ(doubles(cast_small(DType::kFloat32, {3, 0.124}, DType::kFloat8E8M0, 1, "up")), (std::vector<double>{4, 0.125}));
  EXPECT_EQ(doubles(cast_small(DType::kFloat32, {3, 0.124}, DType::kFloat8E8M0, 1, "down")), (std::vector<double>{2, 0.0625}));
  EXPECT_EQ(doubles(cast_small(DType::kFloat32, {3, 1.1}, DType::kFloat8E8M0, 1, "nearest")), (std::vector<double>{4, 1}));
  OneNode bad("Cast", 25);
  bad.input(DType::kFloat32, {1}).attr("to", Attribute::of_int(24)).attr("round_mode", Attribute::of_string("sideways"));
  Status s = bad.build();
  EXPECT_TRUE(test::contains(s.message(), "round_mode 'sideways'")) << s.message();
  EXPECT_TRUE(test::contains(s.message(), "(Cast)")) << s.message();
}

TEST(Elementwise3Reference, CastFromSmallFloatsIsExact) {
  EXPECT_EQ(doubles(cast_small(DType::kFloat8E4M3FN, {448, -0.001953125}, DType::kFloat16)),
            (std::vector<double>{448, -0.001953125}));
  EXPECT_EQ(ints(cast_small(DType::kFloat4E2M1, {6, -0.5, -3}, DType::kInt8)), (std::vector<int64_t>{6, 0, -3}));
  EXPECT_EQ(ints(cast_small(DType::kFloat8E5M2, {INFINITY}, DType::kBool)), (std::vector<int64_t>{1}));
  // float8 -> float8 goes through the exact value: 448 (e4m3fn) -> e5m2 rounds to 448.
  EXPECT_EQ(doubles(cast_small(DType::kFloat8E4M3FN, {448, 0.1015625}, DType::kFloat8E5M2)),
            (std::vector<double>{448, 0.09375}));
  OneNode like("CastLike", 25);
  like.input(DType::kFloat32, {2}).input(DType::kUInt4, {1});
  Tensor z = run1(like, {make_tensor(DType::kFloat32, {2}, {15.5, 16}), make_tensor(DType::kUInt4, {1}, {0})});
  EXPECT_EQ(z.dtype(), DType::kUInt4);
  EXPECT_EQ(ints(z), (std::vector<int64_t>{15, 0}));
}

// Casts with a sub-16-bit side lower to templates/cast_small.cu.in: values read as double from a
// float (or into a small float), as long long between integers; the attributes reach the encoder.
TEST(Elementwise3Reference, CastOfSmallTypesLowersToTheSmallTypeKernel) {
  auto holes = [](OneNode& n) { return test::lowered_holes(n, "cast_small"); };
  OneNode f8("Cast", 25);
  f8.input(DType::kFloat16, {3}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat8E4M3FN)))
      .attr("saturate", Attribute::of_int(0));
  auto h = holes(f8);
  EXPECT_EQ(h["CT"], "double");
  EXPECT_EQ(h["load"], "(double)static_cast<float>(in[i])");
  EXPECT_EQ(h["store"], "aotc_sf_encode(17, (double)x, false, 0)");
  OneNode e8("Cast", 25);
  e8.input(DType::kFloat32, {3}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat8E8M0)))
      .attr("round_mode", Attribute::of_string("nearest"));
  EXPECT_EQ(holes(e8)["store"], "aotc_sf_encode(24, (double)x, true, 2)");
  OneNode i4("Cast", 25);
  i4.input(DType::kInt64, {3}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kInt4)));
  h = holes(i4);
  EXPECT_EQ(h["CT"], "long long");
  EXPECT_EQ(h["store"], "static_cast<signed char>(aotc_si_wrap(22, x))");
  OneNode from4("Cast", 25);
  from4.input(DType::kFloat4E2M1, {3}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kInt32)));
  h = holes(from4);
  EXPECT_EQ(h["load"], "aotc_sf_decode(23, in[i])");
  EXPECT_TRUE(test::contains(h["store"], "static_cast<int>(")) << h["store"];
  // Any other op still refuses the small types (codegen: traits.gpu_small_dtypes).
  EXPECT_FALSE(default_registry().find("Relu")->traits.gpu_small_dtypes);
  EXPECT_TRUE(default_registry().find("CastLike")->traits.gpu_small_dtypes);
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// Issue 9: BitShift on signed integers (opset 28), BitwiseAnd/Or/Xor/Not, Mod fmod=0 on floats,
// Mish, Swish. Expected values from the spec text (hand-worked) and numpy's np.mod.
Tensor binary1(const char* op, DType t, std::vector<double> a, std::vector<double> b,
               const std::vector<std::pair<std::string, Attribute>>& attrs = {}) {
  OneNode n(op, 28);
  const Shape sa{static_cast<int64_t>(a.size())}, sb{static_cast<int64_t>(b.size())};
  n.input(t, sa).input(t, sb);
  for (const auto& [k, v] : attrs) n.attr(k, v);
  return run1(n, {make_tensor(t, sa, a), make_tensor(t, sb, b)});
}

TEST(Elementwise3Reference, SignedBitShift) {
  const auto right = std::make_pair(std::string("direction"), Attribute::of_string("RIGHT"));
  const auto left = std::make_pair(std::string("direction"), Attribute::of_string("LEFT"));
  // Arithmetic right shift; a negative or >= width shift gives the sign fill (-1 or 0).
  EXPECT_EQ(ints(binary1("BitShift", DType::kInt8, {-128, -7, 7, -1, 100, -100}, {1, 1, 1, -1, 8, 9}, {right})),
            (std::vector<int64_t>{-64, -4, 3, -1, 0, -1}));
  // Left: bits past the sign bit are discarded; out-of-range shifts give 0.
  EXPECT_EQ(ints(binary1("BitShift", DType::kInt8, {64, 1, -1, 3, 3}, {1, 7, 7, -2, 8}, {left})),
            (std::vector<int64_t>{-128, -128, -128, 0, 0}));
  EXPECT_EQ(ints(binary1("BitShift", DType::kInt64, {-1}, {63}, {right})), (std::vector<int64_t>{-1}));
}

TEST(Elementwise3Reference, BitwiseOps) {
  EXPECT_EQ(ints(binary1("BitwiseAnd", DType::kInt16, {-1, 12, -8}, {5, 10, 7})), (std::vector<int64_t>{5, 8, 0}));
  EXPECT_EQ(ints(binary1("BitwiseOr", DType::kUInt8, {240, 1}, {15, 2})), (std::vector<int64_t>{255, 3}));
  EXPECT_EQ(ints(binary1("BitwiseXor", DType::kInt32, {-1, 6}, {1, 3})), (std::vector<int64_t>{-2, 5}));
  OneNode n("BitwiseNot", 18);
  n.input(DType::kInt8, {3});
  EXPECT_EQ(ints(run1(n, {make_tensor(DType::kInt8, {3}, {0, -128, 5})})), (std::vector<int64_t>{-1, 127, -6}));
  OneNode u("BitwiseNot", 18);
  u.input(DType::kUInt16, {1});
  EXPECT_EQ(ints(run1(u, {make_tensor(DType::kUInt16, {1}, {1})})), (std::vector<int64_t>{65534}));
  OneNode f("BitwiseAnd", 18);
  f.input(DType::kFloat32, {1}).input(DType::kFloat32, {1});
  Status s = f.build();
  EXPECT_TRUE(test::contains(s.message(), "input 0 has dtype float")) << s.message();
}

TEST(Elementwise3Reference, FloatModWithFmod0IsTheFloorModulo) {
  const double inf = INFINITY;
  Tensor y = binary1("Mod", DType::kFloat32, {5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 3, -3, 3, inf, 2, NAN},
                     {2, 2, -2, -2, -3, 3, inf, inf, -inf, 2, 0, 1});
  const std::vector<double> want = {1.5, 0.5, -0.5, -1.5, -0.0, 0.0, 3, inf, -inf, NAN, NAN, NAN};
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = y.get(static_cast<int64_t>(i));
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << i;
    } else {
      EXPECT_EQ(g, want[i]) << i;
      EXPECT_EQ(std::signbit(g), std::signbit(want[i])) << i;  // zero takes the divisor's sign
    }
  }
  // fmod=1 keeps C's fmod (the dividend's sign).
  Tensor f = binary1("Mod", DType::kFloat64, {-5.5}, {2}, {{"fmod", Attribute::of_int(1)}});
  EXPECT_EQ(f.get(0), -1.5);
}

TEST(Elementwise3Reference, MishAndSwish) {
  OneNode m("Mish", 18);
  m.input(DType::kFloat64, {4});
  Tensor y = run1(m, {make_tensor(DType::kFloat64, {4}, {-2, 0, 1, 50})});
  const std::vector<double> x = {-2, 0, 1, 50};
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y.get(static_cast<int64_t>(i)), x[i] * std::tanh(std::log(1 + std::exp(x[i]))), 1e-12) << x[i];
  OneNode s("Swish", 24);
  s.input(DType::kFloat32, {3}).attr("alpha", Attribute::of_float(0.5f));
  Tensor z = run1(s, {make_tensor(DType::kFloat32, {3}, {-1, 0, 3})});
  for (int64_t i = 0; i < 3; ++i) {
    const double v = i == 0 ? -1 : i == 1 ? 0 : 3;
    EXPECT_NEAR(z.get(i), v / (1 + std::exp(-0.5 * v)), 1e-6) << v;
  }
  OneNode d("Swish", 24);  // alpha defaults to 1
  d.input(DType::kFloat32, {1});
  EXPECT_NEAR(run1(d, {make_tensor(DType::kFloat32, {1}, {2})}).get(0), 2 / (1 + std::exp(-2.0)), 1e-6);
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// BitCast-26 (the bits, reinterpreted) and SwiGLU-28 (Swish_alpha(A) * B).
TEST(Elementwise3Reference, BitCastKeepsTheBits) {
  OneNode f("BitCast", 26);
  f.input(DType::kFloat32, {3}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kInt32)));
  Tensor y = run1(f, {make_tensor(DType::kFloat32, {3}, {1.0, -2.0, 0.0})});
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0x3F800000, static_cast<int32_t>(0xC0000000u), 0}));
  OneNode u("BitCast", 26);
  u.input(DType::kUInt16, {2}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat16)));
  Tensor h = run1(u, {make_tensor(DType::kUInt16, {2}, {0x3C00, 0xFC00})});
  EXPECT_EQ(h.get(0), 1.0);
  EXPECT_EQ(h.get(1), -INFINITY);
  // 4-bit patterns: uint4 15 is int4 -1 and float4e2m1 -6.
  OneNode n4("BitCast", 26);
  n4.input(DType::kUInt4, {2}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kInt4)));
  EXPECT_EQ(ints(run1(n4, {make_tensor(DType::kUInt4, {2}, {15, 7})})), (std::vector<int64_t>{-1, 7}));
  OneNode f4("BitCast", 26);
  f4.input(DType::kInt4, {1}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat4E2M1)));
  EXPECT_EQ(run1(f4, {make_tensor(DType::kInt4, {1}, {-1})}).get(0), -6.0);
  OneNode bad("BitCast", 26);
  bad.input(DType::kFloat32, {1}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kInt64)));
  Status s = bad.build();
  EXPECT_TRUE(test::contains(s.message(), "target int64 has 64 bits, the input's float has 32")) << s.message();
  // On the GPU a view: no kernel.
  OneNode v("BitCast", 26);
  v.input(DType::kInt64, {5}).attr("to", Attribute::of_int(static_cast<int64_t>(DType::kFloat64)));
  ASSERT_TRUE(v.build().is_ok());
  auto l = default_registry().find("BitCast")->lower(v.built(), v.graph);
  ASSERT_TRUE(l.is_ok());
  EXPECT_TRUE(l->is_view);
  EXPECT_TRUE(l->steps.empty());
}

TEST(Elementwise3Reference, SwiGLU) {
  OneNode n("SwiGLU", 28);
  n.input(DType::kFloat32, {3}).input(DType::kFloat32, {3}).attr("alpha", Attribute::of_float(1.5f));
  Tensor y = run1(n, {make_tensor(DType::kFloat32, {3}, {-1, 0, 2}), make_tensor(DType::kFloat32, {3}, {3, 4, -0.5})});
  const double a[3] = {-1, 0, 2}, b[3] = {3, 4, -0.5};
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(y.get(i), a[i] / (1 + std::exp(-1.5 * a[i])) * b[i], 1e-6) << i;
  OneNode bc("SwiGLU", 28);
  bc.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {3});
  Status s = bc.build();
  EXPECT_TRUE(test::contains(s.message(), "does not broadcast")) << s.message();
}

}  // namespace
}  // namespace aotc
