// Concat, Transpose and Softmax: shape inference and its errors, values against computations that
// walk the data differently from the references (input-driven scatter for Transpose, output-driven
// selection for Concat, exp without max-subtraction in long double for Softmax), dtypes and edges.
#include <cmath>
#include <map>
#include <numeric>

#include "ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;

std::vector<int64_t> coords_of(int64_t flat, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    c[static_cast<size_t>(d)] = flat % shape[static_cast<size_t>(d)];
    flat /= shape[static_cast<size_t>(d)];
  }
  return c;
}

int64_t flat_of(const std::vector<int64_t>& c, const Shape& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + c[d];
  return f;
}

TEST(Concat, ShapesAndErrors) {
  OneNode n("Concat");
  n.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {2, 5}).input(DType::kFloat32, {2, 0});
  n.attr("axis", Attribute::of_int(-1));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{2, 8}));

  OneNode bad("Concat");
  bad.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {3, 3}).attr("axis", Attribute::of_int(1));
  Status s = bad.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "differs from input 0")) << s.message();

  OneNode axis("Concat");
  axis.input(DType::kFloat32, {2, 3}).attr("axis", Attribute::of_int(2));
  s = axis.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "axis 2 out of range")) << s.message();

  OneNode no_axis("Concat");
  no_axis.input(DType::kFloat32, {2});
  EXPECT_FALSE(no_axis.build().is_ok());

  OneNode mixed("Concat");
  mixed.input(DType::kFloat32, {2}).input(DType::kInt32, {2}).attr("axis", Attribute::of_int(0));
  EXPECT_FALSE(mixed.build().is_ok());

  OneNode legacy("Concat", 3);  // opset < 4: axis defaults to 1
  legacy.input(DType::kFloat32, {2, 1}).input(DType::kFloat32, {2, 2});
  ASSERT_TRUE(legacy.build().is_ok());
  EXPECT_EQ(legacy.out().shape, (Shape{2, 3}));
}

TEST(Concat, ValuesAcrossAxesAndDtypes) {
  const int64_t kAxisSizes[] = {2, 1, 4};  // each input's extent along the concat axis
  for (DType t : {DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kUInt8, DType::kBool}) {
    for (int64_t axis : {0, 1, 2, -1}) {
      int64_t a = axis < 0 ? axis + 3 : axis;
      OneNode n("Concat");
      std::vector<Tensor> ins;
      for (size_t i = 0; i < 3; ++i) {
        Shape s = {3, 2, 5};
        s[static_cast<size_t>(a)] = kAxisSizes[i];
        n.input(t, s);
        std::vector<double> v(static_cast<size_t>(shape_numel(s)));
        for (size_t k = 0; k < v.size(); ++k) v[k] = t == DType::kBool ? (k + i) % 2 : double(100 * i + k) / (t == DType::kFloat16 ? 4 : 1);
        ins.push_back(test::make_tensor(t, s, v));
      }
      n.attr("axis", Attribute::of_int(axis));
      ASSERT_TRUE(n.build().is_ok());
      auto out = n.run(ins);
      ASSERT_TRUE(out.is_ok()) << out.status().message();
      const Tensor& y = out.value()[0];
      // For each output element: find the input whose range along the axis holds it.
      for (int64_t f = 0; f < y.numel(); ++f) {
        std::vector<int64_t> c = coords_of(f, y.shape());
        size_t which = 0;
        while (c[static_cast<size_t>(a)] >= ins[which].shape()[static_cast<size_t>(a)]) {
          c[static_cast<size_t>(a)] -= ins[which].shape()[static_cast<size_t>(a)];
          ++which;
        }
        ASSERT_EQ(y.get(f), ins[which].get(flat_of(c, ins[which].shape())))
            << dtype_name(t) << " axis " << axis << " element " << f;
      }
    }
  }
}

TEST(Concat, LoweringOneKernelPerNonEmptyInput) {
  OneNode n("Concat");
  n.input(DType::kFloat16, {4, 3}).input(DType::kFloat16, {4, 0}).input(DType::kFloat16, {4, 2});
  n.attr("axis", Attribute::of_int(1));
  ASSERT_TRUE(n.build().is_ok());
  auto l = default_registry().find("Concat")->lower(n.built(), n.graph);
  ASSERT_TRUE(l.is_ok());
  ASSERT_EQ(l->steps.size(), 2u);
  auto hole = [](const KernelStep& k, const char* key) {
    for (auto& h : k.holes)
      if (h.first == key) return h.second;
    return std::string("<missing>");
  };
  EXPECT_EQ(hole(l->steps[1].kernel, "out_offset"), "3LL");  // after 3 + 0 columns
  EXPECT_EQ(hole(l->steps[1].kernel, "out_inner"), "5LL");
  EXPECT_EQ(hole(l->steps[1].kernel, "T"), "unsigned short");
  EXPECT_EQ(hole(l->steps[1].kernel, "VEC"), "1LL");  // 2 and 5 columns: not whole 16-byte vectors
}

