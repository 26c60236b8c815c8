// CPU references of the loss, Hardmax, OneHot, EyeLike, TopK and ScatterElements ops against
// values worked out by hand (or from the closed-form formula, for log-softmax), plus the errors
// each op returns for input it refuses.
#include <cmath>

#include "tests/ops_basic/ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;
const DType f32 = DType::kFloat32;

Tensor f(Shape s, std::vector<float> v) { return Tensor::from_floats(std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_int64s(std::move(s), v); }

// Builds `n` with `outputs` outputs, runs it on `inputs`, returns the outputs (fails the test on error).
std::vector<Tensor> run(OneNode& n, const std::vector<Tensor>& inputs, int outputs = 1) {
  Status s = n.build(outputs);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return {};
  auto out = n.run(inputs);
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? *out : std::vector<Tensor>{};
}

void expect_values(const Tensor& got, Shape shape, const std::vector<double>& want) {
  ASSERT_EQ(got.shape(), shape);
  Tensor w(got.dtype(), shape);
  for (size_t i = 0; i < want.size(); ++i) w.set(static_cast<int64_t>(i), want[i]);
  EXPECT_EQ(test::compare_tensors(got, w), "");
}

const std::vector<float> kLogp = {-1.0f, -2.0f, -0.5f, -0.3f, -1.5f, -2.5f};  // [2, 3]

TEST(NllLoss, ReductionsWithWeight) {
  // target [2, 0], weight [0.5, 1, 2]: losses 0.5*2 = 1.0 and 0.3*0.5 = 0.15; weights used 2 and 0.5.
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"none", {1.0, 0.15}}, {"sum", {1.15}}, {"mean", {1.15 / 2.5}}};
  for (const auto& [reduction, want] : cases) {
    SCOPED_TRACE(reduction);
    OneNode n("NegativeLogLikelihoodLoss", 13);
    n.input(f32, {2, 3}).input(DType::kInt64, {2}).input(f32, {3}).attr("reduction", Attribute::of_string(reduction));
    auto out = run(n, {f({2, 3}, kLogp), i64({2}, {2, 0}), f({3}, {0.5f, 1.0f, 2.0f})});
    ASSERT_EQ(out.size(), 1u);
    expect_values(out[0], reduction == "none" ? Shape{2} : Shape{}, want);
  }
}

TEST(NllLoss, IgnoreIndexAndNoWeight) {
  OneNode m("NegativeLogLikelihoodLoss", 13);
  m.input(f32, {2, 3}).input(DType::kInt32, {2}).input(f32, {3}).attr("ignore_index", Attribute::of_int(0));
  Tensor t32(DType::kInt32, {2});
  t32.set_int(0, 2);
  t32.set_int(1, 0);
  auto out2 = run(m, {f({2, 3}, kLogp), t32, f({3}, {0.5f, 1.0f, 2.0f})});
  ASSERT_EQ(out2.size(), 1u);
  expect_values(out2[0], {}, {1.0 / 2.0});  // the ignored item adds neither loss nor weight
  OneNode u("NegativeLogLikelihoodLoss", 13);
  u.input(f32, {2, 3}).input(DType::kInt64, {2});
  auto out3 = run(u, {f({2, 3}, kLogp), i64({2}, {2, 0})});
  ASSERT_EQ(out3.size(), 1u);
  expect_values(out3[0], {}, {(0.5 + 0.3) / 2});
}

TEST(NllLoss, SpatialDims) {
  // [N=1, C=2, d=2]: column 0 = [-0.1, -2.0], column 1 = [-3.0, -0.2]; target [[1, 0]].
  OneNode n("NegativeLogLikelihoodLoss", 13);
  n.input(f32, {1, 2, 2}).input(DType::kInt64, {1, 2}).attr("reduction", Attribute::of_string("none"));
  auto out = run(n, {f({1, 2, 2}, {-0.1f, -3.0f, -2.0f, -0.2f}), i64({1, 2}, {1, 0})});
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {1, 2}, {2.0, 3.0});
}

TEST(SoftmaxCrossEntropyLoss, MeanWithLogProbMatchesFormula) {
  OneNode n("SoftmaxCrossEntropyLoss", 13);
  n.input(f32, {1, 3}).input(DType::kInt64, {1});
  auto out = run(n, {f({1, 3}, {1.0f, 2.0f, 3.0f}), i64({1}, {2})}, 2);
  ASSERT_EQ(out.size(), 2u);
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  expect_values(out[0], {}, {lse - 3.0});
  expect_values(out[1], {1, 3}, {1.0 - lse, 2.0 - lse, 3.0 - lse});
}

TEST(SoftmaxCrossEntropyLoss, SumIgnoresIndexWithoutLogProbOutput) {
  OneNode n("SoftmaxCrossEntropyLoss", 13);
  n.input(f32, {2, 2}).input(DType::kInt64, {2}).attr("reduction", Attribute::of_string("sum"))
      .attr("ignore_index", Attribute::of_int(-1));
  auto out = run(n, {f({2, 2}, {0.0f, 0.0f, 5.0f, 1.0f}), i64({2}, {1, -1})});
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {}, {std::log(2.0)});  // -log(1/2) for the first row, second ignored
}

