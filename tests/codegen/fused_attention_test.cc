// The ONNX Attention op's fused strategy (CUTLASS's attention kernel,
// templates/cutlass_fmha_forward.cu.in) through lowering and codegen: which nodes take it, the
// problem in the builder args (3-D inputs: (B, S, H*D) rows with head strides; 4-D: B*H batches of
// one head), the masked-rows fix-up after a runtime mask, the cases that must keep the row kernel,
// and that nvcc compiles the library (skipped with a message without nvcc or the CUTLASS headers).
// Results against the CPU reference run on the GPU (tests/ops_transformer's GpuAttention tests).
#include <gtest/gtest.h>

#include <cstring>

#include "codegen/codegen.h"
#include "codegen/cutlass_dir.h"
#include "codegen/launch_program.h"
#include "codegen_test_util.h"
#include "library_build.h"
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/text_ir.h"
#include "opt/memory_plan.h"
#include "opt/pipeline.h"

namespace aotc {
namespace {

Expected<Graph> attention_graph(const std::string& body, const std::vector<std::string>& archs = {"sm_90"}) {
  auto g = parse_text_ir(body);
  if (!g) return g;
  g->opset = 23;
  AOTC_RETURN_IF_ERROR(infer_shapes(*g));
  g->target = target_from_archs(archs);
  return g;
}

// With the real memory plan (scratch buffers placed; the linear test plan places none).
std::vector<ProgramKernel> kernels_of(Graph& g) {
  auto plan = plan_memory(g);
  EXPECT_TRUE(plan.is_ok()) << plan.status().message();
  if (!plan.is_ok()) return {};
  auto program = build_launch_program(g, *plan);
  EXPECT_TRUE(program.is_ok()) << program.status().message();
  return program.is_ok() ? program->kernels : std::vector<ProgramKernel>{};
}

const char* k3dMasked = R"(
    input %q : float16[2x5x64]
    input %k : float16[2x8x64]
    input %v : float16[2x8x32]
    input %m : float16[2x1x1x8]
    %y : float16[?] = Attention(%q, %k, %v, %m) {q_num_heads=4, kv_num_heads=4, scale=0.25}  # attn
    output %y
  )";

TEST(FusedAttention, ThreeDInputsWithARuntimeMaskTakeTheFusedKernelAndTheFixUp) {
  auto g = attention_graph(k3dMasked);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  ASSERT_EQ(ks.size(), 2u);
  const ProgramKernel& f = ks[0];
  EXPECT_EQ(f.template_name, "cutlass_fmha_forward");
  EXPECT_TRUE(f.library_params);
  ASSERT_EQ(f.builder_args.size(), 22u);
  const std::vector<int64_t> dims(f.builder_args.begin(), f.builder_args.begin() + 6);
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 4, 5, 8, 16, 8}));  // B H Sq Sk D Dv
  EXPECT_EQ(f.builder_args[6], 5 * 64);   // Q batch stride
  EXPECT_EQ(f.builder_args[7], 16);       // Q head stride: the head's columns
  EXPECT_EQ(f.builder_args[8], 64);       // Q row stride
  EXPECT_EQ(f.builder_args[14], 32);      // V row stride
  EXPECT_EQ(f.builder_args[15], 4 * 8);   // Y rows: (B, Sq, H*Dv)
  EXPECT_EQ(f.builder_args[16], 1);       // has bias
  EXPECT_EQ(f.builder_args[17], 8);       // mask batch stride
  EXPECT_EQ(f.builder_args[18], 0);       // broadcast over heads
  EXPECT_EQ(f.builder_args[19], 0);       // and over queries
  float scale = 0;
  const uint32_t bits = static_cast<uint32_t>(f.builder_args[20]);
  std::memcpy(&scale, &bits, sizeof scale);
  EXPECT_EQ(scale, 0.25f);
  EXPECT_EQ(f.builder_args[21], 0);  // not causal
  EXPECT_EQ(ks[1].template_name, "attention_zero_masked_rows");
  // One block per distinct mask row: the [2, 1, 1, 8] mask broadcasts over heads and queries.
  EXPECT_EQ(ks[1].grid.x * ks[1].grid.y * ks[1].grid.z, 2);
}

