// GPU op tests of the transformer ops through the whole compiler (pipeline, memory plan, codegen,
// nvcc, the C ABI): Attention (fp32 and fp16, causal, boolean masks with fully masked rows,
// additive masks, sequence 1 and prime lengths, head dims 32/64/80/128, GQA/MQA, 3-D inputs,
// past/present), RMSNormalization, RotaryEmbedding and Gelu(tanh), each against the CPU reference.
#include <cmath>
#include <cstdlib>

#include "tests/gpu/gpu_harness.h"

namespace aotc::gpu_test {
namespace {

// A boolean mask constant: row r allows key j iff (3r + 5j) % 7 != 0; every third row allows none.
ValueId bool_mask(GraphBuilder& b, const std::string& name, Shape shape) {
  Tensor t(DType::kBool, shape);
  const int64_t keys = shape.back(), rows = t.numel() / keys;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < keys; ++j) t.set(r * keys + j, r % 3 == 2 ? 0 : ((3 * r + 5 * j) % 7 != 0));
  return b.graph().add_constant(name, t);
}

// Attention with Q (B, Hq, Sq, D), K/V (B, Hkv, Skv, D) of `dtype`; extra inputs appended.
Graph attention(DType dtype, int64_t batch, int64_t hq, int64_t hkv, int64_t sq, int64_t skv, int64_t d,
                Attributes attrs, bool with_mask = false) {
  GraphBuilder b;
  b.graph().opset = 23;
  std::vector<ValueId> in = {b.input("q", {batch, hq, sq, d}, dtype), b.input("k", {batch, hkv, skv, d}, dtype),
                             b.input("v", {batch, hkv, skv, d}, dtype)};
  if (with_mask) in.push_back(bool_mask(b, "mask", {batch, 1, sq, skv}));
  b.output(b.node("Attention", in, attrs));
  return b.graph();
}

TEST(GpuAttention, Fp32HeadDims32And64Prime) {
  AOTC_REQUIRE_GPU();
  run_case(attention(DType::kFloat32, 2, 3, 3, 7, 13, 32, {}), "attn_f32_d32");
  run_case(attention(DType::kFloat32, 1, 2, 2, 31, 31, 64, {{"is_causal", i64(1)}}), "attn_f32_d64_causal");
}

TEST(GpuAttention, Fp16HeadDims80And128Causal) {
  AOTC_REQUIRE_GPU();
  run_case(attention(DType::kFloat16, 1, 2, 2, 37, 37, 80, {{"is_causal", i64(1)}}), "attn_f16_d80_causal");
  run_case(attention(DType::kFloat16, 2, 4, 4, 17, 17, 128, {{"is_causal", i64(1)}}), "attn_f16_d128_causal");
}

TEST(GpuAttention, SequenceOneGqaAndMqa) {
  AOTC_REQUIRE_GPU();
  run_case(attention(DType::kFloat16, 2, 8, 2, 1, 41, 64, {}), "attn_f16_gqa_seq1");
  run_case(attention(DType::kFloat32, 1, 4, 1, 1, 1, 128, {}), "attn_f32_mqa_seq1_keys1");
  run_case(attention(DType::kFloat32, 1, 6, 2, 23, 23, 32, {{"is_causal", i64(1)}}), "attn_f32_gqa_causal");
  // Self-attention with grouped heads in fp16: the fused kernel reads KV head h / 3 in place.
  CaseOptions grouped;
  grouped.expect_ops_after_pipeline = {"Attention"};
  grouped.absent_ops_after_pipeline = {"Expand"};
  run_case(attention(DType::kFloat16, 2, 12, 4, 50, 50, 64, {{"is_causal", i64(1)}}), "attn_f16_gqa_causal_in_place",
           grouped);
  // 3-D inputs (B, S, H*D) with grouped heads: the kernel's (head, batch) block indices.
  GraphBuilder b;
  b.graph().opset = 23;
  ValueId q = b.input("q", {2, 19, 8 * 64}, DType::kFloat16), k = b.input("k", {2, 19, 2 * 64}, DType::kFloat16),
          v = b.input("v", {2, 19, 2 * 64}, DType::kFloat16);
  b.output(b.node("Attention", {q, k, v}, {{"q_num_heads", i64(8)}, {"kv_num_heads", i64(2)}, {"is_causal", i64(1)}}));
  run_case(b.graph(), "attn_f16_3d_gqa_causal_in_place", grouped);
}

// transformers' repeat_kv written out in front of the Attention op (LLaMA exported by dynamo at
// opset 23): Unsqueeze -> Expand -> Reshape of K and V disappear (fuse_attention_operands) and the
// fused kernel reads the 4 KV heads for the 12 query heads in place.
TEST(GpuAttention, ExportersRepeatKvIsReadAsGroupedHeads) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  Graph& g = b.graph();
  g.opset = 23;
  const int64_t batch = 2, hq = 12, hkv = 4, seq = 40, d = 64;
  const DType t = DType::kFloat16;
  ValueId q = b.input("q", {batch, hq, seq, d}, t), k = b.input("k", {batch, hkv, seq, d}, t),
          v = b.input("v", {batch, hkv, seq, d}, t);
  ValueId axes = g.add_constant("axes", Tensor::from_int64s({1}, {2}));
  ValueId wide = g.add_constant("wide", Tensor::from_int64s({5}, {batch, hkv, hq / hkv, seq, d}));
  ValueId merged = g.add_constant("merged", Tensor::from_int64s({4}, {batch, hq, seq, d}));
  auto repeat = [&](ValueId x) {
    return b.node("Reshape", {b.node("Expand", {b.node("Unsqueeze", {x, axes}), wide}), merged});
  };
  b.output(b.node("Attention", {q, repeat(k), repeat(v)}, {{"is_causal", i64(1)}}));
  CaseOptions options;
  options.expect_ops_after_pipeline = {"Attention"};
  options.absent_ops_after_pipeline = {"Expand", "Unsqueeze"};
  run_case(b.graph(), "attn_f16_repeat_kv_in_place", options);
}

TEST(GpuAttention, BoolMaskWithFullyMaskedRowsFp32AndFp16) {
  AOTC_REQUIRE_GPU();
  run_case(attention(DType::kFloat32, 2, 2, 2, 11, 19, 64, {}, true), "attn_f32_bool_mask");
  run_case(attention(DType::kFloat16, 2, 4, 2, 13, 13, 80, {{"is_causal", i64(1)}}, true), "attn_f16_bool_mask_causal");
}

