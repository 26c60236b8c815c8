/* CUDA graphs for run(): the launch sequence (kernels, cuBLASLt calls, copies) is captured once per
   (stream, input and output pointers) with thread-local stream capture, instantiated, and replayed
   with cuGraphLaunch. A handle keeps the last kAotcGraphCacheEntries pointer sets (least recently
   used is replaced; an in-flight exec is freed by the driver when it completes). Plain launches
   instead when: AOTC_NO_CUDA_GRAPH is set (read at create), the driver lacks the entry points, the
   stream is NULL or the legacy default stream (not capturable), the caller is capturing the stream
   itself (our launches join its graph), or a capture failed once on this handle (not retried).
   Results are identical either way. Plain C11; never aborts. */
#include "aotc_rt_internal.h"

#include <stdint.h>
#include <string.h>

int aotc_rt_env_flag(const char* value) {
  if (!value) return 0;
  while (*value == ' ' || *value == '\t') ++value;
  if (*value == '\0') return 0;
  if (value[0] == '0' && value[1] == '\0') return 0;
  return 1; /* "1", "yes", "true", anything else that is set */
}

void aotc_rt_graphs_release(aotc_rt_handle* h) {
  for (int e = 0; e < kAotcGraphCacheEntries; ++e) {
    if (h->graphs[e].exec && h->cu.graph_exec_destroy) h->cu.graph_exec_destroy(h->graphs[e].exec);
    h->graphs[e].exec = NULL;
  }
}

static int key_size(const aotc_rt_handle* h) { return h->desc->num_inputs + h->desc->num_outputs; }

static void make_key(aotc_rt_handle* h, const void* const* inputs, void* const* outputs) {
  const aotc_rt_model_desc* d = h->desc;
  for (int i = 0; i < d->num_inputs; ++i) h->graph_key[i] = (CUdeviceptr)(uintptr_t)inputs[i];
  for (int i = 0; i < d->num_outputs; ++i)
    h->graph_key[d->num_inputs + i] = (CUdeviceptr)(uintptr_t)outputs[i];
}

static aotc_rt_graph_entry* find_entry(aotc_rt_handle* h, CUstream stream) {
  size_t bytes = (size_t)key_size(h) * sizeof(CUdeviceptr);
  for (int e = 0; e < kAotcGraphCacheEntries; ++e) {
    aotc_rt_graph_entry* g = &h->graphs[e];
    if (g->exec && g->stream == stream && memcmp(g->pointers, h->graph_key, bytes) == 0) return g;
  }
  return NULL;
}

/* An empty slot, else the least recently used one (its exec destroyed). */
static aotc_rt_graph_entry* take_slot(aotc_rt_handle* h) {
  aotc_rt_graph_entry* victim = &h->graphs[0];
  for (int e = 0; e < kAotcGraphCacheEntries; ++e) {
    aotc_rt_graph_entry* g = &h->graphs[e];
    if (!g->exec) return g;
    if (g->last_use < victim->last_use) victim = g;
  }
  h->cu.graph_exec_destroy(victim->exec);
  victim->exec = NULL;
  return victim;
}

/* Captures the launch sequence on `stream`; NULL when capture does not work here (then the handle
   stops trying). A genuine launch error leaves it to the plain path to report. */
static CUgraphExec capture(aotc_rt_handle* h, const void* const* inputs, void* const* outputs,
                           CUstream stream) {
  if (h->cu.stream_begin_capture(stream, AOTC_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) !=
      AOTC_CU_SUCCESS) {
    h->graphs_failed = 1;
    return NULL;
  }
  int code = aotc_rt_launch_lanes(h, inputs, outputs, stream);
  CUgraph graph = NULL;
  CUresult r = h->cu.stream_end_capture(stream, &graph); /* always: leave the stream usable */
  CUgraphExec exec = NULL;
  if (code == AOTC_OK && r == AOTC_CU_SUCCESS && graph) {
    if (h->cu.graph_instantiate(&exec, graph, 0) != AOTC_CU_SUCCESS) exec = NULL;
  }
  if (graph) h->cu.graph_destroy(graph); /* the exec does not need it */
  if (!exec) {
    h->graphs_failed = 1;
    h->message[0] = '\0';
  }
  return exec;
}

int aotc_rt_run_graph_or_plain(aotc_rt_handle* h, const void* const* inputs, void* const* outputs,
                               CUstream stream) {
  int status = AOTC_CU_STREAM_CAPTURE_STATUS_NONE;
  if (h->graphs_enabled && !h->graphs_failed && stream && stream != AOTC_CU_STREAM_LEGACY &&
      h->cu.stream_is_capturing(stream, &status) == AOTC_CU_SUCCESS &&
      status == AOTC_CU_STREAM_CAPTURE_STATUS_NONE) {
    make_key(h, inputs, outputs);
    aotc_rt_graph_entry* g = find_entry(h, stream);
    if (!g) {
      CUgraphExec exec = capture(h, inputs, outputs, stream);
      if (exec) {
        g = take_slot(h);
        g->exec = exec;
        g->stream = stream;
        memcpy(g->pointers, h->graph_key, (size_t)key_size(h) * sizeof(CUdeviceptr));
        ++h->graph_captures;
      } else if (h->sticky) {
        return AOTC_ERROR_STICKY;
      }
    } else {
      ++h->graph_replays;
    }
    if (g) {
      g->last_use = ++h->graph_clock;
      CUresult r = h->cu.graph_launch(g->exec, stream);
      if (r != AOTC_CU_SUCCESS) return aotc_rt_cu_fail(h, r, "cuGraphLaunch");
      return AOTC_OK;
    }
  }
  ++h->plain_runs;
  return aotc_rt_launch_all(h, inputs, outputs, stream);
}
