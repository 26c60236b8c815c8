/* create / destroy: opens the driver (and cuBLASLt when the model has matmuls), loads the embedded
   fatbins, gets every kernel, runs each library kernel's params builder once (one thread) or copies
   its prebuilt params (built at compile time; the header gives the launch shape and where run()
   patches the pointers either way), allocates the arena and the weights, encodes the prebuilt
   kernels' tensor maps (TMA descriptors) with their arena / weight addresses into their params,
   prepares every cuBLASLt descriptor and algorithm. Plain C11; never aborts. */
#include "aotc_rt_internal.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int lt_type(int dtype) {
  return dtype == AOTC_MM_F16 ? AOTC_CUDA_R_16F
                              : dtype == AOTC_MM_BF16 ? AOTC_CUDA_R_16BF : AOTC_CUDA_R_32F;
}

enum { kLtAlgoConfigClusterShapeId = 8 }; /* CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID */

/* One of an algorithm's configuration attributes, widened; -1 when the library cannot say. */
static long long lt_algo_config(const aotc_rt_handle* h, const cublasLtMatmulAlgo_t* algo, int attr, size_t size) {
  uint32_t v = 0; /* the attributes read here are uint16_t or uint32_t: little-endian, zero-extended */
  size_t written = 0;
  if (!h->lt.algo_config_get_attribute || size > sizeof v ||
      h->lt.algo_config_get_attribute(algo, attr, &v, size, &written) != 0)
    return -1;
  return (long long)v;
}

AOTC_RT_HIDDEN int aotc_rt_lt_cluster_shape(const aotc_rt_handle* h, const cublasLtMatmulAlgo_t* algo) {
  return (int)lt_algo_config(h, algo, kLtAlgoConfigClusterShapeId, sizeof(uint16_t));
}