TEST(GpuAttention, AdditiveMask3dInputsSoftcapScale) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.graph().opset = 23;
  ValueId q = b.input("q", {2, 5, 4 * 32}), k = b.input("k", {2, 11, 2 * 32}), v = b.input("v", {2, 11, 2 * 16});
  ValueId mask = b.input("mask", {5, 11});
  b.output(b.node("Attention", {q, k, v, mask},
                  {{"q_num_heads", i64(4)}, {"kv_num_heads", i64(2)}, {"softcap", f32(2.5f)}, {"scale", f32(0.3f)}}));
  run_case(b.graph(), "attn_f32_3d_additive_softcap");
}

// The fused tensor-core kernel (16-bit, 3-D inputs, additive mask): a constant fp16 mask with
// -inf entries and every fourth query row fully masked (zeros by the op's definition: the fix-up
// kernel after the fused one).
TEST(GpuAttention, FusedThreeDInputsAdditiveMaskFullyMaskedRows) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.graph().opset = 23;
  const int64_t batch = 2, heads = 4, sq = 16, sk = 24, d = 64;
  ValueId q = b.input("q", {batch, sq, heads * d}, DType::kFloat16);
  ValueId k = b.input("k", {batch, sk, heads * d}, DType::kFloat16);
  ValueId v = b.input("v", {batch, sk, heads * d}, DType::kFloat16);
  Tensor m(DType::kFloat16, {batch, 1, sq, sk});
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t r = 0; r < sq; ++r)
      for (int64_t j = 0; j < sk; ++j) {
        const bool masked = r % 4 == 3 || (r + 2 * j + bi) % 5 == 0;
        m.set((bi * sq + r) * sk + j, masked ? -INFINITY : 0.25 * ((r + j) % 3) - 0.25);
      }
  ValueId mask = b.graph().add_constant("mask", m);
  b.output(b.node("Attention", {q, k, v, mask}, {{"q_num_heads", i64(heads)}, {"kv_num_heads", i64(heads)}}));
  run_case(b.graph(), "attn_f16_fused_3d_mask_full_rows");
}

// A padding mask [B, 1, 1, keys] (BERT's) in which one batch allows no key: the fix-up scans each
// of the B distinct mask rows once and zeroes that batch's rows of every head and query (3-D
// inputs: Y is (B, Sq, H*Dv); 4-D inputs with a mask broadcast over heads do not take the fused
// kernel); the other batches keep the fused kernel's output.
TEST(GpuAttention, FusedPaddingMaskWithAFullyMaskedBatch) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.graph().opset = 23;
  // 24 keys: the kernel reads the mask's rows as 16-byte vectors (a row stride of 8 halves' multiple).
  const int64_t batch = 3, heads = 4, sq = 20, sk = 24, d = 32;
  ValueId q = b.input("q", {batch, sq, heads * d}, DType::kFloat16);
  ValueId k = b.input("k", {batch, sk, heads * d}, DType::kFloat16);
  ValueId v = b.input("v", {batch, sk, heads * d}, DType::kFloat16);
  Tensor m(DType::kFloat16, {batch, 1, 1, sk});
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t j = 0; j < sk; ++j) m.set(bi * sk + j, bi == 1 || (bi == 2 && j >= 13) ? -INFINITY : 0.0);
  ValueId mask = b.graph().add_constant("mask", m);
  b.output(b.node("Attention", {q, k, v, mask}, {{"q_num_heads", i64(heads)}, {"kv_num_heads", i64(heads)}}));
  CaseOptions options;
  options.expect_templates = {"cutlass_fmha_forward", "attention_zero_masked_rows"};
  run_case(b.graph(), "attn_f16_fused_padding_mask_full_batch", options);
}

// The written-out attention as exporters write it (BERT-base shapes: 12 heads of 64, 128 tokens,
// a runtime additive mask [B, 1, 1, S]) becomes one fused Attention node (fuse_attention).
TEST(GpuAttention, WrittenOutAttentionIsFused) {
  AOTC_REQUIRE_GPU();
  // fp32 too: the fused kernel's FFMA configuration (IEEE fp32 products, no TF32).
  for (const DType t : {DType::kFloat16, DType::kFloat32}) {
    GraphBuilder b;
    Graph& g = b.graph();
    g.opset = 17;
    const int64_t batch = 2, seq = 128, heads = 12, d = 64, e = heads * d;
    ValueId q3 = b.input("q3", {batch, seq, e}, t), k3 = b.input("k3", {batch, seq, e}, t),
            v3 = b.input("v3", {batch, seq, e}, t), mask = b.input("mask", {batch, 1, 1, seq}, t);
    ValueId hs = g.add_constant("hs", Tensor::from_int64s({4}, {batch, seq, heads, d}));
    ValueId es = g.add_constant("es", Tensor::from_int64s({3}, {batch, seq, e}));
    Tensor c(t, {});
    c.set(0, 0.125);
    ValueId scale = g.add_constant("scale", c);
    auto heads_of = [&](ValueId x, std::vector<int64_t> perm) {
      return b.node("Transpose", {b.node("Reshape", {x, hs})}, {{"perm", ints(std::move(perm))}});
    };
    ValueId s = b.node("Mul", {b.node("MatMul", {heads_of(q3, {0, 2, 1, 3}), heads_of(k3, {0, 2, 3, 1})}), scale});
    ValueId p = b.node("Softmax", {b.node("Add", {s, mask})}, {{"axis", i64(-1)}});
    ValueId o = b.node("MatMul", {p, heads_of(v3, {0, 2, 1, 3})});
    b.output(b.node("Reshape", {b.node("Transpose", {o}, {{"perm", ints({0, 2, 1, 3})}}), es}));
    CaseOptions opt;
    opt.expect_ops_after_pipeline = {"Attention"};
    opt.expect_templates = {"cutlass_fmha_forward"};
    run_case(g, t == DType::kFloat16 ? "attn_f16_written_out_bert" : "attn_f32_written_out_bert", opt);
  }
}

