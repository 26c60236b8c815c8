// The standalone sm_90a convolution bench of docs/perf_notes.md v39 (build: make.sh): replays the
// records of templates/host_params.cuh (header + params bytes, tensor maps) with the real driver,
// checks each variant against a direct convolution (fp32 sums) and times it with CUDA events.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <fstream>
#include <sstream>
#include <cmath>
#include <algorithm>

#include "variants.inc"
#include "variants_list.inc"

struct Tmap { int arg; unsigned off; int im2col, dtype, rank; unsigned long long dims[5], strides[4]; unsigned box[5]; int lower[3], upper[3]; unsigned ch, px; unsigned es[5]; int il, sw, l2, oob; };
struct Rec { int status; unsigned bytes, grid[3], block[3], smem, cluster; std::vector<std::pair<int,unsigned>> slots; std::vector<Tmap> tmaps; std::vector<unsigned char> params; };

static std::vector<Rec> read_records(const char* path) {
  std::ifstream f(path); std::vector<Rec> out; std::string line; Rec r;
  while (std::getline(f, line)) {
    std::istringstream s(line); std::string tag; s >> tag;
    if (tag == "kernel") { r = Rec(); std::string name; int idx; s >> name >> idx >> r.status; }
    else if (tag == "tmap") { Tmap t; s >> t.arg >> t.off >> t.im2col >> t.dtype >> t.rank; for (auto& d : t.dims) s >> d; for (auto& d : t.strides) s >> d; for (auto& d : t.box) s >> d; for (auto& d : t.lower) s >> d; for (auto& d : t.upper) s >> d; s >> t.ch >> t.px; for (auto& d : t.es) s >> d; s >> t.il >> t.sw >> t.l2 >> t.oob; r.tmaps.push_back(t); }
    else if (tag == "bytes") {
      std::string hex; s >> hex; std::vector<unsigned char> all(hex.size() / 2);
      for (size_t i = 0; i < all.size(); ++i) all[i] = (unsigned char)strtoul(hex.substr(2 * i, 2).c_str(), nullptr, 16);
      unsigned h[20]; memcpy(h, all.data(), sizeof h);  // templates/library_params.cuh's header
      r.bytes = h[1]; for (int i = 0; i < 3; ++i) { r.grid[i] = h[2 + i]; r.block[i] = h[5 + i]; }
      r.smem = h[8]; r.cluster = h[19];
      for (unsigned a = 0; a < h[9] && a < 8; ++a) if (h[10 + a] != 0xffffffffu) r.slots.push_back({(int)a, h[10 + a]});
      r.params.assign(all.begin() + 256, all.end());
    }
    else if (tag == "end") out.push_back(r);
  }
  return out;
}

__global__ void ref_conv(const half* x, const half* w, const half* bias, const half* res, float* y, int N, int H, int W, int C, int K, int R, int S, int P, int Q, int ph, int pw, int sh, int sw) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long total = (long long)N * P * Q * K;
  if (i >= total) return;
  int k = i % K; long long t = i / K; int q = t % Q; t /= Q; int p = t % P; int n = t / P;
  float acc = 0.f;
  for (int r = 0; r < R; ++r) for (int s = 0; s < S; ++s) {
    int h = p * sh - ph + r, ww = q * sw - pw + s;
    if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
    const half* xp = x + (((long long)n * H + h) * W + ww) * C;
    const half* wp = w + (((long long)k * R + r) * S + s) * C;
    for (int c = 0; c < C; ++c) acc += __half2float(xp[c]) * __half2float(wp[c]);
  }
  acc += __half2float(bias[k]);
  if (res) acc += __half2float(res[i]);
  y[i] = acc > 0.f ? acc : 0.f;
}

__global__ void fill(half* p, long long n, unsigned seed, float scale) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
  p[i] = __float2half(((h & 0xffff) / 65535.f - 0.5f) * scale);
}

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* m; cuGetErrorName(r_, &m); printf("CU error %s at %s:%d\n", m, __FILE__, __LINE__); exit(1);} } while (0)
#define RK(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(r_), __FILE__, __LINE__); exit(1);} } while (0)

