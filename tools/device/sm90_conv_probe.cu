// Probe (not part of aotc): can a CUTLASS 3.x sm90 (wgmma + TMA) implicit-GEMM convolution run from
// a params struct that CUTLASS's own host code built at COMPILE time with marker pointers, the TMA
// descriptors being re-encoded at run time through the driver from the recorded encode arguments?
// (That is how a plain-C runtime could launch such kernels.) And is the kernel faster than the
// Sm80 kernels aotc uses on ResNet-50's 3x3 layers? Results: docs/perf_notes.md "v5".
// Build here:  S=<site-packages>/cutlass_library/source; nvcc -std=c++17 -O3 -I$S/include
//   -I$S/tools/util/include -DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1 --expt-relaxed-constexpr
//   -gencode arch=compute_90a,code=sm_90a tools/device/sm90_conv_probe.cu -o .proto/proto_test
// Run on the GPU machine: ./.proto/proto_test (carry .proto).
#include "cutlass/cutlass.h"
#include "cutlass/kernel_hardware_info.hpp"
#include "cute/tensor.hpp"
#include "cutlass/conv/convolution.h"
#include "cutlass/conv/convnd_problem_shape.hpp"
#include "cutlass/conv/dispatch_policy.hpp"
#include "cutlass/conv/collective/collective_builder.hpp"
#include "cutlass/conv/kernel/conv_universal.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include <cuda.h>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>
#include <cmath>

#define CFG(NS, TM, TN, TK)                                                                         \
namespace NS {                                                                                     \
using namespace cute;                                                                              \
using Element = cutlass::half_t;                                                                   \
using TileShape = Shape<_##TM, _##TN, Shape<_##TK>>;                                               \
using ClusterShape = Shape<_1, _1, _1>;                                                            \
using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<                                 \
    cutlass::epilogue::thread::ReLu, Element, float, Element, void, float>;                        \
using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<                             \
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,                  \
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,                                 \
    void, cutlass::layout::TensorNHWC, 8, Element, cutlass::layout::TensorNHWC, 8,                 \
    cutlass::epilogue::TmaWarpSpecialized, Fusion>::CollectiveOp;                                  \
using Main = typename cutlass::conv::collective::CollectiveBuilder<                                \
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop,          \
    Element, cutlass::layout::TensorNHWC, 8, Element, cutlass::layout::TensorNHWC, 8, float,       \
    TileShape, ClusterShape,                                                                       \
    cutlass::conv::collective::StageCountAutoCarveout<(int)sizeof(typename Epi::SharedStorage)>,   \
    cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;                           \
using Problem = cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop, 2>;               \
using Kernel = cutlass::conv::kernel::ConvUniversal<Problem, Main, Epi>;                           \
}                                                                                                  \
extern "C" __global__ void __launch_bounds__(NS::Kernel::MaxThreadsPerBlock, NS::Kernel::MinBlocksPerMultiprocessor) \
NS##_kernel(const __grid_constant__ typename NS::Kernel::Params params) {                          \
  extern __shared__ char smem[];                                                                   \
  NS::Kernel op;                                                                                   \
  op(params, smem);                                                                                \
}
CFG(c128x128, 128, 128, 64)
CFG(c128x64, 128, 64, 64)
CFG(c64x128, 64, 128, 64)

// ---- recording encoder (CUTLASS calls these directly: CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL) ----
struct Rec { int kind; CUtensorMapDataType dt; unsigned rank; void* addr; cuuint64_t dim[5], str[5];
             int lo[3], hi[3]; unsigned cpp, ppc, box[5], es[5]; int il, sw, l2, oob; };
