/* create-time choice among cuBLASLt's candidate algorithms: for every matmul with more than one
   candidate (the heuristic's first kAotcMatmulCandidates), each is timed with events on the
   device the library runs on (kAotcMatmulTuneReps calls replayed as a CUDA graph on a private
   stream, after one warm-up replay) and the fastest becomes the one run() uses when it beats
   the heuristic's first by AOTC_MATMUL_TUNE_MARGIN. Every operand that is not a weight, and the cuBLASLt workspace,
   is a stand-in in one temporary buffer (timing needs addresses, not values), so create() never
   writes the arena (a caller's workspace may be in use by another handle). A candidate that fails to launch is skipped; when no event entry points
   exist, AOTC_NO_MATMUL_TUNE is set, or the temporary buffer cannot be allocated, the heuristic's
   first algorithm stays. Like TensorRT's builder, but on the target GPU at create(). On when the
   library was built with --tune-matmuls on or AOTC_MATMUL_TUNE=1 is set.
   AOTC_MATMUL_TUNE_LOG=1 prints each matmul's times to stderr (debugging only). */
#include "aotc_rt_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long elem_bytes(int dtype) { return dtype == AOTC_MM_F32 ? 4u : 2u; }

/* Bytes spanned by a row-major operand of `rows` x `cols` with leading dimension `ld`, batched. */
static unsigned long long span(long long rows, long long cols, long long ld, long long batch,
                               long long stride, int dtype) {
  if (rows <= 0 || cols <= 0) return 0;
  unsigned long long elems = (unsigned long long)((rows - 1) * ld + cols);
  if (batch > 1) elems += (unsigned long long)((batch - 1) * stride);
  return elems * elem_bytes(dtype);
}

static int caller_owned(aotc_rt_ref r) {
  return r.loc == AOTC_LOC_INPUT || r.loc == AOTC_LOC_OUTPUT || r.loc == AOTC_LOC_ARENA;
}

static unsigned long long stand_in_bytes(const aotc_rt_matmul* mm) {
  unsigned long long need = 0, s;
  if (caller_owned(mm->a) &&
      (s = span(mm->trans_a ? mm->k : mm->m, mm->trans_a ? mm->m : mm->k, mm->lda, mm->batch,
                mm->stride_a, mm->dtype)) > need)
    need = s;
  if (caller_owned(mm->b) &&
      (s = span(mm->trans_b ? mm->n : mm->k, mm->trans_b ? mm->k : mm->n, mm->ldb, mm->batch,
                mm->stride_b, mm->dtype)) > need)
    need = s;
  if (mm->c.loc != AOTC_LOC_NULL && caller_owned(mm->c) &&
      (s = span(mm->m, mm->n, mm->ldc, mm->batch, mm->stride_c, mm->d_dtype)) > need)
    need = s;
  if (caller_owned(mm->d) && (s = span(mm->m, mm->n, mm->ldd, mm->batch, mm->stride_d, mm->d_dtype)) > need)
    need = s;
  if (caller_owned(mm->bias) && (s = (unsigned long long)mm->n * elem_bytes(mm->d_dtype)) > need) need = s;
  return need;
}

static CUdeviceptr operand(const aotc_rt_handle* h, aotc_rt_ref r, CUdeviceptr stand_in) {
  switch (r.loc) {
    case AOTC_LOC_WEIGHTS: return h->weights + r.offset;
    case AOTC_LOC_ARENA:
    case AOTC_LOC_INPUT:
    case AOTC_LOC_OUTPUT: return stand_in;
    default: return 0;
  }
}

/* Time per call of candidate `c` of matmul `i` in ms; negative when it could not run. The calls
   are captured into a CUDA graph and replayed, as run() does: timing separate launches would
   measure the host's launch rate (~10 us a call), not the kernel. */
