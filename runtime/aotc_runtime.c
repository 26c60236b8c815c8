/* The C ABI over a model's generated tables: create() opens the CUDA driver (and cuBLASLt when the
   model has matmuls) with dlopen, loads the embedded fatbin, allocates one arena and one weight
   buffer and prepares every cuBLASLt descriptor and algorithm; run() only resolves pointers and
   launches on the caller's stream (no allocation, no host synchronisation). Plain C11, no CUDA
   headers; never aborts. Errors are a status code plus a message kept per handle. */
#include "aotc_runtime.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(void*) == 8, "aotc libraries target 64-bit platforms only");

enum { kMessageBytes = 1024, kMaxStaticShared = 48 * 1024 };

typedef struct aotc_rt_matmul_state {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t layout_a, layout_b, layout_c, layout_d; /* cuBLASLt's (swapped) A, B */
  cublasLtMatmulAlgo_t algo;
} aotc_rt_matmul_state;

struct aotc_rt_handle {
  const aotc_rt_model_desc* desc;
  int sticky;
  char message[kMessageBytes];
  void* libcuda;
  void* liblt;
  aotc_cuda_api cu;
  aotc_cublaslt_api lt;
  int device;
  CUdevice cu_device;
  CUcontext ctx; /* the device's primary context, retained */
  CUmodule* modules;
  CUfunction* functions;
  CUdeviceptr arena;
  int owns_arena;
  CUdeviceptr weights;
  int owns_weights;
  cublasLtHandle_t lt_handle;
  aotc_rt_matmul_state* matmuls;
  CUdeviceptr* arg_values; /* kernel argument values, rewritten by every run */
  void** arg_params;       /* &arg_values[i], what cuLaunchKernel wants */
  CUdeviceptr staging;     /* run_host buffers, allocated on its first call */
  const void** staging_inputs;
  void** staging_outputs;
};

/* The last create failure of this thread (the message for a NULL handle). */
static _Thread_local char g_thread_error[kMessageBytes];

static int set_error(aotc_rt_handle* h, int code, const char* fmt, ...) {
  char* buf = h ? h->message : g_thread_error;
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, kMessageBytes, fmt, args);
  va_end(args);
  return code;
}

static const char* cu_error_name(const aotc_rt_handle* h, CUresult r) {
  const char* name = NULL;
  if (h->cu.get_error_name && h->cu.get_error_name(r, &name) == AOTC_CU_SUCCESS && name) return name;
  return "CUDA_ERROR_UNKNOWN";
}

/* Errors after which the context is unusable: every later call must fail (docs/abi.md). */
static int cu_error_is_sticky(CUresult r) {
  return r == 700 /* ILLEGAL_ADDRESS */ || r == 702 /* LAUNCH_TIMEOUT */ ||
         (r >= 714 && r <= 719) /* HARDWARE_STACK .. LAUNCH_FAILED */ || r == 214 /* ECC */;
}

/* Maps a failed driver call to a status code and message; marks the handle sticky if needed. */
static int cu_fail(aotc_rt_handle* h, CUresult r, const char* what) {
  if (cu_error_is_sticky(r)) {
    h->sticky = 1;
    return set_error(h, AOTC_ERROR_STICKY,
                     "%s failed: %s (the CUDA context is unusable; every later call fails)", what,
                     cu_error_name(h, r));
  }
  int code = r == AOTC_CU_ERROR_OUT_OF_MEMORY ? AOTC_ERROR_OUT_OF_MEMORY : AOTC_ERROR_CUDA;
  return set_error(h, code, "%s failed: %s", what, cu_error_name(h, r));
}

static int lt_fail(aotc_rt_handle* h, cublasStatus_t s, const char* what, const char* label) {
  const char* name = h->lt.get_status_name ? h->lt.get_status_name(s) : NULL;
  return set_error(h, AOTC_ERROR_CUDA, "%s (%s) failed: %s (cublasStatus %d)", what, label,
                   name ? name : "?", (int)s);
}