// GPT-2's attention: the packed QKV projection [B, S, 3E] split into q/k/v and a constant causal
// mask (0 / -inf). fuse_attention_operands makes it one aotc.StridedAttention reading the packed
// buffer in place (offsets 0, E, 2E; row stride 3E), with is_causal instead of the mask.
TEST(GpuAttention, PackedQkvReadInPlaceWithCausalMask) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  Graph& g = b.graph();
  g.opset = 23;
  const int64_t batch = 2, seq = 72, heads = 4, d = 64, e = heads * d;
  const DType t = DType::kFloat16;
  ValueId p = b.input("p", {batch, seq, 3 * e}, t);
  ValueId sp = g.add_constant("sp", Tensor::from_int64s({3}, {e, e, e}));
  std::vector<ValueId> qkv = b.node_outputs("Split", {p, sp}, 3, {{"axis", i64(2)}});
  Tensor m(t, {1, 1, seq, seq});
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t j = 0; j < seq; ++j) m.set(i * seq + j, j <= i ? 0.0 : -INFINITY);
  ValueId mask = g.add_constant("mask", m);
  b.output(b.node("Attention", {qkv[0], qkv[1], qkv[2], mask},
                  {{"q_num_heads", i64(heads)}, {"kv_num_heads", i64(heads)}, {"scale", f32(0.125f)}}));
  CaseOptions opt;
  opt.expect_ops_after_pipeline = {"StridedAttention"};
  run_case(g, "attn_f16_packed_qkv_causal", opt);
}

// CUTLASS's sm_90a FMHA (templates/cutlass_fmha_sm90.cu.in: fp16, head dim 64; masks are in
// Sm90FmhaAdditiveMasks below; Q/K/V/Y in the library's own buffers, so Abs / Neg around the
// Attention): causal over 128 keys; 200 keys (a partial last key tile) with the op's own scale;
// 197 tokens (ViT's, not a multiple of 8); batch 3 of 4-D inputs with
// 8 queries; a packed QKV projection split in place (K and V start 256 / 512 elements into its
// rows: the pointers carry the offsets into the TMA descriptors).
TEST(GpuAttention, Sm90FmhaCausalPartialTilesAndPackedQkv) {
  AOTC_REQUIRE_GPU();
  const DType t = DType::kFloat16;
  auto three_d = [&](int64_t batch, int64_t seq, Attributes attrs) {
    GraphBuilder b;
    b.graph().opset = 23;
    const int64_t e = 4 * 64;
    std::vector<ValueId> in;
    for (const char* n : {"q", "k", "v"}) in.push_back(b.node("Abs", {b.input(n, {batch, seq, e}, t)}));
    attrs["q_num_heads"] = i64(4);
    attrs["kv_num_heads"] = i64(4);
    b.output(b.node("Neg", {b.node("Attention", in, attrs)}));
    return b.graph();
  };
  CaseOptions opt;
  opt.expect_templates = {"cutlass_fmha_sm90"};
  opt.absent_templates = {"cutlass_fmha_forward"};
  run_case(three_d(2, 128, {{"is_causal", i64(1)}}), "attn_sm90_causal_128", opt);
  run_case(three_d(1, 200, {{"scale", f32(0.2f)}}), "attn_sm90_200_keys_scale", opt);
  run_case(three_d(2, 197, {}), "attn_sm90_197_tokens", opt);  // ViT's: not a multiple of 8
  {
    GraphBuilder b;
    b.graph().opset = 23;
    std::vector<ValueId> in;
    for (const char* n : {"q", "k", "v"}) in.push_back(b.node("Abs", {b.input(n, {3, 2, 8, 64}, t)}));
    b.output(b.node("Neg", {b.node("Attention", in, {})}));
    run_case(b.graph(), "attn_sm90_4d_8_queries", opt);
  }
  {
    GraphBuilder b;
    Graph& g = b.graph();
    g.opset = 23;
    const int64_t batch = 2, seq = 136, heads = 4, e = heads * 64;
    ValueId p = b.node("Abs", {b.input("p", {batch, seq, 3 * e}, t)});
    ValueId sp = g.add_constant("sp", Tensor::from_int64s({3}, {e, e, e}));
    std::vector<ValueId> qkv = b.node_outputs("Split", {p, sp}, 3, {{"axis", i64(2)}});
    b.output(b.node("Neg", {b.node("Attention", {qkv[0], qkv[1], qkv[2]},
                                   {{"q_num_heads", i64(heads)}, {"kv_num_heads", i64(heads)}, {"is_causal", i64(1)}})}));
    CaseOptions packed = opt;
    packed.expect_ops_after_pipeline = {"StridedAttention"};
    run_case(g, "attn_sm90_packed_qkv_causal_136", packed);
  }
}

// The sm_90a FMHA with an additive fp16 mask (MaskFusion): BERT's padding mask [B, 1, 1, S] as a
// constant with finite values, a batch whose keys are all -inf (zeros: the fix-up step) and one
// masked from key 130 on, over 200 keys (a partial last key tile); and a runtime mask per
// (batch, head, query) of 4-D inputs with 77 queries (a partial query tile, not a multiple of 8:
// rows past Sq must not read the mask) and the op's own scale.
TEST(GpuAttention, Sm90FmhaAdditiveMasks) {
  AOTC_REQUIRE_GPU();
  const DType t = DType::kFloat16;
  CaseOptions opt;
  opt.expect_templates = {"cutlass_fmha_sm90"};
  opt.absent_templates = {"cutlass_fmha_forward"};
  {
    GraphBuilder b;
    b.graph().opset = 23;
    const int64_t batch = 3, seq = 200, heads = 4, e = heads * 64;
    std::vector<ValueId> in;
    for (const char* n : {"q", "k", "v"}) in.push_back(b.node("Abs", {b.input(n, {batch, seq, e}, t)}));
    Tensor m(t, {batch, 1, 1, seq});
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t j = 0; j < seq; ++j)
        m.set(bi * seq + j, bi == 1 || (bi == 2 && j >= 130) ? -INFINITY : 0.5 * ((bi + 3 * j) % 5) - 1.0);
    in.push_back(b.graph().add_constant("mask", m));
    b.output(b.node("Neg", {b.node("Attention", in, {{"q_num_heads", i64(heads)}, {"kv_num_heads", i64(heads)}})}));
    CaseOptions padded = opt;
    padded.expect_templates = {"cutlass_fmha_sm90", "attention_zero_masked_rows"};
    run_case(b.graph(), "attn_sm90_padding_mask_200", padded);
  }
  {
    GraphBuilder b;
    b.graph().opset = 23;
    std::vector<ValueId> in;
    for (const char* n : {"q", "k", "v"}) in.push_back(b.node("Abs", {b.input(n, {2, 3, 77, 64}, t)}));
    in.push_back(b.input("mask", {2, 3, 77, 77}, t));
    b.output(b.node("Neg", {b.node("Attention", in, {{"scale", f32(0.3f)}})}));
    run_case(b.graph(), "attn_sm90_runtime_mask_per_query", opt);
  }
}