/* The algorithm's split-K slices (1: none; -1 when the library cannot say), for AOTC_MATMUL_TUNE_LOG. */
AOTC_RT_HIDDEN int aotc_rt_lt_split_k(const aotc_rt_handle* h, const cublasLtMatmulAlgo_t* algo) {
  const long long n = lt_algo_config(h, algo, AOTC_CUBLASLT_ALGO_CONFIG_SPLITK_NUM, sizeof(uint32_t));
  return n == 0 ? 1 : (int)n;
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

/* Split-K variants of the heuristic's first algorithm, for the create-time timing: 2, 4, 8 and 16
   slices of K where the algorithm supports split-K, reduced in place (the output buffer and a few
   counters; deterministic) or, where it does not offer that, in fp32 in the workspace, and where
   cublasLtMatmulAlgoCheck accepts the variant within the library's workspace. The heuristic rarely
   ranks them first, yet a GEMM of few rows and a long K (fp32 transformers at batch 1: M = 128,
   K = 3072, N = 768 fills 6 of 132 SMs with 128 x 128 tiles) needs them. Without the optional
   entry points (an older cuBLASLt, a test's fake library) nothing is added. */
static void add_split_k_candidates(aotc_rt_handle* h, aotc_rt_matmul_state* st) {
  if (!h->lt.algo_config_set_attribute || !h->lt.algo_cap_get_attribute || !h->lt.algo_check ||
      st->num_candidates < 1)
    return;
  const cublasLtMatmulAlgo_t base = st->candidates[0];
  int32_t split_support = 0;
  uint32_t schemes = 0;
  size_t written = 0;
  if (h->lt.algo_cap_get_attribute(&base, AOTC_CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &split_support,
                                   sizeof split_support, &written) != 0 || !split_support)
    return;
  if (h->lt.algo_cap_get_attribute(&base, AOTC_CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
                                   sizeof schemes, &written) != 0)
    return;
  const uint32_t scheme = (schemes & AOTC_CUBLASLT_REDUCTION_SCHEME_INPLACE)        ? AOTC_CUBLASLT_REDUCTION_SCHEME_INPLACE
                          : (schemes & AOTC_CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) ? AOTC_CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE
                                                                                    : 0u;
  if (!scheme) return;
  static const uint32_t kSplits[] = {2, 4, 8, 16};
  for (size_t i = 0; i < sizeof kSplits / sizeof kSplits[0] && st->num_candidates < kAotcMatmulCandidates; ++i) {
    cublasLtMatmulAlgo_t algo = base;
    cublasLtMatmulHeuristicResult_t check;
    memset(&check, 0, sizeof check);
    if (h->lt.algo_config_set_attribute(&algo, AOTC_CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &kSplits[i], sizeof kSplits[i]) != 0 ||
        h->lt.algo_config_set_attribute(&algo, AOTC_CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme) != 0 ||
        h->lt.algo_check(h->lt_handle, st->desc, st->layout_a, st->layout_b, st->layout_c, st->layout_d, &algo,
                         &check) != 0 ||
        check.state != 0 || check.workspaceSize > h->desc->lt_workspace_bytes)
      continue;
    st->candidates[st->num_candidates++] = algo;
  }
}

/* Row-major D = op(A) op(B) is column-major D^T = op(B)^T op(A)^T: cuBLASLt's A is our B and
   cuBLASLt's B is our A, each read column-major with the same leading dimension. */
static int prepare_matmul(aotc_rt_handle* h, const aotc_rt_matmul* mm, aotc_rt_matmul_state* st) {
  int type = lt_type(mm->dtype), d_type = lt_type(mm->d_dtype);
  /* fp32 computes in fp32 (no TF32); fp16/bf16 accumulate in fp32 with fp32 alpha/beta. */
  cublasStatus_t s = h->lt.matmul_desc_create(&st->desc, AOTC_CUBLAS_COMPUTE_32F, AOTC_CUDA_R_32F);
  if (s != 0) return aotc_rt_lt_fail(h, s, "cublasLtMatmulDescCreate", mm->label);
  int32_t trans_a = mm->trans_b ? AOTC_CUBLAS_OP_T : AOTC_CUBLAS_OP_N;
  int32_t trans_b = mm->trans_a ? AOTC_CUBLAS_OP_T : AOTC_CUBLAS_OP_N;
  static const uint32_t kEpilogue[AOTC_EPI_COUNT] = {
      AOTC_CUBLASLT_EPILOGUE_DEFAULT, AOTC_CUBLASLT_EPILOGUE_BIAS, AOTC_CUBLASLT_EPILOGUE_RELU,
      AOTC_CUBLASLT_EPILOGUE_RELU_BIAS, AOTC_CUBLASLT_EPILOGUE_GELU, AOTC_CUBLASLT_EPILOGUE_GELU_BIAS};
  if (mm->epilogue < 0 || mm->epilogue >= AOTC_EPI_COUNT)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA, "matmul %s: unknown epilogue %d", mm->label, mm->epilogue);
  uint32_t epilogue = kEpilogue[mm->epilogue];
  if ((s = h->lt.matmul_desc_set_attribute(st->desc, AOTC_CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                           sizeof trans_a)) != 0 ||
      (s = h->lt.matmul_desc_set_attribute(st->desc, AOTC_CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                           sizeof trans_b)) != 0 ||
      (s = h->lt.matmul_desc_set_attribute(st->desc, AOTC_CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                           sizeof epilogue)) != 0)
    return aotc_rt_lt_fail(h, s, "cublasLtMatmulDescSetAttribute", mm->label);
  int has_c = mm->c.loc != AOTC_LOC_NULL;
  if ((s = make_layout(h, &st->layout_a, type, mm->trans_b ? mm->k : mm->n,
                       mm->trans_b ? mm->n : mm->k, mm->ldb, mm->batch, mm->stride_b)) != 0 ||
      (s = make_layout(h, &st->layout_b, type, mm->trans_a ? mm->m : mm->k,
                       mm->trans_a ? mm->k : mm->m, mm->lda, mm->batch, mm->stride_a)) != 0 ||
      (s = make_layout(h, &st->layout_c, d_type, mm->n, mm->m, has_c ? mm->ldc : mm->ldd, mm->batch,
                       has_c ? mm->stride_c : mm->stride_d)) != 0 ||
      (s = make_layout(h, &st->layout_d, d_type, mm->n, mm->m, mm->ldd, mm->batch, mm->stride_d)) != 0)
    return aotc_rt_lt_fail(h, s, "cublasLtMatrixLayoutCreate", mm->label);
  cublasLtMatmulPreference_t pref = NULL;
  if ((s = h->lt.preference_create(&pref)) != 0)
    return aotc_rt_lt_fail(h, s, "cublasLtMatmulPreferenceCreate", mm->label);
  uint64_t max_ws = h->desc->lt_workspace_bytes;
  s = h->lt.preference_set_attribute(pref, AOTC_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                                     sizeof max_ws);
  /* AOTC_LT_REDUCTION_MASK (measuring): the split-K reduction schemes the heuristic may pick, as
     cuBLASLt's bit mask (1: in place only, so no separate reduction kernel; 7: all, the default). */
  if (s == 0 && h->lt_reduction_mask >= 0) {
    uint32_t mask = (uint32_t)h->lt_reduction_mask;
    s = h->lt.preference_set_attribute(pref, AOTC_CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask);
  }
  /* Candidate 0 is what a one-result query gives (the algorithm used without timing), then the
     others of an 8-result query: whether a query for several ranks its first the same is not
     documented, and a tuned build that kept the 8-query's first measured slower than the
     untuned one on transformers (device call 4, docs/perf_notes.md v8). */
  cublasLtMatmulHeuristicResult_t results[kAotcMatmulHeuristicCandidates];
  memset(results, 0, sizeof results);
  int returned = 0;
  st->num_candidates = 0;
  if (s == 0)
    s = h->lt.algo_get_heuristic(h->lt_handle, st->desc, st->layout_a, st->layout_b, st->layout_c,
                                 st->layout_d, pref, 1, results, &returned);
  if (s == 0 && returned >= 1 && results[0].state == 0) st->candidates[st->num_candidates++] = results[0].algo;
  if (s == 0 && h->tune_matmuls && st->num_candidates == 1) {
    memset(results, 0, sizeof results);
    returned = 0;
    s = h->lt.algo_get_heuristic(h->lt_handle, st->desc, st->layout_a, st->layout_b, st->layout_c,
                                 st->layout_d, pref, kAotcMatmulHeuristicCandidates, results, &returned);
    for (int i = 0; s == 0 && i < returned && i < kAotcMatmulHeuristicCandidates &&
                    st->num_candidates < kAotcMatmulHeuristicCandidates;
         ++i)
      if (results[i].state == 0 &&
          memcmp(&results[i].algo, &st->candidates[0], sizeof results[i].algo) != 0)
        st->candidates[st->num_candidates++] = results[i].algo;
    if (s == 0) add_split_k_candidates(h, st);
  }
  h->lt.preference_destroy(pref);
  if (s != 0) return aotc_rt_lt_fail(h, s, "cublasLtMatmulAlgoGetHeuristic", mm->label);
  if (st->num_candidates < 1)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA, "cuBLASLt has no algorithm for matmul %s", mm->label);
  st->algo = st->candidates[0];
  st->chosen = 0;
  return AOTC_OK;
}

