// The one table of NHWC implicit-GEMM convolution configurations (CUTLASS 2.x, Sm80 class: 16-bit
// tensor cores, or fp32 FFMA for float) and the rules that pick an implementation per problem.
// Lowering (ir/ops/conv_nhwc.cc), the layout pass (which only moves a convolution to NHWC when an
// implementation applies) and the tests all read this file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/target.h"

namespace aotc {

// The main loop's arithmetic: mma.sync on 16-bit operands (fp32 accumulate), or fp32 FFMA (SIMT;
// IEEE fp32 products and sums, no TF32) for float, or mma.sync on int8 operands (int32
// accumulate, saturating; aotc.QLinearConv: templates/cutlass_conv2d_fprop_i8.cu.in).
// kWgmma: 16-bit operands on sm_90a's warp-group MMA with TMA loads (CUTLASS 3.x; templates/
// cutlass_conv2d_fprop_sm90.cu.in), picked by conv_wgmma_config below, never by conv_math_for.
// kWgmmaInt8: int8 / uint8 x int8 -> int32 on sm_90a's warp-group MMA (templates/
// cutlass_conv2d_fprop_sm90_i8.cu.in), picked by conv_wgmma_int8_config, never by conv_math_for.
enum class ConvMath { kTensorOp, kSimt, kTensorOpInt8, kWgmma, kWgmmaInt8 };

struct ConvKernelConfig {
  const char* name;
  ConvMath math;
  int tb_m, tb_n, tb_k;        // threadblock tile of the implicit GEMM (M = N*P*Q, N = K, K = R*S*C)
  int warp_m, warp_n, warp_k;  // warp tile
  int stages;                  // cp.async pipeline depth
  int min_sm;                  // lowest compute capability it runs on
  // The persistent int8 GEMM's epilogue subtile width in output channels (0: CUTLASS's choice;
  // templates/cutlass_conv2d_fprop_sm90_i8.cu.in EPI_TILE; Target::int8_epilogue_tile_n overrides).
  int epi_n = 0;
  // A few-channel row (> 0): the rule picks it only for convolutions of at most this many input
  // channels (pick_conv_config's `cin`), and before the rows without a limit.
  int max_cin = 0;
};

// The math a dtype's NHWC convolutions use; false for a dtype without one (fp64, integers).
inline bool conv_math_for(DType dtype, ConvMath* math) {
  if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
    *math = ConvMath::kTensorOp;
    return true;
  }
  if (dtype == DType::kFloat32) {
    *math = ConvMath::kSimt;
    return true;
  }
  if (dtype == DType::kInt8) {
    *math = ConvMath::kTensorOpInt8;
    return true;
  }
  return false;
}

// Largest tile first within each math. The pick rule: the first configuration of the dtype's math
// whose tile count fills half a wave of the smallest target GPU (tiles >= sm_count / 2); when none
// does (batch-1 late layers), the last. Tensor cores, measured on an H100
// (docs/tune_resnet50_h100.txt, tools/device/tune_conv.sh): a 128x128x64 tile on 98 tiles beats a
// 128x64x32 tile on 196 (ResNet-50 bs32 layer3: 26 vs 37 us), so filling a whole wave is not worth
// a smaller tile; 64-channel layers keep a 64-wide N tile.
// SIMT: the shapes of CUTLASS's own Sm80 fp32 SIMT library kernels (cutlass_library generator:
// GenerateSM80_Simt_f32): every thread accumulates an 8x8 block of outputs (warp 32x64 or 64x32 =
// 2048 outputs / 32 threads), so each shared-memory operand feeds 8 FFMAs; tb_k 8 keeps a
// stage at 8 KiB (128x128) and 4 stages hide the global latency. NOT yet measured (no GPU when
// they were added; docs/perf_notes.md v6 has the prediction).
inline const std::vector<ConvKernelConfig>& conv_kernel_configs() {
  static const std::vector<ConvKernelConfig> kConfigs = {
      {"tc128x128x64_w64x64_s3", ConvMath::kTensorOp, 128, 128, 64, 64, 64, 64, 3, 80},
      {"tc128x64x32_w64x32_s4", ConvMath::kTensorOp, 128, 64, 32, 64, 32, 32, 4, 80},
      {"tc64x64x32_w32x32_s4", ConvMath::kTensorOp, 64, 64, 32, 32, 32, 32, 4, 80},
      {"simt128x128x8_w32x64_s4", ConvMath::kSimt, 128, 128, 8, 32, 64, 8, 4, 80},
      {"simt128x64x8_w64x32_s4", ConvMath::kSimt, 128, 64, 8, 64, 32, 8, 4, 80},
      {"simt64x64x8_w32x64_s4", ConvMath::kSimt, 64, 64, 8, 32, 64, 8, 4, 80},
      // int8: tile shapes of CUTLASS's Sm80 s8 implicit-GEMM library kernels (K tile 64 bytes,
      // instruction 16x8x32), ordered and picked by the int8 rule below from
      // TUNE_PRECISION=int8 tools/device/tune_conv.sh on ResNet-50 bs32 (H100, sixth session):
      // 128x64 won 29 of 54 convolutions and 64x128 19 (the layer3/4 ones with few 128-row tiles);
      // forced on every convolution, 128x128x64 (the first row before) ran the model in 2.191 ms,
      // 128x64 in 1.798, the old rule in 1.981.
      {"i8tc128x64x64_w64x32_s4", ConvMath::kTensorOpInt8, 128, 64, 64, 64, 32, 64, 4, 80},
      {"i8tc64x128x64_w32x64_s4", ConvMath::kTensorOpInt8, 64, 128, 64, 32, 64, 64, 4, 80},
      {"i8tc64x64x64_w32x32_s4", ConvMath::kTensorOpInt8, 64, 64, 64, 32, 32, 64, 4, 80},
      // sm_90a wgmma (one producer and one consumer warp group: the "warp" tile is the consumer's
      // M x N x K). stages 0: as many as fit one CTA per SM (CUTLASS's StageCountAutoCarveout);
      // an explicit count is chosen so that two CTAs share an SM (conv_wgmma_min_blocks), one's
      // prologue and epilogue overlapping the other's main loop. Measured on an H200 at batch 32
      // (ResNet-50's 3x3s, docs/perf_notes.md v39, v40): 128x128 auto on N >= 128 while its tiles
      // fill half a wave (layer2/3: 20.1 / 15.9 us, 369 / 464 TFLOP/s); below that 64x128 with as
      // many stages as fit (layer4, 100 tiles: 16.9-17.1 us, 19.4-20.0 with L2 flushed, against 20.4-20.5 /
      // 28.6-29.1 for 64x128 with 4 stages two a SM, whose 4 stages do not hide the filter's DRAM
      // latency; the rule reaches this row only with fewer than half a wave of 128x128 tiles, so
      // at most about one 64x128 tile per SM: a second CTA would have nothing to overlap);
      // 128x64 two a SM for 64 channels (layer1: 26.0 us, 128x128: 52.0, 256x64 auto: 28.1).
      // Picked by pick_conv_config's rule, in this order.
      // Few input channels (at most 48: a 64-deep K step over one filter tap's 24 or 48 channels is
      // 62% or 25% zero fill): K tiles of 32, six stages, two CTAs an SM; N tiles of 64, or 32 where
      // the output channels round up to 32 (the few-channel rows' N cap: a 64-wide tile over 24
      // channels measured 222 against 126 us). Measured on an H200, each forced on every
      // convolution of EfficientNetV2-S fp16 bs32 (docs/perf_notes.md v66), against the rows below:
      // 24 -> 24 channels at 112x112 233 us (wg128x64x64_s4_2cta) -> 127 (128x32); 48 -> 192 at
      // 56x56 222 (wg128x128x64_auto) -> 177 (128x32) -> 135 (128x64); 48 -> 192 stride 2 62 -> 49
      // -> 45; 24 -> 96 stride 2 136 -> 103 -> 106; but 64 -> 256 at 28x28 43 -> 50 (128x32),
      // hence the limit (128x64x32 there: 40, unmeasured elsewhere at 64 channels).
      {"wg128x64x32_s6_2cta", ConvMath::kWgmma, 128, 64, 32, 128, 64, 32, 6, 90, 0, 48},
      {"wg128x32x32_s6_2cta", ConvMath::kWgmma, 128, 32, 32, 128, 32, 32, 6, 90, 0, 48},
      {"wg128x128x64_auto", ConvMath::kWgmma, 128, 128, 64, 128, 128, 64, 0, 90},
      {"wg64x128x64_auto", ConvMath::kWgmma, 64, 128, 64, 64, 128, 64, 0, 90},
      {"wg128x64x64_s4_2cta", ConvMath::kWgmma, 128, 64, 64, 128, 64, 64, 4, 90},
      // sm_90a int8 wgmma: the fp16 rows' tiles with a K tile of the same 128 bytes (wgmma's int8
      // K step is 32 elements; a TMA row of 128 bytes is the 128-byte swizzle's unit), and the same
      // tiles with 64-byte K steps for input channels that are not a multiple of 128 (ResNet's
      // 64-channel layer 1: a 128-wide step would be half zeros). Picked by conv_wgmma_int8_config
      // with the fp16 rule's order, not yet measured against one another (docs/perf_notes.md v48).
      {"i8wg128x128x128_auto", ConvMath::kWgmmaInt8, 128, 128, 128, 128, 128, 128, 0, 90},
      {"i8wg64x128x128_auto", ConvMath::kWgmmaInt8, 64, 128, 128, 64, 128, 128, 0, 90},
      {"i8wg128x64x128_s4_2cta", ConvMath::kWgmmaInt8, 128, 64, 128, 128, 64, 128, 4, 90},
      {"i8wg128x128x64_auto", ConvMath::kWgmmaInt8, 128, 128, 64, 128, 128, 64, 0, 90},
      {"i8wg64x128x64_auto", ConvMath::kWgmmaInt8, 64, 128, 64, 64, 128, 64, 0, 90},
      {"i8wg128x64x64_s4_2cta", ConvMath::kWgmmaInt8, 128, 64, 64, 128, 64, 64, 4, 90},
  };
  return kConfigs;
}

