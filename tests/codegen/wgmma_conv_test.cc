// The sm_90a convolution (templates/cutlass_conv2d_fprop_sm90.cu.in) and its compile-time params
// builder (codegen/host_params.h): which convolutions lower to it, what the host program records
// for one problem (checked against the NHWC / KRSC layout by hand, not against its own output),
// the parser's refusals, and that nvcc builds the library for sm_90a. On a GPU, GpuConvFp16.Wgmma*
// compare it with the CPU reference.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "codegen/codegen.h"
#include "codegen/cutlass_dir.h"
#include "codegen/device_source.h"
#include "codegen/host_params.h"
#include "codegen/launch_program.h"
#include "codegen_test_util.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/text_ir.h"
#include "library_build.h"
#include "opt/memory_plan.h"
#include "opt/passes.h"
#include "templates/int8_requant.cuh"

namespace aotc {
namespace {

// x [8, 64, 34, 34] -> conv1 3x3 pad 1 (64 -> 64, bias, Clip(-inf, 6): its expression needs a
// device intrinsic for the infinite bound, which the host program must not compile; 8*34*34 = 9248 rows: 73 tiles of
// 128x64, a wave of 132 SMs at two CTAs a SM) -> conv2 3x3 stride 2 (64 -> 128; 8*17*17 = 2312
// rows: 37 tiles of 64x128, under half a wave: not the sm_90a kernel).
Expected<Graph> two_convs(const std::vector<std::string>& archs, bool wgmma = true) {
  auto g = parse_text_ir(R"(
    input %x : float16[8x64x34x34]
    const %w1 : float16[64x64x3x3] = random(1)
    const %b1 : float16[64] = random(2)
    const %w2 : float16[128x64x3x3] = random(3)
    %c1 : float16[?] = Conv(%x, %w1, %b1) {pads=[1,1,1,1]}  # conv1
    %r1 : float16[?] = Clip(%c1) {min=-inf, max=6.0}  # clip
    %c2 : float16[?] = Conv(%r1, %w2) {pads=[1,1,1,1], strides=[2,2]}  # conv2
    output %c2
  )");
  if (!g) return g;
  g->opset = 17;
  AOTC_RETURN_IF_ERROR(infer_shapes(*g));
  g->target = target_from_archs(archs);
  g->target.conv_wgmma = wgmma;
  auto fused = fuse_epilogue(*g);
  if (!fused) return fused.status();
  auto laid = layout_nhwc(*g);
  if (!laid) return laid.status();
  return g;
}

std::vector<const ProgramKernel*> wgmma_kernels(const LaunchProgram& p) {
  std::vector<const ProgramKernel*> out;
  for (const ProgramKernel& k : p.kernels)
    if (k.template_name == "cutlass_conv2d_fprop_sm90") out.push_back(&k);
  return out;
}

TEST(WgmmaConv, OnlyFullConvolutionsOnSm90OnlyTargets) {
  auto g = two_convs({"sm_90"});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto program = build_launch_program(*g, test::linear_plan(*g));
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  std::vector<const ProgramKernel*> w = wgmma_kernels(*program);
  ASSERT_EQ(w.size(), 1u);
  const ProgramKernel& k = *w[0];
  EXPECT_TRUE(k.library_params);
  EXPECT_TRUE(k.host_params);
  // N H W C K R S, pads (begin h w, end h w), strides, dilations, y_ld, residual, bias.
  EXPECT_EQ(k.builder_args, (std::vector<int64_t>{8, 34, 34, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64, 0, 1}));
  // The profiling extension's FLOPs: 2 * N*P*Q*K * C*R*S.
  for (const ProgramStep& st : program->steps) {
    if (st.kind == ProgramStep::Kind::kKernel && &program->kernels[static_cast<size_t>(st.index)] == &k) {
      EXPECT_EQ(st.flops, int64_t{2} * 8 * 34 * 34 * 64 * 64 * 3 * 3);
    }
  }
  ASSERT_EQ(k.args.size(), 5u);
  EXPECT_EQ(k.args[0].space, Location::Space::kArena);    // the packed NHWC input
  EXPECT_EQ(k.args[1].space, Location::Space::kWeights);  // KRSC filter
  EXPECT_EQ(k.args[2].space, Location::Space::kWeights);  // bias
  EXPECT_EQ(k.args[3].space, Location::Space::kNull);     // no residual
  EXPECT_EQ(k.args[4].space, Location::Space::kArena);
  for (const auto& [key, value] : k.holes) {
    if (key == "TILE_N") {
      EXPECT_EQ(value, "64LL");  // 64 output channels: the 128x64 row
    }
    if (key == "act_expr") {
      EXPECT_NE(value.find("__int_as_float"), std::string::npos) << value;  // the -inf bound
    }
  }
  // Must not fire: another target in the list (Jetson), or switched off.
  for (bool mixed : {true, false}) {
    auto other = mixed ? two_convs({"sm_90", "sm_87"}) : two_convs({"sm_90"}, /*wgmma=*/false);
    ASSERT_TRUE(other.is_ok()) << other.status().message();
    auto plan = plan_memory(*other);  // im2col / split-K scratch for the other implementations
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    auto p = build_launch_program(*other, *plan);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    EXPECT_TRUE(wgmma_kernels(*p).empty()) << (mixed ? "sm_90 + sm_87" : "--conv-wgmma off");
  }
}

// --conv-wgmma-cluster 2: the kernel in clusters of two CTAs along M (__cluster_dims__, filter
// tiles shared by TMA multicast) where the M tiles pair up - 8 x 48 x 48 = 18432 rows (144 tiles of
// 128) do, 8 x 34 x 34 = 9248 (73) do not; off by default.
TEST(WgmmaConv, ClusterOfTwoOnlyWhereTheMTilesPairUp) {
  auto holes = [](int64_t hw, int cluster_m) {
    auto g = parse_text_ir(R"(
      input %x : float16[8x64x)" + std::to_string(hw) + "x" + std::to_string(hw) + R"(]
      const %w : float16[64x64x3x3] = random(1)
      const %b : float16[64] = random(2)
      %c : float16[?] = Conv(%x, %w, %b) {pads=[1,1,1,1]}  # conv
      output %c
    )");
    EXPECT_TRUE(g.is_ok()) << g.status().message();
    g->opset = 17;
    EXPECT_TRUE(infer_shapes(*g).is_ok());
    g->target = target_from_archs({"sm_90"});
    g->target.conv_wgmma_cluster_m = cluster_m;
    EXPECT_TRUE(fuse_epilogue(*g).is_ok());
    EXPECT_TRUE(layout_nhwc(*g).is_ok());
    auto plan = plan_memory(*g);
    EXPECT_TRUE(plan.is_ok()) << plan.status().message();
    auto program = build_launch_program(*g, *plan);
    EXPECT_TRUE(program.is_ok()) << program.status().message();
    std::pair<std::string, std::string> out{"(none)", "(none)"};
    for (const ProgramKernel* k : wgmma_kernels(*program))
      for (const auto& [key, value] : k->holes) {
        if (key == "CLUSTER_M") out.first = value;
        if (key == "CLUSTER_DIMS") out.second = value;
      }
    return out;
  };
  EXPECT_EQ(holes(48, 1), (std::pair<std::string, std::string>{"1", ""}));
  EXPECT_EQ(holes(48, 2), (std::pair<std::string, std::string>{"2", "__cluster_dims__(2, 1, 1)"}));
  EXPECT_EQ(holes(34, 2), (std::pair<std::string, std::string>{"1", ""}));
}

// --conv-wgmma-pointwise on: a 1x1 stride-1 convolution (one cuBLASLt GEMM otherwise) runs on the
// sm_90a kernel too, with its 1x1 window in the builder args; off (default): the GEMM.
TEST(WgmmaConv, PointwiseConvolutionsOnlyWhenAsked) {
  for (bool on : {true, false}) {
    auto g = parse_text_ir(R"(
      input %x : float16[8x64x34x34]
      const %w : float16[128x64x1x1] = random(1)
      const %b : float16[128] = random(2)
      %c : float16[?] = Conv(%x, %w, %b)  # pw
      %r : float16[?] = Relu(%c)  # relu
      output %r
    )");
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    g->opset = 17;
    ASSERT_TRUE(infer_shapes(*g).is_ok());
    g->target = target_from_archs({"sm_90"});
    g->target.conv_wgmma_pointwise = on;
    ASSERT_TRUE(fuse_epilogue(*g).is_ok());
    ASSERT_TRUE(layout_nhwc(*g).is_ok());
    auto plan = plan_memory(*g);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    auto program = build_launch_program(*g, *plan);
    ASSERT_TRUE(program.is_ok()) << program.status().message();
    std::vector<const ProgramKernel*> w = wgmma_kernels(*program);
    if (!on) {
      EXPECT_TRUE(w.empty());
      EXPECT_EQ(program->matmuls.size(), 1u);
      continue;
    }
    ASSERT_EQ(w.size(), 1u);
    EXPECT_TRUE(program->matmuls.empty());
    // N H W C K R S, pads, strides, dilations, y_ld, residual, bias: 9248 rows, 73 tiles of 128x128.
    EXPECT_EQ(w[0]->builder_args, (std::vector<int64_t>{8, 34, 34, 64, 128, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 128, 0, 1}));
  }
}

// The configuration rule per ResNet-50 3x3 layer at batch 32 (measured, ir/ops/conv_configs.h),
// and every refusal.
TEST(WgmmaConv, ConfigurationRuleAndRefusals) {
  Target t = target_from_archs({"sm_90"});
  const std::vector<int64_t> k3 = {3, 3}, s1 = {1, 1}, s2 = {2, 2}, d1 = {1, 1}, p1 = {1, 1, 1, 1};
  auto pick = [&](const Target& tt, DType dt, int64_t c, int64_t k, int64_t m, int64_t y_ld = 0,
                  std::vector<int64_t> strides = {1, 1}, std::vector<int64_t> pads = {1, 1, 1, 1}) {
    auto cfg = conv_wgmma_config(tt, dt, 1, c, k, y_ld ? y_ld : k, false, k3, strides, d1, pads, m);
    return cfg ? std::string(cfg->name) : std::string("none");
  };
  EXPECT_EQ(pick(t, DType::kFloat16, 64, 64, 32 * 56 * 56), "wg128x64x64_s4_2cta");
  EXPECT_EQ(pick(t, DType::kFloat16, 128, 128, 32 * 28 * 28), "wg128x128x64_auto");
  // Few input channels (EfficientNetV2-S's fused-MBConv 3x3s, measured): the 32-deep rows up to 48
  // channels, 64 wide unless the output channels round up to 32; 56 and 64 input channels keep the
  // rule above (64 -> 256 measured slower on the 128x32 row).
  EXPECT_EQ(pick(t, DType::kFloat16, 24, 24, 32 * 112 * 112), "wg128x32x32_s6_2cta");
  EXPECT_EQ(pick(t, DType::kFloat16, 24, 96, 32 * 56 * 56, 0, s2), "wg128x64x32_s6_2cta");
  EXPECT_EQ(pick(t, DType::kFloat16, 48, 192, 32 * 56 * 56), "wg128x64x32_s6_2cta");
  EXPECT_EQ(pick(t, DType::kFloat16, 48, 40, 32 * 56 * 56), "wg128x64x32_s6_2cta");  // 40 rounds up to 64
  EXPECT_EQ(pick(t, DType::kFloat16, 24, 24, 112 * 112), "wg128x32x32_s6_2cta");    // batch 1: 98 tiles
  EXPECT_EQ(pick(t, DType::kFloat16, 24, 24, 8 * 56 * 56), "wg128x32x32_s6_2cta");  // GpuConvFp16.WgmmaFewChannels*
  EXPECT_EQ(pick(t, DType::kFloat16, 40, 96, 16 * 29 * 28, 0, s2), "wg128x64x32_s6_2cta");
  EXPECT_EQ(pick(t, DType::kFloat16, 56, 192, 32 * 56 * 56), "wg128x128x64_auto");
  EXPECT_EQ(pick(t, DType::kFloat16, 64, 256, 32 * 28 * 28), "wg128x128x64_auto");
  // Under half a wave of its tiles the few-channel row falls through to the rows below (and the
  // wgmma kernel to none): 24 channels at 28x28, batch 1 (7 tiles).
  EXPECT_EQ(pick(t, DType::kFloat16, 24, 24, 28 * 28), "none");
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kWgmma, 28 * 28, 24, 0, 24).name, "wg128x64x64_s4_2cta");
  // Without the input channels (other callers) the few-channel row is never picked.
  EXPECT_STREQ(pick_conv_config(t, ConvMath::kWgmma, 32 * 112 * 112, 24).name, "wg128x64x64_s4_2cta");
  EXPECT_EQ(pick(t, DType::kFloat16, 256, 256, 32 * 14 * 14, 0, s2), "wg128x128x64_auto");
  EXPECT_EQ(pick(t, DType::kBFloat16, 256, 256, 32 * 14 * 14, 0, s2), "none");  // not yet checked on a GPU
  // Layer4 (52 tiles of 128x128): 100 tiles of 64x128, one an SM, with the deepest pipeline.
  EXPECT_EQ(pick(t, DType::kFloat16, 512, 512, 32 * 7 * 7), "wg64x128x64_auto");
  EXPECT_EQ(pick(t, DType::kFloat16, 512, 512, 32 * 7 * 7, 0, s2), "wg64x128x64_auto");  // layer4.0: 14x14 -> 7x7
  // GpuConvFp16.WgmmaOneTileAnSmDeepPipeline's shape: 49 tiles of 128x128, 98 of 64x128.
  EXPECT_EQ(pick(t, DType::kFloat16, 64, 128, 8 * 28 * 28), "wg64x128x64_auto");
  // Wherever the rule reaches the 64x128 row, its tiles fit one wave (fewer than half a wave of
  // 128x128 tiles, at most twice as many 64x128 ones): nothing left for a second CTA an SM.
  int reached = 0;
  for (int64_t m = 64; m <= 32 * 56 * 56; m += 97)
    for (int64_t k : {128, 192, 256, 512, 1024}) {
      auto cfg = conv_wgmma_config(t, DType::kFloat16, 1, 64, k, k, false, k3, s1, d1, p1, m);
      if (cfg && std::string(cfg->name) == "wg64x128x64_auto") {
        ++reached;
        EXPECT_LE(conv_config_tiles(*cfg, m, k), t.sm_count) << m << " x " << k;
      }
    }
  EXPECT_GT(reached, 20);
  EXPECT_EQ(pick(t, DType::kFloat16, 64, 64, 56 * 56), "none");  // batch 1: 25 tiles
  Target wave = t;  // --conv-wgmma-fill wave: layer4's 100 tiles are under a wave
  wave.conv_wgmma_fill = 1.0;
  EXPECT_EQ(pick(wave, DType::kFloat16, 512, 512, 32 * 7 * 7), "none");
  EXPECT_EQ(pick(wave, DType::kFloat16, 128, 128, 32 * 28 * 28), "wg128x128x64_auto");  // 196 tiles
  EXPECT_EQ(pick(t, DType::kFloat32, 64, 64, 32 * 56 * 56), "none");
  EXPECT_EQ(pick(t, DType::kInt8, 64, 64, 32 * 56 * 56), "none");
  EXPECT_EQ(pick(t, DType::kFloat16, 12, 64, 32 * 56 * 56), "none");       // C not 8-aligned
  EXPECT_EQ(pick(t, DType::kFloat16, 64, 64, 32 * 56 * 56, 100), "none");  // output rows not 8-aligned
  EXPECT_EQ(pick(t, DType::kFloat16, 64, 64, 32 * 56 * 56, 0, {9, 9}), "none");
  EXPECT_EQ(pick(t, DType::kFloat16, 64, 64, 32 * 56 * 56, 0, s1, {65, 1, 1, 1}), "none");
  EXPECT_FALSE(conv_wgmma_config(t, DType::kFloat16, 2, 64, 64, 64, false, k3, s1, d1, p1, 32 * 56 * 56));  // groups
  // Output in a Concat's rows (y_ld 128 > K 64): fine alone, refused with a residual (read packed).
  EXPECT_TRUE(conv_wgmma_config(t, DType::kFloat16, 1, 64, 64, 128, false, k3, s1, d1, p1, 32 * 56 * 56));
  EXPECT_FALSE(conv_wgmma_config(t, DType::kFloat16, 1, 64, 64, 128, true, k3, s1, d1, p1, 32 * 56 * 56));
  EXPECT_TRUE(conv_wgmma_config(t, DType::kFloat16, 1, 64, 64, 64, true, k3, s1, d1, p1, 32 * 56 * 56));
  EXPECT_EQ(pick(target_from_archs({"sm_90", "sm_87"}), DType::kFloat16, 64, 64, 32 * 56 * 56), "none");
  EXPECT_EQ(pick(target_from_archs({"sm_100"}), DType::kFloat16, 64, 64, 32 * 56 * 56), "none");
  Target off = t;
  off.conv_wgmma = false;
  EXPECT_EQ(pick(off, DType::kFloat16, 64, 64, 32 * 56 * 56), "none");
  Target forced_sm80 = t;
  forced_sm80.conv_config = "tc64x64x32_w32x32_s4";
  EXPECT_EQ(pick(forced_sm80, DType::kFloat16, 128, 128, 32 * 28 * 28), "none");
  Target forced = t;
  forced.conv_config = "wg64x128x64_s4_2cta";
  EXPECT_EQ(pick(forced, DType::kFloat16, 256, 256, 32 * 14 * 14), "wg64x128x64_s4_2cta");
  // The rows: sm_90 only; two CTAs a SM exactly for the explicit stage counts, whose operand
  // stages leave room for a second CTA in the 227 KiB of an SM.
  for (const ConvKernelConfig& c : conv_configs_of(ConvMath::kWgmma)) {
    EXPECT_EQ(c.min_sm, 90) << c.name;
    EXPECT_EQ(conv_wgmma_min_blocks(c), c.stages > 0 ? 2 : 1) << c.name;
    if (c.stages > 0) {
      EXPECT_LE((c.tb_m + c.tb_n) * c.tb_k * 2 * c.stages, 100 * 1024) << c.name;
    }
  }
}