// GpuAttention.FusedPaddingMaskWithAFullyMaskedBatch's shapes (a [B, 1, 1, keys] padding mask,
// here a run-time one): the fused kernel, then the fix-up with one block per batch.
TEST(FusedAttention, PaddingMaskFixUpScansEachBatchOnce) {
  auto g = attention_graph(R"(
    input %q : float16[3x20x128]
    input %k : float16[3x24x128]
    input %v : float16[3x24x128]
    input %m : float16[3x1x1x24]
    %y : float16[?] = Attention(%q, %k, %v, %m) {q_num_heads=4, kv_num_heads=4}  # attn
    output %y
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].template_name, "cutlass_fmha_forward");
  EXPECT_EQ(ks[1].template_name, "attention_zero_masked_rows");
  EXPECT_EQ(ks[1].grid.x * ks[1].grid.y * ks[1].grid.z, 3);
}

TEST(FusedAttention, FourDInputsRunAsBatchesOfOneHead) {
  auto g = attention_graph(R"(
    input %q : bfloat16[2x3x9x64]
    input %k : bfloat16[2x3x9x64]
    input %v : bfloat16[2x3x9x64]
    %y : bfloat16[?] = Attention(%q, %k, %v) {is_causal=1}  # attn
    output %y
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  ASSERT_EQ(ks.size(), 1u);  // no mask: no fix-up
  EXPECT_EQ(ks[0].template_name, "cutlass_fmha_forward");
  EXPECT_EQ(ks[0].builder_args[0], 6);       // B*H batches
  EXPECT_EQ(ks[0].builder_args[1], 1);       // of one head
  EXPECT_EQ(ks[0].builder_args[6], 9 * 64);  // Q batch stride = one head's rows
  EXPECT_EQ(ks[0].builder_args[15], 64);     // Y rows of Dv: (B, H, Sq, Dv)
  EXPECT_EQ(ks[0].builder_args[21], 1);      // causal
}

// Grouped-query heads (12 query heads over 4 KV heads) read in place: the params get K/V batch and
// head strides of 0, the kernel adds (batch, query head / 3)'s offset from the holes.
const char* k4dGrouped = R"(
    input %q : float16[2x12x9x64]
    input %k : float16[2x4x9x64]
    input %v : float16[2x4x9x64]
    %y : float16[?] = Attention(%q, %k, %v) {is_causal=1}  # attn
    output %y
  )";

TEST(FusedAttention, GroupedKvHeadsAreReadInPlace) {
  auto g = attention_graph(k4dGrouped);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  ASSERT_EQ(ks.size(), 1u);
  const ProgramKernel& f = ks[0];
  EXPECT_EQ(f.template_name, "cutlass_fmha_forward");
  EXPECT_EQ(f.builder_args[0], 24);          // B*Hq batches of one head
  EXPECT_EQ(f.builder_args[6], 9 * 64);      // Q: one head's rows a batch
  EXPECT_EQ(f.builder_args[9], 0);           // K batch and head strides: added by the kernel
  EXPECT_EQ(f.builder_args[10], 0);
  EXPECT_EQ(f.builder_args[11], 64);         // K row stride
  EXPECT_EQ(f.builder_args[12], 0);          // V likewise
  EXPECT_EQ(f.builder_args[13], 0);
  auto hole = [&](const char* name) {
    for (const auto& [k, v] : f.holes)
      if (k == name) return v;
    return std::string("(missing)");
  };
  EXPECT_EQ(hole("KV_GROUP"), "3LL");
  EXPECT_EQ(hole("KV_BATCH"), "z / 12");     // the kernel's batch index is b * 12 + h
  EXPECT_EQ(hole("KV_HEAD"), "z % 12");
  EXPECT_EQ(hole("K_SB"), std::to_string(4 * 9 * 64) + "LL");
  EXPECT_EQ(hole("K_SH"), std::to_string(9 * 64) + "LL");
  // Without grouping the holes are inert and the strides are the params'.
  auto plain = attention_graph(R"(
    input %q : float16[2x4x9x64]
    input %k : float16[2x4x9x64]
    input %v : float16[2x4x9x64]
    %y : float16[?] = Attention(%q, %k, %v)
    output %y
  )");
  ASSERT_TRUE(plain.is_ok());
  auto pk = kernels_of(*plain);
  ASSERT_EQ(pk.size(), 1u);
  EXPECT_EQ(pk[0].builder_args[9], 9 * 64);
  for (const auto& [k, v] : pk[0].holes) {
    if (k == "KV_GROUP") {
      EXPECT_EQ(v, "1LL");
    }
  }
}

