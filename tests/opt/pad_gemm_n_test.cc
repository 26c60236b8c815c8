// pad_gemm_n: a large 16-bit MatMul by a constant with N % 8 != 0 gets its constant padded to a
// multiple of 8 and a Slice of the first N columns; same outputs; and where it must not fire.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

std::string matmul(const std::string& t, const std::string& a, const std::string& b, bool b_const = true) {
  return "    input %a : " + t + "[" + a + "]\n" + (b_const ? "    const %b : " : "    input %b : ") + t + "[" + b + "]" +
         (b_const ? " = random(1)" : "") + "\n    %y : " + t + "[?] = MatMul(%a, %b)  # lm_head\n    output %y\n";
}

TEST(PadGemmN, OddNIsPaddedAndSliced) {
  AOTC_BUILD(g, matmul("float16", "2x256x16", "16x1029"));  // output 2*256*1029*2 bytes > 1 MiB
  Graph before = g;
  auto changed = pad_gemm_n(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "MatMul,Slice");
  EXPECT_EQ(g.value(g.nodes[0].inputs[1]).shape, (Shape{16, 1032}));
  EXPECT_EQ(g.value(g.nodes[0].outputs[0]).shape, (Shape{2, 256, 1032}));
  EXPECT_EQ(g.value(g.nodes[1].outputs[0]).shape, (Shape{2, 256, 1029}));
  EXPECT_EQ(g.nodes[1].outputs[0], g.find_value("y"));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3));
}

TEST(PadGemmN, GemmWithTransposedConstantIsPaddedAndSliced) {
  AOTC_BUILD(g, R"(
    input %a : float16[512x16]
    const %b : float16[1029x16] = random(1)
    %y : float16[?] = Gemm(%a, %b) {transB=1}
    output %y
  )");
  Graph before = g;
  auto changed = pad_gemm_n(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Gemm,Slice");
  EXPECT_EQ(g.value(g.nodes[0].inputs[1]).shape, (Shape{1032, 16}));
  EXPECT_EQ(g.value(g.nodes[1].outputs[0]).shape, (Shape{512, 1029}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3));
}

TEST(PadGemmN, GemmWithCIsLeftAlone) {
  AOTC_BUILD(g, R"(
    input %a : float16[512x16]
    const %b : float16[16x1029] = random(1)
    const %c : float16[1029] = random(2)
    %y : float16[?] = Gemm(%a, %b, %c)
    output %y
  )");
  auto changed = pad_gemm_n(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
}

TEST(PadGemmN, MustNotFire) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"N already a multiple of 8", matmul("float16", "2x256x16", "16x1032")},
      {"fp32 (no 16-bit alignment question)", matmul("float", "2x256x16", "16x1029")},
      {"B not a constant", matmul("float16", "2x256x16", "16x1029", false)},
      {"output under 1 MiB", matmul("float16", "2x8x16", "16x1029")},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    auto changed = pad_gemm_n(g);
    ASSERT_TRUE(changed.is_ok()) << c.first;
    EXPECT_FALSE(*changed) << c.first;
    EXPECT_EQ(op_list(g), "MatMul") << c.first;
  }
}

}  // namespace
}  // namespace aotc