// One host-params kernel with the given argument locations, for the parser tests.
LaunchProgram one_kernel_program(Location::Space x_space) {
  LaunchProgram p;
  ProgramKernel k;
  k.name = k.function = "k0_lib_conv";
  k.library_params = k.host_params = true;
  k.args.resize(5);
  k.args[0].space = x_space;
  k.args[1].space = Location::Space::kWeights;
  k.args[4].space = Location::Space::kArena;
  p.kernels.push_back(k);
  return p;
}

// A header (magic, params_bytes 256) + 256 bytes of params, as hex.
std::string bytes_line(uint32_t magic = 0x41505248u) {
  std::vector<uint8_t> b(512, 0);
  const uint32_t params = 256;
  std::memcpy(b.data(), &magic, 4);
  std::memcpy(b.data() + 4, &params, 4);
  std::string hex = "bytes ";
  static const char* kHex = "0123456789abcdef";
  for (uint8_t v : b) hex += std::string(1, kHex[v >> 4]) + kHex[v & 15];
  return hex + "\n";
}

const char* const kMap0 = "tmap 0 128 1 1 4 64 34 34 8 0 128 4352 147968 0 0 0 0 0 0 -1 -1 0 -1 -1 0 64 128 1 1 1 1 0 0 3 0 0\n";