// Candidates that the default rule does not pick, for measuring (--conv-config NAME forces one for
// every convolution of its math): the rule above is chosen from their timings (docs/perf_notes.md).
inline const std::vector<ConvKernelConfig>& conv_candidate_configs() {
  static const std::vector<ConvKernelConfig> kCandidates = {
      {"tc128x128x32_w64x64_s3", ConvMath::kTensorOp, 128, 128, 32, 64, 64, 32, 3, 80},
      {"tc256x128x32_w64x64_s3", ConvMath::kTensorOp, 256, 128, 32, 64, 64, 32, 3, 80},
      {"tc128x256x32_w64x64_s3", ConvMath::kTensorOp, 128, 256, 32, 64, 64, 32, 3, 80},
      {"tc128x64x64_w64x32_s3", ConvMath::kTensorOp, 128, 64, 64, 64, 32, 64, 3, 80},
      {"tc64x64x64_w32x32_s3", ConvMath::kTensorOp, 64, 64, 64, 32, 32, 64, 3, 80},
      {"tc64x128x32_w32x64_s4", ConvMath::kTensorOp, 64, 128, 32, 32, 64, 32, 4, 80},
      {"simt128x128x8_w32x64_s5", ConvMath::kSimt, 128, 128, 8, 32, 64, 8, 5, 80},
      {"simt256x128x8_w64x64_s4", ConvMath::kSimt, 256, 128, 8, 64, 64, 8, 4, 80},
      {"simt128x256x8_w64x64_s4", ConvMath::kSimt, 128, 256, 8, 64, 64, 8, 4, 80},
      {"simt64x128x8_w32x64_s5", ConvMath::kSimt, 64, 128, 8, 32, 64, 8, 5, 80},
      {"simt128x32x8_w64x32_s5", ConvMath::kSimt, 128, 32, 8, 64, 32, 8, 5, 80},
      // int8 shapes of CUTLASS's Sm80 s8 library kernels not in the default table (sixth session:
      // the default rows ran ResNet-50's int8 1x1 convolutions at 0.4 TB/s with 255 registers and
      // one block per SM; TUNE_PRECISION=int8 tools/device/tune_conv.sh measures these).
      {"i8tc128x128x64_w64x64_s3", ConvMath::kTensorOpInt8, 128, 128, 64, 64, 64, 64, 3, 80},
      {"i8tc128x256x64_w64x64_s3", ConvMath::kTensorOpInt8, 128, 256, 64, 64, 64, 64, 3, 80},
      {"i8tc256x128x64_w64x64_s3", ConvMath::kTensorOpInt8, 256, 128, 64, 64, 64, 64, 3, 80},
      {"i8tc128x128x64_w64x64_s4", ConvMath::kTensorOpInt8, 128, 128, 64, 64, 64, 64, 4, 80},
      // sm_90a: the twenty-second session's layer-4 row (two CTAs a SM, 4 stages; v39, v40).
      {"wg64x128x64_s4_2cta", ConvMath::kWgmma, 64, 128, 64, 64, 128, 64, 4, 90},
      // sm_90a int8: layer1's 3x3 row with 8 stages (two CTAs a SM, 96 KB each): ncu of that 3x3
      // (docs/perf_notes.md v59) has its consumer waiting on the TMA loads in 36% of the samples;
      // forced on ResNet-50 int8 bs32 (v59, call 3) no faster there (19.1 -> 19.4 us), slower elsewhere.
      {"i8wg128x64x64_s8_2cta", ConvMath::kWgmmaInt8, 128, 64, 64, 128, 64, 64, 8, 90},
  };
  return kCandidates;
}

// A configuration by name from either list; nullptr if unknown.
inline const ConvKernelConfig* find_conv_config(const std::string& name) {
  for (const auto* list : {&conv_kernel_configs(), &conv_candidate_configs()})
    for (const ConvKernelConfig& c : *list)
      if (name == c.name) return &c;
  return nullptr;
}

// The configuration --conv-config forces for convolutions of `math`; nullptr when none is forced
// or the forced one is of the other math (a tensor-core name leaves fp32 convolutions alone).
inline const ConvKernelConfig* forced_conv_config(const Target& target, ConvMath math) {
  if (target.conv_config.empty()) return nullptr;
  const ConvKernelConfig* c = find_conv_config(target.conv_config);
  return c && c->math == math ? c : nullptr;
}

// The default table's rows of one math, largest tile first.
inline std::vector<ConvKernelConfig> conv_configs_of(ConvMath math) {
  std::vector<ConvKernelConfig> out;
  for (const ConvKernelConfig& c : conv_kernel_configs())
    if (c.math == math) out.push_back(c);
  return out;
}

inline int64_t conv_config_tiles(const ConvKernelConfig& c, int64_t gemm_m, int64_t gemm_n) {
  return ((gemm_m + c.tb_m - 1) / c.tb_m) * ((gemm_n + c.tb_n - 1) / c.tb_n);
}

// Configurations whose N tile is wider than the output channels (rounded up to 64) waste that part
// of every tile (ResNet's 64-channel layers under a 128-wide tile): skipped. `only_tb_k` > 0: only
// the rows with that K tile (the int8 wgmma rows come in two K-tile families). `cin`: the input
// channels, for the few-channel rows (ConvKernelConfig::max_cin; 0: unknown, those rows skipped),
// whose N tile may exceed the output channels rounded up to 32 only (not 64).
inline const ConvKernelConfig& pick_conv_config(const Target& target, ConvMath math, int64_t gemm_m, int64_t gemm_n,
                                                int64_t only_tb_k = 0, int64_t cin = 0) {
  if (const ConvKernelConfig* forced = forced_conv_config(target, math)) return *forced;
  const ConvKernelConfig* last = nullptr;
  const int64_t n_cap = std::max<int64_t>(64, (gemm_n + 63) / 64 * 64);
  const std::vector<ConvKernelConfig>& table = conv_kernel_configs();
  for (size_t i = 0; i < table.size(); ++i) {
    const ConvKernelConfig& c = table[i];
    if (c.math != math || (only_tb_k > 0 && c.tb_k != only_tb_k)) continue;
    if (c.max_cin > 0 && (cin <= 0 || cin > c.max_cin || c.tb_n > (gemm_n + 31) / 32 * 32)) continue;
    // int8 (measured, see the table): a tile whose M rows alone give fewer than half a wave of
    // tiles loses to a shorter one further down (64x128 over 128x64 on ResNet-50's layer3/4).
    bool shorter_later = false;
    for (size_t j = i + 1; j < table.size(); ++j) shorter_later = shorter_later || (table[j].math == math && table[j].tb_m < c.tb_m);
    if (math == ConvMath::kTensorOpInt8 && shorter_later && 2 * ((gemm_m + c.tb_m - 1) / c.tb_m) < target.sm_count) {
      last = &c;
      continue;
    }
    if (c.tb_n <= n_cap && 2 * conv_config_tiles(c, gemm_m, gemm_n) >= target.sm_count) return c;
    last = &c;
  }
  return *last;  // every math has rows in the table
}

// Serial split-K slices for a problem that leaves SMs idle (batch 1): enough slices to give about
// one wave, each keeping at least kMinKIterationsPerSlice main-loop iterations; at most
// min(16, target.max_split_k) (1 by default: off, see ir/target.h).
constexpr int64_t kMinKIterationsPerSlice = 4;
constexpr int64_t kMaxSplitK = 16;
inline int64_t pick_split_k(const Target& target, const ConvKernelConfig& c, int64_t gemm_m, int64_t gemm_n,
                            int64_t gemm_k) {
  const int64_t tiles = conv_config_tiles(c, gemm_m, gemm_n);
  if (tiles <= 0) return 1;  // an empty problem (its lowering launches nothing)
  const int64_t k_iters = (gemm_k + c.tb_k - 1) / c.tb_k;
  int64_t split = tiles >= target.sm_count ? 1 : target.sm_count / tiles;
  split = std::min({split, k_iters / kMinKIterationsPerSlice, kMaxSplitK, static_cast<int64_t>(target.max_split_k)});
  return std::max<int64_t>(split, 1);
}

// Channel alignment (elements) the NHWC convolutions need: 16 bytes, so the tensor-core kernels,
// the im2col kernel, the vectorised depthwise kernel and cuBLASLt's aligned kernels can use
// 16-byte accesses (8 16-bit or 4 fp32 channels). The SIMT kernel itself needs none.
constexpr int64_t kTensorCoreChannelAlign = 8;
constexpr int64_t kInt8ChannelAlign = 16;  // int8: 16 bytes = 16 channels
inline int64_t conv_channel_align(DType dtype) {
  return dtype_size(dtype) == 1 ? kInt8ChannelAlign : dtype_size(dtype) == 2 ? kTensorCoreChannelAlign : 4;
}

// Input channels a conv with `cin` channels is zero-padded to for the NHWC kernels (the RGB stem:
// 3 -> 8 for 16-bit, 3 -> 4 for fp32). Padding to 4 for CUTLASS's fixed-channels iterators halves
// the 16-bit stem's MMA work but measured 2.1x slower on an H100 (ResNet-50 bs32 stem 266 -> 558
// us; docs/perf_notes.md).
inline int64_t conv_padded_channels(DType dtype, int64_t cin) {
  const int64_t a = conv_channel_align(dtype);
  return (cin + a - 1) / a * a;
}

