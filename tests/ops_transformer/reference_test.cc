// References and shape inference of Attention, RMSNormalization and RotaryEmbedding against values
// computed independently here (closed forms written out from the ONNX spec: a single key returns its
// value row, equal scores average the allowed values, rotations by known angles), plus the
// refusals: each bad node fails with one line naming the node, the op and the reason.
#include <cmath>

#include "tests/ops_basic/ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_floats(std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_int64s(std::move(s), v); }
Tensor boolean(Shape s, std::vector<int> v) {
  Tensor t(DType::kBool, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<int64_t>(i), v[i]);
  return t;
}
Attribute one(int64_t v) { return Attribute::of_int(v); }

std::vector<double> run_out(OneNode& n, const std::vector<Tensor>& in, size_t out = 0) {
  auto r = n.run(in);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? (*r)[out].to_doubles() : std::vector<double>{};
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// The build error of a node: one line naming the node ('n0'), the op and `reason`.
void expect_refused(OneNode& n, const std::string& reason, int outputs = 1) {
  Status s = n.build(outputs);
  ASSERT_FALSE(s.is_ok()) << "expected a refusal: " << reason;
  EXPECT_TRUE(test::contains(s.message(), "n0")) << s.message();
  EXPECT_TRUE(test::contains(s.message(), n.node.op_type)) << s.message();
  EXPECT_TRUE(test::contains(s.message(), reason)) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
}

// ---- RMSNormalization ----

TEST(RmsNorm, MatchesClosedForm) {
  OneNode n("RMSNormalization", 23);
  n.input(DType::kFloat32, {2, 2}).input(DType::kFloat32, {2}).attr("epsilon", Attribute::of_float(0.0f));
  ASSERT_TRUE(n.build().is_ok());
  // Row (3, 4): rms = sqrt(12.5); row (1, -1): rms = 1.
  const double r = std::sqrt(12.5);
  expect_near(run_out(n, {f32({2, 2}, {3, 4, 1, -1}), f32({2}, {1, 2})}), {3 / r, 8 / r, 1, -2});
}

TEST(RmsNorm, AxisZeroAndEpsilon) {
  OneNode n("RMSNormalization", 23);
  n.input(DType::kFloat32, {2, 2}).input(DType::kFloat32, {2, 2}).attr("axis", one(0)).attr("epsilon", Attribute::of_float(0.5f));
  ASSERT_TRUE(n.build().is_ok());
  const double r = std::sqrt((1 + 4 + 9 + 16) / 4.0 + 0.5);
  expect_near(run_out(n, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 1, 2, -1})}), {1 / r, 2 / r, 6 / r, -4 / r});
}

TEST(RmsNorm, Refusals) {
  OneNode scale_shape("RMSNormalization", 23);
  scale_shape.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {2});
  expect_refused(scale_shape, "does not broadcast");
  OneNode stash("RMSNormalization", 23);
  stash.input(DType::kFloat32, {2, 3}).input(DType::kFloat32, {3}).attr("stash_type", one(0));
  expect_refused(stash, "stash_type 0");
  OneNode mixed("RMSNormalization", 23);
  mixed.input(DType::kFloat32, {2, 3}).input(DType::kFloat16, {3});
  expect_refused(mixed, "differs from X");
}

// ---- RotaryEmbedding ----

TEST(Rotary, HalvesAndInterleavedRotateByTheCacheAngles) {
  // One token, one head, head size 4: pairs are (x0, x2), (x1, x3) as halves, (x0, x1), (x2, x3)
  // interleaved. Angles a0 = 0.3, a1 = 1.1 from position 1 of a 2-row cache.
  const double a0 = 0.3, a1 = 1.1;
  const Tensor cos = f32({2, 2}, {1, 1, static_cast<float>(std::cos(a0)), static_cast<float>(std::cos(a1))});
  const Tensor sin = f32({2, 2}, {0, 0, static_cast<float>(std::sin(a0)), static_cast<float>(std::sin(a1))});
  const Tensor x = f32({1, 1, 1, 4}, {1, 2, 3, 4});
  auto rot = [](double a, double u, double v) { return std::vector<double>{std::cos(a) * u - std::sin(a) * v, std::sin(a) * u + std::cos(a) * v}; };
  for (int interleaved : {0, 1}) {
    OneNode n("RotaryEmbedding", 23);
    n.input(DType::kFloat32, {1, 1, 1, 4}).constant(cos).constant(sin).constant(i64({1, 1}, {1})).attr("interleaved", one(interleaved));
    ASSERT_TRUE(n.build().is_ok());
    std::vector<double> want(4);
    if (interleaved) {
      auto p = rot(a0, 1, 2), q = rot(a1, 3, 4);
      want = {p[0], p[1], q[0], q[1]};
    } else {
      auto p = rot(a0, 1, 3), q = rot(a1, 2, 4);
      want = {p[0], q[0], p[1], q[1]};
    }
    expect_near(run_out(n, {x}), want);
  }
}