static float time_candidate(aotc_rt_handle* h, int i, int c, CUdeviceptr stand_in,
                            CUdeviceptr workspace, CUstream stream, CUevent start, CUevent stop) {
  const aotc_rt_matmul* mm = &h->desc->matmuls[i];
  const cublasLtMatmulAlgo_t* algo = &h->matmuls[i].candidates[c];
  CUdeviceptr a = operand(h, mm->a, stand_in), b = operand(h, mm->b, stand_in);
  CUdeviceptr d = operand(h, mm->d, stand_in);
  CUdeviceptr cc = mm->c.loc != AOTC_LOC_NULL ? operand(h, mm->c, stand_in) : 0;
  CUdeviceptr bias = AOTC_EPI_HAS_BIAS(mm->epilogue)
                         ? operand(h, mm->bias, stand_in)
                         : 0;
  /* One plain call first: an algorithm that cannot run fails here, outside any capture. */
  if (aotc_rt_issue_matmul(h, i, algo, a, b, cc, d, bias, workspace, stream) != 0 ||
      h->cu.stream_synchronize(stream) != AOTC_CU_SUCCESS)
    return -1.0f;
  if (h->cu.stream_begin_capture(stream, AOTC_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != AOTC_CU_SUCCESS)
    return -1.0f;
  int ok = 1;
  for (int r = 0; r < kAotcMatmulTuneReps && ok; ++r)
    ok = aotc_rt_issue_matmul(h, i, algo, a, b, cc, d, bias, workspace, stream) == 0;
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  if (h->cu.stream_end_capture(stream, &graph) != AOTC_CU_SUCCESS || !graph) return -1.0f;
  if (ok && h->cu.graph_instantiate(&exec, graph, 0) != AOTC_CU_SUCCESS) exec = NULL;
  h->cu.graph_destroy(graph);
  if (!exec) return -1.0f;
  float ms = -1.0f;
  if (h->cu.graph_launch(exec, stream) == AOTC_CU_SUCCESS && /* warm-up */
      h->cu.event_record(start, stream) == AOTC_CU_SUCCESS &&
      h->cu.graph_launch(exec, stream) == AOTC_CU_SUCCESS &&
      h->cu.event_record(stop, stream) == AOTC_CU_SUCCESS &&
      h->cu.event_synchronize(stop) == AOTC_CU_SUCCESS &&
      h->cu.event_elapsed_time(&ms, start, stop) == AOTC_CU_SUCCESS)
    ms /= (float)kAotcMatmulTuneReps;
  else
    ms = -1.0f;
  h->cu.graph_exec_destroy(exec);
  return ms;
}

int aotc_rt_tune_matmuls(aotc_rt_handle* h) {
  const aotc_rt_model_desc* d = h->desc;
  if (!h->tune_matmuls || !h->cu.event_create || !h->cu.stream_create || !h->cu.graph_launch ||
      d->num_matmuls == 0)
    return AOTC_OK;
  unsigned long long need = 256;
  int any = 0;
  for (int i = 0; i < d->num_matmuls; ++i) {
    unsigned long long s = stand_in_bytes(&d->matmuls[i]);
    if (s > need) need = s;
    any |= h->matmuls[i].num_candidates > 1;
  }
  if (!any) return AOTC_OK;
  /* [stand-in operands | workspace], both 256-byte aligned. */
  need = (need + 255u) & ~255ull;
  unsigned long long total = need + d->lt_workspace_bytes;
  CUdeviceptr stand_in = 0;
  CUevent start = NULL, stop = NULL;
  CUstream stream = NULL;
  if (h->cu.mem_alloc(&stand_in, total) != AOTC_CU_SUCCESS) return AOTC_OK; /* keep the heuristic's */
  if (h->cu.stream_create(&stream, 1 /* CU_STREAM_NON_BLOCKING */) != AOTC_CU_SUCCESS) stream = NULL;
  if (stream && h->cu.event_create(&start, 0) == AOTC_CU_SUCCESS &&
      h->cu.event_create(&stop, 0) == AOTC_CU_SUCCESS) {
    for (int i = 0; i < d->num_matmuls; ++i) {
      aotc_rt_matmul_state* st = &h->matmuls[i];
      if (st->num_candidates < 2) continue;
      int best = 0;
      float best_ms = -1.0f;
      for (int c = 0; c < st->num_candidates; ++c) {
        float ms = time_candidate(h, i, c, stand_in, stand_in + need, stream, start, stop);
        if (c == 0) st->first_ms = ms > 0.0f ? ms : 0.0f;
        if (ms > 0.0f && (best_ms < 0.0f || ms < best_ms)) {
          best = c;
          best_ms = ms;
        }
      }
      if (best_ms > 0.0f && (st->first_ms <= 0.0f || best_ms < AOTC_MATMUL_TUNE_MARGIN * st->first_ms)) {
        st->chosen = best;
        st->chosen_ms = best_ms;
        st->algo = st->candidates[best];
      } else {
        st->chosen = 0;
        st->chosen_ms = st->first_ms;
        st->algo = st->candidates[0];
      }
    }
  }
  if (aotc_rt_env_flag(getenv("AOTC_MATMUL_TUNE_LOG")))
    for (int i = 0; i < d->num_matmuls; ++i) {
      const aotc_rt_matmul_state* st = &h->matmuls[i];
      fprintf(stderr,
              "[aotc] matmul %s: %d candidates, heuristic's first %.4f ms, chosen #%d %.4f ms "
              "(cluster shape id %d, split-K %d)\n",
              d->matmuls[i].label, st->num_candidates, st->first_ms, st->chosen, st->chosen_ms,
              aotc_rt_lt_cluster_shape(h, &st->algo), aotc_rt_lt_split_k(h, &st->algo));
    }
  if (start) h->cu.event_destroy(start);
  if (stop) h->cu.event_destroy(stop);
  if (stream) {
    h->cu.stream_synchronize(stream);
    h->cu.stream_destroy(stream);
  }
  h->cu.mem_free(stand_in);
  return AOTC_OK;
}