/* Who wrote a library kernel's params, for messages. */
static const char* params_source(const aotc_rt_kernel* k) {
  return k->prebuilt ? "compile-time params builder" : "params builder";
}

/* Checks a library kernel's params header as its builder (device or compile-time) wrote it. */
static int check_params_header(aotc_rt_handle* h, const aotc_rt_kernel* k,
                               const aotc_rt_params_header* ph) {
  const char* src = params_source(k);
  if (ph->magic != AOTC_RT_PARAMS_MAGIC)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: its %s wrote magic 0x%08x, not 0x%08x "
                             "(not an aotc params builder?)",
                             k->name, src, ph->magic, AOTC_RT_PARAMS_MAGIC);
  if (ph->status != 0)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: its %s refused the problem (status "
                             "%d; a bug in aotc's lowering)",
                             k->name, src, ph->status);
  if (ph->params_bytes == 0 ||
      ph->params_bytes > AOTC_RT_PARAMS_MAX_BYTES - AOTC_RT_PARAMS_OFFSET)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: params struct of %u bytes (1 to %d allowed)",
                             k->name, ph->params_bytes,
                             AOTC_RT_PARAMS_MAX_BYTES - AOTC_RT_PARAMS_OFFSET);
  if (ph->num_slots != (unsigned)k->num_args || k->num_args > AOTC_RT_PARAMS_MAX_SLOTS)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: its %s has %u pointer slots, the step "
                             "has %d pointer arguments",
                             k->name, src, ph->num_slots, k->num_args);
  for (int i = 0; i < k->num_args; ++i)
    if (ph->slot_offset[i] != AOTC_RT_SLOT_UNUSED &&
        (ph->slot_offset[i] % 8u != 0 || ph->slot_offset[i] + 8u > ph->params_bytes))
      return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                               "library kernel %s: pointer slot %d at byte %u is misaligned or "
                               "outside the %u-byte params struct",
                               k->name, i, ph->slot_offset[i], ph->params_bytes);
  if (ph->cluster_size > 16)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA, "library kernel %s: cluster of %u CTAs (at most 16)",
                             k->name, ph->cluster_size);
  unsigned long long threads = (unsigned long long)ph->block[0] * ph->block[1] * ph->block[2];
  if (ph->grid[0] == 0 || ph->grid[1] == 0 || ph->grid[2] == 0 || threads == 0 || threads > 1024)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: invalid launch shape from its %s "
                             "(grid %ux%ux%u, block %ux%ux%u)",
                             k->name, src, ph->grid[0], ph->grid[1], ph->grid[2], ph->block[0],
                             ph->block[1], ph->block[2]);
  return AOTC_OK;
}

/* This kernel's AOTC_RT_PARAMS_MAX_BYTES of host memory (header, then the params struct). */
static unsigned char* host_params(aotc_rt_handle* h, int kernel) {
  return h->library_params + (size_t)h->library_index[kernel] * AOTC_RT_PARAMS_MAX_BYTES;
}

/* Runs `name`_params once (1x1x1) into the scratch buffer (allocated at the first builder; the
   caller frees it) and copies header + params into `host` (zeroed). */
static int run_params_builder(aotc_rt_handle* h, int kernel, CUmodule module, CUdeviceptr* scratch,
                              unsigned char* host) {
  const aotc_rt_model_desc* d = h->desc;
  const aotc_rt_kernel* k = &d->kernels[kernel];
  char builder_name[256];
  char what[320];
  snprintf(builder_name, sizeof builder_name, "%s_params", k->name);
  CUfunction builder = NULL;
  CUresult r = h->cu.module_get_function(&builder, module, builder_name);
  if (r != AOTC_CU_SUCCESS) {
    snprintf(what, sizeof what, "cuModuleGetFunction(%s)", builder_name);
    return aotc_rt_cu_fail(h, r, what);
  }
  if (k->num_builder_args < 0 || k->num_builder_args > AOTC_RT_PARAMS_MAX_ARGS)
    return aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT,
                             "library kernel %s: %d builder arguments (at most %d)", k->name,
                             k->num_builder_args, AOTC_RT_PARAMS_MAX_ARGS);
  aotc_rt_builder_args args;
  memset(&args, 0, sizeof args);
  for (int i = 0; i < k->num_builder_args; ++i) args.v[i] = d->builder_args[k->first_builder_arg + i];
  if (!*scratch && (r = h->cu.mem_alloc(scratch, AOTC_RT_PARAMS_MAX_BYTES)) != AOTC_CU_SUCCESS)
    return aotc_rt_cu_fail(h, r, "cuMemAlloc(params scratch)");
  /* The zeroed host copy first, so the bytes the builder leaves alone (padding) are deterministic. */
  if ((r = h->cu.memcpy_htod(*scratch, host, AOTC_RT_PARAMS_MAX_BYTES)) != AOTC_CU_SUCCESS)
    return aotc_rt_cu_fail(h, r, "cuMemcpyHtoD(params scratch)");
  void* params[2] = {scratch, &args};
  if ((r = h->cu.launch_kernel(builder, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL)) != AOTC_CU_SUCCESS) {
    snprintf(what, sizeof what, "cuLaunchKernel(%s)", builder_name);
    return aotc_rt_cu_fail(h, r, what);
  }
  if ((r = h->cu.memcpy_dtoh(host, *scratch, AOTC_RT_PARAMS_MAX_BYTES)) != AOTC_CU_SUCCESS) {
    snprintf(what, sizeof what, "cuMemcpyDtoH(after %s)", builder_name);
    return aotc_rt_cu_fail(h, r, what);
  }
  return AOTC_OK;
}