// An empty 4-D input whose other dims multiply past int64 (heads 2^62 x seq 3, batch 0): refused
// before the strides are formed (a fuzz find, UBSan, 2026-11-27).
TEST(Rotary, EmptyInputWithOverflowingDimsIsRefused) {
  OneNode n("RotaryEmbedding", 23);
  n.input(DType::kFloat32, {0, int64_t{1} << 62, 3, 4}).input(DType::kFloat32, {0, 3, 2}).input(DType::kFloat32, {0, 3, 2});
  Status s = n.build();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("multiply past int64"), std::string::npos) << s.message();
}

TEST(Rotary, PartialRotation3dInputNoPositionIds) {
  // (B=1, S=2, H*D = 2*4) with num_heads 2, rotary dim 2: element 0 and 1 of each head rotate by
  // the token's angle (cache (B, S, 1)), elements 2 and 3 are copied.
  const double a[2] = {0.5, -2.0};
  Tensor cos = f32({1, 2, 1}, {static_cast<float>(std::cos(a[0])), static_cast<float>(std::cos(a[1]))});
  Tensor sin = f32({1, 2, 1}, {static_cast<float>(std::sin(a[0])), static_cast<float>(std::sin(a[1]))});
  OneNode n("RotaryEmbedding", 23);
  n.input(DType::kFloat32, {1, 2, 8}).constant(cos).constant(sin).attr("num_heads", one(2)).attr("rotary_embedding_dim", one(2));
  ASSERT_TRUE(n.build().is_ok());
  std::vector<float> xv = {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, -8};
  std::vector<double> want;
  for (int s = 0; s < 2; ++s)
    for (int h = 0; h < 2; ++h) {
      const float* e = &xv[static_cast<size_t>(s * 8 + h * 4)];
      want.push_back(std::cos(a[s]) * e[0] - std::sin(a[s]) * e[1]);
      want.push_back(std::sin(a[s]) * e[0] + std::cos(a[s]) * e[1]);
      want.push_back(e[2]);
      want.push_back(e[3]);
    }
  expect_near(run_out(n, {f32({1, 2, 8}, xv)}), want);
}

TEST(Rotary, Refusals) {
  OneNode no_heads("RotaryEmbedding", 23);
  no_heads.input(DType::kFloat32, {1, 2, 8}).input(DType::kFloat32, {4, 4}).input(DType::kFloat32, {4, 4}).input(DType::kInt64, {1, 2});
  expect_refused(no_heads, "num_heads");
  OneNode odd("RotaryEmbedding", 23);
  odd.input(DType::kFloat32, {1, 1, 2, 8}).input(DType::kFloat32, {4, 1}).input(DType::kFloat32, {4, 1}).input(DType::kInt64, {1, 2})
      .attr("rotary_embedding_dim", one(3));
  expect_refused(odd, "rotary_embedding_dim 3");
  OneNode cache("RotaryEmbedding", 23);
  cache.input(DType::kFloat32, {1, 1, 2, 8}).input(DType::kFloat32, {4, 3}).input(DType::kFloat32, {4, 3}).input(DType::kInt64, {1, 2});
  expect_refused(cache, "must be (max_position_id_plus_1, 4)");
  OneNode range("RotaryEmbedding", 23);
  range.input(DType::kFloat32, {1, 1, 1, 2}).constant(f32({1, 1}, {1})).constant(f32({1, 1}, {0})).constant(i64({1, 1}, {5}));
  ASSERT_TRUE(range.build().is_ok());
  auto r = range.run({f32({1, 1, 1, 2}, {1, 2})});
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(test::contains(r.status().message(), "position id 5")) << r.status().message();
}

