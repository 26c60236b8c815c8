// Quantization sensitivity (issue 8): which layers are quantizable, the fake quantization checked
// against a hand computation, and the accuracy budget moving the layer that breaks it to fp16.
#include "opt/quant_sensitivity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ir/evaluator.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

CalibrationResult ranges(std::vector<std::pair<std::string, double>> amax) {
  CalibrationResult r;
  for (auto& [name, a] : amax) {
    TensorCalibration t;
    t.name = name;
    t.amax = a;
    r.tensors.push_back(t);
  }
  return r;
}

TEST(QuantSensitivity, QuantizableLayersAndWeightAxes) {
  AOTC_BUILD(g, R"(
    input %x : float[2x4x5x5]
    input %m : float[3x6]
    const %w : float[8x4x3x3] = random(1)
    const %b : float[5x6] = random(2)
    const %c : float[6x7] = random(3)
    %y : float[?] = Conv(%x, %w)  # conv
    %g : float[?] = Gemm(%m, %b) {transB=1}  # gemm
    %h : float[?] = MatMul(%m, %c)  # matmul
    %h2 : float[?] = Transpose(%h)  # t
    %k : float[?] = MatMul(%h2, %h)  # activations only
    output %y
    output %g
    output %k
  )");
  std::vector<QuantLayer> layers = quantizable_layers(g);
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(g.nodes[static_cast<size_t>(layers[0].node)].name, "conv");
  EXPECT_EQ(layers[0].weight_axis, 0);
  EXPECT_EQ(g.nodes[static_cast<size_t>(layers[1].node)].name, "gemm");
  EXPECT_EQ(layers[1].weight_axis, 0);  // transB: B is [N, K]
  EXPECT_EQ(g.nodes[static_cast<size_t>(layers[2].node)].name, "matmul");
  EXPECT_EQ(layers[2].weight_axis, 1);
}

TEST(QuantSensitivity, FakeQuantizationMatchesAHandComputation) {
  AOTC_BUILD(g, R"(
    input %a : float[2x3]
    const %w : float[3x2] = random(4)
    %y : float[?] = MatMul(%a, %w)  # mm
    output %y
  )");
  std::vector<QuantLayer> layers = quantizable_layers(g);
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].weight_axis, 1);
  const double amax = 0.8;  // inputs beyond it clip
  auto q = quantize_to_qdq(g, layers, {true}, ranges({{"a", amax}}));
  ASSERT_TRUE(q.is_ok()) << q.status().message();
  EXPECT_EQ(testing_util::op_list(*q), "QuantizeLinear,DequantizeLinear,DequantizeLinear,MatMul");
  EXPECT_EQ(q->value(q->nodes[2].inputs[0]).dtype, DType::kInt8);  // the weight is stored as int8
  Tensor a(DType::kFloat32, {2, 3});
  const double av[] = {0.1, -0.5, 0.95, 0.33, -1.2, 0.0};
  for (int i = 0; i < 6; ++i) a.set(i, av[i]);
  auto got = evaluate_graph(*q, {a});
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  // By hand: a rounded to multiples of amax/127 (round half to even), saturated to [-128, 127];
  // each weight column rounded to multiples of its own max|w| / 127.
  const Tensor& w = *g.value(g.find_value("w")).constant;
  const double sa = amax / 127;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) {
      double cmax = 0;
      for (int k = 0; k < 3; ++k) cmax = std::max(cmax, std::fabs(w.get(k * 2 + c)));
      const double sw = cmax / 127;
      double want = 0;
      for (int k = 0; k < 3; ++k) {
        const float saf = static_cast<float>(sa);  // QuantizeLinear's scale is a float32
        const float qa = std::clamp(std::nearbyint(static_cast<float>(av[r * 3 + k]) / saf), -128.0f, 127.0f) * saf;
        double qw = std::nearbyint(w.get(k * 2 + c) / sw) * sw;
        want += qa * qw;
      }
      EXPECT_NEAR((*got)[0].get(r * 2 + c), want, 1e-5) << r << "," << c;
    }
  // A layer without a calibrated range is an error naming the node.
  auto missing = quantize_to_qdq(g, layers, {true}, ranges({}));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("mm"), std::string::npos);
}

TEST(QuantSensitivity, AResidualAddFedByAQuantizedLayerGetsBothOperandsQuantized) {
  AOTC_BUILD(g, R"(
    input %x : float[1x16x4x4]
    const %w : float[16x16x1x1] = random(3)
    %c : float[?] = Conv(%x, %w)  # conv
    %y : float[?] = Add(%c, %x)  # add
    output %y
  )");
  std::vector<QuantLayer> layers = quantizable_layers(g);
  ASSERT_EQ(layers.size(), 1u);
  auto q = quantize_to_qdq(g, layers, {true}, ranges({{"x", 2.0}, {"c", 3.0}}));
  ASSERT_TRUE(q.is_ok()) << q.status().message();
  // x's pair serves the Conv and the Add; c gets its own.
  EXPECT_EQ(testing_util::op_list(*q), "QuantizeLinear,DequantizeLinear,DequantizeLinear,Conv,QuantizeLinear,DequantizeLinear,Add");
  const Node& add = q->nodes.back();
  EXPECT_EQ(q->value(add.inputs[1]).name, "x_dq");
  // Not quantized: the Add stays as it was.
  auto none = quantize_to_qdq(g, layers, {false}, ranges({{"x", 2.0}, {"c", 3.0}}));
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(testing_util::op_list(*none), "Conv,Add");
}

