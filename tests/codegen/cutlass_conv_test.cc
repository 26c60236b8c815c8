// The CUTLASS convolution template (templates/cutlass_conv2d_fprop.cu.in) through the real passes
// and codegen: a small fp16 residual block (text IR) -> fuse_epilogue -> layout_nhwc -> library.
// Without a GPU this checks the lowering (library kernels, channels_last, the problem sizes in
// the builder args, the params builder emitted) and that nvcc compiles the
// library for sm_80-class (Ampere, Jetson's sm_87) and sm_90 with the CUTLASS headers (skipped,
// with a message, when nvcc or the headers are missing). Results on a GPU are checked by
// tools/device_run.sh against ONNX Runtime on whole networks.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>


#include "codegen/codegen.h"
#include "codegen/cutlass_dir.h"
#include "codegen/launch_program.h"
#include "codegen/step_costs.h"
#include "codegen_test_util.h"
#include "library_build.h"
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/text_ir.h"
#include "opt/memory_plan.h"
#include "opt/passes.h"

namespace aotc {
namespace {

// `text` parsed (opset 17), shapes inferred, target `archs` (then `tweak`), epilogues fused and
// laid out NHWC: the state the lowering sees.
Expected<Graph> nhwc_graph(const std::string& text, const std::vector<std::string>& archs,
                           const std::function<void(Target&)>& tweak = {}) {
  auto g = parse_text_ir(text);
  if (!g) return g;
  g->opset = 17;
  AOTC_RETURN_IF_ERROR(infer_shapes(*g));
  g->target = target_from_archs(archs);
  if (tweak) tweak(g->target);
  auto fused = fuse_epilogue(*g);
  if (!fused) return fused.status();
  auto laid = layout_nhwc(*g);
  if (!laid) return laid.status();
  return g;
}

// `t`: float16, bfloat16 or float (fp32: the SIMT configurations and cuBLASLt SGEMM).
Expected<Graph> residual_block(const std::string& t = "float16", bool pointwise_gemm = true, bool im2col_gemm = false) {
  std::string text = R"(
    input %x : T[2x16x9x7]
    const %w1 : T[32x16x3x3] = random(1)
    const %b1 : T[32] = random(2)
    const %w2 : T[32x32x1x1] = random(3)
    const %ws : T[32x16x1x1] = random(4)
    %c1 : T[?] = Conv(%x, %w1, %b1) {pads=[1,1,1,1]}  # conv1
    %r1 : T[?] = Relu(%c1)  # relu1
    %s : T[?] = Conv(%x, %ws)  # shortcut
    %c2 : T[?] = Conv(%r1, %w2)  # conv2
    %a : T[?] = Add(%c2, %s)  # add
    %y : T[?] = Relu(%a)  # relu2
    output %y
  )";
  for (size_t at = text.find("T["); at != std::string::npos; at = text.find("T[", at + t.size()))
    text.replace(at, 1, t);
  return nhwc_graph(text, {"sm_90", "sm_80"}, [&](Target& target) {
    target.conv_pointwise_gemm = pointwise_gemm;
    target.conv_im2col_gemm = im2col_gemm;
  });
}

// With pointwise GEMMs off every convolution is a CUTLASS library kernel.
TEST(CutlassConv, ResidualBlockLowersToCutlassLibraryKernels) {
  auto g = residual_block("float16", /*pointwise_gemm=*/false);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  int convs = 0;
  for (const Node& n : g->nodes)
    if (n.op_type == "FusedConv" || n.op_type == "Conv") {
      ++convs;
      EXPECT_TRUE(channels_last(n)) << n.name;
    }
  EXPECT_EQ(convs, 3);
  MemoryPlan plan = test::linear_plan(*g);
  auto program = build_launch_program(*g, plan);
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  int library = 0;
  for (const ProgramKernel& k : program->kernels) {
    // Library kernels say so in their symbol (sanitizer filters, profiles); aotc's own do not.
    EXPECT_EQ(k.name.find("_lib_") != std::string::npos, k.library_params) << k.name;
    if (!k.library_params) continue;
    ++library;
    EXPECT_EQ(k.name.rfind("k", 0), 0u) << k.name;
    EXPECT_EQ(k.template_name, "cutlass_conv2d_fprop");
    ASSERT_GE(k.builder_args.size(), 17u);
    EXPECT_EQ(k.builder_args[0], 2);   // N
    EXPECT_EQ(k.builder_args[1], 9);   // H
    EXPECT_EQ(k.builder_args[2], 7);   // W
    EXPECT_EQ(k.builder_args[15], 1);  // split-K off by default
    EXPECT_EQ(k.args.size(), 6u);      // x, w, bias, residual, y, semaphores
  }
  EXPECT_EQ(library, 3);
  EXPECT_TRUE(program->matmuls.empty());
}

// By default the two 1x1 convolutions are cuBLASLt GEMMs over the NHWC rows (fuse_epilogue puts
// the Add + ReLU on the shortcut, which reads conv2's output as its residual); the 3x3 stays a
// CUTLASS kernel.
TEST(CutlassConv, PointwiseConvolutionsBecomeCublasLtGemms) {
  auto g = residual_block();
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  MemoryPlan plan = test::linear_plan(*g);
  auto program = build_launch_program(*g, plan);
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  int library = 0;
  for (const ProgramKernel& k : program->kernels) library += k.library_params ? 1 : 0;
  EXPECT_EQ(library, 1);
  ASSERT_EQ(program->matmuls.size(), 2u);
  int with_residual = 0;
  for (const ProgramMatmul& m : program->matmuls) {
    EXPECT_EQ(m.step.dtype, DType::kFloat16);
    EXPECT_EQ(m.step.m, 2 * 9 * 7);  // N*H*W rows
    EXPECT_EQ(m.step.n, 32);         // output channels
    EXPECT_EQ(m.step.k, m.step.lda);  // C, dense rows
    EXPECT_TRUE(m.step.trans_b);      // KRSC weights = [K, C]
    EXPECT_EQ(m.step.ldb, m.step.k);
    EXPECT_EQ(m.step.ldd, 32);
    if (m.c.space != Location::Space::kNull) {
      ++with_residual;
      EXPECT_EQ(m.step.beta, 1.0f);
      EXPECT_EQ(m.step.k, 16);  // the shortcut reads x's 16 channels
      EXPECT_EQ(m.step.epilogue, MatmulStep::Epilogue::kRelu);  // no bias
    } else {
      EXPECT_EQ(m.step.k, 32);  // conv2 reads relu1's 32 channels
      EXPECT_EQ(m.step.epilogue, MatmulStep::Epilogue::kNone);
    }
  }
  EXPECT_EQ(with_residual, 1);
}

// Batch-1-sized convolutions whose CUTLASS tiles would not fill the GPU: the 3x3 runs as im2col
// (into the node's scratch) + a cuBLASLt GEMM with the [K, R*S*C] filter rows; a large one, or one
// whose activation cuBLASLt cannot apply, stays on CUTLASS.
TEST(CutlassConv, UnderfilledConvolutionBecomesIm2colAndGemm) {
  auto g = residual_block("float16", /*pointwise_gemm=*/true, /*im2col_gemm=*/true);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto plan = plan_memory(*g);  // the real plan: it places the im2col scratch
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  auto program = build_launch_program(*g, *plan);
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  for (const ProgramKernel& k : program->kernels) EXPECT_FALSE(k.library_params) << k.name;
  int im2col = 0;
  for (const ProgramKernel& k : program->kernels) im2col += k.template_name == "im2col_nhwc" ? 1 : 0;
  EXPECT_EQ(im2col, 1);
  ASSERT_EQ(program->matmuls.size(), 3u);
  int from_scratch = 0;
  for (const ProgramMatmul& m : program->matmuls) {
    if (m.step.k != 3 * 3 * 16) continue;
    ++from_scratch;
    EXPECT_EQ(m.a.space, Location::Space::kArena);
    EXPECT_EQ(m.step.m, 2 * 9 * 7);
    EXPECT_EQ(m.step.lda, 3 * 3 * 16);
    EXPECT_TRUE(m.step.trans_b);
    EXPECT_EQ(m.step.epilogue, MatmulStep::Epilogue::kBiasRelu);  // conv1 + b1, then relu1
  }
  EXPECT_EQ(from_scratch, 1);
}

TEST(CutlassConv, Im2colGemmMustNotFireOnFullGridsOrOtherActivations) {
  for (const std::string& tail : {std::string("output %c"), std::string("%y : float16[?] = LeakyRelu(%c) {alpha=0.1}  # leaky\n    output %y")}) {
    const bool big = tail == "output %c";
    std::string text = std::string("input %x : float16[") + (big ? "8x64x64x64" : "1x16x8x8") + R"(]
    const %w : float16[32xCx3x3] = random(1)
    %c : float16[?] = Conv(%x, %w) {pads=[1,1,1,1]}  # conv
    )" + tail + "\n";
    text.replace(text.find("32xC"), 4, big ? "32x64" : "32x16");
    auto g = nhwc_graph(text, {"sm_90"});
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    auto program = build_launch_program(*g, test::linear_plan(*g));
    ASSERT_TRUE(program.is_ok()) << program.status().message();
    EXPECT_TRUE(program->matmuls.empty()) << tail;
    int library = 0;
    for (const ProgramKernel& k : program->kernels) library += k.library_params ? 1 : 0;
    EXPECT_EQ(library, 1) << tail;
  }
}