// ---- Attention ----

// Q all zeros: every allowed key gets the same score, so Y is the mean of the allowed V rows.
TEST(Attention, EqualScoresAverageTheAllowedValuesCausal) {
  OneNode n("Attention", 23);
  n.input(DType::kFloat32, {1, 1, 3, 2}).input(DType::kFloat32, {1, 1, 3, 2}).input(DType::kFloat32, {1, 1, 3, 1})
      .attr("is_causal", one(1));
  ASSERT_TRUE(n.build().is_ok());
  EXPECT_EQ(n.out().shape, (Shape{1, 1, 3, 1}));
  const Tensor q = f32({1, 1, 3, 2}, {0, 0, 0, 0, 0, 0});
  const Tensor k = f32({1, 1, 3, 2}, {1, -2, 3, 0.5f, -1, 4});
  const Tensor v = f32({1, 1, 3, 1}, {3, 6, 30});
  expect_near(run_out(n, {q, k, v}), {3, 4.5, 13});
}

TEST(Attention, SoftmaxWeightsFollowTheScaledScores) {
  // One query, keys e0 and e1, q = (2, 0), scale 0.5: scores 1 and 0, weights e/(e+1), 1/(e+1).
  OneNode n("Attention", 23);
  n.input(DType::kFloat32, {1, 1, 1, 2}).input(DType::kFloat32, {1, 1, 2, 2}).input(DType::kFloat32, {1, 1, 2, 1})
      .attr("scale", Attribute::of_float(0.5f));
  ASSERT_TRUE(n.build(4).is_ok());
  const double e = std::exp(1.0);
  auto r = n.run({f32({1, 1, 1, 2}, {2, 0}), f32({1, 1, 2, 2}, {1, 0, 0, 1}), f32({1, 1, 2, 1}, {10, -10})});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  expect_near((*r)[0].to_doubles(), {(10 * e - 10) / (e + 1)});
  expect_near((*r)[1].to_doubles(), {1, 0, 0, 1});    // present_key = K
  expect_near((*r)[2].to_doubles(), {10, -10});       // present_value = V
  expect_near((*r)[3].to_doubles(), {1, 0});          // mode 0: scaled Q K^T
}

TEST(Attention, SoftcapAndQkModes) {
  // Score 1 (key 0) and 0 (key 1) with scale 0.5 as above; softcap 2: 2 tanh(1/2), 0. Additive mask
  // (0.25, -inf): key 1 is disallowed, so Y is V row 0.
  const double capped = 2 * std::tanh(0.5);
  const std::vector<std::vector<double>> want = {{1, 0}, {capped, 0}, {capped + 0.25, -INFINITY}, {1, 0}};
  for (int mode = 0; mode < 4; ++mode) {
    OneNode n("Attention", 23);
    n.input(DType::kFloat32, {1, 1, 1, 2}).input(DType::kFloat32, {1, 1, 2, 2}).input(DType::kFloat32, {1, 1, 2, 1})
        .constant(f32({1, 2}, {0.25f, -INFINITY})).attr("scale", Attribute::of_float(0.5f))
        .attr("softcap", Attribute::of_float(2.0f)).attr("qk_matmul_output_mode", one(mode));
    ASSERT_TRUE(n.build(4).is_ok());
    auto r = n.run({f32({1, 1, 1, 2}, {2, 0}), f32({1, 1, 2, 2}, {1, 0, 0, 1}), f32({1, 1, 2, 1}, {10, -10})});
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    expect_near((*r)[0].to_doubles(), {10});
    const std::vector<double> got = (*r)[3].to_doubles();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_NEAR(got[0], want[static_cast<size_t>(mode)][0], 1e-6) << "mode " << mode;
    if (std::isinf(want[static_cast<size_t>(mode)][1])) EXPECT_EQ(got[1], -INFINITY) << "mode " << mode;
    else EXPECT_NEAR(got[1], want[static_cast<size_t>(mode)][1], 1e-6) << "mode " << mode;
  }
}