// torch's sequence-first nn.MultiheadAttention as TorchScript exports it (ViT), from the packed
// [S, B, 3E] projection p: q/k/v sliced and viewed as [B, H, S, D] (batch stride 3E), both scaled
// by sqrt(1/sqrt(D)), the dense attention, and the output as [S*B, E] rows.
struct SeqFirst {
  int64_t s = 50, batch = 2, heads = 4, d = 64;
  int64_t e() const { return heads * d; }
};
ValueId sequence_first_attention(GraphBuilder& b, ValueId p, const SeqFirst& m) {
  Graph& g = b.graph();
  const DType t = DType::kFloat16;
  const int64_t e = m.e();
  auto cst = [&](const std::string& name, std::vector<int64_t> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return g.add_constant(name, Tensor::from_int64s({n}, v));
  };
  auto part = [&](int i) {
    const std::string k = std::to_string(i);
    ValueId v = b.node("Slice", {p, cst("st" + k, {i * e}), cst("en" + k, {(i + 1) * e}), cst("ax" + k, {2})});
    v = b.node("Reshape", {v, cst("hs" + k, {m.s, m.batch * m.heads, m.d})});
    v = b.node("Transpose", {v}, {{"perm", ints({1, 0, 2})}});
    return b.node("Reshape", {v, cst("bh" + k, {m.batch, m.heads, m.s, m.d})});
  };
  Tensor c(t, {});
  c.set(0, 0.35355339);  // sqrt(1/sqrt(64)) on both operands, as the exporter writes it
  ValueId scale = g.add_constant("scale", c);
  ValueId q = b.node("Mul", {part(0), scale});
  ValueId kt = b.node("Mul", {b.node("Transpose", {part(1)}, {{"perm", ints({0, 1, 3, 2})}}), scale});
  ValueId pr = b.node("Softmax", {b.node("MatMul", {q, kt})}, {{"axis", i64(-1)}});
  ValueId o = b.node("MatMul", {pr, part(2)});
  return b.node("Reshape", {b.node("Transpose", {o}, {{"perm", ints({2, 0, 1, 3})}}), cst("rows", {m.s * m.batch, e})});
}

// The attention alone: fuse_copy_chains makes q/k/v strided copies of the projection;
// fuse_attention_operands reads them in place as 3-D operands (no B*H-batch collapse possible).
TEST(GpuAttention, SequenceFirstMultiheadAttentionReadsTheProjection) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.graph().opset = 17;
  const SeqFirst m;
  ValueId p = b.input("p", {m.s, m.batch, 3 * m.e()}, DType::kFloat16);
  b.output(sequence_first_attention(b, p, m));
  CaseOptions opt;
  opt.expect_ops_after_pipeline = {"StridedAttention"};
  run_case(b.graph(), "attn_f16_sequence_first_mha", opt);
}

// The whole sequence-first block as torchvision's ViT exports it: x [B, S, E] -> Transpose to
// [S, B, E] -> packed in-projection (MatMul + Add) -> the attention above -> out-projection Gemm ->
// [S, B, E] -> Transpose back -> + x. cancel_row_permutations makes both projections read and write
// rows in (b, s) order (no Transpose, no row gather) and the skip connection the out-projection's
// residual input.
TEST(GpuAttention, SequenceFirstBlockProjectionsKeepRowOrder) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  Graph& g = b.graph();
  g.opset = 17;
  const SeqFirst m;
  const int64_t e = m.e();
  const DType t = DType::kFloat16;
  ValueId x = b.input("x", {m.batch, m.s, e}, t);
  ValueId xs = b.node("Transpose", {x}, {{"perm", ints({1, 0, 2})}});
  ValueId p = b.node("Add", {b.node("MatMul", {xs, b.weight("w_in", {e, 3 * e}, -0.06, 0.06, t)}),
                             b.weight("b_in", {3 * e}, -0.1, 0.1, t)});
  ValueId rows = sequence_first_attention(b, p, m);
  ValueId proj = b.node("Gemm", {rows, b.weight("w_out", {e, e}, -0.06, 0.06, t), b.weight("b_out", {e}, -0.1, 0.1, t)},
                        {{"transB", i64(1)}});
  ValueId sbe = g.add_constant("sbe", Tensor::from_int64s({3}, {m.s, m.batch, e}));
  ValueId back = b.node("Transpose", {b.node("Reshape", {proj, sbe})}, {{"perm", ints({1, 0, 2})}});
  b.output(b.node("Add", {x, back}));
  CaseOptions opt;
  opt.expect_ops_after_pipeline = {"StridedAttention", "FusedGemm"};
  run_case(g, "attn_f16_sequence_first_block", opt);
}

// The dynamo exporter's SDPA at opset 23 (BERT): three projections of h, each split into heads by
// Reshape + Transpose(0,2,1,3), the Attention op with a boolean mask [B, 1, S, S], the context
// transposed back and merged. The transposes become views (fuse_attention_operands), the mask an
// additive one (one Where), and the three projections one GEMM read in place
// (merge_strided_qkv_projections).
TEST(GpuAttention, DynamoSdpaHeadTransposesBoolMaskMergedProjections) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  Graph& g = b.graph();
  g.opset = 23;
  const int64_t batch = 2, seq = 40, heads = 4, d = 64, e = heads * d;
  const DType t = DType::kFloat16;
  ValueId h = b.input("h", {batch, seq, e}, t);
  ValueId mask = b.input("mask", {batch, 1, seq, seq}, DType::kBool);
  ValueId hs = g.add_constant("hs", Tensor::from_int64s({4}, {batch, seq, heads, d}));
  ValueId es = g.add_constant("es", Tensor::from_int64s({3}, {batch, seq, e}));
  auto proj = [&](const std::string& name) {
    ValueId y = b.node("Add", {b.node("MatMul", {h, b.weight("w_" + name, {e, e}, -0.06, 0.06, t)}),
                               b.weight("b_" + name, {e}, -0.1, 0.1, t)});
    return b.node("Transpose", {b.node("Reshape", {y, hs})}, {{"perm", ints({0, 2, 1, 3})}});
  };
  ValueId o = b.node("Attention", {proj("q"), proj("k"), proj("v"), mask}, {{"scale", f32(0.125f)}});
  b.output(b.node("Reshape", {b.node("Transpose", {o}, {{"perm", ints({0, 2, 1, 3})}}), es}));
  CaseOptions opt;
  opt.expect_ops_after_pipeline = {"StridedAttention", "Where", "FusedGemm"};
  run_case(g, "attn_f16_dynamo_sdpa_bool_mask", opt);
}

