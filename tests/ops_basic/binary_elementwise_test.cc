// Add/Sub/Mul/Div: broadcasting shapes and errors, values against an independent coordinate-wise
// computation, integer semantics (wrap, truncation, x/0 == 0), IEEE division, legacy opsets, traits
// and the lowering's template choice and collapsed strides.
#include <cstdint>
#include <functional>
#include <limits>

#include "ir/ops/strided_layout.h"
#include "ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;

// Output of a broadcasting op computed by walking output coordinates and clamping each to the
// operand's dim (size-1 dims read index 0): independent of the strides the reference uses.
Tensor broadcast_apply(const Tensor& a, const Tensor& b, const Shape& out_shape, DType out_type,
                       const std::function<double(double, double)>& f) {
  Tensor y(out_type, out_shape);
  size_t rank = out_shape.size();
  std::vector<int64_t> coord(rank, 0);
  auto offset = [&](const Shape& s) {
    int64_t off = 0;
    size_t pad = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) off = off * s[d] + (s[d] == 1 ? 0 : coord[pad + d]);
    return off;
  };
  for (int64_t i = 0; i < y.numel(); ++i) {
    y.set(i, f(a.get(offset(a.shape())), b.get(offset(b.shape()))));
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++coord[static_cast<size_t>(d)] < out_shape[static_cast<size_t>(d)]) break;
      coord[static_cast<size_t>(d)] = 0;
    }
  }
  return y;
}

struct ShapeCase {
  Shape a, b, out;
};

TEST(BinaryElementwise, BroadcastShapes) {
  const ShapeCase cases[] = {{{2, 3, 4}, {4}, {2, 3, 4}},    {{3, 1}, {1, 4}, {3, 4}},
                             {{}, {5}, {5}},                 {{7, 1, 5}, {1, 13, 1}, {7, 13, 5}},
                             {{0, 3}, {1, 3}, {0, 3}},       {{2, 0}, {1}, {2, 0}},
                             {{1}, {}, {1}},                 {{2, 1, 1, 3}, {5, 1}, {2, 1, 5, 3}}};
  for (const auto& c : cases) {
    OneNode n("Add");
    n.input(DType::kFloat32, c.a).input(DType::kFloat32, c.b);
    ASSERT_TRUE(n.build().is_ok()) << shape_str(c.a) << " + " << shape_str(c.b);
    EXPECT_EQ(n.out().shape, c.out) << shape_str(c.a) << " + " << shape_str(c.b);
  }
}

TEST(BinaryElementwise, BadBroadcastAndDtypeMismatchAreNamed) {
  OneNode n("Mul");
  n.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {3, 2});
  Status s = n.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "node 'n0' (Mul)")) << s.message();
  EXPECT_TRUE(test::contains(s.message(), "do not broadcast")) << s.message();

  OneNode m("Add");
  m.input(DType::kFloat32, {2}).input(DType::kInt64, {2});
  s = m.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "different dtypes")) << s.message();

  OneNode b("Sub");
  b.input(DType::kBool, {2}).input(DType::kBool, {2});
  EXPECT_FALSE(b.build().is_ok());
}

TEST(BinaryElementwise, FloatValuesWithBroadcastMatchCoordinateWalk) {
  struct Op {
    const char* name;
    std::function<double(double, double)> f;
  };
  const Op ops[] = {{"Add", [](double x, double y) { return x + y; }},
                    {"Sub", [](double x, double y) { return x - y; }},
                    {"Mul", [](double x, double y) { return x * y; }},
                    {"Div", [](double x, double y) { return x / y; }}};
  const ShapeCase shapes[] = {{{2, 3, 5}, {5}, {2, 3, 5}},
                              {{7, 1, 3}, {1, 11, 1}, {7, 11, 3}},
                              {{1}, {13}, {13}},
                              {{17}, {17}, {17}},
                              {{2, 1, 3, 1}, {1, 5, 1, 4}, {2, 5, 3, 4}}};
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    for (const Op& op : ops) {
      for (const ShapeCase& c : shapes) {
        OneNode n(op.name);
        n.input(t, c.a).input(t, c.b);
        ASSERT_TRUE(n.build().is_ok());
        Tensor a = test::make_tensor(t, c.a, test::lcg_values(shape_numel(c.a), -4, 4, 1));
        // Divisors kept away from 0 so fp16 rounding of tiny divisors cannot dominate.
        Tensor b = test::make_tensor(t, c.b, test::lcg_values(shape_numel(c.b), 0.5, 3, 2));
        auto out = n.run({a, b});
        ASSERT_TRUE(out.is_ok()) << out.status().message();
        Tensor want = broadcast_apply(a, b, c.out, t, op.f);
        EXPECT_TENSOR_NEAR(out.value()[0], want);
      }
    }
  }
}

