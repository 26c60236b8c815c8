// templates/common.cuh: included once at the top of every generated .cu (device code only).
// Small, dependency-free helpers shared by the op templates. Built without --use_fast_math, so
// expf/exp/tanhf etc. are the accurate CUDA versions (results are compared with the CPU reference).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

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

// ---- library kernels (CUTLASS): the params-builder protocol shared with the runtime --------------
// Also documented in templates/library_params.cuh (tests include that file alone).

#define AOTC_PARAMS_MAGIC 0x41505248u  /* "APRH" */
#define AOTC_PARAMS_OFFSET 256
#define AOTC_PARAMS_MAX_BYTES 4096      /* header + params; kernel parameters are limited to 4 KiB */
#define AOTC_PARAMS_MAX_SLOTS 8
#define AOTC_PARAMS_MAX_ARGS 24
#define AOTC_SLOT_UNUSED 0xffffffffu

struct aotc_builder_args {
  long long v[AOTC_PARAMS_MAX_ARGS];
};

struct aotc_params_header {
  unsigned magic;
  unsigned params_bytes;      // sizeof(Params); AOTC_PARAMS_OFFSET + params_bytes <= AOTC_PARAMS_MAX_BYTES
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;      // dynamic shared memory of one block
  unsigned num_slots;         // = number of pointer args of the step
  unsigned slot_offset[AOTC_PARAMS_MAX_SLOTS];  // byte offset in the params; AOTC_SLOT_UNUSED: not used
  int status;                 // 0: ok; otherwise the kernel cannot run this problem (a bug in lowering)
};
