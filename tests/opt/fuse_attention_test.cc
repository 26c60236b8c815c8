// fuse_attention: the written-out attention (head split Reshape+Transpose, MatMul, scalar scale,
// additive mask, Softmax, MatMul, head merge) -> one Attention node over the 3-D projections where
// the fused kernel runs it; CPU reference before/after on random inputs (the Attention reference is
// independent of the decomposed ops), and the cases where it must not fire. drop_exact_casts too.
#include "ir/ops/attention.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// B=2, S=8, H=2, D=16 (E=32). `T` is the dtype, `KPERM` the K transpose, `EXTRA` lines at the end.
std::string block(const std::string& t = "float16", const std::string& kperm = "[0,2,3,1]",
                  const std::string& scale_line = "%s : T[?] = Mul(%qk, %c)", const std::string& extra = "") {
  std::string text = R"(
    input %q3 : T[2x8x32]
    input %k3 : T[2x8x32]
    input %v3 : T[2x8x32]
    input %m : T[2x1x1x8]
    const %hs : int64[4] = [2,8,2,16]
    const %es : int64[3] = [2,8,32]
    const %c : T[] = [0.25]
    %q4 : T[?] = Reshape(%q3, %hs)
    %q : T[?] = Transpose(%q4) {perm=[0,2,1,3]}
    %k4 : T[?] = Reshape(%k3, %hs)
    %kt : T[?] = Transpose(%k4) {perm=KPERM}
    %v4 : T[?] = Reshape(%v3, %hs)
    %v : T[?] = Transpose(%v4) {perm=[0,2,1,3]}
    %qk : T[?] = MatMul(%q, %kt)
    SCALE
    %a : T[?] = Add(%s, %m)
    %p : T[?] = Softmax(%a) {axis=-1}
    %o : T[?] = MatMul(%p, %v)
    %ot : T[?] = Transpose(%o) {perm=[0,2,1,3]}
    %y : T[?] = Reshape(%ot, %es)
    output %y
  )" + extra;
  auto rep = [&](const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  };
  rep("SCALE", scale_line);
  rep("KPERM", kperm);
  rep("T[", t + "[");
  return text;
}

Expected<bool> run(Graph& g) {
  g.target = target_from_archs({"sm_90"});
  Expected<bool> changed = fuse_attention(g);
  if (changed) {
    Status s = verify(g);
    if (!s) return s;
  }
  return changed;
}

TEST(FuseAttention, WrittenOutAttentionBecomesOneAttentionNode) {
  AOTC_REQUIRE_OPS("Attention", "Softmax", "MatMul", "Transpose", "Reshape");
  // fp32 too: the fused kernel's FFMA (SIMT) configuration, IEEE fp32 products.
  for (const std::string t : {"float16", "float"}) {
    const std::string kperm = "[0,2,3,1]";
    AOTC_BUILD(g, block(t, kperm));
    Graph before = g;
    auto changed = run(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed);
    EXPECT_EQ(op_list(g), "Attention,Reshape,Reshape");
    const Node& a = g.nodes[0];
    EXPECT_EQ(a.inputs[0], g.find_value("q3"));
    EXPECT_EQ(a.inputs[1], g.find_value("k3"));
    EXPECT_EQ(a.inputs[2], g.find_value("v3"));
    EXPECT_EQ(a.inputs[3], g.find_value("m"));
    EXPECT_EQ(a.attr_int("q_num_heads", 0), 2);
    EXPECT_FLOAT_EQ(a.attr_float("scale", 0), 0.25f);
    if (t == "float") {
      EXPECT_TRUE(testing_util::same_outputs(before, g, 7)) << t;
    } else {
      EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 2.5e-3, 1e-3)) << t;
    }
  }
}