/* Copies a prebuilt kernel's header + params struct into `host` (zeroed): what its builder would
   have written, had it run here. */
static int copy_prebuilt_params(aotc_rt_handle* h, const aotc_rt_kernel* k, unsigned char* host) {
  if (k->prebuilt_bytes < AOTC_RT_PARAMS_OFFSET + 1 || k->prebuilt_bytes > AOTC_RT_PARAMS_MAX_BYTES)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: prebuilt params of %u bytes (%d to %d allowed: the "
                             "%d-byte header, then the params struct)",
                             k->name, k->prebuilt_bytes, AOTC_RT_PARAMS_OFFSET + 1,
                             AOTC_RT_PARAMS_MAX_BYTES, AOTC_RT_PARAMS_OFFSET);
  memcpy(host, k->prebuilt, k->prebuilt_bytes);
  aotc_rt_params_header ph;
  memcpy(&ph, host, sizeof ph);
  /* A params_bytes out of range is check_params_header's to report. */
  if (ph.params_bytes <= AOTC_RT_PARAMS_MAX_BYTES - AOTC_RT_PARAMS_OFFSET &&
      AOTC_RT_PARAMS_OFFSET + ph.params_bytes > k->prebuilt_bytes)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: prebuilt params of %u bytes end inside its %u-byte "
                             "params struct (at byte %d)",
                             k->name, k->prebuilt_bytes, ph.params_bytes, AOTC_RT_PARAMS_OFFSET);
  return AOTC_OK;
}

/* A library kernel's header + params on the host, from its prebuilt bytes or its builder; then
   the header is checked and gives the launch shape (and a non-portable cluster's attribute). */
static int build_library_params(aotc_rt_handle* h, int kernel, CUmodule module,
                                CUdeviceptr* scratch) {
  const aotc_rt_kernel* k = &h->desc->kernels[kernel];
  unsigned char* host = host_params(h, kernel);
  memset(host, 0, AOTC_RT_PARAMS_MAX_BYTES);
  int code = k->prebuilt ? copy_prebuilt_params(h, k, host)
                         : run_params_builder(h, kernel, module, scratch, host);
  if (code != AOTC_OK) return code;
  aotc_rt_params_header ph;
  memcpy(&ph, host, sizeof ph);
  if ((code = check_params_header(h, k, &ph)) != AOTC_OK) return code;
  /* Clusters over the portable 8 CTAs (sm_90: up to 16) must be allowed on the function. */
  CUresult r;
  if (ph.cluster_size > 8 &&
      (r = h->cu.func_set_attribute(h->functions[kernel], AOTC_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                                    1)) != AOTC_CU_SUCCESS) {
    char what[320];
    snprintf(what, sizeof what, "cuFuncSetAttribute(%s, non-portable cluster size %u)", k->name, ph.cluster_size);
    return aotc_rt_cu_fail(h, r, what);
  }
  aotc_rt_launch_shape* s = &h->shapes[kernel];
  memcpy(s->grid, ph.grid, sizeof s->grid);
  memcpy(s->block, ph.block, sizeof s->block);
  s->shared_bytes = ph.shared_bytes;
  return AOTC_OK;
}

