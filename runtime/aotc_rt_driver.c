/* Errors and the dlopen tables: the CUDA driver (the graph entry points are optional: an old driver
   runs without CUDA graphs; so are the event entry points, which only profile_run uses, and the
   tensor map encoders, which only models with prebuilt TMA kernels use) and
   cuBLASLt, resolved with dlsym at create so that a generated library links to nothing of CUDA.
   Plain C11; never aborts. */
#include "aotc_rt_internal.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

_Static_assert(sizeof(void*) == 8, "aotc libraries target 64-bit platforms only");

/* The last create failure of this thread (the message for a NULL handle). */
static _Thread_local char g_thread_error[kAotcMessageBytes];

char* aotc_rt_thread_error(void) { return g_thread_error; }

int aotc_rt_set_error(aotc_rt_handle* h, int code, const char* fmt, ...) {
  char* buf = h ? h->message : g_thread_error;
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, kAotcMessageBytes, fmt, args);
  va_end(args);
  return code;
}

const char* aotc_rt_cu_error_name(const aotc_rt_handle* h, CUresult r) {
  const char* name = NULL;
  if (h->cu.get_error_name && h->cu.get_error_name(r, &name) == AOTC_CU_SUCCESS && name) return name;
  return "CUDA_ERROR_UNKNOWN";
}

/* Errors after which the context is unusable: every later call must fail (docs/abi.md). */
int aotc_rt_cu_error_is_sticky(CUresult r) {
  return r == 700 /* ILLEGAL_ADDRESS */ || r == 702 /* LAUNCH_TIMEOUT */ ||
         (r >= 714 && r <= 719) /* HARDWARE_STACK .. LAUNCH_FAILED */ || r == 214 /* ECC */;
}

/* Maps a failed driver call to a status code and message; marks the handle sticky if needed. */
int aotc_rt_cu_fail(aotc_rt_handle* h, CUresult r, const char* what) {
  if (aotc_rt_cu_error_is_sticky(r)) {
    h->sticky = 1;
    return aotc_rt_set_error(h, AOTC_ERROR_STICKY,
                             "%s failed: %s (the CUDA context is unusable; every later call fails)",
                             what, aotc_rt_cu_error_name(h, r));
  }
  int code = r == AOTC_CU_ERROR_OUT_OF_MEMORY ? AOTC_ERROR_OUT_OF_MEMORY : AOTC_ERROR_CUDA;
  return aotc_rt_set_error(h, code, "%s failed: %s", what, aotc_rt_cu_error_name(h, r));
}

int aotc_rt_lt_fail(aotc_rt_handle* h, cublasStatus_t s, const char* what, const char* label) {
  const char* name = h->lt.get_status_name ? h->lt.get_status_name(s) : NULL;
  return aotc_rt_set_error(h, AOTC_ERROR_CUDA, "%s (%s) failed: %s (cublasStatus %d)", what, label,
                           name ? name : "?", (int)s);
}