static int load_driver(aotc_rt_handle* h) {
  h->libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h->libcuda) {
    const char* why = dlerror();
    return set_error(h, AOTC_ERROR_NO_DRIVER, "cannot open libcuda.so.1 (NVIDIA driver): %s",
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
      return set_error(h, AOTC_ERROR_NO_DRIVER, "libcuda.so.1 lacks %s (driver too old?)",
                       syms[i].symbol);
  }
  return AOTC_OK;
}

static int load_cublaslt(aotc_rt_handle* h) {
  h->liblt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!h->liblt) h->liblt = dlopen("libcublasLt.so.12", RTLD_NOW | RTLD_LOCAL);
  if (!h->liblt)
    return set_error(h, AOTC_ERROR_NO_CUBLASLT,
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
      return set_error(h, AOTC_ERROR_NO_CUBLASLT, "libcublasLt lacks %s", syms[i].symbol);
  }
  return AOTC_OK;
}

static int lt_type(int dtype) {
  return dtype == AOTC_MM_F16 ? AOTC_CUDA_R_16F
                              : dtype == AOTC_MM_BF16 ? AOTC_CUDA_R_16BF : AOTC_CUDA_R_32F;
}

static cublasStatus_t make_layout(aotc_rt_handle* h, cublasLtMatrixLayout_t* layout, int type,
                                  long long rows, long long cols, long long ld, long long batch,
                                  long long stride) {
  cublasStatus_t s = h->lt.matrix_layout_create(layout, type, (uint64_t)rows, (uint64_t)cols, ld);
  if (s != 0 || batch <= 1) return s;
  int32_t count = (int32_t)batch;
  int64_t offset = stride;
  s = h->lt.matrix_layout_set_attribute(*layout, AOTC_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                        sizeof count);
  if (s != 0) return s;
  return h->lt.matrix_layout_set_attribute(*layout, AOTC_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                           &offset, sizeof offset);
}

/* Row-major D = op(A) op(B) is column-major D^T = op(B)^T op(A)^T: cuBLASLt's A is our B and
   cuBLASLt's B is our A, each read column-major with the same leading dimension. */
