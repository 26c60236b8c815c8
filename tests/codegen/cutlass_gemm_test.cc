// The CUTLASS SIMT GEMM (templates/cutlass_gemm.cu.in + gemm_splitk_reduce.cu.in) for float GEMMs
// of few rows: which GEMMs take it (ir/ops/conv_configs.h simt_gemm_plan), the split-K it picks
// (cluster split-K on sm_90+, the reduction kernel before), the steps and builder args the
// lowering emits, where it must not fire, and that nvcc compiles the library for Jetson's sm_87
// and sm_90, with and without clusters (skipped with a message without nvcc or the CUTLASS
// headers). Results on a GPU: tests/gpu/gpu_transformer_test.cc GpuMatmul.Fp32FewRowsOnTheSimtGemm.
#include <gtest/gtest.h>

#include <functional>

#include "codegen/step_costs.h"
#include "codegen_test_util.h"
#include "library_build.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/op_helpers.h"
#include "ir/shape_inference.h"
#include "ir/text_ir.h"
#include "opt/memory_plan.h"
#include "opt/passes.h"
#include "opt/pipeline.h"

namespace aotc {
namespace {

// y = act(x . w + bias) + r as the passes leave it: one aotc.FusedGemm (bias row as C, the
// residual as input 3), `dtype` everywhere.
Expected<Graph> mlp_projection(int64_t m, int64_t k, int64_t n, const std::string& dtype, const std::string& act,
                               bool residual, const std::vector<std::string>& archs = {"sm_90"}) {
  const std::string t = dtype;
  std::string text = "input %x : " + t + "[" + std::to_string(m) + "x" + std::to_string(k) + "]\n";
  if (residual) text += "input %r : " + t + "[" + std::to_string(m) + "x" + std::to_string(n) + "]\n";
  text += "const %w : " + t + "[" + std::to_string(k) + "x" + std::to_string(n) + "] = random(1)\n";
  text += "const %b : " + t + "[" + std::to_string(n) + "] = random(2)\n";
  text += "%p : " + t + "[?] = MatMul(%x, %w)  # mm\n";
  text += "%q : " + t + "[?] = Add(%p, %b)  # bias\n";
  std::string last = "%q";
  if (!act.empty()) {
    text += "%a : " + t + "[?] = " + act + "(%q)  # act\n";
    last = "%a";
  }
  if (residual) {
    text += "%y : " + t + "[?] = Add(" + last + ", %r)  # residual\n";
    last = "%y";
  }
  text += "output " + last + "\n";
  return test::fused_gemm_graph(text, archs);
}

std::vector<LoweredStep> lowered_steps(const Graph& g, int64_t* scratch = nullptr) {
  std::vector<LoweredStep> steps;
  for (const Node& n : g.nodes) {
    const OpDef* def = default_registry().find(n.op_type, n.domain);
    if (!def || !def->lower) continue;
    auto low = def->lower(n, g);
    EXPECT_TRUE(low.is_ok()) << n.name << ": " << low.status().message();
    if (!low) continue;
    if (scratch && low->scratch_bytes) *scratch = low->scratch_bytes;
    for (const LoweredStep& s : low->steps) steps.push_back(s);
  }
  return steps;
}

std::string hole(const KernelStep& k, const std::string& name) {
  for (const auto& h : k.holes)
    if (h.first == name) return h.second;
  return "<none>";
}

// GPT-2's MLP output projection at batch 1 (M 128, K 3072, N 768) with the reduction kernel
// (--fp32-gemm simt-reduce, and every target before sm_90): 12 tiles of 64x128 for 264 blocks
// (two per SM of 132), so 16 K slices (the most) of 24 K tiles; the kernel writes raw slices to
// the scratch, the reduction adds the bias and the residual.
TEST(CutlassGemm, Fp32FewRowsSplitKWithBiasAndResidual) {
  auto g = mlp_projection(128, 3072, 768, "float", "", /*residual=*/true);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->target.gemm_fp32_cluster = false;
  int64_t scratch = 0;
  std::vector<LoweredStep> steps = lowered_steps(*g, &scratch);
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_EQ(steps[0].kind, LoweredStep::Kind::kKernel);
  const KernelStep& k = steps[0].kernel;
  EXPECT_EQ(k.template_name, "cutlass_gemm");
  EXPECT_TRUE(k.library_params);
  EXPECT_EQ(hole(k, "LAYOUT_B"), "RowMajor");
  EXPECT_EQ(hole(k, "TB_M"), "64LL");
  EXPECT_EQ(hole(k, "act_expr"), "v");  // the slices: one instantiation for every epilogue
  EXPECT_EQ(hole(k, "CLUSTER"), "1LL");
  EXPECT_EQ(hole(k, "CLUSTER_DIMS"), "");
  // M N K lda ldb ldc ldd split alpha beta: the slices are raw (alpha 1, beta 0: C not read).
  EXPECT_EQ(k.builder_args, (std::vector<int64_t>{128, 768, 3072, 3072, 768, 768, 768, 16, float_builder_arg(1.0f), 0}));
  EXPECT_EQ(k.args.back(), kScratchArg);  // D = the workspace
  EXPECT_EQ(k.args[2], kNullArg);         // no bias in the slices
  EXPECT_EQ(k.args[3], kNullArg);         // no C in the slices
  EXPECT_EQ(scratch, 16 * 128 * 768 * 4);
  // The profile's FLOPs: the GEMM's 2*M*N*K on the kernel, none on the reduction.
  EXPECT_EQ(kernel_step_flops(g->nodes.back(), *g, k), 2LL * 128 * 768 * 3072);
  EXPECT_EQ(kernel_step_flops(g->nodes.back(), *g, steps[1].kernel), 0);
  const KernelStep& r = steps[1].kernel;
  EXPECT_EQ(r.template_name, "gemm_splitk_reduce");
  EXPECT_EQ(hole(r, "SPLIT"), "16LL");
  EXPECT_EQ(hole(r, "VEC"), "4LL");
  EXPECT_EQ(hole(r, "HAS_BIAS"), "true");
  EXPECT_EQ(hole(r, "HAS_C"), "true");
  EXPECT_EQ(r.args[0], kScratchArg);
  EXPECT_EQ(r.args[3], g->nodes.back().outputs[0]);
}

// The same projection on sm_90 by default: cluster split-K, 8 slices in a cluster (the portable
// cluster size; 16 with --fp32-gemm-max-cluster 16), one step whose kernel sums the slices and applies bias, residual
// (beta * C) and activation itself: no scratch, no reduction kernel.
TEST(CutlassGemm, Fp32ClusterSplitKIsOneStep) {
  auto g = mlp_projection(128, 3072, 768, "float", "", /*residual=*/true);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  int64_t scratch = 0;
  std::vector<LoweredStep> steps = lowered_steps(*g, &scratch);
  ASSERT_EQ(steps.size(), 1u);
  const KernelStep& k = steps[0].kernel;
  EXPECT_EQ(k.template_name, "cutlass_gemm");
  EXPECT_EQ(hole(k, "CLUSTER"), "8LL");
  EXPECT_EQ(hole(k, "CLUSTER_DIMS"), "__cluster_dims__(1, 1, 8)");
  EXPECT_EQ(k.builder_args, (std::vector<int64_t>{128, 768, 3072, 3072, 768, 768, 768, 8, float_builder_arg(1.0f),
                                                  float_builder_arg(1.0f)}));
  EXPECT_EQ(k.args[2], g->nodes.back().inputs[2]);  // bias
  EXPECT_NE(k.args[3], kNullArg);                   // the residual as C
  EXPECT_EQ(k.args[4], g->nodes.back().outputs[0]);  // D is the output, not a workspace
  EXPECT_EQ(scratch, 0);
  EXPECT_EQ(kernel_step_flops(g->nodes.back(), *g, k), 2LL * 128 * 768 * 3072);
  // The activation is the kernel's too (GPT-2's c_fc with erf GELU: 48 tiles, 9 slices wanted for
  // three blocks per SM, 8 in a cluster).
  auto fc = mlp_projection(128, 768, 3072, "float", "Gelu", /*residual=*/false);
  ASSERT_TRUE(fc.is_ok());
  const std::vector<LoweredStep> fc_steps = lowered_steps(*fc);
  ASSERT_EQ(fc_steps.size(), 1u);
  EXPECT_EQ(hole(fc_steps[0].kernel, "CLUSTER"), "8LL");
  EXPECT_NE(hole(fc_steps[0].kernel, "act_expr").find("erf"), std::string::npos);
  // Not before sm_90 (Jetson Orin's sm_87, or a fat binary that includes it), nor with
  // --fp32-gemm simt-reduce: the two-step form there.
  for (const std::vector<std::string>& archs : std::vector<std::vector<std::string>>{{"sm_87"}, {"sm_87", "sm_90"}}) {
    auto old = mlp_projection(128, 3072, 768, "float", "", true, archs);
    ASSERT_TRUE(old.is_ok());
    const std::vector<LoweredStep> two = lowered_steps(*old);
    ASSERT_EQ(two.size(), 2u) << archs.size();
    EXPECT_EQ(hole(two[0].kernel, "CLUSTER"), "1LL");
    EXPECT_EQ(two[1].kernel.template_name, "gemm_splitk_reduce");
  }
  // --fp32-gemm-max-cluster 16: sm_90's non-portable cluster size.
  g->target.simt_gemm_max_cluster = 16;
  const std::vector<LoweredStep> sixteen = lowered_steps(*g);
  ASSERT_EQ(sixteen.size(), 1u);
  EXPECT_EQ(hole(sixteen[0].kernel, "CLUSTER_DIMS"), "__cluster_dims__(1, 1, 16)");
  EXPECT_EQ(sixteen[0].kernel.builder_args[7], 16);
  g->target.gemm_fp32_cluster = false;
  EXPECT_EQ(lowered_steps(*g).size(), 2u);
  // Without a split (K too short) there is no cluster either.
  auto small = mlp_projection(16, 64, 3072, "float", "", false);
  ASSERT_TRUE(small.is_ok());
  const std::vector<LoweredStep> one = lowered_steps(*small);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(hole(one[0].kernel, "CLUSTER"), "1LL");
}

// The erf GELU (no cuBLASLt epilogue for it: an extra kernel on cuBLASLt) goes into the SIMT
// GEMM's own epilogue when K is not split (M 16: 1 x 24 tiles, K 64 too short to split).
TEST(CutlassGemm, Fp32ErfGeluInTheEpilogueWithoutSplit) {
  auto g = mlp_projection(16, 64, 3072, "float", "Gelu", /*residual=*/false);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  std::vector<LoweredStep> steps = lowered_steps(*g);
  ASSERT_EQ(steps.size(), 1u);
  const KernelStep& k = steps[0].kernel;
  EXPECT_EQ(k.template_name, "cutlass_gemm");
  EXPECT_NE(hole(k, "act_expr"), "v");
  EXPECT_NE(hole(k, "act_expr").find("erf"), std::string::npos);
  EXPECT_EQ(k.builder_args[7], 1);  // split
  EXPECT_EQ(k.args.back(), g->nodes.back().outputs[0]);
}

// Split counts: never an empty slice, at most kSimtGemmMaxSplit, at least
// kGemmMinSliceK K elements (8 SIMT K tiles) a slice, about one wave of the target's SMs.
TEST(CutlassGemm, SplitRuleFillsOneWaveWithoutEmptySlices) {
  const Target h200 = target_from_archs({"sm_90"});
  const Target orin = target_from_archs({"sm_87"});
  const ConvKernelConfig& c = simt_gemm_configs().front();
  // Three blocks per SM (Target's default): 396 on the H200, 48 on Orin.
  EXPECT_EQ(simt_gemm_split(h200, c, 128, 768, 3072), 16);   // 12 tiles: 33 wanted, 16 at most
  EXPECT_EQ(simt_gemm_split(h200, c, 128, 2304, 768), 11);   // 36 tiles
  EXPECT_EQ(simt_gemm_split(h200, c, 128, 3072, 768), 9);    // 48 tiles
  EXPECT_EQ(simt_gemm_split(h200, c, 197, 3072, 768), 5);    // 96 tiles
  EXPECT_EQ(simt_gemm_split(orin, c, 128, 768, 3072), 4);    // 12 tiles on 16 SMs
  // Two blocks per SM (the reduction kernel's measured rule): 264 on the H200, 32 on Orin.
  Target two = h200;
  two.simt_gemm_blocks_per_sm = 2;
  EXPECT_EQ(simt_gemm_split(two, c, 128, 2304, 768), 8);     // 36 tiles
  EXPECT_EQ(simt_gemm_split(two, c, 128, 3072, 768), 6);     // 48 tiles
  EXPECT_EQ(simt_gemm_split(two, c, 197, 3072, 768), 3);     // 96 tiles
  EXPECT_EQ(simt_gemm_split(two, c, 5, 13, 1000), 14);       // 125 K tiles: 14 slices of 9
  EXPECT_EQ(simt_gemm_split(h200, c, 4, 4, 8), 1);
  Target one = h200;
  one.simt_gemm_blocks_per_sm = 1;
  EXPECT_EQ(simt_gemm_split(one, c, 128, 768, 3072), 11);
  EXPECT_EQ(simt_gemm_split(h200, c, 128, 768, 3072, 8), 8);  // a portable cluster's most
  EXPECT_EQ(simt_gemm_split(h200, c, 197, 3072, 768, 8), 5);
  for (int64_t k : {8, 63, 64, 129, 1000, 3072, 4097})
    for (int64_t n : {1, 13, 128, 768}) {
      const int64_t s = simt_gemm_split(h200, c, 4, n, k);
      const int64_t k_tiles = (k + 7) / 8, slice = (k_tiles + s - 1) / s;
      EXPECT_GE(s, 1);
      EXPECT_LE(s, kSimtGemmMaxSplit);
      EXPECT_EQ((k_tiles + slice - 1) / slice, s) << "k " << k << " n " << n;  // no empty slice
      if (s > 1) {
        EXPECT_GE(slice * c.tb_k, kGemmMinSliceK) << "k " << k;
      }
    }
}

// Where it must not fire: fp16 (tensor cores via cuBLASLt), batch-32 rows (cuBLASLt's tiles fill
// the GPU), fewer than kSimtGemmMinRows rows, --fp32-gemm cublaslt, --matmul-impl reference, and
// an architecture before sm_80.
TEST(CutlassGemm, MustNotFire) {
  struct Case {
    const char* why;
    int64_t m;
    const char* dtype;
    std::function<void(Target&)> tweak;
  };
  const std::vector<Case> cases = {
      {"fp16 (--gemm-16bit cublaslt, the default)", 128, "float16", {}},
      {"batch 32 x 128 rows", 4096, "float", {}},
      {"one row (a classifier's fc)", 1, "float", {}},
      {"15 rows", 15, "float", {}},
      {"--fp32-gemm cublaslt", 128, "float", [](Target& t) { t.gemm_fp32_simt = false; }},
      {"--matmul-impl reference", 128, "float", [](Target& t) { t.matmul_reference = true; }},
      {"sm_75", 128, "float", [](Target& t) { t.sms = {75}; }},
  };
  for (const Case& c : cases) {
    auto g = mlp_projection(c.m, 768, 768, c.dtype, "", /*residual=*/true);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    if (c.tweak) c.tweak(g->target);
    for (const LoweredStep& s : lowered_steps(*g))
      EXPECT_FALSE(s.kind == LoweredStep::Kind::kKernel &&
                   (s.kernel.template_name == "cutlass_gemm" || s.kernel.template_name == "gemm_splitk_reduce"))
          << c.why;
  }
  // The same 128-row GEMM does take it by default (the cases above are not vacuous).
  auto g = mlp_projection(128, 768, 768, "float", "", true);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(lowered_steps(*g).front().kernel.template_name, "cutlass_gemm");
  // --conv-config forces a SIMT GEMM configuration even where cuBLASLt's tiles fill the GPU.
  auto big = mlp_projection(4096, 768, 768, "float", "", true);
  ASSERT_TRUE(big.is_ok());
  big->target.conv_config = "sgemm128x128x8_w32x64_s4";
  const std::vector<LoweredStep> forced = lowered_steps(*big);
  ASSERT_FALSE(forced.empty());
  EXPECT_EQ(forced.front().kernel.template_name, "cutlass_gemm");
  EXPECT_EQ(hole(forced.front().kernel, "TB_M"), "128LL");
}

// Gemm(transB=1, alpha, beta, full C): B read column-major, alpha and beta reach the epilogue.
TEST(CutlassGemm, TransposedBAlphaBetaAndFullC) {
  auto g = parse_text_ir(R"(
    input %x : float[17x29]
    input %c : float[17x13]
    const %w : float[13x29] = random(1)
    %y : float[?] = Gemm(%x, %w, %c) {transB=1, alpha=0.5, beta=2.0}  # g
    output %y
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 17;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_90"});
  std::vector<LoweredStep> steps = lowered_steps(*g);
  ASSERT_EQ(steps.size(), 1u);
  const KernelStep& k = steps[0].kernel;
  EXPECT_EQ(k.template_name, "cutlass_gemm");
  EXPECT_EQ(hole(k, "LAYOUT_B"), "ColumnMajor");
  EXPECT_EQ(k.builder_args, (std::vector<int64_t>{17, 13, 29, 29, 29, 13, 13, 1, float_builder_arg(0.5f), float_builder_arg(2.0f)}));
  EXPECT_EQ(k.args[3], g->nodes[0].inputs[2]);  // C
}

// A classifier Gemm as the exporters write it (transB = 1, bias, then an activation and fuse_epilogue):
// `m` rows x K `k` against [n][k], `dtype`.
Expected<Graph> classifier(int64_t m, int64_t k, int64_t n, const std::string& dtype, bool trans_b = true,
                           const std::string& act = "") {
  const std::string t = dtype;
  std::string text = "input %x : " + t + "[" + std::to_string(m) + "x" + std::to_string(k) + "]\n";
  text += "const %w : " + t + "[" + (trans_b ? std::to_string(n) + "x" + std::to_string(k) : std::to_string(k) + "x" + std::to_string(n)) +
          "] = random(1)\n";
  text += "const %b : " + t + "[" + std::to_string(n) + "] = random(2)\n";
  text += "%y : " + t + "[?] = Gemm(%x, %w, %b) {transB=" + (trans_b ? "1" : "0") + "}  # fc\n";
  std::string last = "%y";
  if (!act.empty()) {
    text += "%a : " + t + "[?] = " + act + "(%y)  # act\n";
    last = "%a";
  }
  text += "output " + last + "\n";
  auto g = parse_text_ir(text);
  if (!g) return g;
  g->opset = 17;
  AOTC_RETURN_IF_ERROR(infer_shapes(*g));
  g->target = target_from_archs({"sm_90"});
  auto changed = fuse_epilogue(*g);
  if (!changed) return changed.status();
  return g;
}

// One row of a 16-bit Gemm against a [N][K] weight (a batch-1 classifier: ResNet-50's 1 x 1000 x
// 2048) is one gemv_rows kernel: a warp per column, 8 a block (125 blocks), bias and activation
// in it, the profile's FLOPs 2 M N K; K not a multiple of 8 (squeeze-excitation's 28 -> 672
// expansion) takes the template's element-wise rows; must not fire for two rows, a [K][N] weight,
// float, --gemv off, --matmul-impl reference. nvcc compiles both forms for sm_87 and sm_90.
TEST(CutlassGemm, OneRowSixteenBitGemmIsAGemv) {
  auto g = classifier(1, 2048, 1000, "float16", true, "Relu");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  std::vector<LoweredStep> steps = lowered_steps(*g);
  ASSERT_EQ(steps.size(), 1u);
  ASSERT_EQ(steps[0].kind, LoweredStep::Kind::kKernel);
  const KernelStep& k = steps[0].kernel;
  EXPECT_EQ(k.template_name, "gemv_rows");
  EXPECT_EQ(k.grid.x, 125);
  EXPECT_EQ(k.block.x, 256);
  EXPECT_EQ(hole(k, "M"), "1LL");
  EXPECT_EQ(hole(k, "N"), "1000LL");
  EXPECT_EQ(hole(k, "K"), "2048LL");
  EXPECT_EQ(hole(k, "HAS_BIAS"), "1");
  EXPECT_NE(hole(k, "act_expr"), "v");  // the Relu is in the kernel
  const Node* fc = nullptr;
  for (const Node& n : g->nodes)
    if (n.name == "fc") fc = &n;
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(kernel_step_flops(*fc, *g, k), 2 * 1000 * 2048);
  struct Case {
    const char* why;
    int64_t m, k;
    const char* dtype;
    bool trans_b;
    std::function<void(Target&)> tweak;
  };
  const std::vector<Case> cases = {
      {"two rows", 2, 2048, "float16", true, {}},
      {"[K][N] weight", 1, 2048, "float16", false, {}},
      {"float", 1, 2048, "float", true, {}},
      {"--gemv off", 1, 2048, "float16", true, [](Target& t) { t.gemm_gemv = false; }},
      {"--matmul-impl reference", 1, 2048, "float16", true, [](Target& t) { t.matmul_reference = true; }},
  };
  for (const Case& c : cases) {
    auto h = classifier(c.m, c.k, 1000, c.dtype, c.trans_b);
    ASSERT_TRUE(h.is_ok()) << h.status().message();
    if (c.tweak) c.tweak(h->target);
    for (const LoweredStep& s : lowered_steps(*h))
      EXPECT_FALSE(s.kind == LoweredStep::Kind::kKernel && s.kernel.template_name == "gemv_rows") << c.why;
  }
  auto b16 = classifier(1, 64, 5, "bfloat16");
  ASSERT_TRUE(b16.is_ok()) << b16.status().message();
  b16->target = target_from_archs({"sm_87", "sm_90"});
  const std::vector<LoweredStep> bs = lowered_steps(*b16);
  ASSERT_EQ(bs.size(), 1u);
  EXPECT_EQ(bs[0].kernel.template_name, "gemv_rows");
  auto k28 = classifier(1, 28, 672, "float16", true, "Sigmoid");
  ASSERT_TRUE(k28.is_ok()) << k28.status().message();
  const std::vector<LoweredStep> ks = lowered_steps(*k28);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kernel.template_name, "gemv_rows");
  EXPECT_EQ(hole(ks[0].kernel, "K"), "28LL");
  const std::string nvcc = test::find_nvcc();
  if (!test::tool_runs(nvcc) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
  g->target = target_from_archs({"sm_87", "sm_90"});
  k28->target = target_from_archs({"sm_87", "sm_90"});
  for (Graph* graph : {&*g, &*b16, &*k28}) {
    auto plan = plan_memory(*graph);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    const std::string sources = test::compile_block_sources(*graph, *plan, {"sm_87", "sm_90"}, "", "gemv");
    EXPECT_NE(sources.find("One warp per output column n"), std::string::npos);
  }
}

// --pool-gemm on: a batch-1 CNN's head (1x1 conv + ReLU6, GlobalAveragePool, Flatten, the
// classifier Gemm, fp16) becomes one aotc.PoolGemm through the whole pipeline, and nvcc compiles its
// cluster kernel (templates/pool_gemv_cluster.cu.in: 8 CTAs a cluster, the classifier's float
// output; the pool's clamp is compiled either way) for sm_90.
TEST(CutlassGemm, PooledHeadClusterKernelCompilesForHopper) {
  auto g = parse_text_ir(R"(
    input %x : float[1x32x7x7]
    const %w1 : float[2048x32x1x1] = random(1, -0.3, 0.3)
    const %b1 : float[2048] = random(2, -0.2, 1)
    const %lo : float[scalar] = [0]
    const %hi : float[scalar] = [6]
    const %w2 : float[1000x2048] = random(3, -0.2, 0.2)
    const %b2 : float[1000] = random(4, -1, 1)
    %e : float[?] = Conv(%x, %w1, %b1)  # last_conv
    %r : float[?] = Clip(%e, %lo, %hi)  # relu6
    %p : float[?] = GlobalAveragePool(%r)  # pool
    %f : float[?] = Flatten(%p) {axis=1}  # flatten
    %y : float[?] = Gemm(%f, %w2, %b2) {transB=1}  # fc
    output %y
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 17;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_90"});
  g->target.precision.dtype = DType::kFloat16;
  g->target.pool_gemm = true;
  auto stats = run_pipeline(*g, PipelineOptions{});
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  const std::vector<LoweredStep> steps = lowered_steps(*g);
  bool cluster = false;
  for (const LoweredStep& s : steps)
    if (s.kind == LoweredStep::Kind::kKernel && s.kernel.template_name == "pool_gemv_cluster") {
      cluster = true;
      EXPECT_EQ(s.kernel.cluster_size, kPoolGemmCluster);
      EXPECT_EQ(hole(s.kernel, "TD"), "float");  // fuse_output_cast's float classifier output
    }
  EXPECT_TRUE(cluster);
  const std::string nvcc = test::find_nvcc();
  if (!test::tool_runs(nvcc) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
  auto plan = plan_memory(*g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const std::string sources = test::compile_block_sources(*g, *plan, {"sm_90"}, "", "pool-gemm");
  EXPECT_NE(sources.find("__cluster_dims__(8LL, 1, 1)"), std::string::npos);
}

// nvcc compiles the cluster split-K kernel for sm_90 (GPT-2's MLP projection with its residual, 8
// and 16 CTAs a cluster).
TEST(CutlassGemm, ClusterLibraryCompilesForHopper) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  for (int max_cluster : {8, 16}) {
    auto g = mlp_projection(128, 3072, 768, "float", "", /*residual=*/true, {"sm_90"});
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    g->target.simt_gemm_max_cluster = max_cluster;
    auto plan = plan_memory(*g);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    const std::string sources = test::compile_block_sources(*g, *plan, {"sm_90"}, include,
                                                            "cutlass-gemm-cluster" + std::to_string(max_cluster));
    ASSERT_FALSE(sources.empty());
    EXPECT_NE(sources.find("__cluster_dims__(1, 1, " + std::to_string(max_cluster) + ")"), std::string::npos);
    EXPECT_EQ(sources.find("The second half of a parallel split-K GEMM"), std::string::npos);  // no reduction kernel
  }
}

// fp16 GEMMs of few rows on sm_90 with --gemm-16bit cutlass (tc_gemm_plan): the template's tensor-op form, 64 x 64 tiles,
// K split across a cluster, bias, residual and activation in the kernel: one step. GPT-2's shapes
// at batch 1 on 132 SMs and 3 blocks an SM (396 wanted): c_proj 128 x 768 x 768 has 24 tiles and
// 24 K tiles of 32, so 8 slices (a portable cluster's most) of 3; c_fc 128 x 3072 x 768 (96 tiles)
// 5 slices of 5 K tiles; the MLP projection 128 x 768 x 3072 8 slices of 12.
TEST(CutlassGemm, SixteenBitFewRowsOnTensorOpsInACluster) {
  struct Case {
    int64_t m, k, n;
    const char* act;
    bool residual;
    int64_t split;
  };
  for (const Case& c : {Case{128, 768, 768, "", true, 8}, Case{128, 768, 3072, "Gelu", false, 5},
                        Case{128, 3072, 768, "", true, 8}}) {
    {
      auto g = mlp_projection(c.m, c.k, c.n, "float16", c.act, c.residual);
      ASSERT_TRUE(g.is_ok()) << g.status().message();
      g->target.gemm_16bit_cluster = true;
      int64_t scratch = 0;
      const std::vector<LoweredStep> steps = lowered_steps(*g, &scratch);
      ASSERT_EQ(steps.size(), 1u) << c.n;
      const KernelStep& k = steps[0].kernel;
      EXPECT_EQ(k.template_name, "cutlass_gemm");
      EXPECT_EQ(hole(k, "TENSOR_OP"), "1");
      EXPECT_EQ(hole(k, "ELEMENT"), "cutlass::half_t");
      EXPECT_EQ(hole(k, "OP_CLASS"), "cutlass::arch::OpClassTensorOp");
      EXPECT_EQ(hole(k, "INSTRUCTION"), "16, 8, 16");
      EXPECT_EQ(hole(k, "ALIGN_A"), "8");
      EXPECT_EQ(hole(k, "TB_M"), "64LL");
      EXPECT_EQ(hole(k, "TB_N"), "64LL");
      EXPECT_EQ(hole(k, "CLUSTER"), int_literal(c.split));
      EXPECT_EQ(k.builder_args[7], c.split) << c.n;
      EXPECT_EQ(k.args[4], g->nodes.back().outputs[0]);  // D is the output
      EXPECT_EQ(k.args[3] != kNullArg, c.residual);
      EXPECT_EQ(scratch, 0);
      if (*c.act) {
        EXPECT_NE(hole(k, "act_expr").find("erf"), std::string::npos);
      }
    }
  }
  // Unsplit (K of 64: one slice), still the cluster kernel's code, as a cluster of one.
  auto small = mlp_projection(16, 64, 3072, "float16", "", false);
  ASSERT_TRUE(small.is_ok());
  small->target.gemm_16bit_cluster = true;
  const std::vector<LoweredStep> one = lowered_steps(*small);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(hole(one[0].kernel, "TENSOR_OP"), "1");
  EXPECT_EQ(hole(one[0].kernel, "CLUSTER"), "1LL");
  EXPECT_EQ(hole(one[0].kernel, "CLUSTER_DIMS"), "");
  // --conv-config picks another row of its table.
  auto forced = mlp_projection(128, 768, 768, "float16", "", true);
  ASSERT_TRUE(forced.is_ok());
  forced->target.gemm_16bit_cluster = true;
  forced->target.conv_config = "hgemm64x128x32_w32x64_s4";
  EXPECT_EQ(hole(lowered_steps(*forced).front().kernel, "TB_N"), "128LL");
}

// Where the tensor-op form must not fire, with --gemm-16bit cutlass: a target before sm_90 (no
// clusters; a fat binary with sm_87 too), rows that fill cuBLASLt's tiles, fewer than
// kSimtGemmMinRows rows, K or a row-major B's N not a multiple of 8 (16-byte cp.async), bf16 (not
// checked on a GPU), --matmul-impl reference; and without the flag (the default).
TEST(CutlassGemm, SixteenBitTensorOpMustNotFire) {
  struct Case {
    const char* why;
    int64_t m, k, n;
    std::vector<std::string> archs;
    std::function<void(Target&)> tweak;
    const char* dtype = "float16";
  };
  const std::vector<Case> cases = {
      {"sm_87", 128, 768, 768, {"sm_87"}, {}},
      {"sm_87 and sm_90", 128, 768, 768, {"sm_87", "sm_90"}, {}},
      {"--gemm-16bit cublaslt (the default)", 128, 768, 768, {"sm_90"}, [](Target& t) { t.gemm_16bit_cluster = false; }},
      {"batch 32 x 128 rows", 4096, 768, 768, {"sm_90"}, {}},
      {"15 rows", 15, 768, 768, {"sm_90"}, {}},
      {"K 764", 128, 764, 768, {"sm_90"}, {}},
      {"N 764", 128, 768, 764, {"sm_90"}, {}},
      {"bf16", 128, 768, 768, {"sm_90"}, {}, "bfloat16"},
      {"--matmul-impl reference", 128, 768, 768, {"sm_90"}, [](Target& t) { t.matmul_reference = true; }},
  };
  for (const Case& c : cases) {
    auto g = mlp_projection(c.m, c.k, c.n, c.dtype, "", /*residual=*/true, c.archs);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    g->target.gemm_16bit_cluster = true;
    if (c.tweak) c.tweak(g->target);
    for (const LoweredStep& s : lowered_steps(*g))
      EXPECT_FALSE(s.kind == LoweredStep::Kind::kKernel && s.kernel.template_name == "cutlass_gemm") << c.why;
  }
  Target on = target_from_archs({"sm_90"});
  on.gemm_16bit_cluster = true;
  EXPECT_FALSE(tc_gemm_plan(on, DType::kFloat32, 128, 768, 768, false).has_value());
  // N need not be a multiple of 8 when B is column-major (its rows are K long).
  EXPECT_TRUE(tc_gemm_plan(on, DType::kFloat16, 128, /*n=*/764, /*k=*/768, /*trans_b=*/true).has_value());
  EXPECT_FALSE(tc_gemm_plan(target_from_archs({"sm_90"}), DType::kFloat16, 128, 768, 768, false).has_value());
}

// nvcc compiles the tensor-op form for sm_90: split across a cluster with a residual and the erf
// GELU, and unsplit (a cluster of one) with a column-major B.
TEST(CutlassGemm, SixteenBitTensorOpLibraryCompilesForHopper) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  auto g = mlp_projection(128, 3072, 768, "float16", "Gelu", /*residual=*/true, {"sm_90"});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->target.gemm_16bit_cluster = true;
  auto plan = plan_memory(*g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const std::string sources = test::compile_block_sources(*g, *plan, {"sm_90"}, include, "cutlass-gemm-tc");
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("__cluster_dims__(1, 1, 8)"), std::string::npos);
  EXPECT_NE(sources.find("cutlass::arch::OpClassTensorOp"), std::string::npos);
  EXPECT_NE(sources.find("#if 1\n// The main loop alone"), std::string::npos);  // TENSOR_OP: no CUTLASS epilogue
  auto t = parse_text_ir(R"(
    input %x : float16[16x64]
    const %w : float16[3072x64] = random(1)
    %y : float16[?] = Gemm(%x, %w) {transB=1}  # g
    output %y
  )");
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  t->target = target_from_archs({"sm_90"});
  t->target.gemm_16bit_cluster = true;
  ASSERT_TRUE(infer_shapes(*t).is_ok());
  auto tplan = plan_memory(*t);
  ASSERT_TRUE(tplan.is_ok()) << tplan.status().message();
  const std::string tsources = test::compile_block_sources(*t, *tplan, {"sm_90"}, include, "cutlass-gemm-tc-unsplit");
  ASSERT_FALSE(tsources.empty());
  EXPECT_NE(tsources.find("cutlass::half_t"), std::string::npos);
  EXPECT_NE(tsources.find("ColumnMajor"), std::string::npos);
}

// nvcc compiles both templates (split and unsplit, row- and column-major B) for sm_87 and sm_90.
TEST(CutlassGemm, LibraryCompilesForJetsonAndHopper) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  auto g = mlp_projection(128, 3072, 768, "float", "Gelu", /*residual=*/true, {"sm_87", "sm_90"});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto plan = plan_memory(*g);  // the real plan: it places the split-K workspace
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const std::string sources = test::compile_block_sources(*g, *plan, {"sm_87", "sm_90"}, include, "cutlass-gemm");
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("GemmWithFusedEpilogue"), std::string::npos);
  EXPECT_NE(sources.find("cutlass::arch::OpClassSimt"), std::string::npos);
  EXPECT_NE(sources.find("split-K slices"), std::string::npos);
}

}  // namespace
}  // namespace aotc