TEST(WgmmaConv, ParserTakesWellFormedOutputAndRefusesTheRest) {
  LaunchProgram ok = one_kernel_program(Location::Space::kArena);
  ASSERT_TRUE(parse_host_params_output(std::string("kernel k0_lib_conv 0 0\n") + kMap0 + bytes_line() + "end\n", ok).is_ok());
  ASSERT_EQ(ok.kernels[0].tensor_maps.size(), 1u);
  const TensorMapRecord& m = ok.kernels[0].tensor_maps[0];
  EXPECT_TRUE(m.im2col);
  EXPECT_EQ(m.offset, 128u);
  EXPECT_EQ(m.dims[3], 8u);
  EXPECT_EQ(m.strides[2], 147968u);
  EXPECT_EQ(m.lower[0], -1);
  EXPECT_EQ(m.pixels, 128u);
  EXPECT_EQ(m.swizzle, 3);
  EXPECT_EQ(ok.kernels[0].prebuilt.size(), 512u);

  auto refused = [](LaunchProgram p, const std::string& text, const std::string& why) {
    Status s = parse_host_params_output(text, p);
    EXPECT_FALSE(s.is_ok()) << why;
    return s.message();
  };
  // A descriptor of a graph input (its address changes per run).
  EXPECT_NE(refused(one_kernel_program(Location::Space::kInput),
                    std::string("kernel k0_lib_conv 0 0\n") + kMap0 + bytes_line() + "end\n", "input")
                .find("not in the arena or the weights"),
            std::string::npos);
  // CUTLASS refused the problem.
  EXPECT_NE(refused(one_kernel_program(Location::Space::kArena), "kernel k0_lib_conv 0 3\nerror no\nend\n", "status")
                .find("refused the problem"),
            std::string::npos);
  refused(one_kernel_program(Location::Space::kArena), std::string("kernel k0_lib_conv 0 0\n") + kMap0, "no end");
  refused(one_kernel_program(Location::Space::kArena), "", "no output");
  refused(one_kernel_program(Location::Space::kArena), "kernel other 0 0\n" + bytes_line() + "end\n", "other kernel");
  refused(one_kernel_program(Location::Space::kArena), "kernel k0_lib_conv 0 0\n" + bytes_line(7) + "end\n", "bad magic");
  refused(one_kernel_program(Location::Space::kArena),
          "kernel k0_lib_conv 0 0\ntmap 0 96 1 1 4 1 1 1 1 0 2 2 2 0 0 0 0 0 0 0 0 0 0 0 0 8 8 1 1 1 1 0 0 3 0 0\n" +
              bytes_line() + "end\n",
          "misaligned map");
  refused(one_kernel_program(Location::Space::kArena), "kernel k0_lib_conv 0 0\ntmap 0 128 1\n" + bytes_line() + "end\n",
          "truncated map");
}

// nvcc builds the host program and the sm_90a library; the records of conv1 agree with its
// layout: x NHWC [8, 34, 34, 64] fp16 read through an im2col map (dims C, W, H, N; byte strides
// of a pixel, a row, an image; pixel-box corners -pad; TILE_K channels x TILE_M pixels), the KRSC
// filter through a tiled map (dims C, K, S, R), y through the epilogue's maps (no residual: C names
// y), the bias as a raw pointer slot, the grid one CTA per 128x64 tile.
TEST(WgmmaConv, HostProgramRecordsAndSm90aLibraryBuild) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  auto g = two_convs({"sm_90"});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto src = test::render_sm90_sources(*g, test::linear_plan(*g), include, "wgmma");
  ASSERT_TRUE(src.is_ok()) << src.status().message();
  std::vector<const ProgramKernel*> w = wgmma_kernels(src->program);
  ASSERT_EQ(w.size(), 1u);
  const ProgramKernel& k = *w[0];
  ASSERT_GT(k.prebuilt.size(), 256u);
  uint32_t header[64];
  std::memcpy(header, k.prebuilt.data(), sizeof header);
  EXPECT_EQ(header[0], 0x41505248u);                 // magic
  EXPECT_EQ(header[1] + 256u, k.prebuilt.size());    // params_bytes
  EXPECT_EQ(header[2] * header[3] * header[4], 73u);  // grid: ceil(9248 / 128) x 1 tiles
  EXPECT_EQ(header[5], 256u);                        // one producer + one consumer warp group
  EXPECT_GT(header[8], 48u * 1024);                  // dynamic shared memory
  EXPECT_EQ(header[9], 5u);                          // pointer slots
  EXPECT_NE(header[10 + 2], 0xffffffffu);            // the bias is a raw pointer
  EXPECT_EQ(header[10 + 0], 0xffffffffu);            // x only inside its descriptor
  int im2col_x = 0, tiled_w = 0, y_maps = 0;
  for (const TensorMapRecord& m : k.tensor_maps) {
    EXPECT_EQ(m.offset % 64, 0u);
    if (m.arg == 0) {
      ++im2col_x;
      EXPECT_TRUE(m.im2col);
      EXPECT_EQ(m.rank, 4);
      EXPECT_EQ(std::vector<uint64_t>(m.dims, m.dims + 4), (std::vector<uint64_t>{64, 34, 34, 8}));
      EXPECT_EQ(std::vector<uint64_t>(m.strides, m.strides + 3), (std::vector<uint64_t>{128, 128 * 34, 128 * 34 * 34}));
      EXPECT_EQ(m.lower[0], -1);
      EXPECT_EQ(m.lower[1], -1);
      EXPECT_EQ(m.channels, 64u);  // TILE_K
      EXPECT_EQ(m.pixels, 128u);   // TILE_M
    } else if (m.arg == 1) {
      ++tiled_w;
      EXPECT_FALSE(m.im2col);
      EXPECT_EQ(std::vector<uint64_t>(m.dims, m.dims + 4), (std::vector<uint64_t>{64, 64, 3, 3}));
      // Byte strides of K (R*S*C halves), S (C), R (S*C).
      EXPECT_EQ(std::vector<uint64_t>(m.strides, m.strides + 3), (std::vector<uint64_t>{3 * 3 * 64 * 2, 64 * 2, 3 * 64 * 2}));
      EXPECT_EQ(m.box[0], 64u);
      EXPECT_EQ(m.box[1], 64u);  // TILE_N
    } else {
      EXPECT_EQ(m.arg, 4);
      ++y_maps;
      EXPECT_EQ(std::vector<uint64_t>(m.dims, m.dims + 4), (std::vector<uint64_t>{64, 34, 34, 8}));
    }
  }
  EXPECT_EQ(im2col_x, 1);
  EXPECT_EQ(tiled_w, 1);
  EXPECT_GE(y_maps, 1);
  EXPECT_NE(src->host.model_c.find("kTensorMaps[] = {"), std::string::npos);
  EXPECT_NE(src->host.model_c.find("kPrebuilt_" + k.name), std::string::npos);
  // The whole library with nvcc (its own build of the host program; the device file holding the
  // kernel compiled for sm_90a) links.
  Graph again = *g;
  const std::string sources = test::compile_block_sources(again, test::linear_plan(again), {"sm_90"}, include, "wgmma");
  EXPECT_NE(sources.find("AOTC_REQUIRES_SM90A"), std::string::npos);
}