static int prepare_matmul(aotc_rt_handle* h, const aotc_rt_matmul* mm, aotc_rt_matmul_state* st) {
  int type = lt_type(mm->dtype);
  /* fp32 computes in fp32 (no TF32); fp16/bf16 accumulate in fp32 with fp32 alpha/beta. */
  cublasStatus_t s = h->lt.matmul_desc_create(&st->desc, AOTC_CUBLAS_COMPUTE_32F, AOTC_CUDA_R_32F);
  if (s != 0) return lt_fail(h, s, "cublasLtMatmulDescCreate", mm->label);
  int32_t trans_a = mm->trans_b ? AOTC_CUBLAS_OP_T : AOTC_CUBLAS_OP_N;
  int32_t trans_b = mm->trans_a ? AOTC_CUBLAS_OP_T : AOTC_CUBLAS_OP_N;
  static const uint32_t kEpilogue[] = {AOTC_CUBLASLT_EPILOGUE_DEFAULT, AOTC_CUBLASLT_EPILOGUE_BIAS,
                                       AOTC_CUBLASLT_EPILOGUE_RELU, AOTC_CUBLASLT_EPILOGUE_RELU_BIAS};
  uint32_t epilogue = kEpilogue[mm->epilogue & 3];
  if ((s = h->lt.matmul_desc_set_attribute(st->desc, AOTC_CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                           sizeof trans_a)) != 0 ||
      (s = h->lt.matmul_desc_set_attribute(st->desc, AOTC_CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                           sizeof trans_b)) != 0 ||
      (s = h->lt.matmul_desc_set_attribute(st->desc, AOTC_CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                           sizeof epilogue)) != 0)
    return lt_fail(h, s, "cublasLtMatmulDescSetAttribute", mm->label);
  int has_c = mm->c.loc != AOTC_LOC_NULL;
  if ((s = make_layout(h, &st->layout_a, type, mm->trans_b ? mm->k : mm->n,
                       mm->trans_b ? mm->n : mm->k, mm->ldb, mm->batch, mm->stride_b)) != 0 ||
      (s = make_layout(h, &st->layout_b, type, mm->trans_a ? mm->m : mm->k,
                       mm->trans_a ? mm->k : mm->m, mm->lda, mm->batch, mm->stride_a)) != 0 ||
      (s = make_layout(h, &st->layout_c, type, mm->n, mm->m, has_c ? mm->ldc : mm->ldd, mm->batch,
                       has_c ? mm->stride_c : mm->stride_d)) != 0 ||
      (s = make_layout(h, &st->layout_d, type, mm->n, mm->m, mm->ldd, mm->batch, mm->stride_d)) != 0)
    return lt_fail(h, s, "cublasLtMatrixLayoutCreate", mm->label);
  cublasLtMatmulPreference_t pref = NULL;
  if ((s = h->lt.preference_create(&pref)) != 0)
    return lt_fail(h, s, "cublasLtMatmulPreferenceCreate", mm->label);
  uint64_t max_ws = h->desc->lt_workspace_bytes;
  s = h->lt.preference_set_attribute(pref, AOTC_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                                     sizeof max_ws);
  cublasLtMatmulHeuristicResult_t result;
  memset(&result, 0, sizeof result);
  int returned = 0;
  if (s == 0)
    s = h->lt.algo_get_heuristic(h->lt_handle, st->desc, st->layout_a, st->layout_b, st->layout_c,
                                 st->layout_d, pref, 1, &result, &returned);
  h->lt.preference_destroy(pref);
  if (s != 0) return lt_fail(h, s, "cublasLtMatmulAlgoGetHeuristic", mm->label);
  if (returned < 1 || result.state != 0)
    return set_error(h, AOTC_ERROR_CUDA, "cuBLASLt has no algorithm for matmul %s", mm->label);
  st->algo = result.algo;
  return AOTC_OK;
}

static void release(aotc_rt_handle* h) {
  if (!h) return;
  int pushed = h->ctx && h->cu.ctx_push && h->cu.ctx_push(h->ctx) == AOTC_CU_SUCCESS;
  if (h->matmuls) {
    for (int i = 0; i < h->desc->num_matmuls; ++i) {
      aotc_rt_matmul_state* st = &h->matmuls[i];
      if (st->layout_a) h->lt.matrix_layout_destroy(st->layout_a);
      if (st->layout_b) h->lt.matrix_layout_destroy(st->layout_b);
      if (st->layout_c) h->lt.matrix_layout_destroy(st->layout_c);
      if (st->layout_d) h->lt.matrix_layout_destroy(st->layout_d);
      if (st->desc) h->lt.matmul_desc_destroy(st->desc);
    }
  }
  if (h->lt_handle) h->lt.destroy(h->lt_handle);
  if (pushed) {
    if (h->staging) h->cu.mem_free(h->staging);
    if (h->owns_arena && h->arena) h->cu.mem_free(h->arena);
    if (h->owns_weights && h->weights) h->cu.mem_free(h->weights);
    for (int i = 0; h->modules && i < h->desc->num_fatbins; ++i)
      if (h->modules[i]) h->cu.module_unload(h->modules[i]);
    CUcontext popped;
    h->cu.ctx_pop(&popped);
  }
  if (h->ctx) h->cu.primary_ctx_release(h->cu_device);
  free(h->matmuls);
  free(h->modules);
  free(h->functions);
  free(h->arg_values);
  free(h->arg_params);
  free(h->staging_inputs);
  free(h->staging_outputs);
  if (h->liblt) dlclose(h->liblt);
  if (h->libcuda) dlclose(h->libcuda);
  free(h);
}

