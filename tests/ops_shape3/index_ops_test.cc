// Gather, GatherElements, Pad, Range, Trilu, CumSum, DepthToSpace/SpaceToDepth, Dropout and the
// data-dependent ops: shape inference, refusals, and references against values computed
// independently (index formulas of the ONNX spec written out here, or numpy results).
#include <limits>

#include "tests/ops_basic/ops_test_util.h"

#ifdef AOTC_HAVE_OPT
#include "opt/passes.h"
#endif

namespace aotc {
namespace {

using test::OneNode;

Tensor i64(std::vector<int64_t> v) { return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v); }

Tensor iota(Shape s, DType t = DType::kFloat32) {
  Tensor x(t, s);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, dtype_is_float(t) ? i + 0.5 : static_cast<double>(i));
  return x;
}

std::vector<double> run1(OneNode& n, const std::vector<Tensor>& in, size_t out = 0) {
  auto r = n.run(in);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? (*r)[out].to_doubles() : std::vector<double>{};
}

TEST(Gather, AxisNegativeIndicesAndRangeError) {
  OneNode n("Gather");
  n.input(DType::kFloat32, {2, 5, 3}).input(DType::kInt64, {2, 2}).attr("axis", Attribute::of_int(1));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{2, 2, 2, 3}));
  const int64_t idx[4] = {4, -1, 0, -5};  // -1 -> 4, -5 -> 0
  const int64_t wrapped[4] = {4, 4, 0, 0};
  std::vector<double> want;
  for (int a = 0; a < 2; ++a)
    for (int j = 0; j < 4; ++j)
      for (int c = 0; c < 3; ++c) want.push_back((a * 5 + wrapped[j]) * 3 + c + 0.5);
  EXPECT_EQ(run1(n, {iota({2, 5, 3}), i64({idx[0], idx[1], idx[2], idx[3]}).reshaped({2, 2})}), want);
  auto bad = n.run({iota({2, 5, 3}), i64({0, 5, 0, 0}).reshaped({2, 2})});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(test::contains(bad.status().message(), "index 5 is out of range")) << bad.status().message();

  OneNode scalar("Gather");  // a scalar index removes the axis
  scalar.input(DType::kInt32, {4, 3}).input(DType::kInt32, {});
  ASSERT_TRUE(scalar.build().is_ok());
  EXPECT_EQ(scalar.out().shape, (Shape{3}));
  Tensor k(DType::kInt32, {});
  k.set_int(0, 2);
  EXPECT_EQ(run1(scalar, {iota({4, 3}, DType::kInt32), k}), (std::vector<double>{6, 7, 8}));

  OneNode f("Gather");
  f.input(DType::kFloat32, {3}).input(DType::kFloat32, {1});
  EXPECT_FALSE(f.build().is_ok());
}

TEST(GatherElements, SpecFormula) {
  OneNode n("GatherElements");
  n.input(DType::kInt64, {3, 4}).input(DType::kInt32, {2, 3}).attr("axis", Attribute::of_int(1));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{2, 3}));
  Tensor idx(DType::kInt32, {2, 3});
  const int v[6] = {3, -1, 0, 1, 2, -4};
  for (int i = 0; i < 6; ++i) idx.set_int(i, v[i]);
  std::vector<double> want;  // out[i][j] = x[i][idx[i][j]], x[r][c] = 4r + c
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) want.push_back(i * 4 + (v[i * 3 + j] + 4) % 4);
  EXPECT_EQ(run1(n, {iota({3, 4}, DType::kInt64), idx}), want);
  OneNode rank("GatherElements");
  rank.input(DType::kInt64, {3, 4}).input(DType::kInt64, {3});
  EXPECT_FALSE(rank.build().is_ok());
}

std::vector<double> pad1d(std::vector<int64_t> pads, const char* mode, int64_t opset = 18, Tensor* value = nullptr) {
  OneNode n("Pad", opset);
  n.input(DType::kInt32, {4}).constant(i64(pads));
  if (value) n.constant(*value);
  n.attr("mode", Attribute::of_string(mode));
  Status s = n.build();
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return {};
  Tensor x(DType::kInt32, {4});
  for (int i = 0; i < 4; ++i) x.set_int(i, i + 1);
  return run1(n, {x});
}

