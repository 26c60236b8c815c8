// fuse_rms_norm: the written-out RMS normalisation (LLaMA's as TorchScript exports it, and the
// variants other exporters and models write) becomes one RMSNormalization; the CPU reference gives
// the same outputs before and after; and where it must not fire.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// LlamaRMSNorm as the TorchScript exporter writes it at opset 17 (the fp32 model): x * (1 /
// sqrt(mean(x^2) + eps)) * weight.
const char* kLlamaNorm = R"(
    input %x : float[2x5x16]
    const %two : float[scalar] = [2.0]
    const %eps : float[scalar] = [1e-6]
    const %one : float[scalar] = [1.0]
    const %w : float[16] = [0.5, -1.0, 1.5, 2.0, 0.25, 1.0, -0.75, 3.0, 1.0, 1.0, 0.5, 2.5, -2.0, 1.25, 0.1, 1.0]
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1], keepdims=1}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %h : float[?] = Mul(%x, %r)
    %y : float[?] = Mul(%w, %h)  # weight
    output %y
  )";

TEST(FuseRmsNorm, LlamaTorchScriptFormBecomesOneNode) {
  AOTC_REQUIRE_OPS("RMSNormalization", "Pow", "ReduceMean", "Sqrt");
  AOTC_BUILD(g, kLlamaNorm);
  Graph before = g;
  auto changed = fuse_rms_norm(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  ASSERT_EQ(op_list(g), "RMSNormalization");
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<ValueId>{g.find_value("x"), g.find_value("w")}));
  EXPECT_EQ(n.outputs[0], g.find_value("y"));
  EXPECT_EQ(n.attr_int("axis", 99), 2);
  EXPECT_EQ(n.attr_float("epsilon", 0.0f), 1e-6f);
  EXPECT_EQ(n.name, "weight");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 1e-5, 1e-4));
}

// The other spellings: Mul(x, x) for the square, Reciprocal or Div(x, s) for the division, the
// weight on either side or none, axes as an input (opset 18), two trailing axes.
TEST(FuseRmsNorm, VariantsBecomeOneNode) {
  AOTC_REQUIRE_OPS("RMSNormalization", "Pow", "ReduceMean", "Sqrt", "Reciprocal");
  struct Case {
    const char* what;
    std::string body;
    int64_t axis;
    bool weight;
  };
  const std::vector<Case> cases = {
      {"Mul(x, x), Reciprocal, weight on the right", R"(
    %p : float[?] = Mul(%x, %x)
    %m : float[?] = ReduceMean(%p) {axes=[2]}
    %a : float[?] = Add(%eps, %m)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Reciprocal(%s)
    %h : float[?] = Mul(%r, %x)
    %y : float[?] = Mul(%h, %w)
    output %y
  )", 2, true},
      {"Div(x, s), no weight", R"(
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1], keepdims=1}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %y : float[?] = Div(%x, %s)
    output %y
  )", 2, false},
      {"two trailing axes, weight [5x16]", R"(
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1, 1]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %h : float[?] = Mul(%x, %r)
    %y : float[?] = Mul(%h, %w2)
    output %y
  )", 1, true},
  };
  for (const Case& c : cases) {
    AOTC_BUILD(g, std::string(R"(
    input %x : float[2x5x16]
    const %two : float[scalar] = [2.0]
    const %eps : float[scalar] = [1e-5]
    const %one : float[scalar] = [1.0]
    const %w : float[1x16] = [0.5, -1.0, 1.5, 2.0, 0.25, 1.0, -0.75, 3.0, 1.0, 1.0, 0.5, 2.5, -2.0, 1.25, 0.1, 1.0]
    input %w2 : float[5x16]
    )") + c.body);
    Graph before = g;
    auto changed = fuse_rms_norm(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed) << c.what;
    ASSERT_TRUE(verify(g).is_ok()) << c.what;
    ASSERT_EQ(op_list(g), "RMSNormalization") << c.what;
    EXPECT_EQ(g.nodes[0].inputs[0], g.find_value("x")) << c.what;
    EXPECT_EQ(g.nodes[0].attr_int("axis", 99), c.axis) << c.what;
    if (!c.weight) {
      // A constant of ones over the normalised dims.
      const Value& ones = g.value(g.nodes[0].inputs[1]);
      ASSERT_TRUE(ones.is_constant()) << c.what;
      EXPECT_EQ(ones.shape, (Shape{16})) << c.what;
      for (int64_t j = 0; j < ones.constant->numel(); ++j) EXPECT_EQ(ones.constant->get(j), 1.0) << c.what;
    }
    EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 1e-5, 1e-4)) << c.what;
  }
}