// BERT's shapes (head dim 64, an additive mask [B, 1, 1, S], Q/K/V made inside the library) on
// sm_90: the Attention node runs as CUTLASS's sm_90a FMHA, not the Sm80 kernel, and the pass must
// fire for it too (it once asked for the Sm80 template only and left BERT written out: 263
// kernels instead of 131 on the H200, docs/perf_notes.md v62).
TEST(FuseAttention, FiresWhereTheSm90FmhaRunsIt) {
  AOTC_REQUIRE_OPS("Attention", "Softmax", "MatMul", "Transpose", "Reshape", "Abs");
  // block() at B=2, S=128, H=2, D=64, its projections made by Abs nodes.
  std::string text = block();
  auto rep = [&](const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  };
  rep("2x8x32", "2x128x128");
  rep("2x1x1x8", "2x1x1x128");
  rep("[2,8,2,16]", "[2,128,2,64]");
  rep("[2,8,32]", "[2,128,128]");
  for (const std::string x : {"q3", "k3", "v3"}) {
    rep("input %" + x + " :", "input %" + x + "i :");
    rep("const %hs", "%" + x + " : float16[?] = Abs(%" + x + "i)\n    const %hs");
  }
  AOTC_BUILD(g, text);
  auto changed = run(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Abs,Abs,Abs,Attention,Reshape,Reshape");
  const Node* attn = nullptr;
  for (const Node& n : g.nodes)
    if (n.op_type == "Attention") attn = &n;
  ASSERT_NE(attn, nullptr);
  auto low = default_registry().find("Attention")->lower(*attn, g);
  ASSERT_TRUE(low.is_ok()) << low.status().message();
  ASSERT_FALSE(low->steps.empty());
  EXPECT_EQ(low->steps[0].kernel.template_name, "cutlass_fmha_sm90");
}

TEST(FuseAttention, ScalesOnBothOperandsAndDivisionMultiplyIntoOneScale) {
  AOTC_REQUIRE_OPS("Attention", "Softmax", "MatMul", "Transpose", "Reshape", "Div");
  // K transposed in two steps (HF: transpose(1,2) then transpose(-1,-2)), the scale a division.
  std::string text = block("float16", "[0,2,1,3]", "%s : T[?] = Div(%qk, %c)");
  text.replace(text.find("%kt : float16[?] = Transpose(%k4) {perm=[0,2,1,3]}"),
               std::string("%kt : float16[?] = Transpose(%k4) {perm=[0,2,1,3]}").size(),
               "%kh : float16[?] = Transpose(%k4) {perm=[0,2,1,3]}\n    %kt : float16[?] = Transpose(%kh) {perm=[0,1,3,2]}");
  AOTC_BUILD(g, text);
  Graph before = g;
  auto changed = run(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Attention,Reshape,Reshape");
  EXPECT_FLOAT_EQ(g.nodes[0].attr_float("scale", 0), 4.0f);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 11, 2.5e-3, 1e-3));
}

// Second form (nn.MultiheadAttention as TorchScript exports it: heads already [B,H,S,D], scaled Q
// and K^T, no head merge right after): Attention over the 4-D values, writing P V's output.
TEST(FuseAttention, DenseFourDOperandsWithScaledQAndKTranspose) {
  AOTC_REQUIRE_OPS("Attention", "Softmax", "MatMul", "Transpose", "Mul");
  AOTC_BUILD(g, R"(
    input %q : float16[2x3x9x16]
    input %k : float16[2x3x11x16]
    input %v : float16[2x3x11x8]
    const %c : float16[] = [0.5]
    %qs : float16[?] = Mul(%q, %c)
    %kt : float16[?] = Transpose(%k) {perm=[0,1,3,2]}
    %ks : float16[?] = Mul(%kt, %c)
    %s : float16[?] = MatMul(%qs, %ks)
    %p : float16[?] = Softmax(%s) {axis=-1}
    %o : float16[?] = MatMul(%p, %v)
    %y : float16[?] = Relu(%o)
    output %y
  )");
  Graph before = g;
  auto changed = run(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Attention,Relu");
  EXPECT_EQ(g.nodes[0].inputs[0], g.find_value("q"));
  EXPECT_EQ(g.nodes[0].inputs[1], g.find_value("k"));
  EXPECT_EQ(g.nodes[0].outputs[0], g.find_value("o"));
  EXPECT_FLOAT_EQ(g.nodes[0].attr_float("scale", 0), 0.25f);
  EXPECT_FALSE(g.nodes[0].has_attr("q_num_heads"));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3));
}

