/* The few CUDA driver and cuBLASLt declarations the runtime needs, written out by hand so that a
   generated library compiles with nothing but a C compiler (also a cross compiler for Jetson):
   no cuda.h, no cublasLt.h. Values and layouts match CUDA 12/13 (checked against cuda.h and
   cublasLt.h of CUDA 13.0); the functions are resolved with dlsym at create time. */
#ifndef AOTC_CUDA_API_H
#define AOTC_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;                  /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* 64-bit targets only (x86-64, aarch64) */
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
typedef struct CUevent_st* CUevent;

#define AOTC_CU_SUCCESS 0
#define AOTC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define AOTC_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED 14
#define AOTC_CU_ERROR_OUT_OF_MEMORY 2
#define AOTC_CU_STREAM_LEGACY ((CUstream)0x1)
#define AOTC_CU_STREAM_CAPTURE_STATUS_NONE 0
#define AOTC_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
/* cuPointerGetAttributes (CUpointer_attribute, CUmemorytype of cuda.h). */
#define AOTC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2    /* unsigned int: CUmemorytype, 0 = unknown */
#define AOTC_CU_POINTER_ATTRIBUTE_IS_MANAGED 8     /* boolean */
#define AOTC_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9 /* int */
#define AOTC_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11 /* CUdeviceptr (CUDA 11.2+) */
#define AOTC_CU_POINTER_ATTRIBUTE_RANGE_SIZE 12       /* size_t */
#define AOTC_CU_MEMORYTYPE_HOST 1
#define AOTC_CU_MEMORYTYPE_DEVICE 2

/* cuLaunchKernelEx's configuration (CUlaunchConfig, CUlaunchAttribute of cuda.h; the attribute
   value is a 64-byte union there). Only programmatic stream serialization is used. */
#define AOTC_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
typedef struct aotc_cu_launch_attribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmatic_stream_serialization_allowed;
    void* align;
  } value;
} aotc_cu_launch_attribute;
typedef struct aotc_cu_launch_config {
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_bytes;
  CUstream stream;
  aotc_cu_launch_attribute* attrs;
  unsigned num_attrs;
} aotc_cu_launch_config;

/* A tensor map (TMA descriptor; CUtensorMap of cuda.h, CUDA 12.0+): 128 opaque bytes, 128-byte
   aligned, written by cuTensorMapEncodeTiled / Im2col. Their enum arguments (CUtensorMapDataType,
   ...Interleave, ...Swizzle, ...L2promotion, ...FloatOOBfill) are ints here; cuuint32_t is unsigned
   and cuuint64_t (uint64_t) is unsigned long long, the same sizes on the 64-bit targets. */
typedef struct aotc_cu_tensor_map {
  _Alignas(128) unsigned long long opaque[16];
} aotc_cu_tensor_map;
_Static_assert(sizeof(aotc_cu_tensor_map) == 128, "CUtensorMap is 128 bytes");