TEST(Pad, ModesAgainstNumpy) {
  // numpy.pad([1, 2, 3, 4], (2, 3), mode) for each mode.
  EXPECT_EQ(pad1d({2, 3}, "reflect"), (std::vector<double>{3, 2, 1, 2, 3, 4, 3, 2, 1}));
  EXPECT_EQ(pad1d({2, 3}, "edge"), (std::vector<double>{1, 1, 1, 2, 3, 4, 4, 4, 4}));
  EXPECT_EQ(pad1d({2, 3}, "wrap", 19), (std::vector<double>{3, 4, 1, 2, 3, 4, 1, 2, 3}));
  Tensor nine(DType::kInt32, {});
  nine.set_int(0, 9);
  EXPECT_EQ(pad1d({1, -1}, "constant", 18, &nine), (std::vector<double>{9, 1, 2, 3}));
  EXPECT_EQ(pad1d({0, 2}, "constant"), (std::vector<double>{1, 2, 3, 4, 0, 0}));
  // Reflect farther than the dim: numpy.pad([1, 2, 3], (5, 1), 'reflect').
  OneNode far("Pad");
  far.input(DType::kFloat32, {3}).constant(i64({5, 1})).attr("mode", Attribute::of_string("reflect"));
  ASSERT_TRUE(far.build().is_ok());
  EXPECT_EQ(run1(far, {Tensor::from_floats({3}, {1, 2, 3})}), (std::vector<double>{2, 1, 2, 3, 2, 1, 2, 3, 2}));
}

TEST(Pad, AxesInputRuntimeValueAndLegacyAttributes) {
  OneNode n("Pad", 18);  // pads only axis -1 of a 2x2: numpy.pad(x, ((0, 0), (1, 0)), constant 7)
  n.input(DType::kFloat32, {2, 2}).constant(i64({1, 0})).input(DType::kFloat32, {}).constant(i64({-1}));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{2, 3}));
  EXPECT_EQ(run1(n, {Tensor::from_floats({2, 2}, {1, 2, 3, 4}), Tensor::scalar_float(7)}),
            (std::vector<double>{7, 1, 2, 7, 3, 4}));
  OneNode legacy("Pad", 2);
  legacy.input(DType::kFloat32, {2}).attr("pads", Attribute::of_ints({1, 1})).attr("value", Attribute::of_float(-1.5f));
  ASSERT_TRUE(legacy.build().is_ok());
  EXPECT_FALSE(legacy.built().has_attr("pads"));
  EXPECT_EQ(run1(legacy, {Tensor::from_floats({2}, {5, 6})}), (std::vector<double>{-1.5, 5, 6, -1.5}));
  OneNode pad1("Pad", 1);  // Pad-1's attribute name
  pad1.input(DType::kFloat32, {2}).attr("paddings", Attribute::of_ints({0, 2})).attr("mode", Attribute::of_string("edge"));
  ASSERT_TRUE(pad1.build().is_ok());
  EXPECT_EQ(run1(pad1, {Tensor::from_floats({2}, {5, 6})}), (std::vector<double>{5, 6, 6, 6}));
  OneNode wrap18("Pad", 18);
  wrap18.input(DType::kFloat32, {2}).constant(i64({1, 1})).attr("mode", Attribute::of_string("wrap"));
  EXPECT_FALSE(wrap18.build().is_ok());
  OneNode rt("Pad");
  rt.input(DType::kFloat32, {2}).input(DType::kInt64, {2});
  Status s = rt.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "must be a constant")) << s.message();
}

// Pad-2's `value` is a float attribute; on an integer tensor inf / -inf / NaN become the type's
// limits / 0 (saturating, as the GPU converts), not an undefined conversion (fuzz finds:
// model_mutator, UBSan, 2026-11-27).
TEST(Pad, LegacyFloatValueOnIntegersSaturates) {
  const float cases[3] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::quiet_NaN()};
  const double want[3] = {2147483647.0, -2147483648.0, 0.0};
  for (int c = 0; c < 3; ++c) {
    OneNode n("Pad", 2);
    n.input(DType::kInt32, {1}).attr("pads", Attribute::of_ints({1, 0})).attr("value", Attribute::of_float(cases[c]));
    ASSERT_TRUE(n.build().is_ok());
    Tensor x(DType::kInt32, {1});
    x.set_int(0, 5);
    EXPECT_EQ(run1(n, {x}), (std::vector<double>{want[c], 5})) << c;
  }
}