// The direct tensor-core stem kernel (templates/conv_stem_nhwc.cu.in; lowering in conv_nhwc.cc):
// a 16-bit convolution of one group reading at most kStemChannels input channels (the RGB stem,
// zero-padded to 4: 8 bytes per pixel), any window up to kStemMaxWindow with dilation 1, K output
// channels a multiple of 8 up to kStemMaxCout, no residual, and a filter that fits the kernels'
// shared-memory copy of it (stem_filter_smem_bytes <= kStemMaxFilterSmem: ResNet's 7x7 x 64 takes
// 27.6 KB, a 9x9 x 64 would take 44 KB and goes to CUTLASS). It replaces the space-to-depth
// packing + CUTLASS implicit GEMM over 8-channel taps (ResNet-50's 7x7/2: 119 TFLOP/s of padded
// work, 110 us at batch 32 on an H200; MobileNetV2's 3x3/2: 52 us; docs/perf_notes.md v10) unless
// --conv-stem cutlass (Target::conv_stem_kernel off).
constexpr int64_t kStemChannels = 4;
constexpr int64_t kStemMaxCout = 64;
constexpr int64_t kStemMaxWindow = 11;
constexpr int64_t kStemMaxFilterSmem = 32 * 1024;
// 4-byte words per row of the stem kernels' staged filter: the K steps' 4 taps x 8 bytes, rounded
// up to 8 mod 16 words so a half warp's 8-byte B loads (4 rows x 4 taps) hit 32 different banks.
inline int64_t stem_filter_row_words(int64_t kh, int64_t kw) {
  const int64_t ksteps = (kh * kw + 3) / 4;
  return ksteps % 2 ? ksteps * 8 : ksteps * 8 + 8;
}
inline int64_t stem_filter_smem_bytes(int64_t cout, int64_t kh, int64_t kw) {
  return cout * stem_filter_row_words(kh, kw) * 4;
}
inline bool conv_stem_applies(const Target& target, DType dtype, int64_t group, int64_t cin, int64_t cout,
                              const std::vector<int64_t>& kernel, const std::vector<int64_t>& dilations,
                              bool has_residual) {
  if (!target.conv_stem_kernel || !target.has_sm80_tensor_cores()) return false;
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16) return false;
  if (group != 1 || cin > kStemChannels || cin < 1 || cout % 8 != 0 || cout > kStemMaxCout || has_residual) return false;
  if (kernel.size() != 2 || kernel[0] > kStemMaxWindow || kernel[1] > kStemMaxWindow) return false;
  if (stem_filter_smem_bytes(cout, kernel[0], kernel[1]) > kStemMaxFilterSmem) return false;
  for (int64_t d : dilations)
    if (d != 1) return false;
  return true;
}

// The stem + pool on sm_90a's warpgroup MMA (templates/conv_stem_pool_wgmma_nhwc.cu.in): two
// warpgroups of 2 x 64 conv pixels (256 rows) x 64 output channels a tile, the filter read by the
// tensor cores from shared memory, the next tile's input window copied (cp.async) while a tile's
// MMAs run. Measured on an H200 against the mma.sync stem + pool (tools/device/stem_bench; the
// model's configuration, ResNet-50 bs32: NCHW fp32 input read by the kernel): 75.0-78.6 ->
// 48.4-49.9 us (docs/perf_notes.md v42).
struct StemWgmmaConfig {
  int64_t pth = 0, ptw = 0;  // pooled pixels a tile
  int64_t tiles_w = 0, tiles = 0, tiles_per_block = 0, blocks = 0;
  int64_t ksteps = 0;  // K steps of 16: KH filter rows of KW taps padded to a multiple of 4
  int64_t smem_bytes = 0;
};
constexpr int64_t kStemWgmmaCout = 64;     // wgmma m64n64k16
constexpr int64_t kStemWgmmaRows = 256;    // conv pixels a tile: 2 warpgroups x 2 x 64
constexpr int64_t kStemWgmmaBlocksPerSm = 2;
constexpr int64_t kStemWgmmaMaxSmem = 227 * 1024 / kStemWgmmaBlocksPerSm - 1024;
// The tile for a stem (input H x W, KH x KW filter, strides SH, SW) + pool (PKH x PKW, strides
// PSH, PSW, output POH x POW): the pooled tile PTH x PTW whose conv tile ((PTH - 1) * PSH + PKH)
// x ((PTW - 1) * PSW + PKW) fits 256 rows with the fewest tiles (then the largest), the tiles per
// block that leave every block resident in one wave of kStemWgmmaBlocksPerSm a SM, and the
// dynamic shared memory (filter, staged window, conv tile, window copies of `src_bytes` a pixel).
// nullopt where nothing fits.
inline std::optional<StemWgmmaConfig> stem_wgmma_config(const Target& target, int64_t batch, int64_t kh, int64_t kw,
                                                        int64_t sh, int64_t sw, int64_t pkh, int64_t pkw, int64_t psh,
                                                        int64_t psw, int64_t poh, int64_t pow, int64_t src_bytes) {
  StemWgmmaConfig best;
  const int64_t ksteps = kh * ((kw + 3) / 4);
  for (int64_t pth = 1; pth <= 16; ++pth)
    for (int64_t ptw = 1; ptw <= 16; ++ptw) {
      const int64_t cr = (pth - 1) * psh + pkh, cc = (ptw - 1) * psw + pkw;
      if (cr * cc > kStemWgmmaRows) continue;
      const int64_t tiles = batch * ((poh + pth - 1) / pth) * ((pow + ptw - 1) / ptw);
      // Ties: the larger tile, then the taller one (ResNet's 56 x 56: 8 x 7, the measured one).
      if (best.tiles == 0 || tiles < best.tiles ||
          (tiles == best.tiles && (pth * ptw > best.pth * best.ptw || (pth * ptw == best.pth * best.ptw && pth > best.pth)))) {
        const int64_t pr = (cr - 1) * sh + kh, pc = (cc - 1) * sw + (kw + 3) / 4 * 4;
        best.pth = pth, best.ptw = ptw, best.tiles = tiles, best.tiles_w = (pow + ptw - 1) / ptw;
        best.smem_bytes = 2 * ksteps * kStemWgmmaCout * 16 + (pr * pc * 8 + 15) / 16 * 16 +
                          kStemWgmmaRows * (kStemWgmmaCout + 8) * 2 + pr * pc * src_bytes;
      }
    }
  if (best.tiles == 0 || best.smem_bytes > kStemWgmmaMaxSmem) return std::nullopt;
  const int64_t slots = kStemWgmmaBlocksPerSm * int64_t{target.sm_count};
  best.ksteps = ksteps;
  best.tiles_per_block = (best.tiles + slots - 1) / slots;
  best.blocks = (best.tiles + best.tiles_per_block - 1) / best.tiles_per_block;
  return best;
}

// Whether a stem + pool runs on that kernel: every target sm_90 (an sm_90a cubin), fp16 (bf16's
// wgmma is not checked on a GPU yet), 64 output channels, and the input either the 4-channel
// 16-bit NHWC value or an absorbed pack of a 4-byte (fp32) NCHW source (its window copies are
// 4-byte cp.async). At any batch: ResNet-50's at batch 1 (56 tiles, one a block) measured 11.6 us
// against the mma.sync kernel's 12.1 (tools/device/stem_bench). --conv-stem-wgmma off turns it off.
inline bool stem_wgmma_applies(const Target& target, DType dtype, int64_t cout, int64_t packed_src_bytes) {
  if (!target.conv_stem_wgmma || !target.all_sm90()) return false;
  if (dtype != DType::kFloat16 || cout != kStemWgmmaCout) return false;
  return packed_src_bytes == 0 || packed_src_bytes == 4;
}

// A channels_last convolution as layout_nhwc leaves a stem (input stored with exactly
// kStemChannels channels): the lowering runs it on the stem kernel, and opt/fuse_stem_pool may
// give it a max pool.
inline bool conv_runs_on_stem_kernel(const Target& target, DType dtype, int64_t group, int64_t stored_cin, int64_t cout,
                                     const std::vector<int64_t>& kernel, const std::vector<int64_t>& dilations,
                                     bool has_residual) {
  return stored_cin == kStemChannels && conv_stem_applies(target, dtype, group, stored_cin, cout, kernel, dilations, has_residual);
}

// Largest filter height / width of the CUTLASS implicit GEMM (its optimized iterators keep one
// mask bit per filter row and column; Conv2dFpropActivationTileAccessIteratorOptimized).
constexpr int64_t kImplicitGemmMaxWindow = 32;

// Whether a 2-D convolution with these properties has an NHWC implicit-GEMM implementation:
// 16-bit on tensor cores, or fp32 on the SIMT kernels (unless --conv-fp32 nchw turned that off);
// one group, channels aligned for 16-byte accesses.
inline bool conv_implicit_gemm_applies(const Target& target, DType dtype, int64_t group, int64_t cin,
                                       int64_t cout) {
  ConvMath math;
  if (!target.has_sm80_tensor_cores() || !conv_math_for(dtype, &math)) return false;
  if (math == ConvMath::kSimt && !target.conv_fp32_nhwc) return false;
  const int64_t a = conv_channel_align(dtype);
  return group == 1 && cin % a == 0 && cout % a == 0;
}

