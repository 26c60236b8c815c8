// templates/conv_cluster_splitk.cuh: a 16-bit NHWC convolution as an implicit GEMM whose K loop is
// split over the CTAs of one thread-block cluster (sm_90+), for the convolutions that leave most
// SMs idle at batch 1 (docs/perf_notes.md v25; rendered by templates/conv_cluster_splitk_nhwc.cu.in,
// configuration from ir/ops/conv_configs.h). One kernel replaces im2col + cuBLASLt GEMM (+ its
// split-K reduction kernel): no im2col matrix, no workspace, no counters.
//
// GEMM view: D[M, K] = A[M, KK] x W[K, KK]^T with M = N*OH*OW output pixels, KK = KH*KW*C (KRSC
// filter rows), K output channels. A row m gathers its taps straight from the NHWC input (16-byte
// cp.async, zero-filled outside the image). Grid (SPLIT, K / BN, ceil(M / 64)), cluster (SPLIT, 1,
// 1): the SPLIT CTAs of a cluster compute the same 64 x BN output tile over SPLIT consecutive K
// ranges. Each CTA: KG groups of 4 warps (2 x 2 over the tile; the groups take alternate 16-wide
// slices of every K step), WMMA 16x16x16 with fp32 accumulators, 64 x BK and BN x BK tiles in a
// STAGES-deep cp.async pipeline. The partial tiles stay in shared memory;
// after a cluster barrier each CTA sums its share of the tile's rows over all SPLIT partials
// (distributed shared memory, rank order: deterministic), adds bias and residual, applies the
// activation and stores 16-bit outputs.
// Threads: threads(KG); dynamic shared memory: smem_bytes(BN, BK, STAGES, KG). Requirements (the
// lowering's applicability check, ir/ops/conv_configs.h): C % BK == 0 (a K step lies in one tap),
// K % BN == 0, (KH*KW*C / BK) % SPLIT == 0, SPLIT <= 16 (over 8: sm_90's non-portable cluster
// size, which the runtime allows on the function at create), every target sm_90 or newer, every
// tensor under 2^31 elements (int offsets).
#pragma once

#include <cooperative_groups.h>
#include <mma.h>