TEST(FuseAttention, MustNotFire) {
  std::string no_merge = block();
  no_merge = no_merge.substr(0, no_merge.find("    %ot")) + "    output %o\n";
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"scores also a graph output", block("float16", "[0,2,3,1]", "%s : T[?] = Mul(%qk, %c)", "output %qk\n")},
      {"probabilities read twice", block("float16", "[0,2,3,1]", "%s : T[?] = Mul(%qk, %c)",
                                         "%p2 : float16[?] = Relu(%p)\n    output %p2\n")},
      {"no head merge after P V (the fused kernel writes (B, S, H*Dv) rows)", no_merge},
      {"scale not a scalar", block("float16", "[0,2,3,1]", "%s : T[?] = Mul(%qk, %m)")},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    auto changed = run(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first;
    EXPECT_NE(op_list(g).find("Softmax"), std::string::npos) << c.first;
  }
  AOTC_BUILD(g, block());
  g.target = target_from_archs({"sm_75"});  // no Sm80 tensor cores: the row kernel would be slower
  auto changed = fuse_attention(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed) << "sm_75";
}

// ---- fuse_attention_operands ----

// "[0, -inf, ...]" rows of a causal mask of `sq` x `sk` (key j allowed iff j <= i), or with one
// entry broken (`flip` >= 0: that element of the first plane is the other value).
std::string causal_literal(int64_t planes, int64_t sq, int64_t sk, int64_t flip = -1) {
  std::string out = "[";
  for (int64_t e = 0; e < planes * sq * sk; ++e) {
    const int64_t i = (e % (sq * sk)) / sk, j = e % sk;
    const bool allowed = (j <= i) != (e == flip);
    out += std::string(e ? "," : "") + (allowed ? "0.0" : "-inf");
  }
  return out + "]";
}

// GPT-2's attention after fuse_attention: the packed projection [B, S, 3E] split into q/k/v, a
// constant causal mask. B=2, S=8, H=2, D=16 (E=32).
std::string packed_qkv(const std::string& mask, const std::string& extra = "", const std::string& t = "float16") {
  std::string text = R"(
    input %p : T[2x8x96]
    const %sp : int64[3] = [32,32,32]
    const %m : T[1x1x8x8] = MASK
    %q : T[?], %k : T[?], %v : T[?] = Split(%p, %sp) {axis=2}
    %y : T[?] = Attention(%q, %k, %v, %m) {q_num_heads=2, kv_num_heads=2, scale=0.25}
    output %y
  )" + extra;
  text.replace(text.find("MASK"), 4, mask);
  for (size_t at = text.find("T["); at != std::string::npos; at = text.find("T[", at + t.size()))
    text.replace(at, 1, t);
  return text;
}

Expected<bool> run_operands(Graph& g) {
  g.target = target_from_archs({"sm_90"});
  Expected<bool> changed = fuse_attention_operands(g);
  if (changed) {
    Status s = verify(g);
    if (!s) return s;
  }
  return changed;
}

TEST(FuseAttentionOperands, PackedQkvSplitReadInPlaceAndCausalMaskBecomesIsCausal) {
  AOTC_REQUIRE_OPS("Attention", "Split");
  AOTC_BUILD(g, packed_qkv(causal_literal(1, 8, 8)));
  Graph before = g;
  auto changed = run_operands(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "aotc.StridedAttention");
  const Node& a = g.nodes[0];
  EXPECT_EQ(a.domain, "aotc");
  const ValueId p = g.find_value("p");
  EXPECT_EQ(a.inputs, (std::vector<ValueId>{p, p, p}));
  EXPECT_EQ(a.attr_int("is_causal", 0), 1);
  // Element (b, head, s, d) of q/k/v at base + b*8*96 + head*16 + s*96 + d.
  EXPECT_EQ(a.attr_ints("q_view"), (std::vector<int64_t>{0, 768, 16, 96}));
  EXPECT_EQ(a.attr_ints("k_view"), (std::vector<int64_t>{32, 768, 16, 96}));
  EXPECT_EQ(a.attr_ints("v_view"), (std::vector<int64_t>{64, 768, 16, 96}));
  EXPECT_EQ(a.attr_ints("q_shape"), (std::vector<int64_t>{2, 8, 32}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 2.5e-3, 1e-3));
}