TEST(BinaryElementwise, BFloat16RoundsTheFloatResult) {
  OneNode n("Add");
  n.input(DType::kBFloat16, {3}).input(DType::kBFloat16, {3});
  ASSERT_TRUE(n.build().is_ok());
  Tensor a = test::make_tensor(DType::kBFloat16, {3}, {1.5, 256, -3});
  Tensor b = test::make_tensor(DType::kBFloat16, {3}, {2.25, 1, 3});
  auto out = n.run({a, b});
  ASSERT_TRUE(out.is_ok());
  // 257 needs 9 significant bits; bfloat16 has 8, and the tie rounds to even (256).
  EXPECT_EQ(out.value()[0].to_doubles(), (std::vector<double>{3.75, 256, 0}));
}

TEST(BinaryElementwise, FloatDivisionByZeroIsIeee) {
  OneNode n("Div");
  n.input(DType::kFloat32, {4}).input(DType::kFloat32, {4});
  ASSERT_TRUE(n.build().is_ok());
  auto out = n.run({Tensor::from_floats({4}, {1.f, -1.f, 0.f, 6.f}), Tensor::from_floats({4}, {0.f, 0.f, 0.f, -0.f})});
  ASSERT_TRUE(out.is_ok());
  const float* y = out.value()[0].data<float>();
  EXPECT_EQ(y[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(y[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], -std::numeric_limits<float>::infinity());
}

// Runs op on two 1-D int tensors of dtype t given as int64 values.
std::vector<int64_t> run_int(const char* op, DType t, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  OneNode n(op);
  int64_t len = static_cast<int64_t>(a.size());
  n.input(t, {len}).input(t, {len});
  EXPECT_TRUE(n.build().is_ok());
  Tensor ta(t, {len}), tb(t, {len});
  for (int64_t i = 0; i < len; ++i) {
    ta.set_int(i, a[static_cast<size_t>(i)]);
    tb.set_int(i, b[static_cast<size_t>(i)]);
  }
  auto out = n.run({ta, tb});
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? out.value()[0].to_int64s() : std::vector<int64_t>{};
}

TEST(BinaryElementwise, IntegerDivisionTruncatesAndDefinesZeroDivisor) {
  const int64_t kMin32 = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(run_int("Div", DType::kInt32, {7, -7, 7, -7, 5, 0, kMin32, kMin32},
                    {2, 2, -2, -2, 0, 0, -1, 1}),
            (std::vector<int64_t>{3, -3, -3, 3, 0, 0, kMin32, kMin32}));
  EXPECT_EQ(run_int("Div", DType::kInt8, {-128, 127, -1, 9}, {-1, 0, 3, 4}),
            (std::vector<int64_t>{-128, 0, 0, 2}));
  EXPECT_EQ(run_int("Div", DType::kUInt8, {255, 7, 0}, {2, 0, 5}), (std::vector<int64_t>{127, 0, 0}));
  const int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(run_int("Div", DType::kInt64, {kMin64, kMin64 + 1, 9007199254740993LL}, {-1, -1, 1}),
            (std::vector<int64_t>{kMin64, std::numeric_limits<int64_t>::max(), 9007199254740993LL}));
  // uint64 values above 2^63 travel as negative int64 bit patterns.
  EXPECT_EQ(run_int("Div", DType::kUInt64, {-2 /* 2^64-2 */, 10}, {2, 0}),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 0}));
}

TEST(BinaryElementwise, IntegerArithmeticWraps) {
  EXPECT_EQ(run_int("Add", DType::kUInt8, {200, 255}, {100, 1}), (std::vector<int64_t>{44, 0}));
  EXPECT_EQ(run_int("Sub", DType::kUInt8, {3}, {5}), (std::vector<int64_t>{254}));
  EXPECT_EQ(run_int("Mul", DType::kInt8, {100, -128, 3}, {3, -1, -5}), (std::vector<int64_t>{44, -128, -15}));
  EXPECT_EQ(run_int("Mul", DType::kUInt16, {65535}, {65535}), (std::vector<int64_t>{1}));
  const int64_t kMax64 = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(run_int("Add", DType::kInt64, {kMax64, 9007199254740993LL}, {1, 2}),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 9007199254740995LL}));
  EXPECT_EQ(run_int("Sub", DType::kInt32, {-2147483647 - 1}, {1}), (std::vector<int64_t>{2147483647}));
  EXPECT_EQ(run_int("Add", DType::kInt16, {-5, 32767}, {3, 1}), (std::vector<int64_t>{-2, -32768}));
  EXPECT_EQ(run_int("Mul", DType::kUInt32, {65536, 7}, {65536, 6}), (std::vector<int64_t>{0, 42}));
}