// A depthwise convolution (one input channel per group, multiplier 1) of a dtype whose NHWC
// chains the layout pass builds (16-bit, or fp32 unless --conv-fp32 nchw): the NHWC depthwise
// kernels run it.
inline bool conv_depthwise_nhwc_applies(const Target& target, DType dtype, int64_t group, int64_t cin,
                                        int64_t cout) {
  ConvMath math;
  if (!target.has_sm80_tensor_cores() || !conv_math_for(dtype, &math) || math == ConvMath::kTensorOpInt8) return false;
  if (math == ConvMath::kSimt && !target.conv_fp32_nhwc) return false;
  return group == cin && cout == cin;
}

// A channels_last convolution that is a plain GEMM: 1x1 window, stride 1, no padding, one group
// (dilation is irrelevant for a 1x1 window). M = N*H*W rows of C channels times the KRSC weights
// ([K, C], transposed) gives the NHWC output directly. cuBLASLt runs it (16-bit: its Hopper kernels
// use wgmma, which the Sm80-class CUTLASS kernels cannot; fp32: its FFMA SGEMM kernels, compute
// type CUBLAS_COMPUTE_32F, no TF32), with its bias and ReLU epilogue and the residual as the C
// matrix (beta = 1); other activations keep the CUTLASS kernel, whose epilogue takes any scalar
// expression. `relu_or_none`: the fused activation is absent or a plain Relu.
// A 1x1 window, stride 1, no padding: the convolution is the GEMM [N*H*W, C] x [K, C]^T.
inline bool pointwise_window(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                             const std::vector<int64_t>& pads) {
  for (int64_t k : kernel)
    if (k != 1) return false;
  for (int64_t s : strides)
    if (s != 1) return false;
  for (int64_t p : pads)
    if (p != 0) return false;
  return kernel.size() == 2;
}

inline bool conv_pointwise_gemm_applies(const Target& target, DType dtype, int64_t group, int64_t cin,
                                        int64_t cout, const std::vector<int64_t>& kernel,
                                        const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                                        bool relu_or_none) {
  ConvMath math;
  if (!target.conv_pointwise_gemm || !relu_or_none || !conv_math_for(dtype, &math) ||
      forced_conv_config(target, math))
    return false;
  if (!conv_implicit_gemm_applies(target, dtype, group, cin, cout)) return false;
  return pointwise_window(kernel, strides, pads);
}

// Largest im2col matrix (bytes) a batch-1 convolution may materialise in its scratch.
constexpr int64_t kIm2colMaxBytes = int64_t{16} << 20;

// fp32 (SIMT) convolutions take im2col only when their K loop is at least this long (R*S*C; 128
// main-loop iterations of the SIMT configurations' K tile of 8). See conv_im2col_gemm_applies.
constexpr int64_t kSimtIm2colMinK = 1024;

// An NHWC convolution that leaves SMs idle runs as im2col into scratch + one cuBLASLt GEMM, whose
// heuristics split K across the idle SMs; CUTLASS's serial split-K measured slower
// (docs/perf_notes.md v2). Only with an activation cuBLASLt's epilogue has (none or ReLU) and an
// im2col matrix of at most kIm2colMaxBytes. "Idle" per math:
//  - tensor cores: the picked configuration's tiles < the target's SM count (batch 1, late
//    layers; measured, docs/perf_notes.md);
//  - SIMT (fp32): the tiles < half the SM count (no configuration fills half a wave: the pick rule
//    fell through to its smallest tile) and K = R*S*C >= kSimtIm2colMinK. The time an under-filled
//    CUTLASS grid loses grows with its K loop, while the im2col matrix always costs a write and a
//    read of M*K fp32 values plus a launch; estimated for an H100 at batch 1 (docs/perf_notes.md
//    v6, not measured): ResNet-50 layer2-4 3x3 (K 1152-4608, 26-8 tiles) gain 2-6x from im2col,
//    layer1 3x3 (K 576, 49 tiles, ~15 us either way; a 7.2 MB matrix) and the stem (98 tiles)
//    do not. A full-wave convolution never takes it (at batch 32 its matrix is also far past the
//    limit: ResNet-50 layer1 3x3, 32*56*56 x 576 fp32 = 231 MB).
inline bool conv_im2col_gemm_applies(const Target& target, DType dtype, int64_t group, int64_t cin, int64_t cout,
                                     int64_t gemm_m, int64_t gemm_k, bool relu_or_none) {
  ConvMath math;
  if (!target.conv_im2col_gemm || !relu_or_none || !conv_math_for(dtype, &math) || forced_conv_config(target, math))
    return false;
  if (!conv_implicit_gemm_applies(target, dtype, group, cin, cout)) return false;
  if (math == ConvMath::kSimt && gemm_k < kSimtIm2colMinK) return false;
  const ConvKernelConfig& c = pick_conv_config(target, math, gemm_m, cout);
  const int64_t idle_below = math == ConvMath::kSimt ? target.sm_count / 2 : target.sm_count;
  return conv_config_tiles(c, gemm_m, cout) < idle_below && gemm_m * gemm_k * dtype_size(dtype) <= kIm2colMaxBytes;
}

// A 16-bit convolution that leaves SMs idle (the im2col criterion above, without its activation
// and size limits) as ONE kernel on sm_90+: an implicit GEMM whose K loop is split across the
// CTAs of a thread-block cluster, the partial tiles summed through distributed shared memory
// (templates/conv_cluster_splitk.cuh). Measured on an H200 against im2col + cuBLASLt (tuned) on
// ResNet-50's batch-1 3x3 layers (tools/device/cluster_conv_bench.cu, docs/perf_notes.md v25):
// 1.05-1.24x per layer, the 16 layers 117.9 -> 100.8 us as one graph. Every configuration takes a
// 64-row M tile, 64-wide K steps (C % 64 == 0: a step lies in one tap), a 3-stage pipeline and two
// warp groups (the best of each layer's measured list); the rule picks the column tile BN (32 or
// 64) and the cluster size SPLIT (a divisor of the K steps, at most Target::conv_cluster_max_split:
// 6 by default, 8 measured slower than 6 on every layer in that bench; over 8 is sm_90's
// non-portable size, KernelStep::cluster_size) with at most one CTA per SM of the smallest target, the
// fewest K steps per CTA, then the most CTAs. On the H200's 132 SMs that gives each layer's
// fastest measured configuration or one within 4% of it (layer 2: 64 x 3 at 6.42 us, best 6.15).
struct ClusterConvConfig {
  int64_t bn = 0, bk = 64, stages = 3, kg = 2, split = 1;
};
constexpr int64_t kClusterConvBm = 64;
constexpr int64_t kClusterConvMaxSplit = 16;  // the template's bound (sm_90's largest cluster)

// Mirrors templates/conv_cluster_splitk.cuh's threads() / smem_bytes() (the template asserts it).
inline int64_t cluster_conv_threads(const ClusterConvConfig& c) { return 128 * c.kg; }
inline int64_t cluster_conv_smem_bytes(const ClusterConvConfig& c) {
  const int64_t pipe = c.stages * (kClusterConvBm + c.bn) * (c.bk + 8) * 2;
  const int64_t tiles = c.kg * kClusterConvBm * (c.bn + 4) * 4;
  return std::max(pipe, tiles);
}

inline std::optional<ClusterConvConfig> pick_cluster_conv_config(const Target& target, int64_t gemm_m, int64_t cout,
                                                                 int64_t gemm_k) {
  ClusterConvConfig base;
  base.kg = target.conv_cluster_warp_groups == 4 ? 4 : 2;
  if (gemm_k % base.bk != 0) return std::nullopt;
  const int64_t ksteps = gemm_k / base.bk, m_tiles = (gemm_m + kClusterConvBm - 1) / kClusterConvBm;
  std::optional<ClusterConvConfig> best;
  int64_t best_steps = 0, best_ctas = 0;
  for (int64_t bn : {32, 64}) {
    if (cout % bn != 0) continue;
    for (int64_t split = 1; split <= std::min<int64_t>(target.conv_cluster_max_split, kClusterConvMaxSplit); ++split) {
      if (ksteps % split != 0) continue;
      const int64_t ctas = m_tiles * (cout / bn) * split, steps = ksteps / split;
      if (ctas > target.sm_count) continue;
      if (!best || steps < best_steps || (steps == best_steps && ctas > best_ctas)) {
        best = base;
        best->bn = bn;
        best->split = split;
        best_steps = steps;
        best_ctas = ctas;
      }
    }
  }
  return best;
}

// The configuration when the strategy applies, else nullopt. `largest_numel`: the most elements of
// the input, output or residual (the kernel indexes them with int).
inline std::optional<ClusterConvConfig> conv_cluster_splitk_config(const Target& target, DType dtype, int64_t group,
                                                                   int64_t cin, int64_t cout, int64_t gemm_m,
                                                                   int64_t gemm_k, int64_t largest_numel) {
  ConvMath math;
  if (!target.conv_cluster_splitk || !target.conv_im2col_gemm || target.min_sm() < 90) return std::nullopt;
  if (!conv_math_for(dtype, &math) || math != ConvMath::kTensorOp || forced_conv_config(target, math))
    return std::nullopt;
  if (!conv_implicit_gemm_applies(target, dtype, group, cin, cout)) return std::nullopt;
  if (cin % ClusterConvConfig{}.bk != 0 || largest_numel >= (int64_t{1} << 31) - (int64_t{1} << 20)) return std::nullopt;
  const ConvKernelConfig& c = pick_conv_config(target, math, gemm_m, cout);
  if (conv_config_tiles(c, gemm_m, cout) >= target.sm_count) return std::nullopt;  // fills the GPU: CUTLASS
  return pick_cluster_conv_config(target, gemm_m, cout, gemm_k);
}

