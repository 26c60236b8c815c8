// Micro-benchmark for docs/perf_notes.md v21: can a weight-streaming split-K GEMM for few rows beat
// cuBLASLt's kernels on ResNet-50's batch-1 GEMMs (M = 49-784 rows)? Both compute
// D[M, N] = relu(A[M, K] . W[N, K]^T + bias) in fp16 with fp32 accumulation (A and W row-major,
// W as aotc stores a 1x1 convolution's KRSC filter). Each is timed as a CUDA graph of 20 calls of
// one shape (per-call time, as inside a model's replay) and as the chain of all shapes below in
// ResNet-50's order; the split-K kernel's output is compared with cuBLASLt's.
//
// The split-K kernel: grid (N / 64, S, ceil(M / 64)); a block of 4 warps computes a 64 x 64 tile
// over K / S of K with WMMA (16x16x16, fp32 accumulators), adds it into an fp32 workspace with
// atomics, and the block that finishes last (a per-tile counter) applies bias and ReLU, writes the
// fp16 tile and clears the workspace tile and its counter for the next call: one kernel per GEMM,
// every weight element read from DRAM once per M block.
//
// Build and run (GPU machine): nvcc -O3 -arch=sm_90 -std=c++17 tools/device/skinny_gemm_bench.cu -lcublasLt -o /tmp/skinny && /tmp/skinny
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)
#define CL(x)                                                                        \
  do {                                                                               \
    cublasStatus_t s_ = (x);                                                         \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                               \
      std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

namespace {

using namespace nvcuda;
constexpr int kTile = 64;  // M and N of a block's tile
constexpr int kWarps = 4;  // each warp: 16 rows x 64 columns (4 accumulators)

// ws: fp32 [M, N] zeroed; counters: one int per (M block, N tile), zeroed. K % 16 == 0, N % 64 == 0.
__global__ void __launch_bounds__(kWarps * 32)
splitk_gemm(const __half* __restrict__ a, const __half* __restrict__ w, const __half* __restrict__ bias,
            __half* __restrict__ d, float* __restrict__ ws, int* __restrict__ counters, int m, int n, int k,
            int k_per_split) {
  __shared__ float tile[kTile][kTile + 4];
  __shared__ int last;
  const int warp = threadIdx.x / 32;
  const int n0 = blockIdx.x * kTile, m0 = blockIdx.z * kTile + warp * 16;
  const int k0 = blockIdx.y * k_per_split, k1 = min(k, k0 + k_per_split);
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
  for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[j], 0.0f);
  if (m0 < m) {
    // A has rows up to the next multiple of 64 (zeros): a warp's last 16 rows may pass M; their
    // results are never stored. (A kernel for the library would predicate those loads.)
    for (int kk = k0; kk < k1; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
      wmma::load_matrix_sync(fa, a + (size_t)m0 * k + kk, k);
      for (int j = 0; j < 4; ++j) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
        wmma::load_matrix_sync(fb, w + (size_t)(n0 + 16 * j) * k + kk, k);
        wmma::mma_sync(acc[j], fa, fb, acc[j]);
      }
    }
  }
  for (int j = 0; j < 4; ++j)
    wmma::store_matrix_sync(&tile[warp * 16][16 * j], acc[j], kTile + 4, wmma::mem_row_major);
  __syncthreads();
  const int mb = blockIdx.z * kTile;
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x) {
    const int r = i / kTile, c = i % kTile;
    if (mb + r < m) atomicAdd(&ws[(size_t)(mb + r) * n + n0 + c], tile[r][c]);
  }
  __threadfence();
  __syncthreads();
  int* counter = &counters[blockIdx.z * gridDim.x + blockIdx.x];
  if (threadIdx.x == 0) last = atomicAdd(counter, 1) == (int)gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x) {
    const int r = i / kTile, c = i % kTile;
    if (mb + r >= m) continue;
    float* p = &ws[(size_t)(mb + r) * n + n0 + c];
    const float v = __ldcg(p) + __half2float(bias[n0 + c]);
    d[(size_t)(mb + r) * n + n0 + c] = __float2half_rn(fmaxf(v, 0.0f));
    *p = 0.0f;
  }
  if (threadIdx.x == 0) *counter = 0;
}

