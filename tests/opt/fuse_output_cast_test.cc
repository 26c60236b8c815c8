// fuse_output_cast: a 16-bit Gemm whose result is only converted to float32 (through views)
// writes float32 itself, into the Cast's output value; with pad_gemm_n after it, the padded B is
// read with columns = N (no Slice). Same outputs (to fp16 rounding) and where it must not fire.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// GPT-2's LM head after matmul_to_gemm and the precision pass: rows -> Gemm -> unflatten -> Cast.
std::string lm_head(const std::string& b_shape = "16x1029", const std::string& gemm_attrs = "",
                    const std::string& extra = "", const std::string& cast_to = "1") {
  return R"(
    input %x : float16[2x256x16]
    const %rs : int64[2] = [512,16]
    const %b : float16[)" + b_shape + R"(] = random(1)
    const %us : int64[3] = [2,256,1029]
    %rows : float16[?] = Reshape(%x, %rs)
    %g : float16[?] = Gemm(%rows, %b))" + gemm_attrs + R"(
    %u : float16[?] = Reshape(%g, %us)
    %id : float16[?] = Identity(%u)
    %y : float[?] = Cast(%id) {to=)" + cast_to + R"(}
    output %y
  )" + extra;
}

TEST(FuseOutputCast, GemmWritesTheFloatOutputThenPadGemmNReadsPaddedColumns) {
  AOTC_REQUIRE_OPS("Gemm", "Cast", "aotc.FusedGemm");
  for (const bool trans_b : {false, true}) {
    AOTC_BUILD(g, trans_b ? lm_head("1029x16", " {transB=1}") : lm_head());
    Graph before = g;
    auto changed = fuse_output_cast(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(op_list(g), "Reshape,aotc.FusedGemm");
    const Node& f = g.nodes[1];
    EXPECT_EQ(f.outputs[0], g.find_value("y"));
    EXPECT_EQ(f.attr_int("output_dtype", 0), 1);
    EXPECT_EQ(f.attr_ints("output_shape"), (std::vector<int64_t>{2, 256, 1029}));
    EXPECT_EQ(g.value(f.outputs[0]).dtype, DType::kFloat32);
    EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3));
    // pad_gemm_n: B padded to 1032 columns, columns = 1029, no Slice.
    auto padded = pad_gemm_n(g);
    ASSERT_TRUE(padded.is_ok()) << padded.status().message();
    EXPECT_TRUE(*padded);
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(op_list(g), "Reshape,aotc.FusedGemm");
    EXPECT_EQ(g.nodes[1].attr_int("columns", 0), 1029);
    EXPECT_EQ(g.value(g.nodes[1].inputs[1]).shape, trans_b ? (Shape{1032, 16}) : (Shape{16, 1032}));
    EXPECT_EQ(g.value(g.find_value("y")).shape, (Shape{2, 256, 1029}));
    EXPECT_TRUE(testing_util::same_outputs(before, g, 6, 2.5e-3, 1e-3)) << "trans_b " << trans_b;
  }
}

TEST(FuseOutputCast, MustNotFire) {
  AOTC_REQUIRE_OPS("Gemm", "Cast", "aotc.FusedGemm");
  std::string with_c = lm_head();
  with_c.replace(with_c.find("Gemm(%rows, %b)"), std::string("Gemm(%rows, %b)").size(), "Gemm(%rows, %b, %c)");
  with_c.replace(with_c.find("    %rows"), 0, "    const %c : float16[1029] = random(3)\n");
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"a bias C (its dtype would have to be D's)", with_c},
      {"the 16-bit result is also read elsewhere", lm_head("16x1029", "", "%r : float16[?] = Relu(%u)\n    output %r\n")},
      {"the view is a graph output too", lm_head("16x1029", "", "output %id\n")},
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