// A transposed-head copy (what fuse_copy_chains makes of Reshape + Transpose from a packed
// projection) read in place: 4-D [B, H, S, D] operands at batch 1 (B*H batches of one head).
TEST(FuseAttentionOperands, StridedCopyOperandsReadInPlace) {
  AOTC_REQUIRE_OPS("Attention", "aotc.StridedCopy", "aotc.StridedAttention");
  AOTC_BUILD(g, R"(
    input %p : float16[1x8x96]
    %q : float16[?] = aotc.StridedCopy(%p) {base=0, dims=[1,2,8,16], strides=[768,16,96,1], shape=[1,2,8,16]}
    %k : float16[?] = aotc.StridedCopy(%p) {base=32, dims=[1,2,8,16], strides=[768,16,96,1], shape=[1,2,8,16]}
    %v : float16[?] = aotc.StridedCopy(%p) {base=64, dims=[2,8,16], strides=[16,96,1], shape=[1,2,8,16]}
    %y : float16[?] = Attention(%q, %k, %v) {scale=0.25}
    output %y
  )");
  Graph before = g;
  auto changed = run_operands(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "aotc.StridedAttention");
  EXPECT_EQ(g.nodes[0].attr_ints("k_view"), (std::vector<int64_t>{32, 0, 16, 96}));
  EXPECT_EQ(g.nodes[0].attr_ints("v_view"), (std::vector<int64_t>{64, 0, 16, 96}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 4, 2.5e-3, 1e-3));
}

// torch's sequence-first MultiheadAttention: q/k/v [B, H=2, S=8, D=16] gathered from the
// [S, B, 3E] projection %p (batch stride 3E, head stride D, row stride B*3E), the attention %o,
// then `tail` (its readers and the outputs).
std::string sequence_first(int64_t b, const std::string& tail) {
  const std::string bs = std::to_string(b);
  const std::string dims =
      "dims=[" + bs + ",2,8,16], strides=[96,16," + std::to_string(96 * b) + ",1], shape=[" + bs + ",2,8,16]}\n";
  return "input %p : float16[8x" + bs + "x96]\n" +
         "%q : float16[?] = aotc.StridedCopy(%p) {base=0, " + dims +
         "%k : float16[?] = aotc.StridedCopy(%p) {base=32, " + dims +
         "%v : float16[?] = aotc.StridedCopy(%p) {base=64, " + dims +
         "%o : float16[?] = Attention(%q, %k, %v) {scale=0.25}\n" + tail;
}