struct Shape {
  const char* name;
  int m, n, k;
};

// ResNet-50 batch 1's GEMMs from layer 2 on, in model order (3x3s as their im2col GEMMs).
const Shape kShapes[] = {
    {"l2 conv1", 784, 128, 256},  {"l2 conv2", 784, 128, 1152},  {"l2 conv3", 784, 512, 128},
    {"l3 conv1", 196, 256, 512},  {"l3 conv2", 196, 256, 2304},  {"l3 conv3", 196, 1024, 256},
    {"l3 conv1'", 196, 256, 1024}, {"l4 conv1", 49, 512, 1024},   {"l4 conv2", 49, 512, 4608},
    {"l4 conv3", 49, 2048, 512},  {"l4 conv1'", 49, 512, 2048},
};

struct Problem {
  Shape s;
  __half *a, *w, *bias, *d_lt, *d_sk;
  float* ws;
  int* counters;
  int splits, k_per_split;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
};

void fill(__half* p, size_t count, float scale, unsigned seed) {
  std::vector<__half> h(count);
  srand(seed);
  for (auto& v : h) v = __float2half(scale * ((rand() % 2001) / 1000.0f - 1.0f));
  CK(cudaMemcpy(p, h.data(), count * sizeof(__half), cudaMemcpyHostToDevice));
}

void setup(Problem& p, cublasLtHandle_t lt, size_t lt_ws_bytes, int sms) {
  const Shape& s = p.s;
  const size_t m_pad = (size_t)(s.m + kTile - 1) / kTile * kTile;
  CK(cudaMalloc(&p.a, m_pad * s.k * 2));
  CK(cudaMemset(p.a, 0, m_pad * s.k * 2));
  CK(cudaMalloc(&p.w, (size_t)s.n * s.k * 2));
  CK(cudaMalloc(&p.bias, (size_t)s.n * 2));
  CK(cudaMalloc(&p.d_lt, (size_t)s.m * s.n * 2));
  CK(cudaMalloc(&p.d_sk, (size_t)s.m * s.n * 2));
  CK(cudaMalloc(&p.ws, (size_t)s.m * s.n * 4));
  CK(cudaMemset(p.ws, 0, (size_t)s.m * s.n * 4));
  const int mblocks = (s.m + kTile - 1) / kTile, ntiles = s.n / kTile;
  CK(cudaMalloc(&p.counters, (size_t)mblocks * ntiles * sizeof(int)));
  CK(cudaMemset(p.counters, 0, (size_t)mblocks * ntiles * sizeof(int)));
  fill(p.a, (size_t)s.m * s.k, 1.0f, 1 + s.k);
  fill(p.w, (size_t)s.n * s.k, 1.0f / std::sqrt((float)s.k), 2 + s.n);
  fill(p.bias, s.n, 0.1f, 3);
  // Splits: about two blocks per SM, each split at least 64 deep.
  p.splits = std::max(1, std::min(2 * sms / (mblocks * ntiles), s.k / 64));
  p.k_per_split = ((s.k / p.splits + 15) / 16) * 16;
  p.splits = (s.k + p.k_per_split - 1) / p.k_per_split;
  // cuBLASLt, column-major: D^T [N, M] = W [N x K] (as W^T col-major, op T) * A^T [K x M].
  CL(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CL(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CL(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
  CL(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  CL(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof p.bias));
  CL(cublasLtMatrixLayoutCreate(&p.la, CUDA_R_16F, s.k, s.n, s.k));
  CL(cublasLtMatrixLayoutCreate(&p.lb, CUDA_R_16F, s.k, s.m, s.k));
  CL(cublasLtMatrixLayoutCreate(&p.lc, CUDA_R_16F, s.n, s.m, s.n));
  cublasLtMatmulPreference_t pref;
  CL(cublasLtMatmulPreferenceCreate(&pref));
  CL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt_ws_bytes,
                                          sizeof lt_ws_bytes));
  cublasLtMatmulHeuristicResult_t r;
  int got = 0;
  CL(cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.la, p.lb, p.lc, p.lc, pref, 1, &r, &got));
  if (got < 1) {
    std::fprintf(stderr, "%s: no cuBLASLt algorithm\n", s.name);
    std::exit(1);
  }
  p.algo = r.algo;
  CL(cublasLtMatmulPreferenceDestroy(pref));
}