// Must not fire: a 1x1 convolution that is not a plain GEMM over the NHWC rows (stride 2, a pad,
// an activation cuBLASLt's epilogue cannot express, several groups) stays off cuBLASLt.
class PointwiseGemmMustNotFire : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(PointwiseGemmMustNotFire, StaysACutlassKernel) {
  std::string text = R"(
    input %x : float16[2x16x8x8]
    const %w : float16[16x16x1x1] = random(1)
    const %b : float16[16] = random(2)
    %c : float16[?] = Conv(%x, %w, %b) ATTRS  # conv
  )" + GetParam().second + "\n";
  text.replace(text.find("ATTRS"), 5, GetParam().first);
  auto g = parse_text_ir(text);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 17;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_90"});
  g->target.conv_im2col_gemm = false;  // these small convolutions would take im2col + GEMM
  ASSERT_TRUE(fuse_epilogue(*g).is_ok());
  ASSERT_TRUE(layout_nhwc(*g).is_ok());
  auto program = build_launch_program(*g, test::linear_plan(*g));
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  EXPECT_TRUE(program->matmuls.empty()) << GetParam().first << " " << GetParam().second;
  int library = 0;
  for (const ProgramKernel& k : program->kernels) library += k.library_params ? 1 : 0;
  EXPECT_EQ(library, 1);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PointwiseGemmMustNotFire,
    ::testing::Values(std::make_pair(std::string("{strides=[2,2]}"), std::string("output %c")),
                      std::make_pair(std::string("{pads=[1,1,1,1]}"), std::string("output %c")),
                      std::make_pair(std::string(""),
                                     std::string("%y : float16[?] = LeakyRelu(%c) {alpha=0.1}  # leaky\n    output %y")),
                      std::make_pair(std::string(""),
                                     std::string("%y : float16[?] = Sigmoid(%c)  # sig\n    output %y"))));