TEST(BinaryElementwise, LegacyBroadcastAttributeRefused) {
  OneNode n("Add", 6);
  n.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {3}).attr("broadcast", Attribute::of_int(1));
  Status s = n.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "legacy broadcast")) << s.message();

  OneNode same("Add", 6);  // opset 6 without broadcast: equal shapes, same meaning as today
  same.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {2, 3});
  EXPECT_TRUE(same.build().is_ok());
}

TEST(BinaryElementwise, Traits) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    const OpDef* def = default_registry().find(op);
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(def->traits.elementwise);
    EXPECT_EQ(def->traits.commutative, std::string(op) == "Add" || std::string(op) == "Mul") << op;
    EXPECT_FALSE(def->traits.is_view);
  }
}

std::string hole(const KernelStep& k, const std::string& key) {
  for (const auto& h : k.holes)
    if (h.first == key) return h.second;
  return "<missing>";
}

TEST(BinaryElementwise, LoweringPicksTemplateAndCollapsesDims) {
  OneNode same("Add");
  same.input(DType::kFloat32, {4, 5}).input(DType::kFloat32, {4, 5});
  ASSERT_TRUE(same.build().is_ok());
  auto l = default_registry().find("Add")->lower(same.built(), same.graph);
  ASSERT_TRUE(l.is_ok());
  ASSERT_EQ(l->steps.size(), 1u);
  EXPECT_EQ(l->steps[0].kernel.template_name, "binary_same_shape");
  EXPECT_EQ(hole(l->steps[0].kernel, "numel"), "20LL");
  // 20 floats: 16-byte vectors of 4, a quarter of the threads (one block either way).
  EXPECT_EQ(hole(l->steps[0].kernel, "vec"), "4");
  EXPECT_EQ(l->steps[0].kernel.args, (std::vector<ValueId>{same.built().inputs[0], same.built().inputs[1],
                                                          same.built().outputs[0]}));

  OneNode bc("Div");
  bc.input(DType::kInt32, {2, 3, 4}).input(DType::kInt32, {4});
  ASSERT_TRUE(bc.build().is_ok());
  l = default_registry().find("Div")->lower(bc.built(), bc.graph);
  ASSERT_TRUE(l.is_ok());
  const KernelStep& k = l->steps[0].kernel;
  EXPECT_EQ(k.template_name, "binary_broadcast");
  // [2,3,4] / [4]: dims 2 and 3 merge for both operands (b's stride 0 throughout), 4 does not.
  EXPECT_EQ(hole(k, "dims"), "{6LL, 4LL}");
  EXPECT_EQ(hole(k, "a_strides"), "{4LL, 1LL}");
  EXPECT_EQ(hole(k, "b_strides"), "{0LL, 1LL}");
  EXPECT_EQ(hole(k, "I"), "int");
  EXPECT_TRUE(test::contains(hole(k, "expr"), "y == 0")) << hole(k, "expr");
  // Both inputs contiguous in the innermost dim of 4 int32s: 16-byte vectors, a quarter of the threads.
  EXPECT_EQ(hole(k, "vec"), "4");
  EXPECT_EQ(k.grid.x, 1);

  // The squeeze-excitation scale in channels-last (fp16): 8 halves a vector. Shapes that keep the
  // element loop: a broadcast innermost dim, 12 halves there, operand types of different sizes.
  auto vec_of = [](DType ta, Shape sa, DType tb, Shape sb) {
    OneNode n("Mul");
    n.input(ta, sa).input(tb, sb);
    if (!n.build().is_ok()) return std::string("build failed");
    auto low = default_registry().find("Mul")->lower(n.built(), n.graph);
    if (!low.is_ok() || low->steps.size() != 1) return std::string("lower failed");
    return low->steps[0].kernel.template_name == "binary_broadcast" ? hole(low->steps[0].kernel, "vec")
                                                                   : low->steps[0].kernel.template_name;
  };
  EXPECT_EQ(vec_of(DType::kFloat16, {32, 14, 14, 960}, DType::kFloat16, {32, 1, 1, 960}), "8");
  EXPECT_EQ(vec_of(DType::kFloat16, {2, 3, 16}, DType::kFloat16, {2, 3, 1}), "1");
  EXPECT_EQ(vec_of(DType::kFloat16, {2, 3, 12}, DType::kFloat16, {2, 1, 12}), "1");
  EXPECT_EQ(vec_of(DType::kFloat32, {4, 6}, DType::kFloat32, {6}), "1");  // 6 floats
  EXPECT_EQ(vec_of(DType::kFloat32, {4, 8}, DType::kFloat32, {8}), "4");
  EXPECT_EQ(vec_of(DType::kFloat64, {4, 8}, DType::kFloat64, {8}), "1");  // 8-byte elements: not vectorized

  // The same-shape kernel: 8 halves a vector where the count allows; 15 halves, doubles and
  // operands of different sizes keep the element loop.
  auto same_vec = [](DType ta, DType tb, Shape s, const char* op) {
    OneNode n(op);
    n.input(ta, s).input(tb, s);
    if (!n.build().is_ok()) return std::string("build failed");
    auto low = default_registry().find(op)->lower(n.built(), n.graph);
    if (!low.is_ok() || low->steps.size() != 1) return std::string("lower failed");
    return low->steps[0].kernel.template_name == "binary_same_shape" ? hole(low->steps[0].kernel, "vec")
                                                                    : low->steps[0].kernel.template_name;
  };
  EXPECT_EQ(same_vec(DType::kFloat16, DType::kFloat16, {4096, 2048}, "Mul"), "8");
  EXPECT_EQ(same_vec(DType::kFloat16, DType::kFloat16, {3, 5}, "Add"), "1");
  EXPECT_EQ(same_vec(DType::kFloat64, DType::kFloat64, {4, 8}, "Add"), "1");
  EXPECT_EQ(same_vec(DType::kFloat16, DType::kFloat32, {4, 8}, "Pow"), "1");
  {
    OneNode big("Mul");
    big.input(DType::kFloat16, {4096, 2048}).input(DType::kFloat16, {4096, 2048});
    ASSERT_TRUE(big.build().is_ok());
    auto lb = default_registry().find("Mul")->lower(big.built(), big.graph);
    ASSERT_TRUE(lb.is_ok());
    // The grid counts vectors, not elements.
    EXPECT_EQ(lb->steps[0].kernel.grid.x, grid_for(4096LL * 2048 / 8, 256).x);
  }

  // aotc.SwiGLUPacked over [6, 2 x 16] halves: the broadcast kernel over [6, 16] with both operands
  // at row stride 32, the up half one half-row (32 bytes) in, 8 halves a vector.
  {
    OneNode packed("SwiGLUPacked");
    packed.node.domain = "aotc";
    packed.input(DType::kFloat16, {2, 3, 32});
    ASSERT_TRUE(packed.build().is_ok());
    EXPECT_EQ(packed.out().shape, (Shape{2, 3, 16}));
    auto lp = default_registry().find("SwiGLUPacked", "aotc")->lower(packed.built(), packed.graph);
    ASSERT_TRUE(lp.is_ok()) << lp.status().message();
    ASSERT_EQ(lp->steps.size(), 1u);
    const KernelStep& pk = lp->steps[0].kernel;
    EXPECT_EQ(pk.template_name, "binary_broadcast");
    EXPECT_EQ(hole(pk, "dims"), "{6LL, 16LL}");
    EXPECT_EQ(hole(pk, "a_strides"), "{32LL, 1LL}");
    EXPECT_EQ(hole(pk, "b_strides"), "{32LL, 1LL}");
    EXPECT_EQ(hole(pk, "vec"), "8");
    EXPECT_EQ(pk.args, (std::vector<ValueId>{packed.built().inputs[0], packed.built().inputs[0], packed.built().outputs[0]}));
    EXPECT_EQ(pk.arg_byte_offsets, (std::vector<int64_t>{0, 32, 0}));
    OneNode odd("SwiGLUPacked");
    odd.node.domain = "aotc";
    odd.input(DType::kFloat32, {4, 7});
    EXPECT_FALSE(odd.build().is_ok());  // no even last dim to halve
  }

  OneNode empty("Mul");
  empty.input(DType::kFloat32, {0, 3}).input(DType::kFloat32, {3});
  ASSERT_TRUE(empty.build().is_ok());
  l = default_registry().find("Mul")->lower(empty.built(), empty.graph);
  ASSERT_TRUE(l.is_ok());
  EXPECT_TRUE(l->steps.empty());
}

TEST(StridedLayout, CollapseDropsOnesAndMergesContiguousDims) {
  // [5,1,3] with operand strides {3,3,1} and {0,0,1}: the 1 goes, 5 and 3 merge only for the first.
  StridedLayout l = collapse_layout(StridedLayout{{5, 1, 3}, {{3, 3, 1}, {0, 0, 1}}});
  EXPECT_EQ(l.dims, (Shape{5, 3}));
  EXPECT_EQ(l.strides[0], (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(l.strides[1], (std::vector<int64_t>{0, 1}));
  // All ones: a single [1] dim with zero strides.
  l = collapse_layout(StridedLayout{{1, 1}, {{1, 1}}});
  EXPECT_EQ(l.dims, (Shape{1}));
  EXPECT_EQ(l.strides[0], (std::vector<int64_t>{0}));
  // Transpose [2,3,4] -> perm (0,2,1): input strides seen from the output are {12,1,4}.
  l = collapse_layout(StridedLayout{{2, 4, 3}, {{12, 1, 4}}});
  EXPECT_EQ(l.dims, (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_strides({3, 1}, {2, 3, 4}), (std::vector<int64_t>{0, 1, 0}));
}

}  // namespace
}  // namespace aotc
