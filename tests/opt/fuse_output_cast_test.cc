// fuse_output_cast: a 16-bit Gemm whose result is only converted to float32 (through views)
// writes float32 itself, into the Cast's output value, where N is a multiple of 8. Same outputs
// (to fp16 rounding) and where it must not fire (an odd N keeps pad_gemm_n's Slice + Cast copy).
// A constant bias row (a classifier's FC) comes along, converted to float32.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// GPT-2's LM head after matmul_to_gemm and the precision pass: rows -> Gemm -> unflatten -> Cast.
std::string lm_head(const std::string& b_shape = "16x1024", const std::string& gemm_attrs = "",
                    const std::string& extra = "", const std::string& cast_to = "1") {
  return R"(
    input %x : float16[2x256x16]
    const %rs : int64[2] = [512,16]
    const %b : float16[)" + b_shape + R"(] = random(1)
    const %us : int64[3] = [2,256,N]
    %rows : float16[?] = Reshape(%x, %rs)
    %g : float16[?] = Gemm(%rows, %b))" + gemm_attrs + R"(
    %u : float16[?] = Reshape(%g, %us)
    %id : float16[?] = Identity(%u)
    %y : float[?] = Cast(%id) {to=)" + cast_to + R"(}
    output %y
  )" + extra;
}

std::string with_n(std::string text, const std::string& n) {
  text.replace(text.find("[2,256,N]"), 9, "[2,256," + n + "]");
  return text;
}

TEST(FuseOutputCast, GemmWritesTheFloatOutput) {
  AOTC_REQUIRE_OPS("Gemm", "Cast", "aotc.FusedGemm");
  for (const bool trans_b : {false, true}) {
    AOTC_BUILD(g, with_n(trans_b ? lm_head("1024x16", " {transB=1}") : lm_head(), "1024"));
    Graph before = g;
    auto changed = fuse_output_cast(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(op_list(g), "Reshape,aotc.FusedGemm");
    const Node& f = g.nodes[1];
    EXPECT_EQ(f.outputs[0], g.find_value("y"));
    EXPECT_EQ(f.attr_int("output_dtype", 0), 1);
    EXPECT_EQ(f.attr_ints("output_shape"), (std::vector<int64_t>{2, 256, 1024}));
    EXPECT_EQ(g.value(f.outputs[0]).dtype, DType::kFloat32);
    EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3)) << "trans_b " << trans_b;
  }
}

// The lm_head graph with C given to the Gemm: `decl` declares %c (with its shape), `attrs` the
// Gemm's attributes.
std::string with_c(const std::string& decl, const std::string& attrs = "") {
  std::string t = with_n(lm_head(), "1024");
  const std::string call = "Gemm(%rows, %b)";
  t.replace(t.find(call), call.size(), "Gemm(%rows, %b, %c)" + attrs);
  t.replace(t.find("    %rows"), 0, "    " + decl + "\n");
  return t;
}

// ResNet's FC: Gemm(features, W^T, bias) -> Cast to float: the bias row becomes a float32
// constant read by cuBLASLt's bias epilogue; one node, same outputs.
TEST(FuseOutputCast, ConstantBiasRowComesAlongInFloat) {
  AOTC_REQUIRE_OPS("Gemm", "Cast", "aotc.FusedGemm");
  for (const std::string shape : {"1024", "1x1024"}) {
    AOTC_BUILD(g, with_c("const %c : float16[" + shape + "] = random(3)"));
    Graph before = g;
    auto changed = fuse_output_cast(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed) << shape;
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(op_list(g), "Reshape,aotc.FusedGemm");
    const Node& f = g.nodes[1];
    ASSERT_EQ(f.inputs.size(), 3u);
    const Value& bias = g.value(f.inputs[2]);
    EXPECT_EQ(bias.dtype, DType::kFloat32);
    ASSERT_TRUE(bias.is_constant());
    // The widened bias holds the 16-bit values exactly.
    const Tensor& narrow = *before.value(before.find_value("c")).constant;
    for (int64_t i = 0; i < narrow.numel(); ++i) ASSERT_EQ(bias.constant->get(i), narrow.get(i)) << i;
    for (const Node& n : g.nodes)
      for (const ValueId in : n.inputs) EXPECT_NE(in, g.find_value("c")) << "the 16-bit bias is read no more";
    EXPECT_EQ(g.value(f.outputs[0]).dtype, DType::kFloat32);
    EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3)) << shape;
  }
}

TEST(FuseOutputCast, MustNotFire) {
  AOTC_REQUIRE_OPS("Gemm", "Cast", "aotc.FusedGemm");
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"a full C matrix (its dtype would have to be D's)", with_c("const %c : float16[512x1024] = random(3)")},
      {"a bias row added with beta 0.5", with_c("const %c : float16[1024] = random(3)", " {beta=0.5}")},
      {"a bias row that is a graph input, not a constant", with_c("input %c : float16[1024]")},
      {"a column C [512x1]", with_c("const %c : float16[512x1] = random(3)")},
      {"the 16-bit result is also read elsewhere",
       with_n(lm_head("16x1024", "", "%r : float16[?] = Relu(%u)\n    output %r\n"), "1024")},
      {"the view is a graph output too", with_n(lm_head("16x1024", "", "output %id\n"), "1024")},
      {"N = 1029 (unaligned float32 rows: measured slower than the padded GEMM + converting copy)",
       with_n(lm_head("16x1029"), "1029")},
      {"a Cast to float16 (not a widening to fp32)", R"(
    input %x : float[512x16]
    const %b : float[16x64] = random(1)
    %g : float[?] = Gemm(%x, %b)
    %y : float16[?] = Cast(%g) {to=10}
    output %y
  )"},
      {"an fp32 Gemm: nothing to widen", R"(
    input %x : float[512x16]
    const %b : float[16x64] = random(1)
    %g : float[?] = Gemm(%x, %b)
    %y : float[?] = Cast(%g) {to=1}
    output %y
  )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    auto changed = fuse_output_cast(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first << ": " << op_list(g);
  }
}

}  // namespace
}  // namespace aotc
