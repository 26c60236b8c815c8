// convert_precision: float32 values -> fp16/bf16 storage by the policy table, constants converted at
// compile time, Casts only at precision boundaries, graph I/O dtypes kept. Checked against the CPU
// reference of the fp32 graph (relative L2 error, the whole-model fp16 criterion), plus the cases
// where it must not fire or must keep fp32 (fp32 target, keep-fp32 ops and names, integer values).
#include <cmath>

#include "opt/passes.h"
#include "opt/precision_policy.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// Relative L2 error of every output of `after` against `before` on seeded random inputs.
double max_rel_l2(const Graph& before, const Graph& after) {
  std::vector<Tensor> in = testing_util::random_inputs(before, 7);
  auto a = evaluate_graph(before, in);
  auto b = evaluate_graph(after, in);
  EXPECT_TRUE(a.is_ok() && b.is_ok());
  if (!a || !b) return 1e9;
  double worst = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    double num = 0, den = 0;
    EXPECT_EQ((*a)[i].dtype(), (*b)[i].dtype());
    for (int64_t k = 0; k < (*a)[i].numel(); ++k) {
      double d = (*a)[i].get(k) - (*b)[i].get(k);
      num += d * d;
      den += (*a)[i].get(k) * (*a)[i].get(k);
    }
    worst = std::max(worst, std::sqrt(num / std::max(den, 1e-30)));
  }
  return worst;
}

const char* kConvChain = R"(
    input %x : float[2x8x9x9]
    const %w1 : float[16x8x3x3] = random(1)
    const %b1 : float[16] = random(2)
    const %w2 : float[16x16x1x1] = random(3)
    %c1 : float[?] = Conv(%x, %w1, %b1) {pads=[1,1,1,1]}  # conv1
    %r1 : float[?] = Relu(%c1)  # relu1
    %c2 : float[?] = Conv(%r1, %w2)  # conv2
    %y : float[?] = Add(%c2, %r1)  # add
    output %y
  )";

