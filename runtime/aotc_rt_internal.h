/* What the runtime's source files share (never seen by the generated model code): the handle, the
   C copy of the library-kernel params protocol (templates/library_params.cuh; a test compiles both
   and checks that they agree) and the internal functions, all hidden. Files: aotc_rt_driver.c
   (errors, dlopen tables), aotc_rt_create.c (create / destroy, cuBLASLt and library-kernel setup:
   params builders or prebuilt params, tensor maps), aotc_rt_launch.c (run, run_host, the launch
   sequence), aotc_rt_graph.c (CUDA graph cache), aotc_rt_profile.c (the optional profiling
   extension), aotc_rt_tune.c (create's timing of cuBLASLt candidates), aotc_rt_check.c (the
   live-handle registry and the checks of the caller's pointers). */
#ifndef AOTC_RT_INTERNAL_H
#define AOTC_RT_INTERNAL_H

#include "aotc_runtime.h"

/* templates/library_params.cuh, in C. */
#define AOTC_RT_PARAMS_MAGIC 0x41505248u /* "APRH" */
#define AOTC_RT_PARAMS_OFFSET 256
#define AOTC_RT_PARAMS_MAX_BYTES 4096
#define AOTC_RT_PARAMS_MAX_SLOTS 8
#define AOTC_RT_PARAMS_MAX_ARGS 24
#define AOTC_RT_SLOT_UNUSED 0xffffffffu

typedef struct aotc_rt_builder_args {
  long long v[AOTC_RT_PARAMS_MAX_ARGS];
} aotc_rt_builder_args;

typedef struct aotc_rt_params_header {
  unsigned magic;
  unsigned params_bytes;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  unsigned num_slots;
  unsigned slot_offset[AOTC_RT_PARAMS_MAX_SLOTS];
  int status;
  unsigned cluster_size; /* > 8: a non-portable cluster size, allowed on the function at create */
} aotc_rt_params_header;

enum { kAotcMessageBytes = 1024, kAotcMaxStaticShared = 48 * 1024, kAotcGraphCacheEntries = 4 };
/* Pointer sets (inputs + outputs) a handle remembers as checked (aotc_rt_check.c). */
enum { kAotcCheckedSets = 8 };
/* cuBLASLt algorithms create() times per matmul: the heuristic's first 8, then split-K variants
   of its first (aotc_rt_create.c); 1 = no timing. */
enum { kAotcMatmulHeuristicCandidates = 8, kAotcMatmulCandidates = 12, kAotcMatmulTuneReps = 10 };
/* A candidate replaces the heuristic's first only when at least this much faster (timing noise). */
#define AOTC_MATMUL_TUNE_MARGIN 0.97f

typedef struct aotc_rt_matmul_state {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t layout_a, layout_b, layout_c, layout_d; /* cuBLASLt's (swapped) A, B */
  cublasLtMatmulAlgo_t algo; /* what run() uses: the heuristic's first, or the fastest timed */
  cublasLtMatmulAlgo_t candidates[kAotcMatmulCandidates];
  int num_candidates;
  int chosen;        /* index of `algo` in candidates */
  float chosen_ms;   /* its measured time per call at create (0: not timed) */
  float first_ms;    /* the heuristic's first algorithm's measured time (0: not timed) */
} aotc_rt_matmul_state;

/* The launch shape of one kernel: the table's, or for a library kernel its builder's. */
typedef struct aotc_rt_launch_shape {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
} aotc_rt_launch_shape;

/* One captured launch sequence: valid for this stream and these input / output pointers. */
typedef struct aotc_rt_graph_entry {
  CUgraphExec exec; /* NULL: empty slot */
  CUstream stream;
  CUdeviceptr* pointers; /* num_inputs + num_outputs, preallocated at create */
  unsigned long long last_use;
} aotc_rt_graph_entry;

/* The weights on the device, shared by the handles created with share_weights_with: freed when the
   last of them is destroyed, whichever it is. */
typedef struct aotc_rt_weights {
  CUdeviceptr ptr;
  _Atomic int refs;
} aotc_rt_weights;

