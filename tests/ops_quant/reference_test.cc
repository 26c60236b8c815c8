// CPU references of the quantization ops against values worked out by hand from the ONNX spec
// formulas (rounding half to even, saturation, per-axis parameters, zero-point padding), and the
// refusals of what aotc does not support (string pools, blocked scales, bad parameter shapes).
#include <map>
#include <random>
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

// Hostile attributes (fuzz finds, 2026-11-27): max_skip_count INT64_MAX counts what any skip that
// fits the row counts (it overflowed max_skip + 1 and would have looped 2^63 times); an
// ngram_indexes entry of INT64_MAX is refused (max + 1 overflowed).
TEST(QuantReference, TfIdfHostileSkipAndIndexes) {
  OneNode any("TfIdfVectorizer", 9);
  tfidf(any, "TF").attr("max_skip_count", Attribute::of_int(INT64_MAX));
  auto out = run(any, {make_tensor(DType::kInt64, {5}, {1, 2, 1, 2, 3})});
  ASSERT_EQ(out.size(), 1u);
  // (1, 2) at distances 1 and 3 (positions 0-1, 2-3, 0-3), (2, 3) at distances 1 and 3 (3-4, 1-4).
  EXPECT_TENSOR_NEAR(out[0], f32({4}, {2, 1, 3, 2}));
  OneNode big("TfIdfVectorizer", 9);
  tfidf(big, "TF").attr("ngram_indexes", Attribute::of_ints({0, 1, 2, INT64_MAX}));
  EXPECT_TRUE(test::contains(refusal(big, {make_tensor(DType::kInt64, {5}, {1, 2, 1, 2, 3})}), "ngram_indexes"));
}

TEST(QuantReference, Refusals) {
  OneNode s("TfIdfVectorizer", 9);
  tfidf(s, "TF").attr("pool_strings", Attribute::of_strings({"a"}));
  EXPECT_TRUE(test::contains(refusal(s, {make_tensor(DType::kInt64, {3}, {1, 2, 3})}), "pool_strings"));
  OneNode q("QuantizeLinear", 13);
  EXPECT_TRUE(test::contains(refusal(q, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 1, 1, 1})}), "scalar or 1-D"));
  OneNode b("QuantizeLinear", 21);
  b.attr("block_size", Attribute::of_int(2));
  // Blocked: the scale must have ceil(2 / 2) = 1 element on axis 1, not 2.
  EXPECT_TRUE(test::contains(refusal(b, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 1, 1, 1})}), "block_size"));
  OneNode c("QLinearConv", 10);
  std::string why = refusal(c, {u8({1, 1, 2, 2}, {1, 2, 3, 4}), f32({}, {1}), u8({}, {0}), u8({2, 1, 1, 1}, {2, 3}), f32({}, {1}),
                                u8({}, {0}), f32({}, {2}), u8({}, {0}), i32({3}, {1, 2, 3})});
  EXPECT_TRUE(test::contains(why, "bias")) << why;
  EXPECT_TRUE(test::contains(why, "'n0' (QLinearConv)")) << why;
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// The issue-9 forms (opset 21-25): blocked scales, int16 / int4 / float8 / float4 outputs,
// `output_dtype`, `precision`, `saturate`. Expected values worked by hand from the spec formula and
// checked with onnx 1.23.2's reference (onnx.reference QuantizeLinear_25 / DequantizeLinear_25).
Tensor typed(DType t, Shape s, std::vector<double> v) { return make_tensor(t, std::move(s), v); }