static int create_on_device(aotc_rt_handle* h, void* workspace, const aotc_rt_handle* share) {
  const aotc_rt_model_desc* d = h->desc;
  CUresult r;
  for (int i = 0; i < d->num_fatbins; ++i)
    if ((r = h->cu.module_load_data(&h->modules[i], d->fatbins[i])) != AOTC_CU_SUCCESS)
      return set_error(h, r == AOTC_CU_ERROR_OUT_OF_MEMORY ? AOTC_ERROR_OUT_OF_MEMORY : AOTC_ERROR_CUDA,
                       "cuModuleLoadData failed: %s (the library holds code for %s; does this GPU "
                       "match?)",
                       cu_error_name(h, r), d->archs);
  for (int i = 0; i < d->num_kernels; ++i) {
    if ((r = h->cu.module_get_function(&h->functions[i], h->modules[d->kernels[i].module],
                                       d->kernels[i].name)) !=
        AOTC_CU_SUCCESS)
      return cu_fail(h, r, "cuModuleGetFunction");
    if (d->kernels[i].shared_bytes > kMaxStaticShared &&
        (r = h->cu.func_set_attribute(h->functions[i],
                                      AOTC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      (int)d->kernels[i].shared_bytes)) != AOTC_CU_SUCCESS)
      return cu_fail(h, r, "cuFuncSetAttribute(max dynamic shared memory)");
  }
  if (workspace) {
    h->arena = (CUdeviceptr)(uintptr_t)workspace;
  } else if (d->arena_bytes > 0) {
    if ((r = h->cu.mem_alloc(&h->arena, d->arena_bytes)) != AOTC_CU_SUCCESS)
      return cu_fail(h, r, "cuMemAlloc(arena)");
    h->owns_arena = 1;
  }
  if (share) {
    h->weights = share->weights;
  } else if (d->weight_bytes > 0) {
    if ((r = h->cu.mem_alloc(&h->weights, d->weight_bytes)) != AOTC_CU_SUCCESS)
      return cu_fail(h, r, "cuMemAlloc(weights)");
    h->owns_weights = 1;
    if ((r = h->cu.memcpy_htod(h->weights, d->weights, d->weight_bytes)) != AOTC_CU_SUCCESS)
      return cu_fail(h, r, "cuMemcpyHtoD(weights)");
  }
  if (d->num_matmuls > 0) {
    cublasStatus_t s = h->lt.create(&h->lt_handle);
    if (s != 0) return lt_fail(h, s, "cublasLtCreate", "handle");
    for (int i = 0; i < d->num_matmuls; ++i) {
      int code = prepare_matmul(h, &d->matmuls[i], &h->matmuls[i]);
      if (code != AOTC_OK) return code;
    }
  }
  return AOTC_OK;
}