int main(int argc, char** argv) {
  // problems: N H W C K R S pad stride has_res (same order as shapes.txt)
  std::vector<std::vector<long long>> probs;
  { std::ifstream f(argv[1]); std::string name; long long ptrs, n; while (f >> name >> ptrs >> n) { std::vector<long long> v(n); for (auto& x : v) f >> x; probs.push_back(v); } }
  const char** names = kNames;
  const void* const* fns = kFns;
  std::vector<Rec> recs[kVariants];
  for (int v = 0; v < kVariants; ++v) { recs[v] = read_records(argv[2 + v]); }
  for (int v = 0; v < kVariants; ++v) {
    cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, fns[v]);
    int smem = recs[v].empty() ? 0 : recs[v][0].smem;
    cudaFuncSetAttribute(fns[v], cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    int occ = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fns[v], recs[v].empty() ? 256 : recs[v][0].block[0], smem);
    printf("%s: regs %d smem %d blocks/SM %d\n", names[v], fa.numRegs, smem, occ);
  }
  RK(cudaFree(0));
  // BENCH_COLD=1: also time each variant with L2 flushed before every launch.
  constexpr size_t kFlushBytes = size_t(256) << 20;
  void* flush = nullptr;
  if (getenv("BENCH_COLD") && atoi(getenv("BENCH_COLD"))) RK(cudaMalloc(&flush, kFlushBytes));
  for (size_t pi = 0; pi < probs.size(); ++pi) {
    auto& a = probs[pi];
    int N = a[0], H = a[1], W = a[2], C = a[3], K = a[4], R = a[5], S = a[6], ph = a[7], pw = a[8], sh = a[11], sw = a[12];
    int P = (H + a[7] + a[9] - R) / sh + 1, Q = (W + a[8] + a[10] - S) / sw + 1;
    bool has_res = a[16];
    long long nx = (long long)N * H * W * C, nw = (long long)K * R * S * C, ny = (long long)N * P * Q * K;
    half *x, *w, *b, *res, *y; float* yr;
    RK(cudaMalloc(&x, nx * 2)); RK(cudaMalloc(&w, nw * 2)); RK(cudaMalloc(&b, K * 2)); RK(cudaMalloc(&res, ny * 2)); RK(cudaMalloc(&y, ny * 2)); RK(cudaMalloc(&yr, ny * 4));
    fill<<<(nx + 255) / 256, 256>>>(x, nx, 1, 2.f); fill<<<(nw + 255) / 256, 256>>>(w, nw, 2, 0.2f); fill<<<(K + 255) / 256, 256>>>(b, K, 3, 1.f); fill<<<(ny + 255) / 256, 256>>>(res, ny, 4, 1.f);
    ref_conv<<<(ny + 255) / 256, 256>>>(x, w, b, has_res ? res : nullptr, yr, N, H, W, C, K, R, S, P, Q, ph, pw, sh, sw);
    RK(cudaDeviceSynchronize());
    std::vector<float> ref(ny); RK(cudaMemcpy(ref.data(), yr, ny * 4, cudaMemcpyDeviceToHost));
    double flops = 2.0 * ny * R * S * C;
    printf("N%d %dx%dx%d -> K%d %dx%d s%d res%d (%.2f GFLOP):", N, H, W, C, K, R, S, sh, (int)has_res, flops * 1e-9);
    for (int v = 0; v < kVariants; ++v) {
      Rec& r = recs[v][pi];
      if (r.status != 0) { printf("  %s status %d", names[v], r.status); continue; }
      unsigned long long ptrs[5] = {(unsigned long long)x, (unsigned long long)w, (unsigned long long)b, (unsigned long long)res, (unsigned long long)y};
      std::vector<unsigned char> prm = r.params;
      for (auto& s : r.slots) memcpy(prm.data() + s.second, &ptrs[s.first], 8);
      for (auto& t : r.tmaps) {
        alignas(128) CUtensorMap m;
        cuuint64_t dims[5], strides[4]; cuuint32_t box[5], es[5];
        for (int i = 0; i < 5; ++i) { dims[i] = t.dims[i]; box[i] = t.box[i]; es[i] = t.es[i]; }
        for (int i = 0; i < 4; ++i) strides[i] = t.strides[i];
        void* addr = (void*)ptrs[t.arg];
        if (t.im2col) CK(cuTensorMapEncodeIm2col(&m, (CUtensorMapDataType)t.dtype, t.rank, addr, dims, strides, t.lower, t.upper, t.ch, t.px, es, (CUtensorMapInterleave)t.il, (CUtensorMapSwizzle)t.sw, (CUtensorMapL2promotion)t.l2, (CUtensorMapFloatOOBfill)t.oob));
        else CK(cuTensorMapEncodeTiled(&m, (CUtensorMapDataType)t.dtype, t.rank, addr, dims, strides, box, es, (CUtensorMapInterleave)t.il, (CUtensorMapSwizzle)t.sw, (CUtensorMapL2promotion)t.l2, (CUtensorMapFloatOOBfill)t.oob));
        memcpy(prm.data() + t.off, &m, 128);
      }
      RK(cudaFuncSetAttribute(fns[v], cudaFuncAttributeMaxDynamicSharedMemorySize, r.smem));
      void* args[1] = {prm.data()};
      RK(cudaMemset(y, 0, ny * 2));
      cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute attr[1];
      cfg.gridDim = dim3(r.grid[0], r.grid[1], r.grid[2]); cfg.blockDim = dim3(r.block[0], r.block[1], r.block[2]); cfg.dynamicSmemBytes = r.smem; cfg.stream = 0;
      attr[0].id = cudaLaunchAttributeClusterDimension; attr[0].val.clusterDim.x = kClusterM[v]; attr[0].val.clusterDim.y = kClusterN[v]; attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr; cfg.numAttrs = 1;
      auto launch = [&]() { return cudaLaunchKernelExC(&cfg, fns[v], args); };
      RK(launch());
      RK(cudaDeviceSynchronize());
      std::vector<half> out(ny); RK(cudaMemcpy(out.data(), y, ny * 2, cudaMemcpyDeviceToHost));
      double num = 0, den = 0;
      for (long long i = 0; i < ny; ++i) { double d = __half2float(out[i]) - ref[i]; num += d * d; den += (double)ref[i] * ref[i]; }
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
      for (int i = 0; i < 20; ++i) launch();
      int reps = 200;
      cudaEventRecord(e0);
      for (int i = 0; i < reps; ++i) launch();
      cudaEventRecord(e1); RK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1); ms /= reps;
      printf("\n   %s grid %u rel %.1e %.1f us %.0f TF/s", names[v], r.grid[0] * r.grid[1] * r.grid[2], sqrt(num / den), ms * 1e3, flops / (ms * 1e-3) * 1e-12);
      if (flush) {
        // Cold: L2 overwritten before each launch (as in a model, where the weights come from
        // DRAM); each launch timed alone between events, median of 50.
        std::vector<float> t(50);
        int round = 0;
        for (auto& ti : t) {
          RK(cudaMemsetAsync(flush, ++round & 0xff, kFlushBytes));
          cudaEventRecord(e0); launch(); cudaEventRecord(e1); RK(cudaEventSynchronize(e1));
          cudaEventElapsedTime(&ti, e0, e1);
        }
        std::sort(t.begin(), t.end());
        printf("; cold %.1f us", t[25] * 1e3);
      }
    }
    printf("\n");
    cudaFree(x); cudaFree(w); cudaFree(b); cudaFree(res); cudaFree(y); cudaFree(yr);
  }
  return 0;
}