// ---- sm_90a: the CUTLASS 3.x TMA + wgmma implicit GEMM (the kWgmma rows of the table) ----
// Limits of its TMA im2col loads, kept well inside what CUTLASS's can_implement accepts (2-D
// corners of -128..127, filter offsets below 255, traversal strides of at most 8).
constexpr int64_t kWgmmaMaxPad = 64;
constexpr int64_t kWgmmaMaxWindowSpan = 64;  // (R - 1) * dilation
constexpr int64_t kWgmmaMaxStride = 8;

// A 2-D window (kernel, strides, dilations; pads begin h w, end h w) inside those limits.
inline bool wgmma_window_applies(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads) {
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) return false;
  for (size_t i = 0; i < 2; ++i)
    if ((kernel[i] - 1) * dilations[i] > kWgmmaMaxWindowSpan || strides[i] < 1 || strides[i] > kWgmmaMaxStride ||
        dilations[i] < 1)
      return false;
  for (int64_t p : pads)
    if (p < 0 || p > kWgmmaMaxPad) return false;
  return true;
}

// CTAs per SM its launch bounds ask for: two for the rows with an explicit stage count.
inline int conv_wgmma_min_blocks(const ConvKernelConfig& c) { return c.stages > 0 ? 2 : 1; }

// The wgmma configuration for an fp16 convolution, or nullopt where it does not apply: every
// target is sm_90 (an sm_90a cubin runs on compute capability 9.0 only; Jetson and the Sm80
// class keep CUTLASS 2.x), fp16, one group, 8-aligned channels and output rows (y_ld; packed when
// there is a residual), a 2-D
// window inside the TMA limits, and tiles that fill at least Target::conv_wgmma_fill of a wave of
// the smallest target (default half; batch 1 keeps the cluster split-K kernel: the wgmma kernel measured 5.7-16.6 us against its
// 5.8-9.4 on ResNet-50's batch-1 3x3s). Whether its operands live at addresses fixed at create
// (not graph inputs or outputs) is the lowering's to check. --conv-wgmma off turns it off; a
// forced Sm80 tensor-core configuration (--conv-config tc...) too.
inline std::optional<ConvKernelConfig> conv_wgmma_config(const Target& target, DType dtype, int64_t group, int64_t cin,
                                                         int64_t cout, int64_t y_ld, bool residual,
                                                         const std::vector<int64_t>& kernel,
                                                         const std::vector<int64_t>& strides,
                                                         const std::vector<int64_t>& dilations,
                                                         const std::vector<int64_t>& pads, int64_t gemm_m) {
  if (!target.conv_wgmma || !target.all_sm90() || forced_conv_config(target, ConvMath::kTensorOp)) return std::nullopt;
  // fp16 only: the bf16 instantiation compiles, but is not yet checked on a GPU (per-element
  // comparisons cannot tell its roundings from the reference's at bf16's precision; a whole-model
  // check is the next step).
  if (dtype != DType::kFloat16) return std::nullopt;
  if (group != 1 || cin % kTensorCoreChannelAlign != 0 || cout % kTensorCoreChannelAlign != 0 ||
      y_ld % kTensorCoreChannelAlign != 0 || y_ld < cout)
    return std::nullopt;
  // The template reads the residual (C) at the output's row stride: with the output in a Concat's
  // rows (y_ld > K) a packed residual would be read wrong.
  if (residual && y_ld != cout) return std::nullopt;
  if (!wgmma_window_applies(kernel, strides, dilations, pads)) return std::nullopt;
  const ConvKernelConfig& c = pick_conv_config(target, ConvMath::kWgmma, gemm_m, cout, 0, cin);
  if (static_cast<double>(conv_config_tiles(c, gemm_m, cout)) < target.conv_wgmma_fill * target.sm_count)
    return std::nullopt;
  return c;
}

// The int8 wgmma configuration for a requantizing aotc.QLinearConv (int8 or uint8 activations at
// zero point 0, symmetric int8 filters), or nullopt where it does not apply: every target is sm_90,
// one group, 16-aligned channels (TMA's 16-byte rows), a 2-D window inside the TMA limits, and
// tiles that fill Target::conv_wgmma_fill of a wave of the smallest target (else the Sm80 int8
// kernel). The K tile: 128 channels where C is a multiple of 128, else 64. Operand addresses fixed at create are
// the lowering's to check. --conv-wgmma-int8 off turns it off; a forced Sm80 int8 configuration
// (--conv-config i8tc...) too.
inline std::optional<ConvKernelConfig> conv_wgmma_int8_config(const Target& target, int64_t group, int64_t cin,
                                                              int64_t cout, const std::vector<int64_t>& kernel,
                                                              const std::vector<int64_t>& strides,
                                                              const std::vector<int64_t>& dilations,
                                                              const std::vector<int64_t>& pads, int64_t gemm_m) {
  if (!target.conv_wgmma_int8 || !target.all_sm90() || forced_conv_config(target, ConvMath::kTensorOpInt8))
    return std::nullopt;
  if (group != 1 || cin % 16 != 0 || cout % 16 != 0) return std::nullopt;
  if (!wgmma_window_applies(kernel, strides, dilations, pads)) return std::nullopt;
  const ConvKernelConfig* c = &pick_conv_config(target, ConvMath::kWgmmaInt8, gemm_m, cout, cin % 128 == 0 ? 128 : 64);
  // An expanding pointwise layer (Target::conv_wgmma_int8_expand_2cta): its epilogue is its time,
  // so the tile that puts two consumer warp groups on an SM (measured, ir/target.h).
  const bool pointwise = kernel.size() == 2 && kernel[0] == 1 && kernel[1] == 1;
  if (target.conv_wgmma_int8_expand_2cta && pointwise && cout >= 4 * cin && !forced_conv_config(target, ConvMath::kWgmmaInt8))
    if (const ConvKernelConfig* wide = find_conv_config("i8wg128x64x64_s4_2cta")) c = wide;
  if (static_cast<double>(conv_config_tiles(*c, gemm_m, cout)) < target.conv_wgmma_fill * target.sm_count)
    return std::nullopt;
  return *c;
}

// A layer that conv_wgmma_int8_config gave the wgmma int8 kernel runs as that template's GEMM mode
// (Target::conv_gemm_int8) where its window is pointwise and its tiles fill at least one wave of
// the target's SMs: a 128-row tile, 128 or 64 wide by Cout, a 128- or 64-deep K step by Cin (the
// return value), else nullopt. The wave floor is measured (H200, ResNet-50 int8 bs32,
// docs/perf_notes.md v53): every pointwise layer of at least a wave of tiles was faster as the
// persistent GEMM (layer1 conv3 34 -> 26.5 us, layer2 conv1 27.8 -> 19.9), the two below it slower
// (layer4's 2048 -> 512, 52 tiles: 6.8 -> 10.0 us; layer3's 1024 -> 256, 98 tiles: 7.7 -> 7.9).
inline std::optional<ConvKernelConfig> conv_gemm_int8_config(const Target& target, int64_t cin, int64_t cout,
                                                             const std::vector<int64_t>& kernel,
                                                             const std::vector<int64_t>& strides,
                                                             const std::vector<int64_t>& pads, int64_t gemm_m) {
  if (target.conv_gemm_int8 == ConvGemmInt8::kOff || !pointwise_window(kernel, strides, pads)) return std::nullopt;
  const int tn = cout % 128 == 0 ? 128 : 64, tk = cin % 128 == 0 ? 128 : 64;
  // Epilogue subtiles 64 channels wide: the cooperative schedule's own choice (128 x 32) measured
  // slower (H200, ResNet-50 int8 bs32, docs/perf_notes.md v56: layer1's fused conv3 42.2 -> 36.9
  // us, 0.825 -> 0.797 ms); ping-pong's own choice is 64 x 64 already.
  ConvKernelConfig c{"i8gemm_sm90", ConvMath::kWgmmaInt8, 128, tn, tk, 128, tn, tk, 0, 90, 64};
  if (conv_config_tiles(c, gemm_m, cout) < target.sm_count) return std::nullopt;
  return c;
}

// The cooperative int8 GEMM's tile width (Target::int8_gemm_tile_n, --int8-gemm-tile-n): where
// Cout divides by 256, a 128 x 256 tile (each consumer warp group 64 x 256) halves the tiles and
// reads A once for 256 channels. auto (0) takes it where the persistent grid's waves of 256-wide
// tiles carry no more columns than those of `c`'s width (ceil(T256 / SMs) * 256 <=
// ceil(T / SMs) * tb_n), i.e. where it costs no wave quantisation. Measured (H200, ResNet-50 int8
// bs32, docs/perf_notes.md v59, 256 forced everywhere): layer1's fused conv3s 37.8 -> 33.7 us
// (1568 -> 784 tiles: 12 -> 6 waves), layer2's 20.3 -> 18.3 (6 -> 3), layer4's 11.4 -> 10.2
// (2 -> 1), layer3's 12.8 -> 14.5 (392 -> 196 tiles: 3 -> 2 waves of twice the work): the rule
// keeps 128 there. 128 keeps the table's width, 256 forces it wherever Cout divides.
inline int64_t int8_gemm_tile_n(const Target& target, const ConvKernelConfig& c, int64_t gemm_m, int64_t cout) {
  constexpr int64_t kWide = 256;
  if (target.int8_gemm_tile_n == 128 || c.tb_n >= kWide || cout % kWide != 0) return c.tb_n;
  if (target.int8_gemm_tile_n == kWide) return kWide;
  ConvKernelConfig wide = c;
  wide.tb_n = wide.warp_n = kWide;
  const int64_t sms = std::max<int64_t>(1, target.sm_count);
  const auto waves = [&](const ConvKernelConfig& k) { return (conv_config_tiles(k, gemm_m, cout) + sms - 1) / sms; };
  return waves(wide) * kWide <= waves(c) * c.tb_n ? kWide : c.tb_n;
}