int aotc_rt_prepare_kernels(aotc_rt_handle* h) {
  const aotc_rt_model_desc* d = h->desc;
  CUdeviceptr scratch = 0; /* one builder output buffer for all library kernels with a builder */
  int code = AOTC_OK;
  CUresult r;
  for (int i = 0; code == AOTC_OK && i < d->num_kernels; ++i) {
    const aotc_rt_kernel* k = &d->kernels[i];
    CUmodule module = h->modules[k->module];
    if ((r = h->cu.module_get_function(&h->functions[i], module, k->name)) != AOTC_CU_SUCCESS) {
      char what[320];
      snprintf(what, sizeof what, "cuModuleGetFunction(%s)", k->name);
      code = aotc_rt_cu_fail(h, r, what);
      break;
    }
    if (k->library) {
      code = build_library_params(h, i, module, &scratch);
    } else {
      if (k->cluster_size > 8 &&
          (r = h->cu.func_set_attribute(h->functions[i], AOTC_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)) !=
              AOTC_CU_SUCCESS) {
        char what[320];
        snprintf(what, sizeof what, "cuFuncSetAttribute(%s, non-portable cluster size %u)", k->name, k->cluster_size);
        code = aotc_rt_cu_fail(h, r, what);
        break;
      }
      aotc_rt_launch_shape* s = &h->shapes[i];
      memcpy(s->grid, k->grid, sizeof s->grid);
      memcpy(s->block, k->block, sizeof s->block);
      s->shared_bytes = k->shared_bytes;
    }
    if (code == AOTC_OK && h->shapes[i].shared_bytes > kAotcMaxStaticShared &&
        (r = h->cu.func_set_attribute(h->functions[i],
                                      AOTC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      (int)h->shapes[i].shared_bytes)) != AOTC_CU_SUCCESS)
      code = aotc_rt_cu_fail(h, r, "cuFuncSetAttribute(max dynamic shared memory)");
  }
  if (scratch) h->cu.mem_free(scratch);
  return code;
}

static const char* location_name(int loc) {
  switch (loc) {
    case AOTC_LOC_NULL: return "null";
    case AOTC_LOC_INPUT: return "a graph input";
    case AOTC_LOC_OUTPUT: return "a graph output";
    default: return "of no known location";
  }
}

/* Checks tensor map `mi` of library kernel `kernel` against the kernel's params header (inside
   the struct, 64-byte aligned, clear of the pointer slots run() patches) and gives the address it
   describes: its pointer argument, which must be in the arena or the weights. */
static int check_tensor_map(aotc_rt_handle* h, int kernel, int mi, const aotc_rt_tensor_map* m,
                            const aotc_rt_params_header* ph, CUdeviceptr* address) {
  const aotc_rt_kernel* k = &h->desc->kernels[kernel];
  if (m->arg < 0 || m->arg >= k->num_args)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: tensor map %d describes pointer argument %d (the "
                             "kernel has %d)", k->name, mi, m->arg, k->num_args);
  const aotc_rt_ref ref = h->desc->kernel_args[k->first_arg + m->arg];
  if (ref.loc != AOTC_LOC_ARENA && ref.loc != AOTC_LOC_WEIGHTS)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: tensor map %d describes pointer argument %d, %s "
                             "(only arena and weight tensors have an address fixed at create)",
                             k->name, mi, m->arg, location_name(ref.loc));
  const unsigned long long end = (unsigned long long)m->offset + sizeof(aotc_cu_tensor_map);
  if (m->offset % 64u != 0 || end > ph->params_bytes)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: tensor map %d at byte %u is not 64-byte aligned or "
                             "not inside the %u-byte params struct",
                             k->name, mi, m->offset, ph->params_bytes);
  const int min_rank = m->im2col ? 3 : 1;
  if (m->rank < min_rank || m->rank > 5)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA, "library kernel %s: tensor map %d of rank %d (%s: %d to 5)",
                             k->name, mi, m->rank, m->im2col ? "im2col" : "tiled", min_rank);
  for (int a = 0; a < k->num_args; ++a)
    if (ph->slot_offset[a] != AOTC_RT_SLOT_UNUSED && ph->slot_offset[a] < end &&
        ph->slot_offset[a] + 8u > m->offset)
      return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                               "library kernel %s: tensor map %d at byte %u overlaps pointer slot %d "
                               "at byte %u (run() would overwrite the descriptor)",
                               k->name, mi, m->offset, a, ph->slot_offset[a]);
  *address = (ref.loc == AOTC_LOC_ARENA ? h->arena : h->weights) + ref.offset;
  return AOTC_OK;
}

/* Encodes tensor map `mi` with the driver and writes its 128 bytes into the params struct. */
static int encode_tensor_map(aotc_rt_handle* h, const aotc_rt_kernel* k, int mi,
                             const aotc_rt_tensor_map* m, CUdeviceptr address, unsigned char* params) {
  const char* entry = m->im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled";
  if (m->im2col ? !h->cu.tensor_map_encode_im2col : !h->cu.tensor_map_encode_tiled)
    return aotc_rt_set_error(h, AOTC_ERROR_NO_DRIVER,
                             "the driver has no %s (a CUDA 12+ driver is needed for kernel %s)", entry,
                             k->name);
  aotc_cu_tensor_map map;
  memset(&map, 0, sizeof map);
  void* p = (void*)(uintptr_t)address;
  const unsigned rank = (unsigned)m->rank;
  CUresult r = m->im2col
                   ? h->cu.tensor_map_encode_im2col(&map, m->data_type, rank, p, m->dims, m->strides,
                                                    m->lower, m->upper, m->channels, m->pixels,
                                                    m->element_strides, m->interleave, m->swizzle,
                                                    m->l2_promotion, m->oob_fill)
                   : h->cu.tensor_map_encode_tiled(&map, m->data_type, rank, p, m->dims, m->strides,
                                                   m->box, m->element_strides, m->interleave,
                                                   m->swizzle, m->l2_promotion, m->oob_fill);
  if (r != AOTC_CU_SUCCESS) {
    char what[320];
    snprintf(what, sizeof what, "%s(kernel %s, tensor map %d)", entry, k->name, mi);
    return aotc_rt_cu_fail(h, r, what);
  }
  memcpy(params + m->offset, &map, sizeof map);
  return AOTC_OK;
}