Tensor transpose_by_scatter(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out_shape(perm.size());
  for (size_t j = 0; j < perm.size(); ++j) out_shape[j] = x.shape()[static_cast<size_t>(perm[j])];
  Tensor y(x.dtype(), out_shape);
  for (int64_t f = 0; f < x.numel(); ++f) {
    std::vector<int64_t> c = coords_of(f, x.shape()), o(perm.size());
    for (size_t j = 0; j < perm.size(); ++j) o[j] = c[static_cast<size_t>(perm[j])];
    y.set_int(flat_of(o, out_shape), x.get_int(f));
  }
  return y;
}

TEST(Transpose, AllPermutationsOfRank4AndDefault) {
  Shape shape = {2, 3, 1, 5};
  Tensor x(DType::kInt64, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_int(i, i * 7 - 11);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    OneNode n("Transpose");
    n.input(DType::kInt64, shape).attr("perm", Attribute::of_ints(perm));
    ASSERT_TRUE(n.build().is_ok());
    auto out = n.run({x});
    ASSERT_TRUE(out.is_ok());
    Tensor want = transpose_by_scatter(x, perm);
    EXPECT_EQ(out.value()[0].shape(), want.shape());
    EXPECT_EQ(out.value()[0].to_int64s(), want.to_int64s());
  } while (std::next_permutation(perm.begin(), perm.end()));

  OneNode d("Transpose");
  d.input(DType::kFloat16, {2, 3, 5});
  ASSERT_TRUE(d.build().is_ok());
  EXPECT_EQ(d.out().shape, (Shape{5, 3, 2}));
  Tensor h = test::make_tensor(DType::kFloat16, {2, 3, 5}, test::lcg_values(30, -2, 2, 9));
  auto out = d.run({h});
  ASSERT_TRUE(out.is_ok());
  Tensor want(DType::kFloat16, {5, 3, 2});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 5; ++k) want.set((k * 3 + j) * 2 + i, h.get((i * 3 + j) * 5 + k));
  EXPECT_TENSOR_NEAR(out.value()[0], want);
}

TEST(Transpose, BadPermAndEdges) {
  for (const std::vector<int64_t>& perm : std::vector<std::vector<int64_t>>{{0, 0, 1}, {0, 1}, {0, 1, 3}, {-1, 0, 1}}) {
    OneNode n("Transpose");
    n.input(DType::kFloat32, {2, 3, 4}).attr("perm", Attribute::of_ints(perm));
    Status s = n.build();
    EXPECT_FALSE(s.is_ok());
    EXPECT_TRUE(test::contains(s.message(), "perm")) << s.message();
  }
  OneNode scalar("Transpose");
  scalar.input(DType::kFloat32, {});
  ASSERT_TRUE(scalar.build().is_ok());
  EXPECT_EQ(scalar.out().shape, (Shape{}));
  OneNode empty("Transpose");
  empty.input(DType::kFloat32, {0, 3});
  ASSERT_TRUE(empty.build().is_ok());
  EXPECT_EQ(empty.out().shape, (Shape{3, 0}));
  auto l = default_registry().find("Transpose")->lower(empty.built(), empty.graph);
  ASSERT_TRUE(l.is_ok());
  EXPECT_TRUE(l->steps.empty());
}

TEST(Transpose, LoweringCollapsesAdjacentDims) {
  auto lower = [](Shape shape, std::vector<int64_t> perm) {
    OneNode n("Transpose");
    n.input(DType::kFloat32, shape).attr("perm", Attribute::of_ints(perm));
    EXPECT_TRUE(n.build().is_ok());
    auto l = default_registry().find("Transpose")->lower(n.built(), n.graph);
    EXPECT_TRUE(l.is_ok());
    std::map<std::string, std::string> holes(l->steps[0].kernel.holes.begin(), l->steps[0].kernel.holes.end());
    holes["template"] = l->steps[0].kernel.template_name;
    return holes;
  };
  // NCHW -> NHWC on [2,3,4,5]: H and W stay adjacent, so it is a batched swap of [3, 20].
  auto h = lower({2, 3, 4, 5}, {0, 2, 3, 1});
  EXPECT_EQ(h["template"], "transpose_tiled");
  EXPECT_EQ(h["batch"], "2LL");
  EXPECT_EQ(h["rows"], "3LL");
  EXPECT_EQ(h["cols"], "20LL");
  // [4,6,8] perm (1,0,2): the last dim stays innermost, so a gather of rows of 8.
  h = lower({4, 6, 8}, {1, 0, 2});
  EXPECT_EQ(h["template"], "transpose");
  EXPECT_EQ(h["dims"], "{6LL, 4LL, 8LL}");
  EXPECT_EQ(h["in_strides"], "{8LL, 48LL, 1LL}");
  // Size-1 dims vanish: [1,5,1,7] perm (3,1,2,0) is a plain [5,7] -> [7,5] swap.
  h = lower({1, 5, 1, 7}, {3, 1, 2, 0});
  EXPECT_EQ(h["template"], "transpose_tiled");
  EXPECT_EQ(h["batch"], "1LL");
  EXPECT_EQ(h["rows"], "5LL");
  EXPECT_EQ(h["cols"], "7LL");
}

