/* The optional profiling extension (<prefix>_profile_*; docs/abi.md): the launch sequence run
   without CUDA graphs, with an event recorded before and after every step (kernel, cuBLASLt matmul,
   copy) on the caller's stream and one synchronisation at the end, so each step's GPU time comes
   back. run() is untouched: profiling is its own entry point, which creates its events at its
   first call (2 per step, kept until destroy). The step table's labels, FLOPs and bytes are
   computed at compile time. Plain C11; never aborts. */
#include "aotc_rt_internal.h"

#include <stdlib.h>

const aotc_rt_step* aotc_rt_step_at(const aotc_rt_model_desc* desc, int i) {
  return (desc && i >= 0 && i < desc->num_steps) ? &desc->steps[i] : NULL;
}

const char* aotc_rt_step_kind_name(int kind) {
  switch (kind) {
    case AOTC_STEP_KERNEL: return "kernel";
    case AOTC_STEP_MATMUL: return "matmul";
    case AOTC_STEP_COPY: return "copy";
    default: return "unknown";
  }
}

void aotc_rt_profile_release(aotc_rt_handle* h) {
  for (int i = 0; h->profile_events && i < h->num_profile_events; ++i)
    if (h->profile_events[i] && h->cu.event_destroy) h->cu.event_destroy(h->profile_events[i]);
  free(h->profile_events);
  h->profile_events = NULL;
  h->num_profile_events = 0;
}

/* 2 events per step, all or none. */
static int create_events(aotc_rt_handle* h) {
  int n = 2 * h->desc->num_steps;
  h->profile_events = (CUevent*)calloc((size_t)n + 1, sizeof *h->profile_events);
  if (!h->profile_events)
    return aotc_rt_set_error(h, AOTC_ERROR_OUT_OF_MEMORY, "profile_run: out of host memory");
  h->num_profile_events = n;
  for (int i = 0; i < n; ++i) {
    CUresult r = h->cu.event_create(&h->profile_events[i], 0 /* CU_EVENT_DEFAULT: timing on */);
    if (r != AOTC_CU_SUCCESS) {
      h->profile_events[i] = NULL;
      int code = aotc_rt_cu_fail(h, r, "cuEventCreate");
      aotc_rt_profile_release(h);
      return code;
    }
  }
  return AOTC_OK;
}

static int profile_steps(aotc_rt_handle* h, const void* const* inputs, void* const* outputs,
                         CUstream stream, float* step_ms) {
  const aotc_rt_model_desc* d = h->desc;
  CUresult r;
  for (int s = 0; s < d->num_steps; ++s) {
    if ((r = h->cu.event_record(h->profile_events[2 * s], stream)) != AOTC_CU_SUCCESS)
      return aotc_rt_cu_fail(h, r, "cuEventRecord");
    int code = aotc_rt_launch_step(h, s, inputs, outputs, stream);
    if (code != AOTC_OK) return code;
    if ((r = h->cu.event_record(h->profile_events[2 * s + 1], stream)) != AOTC_CU_SUCCESS)
      return aotc_rt_cu_fail(h, r, "cuEventRecord");
  }
  if (d->num_steps == 0) return AOTC_OK;
  /* The stream runs in order: once the last event completed, every earlier one has. */
  if ((r = h->cu.event_synchronize(h->profile_events[2 * d->num_steps - 1])) != AOTC_CU_SUCCESS)
    return aotc_rt_cu_fail(h, r, "cuEventSynchronize");
  for (int s = 0; s < d->num_steps; ++s) {
    float ms = 0.0f;
    if ((r = h->cu.event_elapsed_time(&ms, h->profile_events[2 * s], h->profile_events[2 * s + 1])) !=
        AOTC_CU_SUCCESS)
      return aotc_rt_cu_fail(h, r, "cuEventElapsedTime");
    step_ms[s] = ms;
  }
  return AOTC_OK;
}

int aotc_rt_profile_run(aotc_rt_handle* h, const void* const* inputs, void* const* outputs,
                        void* stream, float* step_ms) {
  int code = aotc_rt_enter(h);
  if (code != AOTC_OK) return code;
  CUstream s = (CUstream)stream;
  int capturing = AOTC_CU_STREAM_CAPTURE_STATUS_NONE;
  if (!step_ms && h->desc->num_steps > 0)
    code = aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT, "profile_run: `step_ms` is NULL");
  if (code == AOTC_OK) code = aotc_rt_check_io(h, inputs, outputs, 1);
  if (code == AOTC_OK) code = aotc_rt_check_pointer_set(h, inputs, outputs, "profile_run");
  if (code == AOTC_OK && !h->cu.event_create)
    code = aotc_rt_set_error(h, AOTC_ERROR_CUDA,
                             "profile_run: libcuda.so.1 lacks the event entry points");
  if (code == AOTC_OK && s && s != AOTC_CU_STREAM_LEGACY && h->cu.stream_is_capturing &&
      h->cu.stream_is_capturing(s, &capturing) == AOTC_CU_SUCCESS &&
      capturing != AOTC_CU_STREAM_CAPTURE_STATUS_NONE)
    code = aotc_rt_set_error(h, AOTC_ERROR_INVALID_ARGUMENT,
                             "profile_run: the stream is being captured (profile outside a capture)");
  if (code == AOTC_OK && !h->profile_events) code = create_events(h);
  if (code == AOTC_OK) {
    /* Plain launches: an early-started kernel would be timed from before its predecessor ended. */
    int pdl = h->pdl_enabled;
    h->pdl_enabled = 0;
    code = profile_steps(h, inputs, outputs, s, step_ms);
    h->pdl_enabled = pdl;
  }
  if (code == AOTC_OK) h->message[0] = '\0';
  aotc_rt_leave(h);
  return code;
}