int aotc_rt_create(aotc_rt_handle** out, const aotc_rt_model_desc* desc, int device,
                   void* workspace, const aotc_rt_handle* share) {
  if (!out) return set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT, "create: `out` is NULL");
  *out = NULL;
  if (((uintptr_t)workspace & 255u) != 0)
    return set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT,
                     "create: workspace %p is not 256-byte aligned", workspace);
  if (share && (share->desc != desc || share->device != device || share->sticky))
    return set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT,
                     "create: share_weights_with is a handle of another model or device, or has "
                     "failed");
  aotc_rt_handle* h = (aotc_rt_handle*)calloc(1, sizeof *h);
  if (!h) return set_error(NULL, AOTC_ERROR_OUT_OF_MEMORY, "create: out of host memory");
  h->desc = desc;
  h->device = device;
  size_t nk = (size_t)desc->num_kernels + 1, na = (size_t)desc->num_kernel_args + 1;
  size_t nm = (size_t)desc->num_matmuls + 1;
  size_t ni = (size_t)desc->num_inputs + 1, no = (size_t)desc->num_outputs + 1;
  h->functions = (CUfunction*)calloc(nk, sizeof *h->functions);
  h->modules = (CUmodule*)calloc((size_t)desc->num_fatbins + 1, sizeof *h->modules);
  h->arg_values = (CUdeviceptr*)calloc(na, sizeof *h->arg_values);
  h->arg_params = (void**)calloc(na, sizeof *h->arg_params);
  h->matmuls = (aotc_rt_matmul_state*)calloc(nm, sizeof *h->matmuls);
  h->staging_inputs = (const void**)calloc(ni, sizeof *h->staging_inputs);
  h->staging_outputs = (void**)calloc(no, sizeof *h->staging_outputs);
  int code = AOTC_OK;
  if (!h->functions || !h->modules || !h->arg_values || !h->arg_params || !h->matmuls || !h->staging_inputs ||
      !h->staging_outputs)
    code = set_error(h, AOTC_ERROR_OUT_OF_MEMORY, "create: out of host memory");
  for (size_t i = 0; code == AOTC_OK && i < na; ++i) h->arg_params[i] = &h->arg_values[i];
  if (code == AOTC_OK) code = load_driver(h);
  CUresult r = AOTC_CU_SUCCESS;
  if (code == AOTC_OK && (r = h->cu.init(0)) != AOTC_CU_SUCCESS)
    code = set_error(h, AOTC_ERROR_NO_DRIVER, "cuInit failed: %s", cu_error_name(h, r));
  int count = 0;
  if (code == AOTC_OK && (r = h->cu.device_get_count(&count)) != AOTC_CU_SUCCESS)
    code = set_error(h, AOTC_ERROR_NO_DRIVER, "cuDeviceGetCount failed: %s", cu_error_name(h, r));
  if (code == AOTC_OK && count == 0)
    code = set_error(h, AOTC_ERROR_NO_DRIVER, "no CUDA device is visible");
  if (code == AOTC_OK && (device < 0 || device >= count))
    code = set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "create: device %d out of range (%d devices)",
                     device, count);
  if (code == AOTC_OK && desc->num_matmuls > 0) code = load_cublaslt(h);
  if (code == AOTC_OK && (r = h->cu.device_get(&h->cu_device, device)) != AOTC_CU_SUCCESS)
    code = cu_fail(h, r, "cuDeviceGet");
  if (code == AOTC_OK && (r = h->cu.primary_ctx_retain(&h->ctx, h->cu_device)) != AOTC_CU_SUCCESS)
    code = cu_fail(h, r, "cuDevicePrimaryCtxRetain");
  if (code == AOTC_OK) {
    if ((r = h->cu.ctx_push(h->ctx)) != AOTC_CU_SUCCESS) {
      code = cu_fail(h, r, "cuCtxPushCurrent");
    } else {
      code = create_on_device(h, workspace, share);
      CUcontext popped;
      h->cu.ctx_pop(&popped);
    }
  }
  if (code != AOTC_OK) {
    set_error(NULL, code, "%s", h->message);
    release(h);
    return code;
  }
  h->message[0] = '\0';
  g_thread_error[0] = '\0';
  *out = h;
  return AOTC_OK;
}

void aotc_rt_destroy(aotc_rt_handle* h) { release(h); }

static CUdeviceptr resolve(const aotc_rt_handle* h, aotc_rt_ref ref, const void* const* inputs,
                           void* const* outputs) {
  switch (ref.loc) {
    case AOTC_LOC_ARENA: return h->arena + ref.offset;
    case AOTC_LOC_WEIGHTS: return h->weights + ref.offset;
    case AOTC_LOC_INPUT: return (CUdeviceptr)(uintptr_t)inputs[ref.index] + ref.offset;
    case AOTC_LOC_OUTPUT: return (CUdeviceptr)(uintptr_t)outputs[ref.index] + ref.offset;
    default: return 0;
  }
}