// The thread-block cluster along M of a wgmma convolution (--int8-conv-cluster,
// --conv-wgmma-cluster: `want` CTAs sharing each filter tile by TMA multicast; measured slower on
// ResNet-50, docs/perf_notes.md v59): `want` where the M tiles group evenly, else 1 (none).
inline int conv_cluster_m(int want, const ConvKernelConfig& c, int64_t gemm_m) {
  return want > 1 && ((gemm_m + c.tb_m - 1) / c.tb_m) % want == 0 ? want : 1;
}
// The kernel attribute of that cluster ("" for none): the CLUSTER_DIMS hole of the templates.
inline std::string cluster_dims_attribute(int cluster_m) {
  return cluster_m > 1 ? "__cluster_dims__(" + std::to_string(cluster_m) + ", 1, 1)" : "";
}

// A convolution that would take im2col + GEMM (above) and is a strided pointwise one - 1x1
// window, no padding, one group, strides (SH, SW) - reads its input in place instead: output row
// (n, p) is a GEMM over the Q input pixels (n, p*SH, q*SW), rows SW*C elements apart, and the
// N*P rows are the batches of one strided batched cuBLASLt GEMM (batch stride SH*W*C, which
// steps from image to image only when H = P*SH; otherwise batch 1 only). The weights are shared
// by every batch (stride 0). `in_h` is H, `out_h` P.
inline bool conv_strided_pointwise_gemm_applies(const Target& target, DType dtype, int64_t group, int64_t cin,
                                                int64_t cout, const std::vector<int64_t>& kernel,
                                                const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                                                int64_t batch, int64_t in_h, int64_t out_h, int64_t gemm_m,
                                                bool relu_or_none) {
  if (!target.conv_strided_pointwise_gemm || kernel.size() != 2 || strides.size() != 2) return false;
  if (kernel[0] != 1 || kernel[1] != 1 || (strides[0] == 1 && strides[1] == 1)) return false;
  for (int64_t p : pads)
    if (p != 0) return false;
  if (batch != 1 && in_h != out_h * strides[0]) return false;
  return conv_im2col_gemm_applies(target, dtype, group, cin, cout, gemm_m, cin, relu_or_none);
}

// ---- fp32 GEMMs of few rows: the CUTLASS SIMT GEMM (templates/cutlass_gemm.cu.in) ----
// cuBLASLt's fp32 kernels (FFMA, no TF32) tile by 128 rows: a transformer at batch 1 (M = 128-197
// token rows) fills 6-18 of 132 SMs and runs its GEMMs at 6-14 TFLOP/s even with split-K
// candidates timed at create (docs/perf_notes.md v30; the H200's FFMA rate is ~67 TFLOP/s). A
// float GEMM whose 128x128 tiles would not fill one wave runs on CUTLASS's Sm80 SIMT GEMM instead:
// 64-row tiles, and split-K until there are Target::simt_gemm_blocks_per_sm thread blocks per SM:
// on sm_90+ the slices of a tile are the CTAs of one thread-block cluster that sum them in the
// kernel; before, each slice writes its fp32 partial product to a workspace slab and
// templates/gemm_splitk_reduce.cu.in sums them. Either way in slice order and then the epilogue,
// so the result does not depend on timing. At least kSimtGemmMinRows rows. One block of 4 warps per SM measured at ~44% of the SM's
// FFMA rate (H200, ViT-B/16's 197-row GEMMs, docs/perf_notes.md v32): the warps need company to
// hide their shared-memory latency. Tile shapes of CUTLASS's own Sm80 SIMT sgemm library kernels;
// the first row is the rule's, the others are for --conv-config.
inline const std::vector<ConvKernelConfig>& simt_gemm_configs() {
  static const std::vector<ConvKernelConfig> kConfigs = {
      {"sgemm64x128x8_w32x64_s4", ConvMath::kSimt, 64, 128, 8, 32, 64, 8, 4, 80},
      {"sgemm128x64x8_w64x32_s4", ConvMath::kSimt, 128, 64, 8, 64, 32, 8, 4, 80},
      {"sgemm128x128x8_w32x64_s4", ConvMath::kSimt, 128, 128, 8, 32, 64, 8, 4, 80},
      {"sgemm64x64x8_w32x64_s5", ConvMath::kSimt, 64, 64, 8, 32, 64, 8, 5, 80},
  };
  return kConfigs;
}
constexpr int64_t kGemmMinSliceK = 64;  // K elements per split-K slice, at least (8 SIMT K tiles)
constexpr int64_t kSimtGemmMaxSplit = 16;
// Cluster split-K (Target::gemm_fp32_cluster): the slices of a tile are the CTAs of one cluster,
// so at most Target::simt_gemm_max_cluster of them (8: portable, the default; 16: sm_90's
// non-portable size, which the runtime allows on the function at create; measured slower, v36).
constexpr int64_t kSimtGemmMaxClusterSplit = 16;
constexpr int64_t kCublasLtFp32Tile = 128;
// Fewer rows stay on cuBLASLt: a one-row classifier (ResNet-50's / MobileNetV2's 1 x 1000 fc)
// reads its weights once there, while a 64-row SIMT tile would multiply 63 rows of padding
// (measured on the H200, docs/perf_notes.md v34: cuBLASLt 1-3% faster on those whole models).
constexpr int64_t kSimtGemmMinRows = 16;

struct SimtGemmPlan {
  const ConvKernelConfig* config = nullptr;
  int64_t split = 1;     // K slices; every slice non-empty
  bool cluster = false;  // split > 1 summed inside the kernel across a thread-block cluster
};

// A SIMT GEMM configuration by name (--conv-config forces it for every GEMM it applies to, filling
// the GPU or not); nullptr if unknown.
inline const ConvKernelConfig* find_simt_gemm_config(const std::string& name) {
  for (const ConvKernelConfig& c : simt_gemm_configs())
    if (name == c.name) return &c;
  return nullptr;
}

// The K slices for a tile count: enough for simt_gemm_blocks_per_sm blocks per SM, at least
// kGemmMinSliceK K elements each (at least one K tile), then evened out so that no slice is empty (the params
// builder cuts K into slices of ceil(k_tiles / split) tiles).
inline int64_t simt_gemm_split(const Target& target, const ConvKernelConfig& c, int64_t m, int64_t n, int64_t k,
                               int64_t max_split = kSimtGemmMaxSplit) {
  const int64_t tiles = conv_config_tiles(c, m, n);
  const int64_t k_tiles = (k + c.tb_k - 1) / c.tb_k;
  const int64_t blocks = std::max<int64_t>(1, target.simt_gemm_blocks_per_sm) * target.sm_count;
  int64_t split = (blocks + tiles - 1) / tiles;
  const int64_t min_slice_tiles = std::max<int64_t>(1, kGemmMinSliceK / c.tb_k);
  split = std::max<int64_t>(1, std::min({split, k_tiles / min_slice_tiles, max_split}));
  const int64_t slice = (k_tiles + split - 1) / split;
  return (k_tiles + slice - 1) / slice;
}

// A 16-bit GEMM of one row against a [N][K] weight (transB: the classifier of a batch-1 CNN) on
// templates/gemv_rows.cu.in, one warp per output column: ResNet-50's 1 x 1000 x 2048 took 5.2 us
// as a cuBLASLt GEMM in the batch-1 replay on an H200 (docs/results.md, twenty-fourth session).
// Any K (16-byte vectors when K % 8 == 0, else one element a lane: squeeze-excitation's small
// expansions). --gemv off keeps cuBLASLt.
constexpr int64_t kGemvMaxRows = 1;
inline bool gemv_applies(const Target& target, DType dtype, int64_t m, int64_t n, int64_t k) {
  if (!target.gemm_gemv || target.matmul_reference) return false;
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16) return false;
  return m >= 1 && m <= kGemvMaxRows && n >= 1 && k >= 1;  // K % 8 != 0: the template's element-wise rows
}

// The pooled head of a batch-1 CNN (aotc.PoolGemm: GlobalAveragePool of [1, H, W, C] then the
// one-row GEMV against a [N][C] weight) on templates/pool_gemv_cluster.cu.in: clusters of
// kPoolGemmCluster CTAs share the pooling through distributed shared memory, so every target must
// be sm_90+; the weight row's vectors sit in registers (C <= 4096: 16 a lane); --pool-gemm on.
constexpr int64_t kPoolGemmCluster = 8, kPoolGemmMaxC = 4096;
inline bool pool_gemm_applies(const Target& target, DType dtype, int64_t batch, int64_t n, int64_t c) {
  if (!target.pool_gemm || target.min_sm() < 90 || !gemv_applies(target, dtype, batch, n, c) || c % 8 != 0) return false;
  return batch == 1 && c <= kPoolGemmMaxC;
}