static std::vector<Rec> g_rec;
static bool g_record = true;
typedef CUresult (*PFN_im2col)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*, const int*, const int*, cuuint32_t, cuuint32_t, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
typedef CUresult (*PFN_tiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static PFN_im2col real_im2col; static PFN_tiled real_tiled;
extern "C" CUresult cuTensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
    const cuuint64_t *dim, const cuuint64_t *strides, const int *lo, const int *hi, cuuint32_t cpp, cuuint32_t ppc,
    const cuuint32_t *es, CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  if (!g_record) return real_im2col(map, dt, rank, addr, dim, strides, lo, hi, cpp, ppc, es, il, sw, l2, oob);
  Rec r{}; r.kind = 1; r.dt = dt; r.rank = rank; r.addr = addr;
  for (unsigned i = 0; i < rank; ++i) { r.dim[i] = dim[i]; r.es[i] = es[i]; if (i + 1 < rank) r.str[i] = strides[i]; }
  for (unsigned i = 0; i + 2 < rank; ++i) { r.lo[i] = lo[i]; r.hi[i] = hi[i]; }
  r.cpp = cpp; r.ppc = ppc; r.il = il; r.sw = sw; r.l2 = l2; r.oob = oob;
  memset(map, 0, sizeof *map); ((unsigned*)map)[0] = 0xA07C0000u + (unsigned)g_rec.size(); g_rec.push_back(r);
  return CUDA_SUCCESS;
}
extern "C" CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *addr,
    const cuuint64_t *dim, const cuuint64_t *strides, const cuuint32_t *box, const cuuint32_t *es,
    CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  if (!g_record) return real_tiled(map, dt, rank, addr, dim, strides, box, es, il, sw, l2, oob);
  Rec r{}; r.kind = 2; r.dt = dt; r.rank = rank; r.addr = addr;
  for (unsigned i = 0; i < rank; ++i) { r.dim[i] = dim[i]; r.es[i] = es[i]; r.box[i] = box[i]; if (i + 1 < rank) r.str[i] = strides[i]; }
  r.il = il; r.sw = sw; r.l2 = l2; r.oob = oob;
  memset(map, 0, sizeof *map); ((unsigned*)map)[0] = 0xA07C0000u + (unsigned)g_rec.size(); g_rec.push_back(r);
  return CUDA_SUCCESS;
}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void ref_conv(const __half* x, const __half* w, const __half* b, float* y, int N, int H, int W, int C,
                         int K, int R, int S, int P, int Q, int pad, int st) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long total = (long long)N * P * Q * K; if (i >= total) return;
  int k = i % K; long long t = i / K; int q = t % Q; t /= Q; int p = t % P; int n = t / P;
  float acc = 0.f;
  for (int r = 0; r < R; ++r) for (int s = 0; s < S; ++s) {
    int h = p * st - pad + r, ww = q * st - pad + s; if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
    const __half* xp = x + (((long long)n * H + h) * W + ww) * C; const __half* wp = w + (((long long)k * R + r) * S + s) * C;
    for (int c = 0; c < C; ++c) acc += __half2float(xp[c]) * __half2float(wp[c]);
  }
  acc += __half2float(b[k]); y[i] = acc > 0.f ? acc : 0.f;
}
__global__ void fill(__half* p, long long n, unsigned seed, float scale) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i >= n) return;
  unsigned v = (unsigned)(i * 2654435761u) ^ seed; v ^= v >> 13; v *= 0x5bd1e995u; v ^= v >> 15;
  p[i] = __float2half(((v & 0xffff) / 65535.f - 0.5f) * scale);
}