struct aotc_rt_handle {
  const aotc_rt_model_desc* desc;
  int sticky;
  char message[kAotcMessageBytes];
  void* libcuda;
  void* liblt;
  aotc_cuda_api cu;
  aotc_cublaslt_api lt;
  int device;
  CUdevice cu_device;
  CUcontext ctx; /* the device's primary context, retained */
  CUmodule* modules;
  CUfunction* functions;
  aotc_rt_launch_shape* shapes; /* per kernel */
  CUdeviceptr arena;
  int owns_arena;
  CUdeviceptr weights;
  aotc_rt_weights* weights_ref; /* NULL when the model has no weights */
  cublasLtHandle_t lt_handle;
  aotc_rt_matmul_state* matmuls;
  CUdeviceptr* arg_values; /* kernel argument values, rewritten by every run */
  void** arg_params;       /* &arg_values[i], what cuLaunchKernel wants */
  /* Library kernels: per kernel an index into library_params (-1: ordinary kernel); each has
     AOTC_RT_PARAMS_MAX_BYTES of host memory holding its builder's (or its prebuilt) header and
     params struct, with its tensor maps encoded at create, into which run() patches the pointer
     arguments (never over a tensor map: create checks). */
  int* library_index;
  int num_library;
  unsigned char* library_params;
  CUdeviceptr staging; /* run_host buffers, allocated on its first call */
  const void** staging_inputs;
  void** staging_outputs;
  /* Programmatic dependent launch: kernels whose table entry says `pdl` are launched with
     programmatic stream serialization when pdl_enabled (aotc_rt_pdl_setup at create). */
  int pdl_allowed; /* AOTC_NO_PDL is not set (read at create) */
  int lt_reduction_mask; /* AOTC_LT_REDUCTION_MASK (0-7) read at create, else -1: cuBLASLt's default */
  int tune_matmuls; /* desc->tune_matmuls or AOTC_MATMUL_TUNE, unless AOTC_NO_MATMUL_TUNE (at create) */
  int pdl_enabled; /* allowed, the driver has cuLaunchKernelEx, every module reports sm_90+ code */
  unsigned long long pdl_launches; /* for tests and debugging */
  /* CUDA graphs (aotc_rt_graph.c). */
  int graphs_enabled; /* the driver has the entry points and AOTC_NO_CUDA_GRAPH is not set */
  int graphs_failed;  /* a capture failed: plain launches from now on */
  unsigned long long graph_clock;
  aotc_rt_graph_entry graphs[kAotcGraphCacheEntries];
  CUdeviceptr* graph_pointer_store;
  CUdeviceptr* graph_key; /* the current call's pointers */
  unsigned long long graph_captures, graph_replays, plain_runs; /* for tests and debugging */
  /* The auxiliary stream of lane 1 steps (aotc_rt_launch_lanes) and its fork / join events:
     created at create when the table has lane 1 steps, graphs are on and the driver has
     cuStreamWaitEvent; NULL otherwise (then capture puts every step on the caller's stream). */
  CUstream aux_stream;
  CUevent fork_event, join_event;
  /* Profiling (aotc_rt_profile.c): 2 events per step (before, after), created at the first
     profile_run; NULL until then. */
  CUevent* profile_events;
  int num_profile_events;
  /* Pointer sets that passed the driver checks (aotc_rt_check.c): kAotcCheckedSets x (num_inputs +
     num_outputs), the first num_checked valid, replaced oldest first. */
  CUdeviceptr* checked_store;
  CUdeviceptr* checked_key; /* the current call's pointers */
  int num_checked, checked_next;
  unsigned long long pointer_queries; /* cuPointerGetAttributes calls, for tests */
};

