// templates/common.cuh: included once at the top of every generated .cu (device code only).
// Small, dependency-free helpers shared by the op templates. Built without --use_fast_math, so
// expf/exp/tanhf etc. are the accurate CUDA versions (results are compared with the CPU reference).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include <type_traits>

// Programmatic dependent launch (Hopper and later). Every kernel of the templates starts with
// AOTC_PDL_ENTER(): it waits until the kernels before it in the stream have completed and their
// writes are visible (griddepcontrol.wait), then lets the next kernel's blocks be scheduled
// (griddepcontrol.launch_dependents, with --pdl early) so that its launch overlaps this kernel's tail. Both are
// no-ops when the kernel was launched without the programmatic-serialization attribute. The
// runtime sets that attribute only on kernels whose rendered code calls AOTC_PDL_ENTER (the
// kernel table's `pdl`) and only when every loaded module reports aotc_pdl_arch == 1, i.e. the
// code the driver picked was compiled for sm_90+ (a compute_87 PTX library JIT-compiled on an
// H100 has no wait instruction, so it must not be launched early).
// AOTC_PDL_EARLY_TRIGGER (nvcc -D from `aotc --pdl early`) signals the dependents at the start
// instead of at exit.
#ifndef AOTC_PDL_EARLY_TRIGGER
#define AOTC_PDL_EARLY_TRIGGER 0
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define AOTC_PDL_ENTER() aotc_pdl_enter()
__device__ __forceinline__ void aotc_pdl_enter() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (AOTC_PDL_EARLY_TRIGGER) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
#define AOTC_PDL_ARCH_VALUE 1
#else
#define AOTC_PDL_ENTER() ((void)0)
#define AOTC_PDL_ARCH_VALUE 0
#endif
extern "C" __device__ int aotc_pdl_arch = AOTC_PDL_ARCH_VALUE;

// Element <-> compute-type conversions usable in every template: static_cast works for float,
// double and the integer types; __half and __nv_bfloat16 convert through float.
template <class To, class From>
__device__ __forceinline__ To aotc_cast(From v) { return static_cast<To>(v); }
template <>
__device__ __forceinline__ float aotc_cast<float, __half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ __half aotc_cast<__half, float>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ float aotc_cast<float, __nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 aotc_cast<__nv_bfloat16, float>(float v) {
  return __float2bfloat16_rn(v);
}

// One k16 step of a warp's 16-row x (8 * NT)-column product on the tensor cores (mma.sync
// m16n8k16, fp32 accumulators acc[NT][4]; sm_80+), both operands in shared memory, K contiguous:
// `a_base` is the shared-space address of A's element (row0 + lane % 16, (lane / 16) * 8), `b_base`
// that of B's element (n0 + lane % 8 + (lane / 16) * 8, ((lane / 8) % 2) * 8) for B rows n0 ..
// n0 + 8 NT - 1 of `ldb` elements each; k0 is the step's first K element. Rows padded so that
// ldb / 8 is odd put ldmatrix's 8 rows in distinct banks. acc[t] holds (rows lane / 4 and + 8,
// columns n0 + 8 t + (lane % 4) * 2 and + 1) as {c0, c1, c2, c3}. T: __half or __nv_bfloat16.
template <class T, int NT>
__device__ __forceinline__ void aotc_mma_k16(float (*acc)[4], unsigned a_base, unsigned b_base, int ldb, int k0,
                                             int lane) {
  unsigned a[4];
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(a_base + (unsigned)(k0 * 2)));
#pragma unroll
  for (int t = 0; t < NT; t += 2) {
    unsigned b[4];
    if (t + 1 < NT) {
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                   : "r"(b_base + (unsigned)((t * 8 * ldb + k0) * 2)));
    } else {
      // One n8 tile left: lanes 0-15 address its two k halves (lanes 16-31 repeat them).
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                   : "=r"(b[0]), "=r"(b[1])
                   : "r"(b_base + (unsigned)(((t * 8 - (lane / 16) * 8) * ldb + k0) * 2)));
      b[2] = b[3] = 0;
    }
#pragma unroll
    for (int u = 0; u < 2 && t + u < NT; ++u) {
      float* c = acc[t + u];
      if (std::is_same<T, __nv_bfloat16>::value)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * u]), "r"(b[2 * u + 1]));
      else
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * u]), "r"(b[2 * u + 1]));
    }
  }
}

// Index of the first item this thread handles in a grid-stride loop, and the stride.
__device__ __forceinline__ long long aotc_thread_index() {
  return blockIdx.x * (long long)blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long aotc_grid_stride() { return (long long)gridDim.x * blockDim.x; }
