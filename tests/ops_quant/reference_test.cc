// CPU references of the quantization ops against values worked out by hand from the ONNX spec
// formulas (rounding half to even, saturation, per-axis parameters, zero-point padding), and the
// refusals of what aotc does not support (string pools, blocked scales, bad parameter shapes).
#include "tests/ops_basic/ops_test_util.h"

namespace aotc {
namespace {

using test::make_tensor;
using test::OneNode;

Tensor f32(Shape s, std::vector<double> v) { return make_tensor(DType::kFloat32, std::move(s), v); }
Tensor u8(Shape s, std::vector<double> v) { return make_tensor(DType::kUInt8, std::move(s), v); }
Tensor i8(Shape s, std::vector<double> v) { return make_tensor(DType::kInt8, std::move(s), v); }
Tensor i32(Shape s, std::vector<double> v) { return make_tensor(DType::kInt32, std::move(s), v); }

// Builds `n` with runtime inputs of the given tensors' dtypes/shapes and runs the reference.
std::vector<Tensor> run(OneNode& n, const std::vector<Tensor>& inputs, int outputs = 1) {
  for (const Tensor& t : inputs) n.input(t.dtype(), t.shape());
  Status s = n.build(outputs);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return {};
  auto out = n.run(inputs);
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return out.is_ok() ? *out : std::vector<Tensor>{};
}

std::string refusal(OneNode& n, const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) n.input(t.dtype(), t.shape());
  Status s = n.build();
  return s.is_ok() ? "" : s.message();
}

TEST(QuantReference, QuantizeRoundsHalfToEvenAndSaturates) {
  OneNode n("QuantizeLinear", 13);
  // x / 2 = 0, 1, 1.5, 500, -127, -500, 2.5, 3.5 -> rint 0, 1, 2, 500, -127, -500, 2, 4; + 128, clamp.
  auto out = run(n, {f32({8}, {0, 2, 3, 1000, -254, -1000, 5, 7}), f32({}, {2}), u8({}, {128})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], u8({8}, {128, 129, 130, 255, 1, 0, 130, 132}));
}

TEST(QuantReference, QuantizePerAxisInt8) {
  OneNode n("QuantizeLinear", 13);
  // channel 0: scale 1, zp 0: 1.5 -> 2, -200 -> -128; channel 1: scale 0.5, zp -10: 2.5 -> 2 - 10, 200 - 10 -> 127.
  auto out = run(n, {f32({1, 2, 2}, {1.5, -200, 1.25, 100}), f32({2}, {1, 0.5}), i8({2}, {0, -10})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], i8({1, 2, 2}, {2, -128, -8, 127}));
}

TEST(QuantReference, QuantizeWithoutZeroPointIsUint8) {
  OneNode n("QuantizeLinear", 13);
  auto out = run(n, {f32({3}, {-1, 0.4, 300}), f32({}, {1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], u8({3}, {0, 0, 255}));
}

TEST(QuantReference, DequantizeInt32AndPerAxis) {
  OneNode a("DequantizeLinear", 13);
  auto out = run(a, {i32({2}, {-5, 7}), f32({}, {0.5})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], f32({2}, {-2.5, 3.5}));
  OneNode b("DequantizeLinear", 13);
  b.attr("axis", Attribute::of_int(0));
  // row 0: (x - 1) * 2; row 1: (x - 3) * 0.25.
  out = run(b, {u8({2, 2}, {0, 255, 3, 7}), f32({2}, {2, 0.25}), u8({2}, {1, 3})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], f32({2, 2}, {-2, 508, 0, 1}));
}

TEST(QuantReference, DynamicQuantize) {
  OneNode n("DynamicQuantizeLinear", 11);
  // range [-0.5, 2.05]: scale 2.55 / 255 = 0.01, zero point rint(0.5 / 0.01) = 50.
  auto out = run(n, {f32({4}, {-0.5, 0, 1.5, 2.05})}, 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TENSOR_NEAR(out[0], u8({4}, {0, 50, 200, 255}));
  EXPECT_TENSOR_NEAR(out[1], f32({}, {0.01}));
  EXPECT_TENSOR_NEAR(out[2], u8({}, {50}));
  OneNode z("DynamicQuantizeLinear", 11);  // all zero: scale 1 / 255, zero point 0
  out = run(z, {f32({2}, {0, 0})}, 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TENSOR_NEAR(out[0], u8({2}, {0, 0}));
  EXPECT_TENSOR_NEAR(out[1], f32({}, {1.0 / 255}));
}

TEST(QuantReference, MatMulIntegerZeroPoints) {
  OneNode n("MatMulInteger", 10);
  // A - 12 = [[-1, -5, -9], [-2, -6, -10]]; B - [1, 2] per column = [[0, 2], [1, 3], [2, 4]].
  auto out = run(n, {u8({2, 3}, {11, 7, 3, 10, 6, 2}), u8({3, 2}, {1, 4, 2, 5, 3, 6}), u8({}, {12}), u8({2}, {1, 2})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], i32({2, 2}, {-23, -53, -26, -62}));
}

TEST(QuantReference, ConvIntegerPadsContributeZero) {
  OneNode n("ConvInteger", 10);
  n.attr("pads", Attribute::of_ints({1, 1, 0, 0}));
  // x - 1 = [[0, 1, 2], [3, 4, 5], [6, 7, 8]], 2x2 ones kernel, one padded row and column on top/left.
  auto out = run(n, {u8({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), u8({1, 1, 2, 2}, {1, 1, 1, 1}), u8({}, {1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], i32({1, 1, 3, 3}, {0, 1, 3, 3, 8, 12, 9, 20, 24}));
}

TEST(QuantReference, QLinearMatMulRequantizes) {
  OneNode n("QLinearMatMul", 10);
  // (a - 10) = [0, 10], (b - 1) = [[2, 6], [4, -1]]: sums 40, -10; x 0.5 * 0.25 / 0.1 = 1.25 -> 50, -12.5 -> -12; + 3.
  auto out = run(n, {u8({1, 2}, {10, 20}), f32({}, {0.5}), u8({}, {10}), u8({2, 2}, {3, 7, 5, 0}), f32({}, {0.25}),
                     u8({}, {1}), f32({}, {0.1}), i8({}, {3})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], i8({1, 2}, {53, -9}));
}

TEST(QuantReference, QLinearConvPerChannelScaleAndBias) {
  OneNode n("QLinearConv", 10);
  // oc 0: (2x + 1) * 0.5 / 2, oc 1: (3x - 2) * 1 / 2, x = 1..4, rounded half to even.
  auto out = run(n, {u8({1, 1, 2, 2}, {1, 2, 3, 4}), f32({}, {1}), u8({}, {0}), i8({2, 1, 1, 1}, {2, 3}), f32({2}, {0.5, 1}),
                     i8({}, {0}), f32({}, {2}), u8({}, {0}), i32({2}, {1, -2})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], u8({1, 2, 2, 2}, {1, 1, 2, 2, 0, 2, 4, 5}));
}

OneNode& tfidf(OneNode& n, const char* mode) {
  n.attr("mode", Attribute::of_string(mode)).attr("min_gram_length", Attribute::of_int(1));
  n.attr("max_gram_length", Attribute::of_int(2)).attr("max_skip_count", Attribute::of_int(1));
  n.attr("ngram_counts", Attribute::of_ints({0, 2})).attr("ngram_indexes", Attribute::of_ints({0, 1, 2, 3}));
  return n.attr("pool_int64s", Attribute::of_ints({1, 3, 1, 2, 2, 3}));
}

TEST(QuantReference, TfIdfCountsSkipGrams) {
  // [1, 2, 1, 2, 3]: unigram 1 twice, 3 once; (1, 2) at distance 1 twice, (2, 3) once.
  OneNode tf("TfIdfVectorizer", 9);
  auto out = run(tfidf(tf, "TF"), {make_tensor(DType::kInt64, {5}, {1, 2, 1, 2, 3})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], f32({4}, {2, 1, 2, 1}));
  OneNode w("TfIdfVectorizer", 9);
  tfidf(w, "TFIDF").attr("weights", Attribute::of_floats({0.5f, 1, 2, 3}));
  out = run(w, {make_tensor(DType::kInt32, {2, 5}, {1, 2, 1, 2, 3, 3, 3, 9, 9, 9})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], f32({2, 4}, {1, 1, 4, 3, 0, 2, 0, 0}));
  OneNode idf("TfIdfVectorizer", 9);
  tfidf(idf, "IDF").attr("weights", Attribute::of_floats({0.5f, 1, 2, 3}));
  out = run(idf, {make_tensor(DType::kInt64, {5}, {1, 2, 1, 2, 3})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], f32({4}, {0.5, 1, 2, 3}));
}

TEST(QuantReference, Refusals) {
  OneNode s("TfIdfVectorizer", 9);
  tfidf(s, "TF").attr("pool_strings", Attribute::of_strings({"a"}));
  EXPECT_TRUE(test::contains(refusal(s, {make_tensor(DType::kInt64, {3}, {1, 2, 3})}), "pool_strings"));
  OneNode q("QuantizeLinear", 13);
  EXPECT_TRUE(test::contains(refusal(q, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 1, 1, 1})}), "scalar or 1-D"));
  OneNode b("QuantizeLinear", 21);
  b.attr("block_size", Attribute::of_int(2));
  EXPECT_TRUE(test::contains(refusal(b, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 1}, {1, 1})}), "block_size"));
  OneNode c("QLinearConv", 10);
  std::string why = refusal(c, {u8({1, 1, 2, 2}, {1, 2, 3, 4}), f32({}, {1}), u8({}, {0}), u8({2, 1, 1, 1}, {2, 3}), f32({}, {1}),
                                u8({}, {0}), f32({}, {2}), u8({}, {0}), i32({3}, {1, 2, 3})});
  EXPECT_TRUE(test::contains(why, "bias")) << why;
  EXPECT_TRUE(test::contains(why, "'n0' (QLinearConv)")) << why;
}

}  // namespace
}  // namespace aotc