// 16-bit GEMMs whose epilogue activation cuBLASLt lacks (its epilogues have ReLU and the tanh
// GELU only: BERT's and ViT's erf GELU, SiLU, Clip, ...) on CUTLASS 3.x's sm_90a GEMM
// (templates/cutlass_gemm_sm90.cu.in: TMA + wgmma, persistent tiles) with bias and activation in
// its epilogue, instead of the cuBLASLt GEMM + an epilogue kernel that reads and writes the
// product again. Off by default (--gemm-wgmma on): measured on an H200 (docs/perf_notes.md v46),
// BERT-base batch 32's erf-GELU GEMM (4096 x 3072 x 768) took 53 us on the cooperative 128x256
// row and 60 us on the ping-pong 128x128 one, against cuBLASLt's 34.8 us + the epilogue kernel's
// 18.2: the whole model 1.904-1.909 ms against 1.878-1.908 (neutral to 1.4% slower), ping-pong
// 1.98-2.00 (slower); ViT-B/16 neutral (3.042-3.105 against 3.050-3.099). The table; the rule (rule rows only, in order): every target is
// sm_90 (an sm_90a cubin), fp16, N and K multiples of 8 (16-byte TMA rows), and the first row whose
// tiles fill a wave of the smallest target (the 128 x 256 tile needs N a multiple of 256), else
// the last rule row where its tiles fill half a wave; smaller problems (batch 1) keep cuBLASLt,
// whose split-K and 64-row tiles suit them. The ping-pong rows (two consumer warp groups on
// alternate tiles, one's epilogue overlapping the other's main loop; cooperative: both share each
// tile) measured slower and run only when named (--gemm-wgmma-config).
struct GemmWgmmaConfig {
  const char* name;
  int tb_m, tb_n, tb_k;
  bool pingpong;
  bool rule;  // the rule may pick it (else only --gemm-wgmma-config)
};

inline const std::vector<GemmWgmmaConfig>& gemm_wgmma_configs() {
  static const std::vector<GemmWgmmaConfig> kConfigs = {{"gwg128x256x64_coop", 128, 256, 64, false, true},
                                                        {"gwg128x128x64_coop", 128, 128, 64, false, true},
                                                        {"gwg128x128x64_pp", 128, 128, 64, true, false},
                                                        {"gwg64x256x64_pp", 64, 256, 64, true, false}};
  return kConfigs;
}

inline int64_t gemm_wgmma_tiles(const GemmWgmmaConfig& c, int64_t m, int64_t n) {
  return ((m + c.tb_m - 1) / c.tb_m) * ((n + c.tb_n - 1) / c.tb_n);
}

inline std::optional<GemmWgmmaConfig> gemm_wgmma_config(const Target& target, DType dtype, int64_t m, int64_t n,
                                                        int64_t k) {
  if (!target.gemm_wgmma || target.matmul_reference || !target.all_sm90()) return std::nullopt;
  if (dtype != DType::kFloat16 || m < 1 || n < 8 || k < 8 || n % 8 != 0 || k % 8 != 0) return std::nullopt;
  if (m >= (int64_t{1} << 31) || n >= (int64_t{1} << 31) || k >= (int64_t{1} << 31)) return std::nullopt;
  const std::vector<GemmWgmmaConfig>& rows = gemm_wgmma_configs();
  if (!target.gemm_wgmma_config.empty()) {  // --gemm-wgmma-config NAME (measuring)
    for (const GemmWgmmaConfig& c : rows)
      if (target.gemm_wgmma_config == c.name) return c;
  }
  const GemmWgmmaConfig* last = nullptr;
  for (const GemmWgmmaConfig& c : rows) {
    if (!c.rule) continue;
    if (n % c.tb_n == 0 && gemm_wgmma_tiles(c, m, n) >= target.sm_count) return c;
    last = &c;
  }
  if (last && 2 * gemm_wgmma_tiles(*last, m, n) >= target.sm_count) return *last;
  return std::nullopt;
}

// A depthwise convolution and the pointwise convolution that alone reads it as one kernel
// (templates/conv_dw_pw_nhwc.cu.in, opt/fuse_depthwise_pointwise): 16-bit, sm_80+ (mma.sync,
// cp.async), C and CO multiples of 8. A block: a TOH x TOW tile of output pixels (TP = TOH * TOW
// = 16 * wm GEMM rows) x COB = 8 * nt * wn output channels, 256 threads (the GEMM on the first
// wm * wn warps); its shared memory holds the depthwise output of its pixels and its pointwise
// weight rows, both [rows][CK + 8] (CK = C rounded up to 16), the input window of its tile and
// the depthwise filter. Measured on an H200 (MobileNetV2, docs/perf_notes.md v44): a block that
// holds only part of CO recomputes the depthwise output for every column tile, which made the
// 14 x 14 and 7 x 7 pairs 1.1-2.8x slower than the two kernels, and C 384 was slower even in one
// column tile (batch 1, 14 x 14: 7.0-7.3 us against 2.8 + 3.1). With the window staged (call 8)
// every batch-1 pair with C <= 256 is faster fused (3.3-4.6 us against 5.8-6.9), but at batch 32
// only features.2 (stride 2, C 96: 44.3 us against 49.0 + 10.0); the other batch-32 pairs lose
// 0.2-4.9 us (large tiles of up to 83 KB: one block an SM). So the rule: C at most
// kDwPwMaxChannels, one column tile (COB >= CO, under 2 * CO), and either a small depthwise
// output (P * C <= kDwPwMaxSmallElements) or a strided pair with C <= kDwPwMaxStridedChannels.
// Shared memory: kDwPwMaxSmem (two blocks an SM) where a shape fits, else the target's per-block
// limit. Among the shapes, the largest TP whose grid has at least one block per SM of the target;
// when none fills the GPU, the one with the most blocks (ties: the larger tile, then more GEMM
// warps).
constexpr int64_t kDwPwMaxSmallElements = int64_t{1} << 20;
constexpr int64_t kDwPwMaxStridedChannels = 128;
constexpr int64_t kDwPwMaxChannels = 256;
constexpr int64_t kDwPwThreads = 256;  // the depthwise phase's; the GEMM's warps are the first wm * wn
constexpr int64_t kDwPwMaxSmem = 96 * 1024;
struct DwPwProblem {
  int64_t batch = 0, oh = 0, ow = 0, kh = 0, kw = 0, sh = 1, sw = 1, dh = 1, dw = 1;
};
struct DwPwConfig {
  int64_t toh = 0, tow = 0, wn = 0, nt = 0;
  int64_t tp() const { return toh * tow; }
  int64_t wm() const { return tp() / 16; }
  int64_t cob() const { return 8 * nt * wn; }
  int64_t threads() const { return kDwPwThreads; }
  int64_t gemm_warps() const { return wm() * wn; }
  int64_t tiles(const DwPwProblem& p) const { return p.batch * ((p.oh + toh - 1) / toh) * ((p.ow + tow - 1) / tow); }
};
inline int64_t dw_pw_smem_bytes(const DwPwConfig& c, int64_t cin, const DwPwProblem& p) {
  const int64_t win_h = (c.toh - 1) * p.sh + (p.kh - 1) * p.dh + 1, win_w = (c.tow - 1) * p.sw + (p.kw - 1) * p.dw + 1;
  return ((c.tp() + c.cob()) * ((cin + 15) / 16 * 16 + 8) + (win_h * win_w + p.kh * p.kw) * cin) * 2;
}
// The largest dynamic shared memory one block may have on every architecture of the target (CUDA
// programming guide, compute capabilities table): 227 KB on sm_90 / sm_100 / sm_103, 163 KB on
// sm_80 / sm_87, 99 KB on the others (sm_86, sm_89, sm_120, ...).
inline int64_t max_block_smem(const Target& target) {
  int64_t m = 227 * 1024;
  for (int sm : target.sms) {
    const int64_t limit = (sm == 90 || sm == 100 || sm == 103) ? 227 * 1024 : (sm == 80 || sm == 87) ? 163 * 1024 : 99 * 1024;
    m = std::min(m, limit);
  }
  return m;
}
inline bool dw_pw_applies(const Target& target, DType dtype, int64_t cin, int64_t cout) {
  if (!target.has_sm80_tensor_cores()) return false;
  if (dtype != DType::kFloat16 && dtype != DType::kBFloat16) return false;
  return cin > 0 && cout > 0 && cin % 8 == 0 && cout % 8 == 0;
}
inline std::optional<DwPwConfig> dw_pw_config(const Target& target, DType dtype, int64_t cin, int64_t cout,
                                              const DwPwProblem& p) {
  if (!dw_pw_applies(target, dtype, cin, cout) || p.batch <= 0 || p.oh <= 0 || p.ow <= 0) return std::nullopt;
  for (int64_t limit : {kDwPwMaxSmem, max_block_smem(target)}) {
    std::optional<DwPwConfig> best;
    int64_t best_blocks = 0;
    auto better = [&](const DwPwConfig& c, int64_t blocks) {
      if (!best) return true;
      const bool fills = blocks >= target.sm_count, best_fills = best_blocks >= target.sm_count;
      if (fills != best_fills) return fills;
      if (!fills && blocks != best_blocks) return blocks > best_blocks;
      if (c.tp() != best->tp()) return c.tp() > best->tp();
      return c.gemm_warps() > best->gemm_warps();
    };
    for (const auto& [toh, tow] : {std::pair<int64_t, int64_t>{8, 8}, {8, 4}, {4, 8}, {4, 4}, {8, 2}, {2, 8}})
      for (int64_t wn : {1, 2, 4, 8})
        for (int64_t nt : {1, 2, 4}) {
          const DwPwConfig c{toh, tow, wn, nt};
          if (c.gemm_warps() > 8) continue;
          if (c.cob() < cout || (c.cob() >= 2 * cout && c.cob() > 8)) continue;  // one column tile, mostly used
          if (dw_pw_smem_bytes(c, cin, p) > limit) continue;
          const int64_t blocks = c.tiles(p);
          if (blocks > INT32_MAX) continue;
          if (better(c, blocks)) best = c, best_blocks = blocks;
        }
    if (best) return best;
  }
  return std::nullopt;
}
// Whether the pair should run as one kernel (the rule above).
inline bool dw_pw_fuses(const Target& target, DType dtype, int64_t cin, int64_t cout, const DwPwProblem& p) {
  if (cin > kDwPwMaxChannels || !dw_pw_config(target, dtype, cin, cout, p)) return false;
  const bool small = p.batch * p.oh * p.ow * cin <= kDwPwMaxSmallElements;
  const bool strided = p.sh > 1 || p.sw > 1;
  return small || (strided && cin <= kDwPwMaxStridedChannels);
}