// The sequence-first attention at batch 2: no B*H batches of one head. The views run as 3-D
// operands [B, S, H*D]; Y [B, S, H*Dv] rows, then the head split + Transpose(0,2,1,3) give the 4-D
// output back, and fuse_copy_chains folds that transpose into the copy that reads it.
TEST(FuseAttentionOperands, SequenceFirstCopiesRunAsThreeDOperands) {
  AOTC_REQUIRE_OPS("Attention", "aotc.StridedCopy", "aotc.StridedAttention");
  AOTC_BUILD(g, sequence_first(2, "%t : float16[?] = Transpose(%o) {perm=[2,0,1,3]}\noutput %t\n"));
  Graph before = g;
  auto changed = run_operands(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.StridedAttention,aotc.StridedCopy");
  const Node& a = g.nodes[0];
  EXPECT_EQ(a.attr_ints("q_shape"), (std::vector<int64_t>{2, 8, 32}));
  EXPECT_EQ(a.attr_ints("k_view"), (std::vector<int64_t>{32, 96, 16, 192}));
  EXPECT_EQ(a.attr_int("q_num_heads", 0), 2);
  EXPECT_EQ(g.value(a.outputs[0]).shape, (Shape{2, 8, 32}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 8, 2.5e-3, 1e-3));
}

// The same attention at batch 1: its 4-D operands could run as B*H batches of one head, but the
// output only feeds the head merge Transpose(2,0,1,3): written as [B, S, H*D] rows the merge is a
// view (batch 1), not a copy. Nothing but the attention moves data afterwards.
TEST(FuseAttentionOperands, SequenceFirstAtBatchOneWritesRowsSoTheHeadMergeIsAView) {
  AOTC_REQUIRE_OPS("Attention", "aotc.StridedCopy", "aotc.StridedAttention");
  AOTC_BUILD(g, sequence_first(1, "%t : float16[?] = Transpose(%o) {perm=[2,0,1,3]}\n"
                                  "%y : float16[?] = Relu(%t)\noutput %y\n"));
  Graph before = g;
  auto changed = run_operands(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.StridedAttention,Reshape,Relu");
  const Node& a = g.nodes[0];
  EXPECT_EQ(a.attr_ints("q_shape"), (std::vector<int64_t>{1, 8, 32}));
  EXPECT_EQ(g.value(a.outputs[0]).shape, (Shape{1, 8, 32}));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 8, 2.5e-3, 1e-3));
  // Read by something else than a head merge, the 4-D output stays (B*H batches of one head).
  AOTC_BUILD(h, sequence_first(1, "%t : float16[?] = Transpose(%o) {perm=[0,1,3,2]}\noutput %t\n"));
  auto changed_h = run_operands(h);
  ASSERT_TRUE(changed_h.is_ok()) << changed_h.status().message();
  EXPECT_TRUE(*changed_h);
  EXPECT_EQ(op_list(h), "aotc.StridedAttention,Transpose");
  EXPECT_EQ(h.nodes[0].attr_ints("q_shape"), (std::vector<int64_t>{1, 2, 8, 16}));
}

// The dynamo exporter's SDPA at opset 23: separate projections [B, S, E] split into heads by
// Reshape + Transpose(0,2,1,3), a boolean mask, the output transposed back and merged. The
// transposes become views of the projections (3-D operands, heads in the row), the mask an
// additive one (Where), and the output transposes cancel: no data movement kernel is left.
TEST(FuseAttentionOperands, DynamoHeadTransposesAndBoolMaskAreReadInPlace) {
  AOTC_REQUIRE_OPS("Attention", "Transpose", "Reshape", "Where", "aotc.StridedAttention");
  AOTC_BUILD(g, R"(
    input %xq : float16[2x8x32]
    input %xk : float16[2x8x32]
    input %xv : float16[2x8x32]
    input %mask : bool[2x1x8x8]
    const %s4 : int64[4] = [2,8,2,16]
    const %s3 : int64[3] = [2,8,32]
    %q4 : float16[?] = Reshape(%xq, %s4)
    %q : float16[?] = Transpose(%q4) {perm=[0,2,1,3]}
    %k4 : float16[?] = Reshape(%xk, %s4)
    %k : float16[?] = Transpose(%k4) {perm=[0,2,1,3]}
    %v4 : float16[?] = Reshape(%xv, %s4)
    %v : float16[?] = Transpose(%v4) {perm=[0,2,1,3]}
    %o : float16[?] = Attention(%q, %k, %v, %mask) {scale=0.25}
    %ot : float16[?] = Transpose(%o) {perm=[0,2,1,3]}
    %y : float16[?] = Reshape(%ot, %s3)
    output %y
  )");
  Graph before = g;
  auto changed = run_operands(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g).find("Transpose"), std::string::npos) << op_list(g);
  EXPECT_EQ(op_list(g).find("StridedCopy"), std::string::npos) << op_list(g);
  const Node* a = nullptr;
  for (const Node& n : g.nodes)
    if (n.op_type == "StridedAttention") a = &n;
  ASSERT_NE(a, nullptr) << op_list(g);
  EXPECT_EQ(a->inputs[0], g.find_value("xq"));
  EXPECT_EQ(a->inputs[1], g.find_value("xk"));
  EXPECT_EQ(a->inputs[2], g.find_value("xv"));
  EXPECT_EQ(g.value(a->inputs[3]).dtype, DType::kFloat16);  // the additive form of the mask
  // Element (b, head, s, d) of q at b*8*32 + head*16 + s*32 + d.
  EXPECT_EQ(a->attr_ints("q_view"), (std::vector<int64_t>{0, 256, 16, 32}));
  EXPECT_EQ(a->attr_ints("q_shape"), (std::vector<int64_t>{2, 8, 32}));
  EXPECT_TRUE(attention_runs_fused(*a, g));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 6, 2.5e-3, 1e-3));
}