// TensorScatter-24: past [2, 4, 1] (batch 2, max length 4), update [2, 2, 1]; batch 0 writes at 3
// and batch 1 at -1. Circular (numpy's (w + s) % 4): batch 0 writes update s = 0, 1 at positions
// 3, 0 and batch 1 at 3 (-1 % 4), 0. Linear: batch 0 writes position 3 (its second write, at 4, falls past the end and is
// dropped); batch 1's writes would be at -1 and 0, so position 0 takes update[1][1].
TEST(TensorScatter, LinearAndCircularWriteIndices) {
  Tensor past = Tensor::from_floats({2, 4, 1}, {0, 1, 2, 3, 10, 11, 12, 13});
  Tensor update = Tensor::from_floats({2, 2, 1}, {100, 101, 200, 201});
  Tensor where = i64({3, -1});
  for (const char* mode : {"circular", "linear"}) {
    OneNode n("TensorScatter", 24);
    n.input(DType::kFloat32, {2, 4, 1}).input(DType::kFloat32, {2, 2, 1}).input(DType::kInt64, {2});
    n.attr("mode", Attribute::of_string(mode)).attr("axis", Attribute::of_int(1));
    ASSERT_TRUE(n.build().is_ok());
    const std::vector<double> want = std::string(mode) == "circular"
                                         ? std::vector<double>{101, 1, 2, 100, 201, 11, 12, 200}
                                         : std::vector<double>{0, 1, 2, 100, 201, 11, 12, 13};
    EXPECT_EQ(run1(n, {past, update, where}), want) << mode;
  }
  OneNode no_indices("TensorScatter", 24);  // default axis -2, writes from 0
  no_indices.input(DType::kFloat32, {2, 4, 1}).input(DType::kFloat32, {2, 2, 1});
  ASSERT_TRUE(no_indices.build().is_ok());
  EXPECT_EQ(run1(no_indices, {past, update}), (std::vector<double>{100, 101, 2, 3, 200, 201, 12, 13}));
  OneNode batch_axis("TensorScatter", 24);
  batch_axis.input(DType::kFloat32, {2, 4}).input(DType::kFloat32, {1, 4}).attr("axis", Attribute::of_int(0));
  Status s = batch_axis.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "batch axis")) << s.message();
  OneNode too_long("TensorScatter", 24);
  too_long.input(DType::kFloat32, {2, 4, 1}).input(DType::kFloat32, {2, 5, 1});
  EXPECT_FALSE(too_long.build().is_ok());
}

// CenterCropPad-18 imports as Pad with centred pads: crop 5 -> 2 starts at 1 ((5 - 2) // 2), pad
// 2 -> 5 puts 1 zero before and 2 after (the odd element at the end).
TEST(CenterCropPad, CentredCropAndPadAsPad) {
  OneNode n("CenterCropPad", 18);
  n.input(DType::kFloat32, {5, 2}).constant(i64({2, 5}));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.built().op_type, "Pad");
  EXPECT_EQ(n.out().shape, (Shape{2, 5}));
  EXPECT_EQ(run1(n, {iota({5, 2})}), (std::vector<double>{0, 2.5, 3.5, 0, 0, 0, 4.5, 5.5, 0, 0}));  // iota: i + 0.5
  OneNode axes("CenterCropPad", 18);  // only the last axis, negative
  axes.input(DType::kFloat32, {2, 4}).constant(i64({1})).attr("axes", Attribute::of_ints({-1}));
  ASSERT_TRUE(axes.build().is_ok());
  EXPECT_EQ(axes.out().shape, (Shape{2, 1}));
  EXPECT_EQ(run1(axes, {iota({2, 4})}), (std::vector<double>{1.5, 5.5}));
  OneNode runtime("CenterCropPad", 18);
  runtime.input(DType::kFloat32, {2, 4}).input(DType::kInt64, {2});
  Status s = runtime.build();
  EXPECT_NE(s.message().find("(CenterCropPad): input 1 must be a constant"), std::string::npos) << s.message();
}