// The im2col + GEMM form of the block compiles too (the im2col kernel, cuBLASLt calls, no CUTLASS).
TEST(CutlassConv, Im2colLibraryCompiles) {
  if (!test::tool_runs(test::find_nvcc()) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
  auto g = residual_block("float16", /*pointwise_gemm=*/true, /*im2col_gemm=*/true);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto plan = plan_memory(*g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const std::string sources = test::compile_block_sources(*g, *plan, {"sm_87", "sm_90"}, "", "im2col");
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("im2col of an NHWC activation"), std::string::npos);
  EXPECT_EQ(sources.find("cutlass"), std::string::npos);
}

class CutlassConvTypes : public ::testing::TestWithParam<std::string> {};

TEST_P(CutlassConvTypes, LibraryCompilesForAmpereAndHopper) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  auto g = residual_block(GetParam(), /*pointwise_gemm=*/true, /*im2col_gemm=*/false);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const std::string sources = test::compile_block_sources(*g, test::linear_plan(*g), {"sm_80", "sm_90"}, include, "cutlass-" + GetParam());
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("DefaultConv2dFpropWithBroadcast"), std::string::npos);
  if (GetParam() == "float") {
    EXPECT_NE(sources.find("cutlass::arch::OpClassSimt, cutlass::arch::Sm80"), std::string::npos);
    EXPECT_EQ(sources.find("cutlass::arch::OpClassTensorOp"), std::string::npos);
  } else {
    EXPECT_NE(sources.find(GetParam() == "bfloat16" ? "cutlass::bfloat16_t" : "cutlass::half_t"), std::string::npos);
  }
  EXPECT_NE(sources.find("_params(unsigned char* out, aotc_builder_args a)"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Types, CutlassConvTypes, ::testing::Values("float16", "bfloat16", "float"));

// The RGB stem (3 -> 64 channels, 7x7/2, bias + ReLU) takes the direct stem kernel: a pack to 4
// channels, conv_stem_nhwc with the window unchanged, no library kernel, no matmul; the library
// compiles for Jetson's sm_87 and sm_90 in both 16-bit types. --conv-stem cutlass (must not fire)
// keeps the space-to-depth packing and the CUTLASS kernel.
TEST(CutlassConv, RgbStemTakesTheStemKernel) {
  for (const std::string t : {"float16", "bfloat16"}) {
    for (bool stem : {true, false}) {
      SCOPED_TRACE(t + (stem ? " stem kernel" : " cutlass"));
      std::string text = R"(
      input %x : T[2x3x33x30]
      const %w : T[64x3x7x7] = random(1)
      const %b : T[64] = random(2)
      %c : T[?] = Conv(%x, %w, %b) {strides=[2,2], pads=[3,3,3,3]}  # stem
      %y : T[?] = Relu(%c)  # relu
      output %y
      )";
      for (size_t at = text.find("T["); at != std::string::npos; at = text.find("T[", at + t.size())) text.replace(at, 1, t);
      auto g = parse_text_ir(text);
      ASSERT_TRUE(g.is_ok()) << g.status().message();
      g->opset = 17;
      ASSERT_TRUE(infer_shapes(*g).is_ok());
      g->target = target_from_archs({"sm_90", "sm_87"});
      g->target.conv_stem_kernel = stem;
      g->target.conv_im2col_gemm = false;  // this small image would otherwise take im2col + cuBLASLt
      ASSERT_TRUE(fuse_epilogue(*g).is_ok());
      ASSERT_TRUE(layout_nhwc(*g).is_ok());
      auto program = build_launch_program(*g, test::linear_plan(*g));
      ASSERT_TRUE(program.is_ok()) << program.status().message();
      int stems = 0, library = 0, packs = 0;
      for (const ProgramKernel& k : program->kernels) {
        stems += k.template_name == "conv_stem_nhwc" ? 1 : 0;
        library += k.library_params ? 1 : 0;
        packs += k.template_name == "pack_nhwc" ? 1 : 0;
        // The stem kernel reads the NCHW input itself: the pack is a view, no kernel of its own.
        if (k.template_name == "conv_stem_nhwc") {
          for (const auto& h : k.holes) {
            if (h.first == "PACKED") {
              EXPECT_EQ(h.second, "1");
            }
          }
        }
      }
      EXPECT_EQ(stems, stem ? 1 : 0);
      EXPECT_EQ(library, stem ? 0 : 1);
      EXPECT_EQ(packs, stem ? 0 : 1);  // --conv-stem cutlass: the space-to-depth pack stays a kernel
      EXPECT_EQ(g->nodes[0].attr_int("block", 1), stem ? 1 : 2);
      if (!stem) continue;
      const std::string nvcc = test::find_nvcc();
      if (!test::tool_runs(nvcc) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
      const std::string sources = test::compile_block_sources(*g, test::linear_plan(*g), {"sm_87", "sm_90"}, "", "stem-" + t);
      EXPECT_NE(sources.find("mma.sync.aligned.m16n8k16.row.col.f32." + std::string(t == "bfloat16" ? "bf16" : "f16")), std::string::npos);
    }
  }
}

// A convolution with an empty output (batch 0) lowers to nothing: no kernel, no GEMM (a fuzz find:
// its tile count of 0 divided the split-K rule), for 16-bit NHWC and fp32 NCHW alike.
TEST(CutlassConv, EmptyBatchLaunchesNothing) {
  for (const std::string t : {"float16", "float"}) {
    SCOPED_TRACE(t);
    auto g = nhwc_graph("input %x : " + t + "[0x16x8x8]\nconst %w : " + t + "[32x16x3x3] = random(1)\n%y : " + t +
                            "[?] = Conv(%x, %w) {pads=[1,1,1,1]}  # c\noutput %y\n",
                        {"sm_90"});
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    for (const Node& n : g->nodes) {
      if (n.op_type != "Conv" && n.op_type != "FusedConv") continue;
      auto l = default_registry().find(n.op_type, n.domain)->lower(n, *g);
      ASSERT_TRUE(l.is_ok()) << l.status().message();
      EXPECT_TRUE(l->steps.empty());
    }
  }
}

// The stem kernels stage the whole filter in shared memory (stem_filter_smem_bytes <= 32 KB): a
// 9x9 stem with 64 outputs (44 KB) goes to CUTLASS, the same window with 32 outputs (22 KB) and
// an 11x11 with 16 (16 KB) take the stem kernel, and the 9x9 x 32 one compiles (its static
// shared memory, window + filter, under 48 KB).
TEST(CutlassConv, StemKernelOnlyWhereItsFilterFitsSharedMemory) {
  EXPECT_EQ(stem_filter_smem_bytes(64, 7, 7), 64 * 13 * 8 * 4);  // 13 K steps: 104 words = 8 mod 16
  EXPECT_EQ(stem_filter_row_words(4, 4), 4 * 8 + 8);            // 4 K steps: 32 words -> 40
  struct Case {
    int64_t cout, window;
    bool stem;
  };
  for (const Case& c : {Case{64, 9, false}, Case{32, 9, true}, Case{16, 11, true}, Case{64, 7, true}}) {
    SCOPED_TRACE(std::to_string(c.cout) + " outputs, window " + std::to_string(c.window));
    EXPECT_EQ(stem_filter_smem_bytes(c.cout, c.window, c.window) <= kStemMaxFilterSmem, c.stem);
    const std::string w = std::to_string(c.window), p = std::to_string(c.window / 2);
    auto g = nhwc_graph("input %x : float16[2x3x33x30]\nconst %w : float16[" + std::to_string(c.cout) + "x3x" + w + "x" + w +
                            "] = random(1)\n%y : float16[?] = Conv(%x, %w) {strides=[2,2], pads=[" + p + "," + p + "," + p +
                            "," + p + "]}  # stem\noutput %y\n",
                        {"sm_90", "sm_87"}, [](Target& target) { target.conv_im2col_gemm = false; });
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    auto program = build_launch_program(*g, test::linear_plan(*g));
    ASSERT_TRUE(program.is_ok()) << program.status().message();
    int stems = 0, library = 0;
    for (const ProgramKernel& k : program->kernels) {
      stems += k.template_name == "conv_stem_nhwc" ? 1 : 0;
      library += k.library_params ? 1 : 0;
    }
    EXPECT_EQ(stems, c.stem ? 1 : 0);
    EXPECT_EQ(library, c.stem ? 0 : 1);
    if (!c.stem || c.window != 9) continue;
    const std::string nvcc = test::find_nvcc();
    if (!test::tool_runs(nvcc) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
    test::compile_block_sources(*g, test::linear_plan(*g), {"sm_87", "sm_90"}, "", "stem9x9");
  }
}

// The stem + ReLU + 3x3/2 max pool (ResNet's entry): fuse_stem_pool gives one conv_stem_pool_nhwc
// kernel and no MaxPool step; nvcc compiles it for sm_87 and sm_90.
TEST(CutlassConv, RgbStemWithMaxPoolIsOneKernel) {
  auto g = parse_text_ir(R"(
    input %x : float16[2x3x33x30]
    const %w : float16[64x3x7x7] = random(1)
    const %b : float16[64] = random(2)
    %c : float16[?] = Conv(%x, %w, %b) {strides=[2,2], pads=[3,3,3,3]}  # stem
    %r : float16[?] = Relu(%c)  # relu
    %p : float16[?] = MaxPool(%r) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}  # pool
    output %p
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 17;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_90", "sm_87"});
  ASSERT_TRUE(fuse_epilogue(*g).is_ok());
  ASSERT_TRUE(layout_nhwc(*g).is_ok());
  auto fused = fuse_stem_pool(*g);
  ASSERT_TRUE(fused.is_ok() && *fused);
  auto program = build_launch_program(*g, test::linear_plan(*g));
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  std::vector<std::string> templates;
  for (const ProgramKernel& k : program->kernels) templates.push_back(k.template_name);
  EXPECT_EQ(std::count(templates.begin(), templates.end(), "conv_stem_pool_nhwc"), 1);
  EXPECT_EQ(std::count(templates.begin(), templates.end(), "pool_window_nhwc"), 0);
  const std::string nvcc = test::find_nvcc();
  if (!test::tool_runs(nvcc) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
  const std::string sources = test::compile_block_sources(*g, test::linear_plan(*g), {"sm_87", "sm_90"}, "", "stem-pool");
  EXPECT_NE(sources.find("Max pooling over the conv tile"), std::string::npos);
}

// MobileNet's depthwise -> projection pair as one kernel (templates/conv_dw_pw_nhwc.cu.in): the
// launch shape and shared memory follow the rule of ir/ops/conv_configs.h (sized for the smaller
// target, Jetson's 16 SMs), and nvcc compiles it for sm_87 and sm_90, in fp16 (C 48) and bf16
// (C 40: K padded to 48).
TEST(CutlassConv, DepthwisePointwiseIsOneKernelAndCompiles) {
  struct Case {
    std::string t;
    int64_t c, co;
  };
  for (const Case& cs : {Case{"float16", 48, 24}, Case{"bfloat16", 40, 40}}) {
    std::string text = R"(
      input %x : T[2x16x9x11]
      const %w1 : T[Cx16x1x1] = random(1)
      const %w2 : T[Cx1x3x3] = random(3)
      const %b2 : T[C] = random(4)
      const %w3 : T[KxCx1x1] = random(5)
      %e : T[?] = Conv(%x, %w1)  # expand
      %er : T[?] = Relu(%e)  # relu0
      %d : T[?] = Conv(%er, %w2, %b2) {group=C, pads=[1,1,1,1]}  # dw
      %dr : T[?] = Relu(%d)  # relu
      %p : T[?] = Conv(%dr, %w3)  # project
      output %p
    )";
    auto sub = [&](const std::string& from, const std::string& to) {
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    };
    sub("T[", cs.t + "[");
    sub("xCx", "x" + std::to_string(cs.c) + "x");
    sub("[Cx", "[" + std::to_string(cs.c) + "x");
    sub("[C]", "[" + std::to_string(cs.c) + "]");
    sub("group=C", "group=" + std::to_string(cs.c));
    sub("[Kx", "[" + std::to_string(cs.co) + "x");
    auto g = nhwc_graph(text, {"sm_87", "sm_90"});
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    auto fused = fuse_depthwise_pointwise(*g);
    ASSERT_TRUE(fused.is_ok() && *fused) << cs.t;
    auto program = build_launch_program(*g, test::linear_plan(*g));
    ASSERT_TRUE(program.is_ok()) << program.status().message();
    const ProgramKernel* kp = nullptr;
    for (const ProgramKernel& pk : program->kernels)
      if (pk.template_name == "conv_dw_pw_nhwc") kp = &pk;
    ASSERT_NE(kp, nullptr) << cs.t;
    const ProgramKernel& k = *kp;
    const DwPwProblem prob{2, 9, 11, 3, 3, 1, 1, 1, 1};
    const auto cfg = dw_pw_config(g->target, g->value(g->inputs[0]).dtype, cs.c, cs.co, prob);
    ASSERT_TRUE(cfg.has_value());
    EXPECT_EQ(g->target.sm_count, 16);  // Jetson's, the smaller of the two
    EXPECT_EQ(k.grid.x, 2 * ((9 + cfg->toh - 1) / cfg->toh) * ((11 + cfg->tow - 1) / cfg->tow));
    EXPECT_EQ(k.grid.y, 1);  // one column tile
    EXPECT_EQ(k.block.x, 256);
    // K 48 either way; the window of a TOH x TOW tile of a 3 x 3 stride-1 conv and the filter.
    EXPECT_EQ(k.shared_bytes,
              ((cfg->tp() + cfg->cob()) * (48 + 8) + ((cfg->toh + 2) * (cfg->tow + 2) + 9) * cs.c) * 2);
    // The profile's FLOPs: 2 x 9 taps per depthwise output kept on chip, 2 x C per output.
    const Node* node = nullptr;
    for (const Node& n : g->nodes)
      if (n.op_type == "DepthwisePointwise") node = &n;
    ASSERT_NE(node, nullptr);
    auto low = default_registry().find("DepthwisePointwise", "aotc")->lower(*node, *g);
    ASSERT_TRUE(low.is_ok()) << low.status().message();
    EXPECT_EQ(kernel_step_flops(*node, *g, low->steps[0].kernel), 2 * 198 * cs.c * 9 + 2 * 198 * cs.co * cs.c);
    const std::string nvcc = test::find_nvcc();
    if (!test::tool_runs(nvcc) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
    const std::string sources =
        test::compile_block_sources(*g, test::linear_plan(*g), {"sm_87", "sm_90"}, "", "dw-pw-" + cs.t);
    EXPECT_NE(sources.find("never reaches"), std::string::npos);
  }
}

// opt/fuse_pointwise_pair at ResNet-50's batch-1 layer-3 boundary (conv3 + residual + ReLU, then
// the next conv1 + ReLU): one kernel step whose launch shape, cluster and shared memory follow
// ir/ops/conv_configs.h pw_pair_config (7 tiles of 32 rows, 16-CTA clusters), whose FLOPs are both
// convolutions', and which nvcc compiles for sm_90 in fp16 and bf16 with the library's host code.
TEST(CutlassConv, PointwisePairIsOneKernelAndCompiles) {
  for (const char* t : {"float16", "bfloat16"}) {
    std::string text = R"(
      input %h : T[1x256x14x14]
      input %s : T[1x1024x14x14]
      const %w3 : T[1024x256x1x1] = random(1)
      const %b3 : T[1024] = random(2)
      const %w1 : T[256x1024x1x1] = random(3)
      %c3 : T[?] = Conv(%h, %w3, %b3)  # conv3
      %a : T[?] = Add(%c3, %s)  # add
      %o : T[?] = Relu(%a)  # out
      %c1 : T[?] = Conv(%o, %w1)  # conv1
      %h1 : T[?] = Relu(%c1)  # relu1
      output %h1
      output %o
    )";
    for (size_t at = text.find("T["); at != std::string::npos; at = text.find("T[", at + 1)) text.replace(at, 1, t);
    auto g = nhwc_graph(text, {"sm_90"}, [](Target& target) { target.conv_pw_pair = true; });
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    auto fused = fuse_pointwise_pair(*g);
    ASSERT_TRUE(fused.is_ok() && *fused) << t;
    auto program = build_launch_program(*g, test::linear_plan(*g));
    ASSERT_TRUE(program.is_ok()) << program.status().message();
    EXPECT_TRUE(program->matmuls.empty());  // the two convolutions are not GEMMs any more
    const ProgramKernel* kp = nullptr;
    int pairs = 0;
    for (const ProgramKernel& pk : program->kernels)
      if (pk.template_name == "conv_pw_pair_nhwc") kp = &pk, ++pairs;
    ASSERT_EQ(pairs, 1) << t;  // the others convert the NCHW inputs and outputs
    const ProgramKernel& k = *kp;
    EXPECT_EQ(k.grid.x, 16);
    EXPECT_EQ(k.grid.y, 7);
    EXPECT_EQ(k.cluster_size, 16);
    EXPECT_EQ(k.shared_bytes, 2 * ((32 + 64) * 264 + 32 * 64 + (32 + 256) * 72) + 4 * 32 * 260 + 16384);
    const Node* node = nullptr;
    for (const Node& n : g->nodes)
      if (n.op_type == "PointwisePair") node = &n;
    ASSERT_NE(node, nullptr);
    auto low = default_registry().find("PointwisePair", "aotc")->lower(*node, *g);
    ASSERT_TRUE(low.is_ok()) << low.status().message();
    EXPECT_EQ(kernel_step_flops(*node, *g, low->steps[0].kernel), 2 * 196 * 1024 * 256 + 2 * 196 * 256 * 1024);
    const std::string nvcc = test::find_nvcc();
    if (!test::tool_runs(nvcc) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
    const std::string sources = test::compile_block_sources(*g, test::linear_plan(*g), {"sm_90"}, "", std::string("pw-pair-") + t);
    EXPECT_NE(sources.find("__cluster_dims__(16LL, 1, 1)"), std::string::npos);
  }
}

// The stem + pool on sm_90a's wgmma (templates/conv_stem_pool_wgmma_nhwc.cu.in): the model's form
// (a float input cast to fp16, which the pack absorbs: the kernel reads the NCHW floats itself)
// takes it for an sm_90-only target at any batch; must not fire for a target list with sm_87,
// --conv-stem-wgmma off, or bf16. nvcc compiles it (for sm_90a: the file carries
// AOTC_REQUIRES_SM90A).
TEST(CutlassConv, RgbStemPoolOnWgmmaWhereTheBatchFillsAnSm90) {
  auto stem_templates = [](int64_t batch, const std::vector<std::string>& archs, bool wgmma, const char* dtype,
                           Graph* keep = nullptr) {
    const std::string text = std::string(R"(
    input %x : float[)") + std::to_string(batch) + R"(x3x224x224]
    const %w : )" + dtype + R"([64x3x7x7] = random(1)
    const %b : )" + dtype + R"([64] = random(2)
    %h : )" + dtype + R"([?] = Cast(%x) {to=)" + (std::string(dtype) == "float16" ? "10" : "16") + R"(}  # cast
    %c : )" + dtype + R"([?] = Conv(%h, %w, %b) {strides=[2,2], pads=[3,3,3,3]}  # stem
    %r : )" + dtype + R"([?] = Relu(%c)  # relu
    %p : )" + dtype + R"([?] = MaxPool(%r) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}  # pool
    output %p
  )";
    auto g = parse_text_ir(text);
    EXPECT_TRUE(g.is_ok()) << g.status().message();
    g->opset = 17;
    EXPECT_TRUE(infer_shapes(*g).is_ok());
    g->target = target_from_archs(archs);
    g->target.conv_stem_wgmma = wgmma;
    EXPECT_TRUE(fuse_epilogue(*g).is_ok());
    EXPECT_TRUE(layout_nhwc(*g).is_ok());
    auto fused = fuse_stem_pool(*g);
    EXPECT_TRUE(fused.is_ok() && *fused);
    auto program = build_launch_program(*g, test::linear_plan(*g));
    EXPECT_TRUE(program.is_ok()) << program.status().message();
    std::vector<std::string> templates;
    if (!program.is_ok()) return templates;
    for (const ProgramKernel& k : program->kernels) {
      templates.push_back(k.template_name);
      if (k.template_name == "conv_stem_pool_wgmma_nhwc") {
        // ResNet's 56 x 56 pooled output in 8 x 7 tiles: 56 an image; 2 blocks of 256 threads an
        // SM, all resident: ceil(56 * batch / 264) tiles a block.
        const int64_t tiles = 56 * batch, tpb = (tiles + 263) / 264;
        EXPECT_EQ(k.block.x, 256);
        EXPECT_EQ(k.grid.x, (tiles + tpb - 1) / tpb);
        // filter 14 steps x 2 chunks x 1 KB, window 39 x 36 pixels x 8 bytes, conv tile 256 x 72
        // halves, the window's float copies 39 x 36 x 3 x 4 bytes.
        EXPECT_EQ(k.shared_bytes, 28672 + 11232 + 36864 + 16848);
      }
    }
    if (keep) *keep = *g;
    return templates;
  };
  auto count = [](const std::vector<std::string>& t, const char* name) { return std::count(t.begin(), t.end(), name); };
  Graph g32;
  const std::vector<std::string> b32 = stem_templates(32, {"sm_90"}, true, "float16", &g32);
  EXPECT_EQ(count(b32, "conv_stem_pool_wgmma_nhwc"), 1);
  EXPECT_EQ(count(b32, "conv_stem_pool_nhwc"), 0);
  const std::vector<std::string> b1 = stem_templates(1, {"sm_90"}, true, "float16");  // 56 tiles, one a block
  EXPECT_EQ(count(b1, "conv_stem_pool_wgmma_nhwc"), 1);
  for (const auto& t : {stem_templates(32, {"sm_90", "sm_87"}, true, "float16"),
                        stem_templates(32, {"sm_90"}, false, "float16"), stem_templates(32, {"sm_90"}, true, "bfloat16")}) {
    EXPECT_EQ(count(t, "conv_stem_pool_wgmma_nhwc"), 0);
    EXPECT_EQ(count(t, "conv_stem_pool_nhwc"), 1);
  }
  const std::string nvcc = test::find_nvcc();
  if (!test::tool_runs(nvcc) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
  const std::string sources = test::compile_block_sources(g32, test::linear_plan(g32), {"sm_90"}, "", "stem-pool-wgmma");
  EXPECT_NE(sources.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"), std::string::npos);
}

// The wgmma stem + pool with an absorbed QuantizeLinear (opt/fuse_stem_quantize): the kernel
// writes int8 (its comment says so, its pooled store is the quantizing one) and nvcc compiles it
// for sm_90a; no quantize_linear kernel is left. Run on the GPU in tests/gpu
// (GpuQuantizedConv.StemPoolWritesTheQuantizedTensor).
TEST(CutlassConv, StemPoolWritesTheQuantizedTensorOnWgmma) {
  auto g = parse_text_ir(R"(
    input %x : float[8x3x224x224]
    const %w : float16[64x3x7x7] = random(1)
    const %b : float16[64] = random(2)
    const %s : float[scalar] = [0.05]
    const %z : int8[scalar] = [0]
    %h : float16[?] = Cast(%x) {to=10}  # cast
    %c : float16[?] = Conv(%h, %w, %b) {strides=[2,2], pads=[3,3,3,3]}  # stem
    %r : float16[?] = Relu(%c)  # relu
    %p : float16[?] = MaxPool(%r) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}  # pool
    %q : int8[?] = QuantizeLinear(%p, %s, %z)  # quant
    output %q
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 17;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_90"});
  for (auto pass : {fuse_epilogue, layout_nhwc, fuse_stem_pool}) ASSERT_TRUE(pass(*g).is_ok());
  auto fused = fuse_stem_quantize(*g);
  ASSERT_TRUE(fused.is_ok() && *fused);
  auto program = build_launch_program(*g, test::linear_plan(*g));
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  std::vector<std::string> templates;
  for (const ProgramKernel& k : program->kernels) templates.push_back(k.template_name);
  EXPECT_EQ(std::count(templates.begin(), templates.end(), "conv_stem_pool_wgmma_nhwc"), 1);
  EXPECT_EQ(std::count(templates.begin(), templates.end(), "quantize_linear"), 0);
  const std::string nvcc = test::find_nvcc();
  if (!test::tool_runs(nvcc) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
  const std::string sources = test::compile_block_sources(*g, test::linear_plan(*g), {"sm_90"}, "", "stem-pool-quantize");
  EXPECT_NE(sources.find("+ QuantizeLinear to int8"), std::string::npos);
  EXPECT_NE(sources.find("if constexpr (true)"), std::string::npos);
  EXPECT_NE(sources.find("signed char* __restrict__ y"), std::string::npos);
  EXPECT_NE(sources.find("rintf(__fmul_rn(v, 0x1.4p+4f))"), std::string::npos);  // 0.05: by 20, proven
}

// stem_wgmma_config (ir/ops/conv_configs.h), counted by hand: ResNet-50's stem + pool at batch 32
// on 132 SMs: 8 x 7 pooled tiles (conv tile 17 x 15 = 255 rows of 256), 56 a 56 x 56 image, 1792
// tiles, 7 a block (1792 / 264 slots = 6.8), 256 blocks; 7x7 taps padded to 8 a row: 14 K steps.
TEST(CutlassConv, StemWgmmaConfigForResNet50) {
  Target t = target_from_archs({"sm_90"});
  auto c = stem_wgmma_config(t, 32, 7, 7, 2, 2, 3, 3, 2, 2, 56, 56, 12);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->pth, 8);
  EXPECT_EQ(c->ptw, 7);
  EXPECT_EQ(c->tiles_w, 8);
  EXPECT_EQ(c->tiles, 1792);
  EXPECT_EQ(c->tiles_per_block, 7);
  EXPECT_EQ(c->blocks, 256);
  EXPECT_EQ(c->ksteps, 14);
  // window: (17 - 1) * 2 + 7 = 39 rows, (15 - 1) * 2 + 8 = 36 columns.
  EXPECT_EQ(c->smem_bytes, 14 * 2 * 64 * 16 + 39 * 36 * 8 + 256 * 72 * 2 + 39 * 36 * 12);
  // A 2x2/2 pool (conv tile 2 PTH x 2 PTW <= 256 rows: PTH x PTW <= 64) on a 28 x 28 output: 8 x 8
  // needs 16 tiles, 16 x 4 (and 4 x 16) 2 x 7 = 14, the fewest; the taller one.
  auto d = stem_wgmma_config(t, 1, 3, 3, 1, 1, 2, 2, 2, 2, 28, 28, 8);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->pth, 16);
  EXPECT_EQ(d->ptw, 4);
  EXPECT_EQ(d->tiles, 14);
  EXPECT_EQ(d->ksteps, 3);
  // A 64 x 64 filter's staged copy (1024 K steps x 2 KB) exceeds a block's shared memory.
  EXPECT_FALSE(stem_wgmma_config(t, 32, 64, 64, 1, 1, 3, 3, 2, 2, 56, 56, 12).has_value());
}

// --tune-matmuls auto (the default) times cuBLASLt's candidates at create for a convolution
// network (the block: 3 convolutions, no Gemm/MatMul) and not for a network of matmuls (must not
// fire: one MatMul); on / off force it either way.
TEST(CutlassConv, MatmulTuningAutoForConvolutionNetworksAndFp32Matmuls) {
  auto tuned = [](Graph& g, CodegenOptions::TuneMatmuls mode) {
    CodegenOptions o;
    o.name = "m";
    o.archs = {"sm_90"};
    o.tune_matmuls = mode;
    o.cutlass_include_dir = "rendering-only";  // nothing is compiled
    auto src = render_library_sources(g, test::linear_plan(g), o);
    EXPECT_TRUE(src.is_ok()) << src.status().message();
    if (!src) return std::string("?");
    const std::string& c = src->host.model_c;
    const size_t at = c.find(" /* time cuBLASLt candidates at create */");
    return at == std::string::npos ? std::string("?") : c.substr(at - 1, 1);
  };
  auto block = residual_block("float16", /*pointwise_gemm=*/true, /*im2col_gemm=*/false);
  ASSERT_TRUE(block.is_ok()) << block.status().message();
  EXPECT_EQ(tuned(*block, CodegenOptions::TuneMatmuls::kAuto), "1");
  EXPECT_EQ(tuned(*block, CodegenOptions::TuneMatmuls::kOff), "0");
  auto mm = parse_text_ir(R"(
    input %x : float16[8x64]
    const %w : float16[64x32] = random(1)
    %y : float16[?] = MatMul(%x, %w)  # mm
    output %y
  )");
  ASSERT_TRUE(mm.is_ok()) << mm.status().message();
  mm->opset = 17;
  ASSERT_TRUE(infer_shapes(*mm).is_ok());
  mm->target = target_from_archs({"sm_90"});
  EXPECT_EQ(tuned(*mm, CodegenOptions::TuneMatmuls::kAuto), "0");
  EXPECT_EQ(tuned(*mm, CodegenOptions::TuneMatmuls::kOn), "1");
  // The same MatMul in float32 (an fp32 transformer's GEMMs): auto tunes.
  auto mm32 = parse_text_ir(R"(
    input %x : float[8x64]
    const %w : float[64x32] = random(1)
    %y : float[?] = MatMul(%x, %w)  # mm
    output %y
  )");
  ASSERT_TRUE(mm32.is_ok()) << mm32.status().message();
  mm32->opset = 17;
  ASSERT_TRUE(infer_shapes(*mm32).is_ok());
  mm32->target = target_from_archs({"sm_90"});
  EXPECT_EQ(tuned(*mm32, CodegenOptions::TuneMatmuls::kAuto), "1");
  EXPECT_EQ(tuned(*mm32, CodegenOptions::TuneMatmuls::kOff), "0");
}

// fp32: the block runs NHWC with the 1x1 convolutions on cuBLASLt fp32 GEMMs and the 3x3 on the
// CUTLASS SIMT kernel; with --conv-fp32 nchw (must not fire) every convolution stays on the NCHW
// kernels and nothing is a library kernel or a matmul.
TEST(CutlassConv, Fp32BlockTakesSgemmAndSimtOrStaysNchwWhenOff) {
  for (bool on : {true, false}) {
    SCOPED_TRACE(on ? "nhwc" : "nchw");
    std::string text = R"(
    input %x : float[2x16x9x7]
    const %w1 : float[32x16x3x3] = random(1)
    const %b1 : float[32] = random(2)
    const %w2 : float[32x32x1x1] = random(3)
    %c1 : float[?] = Conv(%x, %w1, %b1) {pads=[1,1,1,1]}  # conv1
    %r1 : float[?] = Relu(%c1)  # relu1
    %c2 : float[?] = Conv(%r1, %w2)  # conv2
    output %c2
    )";
    auto g = parse_text_ir(text);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    g->opset = 17;
    ASSERT_TRUE(infer_shapes(*g).is_ok());
    g->target = target_from_archs({"sm_90"});
    g->target.conv_im2col_gemm = false;  // small convolutions would take im2col + GEMM
    g->target.conv_fp32_nhwc = on;
    ASSERT_TRUE(fuse_epilogue(*g).is_ok());
    auto laid = layout_nhwc(*g);
    ASSERT_TRUE(laid.is_ok()) << laid.status().message();
    EXPECT_EQ(*laid, on);
    auto program = build_launch_program(*g, test::linear_plan(*g));
    ASSERT_TRUE(program.is_ok()) << program.status().message();
    int library = 0, nchw = 0;
    for (const ProgramKernel& k : program->kernels) {
      library += k.library_params ? 1 : 0;
      nchw += k.template_name == "conv_implicit_gemm" ? 1 : 0;
    }
    EXPECT_EQ(library, on ? 1 : 0);
    EXPECT_EQ(nchw, on ? 0 : 2);
    ASSERT_EQ(program->matmuls.size(), on ? 1u : 0u);
    if (on) {
      EXPECT_EQ(program->matmuls[0].step.dtype, DType::kFloat32);
      EXPECT_EQ(program->matmuls[0].step.m, 2 * 9 * 7);
    }
  }
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// aotc.QLinearConv (int8, requantizing with a ReLU clamp, then dequantizing) through layout_nhwc
// and codegen: both become the int8 tensor-core template, whose params builder carries the zero
// point and the clamp; nvcc compiles it for Jetson's sm_87 and for sm_90 with the CUTLASS
// headers. Its results are checked on a GPU by GpuQuantizedConv (tests/gpu).
TEST(CutlassConv, Int8LibraryCompilesForJetsonAndHopper) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  auto g = parse_text_ir(R"(
    input %x : int8[2x16x7x9]
    const %xs : float[scalar] = [0.05]
    const %w : int8[32x16x3x3] = random(5, -127, 128)
    const %ws : float[32] = random(6, 0.001, 0.01)
    const %ys : float[scalar] = [0.2]
    const %yz : int8[scalar] = [-4]
    const %b : int32[32] = random(7, -500, 500)
    const %w2 : int8[16x32x1x1] = random(8, -127, 128)
    const %ws2 : float[16] = random(9, 0.001, 0.01)
    %y : int8[?] = aotc.QLinearConv(%x, %xs, _, %w, %ws, _, %ys, %yz, %b) {pads=[1,1,1,1], qmin=-4}  # qconv
    %f : float[?] = aotc.QLinearConv(%y, %ys, %yz, %w2, %ws2)  # deq
    output %f
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 17;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_87", "sm_90"});
  auto laid = layout_nhwc(*g);
  ASSERT_TRUE(laid.is_ok()) << laid.status().message();
  int nhwc = 0;
  for (const Node& n : g->nodes) nhwc += n.op_type == "QLinearConv" && channels_last(n) ? 1 : 0;
  // Both: the second reads y at zero point -4, but it is a 1x1 convolution without padding, so the
  // zero point folds into its bias word (opt/layout_nhwc's epilogue_words).
  EXPECT_EQ(nhwc, 2);
  const Node* q = nullptr;
  for (const Node& n : g->nodes)
    if (n.op_type == "QLinearConv" && channels_last(n) && !q) q = &n;
  ASSERT_NE(q, nullptr);
  auto lowered = default_registry().find("QLinearConv", "aotc")->lower(*q, *g);
  ASSERT_TRUE(lowered.is_ok()) << lowered.status().message();
  ASSERT_EQ(lowered->steps.size(), 1u);
  const KernelStep& k = lowered->steps[0].kernel;
  EXPECT_EQ(k.template_name, "cutlass_conv2d_fprop_i8");
  EXPECT_TRUE(k.library_params);
  // N H W C K R S P Q pads strides dilations, then zero point -4 and the clamp [-4, 127].
  EXPECT_EQ(k.builder_args, (std::vector<int64_t>{2, 7, 9, 16, 32, 3, 3, 7, 9, 1, 1, 1, 1, 1, 1, -4, -4, 127}));
  const std::string sources = test::compile_block_sources(*g, test::linear_plan(*g), {"sm_87", "sm_90"}, include, "cutlass-int8");
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("cutlass::arch::OpMultiplyAddSaturate"), std::string::npos);
  EXPECT_NE(sources.find("using ElementOut = int8_t;"), std::string::npos);
}

// --int8-requant: the int8 layer renders the epilogue route asked for (templates/int8_requant.cuh,
// each checked bit for bit against the double path by Int8Requant.*) - by default dmagic where every
// multiplier of the layer is below 0.5 in magnitude, as one FMA (dfma) where the weights and biases
// also bound every |acc + b| under 2^29, and the double path where a multiplier is not below 0.5,
// or the double path / fp32 route / dmagic everywhere when asked - and nvcc
// compiles it for Jetson's sm_87 (the routes are ordinary branches of one function there, so one
// build compiles all of them).
TEST(CutlassConv, Int8RequantRoutesRenderAndCompile) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  // y_scale 0.2: multipliers 0.05 * [0.001, 0.01] / 0.2 < 0.5; y_scale 0.0004: up to 1.25.
  // |acc| <= 128 * 127 * 144 (under 2^21); a bias from 2^29 up puts |acc + b| past dfma's bound.
  auto graph = [](const std::string& y_scale, const std::string& bias = "random(7, -1000, 1000)") {
    auto g = parse_text_ir(R"(
      input %x : int8[1x16x6x6]
      const %xs : float[scalar] = [0.05]
      const %w : int8[32x16x3x3] = random(5, -127, 128)
      const %ws : float[32] = random(6, 0.001, 0.01)
      const %ys : float[scalar] = [)" + y_scale + R"(]
      const %yz : int8[scalar] = [0]
      const %b : int32[32] = )" + bias + R"(
      %y : int8[?] = aotc.QLinearConv(%x, %xs, _, %w, %ws, _, %ys, %yz, %b) {pads=[1,1,1,1], qmin=0}  # qconv
      output %y
    )");
    EXPECT_TRUE(g.is_ok()) << g.status().message();
    g->opset = 17;
    EXPECT_TRUE(infer_shapes(*g).is_ok());
    g->target = target_from_archs({"sm_87"});
    EXPECT_TRUE(layout_nhwc(*g).is_ok());
    return std::move(*g);
  };
  auto hole = [](const Graph& g, Int8Requant route) {
    Graph copy = g;
    copy.target.int8_requant = route;
    for (const Node& n : copy.nodes)
      if (n.op_type == "QLinearConv" && channels_last(n)) {
        auto lowered = default_registry().find("QLinearConv", "aotc")->lower(n, copy);
        EXPECT_TRUE(lowered.is_ok());
        for (const auto& [name, value] : lowered->steps[0].kernel.holes)
          if (name == "REQUANT_ROUTE") return value;
      }
    return std::string("(none)");
  };
  Graph small = graph("0.2"), large = graph("0.0004"), big_bias = graph("0.2", "random(7, 536870912, 600000000)");
  EXPECT_EQ(hole(small, Int8Requant::kAuto), "3");    // dfma
  EXPECT_EQ(hole(small, Int8Requant::kDmagic), "2");  // dmagic
  EXPECT_EQ(hole(big_bias, Int8Requant::kAuto), "2");  // |b| >= 2^29: dmagic, not its FMA form
  EXPECT_EQ(hole(small, Int8Requant::kDouble), "0");
  EXPECT_EQ(hole(small, Int8Requant::kFp32), "1");
  EXPECT_EQ(hole(large, Int8Requant::kAuto), "0");    // a multiplier >= 0.5: the double path
  EXPECT_EQ(hole(large, Int8Requant::kDouble), "0");
  EXPECT_EQ(hole(large, Int8Requant::kFp32), "1");
  small.target.int8_requant = Int8Requant::kAuto;
  const std::string sources = test::compile_block_sources(small, test::linear_plan(small), {"sm_87"}, include, "cutlass-int8-dmagic");
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("constexpr int kRequantRoute = 3;"), std::string::npos);
  EXPECT_NE(sources.find("#include \"int8_requant.cuh\""), std::string::npos);
}