static int encode_kernel_tensor_maps(aotc_rt_handle* h, int kernel) {
  const aotc_rt_model_desc* d = h->desc;
  const aotc_rt_kernel* k = &d->kernels[kernel];
  if (k->num_tensor_maps == 0) return AOTC_OK;
  if (!k->library)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "kernel %s: %d tensor maps, but only a library kernel's params struct "
                             "can hold them", k->name, k->num_tensor_maps);
  if (!d->tensor_maps || k->first_tensor_map < 0 || k->num_tensor_maps < 0 ||
      k->first_tensor_map > d->num_tensor_maps - k->num_tensor_maps)
    return aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "library kernel %s: tensor maps %d (+%d) outside the model's %d",
                             k->name, k->first_tensor_map, k->num_tensor_maps, d->num_tensor_maps);
  unsigned char* host = host_params(h, kernel);
  aotc_rt_params_header ph;
  memcpy(&ph, host, sizeof ph);
  for (int mi = 0; mi < k->num_tensor_maps; ++mi) {
    const aotc_rt_tensor_map* m = &d->tensor_maps[k->first_tensor_map + mi];
    CUdeviceptr address = 0;
    int code = check_tensor_map(h, kernel, mi, m, &ph, &address);
    if (code == AOTC_OK) code = encode_tensor_map(h, k, mi, m, address, host + AOTC_RT_PARAMS_OFFSET);
    if (code != AOTC_OK) return code;
  }
  return AOTC_OK;
}

int aotc_rt_encode_tensor_maps(aotc_rt_handle* h) {
  for (int i = 0; i < h->desc->num_kernels; ++i) {
    int code = encode_kernel_tensor_maps(h, i);
    if (code != AOTC_OK) return code;
  }
  return AOTC_OK;
}

void aotc_rt_release(aotc_rt_handle* h) {
  if (!h) return;
  aotc_rt_registry_remove(h); /* a no-op unless it was registered */
  int pushed = h->ctx && h->cu.ctx_push && h->cu.ctx_push(h->ctx) == AOTC_CU_SUCCESS;
  if (pushed) {
    aotc_rt_graphs_release(h);
    aotc_rt_profile_release(h);
    aotc_rt_aux_release(h);
  }
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
    /* The last handle using the weights frees them (the owner may go before its sharers). */
    if (h->weights_ref && atomic_fetch_sub(&h->weights_ref->refs, 1) == 1) {
      if (h->weights_ref->ptr) h->cu.mem_free(h->weights_ref->ptr);
      free(h->weights_ref);
    }
    h->weights_ref = NULL;
    for (int i = 0; h->modules && i < h->desc->num_fatbins; ++i)
      if (h->modules[i]) h->cu.module_unload(h->modules[i]);
    CUcontext popped;
    h->cu.ctx_pop(&popped);
  }
  if (h->ctx) h->cu.primary_ctx_release(h->cu_device);
  free(h->matmuls);
  free(h->modules);
  free(h->functions);
  free(h->shapes);
  free(h->arg_values);
  free(h->arg_params);
  free(h->library_index);
  free(h->library_params);
  free(h->staging_inputs);
  free(h->staging_outputs);
  free(h->graph_pointer_store);
  free(h->graph_key);
  free(h->profile_events); /* NULL unless the context could not be made current */
  free(h->checked_store);
  free(h->checked_key);
  if (h->liblt) dlclose(h->liblt);
  if (h->libcuda) dlclose(h->libcuda);
  free(h);
}