static int check_io(aotc_rt_handle* h, const void* const* inputs, void* const* outputs) {
  const aotc_rt_model_desc* d = h->desc;
  if (d->num_inputs > 0 && !inputs)
    return set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: `inputs` is NULL");
  if (d->num_outputs > 0 && !outputs)
    return set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: `outputs` is NULL");
  for (int i = 0; i < d->num_inputs; ++i)
    if (!inputs[i] && d->inputs[i].bytes > 0)
      return set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: input %d is NULL", i);
  for (int i = 0; i < d->num_outputs; ++i)
    if (!outputs[i] && d->outputs[i].bytes > 0)
      return set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "run: output %d is NULL", i);
  return AOTC_OK;
}

static int launch_all(aotc_rt_handle* h, const void* const* inputs, void* const* outputs,
                      CUstream stream) {
  const aotc_rt_model_desc* d = h->desc;
  for (int s = 0; s < d->num_steps; ++s) {
    const aotc_rt_step* step = &d->steps[s];
    if (step->kind == AOTC_STEP_KERNEL) {
      const aotc_rt_kernel* k = &d->kernels[step->index];
      for (int a = 0; a < k->num_args; ++a)
        h->arg_values[k->first_arg + a] = resolve(h, d->kernel_args[k->first_arg + a], inputs, outputs);
      CUresult r = h->cu.launch_kernel(h->functions[step->index], k->grid[0], k->grid[1], k->grid[2],
                                       k->block[0], k->block[1], k->block[2], k->shared_bytes,
                                       stream, k->num_args ? &h->arg_params[k->first_arg] : NULL,
                                       NULL);
      if (r != AOTC_CU_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "cuLaunchKernel(%s)", k->name);
        return cu_fail(h, r, what);
      }
    } else if (step->kind == AOTC_STEP_MATMUL) {
      const aotc_rt_matmul* mm = &d->matmuls[step->index];
      aotc_rt_matmul_state* st = &h->matmuls[step->index];
      CUdeviceptr a = resolve(h, mm->a, inputs, outputs), b = resolve(h, mm->b, inputs, outputs);
      CUdeviceptr dd = resolve(h, mm->d, inputs, outputs);
      CUdeviceptr c = mm->c.loc != AOTC_LOC_NULL ? resolve(h, mm->c, inputs, outputs) : dd;
      float alpha = mm->alpha, beta = mm->c.loc != AOTC_LOC_NULL ? mm->beta : 0.0f;
      cublasStatus_t status = 0;
      if (mm->epilogue == AOTC_EPI_BIAS || mm->epilogue == AOTC_EPI_BIAS_RELU) {
        const void* bias = (const void*)(uintptr_t)resolve(h, mm->bias, inputs, outputs);
        status = h->lt.matmul_desc_set_attribute(st->desc, AOTC_CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                 &bias, sizeof bias);
      }
      if (status == 0)
        status = h->lt.matmul(h->lt_handle, st->desc, &alpha, (const void*)(uintptr_t)b,
                              st->layout_a, (const void*)(uintptr_t)a, st->layout_b, &beta,
                              (const void*)(uintptr_t)c, st->layout_c, (void*)(uintptr_t)dd,
                              st->layout_d, &st->algo,
                              (void*)(uintptr_t)(h->arena + d->lt_workspace_offset),
                              d->lt_workspace_bytes, stream);
      if (status != 0) return lt_fail(h, status, "cublasLtMatmul", mm->label);
    } else {
      const aotc_rt_copy* cp = &d->copies[step->index];
      CUresult r = h->cu.memcpy_dtod_async(resolve(h, cp->dst, inputs, outputs),
                                           resolve(h, cp->src, inputs, outputs), cp->bytes, stream);
      if (r != AOTC_CU_SUCCESS) return cu_fail(h, r, "cuMemcpyDtoDAsync(output copy)");
    }
  }
  return AOTC_OK;
}

