// merge_qkv_projections: the Q/K/V projections of one Attention (Gemms of one input, through
// reshape views) become one Gemm with the weights side by side and a Split; same outputs, the
// Split read in place afterwards (fuse_attention_operands), and where it must not fire.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// BERT after fuse_attention: h [2, 8, 32] seen as rows by each projection, q/k/v [2, 8, 32]
// views, 2 heads of 16. ACT: attributes of the value projection.
std::string bert_attention(const std::string& v_attrs = "{beta=1.0}", const std::string& extra = "",
                           const std::string& v_input = "%hr3") {
  return R"(
    input %h : float16[2x8x32]
    const %rs : int64[2] = [16,32]
    const %us : int64[3] = [2,8,32]
    const %wq : float16[32x32] = random(1)
    const %wk : float16[32x32] = random(2)
    const %wv : float16[32x32] = random(3)
    const %bq : float16[32] = random(4)
    const %bk : float16[32] = random(5)
    const %bv : float16[32] = random(6)
    %hr1 : float16[?] = Reshape(%h, %rs)
    %hr2 : float16[?] = Reshape(%h, %rs)
    %hr3 : float16[?] = Reshape(%h, %rs)
    %hr3x : float16[?] = Relu(%hr3)
    %q2 : float16[?] = aotc.FusedGemm(%hr1, %wq, %bq, _) {beta=1.0}
    %k2 : float16[?] = aotc.FusedGemm(%hr2, %wk, %bk, _) {beta=1.0}
    %v2 : float16[?] = aotc.FusedGemm()" + v_input + R"(, %wv, %bv, _) )" + v_attrs + R"(
    %q : float16[?] = Reshape(%q2, %us)
    %k : float16[?] = Reshape(%k2, %us)
    %v : float16[?] = Reshape(%v2, %us)
    %y : float16[?] = Attention(%q, %k, %v) {q_num_heads=2, kv_num_heads=2, scale=0.25}
    output %y
  )" + extra;
}

TEST(MergeQkvProjections, ThreeProjectionsBecomeOneGemmReadInPlace) {
  AOTC_REQUIRE_OPS("Attention", "aotc.FusedGemm", "Split", "aotc.StridedAttention");
  AOTC_BUILD(g, bert_attention());
  g.target = target_from_archs({"sm_90"});
  Graph before = g;
  auto changed = merge_qkv_projections(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Reshape,aotc.FusedGemm,Split,Reshape,Reshape,Reshape,Attention");
  EXPECT_EQ(g.value(g.nodes[1].inputs[1]).shape, (Shape{32, 96}));
  EXPECT_EQ(g.value(g.nodes[1].inputs[2]).shape, (Shape{96}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 2.5e-3, 1e-3));
  // The Split's parts are then read in place by the attention.
  auto operands = fuse_attention_operands(g);
  ASSERT_TRUE(operands.is_ok()) << operands.status().message();
  EXPECT_TRUE(*operands);
  EXPECT_EQ(op_list(g), "Reshape,aotc.FusedGemm,aotc.StridedAttention");
  EXPECT_EQ(g.nodes[2].attr_ints("k_view"), (std::vector<int64_t>{32, 768, 16, 96}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 4, 2.5e-3, 1e-3));
}

// fp32 merges too: its attention runs on the fused kernel (FFMA configuration), which reads the
// Split's parts in place.
TEST(MergeQkvProjections, Fp32ProjectionsBecomeOneGemm) {
  AOTC_REQUIRE_OPS("Attention", "aotc.FusedGemm", "Split");
  std::string fp32 = bert_attention();
  for (size_t at = fp32.find("float16"); at != std::string::npos; at = fp32.find("float16", at)) fp32.replace(at, 7, "float");
  AOTC_BUILD(g, fp32);
  g.target = target_from_archs({"sm_90"});
  Graph before = g;
  auto changed = merge_qkv_projections(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Reshape,aotc.FusedGemm,Split,Reshape,Reshape,Reshape,Attention");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3));
  // Without Sm80 (no fused kernel: the row kernel reads its own buffers, the Split would run) it
  // must not fire.
  AOTC_BUILD(old, fp32);
  old.target = target_from_archs({"sm_75"});
  auto unchanged = merge_qkv_projections(old);
  ASSERT_TRUE(unchanged.is_ok());
  EXPECT_FALSE(*unchanged) << op_list(old);
}

TEST(MergeQkvProjections, MustNotFire) {
  AOTC_REQUIRE_OPS("Attention", "aotc.FusedGemm", "Split", "Relu");
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"a projection with an activation", bert_attention("{beta=1.0, activation=\"Relu\"}")},
      {"a projection also read elsewhere", bert_attention("{beta=1.0}", "    %z : float16[?] = Relu(%k2)\n    output %z\n")},
      {"projections of different inputs (V of Relu(h))", bert_attention("{beta=1.0}", "", "%hr3x")},
  };
  std::vector<std::pair<const char*, std::string>> all = cases;
  for (const auto& c : all) {
    AOTC_BUILD(g, c.second);
    g.target = target_from_archs({"sm_90"});
    auto changed = merge_qkv_projections(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first << ": " << op_list(g);
  }
}

// The dynamo exporter's form: each projection's [16, 32] output viewed as heads by Reshape +
// Transpose(0,2,1,3), a boolean mask. fuse_attention_operands reads the three outputs in place;
// merge_strided_qkv_projections then makes them one [16, 96] GEMM and moves the views.
std::string dynamo_attention(const std::string& extra = "") {
  return R"(
    input %h : float16[2x8x32]
    input %mask : bool[2x1x8x8]
    const %rs : int64[2] = [16,32]
    const %s4 : int64[4] = [2,8,2,16]
    const %s3 : int64[3] = [2,8,32]
    const %wq : float16[32x32] = random(1)
    const %wk : float16[32x32] = random(2)
    const %wv : float16[32x32] = random(3)
    const %bq : float16[32] = random(4)
    const %bk : float16[32] = random(5)
    const %bv : float16[32] = random(6)
    %hr1 : float16[?] = Reshape(%h, %rs)
    %hr2 : float16[?] = Reshape(%h, %rs)
    %hr3 : float16[?] = Reshape(%h, %rs)
    %q2 : float16[?] = aotc.FusedGemm(%hr1, %wq, %bq, _) {beta=1.0}
    %k2 : float16[?] = aotc.FusedGemm(%hr2, %wk, %bk, _) {beta=1.0}
    %v2 : float16[?] = aotc.FusedGemm(%hr3, %wv, %bv, _) {beta=1.0}
    %q4 : float16[?] = Reshape(%q2, %s4)
    %k4 : float16[?] = Reshape(%k2, %s4)
    %v4 : float16[?] = Reshape(%v2, %s4)
    %q : float16[?] = Transpose(%q4) {perm=[0,2,1,3]}
    %k : float16[?] = Transpose(%k4) {perm=[0,2,1,3]}
    %v : float16[?] = Transpose(%v4) {perm=[0,2,1,3]}
    %o : float16[?] = Attention(%q, %k, %v, %mask) {scale=0.25}
    %ot : float16[?] = Transpose(%o) {perm=[0,2,1,3]}
    %y : float16[?] = Reshape(%ot, %s3)
    output %y
  )" + extra;
}