TEST(Attention, FullyMaskedRowIsZeroAndBoolMaskBroadcasts) {
  // Mask (Sq=2, keys=2) broadcast over batch and heads: query 0 sees key 1 only, query 1 nothing.
  OneNode n("Attention", 23);
  n.input(DType::kFloat32, {2, 2, 2, 1}).input(DType::kFloat32, {2, 2, 2, 1}).input(DType::kFloat32, {2, 2, 2, 1})
      .constant(boolean({2, 2}, {0, 1, 0, 0})).attr("qk_matmul_output_mode", one(3));
  ASSERT_TRUE(n.build(4).is_ok());
  std::vector<float> q(8), k(8), v(8);
  for (int i = 0; i < 8; ++i) q[i] = 0.1f * i, k[i] = 1 - 0.2f * i, v[i] = 100.0f + i;
  auto r = n.run({f32({2, 2, 2, 1}, q), f32({2, 2, 2, 1}, k), f32({2, 2, 2, 1}, v)});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const std::vector<double> y = (*r)[0].to_doubles(), p = (*r)[3].to_doubles();
  for (int bh = 0; bh < 4; ++bh) {
    EXPECT_NEAR(y[static_cast<size_t>(bh * 2)], v[static_cast<size_t>(bh * 2 + 1)], 1e-4) << bh;  // key 1's value
    EXPECT_EQ(y[static_cast<size_t>(bh * 2 + 1)], 0.0) << bh;                                     // fully masked
    expect_near({p.begin() + bh * 4, p.begin() + bh * 4 + 4}, {0, 1, 0, 0});
  }
}

