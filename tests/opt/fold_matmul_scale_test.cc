// fold_matmul_scale: MatMul [-> bias Add] -> Mul by a per-column constant, and Gemm -> Mul, become
// one projection with the scale in its weights and bias. Checked against hand-computed weights,
// against the unfolded graph's reference on random inputs, and where it must not fire (a scale
// that varies along rows, a product read twice or returned, weights or scale not constant, a
// bias that is not per column).
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

Expected<bool> fold_and_verify(Graph& g) {
  Expected<bool> changed = fold_matmul_scale(g);
  if (changed && *changed) {
    Status s = verify(g);
    if (!s) return s;
  }
  return changed;
}

// ConvNeXt's block tail as torch.onnx.export writes it: MatMul, bias Add, layer-scale Mul.
TEST(FoldMatmulScale, LayerScaleAfterMatMulAndBias) {
  AOTC_BUILD(g, R"(
    input %x : float[2x5x6]
    const %w : float[6x4] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    const %b : float[4] = [1, -1, 2, -2]
    const %s : float[4] = [0.5, 2, -1, 0.25]
    %m : float[?] = MatMul(%x, %w)  # fc2
    %a : float[?] = Add(%m, %b)  # bias
    %y : float[?] = Mul(%a, %s)  # layer_scale
    output %y
  )");
  Graph before = g;
  auto changed = fold_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "MatMul,Add");
  const Tensor& w = *g.value(g.nodes[0].inputs[1]).constant;
  EXPECT_EQ(w.shape(), (Shape{6, 4}));
  EXPECT_FLOAT_EQ(w.get(0), 0.5f);    // w[0,0] * s[0]
  EXPECT_FLOAT_EQ(w.get(1), 4.0f);    // w[0,1] * s[1]
  EXPECT_FLOAT_EQ(w.get(6), -7.0f);   // w[1,2] * s[2]
  EXPECT_FLOAT_EQ(w.get(23), 6.0f);   // w[5,3] * s[3]
  const Node& add = g.nodes[1];
  const ValueId nb = add.inputs[0] == g.nodes[0].outputs[0] ? add.inputs[1] : add.inputs[0];
  const Tensor& b = *g.value(nb).constant;
  EXPECT_FLOAT_EQ(b.get(0), 0.5f);
  EXPECT_FLOAT_EQ(b.get(1), -2.0f);
  EXPECT_FLOAT_EQ(b.get(2), -2.0f);
  EXPECT_FLOAT_EQ(b.get(3), -0.5f);
  EXPECT_EQ(add.outputs[0], g.outputs[0]);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3));
}

// torchvision's CNBlock: the projection runs on [N, H, W, C], the block permutes back to NCHW and
// then multiplies by its layer scale [C, 1, 1]; a scale along W after the same permutation
// ([1, 1, 5]) is not per column and stays.
TEST(FoldMatmulScale, LayerScaleAfterThePermutationBackToNchw) {
  AOTC_BUILD(g, R"(
    input %x : float[2x4x5x8]
    input %r : float[2x6x4x5]
    const %w : float[8x6] = random(1)
    const %b : float[6] = random(2)
    const %s : float[6x1x1] = random(3, 0.5, 2)
    const %sw : float[1x1x5] = random(4, 0.5, 2)
    %m : float[?] = MatMul(%x, %w)  # pwconv2
    %a : float[?] = Add(%m, %b)  # bias
    %t : float[?] = Transpose(%a) {perm=[0,3,1,2]}  # to_nchw
    %y : float[?] = Mul(%s, %t)  # layer_scale
    %z : float[?] = Add(%y, %r)  # residual
    %m2 : float[?] = MatMul(%x, %w)  # other
    %t2 : float[?] = Transpose(%m2) {perm=[0,3,1,2]}  # other_nchw
    %y2 : float[?] = Mul(%t2, %sw)  # along_w
    output %z
    output %y2
  )");
  Graph before = g;
  auto changed = fold_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "MatMul,Add,Transpose,Add,MatMul,Transpose,Mul");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 9));
}