TEST(MergeStridedQkvProjections, ProjectionsReadInPlaceBecomeOneGemm) {
  AOTC_REQUIRE_OPS("Attention", "aotc.FusedGemm", "Transpose", "Where", "aotc.StridedAttention");
  AOTC_BUILD(g, dynamo_attention());
  g.target = target_from_archs({"sm_90"});
  Graph before = g;
  EXPECT_FALSE(*merge_qkv_projections(g));  // the Attention node alone would not run fused yet
  auto operands = fuse_attention_operands(g);
  ASSERT_TRUE(operands.is_ok()) << operands.status().message();
  ASSERT_TRUE(*operands);
  auto changed = merge_strided_qkv_projections(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  int gemms = 0;
  const Node* a = nullptr;
  for (const Node& n : g.nodes) {
    gemms += n.op_type == "FusedGemm";
    if (n.op_type == "StridedAttention") a = &n;
  }
  EXPECT_EQ(gemms, 1) << op_list(g);
  ASSERT_NE(a, nullptr) << op_list(g);
  EXPECT_EQ(g.value(a->inputs[0]).shape, (Shape{16, 96}));
  EXPECT_EQ(a->inputs[1], a->inputs[0]);
  EXPECT_EQ(a->attr_ints("q_view"), (std::vector<int64_t>{0, 768, 16, 96}));
  EXPECT_EQ(a->attr_ints("k_view"), (std::vector<int64_t>{32, 768, 16, 96}));
  EXPECT_EQ(a->attr_ints("v_view"), (std::vector<int64_t>{64, 768, 16, 96}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 2.5e-3, 1e-3));
}

TEST(MergeStridedQkvProjections, MustNotFire) {
  AOTC_REQUIRE_OPS("Attention", "aotc.FusedGemm", "Transpose", "Relu", "aotc.StridedAttention");
  // A projection also read elsewhere: its output stays, so nothing is merged.
  AOTC_BUILD(g, dynamo_attention("    %z : float16[?] = Relu(%k2)\n    output %z\n"));
  g.target = target_from_archs({"sm_90"});
  ASSERT_TRUE(fuse_attention_operands(g).is_ok());
  auto changed = merge_strided_qkv_projections(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_FALSE(*changed) << op_list(g);
}

}  // namespace
}  // namespace aotc