// Whether a GEMM's sizes take a few-row CUTLASS GEMM: they fit its int offsets, and either a
// configuration is forced or cuBLASLt's 128 x 128 tiles would not fill one wave of at least
// kSimtGemmMinRows rows.
inline bool few_row_gemm_sizes(const Target& target, int64_t m, int64_t n, int64_t k, bool forced) {
  if (m <= 0 || n <= 0 || k <= 0 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || m * n > INT32_MAX) return false;
  const int64_t lt_tiles = ((m + kCublasLtFp32Tile - 1) / kCublasLtFp32Tile) * ((n + kCublasLtFp32Tile - 1) / kCublasLtFp32Tile);
  return forced || (lt_tiles < target.sm_count && m >= kSimtGemmMinRows);
}

// Whether a GEMM (one matrix, row-major A, float) runs on the SIMT GEMM, and how. nullopt: cuBLASLt.
inline std::optional<SimtGemmPlan> simt_gemm_plan(const Target& target, DType dtype, int64_t m, int64_t n, int64_t k) {
  if (!target.gemm_fp32_simt || target.matmul_reference || !target.has_sm80_tensor_cores()) return std::nullopt;
  const ConvKernelConfig* forced = find_simt_gemm_config(target.conv_config);
  if (dtype != DType::kFloat32 || !few_row_gemm_sizes(target, m, n, k, forced != nullptr)) return std::nullopt;
  SimtGemmPlan p;
  p.config = forced ? forced : &simt_gemm_configs().front();
  const bool cluster = target.gemm_fp32_cluster && target.min_sm() >= 90;
  p.split = simt_gemm_split(target, *p.config, m, n, k,
                            cluster ? std::min<int64_t>(target.simt_gemm_max_cluster, kSimtGemmMaxClusterSplit) : kSimtGemmMaxSplit);
  p.cluster = cluster && p.split > 1;
  return p;
}

// ---- fp16 GEMMs of few rows: the same template's tensor-op form (--gemm-16bit cutlass) ----
// GPT-2's GEMMs at batch 1 (M = 128 token rows) take 5-6 us each on cuBLASLt for 1.2-4.7 MB of
// weights (a ~1 us transfer at the memory rate; H200 trace, docs/results.md "Thirty-ninth
// session"). The hypothesis that more, smaller CTAs would cut that (v64): such a GEMM on
// templates/cutlass_gemm.cu.in's tensor-op form, CUTLASS's Sm80 mma.sync main loop on 64 x 64
// tiles, K split until there are Target::simt_gemm_blocks_per_sm blocks per SM, the slices of a
// tile the CTAs of one thread-block cluster summed through distributed shared memory (no
// reduction kernel), the bias, C / residual and any activation in its epilogue. Measured slower
// (v64: GPT-2 bs1 0.553 ms against cuBLASLt's 0.449; its GEMMs 5.9-12.2 us against 5.2-6.1, whose
// nvjet kernels already use 64 x 16-64 tiles), so off by default (Target::gemm_16bit_cluster).
// Every target must be sm_90+ (clusters); fp16 only (the GPU test checks fp16); operands 16-byte
// aligned (K, and N for a row-major B, multiples of 8). The first row is the rule's; the others
// are for --conv-config.
inline const std::vector<ConvKernelConfig>& tc_gemm_configs() {
  static const std::vector<ConvKernelConfig> kConfigs = {
      {"hgemm64x64x32_w32x32_s4", ConvMath::kTensorOp, 64, 64, 32, 32, 32, 32, 4, 80},
      {"hgemm64x128x32_w32x64_s4", ConvMath::kTensorOp, 64, 128, 32, 32, 64, 32, 4, 80},
      {"hgemm128x64x32_w64x32_s4", ConvMath::kTensorOp, 128, 64, 32, 64, 32, 32, 4, 80},
  };
  return kConfigs;
}

inline const ConvKernelConfig* find_tc_gemm_config(const std::string& name) {
  for (const ConvKernelConfig& c : tc_gemm_configs())
    if (name == c.name) return &c;
  return nullptr;
}

// Whether a 16-bit GEMM (one matrix, row-major A) runs on the tensor-op cluster GEMM, and how
// (plan.cluster is set whenever K is split; unsplit, the same kernel is a cluster of one).
// nullopt: cuBLASLt.
inline std::optional<SimtGemmPlan> tc_gemm_plan(const Target& target, DType dtype, int64_t m, int64_t n, int64_t k,
                                                bool trans_b) {
  if (!target.gemm_16bit_cluster || target.matmul_reference || target.min_sm() < 90) return std::nullopt;
  if (dtype != DType::kFloat16 || k % 8 != 0 || (!trans_b && n % 8 != 0)) return std::nullopt;
  const ConvKernelConfig* forced = find_tc_gemm_config(target.conv_config);
  if (!few_row_gemm_sizes(target, m, n, k, forced != nullptr)) return std::nullopt;
  SimtGemmPlan p;
  p.config = forced ? forced : &tc_gemm_configs().front();
  p.split = simt_gemm_split(target, *p.config, m, n, k, std::min<int64_t>(target.simt_gemm_max_cluster, kSimtGemmMaxClusterSplit));
  p.cluster = p.split > 1;
  return p;
}

// ---- Two pointwise convolutions in a row as one cluster kernel (aotc.PointwisePair,
// templates/conv_pw_pair_nhwc.cu.in, opt/fuse_pointwise_pair) ----
// Y1 = act1(X W1^T + B1 + R) [M, N1] then Y2 = act2(Y1 W2^T + B2) [M, N2]: a cluster of CS CTAs
// owns BM rows; CTA r computes N1 / CS columns of Y1 and, over that K range, a partial BM x N2
// product that the cluster sums through distributed shared memory. Every operand of a CTA is in
// shared memory at once (no K pipeline), so the rule takes only problems whose shares fit:
// ResNet-50's layer-2 and layer-3 block boundaries at batch 1 (conv3 + residual, then the next
// conv1), MobileNetV2's projection + residual, then the next expansion. Measured: see
// docs/perf_notes.md v45; off unless Target::conv_pw_pair (--conv-pw-pair on).
struct PwPairConfig {
  int64_t bm = 32, cs = 16;  // rows of a cluster, CTAs of a cluster
};
constexpr int64_t kPwPairThreads = 256;
// The second product's column block (the template's CB).
inline int64_t pw_pair_cb(int64_t bm, int64_t n2) { return std::min(n2, 4096 / bm); }
// Mirrors the template's layout: X rows and the W1 share (K1 + 8 halves a row), R's block, the Y1
// block and W2's columns (N1 / CS + 8), the fp32 partial product (N2 + 4 a row) and the K-split
// sums (8 warps x 4 tiles x 4 x 32 floats).
inline int64_t pw_pair_smem_bytes(const PwPairConfig& c, int64_t k1, int64_t n1, int64_t n2) {
  const int64_t n1c = n1 / c.cs, ldx = k1 + 8, ldk = n1c + 8;
  return 2 * ((c.bm + n1c) * ldx + c.bm * n1c + (c.bm + n2) * ldk) + 4 * c.bm * (n2 + 4) + 8 * 4 * 4 * 32 * 4;
}
// The template's warp split of a BM x NCOLS product: 16-row groups x n8 tiles over 8 warps, at
// most 4 n8 tiles a warp, or several warps a tile splitting K.
inline bool pw_pair_warps_fit(int64_t bm, int64_t ncols) {
  if (bm % 16 != 0 || ncols % 8 != 0 || ncols == 0) return false;
  const int64_t tiles = (bm / 16) * (ncols / 8), nt = tiles >= 8 ? tiles / 8 : 1;
  return (tiles % 8 == 0 || 8 % tiles == 0) && nt <= 4 && (ncols / 8) % nt == 0;
}
// Preference: the largest cluster (each CTA streams the fewest weight bytes), then 32-row tiles,
// then 64, then 16; within the target's SMs (one wave) and its per-block shared memory.
inline std::optional<PwPairConfig> pw_pair_config(const Target& target, DType dtype, int64_t m, int64_t k1, int64_t n1,
                                                  int64_t n2) {
  if (!target.conv_pw_pair || target.min_sm() < 90 || (dtype != DType::kFloat16 && dtype != DType::kBFloat16))
    return std::nullopt;
  if (m <= 0 || k1 <= 0 || n1 <= 0 || n2 <= 0 || k1 % 16 != 0 || n2 % 8 != 0) return std::nullopt;
  if (m * std::max({k1, n1, n2}) >= (int64_t{1} << 31) - (int64_t{1} << 20)) return std::nullopt;  // int offsets
  for (int64_t cs : {16, 8, 4}) {
    if (n1 % (16 * cs) != 0) continue;  // whole k16 steps in each CTA's K range
    for (int64_t bm : {32, 64, 16}) {
      const PwPairConfig c{bm, cs};
      const int64_t cb = pw_pair_cb(bm, n2);
      if ((m + bm - 1) / bm * cs > target.sm_count || n2 % cb != 0) continue;
      if (!pw_pair_warps_fit(bm, n1 / cs) || !pw_pair_warps_fit(bm, cb)) continue;
      if (pw_pair_smem_bytes(c, k1, n1, n2) > max_block_smem(target)) continue;
      return c;
    }
  }
  return std::nullopt;
}

}  // namespace aotc
