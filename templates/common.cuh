// templates/common.cuh: included once at the top of every generated .cu (device code only).
// Small, dependency-free helpers shared by the op templates. Built without --use_fast_math, so
// expf/exp/tanhf etc. are the accurate CUDA versions (results are compared with the CPU reference).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

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

// Index of the first item this thread handles in a grid-stride loop, and the stride.
__device__ __forceinline__ long long aotc_thread_index() {
  return blockIdx.x * (long long)blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long aotc_grid_stride() { return (long long)gridDim.x * blockDim.x; }