// The kernel library (CodegenOptions::kernel_library_dirs, codegen/device_source.h): a heavy
// (CUTLASS 3.x) kernel gets a file of its own only where the library says it holds that file;
// the file names nothing of the model (the same text for another model with the same kernel), and
// the other kernels stay in the grouped file.
TEST(KernelLibrary, HeavyKernelsGetModelFreeFilesOnlyWhereTheLibraryHoldsThem) {
  auto render = [](Graph& g, const std::function<bool(const std::string&)>& standalone, LaunchProgram* out) {
    auto program = build_launch_program(g, test::linear_plan(g), default_registry());
    EXPECT_TRUE(program.is_ok()) << program.status().message();
    if (!program.is_ok()) return std::vector<std::string>{};
    DeviceSourceInfo info{"test", "hash-" + g.name, g.name, nullptr, PdlMode::kOff, standalone};
    auto sources = render_device_sources(*program, g, info);
    EXPECT_TRUE(sources.is_ok()) << sources.status().message();
    *out = std::move(*program);
    return sources.is_ok() ? *sources : std::vector<std::string>{};
  };
  auto g = two_convs({"sm_90"});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  g->name = "first_model";
  LaunchProgram plain, declined, held;
  const std::vector<std::string> base = render(*g, nullptr, &plain);
  ASSERT_EQ(base.size(), 1u);
  ASSERT_EQ(wgmma_kernels(plain).size(), 1u);
  const std::string grouped_name = wgmma_kernels(plain)[0]->function;
  // The library does not hold it: nothing changes.
  int asked = 0;
  EXPECT_EQ(render(*g, [&](const std::string&) { return ++asked, false; }, &declined), base);
  EXPECT_EQ(asked, 1);  // only the heavy kernel is offered
  EXPECT_EQ(wgmma_kernels(declined)[0]->function, grouped_name);
  // It does: a file of its own, after the grouped one.
  std::string offered;
  const std::vector<std::string> with = render(*g, [&](const std::string& f) { offered = f; return true; }, &held);
  ASSERT_EQ(with.size(), 2u);
  EXPECT_EQ(with[1], offered);
  EXPECT_TRUE(is_kernel_library_file(with[1]));
  EXPECT_FALSE(is_kernel_library_file(with[0]));
  EXPECT_FALSE(is_kernel_library_file(base[0]));
  const ProgramKernel& k = *wgmma_kernels(held)[0];
  EXPECT_EQ(k.module, 1);
  EXPECT_EQ(k.function.rfind("aotc_lib_", 0), 0u) << k.function;
  EXPECT_NE(with[1].find(k.function + "("), std::string::npos);
  EXPECT_NE(with[1].find("cute/tensor.hpp"), std::string::npos);
  EXPECT_EQ(with[0].find("cute/tensor.hpp"), std::string::npos);  // the CUTLASS 2.x conv2 stays grouped
  for (const char* model_text : {"first_model", "conv1", "hash-", "clip"})
    EXPECT_EQ(with[1].find(model_text), std::string::npos) << model_text;
  for (const ProgramKernel& other : held.kernels) {
    if (&other != &k) {
      EXPECT_EQ(other.module, 0);
    }
  }
  // Another model with the same convolution under other names: the same library file.
  auto g2 = two_convs({"sm_90"});
  ASSERT_TRUE(g2.is_ok());
  g2->name = "second_model";
  for (Node& n : g2->nodes) n.name = "renamed_" + n.name;
  LaunchProgram held2;
  const std::vector<std::string> with2 = render(*g2, [](const std::string&) { return true; }, &held2);
  ASSERT_EQ(with2.size(), 2u);
  EXPECT_EQ(with2[1], with[1]);
  EXPECT_NE(with2[0], with[0]);  // the grouped file names its model
}

// tools/build_kernel_library.sh builds the library from the configuration table: its WGMMA_ROWS
// must be the table's sm_90 wgmma rule rows, in order, so that a row added to (or renamed in)
// ir/ops/conv_configs.h reaches the library too.
TEST(KernelLibrary, TableScriptListsEveryWgmmaRuleRow) {
  std::ifstream in(std::string(AOTC_TEST_SOURCE_DIR) + "/../../tools/build_kernel_library.sh");
  ASSERT_TRUE(in.good());
  std::string line, rows;
  while (std::getline(in, line))
    if (line.rfind("WGMMA_ROWS=\"", 0) == 0) rows = line.substr(12, line.size() - 13);
  ASSERT_FALSE(rows.empty());
  std::vector<std::string> listed;
  std::istringstream words(rows);
  for (std::string w; words >> w;) listed.push_back(w);
  std::vector<std::string> table;
  for (const ConvKernelConfig& c : conv_configs_of(ConvMath::kWgmma)) table.push_back(c.name);
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(listed, table);
}

