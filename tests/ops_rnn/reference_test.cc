// CPU reference of RNN / GRU / LSTM against closed forms worked out by hand in each test (one
// hidden unit, one input feature, so every step is a scalar formula), plus the refusals: bad
// shapes, directions, activations and sequence lengths name the node and the reason.
#include <cmath>

#include "tests/ops_basic/ops_test_util.h"

namespace aotc {
namespace {

using test::OneNode;
const DType f32 = DType::kFloat32;

Tensor f(Shape s, std::vector<float> v) { return Tensor::from_floats(std::move(s), v); }
Attribute str(const char* s) { return Attribute::of_string(s); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// y = W x + R h + Wb + Rb with the identity activation (Affine alpha 1 beta 0).
OneNode linear_rnn(const char* direction) {
  OneNode n("RNN", 14);
  n.input(f32, {3, 1, 1}).constant(f({1, 1, 1}, {0.5f})).constant(f({1, 1, 1}, {2.0f}))
      .constant(f({1, 2}, {0.1f, 0.2f}));
  n.attr("activations", Attribute::of_strings({"Affine"})).attr("direction", str(direction));
  return n;
}

// hidden_size is bounded before W's and R's expected shapes (gates x hidden) are formed (fuzz
// finds: hidden_size INT64_MAX and 2^62 with 3 and 4 gates, UBSan).
TEST(RnnReference, HugeHiddenSizeIsRefused) {
  for (const char* op : {"GRU", "LSTM"}) {
    OneNode n(op, 14);
    n.input(f32, {3, 1, 1}).input(f32, {1, 3, 1}).input(f32, {1, 3, 1});
    n.attr("hidden_size", Attribute::of_int(INT64_MAX));
    Status s = n.build();
    ASSERT_FALSE(s.is_ok()) << op;
    EXPECT_NE(s.message().find("over the limit"), std::string::npos) << s.message();
  }
}

TEST(RnnReference, LinearForwardSteps) {
  OneNode n = linear_rnn("forward");
  ASSERT_TRUE(n.build(2).is_ok());
  auto out = n.run({f({3, 1, 1}, {1, 2, 3})});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  // h1 = 0.5 + 0.3 = 0.8; h2 = 1 + 2 * 0.8 + 0.3 = 2.9; h3 = 1.5 + 5.8 + 0.3 = 7.6
  EXPECT_TENSOR_NEAR((*out)[0], f({3, 1, 1, 1}, {0.8f, 2.9f, 7.6f}));
  EXPECT_TENSOR_NEAR((*out)[1], f({1, 1, 1}, {7.6f}));
}

TEST(RnnReference, LinearReverseAndBidirectional) {
  OneNode r = linear_rnn("reverse");
  ASSERT_TRUE(r.build(2).is_ok());
  auto out = r.run({f({3, 1, 1}, {1, 2, 3})});
  ASSERT_TRUE(out.is_ok());
  // from the end: 1.5 + 0.3 = 1.8; 1 + 3.6 + 0.3 = 4.9; 0.5 + 9.8 + 0.3 = 10.6
  EXPECT_TENSOR_NEAR((*out)[0], f({3, 1, 1, 1}, {10.6f, 4.9f, 1.8f}));
  EXPECT_TENSOR_NEAR((*out)[1], f({1, 1, 1}, {10.6f}));

  OneNode b("RNN", 14);
  b.input(f32, {3, 1, 1}).constant(f({2, 1, 1}, {0.5f, 0.5f})).constant(f({2, 1, 1}, {2.0f, 2.0f}))
      .constant(f({2, 2}, {0.1f, 0.2f, 0.1f, 0.2f}));
  b.attr("activations", Attribute::of_strings({"Affine", "Affine"})).attr("direction", str("bidirectional"));
  ASSERT_TRUE(b.build(2).is_ok());
  EXPECT_EQ(b.out(0).shape, (Shape{3, 2, 1, 1}));
  auto bo = b.run({f({3, 1, 1}, {1, 2, 3})});
  ASSERT_TRUE(bo.is_ok());
  EXPECT_TENSOR_NEAR((*bo)[0], f({3, 2, 1, 1}, {0.8f, 10.6f, 2.9f, 4.9f, 7.6f, 1.8f}));
  EXPECT_TENSOR_NEAR((*bo)[1], f({2, 1, 1}, {7.6f, 10.6f}));
}

TEST(RnnReference, SequenceLensLayoutAndClip) {
  // batch 2 (batch-first), lengths 3 and 1: the short sequence's Y is zero after its end and its
  // Y_h is its first step; clip 2 bounds every pre-activation.
  Tensor lens(DType::kInt32, {2});  // sequence_lens is int32 in the spec
  lens.set_int(0, 3);
  lens.set_int(1, 1);
  OneNode n("RNN", 14);
  n.input(f32, {2, 3, 1}).constant(f({1, 1, 1}, {0.5f})).constant(f({1, 1, 1}, {2.0f}))
      .constant(f({1, 2}, {0.1f, 0.2f})).constant(lens);
  n.attr("activations", Attribute::of_strings({"Affine"})).attr("layout", Attribute::of_int(1))
      .attr("clip", Attribute::of_float(2.0f));
  ASSERT_TRUE(n.build(2).is_ok());
  auto out = n.run({f({2, 3, 1}, {1, 2, 3, -1, 5, 5})});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  // b0: 0.8; min(1 + 1.6 + 0.3, 2) = 2; min(1.5 + 4 + 0.3, 2) = 2. b1: -0.5 + 0.3 = -0.2, then zeros.
  EXPECT_TENSOR_NEAR((*out)[0], f({2, 3, 1, 1}, {0.8f, 2, 2, -0.2f, 0, 0}));
  EXPECT_TENSOR_NEAR((*out)[1], f({2, 1, 1}, {2, -0.2f}));
}

TEST(RnnReference, ActivationParametersConsumedInOrder) {
  // Bidirectional with LeakyRelu (alpha 0.1) forward and ScaledTanh (alpha 2, beta 3) reverse.
  OneNode n("RNN", 14);
  n.input(f32, {1, 1, 1}).constant(f({2, 1, 1}, {1, 1})).constant(f({2, 1, 1}, {0, 0}));
  n.attr("activations", Attribute::of_strings({"LeakyRelu", "ScaledTanh"})).attr("direction", str("bidirectional"));
  n.attr("activation_alpha", Attribute::of_floats({0.1f, 2.0f})).attr("activation_beta", Attribute::of_floats({3.0f}));
  ASSERT_TRUE(n.build(2).is_ok());
  auto out = n.run({f({1, 1, 1}, {-0.25f})});
  ASSERT_TRUE(out.is_ok());
  EXPECT_TENSOR_NEAR((*out)[1], f({2, 1, 1}, {-0.025f, static_cast<float>(2 * std::tanh(3 * -0.25))}));
}

TEST(GruReference, ClosedFormBothResetModes) {
  // One unit: W = (wz, wr, wh), R = (rz, rr, rh), biases Wb, Rb, h0; x = 0.7.
  const float wz = 0.3f, wr = -0.4f, wh = 0.9f, rz = 0.5f, rr = 0.6f, rh = -0.8f, h0 = 0.25f, x = 0.7f;
  const float wb[3] = {0.1f, 0.2f, 0.3f}, rb[3] = {-0.1f, 0.05f, 0.4f};
  for (int lbr = 0; lbr < 2; ++lbr) {
    OneNode n("GRU", 14);
    n.input(f32, {1, 1, 1}).constant(f({1, 3, 1}, {wz, wr, wh})).constant(f({1, 3, 1}, {rz, rr, rh}))
        .constant(f({1, 6}, {wb[0], wb[1], wb[2], rb[0], rb[1], rb[2]})).absent().constant(f({1, 1, 1}, {h0}));
    n.attr("linear_before_reset", Attribute::of_int(lbr));
    ASSERT_TRUE(n.build(2).is_ok());
    auto out = n.run({f({1, 1, 1}, {x})});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    const double z = sigmoid(wz * x + rz * h0 + wb[0] + rb[0]);
    const double r = sigmoid(wr * x + rr * h0 + wb[1] + rb[1]);
    const double cand = lbr ? std::tanh(wh * x + wb[2] + r * (rh * h0 + rb[2]))
                            : std::tanh(wh * x + wb[2] + rh * (r * h0) + rb[2]);
    const double h = (1 - z) * cand + z * h0;
    SCOPED_TRACE("linear_before_reset " + std::to_string(lbr));
    EXPECT_TENSOR_NEAR((*out)[1], f({1, 1, 1}, {static_cast<float>(h)}));
  }
}

TEST(LstmReference, ClosedFormPeepholesAndInputForget) {
  // W = R = 0, so the pre-activations are the biases (gate order i, o, f, c) plus peepholes.
  const float bi = 0.3f, bo = -0.2f, bf = 0.6f, bc = 0.9f, c0 = 0.5f, pi = 0.4f, po = -0.7f, pf = 0.2f;
  for (int coupled = 0; coupled < 2; ++coupled) {
    OneNode n("LSTM", 14);
    n.input(f32, {1, 1, 1}).constant(f({1, 4, 1}, {0, 0, 0, 0})).constant(f({1, 4, 1}, {0, 0, 0, 0}))
        .constant(f({1, 8}, {bi, bo, bf, bc, 0, 0, 0, 0})).absent().absent().constant(f({1, 1, 1}, {c0}))
        .constant(f({1, 3}, {pi, po, pf}));
    n.attr("input_forget", Attribute::of_int(coupled));
    ASSERT_TRUE(n.build(3).is_ok());
    auto out = n.run({f({1, 1, 1}, {1.5f})});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    const double i = sigmoid(bi + pi * c0);
    const double fg = coupled ? 1 - i : sigmoid(bf + pf * c0);
    const double c = fg * c0 + i * std::tanh(bc);
    const double o = sigmoid(bo + po * c);
    SCOPED_TRACE("input_forget " + std::to_string(coupled));
    EXPECT_TENSOR_NEAR((*out)[1], f({1, 1, 1}, {static_cast<float>(o * std::tanh(c))}));
    EXPECT_TENSOR_NEAR((*out)[2], f({1, 1, 1}, {static_cast<float>(c)}));
  }
}

TEST(RnnReference, RefusalsNameNodeAndReason) {
  {
    OneNode n("LSTM", 14);
    n.input(f32, {2, 1, 3}).input(f32, {1, 8, 3}).input(f32, {1, 8, 2});  // 4 gates x 2 = 8: ok; W wrong below
    n.attr("hidden_size", Attribute::of_int(3));
    Status s = n.build(1);
    ASSERT_FALSE(s.is_ok());
    EXPECT_TRUE(test::contains(s.message(), "'n0' (LSTM)")) << s.message();
    EXPECT_TRUE(test::contains(s.message(), "(W) has shape")) << s.message();
  }
  {
    OneNode n("RNN", 14);
    n.input(f32, {2, 1, 3}).input(f32, {1, 4, 3}).input(f32, {1, 4, 4}).attr("direction", str("sideways"));
    Status s = n.build(1);
    EXPECT_TRUE(test::contains(s.message(), "direction")) << s.message();
  }
  {
    OneNode n("GRU", 14);
    n.input(f32, {2, 1, 3}).input(f32, {1, 12, 3}).input(f32, {1, 12, 4});
    n.attr("activations", Attribute::of_strings({"Sigmoid", "Swish"}));
    Status s = n.build(1);
    EXPECT_TRUE(test::contains(s.message(), "activation 'Swish' is not supported")) << s.message();
  }
  {
    OneNode n("RNN", 14);
    n.input(f32, {2, 1, 1}).constant(f({1, 1, 1}, {1})).constant(f({1, 1, 1}, {1})).absent()
        .input(DType::kInt32, {1});
    ASSERT_TRUE(n.build(1).is_ok());
    Tensor lens(DType::kInt32, {1});
    lens.set_int(0, 5);
    auto out = n.run({f({2, 1, 1}, {1, 2}), lens});
    ASSERT_FALSE(out.is_ok());
    EXPECT_TRUE(test::contains(out.status().message(), "sequence_lens[0] = 5 is outside [0, 2]")) << out.status().message();
  }
}

}  // namespace
}  // namespace aotc