TEST(Range, CountsAndValues) {
  auto range = [](Tensor a, Tensor b, Tensor c, Status* st) {
    OneNode n("Range");
    n.constant(a).constant(b).constant(c);
    *st = n.build();
    return st->is_ok() ? run1(n, {}) : std::vector<double>{};
  };
  Status s = Status::ok();
  Tensor a(DType::kInt32, {}), b(DType::kInt32, {}), c(DType::kInt32, {});
  a.set_int(0, 10);
  b.set_int(0, 4);
  c.set_int(0, -3);
  EXPECT_EQ(range(a, b, c, &s), (std::vector<double>{10, 7}));
  EXPECT_EQ(range(Tensor::scalar_float(1), Tensor::scalar_float(5), Tensor::scalar_float(2), &s), (std::vector<double>{1, 3}));
  EXPECT_EQ(range(Tensor::scalar_float(1), Tensor::scalar_float(5.5f), Tensor::scalar_float(1.5f), &s),
            (std::vector<double>{1, 2.5, 4}));
  EXPECT_EQ(range(Tensor::scalar_int64(3), Tensor::scalar_int64(1), Tensor::scalar_int64(1), &s), std::vector<double>{});
  range(Tensor::scalar_int64(3), Tensor::scalar_int64(1), Tensor::scalar_int64(0), &s);
  EXPECT_FALSE(s.is_ok());
  OneNode rt("Range");
  rt.input(DType::kInt64, {}).constant(Tensor::scalar_int64(4)).constant(Tensor::scalar_int64(1));
  EXPECT_FALSE(rt.build().is_ok());
  // float16 / bfloat16: start + i * delta in float, rounded to the type (0.1 is not a half).
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    Tensor s16(t, {}), l16(t, {}), d16(t, {});
    s16.set(0, 1);
    l16.set(0, 1.5);
    d16.set(0, 0.1);
    std::vector<double> got = range(s16, l16, d16, &s);
    ASSERT_TRUE(s.is_ok()) << s.message();
    const float d = static_cast<float>(d16.get(0));  // 0.0999755859375 (half), 0.10009765625 (bfloat16)
    ASSERT_EQ(got.size(), t == DType::kFloat16 ? 6u : 5u) << dtype_name(t);  // ceil(0.5 / d)
    for (size_t i = 0; i < got.size(); ++i) {
      Tensor want(t, {});
      want.set(0, 1.0f + static_cast<float>(i) * d);
      EXPECT_EQ(got[i], want.get(0)) << dtype_name(t) << " element " << i;
    }
  }
}

TEST(Trilu, UpperLowerWithK) {
  for (int upper : {0, 1})
    for (int64_t k : {-1, 0, 2}) {
      OneNode n("Trilu");
      n.input(DType::kFloat32, {2, 3, 4}).constant(Tensor::scalar_int64(k)).attr("upper", Attribute::of_int(upper));
      ASSERT_TRUE(n.build().is_ok());
      std::vector<double> want;
      for (int b = 0; b < 2; ++b)
        for (int r = 0; r < 3; ++r)
          for (int c = 0; c < 4; ++c) {
            bool keep = upper ? c >= r + k : c <= r + k;
            want.push_back(keep ? (b * 12 + r * 4 + c + 0.5) : 0.0);
          }
      EXPECT_EQ(run1(n, {iota({2, 3, 4})}), want) << upper << " " << k;
    }
  OneNode rt("Trilu");
  rt.input(DType::kFloat32, {2, 2}).input(DType::kInt64, {});
  EXPECT_FALSE(rt.build().is_ok());
  OneNode r1("Trilu");
  r1.input(DType::kFloat32, {2});
  EXPECT_FALSE(r1.build().is_ok());
}

