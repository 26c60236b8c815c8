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

// Largest tile first. The pick rule: the first configuration whose tile count fills one wave of
// the smallest target GPU (tiles >= sm_count); when none does (batch-1 late layers), the last.
inline const std::vector<ConvKernelConfig>& conv_kernel_configs() {
  static const std::vector<ConvKernelConfig> kConfigs = {
      {"tc128x128x32_w64x64_s3", 128, 128, 32, 64, 64, 32, 3, 80},
      {"tc128x64x32_w64x32_s4", 128, 64, 32, 64, 32, 32, 4, 80},
      {"tc64x64x32_w32x32_s4", 64, 64, 32, 32, 32, 32, 4, 80},
  };
  return kConfigs;
}

inline int64_t conv_config_tiles(const ConvKernelConfig& c, int64_t gemm_m, int64_t gemm_n) {
  return ((gemm_m + c.tb_m - 1) / c.tb_m) * ((gemm_n + c.tb_n - 1) / c.tb_n);
}

// Configurations whose N tile is wider than the output channels (rounded up to 64) waste that part
// of every tile (ResNet's 64-channel layers under a 128-wide tile): skipped.
inline const ConvKernelConfig& pick_conv_config(const Target& target, int64_t gemm_m, int64_t gemm_n) {
  const auto& configs = conv_kernel_configs();
  const int64_t n_cap = std::max<int64_t>(64, (gemm_n + 63) / 64 * 64);
  for (const ConvKernelConfig& c : configs)
    if (c.tb_n <= n_cap && conv_config_tiles(c, gemm_m, gemm_n) >= target.sm_count) return c;
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

// Whether a 2-D convolution with these properties has a tensor-core NHWC implementation.
inline bool conv_tensor_core_applies(const Target& target, DType dtype, int64_t group, int64_t cin,
                                     int64_t cout) {
  return target.has_sm80_tensor_cores() && (dtype == DType::kFloat16 || dtype == DType::kBFloat16) &&
         group == 1 && cin % kTensorCoreChannelAlign == 0 && cout % kTensorCoreChannelAlign == 0;
}

}  // namespace aotc