TEST(Precision, Fp16ChainHasCastsOnlyAtTheGraphBoundary) {
  AOTC_BUILD(g, kConvChain);
  Graph before = g;
  g.target.precision.dtype = DType::kFloat16;
  auto changed = convert_precision(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Cast,Conv,Relu,Conv,Add,Cast");
  for (size_t i = 1; i + 1 < g.nodes.size(); ++i) {
    for (ValueId v : g.nodes[i].inputs)
      if (v != kNoValue) {
        EXPECT_EQ(g.value(v).dtype, DType::kFloat16) << g.nodes[i].name;
      }
    EXPECT_EQ(g.value(g.nodes[i].outputs[0]).dtype, DType::kFloat16) << g.nodes[i].name;
  }
  // Weights are converted constants, not casts at run time.
  EXPECT_TRUE(g.value(g.nodes[1].inputs[1]).is_constant());
  // The graph keeps its declared float input and output.
  EXPECT_EQ(g.value(g.inputs[0]).dtype, DType::kFloat32);
  EXPECT_EQ(g.value(g.outputs[0]).dtype, DType::kFloat32);
  EXPECT_EQ(g.value(g.outputs[0]).name, "y");
  double err = max_rel_l2(before, g);
  EXPECT_LT(err, 1e-2);
  EXPECT_GT(err, 0.0);  // fp16 storage really happened (values rounded)
}

// --io-dtype fp16: the float input and output become fp16 in the graph signature, so the
// boundary Casts vanish; the result still matches the fp32 graph fed the fp16-rounded input.
TEST(Precision, LowIoMakesTheSignatureFp16WithoutBoundaryCasts) {
  AOTC_BUILD(g, kConvChain);
  Graph before = g;
  g.target.precision.dtype = DType::kFloat16;
  g.target.precision.low_io = true;
  auto changed = convert_precision(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Conv,Relu,Conv,Add");
  EXPECT_EQ(g.value(g.inputs[0]).dtype, DType::kFloat16);
  EXPECT_EQ(g.value(g.outputs[0]).dtype, DType::kFloat16);
  EXPECT_EQ(g.value(g.inputs[0]).name, "x");
  EXPECT_EQ(g.value(g.outputs[0]).name, "y");
  std::vector<Tensor> in32 = testing_util::random_inputs(before, 7);
  Tensor in16(DType::kFloat16, in32[0].shape());
  for (int64_t i = 0; i < in16.numel(); ++i) in16.set(i, in32[0].get(i));
  auto a = evaluate_graph(before, in32);
  auto b = evaluate_graph(g, {in16});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_EQ((*b)[0].dtype(), DType::kFloat16);
  double num = 0, den = 0;
  for (int64_t k = 0; k < (*a)[0].numel(); ++k) {
    double d = (*a)[0].get(k) - (*b)[0].get(k);
    num += d * d;
    den += (*a)[0].get(k) * (*a)[0].get(k);
  }
  EXPECT_LT(std::sqrt(num / den), 1e-2);
  EXPECT_GT(num, 0.0);
}

// --io-dtype with nodes that stay fp32 at both ends: a Cast from the fp16 input into the kept
// node, and one from the kept node's fp32 result into the fp16 output.
TEST(Precision, LowIoCastsAroundNodesThatStayFp32) {
  AOTC_BUILD(g, kConvChain);
  g.target.precision.dtype = DType::kFloat16;
  g.target.precision.low_io = true;
  g.target.precision.keep_fp32 = {"conv1", "add"};
  auto changed = convert_precision(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Cast,Conv,Cast,Relu,Conv,Cast,Cast,Add,Cast");
  EXPECT_EQ(g.value(g.inputs[0]).dtype, DType::kFloat16);
  EXPECT_EQ(g.value(g.outputs[0]).dtype, DType::kFloat16);
  const Node& first = g.nodes.front();
  EXPECT_EQ(first.inputs[0], g.inputs[0]);
  EXPECT_EQ(g.value(first.outputs[0]).dtype, DType::kFloat32);
  const Node& last = g.nodes.back();
  EXPECT_EQ(last.op_type, "Cast");
  EXPECT_EQ(last.outputs[0], g.outputs[0]);
  EXPECT_EQ(g.value(last.inputs[0]).dtype, DType::kFloat32);
}

TEST(Precision, Bf16UsesTheSameMachinery) {
  AOTC_BUILD(g, kConvChain);
  Graph before = g;
  g.target.precision.dtype = DType::kBFloat16;
  auto changed = convert_precision(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_EQ(op_list(g), "Cast,Conv,Relu,Conv,Add,Cast");
  for (const Node& n : g.nodes) {
    if (n.op_type != "Cast") {
      EXPECT_EQ(g.value(n.outputs[0]).dtype, DType::kBFloat16) << n.name;
    }
  }
  EXPECT_LT(max_rel_l2(before, g), 2e-2);  // bf16 has 8 significant bits
}

TEST(Precision, Fp32TargetDoesNotFire) {
  AOTC_BUILD(g, kConvChain);
  auto changed = convert_precision(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(op_list(g), "Conv,Relu,Conv,Add");
}

TEST(Precision, PolicyKeepsExpInFp32WithCastsAroundIt) {
  AOTC_BUILD(g, R"(
    input %x : float[4x5]
    %a : float[?] = Relu(%x)  # relu
    %e : float[?] = Exp(%a)  # exp
    %y : float[?] = Sigmoid(%e)  # sigmoid
    output %y
  )");
  ASSERT_NE(find_precision_policy("Exp"), nullptr);
  EXPECT_EQ(find_precision_policy("Exp")->rule, PrecisionRule::kKeepFp32);
  Graph before = g;
  g.target.precision.dtype = DType::kFloat16;
  ASSERT_TRUE(convert_precision(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Cast,Relu,Cast,Exp,Cast,Sigmoid,Cast");
  const Node& exp = g.nodes[3];
  EXPECT_EQ(g.value(exp.inputs[0]).dtype, DType::kFloat32);
  EXPECT_EQ(g.value(exp.outputs[0]).dtype, DType::kFloat32);
  EXPECT_LT(max_rel_l2(before, g), 1e-2);
}

TEST(Precision, AttentionRunsInFp16AndKeepsItsMaskType) {
  AOTC_BUILD(g, R"(
    input %q : float[1x2x5x8]
    input %k : float[1x2x7x8]
    input %v : float[1x2x7x8]
    input %m : float[5x7]
    %y : float[?] = Attention(%q, %k, %v, %m)  # attn
    output %y
  )");
  ASSERT_NE(find_precision_policy("Attention"), nullptr);
  Graph before = g;
  g.target.precision.dtype = DType::kFloat16;
  ASSERT_TRUE(convert_precision(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  int attention_nodes = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type != "Attention") continue;
    ++attention_nodes;
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(g.value(n.inputs[i]).dtype, DType::kFloat16) << i;
    EXPECT_EQ(g.value(n.inputs[3]).dtype, DType::kFloat32);
    EXPECT_EQ(g.value(n.outputs[0]).dtype, DType::kFloat16);
  }
  EXPECT_EQ(attention_nodes, 1);
  EXPECT_LT(max_rel_l2(before, g), 1e-2);
}

TEST(Precision, KeepFp32ByNodeNameAndByOpType) {
  AOTC_BUILD(g, kConvChain);
  g.target.precision.dtype = DType::kFloat16;
  g.target.precision.keep_fp32 = {"conv2", "Relu"};
  ASSERT_TRUE(convert_precision(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  for (const Node& n : g.nodes) {
    if (n.name == "conv2" || n.op_type == "Relu") {
      EXPECT_EQ(g.value(n.outputs[0]).dtype, DType::kFloat32) << n.name;
    }
    if (n.name == "conv1" || n.name == "add") {
      EXPECT_EQ(g.value(n.outputs[0]).dtype, DType::kFloat16) << n.name;
    }
  }
}

TEST(Precision, OneCastPerValueAndDtypeWhateverTheConsumerCount) {
  AOTC_BUILD(g, R"(
    input %x : float[3x4]
    %a : float[?] = Relu(%x)  # r1
    %b : float[?] = Sigmoid(%x)  # s1
    %c : float[?] = Add(%a, %b)  # add
    output %c
  )");
  g.target.precision.dtype = DType::kFloat16;
  ASSERT_TRUE(convert_precision(g).is_ok());
  EXPECT_EQ(op_list(g), "Cast,Relu,Sigmoid,Add,Cast");
}

TEST(Precision, IntegerValuesAreUntouched) {
  AOTC_BUILD(g, R"(
    input %x : float[2x3]
    input %i : int64[2x3]
    %c : float[?] = Cast(%i) {to=1}  # cast_in
    %y : float[?] = Mul(%x, %c)  # mul
    output %y
  )");
  g.target.precision.dtype = DType::kFloat16;
  ASSERT_TRUE(convert_precision(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(g.value(g.find_value("i")).dtype, DType::kInt64);
  // The Cast from int64 now writes fp16 directly (no fp32 round trip).
  EXPECT_EQ(g.value(g.nodes[0].inputs[0]).dtype, DType::kInt64);
}

}  // namespace
}  // namespace aotc
