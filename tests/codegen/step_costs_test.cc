// The profiling extension's compile-time half: every step of the launch program carries a
// sanitized label, estimated FLOPs and bytes (conv 2*N*K*P*Q*C*R*S/group, CUTLASS library kernels
// from their builder args, matmuls 2*m*n*k*batch and the bytes of A, B, C, D, bias, elementwise
// kernels the sizes of their pointer arguments and 0 FLOPs, copies read + write), the generated
// host C carries them in its step table, exports the prefixed <prefix>_profile_* functions and
// compiles with -Wall -Wextra -Werror. No GPU needed.
#include <gtest/gtest.h>

#include "codegen/embedded_files.h"
#include "codegen/host_source.h"
#include "codegen/launch_program.h"
#include "codegen/step_costs.h"
#include "codegen_test_util.h"
#include "ir/text_ir.h"

namespace aotc {
namespace {
namespace fs = std::filesystem;

// x[2x3x9x9] -> Conv 3x3 (4 filters, bias, pad 1) -> Relu -> Flatten -> Gemm (5 outputs, bias).
Graph small_cnn() {
  auto g = parse_text_ir(R"(
graph small (opset 17)
input %x : float[2x3x9x9]
const %w : float[4x3x3x3] = random(1)
const %b : float[4] = random(2)
const %fw : float[5x324] = random(3)
const %fb : float[5] = random(4)
%y : float[?] = Conv(%x, %w, %b) {pads=[1,1,1,1], strides=[1,1]}  # conv "1"*/
%r : float[?] = Relu(%y)  # relu
%f : float[?] = Flatten(%r) {axis=1}  # flat
%o : float[?] = Gemm(%f, %fw, %fb) {transB=1}  # fc
output %o
)");
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  Graph graph = std::move(*g);
  graph.target.gemm_fp32_simt = false;  // the fc as a cuBLASLt call (the SIMT GEMM: cutlass_gemm_test.cc)
  Status s = infer_shapes(graph);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return graph;
}

const ProgramStep* find_step(const LaunchProgram& p, ProgramStep::Kind kind, const std::string& label_part) {
  for (const ProgramStep& s : p.steps)
    if (s.kind == kind && s.label.find(label_part) != std::string::npos) return &s;
  return nullptr;
}

TEST(StepCosts, SmallGraphStepsCarryFlopsAndBytes) {
  Graph g = small_cnn();
  MemoryPlan plan = test::linear_plan(g);
  auto program = build_launch_program(g, plan);
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  for (const ProgramStep& s : program->steps) {
    ASSERT_FALSE(s.label.empty());
    for (char c : s.label) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_') << s.label;
  }
  // Conv (NCHW, fp32: one implicit-GEMM kernel): 2*N*K*P*Q*C*R*S = 2*2*4*9*9*3*3*3.
  const ProgramStep* conv = find_step(*program, ProgramStep::Kind::kKernel, "conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->label.rfind("k0_conv", 0), 0u) << conv->label;
  EXPECT_EQ(conv->flops, 2 * 2 * 4 * 9 * 9 * 3 * 3 * 3);
  // x + w + b + y, fp32.
  EXPECT_EQ(conv->bytes, (2 * 3 * 81 + 4 * 27 + 4 + 2 * 4 * 81) * 4);
  // Relu: no FLOPs estimate; reads y, writes r.
  const ProgramStep* relu = find_step(*program, ProgramStep::Kind::kKernel, "relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->flops, 0);
  EXPECT_EQ(relu->bytes, 2 * (2 * 4 * 81) * 4);
  // Gemm: a cuBLASLt matmul, m=2 n=5 k=324 with a bias.
  const ProgramStep* fc = find_step(*program, ProgramStep::Kind::kMatmul, "fc");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->label, "mm0_fc");
  EXPECT_EQ(fc->flops, 2 * 2 * 5 * 324);
  // A [2x324] + B [5x324] + D [2x5] + bias [5] (the bias rides the cuBLASLt epilogue, no C).
  const MatmulStep& m = program->matmuls[static_cast<size_t>(fc->index)].step;
  EXPECT_NE(m.bias, kNullArg);
  EXPECT_EQ(m.c, kNullArg);
  EXPECT_EQ(fc->bytes, (2 * 324 + 324 * 5 + 2 * 5 + 5) * 4);
  // Copies (the Flatten view has its own slot under the linear plan) read and write their bytes.
  for (const ProgramStep& s : program->steps)
    if (s.kind == ProgramStep::Kind::kCopy) {
      EXPECT_EQ(s.flops, 0);
      EXPECT_EQ(s.bytes, 2 * program->copies[static_cast<size_t>(s.index)].bytes);
      EXPECT_EQ(s.label.rfind("copy", 0), 0u) << s.label;
    }
}

TEST(StepCosts, MatmulCountsBatchesAndBroadcasts) {
  MatmulStep m;
  m.dtype = DType::kFloat16;
  m.m = 8;
  m.n = 16;
  m.k = 32;
  m.batch = 3;
  m.a = 0;
  m.b = 1;
  m.d = 2;
  m.stride_a = 8 * 32;
  m.stride_b = 0;  // one B for every batch
  m.stride_d = 8 * 16;
  EXPECT_EQ(matmul_step_flops(m), 2 * 8 * 16 * 32 * 3);
  EXPECT_EQ(matmul_step_bytes(m), (3 * 8 * 32 + 32 * 16 + 3 * 8 * 16) * 2);
  m.c = 3;
  m.stride_c = 8 * 16;
  m.bias = 4;
  EXPECT_EQ(matmul_step_bytes(m), (3 * 8 * 32 + 32 * 16 + 3 * 8 * 16 + 3 * 8 * 16 + 16) * 2);
}

TEST(StepCosts, LibraryConvUsesBuilderArgsAndHelperStepsHaveNone) {
  Graph g = small_cnn();
  const Node* conv = nullptr;
  for (const Node& n : g.nodes)
    if (n.op_type == "Conv") conv = &n;
  ASSERT_NE(conv, nullptr);
  KernelStep lib;
  lib.library_params = true;
  // N, H, W, C, K, R, S, P, Q, pads, strides, dilations, split_k, residual (ir/ops/conv.cc).
  lib.builder_args = {32, 56, 56, 64, 128, 3, 3, 28, 28, 1, 1, 2, 2, 1, 1, 1, 0};
  lib.args = {conv->inputs[0], conv->inputs[1], kNullArg, kNullArg, conv->outputs[0]};
  EXPECT_EQ(kernel_step_flops(*conv, g, lib), 2LL * 32 * 128 * 28 * 28 * 64 * 3 * 3);
  // im2col (reads x, writes scratch) and a split-K semaphore fill: no FLOPs; scratch bytes count.
  KernelStep im2col;
  im2col.args = {conv->inputs[0], kScratchArg};
  EXPECT_EQ(kernel_step_flops(*conv, g, im2col), 0);
  EXPECT_EQ(kernel_step_bytes(g, im2col, 1000), 2 * 3 * 81 * 4 + 1000);
  // A view counts its root's bytes (an absorbed PackNhwc: the stem reads the NCHW source).
  Graph v = g;
  const ValueId packed = v.add_value("packed", DType::kFloat16, {2, 9, 9, 4}, true);
  v.value(packed).alias_of = conv->inputs[0];
  KernelStep reads_view;
  reads_view.args = {packed};
  EXPECT_EQ(kernel_step_bytes(v, reads_view, 0), 2 * 3 * 81 * 4);
  // A grouped conv: weights [K, C/group, R, S] give 2*N*K*P*Q*(C/group)*R*S.
  auto grouped = parse_text_ir(R"(
input %x : float[1x4x5x5]
const %w : float[6x2x3x3] = random(1)
%y : float[?] = Conv(%x, %w) {group=2}  # g
output %y
)");
  ASSERT_TRUE(grouped.is_ok()) << grouped.status().message();
  ASSERT_TRUE(infer_shapes(*grouped).is_ok());
  const Node& gn = grouped->nodes[0];
  KernelStep k;
  k.args = {gn.inputs[0], gn.inputs[1], kNullArg, kNullArg, gn.outputs[0]};
  EXPECT_EQ(kernel_step_flops(gn, *grouped, k), 2 * 1 * 6 * 3 * 3 * (4 / 2) * 3 * 3);
}

// A stem that reads its 3-channel NCHW input itself (PACKED) runs on 4 padded channels: its FLOPs
// are the model's (C = 3), not the padded work; with the pack left as its own step (PACKED 0) the
// weights' channels are the count.
TEST(StepCosts, PackedStemCountsTheSourceChannels) {
  auto g = parse_text_ir(R"(
input %x : float16[2x9x9x4]
const %w : float16[8x3x3x4] = random(1)
%y : float16[2x8x9x9] = Relu(%x)  # stand-in for the stem's output (only shapes matter here)
output %y
)");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  Node conv = g->nodes[0];  // the stem conv: x, w -> y
  conv.op_type = "Conv";
  const ValueId w = g->find_value("w");
  ASSERT_NE(w, kNoValue);
  conv.inputs = {g->inputs[0], w};
  KernelStep k;
  k.template_name = "conv_stem_nhwc";
  k.args = {g->inputs[0], w, kNullArg, conv.outputs[0]};
  k.holes = {{"PACKED", "1"}, {"CI", "3"}, {"C", "4"}};
  // y has 2*8*9*9 elements, each 3*3*4 padded MACs of which 3*3*3 are the model's.
  EXPECT_EQ(kernel_step_flops(conv, *g, k), 2LL * 2 * 8 * 9 * 9 * 3 * 3 * 3);
  k.holes = {{"PACKED", "0"}, {"CI", "4"}, {"C", "4"}};
  EXPECT_EQ(kernel_step_flops(conv, *g, k), 2LL * 2 * 8 * 9 * 9 * 3 * 3 * 4);
}

TEST(StepCosts, HostCodeCarriesStepTableAndProfileExports) {
  Graph g = small_cnn();
  MemoryPlan plan = test::linear_plan(g);
  auto program = build_launch_program(g, plan);
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  HostSources host = render_host_sources(*program, g, {"small", {"sm_90"}, "test", "hash", g.name, 1});
  const std::string& c = host.model_c;
  const ProgramStep* conv = find_step(*program, ProgramStep::Kind::kKernel, "conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_NE(c.find("{AOTC_STEP_KERNEL, 0, \"" + conv->label + "\", 34992ULL, 4984ULL, 0, 0},"), std::string::npos) << c;
  EXPECT_NE(c.find("{AOTC_STEP_MATMUL, 0, \"mm0_fc\", 6480ULL, "), std::string::npos) << c;
  EXPECT_EQ(c.find("conv \"1\"*/"), std::string::npos);  // the hostile node name stays out
  for (const char* fn : {"int small_profile_num_steps(void)", "const char* small_profile_step_label(int i)",
                         "const char* small_profile_step_kind(int i)",
                         "unsigned long long small_profile_step_flops(int i)",
                         "unsigned long long small_profile_step_bytes(int i)", "int small_profile_run("}) {
    EXPECT_NE(c.find(std::string("AOTC_API ") + fn), std::string::npos) << fn;
    std::string decl = fn;
    decl = decl.substr(0, decl.find('(') + 1);
    EXPECT_NE(host.header.find(std::string("AOTC_API ") + decl), std::string::npos) << decl;
  }
}

TEST(StepCosts, HostCodeCompilesWithWarningsAsErrors) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "cc not available";
  fs::path dir = fs::temp_directory_path() / ("aotc-stepcosts-cc-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Graph g = small_cnn();
  MemoryPlan plan = test::linear_plan(g);
  auto program = build_launch_program(g, plan);
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  HostSources host = render_host_sources(*program, g, {"small", {"sm_90"}, "test", "hash", g.name, 1});
  std::ofstream(dir / "small_model.c") << host.model_c;
  std::ofstream(dir / "small.h") << host.header;
  std::vector<std::string> argv = {"cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden",
                                   "-fPIC", "-c", "-I", dir.string()};
  for (const EmbeddedFile& f : embedded_files()) {
    std::string path = f.path;
    if (path.rfind("runtime/", 0) != 0) continue;
    fs::path out = dir / fs::path(path).filename();
    std::ofstream(out, std::ios::binary).write(reinterpret_cast<const char*>(f.data),
                                               static_cast<std::streamsize>(f.size));
    if (out.extension() == ".c") argv.push_back(out.string());
  }
  argv.push_back((dir / "small_model.c").string());
  auto cc = run_process(argv, dir.string());
  ASSERT_TRUE(cc.is_ok());
  EXPECT_EQ(cc->exit_code, 0) << cc->output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aotc