/* aotc_rt_driver.c */
AOTC_RT_HIDDEN int aotc_rt_set_error(aotc_rt_handle* h, int code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
AOTC_RT_HIDDEN char* aotc_rt_thread_error(void);
/* An algorithm's thread-block cluster shape (cublasLtClusterShape_t), -1 when unknown. */
AOTC_RT_HIDDEN int aotc_rt_lt_cluster_shape(const aotc_rt_handle* h, const cublasLtMatmulAlgo_t* algo);
AOTC_RT_HIDDEN int aotc_rt_lt_split_k(const aotc_rt_handle* h, const cublasLtMatmulAlgo_t* algo);
AOTC_RT_HIDDEN const char* aotc_rt_cu_error_name(const aotc_rt_handle* h, CUresult r);
AOTC_RT_HIDDEN int aotc_rt_cu_fail(aotc_rt_handle* h, CUresult r, const char* what);
AOTC_RT_HIDDEN int aotc_rt_cu_error_is_sticky(CUresult r);
AOTC_RT_HIDDEN int aotc_rt_lt_fail(aotc_rt_handle* h, cublasStatus_t s, const char* what,
                                   const char* label);
AOTC_RT_HIDDEN int aotc_rt_load_driver(aotc_rt_handle* h);
AOTC_RT_HIDDEN int aotc_rt_load_cublaslt(aotc_rt_handle* h);

/* aotc_rt_create.c */
/* The handle with its host tables allocated (no driver call); NULL when out of host memory. */
AOTC_RT_HIDDEN aotc_rt_handle* aotc_rt_handle_new(const aotc_rt_model_desc* desc, int device);
/* Gets every kernel's function, runs library kernels' params builders (or copies their prebuilt
   params) into their host params copies; context current. */
AOTC_RT_HIDDEN int aotc_rt_prepare_kernels(aotc_rt_handle* h);
/* Encodes every kernel's tensor maps (desc->tensor_maps) with the driver, at the addresses of
   their arena / weight arguments, into the kernel's host params copy (after prepare_kernels, once
   h->arena and h->weights are set; context current). */
AOTC_RT_HIDDEN int aotc_rt_encode_tensor_maps(aotc_rt_handle* h);
AOTC_RT_HIDDEN void aotc_rt_release(aotc_rt_handle* h);

/* aotc_rt_launch.c */
/* One cuBLASLt call of matmul `i` with `algo` and the given operand addresses (c: 0 = d) and
   cuBLASLt workspace (lt_workspace_bytes). */
AOTC_RT_HIDDEN cublasStatus_t aotc_rt_issue_matmul(aotc_rt_handle* h, int i,
                                                  const cublasLtMatmulAlgo_t* algo, CUdeviceptr a,
                                                  CUdeviceptr b, CUdeviceptr c, CUdeviceptr d,
                                                  CUdeviceptr bias, CUdeviceptr workspace,
                                                  CUstream stream);
/* Decides pdl_enabled after the modules are loaded (context current): the driver's entry points,
   AOTC_NO_PDL, and every module's aotc_pdl_arch global (1: compiled for sm_90+, so its kernels
   execute griddepcontrol.wait; templates/common.cuh). Never fails: without PDL, plain launches. */
AOTC_RT_HIDDEN void aotc_rt_pdl_setup(aotc_rt_handle* h);
AOTC_RT_HIDDEN int aotc_rt_launch_all(aotc_rt_handle* h, const void* const* inputs,
                                      void* const* outputs, CUstream stream);
/* The launch sequence with lane 1 steps on h->aux_stream (forked from and joined back into
   `stream` as the steps' `wait` flags say, and joined at the end whatever happens): what capture
   records, so the graph runs the branches concurrently. aux_stream NULL: launch_all. */
AOTC_RT_HIDDEN int aotc_rt_launch_lanes(aotc_rt_handle* h, const void* const* inputs,
                                        void* const* outputs, CUstream stream);
/* Creates the auxiliary stream and its events when the table has lane 1 steps (context
   current). Never fails create: without them every step is captured on the caller's stream. */
AOTC_RT_HIDDEN void aotc_rt_aux_setup(aotc_rt_handle* h);
AOTC_RT_HIDDEN void aotc_rt_aux_release(aotc_rt_handle* h); /* context current */
/* Step `s` of the launch sequence on `stream` (what launch_all does for each step). */
AOTC_RT_HIDDEN int aotc_rt_launch_step(aotc_rt_handle* h, int s, const void* const* inputs,
                                       void* const* outputs, CUstream stream);
/* Entry of every call on a handle: checks it (NULL, sticky) and makes its context current. */
AOTC_RT_HIDDEN int aotc_rt_enter(aotc_rt_handle* h);
AOTC_RT_HIDDEN void aotc_rt_leave(aotc_rt_handle* h);
AOTC_RT_HIDDEN int aotc_rt_check_io(aotc_rt_handle* h, const void* const* inputs,
                                     void* const* outputs, int device);

/* aotc_rt_tune.c */
/* Times each matmul's cuBLASLt candidates on this device and keeps the fastest (after the arena
   and weights exist; context current). Never fails create: without timing, the heuristic's
   first algorithm stays. */
AOTC_RT_HIDDEN int aotc_rt_tune_matmuls(aotc_rt_handle* h);

/* aotc_rt_profile.c */
AOTC_RT_HIDDEN void aotc_rt_profile_release(aotc_rt_handle* h); /* context current */

/* aotc_rt_graph.c */
/* 1 when an environment switch's value (NULL: unset) is set: anything but empty or "0"
   (AOTC_NO_CUDA_GRAPH, AOTC_NO_PDL, AOTC_MATMUL_TUNE, AOTC_NO_MATMUL_TUNE, AOTC_MATMUL_TUNE_LOG). */
AOTC_RT_HIDDEN int aotc_rt_env_flag(const char* value);
/* Runs the launch sequence through the graph cache when it can; otherwise plain launches. */
AOTC_RT_HIDDEN int aotc_rt_run_graph_or_plain(aotc_rt_handle* h, const void* const* inputs,
                                              void* const* outputs, CUstream stream);
AOTC_RT_HIDDEN void aotc_rt_graphs_release(aotc_rt_handle* h); /* context current */

/* aotc_rt_check.c */
/* The process-wide set of live handles of this library: add at create (0: out of host memory),
   remove at destroy (0: was not there), contains on every call (lock-free). */
AOTC_RT_HIDDEN int aotc_rt_registry_add(const void* h);
AOTC_RT_HIDDEN int aotc_rt_registry_remove(const void* h);
AOTC_RT_HIDDEN int aotc_rt_registry_contains(const void* h);
/* `ptr` must be device memory of h's device (or managed memory) holding `bytes` from ptr;
   otherwise AOTC_ERROR_INVALID_ARGUMENT with a message starting with `what`. Unchecked (AOTC_OK)
   when the driver lacks the entry points. Context current. */
AOTC_RT_HIDDEN int aotc_rt_check_device_pointer(aotc_rt_handle* h, const void* ptr,
                                                unsigned long long bytes, const char* what);
/* Every input and output pointer through aotc_rt_check_device_pointer, unless this set passed
   before (then a few compares and no driver call). `call` names the entry point in messages. */
AOTC_RT_HIDDEN int aotc_rt_check_pointer_set(aotc_rt_handle* h, const void* const* inputs,
                                             void* const* outputs, const char* call);

#endif /* AOTC_RT_INTERNAL_H */