int aotc_rt_load_driver(aotc_rt_handle* h) {
  h->libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h->libcuda) {
    const char* why = dlerror();
    return aotc_rt_set_error(h, AOTC_ERROR_NO_DRIVER, "cannot open libcuda.so.1 (NVIDIA driver): %s",
                     why ? why : "not found");
  }
  struct {
    void** slot;
    const char* symbol;
  } syms[] = {
      {(void**)&h->cu.init, "cuInit"},
      {(void**)&h->cu.device_get_count, "cuDeviceGetCount"},
      {(void**)&h->cu.device_get, "cuDeviceGet"},
      {(void**)&h->cu.primary_ctx_retain, "cuDevicePrimaryCtxRetain"},
      {(void**)&h->cu.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2"},
      {(void**)&h->cu.ctx_push, "cuCtxPushCurrent_v2"},
      {(void**)&h->cu.ctx_pop, "cuCtxPopCurrent_v2"},
      {(void**)&h->cu.module_load_data, "cuModuleLoadData"},
      {(void**)&h->cu.module_unload, "cuModuleUnload"},
      {(void**)&h->cu.module_get_function, "cuModuleGetFunction"},
      {(void**)&h->cu.func_set_attribute, "cuFuncSetAttribute"},
      {(void**)&h->cu.mem_alloc, "cuMemAlloc_v2"},
      {(void**)&h->cu.mem_free, "cuMemFree_v2"},
      {(void**)&h->cu.memcpy_htod, "cuMemcpyHtoD_v2"},
      {(void**)&h->cu.memcpy_dtoh, "cuMemcpyDtoH_v2"},
      {(void**)&h->cu.memcpy_dtod_async, "cuMemcpyDtoDAsync_v2"},
      {(void**)&h->cu.launch_kernel, "cuLaunchKernel"},
      {(void**)&h->cu.stream_synchronize, "cuStreamSynchronize"},
      {(void**)&h->cu.get_error_name, "cuGetErrorName"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; ++i) {
    *syms[i].slot = dlsym(h->libcuda, syms[i].symbol);
    if (!*syms[i].slot)
      return aotc_rt_set_error(h, AOTC_ERROR_NO_DRIVER, "libcuda.so.1 lacks %s (driver too old?)",
                       syms[i].symbol);
  }
  /* CUDA graphs (CUDA 11.4+ drivers): all or none. */
  struct {
    void** slot;
    const char* symbol;
  } graph_syms[] = {
      {(void**)&h->cu.stream_begin_capture, "cuStreamBeginCapture_v2"},
      {(void**)&h->cu.stream_end_capture, "cuStreamEndCapture"},
      {(void**)&h->cu.stream_is_capturing, "cuStreamIsCapturing"},
      {(void**)&h->cu.graph_instantiate, "cuGraphInstantiateWithFlags"},
      {(void**)&h->cu.graph_launch, "cuGraphLaunch"},
      {(void**)&h->cu.graph_exec_destroy, "cuGraphExecDestroy"},
      {(void**)&h->cu.graph_destroy, "cuGraphDestroy"},
  };
  int have_graphs = 1;
  for (size_t i = 0; i < sizeof graph_syms / sizeof graph_syms[0]; ++i)
    if (!(*graph_syms[i].slot = dlsym(h->libcuda, graph_syms[i].symbol))) have_graphs = 0;
  if (!have_graphs)
    for (size_t i = 0; i < sizeof graph_syms / sizeof graph_syms[0]; ++i) *graph_syms[i].slot = NULL;
  /* Events (the profiling extension): all or none; a symbol's older name is tried first. */
  struct {
    void** slot;
    const char* symbol;
    const char* other;
  } event_syms[] = {
      {(void**)&h->cu.event_create, "cuEventCreate", NULL},
      {(void**)&h->cu.event_record, "cuEventRecord", NULL},
      {(void**)&h->cu.event_synchronize, "cuEventSynchronize", NULL},
      {(void**)&h->cu.event_elapsed_time, "cuEventElapsedTime", "cuEventElapsedTime_v2"},
      {(void**)&h->cu.event_destroy, "cuEventDestroy_v2", "cuEventDestroy"},
  };
  int have_events = 1;
  for (size_t i = 0; i < sizeof event_syms / sizeof event_syms[0]; ++i) {
    *event_syms[i].slot = dlsym(h->libcuda, event_syms[i].symbol);
    if (!*event_syms[i].slot && event_syms[i].other)
      *event_syms[i].slot = dlsym(h->libcuda, event_syms[i].other);
    if (!*event_syms[i].slot) have_events = 0;
  }
  if (!have_events)
    for (size_t i = 0; i < sizeof event_syms / sizeof event_syms[0]; ++i) *event_syms[i].slot = NULL;
  /* Streams (create()'s matmul timing): both or neither. */
  h->cu.stream_create = dlsym(h->libcuda, "cuStreamCreate");
  h->cu.stream_destroy = dlsym(h->libcuda, "cuStreamDestroy_v2");
  if (!h->cu.stream_create || !h->cu.stream_destroy) {
    h->cu.stream_create = NULL;
    h->cu.stream_destroy = NULL;
  }
  h->cu.stream_wait_event = dlsym(h->libcuda, "cuStreamWaitEvent");
  /* Programmatic dependent launch (CUDA 12.0+ drivers): both or neither. */
  h->cu.launch_kernel_ex = dlsym(h->libcuda, "cuLaunchKernelEx");
  h->cu.module_get_global = dlsym(h->libcuda, "cuModuleGetGlobal_v2");
  if (!h->cu.launch_kernel_ex || !h->cu.module_get_global) {
    h->cu.launch_kernel_ex = NULL;
    h->cu.module_get_global = NULL;
  }
  /* Pointer checks (aotc_rt_check.c; each optional). */
  h->cu.pointer_get_attributes = dlsym(h->libcuda, "cuPointerGetAttributes");
  h->cu.mem_get_address_range = dlsym(h->libcuda, "cuMemGetAddressRange_v2");
  /* Tensor map encoders (CUDA 12.0+ drivers; each optional, needed only by models with tensor
     maps: aotc_rt_encode_tensor_maps). */
  h->cu.tensor_map_encode_tiled = dlsym(h->libcuda, "cuTensorMapEncodeTiled");
  h->cu.tensor_map_encode_im2col = dlsym(h->libcuda, "cuTensorMapEncodeIm2col");
  return AOTC_OK;
}

int aotc_rt_load_cublaslt(aotc_rt_handle* h) {
  h->liblt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!h->liblt) h->liblt = dlopen("libcublasLt.so.12", RTLD_NOW | RTLD_LOCAL);
  if (!h->liblt)
    return aotc_rt_set_error(h, AOTC_ERROR_NO_CUBLASLT,
                     "cannot open libcublasLt.so.13 or libcublasLt.so.12 (needed for %d matmuls)",
                     h->desc->num_matmuls);
  struct {
    void** slot;
    const char* symbol;
  } syms[] = {
      {(void**)&h->lt.create, "cublasLtCreate"},
      {(void**)&h->lt.destroy, "cublasLtDestroy"},
      {(void**)&h->lt.matmul_desc_create, "cublasLtMatmulDescCreate"},
      {(void**)&h->lt.matmul_desc_destroy, "cublasLtMatmulDescDestroy"},
      {(void**)&h->lt.matmul_desc_set_attribute, "cublasLtMatmulDescSetAttribute"},
      {(void**)&h->lt.matrix_layout_create, "cublasLtMatrixLayoutCreate"},
      {(void**)&h->lt.matrix_layout_destroy, "cublasLtMatrixLayoutDestroy"},
      {(void**)&h->lt.matrix_layout_set_attribute, "cublasLtMatrixLayoutSetAttribute"},
      {(void**)&h->lt.preference_create, "cublasLtMatmulPreferenceCreate"},
      {(void**)&h->lt.preference_destroy, "cublasLtMatmulPreferenceDestroy"},
      {(void**)&h->lt.preference_set_attribute, "cublasLtMatmulPreferenceSetAttribute"},
      {(void**)&h->lt.algo_get_heuristic, "cublasLtMatmulAlgoGetHeuristic"},
      {(void**)&h->lt.matmul, "cublasLtMatmul"},
      {(void**)&h->lt.get_status_name, "cublasLtGetStatusName"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; ++i) {
    *syms[i].slot = dlsym(h->liblt, syms[i].symbol);
    if (!*syms[i].slot)
      return aotc_rt_set_error(h, AOTC_ERROR_NO_CUBLASLT, "libcublasLt lacks %s", syms[i].symbol);
  }
  *(void**)&h->lt.algo_config_get_attribute = dlsym(h->liblt, "cublasLtMatmulAlgoConfigGetAttribute");
  *(void**)&h->lt.algo_config_set_attribute = dlsym(h->liblt, "cublasLtMatmulAlgoConfigSetAttribute");
  *(void**)&h->lt.algo_cap_get_attribute = dlsym(h->liblt, "cublasLtMatmulAlgoCapGetAttribute");
  *(void**)&h->lt.algo_check = dlsym(h->liblt, "cublasLtMatmulAlgoCheck");
  return AOTC_OK;
}