// Added to a library by one build, read by the next instead of compiled (nvcc, CUTLASS): the
// second build compiles only the grouped file, and both emit the same kernel-library source.
TEST(KernelLibrary, AddedByOneBuildReadByTheNext) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("aotc-klib-" + std::to_string(getpid()));
  fs::remove_all(dir);
  auto build = [&](const std::string& tag, bool add, const std::string& cache) -> Expected<CodegenStats> {
    auto g = two_convs({"sm_90"});
    if (!g) return g.status();
    g->name = tag;
    CodegenOptions o;
    o.name = "block";
    o.output_path = (dir / tag / "libblock.so").string();
    o.emit_source_dir = (dir / tag / "src").string();
    o.nvcc = test::find_nvcc();
    o.archs = {"sm_90"};
    o.aotc_version = "test";
    o.cutlass_include_dir = include;
    o.kernel_cache_dir = cache;
    o.kernel_library_dirs = {(dir / "library").string()};
    o.add_to_kernel_library = add;
    fs::create_directories(dir / tag);
    return compile_library(*g, test::linear_plan(*g), o);
  };
  auto first = build("adds", true, "");
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_EQ(first->library_added, 1);
  EXPECT_EQ(first->library_hits, 0);
  EXPECT_EQ(first->host_params_library_added, 1);  // the kernel's params builder, alone
  EXPECT_EQ(first->host_params_library_hits, 0);
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir / "library")) entries += e.path().extension() == ".fatbin" ? 1 : 0;
  EXPECT_EQ(entries, 2);  // the device file and the params builder (the cache's format names both .fatbin)
  auto second = build("reads", false, (dir / "empty_cache").string());
  ASSERT_TRUE(second.is_ok()) << second.status().message();
  EXPECT_EQ(second->library_hits, 1);
  EXPECT_EQ(second->library_added, 0);
  EXPECT_EQ(second->host_params_library_hits, 1);
  EXPECT_EQ(second->host_params_library_added, 0);
  EXPECT_TRUE(second->host_params_cache_hit);  // nothing of the builder compiled
  EXPECT_EQ(second->cache_hits, 0);
  EXPECT_EQ(second->cache_misses, 1);  // the grouped file only
  EXPECT_TRUE(fs::exists(dir / "reads" / "libblock.so"));
  EXPECT_EQ(test::read_file(dir / "adds" / "src" / "block_dev1.cu"), test::read_file(dir / "reads" / "src" / "block_dev1.cu"));
  EXPECT_TRUE(is_kernel_library_file(test::read_file(dir / "reads" / "src" / "block_dev1.cu")));
  // The params the library's builder gave are the ones the compiled builder gave.
  auto prebuilt = [&](const std::string& tag) {
    const std::string c = test::read_file(dir / tag / "src" / "block_model.c");
    const size_t at = c.find("kPrebuilt_");
    return at == std::string::npos ? std::string() : c.substr(at, c.find("};", at) - at);
  };
  EXPECT_FALSE(prebuilt("adds").empty());
  EXPECT_EQ(prebuilt("adds"), prebuilt("reads"));
  // A library builder that does not run (a program built where another C library is installed,
  // say) is compiled afresh, and the build still succeeds with the same params.
  int replaced = 0;
  for (const auto& e : fs::directory_iterator(dir / "library")) {
    if (test::read_file(e.path()).rfind("\x7f" "ELF", 0) != 0) continue;  // the fatbin
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "#!/bin/sh\nexit 3\n";
    ++replaced;
  }
  ASSERT_EQ(replaced, 1);
  auto third = build("falls_back", false, "");
  ASSERT_TRUE(third.is_ok()) << third.status().message();
  EXPECT_EQ(third->library_hits, 1);  // the kernel's fatbin still
  EXPECT_EQ(third->host_params_library_hits, 0);
  EXPECT_FALSE(third->host_params_cache_hit);
  EXPECT_EQ(prebuilt("falls_back"), prebuilt("adds"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// x float [8, 32, 34, 34] -> QuantizeLinear (in the arena: the kernel's TMA descriptors are
// built at compile time) -> requantizing 3x3 (32 -> 128, bias, ReLU clamp; 9248 rows: 73 tiles of
// 128x128) -> dequantizing 1x1 to the float output. `zero_point` -128 makes the activations uint8.
// `y_output`: the requantized value is a graph output too (its address changes per run).
Expected<Graph> int8_block(const std::vector<std::string>& archs, int64_t zero_point = 0, bool y_output = false) {
  const std::string zp = std::to_string(zero_point);
  std::string text = std::string("input %x : float[8x32x34x34]\n") + R"(
    const %s : float[scalar] = [0.05]
    const %z : int8[scalar] = [)" + zp + R"(]
    const %w : int8[128x32x3x3] = random(5, -127, 128)
    const %ws : float[128] = random(6, 0.001, 0.01)
    const %b : int32[128] = random(7, -500, 500)
    const %w2 : int8[16x128x1x1] = random(8, -127, 128)
    const %ws2 : float[16] = random(9, 0.001, 0.01)
    %xq : int8[?] = QuantizeLinear(%x, %s, %z)  # q
    %y : int8[?] = aotc.QLinearConv(%xq, %s, %z, %w, %ws, _, %s, %z, %b) {pads=[1,1,1,1], qmin=)" + zp + R"(}  # qconv
    %f : float[?] = aotc.QLinearConv(%y, %s, %z, %w2, %ws2)  # deq
    output %f
  )" + (y_output ? "output %y\n" : "");
  auto g = parse_text_ir(text);
  if (!g) return g;
  g->opset = 17;
  AOTC_RETURN_IF_ERROR(infer_shapes(*g));
  g->target = target_from_archs(archs);
  g->target.conv_wgmma_int8 = true;  // --conv-wgmma-int8 on (the default)
  if (zero_point == -128) {
    auto re = reencode_uint8(*g);
    if (!re) return re.status();
  }
  auto laid = layout_nhwc(*g);
  if (!laid) return laid.status();
  return g;
}

std::vector<std::string> qconv_templates(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) {
    if (n.op_type != "QLinearConv") continue;
    auto lowered = default_registry().find("QLinearConv", "aotc")->lower(n, g);
    EXPECT_TRUE(lowered.is_ok()) << lowered.status().message();
    if (lowered.is_ok()) out.push_back(lowered->steps[0].kernel.template_name);
  }
  return out;
}

// The requantizing convolution takes the sm_90a int8 kernel exactly where it applies: sm_90-only
// targets, operands in the arena, the switch on; the dequantizing one (float output) stays on
// the Sm80 kernel.
TEST(WgmmaConvInt8, OnlyRequantizingConvolutionsOnSm90OnlyTargets) {
  auto g = int8_block({"sm_90"});
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(qconv_templates(*g), (std::vector<std::string>{"cutlass_conv2d_fprop_sm90_i8", "cutlass_conv2d_fprop_i8"}));
  for (const Node& n : g->nodes) {
    if (n.op_type != "QLinearConv" || n.input(6) == kNoValue) continue;
    auto lowered = default_registry().find("QLinearConv", "aotc")->lower(n, *g);
    ASSERT_TRUE(lowered.is_ok());
    const KernelStep& k = lowered->steps[0].kernel;
    EXPECT_TRUE(k.library_params);
    EXPECT_TRUE(k.host_params);
    // N H W C K R S, pads (begin h w, end h w), strides, dilations, zero point, clamp [0, 127].
    EXPECT_EQ(k.builder_args, (std::vector<int64_t>{8, 34, 34, 32, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 127}));
    ASSERT_EQ(k.args.size(), 5u);
    EXPECT_EQ(k.args[3], kNullArg);
  }
  auto mixed = int8_block({"sm_87", "sm_90"});
  ASSERT_TRUE(mixed.is_ok());
  EXPECT_EQ(qconv_templates(*mixed), (std::vector<std::string>{"cutlass_conv2d_fprop_i8", "cutlass_conv2d_fprop_i8"}));
  // A graph output: layout_nhwc's transpose back to NCHW reads it, so the kernel still writes the
  // arena.
  auto y_output = int8_block({"sm_90"}, 0, true);
  ASSERT_TRUE(y_output.is_ok());
  EXPECT_EQ(qconv_templates(*y_output), (std::vector<std::string>{"cutlass_conv2d_fprop_sm90_i8", "cutlass_conv2d_fprop_i8"}));
  g->target.conv_wgmma_int8 = false;
  EXPECT_EQ(qconv_templates(*g), (std::vector<std::string>{"cutlass_conv2d_fprop_i8", "cutlass_conv2d_fprop_i8"}));
}