static int create_on_device(aotc_rt_handle* h, void* workspace, const aotc_rt_handle* share) {
  const aotc_rt_model_desc* d = h->desc;
  CUresult r;
  for (int i = 0; i < d->num_fatbins; ++i)
    if ((r = h->cu.module_load_data(&h->modules[i], d->fatbins[i])) != AOTC_CU_SUCCESS) {
      if (aotc_rt_cu_error_is_sticky(r)) return aotc_rt_cu_fail(h, r, "cuModuleLoadData");
      return aotc_rt_set_error(
          h, r == AOTC_CU_ERROR_OUT_OF_MEMORY ? AOTC_ERROR_OUT_OF_MEMORY : AOTC_ERROR_CUDA,
          "cuModuleLoadData failed: %s (the library holds code for %s; does this GPU match?)",
          aotc_rt_cu_error_name(h, r), d->archs);
    }
  int code = aotc_rt_prepare_kernels(h);
  if (code != AOTC_OK) return code;
  aotc_rt_pdl_setup(h);
  aotc_rt_aux_setup(h);
  if (workspace) {
    code = aotc_rt_check_device_pointer(h, workspace, d->arena_bytes, "create: workspace");
    if (code != AOTC_OK) return code;
    h->arena = (CUdeviceptr)(uintptr_t)workspace;
  } else if (d->arena_bytes > 0) {
    if ((r = h->cu.mem_alloc(&h->arena, d->arena_bytes)) != AOTC_CU_SUCCESS)
      return aotc_rt_cu_fail(h, r, "cuMemAlloc(arena)");
    h->owns_arena = 1;
  }
  if (share) {
    h->weights = share->weights;
    h->weights_ref = share->weights_ref;
    if (h->weights_ref) atomic_fetch_add(&h->weights_ref->refs, 1);
  } else if (d->weight_bytes > 0) {
    if (!(h->weights_ref = (aotc_rt_weights*)calloc(1, sizeof *h->weights_ref)))
      return aotc_rt_set_error(h, AOTC_ERROR_OUT_OF_MEMORY, "create: out of host memory");
    atomic_init(&h->weights_ref->refs, 1);
    if ((r = h->cu.mem_alloc(&h->weights, d->weight_bytes)) != AOTC_CU_SUCCESS)
      return aotc_rt_cu_fail(h, r, "cuMemAlloc(weights)");
    h->weights_ref->ptr = h->weights;
    if ((r = h->cu.memcpy_htod(h->weights, d->weights, d->weight_bytes)) != AOTC_CU_SUCCESS)
      return aotc_rt_cu_fail(h, r, "cuMemcpyHtoD(weights)");
  }
  /* TMA descriptors hold the arena's and the weights' addresses: encoded now that both exist. */
  if ((code = aotc_rt_encode_tensor_maps(h)) != AOTC_OK) return code;
  if (d->num_matmuls > 0) {
    cublasStatus_t s = h->lt.create(&h->lt_handle);
    if (s != 0) return aotc_rt_lt_fail(h, s, "cublasLtCreate", "handle");
    for (int i = 0; i < d->num_matmuls; ++i) {
      code = prepare_matmul(h, &d->matmuls[i], &h->matmuls[i]);
      if (code != AOTC_OK) return code;
    }
    code = aotc_rt_tune_matmuls(h);
  }
  return code;
}

aotc_rt_handle* aotc_rt_handle_new(const aotc_rt_model_desc* desc, int device) {
  aotc_rt_handle* h = (aotc_rt_handle*)calloc(1, sizeof *h);
  if (!h) return NULL;
  h->desc = desc;
  h->device = device;
  size_t nk = (size_t)desc->num_kernels + 1, na = (size_t)desc->num_kernel_args + 1;
  size_t nm = (size_t)desc->num_matmuls + 1;
  size_t ni = (size_t)desc->num_inputs + 1, no = (size_t)desc->num_outputs + 1;
  size_t nio = (size_t)desc->num_inputs + (size_t)desc->num_outputs + 1;
  for (int i = 0; i < desc->num_kernels; ++i) h->num_library += desc->kernels[i].library ? 1 : 0;
  h->functions = (CUfunction*)calloc(nk, sizeof *h->functions);
  h->shapes = (aotc_rt_launch_shape*)calloc(nk, sizeof *h->shapes);
  h->modules = (CUmodule*)calloc((size_t)desc->num_fatbins + 1, sizeof *h->modules);
  h->arg_values = (CUdeviceptr*)calloc(na, sizeof *h->arg_values);
  h->arg_params = (void**)calloc(na, sizeof *h->arg_params);
  h->library_index = (int*)calloc(nk, sizeof *h->library_index);
  h->library_params = (unsigned char*)calloc((size_t)h->num_library + 1, AOTC_RT_PARAMS_MAX_BYTES);
  h->matmuls = (aotc_rt_matmul_state*)calloc(nm, sizeof *h->matmuls);
  h->staging_inputs = (const void**)calloc(ni, sizeof *h->staging_inputs);
  h->staging_outputs = (void**)calloc(no, sizeof *h->staging_outputs);
  h->graph_pointer_store = (CUdeviceptr*)calloc(nio * kAotcGraphCacheEntries, sizeof(CUdeviceptr));
  h->graph_key = (CUdeviceptr*)calloc(nio, sizeof *h->graph_key);
  h->checked_store = (CUdeviceptr*)calloc(nio * kAotcCheckedSets, sizeof(CUdeviceptr));
  h->checked_key = (CUdeviceptr*)calloc(nio, sizeof *h->checked_key);
  if (!h->functions || !h->shapes || !h->modules || !h->arg_values || !h->arg_params ||
      !h->library_index || !h->library_params || !h->matmuls || !h->staging_inputs ||
      !h->staging_outputs || !h->graph_pointer_store || !h->graph_key || !h->checked_store ||
      !h->checked_key) {
    aotc_rt_release(h);
    return NULL;
  }
  for (size_t i = 0; i < na; ++i) h->arg_params[i] = &h->arg_values[i];
  for (int i = 0, next = 0; i < desc->num_kernels; ++i)
    h->library_index[i] = desc->kernels[i].library ? next++ : -1;
  for (int e = 0; e < kAotcGraphCacheEntries; ++e) h->graphs[e].pointers = h->graph_pointer_store + nio * (size_t)e;
  h->graphs_enabled = !aotc_rt_env_flag(getenv("AOTC_NO_CUDA_GRAPH"));
  h->pdl_allowed = !aotc_rt_env_flag(getenv("AOTC_NO_PDL"));
  {
    const char* mask = getenv("AOTC_LT_REDUCTION_MASK");
    h->lt_reduction_mask = (mask && mask[0] >= '0' && mask[0] <= '7' && mask[1] == 0) ? mask[0] - '0' : -1;
  }
  h->tune_matmuls = desc->tune_matmuls || aotc_rt_env_flag(getenv("AOTC_MATMUL_TUNE"));
  if (aotc_rt_env_flag(getenv("AOTC_NO_MATMUL_TUNE"))) h->tune_matmuls = 0;
  return h;
}