TEST(FuseRmsNorm, AxesAsAnInputAtOpset18) {
  AOTC_REQUIRE_OPS("RMSNormalization", "Pow", "ReduceMean", "Sqrt");
  AOTC_BUILD(g, R"(graph g (opset 18)
    input %x : float[3x8]
    const %two : float[scalar] = [2.0]
    const %eps : float[scalar] = [1e-6]
    const %one : float[scalar] = [1.0]
    const %axes : int64[1] = [-1]
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p, %axes)
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %y : float[?] = Mul(%x, %r)
    output %y
  )");
  Graph before = g;
  auto changed = fuse_rms_norm(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_EQ(op_list(g), "RMSNormalization");
  EXPECT_EQ(g.nodes[0].attr_int("axis", 99), 1);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 1e-5, 1e-4));
}

// A model exported in 16-bit: the norm upcasts to float and casts back before the weight; the
// fused node reads the 16-bit tensor and writes the weight's type (one rounding instead of two),
// and the Cast to float goes with the pattern when nothing else reads it.
TEST(FuseRmsNorm, SixteenBitExportsCastFormReadsTheHalfTensor) {
  AOTC_REQUIRE_OPS("RMSNormalization", "Pow", "ReduceMean", "Sqrt", "Cast");
  AOTC_BUILD(g, R"(
    input %x0 : float16[4x32]
    const %two : float[scalar] = [2.0]
    const %eps : float[scalar] = [1e-6]
    const %one : float[scalar] = [1.0]
    input %w : float16[32]
    %x : float[?] = Cast(%x0) {to=1}
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %h : float[?] = Mul(%x, %r)
    %hc : float16[?] = Cast(%h) {to=10}
    %y : float16[?] = Mul(%w, %hc)
    output %y
  )");
  Graph before = g;
  auto changed = fuse_rms_norm(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  ASSERT_EQ(op_list(g), "RMSNormalization");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<ValueId>{g.find_value("x0"), g.find_value("w")}));
  EXPECT_EQ(g.value(g.nodes[0].outputs[0]).dtype, DType::kFloat16);
  // One fp16 rounding fewer: within an fp16 ulp or two of the written-out form.
  EXPECT_TRUE(testing_util::same_outputs(before, g, 9, 4e-3, 2e-3));
}

// TorchScript's float32 export of LlamaRMSNorm: `.to(float32)` and `.to(input_dtype)` are Casts to
// the type the tensor already has, around the computation and before the weight; both go.
TEST(FuseRmsNorm, TorchScriptSameTypeCastsGoWithThePattern) {
  AOTC_REQUIRE_OPS("RMSNormalization", "Pow", "ReduceMean", "Sqrt", "Cast");
  AOTC_BUILD(g, R"(
    input %x0 : float[2x3x16]
    const %two : float[scalar] = [2.0]
    const %eps : float[scalar] = [1e-6]
    const %one : float[scalar] = [1.0]
    input %w : float[16]
    %x : float[?] = Cast(%x0) {to=1}
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1], keepdims=1}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %h : float[?] = Mul(%x, %r)
    %hc : float[?] = Cast(%h) {to=1}
    %y : float[?] = Mul(%w, %hc)
    %z : float[?] = Add(%y, %x0)
    output %z
  )");
  Graph before = g;
  auto changed = fuse_rms_norm(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  ASSERT_EQ(op_list(g), "RMSNormalization,Add");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<ValueId>{g.find_value("x0"), g.find_value("w")}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 13, 1e-5, 1e-4));
}