TEST(CumSum, ExclusiveReverseAxes) {
  auto cs = [](int exclusive, int reverse) {
    OneNode n("CumSum");
    n.input(DType::kInt64, {5}).constant(Tensor::scalar_int64(0)).attr("exclusive", Attribute::of_int(exclusive))
        .attr("reverse", Attribute::of_int(reverse));
    EXPECT_TRUE(n.build().is_ok());
    return run1(n, {i64({1, 2, 3, 4, 5})});
  };
  EXPECT_EQ(cs(0, 0), (std::vector<double>{1, 3, 6, 10, 15}));
  EXPECT_EQ(cs(1, 0), (std::vector<double>{0, 1, 3, 6, 10}));
  EXPECT_EQ(cs(0, 1), (std::vector<double>{15, 14, 12, 9, 5}));
  EXPECT_EQ(cs(1, 1), (std::vector<double>{14, 12, 9, 5, 0}));
  OneNode n("CumSum");
  n.input(DType::kFloat16, {2, 3}).constant(Tensor::scalar_int64(-1));
  ASSERT_TRUE(n.build().is_ok());
  Tensor x(DType::kFloat16, {2, 3});
  const double v[6] = {0.5, 1.25, -2, 3, 0.125, 1};
  for (int i = 0; i < 6; ++i) x.set(i, v[i]);
  EXPECT_EQ(run1(n, {x}), (std::vector<double>{0.5, 1.75, -0.25, 3, 3.125, 4.125}));
  OneNode wrap("CumSum");  // int32 sums wrap like the GPU's adds: INT32_MAX + 1 = INT32_MIN
  wrap.input(DType::kInt32, {2}).constant(Tensor::scalar_int64(0));
  ASSERT_TRUE(wrap.build().is_ok());
  Tensor w(DType::kInt32, {2});
  w.set_int(0, 2147483647);
  w.set_int(1, 1);
  EXPECT_EQ(run1(wrap, {w}), (std::vector<double>{2147483647.0, -2147483648.0}));
  OneNode i8("CumSum");
  i8.input(DType::kInt8, {3}).constant(Tensor::scalar_int64(0));
  EXPECT_FALSE(i8.build().is_ok());
}

// CumProd (opset 26): the running product, 1 before the first element when exclusive.
TEST(CumProd, ExclusiveReverseAxesAndWrap) {
  auto cp = [](int exclusive, int reverse) {
    OneNode n("CumProd", 26);
    n.input(DType::kInt64, {4}).constant(Tensor::scalar_int64(0)).attr("exclusive", Attribute::of_int(exclusive))
        .attr("reverse", Attribute::of_int(reverse));
    EXPECT_TRUE(n.build().is_ok());
    return run1(n, {i64({2, 3, -1, 5})});
  };
  EXPECT_EQ(cp(0, 0), (std::vector<double>{2, 6, -6, -30}));
  EXPECT_EQ(cp(1, 0), (std::vector<double>{1, 2, 6, -6}));
  EXPECT_EQ(cp(0, 1), (std::vector<double>{-30, -15, -5, 5}));
  EXPECT_EQ(cp(1, 1), (std::vector<double>{-15, -5, 5, 1}));
  OneNode f("CumProd", 26);  // along axis 0 of a 2x2
  f.input(DType::kFloat32, {2, 2}).constant(Tensor::scalar_int64(0));
  ASSERT_TRUE(f.build().is_ok());
  EXPECT_EQ(run1(f, {Tensor::from_floats({2, 2}, {1.5f, -2, 4, 0.5f})}), (std::vector<double>{1.5, -2, 6, -1}));
  OneNode wrap("CumProd", 26);  // int32 products wrap: 65536 * 65536 = 2^32 = 0 mod 2^32
  wrap.input(DType::kInt32, {2}).constant(Tensor::scalar_int64(0));
  ASSERT_TRUE(wrap.build().is_ok());
  Tensor w(DType::kInt32, {2});
  w.set_int(0, 65536);
  w.set_int(1, 65536);
  EXPECT_EQ(run1(wrap, {w}), (std::vector<double>{65536, 0}));
}