int aotc_rt_create(aotc_rt_handle** out, const aotc_rt_model_desc* desc, int device,
                   void* workspace, const aotc_rt_handle* share) {
  if (!out) return aotc_rt_set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT, "create: `out` is NULL");
  *out = NULL;
  if (((uintptr_t)workspace & 255u) != 0)
    return aotc_rt_set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT,
                             "create: workspace %p is not 256-byte aligned", workspace);
  if (share && !aotc_rt_registry_contains(share))
    return aotc_rt_set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT,
                             "create: share_weights_with (%p) is not a live handle of this library "
                             "(destroyed, or never created by it)",
                             (const void*)share);
  if (share && (share->desc != desc || share->device != device || share->sticky))
    return aotc_rt_set_error(NULL, AOTC_ERROR_INVALID_ARGUMENT,
                             "create: share_weights_with is a handle of another model or device, "
                             "or has failed");
  aotc_rt_handle* h = aotc_rt_handle_new(desc, device);
  if (!h) return aotc_rt_set_error(NULL, AOTC_ERROR_OUT_OF_MEMORY, "create: out of host memory");
  int code = aotc_rt_load_driver(h);
  /* Without every graph entry point, run() launches plainly. */
  if (!h->cu.graph_launch) h->graphs_enabled = 0;
  CUresult r = AOTC_CU_SUCCESS;
  /* A sticky fault of this process's context (another handle's, another library's) is
     AOTC_ERROR_STICKY wherever the driver reports it, not "no driver". */
  if (code == AOTC_OK && (r = h->cu.init(0)) != AOTC_CU_SUCCESS)
    code = aotc_rt_cu_error_is_sticky(r) ? aotc_rt_cu_fail(h, r, "cuInit")
                                         : aotc_rt_set_error(h, AOTC_ERROR_NO_DRIVER, "cuInit failed: %s",
                                                             aotc_rt_cu_error_name(h, r));
  int count = 0;
  if (code == AOTC_OK && (r = h->cu.device_get_count(&count)) != AOTC_CU_SUCCESS)
    code = aotc_rt_cu_error_is_sticky(r)
               ? aotc_rt_cu_fail(h, r, "cuDeviceGetCount")
               : aotc_rt_set_error(h, AOTC_ERROR_NO_DRIVER, "cuDeviceGetCount failed: %s",
                                   aotc_rt_cu_error_name(h, r));
  if (code == AOTC_OK && count == 0)
    code = aotc_rt_set_error(h, AOTC_ERROR_NO_DRIVER, "no CUDA device is visible");
  if (code == AOTC_OK && (device < 0 || device >= count))
    code = aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT,
                             "create: device %d out of range (%d devices)", device, count);
  if (code == AOTC_OK && desc->num_matmuls > 0) code = aotc_rt_load_cublaslt(h);
  if (code == AOTC_OK && (r = h->cu.device_get(&h->cu_device, device)) != AOTC_CU_SUCCESS)
    code = aotc_rt_cu_fail(h, r, "cuDeviceGet");
  if (code == AOTC_OK && (r = h->cu.primary_ctx_retain(&h->ctx, h->cu_device)) != AOTC_CU_SUCCESS)
    code = aotc_rt_cu_fail(h, r, "cuDevicePrimaryCtxRetain");
  if (code == AOTC_OK) {
    if ((r = h->cu.ctx_push(h->ctx)) != AOTC_CU_SUCCESS) {
      code = aotc_rt_cu_fail(h, r, "cuCtxPushCurrent");
    } else {
      code = create_on_device(h, workspace, share);
      CUcontext popped;
      h->cu.ctx_pop(&popped);
    }
  }
  if (code == AOTC_OK && !aotc_rt_registry_add(h))
    code = aotc_rt_set_error(h, AOTC_ERROR_OUT_OF_MEMORY, "create: out of host memory");
  if (code != AOTC_OK) {
    aotc_rt_set_error(NULL, code, "%s", h->message);
    aotc_rt_release(h);
    return code;
  }
  h->message[0] = '\0';
  aotc_rt_thread_error()[0] = '\0';
  *out = h;
  return AOTC_OK;
}

/* A handle that is not live (destroyed already, or not from this library) is left alone: double
   destroy is a no-op. */
void aotc_rt_destroy(aotc_rt_handle* h) {
  if (h && aotc_rt_registry_remove(h)) aotc_rt_release(h);
}

const char* aotc_rt_last_error(const aotc_rt_handle* h) {
  if (!h) return aotc_rt_thread_error();
  if (!aotc_rt_registry_contains(h))
    return "not a live handle of this library (destroyed, or never created by it)";
  return h->message;
}

const aotc_rt_io* aotc_rt_io_at(const aotc_rt_io* table, int count, int i) {
  return (i >= 0 && i < count) ? &table[i] : NULL;
}
