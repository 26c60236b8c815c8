// cuBLASLt on ResNet-50's bottleneck conv3 GEMMs (1x1 convolution + requantisation + residual + ReLU),
// to decide whether cuBLASLt's int8 kernels are a candidate for aotc's int8 pointwise convolutions
// (issue 8; docs/perf_notes.md v64). Host code only: nvcc -O2 bench.cu -lcublasLt -o bench.
// Prints, per layer shape and variant: whether cuBLASLt takes it, the heuristic's first algorithm's
// time and the best of its top 16 (us, mean of 50 launches after 5 warm-up), and the bytes floor.
//   out = act(alpha[n] * (x[m,:] . w[n,:]) + beta * res[m,n] + bias[n])
// Layout (aotc's): x [M, K] row-major (NHWC pixels), w [N, K] row-major (KRSC), out / res [M, N].
// In cuBLAS's column-major terms: D(NxM) = op_T(A = w, KxN) * B(x, KxM): the TN form IMMA needs.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

struct Shape { const char* name; int m, k, n; int count; };

struct Variant {
  const char* name;
  cudaDataType_t ab, cd, bias;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  bool alpha_vector, residual, relu_bias;
};

static size_t dsize(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_8I: return 1;
    case CUDA_R_16F: return 2;
    case CUDA_R_32I: case CUDA_R_32F: return 4;
    default: return 4;
  }
}

int main() {
  const Shape shapes[] = {
      {"layer1.conv3", 32 * 56 * 56, 64, 256, 3},
      {"layer2.conv3", 32 * 28 * 28, 128, 512, 4},
      {"layer3.conv3", 32 * 14 * 14, 256, 1024, 6},
      {"layer4.conv3", 32 * 7 * 7, 512, 2048, 3},
      {"bs256.layer1.conv3", 256 * 56 * 56, 64, 256, 3},
  };
  const Variant variants[] = {
      {"i8 alphavec+res+relu_bias", CUDA_R_8I, CUDA_R_8I, CUDA_R_32F, CUBLAS_COMPUTE_32I, CUDA_R_32F, true, true, true},
      {"i8 alphavec+relu_bias", CUDA_R_8I, CUDA_R_8I, CUDA_R_32F, CUBLAS_COMPUTE_32I, CUDA_R_32F, true, false, true},
      {"i8 alpha+res+relu_bias", CUDA_R_8I, CUDA_R_8I, CUDA_R_32F, CUBLAS_COMPUTE_32I, CUDA_R_32F, false, true, true},
      {"i8 alphavec+res (no epi)", CUDA_R_8I, CUDA_R_8I, CUDA_R_32F, CUBLAS_COMPUTE_32I, CUDA_R_32F, true, true, false},
      {"i8 -> i32 plain", CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, false, false, false},
      {"f16 res+relu_bias", CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, false, true, true},
  };
  cublasLtHandle_t lt;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) { std::printf("cublasLtCreate failed\n"); return 1; }
  int dev = 0; cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %s, cuBLASLt %zu\n", prop.name, cublasLtGetVersion());
  const size_t ws_bytes = 64u << 20;
  void* ws; CK(cudaMalloc(&ws, ws_bytes));
  cudaStream_t st; CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::printf("%-20s %-28s %8s %8s %5s %9s\n", "shape", "variant", "first_us", "best_us", "algos", "floor_us");
  for (const Shape& s : shapes) {
    for (const Variant& v : variants) {
      const size_t ab = dsize(v.ab), cd = dsize(v.cd);
      void *x, *w, *res, *out, *alpha, *bias;
      CK(cudaMalloc(&x, size_t(s.m) * s.k * ab)); CK(cudaMalloc(&w, size_t(s.n) * s.k * ab));
      CK(cudaMalloc(&res, size_t(s.m) * s.n * cd)); CK(cudaMalloc(&out, size_t(s.m) * s.n * cd));
      CK(cudaMalloc(&alpha, s.n * 4)); CK(cudaMalloc(&bias, s.n * 4));
      CK(cudaMemset(x, 1, size_t(s.m) * s.k * ab)); CK(cudaMemset(w, 1, size_t(s.n) * s.k * ab));
      CK(cudaMemset(res, 2, size_t(s.m) * s.n * cd)); CK(cudaMemset(bias, 0, s.n * 4));
      std::vector<float> av(s.n, 0.01f);
      CK(cudaMemcpy(alpha, av.data(), s.n * 4, cudaMemcpyHostToDevice));
      cublasLtMatmulDesc_t desc; cublasLtMatmulDescCreate(&desc, v.compute, v.scale);
      cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
      if (v.alpha_vector) {
        cublasLtPointerMode_t pm = v.residual ? CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST
                                              : CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
      }
      if (v.relu_bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
        int32_t bt = v.bias;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
      }
      cublasLtMatrixLayout_t la, lb, lc;
      cublasLtMatrixLayoutCreate(&la, v.ab, s.k, s.n, s.k);
      cublasLtMatrixLayoutCreate(&lb, v.ab, s.k, s.m, s.k);
      cublasLtMatrixLayoutCreate(&lc, v.cd, s.n, s.m, s.n);
      cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes);
      cublasLtMatmulHeuristicResult_t heur[16]; int found = 0;
      cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 16, heur, &found);
      const float one = 1.0f, beta_val = v.residual ? 0.5f : 0.0f;
      const int32_t one_i = 1, zero_i = 0;
      const void* alpha_p = v.alpha_vector ? alpha : (v.scale == CUDA_R_32I ? (const void*)&one_i : (const void*)&one);
      const void* beta_p = v.scale == CUDA_R_32I ? (const void*)&zero_i : (const void*)&beta_val;
      const void* c_p = v.residual ? res : out;
      double first = -1, best = 1e30;
      int ran = 0;
      for (int a = 0; a < (hs == CUBLAS_STATUS_SUCCESS ? found : 0); ++a) {
        auto launch = [&] {
          return cublasLtMatmul(lt, desc, alpha_p, w, la, x, lb, beta_p, c_p, lc, out, lc, &heur[a].algo, ws,
                                ws_bytes, st);
        };
        if (launch() != CUBLAS_STATUS_SUCCESS) continue;
        for (int i = 0; i < 4; ++i) launch();
        CK(cudaEventRecord(e0, st));
        for (int i = 0; i < 50; ++i) launch();
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
        const double us = ms * 1000.0 / 50;
        if (ran == 0) first = us;
        best = std::min(best, us);
        ++ran;
      }
      CK(cudaGetLastError());
      const double bytes = double(s.m) * s.k * ab + double(s.n) * s.k * ab + double(s.m) * s.n * cd * (v.residual ? 2 : 1);
      const double floor_us = bytes / 4.8e12 * 1e6;
      if (ran == 0)
        std::printf("%-20s %-28s %8s %8s %5d %9.1f  (status %d, %d found)\n", s.name, v.name, "-", "-", 0, floor_us,
                    int(hs), found);
      else
        std::printf("%-20s %-28s %8.1f %8.1f %5d %9.1f\n", s.name, v.name, first, best, ran, floor_us);
      std::fflush(stdout);
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(lc);
      cublasLtMatmulDescDestroy(desc);
      cudaFree(x); cudaFree(w); cudaFree(res); cudaFree(out); cudaFree(alpha); cudaFree(bias);
    }
  }
  cublasLtDestroy(lt);
  return 0;
}