// The boolean mask stays boolean where no fused kernel can run (no Sm80-class target), in fp32 as
// in fp16; on sm_90 the fp32 attention takes the additive mask and runs fused (FFMA) too.
TEST(FuseAttentionOperands, BoolMaskStaysWithoutTheFusedKernel) {
  AOTC_REQUIRE_OPS("Attention", "Transpose", "Reshape");
  const char* text = R"(
    input %x : T[2x8x32]
    input %mask : bool[2x1x8x8]
    const %s4 : int64[4] = [2,8,2,16]
    %x4 : T[?] = Reshape(%x, %s4)
    %q : T[?] = Transpose(%x4) {perm=[0,2,1,3]}
    %o : T[?] = Attention(%q, %q, %q, %mask) {scale=0.25}
    output %o
  )";
  for (const char* t : {"float", "float16"}) {
    std::string src = text;
    for (size_t at = src.find("T["); at != std::string::npos; at = src.find("T[", at + 1)) src.replace(at, 1, t);
    AOTC_BUILD(g, src);
    g.target = target_from_archs({"sm_75"});
    auto changed = fuse_attention_operands(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_EQ(op_list(g).find("Where"), std::string::npos) << t << ": " << op_list(g);
    EXPECT_EQ(op_list(g).find("StridedAttention"), std::string::npos) << t << ": " << op_list(g);
  }
  std::string fp32 = text;
  for (size_t at = fp32.find("T["); at != std::string::npos; at = fp32.find("T[", at + 1)) fp32.replace(at, 1, "float");
  AOTC_BUILD(g, fp32);
  Graph before = g;
  ASSERT_TRUE(run_operands(g).is_ok());
  EXPECT_NE(op_list(g).find("Where"), std::string::npos) << op_list(g);
  EXPECT_NE(op_list(g).find("StridedAttention"), std::string::npos) << op_list(g);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 6, 1e-5, 1e-5));
}

// LLaMA's grouped-query attention (4 query heads over 2 KV heads, causal): the fused kernel reads
// KV head h / 2 for query head h in place, so nothing is repeated (fp32 too: the fused kernel's
// FFMA configuration).
TEST(FuseAttentionOperands, GroupedQueryHeadsRunFusedWithoutRepeats) {
  AOTC_REQUIRE_OPS("Attention");
  const char* text = R"(
    input %q : T[2x8x64]
    input %k : T[2x8x32]
    input %v : T[2x8x32]
    %y : T[?] = Attention(%q, %k, %v) {q_num_heads=4, kv_num_heads=2, is_causal=1}
    output %y
  )";
  for (const char* t : {"float16", "float"}) {
    std::string src = text;
    for (size_t at = src.find("T["); at != std::string::npos; at = src.find("T[", at + 1)) src.replace(at, 1, t);
    AOTC_BUILD(g, src);
    auto changed = run_operands(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_FALSE(*changed) << op_list(g);
    ASSERT_EQ(op_list(g), "Attention");
    const Node& a = g.nodes.back();
    EXPECT_EQ(a.attr_int("kv_num_heads", 0), 2);
    EXPECT_TRUE(attention_runs_fused(a, g)) << t;
  }
}