// An upcast before with nothing to cast back after: the norm runs in float on the Cast's output
// (its output type is float), and the Cast stays.
TEST(FuseRmsNorm, UpcastWithoutCastBackKeepsTheCast) {
  AOTC_REQUIRE_OPS("RMSNormalization", "Pow", "ReduceMean", "Sqrt", "Cast");
  AOTC_BUILD(g, R"(
    input %x0 : float16[4x8]
    const %two : float[scalar] = [2.0]
    const %eps : float[scalar] = [1e-6]
    const %one : float[scalar] = [1.0]
    input %w : float[8]
    %x : float[?] = Cast(%x0) {to=1}
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %h : float[?] = Mul(%x, %r)
    %y : float[?] = Mul(%h, %w)
    output %y
  )");
  Graph before = g;
  auto changed = fuse_rms_norm(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  ASSERT_EQ(op_list(g), "Cast,RMSNormalization");
  EXPECT_EQ(g.nodes[1].inputs, (std::vector<ValueId>{g.find_value("x"), g.find_value("w")}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 15, 1e-5, 1e-4));
}

TEST(FuseRmsNorm, MustNotFire) {
  AOTC_REQUIRE_OPS("Pow", "ReduceMean", "Sqrt", "Relu");
  const std::string head = R"(
    input %x : float[2x8]
    input %e : float[scalar]
    const %two : float[scalar] = [2.0]
    const %three : float[scalar] = [3.0]
    const %eps : float[scalar] = [1e-6]
    const %one : float[scalar] = [1.0]
    const %half : float[scalar] = [0.5]
    input %z : float[2x8]
  )";
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"the mean square is also read elsewhere", R"(
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %y : float[?] = Mul(%x, %r)
    output %y
    output %m
  )"},
      {"epsilon is not a constant", R"(
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1]}
    %a : float[?] = Add(%m, %e)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %y : float[?] = Mul(%x, %r)
    output %y
  )"},
      {"the reduction is over a leading axis", R"(
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[0]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %y : float[?] = Mul(%x, %r)
    output %y
  )"},
      {"keepdims 0", R"(
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1], keepdims=0}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %y : float[?] = Mul(%s, %half)
    output %y
  )"},
      {"a cube, not a square", R"(
    %p : float[?] = Pow(%x, %three)
    %m : float[?] = ReduceMean(%p) {axes=[-1]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %y : float[?] = Mul(%x, %r)
    output %y
  )"},
      {"the reciprocal scales another tensor", R"(
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %y : float[?] = Mul(%z, %r)
    output %y
  )"},
      {"a numerator other than 1", R"(
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%half, %s)
    %y : float[?] = Mul(%x, %r)
    output %y
  )"},
      {"the square of another tensor", R"(
    %p : float[?] = Mul(%x, %z)
    %m : float[?] = ReduceMean(%p) {axes=[-1]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %y : float[?] = Mul(%x, %r)
    output %y
  )"},
  };
  for (const auto& [what, body] : cases) {
    AOTC_BUILD(g, head + body);
    Graph before = g;
    auto changed = fuse_rms_norm(g);
    ASSERT_TRUE(changed.is_ok()) << what << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << what;
    EXPECT_EQ(op_list(g), op_list(before)) << what;
  }
}

// A weight Mul that is not the norm's trailing shape (a per-row [2x1] factor) stays a Mul after
// the fused norm: the norm itself still fuses, with ones as its scale.
TEST(FuseRmsNorm, WeightOfAnotherShapeStaysAMul) {
  AOTC_REQUIRE_OPS("RMSNormalization", "Pow", "ReduceMean", "Sqrt");
  AOTC_BUILD(g, R"(
    input %x : float[2x8]
    input %w : float[2x1]
    const %two : float[scalar] = [2.0]
    const %eps : float[scalar] = [1e-6]
    const %one : float[scalar] = [1.0]
    %p : float[?] = Pow(%x, %two)
    %m : float[?] = ReduceMean(%p) {axes=[-1]}
    %a : float[?] = Add(%m, %eps)
    %s : float[?] = Sqrt(%a)
    %r : float[?] = Div(%one, %s)
    %h : float[?] = Mul(%x, %r)
    %y : float[?] = Mul(%h, %w)
    output %y
  )");
  Graph before = g;
  auto changed = fuse_rms_norm(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "RMSNormalization,Mul");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 11, 1e-5, 1e-4));
}

}  // namespace
}  // namespace aotc