// Softmax of x over the [outer, n, inner] split, via exp(x) / sum exp(x) in long double
// (inputs are small, so no max-subtraction is needed here).
Tensor softmax_direct(const Tensor& x, int64_t outer, int64_t n, int64_t inner) {
  Tensor y(x.dtype(), x.shape());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c) {
      long double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<long double>(x.get((o * n + j) * inner + c)));
      for (int64_t j = 0; j < n; ++j)
        y.set((o * n + j) * inner + c,
              static_cast<double>(std::exp(static_cast<long double>(x.get((o * n + j) * inner + c))) / sum));
    }
  return y;
}

TEST(Softmax, AxesOpsetsAndDtypes) {
  const Shape shape = {2, 3, 7};
  struct Case {
    int64_t opset;
    int64_t axis;  // attribute; INT64_MIN = absent
    int64_t outer, n, inner;
  };
  const Case cases[] = {{13, INT64_MIN, 6, 7, 1}, {13, 0, 1, 2, 21}, {13, 1, 2, 3, 7}, {13, -2, 2, 3, 7},
                        {11, INT64_MIN, 2, 21, 1}, {11, 0, 1, 42, 1}, {11, 2, 6, 7, 1}, {1, -2, 2, 21, 1}};
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    for (const Case& c : cases) {
      OneNode node("Softmax", c.opset);
      node.input(t, shape);
      if (c.axis != INT64_MIN) node.attr("axis", Attribute::of_int(c.axis));
      ASSERT_TRUE(node.build().is_ok());
      Tensor x = test::make_tensor(t, shape, test::lcg_values(42, -5, 5, 3));
      auto out = node.run({x});
      ASSERT_TRUE(out.is_ok());
      SCOPED_TRACE("opset " + std::to_string(c.opset) + " axis " + std::to_string(c.axis) + " " + dtype_name(t));
      EXPECT_TENSOR_NEAR(out.value()[0], softmax_direct(x, c.outer, c.n, c.inner));
    }
  }
}

TEST(Softmax, LargeNumbersAreStableAndAxisErrors) {
  OneNode n("Softmax");
  n.input(DType::kFloat32, {2, 3});
  ASSERT_TRUE(n.build().is_ok());
  auto out = n.run({Tensor::from_floats({2, 3}, {1000.f, 1001.f, 1002.f, -1e30f, 0.f, 1e30f})});
  ASSERT_TRUE(out.is_ok());
  // softmax([0, 1, 2]) = e^k / (1 + e + e^2)
  const double s = 1 + std::exp(1.0) + std::exp(2.0);
  EXPECT_TENSOR_NEAR(out.value()[0], Tensor::from_floats({2, 3}, {float(1 / s), float(std::exp(1.0) / s),
                                                                  float(std::exp(2.0) / s), 0.f, 0.f, 1.f}));
  OneNode bad("Softmax");
  bad.input(DType::kFloat32, {2, 3}).attr("axis", Attribute::of_int(2));
  Status st = bad.build();
  ASSERT_FALSE(st.is_ok());
  EXPECT_TRUE(test::contains(st.message(), "axis 2 out of range")) << st.message();
  OneNode ints("Softmax");
  ints.input(DType::kInt32, {3});
  EXPECT_FALSE(ints.build().is_ok());
}

TEST(Softmax, LoweringChoosesRowsOrColumns) {
  OneNode rows("Softmax");
  rows.input(DType::kFloat32, {4, 1000});
  ASSERT_TRUE(rows.build().is_ok());
  auto l = default_registry().find("Softmax")->lower(rows.built(), rows.graph);
  ASSERT_TRUE(l.is_ok());
  EXPECT_EQ(l->steps[0].kernel.template_name, "softmax_rows");
  EXPECT_EQ(l->steps[0].kernel.block.x, 256);
  EXPECT_EQ(l->steps[0].kernel.grid.x, 4);

  OneNode cols("Softmax");
  cols.input(DType::kFloat32, {4, 10, 6}).attr("axis", Attribute::of_int(1));
  ASSERT_TRUE(cols.build().is_ok());
  l = default_registry().find("Softmax")->lower(cols.built(), cols.graph);
  ASSERT_TRUE(l.is_ok());
  EXPECT_EQ(l->steps[0].kernel.template_name, "softmax_columns");
}

}  // namespace
}  // namespace aotc