TEST(LossErrors, RefusesBadInput) {
  OneNode a("NegativeLogLikelihoodLoss", 13);
  a.input(f32, {2, 3}).input(DType::kInt64, {2}).attr("reduction", Attribute::of_string("avg"));
  Status s = a.build();
  EXPECT_NE(s.message().find("reduction"), std::string::npos) << s.message();
  OneNode b("SoftmaxCrossEntropyLoss", 13);
  b.input(f32, {2, 3, 4}).input(DType::kInt64, {2, 3});
  s = b.build();
  EXPECT_NE(s.message().find("target shape"), std::string::npos) << s.message();
  OneNode c("NegativeLogLikelihoodLoss", 13);
  c.input(f32, {2, 3}).input(DType::kInt64, {2});
  ASSERT_TRUE(c.build().is_ok());
  auto r = c.run({f({2, 3}, kLogp), i64({2}, {3, 0})});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("outside [0, 3)"), std::string::npos) << r.status().message();
}

TEST(TopK, LargestAndSmallestWithTies) {
  const Tensor x = f({2, 4}, {3, 1, 3, 2, 0, 5, 5, 5});
  OneNode a("TopK", 11);
  a.input(f32, {2, 4}).constant(i64({1}, {3}));
  auto out = run(a, {x}, 2);
  ASSERT_EQ(out.size(), 2u);
  expect_values(out[0], {2, 3}, {3, 3, 2, 5, 5, 5});
  expect_values(out[1], {2, 3}, {0, 2, 3, 1, 2, 3});
  OneNode b("TopK", 11);
  b.input(f32, {2, 4}).constant(i64({1}, {2})).attr("largest", Attribute::of_int(0));
  out = run(b, {x}, 2);
  ASSERT_EQ(out.size(), 2u);
  expect_values(out[0], {2, 2}, {1, 2, 0, 5});
  expect_values(out[1], {2, 2}, {1, 3, 0, 1});
}

TEST(TopK, AxisZeroAndOpset1Attribute) {
  OneNode a("TopK", 11);
  a.input(f32, {3, 2}).constant(i64({1}, {2})).attr("axis", Attribute::of_int(0));
  auto out = run(a, {f({3, 2}, {1, 6, 5, 2, 3, 4})}, 2);
  ASSERT_EQ(out.size(), 2u);
  expect_values(out[0], {2, 2}, {5, 6, 3, 4});
  expect_values(out[1], {2, 2}, {1, 0, 2, 2});
  OneNode b("TopK", 1);
  b.input(DType::kInt64, {4}).attr("k", Attribute::of_int(2));
  out = run(b, {i64({4}, {1, 4, 2, 4})}, 2);
  ASSERT_EQ(out.size(), 2u);
  expect_values(out[0], {2}, {4, 4});
  expect_values(out[1], {2}, {1, 3});
}

TEST(TopK, Uint64AboveInt64Max) {
  Tensor x(DType::kUInt64, {3});
  x.set_int(0, 1);
  x.set_int(1, INT64_MIN + 5);  // the bits of 2^63 + 5: the largest as an unsigned value
  x.set_int(2, 7);
  OneNode a("TopK", 11);
  a.input(DType::kUInt64, {3}).constant(i64({1}, {2}));
  auto out = run(a, {x}, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].get_int(0), 1);
  EXPECT_EQ(out[1].get_int(1), 2);
}

TEST(TopK, RefusesRuntimeOrOversizedK) {
  OneNode a("TopK", 11);
  a.input(f32, {4}).input(DType::kInt64, {1});
  Status s = a.build(2);
  EXPECT_NE(s.message().find("must be a constant"), std::string::npos) << s.message();
  OneNode b("TopK", 11);
  b.input(f32, {4}).constant(i64({1}, {5}));
  s = b.build(2);
  EXPECT_NE(s.message().find("k = 5"), std::string::npos) << s.message();
}

TEST(Hardmax, FirstMaximumPerOpsetSemantics) {
  OneNode a("Hardmax", 13);
  a.input(f32, {2, 3});
  auto out = run(a, {f({2, 3}, {1, 3, 3, 2, 0, 1})});
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {2, 3}, {0, 1, 0, 1, 0, 0});
  const Tensor x = f({1, 2, 2}, {1, 4, 4, 0});
  OneNode b("Hardmax", 11);  // axis 1 coerces to [1, 4]: the first 4 (flat index 1) wins
  b.input(f32, {1, 2, 2}).attr("axis", Attribute::of_int(1));
  out = run(b, {x});
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {1, 2, 2}, {0, 1, 0, 0});
  OneNode c("Hardmax", 13);  // axis 1 alone: per column
  c.input(f32, {1, 2, 2}).attr("axis", Attribute::of_int(1));
  out = run(c, {x});
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {1, 2, 2}, {0, 1, 1, 0});
}