TEST(GpuAttention, PastAndPresentWithProbabilities) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  Graph& g = b.graph();
  g.opset = 23;
  std::vector<ValueId> in = {b.input("q", {1, 4, 3, 64}, DType::kFloat16), b.input("k", {1, 2, 3, 64}, DType::kFloat16),
                             b.input("v", {1, 2, 3, 64}, DType::kFloat16), kNoValue,
                             b.input("past_k", {1, 2, 10, 64}, DType::kFloat16),
                             b.input("past_v", {1, 2, 10, 64}, DType::kFloat16)};
  std::vector<ValueId> out;
  for (const char* name : {"y", "present_k", "present_v", "probs"}) out.push_back(g.add_value(name));
  g.nodes.push_back(Node{"attn", "Attention", "", in, out, {{"is_causal", i64(1)}, {"qk_matmul_output_mode", i64(3)}}});
  for (ValueId o : out) b.output(o);
  run_case(g, "attn_f16_past_present_probs");
}

// LLaMA's MLP: the gate and up MatMuls of one input and the written-out gated SiLU -> one GEMM with
// both weights side by side and aotc.SwiGLUPacked reading its two halves in place
// (merge_swiglu_projections; 136 columns a half: fp16 vectors, the up half 272 bytes into a row).
TEST(GpuActivations, GateAndUpProjectionsRunAsOneGemm) {
  AOTC_REQUIRE_GPU();
  for (DType t : {DType::kFloat32, DType::kFloat16}) {
    GraphBuilder b;
    b.graph().opset = 23;
    ValueId x = b.input("x", {2, 9, 64}, t);
    ValueId g = b.node("MatMul", {x, b.weight("wg", {64, 136}, -0.2, 0.2, t)});
    ValueId u = b.node("MatMul", {x, b.weight("wu", {64, 136}, -0.2, 0.2, t)});
    b.output(b.node("Mul", {b.node("Mul", {g, b.node("Sigmoid", {g})}), u}));
    CaseOptions opt;
    opt.expect_ops_after_pipeline = {"SwiGLUPacked"};
    run_case(b.graph(), std::string("swiglu_merged_") + dtype_name(t), opt);
  }
}

// LLaMA's MLP gate written out: Mul(Mul(g, Sigmoid(g)), u) -> one SwiGLU kernel (fuse_swiglu).
TEST(GpuActivations, GatedSiluRunsAsOneSwiglu) {
  AOTC_REQUIRE_GPU();
  for (DType t : {DType::kFloat32, DType::kFloat16}) {
    GraphBuilder b;
    b.graph().opset = 23;
    ValueId g = b.input("g", {3, 17, 258}, t), u = b.input("u", {3, 17, 258}, t);
    b.output(b.node("Mul", {b.node("Mul", {g, b.node("Sigmoid", {g})}), u}));
    CaseOptions opt;
    opt.expect_ops_after_pipeline = {"SwiGLU"};
    run_case(b.graph(), std::string("swiglu_pattern_") + dtype_name(t), opt);
  }
}

TEST(GpuNorms, RmsNormalizationFp32AndFp16) {
  AOTC_REQUIRE_GPU();
  for (DType t : {DType::kFloat32, DType::kFloat16}) {
    GraphBuilder b;
    b.graph().opset = 23;
    b.output(b.node("RMSNormalization", {b.input("x", {3, 7, 771}, t), b.weight("scale", {771}, -1, 1, t)}));
    run_case(b.graph(), std::string("rms_") + dtype_name(t));
  }
  // 16-bit rows of a multiple of 8: the warp-per-row kernel (LLaMA's hidden size; 21 rows leave
  // inactive warps in the last block).
  GraphBuilder b;
  b.graph().opset = 23;
  b.output(b.node("RMSNormalization", {b.input("x", {3, 7, 768}, DType::kFloat16), b.weight("scale", {768}, -1, 1, DType::kFloat16)},
                  {{"epsilon", Attribute::of_float(1e-6f)}}));
  run_case(b.graph(), "rms_warp_float16");
}

TEST(GpuRotary, HalvesAndInterleavedWithPositions) {
  AOTC_REQUIRE_GPU();
  for (int64_t interleaved : {0, 1}) {
    GraphBuilder b;
    b.graph().opset = 23;
    ValueId x = b.input("x", {2, 3, 7, 64}, DType::kFloat16);
    ValueId cos = b.weight("cos", {29, 16}, -1, 1, DType::kFloat16), sin = b.weight("sin", {29, 16}, -1, 1, DType::kFloat16);
    ValueId pos = b.weight("pos", {2, 7}, 0, 29, DType::kInt64);
    b.output(b.node("RotaryEmbedding", {x, cos, sin, pos}, {{"interleaved", i64(interleaved)}, {"rotary_embedding_dim", i64(32)}}));
    run_case(b.graph(), "rotary_" + std::to_string(interleaved));
  }
}

// MatMul + bias + Gelu(tanh) (GPT-2's MLP) becomes one cuBLASLt call with the GELU_BIAS epilogue;
// fp32 checks its formula against the reference at fp32 tolerance (the erf form differs by up to
// 5e-4 where |x| ~ 2, far above it), fp16 the 16-bit path.
TEST(GpuGelu, TanhGeluInTheMatmulEpilogue) {
  AOTC_REQUIRE_GPU();
  for (DType t : {DType::kFloat32, DType::kFloat16}) {
    GraphBuilder b;
    b.graph().opset = 20;
    ValueId x = b.input("x", {64, 96}, t);
    ValueId w = b.weight("w", {96, 200}, -0.3, 0.3, t);
    ValueId bias = b.weight("bias", {200}, -1, 1, t);
    ValueId y = b.node("Add", {b.node("MatMul", {x, w}), bias});
    b.output(b.node("Gelu", {y}, {{"approximate", Attribute::of_string("tanh")}}));
    CaseOptions options;
    options.expect_ops_after_pipeline = {"FusedGemm"};
    run_case(b.graph(), t == DType::kFloat32 ? "gemm_gelu_tanh_f32" : "gemm_gelu_tanh_f16", options);
  }
}