// --int8-fuse-residual on for Jetson: a residual block's QLinearAdd goes into the Sm80 int8
// kernel's epilogue (r read as its source; opt/fuse_residual_qadd) and nvcc compiles the fused
// instantiation for sm_87 (run on a GPU by GpuQuantizedConv.Sm80Int8FusedResidualAdd*).
TEST(CutlassConv, Int8FusedResidualAddCompilesForJetson) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  auto g = parse_text_ir(R"(
    input %x : float[1x32x8x8]
    const %s : float[scalar] = [0.05]
    const %st : float[scalar] = [0.07]
    const %z : int8[scalar] = [0]
    const %w1 : int8[32x32x3x3] = random(5, -127, 128)
    const %ws1 : float[32] = random(6, 0.001, 0.01)
    const %w2 : int8[32x32x1x1] = random(8, -127, 128)
    const %ws2 : float[32] = random(9, 0.001, 0.01)
    %xq : int8[?] = QuantizeLinear(%x, %s, %z)  # q
    %h : int8[?] = aotc.QLinearConv(%xq, %s, %z, %w1, %ws1, _, %s, %z) {pads=[1,1,1,1], qmin=0}  # conv1
    %t : int8[?] = aotc.QLinearConv(%h, %s, %z, %w2, %ws2, _, %st, %z)  # conv2
    %a : int8[?] = aotc.QLinearAdd(%t, %st, %z, %h, %s, %z, %s, %z) {qmin=0}  # add
    %f : float[?] = DequantizeLinear(%a, %s, %z)  # dq
    output %f
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 17;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_87"});
  g->target.int8_fuse_residual = Int8FuseResidual::kOn;
  ASSERT_TRUE(layout_nhwc(*g).is_ok());
  auto fused = fuse_residual_qadd(*g);
  ASSERT_TRUE(fused.is_ok() && *fused);
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  int adds = 0;
  for (const Node& n : g->nodes) adds += n.op_type == "QLinearAdd" ? 1 : 0;
  EXPECT_EQ(adds, 0);
  const std::string sources = test::compile_block_sources(*g, test::linear_plan(*g), {"sm_87"}, include, "cutlass-int8-res");
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("constexpr bool kResidual = true;"), std::string::npos);
}