TEST(QuantSensitivity, BudgetMovesTheBreakingLayerToFp16) {
  AOTC_BUILD(g, R"(
    input %x : float[4x8]
    const %w1 : float[8x8] = random(5)
    const %w2 : float[8x8] = random(6)
    %h : float[?] = MatMul(%x, %w1)  # first
    %y : float[?] = MatMul(%h, %w2)  # second
    output %y
  )");
  std::vector<std::vector<Tensor>> batches = {testing_util::random_inputs(g, 3)};
  // Calibrate honestly, then give `first` a range far too small: its int8 activation clips.
  CalibrationOptions o;
  o.calibrator = Calibrator::kMinMax;
  auto cal = calibrate_graph(g, batches, o);
  ASSERT_TRUE(cal.is_ok());
  for (TensorCalibration& t : cal->tensors)
    if (t.name == "x") t.amax *= 0.05;
  auto none = quantization_sensitivity(g, *cal, batches, 0);
  ASSERT_TRUE(none.is_ok()) << none.status().message();
  ASSERT_EQ(none->layers.size(), 2u);
  EXPECT_EQ(none->layers[0].node, "first");
  EXPECT_GT(none->layers[0].rel_l2, 0.3);   // clipped
  EXPECT_LT(none->layers[1].rel_l2, 0.02);  // an honest range
  EXPECT_EQ(none->layers[0].precision, "int8");
  EXPECT_EQ(none->layers[1].precision, "int8");
  EXPECT_NEAR(none->layers[1].sqnr_db, -20 * std::log10(none->layers[1].rel_l2), 1e-9);
  // Budget 5%: `first` goes to fp16, `second` stays int8, and the budget is met.
  auto budget = quantization_sensitivity(g, *cal, batches, 0.05);
  ASSERT_TRUE(budget.is_ok());
  EXPECT_EQ(budget->layers[0].precision, "fp16");
  EXPECT_EQ(budget->layers[1].precision, "int8");
  EXPECT_TRUE(budget->budget_met);
  EXPECT_LE(budget->chosen_rel_l2, 0.05);
  EXPECT_GT(budget->all_int8_rel_l2, 0.05);
  // A budget nothing can meet (0 error is impossible in int8... but every layer in fp16 is
  // exact): all layers end in fp16 with the error 0.
  auto tight = quantization_sensitivity(g, *cal, batches, 1e-12);
  ASSERT_TRUE(tight.is_ok());
  EXPECT_EQ(tight->layers[0].precision, "fp16");
  EXPECT_EQ(tight->layers[1].precision, "fp16");
  EXPECT_EQ(tight->chosen_rel_l2, 0.0);
}

// The sensitivity runs each quantized variant from its first changed node on, fed with the fp32
// run's values: every layer's error must equal that of a whole evaluation of the same variant,
// here computed independently (quantize_to_qdq, evaluate_graph, the relative L2 over both
// outputs), including an output the quantized layer does not reach.
TEST(QuantSensitivity, SuffixEvaluationEqualsTheWholeGraph) {
  AOTC_BUILD(g, R"(
    input %x : float[4x8]
    const %w1 : float[8x8] = random(5)
    const %w2 : float[8x8] = random(6)
    const %w3 : float[8x8] = random(7)
    %h : float[?] = MatMul(%x, %w1)  # first
    %r : float[?] = Relu(%h)  # relu
    %y : float[?] = MatMul(%r, %w2)  # second
    %s : float[?] = Add(%y, %r)  # residual
    %z : float[?] = MatMul(%s, %w3)  # third
    output %z
    output %r
  )");
  std::vector<std::vector<Tensor>> batches = {testing_util::random_inputs(g, 3), testing_util::random_inputs(g, 4)};
  CalibrationOptions o;
  o.calibrator = Calibrator::kMinMax;
  auto cal = calibrate_graph(g, batches, o);
  ASSERT_TRUE(cal.is_ok()) << cal.status().message();
  auto report = quantization_sensitivity(g, *cal, batches, 0);
  ASSERT_TRUE(report.is_ok()) << report.status().message();
  const std::vector<QuantLayer> layers = quantizable_layers(g);
  ASSERT_EQ(layers.size(), 3u);
  ASSERT_EQ(report->layers.size(), 3u);
  auto whole_error = [&](const std::vector<bool>& q) {
    auto qg = quantize_to_qdq(g, layers, q, *cal);
    EXPECT_TRUE(qg.is_ok());
    double num = 0, den = 0;
    for (const auto& b : batches) {
      auto ref = evaluate_graph(g, b), got = evaluate_graph(*qg, b);
      EXPECT_TRUE(ref.is_ok() && got.is_ok());
      for (size_t k = 0; k < ref->size(); ++k)
        for (int64_t i = 0; i < (*ref)[k].numel(); ++i) {
          const double d = (*got)[k].get(i) - (*ref)[k].get(i);
          num += d * d;
          den += (*ref)[k].get(i) * (*ref)[k].get(i);
        }
    }
    return std::sqrt(num / den);
  };
  for (size_t i = 0; i < layers.size(); ++i) {
    std::vector<bool> q(layers.size(), false);
    q[i] = true;
    const double want = whole_error(q);
    EXPECT_GT(want, 0.0) << report->layers[i].node;
    EXPECT_EQ(report->layers[i].rel_l2, want) << report->layers[i].node;
  }
  EXPECT_EQ(report->all_int8_rel_l2, whole_error(std::vector<bool>(layers.size(), true)));
}

}  // namespace
}  // namespace aotc