TEST(OneHot, NegativeAndOutOfRangeIndices) {
  OneNode a("OneHot", 11);
  a.input(DType::kInt64, {3}).constant(Tensor::scalar_float(4)).input(f32, {2});
  auto out = run(a, {i64({3}, {0, -1, 5}), f({2}, {2, 7})});
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {3, 4}, {7, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, 2});
  OneNode b("OneHot", 11);
  b.input(f32, {3}).constant(i64({1}, {4})).input(DType::kInt64, {2}).attr("axis", Attribute::of_int(0));
  out = run(b, {f({3}, {0, 3.7f, -4}), i64({2}, {0, 1})});
  ASSERT_EQ(out.size(), 1u);
  // float indices truncate (3.7 -> 3); -4 + depth = 0.
  expect_values(out[0], {4, 3}, {1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0});
}

TEST(OneHot, RefusesRuntimeDepth) {
  OneNode a("OneHot", 11);
  a.input(DType::kInt64, {3}).input(DType::kInt64, {}).input(f32, {2});
  Status s = a.build();
  EXPECT_NE(s.message().find("must be a constant"), std::string::npos) << s.message();
}

TEST(EyeLike, DiagonalOffsetsAndDtype) {
  OneNode a("EyeLike", 9);
  a.input(f32, {3, 4}).attr("k", Attribute::of_int(1)).attr("dtype", Attribute::of_int(6));
  auto out = run(a, {f({3, 4}, std::vector<float>(12, 9.0f))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DType::kInt32);
  expect_values(out[0], {3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  OneNode b("EyeLike", 9);
  b.input(f32, {3, 2}).attr("k", Attribute::of_int(-2));
  out = run(b, {f({3, 2}, std::vector<float>(6, 9.0f))});
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {3, 2}, {0, 0, 0, 0, 1, 0});
}

TEST(ScatterElements, ReductionsApplyDuplicatesInOrder) {
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"add", {1, 2 + 1.1 + 3.1, 3, 4 + 2.1, 5}},
      {"mul", {1, 2 * 1.1 * 3.1, 3, 4 * 2.1, 5}},
      {"max", {1, 3.1, 3, 4, 5}},
      {"min", {1, 1.1, 3, 2.1, 5}}};
  for (const auto& [reduction, want] : cases) {
    SCOPED_TRACE(reduction);
    OneNode n("ScatterElements", 18);
    n.input(f32, {1, 5}).input(DType::kInt64, {1, 3}).input(f32, {1, 3}).attr("axis", Attribute::of_int(1))
        .attr("reduction", Attribute::of_string(reduction));
    auto out = run(n, {f({1, 5}, {1, 2, 3, 4, 5}), i64({1, 3}, {1, 3, 1}), f({1, 3}, {1.1f, 2.1f, 3.1f})});
    ASSERT_EQ(out.size(), 1u);
    // Expected values are computed in double from float inputs; fp32 rounding stays within tolerance.
    expect_values(out[0], {1, 5}, want);
  }
}

TEST(ScatterElements, NegativeIndexAndLegacyScatter) {
  OneNode a("ScatterElements", 11);
  a.input(f32, {1, 5}).input(DType::kInt32, {1, 1}).input(f32, {1, 1}).attr("axis", Attribute::of_int(-1));
  Tensor idx(DType::kInt32, {1, 1});
  idx.set_int(0, -1);
  auto out = run(a, {f({1, 5}, {1, 2, 3, 4, 5}), idx, f({1, 1}, {9})});
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {1, 5}, {1, 2, 3, 4, 9});
  OneNode b("Scatter", 10);  // the spec's axis-0 example
  b.input(f32, {3, 3}).input(DType::kInt64, {2, 3}).input(f32, {2, 3});
  out = run(b, {f({3, 3}, std::vector<float>(9, 0.0f)), i64({2, 3}, {1, 0, 2, 0, 2, 1}),
                f({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})});
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {3, 3}, {2.0, 1.1, 0, 1.0, 0, 2.2, 0, 2.1, 1.2});
}

TEST(ScatterElements, RefusesBadInput) {
  OneNode a("ScatterElements", 18);
  a.input(f32, {4}).input(DType::kInt64, {2}).input(f32, {2}).attr("reduction", Attribute::of_string("sub"));
  Status s = a.build();
  EXPECT_NE(s.message().find("reduction"), std::string::npos) << s.message();
  OneNode b("ScatterElements", 18);
  b.input(f32, {4}).input(DType::kInt64, {2}).input(f32, {3});
  s = b.build();
  EXPECT_NE(s.message().find("updates must have the shape of indices"), std::string::npos) << s.message();
  OneNode c("ScatterElements", 18);
  c.input(f32, {4}).input(DType::kInt64, {1}).input(f32, {1});
  ASSERT_TRUE(c.build().is_ok());
  auto r = c.run({f({4}, {1, 2, 3, 4}), i64({1}, {4}), f({1}, {0})});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace aotc
