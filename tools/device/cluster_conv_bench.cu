// Micro-benchmark for docs/perf_notes.md v25: ResNet-50's batch-1 3x3 convolutions (fp16, NHWC,
// bias + ReLU) as templates/conv_cluster_splitk.cuh's one-kernel cluster split-K implicit GEMM,
// against im2col + GEMM, what aotc ran before it (the im2col kernel + cuBLASLt's GEMM with the
// bias-ReLU epilogue, cuBLASLt's algorithm the fastest of its heuristic's first 8, as the
// library's create-time tuning picks). Per shape: every configuration of configs() (BN / BK /
// STAGES / KG) with every cluster size SPLIT the shape allows, each timed per call as a
// CUDA graph of 20 calls; then ResNet-50's 16 3x3 convolutions in model order as one graph, each
// side with its best configuration. Outputs are compared with the baseline's.
//
// Build (CPU machine, nvcc 13):  nvcc -O3 -std=c++17 -arch=sm_90 -Itemplates
//   tools/device/cluster_conv_bench.cu -lcublasLt -o .deps/cluster_conv_bench
// Run (GPU machine, carrying .deps):  .deps/cluster_conv_bench  (CCB_SHAPE=I: only shape I)
#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <cuda_fp16.h>

// common.cuh's conversion helper (the generated code includes common.cuh itself).
template <class To, class From>
__device__ __forceinline__ To aotc_cast(From v) { return static_cast<To>(v); }
template <>
__device__ __forceinline__ float aotc_cast<float, __half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ __half aotc_cast<__half, float>(float v) { return __float2half_rn(v); }

#include "conv_cluster_splitk.cuh"

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)
#define CL(x)                                                                                   \
  do {                                                                                          \
    cublasStatus_t s_ = (x);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
      std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_);           \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

namespace {

struct Relu {
  __device__ float operator()(float v) const { return v > 0.0f ? v : 0.0f; }
};

template <int H, int C, int K, int S, int BN, int BK, int ST, int KG, int SPLIT>
__global__ void __cluster_dims__(SPLIT, 1, 1) __launch_bounds__(aotc_ccs::threads(KG))
    cluster_conv(const __half* x, const __half* w, const __half* b, __half* y) {
  constexpr int OH = (H + 2 - 3) / S + 1;
  aotc_ccs::conv<__half, 1, H, H, C, 3, 3, OH, OH, S, S, 1, 1, 1, 1, K, BN, BK, ST, KG, SPLIT, true, false>(
      x, w, b, nullptr, y, Relu());
}

// The library's im2col (templates/im2col_nhwc.cu.in, fp16, 8 channels a thread).
__global__ void im2col(const __half* x, __half* a, int h, int c, int oh, int s) {
  const int cv = c / 8, rowv = 9 * cv;
  const long long total = (long long)oh * oh * rowv;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total; t += (long long)gridDim.x * blockDim.x) {
    const int i = (int)t, v = i % cv, kw = (i / cv) % 3, kh = (i / (cv * 3)) % 3, m = i / rowv;
    const int ow = m % oh, o = m / oh, ih = o * s - 1 + kh, iw = ow * s - 1 + kw;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (ih >= 0 && ih < h && iw >= 0 && iw < h) val = *reinterpret_cast<const uint4*>(x + ((size_t)ih * h + iw) * c + v * 8);
    reinterpret_cast<uint4*>(a)[i] = val;
  }
}

template <class F>
float graph_us(cudaStream_t st, int reps, int iters, F body) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int r = 0; r < reps; ++r) body();
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 5; ++i) CK(cudaGraphLaunch(ge, st));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int i = 0; i < iters; ++i) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.0f / reps);
  }
  std::sort(t.begin(), t.end());
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return t[t.size() / 2];
}

void fill(__half* p, size_t count, float scale, unsigned seed) {
  std::vector<__half> h(count);
  srand(seed);
  for (auto& v : h) v = __float2half(scale * ((rand() % 2001) / 1000.0f - 1.0f));
  CK(cudaMemcpy(p, h.data(), count * 2, cudaMemcpyHostToDevice));
}