TEST(WgmmaConvInt8, ConfigurationRuleAndRefusals) {
  EXPECT_TRUE(target_from_archs({"sm_90"}).conv_wgmma_int8);  // on by default (measured faster, v51)
  Target t = target_from_archs({"sm_90"});
  t.conv_wgmma_int8 = true;
  const std::vector<int64_t> k3{3, 3}, s1{1, 1}, d1{1, 1}, p1{1, 1, 1, 1};
  auto pick = [&](const Target& target, int64_t cin, int64_t cout, int64_t m) {
    auto c = conv_wgmma_int8_config(target, 1, cin, cout, k3, s1, d1, p1, m);
    return c ? std::string(c->name) : std::string("none");
  };
  EXPECT_EQ(pick(t, 128, 128, 32 * 28 * 28), "i8wg128x128x128_auto");  // 196 tiles
  EXPECT_EQ(pick(t, 256, 256, 32 * 14 * 14), "i8wg128x128x128_auto");  // 49 x 2 = 98 tiles
  EXPECT_EQ(pick(t, 256, 128, 32 * 14 * 14), "i8wg64x128x128_auto");   // 49 128-row tiles, 98 64-row
  EXPECT_EQ(pick(t, 256, 64, 32 * 56 * 56), "i8wg128x64x128_s4_2cta");  // 64 output channels
  // Input channels not a multiple of 128: the 64-wide K steps.
  EXPECT_EQ(pick(t, 64, 256, 32 * 56 * 56), "i8wg128x128x64_auto");
  EXPECT_EQ(pick(t, 64, 64, 32 * 56 * 56), "i8wg128x64x64_s4_2cta");
  EXPECT_EQ(pick(t, 192, 128, 32 * 14 * 14), "i8wg64x128x64_auto");
  EXPECT_EQ(pick(t, 512, 512, 1 * 7 * 7), "none");                     // batch 1, layer 4: 8 tiles
  // Expanding pointwise layers (Cout >= 4 Cin) take the 128x64 tile two CTAs an SM
  // (Target::conv_wgmma_int8_expand_2cta); reducing ones, 3x3s and --conv-wgmma-int8-expand off
  // the rule's.
  const std::vector<int64_t> k1{1, 1}, p0{0, 0, 0, 0};
  auto pick1 = [&](const Target& target, int64_t cin, int64_t cout, int64_t m) {
    auto c = conv_wgmma_int8_config(target, 1, cin, cout, k1, s1, d1, p0, m);
    return c ? std::string(c->name) : std::string("none");
  };
  EXPECT_EQ(pick1(t, 64, 256, 32 * 56 * 56), "i8wg128x64x64_s4_2cta");   // layer1 conv3
  EXPECT_EQ(pick1(t, 128, 512, 32 * 28 * 28), "i8wg128x64x64_s4_2cta");  // layer2 conv3
  EXPECT_EQ(pick1(t, 512, 2048, 32 * 7 * 7), "i8wg128x64x64_s4_2cta");   // layer4 conv3
  EXPECT_EQ(pick1(t, 256, 128, 32 * 28 * 28), pick(t, 256, 128, 32 * 28 * 28));  // reducing: the rule's
  EXPECT_EQ(pick1(t, 256, 512, 32 * 28 * 28), "i8wg128x128x128_auto");  // 2x: the rule's
  EXPECT_EQ(pick(t, 64, 256, 32 * 56 * 56), "i8wg128x128x64_auto");     // 3x3: the rule's
  EXPECT_EQ(pick1(t, 16, 256, 1 * 2 * 2), "none");                      // a tiny layer: still refused
  Target rule_only = t;
  rule_only.conv_wgmma_int8_expand_2cta = false;
  EXPECT_EQ(pick1(rule_only, 64, 256, 32 * 56 * 56), "i8wg128x128x64_auto");
  Target forced_wg = t;
  forced_wg.conv_config = "i8wg64x128x64_auto";  // a forced wgmma row wins over the expansion rule
  EXPECT_EQ(pick1(forced_wg, 64, 256, 32 * 56 * 56), "i8wg64x128x64_auto");
  EXPECT_EQ(pick(t, 24, 128, 32 * 28 * 28), "none");                   // channels not 16-aligned
  EXPECT_FALSE(conv_wgmma_int8_config(t, 2, 64, 64, k3, s1, d1, p1, 32 * 56 * 56));  // groups
  Target mixed = target_from_archs({"sm_90", "sm_87"});
  mixed.conv_wgmma_int8 = true;
  EXPECT_EQ(pick(mixed, 128, 128, 32 * 28 * 28), "none");
  Target forced = t;
  forced.conv_config = "i8tc64x64x64_w32x32_s4";  // an Sm80 int8 row forced: that kernel
  EXPECT_EQ(pick(forced, 64, 128, 32 * 28 * 28), "none");
  for (const ConvKernelConfig& c : conv_configs_of(ConvMath::kWgmmaInt8)) {
    EXPECT_EQ(c.min_sm, 90) << c.name;
    EXPECT_TRUE(c.tb_k == 128 || c.tb_k == 64) << c.name;  // 128 bytes a K step (as fp16), or 64
    if (c.stages > 0) {
      EXPECT_LE((c.tb_m + c.tb_n) * c.tb_k * c.stages, 100 * 1024) << c.name;
    }
  }
}

// The cooperative GEMM's 256-wide tiles where the persistent grid's waves allow (int8_gemm_tile_n),
// on ResNet-50's fused conv3 shapes at batch 32 on 132 SMs (H200) and 16 (Jetson Orin).
TEST(WgmmaConvInt8, WideGemmTilesOnlyWithoutWaveLoss) {
  Target t = target_from_archs({"sm_90"});
  t.sm_count = 132;
  const ConvKernelConfig c{"i8gemm_sm90", ConvMath::kWgmmaInt8, 128, 128, 64, 128, 128, 64, 0, 90, 64};
  // layer1: 1568 -> 784 tiles, 12 -> 6 waves; layer2: 784 -> 392, 6 -> 3; layer4: 208 -> 104,
  // 2 -> 1: 256. layer3: 392 -> 196 tiles, 3 waves of 128 columns against 2 of 256: 128.
  EXPECT_EQ(int8_gemm_tile_n(t, c, 32 * 56 * 56, 256), 256);
  EXPECT_EQ(int8_gemm_tile_n(t, c, 32 * 28 * 28, 512), 256);
  EXPECT_EQ(int8_gemm_tile_n(t, c, 32 * 14 * 14, 1024), 128);
  EXPECT_EQ(int8_gemm_tile_n(t, c, 32 * 7 * 7, 2048), 256);
  // Batch 1's layer1 (25 x 2 tiles: one wave either way, 50 SMs busy against 25): 128.
  EXPECT_EQ(int8_gemm_tile_n(t, c, 56 * 56, 256), 128);
  // Cout not a multiple of 256, or a 64-wide row: the table's width.
  EXPECT_EQ(int8_gemm_tile_n(t, c, 32 * 56 * 56, 384), 128);
  ConvKernelConfig narrow = c;
  narrow.tb_n = narrow.warp_n = 64;
  EXPECT_EQ(int8_gemm_tile_n(t, narrow, 32 * 56 * 56, 64), 64);
  // 16 SMs: layer3's 392 -> 196 tiles are 25 -> 13 waves (3200 against 3328 columns): 128.
  Target orin = t;
  orin.sm_count = 16;
  EXPECT_EQ(int8_gemm_tile_n(orin, c, 32 * 56 * 56, 256), 256);
  EXPECT_EQ(int8_gemm_tile_n(orin, c, 32 * 14 * 14, 1024), 128);
  // --int8-gemm-tile-n 128 / 256 override the rule.
  Target keep = t;
  keep.int8_gemm_tile_n = 128;
  EXPECT_EQ(int8_gemm_tile_n(keep, c, 32 * 56 * 56, 256), 128);
  Target wide = t;
  wide.int8_gemm_tile_n = 256;
  EXPECT_EQ(int8_gemm_tile_n(wide, c, 32 * 14 * 14, 1024), 256);
  EXPECT_EQ(int8_gemm_tile_n(wide, c, 32 * 56 * 56, 384), 128);
}

// The host program builds the int8 kernel's params (x through its im2col descriptor, the per-channel
// words as a raw pointer) and nvcc builds the library for sm_90a, int8 and uint8 activations.
TEST(WgmmaConvInt8, HostProgramRecordsAndSm90aLibraryBuild) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  for (int64_t zp : {0, -128}) {
    auto g = int8_block({"sm_90"}, zp);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    auto src = test::render_sm90_sources(*g, test::linear_plan(*g), include, "wgmma-i8");
    ASSERT_TRUE(src.is_ok()) << src.status().message();
    const ProgramKernel* k = nullptr;
    for (const ProgramKernel& pk : src->program.kernels)
      if (pk.template_name == "cutlass_conv2d_fprop_sm90_i8") k = &pk;
    ASSERT_NE(k, nullptr);
    ASSERT_GT(k->prebuilt.size(), 256u);
    uint32_t header[64];
    std::memcpy(header, k->prebuilt.data(), sizeof header);
    EXPECT_EQ(header[0], 0x41505248u);                  // magic
    EXPECT_EQ(header[2] * header[3] * header[4], 73u);  // grid: ceil(9248 / 128) x 1 tiles
    EXPECT_EQ(header[5], 256u);                         // producer + consumer warp groups
    EXPECT_NE(header[10 + 2], 0xffffffffu);             // the words are a raw pointer
    EXPECT_EQ(header[10 + 0], 0xffffffffu);             // x only inside its descriptor
    bool im2col_x = false;
    for (const TensorMapRecord& m : k->tensor_maps)
      if (m.arg == 0) {
        im2col_x = true;
        EXPECT_TRUE(m.im2col);
        // C, W, H, N; one byte a channel.
        EXPECT_EQ(std::vector<uint64_t>(m.dims, m.dims + 4), (std::vector<uint64_t>{32, 34, 34, 8}));
        EXPECT_EQ(m.strides[0], 32u);
      }
    EXPECT_TRUE(im2col_x);
    if (zp == 0) continue;  // nvcc once (the uint8 instantiation): the int8 one is the same source
    Graph again = *g;
    const std::string sources = test::compile_block_sources(again, test::linear_plan(again), {"sm_90"}, include,
                                                            "wgmma-i8-" + std::to_string(-zp));
    EXPECT_NE(sources.find("using ElementA = uint8_t;"), std::string::npos);
    EXPECT_NE(sources.find("cutlass::conv::KernelImplicitTmaWarpSpecializedSm90"), std::string::npos);
  }
}