TEST(DepthSpace, SpecFormulasAndRoundTrip) {
  const int64_t b = 2, n_ = 2, c = 3, h = 2, w = 3;
  for (const char* mode : {"DCR", "CRD"}) {
    OneNode n("DepthToSpace");
    n.input(DType::kFloat32, {n_, c * b * b, h, w}).attr("blocksize", Attribute::of_int(b)).attr("mode", Attribute::of_string(mode));
    ASSERT_TRUE(n.build().is_ok());
    EXPECT_EQ(n.out().shape, (Shape{n_, c, h * b, w * b}));
    Tensor x = iota({n_, c * b * b, h, w});
    std::vector<double> got = run1(n, {x});
    ASSERT_EQ(got.size(), static_cast<size_t>(x.numel()));
    bool dcr = std::string(mode) == "DCR";
    for (int64_t ni = 0; ni < n_; ++ni)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t y = 0; y < h * b; ++y)
          for (int64_t xx = 0; xx < w * b; ++xx) {
            int64_t i = y % b, j = xx % b;
            int64_t src_c = dcr ? (i * b + j) * c + ci : ci * b * b + i * b + j;
            double want = x.get(((ni * c * b * b + src_c) * h + y / b) * w + xx / b);
            ASSERT_EQ(got[static_cast<size_t>(((ni * c + ci) * h * b + y) * w * b + xx)], want) << mode;
          }
  }
  // SpaceToDepth inverts DepthToSpace in DCR mode.
  OneNode s2d("SpaceToDepth");
  s2d.input(DType::kInt16, {1, 2, 4, 6}).attr("blocksize", Attribute::of_int(2));
  ASSERT_TRUE(s2d.build().is_ok());
  EXPECT_EQ(s2d.out().shape, (Shape{1, 8, 2, 3}));
  Tensor x = iota({1, 2, 4, 6}, DType::kInt16);
  auto mid = s2d.run({x});
  ASSERT_TRUE(mid.is_ok());
  OneNode d2s("DepthToSpace");
  d2s.input(DType::kInt16, {1, 8, 2, 3}).attr("blocksize", Attribute::of_int(2));
  ASSERT_TRUE(d2s.build().is_ok());
  EXPECT_EQ(run1(d2s, {(*mid)[0]}), x.to_doubles());
  OneNode bad("SpaceToDepth");
  bad.input(DType::kFloat32, {1, 1, 3, 4}).attr("blocksize", Attribute::of_int(2));
  EXPECT_FALSE(bad.build().is_ok());
  OneNode bad_mode("SpaceToDepth");
  bad_mode.input(DType::kFloat32, {1, 1, 4, 4}).attr("blocksize", Attribute::of_int(2)).attr("mode", Attribute::of_string("RDC"));
  EXPECT_FALSE(bad_mode.build().is_ok());
}

// SpaceToDepth's CRD mode (opset 28; it was silently computed as DCR before): output channel
// c * b * b + by * b + bx, checked against that formula and the spec's example values.
TEST(DepthSpace, SpaceToDepthCrdMode) {
  const int64_t b = 2, n_ = 2, c = 3, h = 4, w = 6;
  OneNode n("SpaceToDepth");
  n.input(DType::kFloat32, {n_, c, h, w}).attr("blocksize", Attribute::of_int(b)).attr("mode", Attribute::of_string("CRD"));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{n_, c * b * b, h / b, w / b}));
  Tensor x = iota({n_, c, h, w});
  std::vector<double> got = run1(n, {x});
  for (int64_t ni = 0; ni < n_; ++ni)
    for (int64_t oc = 0; oc < c * b * b; ++oc)
      for (int64_t y = 0; y < h / b; ++y)
        for (int64_t xx = 0; xx < w / b; ++xx) {
          const int64_t ci = oc / (b * b), by = (oc % (b * b)) / b, bx = oc % b;
          const double want = x.get(((ni * c + ci) * h + y * b + by) * w + xx * b + bx);
          ASSERT_EQ(got[static_cast<size_t>(((ni * c * b * b + oc) * (h / b) + y) * (w / b) + xx)], want);
        }
  // The spec's example (onnx backend test test_spacetodepth_crd_mode_example).
  OneNode e("SpaceToDepth");
  e.input(DType::kFloat32, {1, 2, 4, 6}).attr("blocksize", Attribute::of_int(2)).attr("mode", Attribute::of_string("CRD"));
  ASSERT_TRUE(e.build().is_ok());
  Tensor ex(DType::kFloat32, {1, 2, 4, 6});
  const double vals[48] = {0, 9, 1, 10, 2, 11, 18, 27, 19, 28, 20, 29, 3, 12, 4, 13, 5, 14, 21, 30, 22, 31, 23, 32,
                           36, 45, 37, 46, 38, 47, 54, 63, 55, 64, 56, 65, 39, 48, 40, 49, 41, 50, 57, 66, 58, 67, 59, 68};
  for (int64_t i = 0; i < 48; ++i) ex.set(i, vals[i]);
  std::vector<double> ey = run1(e, {ex});
  ASSERT_EQ(ey.size(), 48u);
  // The spec's y: output channel k holds 9k, 9k + 1, ..., 9k + 5.
  for (int64_t i = 0; i < 48; ++i) EXPECT_EQ(ey[static_cast<size_t>(i)], static_cast<double>(9 * (i / 6) + i % 6)) << i;
}