/* cuBLASLt: opaque descriptors are pointers; the heuristic result is semi-opaque (layout fixed). */
typedef int cublasStatus_t; /* CUBLAS_STATUS_SUCCESS = 0 */
typedef struct cublasLtContext* cublasLtHandle_t;
typedef void* cublasLtMatmulDesc_t;
typedef void* cublasLtMatrixLayout_t;
typedef void* cublasLtMatmulPreference_t;
typedef struct {
  uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

#define AOTC_CUBLAS_COMPUTE_32F 68
#define AOTC_CUDA_R_32F 0
#define AOTC_CUDA_R_16F 2
#define AOTC_CUDA_R_16BF 14
#define AOTC_CUBLAS_OP_N 0
#define AOTC_CUBLAS_OP_T 1
#define AOTC_CUBLASLT_MATMUL_DESC_TRANSA 3       /* int32_t */
#define AOTC_CUBLASLT_MATMUL_DESC_TRANSB 4       /* int32_t */
#define AOTC_CUBLASLT_MATMUL_DESC_EPILOGUE 7     /* uint32_t */
#define AOTC_CUBLASLT_MATMUL_DESC_BIAS_POINTER 8 /* void* */
#define AOTC_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT 5          /* int32_t */
#define AOTC_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET 6 /* int64_t */
#define AOTC_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1    /* uint64_t */
#define AOTC_CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK 3 /* uint32_t */
#define AOTC_CUBLASLT_ALGO_CAP_SPLITK_SUPPORT 0          /* int32_t */
#define AOTC_CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK 1    /* uint32_t */
#define AOTC_CUBLASLT_ALGO_CONFIG_SPLITK_NUM 2            /* uint32_t */
#define AOTC_CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME 3      /* uint32_t */
#define AOTC_CUBLASLT_REDUCTION_SCHEME_INPLACE 1
#define AOTC_CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE 2
#define AOTC_CUBLASLT_EPILOGUE_DEFAULT 1
#define AOTC_CUBLASLT_EPILOGUE_RELU 2
#define AOTC_CUBLASLT_EPILOGUE_BIAS 4
#define AOTC_CUBLASLT_EPILOGUE_RELU_BIAS 6
#define AOTC_CUBLASLT_EPILOGUE_GELU 32     /* the tanh approximation (cuBLASLt documentation) */
#define AOTC_CUBLASLT_EPILOGUE_GELU_BIAS 36

/* Function pointers, filled by dlsym. Names in comments are the exported symbols. */
typedef struct aotc_cuda_api {
  CUresult (*init)(unsigned int flags);                                   /* cuInit */
  CUresult (*device_get_count)(int* count);                               /* cuDeviceGetCount */
  CUresult (*device_get)(CUdevice* device, int ordinal);                  /* cuDeviceGet */
  CUresult (*primary_ctx_retain)(CUcontext* ctx, CUdevice device);        /* cuDevicePrimaryCtxRetain */
  CUresult (*primary_ctx_release)(CUdevice device);                       /* cuDevicePrimaryCtxRelease_v2 */
  CUresult (*ctx_push)(CUcontext ctx);                                    /* cuCtxPushCurrent_v2 */
  CUresult (*ctx_pop)(CUcontext* ctx);                                    /* cuCtxPopCurrent_v2 */
  CUresult (*module_load_data)(CUmodule* module, const void* image);      /* cuModuleLoadData */
  CUresult (*module_unload)(CUmodule module);                             /* cuModuleUnload */
  CUresult (*module_get_function)(CUfunction* f, CUmodule m, const char* name); /* cuModuleGetFunction */
  CUresult (*func_set_attribute)(CUfunction f, int attribute, int value); /* cuFuncSetAttribute */
  CUresult (*mem_alloc)(CUdeviceptr* ptr, size_t bytes);                  /* cuMemAlloc_v2 */
  CUresult (*mem_free)(CUdeviceptr ptr);                                  /* cuMemFree_v2 */
  CUresult (*memcpy_htod)(CUdeviceptr dst, const void* src, size_t bytes); /* cuMemcpyHtoD_v2 */
  CUresult (*memcpy_dtoh)(void* dst, CUdeviceptr src, size_t bytes);      /* cuMemcpyDtoH_v2 */
  CUresult (*memcpy_dtod_async)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream stream);                         /* cuMemcpyDtoDAsync_v2 */
  CUresult (*launch_kernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                            void** params, void** extra);                 /* cuLaunchKernel */
  CUresult (*stream_synchronize)(CUstream stream);                        /* cuStreamSynchronize */
  CUresult (*get_error_name)(CUresult error, const char** name);          /* cuGetErrorName */
  /* CUDA graphs (optional: NULL when the driver lacks them; run() then launches plainly). */
  CUresult (*stream_begin_capture)(CUstream stream, int mode);            /* cuStreamBeginCapture_v2 */
  CUresult (*stream_end_capture)(CUstream stream, CUgraph* graph);        /* cuStreamEndCapture */
  CUresult (*stream_is_capturing)(CUstream stream, int* status);          /* cuStreamIsCapturing */
  CUresult (*graph_instantiate)(CUgraphExec* exec, CUgraph graph,
                                unsigned long long flags);                /* cuGraphInstantiateWithFlags */
  CUresult (*graph_launch)(CUgraphExec exec, CUstream stream);            /* cuGraphLaunch */
  CUresult (*graph_exec_destroy)(CUgraphExec exec);                       /* cuGraphExecDestroy */
  CUresult (*graph_destroy)(CUgraph graph);                               /* cuGraphDestroy */
  /* Events, for the profiling extension only (optional: NULL when the driver lacks them). */
  CUresult (*event_create)(CUevent* event, unsigned flags);               /* cuEventCreate */
  CUresult (*event_record)(CUevent event, CUstream stream);               /* cuEventRecord */
  CUresult (*event_synchronize)(CUevent event);                           /* cuEventSynchronize */
  CUresult (*event_elapsed_time)(float* ms, CUevent start, CUevent end);  /* cuEventElapsedTime */
  CUresult (*event_destroy)(CUevent event);                               /* cuEventDestroy_v2 */
  /* Streams, for create()'s timing of cuBLASLt candidates (optional). */
  CUresult (*stream_create)(CUstream* stream, unsigned flags);            /* cuStreamCreate */
  CUresult (*stream_destroy)(CUstream stream);                            /* cuStreamDestroy_v2 */
  /* The auxiliary stream's fork and join while capturing (optional: without it every step is
     captured on the caller's stream). */
  CUresult (*stream_wait_event)(CUstream stream, CUevent event, unsigned flags); /* cuStreamWaitEvent */
  /* Programmatic dependent launch (optional: NULL when the driver lacks either; plain launches). */
  CUresult (*launch_kernel_ex)(const aotc_cu_launch_config* config, CUfunction f, void** params,
                               void** extra);                             /* cuLaunchKernelEx */
  CUresult (*module_get_global)(CUdeviceptr* ptr, size_t* bytes, CUmodule m,
                                const char* name);                        /* cuModuleGetGlobal_v2 */
  /* Pointer checks of the caller's buffers (optional: without cuPointerGetAttributes only NULL
     and alignment are checked; cuMemGetAddressRange is the fallback for the extent). */
  CUresult (*pointer_get_attributes)(unsigned num, int* attributes, void** data,
                                     CUdeviceptr ptr);                    /* cuPointerGetAttributes */
  CUresult (*mem_get_address_range)(CUdeviceptr* base, size_t* bytes,
                                    CUdeviceptr ptr);                     /* cuMemGetAddressRange_v2 */
  /* Tensor maps of prebuilt library kernels (optional: NULL before CUDA 12; create then fails
     only for a model that has tensor maps). */
  CUresult (*tensor_map_encode_tiled)(aotc_cu_tensor_map* map, int data_type, unsigned rank,
                                      void* address, const unsigned long long* dims,
                                      const unsigned long long* strides, const unsigned* box,
                                      const unsigned* element_strides, int interleave, int swizzle,
                                      int l2_promotion, int oob_fill); /* cuTensorMapEncodeTiled */
  CUresult (*tensor_map_encode_im2col)(aotc_cu_tensor_map* map, int data_type, unsigned rank,
                                       void* address, const unsigned long long* dims,
                                       const unsigned long long* strides, const int* lower,
                                       const int* upper, unsigned channels, unsigned pixels,
                                       const unsigned* element_strides, int interleave,
                                       int swizzle, int l2_promotion,
                                       int oob_fill); /* cuTensorMapEncodeIm2col */
} aotc_cuda_api;