// The erf GELU after a cuBLASLt GEMM as the epilogue kernel's vector path (templates/
// gemm_epilogue.cu.in: two 16-byte vectors a thread, a block covering 512 of them): 37 x 200 fp16 =
// 925 vectors, so the last block is partial (a tail of 413), and 4096 x 24 = 12288 vectors (24
// whole blocks), both against the CPU reference.
TEST(GpuGelu, ErfGeluEpilogueKernelVectors) {
  AOTC_REQUIRE_GPU();
  for (const auto& [m, n] : std::vector<std::pair<int64_t, int64_t>>{{37, 200}, {4096, 24}}) {
    GraphBuilder b;
    b.graph().opset = 20;
    ValueId x = b.input("x", {m, 96}, DType::kFloat16);
    ValueId w = b.weight("w", {96, n}, -0.3, 0.3, DType::kFloat16);
    ValueId bias = b.weight("bias", {n}, -1, 1, DType::kFloat16);
    b.output(b.node("Gelu", {b.node("Add", {b.node("MatMul", {x, w}), bias})}));
    CaseOptions options;
    options.expect_ops_after_pipeline = {"FusedGemm"};
    options.expect_templates = {"gemm_epilogue"};
    options.absent_templates = {"cutlass_gemm_sm90"};
    run_case(b.graph(), "gemm_gelu_erf_epilogue_" + std::to_string(m), options);
  }
}

// The erf GELU (BERT's, ViT's), which cuBLASLt's epilogues lack, inside CUTLASS 3.x's sm_90a GEMM
// (templates/cutlass_gemm_sm90.cu.in; ir/ops/conv_configs.h gemm_wgmma_config; --gemm-wgmma on,
// the cooperative 128x128 row; passed on an H200 with it and with the ping-pong 128x128 row): M 2000 (a partial
// last row tile), K 264 (a partial K tile), N 2048, against a [K][N] weight (RowMajor B) and an
// [N][K] one (Gemm transB: ColumnMajor B), with bias; alpha 0.5 on the second. The Abs and Neg
// keep A and D at arena addresses (TMA descriptors built at compile time). Batch-1 sizes keep
// cuBLASLt + the epilogue kernel (tests/codegen/wgmma_gemm_test.cc).
TEST(GpuGelu, ErfGeluInTheSm90Gemm) {
  AOTC_REQUIRE_GPU();
  for (bool trans_b : {false, true}) {
    GraphBuilder b;
    b.graph().opset = 20;
    ValueId x = b.input("x", {2000, 264}, DType::kFloat16);
    ValueId w = b.weight("w", trans_b ? Shape{2048, 264} : Shape{264, 2048}, -0.2, 0.2, DType::kFloat16);
    ValueId bias = b.weight("bias", {2048}, -1, 1, DType::kFloat16);
    ValueId a = b.node("Abs", {x});
    ValueId y = trans_b ? b.node("Gemm", {a, w, bias}, {{"transB", i64(1)}, {"alpha", f32(0.5f)}})
                        : b.node("Add", {b.node("MatMul", {a, w}), bias});
    b.output(b.node("Neg", {b.node("Gelu", {y})}));
    CaseOptions options;
    options.expect_ops_after_pipeline = {"FusedGemm"};
    options.expect_templates = {"cutlass_gemm_sm90"};
    options.absent_templates = {"gemm_epilogue"};
    Graph g = b.graph();
    g.target.gemm_wgmma = true;  // --gemm-wgmma on (off by default: measured neutral)
    run_case(g, trans_b ? "gemm_gelu_erf_sm90_tb" : "gemm_gelu_erf_sm90", options);
  }
}

// An LM head (LLaMA's: N a multiple of 8): fp16 rows times a constant, converted to the float32
// output. fuse_output_cast makes it one cuBLASLt call writing float32 D straight into the output.
// The reference rounds the product to fp16 before the Cast (the graph's semantics), the library
// does not: compared with fp16's tolerance.
TEST(GpuMatmul, LmHeadWritesFloatOutput) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.graph().opset = 17;
  ValueId x = b.input("x", {2, 96, 64}, DType::kFloat16);
  ValueId w = b.weight("w", {64, 2000}, -0.25, 0.25, DType::kFloat16);
  b.output(b.node("Cast", {b.node("MatMul", {x, w})}, {{"to", i64(1)}}));
  CaseOptions options;
  options.expect_ops_after_pipeline = {"FusedGemm"};
  options.tolerance_of = DType::kFloat16;
  run_case(b.graph(), "lm_head_fp32_output", options);
}

// A classifier's FC in fp16 with a float output (what the precision pass leaves of ResNet's head):
// the bias row comes along into the float32 GEMM as a float32 constant (fuse_output_cast).
TEST(GpuMatmul, ClassifierBiasWritesFloatOutput) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.graph().opset = 17;
  ValueId x = b.input("x", {3, 264}, DType::kFloat16);
  ValueId w = b.weight("w", {1000, 264}, -0.25, 0.25, DType::kFloat16);
  ValueId c = b.weight("c", {1000}, -2.0, 2.0, DType::kFloat16);
  b.output(b.node("Cast", {b.node("Gemm", {x, w, c}, {{"transB", i64(1)}})}, {{"to", i64(1)}}));
  CaseOptions options;
  options.expect_ops_after_pipeline = {"FusedGemm"};
  options.absent_ops_after_pipeline = {"Cast"};
  options.tolerance_of = DType::kFloat16;
  run_case(b.graph(), "classifier_fp32_output", options);
}

