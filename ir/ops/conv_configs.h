// The one table of tensor-core convolution configurations (CUTLASS 2.x implicit GEMM, Sm80 class)
// and the rule that picks one per problem. Lowering (ir/ops/conv.cc), the layout pass (which only
// moves a convolution to NHWC when a configuration applies) and the tests all read this table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/target.h"

namespace aotc {

struct ConvKernelConfig {
  const char* name;
  int tb_m, tb_n, tb_k;        // threadblock tile of the implicit GEMM (M = N*P*Q, N = K, K = R*S*C)
  int warp_m, warp_n, warp_k;  // warp tile
  int stages;                  // cp.async pipeline depth
  int min_sm;                  // lowest compute capability it runs on
};

// Largest tile first. The pick rule: the first configuration whose tile count fills half a wave
// of the smallest target GPU (tiles >= sm_count / 2); when none does (batch-1 late layers), the
// last. Measured on an H100 (docs/tune_resnet50_h100.txt, tools/device/tune_conv.sh): a
// 128x128x64 tile on 98 tiles beats a 128x64x32 tile on 196 (ResNet-50 bs32 layer3: 26 vs 37 us),
// so filling a whole wave is not worth a smaller tile; 64-channel layers keep a 64-wide N tile.
inline const std::vector<ConvKernelConfig>& conv_kernel_configs() {
  static const std::vector<ConvKernelConfig> kConfigs = {
      {"tc128x128x64_w64x64_s3", 128, 128, 64, 64, 64, 64, 3, 80},
      {"tc128x64x32_w64x32_s4", 128, 64, 32, 64, 32, 32, 4, 80},
      {"tc64x64x32_w32x32_s4", 64, 64, 32, 32, 32, 32, 4, 80},
  };
  return kConfigs;
}

// Candidates that the default rule does not pick, for measuring (--conv-config NAME forces one for
// every tensor-core convolution): the rule above is chosen from their timings (docs/perf_notes.md).
inline const std::vector<ConvKernelConfig>& conv_candidate_configs() {
  static const std::vector<ConvKernelConfig> kCandidates = {
      {"tc128x128x32_w64x64_s3", 128, 128, 32, 64, 64, 32, 3, 80},
      {"tc256x128x32_w64x64_s3", 256, 128, 32, 64, 64, 32, 3, 80},
      {"tc128x256x32_w64x64_s3", 128, 256, 32, 64, 64, 32, 3, 80},
      {"tc128x64x64_w64x32_s3", 128, 64, 64, 64, 32, 64, 3, 80},
      {"tc64x64x64_w32x32_s3", 64, 64, 64, 32, 32, 64, 3, 80},
      {"tc64x128x32_w32x64_s4", 64, 128, 32, 32, 64, 32, 4, 80},
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

inline int64_t conv_config_tiles(const ConvKernelConfig& c, int64_t gemm_m, int64_t gemm_n) {
  return ((gemm_m + c.tb_m - 1) / c.tb_m) * ((gemm_n + c.tb_n - 1) / c.tb_n);
}

// Configurations whose N tile is wider than the output channels (rounded up to 64) waste that part
// of every tile (ResNet's 64-channel layers under a 128-wide tile): skipped.
inline const ConvKernelConfig& pick_conv_config(const Target& target, int64_t gemm_m, int64_t gemm_n) {
  if (!target.conv_config.empty()) {
    if (const ConvKernelConfig* forced = find_conv_config(target.conv_config)) return *forced;
  }
  const auto& configs = conv_kernel_configs();
  const int64_t n_cap = std::max<int64_t>(64, (gemm_n + 63) / 64 * 64);
  for (const ConvKernelConfig& c : configs)
    if (c.tb_n <= n_cap && 2 * conv_config_tiles(c, gemm_m, gemm_n) >= target.sm_count) return c;
  return configs.back();
}

// Serial split-K slices for a problem that leaves SMs idle (batch 1): enough slices to give about
// one wave, each keeping at least kMinKIterationsPerSlice main-loop iterations; at most
// min(16, target.max_split_k) (1 by default: off, see ir/target.h).
constexpr int64_t kMinKIterationsPerSlice = 4;
constexpr int64_t kMaxSplitK = 16;
inline int64_t pick_split_k(const Target& target, const ConvKernelConfig& c, int64_t gemm_m, int64_t gemm_n,
                            int64_t gemm_k) {
  const int64_t tiles = conv_config_tiles(c, gemm_m, gemm_n);
  const int64_t k_iters = (gemm_k + c.tb_k - 1) / c.tb_k;
  int64_t split = tiles >= target.sm_count ? 1 : target.sm_count / tiles;
  split = std::min({split, k_iters / kMinKIterationsPerSlice, kMaxSplitK, static_cast<int64_t>(target.max_split_k)});
  return std::max<int64_t>(split, 1);
}

// Channel alignment (elements) the tensor-core kernels need for 16-byte accesses.
constexpr int64_t kTensorCoreChannelAlign = 8;
// Input channels a conv with `cin` channels is zero-padded to for the tensor-core kernels (the
// RGB stem: 3 -> 8). Padding to 4 for CUTLASS's fixed-channels iterators halves the stem's MMA work
// but measured 2.1x slower on an H100 (ResNet-50 bs32 stem 266 -> 558 us; docs/perf_notes.md).
inline int64_t tensor_core_padded_channels(int64_t cin) {
  return (cin + kTensorCoreChannelAlign - 1) / kTensorCoreChannelAlign * kTensorCoreChannelAlign;
}

// Whether a 2-D convolution with these properties has a tensor-core NHWC implementation.
inline bool conv_tensor_core_applies(const Target& target, DType dtype, int64_t group, int64_t cin,
                                     int64_t cout) {
  return target.has_sm80_tensor_cores() && (dtype == DType::kFloat16 || dtype == DType::kBFloat16) &&
         group == 1 && cin % kTensorCoreChannelAlign == 0 &&
         cout % kTensorCoreChannelAlign == 0;
}

// A channels_last convolution that is a plain GEMM: 1x1 window, stride 1, no padding, one group
// (dilation is irrelevant for a 1x1 window). M = N*H*W rows of C channels times the KRSC weights
// ([K, C], transposed) gives the NHWC output directly. cuBLASLt runs it (its Hopper kernels use
// wgmma, which the Sm80-class CUTLASS kernels cannot), with its bias and ReLU epilogue and the
// residual as the C matrix (beta = 1); other activations keep the CUTLASS kernel, whose epilogue
// takes any scalar expression. `relu_or_none`: the fused activation is absent or a plain Relu.
inline bool conv_pointwise_gemm_applies(const Target& target, DType dtype, int64_t group, int64_t cin,
                                        int64_t cout, const std::vector<int64_t>& kernel,
                                        const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                                        bool relu_or_none) {
  if (!target.conv_pointwise_gemm || !target.conv_config.empty() || !relu_or_none) return false;
  if (!conv_tensor_core_applies(target, dtype, group, cin, cout)) return false;
  for (int64_t k : kernel)
    if (k != 1) return false;
  for (int64_t s : strides)
    if (s != 1) return false;
  for (int64_t p : pads)
    if (p != 0) return false;
  return kernel.size() == 2;
}

// Largest im2col matrix (bytes) a batch-1 convolution may materialise in its scratch.
constexpr int64_t kIm2colMaxBytes = int64_t{16} << 20;

// A tensor-core NHWC convolution that leaves SMs idle (its configuration's tiles < the target's
// SM count: batch 1, late layers) runs as im2col into scratch + one cuBLASLt GEMM, whose
// heuristics split K across the idle SMs; CUTLASS's serial split-K measured slower
// (docs/perf_notes.md v2). Only with an activation cuBLASLt's epilogue has (none or ReLU) and an
// im2col matrix of at most kIm2colMaxBytes.
inline bool conv_im2col_gemm_applies(const Target& target, DType dtype, int64_t group, int64_t cin, int64_t cout,
                                     int64_t gemm_m, int64_t gemm_k, bool relu_or_none) {
  if (!target.conv_im2col_gemm || !target.conv_config.empty() || !relu_or_none) return false;
  if (!conv_tensor_core_applies(target, dtype, group, cin, cout)) return false;
  const ConvKernelConfig& c = pick_conv_config(target, gemm_m, cout);
  return conv_config_tiles(c, gemm_m, cout) < target.sm_count &&
         gemm_m * gemm_k * dtype_size(dtype) <= kIm2colMaxBytes;
}

}  // namespace aotc