// The exporter's repeat_kv (transformers: k[:, :, None].expand(B, KV, G, S, D).reshape(B, KV*G, S,
// D)) in front of a 4-D Attention's K and V: the Attention reads the KV heads themselves, the
// Unsqueeze / Expand / Reshape copies go, the outputs are unchanged.
std::string repeat_kv_block(const std::string& t, const std::string& unit_axes = "[2]",
                            const std::string& wide = "[2,2,2,8,16]", const std::string& v_from = "%vr") {
  std::string src = R"(
    input %q : T[2x4x8x16]
    input %k : T[2x2x8x16]
    input %v : T[2x2x8x16]
    const %ax : int64[1] = AXES
    const %wide : int64[5] = WIDE
    const %merged : int64[4] = [2,4,8,16]
    %ku : T[?] = Unsqueeze(%k, %ax)
    %ke : T[?] = Expand(%ku, %wide)
    %kr : T[?] = Reshape(%ke, %merged)
    %vu : T[?] = Unsqueeze(%v, %ax)
    %ve : T[?] = Expand(%vu, %wide)
    %vr : T[?] = Reshape(%ve, %merged)
    %y : T[?] = Attention(%q, %kr, VFROM) {is_causal=1}
    output %y
  )";
  auto rep = [&](const std::string& from, const std::string& to) {
    for (size_t at = src.find(from); at != std::string::npos; at = src.find(from, at + to.size())) src.replace(at, from.size(), to);
  };
  rep("T[", t + "[");
  rep("AXES", unit_axes);
  rep("WIDE", wide);
  rep("VFROM", v_from);
  return src;
}

TEST(FuseAttentionOperands, RepeatKvChainIsReadAsGroupedHeads) {
  AOTC_REQUIRE_OPS("Attention", "Expand", "Unsqueeze", "Reshape");
  for (const char* t : {"float16", "float"}) {
    AOTC_BUILD(g, repeat_kv_block(t));
    Graph before = g;
    auto changed = run_operands(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed) << t;
    EXPECT_EQ(op_list(g), "Attention") << t;
    const Node& a = g.nodes.back();
    EXPECT_EQ(g.value(a.inputs[1]).name, "k");
    EXPECT_EQ(g.value(a.inputs[2]).name, "v");
    EXPECT_TRUE(attention_runs_fused(a, g)) << t;
    EXPECT_TRUE(testing_util::same_outputs(before, g, 13, 2.5e-3, 1e-3)) << t;
  }
}

// Must not fire: the unit axis at 1 ([B, 1, KV, S, D] expanded to [B, G, KV, S, D]) repeats the
// KV heads in the other order (query head h reads KV head h % KV, not h / G); only K repeated
// (V read as it is, a different head count).
TEST(FuseAttentionOperands, RepeatKvMustNotFire) {
  AOTC_REQUIRE_OPS("Attention", "Expand", "Unsqueeze", "Reshape");
  {
    AOTC_BUILD(g, repeat_kv_block("float16", "[1]", "[2,2,2,8,16]"));
    Graph before = g;
    ASSERT_TRUE(run_operands(g).is_ok());
    EXPECT_NE(op_list(g).find("Expand"), std::string::npos) << op_list(g);
    EXPECT_TRUE(testing_util::same_outputs(before, g, 17, 2.5e-3, 1e-3));
  }
  {
    std::string src = repeat_kv_block("float16", "[2]", "[2,2,2,8,16]", "%vq");
    src.replace(src.find("    %y :"), 0, "    %vq : float16[?] = Identity(%q)\n");
    AOTC_BUILD(g, src);
    ASSERT_TRUE(run_operands(g).is_ok());
    EXPECT_NE(op_list(g).find("Expand"), std::string::npos) << op_list(g);
  }
}

