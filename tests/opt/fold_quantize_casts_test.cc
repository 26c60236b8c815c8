// fold_quantize_casts: Cast(16-bit -> float32) before a QuantizeLinear and Cast(float32 -> 16-bit)
// after a DequantizeLinear fold into them. The CPU reference before and after must agree bit for
// bit (the widening Cast is exact and the quantize's division stays float32; the dequantize
// rounds its float32 product once, as the Cast did), on inputs chosen to sit on rounding edges;
// readers that are not the quantize / Casts, graph outputs, and mixed Cast types leave it alone.
#include <cmath>

#include "opt/passes.h"
#include "opt/pipeline.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// fp16 values around x = scale * (k + 1/2) for many k (the quantize's ties) plus random ones.
Tensor edge_halves(Shape shape, float scale) {
  Tensor t(DType::kFloat16, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float k = static_cast<float>((i * 37) % 300) - 150.0f;
    t.set(i, scale * (k + (i % 3 == 0 ? 0.5f : (i % 3 == 1 ? 0.49f : 0.51f))));
  }
  return t;
}

TEST(FoldQuantizeCasts, CastsAtTheEdgesOfAnInt8RegionFoldBitExactly) {
  AOTC_REQUIRE_OPS("QuantizeLinear", "DequantizeLinear", "Cast", "Add");
  AOTC_BUILD(g, R"(
    input %x : float16[2x3x5x4]
    input %r : float16[2x3x5x4]
    const %s : float[scalar] = [0.0371]
    const %z : int8[scalar] = [3]
    const %s2 : float[scalar] = [0.00917]
    %xf : float[?] = Cast(%x) {to=1}  # widen
    %q : int8[?] = QuantizeLinear(%xf, %s, %z)  # quant
    %d : float[?] = DequantizeLinear(%q, %s2, %z)  # deq
    %h : float16[?] = Cast(%d) {to=10}  # narrow
    %y : float16[?] = Add(%h, %r)  # add
    output %y
  )");
  Graph before = g;
  auto changed = fold_quantize_casts(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "QuantizeLinear,DequantizeLinear,Add");
  EXPECT_EQ(g.value(g.nodes[0].inputs[0]).dtype, DType::kFloat16);
  EXPECT_EQ(g.value(g.nodes[1].outputs[0]).dtype, DType::kFloat16);
  EXPECT_EQ(g.nodes[1].attr_int("output_dtype", 0), static_cast<int64_t>(DType::kFloat16));
  const std::vector<Tensor> feed = {edge_halves({2, 3, 5, 4}, 0.0371f), edge_halves({2, 3, 5, 4}, 0.013f)};
  auto want = evaluate_graph(before, feed);
  auto got = evaluate_graph(g, feed);
  ASSERT_TRUE(want.is_ok() && got.is_ok());
  ASSERT_EQ((*want)[0].numel(), (*got)[0].numel());
  for (int64_t i = 0; i < (*want)[0].numel(); ++i) ASSERT_EQ((*want)[0].get(i), (*got)[0].get(i)) << i;
  EXPECT_TRUE(testing_util::same_outputs(before, g, 42, 0, 0));
}

TEST(FoldQuantizeCasts, MustNotFireWhereTheCastHasOtherReadersOrIsAnOutput) {
  AOTC_REQUIRE_OPS("QuantizeLinear", "DequantizeLinear", "Cast", "Relu");
  // The widened value is also read by a Relu; the dequantized value also by a Relu; a narrowing
  // Cast whose output is a graph output; Casts to two different 16-bit types.
  const char* texts[] = {
      R"(
    input %x : float16[4x6]
    const %s : float[scalar] = [0.05]
    %xf : float[?] = Cast(%x) {to=1}  # widen
    %q : int8[?] = QuantizeLinear(%xf, %s)  # quant
    %u : float[?] = Relu(%xf)  # other
    output %q
    output %u
  )",
      R"(
    input %x : int8[4x6]
    const %s : float[scalar] = [0.05]
    %d : float[?] = DequantizeLinear(%x, %s)  # deq
    %h : float16[?] = Cast(%d) {to=10}  # narrow
    %u : float[?] = Relu(%d)  # other
    output %h
    output %u
  )",
      R"(
    input %x : int8[4x6]
    const %s : float[scalar] = [0.05]
    %d : float[?] = DequantizeLinear(%x, %s)  # deq
    %h : float16[?] = Cast(%d) {to=10}  # narrow
    output %h
  )",
      R"(
    input %x : int8[4x6]
    const %s : float[scalar] = [0.05]
    %d : float[?] = DequantizeLinear(%x, %s)  # deq
    %h : float16[?] = Cast(%d) {to=10}  # narrow
    %b : bfloat16[?] = Cast(%d) {to=16}  # narrow_bf16
    %hr : float16[?] = Relu(%h)  # r1
    %br : bfloat16[?] = Relu(%b)  # r2
    output %hr
    output %br
  )"};
  for (const char* text : texts) {
    SCOPED_TRACE(text);
    AOTC_BUILD(g, text);
    const std::string ops = op_list(g);
    auto changed = fold_quantize_casts(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_FALSE(*changed);
    EXPECT_EQ(op_list(g), ops);
  }
}

// In the pipeline: ResNet's int8 edges. A stem-like fp16 region (the input converted by the
// precision pass), a quantized 1x1 convolution, and a float tail; the whole --precision int8
// pipeline's output is unchanged bit for bit with the pass disabled, and it has fewer Casts.
TEST(FoldQuantizeCasts, RunsInTheInt8PipelineWithoutChangingTheOutput) {
  AOTC_REQUIRE_OPS("QuantizeLinear", "DequantizeLinear", "aotc.QLinearConv", "Cast");
  AOTC_BUILD(g, R"(
    input %x : float16[1x16x6x6]
    const %s : float[scalar] = [0.02]
    const %w : int8[16x16x1x1] = random(1, -127, 128)
    const %ws : float[16] = random(2, 0.001, 0.01)
    %xf : float[?] = Cast(%x) {to=1}  # widen
    %q : int8[?] = QuantizeLinear(%xf, %s)  # quant
    %c : int8[?] = aotc.QLinearConv(%q, %s, _, %w, %ws, _, %s)  # conv
    %d : float[?] = DequantizeLinear(%c, %s)  # deq
    %h : float16[?] = Cast(%d) {to=10}  # narrow
    %y : float16[?] = Relu(%h)  # relu
    output %y
  )");
  Graph folded = g;
  auto c = fold_quantize_casts(folded);
  ASSERT_TRUE(c.is_ok() && *c);
  EXPECT_EQ(op_list(folded), "QuantizeLinear,aotc.QLinearConv,DequantizeLinear,Relu");
  EXPECT_TRUE(testing_util::same_outputs(g, folded, 7, 0, 0));
  PipelineOptions with, without;
  without.disabled = {"fold_quantize_casts"};
  Graph a = g, b = g;
  auto ra = run_pipeline(a, with);
  auto rb = run_pipeline(b, without);
  ASSERT_TRUE(ra.is_ok() && rb.is_ok());
  auto count = [](const Graph& gr) {
    int n = 0;
    for (const Node& node : gr.nodes) n += node.op_type == "Cast" ? 1 : 0;
    return n;
  };
  EXPECT_LT(count(a), count(b));
  EXPECT_TRUE(testing_util::same_outputs(a, b, 11, 0, 0));
}

}  // namespace
}  // namespace aotc