// fp32 takes the fused kernel's FFMA configuration (Sm75 arch tag: SIMT, IEEE fp32 products), not
// its Sm80 one (3xTF32 on tensor cores).
TEST(FusedAttention, Fp32TakesTheFfmaConfiguration) {
  auto g = attention_graph(R"(
    input %q : float[1x2x8x64]
    input %k : float[1x2x8x64]
    input %v : float[1x2x8x64]
    %y : float[?] = Attention(%q, %k, %v)
    output %y)");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].template_name, "cutlass_fmha_forward");
  std::string element, arch;
  for (const auto& [k, v] : ks[0].holes) {
    if (k == "ELEMENT") element = v;
    if (k == "ARCH") arch = v;
  }
  EXPECT_EQ(element, "float");
  EXPECT_EQ(arch, "cutlass::arch::Sm75");
}

// A constant mask in which every row keeps a key that is not -inf (GPT-2's causal mask written
// with the dtype's lowest value) needs no fix-up after the fused kernel; one with a row of -inf
// only does, as does a runtime mask (ThreeDInputsWithARuntimeMask... above).
TEST(FusedAttention, ConstantMaskWithoutAnEmptyRowNeedsNoFixUp) {
  // An 8 x 8 causal pattern: key j of query i allowed for j <= i, else `masked`; query `empty`'s
  // row (if any) masked entirely with -inf.
  auto causal = [](const std::string& masked, int empty) {
    std::string text = "[";
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j)
        text += std::string(i || j ? ", " : "") + (i == empty ? "-inf" : j <= i ? "0" : masked);
    return text + "]";
  };
  auto kernels = [](const std::string& mask) {
    auto g = attention_graph(R"(
      input %q : float16[1x2x8x16]
      input %k : float16[1x2x8x16]
      input %v : float16[1x2x8x16]
      const %m : float16[1x1x8x8] = )" + mask + R"(
      %y : float16[?] = Attention(%q, %k, %v, %m)
      output %y)");
    EXPECT_TRUE(g.is_ok()) << g.status().message();
    std::vector<std::string> names;
    if (!g) return names;
    for (const ProgramKernel& k : kernels_of(*g)) names.push_back(k.template_name);
    return names;
  };
  const std::vector<std::string> fused = {"cutlass_fmha_forward"};
  const std::vector<std::string> with_fixup = {"cutlass_fmha_forward", "attention_zero_masked_rows"};
  EXPECT_EQ(kernels(causal("-65504", -1)), fused);
  EXPECT_EQ(kernels(causal("-inf", -1)), fused);  // -inf above the diagonal: the diagonal is left
  EXPECT_EQ(kernels(causal("-65504", 3)), with_fixup);
}

// Query blocks: 32 queries a block where 64-query blocks would not fill one wave of SMs (GPT-2 at
// batch 1: 12 heads x 2 blocks = 24 of 132 SMs), 64 where they do (batch 32), or on Jetson's 16
// SMs, or with --attention fused64; head dims over 64 take the 32-query configuration anyway.
TEST(FusedAttention, QueryBlocksFillTheGpu) {
  auto qpb = [](const std::string& shape, const std::vector<std::string>& archs, bool fill, bool force32 = false) {
    auto g = attention_graph("input %q : float16[" + shape + "]\ninput %k : float16[" + shape +
                                 "]\ninput %v : float16[" + shape + "]\n%y : float16[?] = Attention(%q, %k, %v)\noutput %y",
                             archs);
    EXPECT_TRUE(g.is_ok()) << g.status().message();
    if (!g) return std::string();
    g->target.attention_blocks = force32 ? AttentionBlocks::k32 : fill ? AttentionBlocks::kFillSms : AttentionBlocks::k64;
    auto ks = kernels_of(*g);
    if (ks.empty() || ks[0].template_name != "cutlass_fmha_forward") return std::string("not fused");
    for (const auto& [k, v] : ks[0].holes)
      if (k == "QPB") return v;
    return std::string();
  };
  EXPECT_EQ(qpb("1x12x128x64", {"sm_90"}, true), "32LL");
  EXPECT_EQ(qpb("1x12x197x64", {"sm_90"}, true), "32LL");   // ViT: 48 -> 84 blocks
  EXPECT_EQ(qpb("32x12x128x64", {"sm_90"}, true), "64LL");  // 768 blocks
  EXPECT_EQ(qpb("1x12x128x64", {"sm_87"}, true), "64LL");   // 24 blocks on 16 SMs
  EXPECT_EQ(qpb("1x12x128x64", {"sm_90"}, false), "64LL");
  EXPECT_EQ(qpb("1x12x128x128", {"sm_90"}, false), "32LL");  // head dim 128
  EXPECT_EQ(qpb("32x12x128x64", {"sm_90"}, true, true), "32LL");  // --attention fused32
}