TEST(FuseAttentionOperands, MustNotFire) {
  AOTC_REQUIRE_OPS("Attention", "Split", "aotc.StridedCopy", "aotc.StridedAttention");
  // The mask is not causal (one entry flipped): it stays, the operands are still read in place.
  {
    AOTC_BUILD(g, packed_qkv(causal_literal(1, 8, 8, 9)));
    Graph before = g;
    ASSERT_TRUE(run_operands(g).is_ok());
    EXPECT_EQ(op_list(g), "aotc.StridedAttention");
    EXPECT_EQ(g.nodes[0].attr_int("is_causal", 0), 0);
    EXPECT_EQ(g.nodes[0].inputs.size(), 4u);
    EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3));
  }
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"a Split part also read elsewhere", packed_qkv(causal_literal(1, 8, 8, 9), "%r : float16[?] = Relu(%k)\n    output %r\n")},
      {"a Split part is a graph output", packed_qkv(causal_literal(1, 8, 8, 9), "output %q\n")},
      {"a scaled copy", R"(
    input %p : float16[1x8x96]
    %q : float16[?] = aotc.StridedCopy(%p) {base=0, dims=[1,2,8,16], strides=[768,16,96,1], shape=[1,2,8,16], scale=0.5}
    %y : float16[?] = Attention(%q, %q, %q) {scale=0.25}
    output %y
  )"},
      {"rows not contiguous (a transposed copy)", R"(
    input %p : float16[1x16x96]
    %q : float16[?] = aotc.StridedCopy(%p) {base=0, dims=[1,2,16,8], strides=[1536,16,1,96], shape=[1,2,16,8]}
    %y : float16[?] = Attention(%q, %q, %q) {scale=0.25}
    output %y
  )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    auto changed = run_operands(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_EQ(op_list(g).find("StridedAttention"), std::string::npos) << c.first << ": " << op_list(g);
  }
  // fp32 reads the packed projection in place as well (the fused kernel's FFMA configuration).
  AOTC_BUILD(g, packed_qkv(causal_literal(1, 8, 8, 9), "", "float"));
  Graph before = g;
  ASSERT_TRUE(run_operands(g).is_ok());
  EXPECT_EQ(op_list(g), "aotc.StridedAttention");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 5));
}

TEST(DropExactCasts, RoundTripsAndNoOpCastsVanish) {
  AOTC_REQUIRE_OPS("Cast", "Softmax", "Relu");
  AOTC_BUILD(g, R"(
    input %x : float16[3x4]
    %p : float16[?] = Softmax(%x) {axis=-1}
    %w : float[?] = Cast(%p) {to=1}
    %w2 : float[?] = Cast(%w) {to=1}
    %n : float16[?] = Cast(%w2) {to=10}
    %y : float16[?] = Relu(%n)
    output %y
  )");
  Graph before = g;
  auto changed = drop_exact_casts(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Softmax,Relu");
  EXPECT_EQ(g.nodes[1].inputs[0], g.find_value("p"));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 0.0, 0.0));
}

TEST(DropExactCasts, MustNotFire) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"narrowing first (fp32 -> fp16 -> fp32 rounds)", R"(
    input %x : float[3x4]
    %h : float16[?] = Cast(%x) {to=10}
    %y : float[?] = Cast(%h) {to=1}
    output %y
  )"},
      {"bf16 -> fp32 -> fp16 (another type)", R"(
    input %x : bfloat16[3x4]
    %f : float[?] = Cast(%x) {to=1}
    %y : float16[?] = Cast(%f) {to=10}
    output %y
  )"},
      {"a no-op Cast that is the graph output keeps the name", R"(
    input %x : float[3x4]
    %y : float[?] = Cast(%x) {to=1}
    output %y
  )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    auto changed = drop_exact_casts(g);
    ASSERT_TRUE(changed.is_ok()) << c.first;
    EXPECT_FALSE(*changed) << c.first;
  }
}

}  // namespace
}  // namespace aotc