// Ops with an optional second output that the model leaves out ("" -> kNoValue): the reference
// must not fill the evaluator's placeholder for it (Dropout's did, through constant folding, and
// hit Tensor::set's assertion: a fuzz find, 2026-11-27); CausalConvWithState and LinearAttention
// (their present_state) are checked the same way.
TEST(Dropout, AbsentSecondOutputsAreNotWritten) {
  struct Case { const char* op; int64_t opset; std::vector<Shape> in; Attributes attrs; };
  const std::vector<Case> cases = {
      {"Dropout", 16, {{3}}, {}},
      {"CausalConvWithState", 27, {{1, 2, 5}, {2, 1, 3}}, {}},
      {"LinearAttention", 27, {{1, 3, 8}, {1, 3, 8}, {1, 3, 8}},
       {{"q_num_heads", Attribute::of_int(2)}, {"kv_num_heads", Attribute::of_int(2)},
        {"update_rule", Attribute::of_string("linear")}}},
  };
  for (const Case& c : cases) {
    Graph g;
    g.opset = c.opset;
    std::vector<ValueId> ins;
    std::vector<Tensor> data;
    for (size_t i = 0; i < c.in.size(); ++i) {
      ins.push_back(g.add_value("in" + std::to_string(i), DType::kFloat32, c.in[i], true));
      g.inputs.push_back(ins.back());
      data.push_back(iota(c.in[i]));
    }
    const ValueId y = g.add_value("y");
    g.nodes.push_back(Node{"n", c.op, "", ins, {y, kNoValue}, c.attrs});
    g.outputs.push_back(y);
    ASSERT_TRUE(infer_shapes(g).is_ok()) << c.op;
    auto out = evaluate_graph(g, data);
    ASSERT_TRUE(out.is_ok()) << c.op << ": " << out.status().message();
    EXPECT_EQ(out->size(), 1u) << c.op;
  }
}

TEST(Dropout, InferenceIdentityMaskAndTrainingRefused) {
  OneNode n("Dropout", 13);
  n.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {});
  ASSERT_TRUE(n.build(2).is_ok());
  EXPECT_EQ(n.out(1).dtype, DType::kBool);
  Tensor x = iota({2, 3});
  auto r = n.run({x, Tensor::scalar_float(0.7f)});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ((*r)[0].to_doubles(), x.to_doubles());
  EXPECT_EQ((*r)[1].to_doubles(), std::vector<double>(6, 1.0));
  OneNode old("Dropout", 7);
  old.input(DType::kFloat16, {3});
  ASSERT_TRUE(old.build(2).is_ok());
  EXPECT_EQ(old.out(1).dtype, DType::kFloat16);
  Tensor yes(DType::kBool, {});
  yes.set(0, 1);
  OneNode train("Dropout", 13);
  train.input(DType::kFloat32, {3}).absent().constant(yes);
  Status s = train.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "training")) << s.message();
  OneNode rt("Dropout", 13);
  rt.input(DType::kFloat32, {3}).absent().input(DType::kBool, {});
  EXPECT_FALSE(rt.build().is_ok());
  OneNode no_mask("Dropout", 13);
  no_mask.input(DType::kFloat32, {3});
  ASSERT_TRUE(no_mask.build().is_ok());
  auto l = default_registry().find("Dropout")->lower(no_mask.built(), no_mask.graph);
  ASSERT_TRUE(l.is_ok());
  EXPECT_TRUE(l->is_view);
}