TEST(QuantReference, BlockedQuantizeUsesTheScaleOfEachBlock) {
  OneNode n("QuantizeLinear", 21);
  n.attr("axis", Attribute::of_int(1)).attr("block_size", Attribute::of_int(2));
  // Row 0: scale 1 / zp 0 for columns 0-1, scale 2 / zp 10 for 2-3; row 1: 0.5 / 100 and 4 / 0.
  auto out = run(n, {f32({2, 4}, {1.5, 2.5, 3, 5, 1, -1, 8, 10}), f32({2, 2}, {1, 2, 0.5, 4}), u8({2, 2}, {0, 10, 100, 0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], u8({2, 4}, {2, 2, 12, 12, 102, 98, 2, 2}));
  // A last block shorter than block_size: 5 elements, blocks of 2 -> 3 scales.
  OneNode odd("QuantizeLinear", 21);
  odd.attr("axis", Attribute::of_int(0)).attr("block_size", Attribute::of_int(2));
  out = run(odd, {f32({5}, {4, 5, 40, 60, 300}), f32({3}, {1, 10, 100})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], u8({5}, {4, 5, 4, 6, 3}));
}

TEST(QuantReference, BlockedDequantize) {
  OneNode n("DequantizeLinear", 21);
  n.attr("axis", Attribute::of_int(0)).attr("block_size", Attribute::of_int(2));
  // Rows 0-1 use scale row 0, row 2 uses scale row 1: (x - zp) * scale.
  auto out = run(n, {i8({3, 2}, {1, 2, 3, 4, 5, 6}), f32({2, 2}, {0.5, 2, 10, 100}), i8({2, 2}, {1, 0, 0, 6})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], f32({3, 2}, {0, 4, 1, 8, 50, 0}));
}

TEST(QuantReference, NarrowAndWideIntegerOutputsSaturate) {
  OneNode n4("QuantizeLinear", 21);
  n4.attr("axis", Attribute::of_int(0));
  auto out = run(n4, {f32({2, 3}, {-9.2, 7.5, 3.5, 1, -2.75, 4}), f32({2}, {1, 0.5}), typed(DType::kInt4, {2}, {0, -3})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DType::kInt4);
  EXPECT_TENSOR_NEAR(out[0], typed(DType::kInt4, {2, 3}, {-8, 7, 4, -1, -8, 5}));
  OneNode n16("QuantizeLinear", 21);
  out = run(n16, {f32({3}, {70000, -1.5, 2.5}), f32({}, {1}), typed(DType::kInt16, {}, {10})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], typed(DType::kInt16, {3}, {32767, 8, 12}));
  // output_dtype without a zero point.
  OneNode od("QuantizeLinear", 21);
  od.attr("output_dtype", Attribute::of_int(static_cast<int64_t>(DType::kInt4)));
  out = run(od, {f32({2}, {-20, 3.5}), f32({}, {1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], typed(DType::kInt4, {2}, {-8, 4}));
  // output_dtype contradicting the zero point is refused.
  OneNode bad("QuantizeLinear", 21);
  bad.attr("output_dtype", Attribute::of_int(static_cast<int64_t>(DType::kInt8)));
  EXPECT_TRUE(test::contains(refusal(bad, {f32({2}, {1, 2}), f32({}, {1}), u8({}, {0})}), "differs from the zero point"));
}

TEST(QuantReference, FloatOutputsFollowCastSaturation) {
  const Tensor x = f32({3}, {1000, -3.3, 0.1});
  OneNode sat("QuantizeLinear", 21);
  auto out = run(sat, {x, f32({}, {2}), typed(DType::kFloat8E4M3FN, {}, {0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], typed(DType::kFloat8E4M3FN, {3}, {448, -1.625, 0.05078125}));
  OneNode nosat("QuantizeLinear", 21);
  nosat.attr("saturate", Attribute::of_int(0));
  out = run(nosat, {x, f32({}, {2}), typed(DType::kFloat8E4M3FN, {}, {0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::isnan(out[0].get(0)));
  EXPECT_EQ(out[0].get(1), -1.625);
  OneNode fp4("QuantizeLinear", 23);
  fp4.attr("axis", Attribute::of_int(0));
  out = run(fp4, {f32({3}, {1, 7, -0.3}), f32({1}, {2}), typed(DType::kFloat4E2M1, {1}, {0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], typed(DType::kFloat4E2M1, {3}, {0.5, 4, 0}));  // 3.5 ties to 4 (even)
}

TEST(QuantReference, PrecisionAttributeRoundsTheDivision) {
  // 4097 is not a float16: with precision float16 it becomes 4096 before the division.
  OneNode h("QuantizeLinear", 23);
  h.attr("precision", Attribute::of_int(static_cast<int64_t>(DType::kFloat16)));
  auto out = run(h, {f32({1}, {4097}), f32({}, {1}), typed(DType::kUInt16, {}, {0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], typed(DType::kUInt16, {1}, {4096}));
  OneNode f("QuantizeLinear", 23);
  out = run(f, {f32({1}, {4097}), f32({}, {1}), typed(DType::kUInt16, {}, {0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], typed(DType::kUInt16, {1}, {4097}));
  OneNode bad("QuantizeLinear", 23);
  bad.attr("precision", Attribute::of_int(static_cast<int64_t>(DType::kInt8)));
  EXPECT_TRUE(test::contains(refusal(bad, {f32({1}, {1}), f32({}, {1})}), "precision 3"));
}

TEST(QuantReference, DequantizeSmallTypes) {
  OneNode f8("DequantizeLinear", 21);
  auto out = run(f8, {typed(DType::kFloat8E5M2, {2}, {1.0, -1.5}), f32({}, {2})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], f32({2}, {2, -3}));
  OneNode i4("DequantizeLinear", 21);
  i4.attr("axis", Attribute::of_int(0));
  // A one-element zero point with a scalar scale, as the onnx node tests write it.
  out = run(i4, {typed(DType::kInt4, {3}, {-8, 7, 0}), f32({}, {0.5}), typed(DType::kInt4, {1}, {-1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], f32({3}, {-3.5, 4, 0.5}));
  OneNode u2("DequantizeLinear", 23);
  u2.attr("output_dtype", Attribute::of_int(static_cast<int64_t>(DType::kFloat16)));
  out = run(u2, {typed(DType::kUInt2, {4}, {0, 1, 2, 3}), f32({}, {0.1}), typed(DType::kUInt2, {}, {1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], typed(DType::kFloat16, {4}, {-0.1, 0, 0.1, 0.2}));
  // float8 zero points must be 0 (checked when constant).
  OneNode nz("DequantizeLinear", 21);
  nz.input(DType::kFloat8E4M3FN, {2}).input(DType::kFloat32, {}).constant(typed(DType::kFloat8E4M3FN, {}, {1}));
  Status s = nz.build();
  EXPECT_TRUE(test::contains(s.message(), "zero point of 0")) << s.message();
}

TEST(QuantReference, GpuLoweringRefusesWhatOnlyTheCpuComputes) {
  auto lower_message = [](OneNode& n) {
    Status s = n.build();
    EXPECT_TRUE(s.is_ok()) << s.message();
    if (!s.is_ok()) return std::string();
    auto l = default_registry().find(n.built().op_type)->lower(n.built(), n.graph);
    return l.is_ok() ? std::string() : l.status().message();
  };
  std::string why;
  OneNode precision("QuantizeLinear", 21);
  precision.input(DType::kFloat32, {4}).input(DType::kFloat32, {}).attr("precision", Attribute::of_int(10));
  why = lower_message(precision);
  EXPECT_TRUE(test::contains(why, "precision float16 has no GPU lowering")) << why;
  OneNode i16("DequantizeLinear", 21);  // int16 has GPU storage: lowered to the template
  i16.input(DType::kInt16, {4}).input(DType::kFloat32, {});
  EXPECT_EQ(lower_message(i16), "");
}

// The sub-16-bit types are lowered (one byte per element on the GPU): int4 through the integer
// template with its range, float8 through the device encode/decode of templates/small_dtypes.cuh.
TEST(QuantReference, SmallTypesAreLoweredWithTheirRangesAndEncoders) {
  auto holes = [](OneNode& n) { return test::lowered_holes(n); };
  OneNode i4("QuantizeLinear", 21);
  i4.input(DType::kFloat32, {4}).input(DType::kFloat32, {}).input(DType::kInt4, {});
  auto h = holes(i4);
  EXPECT_EQ(h["Q"], "signed char");
  EXPECT_TRUE(test::contains(h["store"], "fminf(0x1.cp+2f")) << h["store"];  // 7
  EXPECT_TRUE(test::contains(h["store"], "fmaxf(-0x1p+3f")) << h["store"];  // -8
  OneNode f8("QuantizeLinear", 21);
  f8.input(DType::kFloat32, {4}).input(DType::kFloat32, {}).input(DType::kFloat8E5M2, {}).attr("saturate", Attribute::of_int(0));
  h = holes(f8);
  EXPECT_EQ(h["store"], "y[i] = aotc_sf_encode(19, (double)(q + zp), false, 0);");
  EXPECT_EQ(h["zp_value"], "(float)aotc_sf_decode(19, zero_point[c])");
  OneNode d8("DequantizeLinear", 21);
  d8.input(DType::kFloat8E4M3FNUZ, {4}).input(DType::kFloat32, {});
  h = holes(d8);
  EXPECT_EQ(h["x_value"], "(float)aotc_sf_decode(18, x[i])");
  // Blocked: element i of x [2, 5] (axis 1, block 2, scale [2, 3]) uses scale ((i / 5) * 3 + (i % 5) / 2).
  OneNode blocked("DequantizeLinear", 21);
  blocked.input(DType::kInt8, {2, 5}).input(DType::kFloat32, {2, 3}).attr("axis", Attribute::of_int(1))
      .attr("block_size", Attribute::of_int(2));
  h = holes(blocked);
  EXPECT_EQ(h["channel"], "((i / (5LL * 1LL)) * 3LL + ((i / 1LL) % 5LL) / 2LL) * 1LL + i % 1LL");
  OneNode du2("DequantizeLinear", 21);
  du2.input(DType::kUInt2, {4}).input(DType::kFloat32, {});
  h = holes(du2);
  EXPECT_EQ(h["x_value"], "static_cast<float>(x[i])");
  EXPECT_EQ(h["Q"], "unsigned char");
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// QLinearMatMul-21 with float16 scales: a_scale * b_scale / y_scale is computed in float16 (each
// step rounded), as the onnx reference's numpy does: 0.1 * 0.3 / 0.0141 (as halves) = 2.126953125,
// so a sum of 51 gives rint(108.47) = 108, where the float multiplier (2.1276...) would give 109.
TEST(QuantReference, QLinearMatMulFloat16ScalesRoundInFloat16) {
  auto h = [](double v) { return make_tensor(DType::kFloat16, {}, {v}); };
  OneNode n("QLinearMatMul", 21);
  auto out = run(n, {i8({1, 1}, {3}), h(0.1), i8({}, {0}), i8({1, 1}, {17}), h(0.3), i8({}, {0}), h(0.0141), i8({}, {0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TENSOR_NEAR(out[0], i8({1, 1}, {108}));
  OneNode mixed("QLinearMatMul", 21);
  std::string why = refusal(mixed, {i8({1, 1}, {3}), h(0.1), i8({}, {0}), i8({1, 1}, {17}), f32({}, {0.3}), i8({}, {0}),
                                    h(0.0141), i8({}, {0})});
  EXPECT_TRUE(test::contains(why, "share one dtype")) << why;
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// The references run their planes in parallel with the zero points subtracted once; these check
// them against the spec's formula as a textbook loop (every output element, every input channel
// of its group, every tap; taps outside the input skipped), on random operands and geometries
// with groups, strides, dilations, asymmetric pads, per-channel zero points, and 1-D / 3-D.
struct ConvCase {
  Shape x, w;
  int64_t group;
  std::vector<int64_t> strides, dilations, pads;
};

Tensor random_tensor(DType t, Shape s, std::mt19937& rng) {
  Tensor out(t, std::move(s));
  std::uniform_int_distribution<int> u(t == DType::kUInt8 ? 0 : -128, t == DType::kUInt8 ? 255 : 127);
  for (int64_t i = 0; i < out.numel(); ++i) out.set_int(i, u(rng));
  return out;
}

TEST(QuantReference, ConvIntegerMatchesTheTextbookLoop) {
  const std::vector<ConvCase> cases = {
      {{2, 6, 7, 9}, {4, 3, 3, 2}, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}},
      {{1, 4, 5, 5}, {4, 1, 3, 3}, 4, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {{1, 3, 11}, {5, 3, 4}, 1, {3}, {2}, {2, 3}},
      {{1, 2, 3, 4, 5}, {2, 2, 2, 1, 3}, 1, {1, 2, 1}, {1, 1, 2}, {0, 1, 1, 1, 0, 2}},
  };
  std::mt19937 rng(7);
  for (const ConvCase& c : cases) {
    const Tensor x = random_tensor(DType::kUInt8, c.x, rng), w = random_tensor(DType::kInt8, c.w, rng);
    const Tensor xzp = random_tensor(DType::kUInt8, {}, rng), wzp = random_tensor(DType::kInt8, {c.w[0]}, rng);
    OneNode n("ConvInteger", 10);
    n.attr("group", Attribute::of_int(c.group)).attr("strides", Attribute::of_ints(c.strides));
    n.attr("dilations", Attribute::of_ints(c.dilations)).attr("pads", Attribute::of_ints(c.pads));
    auto out = run(n, {x, w, xzp, wzp});
    ASSERT_EQ(out.size(), 1u);
    const size_t rank = c.x.size() - 2;
    const Shape& ys = out[0].shape();
    ASSERT_EQ(ys.size(), c.x.size());
    const int64_t cin_g = c.x[1] / c.group, cout_g = c.w[0] / c.group;
    int64_t out_sp = 1, k_sp = 1;
    for (size_t d = 0; d < rank; ++d) out_sp *= ys[2 + d], k_sp *= c.w[2 + d];
    std::vector<int64_t> in_strides(rank, 1), k_strides(rank, 1), o_strides(rank, 1);
    for (size_t d = rank - 1; d-- > 0;) {
      in_strides[d] = in_strides[d + 1] * c.x[3 + d];
      k_strides[d] = k_strides[d + 1] * c.w[3 + d];
      o_strides[d] = o_strides[d + 1] * ys[3 + d];
    }
    int64_t checked = 0;
    for (int64_t b = 0; b < c.x[0]; ++b)
      for (int64_t oc = 0; oc < c.w[0]; ++oc)
        for (int64_t o = 0; o < out_sp; ++o) {
          int64_t want = 0;
          for (int64_t ic = 0; ic < cin_g; ++ic)
            for (int64_t k = 0; k < k_sp; ++k) {
              int64_t xi = 0;
              bool inside = true;
              for (size_t d = 0; d < rank; ++d) {
                const int64_t od = (o / o_strides[d]) % ys[2 + d], kd = (k / k_strides[d]) % c.w[2 + d];
                const int64_t id = od * c.strides[d] - c.pads[d] + kd * c.dilations[d];
                inside = inside && id >= 0 && id < c.x[2 + d];
                xi += id * in_strides[d];
              }
              if (!inside) continue;
              const int64_t xc = (b * c.x[1] + (oc / cout_g) * cin_g + ic) * (in_strides[0] * c.x[2]);
              want += (x.get_int(xc + xi) - xzp.get_int(0)) * (w.get_int((oc * cin_g + ic) * k_sp + k) - wzp.get_int(oc));
            }
          const int64_t got = out[0].get_int((b * c.w[0] + oc) * out_sp + o);
          ASSERT_EQ(got, want) << "case x " << shape_str(c.x) << " element " << (b * c.w[0] + oc) * out_sp + o;
          ++checked;
        }
    EXPECT_EQ(checked, out[0].numel());
  }
}

TEST(QuantReference, MatMulIntegerMatchesTheTextbookLoopWithBroadcastBatches) {
  std::mt19937 rng(11);
  // A [2, 1, 3, 5] x B [4, 5, 6]: batch dims broadcast to [2, 4]; per-row and per-column zero points.
  const Tensor a = random_tensor(DType::kInt8, {2, 1, 3, 5}, rng), b = random_tensor(DType::kUInt8, {4, 5, 6}, rng);
  const Tensor azp = random_tensor(DType::kInt8, {3}, rng), bzp = random_tensor(DType::kUInt8, {6}, rng);
  OneNode n("MatMulInteger", 10);
  auto out = run(n, {a, b, azp, bzp});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{2, 4, 3, 6}));
  for (int64_t i0 = 0; i0 < 2; ++i0)
    for (int64_t i1 = 0; i1 < 4; ++i1)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 6; ++c) {
          int64_t want = 0;
          for (int64_t p = 0; p < 5; ++p)
            want += (a.get_int((i0 * 3 + r) * 5 + p) - azp.get_int(r)) * (b.get_int((i1 * 5 + p) * 6 + c) - bzp.get_int(c));
          ASSERT_EQ(out[0].get_int(((i0 * 4 + i1) * 3 + r) * 6 + c), want) << i0 << " " << i1 << " " << r << " " << c;
        }
}

}  // namespace
}  // namespace aotc