static int enter(aotc_rt_handle* h) {
  if (!h) return set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT, "the model handle is NULL");
  if (h->sticky) return AOTC_ERROR_STICKY; /* keep the first fault's message */
  CUresult r = h->cu.ctx_push(h->ctx);
  if (r != AOTC_CU_SUCCESS) return cu_fail(h, r, "cuCtxPushCurrent");
  return AOTC_OK;
}

static void leave(aotc_rt_handle* h) {
  CUcontext popped;
  h->cu.ctx_pop(&popped);
}

int aotc_rt_run(aotc_rt_handle* h, const void* const* inputs, void* const* outputs, void* stream) {
  int code = enter(h);
  if (code != AOTC_OK) return code;
  code = check_io(h, inputs, outputs);
  if (code == AOTC_OK) code = launch_all(h, inputs, outputs, (CUstream)stream);
  if (code == AOTC_OK) h->message[0] = '\0';
  leave(h);
  return code;
}

static unsigned long long align256(unsigned long long n) { return (n + 255u) & ~255ull; }

int aotc_rt_run_host(aotc_rt_handle* h, const void* const* inputs, void* const* outputs) {
  int code = enter(h);
  if (code != AOTC_OK) return code;
  const aotc_rt_model_desc* d = h->desc;
  code = check_io(h, inputs, outputs);
  CUresult r = AOTC_CU_SUCCESS;
  if (code == AOTC_OK && !h->staging) {
    unsigned long long total = 256, at = 0;
    for (int i = 0; i < d->num_inputs; ++i) total += align256(d->inputs[i].bytes);
    for (int i = 0; i < d->num_outputs; ++i) total += align256(d->outputs[i].bytes);
    if ((r = h->cu.mem_alloc(&h->staging, total)) != AOTC_CU_SUCCESS) {
      h->staging = 0;
      code = cu_fail(h, r, "cuMemAlloc(run_host staging)");
    }
    for (int i = 0; code == AOTC_OK && i < d->num_inputs; ++i) {
      h->staging_inputs[i] = (const void*)(uintptr_t)(h->staging + at);
      at += align256(d->inputs[i].bytes);
    }
    for (int i = 0; code == AOTC_OK && i < d->num_outputs; ++i) {
      h->staging_outputs[i] = (void*)(uintptr_t)(h->staging + at);
      at += align256(d->outputs[i].bytes);
    }
  }
  /* Synchronous copies and the legacy default stream keep copies and kernels in order. */
  for (int i = 0; code == AOTC_OK && i < d->num_inputs; ++i)
    if (d->inputs[i].bytes > 0 &&
        (r = h->cu.memcpy_htod((CUdeviceptr)(uintptr_t)h->staging_inputs[i], inputs[i],
                               d->inputs[i].bytes)) != AOTC_CU_SUCCESS)
      code = cu_fail(h, r, "cuMemcpyHtoD(input)");
  if (code == AOTC_OK) code = launch_all(h, h->staging_inputs, h->staging_outputs, NULL);
  for (int i = 0; code == AOTC_OK && i < d->num_outputs; ++i)
    if (d->outputs[i].bytes > 0 &&
        (r = h->cu.memcpy_dtoh(outputs[i], (CUdeviceptr)(uintptr_t)h->staging_outputs[i],
                               d->outputs[i].bytes)) != AOTC_CU_SUCCESS)
      code = cu_fail(h, r, "cuMemcpyDtoH(output)");
  if (code == AOTC_OK && (r = h->cu.stream_synchronize(NULL)) != AOTC_CU_SUCCESS)
    code = cu_fail(h, r, "cuStreamSynchronize");
  if (code == AOTC_OK) h->message[0] = '\0';
  leave(h);
  return code;
}

const char* aotc_rt_last_error(const aotc_rt_handle* h) { return h ? h->message : g_thread_error; }

const aotc_rt_io* aotc_rt_io_at(const aotc_rt_io* table, int count, int i) {
  return (i >= 0 && i < count) ? &table[i] : NULL;
}