TEST(DataDependent, RefusedAtRunTimeComputedWhenConstant) {
  for (const char* op : {"NonZero", "Unique", "NonMaxSuppression", "Compress"}) {
    const OpDef* def = default_registry().find(op);
    ASSERT_NE(def, nullptr) << op;
    EXPECT_TRUE(def->traits.data_dependent_shape) << op;
  }
  OneNode rt("NonZero");
  rt.input(DType::kFloat32, {3});
  Status s = rt.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "output shape depends on input values")) << s.message();
  OneNode un("Unique");
  un.input(DType::kFloat32, {3});
  EXPECT_FALSE(un.build(4).is_ok());

  OneNode nz("NonZero");  // numpy.nonzero([[1, 0], [0, 3], [-2, 0]]) = ([0, 1, 2], [0, 1, 0])
  Tensor c(DType::kInt32, {3, 2});
  const int v[6] = {1, 0, 0, 3, -2, 0};
  for (int i = 0; i < 6; ++i) c.set_int(i, v[i]);
  nz.constant(c);
  ASSERT_TRUE(nz.build().is_ok());
  EXPECT_EQ(nz.out().shape, (Shape{2, 3}));
  EXPECT_EQ(run1(nz, {}), (std::vector<double>{0, 1, 2, 0, 1, 0}));

  OneNode cp("Compress");  // numpy.compress([0, 1, 1], x, axis=1) on x = iota(2x4)
  Tensor cond(DType::kBool, {3});
  cond.set(1, 1);
  cond.set(2, 1);
  cp.constant(iota({2, 4})).constant(cond).attr("axis", Attribute::of_int(1));
  ASSERT_TRUE(cp.build().is_ok());
  EXPECT_EQ(cp.out().shape, (Shape{2, 2}));
  EXPECT_EQ(run1(cp, {}), (std::vector<double>{1.5, 2.5, 5.5, 6.5}));
}

#ifdef AOTC_HAVE_OPT
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape on a run-time input folds to constants, so
// only the Reshape stays (the shape subgraph never reaches the GPU).
TEST(ShapeSubgraph, FoldsToConstants) {
  Graph g;
  g.opset = 17;
  ValueId x = g.add_value("x", DType::kFloat32, {2, 3, 4}, true);
  g.inputs.push_back(x);
  auto node = [&](const char* op, std::vector<ValueId> ins, const char* out) {
    Node n;
    n.name = out;
    n.op_type = op;
    n.inputs = std::move(ins);
    n.outputs = {g.add_value(out)};
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  ValueId shape = node("Shape", {x}, "shape");
  ValueId d0 = node("Gather", {shape, g.add_constant("zero", Tensor::scalar_int64(0))}, "d0");
  ValueId d0u = node("Unsqueeze", {d0, g.add_constant("ax", i64({0}))}, "d0u");
  ValueId cat = node("Concat", {d0u, g.add_constant("minus1", i64({-1}))}, "cat");
  g.nodes.back().attrs["axis"] = Attribute::of_int(0);
  // Infer node by node, folding as the frontend would need (the Reshape needs a constant shape).
  for (size_t i = 0; i < g.nodes.size(); ++i) ASSERT_TRUE(infer_node(g.nodes[i], g).is_ok()) << i;
  ValueId y = node("Reshape", {x, cat}, "y");
  g.outputs.push_back(y);
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.is_ok()) << folded.status().message();
  EXPECT_TRUE(*folded);
  ASSERT_TRUE(g.value(cat).is_constant());
  EXPECT_EQ(g.value(cat).constant->to_int64s(), (std::vector<int64_t>{2, -1}));
  ASSERT_TRUE(infer_node(g.nodes.back(), g).is_ok());
  EXPECT_EQ(g.value(y).shape, (Shape{2, 12}));
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Reshape");
}
#endif

}  // namespace
}  // namespace aotc