// Gemm with transB and a row bias [1, N]; the scale as [1, N] on the Mul's left; and a MatMul
// without a bias, with a scalar scale.
TEST(FoldMatmulScale, GemmTransposedWeightsAndScalarScale) {
  AOTC_BUILD(g, R"(
    input %x : float[3x8]
    input %z : float[4x8]
    const %w : float[5x8] = random(1)
    const %c : float[1x5] = random(2)
    const %s : float[1x5] = random(3, 0.5, 2)
    const %w2 : float[8x5] = random(4)
    const %t : float[scalar] = [0.125]
    %g1 : float[?] = Gemm(%x, %w, %c) {transB=1, alpha=0.5, beta=2.0}  # proj
    %y : float[?] = Mul(%s, %g1)  # scale
    %m : float[?] = MatMul(%z, %w2)  # plain
    %y2 : float[?] = Mul(%m, %t)  # scalar_scale
    output %y
    output %y2
  )");
  Graph before = g;
  auto changed = fold_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Gemm,MatMul");
  EXPECT_EQ(g.value(g.nodes[0].inputs[2]).shape, (Shape{1, 5}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 5));
}

// ConvNeXt's initial layer scale (1e-6) times weights of ~0.1 is below fp16's smallest normal:
// with fp16 storage the Mul stays (the unfolded graph keeps those bits); in fp32 it folds. A
// trained-size scale (0.5-2) folds in fp16 too: its products round about as well as the weights.
TEST(FoldMatmulScale, TinyScaleStaysWithFp16Storage) {
  AOTC_BUILD(gt, R"(
    input %x : float[2x8]
    const %w : float[8x4] = random(1, -0.2, 0.2)
    const %s : float[4] = random(2, 0.5, 2)
    %m : float[?] = MatMul(%x, %w)  # fc
    %y : float[?] = Mul(%m, %s)  # layer_scale
    output %y
  )");
  gt.target.precision.dtype = DType::kFloat16;
  auto trained = fold_and_verify(gt);
  ASSERT_TRUE(trained.is_ok());
  EXPECT_TRUE(*trained);
  EXPECT_EQ(op_list(gt), "MatMul");
  const char* text = R"(
    input %x : float[2x8]
    const %w : float[8x4] = random(1, 0.05, 0.2)
    const %s : float[4] = [1e-6, 1e-6, 1e-6, 1e-6]
    %m : float[?] = MatMul(%x, %w)  # fc
    %y : float[?] = Mul(%m, %s)  # layer_scale
    output %y
  )";
  AOTC_BUILD(g16, text);
  g16.target.precision.dtype = DType::kFloat16;
  auto changed16 = fold_and_verify(g16);
  ASSERT_TRUE(changed16.is_ok());
  EXPECT_FALSE(*changed16);
  EXPECT_EQ(op_list(g16), "MatMul,Mul");
  AOTC_BUILD(g32, text);
  auto changed32 = fold_and_verify(g32);
  ASSERT_TRUE(changed32.is_ok());
  EXPECT_TRUE(*changed32);
  EXPECT_EQ(op_list(g32), "MatMul");
}

TEST(FoldMatmulScale, MustNotFire) {
  // A scale along rows ([3, 1]), a product also returned, a product read twice, weights that are
  // an input, a scale that is an input, a Gemm bias along columns ([3, 1]).
  AOTC_BUILD(g, R"(
    input %x : float[3x8]
    input %wi : float[8x4]
    input %si : float[4]
    const %w : float[8x4] = random(1)
    const %rows : float[3x1] = random(2)
    const %s : float[4] = random(3)
    const %cc : float[3x1] = random(4)
    %m1 : float[?] = MatMul(%x, %w)  # a
    %y1 : float[?] = Mul(%m1, %rows)  # by_rows
    %m2 : float[?] = MatMul(%x, %w)  # b
    %y2 : float[?] = Mul(%m2, %s)  # also_returned
    %m3 : float[?] = MatMul(%x, %w)  # c
    %y3 : float[?] = Mul(%m3, %s)  # read_twice
    %z3 : float[?] = Relu(%m3)  # other_reader
    %m4 : float[?] = MatMul(%x, %wi)  # d
    %y4 : float[?] = Mul(%m4, %s)  # weights_input
    %m5 : float[?] = MatMul(%x, %w)  # e
    %y5 : float[?] = Mul(%m5, %si)  # scale_input
    %g6 : float[?] = Gemm(%x, %w, %cc)  # f
    %y6 : float[?] = Mul(%g6, %s)  # column_bias
    output %y1
    output %m2
    output %y2
    output %y3
    output %z3
    output %y4
    output %y5
    output %y6
  )");
  const std::string ops = op_list(g);
  auto changed = fold_and_verify(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(op_list(g), ops);
}

}  // namespace
}  // namespace aotc