// ONNX Runtime's zero point -128 activations: reencode_uint8 makes them uint8 at zero point 0 and
// layout_nhwc puts both convolutions (requantizing, dequantizing) on the u8 x s8 instantiation,
// which nvcc compiles for sm_87 and sm_90 (run on a GPU by
// GpuQuantizedConv.ZeroPointMinus128RunsAsUint8OnTheTensorCoreKernel).
TEST(CutlassConv, Uint8ActivationsCompileForJetsonAndHopper) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  auto g = parse_text_ir(R"(
    input %x : float[1x16x8x8]
    const %s : float[scalar] = [0.05]
    const %z : int8[scalar] = [-128]
    const %w : int8[32x16x3x3] = random(5, -127, 128)
    const %ws : float[32] = random(6, 0.001, 0.01)
    const %b : int32[32] = random(7, -500, 500)
    const %w2 : int8[16x32x1x1] = random(8, -127, 128)
    const %ws2 : float[16] = random(9, 0.001, 0.01)
    %xq : int8[?] = QuantizeLinear(%x, %s, %z)  # q
    %y : int8[?] = aotc.QLinearConv(%xq, %s, %z, %w, %ws, _, %s, %z, %b) {pads=[1,1,1,1], qmin=-128}  # qconv
    %f : float[?] = aotc.QLinearConv(%y, %s, %z, %w2, %ws2)  # deq
    output %f
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 17;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_87", "sm_90"});
  auto re = reencode_uint8(*g);
  ASSERT_TRUE(re.is_ok() && *re);
  auto laid = layout_nhwc(*g);
  ASSERT_TRUE(laid.is_ok()) << laid.status().message();
  std::vector<std::string> elements;
  for (const Node& n : g->nodes) {
    if (n.op_type != "QLinearConv") continue;
    ASSERT_TRUE(channels_last(n)) << n.name;
    auto lowered = default_registry().find("QLinearConv", "aotc")->lower(n, *g);
    ASSERT_TRUE(lowered.is_ok()) << lowered.status().message();
    for (const auto& [hole, text] : lowered->steps[0].kernel.holes)
      if (hole == "ELEMENT_A" || hole == "ELEMENT_OUT") elements.push_back(hole + "=" + text);
    if (n.input(6) != kNoValue) {  // requantizing: zero point 0, the ReLU clamp [0, 255]
      const std::vector<int64_t>& a = lowered->steps[0].kernel.builder_args;
      EXPECT_EQ(std::vector<int64_t>(a.end() - 3, a.end()), (std::vector<int64_t>{0, 0, 255}));
    }
  }
  EXPECT_EQ(elements, (std::vector<std::string>{"ELEMENT_A=uint8_t", "ELEMENT_OUT=uint8_t", "ELEMENT_A=uint8_t", "ELEMENT_OUT=float"}));
  const std::string sources = test::compile_block_sources(*g, test::linear_plan(*g), {"sm_87", "sm_90"}, include, "cutlass-uint8");
  ASSERT_FALSE(sources.empty());
  EXPECT_NE(sources.find("using ElementA = uint8_t;"), std::string::npos);
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// aotc.QLinearMatMul A [2, 7, 32] x B [32, 48] lowers to the int8 conv kernel as a 1x1 convolution:
// one image of 14 x 1 pixels with 32 channels, 48 output channels, dequantized to float.
TEST(CutlassConv, Int8MatMulLowersAsAOneByOneConvolution) {
  auto g = parse_text_ir(R"(
    input %a : int8[2x7x32]
    const %as : float[scalar] = [0.05]
    const %b : int8[32x48] = random(5, -127, 128)
    const %bs : float[48] = random(6, 0.001, 0.01)
    %y : float[?] = aotc.QLinearMatMul(%a, %as, _, %b, %bs)  # qmm
    output %y
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->opset = 17;
  ASSERT_TRUE(infer_shapes(*g).is_ok());
  g->target = target_from_archs({"sm_87", "sm_90"});
  auto laid = layout_nhwc(*g);
  ASSERT_TRUE(laid.is_ok()) << laid.status().message();
  ASSERT_EQ(g->nodes.size(), 1u);
  ASSERT_TRUE(channels_last(g->nodes[0]));
  auto lowered = default_registry().find("QLinearMatMul", "aotc")->lower(g->nodes[0], *g);
  ASSERT_TRUE(lowered.is_ok()) << lowered.status().message();
  ASSERT_EQ(lowered->steps.size(), 1u);
  const KernelStep& k = lowered->steps[0].kernel;
  EXPECT_EQ(k.template_name, "cutlass_conv2d_fprop_i8");
  // N H W C K R S P Q pads strides dilations zero point, clamp (unused when dequantizing).
  EXPECT_EQ(k.builder_args, (std::vector<int64_t>{1, 14, 1, 32, 48, 1, 1, 14, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0}));
  const auto element = std::find_if(k.holes.begin(), k.holes.end(), [](const auto& h) { return h.first == "ELEMENT_OUT"; });
  ASSERT_NE(element, k.holes.end());
  EXPECT_EQ(element->second, "float");
}

}  // namespace
}  // namespace aotc