class FusedAttentionMustNotFire : public ::testing::TestWithParam<std::pair<const char*, std::string>> {};

TEST_P(FusedAttentionMustNotFire, KeepsTheRowKernel) {
  auto g = attention_graph(GetParam().second, GetParam().first == std::string("Jetson-less target sm_75")
                                                    ? std::vector<std::string>{"sm_75"}
                                                    : std::vector<std::string>{"sm_90"});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  ASSERT_FALSE(ks.empty());
  for (const ProgramKernel& k : ks) EXPECT_NE(k.template_name, "cutlass_fmha_forward") << GetParam().first;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FusedAttentionMustNotFire,
    ::testing::Values(
        std::make_pair("bool mask", std::string(R"(
    input %q : float16[1x2x8x64]
    input %k : float16[1x2x8x64]
    input %v : float16[1x2x8x64]
    input %m : bool[8x8]
    %y : float16[?] = Attention(%q, %k, %v, %m)
    output %y)")),
        std::make_pair("mask rows not 16-byte aligned (7 keys)", std::string(R"(
    input %q : float16[2x5x64]
    input %k : float16[2x7x64]
    input %v : float16[2x7x64]
    input %m : float16[2x1x1x7]
    %y : float16[?] = Attention(%q, %k, %v, %m) {q_num_heads=4, kv_num_heads=4}
    output %y)")),
        std::make_pair("softcap", std::string(R"(
    input %q : float16[1x2x8x64]
    input %k : float16[1x2x8x64]
    input %v : float16[1x2x8x64]
    %y : float16[?] = Attention(%q, %k, %v) {softcap=30.0}
    output %y)")),
        std::make_pair("head dim not a multiple of 8", std::string(R"(
    input %q : float16[1x2x8x20]
    input %k : float16[1x2x8x20]
    input %v : float16[1x2x8x20]
    %y : float16[?] = Attention(%q, %k, %v)
    output %y)")),
        std::make_pair("head dim over 128", std::string(R"(
    input %q : float16[1x2x8x256]
    input %k : float16[1x2x8x256]
    input %v : float16[1x2x8x256]
    %y : float16[?] = Attention(%q, %k, %v)
    output %y)")),
        std::make_pair("4-D mask per batch over several heads (not B*H batches)", std::string(R"(
    input %q : float16[2x2x8x64]
    input %k : float16[2x2x8x64]
    input %v : float16[2x2x8x64]
    input %m : float16[2x1x1x8]
    %y : float16[?] = Attention(%q, %k, %v, %m)
    output %y)")),
        std::make_pair("Jetson-less target sm_75", std::string(R"(
    input %q : float16[1x2x8x64]
    input %k : float16[1x2x8x64]
    input %v : float16[1x2x8x64]
    %y : float16[?] = Attention(%q, %k, %v)
    output %y)"))));

TEST(FusedAttention, SwitchedOffKeepsTheRowKernel) {
  auto g = attention_graph(k3dMasked);
  ASSERT_TRUE(g.is_ok());
  g->target.attention_fused = false;
  for (const ProgramKernel& k : kernels_of(*g)) EXPECT_EQ(k.template_name, "attention_rows");
}

// CUTLASS's sm_90a FMHA (templates/cutlass_fmha_sm90.cu.in): fp16, head dim 64, causal or an
// additive fp16 mask, Q/K/V/Y produced inside the library (TMA descriptors need addresses fixed at create).
std::string sm90_attention_text(const std::string& dtype, int64_t seq, int64_t d, const std::string& attrs,
                                bool with_mask = false) {
  const std::string s = std::to_string(seq), hd = std::to_string(4 * d);
  std::string t = "input %qi : " + dtype + "[2x" + s + "x" + hd + "]\n";
  t += "input %ki : " + dtype + "[2x" + s + "x" + hd + "]\n";
  t += "input %vi : " + dtype + "[2x" + s + "x" + hd + "]\n";
  if (with_mask) t += "input %m : " + dtype + "[2x1x1x" + s + "]\n";
  t += "%q : " + dtype + "[?] = Neg(%qi)\n%k : " + dtype + "[?] = Neg(%ki)\n%v : " + dtype + "[?] = Neg(%vi)\n";
  t += "%y : " + dtype + "[?] = Attention(%q, %k, %v" + std::string(with_mask ? ", %m" : "") +
       ") {q_num_heads=4, kv_num_heads=4" + attrs + "}  # attn\n";
  t += "%o : " + dtype + "[?] = Neg(%y)\noutput %o\n";
  return t;
}

const ProgramKernel* find_template(const std::vector<ProgramKernel>& ks, const std::string& name) {
  for (const ProgramKernel& k : ks)
    if (k.template_name == name) return &k;
  return nullptr;
}

std::string hole_of(const ProgramKernel& k, const std::string& name) {
  for (const auto& h : k.holes)
    if (h.first == name) return h.second;
  return "";
}

TEST(FusedAttention, Sm90FmhaTakesFp16HeadDim64WithFixedOperands) {
  auto g = attention_graph(sm90_attention_text("float16", 200, 64, ", scale=0.1"));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  const ProgramKernel* f = find_template(ks, "cutlass_fmha_sm90");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(find_template(ks, "cutlass_fmha_forward"), nullptr);
  EXPECT_TRUE(f->library_params);
  EXPECT_TRUE(f->host_params);
  ASSERT_EQ(f->builder_args.size(), 20u);
  // B H Sq Sk D, then (row, batch, head) strides of Q, K, V, Y: 3-D inputs are (B, S, H*D) rows.
  EXPECT_EQ(std::vector<int64_t>(f->builder_args.begin(), f->builder_args.begin() + 8),
            (std::vector<int64_t>{2, 4, 200, 200, 64, 256, 200 * 256, 64}));
  EXPECT_EQ(f->builder_args[17], float_builder_arg(0.1f));  // the op's scale, not 1 / sqrt(64)
  EXPECT_EQ(f->builder_args[18], 0);                        // no mask
  ASSERT_EQ(f->args.size(), 5u);                            // Q K V Y and the log-sum-exp scratch
  EXPECT_EQ(f->args[4].space, Location::Space::kArena);
  EXPECT_EQ(hole_of(*f, "FUSION"), "cutlass::fmha::collective::ResidualFusion")
      << "200 keys: the last 128-key tile is partial";
}

TEST(FusedAttention, Sm90FmhaCausalWithWholeKeyTiles) {
  auto g = attention_graph(sm90_attention_text("float16", 128, 64, ", is_causal=1"));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  const ProgramKernel* f = find_template(ks, "cutlass_fmha_sm90");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(hole_of(*f, "FUSION"), "cutlass::fmha::collective::CausalFusion");
  EXPECT_EQ(f->builder_args[17], float_builder_arg(0.125f));  // the op's default 1 / sqrt(D)
}

// BERT's key-padding mask [B, 1, 1, S] (a runtime input): MaskFusion reads row b * S of it for
// every head and query (strides 0 over both), adds mask * 8 (1 / the default scale 1/8) to the raw
// products, and the fix-up step zeroes rows the mask leaves no key in.
TEST(FusedAttention, Sm90FmhaTakesAnAdditivePaddingMask) {
  auto g = attention_graph(sm90_attention_text("float16", 128, 64, "", true));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  const ProgramKernel* f = find_template(ks, "cutlass_fmha_sm90");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(find_template(ks, "cutlass_fmha_forward"), nullptr);
  EXPECT_NE(find_template(ks, "attention_zero_masked_rows"), nullptr) << "a runtime mask may mask a whole row";
  EXPECT_EQ(hole_of(*f, "FUSION"), "MaskFusion");
  EXPECT_EQ(hole_of(*f, "MSB"), "128LL");
  EXPECT_EQ(hole_of(*f, "MSH"), "0LL");
  EXPECT_EQ(hole_of(*f, "MSS"), "0LL");
  EXPECT_EQ(hole_of(*f, "INV_SCALE"), float_literal(8.0f));
  ASSERT_EQ(f->builder_args.size(), 20u);
  EXPECT_EQ(f->builder_args[18], 1);
  ASSERT_EQ(f->args.size(), 6u);  // Q K V Y, the log-sum-exp scratch, the mask
}

// A packed QKV projection split in place (GPT-2's c_attn): after the pipeline the attention reads
// the projection's buffer, and the FMHA's K / V pointers start H*D / 2*H*D elements into its rows
// (KernelStep::arg_byte_offsets, added to the arena offsets in the launch program).
TEST(FusedAttention, Sm90FmhaPackedQkvPointersCarryTheOffsets) {
  auto g = parse_text_ir(R"(
    input %x : float16[2x128x256]
    input %w : float16[256x768]
    const %sp : int64[3] = [256,256,256]
    %p : float16[?] = MatMul(%x, %w)
    %q : float16[?], %k : float16[?], %v : float16[?] = Split(%p, %sp) {axis=2}
    %y : float16[?] = Attention(%q, %k, %v) {q_num_heads=4, kv_num_heads=4, is_causal=1}  # attn
    %o : float16[?] = Neg(%y)
    output %o
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 23;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_90"});
  auto stats = run_pipeline(*g, PipelineOptions{});
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  auto ks = kernels_of(*g);
  const ProgramKernel* f = find_template(ks, "cutlass_fmha_sm90");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->args.size(), 5u);
  EXPECT_EQ(f->args[0].space, Location::Space::kArena);
  EXPECT_EQ(f->args[1].space, Location::Space::kArena);
  EXPECT_EQ(f->args[1].offset - f->args[0].offset, 256 * 2);  // K: 256 halves into each row
  EXPECT_EQ(f->args[2].offset - f->args[0].offset, 512 * 2);  // V
  EXPECT_NE(f->args[1].symbol.find("+ 512ULL"), std::string::npos) << f->args[1].symbol;
  EXPECT_EQ(f->builder_args[5], 768);  // each operand's row stride: the packed row
}

// 197 queries (ViT's tokens): the sm_90a FMHA, and the builder is told to ask CUTLASS's
// can_implement about 200 (its last argument).
TEST(FusedAttention, Sm90FmhaTakes197Queries) {
  auto g = attention_graph(sm90_attention_text("float16", 197, 64, ""));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto ks = kernels_of(*g);
  const ProgramKernel* f = find_template(ks, "cutlass_fmha_sm90");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->builder_args.size(), 20u);
  EXPECT_EQ(f->builder_args[2], 197);
  EXPECT_EQ(f->builder_args[19], 1);
}

// Cases the sm_90a FMHA must leave to the Sm80 kernel (which handles them exactly).
TEST(FusedAttention, Sm90FmhaMustNotFire) {
  struct Case {
    const char* why;
    std::string text;
    std::vector<std::string> archs;
    bool switched_off;
  };
  const std::vector<Case> cases = {
      {"a mask with causal", sm90_attention_text("float16", 128, 64, ", is_causal=1", true), {"sm_90"}, false},
      {"a negative scale with a mask", sm90_attention_text("float16", 128, 64, ", scale=-0.125", true), {"sm_90"},
       false},
      {"head dim 32", sm90_attention_text("float16", 128, 32, ""), {"sm_90"}, false},
      {"head dim 128", sm90_attention_text("float16", 128, 128, ""), {"sm_90"}, false},
      {"an sm_87 target too", sm90_attention_text("float16", 128, 64, ""), {"sm_87", "sm_90"}, false},
      {"bf16", sm90_attention_text("bfloat16", 128, 64, ""), {"sm_90"}, false},
      {"--attention-sm90 off", sm90_attention_text("float16", 128, 64, ""), {"sm_90"}, true},
      {"graph inputs (addresses not fixed at create)", R"(
        input %q : float16[2x128x256]
        input %k : float16[2x128x256]
        input %v : float16[2x128x256]
        %y : float16[?] = Attention(%q, %k, %v) {q_num_heads=4, kv_num_heads=4}
        output %y)", {"sm_90"}, false},
  };
  for (const Case& c : cases) {
    auto g = attention_graph(c.text, c.archs);
    ASSERT_TRUE(g.is_ok()) << c.why << ": " << g.status().message();
    if (c.switched_off) g->target.attention_sm90 = false;
    auto ks = kernels_of(*g);
    EXPECT_EQ(find_template(ks, "cutlass_fmha_sm90"), nullptr) << c.why;
    EXPECT_NE(find_template(ks, "cutlass_fmha_forward"), nullptr) << c.why;
  }
}

TEST(FusedAttention, Sm90FmhaHostParamsAndLibraryBuild) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  bool has_fmha88 = false;
  for (const std::string& d : cutlass_extra_include_dirs(include)) has_fmha88 = has_fmha88 || d.find("88_hopper_fmha") != std::string::npos;
  if (!has_fmha88)
    GTEST_SKIP() << "CUTLASS's examples/88_hopper_fmha is not next to " << include;
  auto g = attention_graph(sm90_attention_text("float16", 128, 64, ", is_causal=1"));
  ASSERT_TRUE(g.is_ok());
  auto plan = plan_memory(*g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const std::string sources = test::compile_block_sources(*g, *plan, {"sm_90"}, include, "fmha_sm90");
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("cutlass::fmha::collective::CausalFusion"), std::string::npos);
  EXPECT_NE(sources.find("FmhaBuilder"), std::string::npos);
}

TEST(FusedAttention, LibraryCompilesForAmpereAndHopper) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  if (cutlass_extra_include_dirs(include).empty())
    GTEST_SKIP() << "CUTLASS's examples/41_fused_multi_head_attention is not next to " << include;
  auto g = attention_graph(k3dMasked, {"sm_80", "sm_90"});
  ASSERT_TRUE(g.is_ok());
  const std::string sources =
      test::compile_block_sources(*g, test::linear_plan(*g), {"sm_80", "sm_90"}, include, "fmha");
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("AttentionKernel<cutlass::half_t, cutlass::arch::Sm80"), std::string::npos);
  EXPECT_NE(sources.find("_params(unsigned char* out, aotc_builder_args a)"), std::string::npos);
  // The grouped-query variant (its in-kernel K/V offsets) compiles too.
  auto grouped = attention_graph(k4dGrouped, {"sm_80", "sm_90"});
  ASSERT_TRUE(grouped.is_ok());
  const std::string gsources =
      test::compile_block_sources(*grouped, test::linear_plan(*grouped), {"sm_80", "sm_90"}, include, "fmha_gqa");
  ASSERT_FALSE(gsources.empty());
  EXPECT_NE(gsources.find("kv_head = (z % 12) / 3LL"), std::string::npos);
  // fp32 (the FFMA configuration) in both query blocks: ViT's 197 queries at batch 1 take the
  // 32-query one on sm_90, with --attention fused64 the 64-query one.
  for (bool fill : {true, false}) {
    auto vit = attention_graph(R"(
      input %q : float[1x12x197x64]
      input %k : float[1x12x197x64]
      input %v : float[1x12x197x64]
      %y : float[?] = Attention(%q, %k, %v)
      output %y)");
    ASSERT_TRUE(vit.is_ok());
    vit->target.attention_blocks = fill ? AttentionBlocks::kFillSms : AttentionBlocks::k64;
    const std::string vsources = test::compile_block_sources(*vit, test::linear_plan(*vit), {"sm_90"}, include,
                                                             fill ? "fmha_fp32_q32" : "fmha_fp32_q64");
    ASSERT_FALSE(vsources.empty());
    EXPECT_NE(vsources.find("AttentionKernel<float, cutlass::arch::Sm75"), std::string::npos);
  }
}

}  // namespace
}  // namespace aotc
