// The sm_90a GEMM (templates/cutlass_gemm_sm90.cu.in) for 16-bit GEMMs whose activation cuBLASLt's
// epilogues lack (the erf GELU of BERT / ViT): the rule of ir/ops/conv_configs.h
// (gemm_wgmma_config), which GEMMs lower to it and which must not (cuBLASLt-capable activations,
// operands whose address changes per run, GEMMs too small to fill the GPU, mixed targets, the
// switch), what the compile-time params builder records for one problem (checked against the
// operands' row-major layouts by hand), and that nvcc builds the library for sm_90a. On a GPU,
// GpuGelu.ErfGeluInTheSm90Gemm compares it with the CPU reference.
#include <gtest/gtest.h>

#include <cstring>

#include "codegen/codegen.h"
#include "codegen/host_params.h"
#include "codegen/launch_program.h"
#include "codegen_test_util.h"
#include "ir/ops/conv_configs.h"
#include "ir/text_ir.h"
#include "library_build.h"
#include "opt/memory_plan.h"
#include "opt/passes.h"

namespace aotc {
namespace {

// y = act(Abs(x) . w + b) -> Neg, as the passes leave it: the Abs keeps A off the graph input and
// the Neg keeps the GEMM's output off the graph output (both would change address per run).
// `a_input` / `d_output` drop one of them.
struct MlpOptions {
  int64_t m = 2000, k = 264, n = 2048;
  std::string dtype = "float16";
  std::string act = "Gelu";  // erf GELU
  std::string act_attrs;
  bool a_input = false, d_output = false, trans_b = false;
  std::vector<std::string> archs = {"sm_90"};
};

Expected<Graph> mlp(const MlpOptions& o) {
  const std::string t = o.dtype, m = std::to_string(o.m), k = std::to_string(o.k), n = std::to_string(o.n);
  std::string text = "input %x : " + t + "[" + m + "x" + k + "]\n";
  text += "const %w : " + t + "[" + (o.trans_b ? n + "x" + k : k + "x" + n) + "] = random(1)\n";
  text += "const %b : " + t + "[" + n + "] = random(2)\n";
  std::string a = "%x";
  if (!o.a_input) {
    text += "%ax : " + t + "[?] = Abs(%x)  # abs\n";
    a = "%ax";
  }
  if (o.trans_b)
    text += "%p : " + t + "[?] = Gemm(" + a + ", %w, %b) {transB=1}  # mm\n";
  else
    text += "%p0 : " + t + "[?] = MatMul(" + a + ", %w)  # mm\n%p : " + t + "[?] = Add(%p0, %b)  # bias\n";
  text += "%h : " + t + "[?] = " + o.act + "(%p)" + (o.act_attrs.empty() ? "" : " {" + o.act_attrs + "}") + "  # act\n";
  std::string last = "%h";
  if (!o.d_output) {
    text += "%y : " + t + "[?] = Neg(%h)  # neg\n";
    last = "%y";
  }
  text += "output " + last + "\n";
  auto g = test::fused_gemm_graph(text, o.archs);
  if (g) g->target.gemm_wgmma = true;  // --gemm-wgmma on (off by default)
  return g;
}

struct Built {
  std::vector<const ProgramKernel*> gemm;  // cutlass_gemm_sm90 kernels
  int epilogue_kernels = 0;                // gemm_epilogue kernels
  size_t matmuls = 0;                      // cuBLASLt calls
};

Built build(Graph& g) {
  static LaunchProgram keep;  // the pointers below point into it
  Built b;
  auto plan = plan_memory(g);
  EXPECT_TRUE(plan.is_ok()) << plan.status().message();
  if (!plan) return b;
  auto p = build_launch_program(g, *plan);
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  if (!p) return b;
  keep = *p;
  for (const ProgramKernel& k : keep.kernels) {
    if (k.template_name == "cutlass_gemm_sm90") b.gemm.push_back(&k);
    if (k.template_name == "gemm_epilogue") ++b.epilogue_kernels;
  }
  b.matmuls = keep.matmuls.size();
  return b;
}

int64_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(GemmWgmma, ConfigurationRuleAndRefusals) {
  Target t = target_from_archs({"sm_90"});
  EXPECT_FALSE(t.gemm_wgmma);  // off by default (measured neutral)
  EXPECT_EQ(gemm_wgmma_config(t, DType::kFloat16, 4096, 3072, 768), std::nullopt);
  t.gemm_wgmma = true;
  auto pick = [](const Target& tt, DType dt, int64_t m, int64_t n, int64_t k) {
    auto c = gemm_wgmma_config(tt, dt, m, n, k);
    return c ? std::string(c->name) : std::string("none");
  };
  // BERT-base batch 32 (4096 rows x 3072 x 768): 32 x 12 = 384 tiles of 128x256, a wave and more.
  EXPECT_EQ(pick(t, DType::kFloat16, 4096, 3072, 768), "gwg128x256x64_coop");
  // ViT-B/16 batch 32 (32 x 197 rows): 50 x 12 tiles.
  EXPECT_EQ(pick(t, DType::kFloat16, 32 * 197, 3072, 768), "gwg128x256x64_coop");
  // N not a multiple of 256: the 128x128 row (256 x 1 tiles).
  EXPECT_EQ(pick(t, DType::kFloat16, 32768, 128, 64), "gwg128x128x64_coop");
  // Under a wave of 128x256 tiles (16 x 8 = 128 < 132), a wave of 128x128 ones (256).
  EXPECT_EQ(pick(t, DType::kFloat16, 2000, 2048, 264), "gwg128x128x64_coop");
  // Half a wave of 128x128 tiles only (8 x 12 = 96): still the last rule row.
  EXPECT_EQ(pick(t, DType::kFloat16, 1024, 1536, 768), "gwg128x128x64_coop");
  // Batch 1 (128 rows x 3072: 24 tiles of 128x128, under half a wave): cuBLASLt.
  EXPECT_EQ(pick(t, DType::kFloat16, 128, 3072, 768), "none");
  EXPECT_EQ(pick(t, DType::kFloat16, 8448, 3072, 768), "gwg128x256x64_coop");
  // --gemm-wgmma-config NAME: that row wherever the kernel applies, the ping-pong ones too (which
  // the rule never picks: measured slower).
  Target forced = t;
  forced.gemm_wgmma_config = "gwg128x128x64_pp";
  EXPECT_EQ(pick(forced, DType::kFloat16, 4096, 3072, 768), "gwg128x128x64_pp");
  EXPECT_EQ(pick(forced, DType::kFloat16, 128, 3072, 768), "gwg128x128x64_pp");
  EXPECT_EQ(pick(forced, DType::kFloat16, 4096, 3076, 768), "none");
  EXPECT_EQ(pick(t, DType::kFloat16, 4096, 3076, 768), "none");  // N not 8-aligned (TMA rows)
  EXPECT_EQ(pick(t, DType::kFloat16, 4096, 3072, 770), "none");  // K not 8-aligned
  EXPECT_EQ(pick(t, DType::kBFloat16, 4096, 3072, 768), "none");
  EXPECT_EQ(pick(t, DType::kFloat32, 4096, 3072, 768), "none");
  EXPECT_EQ(pick(target_from_archs({"sm_90", "sm_87"}), DType::kFloat16, 4096, 3072, 768), "none");
  EXPECT_EQ(pick(target_from_archs({"sm_80"}), DType::kFloat16, 4096, 3072, 768), "none");
  Target off = t;
  off.gemm_wgmma = false;  // --gemm-wgmma off
  EXPECT_EQ(pick(off, DType::kFloat16, 4096, 3072, 768), "none");
  Target reference = t;
  reference.matmul_reference = true;
  EXPECT_EQ(pick(reference, DType::kFloat16, 4096, 3072, 768), "none");
  // Where the rule picks a row, its tiles fill at least half a wave (a full one for the first).
  for (int64_t m = 64; m <= 8192; m += 333)
    for (int64_t n : {128, 256, 768, 1024, 3072}) {
      auto c = gemm_wgmma_config(t, DType::kFloat16, m, n, 768);
      if (!c) continue;
      const int64_t tiles = gemm_wgmma_tiles(*c, m, n);
      EXPECT_GE(2 * tiles, t.sm_count) << m << " x " << n;
      EXPECT_TRUE(c->rule) << c->name;
      if (std::string(c->name) != "gwg128x128x64_coop") {
        EXPECT_GE(tiles, t.sm_count) << m << " x " << n;
        EXPECT_EQ(n % c->tb_n, 0) << m << " x " << n;
      }
    }
}

TEST(GemmWgmma, ErfGeluGemmIsOneLibraryKernel) {
  auto g = mlp({});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  Built b = build(*g);
  ASSERT_EQ(b.gemm.size(), 1u);
  EXPECT_EQ(b.epilogue_kernels, 0);
  EXPECT_EQ(b.matmuls, 0u);
  const ProgramKernel& k = *b.gemm[0];
  EXPECT_TRUE(k.library_params);
  EXPECT_TRUE(k.host_params);
  // M N K lda ldb ldd has_bias sm_count alpha.
  EXPECT_EQ(k.builder_args, (std::vector<int64_t>{2000, 2048, 264, 264, 2048, 2048, 1, 132, bits(1.0f)}));
  ASSERT_EQ(k.args.size(), 4u);
  EXPECT_EQ(k.args[0].space, Location::Space::kArena);    // Abs(x)
  EXPECT_EQ(k.args[1].space, Location::Space::kWeights);  // w [K][N]
  EXPECT_EQ(k.args[2].space, Location::Space::kWeights);  // bias
  EXPECT_EQ(k.args[3].space, Location::Space::kArena);
  bool erf = false, row_major_b = false;
  for (const auto& [key, value] : k.holes) {
    if (key == "act_expr") erf = value.find("erf") != std::string::npos;
    if (key == "LAYOUT_B") row_major_b = value == "RowMajor";
  }
  EXPECT_TRUE(erf);
  EXPECT_TRUE(row_major_b);

  // A Gemm against an [N][K] weight (transB): ColumnMajor B, ldb = K.
  MlpOptions tb;
  tb.trans_b = true;
  auto gt = mlp(tb);
  ASSERT_TRUE(gt.is_ok()) << gt.status().message();
  Built bt = build(*gt);
  ASSERT_EQ(bt.gemm.size(), 1u);
  EXPECT_EQ(bt.gemm[0]->builder_args, (std::vector<int64_t>{2000, 2048, 264, 264, 264, 2048, 1, 132, bits(1.0f)}));
  for (const auto& [key, value] : bt.gemm[0]->holes)
    if (key == "LAYOUT_B") {
      EXPECT_EQ(value, "ColumnMajor");
    }
}

TEST(GemmWgmma, MustNotFire) {
  struct Case {
    const char* why;
    MlpOptions o;
  };
  std::vector<Case> cases;
  auto add = [&](const char* why, auto edit) {
    MlpOptions o;
    edit(o);
    cases.push_back({why, o});
  };
  add("tanh GELU: cuBLASLt's epilogue", [](MlpOptions& o) { o.act_attrs = "approximate=\"tanh\""; });
  add("Relu: cuBLASLt's epilogue", [](MlpOptions& o) { o.act = "Relu"; });
  add("A is the graph input", [](MlpOptions& o) { o.a_input = true; });
  add("D is the graph output", [](MlpOptions& o) { o.d_output = true; });
  add("batch-1 size", [](MlpOptions& o) { o.m = 128; o.n = 3072; o.k = 768; });
  add("Jetson in the targets", [](MlpOptions& o) { o.archs = {"sm_90", "sm_87"}; });
  add("fp32", [](MlpOptions& o) { o.dtype = "float"; });
  for (const Case& c : cases) {
    auto g = mlp(c.o);
    ASSERT_TRUE(g.is_ok()) << c.why << ": " << g.status().message();
    Built b = build(*g);
    EXPECT_TRUE(b.gemm.empty()) << c.why;
  }
  MlpOptions off_opts;
  auto off = mlp(off_opts);
  ASSERT_TRUE(off.is_ok());
  off->target.gemm_wgmma = false;  // --gemm-wgmma off: cuBLASLt + the epilogue kernel
  Built b = build(*off);
  EXPECT_TRUE(b.gemm.empty());
  EXPECT_EQ(b.matmuls, 1u);
  EXPECT_EQ(b.epilogue_kernels, 1);
}

// nvcc builds the host program and the sm_90a library; the records agree with the operands'
// layouts: A [2000][264] fp16 through a tiled map (dims K, M; row bytes 528), B [264][2048]
// (dims N, K; row bytes 4096), D through the epilogue's maps, the bias a raw pointer slot, a
// persistent grid of at most one CTA an SM, three warp groups.
TEST(GemmWgmma, HostProgramRecordsAndSm90aLibraryBuild) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  auto g = mlp({});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto plan = plan_memory(*g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  auto src = test::render_sm90_sources(*g, *plan, include, "wgmma-gemm");
  ASSERT_TRUE(src.is_ok()) << src.status().message();
  const ProgramKernel* k = nullptr;
  for (const ProgramKernel& pk : src->program.kernels)
    if (pk.template_name == "cutlass_gemm_sm90") k = &pk;
  ASSERT_NE(k, nullptr);
  ASSERT_GT(k->prebuilt.size(), 256u);
  uint32_t header[64];
  std::memcpy(header, k->prebuilt.data(), sizeof header);
  EXPECT_EQ(header[0], 0x41505248u);              // magic
  EXPECT_EQ(header[1] + 256u, k->prebuilt.size());  // params_bytes
  const uint32_t grid = header[2] * header[3] * header[4];
  EXPECT_GE(grid, 1u);
  EXPECT_LE(grid, 132u);                          // persistent: at most one CTA an SM
  EXPECT_EQ(header[5], 384u);                     // one producer + two consumer warp groups
  EXPECT_GT(header[8], 100u * 1024);              // dynamic shared memory: the operand stages
  EXPECT_EQ(header[9], 4u);                       // pointer slots
  EXPECT_NE(header[10 + 2], 0xffffffffu);         // the bias is a raw pointer
  EXPECT_EQ(header[10 + 0], 0xffffffffu);         // A only inside its descriptor
  int a_maps = 0, b_maps = 0, d_maps = 0;
  for (const TensorMapRecord& m : k->tensor_maps) {
    EXPECT_EQ(m.offset % 64, 0u);
    EXPECT_FALSE(m.im2col);
    if (m.arg == 0) {
      ++a_maps;
      EXPECT_EQ(std::vector<uint64_t>(m.dims, m.dims + 2), (std::vector<uint64_t>{264, 2000}));
      EXPECT_EQ(m.strides[0], 264u * 2);
    } else if (m.arg == 1) {
      ++b_maps;
      EXPECT_EQ(std::vector<uint64_t>(m.dims, m.dims + 2), (std::vector<uint64_t>{2048, 264}));
      EXPECT_EQ(m.strides[0], 2048u * 2);
    } else {
      EXPECT_EQ(m.arg, 3);
      ++d_maps;
      EXPECT_EQ(std::vector<uint64_t>(m.dims, m.dims + 2), (std::vector<uint64_t>{2048, 2000}));
    }
  }
  EXPECT_EQ(a_maps, 1);
  EXPECT_EQ(b_maps, 1);
  EXPECT_GE(d_maps, 1);
  Graph again = *g;
  auto plan2 = plan_memory(again);
  ASSERT_TRUE(plan2.is_ok());
  const std::string sources = test::compile_block_sources(again, *plan2, {"sm_90"}, include, "wgmma_gemm");
  EXPECT_NE(sources.find("AOTC_REQUIRES_SM90A"), std::string::npos);
}

}  // namespace
}  // namespace aotc