double rel_l2(const __half* want, const __half* got, size_t count) {
  std::vector<__half> x(count), y(count);
  CK(cudaMemcpy(x.data(), want, count * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(y.data(), got, count * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (size_t i = 0; i < count; ++i) {
    const double a = __half2float(x[i]), b = __half2float(y[i]);
    num += (a - b) * (a - b);
    den += a * a;
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

struct Config {
  int bn, bk, stages, kg, split;
  std::function<void(const __half*, const __half*, const __half*, __half*, cudaStream_t)> launch;
};

template <int H, int C, int K, int S, int BN, int BK, int ST, int KG, int SPLIT>
void add_config(std::vector<Config>& out) {
  constexpr int OH = (H + 2 - 3) / S + 1, M = OH * OH, KSTEPS = 9 * C / BK;
  if constexpr (KSTEPS % SPLIT == 0 && K % BN == 0 && C % BK == 0 && KSTEPS / SPLIT >= ST - 1) {
    constexpr int smem = aotc_ccs::smem_bytes(BN, BK, ST, KG);
    CK(cudaFuncSetAttribute(cluster_conv<H, C, K, S, BN, BK, ST, KG, SPLIT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            smem));
    out.push_back({BN, BK, ST, KG, SPLIT, [](const __half* x, const __half* w, const __half* b, __half* y, cudaStream_t st) {
                     const dim3 grid(SPLIT, K / BN, (M + 63) / 64);
                     cluster_conv<H, C, K, S, BN, BK, ST, KG, SPLIT><<<grid, aotc_ccs::threads(KG), smem, st>>>(x, w, b, y);
                   }});
  }
}

template <int H, int C, int K, int S, int BN, int BK, int ST, int KG>
void add_splits(std::vector<Config>& v) {
  add_config<H, C, K, S, BN, BK, ST, KG, 1>(v);
  add_config<H, C, K, S, BN, BK, ST, KG, 2>(v);
  add_config<H, C, K, S, BN, BK, ST, KG, 3>(v);
  add_config<H, C, K, S, BN, BK, ST, KG, 4>(v);
  add_config<H, C, K, S, BN, BK, ST, KG, 6>(v);
  add_config<H, C, K, S, BN, BK, ST, KG, 8>(v);
}

template <int H, int C, int K, int S>
std::vector<Config> configs() {
  std::vector<Config> v;
  add_splits<H, C, K, S, 64, 32, 3, 1>(v);  // the first measurement's pipeline (v25)
  add_splits<H, C, K, S, 32, 64, 4, 1>(v);  // the best of the second
  add_splits<H, C, K, S, 64, 32, 3, 2>(v);
  add_splits<H, C, K, S, 64, 32, 4, 2>(v);
  add_splits<H, C, K, S, 32, 32, 4, 2>(v);
  add_splits<H, C, K, S, 64, 64, 3, 2>(v);
  add_splits<H, C, K, S, 32, 64, 3, 2>(v);
  add_splits<H, C, K, S, 32, 64, 4, 2>(v);
  return v;
}

struct Shape {
  const char* name;
  int h, c, k, s, count;  // count: how many ResNet-50 has
  std::vector<Config> cfgs;
};

struct Problem {
  Shape sh;
  int oh, m, kk;
  __half *x, *w, *b, *a, *y_lt, *y_cc;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t lw, la, ly;
  cublasLtMatmulAlgo_t algo;
  int best = -1;
};

}  // namespace

int main() {
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cublasLtHandle_t lt;
  CL(cublasLtCreate(&lt));
  const size_t ws_bytes = 32u << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  std::vector<Shape> shapes = {
      {"layer1 3x3 56x56x64", 56, 64, 64, 1, 3, configs<56, 64, 64, 1>()},
      {"layer2.0 3x3/2 56->28 x128", 56, 128, 128, 2, 1, configs<56, 128, 128, 2>()},
      {"layer2 3x3 28x28x128", 28, 128, 128, 1, 3, configs<28, 128, 128, 1>()},
      {"layer3.0 3x3/2 28->14 x256", 28, 256, 256, 2, 1, configs<28, 256, 256, 2>()},
      {"layer3 3x3 14x14x256", 14, 256, 256, 1, 5, configs<14, 256, 256, 1>()},
      {"layer4.0 3x3/2 14->7 x512", 14, 512, 512, 2, 1, configs<14, 512, 512, 2>()},
      {"layer4 3x3 7x7x512", 7, 512, 512, 1, 2, configs<7, 512, 512, 1>()},
  };
  // CCB_SHAPE=I keeps only shape I (0-6), e.g. for profiling one shape's configurations with ncu.
  if (const char* only = std::getenv("CCB_SHAPE")) {
    const int i = std::atoi(only);
    if (i < 0 || i >= (int)shapes.size()) {
      std::fprintf(stderr, "CCB_SHAPE=%s: 0 to %d\n", only, (int)shapes.size() - 1);
      return 2;
    }
    shapes = {shapes[i]};
  }
  std::vector<Problem> ps;
  unsigned seed = 1;
  for (Shape& sh : shapes) {
    Problem p{};
    p.sh = sh;
    p.oh = (sh.h + 2 - 3) / sh.s + 1;
    p.m = p.oh * p.oh;
    p.kk = 9 * sh.c;
    CK(cudaMalloc(&p.x, (size_t)sh.h * sh.h * sh.c * 2));
    CK(cudaMalloc(&p.w, (size_t)sh.k * p.kk * 2));
    CK(cudaMalloc(&p.b, (size_t)sh.k * 2));
    CK(cudaMalloc(&p.a, (size_t)p.m * p.kk * 2));
    CK(cudaMalloc(&p.y_lt, (size_t)p.m * sh.k * 2));
    CK(cudaMalloc(&p.y_cc, (size_t)p.m * sh.k * 2));
    fill(p.x, (size_t)sh.h * sh.h * sh.c, 1.0f, seed++);
    fill(p.w, (size_t)sh.k * p.kk, 1.0f / std::sqrt((float)p.kk), seed++);
    fill(p.b, sh.k, 0.2f, seed++);
    // cuBLASLt column-major: Y^T [K, M] = W (KK x K col-major, op T) x A^T (KK x M col-major).
    CL(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CL(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CL(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    CL(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    CL(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.b, sizeof p.b));
    CL(cublasLtMatrixLayoutCreate(&p.lw, CUDA_R_16F, p.kk, sh.k, p.kk));
    CL(cublasLtMatrixLayoutCreate(&p.la, CUDA_R_16F, p.kk, p.m, p.kk));
    CL(cublasLtMatrixLayoutCreate(&p.ly, CUDA_R_16F, sh.k, p.m, sh.k));
    cublasLtMatmulPreference_t pref;
    CL(cublasLtMatmulPreferenceCreate(&pref));
    CL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    cublasLtMatmulHeuristicResult_t r[8];
    int got = 0;
    CL(cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.lw, p.la, p.ly, p.ly, pref, 8, r, &got));
    CL(cublasLtMatmulPreferenceDestroy(pref));
    if (got < 1) {
      std::fprintf(stderr, "%s: no cuBLASLt algorithm\n", sh.name);
      return 1;
    }
    float best = 1e30f;
    for (int i = 0; i < got; ++i) {
      if (r[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const float one = 1.0f, zero = 0.0f;
      const float t = graph_us(st, 20, 30, [&] {
        CL(cublasLtMatmul(lt, p.desc, &one, p.w, p.lw, p.a, p.la, &zero, p.y_lt, p.ly, p.y_lt, p.ly, &r[i].algo, ws,
                          ws_bytes, st));
      });
      if (t < best) best = t, p.algo = r[i].algo;
    }
    ps.push_back(p);
  }
  auto run_baseline = [&](Problem& p) {
    const int total = p.m * p.kk / 8;
    im2col<<<(total + 255) / 256, 256, 0, st>>>(p.x, p.a, p.sh.h, p.sh.c, p.oh, p.sh.s);
    const float one = 1.0f, zero = 0.0f;
    CL(cublasLtMatmul(lt, p.desc, &one, p.w, p.lw, p.a, p.la, &zero, p.y_lt, p.ly, p.y_lt, p.ly, &p.algo, ws, ws_bytes,
                      st));
  };
  std::printf("| conv | M | K | KK | im2col + cuBLASLt us | best cluster config BN/BK/STAGES/KG/SPLIT | cluster us | ratio | rel L2 | all configs (BN/BK/STAGES/KG/SPLIT: us) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  double sum_base = 0, sum_cc = 0;
  for (Problem& p : ps) {
    const float t_base = graph_us(st, 20, 50, [&] { run_baseline(p); });
    std::string all;
    float best = 1e30f;
    for (size_t i = 0; i < p.sh.cfgs.size(); ++i) {
      const Config& c = p.sh.cfgs[i];
      const float t = graph_us(st, 20, 50, [&] { c.launch(p.x, p.w, p.b, p.y_cc, st); });
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%d/%d/%d/%d/%d: %.2f", all.empty() ? "" : ", ", c.bn, c.bk, c.stages, c.kg,
                    c.split, t);
      all += buf;
      if (t < best) best = t, p.best = (int)i;
    }
    // Outputs of the best configuration against the baseline's.
    run_baseline(p);
    p.sh.cfgs[p.best].launch(p.x, p.w, p.b, p.y_cc, st);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    const double err = rel_l2(p.y_lt, p.y_cc, (size_t)p.m * p.sh.k);
    sum_base += t_base * p.sh.count;
    sum_cc += best * p.sh.count;
    const Config& b = p.sh.cfgs[p.best];
    std::printf("| %s | %d | %d | %d | %.2f | %d/%d/%d/%d/%d | %.2f | %.2fx | %.1e | %s |\n", p.sh.name, p.m, p.sh.k,
                p.kk, t_base, b.bn, b.bk, b.stages, b.kg, b.split, best, t_base / best, err, all.c_str());
  }
  // ResNet-50's 16 3x3 convolutions in model order, one graph each way.
  const float chain_base = graph_us(st, 1, 100, [&] {
    for (Problem& p : ps)
      for (int i = 0; i < p.sh.count; ++i) run_baseline(p);
  });
  const float chain_cc = graph_us(st, 1, 100, [&] {
    for (Problem& p : ps)
      for (int i = 0; i < p.sh.count; ++i) p.sh.cfgs[p.best].launch(p.x, p.w, p.b, p.y_cc, st);
  });
  std::printf("ResNet-50 bs1's 16 3x3 convolutions: per-call sums im2col+cuBLASLt %.1f us, cluster %.1f us; "
              "as one graph in model order: %.1f us vs %.1f us\n",
              sum_base, sum_cc, chain_base, chain_cc);
  return 0;
}