namespace aotc_ccs {

constexpr int kBM = 64;
// Threads of a configuration with KG warp groups: 4 warps (2 x 2 over the 64 x BN tile) per group,
// the groups taking alternate 16-wide slices of each K step (more warps per SM: one warp per
// scheduler ran latency-bound, ncu in docs/perf_notes.md v25).
__host__ __device__ constexpr int threads(int kg) { return 128 * kg; }

// Shared memory of one configuration: the pipeline's A and B stages (rows padded by 8 halves),
// reused after the main loop for KG fp32 64 x (BN + 4) tiles.
__host__ __device__ constexpr int smem_bytes(int bn, int bk, int stages, int kg) {
  return stages * (kBM + bn) * (bk + 8) * 2 > kg * kBM * (bn + 4) * 4 ? stages * (kBM + bn) * (bk + 8) * 2
                                                                      : kg * kBM * (bn + 4) * 4;
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  const int bytes = valid ? 16 : 0;  // 0: the 16 bytes are zero-filled, nothing is read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// A 16-bit global load the compiler cannot move above the cluster barrier's arrive: the arrive's
// release fence (MEMBAR.ALL.GPU in SASS) waits for every earlier load of the thread, so a load
// hoisted above it would add its latency there (ncu's SASS page, docs/perf_notes.md v47).
template <class T>
__device__ __forceinline__ float load_after_arrive(const T* p) {
  static_assert(sizeof(T) == 2, "16-bit element types");
  unsigned short bits;
  asm volatile("ld.global.nc.b16 %0, [%1];\n" : "=h"(bits) : "l"(p));
  T v;
  memcpy(&v, &bits, sizeof v);
  return aotc_cast<float>(v);
}

// One slab of a channel Concat / aotc.SubsampleConcat that this kernel copies besides its
// convolution (opt/slab_into_producer: one kernel launch less): the packed NHWC input
// src [N, IN_H, IN_W, C] read at pixels (n, p*STEP, q*STEP) of the output's [N, OUT_H, OUT_W]
// grid, written at column OFFSET of dst's rows of OUT_INNER elements. 16-byte vectors (C, OUT_INNER
// and OFFSET are multiples of 8 elements: the lowering's check), spread over every thread of the
// grid; loads before stores.
template <class T, int N_, int IN_H, int IN_W, int C, int STEP, int OUT_H, int OUT_W, int OUT_INNER, int OFFSET>
__device__ __forceinline__ void slab_copy(const T* __restrict__ src, T* __restrict__ dst) {
  static_assert(sizeof(T) == 2 && C % 8 == 0 && OUT_INNER % 8 == 0 && OFFSET % 8 == 0, "16-byte vectors");
  constexpr int kVecs = N_ * OUT_H * OUT_W * (C / 8), kUnroll = 4;
  const int threads = blockDim.x * gridDim.x * gridDim.y * gridDim.z;
  const int first = threadIdx.x + blockDim.x * (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  const uint4* in = reinterpret_cast<const uint4*>(src);
  uint4* out = reinterpret_cast<uint4*>(dst);
  for (int base = first; base < kVecs; base += threads * kUnroll) {
    uint4 v[kUnroll];
    int to[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * threads;
      to[u] = -1;
      if (i >= kVecs) continue;
      const int row = i / (C / 8), col = i % (C / 8);
      const int q = row % OUT_W, t = row / OUT_W;
      const int from = ((t / OUT_H * IN_H + t % OUT_H * STEP) * IN_W + q * STEP) * (C / 8) + col;
      v[u] = in[from];
      to[u] = row * (OUT_INNER / 8) + OFFSET / 8 + col;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (to[u] >= 0) out[to[u]] = v[u];
  }
}

// T: __half or __nv_bfloat16. Act: float -> float (the fused activation). Side: a void() functor
// run once the pipeline's first loads are issued (a slab copy, or nothing).
template <class T, int N_, int H_, int W_, int C_, int KH, int KW, int OH, int OW, int SH, int SW, int PH,
          int PW, int DH, int DW, int K_, int BN, int BK, int STAGES, int KG, int SPLIT, bool HAS_BIAS, bool HAS_RES,
          int YLD = K_, class Act, class Side>
__device__ __forceinline__ void conv(const T* __restrict__ x, const T* __restrict__ w,
                                     const T* __restrict__ bias, const T* __restrict__ res,
                                     T* __restrict__ y, Act act, Side side) {
  using namespace nvcuda;
  constexpr int M = N_ * OH * OW, KK = KH * KW * C_, KSTEPS = KK / BK, STEPS = KSTEPS / SPLIT;
  static_assert(C_ % BK == 0 && (BK == 32 || BK == 64), "a K step lies in one tap");
  static_assert(K_ % BN == 0 && (BN == 32 || BN == 64), "whole BN-wide column tiles");
  static_assert(KSTEPS % SPLIT == 0 && SPLIT >= 1 && SPLIT <= 16, "equal K ranges, at most sm_90's largest cluster");
  static_assert(STAGES >= 2, "a pipeline");
  static_assert(YLD >= K_ && YLD % 4 == 0, "output pixels at least K apart, 8-byte aligned stores");
  static_assert((KG == 1 || KG == 2 || KG == 4) && BK % (16 * KG) == 0, "each warp group takes whole 16-wide slices");
  constexpr int kThreads = threads(KG);
  constexpr int kLd = BK + 8;                 // A / B stage row stride (halves)
  constexpr int kCpr = BK / 8;                // 16-byte chunks per stage row
  constexpr int kRowsPerPass = kThreads / kCpr;
  // Rows a pass of all threads loads; with more threads than a B tile has chunks (512 threads, BN
  // 32), one pass and the threads past its rows idle.
  constexpr int kAPasses = kBM / kRowsPerPass, kBPasses = BN >= kRowsPerPass ? BN / kRowsPerPass : 1;
  static_assert(kBM % kRowsPerPass == 0 && (BN % kRowsPerPass == 0 || kRowsPerPass % BN == 0), "whole passes");
  constexpr int WN = BN / 2;                  // a warp's columns (2 x 2 warps)
  constexpr int FN = WN / 16;                 // its 16-wide fragments along N
  constexpr int kCLd = BN + 4;                // fp32 tile row stride
  extern __shared__ __align__(128) unsigned char aotc_ccs_smem[];
  T* as = reinterpret_cast<T*>(aotc_ccs_smem);         // [STAGES][kBM][kLd]
  T* bs = as + STAGES * kBM * kLd;                     // [STAGES][BN][kLd]
  float* cs = reinterpret_cast<float*>(aotc_ccs_smem);  // [kBM][kCLd], after the main loop

  const int tid = threadIdx.x, warp = (tid / 32) % 4, kgroup = tid / 128;
  const int rank = blockIdx.x;                          // the CTA's K range = its cluster rank
  const int n0 = blockIdx.y * BN, m0 = blockIdx.z * kBM;
  const int kstep0 = rank * STEPS;
  const int col8 = (tid % kCpr) * 8, row0 = tid / kCpr;

  auto load_b = [&](int stage, int kstep) {
    const int k0 = kstep * BK;
    T* bs_s = bs + stage * BN * kLd;
#pragma unroll
    for (int j = 0; j < kBPasses; ++j) {
      const int row = row0 + kRowsPerPass * j;
      if (BN < kRowsPerPass && row >= BN) break;
      cp_async16(bs_s + row * kLd + col8, w + (size_t)(n0 + row) * KK + k0 + col8, true);
    }
  };
  // The filter's first stages first (one group), then the input's.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s)
    if (s < STEPS) load_b(s, kstep0 + s);
  cp_async_commit();

  // This thread's A rows (row0 + kRowsPerPass * j of the tile): image, top-left input pixel.
  int a_base[kAPasses], a_ih[kAPasses], a_iw[kAPasses];
  bool a_valid[kAPasses];
#pragma unroll
  for (int j = 0; j < kAPasses; ++j) {
    const int m = m0 + row0 + kRowsPerPass * j;
    a_valid[j] = m < M;
    const int mm = a_valid[j] ? m : 0;
    const int ow = mm % OW, oh = (mm / OW) % OH, n = mm / (OW * OH);
    a_base[j] = n * H_ * W_ * C_;
    a_ih[j] = oh * SH - PH;
    a_iw[j] = ow * SW - PW;
  }
  auto load_a = [&](int stage, int kstep) {
    const int k0 = kstep * BK, tap = k0 / C_, c0 = k0 % C_;
    const int r = tap / KW, s = tap % KW;
    T* as_s = as + stage * kBM * kLd;
#pragma unroll
    for (int j = 0; j < kAPasses; ++j) {
      const int ih = a_ih[j] + r * DH, iw = a_iw[j] + s * DW;
      const bool valid = a_valid[j] && ih >= 0 && ih < H_ && iw >= 0 && iw < W_;
      const T* src = valid ? x + a_base[j] + (ih * W_ + iw) * C_ + c0 + col8 : x;
      cp_async16(as_s + (row0 + kRowsPerPass * j) * kLd + col8, src, valid);
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][FN];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int wm = (warp / 2) * 32, wn = (warp % 2) * WN;
  // Groups: [B of stages 0..STAGES-2], [A of stage 0], ..., [A of stage STAGES-2], then one
  // [A + B] group per later stage: waiting for all but the newest STAGES-2 groups before step i
  // always covers step i's A and B.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < STEPS) load_a(s, kstep0 + s);
    cp_async_commit();
  }
  side();  // independent work (slab_copy below) while the pipeline's first stages are in flight
  for (int i = 0; i < STEPS; ++i) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (i + STAGES - 1 < STEPS) {
      load_a((i + STAGES - 1) % STAGES, kstep0 + i + STAGES - 1);
      load_b((i + STAGES - 1) % STAGES, kstep0 + i + STAGES - 1);
    }
    cp_async_commit();
    const T* as_s = as + (i % STAGES) * kBM * kLd;
    const T* bs_s = bs + (i % STAGES) * BN * kLd;
#pragma unroll
    for (int slice = 0; slice < BK / (16 * KG); ++slice) {  // a constant trip count: unrolled
      const int kk = 16 * (slice * KG + kgroup);
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[FN];
#pragma unroll
      for (int a = 0; a < 2; ++a) wmma::load_matrix_sync(fa[a], as_s + (wm + 16 * a) * kLd + kk, kLd);
#pragma unroll
      for (int b = 0; b < FN; ++b) wmma::load_matrix_sync(fb[b], bs_s + (wn + 16 * b) * kLd + kk, kLd);
#pragma unroll
      for (int a = 0; a < 2; ++a)
#pragma unroll
        for (int b = 0; b < FN; ++b) wmma::mma_sync(acc[a][b], fa[a], fb[b], acc[a][b]);
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the pipeline's shared memory becomes the fp32 tiles
  // Group g's partial sums into tile g (all KG of them are summed in the epilogue below).
#pragma unroll
  for (int a = 0; a < 2; ++a)
#pragma unroll
    for (int b = 0; b < FN; ++b)
      wmma::store_matrix_sync(cs + kgroup * kBM * kCLd + (wm + 16 * a) * kCLd + wn + 16 * b, acc[a][b], kCLd,
                              wmma::mem_row_major);

  // Rows [r0, r1) of the tile are this CTA's to finish: all of them without a split. A thread
  // finishes at most kIters quads (four consecutive outputs of a row).
  constexpr int kRowsPer = (kBM + SPLIT - 1) / SPLIT;
  constexpr int kQuads = BN / 4;
  constexpr int kIters = (kRowsPer * kQuads + kThreads - 1) / kThreads;
  const int r0 = rank * kRowsPer, r1 = r0 + kRowsPer < kBM ? r0 + kRowsPer : kBM;
  // Arrive at the cluster barrier (release: this CTA's tiles become visible to the others), read
  // the bias and residual of this thread's quads while the other CTAs finish their K ranges, then
  // wait (acquire). The global loads' latency hides behind the barrier (ncu, docs/perf_notes.md
  // v47) instead of following it.
  if (SPLIT > 1) {
    asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
  } else {
    __syncthreads();
  }
  float pre_bias[kIters][4], pre_res[kIters][4];
  int quad_row[kIters], quad_col[kIters];
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int e = tid + it * kThreads;
    quad_row[it] = e < (r1 - r0) * kQuads ? r0 + e / kQuads : -1;
    quad_col[it] = (e % kQuads) * 4;
    if (quad_row[it] >= 0 && m0 + quad_row[it] >= M) quad_row[it] = -1;
#pragma unroll
    for (int t = 0; t < 4; ++t) pre_bias[it][t] = pre_res[it][t] = 0.0f;
    if (quad_row[it] < 0) continue;
    const size_t o = (size_t)(m0 + quad_row[it]) * K_ + n0 + quad_col[it];  // the residual is packed
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      if (HAS_BIAS) pre_bias[it][t] = load_after_arrive(bias + n0 + quad_col[it] + t);
      if (HAS_RES) pre_res[it][t] = load_after_arrive(res + o + t);
    }
  }
  if (SPLIT > 1) asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
  namespace cg = cooperative_groups;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    if (quad_row[it] < 0) continue;
    const int row = quad_row[it], col = quad_col[it];
    // Rank order, and within a rank group order: the same sum on every run.
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int q = 0; q < SPLIT; ++q) {
      const float* tiles = SPLIT > 1 ? cg::this_cluster().map_shared_rank(cs, q) : cs;
      float4 part = *reinterpret_cast<const float4*>(tiles + row * kCLd + col);
#pragma unroll
      for (int g = 1; g < KG; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(tiles + g * kBM * kCLd + row * kCLd + col);
        part.x += v.x, part.y += v.y, part.z += v.z, part.w += v.w;
      }
      sum.x += part.x, sum.y += part.y, sum.z += part.z, sum.w += part.w;
    }
    const float v4[4] = {sum.x, sum.y, sum.z, sum.w};
    unsigned bits[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      float v = v4[t];
      if (HAS_BIAS) v += pre_bias[it][t];
      if (HAS_RES) v += pre_res[it][t];
      const T h = aotc_cast<T>(act(v));
      unsigned short b;
      memcpy(&b, &h, sizeof b);
      bits[t] = b;
    }
    // One 8-byte store (a struct of four 16-bit members, or a uint2, compiled to 2- or 4-byte ones).
    asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(y + (size_t)(m0 + row) * YLD + n0 + col),
                 "r"(bits[0] | bits[1] << 16), "r"(bits[2] | bits[3] << 16)
                 : "memory");
  }
  // No CTA leaves while another reads its tiles. Relaxed: the remote reads above have completed
  // (their values were used) and nothing of this CTA's needs to be visible to the others, so no
  // fence waits for the output stores (ncu: "membar" stalls, v47).
  if (SPLIT > 1) {
    asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory");
    asm volatile("barrier.cluster.wait;\n" ::: "memory");
  }
}

}  // namespace aotc_ccs