template <class NS_Kernel, class Element>
void run_case(const char* cfg, void (*kernel)(typename NS_Kernel::Params), int N, int H, int W, int C, int K, int R, int S, int pad, int st) {
  using Kernel = NS_Kernel;
  using Problem = typename Kernel::ProblemShape;
  int P = (H + 2 * pad - R) / st + 1, Q = (W + 2 * pad - S) / st + 1;
  size_t nx = (size_t)N * H * W * C, nw = (size_t)K * R * S * C, ny = (size_t)N * P * Q * K;
  __half *x, *w, *b, *y; float* yr;
  CK(cudaMalloc(&x, nx * 2)); CK(cudaMalloc(&w, nw * 2)); CK(cudaMalloc(&b, K * 2)); CK(cudaMalloc(&y, ny * 2)); CK(cudaMalloc(&yr, ny * 4));
  fill<<<(nx + 255) / 256, 256>>>(x, nx, 1, 2.f); fill<<<(nw + 255) / 256, 256>>>(w, nw, 2, 0.2f); fill<<<(K + 255) / 256, 256>>>(b, K, 3, 1.f);
  CK(cudaMemset(y, 0xff, ny * 2));
  // record with markers
  g_record = true; g_rec.clear();
  Problem prob(cutlass::conv::Mode::kCrossCorrelation, {N, H, W, C}, {K, R, S, C}, {pad, pad}, {pad, pad}, {st, st}, {1, 1}, 1);
  typename Kernel::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm; args.problem_shape = prob;
  args.mainloop.ptr_A = (Element const*)0xA1000000000ull; args.mainloop.ptr_B = (Element const*)0xA2000000000ull;
  args.epilogue.thread.bias_ptr = (Element const*)0xA3000000000ull; args.epilogue.ptr_D = (Element*)0xA5000000000ull;
  typename Kernel::StrideD sd{}; cute::get<0,0>(sd) = K; cute::get<0,1>(sd) = (int64_t)Q * K; cute::get<0,2>(sd) = (int64_t)P * Q * K;
  args.epilogue.dD = sd; args.hw_info.sm_count = 132;
  if (!Kernel::can_implement(args)) { printf("%s: cannot implement\n", cfg); return; }
  auto params = Kernel::to_underlying_arguments(args, nullptr);
  dim3 grid = Kernel::get_grid_shape(params), block = Kernel::get_block_shape();
  int smem = Kernel::SharedStorageSize;
  std::vector<unsigned char> blob(sizeof params); memcpy(blob.data(), &params, sizeof params);
  // replay: the runtime's job
  g_record = false;
  auto real = [&](void* m) -> void* { unsigned long long v = (unsigned long long)m;
    if (v == 0xA1000000000ull) return x; if (v == 0xA2000000000ull) return w; if (v == 0xA5000000000ull) return y; printf("unknown marker %llx\n", v); exit(1); };
  int patched = 0;
  for (size_t off = 0; off + 8 <= blob.size(); off += 8) {
    unsigned long long v; memcpy(&v, &blob[off], 8);
    if (v == 0xA3000000000ull) { void* p = b; memcpy(&blob[off], &p, 8); ++patched; }
    if ((unsigned)v >= 0xA07C0000u && (unsigned)v < 0xA07C0000u + g_rec.size() && off % 64 == 0) {
      Rec& r = g_rec[(unsigned)v - 0xA07C0000u]; CUtensorMap m; CUresult e;
      if (r.kind == 1) e = real_im2col(&m, r.dt, r.rank, real(r.addr), r.dim, r.str, r.lo, r.hi, r.cpp, r.ppc, r.es, (CUtensorMapInterleave)r.il, (CUtensorMapSwizzle)r.sw, (CUtensorMapL2promotion)r.l2, (CUtensorMapFloatOOBfill)r.oob);
      else e = real_tiled(&m, r.dt, r.rank, real(r.addr), r.dim, r.str, r.box, r.es, (CUtensorMapInterleave)r.il, (CUtensorMapSwizzle)r.sw, (CUtensorMapL2promotion)r.l2, (CUtensorMapFloatOOBfill)r.oob);
      if (e != CUDA_SUCCESS) { printf("encode failed %d\n", (int)e); exit(1); }
      memcpy(&blob[off], &m, sizeof m); ++patched;
    }
  }
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  typename Kernel::Params* pp = (typename Kernel::Params*)blob.data();
  kernel<<<grid, block, smem>>>(*pp); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  ref_conv<<<(ny + 255) / 256, 256>>>(x, w, b, yr, N, H, W, C, K, R, S, P, Q, pad, st); CK(cudaDeviceSynchronize());
  std::vector<__half> hy(ny); std::vector<float> hr(ny);
  CK(cudaMemcpy(hy.data(), y, ny * 2, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(hr.data(), yr, ny * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0, maxe = 0; size_t bad = 0;
  for (size_t i = 0; i < ny; ++i) { double a = __half2float(hy[i]), r = hr[i]; if (!std::isfinite(a)) { ++bad; continue; }
    num += (a - r) * (a - r); den += r * r; maxe = fmax(maxe, fabs(a - r)); }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 5; ++i) kernel<<<grid, block, smem>>>(*pp);
  cudaEventRecord(e0); const int it = 50; for (int i = 0; i < it; ++i) kernel<<<grid, block, smem>>>(*pp); cudaEventRecord(e1);
  CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); ms /= it;
  double fl = 2.0 * N * P * Q * K * (double)C * R * S;
  printf("%-9s N%d H%d W%d C%d K%d %dx%d s%d: patched %d, grid %u, smem %d, relL2 %.2e maxabs %.2e nonfinite %zu, %.1f us, %.0f TFLOP/s\n",
         cfg, N, H, W, C, K, R, S, st, patched, grid.x * grid.y * grid.z, smem, sqrt(num / den), maxe, bad, ms * 1e3, fl / ms / 1e9);
  cudaFree(x); cudaFree(w); cudaFree(b); cudaFree(y); cudaFree(yr);
}

int main() {
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPoint("cuTensorMapEncodeIm2col", (void**)&real_im2col, cudaEnableDefault, &q));
  CK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", (void**)&real_tiled, cudaEnableDefault, &q));
  struct S { int N, H, W, C, K, R, S, pad, st; } shapes[] = {
    {32, 56, 56, 64, 64, 3, 3, 1, 1}, {32, 56, 56, 128, 128, 3, 3, 1, 2}, {32, 28, 28, 128, 128, 3, 3, 1, 1},
    {32, 28, 28, 256, 256, 3, 3, 1, 2}, {32, 14, 14, 256, 256, 3, 3, 1, 1}, {32, 14, 14, 512, 512, 3, 3, 1, 2},
    {32, 7, 7, 512, 512, 3, 3, 1, 1}, {1, 14, 14, 256, 256, 3, 3, 1, 1}, {3, 17, 13, 24, 40, 3, 3, 1, 1}, {2, 9, 11, 8, 16, 5, 5, 2, 2}};
  for (auto& s : shapes) {
    run_case<c128x128::Kernel, cutlass::half_t>("128x128", c128x128_kernel, s.N, s.H, s.W, s.C, s.K, s.R, s.S, s.pad, s.st);
    run_case<c128x64::Kernel, cutlass::half_t>("128x64", c128x64_kernel, s.N, s.H, s.W, s.C, s.K, s.R, s.S, s.pad, s.st);
    run_case<c64x128::Kernel, cutlass::half_t>("64x128", c64x128_kernel, s.N, s.H, s.W, s.C, s.K, s.R, s.S, s.pad, s.st);
  }
  printf("done\n");
}