// One row of a 16-bit Gemm against a [N][K] weight on templates/gemv_rows.cu.in (the batch-1
// classifier): ResNet-50's 1 x 1000 x 2048 with a float16 bias and the float32 output
// (fuse_output_cast), a 1 x 37 x 72 with alpha and a Relu in fp16 (N not a multiple of the 8
// columns a block, K not of the 256 a warp pass covers), a bf16 1 x 5 x 64 without bias, and a
// 1 x 672 x 28 with a Sigmoid (K not a multiple of 8).
TEST(GpuMatmul, OneRowGemv) {
  AOTC_REQUIRE_GPU();
  {
    GraphBuilder b;
    b.graph().opset = 17;
    ValueId x = b.input("x", {1, 2048}, DType::kFloat16);
    ValueId w = b.weight("w", {1000, 2048}, -0.25, 0.25, DType::kFloat16);
    ValueId c = b.weight("c", {1000}, -2.0, 2.0, DType::kFloat16);
    b.output(b.node("Cast", {b.node("Gemm", {x, w, c}, {{"transB", i64(1)}})}, {{"to", i64(1)}}));
    CaseOptions options;
    options.absent_ops_after_pipeline = {"Cast"};
    options.tolerance_of = DType::kFloat16;
    run_case(b.graph(), "gemv_classifier_fp32_output", options);
  }
  {
    GraphBuilder b;
    b.graph().opset = 17;
    ValueId x = b.input("x", {1, 72}, DType::kFloat16);
    ValueId w = b.weight("w", {37, 72}, -0.5, 0.5, DType::kFloat16);
    ValueId c = b.weight("c", {37}, -1.0, 1.0, DType::kFloat16);
    b.output(b.node("Relu", {b.node("Gemm", {x, w, c}, {{"transB", i64(1)}, {"alpha", f32(0.75f)}})}));
    run_case(b.graph(), "gemv_relu_alpha");
  }
  {
    GraphBuilder b;
    b.graph().opset = 17;
    ValueId x = b.input("x", {1, 64}, DType::kBFloat16);
    ValueId w = b.weight("w", {5, 64}, -0.5, 0.5, DType::kBFloat16);
    b.output(b.node("Gemm", {x, w}, {{"transB", i64(1)}}));
    run_case(b.graph(), "gemv_bf16");
  }
  {
    // K = 28 (not whole 16-byte rows: the element-wise form) with a Sigmoid.
    GraphBuilder b;
    b.graph().opset = 17;
    ValueId x = b.input("x", {1, 28}, DType::kFloat16);
    ValueId w = b.weight("w", {672, 28}, -0.5, 0.5, DType::kFloat16);
    ValueId c = b.weight("c", {672}, -1.0, 1.0, DType::kFloat16);
    b.output(b.node("Sigmoid", {b.node("Gemm", {x, w, c}, {{"transB", i64(1)}})}));
    CaseOptions options;
    options.expect_templates = {"gemv_rows"};
    options.absent_ops_after_pipeline = {"Sigmoid"};
    run_case(b.graph(), "gemv_k28_sigmoid", options);
  }
}

// --matmul-impl reference: the projections, the tanh-GELU epilogue, the bias and the residual on
// aotc's own GEMM kernel (no cuBLASLt kernel in the library: the racecheck runs' build), fp32
// and fp16, against the CPU reference.
TEST(GpuMatmul, ReferenceImplMatchesTheReference) {
  AOTC_REQUIRE_GPU();
  for (const DType t : {DType::kFloat32, DType::kFloat16}) {
    GraphBuilder b;
    b.graph().opset = 20;
    ValueId x = b.input("x", {2, 48, 64}, t);
    ValueId w1 = b.weight("w1", {64, 96}, -0.2, 0.2, t);
    ValueId b1 = b.weight("b1", {96}, -0.5, 0.5, t);
    ValueId w2 = b.weight("w2", {96, 64}, -0.2, 0.2, t);
    ValueId h = b.node("Gelu", {b.node("Add", {b.node("MatMul", {x, w1}), b1})},
                       {{"approximate", Attribute::of_string("tanh")}});
    b.output(b.node("Add", {b.node("MatMul", {h, w2}), x}));
    b.graph().target.matmul_reference = true;
    run_case(b.graph(), t == DType::kFloat16 ? "mlp_reference_gemm_fp16" : "mlp_reference_gemm_fp32");
  }
}

// Float GEMMs of few rows on the CUTLASS SIMT GEMM (ir/ops/conv_configs.h simt_gemm_plan), against
// the CPU reference: GPT-2's batch-1 MLP (c_fc 128x768x3072: 9 K slices on an H200 with the
// reduction kernel, 8 in a cluster, the erf GELU in the epilogue; c_proj 128x3072x768: 16 slices
// with the reduction kernel, 8 in a cluster and 16 in one with --fp32-gemm-max-cluster 16, bias +
// residual), a Gemm with transB, alpha, beta and a full C, 125 K tiles in uneven slices over 13
// columns (the reduction's scalar path; the cluster epilogue's partial column quad), prime sizes
// without a split (ReLU in the kernel's own epilogue), and partial row and column tiles.
TEST(GpuMatmul, Fp32FewRowsOnTheSimtGemm) {
  AOTC_REQUIRE_GPU();
  // Each case twice where the GPU has clusters (sm_90+): the slices summed inside the GEMM kernel
  // across a cluster (the default there; no reduction kernel may run), and with the reduction
  // kernel (--fp32-gemm simt-reduce, the only form before sm_90). `split`: K is cut.
  const std::string arch = gpu_arch();
  const bool clusters = arch.size() > 3 && std::atoi(arch.c_str() + 3) >= 90;
  auto both = [&](const Graph& g, const std::string& label, CaseOptions options, bool split) {
    CaseOptions reduce = options;
    reduce.expect_templates = split ? std::vector<std::string>{"cutlass_gemm", "gemm_splitk_reduce"}
                                    : std::vector<std::string>{"cutlass_gemm"};
    Graph r = g;
    r.target.gemm_fp32_cluster = false;
    run_case(r, label + "_reduce", reduce);
    if (!clusters) return;
    options.expect_templates = {"cutlass_gemm"};
    options.absent_templates = {"gemm_splitk_reduce"};
    run_case(g, label, options);
  };
  {
    GraphBuilder b;
    b.graph().opset = 20;
    ValueId x = b.input("x", {1, 128, 768});
    ValueId w1 = b.weight("w1", {768, 3072}, -0.05, 0.05);
    ValueId b1 = b.weight("b1", {3072}, -0.5, 0.5);
    ValueId w2 = b.weight("w2", {3072, 768}, -0.03, 0.03);
    ValueId b2 = b.weight("b2", {768}, -0.5, 0.5);
    ValueId h = b.node("Gelu", {b.node("Add", {b.node("MatMul", {x, w1}), b1})});
    b.output(b.node("Add", {b.node("Add", {b.node("MatMul", {h, w2}), b2}), x}));
    CaseOptions options;
    options.expect_ops_after_pipeline = {"FusedGemm"};
    both(b.graph(), "simt_gemm_mlp", options, true);
    if (clusters) {  // sm_90's non-portable cluster of 16 CTAs (the runtime allows it at create)
      Graph g16 = b.graph();
      g16.target.simt_gemm_max_cluster = 16;
      options.expect_templates = {"cutlass_gemm"};
      options.absent_templates = {"gemm_splitk_reduce"};
      run_case(g16, "simt_gemm_mlp_cluster16", options);
    }
  }
  {
    GraphBuilder b;
    b.graph().opset = 17;
    ValueId x = b.input("x", {197, 256});
    ValueId c = b.input("c", {197, 384});
    ValueId w = b.weight("w", {384, 256}, -0.1, 0.1);
    b.output(b.node("Gemm", {x, w, c}, {{"transB", i64(1)}, {"alpha", f32(0.5f)}, {"beta", f32(2.0f)}}));
    both(b.graph(), "simt_gemm_transb_alpha_beta", {}, true);
  }
  // x [m, k] . w [k, n] + bias (then Relu): uneven slices with the scalar reduction / a partial
  // last column quad in the cluster epilogue (N 13), and primes without a split.
  auto bias_case = [&](int64_t m, int64_t k, int64_t n, double w_range, bool relu, bool split, const std::string& label) {
    GraphBuilder b;
    b.graph().opset = 17;
    ValueId x = b.input("x", {m, k});
    ValueId w = b.weight("w", {k, n}, -w_range, w_range);
    ValueId bias = b.weight("bias", {n}, -1, 1);
    ValueId y = b.node("Add", {b.node("MatMul", {x, w}), bias});
    b.output(relu ? b.node("Relu", {y}) : y);
    both(b.graph(), label, {}, split);
  };
  bias_case(17, 1000, 13, 0.05, false, true, "simt_gemm_uneven_slices");
  bias_case(19, 29, 13, 0.3, true, false, "simt_gemm_primes_relu");
  // 70 rows x 130 columns: partial row and column tiles in every cluster rank's share, Relu after
  // the sum of 8 slices.
  bias_case(70, 2048, 130, 0.03, true, true, "simt_gemm_partial_tiles");
}

