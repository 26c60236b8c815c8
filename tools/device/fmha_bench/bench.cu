// tools/device/fmha_bench/bench.cu: times CUTLASS's Hopper FMHA forward kernel (the sm_90a
// TMA + wgmma kernel of CUTLASS's examples/88_hopper_fmha, its FmhaBuilder) on the attention
// shapes of issue 7's transformers, before aotc lowers attention onto it (docs/perf_notes.md v61).
// Q/K/V are read in place from one packed [B*S, 3*H*D] QKV matrix (the layout the QKV GEMM writes),
// O is written as [B, S, H, D]. Each case is checked against a CPU reference on a few (batch, head)
// pairs (fp32 softmax; max |diff| printed) and timed as CUDA-graph replays of 20 launches
// (median of 15 replays, per launch).
// Build (here, no GPU needed): see gen.sh.  Run: ./fmha_bench.bin
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include "cutlass/cutlass.h"
#include "cutlass/kernel_hardware_info.h"
#include "cute/tensor.hpp"
#include "device/device_universal.hpp"
#include "collective/fmha_fusion.hpp"
#include "kernel/fmha_kernel_builder.hpp"

using namespace cute;
using Element = cutlass::half_t;
using QkvStride = cute::tuple<int, _1, cute::tuple<int, int>>;  // (row, D, (B, H))
using Problem = cute::tuple<int, int, int, int, int>;         // B H Q K D

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)

template <class Tile, class Policy, class Fusion>
void run_case(const char* name, int B, int H, int S, int D, bool causal) {
  using Op = cutlass::device::Universal<typename cutlass::fmha::kernel::FmhaBuilder<
      Element, float, float, Tile, QkvStride, QkvStride, QkvStride, Fusion, Policy>::Kernel>;
  const int ld = 3 * H * D;
  std::vector<Element> qkv((size_t)B * S * ld);
  srand(1);
  for (auto& v : qkv) v = Element((rand() % 2001 - 1000) / 1000.0f);
  Element *d_qkv = nullptr, *d_o = nullptr;
  float* d_lse = nullptr;
  CK(cudaMalloc(&d_qkv, qkv.size() * sizeof(Element)));
  CK(cudaMalloc(&d_o, (size_t)B * S * H * D * sizeof(Element)));
  CK(cudaMalloc(&d_lse, (size_t)B * H * S * sizeof(float)));
  CK(cudaMemcpy(d_qkv, qkv.data(), qkv.size() * sizeof(Element), cudaMemcpyHostToDevice));
  QkvStride sq = make_stride(ld, _1{}, make_stride(S * ld, D));
  QkvStride so = make_stride(H * D, _1{}, make_stride(S * H * D, D));
  cute::tuple<_1, cute::tuple<int, int>> slse = make_stride(_1{}, make_stride(H * S, S));
  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
  typename Op::Arguments args{Problem{B, H, S, S, D},
                              {d_qkv, sq, d_qkv + H * D, sq, d_qkv + 2 * H * D, sq},
                              {d_o, so, d_lse, slse},
                              hw};
  Op op;
  if (op.can_implement(args) != cutlass::Status::kSuccess) { printf("%-28s cannot implement\n", name); return; }
  size_t ws = Op::get_workspace_size(args);
  void* d_ws = nullptr;
  if (ws) CK(cudaMalloc(&d_ws, ws));
  if (op.initialize(args, d_ws) != cutlass::Status::kSuccess) { printf("%-28s initialize failed\n", name); return; }
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  if (op.run(st) != cutlass::Status::kSuccess) { printf("%-28s run failed\n", name); return; }
  CK(cudaStreamSynchronize(st));
  // Check against a CPU reference on a few (b, h).
  std::vector<Element> o((size_t)B * S * H * D);
  CK(cudaMemcpy(o.data(), d_o, o.size() * sizeof(Element), cudaMemcpyDeviceToHost));
  double maxdiff = 0;
  const float scale = 1.0f / sqrtf((float)D);
  const int pairs[3][2] = {{0, 0}, {B - 1, H - 1}, {B / 2, H / 2}};
  for (auto& p : pairs) {
    const int b = p[0], h = p[1];
    for (int i = 0; i < S; ++i) {
      std::vector<double> s(S);
      double mx = -1e300;
      for (int j = 0; j < S; ++j) {
        double acc = 0;
        for (int d = 0; d < D; ++d)
          acc += (double)(float)qkv[(size_t)(b * S + i) * ld + h * D + d] * (double)(float)qkv[(size_t)(b * S + j) * ld + H * D + h * D + d];
        s[j] = (causal && j > i) ? -1e300 : acc * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int j = 0; j < S; ++j) { s[j] = s[j] <= -1e299 ? 0 : exp(s[j] - mx); sum += s[j]; }
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j < S; ++j) acc += s[j] * (double)(float)qkv[(size_t)(b * S + j) * ld + 2 * H * D + h * D + d];
        const double ref = acc / sum, got = (float)o[((size_t)(b * S + i) * H + h) * D + d];
        maxdiff = std::max(maxdiff, fabs(ref - got));
      }
    }
  }
  // Timing: graphs of 20 launches.
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 20; ++i) op.run(st);
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int r = 0; r < 17; ++r) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 2) ts.push_back(ms * 1000.f / 20.f);
  }
  std::sort(ts.begin(), ts.end());
  const double us = ts[ts.size() / 2];
  const double flops = 4.0 * B * H * (double)S * S * D * (causal ? 0.5 : 1.0);
  printf("%-34s B %2d H %2d S %4d D %3d: %8.2f us  %6.1f TFLOP/s  max|diff| %.2e  smem %d\n", name, B, H, S, D, us,
         flops / us * 1e-6, maxdiff, (int)Op::Kernel::SharedStorageSize);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaFree(d_qkv);
  cudaFree(d_o);
  cudaFree(d_lse);
  if (d_ws) cudaFree(d_ws);
  cudaStreamDestroy(st);
}

int main() {
  using namespace cutlass::fmha::collective;
  using Tma = cutlass::gemm::KernelTma;
  using Coop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using T64 = Shape<_64, _128, _64>;
  using T128 = Shape<_128, _128, _64>;
  // BERT / GPT-2 (S 128), ViT-B/16 (S 197), batch 32 and 1.
  run_case<T64, Tma, DefaultFusion>("tma 64x128 default", 32, 12, 128, 64, false);
  run_case<T64, Tma, ResidualFusion>("tma 64x128 residual", 32, 12, 197, 64, false);
  run_case<T64, Tma, CausalFusion>("tma 64x128 causal", 32, 12, 128, 64, true);
  run_case<T128, Coop, DefaultFusion>("ws-coop 128x128 default", 32, 12, 128, 64, false);
  run_case<T128, Coop, ResidualFusion>("ws-coop 128x128 residual", 32, 12, 197, 64, false);
  run_case<T128, Coop, CausalFusion>("ws-coop 128x128 causal", 32, 12, 128, 64, true);
  run_case<T64, Tma, DefaultFusion>("tma 64x128 default", 1, 12, 128, 64, false);
  run_case<T64, Tma, ResidualFusion>("tma 64x128 residual", 1, 12, 197, 64, false);
  run_case<T64, Tma, CausalFusion>("tma 64x128 causal", 1, 12, 128, 64, true);
  return 0;
}