void run_lt(const Problem& p, cublasLtHandle_t lt, void* lt_ws, size_t lt_ws_bytes, cudaStream_t st) {
  const float one = 1.0f, zero = 0.0f;
  CL(cublasLtMatmul(lt, p.desc, &one, p.w, p.la, p.a, p.lb, &zero, p.d_lt, p.lc, p.d_lt, p.lc, &p.algo, lt_ws,
                    lt_ws_bytes, st));
}

void run_sk(const Problem& p, cudaStream_t st) {
  const dim3 grid(p.s.n / kTile, p.splits, (p.s.m + kTile - 1) / kTile);
  splitk_gemm<<<grid, kWarps * 32, 0, st>>>(p.a, p.w, p.bias, p.d_sk, p.ws, p.counters, p.s.m, p.s.n, p.s.k,
                                            p.k_per_split);
}

// Median per-call time (us) of `body` captured `reps` times into one graph, over `iters` replays.
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
  return t[t.size() / 2];
}

double max_rel_diff(const Problem& p) {
  const size_t count = (size_t)p.s.m * p.s.n;
  std::vector<__half> x(count), y(count);
  CK(cudaMemcpy(x.data(), p.d_lt, count * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(y.data(), p.d_sk, count * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (size_t i = 0; i < count; ++i) {
    const double a = __half2float(x[i]), b = __half2float(y[i]);
    num += (a - b) * (a - b);
    den += a * a;
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cublasLtHandle_t lt;
  CL(cublasLtCreate(&lt));
  const size_t lt_ws_bytes = 32u << 20;
  void* lt_ws;
  CK(cudaMalloc(&lt_ws, lt_ws_bytes));
  std::vector<Problem> ps;
  for (const Shape& s : kShapes) {
    Problem p{};
    p.s = s;
    setup(p, lt, lt_ws_bytes, sms);
    ps.push_back(p);
  }
  std::printf("| GEMM | M | N | K | splits | cuBLASLt us | split-K us | ratio | rel L2 vs cuBLASLt |\n|---|---|---|---|---|---|---|---|---|\n");
  double sum_lt = 0, sum_sk = 0;
  for (Problem& p : ps) {
    const float t_lt = graph_us(st, 20, 50, [&] { run_lt(p, lt, lt_ws, lt_ws_bytes, st); });
    const float t_sk = graph_us(st, 20, 50, [&] { run_sk(p, st); });
    CK(cudaStreamSynchronize(st));
    sum_lt += t_lt;
    sum_sk += t_sk;
    std::printf("| %s | %d | %d | %d | %d | %.2f | %.2f | %.2fx | %.1e |\n", p.s.name, p.s.m, p.s.n, p.s.k, p.splits, t_lt,
                t_sk, t_lt / t_sk, max_rel_diff(p));
  }
  const float chain_lt = graph_us(st, 1, 100, [&] {
    for (Problem& p : ps) run_lt(p, lt, lt_ws, lt_ws_bytes, st);
  });
  const float chain_sk = graph_us(st, 1, 100, [&] {
    for (Problem& p : ps) run_sk(p, st);
  });
  std::printf("sum of per-call times: cuBLASLt %.1f us, split-K %.1f us; the chain as one graph: cuBLASLt %.1f us, split-K %.1f us\n",
              sum_lt, sum_sk, chain_lt, chain_sk);
  return 0;
}