// --conv-gemm-int8 on: a requantizing pointwise layer (1x1, stride 1, unpadded) renders the int8
// wgmma template's GEMM mode - CUTLASS 3.x's persistent ping-pong GEMM with the same requantizing
// epilogue tree - and a 3x3 keeps the convolution; off (the default), the pointwise one keeps it
// too. x float [16, 64, 28, 28] -> QuantizeLinear -> requantizing 1x1 64 -> 256 (12544 rows: pw)
// -> requantizing 3x3 256 -> 64 (h) -> requantizing 1x1 64 -> 64 (t) -> QLinearAdd(t, h), fused
// into t's epilogue (--int8-fuse-residual on) -> dequantizing 1x1 to the float output. Planned for
// `sm_count` SMs: 16 lets every pointwise layer pass the GEMM mode's one-wave floor (pw 196 tiles,
// t 98); an H200's 132 keeps t (98 tiles) a convolution.
Expected<Graph> pointwise_int8_block(bool as_gemm, bool cooperative = false, int sm_count = 16,
                                     Int8FuseResidual fuse = Int8FuseResidual::kOn) {
  auto g = parse_text_ir(R"(
    input %x : float[16x64x28x28]
    const %s : float[scalar] = [0.05]
    const %st : float[scalar] = [0.04]
    const %sa : float[scalar] = [0.06]
    const %z : int8[scalar] = [0]
    const %w : int8[256x64x1x1] = random(5, -127, 128)
    const %ws : float[256] = random(6, 0.001, 0.01)
    const %b : int32[256] = random(7, -500, 500)
    const %w3 : int8[64x256x3x3] = random(10, -127, 128)
    const %ws3 : float[64] = random(11, 0.001, 0.01)
    const %wt : int8[64x64x1x1] = random(12, -127, 128)
    const %wst : float[64] = random(13, 0.001, 0.01)
    const %w2 : int8[16x64x1x1] = random(8, -127, 128)
    const %ws2 : float[16] = random(9, 0.001, 0.01)
    %xq : int8[?] = QuantizeLinear(%x, %s, %z)  # q
    %y : int8[?] = aotc.QLinearConv(%xq, %s, %z, %w, %ws, _, %s, %z, %b) {qmin=0}  # pw
    %h : int8[?] = aotc.QLinearConv(%y, %s, %z, %w3, %ws3, _, %s, %z) {pads=[1,1,1,1], qmin=0}  # c3
    %t : int8[?] = aotc.QLinearConv(%h, %s, %z, %wt, %wst, _, %st, %z)  # t
    %a : int8[?] = aotc.QLinearAdd(%t, %st, %z, %h, %s, %z, %sa, %z) {qmin=0}  # add
    %f : float[?] = aotc.QLinearConv(%a, %sa, %z, %w2, %ws2)  # deq
    output %f
  )");
  if (!g) return g;
  g->opset = 17;
  AOTC_RETURN_IF_ERROR(infer_shapes(*g));
  g->target = target_from_archs({"sm_90"});
  g->target.conv_gemm_int8 = !as_gemm ? ConvGemmInt8::kOff : cooperative ? ConvGemmInt8::kCooperative : ConvGemmInt8::kPingpong;
  g->target.int8_fuse_residual = fuse;
  g->target.sm_count = sm_count;
  auto laid = layout_nhwc(*g);
  if (!laid) return laid.status();
  auto fused = fuse_residual_qadd(*g);
  if (!fused) return fused.status();
  if (!*fused && fuse == Int8FuseResidual::kOn) return Status::error("the residual Add was not fused");
  return g;
}

std::vector<std::string> qconv_hole(const Graph& g, const std::string& hole) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes) {
    if (n.op_type != "QLinearConv") continue;
    auto lowered = default_registry().find("QLinearConv", "aotc")->lower(n, g);
    EXPECT_TRUE(lowered.is_ok()) << lowered.status().message();
    if (!lowered.is_ok()) continue;
    std::string v = "(none)";
    for (const auto& [name, value] : lowered->steps[0].kernel.holes)
      if (name == hole) v = value;
    out.push_back(v);
  }
  return out;
}

TEST(WgmmaConvInt8, PointwiseLayersAsPersistentGemmWhenAsked) {
  auto on = pointwise_int8_block(true);
  ASSERT_TRUE(on.is_ok()) << on.status().message();
  EXPECT_EQ(qconv_templates(*on), (std::vector<std::string>{"cutlass_conv2d_fprop_sm90_i8", "cutlass_conv2d_fprop_sm90_i8",
                                                            "cutlass_conv2d_fprop_sm90_i8", "cutlass_conv2d_fprop_i8"}));
  // The pointwise layers in GEMM mode (pw: 128 x 128 x 64 tiles, Cout 256, Cin 64; t: 128 x 64 x
  // 64 with the fused Add), the 3x3 not; the dequantizing Sm80 kernel has no such hole.
  EXPECT_EQ(qconv_hole(*on, "AS_GEMM"), (std::vector<std::string>{"1", "0", "1", "(none)"}));
  EXPECT_EQ(qconv_hole(*on, "TILE_N"), (std::vector<std::string>{"128LL", "64LL", "64LL", "(none)"}));
  EXPECT_EQ(qconv_hole(*on, "HAS_RESIDUAL"), (std::vector<std::string>{"false", "false", "true", "false"}));
  EXPECT_EQ(qconv_hole(*on, "MIN_BLOCKS")[0], "1LL");
  // Ping-pong for pw; t, whose residual Add is fused, takes the cooperative schedule (ping-pong
  // with the fused Add measured 2-3.5x slower, ir/ops/integer_matmul.cc); the 3x3 has none.
  EXPECT_EQ(qconv_hole(*on, "PINGPONG"), (std::vector<std::string>{"true", "false", "false", "(none)"}));
  // Epilogue subtiles 64 channels wide (the table's epi_n): by one consumer warp group's 64 rows
  // under ping-pong, by the tile's 128 rows for the cooperative t; the convolution mode keeps
  // CUTLASS's own (the hole is unused there).
  const std::string kAuto = "cutlass::epilogue::collective::EpilogueTileAuto";
  EXPECT_EQ(qconv_hole(*on, "EPI_TILE"),
            (std::vector<std::string>{"cute::Shape<cute::Int<64>, cute::Int<64>>", kAuto,
                                      "cute::Shape<cute::Int<128>, cute::Int<64>>", "(none)"}));
  auto coop = pointwise_int8_block(true, true);  // --conv-gemm-int8 coop
  ASSERT_TRUE(coop.is_ok()) << coop.status().message();
  EXPECT_EQ(qconv_hole(*coop, "AS_GEMM"), (std::vector<std::string>{"1", "0", "1", "(none)"}));
  EXPECT_EQ(qconv_hole(*coop, "PINGPONG"), (std::vector<std::string>{"false", "false", "false", "(none)"}));
  // --int8-epilogue-tile 128: pw's 128-wide tile takes it, t's 64-wide one cannot (CUTLASS's own).
  coop->target.int8_epilogue_tile_n = 128;
  EXPECT_EQ(qconv_hole(*coop, "EPI_TILE"),
            (std::vector<std::string>{"cute::Shape<cute::Int<128>, cute::Int<128>>", kAuto, kAuto, "(none)"}));
  // auto on 16 SMs: pw's 196 tiles of 128 are 13 waves, 98 of 256 are 7 (1792 against 1664
  // columns): 128; on 49 SMs 4 against 2 waves (512 columns each): 256.
  coop->target.int8_epilogue_tile_n = 0;
  EXPECT_EQ(qconv_hole(*coop, "TILE_N"), (std::vector<std::string>{"128LL", "64LL", "64LL", "(none)"}));
  coop->target.sm_count = 49;
  EXPECT_EQ(qconv_hole(*coop, "TILE_N"), (std::vector<std::string>{"256LL", "64LL", "64LL", "(none)"}));
  coop->target.int8_gemm_tile_n = 128;
  EXPECT_EQ(qconv_hole(*coop, "TILE_N"), (std::vector<std::string>{"128LL", "64LL", "64LL", "(none)"}));
  coop->target.sm_count = 16;
  // --int8-gemm-tile-n 256: pw (Cout 256, cooperative here) takes 128 x 256 tiles, t (Cout 64) and
  // the 3x3 keep theirs; under ping-pong pw keeps 128 (one warp group holds a whole tile).
  coop->target.int8_gemm_tile_n = 256;
  EXPECT_EQ(qconv_hole(*coop, "TILE_N"), (std::vector<std::string>{"256LL", "64LL", "64LL", "(none)"}));
  on->target.int8_gemm_tile_n = 256;
  EXPECT_EQ(qconv_hole(*on, "TILE_N"), (std::vector<std::string>{"128LL", "64LL", "64LL", "(none)"}));
  on->target.int8_gemm_tile_n = 0;
  // --int8-conv-cluster 2: the 3x3 (convolution mode, 12544 rows: an even count of M tiles) in
  // clusters of two CTAs; the GEMM-mode layers never (their persistent grid is the SM count).
  EXPECT_EQ(qconv_hole(*on, "CLUSTER_M"), (std::vector<std::string>{"1", "1", "1", "(none)"}));
  EXPECT_EQ(qconv_hole(*on, "CLUSTER_DIMS"), (std::vector<std::string>{"", "", "", "(none)"}));
  on->target.int8_conv_cluster_m = 2;
  EXPECT_EQ(qconv_hole(*on, "CLUSTER_M"), (std::vector<std::string>{"1", "2", "1", "(none)"}));
  EXPECT_EQ(qconv_hole(*on, "CLUSTER_DIMS"), (std::vector<std::string>{"", "__cluster_dims__(2, 1, 1)", "", "(none)"}));
  on->target.int8_conv_cluster_m = 1;
  for (const Node& n : on->nodes)
    if (n.name == "pw") {
      auto lowered = default_registry().find("QLinearConv", "aotc")->lower(n, *on);
      ASSERT_TRUE(lowered.is_ok());
      const KernelStep& k = lowered->steps[0].kernel;
      // M N K zero_point qmin qmax sm_count.
      EXPECT_EQ(k.builder_args, (std::vector<int64_t>{16 * 28 * 28, 256, 64, 0, 0, 127, on->target.sm_count}));
      EXPECT_EQ(k.block.x, 384);
    } else if (n.name == "t") {
      auto lowered = default_registry().find("QLinearConv", "aotc")->lower(n, *on);
      ASSERT_TRUE(lowered.is_ok());
      EXPECT_EQ(lowered->steps[0].kernel.builder_args.size(), 7u + kAotcFusedAddArgs);  // + the Add's words
    }
  auto off = pointwise_int8_block(false);
  ASSERT_TRUE(off.is_ok()) << off.status().message();
  EXPECT_EQ(qconv_hole(*off, "AS_GEMM"), (std::vector<std::string>{"0", "0", "0", "(none)"}));
  // 132 SMs: t's 98 tiles are under a wave, so t stays a convolution (pw's 196 do not).
  auto full = pointwise_int8_block(true, false, 132);
  ASSERT_TRUE(full.is_ok()) << full.status().message();
  EXPECT_EQ(qconv_hole(*full, "AS_GEMM"), (std::vector<std::string>{"1", "0", "0", "(none)"}));
}