// fp16 GEMMs of few rows on the tensor-op form of the same CUTLASS GEMM (--gemm-16bit cutlass;
// ir/ops/conv_configs.h tc_gemm_plan; sm_90+), against the CPU reference: GPT-2's batch-1 MLP (c_fc
// 128x768x3072 in 5 K slices with the erf GELU in the epilogue, c_proj 128x3072x768 in 8 with bias
// and residual), a Gemm with transB, alpha, beta and a full C (197 rows: a partial row tile), 70 x
// 136 outputs (partial row and column tiles, N not a multiple of the 64-wide tile) with ReLU after
// 8 slices, and K 64 unsplit (a cluster of one). Each also on cuBLASLt (the default), which must
// not run the template.
TEST(GpuMatmul, SixteenBitFewRowsOnTensorOps) {
  AOTC_REQUIRE_GPU();
  const std::string arch = gpu_arch();
  if (!(arch.size() > 3 && std::atoi(arch.c_str() + 3) >= 90)) GTEST_SKIP() << "needs sm_90+ (clusters); GPU is " << arch;
  auto both = [&](const Graph& graph, const std::string& label, CaseOptions options) {
    Graph g = graph;
    g.target.gemm_16bit_cluster = true;
    options.expect_templates = {"cutlass_gemm"};
    options.expect_holes = {{"TENSOR_OP", "1"}};
    options.absent_templates = {"gemm_splitk_reduce"};
    run_case(g, label, options);
    Graph lt = g;
    lt.target.gemm_16bit_cluster = false;
    CaseOptions lt_options = options;
    lt_options.expect_templates = {};
    lt_options.expect_holes = {};
    lt_options.absent_templates = {"cutlass_gemm"};
    run_case(lt, label + "_cublaslt", lt_options);
  };
  {
    const DType t = DType::kFloat16;
    GraphBuilder b;
    b.graph().opset = 20;
    ValueId x = b.input("x", {1, 128, 768}, t);
    ValueId w1 = b.weight("w1", {768, 3072}, -0.05, 0.05, t);
    ValueId b1 = b.weight("b1", {3072}, -0.5, 0.5, t);
    ValueId w2 = b.weight("w2", {3072, 768}, -0.03, 0.03, t);
    ValueId b2 = b.weight("b2", {768}, -0.5, 0.5, t);
    ValueId h = b.node("Gelu", {b.node("Add", {b.node("MatMul", {x, w1}), b1})});
    b.output(b.node("Add", {b.node("Add", {b.node("MatMul", {h, w2}), b2}), x}));
    CaseOptions options;
    options.expect_ops_after_pipeline = {"FusedGemm"};
    both(b.graph(), "tc_gemm_mlp", options);
  }
  {
    GraphBuilder b;
    b.graph().opset = 17;
    const DType t = DType::kFloat16;
    ValueId x = b.input("x", {197, 256}, t);
    ValueId c = b.input("c", {197, 384}, t);
    ValueId w = b.weight("w", {384, 256}, -0.1, 0.1, t);
    b.output(b.node("Gemm", {x, w, c}, {{"transB", i64(1)}, {"alpha", f32(0.5f)}, {"beta", f32(2.0f)}}));
    both(b.graph(), "tc_gemm_transb_alpha_beta", {});
  }
  auto bias_case = [&](int64_t m, int64_t k, int64_t n, double w_range, bool relu, const std::string& label) {
    GraphBuilder b;
    b.graph().opset = 17;
    const DType t = DType::kFloat16;
    ValueId x = b.input("x", {m, k}, t);
    ValueId w = b.weight("w", {k, n}, -w_range, w_range, t);
    ValueId bias = b.weight("bias", {n}, -1, 1, t);
    ValueId y = b.node("Add", {b.node("MatMul", {x, w}), bias});
    b.output(relu ? b.node("Relu", {y}) : y);
    both(b.graph(), label, {});
  };
  bias_case(70, 2048, 136, 0.03, true, "tc_gemm_partial_tiles");
  bias_case(16, 64, 3072, 0.3, false, "tc_gemm_unsplit");
}

TEST(GpuGelu, TanhApproximation) {
  AOTC_REQUIRE_GPU();
  GraphBuilder b;
  b.graph().opset = 20;
  b.output(b.node("Gelu", {b.input("x", {5, 1031})}, {{"approximate", Attribute::of_string("tanh")}}));
  CaseOptions options;
  options.input_lo = -6;
  options.input_hi = 6;
  run_case(b.graph(), "gelu_tanh", options);
}

}  // namespace
}  // namespace aotc::gpu_test