TEST(Attention, GroupedHeadsReadTheirKvHead3dMatches4d) {
  // 4 query heads over 2 KV heads: query heads 0, 1 read KV head 0 and 2, 3 read KV head 1. With
  // one key per KV head, Y is that head's V row. 3-D (B, S, H*D) input gives the same numbers.
  std::vector<float> v4 = {1, 2, 3, 4, 5, 6};  // (1, 2 kv heads, 1 key, Dv 3)
  OneNode four("Attention", 23);
  four.input(DType::kFloat32, {1, 4, 1, 2}).input(DType::kFloat32, {1, 2, 1, 2}).input(DType::kFloat32, {1, 2, 1, 3});
  ASSERT_TRUE(four.build().is_ok());
  std::vector<float> qv = {0.5f, 1, -1, 2, 3, 0.25f, 1, 1};
  expect_near(run_out(four, {f32({1, 4, 1, 2}, qv), f32({1, 2, 1, 2}, {1, 2, 3, 4}), f32({1, 2, 1, 3}, v4)}),
              {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  OneNode three("Attention", 23);
  three.input(DType::kFloat32, {1, 1, 8}).input(DType::kFloat32, {1, 1, 4}).input(DType::kFloat32, {1, 1, 6})
      .attr("q_num_heads", one(4)).attr("kv_num_heads", one(2));
  ASSERT_TRUE(three.build().is_ok());
  EXPECT_EQ(three.out().shape, (Shape{1, 1, 12}));
  expect_near(run_out(three, {f32({1, 1, 8}, qv), f32({1, 1, 4}, {1, 2, 3, 4}), f32({1, 1, 6}, v4)}),
              {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
}

TEST(Attention, PastIsPrependedAndShiftsTheCausalFrontier) {
  // Past of 2 keys + 1 new key, one query, causal: offset = 2, so the query sees all 3 keys; Q = 0
  // averages the 3 values. present_* = past then new.
  OneNode n("Attention", 23);
  n.input(DType::kFloat32, {1, 1, 1, 1}).input(DType::kFloat32, {1, 1, 1, 1}).input(DType::kFloat32, {1, 1, 1, 1})
      .absent().input(DType::kFloat32, {1, 1, 2, 1}).input(DType::kFloat32, {1, 1, 2, 1}).attr("is_causal", one(1));
  ASSERT_TRUE(n.build(3).is_ok());
  auto r = n.run({f32({1, 1, 1, 1}, {0}), f32({1, 1, 1, 1}, {7}), f32({1, 1, 1, 1}, {9}), f32({1, 1, 2, 1}, {5, 6}),
                  f32({1, 1, 2, 1}, {3, 6})});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  expect_near((*r)[0].to_doubles(), {6});
  expect_near((*r)[1].to_doubles(), {5, 6, 7});
  expect_near((*r)[2].to_doubles(), {3, 6, 9});
}

TEST(Attention, NonpadLengthMasksPaddingAndShiftsCausal) {
  // Opset 24: 4 cache keys, batch 0 has 3 valid, batch 1 has 1; one causal query (offset = valid - 1):
  // Q = 0 averages the valid values.
  OneNode n("Attention", 24);
  n.input(DType::kFloat32, {2, 1, 1, 1}).input(DType::kFloat32, {2, 1, 4, 1}).input(DType::kFloat32, {2, 1, 4, 1})
      .absent().absent().absent().constant(i64({2}, {3, 1})).attr("is_causal", one(1));
  ASSERT_TRUE(n.build().is_ok());
  expect_near(run_out(n, {f32({2, 1, 1, 1}, {0, 0}), f32({2, 1, 4, 1}, {1, 2, 3, 4, 5, 6, 7, 8}),
                          f32({2, 1, 4, 1}, {1, 2, 6, 100, 8, 100, 100, 100})}),
              {3, 8});
}

TEST(Attention, WindowBoundsLimitTheKeys) {
  // Opset 25 window: left 1, right 0 over 4 keys and 4 queries: query i sees keys i-1 and i.
  OneNode n("Attention", 25);
  n.input(DType::kFloat32, {1, 1, 4, 1}).input(DType::kFloat32, {1, 1, 4, 1}).input(DType::kFloat32, {1, 1, 4, 1})
      .attr("left_window_size", one(1)).attr("right_window_size", one(0));
  ASSERT_TRUE(n.build().is_ok());
  expect_near(run_out(n, {f32({1, 1, 4, 1}, {0, 0, 0, 0}), f32({1, 1, 4, 1}, {1, 2, 3, 4}), f32({1, 1, 4, 1}, {2, 4, 8, 16})}),
              {2, 3, 6, 12});
}

TEST(Attention, Refusals) {
  OneNode mode("Attention", 23);
  mode.input(DType::kFloat32, {1, 1, 2, 4}).input(DType::kFloat32, {1, 1, 2, 4}).input(DType::kFloat32, {1, 1, 2, 4})
      .attr("qk_matmul_output_mode", one(4));
  expect_refused(mode, "qk_matmul_output_mode 4");
  OneNode heads("Attention", 23);
  heads.input(DType::kFloat32, {1, 2, 8}).input(DType::kFloat32, {1, 2, 8}).input(DType::kFloat32, {1, 2, 8});
  expect_refused(heads, "q_num_heads and kv_num_heads");
  OneNode gqa("Attention", 23);
  gqa.input(DType::kFloat32, {1, 3, 2, 4}).input(DType::kFloat32, {1, 2, 2, 4}).input(DType::kFloat32, {1, 2, 2, 4});
  expect_refused(gqa, "not a multiple of kv_num_heads");
  OneNode mask("Attention", 23);
  mask.input(DType::kFloat32, {1, 2, 3, 4}).input(DType::kFloat32, {1, 2, 5, 4}).input(DType::kFloat32, {1, 2, 5, 4})
      .input(DType::kFloat32, {2, 3, 3, 5});
  expect_refused(mask, "does not broadcast");
  OneNode long_mask("Attention", 23);
  long_mask.input(DType::kFloat32, {1, 2, 3, 4}).input(DType::kFloat32, {1, 2, 5, 4}).input(DType::kFloat32, {1, 2, 5, 4})
      .input(DType::kBool, {3, 6});
  expect_refused(long_mask, "exceeds the 5 keys");
  OneNode past("Attention", 23);
  past.input(DType::kFloat32, {1, 1, 2, 4}).input(DType::kFloat32, {1, 1, 2, 4}).input(DType::kFloat32, {1, 1, 2, 4})
      .absent().input(DType::kFloat32, {1, 1, 3, 4});
  expect_refused(past, "together");
  OneNode nonpad23("Attention", 23);
  nonpad23.input(DType::kFloat32, {1, 1, 2, 4}).input(DType::kFloat32, {1, 1, 2, 4}).input(DType::kFloat32, {1, 1, 2, 4})
      .absent().absent().absent().input(DType::kInt64, {1});
  expect_refused(nonpad23, "needs opset 24");
  OneNode dtypes("Attention", 23);
  dtypes.input(DType::kFloat32, {1, 1, 2, 4}).input(DType::kFloat16, {1, 1, 2, 4}).input(DType::kFloat32, {1, 1, 2, 4});
  expect_refused(dtypes, "input 1");
}

}  // namespace
}  // namespace aotc