// --int8-fuse-residual auto (the default): the residual Add goes into t's epilogue only where t
// runs as the persistent GEMM - with 16 SMs planned it does (4 convolutions left, t's with the
// residual), with 132 t is a convolution and the QLinearAdd stays its own kernel.
TEST(WgmmaConvInt8, ResidualAddFusedOnlyIntoTheGemmModeByDefault) {
  EXPECT_EQ(Target{}.int8_fuse_residual, Int8FuseResidual::kGemm);
  EXPECT_EQ(Target{}.conv_gemm_int8, ConvGemmInt8::kPingpong);
  auto count_adds = [](const Graph& g) {
    int adds = 0;
    for (const Node& n : g.nodes) adds += n.op_type == "QLinearAdd" ? 1 : 0;
    return adds;
  };
  auto small = pointwise_int8_block(true, false, 16, Int8FuseResidual::kGemm);
  ASSERT_TRUE(small.is_ok()) << small.status().message();
  EXPECT_EQ(count_adds(*small), 0);
  EXPECT_EQ(qconv_hole(*small, "AS_GEMM"), (std::vector<std::string>{"1", "0", "1", "(none)"}));
  EXPECT_EQ(qconv_hole(*small, "HAS_RESIDUAL"), (std::vector<std::string>{"false", "false", "true", "false"}));
  auto full = pointwise_int8_block(true, false, 132, Int8FuseResidual::kGemm);
  ASSERT_TRUE(full.is_ok()) << full.status().message();
  EXPECT_EQ(count_adds(*full), 1);
  EXPECT_EQ(qconv_hole(*full, "HAS_RESIDUAL"), (std::vector<std::string>{"false", "false", "false", "false"}));
  // --int8-fuse-residual on: the convolution kernel takes it there.
  auto on = pointwise_int8_block(true, false, 132, Int8FuseResidual::kOn);
  ASSERT_TRUE(on.is_ok()) << on.status().message();
  EXPECT_EQ(count_adds(*on), 0);
  EXPECT_EQ(qconv_hole(*on, "AS_GEMM"), (std::vector<std::string>{"1", "0", "0", "(none)"}));
  // off: never.
  auto none = pointwise_int8_block(true, false, 16, Int8FuseResidual::kOff);
  ASSERT_TRUE(none.is_ok()) << none.status().message();
  EXPECT_EQ(count_adds(*none), 1);
}

// The GEMM mode's compile-time params builder runs (CUTLASS's GEMM host code: TMA descriptors of
// x, w and y, the persistent grid of at most one CTA an SM, 384 threads) and nvcc builds the
// whole library for sm_90a.
TEST(WgmmaConvInt8, PersistentGemmHostProgramAndSm90aLibraryBuild) {
  AOTC_REQUIRE_CUTLASS_BUILD(include);
  for (bool cooperative : {false, true}) {
    SCOPED_TRACE(cooperative ? "cooperative" : "ping-pong");
    auto g = pointwise_int8_block(true, cooperative);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    const std::string tag = cooperative ? "wgmma-i8-gemm-coop" : "wgmma-i8-gemm";
    auto src = test::render_sm90_sources(*g, test::linear_plan(*g), include, tag);
    ASSERT_TRUE(src.is_ok()) << src.status().message();
    const ProgramKernel* k = nullptr;
    int gemm_kernels = 0;
    for (const ProgramKernel& pk : src->program.kernels)
      if (pk.template_name == "cutlass_conv2d_fprop_sm90_i8")
        for (const auto& [name, value] : pk.holes)
          if (name == "AS_GEMM" && value == "1") {
            ++gemm_kernels;
            if (!k) k = &pk;
          }
    EXPECT_EQ(gemm_kernels, 2);  // pw, and t with the fused Add (its own instantiation)
    ASSERT_NE(k, nullptr);
    ASSERT_GT(k->prebuilt.size(), 256u);
    uint32_t header[64];
    std::memcpy(header, k->prebuilt.data(), sizeof header);
    EXPECT_EQ(header[0], 0x41505248u);  // magic
    const uint32_t grid = header[2] * header[3] * header[4];
    EXPECT_GE(grid, 1u);
    EXPECT_LE(grid, static_cast<uint32_t>(g->target.sm_count));  // persistent
    EXPECT_EQ(header[5], 384u);                                   // producer + two consumer warp groups
    EXPECT_NE(header[10 + 2], 0xffffffffu);                       // the words are a raw pointer
    EXPECT_EQ(header[10 + 0], 0xffffffffu);                       // x only inside its descriptor
    int x_maps = 0;
    for (const TensorMapRecord& m : k->tensor_maps) {
      EXPECT_FALSE(m.im2col);
      if (m.arg == 0) ++x_maps;
    }
    EXPECT_EQ(x_maps, 1);
    Graph again = *g;
    const std::string sources = test::compile_block_sources(again, test::linear_plan(again), {"sm_90"}, include, tag);
    EXPECT_NE(sources.find("cutlass::gemm::KernelTmaWarpSpecializedPingpong"), std::string::npos);
    EXPECT_NE(sources.find(cooperative ? "constexpr bool kPingpong = false;" : "constexpr bool kPingpong = true;"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace aotc