typedef struct aotc_cublaslt_api {
  cublasStatus_t (*create)(cublasLtHandle_t* handle);
  cublasStatus_t (*destroy)(cublasLtHandle_t handle);
  cublasStatus_t (*matmul_desc_create)(cublasLtMatmulDesc_t* desc, int compute_type, int scale_type);
  cublasStatus_t (*matmul_desc_destroy)(cublasLtMatmulDesc_t desc);
  cublasStatus_t (*matmul_desc_set_attribute)(cublasLtMatmulDesc_t desc, int attr, const void* buf,
                                              size_t size);
  cublasStatus_t (*matrix_layout_create)(cublasLtMatrixLayout_t* layout, int type, uint64_t rows,
                                         uint64_t cols, int64_t ld);
  cublasStatus_t (*matrix_layout_destroy)(cublasLtMatrixLayout_t layout);
  cublasStatus_t (*matrix_layout_set_attribute)(cublasLtMatrixLayout_t layout, int attr,
                                                const void* buf, size_t size);
  cublasStatus_t (*preference_create)(cublasLtMatmulPreference_t* pref);
  cublasStatus_t (*preference_destroy)(cublasLtMatmulPreference_t pref);
  cublasStatus_t (*preference_set_attribute)(cublasLtMatmulPreference_t pref, int attr,
                                             const void* buf, size_t size);
  cublasStatus_t (*algo_get_heuristic)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                       cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                       cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                       cublasLtMatmulPreference_t pref, int requested,
                                       cublasLtMatmulHeuristicResult_t* results, int* returned);
  cublasStatus_t (*matmul)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                           const void* a, cublasLtMatrixLayout_t a_layout, const void* b,
                           cublasLtMatrixLayout_t b_layout, const void* beta, const void* c,
                           cublasLtMatrixLayout_t c_layout, void* d, cublasLtMatrixLayout_t d_layout,
                           const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                           CUstream stream);
  const char* (*get_status_name)(cublasStatus_t status);
  /* Optional (NULL when the library lacks it): reads an algorithm's configuration (its cluster
     shape, for AOTC_MATMUL_TUNE_LOG). */
  cublasStatus_t (*algo_config_get_attribute)(const cublasLtMatmulAlgo_t* algo, int attr, void* buf,
                                              size_t size, size_t* written);
  /* Optional: split-K variants of the heuristic's algorithms for --tune-matmuls (aotc_rt_create.c). */
  cublasStatus_t (*algo_config_set_attribute)(cublasLtMatmulAlgo_t* algo, int attr, const void* buf,
                                              size_t size); /* cublasLtMatmulAlgoConfigSetAttribute */
  cublasStatus_t (*algo_cap_get_attribute)(const cublasLtMatmulAlgo_t* algo, int attr, void* buf,
                                           size_t size, size_t* written); /* cublasLtMatmulAlgoCapGetAttribute */
  cublasStatus_t (*algo_check)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                               cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                               const cublasLtMatmulAlgo_t* algo,
                               cublasLtMatmulHeuristicResult_t* result); /* cublasLtMatmulAlgoCheck */
} aotc_cublaslt_api;

#endif /* AOTC_CUDA_API_H */
