/* The runtime against a fake CUDA driver (function pointers in the handle), so the library-kernel
   protocol and the CUDA graph cache are tested without a GPU: builder arguments and launch shape,
   header validation, pointer patching, capture once per (stream, pointers), replay, eviction,
   fallbacks (NULL / legacy stream, capture failure, caller's own capture, graphs off), release,
   the profiling extension (events around every step, no graphs, one synchronisation), and
   programmatic dependent launch (which kernels get the attribute, and when none do), and the
   create-time timing of cuBLASLt candidates (the fastest is kept, failures skipped, stand-ins
   for caller-owned operands), and prebuilt library-kernel params with their tensor maps (no
   builder, the prebuilt launch shape, the encoders' exact arguments and descriptors in the
   launched struct, the refusals of create).
   Compiled by runtime_test.cc with the embedded runtime sources; prints "ok" and exits 0. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aotc_rt_internal.h"

static int g_failures;
#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      ++g_failures;                                                       \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
    }                                                                     \
  } while (0)

/* ---- the fake driver ---- */
enum { kFnLib = 1, kFnLibBuilder = 2, kFnPlain = 3, kScratch = 0x5000000 };
static unsigned char g_device[AOTC_RT_PARAMS_MAX_BYTES]; /* the params scratch buffer */
static aotc_rt_params_header g_header;                   /* what the builder writes */
static aotc_rt_builder_args g_builder_args;               /* what the builder received */
static unsigned char g_lib_params[512];                   /* the library kernel's last params */
static CUdeviceptr g_plain_args[2];
static unsigned g_lib_shape[7];
static int g_kernel_launches, g_builder_launches, g_builder_lookups, g_attr_value, g_allocs, g_frees;
static int g_cluster_attr_value = -1; /* the non-portable cluster attribute, -1: never set */
static uintptr_t g_cluster_attr_fn;   /* the function it was set on */
static int g_begin, g_end, g_instantiate, g_graph_launch, g_exec_destroy, g_graph_destroy;
static int g_fail_begin, g_capturing, g_outer_capture;
static unsigned long long g_next_exec = 0x1000;
static double g_clock_ms; /* the fake GPU's clock, advanced by kernel launches */

static CUresult f_ok_ctx(CUcontext c) { (void)c; return 0; }
static CUresult f_pop(CUcontext* c) { *c = NULL; return 0; }
static CUresult f_release(CUdevice d) { (void)d; return 0; }
static CUresult f_get_function(CUfunction* f, CUmodule m, const char* name) {
  (void)m;
  if (strcmp(name, "lib") == 0) {
    *f = (CUfunction)(uintptr_t)kFnLib;
  } else if (strcmp(name, "lib_params") == 0) {
    *f = (CUfunction)(uintptr_t)kFnLibBuilder;
    ++g_builder_lookups;
  } else if (strcmp(name, "plain") == 0) {
    *f = (CUfunction)(uintptr_t)kFnPlain;
  } else {
    return 500; /* CUDA_ERROR_NOT_FOUND */
  }
  return 0;
}
static CUresult f_set_attribute(CUfunction f, int attr, int value) {
  if (attr == AOTC_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
    CHECK((uintptr_t)f == kFnLib || (uintptr_t)f == kFnPlain);
    g_cluster_attr_value = value;
    g_cluster_attr_fn = (uintptr_t)f;
    return 0;
  }
  CHECK((uintptr_t)f == kFnLib);
  CHECK(attr == AOTC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  g_attr_value = value;
  return 0;
}
static CUresult f_alloc(CUdeviceptr* p, size_t n) {
  CHECK(n == AOTC_RT_PARAMS_MAX_BYTES);
  *p = kScratch;
  ++g_allocs;
  return 0;
}
static CUresult f_free(CUdeviceptr p) { CHECK(p == kScratch); ++g_frees; return 0; }
static CUresult f_htod(CUdeviceptr dst, const void* src, size_t n) {
  CHECK(dst == kScratch && n == sizeof g_device);
  memcpy(g_device, src, n);
  return 0;
}
enum { kPdlGlobal = 0x7000000 };
static int g_pdl_arch = 1, g_pdl_global_found = 1, g_ex_launches, g_ex_attr_ok;
static CUresult f_dtoh(void* dst, CUdeviceptr src, size_t n) {
  if (src == kPdlGlobal) {
    CHECK(n == sizeof g_pdl_arch);
    memcpy(dst, &g_pdl_arch, sizeof g_pdl_arch);
    return 0;
  }
  CHECK(src == kScratch && n == sizeof g_device);
  memcpy(dst, g_device, n);
  return 0;
}
static CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {
  (void)stream;
  CHECK(extra == NULL);
  uintptr_t fn = (uintptr_t)f;
  if (fn == kFnLibBuilder) {
    ++g_builder_launches;
    CHECK(gx == 1 && gy == 1 && gz == 1 && bx == 1 && by == 1 && bz == 1 && shared == 0);
    CHECK(*(CUdeviceptr*)params[0] == kScratch);
    memcpy(&g_builder_args, params[1], sizeof g_builder_args);
    memcpy(g_device, &g_header, sizeof g_header);
    int n = (int)g_builder_args.v[0];
    memcpy(g_device + AOTC_RT_PARAMS_OFFSET, &n, sizeof n); /* the struct's first field */
    return 0;
  }
  ++g_kernel_launches;
  g_clock_ms += fn == kFnLib ? 1.5 : 0.25;
  if (fn == kFnLib) {
    memcpy(g_lib_params, params[0], sizeof g_lib_params); /* the driver copies the struct now */
    unsigned s[7] = {gx, gy, gz, bx, by, bz, shared};
    memcpy(g_lib_shape, s, sizeof s);
  } else {
    CHECK(fn == kFnPlain);
    g_plain_args[0] = *(CUdeviceptr*)params[0];
    g_plain_args[1] = *(CUdeviceptr*)params[1];
  }
  return 0;
}
static CUresult f_get_global(CUdeviceptr* p, size_t* bytes, CUmodule m, const char* name) {
  (void)m;
  CHECK(strcmp(name, "aotc_pdl_arch") == 0);
  if (!g_pdl_global_found) return 500; /* CUDA_ERROR_NOT_FOUND: a module without the global */
  *p = kPdlGlobal;
  *bytes = sizeof(int);
  return 0;
}
static CUresult f_launch_ex(const aotc_cu_launch_config* c, CUfunction f, void** params, void** extra) {
  ++g_ex_launches;
  g_ex_attr_ok = c->num_attrs == 1 && c->attrs &&
                 c->attrs[0].id == AOTC_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
                 c->attrs[0].value.programmatic_stream_serialization_allowed == 1;
  return f_launch(f, c->grid_x, c->grid_y, c->grid_z, c->block_x, c->block_y, c->block_z,
                  c->shared_bytes, c->stream, params, extra);
}
static CUresult f_error_name(CUresult r, const char** name) {
  (void)r;
  *name = "CUDA_ERROR_FAKE";
  return 0;
}
static CUresult f_begin(CUstream s, int mode) {
  (void)s;
  CHECK(mode == AOTC_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  ++g_begin;
  if (g_fail_begin) return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
  g_capturing = 1;
  return 0;
}
static CUresult f_end(CUstream s, CUgraph* g) {
  (void)s;
  ++g_end;
  g_capturing = 0;
  *g = (CUgraph)(uintptr_t)0x77;
  return 0;
}
static CUresult f_is_capturing(CUstream s, int* status) {
  (void)s;
  *status = g_outer_capture ? 1 : 0;
  return 0;
}
static CUresult f_instantiate(CUgraphExec* e, CUgraph g, unsigned long long flags) {
  CHECK((uintptr_t)g == 0x77 && flags == 0);
  ++g_instantiate;
  *e = (CUgraphExec)(uintptr_t)(g_next_exec += 16);
  return 0;
}
static CUresult f_graph_launch(CUgraphExec e, CUstream s) {
  (void)e;
  (void)s;
  ++g_graph_launch;
  return 0;
}
static CUresult f_exec_destroy(CUgraphExec e) { (void)e; ++g_exec_destroy; return 0; }

/* Events on a fake GPU clock: the library kernel takes 1.5 ms, the plain one 0.25 ms. */
enum { kMaxEvents = 64 };
static double g_event_time[kMaxEvents];
static int g_event_creates, g_event_records, g_event_syncs, g_event_destroys, g_last_synced;
static CUresult f_event_create(CUevent* e, unsigned flags) {
  CHECK(flags == 0);
  if (g_event_creates + 1 >= kMaxEvents) return 2;
  *e = (CUevent)(uintptr_t)(++g_event_creates);
  return 0;
}
static CUresult f_event_record(CUevent e, CUstream s) {
  CHECK((uintptr_t)s == 0xabc);
  g_event_time[(uintptr_t)e] = g_clock_ms;
  ++g_event_records;
  return 0;
}
static CUresult f_event_sync(CUevent e) { ++g_event_syncs; g_last_synced = (int)(uintptr_t)e; return 0; }
static CUresult f_event_elapsed(float* ms, CUevent a, CUevent b) {
  *ms = (float)(g_event_time[(uintptr_t)b] - g_event_time[(uintptr_t)a]);
  return 0;
}
static CUresult f_event_destroy(CUevent e) { (void)e; ++g_event_destroys; return 0; }
static CUresult f_graph_destroy(CUgraph g) { (void)g; ++g_graph_destroy; return 0; }

/* ---- the model: x -> lib (library kernel) -> y, then plain(y, arena + 256) ---- */
static const aotc_rt_ref kArgs[] = {
    {AOTC_LOC_INPUT, 0, 0}, {AOTC_LOC_OUTPUT, 0, 0}, {AOTC_LOC_NULL, 0, 0}, /* lib */
    {AOTC_LOC_OUTPUT, 0, 0}, {AOTC_LOC_ARENA, 0, 256},                      /* plain */
};
static const long long kBuilderArgs[] = {100, 2000000, 65536, 0};
static const aotc_rt_kernel kKernels[] = {
    {"lib", 0, {9u, 9u, 9u}, {9u, 1u, 1u}, 0u, 0, 3, 1, 0, 4, 0, NULL, 0u, 0, 0, 0u},
    {"plain", 0, {2u, 1u, 1u}, {64u, 1u, 1u}, 0u, 3, 2, 0, 0, 0, 1, NULL, 0u, 0, 0, 0u},
};
static const aotc_rt_step kSteps[] = {{AOTC_STEP_KERNEL, 0, "k0_lib", 1000ULL, 800ULL, 0, 0},
                                      {AOTC_STEP_KERNEL, 1, "k1_plain", 0ULL, 656ULL, 0, 0}};
static const long long kShape[] = {100};
static const aotc_rt_io kIn[] = {{"x", 1, 1, kShape, 400}};
static const aotc_rt_io kOut[] = {{"y", 1, 1, kShape, 400}};
static const unsigned char* const kNoFatbins[1];
static const aotc_rt_model_desc kDesc = {
    "fake", "sm_90", kNoFatbins, 1, NULL, 0, 4096, 0, 0, kKernels, 2, kArgs, 5, NULL, 0, NULL, 0,
    kSteps, 2, kIn, 1, kOut, 1, kBuilderArgs, 4, 0, 0, NULL, 0};

static void good_header(void) {
  memset(&g_header, 0, sizeof g_header);
  g_header.magic = AOTC_RT_PARAMS_MAGIC;
  g_header.params_bytes = 40;
  g_header.grid[0] = 4; g_header.grid[1] = 1; g_header.grid[2] = 1;
  g_header.block[0] = 128; g_header.block[1] = 1; g_header.block[2] = 1;
  g_header.shared_bytes = 65536;
  g_header.num_slots = 3;
  g_header.slot_offset[0] = 8;
  g_header.slot_offset[1] = 16;
  for (int i = 2; i < AOTC_RT_PARAMS_MAX_SLOTS; ++i) g_header.slot_offset[i] = AOTC_RT_SLOT_UNUSED;
}

/* A handle of `desc` on the fake driver: context, kernels, graphs (no registry entry yet). */
static aotc_rt_handle* fake_handle(const aotc_rt_model_desc* desc) {
  aotc_rt_handle* h = aotc_rt_handle_new(desc, 0);
  CHECK(h != NULL);
  h->cu.ctx_push = f_ok_ctx;
  h->cu.ctx_pop = f_pop;
  h->cu.primary_ctx_release = f_release;
  h->cu.module_get_function = f_get_function;
  h->cu.func_set_attribute = f_set_attribute;
  h->cu.mem_alloc = f_alloc;
  h->cu.mem_free = f_free;
  h->cu.memcpy_htod = f_htod;
  h->cu.memcpy_dtoh = f_dtoh;
  h->cu.launch_kernel = f_launch;
  h->cu.get_error_name = f_error_name;
  h->cu.stream_begin_capture = f_begin;
  h->cu.stream_end_capture = f_end;
  h->cu.stream_is_capturing = f_is_capturing;
  h->cu.graph_instantiate = f_instantiate;
  h->cu.graph_launch = f_graph_launch;
  h->cu.graph_exec_destroy = f_exec_destroy;
  h->cu.graph_destroy = f_graph_destroy;
  h->ctx = (CUcontext)(uintptr_t)1;
  h->arena = 0x9000000;
  h->graphs_enabled = 1;
  return h;
}

static aotc_rt_handle* new_handle(void) {
  aotc_rt_handle* h = fake_handle(&kDesc);
  CHECK(aotc_rt_registry_add(h)); /* what create does last */
  return h;
}

static CUdeviceptr lib_slot(int offset) {
  CUdeviceptr p;
  memcpy(&p, g_lib_params + offset, sizeof p);
  return p;
}

static int run(aotc_rt_handle* h, uintptr_t x, uintptr_t y, uintptr_t stream) {
  const void* ins[] = {(const void*)x};
  void* outs[] = {(void*)y};
  return aotc_rt_run(h, ins, outs, (void*)stream);
}

static void test_env(void) {
  CHECK(aotc_rt_env_flag(NULL) == 0);
  CHECK(aotc_rt_env_flag("") == 0);
  CHECK(aotc_rt_env_flag("0") == 0);
  CHECK(aotc_rt_env_flag("1") == 1);
  CHECK(aotc_rt_env_flag(" 1") == 1);
  CHECK(aotc_rt_env_flag("yes") == 1);
  CHECK(aotc_rt_env_flag("00") == 1);
}

static void test_library_kernel_and_graphs(void) {
  good_header();
  aotc_rt_handle* h = new_handle();
  CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
  CHECK(g_builder_launches == 1);
  CHECK(g_builder_args.v[0] == 100 && g_builder_args.v[1] == 2000000 && g_builder_args.v[2] == 65536 &&
        g_builder_args.v[3] == 0 && g_builder_args.v[4] == 0);
  CHECK(g_attr_value == 65536);
  CHECK(g_allocs == 1 && g_frees == 1); /* one scratch, freed at the end of create */
  CHECK(h->shapes[0].grid[0] == 4 && h->shapes[0].block[0] == 128 && h->shapes[0].shared_bytes == 65536);
  CHECK(h->shapes[1].grid[0] == 2 && h->shapes[1].block[0] == 64);

  /* First run on a real stream: captured (both kernels), instantiated, launched as a graph. */
  CHECK(run(h, 0x1010, 0x2000, 0xabc) == AOTC_ERROR_INVALID_ARGUMENT); /* not 256-byte aligned */
  CHECK(run(h, 0x1000, 0x2008, 0xabc) == AOTC_ERROR_INVALID_ARGUMENT);
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK);
  CHECK(g_begin == 1 && g_end == 1 && g_instantiate == 1 && g_graph_launch == 1 && g_graph_destroy == 1);
  CHECK(g_kernel_launches == 2);
  int n;
  memcpy(&n, g_lib_params, sizeof n);
  CHECK(n == 100);                      /* the builder's struct reached the launch */
  CHECK(lib_slot(8) == 0x1000 && lib_slot(16) == 0x2000); /* patched at the slot offsets */
  CHECK(g_lib_shape[0] == 4 && g_lib_shape[3] == 128 && g_lib_shape[6] == 65536);
  CHECK(g_plain_args[0] == 0x2000 && g_plain_args[1] == 0x9000000 + 256);
  /* Same stream and pointers: replay only. */
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK);
  CHECK(g_begin == 1 && g_graph_launch == 2 && g_kernel_launches == 2);
  /* Another output pointer: a second capture, with the new pointer patched in. */
  CHECK(run(h, 0x1000, 0x3000, 0xabc) == AOTC_OK);
  CHECK(g_begin == 2 && g_instantiate == 2 && g_graph_launch == 3 && g_kernel_launches == 4);
  CHECK(lib_slot(16) == 0x3000);
  /* The first set is still cached; another stream is a new entry. */
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK);
  CHECK(g_begin == 2 && g_graph_launch == 4);
  CHECK(run(h, 0x1000, 0x2000, 0xdef) == AOTC_OK);
  CHECK(g_begin == 3 && g_exec_destroy == 0);
  /* Two more sets fill and overflow the 4-entry cache: the least recently used goes. */
  CHECK(run(h, 0x1100, 0x2000, 0xabc) == AOTC_OK);
  CHECK(g_exec_destroy == 0);
  CHECK(run(h, 0x1200, 0x2000, 0xabc) == AOTC_OK);
  CHECK(g_exec_destroy == 1);
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK); /* recently used: still a replay */
  CHECK(g_begin == 5);
  CHECK(run(h, 0x1000, 0x3000, 0xabc) == AOTC_OK); /* the evicted one: captured again */
  CHECK(g_begin == 6 && g_exec_destroy == 2);
  CHECK(h->graph_captures == 6 && h->plain_runs == 0);

  /* NULL and the legacy default stream cannot be captured: plain launches, same arguments. */
  int launches = g_kernel_launches, graph_launches = g_graph_launch;
  CHECK(run(h, 0x1000, 0x4000, 0) == AOTC_OK);
  CHECK(run(h, 0x1000, 0x4000, 1) == AOTC_OK);
  CHECK(g_kernel_launches == launches + 4 && g_graph_launch == graph_launches && g_begin == 6);
  CHECK(lib_slot(16) == 0x4000 && g_plain_args[0] == 0x4000);
  /* The caller is capturing the stream itself: our launches go into its graph. */
  g_outer_capture = 1;
  CHECK(run(h, 0x1000, 0x5000, 0xabc) == AOTC_OK);
  g_outer_capture = 0;
  CHECK(g_begin == 6 && g_kernel_launches == launches + 6 && h->graphs_failed == 0);
  CHECK(h->plain_runs == 3);

  int destroyed = g_exec_destroy;
  aotc_rt_release(h); /* the 4 cached execs are destroyed */
  CHECK(g_exec_destroy == destroyed + 4);
}

static void test_capture_failure_and_graphs_off(void) {
  good_header();
  aotc_rt_handle* h = new_handle();
  CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
  int begin = g_begin, launches = g_kernel_launches;
  g_fail_begin = 1;
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK);
  CHECK(g_begin == begin + 1 && g_kernel_launches == launches + 2 && h->graphs_failed == 1);
  CHECK(lib_slot(8) == 0x1000 && lib_slot(16) == 0x2000);
  CHECK(h->message[0] == '\0');
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK); /* not retried */
  CHECK(g_begin == begin + 1 && g_kernel_launches == launches + 4);
  g_fail_begin = 0;
  aotc_rt_release(h);

  h = new_handle();
  CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
  h->graphs_enabled = 0; /* AOTC_NO_CUDA_GRAPH */
  begin = g_begin;
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK);
  CHECK(g_begin == begin && h->plain_runs == 1);
  aotc_rt_release(h);
}

/* Each bad header must fail create with a message naming the kernel and the problem. */
static void expect_bad_header(const char* expected) {
  aotc_rt_handle* h = new_handle();
  int code = aotc_rt_prepare_kernels(h);
  CHECK(code == AOTC_ERROR_CUDA);
  if (!strstr(h->message, expected) || !strstr(h->message, "library kernel lib")) {
    ++g_failures;
    fprintf(stderr, "message '%s' lacks '%s'\n", h->message, expected);
  }
  CHECK(g_allocs == g_frees); /* the scratch is freed on failure too */
  aotc_rt_release(h);
}

static void test_header_validation(void) {
  good_header(); g_header.magic = 0x12345678u; expect_bad_header("magic 0x12345678");
  good_header(); g_header.status = 3; expect_bad_header("status 3");
  good_header(); g_header.num_slots = 2; expect_bad_header("2 pointer slots");
  good_header(); g_header.params_bytes = 4000; expect_bad_header("4000 bytes");
  good_header(); g_header.params_bytes = 0; expect_bad_header("0 bytes");
  good_header(); g_header.slot_offset[1] = 36; expect_bad_header("pointer slot 1 at byte 36");
  good_header(); g_header.slot_offset[0] = 40; expect_bad_header("pointer slot 0 at byte 40");
  good_header(); g_header.grid[1] = 0; expect_bad_header("invalid launch shape");
  good_header(); g_header.block[0] = 2048; expect_bad_header("invalid launch shape");
  good_header(); g_header.cluster_size = 17; expect_bad_header("cluster of 17 CTAs");
}

/* A builder that reports a cluster over the portable 8 CTAs gets the non-portable size allowed on
   its function at create; 8 and under (and 0, not reported) leave the attribute alone. */
static void test_cluster_size(void) {
  const unsigned sizes[] = {0, 8, 16};
  const int want[] = {-1, -1, 1};
  for (int i = 0; i < 3; ++i) {
    good_header();
    g_header.cluster_size = sizes[i];
    g_cluster_attr_value = -1;
    aotc_rt_handle* h = new_handle();
    CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
    CHECK(g_cluster_attr_value == want[i]);
    CHECK(want[i] < 0 || g_cluster_attr_fn == kFnLib);
    aotc_rt_release(h);
  }
}

/* A plain (non-library) kernel says its cluster size in its table entry (the cluster split-K
   convolution's KernelStep::cluster_size): over 8 its function gets the non-portable size allowed
   at create, 8 and under (and 0) leave the attribute alone. */
static void test_plain_cluster_size(void) {
  const unsigned sizes[] = {0, 8, 12};
  const int want[] = {-1, -1, 1};
  for (int i = 0; i < 3; ++i) {
    aotc_rt_kernel kernels[2];
    memcpy(kernels, kKernels, sizeof kernels);
    kernels[1].cluster_size = sizes[i];
    aotc_rt_model_desc d = kDesc;
    d.kernels = kernels;
    good_header();
    g_cluster_attr_value = -1;
    g_cluster_attr_fn = 0;
    aotc_rt_handle* h = fake_handle(&d);
    CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
    CHECK(g_cluster_attr_value == want[i]);
    CHECK(want[i] < 0 || g_cluster_attr_fn == kFnPlain);
    aotc_rt_release(h);
  }
}

static int profile(aotc_rt_handle* h, uintptr_t y, float* ms) {
  const void* ins[] = {(const void*)(uintptr_t)0x1000};
  void* outs[] = {(void*)y};
  return aotc_rt_profile_run(h, ins, outs, (void*)(uintptr_t)0xabc, ms);
}

static void test_profile(void) {
  CHECK(aotc_rt_step_at(&kDesc, 0) == &kSteps[0] && aotc_rt_step_at(&kDesc, 2) == NULL &&
        aotc_rt_step_at(&kDesc, -1) == NULL);
  CHECK(strcmp(aotc_rt_step_kind_name(AOTC_STEP_KERNEL), "kernel") == 0 &&
        strcmp(aotc_rt_step_kind_name(AOTC_STEP_MATMUL), "matmul") == 0 &&
        strcmp(aotc_rt_step_kind_name(AOTC_STEP_COPY), "copy") == 0);
  good_header();
  aotc_rt_handle* h = new_handle();
  CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
  float ms[2] = {-1.0f, -1.0f};
  /* A driver without the event entry points: a clear error, nothing launched. */
  int launches = g_kernel_launches;
  CHECK(profile(h, 0x2000, ms) == AOTC_ERROR_CUDA && strstr(h->message, "event") != NULL);
  CHECK(g_kernel_launches == launches);
  h->cu.event_create = f_event_create;
  h->cu.event_record = f_event_record;
  h->cu.event_synchronize = f_event_sync;
  h->cu.event_elapsed_time = f_event_elapsed;
  h->cu.event_destroy = f_event_destroy;
  int begin = g_begin, graph_launches = g_graph_launch;
  CHECK(profile(h, 0x2000, ms) == AOTC_OK);
  CHECK(h->message[0] == '\0');
  /* 2 events per step created at the first call, recorded around each step, one sync (on the
     last event), per-step times; no capture, no graph launch. */
  CHECK(g_event_creates == 4 && g_event_records == 4 && g_event_syncs == 1 && g_last_synced == 4);
  CHECK(ms[0] == 1.5f && ms[1] == 0.25f);
  CHECK(g_kernel_launches == launches + 2 && g_begin == begin && g_graph_launch == graph_launches);
  CHECK(h->graph_captures == 0 && h->plain_runs == 0);
  CHECK(lib_slot(8) == 0x1000 && lib_slot(16) == 0x2000 && g_plain_args[0] == 0x2000);
  /* Later calls reuse the events; new pointers are patched in. */
  CHECK(profile(h, 0x3000, ms) == AOTC_OK);
  CHECK(g_event_creates == 4 && g_event_records == 8 && g_event_syncs == 2);
  CHECK(lib_slot(16) == 0x3000 && ms[0] == 1.5f && ms[1] == 0.25f);
  /* Misuse: NULL step_ms, NULL output, a stream the caller is capturing. */
  CHECK(profile(h, 0x3000, NULL) == AOTC_ERROR_INVALID_ARGUMENT && strstr(h->message, "step_ms"));
  CHECK(profile(h, 0, ms) == AOTC_ERROR_INVALID_ARGUMENT);
  g_outer_capture = 1;
  CHECK(profile(h, 0x3000, ms) == AOTC_ERROR_INVALID_ARGUMENT && strstr(h->message, "captured"));
  g_outer_capture = 0;
  CHECK(aotc_rt_profile_run(NULL, NULL, NULL, NULL, ms) == AOTC_ERROR_INVALID_ARGUMENT);
  /* run() still uses the graph cache afterwards. */
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK && h->graph_captures == 1);
  aotc_rt_release(h);
  CHECK(g_event_destroys == 4);
}

/* Only the kernel whose table entry says pdl (plain) gets the attribute, and only when the
   driver has the entry points, AOTC_NO_PDL is unset and every module reports sm_90+ code;
   profiling launches plainly. */
static void test_pdl(void) {
  good_header();
  aotc_rt_handle* h = new_handle();
  CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
  h->graphs_enabled = 0;
  aotc_rt_pdl_setup(h); /* the fake driver has no cuLaunchKernelEx yet */
  CHECK(h->pdl_enabled == 0);
  h->cu.launch_kernel_ex = f_launch_ex;
  h->cu.module_get_global = f_get_global;
  h->pdl_allowed = 1;
  g_pdl_arch = 1;
  aotc_rt_pdl_setup(h);
  CHECK(h->pdl_enabled == 1);
  int launches = g_kernel_launches;
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK);
  CHECK(g_kernel_launches == launches + 2 && g_ex_launches == 1 && g_ex_attr_ok == 1);
  CHECK(h->pdl_launches == 1 && g_plain_args[0] == 0x2000 && lib_slot(16) == 0x2000);
  /* A module compiled for sm_8x (e.g. compute_87 PTX JIT-compiled on an H100): no wait
     instruction in its kernels, so no early launch. */
  g_pdl_arch = 0;
  aotc_rt_pdl_setup(h);
  CHECK(h->pdl_enabled == 0);
  g_pdl_arch = 1;
  g_pdl_global_found = 0; /* a module without the global (built before PDL) */
  aotc_rt_pdl_setup(h);
  CHECK(h->pdl_enabled == 0);
  g_pdl_global_found = 1;
  h->pdl_allowed = 0; /* AOTC_NO_PDL */
  aotc_rt_pdl_setup(h);
  CHECK(h->pdl_enabled == 0);
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK && g_ex_launches == 1);
  h->pdl_allowed = 1;
  aotc_rt_pdl_setup(h);
  CHECK(h->pdl_enabled == 1);
  h->cu.event_create = f_event_create;
  h->cu.event_record = f_event_record;
  h->cu.event_synchronize = f_event_sync;
  h->cu.event_elapsed_time = f_event_elapsed;
  h->cu.event_destroy = f_event_destroy;
  float ms[2];
  CHECK(profile(h, 0x2000, ms) == AOTC_OK && g_ex_launches == 1 && h->pdl_enabled == 1);
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK && g_ex_launches == 2);
  aotc_rt_release(h);
  CHECK(aotc_rt_env_flag(NULL) == 0); /* AOTC_NO_PDL is read the same way */
}

/* ---- a one-matmul model for the candidate timing: y = x W + bias ---- */
static const aotc_rt_matmul kMatmuls[] = {{"fc", AOTC_MM_F16, {AOTC_LOC_INPUT, 0, 0}, {AOTC_LOC_WEIGHTS, 0, 0},
                                           {AOTC_LOC_NULL, 0, 0}, {AOTC_LOC_OUTPUT, 0, 0},
                                           {AOTC_LOC_WEIGHTS, 0, 512}, 4, 8, 16, 1, 0, 0, 16, 8, 8, 8,
                                           0, 0, 0, 0, 1.0f, 0.0f, AOTC_EPI_BIAS, AOTC_MM_F16}};
static const aotc_rt_step kMmSteps[] = {{AOTC_STEP_MATMUL, 0, "mm0_fc", 1024ULL, 256ULL, 0, 0}};
static const long long kMmIn[] = {4, 16}, kMmOut[] = {4, 8};
static const aotc_rt_io kMmInputs[] = {{"x", 10, 2, kMmIn, 128}};
static const aotc_rt_io kMmOutputs[] = {{"y", 10, 2, kMmOut, 64}};
static const aotc_rt_model_desc kMmDesc = {
    "fake_mm", "sm_90", kNoFatbins, 1, NULL, 0, 8192, 4096, 4096, NULL, 0, NULL, 0, kMatmuls, 1, NULL, 0,
    kMmSteps, 1, kMmInputs, 1, kMmOutputs, 1, NULL, 0, 1, 0, NULL, 0};
enum { kStandIn = 0x6000000 };
static int g_mm_calls, g_mm_fail_cost, g_tune_allocs, g_tune_frees, g_null_records;
static unsigned long long g_tune_alloc_bytes;
static uint64_t g_last_algo;
static const void *g_last_a, *g_last_b, *g_last_d, *g_last_ws;
static CUresult f_tune_alloc(CUdeviceptr* p, size_t n) { *p = kStandIn; g_tune_alloc_bytes = n; ++g_tune_allocs; return 0; }
static CUresult f_tune_free(CUdeviceptr p) { CHECK(p == kStandIn); ++g_tune_frees; return 0; }
enum { kTuneStream = 0x77 };
static int g_t_capturing, g_t_streams, g_t_stream_destroys, g_t_graphs, g_t_execs, g_t_exec_destroys;
static double g_t_graph_cost;
static CUresult f_t_stream_create(CUstream* s, unsigned flags) {
  CHECK(flags == 1);
  *s = (CUstream)(uintptr_t)kTuneStream;
  ++g_t_streams;
  return 0;
}
static CUresult f_t_stream_destroy(CUstream s) { CHECK((uintptr_t)s == kTuneStream); ++g_t_stream_destroys; return 0; }
static CUresult f_t_begin(CUstream s, int mode) {
  CHECK((uintptr_t)s == kTuneStream && mode == AOTC_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && !g_t_capturing);
  g_t_capturing = 1;
  g_t_graph_cost = 0;
  return 0;
}
static CUresult f_t_end(CUstream s, CUgraph* g) {
  CHECK((uintptr_t)s == kTuneStream && g_t_capturing);
  g_t_capturing = 0;
  *g = (CUgraph)(uintptr_t)0x900;
  ++g_t_graphs;
  return 0;
}
static CUresult f_t_instantiate(CUgraphExec* e, CUgraph g, unsigned long long flags) {
  CHECK((uintptr_t)g == 0x900 && flags == 0);
  *e = (CUgraphExec)(uintptr_t)0x901;
  ++g_t_execs;
  return 0;
}
static CUresult f_t_graph_launch(CUgraphExec e, CUstream s) {
  CHECK((uintptr_t)e == 0x901 && (uintptr_t)s == kTuneStream);
  g_clock_ms += g_t_graph_cost; /* the captured calls run */
  return 0;
}
static CUresult f_t_exec_destroy(CUgraphExec e) { (void)e; ++g_t_exec_destroys; return 0; }
static CUresult f_t_graph_destroy(CUgraph g) { (void)g; return 0; }
static CUresult f_tune_record(CUevent e, CUstream s) {
  CHECK((uintptr_t)s == kTuneStream);
  g_event_time[(uintptr_t)e] = g_clock_ms;
  ++g_null_records;
  return 0;
}
static CUresult f_sync(CUstream s) { (void)s; return 0; }
static cublasStatus_t f_lt_set(cublasLtMatmulDesc_t d, int attr, const void* buf, size_t size) {
  (void)d; (void)buf; (void)size;
  CHECK(attr == AOTC_CUBLASLT_MATMUL_DESC_BIAS_POINTER);
  return 0;
}
/* A candidate's cost in ms is its algo.data[0]; cost g_mm_fail_cost fails to launch. */
static cublasStatus_t f_lt_matmul(cublasLtHandle_t hd, cublasLtMatmulDesc_t desc, const void* alpha,
                                  const void* a, cublasLtMatrixLayout_t la, const void* b,
                                  cublasLtMatrixLayout_t lb, const void* beta, const void* c,
                                  cublasLtMatrixLayout_t lc, void* d, cublasLtMatrixLayout_t ld,
                                  const cublasLtMatmulAlgo_t* algo, void* ws, size_t ws_bytes, CUstream s) {
  (void)hd; (void)desc; (void)alpha; (void)la; (void)lb; (void)beta; (void)c; (void)lc; (void)ld; (void)s;
  CHECK(((uintptr_t)ws == 0x9000000 + 4096 || (uintptr_t)ws == kStandIn + 256) && ws_bytes == 4096);
  g_last_ws = ws;
  ++g_mm_calls;
  g_last_algo = algo->data[0];
  g_last_a = b; /* cuBLASLt's B is our A (row-major swap) */
  g_last_b = a;
  g_last_d = d;
  if ((int)algo->data[0] == g_mm_fail_cost) return 13; /* CUBLAS_STATUS_EXECUTION_FAILED */
  if (g_t_capturing)
    g_t_graph_cost += (double)algo->data[0]; /* recorded into the graph, runs at its launch */
  else
    g_clock_ms += (double)algo->data[0];
  return 0;
}

static void test_matmul_tuning(void) {
  /* The library's default (aotc --tune-matmuls) and the run-time switches. */
  aotc_rt_handle* off = aotc_rt_handle_new(&kDesc, 0); /* built with tune_matmuls 0 */
  CHECK(off && off->tune_matmuls == 0);
  aotc_rt_release(off);
  setenv("AOTC_MATMUL_TUNE", "1", 1);
  off = aotc_rt_handle_new(&kDesc, 0);
  CHECK(off && off->tune_matmuls == 1);
  aotc_rt_release(off);
  unsetenv("AOTC_MATMUL_TUNE");
  setenv("AOTC_NO_MATMUL_TUNE", "1", 1);
  aotc_rt_handle* h = aotc_rt_handle_new(&kMmDesc, 0); /* built with tune_matmuls 1 */
  CHECK(h && h->tune_matmuls == 0);
  aotc_rt_release(h);
  unsetenv("AOTC_NO_MATMUL_TUNE");
  /* AOTC_LT_REDUCTION_MASK: one digit 0-7 is cuBLASLt's reduction-scheme mask; anything else, or
     unset, leaves the library's default (-1). */
  {
    static const struct { const char* text; int mask; } kMasks[] = {{"1", 1}, {"0", 0}, {"7", 7}, {"8", -1},
                                                                    {"12", -1}, {"", -1}, {"x", -1}};
    for (size_t i = 0; i < sizeof kMasks / sizeof kMasks[0]; ++i) {
      setenv("AOTC_LT_REDUCTION_MASK", kMasks[i].text, 1);
      h = aotc_rt_handle_new(&kMmDesc, 0);
      CHECK(h != NULL && h->lt_reduction_mask == kMasks[i].mask);
      aotc_rt_release(h);
    }
    unsetenv("AOTC_LT_REDUCTION_MASK");
    h = aotc_rt_handle_new(&kMmDesc, 0);
    CHECK(h != NULL && h->lt_reduction_mask == -1);
    aotc_rt_release(h);
  }
  h = aotc_rt_handle_new(&kMmDesc, 0);
  CHECK(h != NULL && h->tune_matmuls == 1);
  h->cu.ctx_push = f_ok_ctx;
  h->cu.ctx_pop = f_pop;
  h->cu.primary_ctx_release = f_release;
  h->cu.mem_alloc = f_tune_alloc;
  h->cu.mem_free = f_tune_free;
  h->cu.stream_synchronize = f_sync;
  h->cu.event_create = f_event_create;
  h->cu.event_record = f_tune_record;
  h->cu.event_synchronize = f_event_sync;
  h->cu.event_elapsed_time = f_event_elapsed;
  h->cu.event_destroy = f_event_destroy;
  h->cu.stream_create = f_t_stream_create;
  h->cu.stream_destroy = f_t_stream_destroy;
  h->cu.stream_begin_capture = f_t_begin;
  h->cu.stream_end_capture = f_t_end;
  h->cu.graph_instantiate = f_t_instantiate;
  h->cu.graph_launch = f_t_graph_launch;
  h->cu.graph_exec_destroy = f_t_exec_destroy;
  h->cu.graph_destroy = f_t_graph_destroy;
  h->lt.matmul = f_lt_matmul;
  h->lt.matmul_desc_set_attribute = f_lt_set;
  h->ctx = (CUcontext)(uintptr_t)1;
  CHECK(aotc_rt_registry_add(h));
  h->arena = 0x9000000;
  h->weights = 0x8000000;
  h->graphs_enabled = 0;
  aotc_rt_matmul_state* st = &h->matmuls[0];
  const uint64_t costs[] = {30, 7, 10, 20};
  st->num_candidates = 4;
  for (int i = 0; i < 4; ++i) st->candidates[i].data[0] = costs[i];
  st->algo = st->candidates[0];
  /* Switched off (AOTC_NO_MATMUL_TUNE): nothing runs, the heuristic's first stays. */
  h->tune_matmuls = 0;
  CHECK(aotc_rt_tune_matmuls(h) == AOTC_OK && g_mm_calls == 0 && st->algo.data[0] == 30);
  /* On: every candidate runs once plainly, then kAotcMatmulTuneReps calls captured into a graph
     that is replayed twice (warm-up, timed); candidate 1 fails its plain call and is skipped;
     the fastest that ran (10 ms a call) is kept. */
  h->tune_matmuls = 1;
  g_mm_fail_cost = 7;
  CHECK(aotc_rt_tune_matmuls(h) == AOTC_OK);
  CHECK(g_mm_calls == 3 * (1 + kAotcMatmulTuneReps) + 1);
  CHECK(g_t_streams == 1 && g_t_stream_destroys == 1 && g_t_graphs == 3 && g_t_execs == 3 &&
        g_t_exec_destroys == 3 && g_t_capturing == 0);
  CHECK(st->chosen == 2 && st->algo.data[0] == 10);
  CHECK(st->first_ms == 30.0f && st->chosen_ms == 10.0f);
  /* The caller-owned x and y and the workspace are stand-ins in one temporary buffer, freed
     again (the arena is never written at create); W is the real weights. x spans 4 x 16 fp16 =
     128 bytes, y 64: 256 bytes of operands, then the 4096-byte workspace. */
  CHECK(g_tune_allocs == 1 && g_tune_frees == 1 && g_tune_alloc_bytes == 256 + 4096);
  CHECK((uintptr_t)g_last_a == kStandIn && (uintptr_t)g_last_d == kStandIn &&
        (uintptr_t)g_last_b == 0x8000000 && (uintptr_t)g_last_ws == kStandIn + 256);
  /* run() uses the chosen algorithm with the caller's pointers. */
  const void* ins[] = {(const void*)(uintptr_t)0x1000};
  void* outs[] = {(void*)(uintptr_t)0x2000};
  CHECK(aotc_rt_run(h, ins, outs, (void*)(uintptr_t)0xabc) == AOTC_OK);
  CHECK(g_last_algo == 10 && (uintptr_t)g_last_a == 0x1000 && (uintptr_t)g_last_d == 0x2000 &&
        (uintptr_t)g_last_ws == 0x9000000 + 4096);
  /* A candidate within the noise margin of the heuristic's first does not replace it. */
  st->num_candidates = 2;
  st->candidates[0].data[0] = 100;
  st->candidates[1].data[0] = 98; /* 2% faster: noise */
  st->algo = st->candidates[0];
  g_mm_fail_cost = -1;
  CHECK(aotc_rt_tune_matmuls(h) == AOTC_OK && st->chosen == 0 && st->algo.data[0] == 100);
  st->candidates[1].data[0] = 96; /* 4% faster: taken */
  CHECK(aotc_rt_tune_matmuls(h) == AOTC_OK && st->chosen == 1 && st->algo.data[0] == 96);
  st->candidates[0].data[0] = 30;
  /* One candidate only: nothing to time. */
  int calls = g_mm_calls;
  st->num_candidates = 1;
  st->algo = st->candidates[0];
  st->chosen = 0; /* as prepare_matmul leaves it */
  CHECK(aotc_rt_tune_matmuls(h) == AOTC_OK && g_mm_calls == calls && st->algo.data[0] == 30 &&
        st->chosen == 0);
  h->lt.destroy = NULL;
  h->lt_handle = NULL;
  aotc_rt_release(h);
}

/* ---- the auxiliary stream: lane 1 steps forked from and joined back into the caller's stream ---- */
enum { kAuxStream = 0xa0c };
static char g_trace[1024];
static int g_aux_fail_on_aux, g_aux_streams_made, g_aux_stream_destroys, g_aux_events_made, g_aux_event_destroys;
static const char* stream_name(CUstream s) {
  return (uintptr_t)s == 0xabc ? "main" : (uintptr_t)s == kAuxStream ? "aux" : s == NULL ? "null" : "?";
}
static void trace(const char* what, CUstream s, CUevent e) {
  char item[48];
  if (e)
    snprintf(item, sizeof item, "%s%d:%s ", what, (int)((uintptr_t)e - 0xe0), stream_name(s));
  else
    snprintf(item, sizeof item, "%s:%s ", what, stream_name(s));
  strncat(g_trace, item, sizeof g_trace - strlen(g_trace) - 1);
}
static CUresult f_aux_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)params; (void)extra;
  trace("L", stream, NULL);
  return g_aux_fail_on_aux && (uintptr_t)stream == kAuxStream ? 1 /* CUDA_ERROR_INVALID_VALUE: not sticky */ : 0;
}
static CUresult f_aux_stream_create(CUstream* s, unsigned flags) {
  CHECK(flags == 1); /* non-blocking */
  *s = (CUstream)(uintptr_t)kAuxStream;
  ++g_aux_streams_made;
  return 0;
}
static CUresult f_aux_stream_destroy(CUstream s) { CHECK((uintptr_t)s == kAuxStream); ++g_aux_stream_destroys; return 0; }
static CUresult f_aux_event_create(CUevent* e, unsigned flags) {
  CHECK(flags == 2); /* timing off */
  *e = (CUevent)(uintptr_t)(0xe0 + ++g_aux_events_made);
  return 0;
}
static CUresult f_aux_event_destroy(CUevent e) { (void)e; ++g_aux_event_destroys; return 0; }
static CUresult f_aux_record(CUevent e, CUstream s) { trace("R", s, e); return 0; }
static CUresult f_aux_wait(CUstream s, CUevent e, unsigned flags) {
  CHECK(flags == 0);
  trace("W", s, e);
  return 0;
}
static const aotc_rt_kernel kAuxKernels[] = {{"plain", 0, {2u, 1u, 1u}, {64u, 1u, 1u}, 0u, 3, 2, 0, 0, 0, 0, NULL, 0u, 0, 0, 0u}};
/* main; aux (forks); main beside it; main (joins); aux (forks, never joined by a step). */
static const aotc_rt_step kAuxSteps[] = {{AOTC_STEP_KERNEL, 0, "k0", 0ULL, 0ULL, 0, 0},
                                         {AOTC_STEP_KERNEL, 0, "k1", 0ULL, 0ULL, 1, 1},
                                         {AOTC_STEP_KERNEL, 0, "k2", 0ULL, 0ULL, 0, 0},
                                         {AOTC_STEP_KERNEL, 0, "k3", 0ULL, 0ULL, 0, 1},
                                         {AOTC_STEP_KERNEL, 0, "k4", 0ULL, 0ULL, 1, 1},
                                         {AOTC_STEP_KERNEL, 0, "k5", 0ULL, 0ULL, 1, 0}};
static const aotc_rt_model_desc kAuxDesc = {
    "fake_aux", "sm_90", kNoFatbins, 1, NULL, 0, 4096, 0, 0, kAuxKernels, 1, kArgs, 5, NULL, 0, NULL, 0,
    kAuxSteps, 6, kIn, 1, kOut, 1, NULL, 0, 0, 0, NULL, 0};

static aotc_rt_handle* aux_handle(int with_wait) {
  aotc_rt_handle* h = fake_handle(&kAuxDesc);
  h->cu.launch_kernel = f_aux_launch;
  h->cu.stream_create = f_aux_stream_create;
  h->cu.stream_destroy = f_aux_stream_destroy;
  h->cu.event_create = f_aux_event_create;
  h->cu.event_record = f_aux_record;
  h->cu.event_destroy = f_aux_event_destroy;
  h->cu.stream_wait_event = with_wait ? f_aux_wait : NULL;
  CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
  aotc_rt_aux_setup(h); /* what create does after the kernels */
  CHECK(aotc_rt_registry_add(h));
  return h;
}

static void expect_trace(const char* want, int line) {
  if (strcmp(g_trace, want) != 0) {
    ++g_failures;
    fprintf(stderr, "%s:%d: trace\n  got  %s\n  want %s\n", __FILE__, line, g_trace, want);
  }
  g_trace[0] = '\0';
}

static void test_aux_stream(void) {
  aotc_rt_handle* h = aux_handle(1);
  CHECK(h->aux_stream == (CUstream)(uintptr_t)kAuxStream && g_aux_streams_made == 1 && g_aux_events_made == 2);
  /* Captured: k1 forks (event 1 recorded on main, aux waits), k2 runs on main beside it, k3 joins
     (event 2 recorded on aux, main waits), k4 and k5 fork again and are joined at the end. */
  g_trace[0] = '\0';
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK && h->graph_captures == 1);
  expect_trace("L:main R1:main W1:aux L:aux L:main R2:aux W2:main L:main R1:main W1:aux L:aux "
               "L:aux R2:aux W2:main ", __LINE__);
  /* Replays launch the graph only; plain launches (the NULL stream) run the table in order on
     the caller's stream, no events. */
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK && h->graph_replays == 1);
  expect_trace("", __LINE__);
  CHECK(run(h, 0x1000, 0x2000, 0) == AOTC_OK);
  expect_trace("L:null L:null L:null L:null L:null L:null ", __LINE__);
  /* A failed launch on the auxiliary stream still joins it back before the capture ends (a
     capture with an unjoined stream cannot end); the run then goes plain. */
  g_aux_fail_on_aux = 1;
  CHECK(run(h, 0x1000, 0x3000, 0xabc) == AOTC_OK && h->graphs_failed == 1);
  expect_trace("L:main R1:main W1:aux L:aux R2:aux W2:main L:main L:main L:main L:main L:main L:main ",
               __LINE__);
  g_aux_fail_on_aux = 0;
  aotc_rt_release(h);
  CHECK(g_aux_stream_destroys == 1 && g_aux_event_destroys == 2);
  /* Without cuStreamWaitEvent no auxiliary stream: the capture runs every step on main. */
  h = aux_handle(0);
  CHECK(h->aux_stream == NULL && g_aux_streams_made == 1);
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK && h->graph_captures == 1);
  expect_trace("L:main L:main L:main L:main L:main L:main ", __LINE__);
  aotc_rt_release(h);
}

/* A lane 1 matmul uses the second workspace (it may run beside a lane 0 matmul). */
static const void* g_aux_ws[4];
static int g_aux_mm_calls;
static cublasStatus_t f_aux_matmul(cublasLtHandle_t hd, cublasLtMatmulDesc_t desc, const void* alpha,
                                   const void* a, cublasLtMatrixLayout_t la, const void* b,
                                   cublasLtMatrixLayout_t lb, const void* beta, const void* c,
                                   cublasLtMatrixLayout_t lc, void* d, cublasLtMatrixLayout_t ld,
                                   const cublasLtMatmulAlgo_t* algo, void* ws, size_t ws_bytes, CUstream s) {
  (void)hd; (void)desc; (void)alpha; (void)a; (void)la; (void)b; (void)lb; (void)beta; (void)c; (void)lc;
  (void)d; (void)ld; (void)algo; (void)s;
  CHECK(ws_bytes == 4096);
  if (g_aux_mm_calls < 4) g_aux_ws[g_aux_mm_calls] = ws;
  ++g_aux_mm_calls;
  return 0;
}
static const aotc_rt_step kAuxMmSteps[] = {{AOTC_STEP_MATMUL, 0, "mm0", 0ULL, 0ULL, 0, 0},
                                           {AOTC_STEP_MATMUL, 0, "mm0_aux", 0ULL, 0ULL, 1, 1}};
static const aotc_rt_model_desc kAuxMmDesc = {
    "fake_aux_mm", "sm_90", kNoFatbins, 1, NULL, 0, 12288, 4096, 4096, NULL, 0, NULL, 0, kMatmuls, 1, NULL, 0,
    kAuxMmSteps, 2, kMmInputs, 1, kMmOutputs, 1, NULL, 0, 0, 8192, NULL, 0};

static void test_aux_workspace(void) {
  aotc_rt_handle* h = aotc_rt_handle_new(&kAuxMmDesc, 0);
  CHECK(h != NULL);
  h->lt.matmul = f_aux_matmul;
  h->lt.matmul_desc_set_attribute = f_lt_set;
  h->arena = 0x9000000;
  h->weights = 0x8000000;
  const void* ins[] = {(const void*)(uintptr_t)0x1000};
  void* outs[] = {(void*)(uintptr_t)0x2000};
  CHECK(aotc_rt_launch_all(h, ins, outs, NULL) == AOTC_OK && g_aux_mm_calls == 2);
  CHECK((uintptr_t)g_aux_ws[0] == 0x9000000 + 4096 && (uintptr_t)g_aux_ws[1] == 0x9000000 + 8192);
  aotc_rt_release(h);
}

/* ---- prebuilt params and tensor maps: lib(x, y, arena + 512, weights + 1024), its params built at
   compile time (a 320-byte struct: x, y and the weight pointer patched at bytes 8, 16, 24), a tiled
   map of arena + 512 at byte 64 and an im2col map of weights + 1024 at byte 192 ---- */
enum { kTmArena = 0x9000000, kTmWeights = 0x8000000, kTmParamsBytes = 320 };
static const aotc_rt_ref kTmArgs[] = {{AOTC_LOC_INPUT, 0, 0}, {AOTC_LOC_OUTPUT, 0, 0},
                                      {AOTC_LOC_ARENA, 0, 512}, {AOTC_LOC_WEIGHTS, 0, 1024}};
static const aotc_rt_tensor_map kTmMaps[] = {
    /* fp16 (CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6) [2][128][64], a 64 x 32 x 1 box, 128-byte
       swizzle (3), L2 promotion 128B (2), zero fill (0) */
    {64u, 2, 0, 6, 3, {64, 128, 2, 0, 0}, {128, 16384, 0, 0}, {64, 32, 1, 0, 0}, {0, 0, 0}, {0, 0, 0},
     0u, 0u, {1, 1, 1, 0, 0}, 0, 3, 2, 0},
    /* fp16 NHWC [2][16][16][64], corners (-1, -2) and (1, 2), 64 channels, 128 pixels, L2 64B (1),
       NaN fill (1) */
    {192u, 3, 1, 6, 4, {64, 16, 16, 2, 0}, {128, 2048, 32768, 0}, {0, 0, 0, 0, 0}, {-1, -2, 0}, {1, 2, 0},
     64u, 128u, {1, 2, 2, 1, 0}, 0, 3, 1, 1},
};
static const aotc_rt_step kTmSteps[] = {{AOTC_STEP_KERNEL, 0, "k0_lib", 0ULL, 0ULL, 0, 0}};
static unsigned char g_tm_prebuilt[AOTC_RT_PARAMS_OFFSET + kTmParamsBytes];
static aotc_rt_kernel g_tm_kernel;
static aotc_rt_tensor_map g_tm_maps[2];
static aotc_rt_model_desc g_tm_desc;

static unsigned char tm_struct_byte(int i) { return (unsigned char)(i * 7 + 3); }

/* The good model (each refusal case breaks one thing): header with grid 6x2, block 256, 100000
   bytes of shared memory, a 16-CTA cluster, slots 8, 16, -, 24; then the struct's bytes 7i + 3. */
static void tm_model(void) {
  aotc_rt_params_header ph;
  memset(&ph, 0, sizeof ph);
  ph.magic = AOTC_RT_PARAMS_MAGIC;
  ph.params_bytes = kTmParamsBytes;
  ph.grid[0] = 6; ph.grid[1] = 2; ph.grid[2] = 1;
  ph.block[0] = 256; ph.block[1] = 1; ph.block[2] = 1;
  ph.shared_bytes = 100000;
  ph.cluster_size = 16;
  ph.num_slots = 4;
  for (int i = 0; i < AOTC_RT_PARAMS_MAX_SLOTS; ++i) ph.slot_offset[i] = AOTC_RT_SLOT_UNUSED;
  ph.slot_offset[0] = 8;
  ph.slot_offset[1] = 16;
  ph.slot_offset[3] = 24;
  memset(g_tm_prebuilt, 0, sizeof g_tm_prebuilt);
  memcpy(g_tm_prebuilt, &ph, sizeof ph);
  for (int i = 0; i < kTmParamsBytes; ++i) g_tm_prebuilt[AOTC_RT_PARAMS_OFFSET + i] = tm_struct_byte(i);
  const aotc_rt_kernel k = {"lib", 0, {9u, 9u, 9u}, {9u, 1u, 1u}, 0u, 0, 4, 1, 0, 0, 0,
                            g_tm_prebuilt, (unsigned)sizeof g_tm_prebuilt, 0, 2, 0u};
  g_tm_kernel = k;
  memcpy(g_tm_maps, kTmMaps, sizeof g_tm_maps);
  const aotc_rt_model_desc d = {"fake_tm", "sm_90", kNoFatbins, 1, NULL, 0, 4096, 0, 0, &g_tm_kernel, 1,
                                kTmArgs, 4, NULL, 0, NULL, 0, kTmSteps, 1, kIn, 1, kOut, 1, NULL, 0, 0, 0,
                                g_tm_maps, 2};
  g_tm_desc = d;
}

static void tm_set_slot(int slot, unsigned offset) {
  memcpy(g_tm_prebuilt + offsetof(aotc_rt_params_header, slot_offset) + (size_t)slot * sizeof(unsigned),
         &offset, sizeof offset);
}

/* The fake encoders record their arguments and write a recognisable descriptor: the address, the
   call's number (from 1), a kind tag, then 0xd0d0d0d0'00000000 + i; call g_tm_fail_at fails. */
enum { kTmTiledTag = 0x711e, kTmIm2colTag = 0x1c01 };
typedef struct tm_call {
  int im2col, data_type;
  unsigned rank;
  uintptr_t address;
  unsigned long long dims[5], strides[4];
  unsigned box[5];
  int lower[3], upper[3];
  unsigned channels, pixels;
  unsigned element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
  int aligned; /* the output descriptor is 128-byte aligned */
} tm_call;
static tm_call g_tm_calls[4];
static int g_tm_count, g_tm_fail_at;

static CUresult tm_record(tm_call** out, aotc_cu_tensor_map* map, int im2col, int data_type, unsigned rank,
                          void* address, const unsigned long long* dims, const unsigned long long* strides,
                          const unsigned* element_strides, int interleave, int swizzle, int l2, int oob) {
  tm_call* c = &g_tm_calls[g_tm_count % 4];
  memset(c, 0, sizeof *c);
  ++g_tm_count;
  c->im2col = im2col;
  c->data_type = data_type;
  c->rank = rank;
  c->address = (uintptr_t)address;
  for (unsigned i = 0; i < rank && i < 5; ++i) c->dims[i] = dims[i];
  for (unsigned i = 0; i + 1 < rank && i < 4; ++i) c->strides[i] = strides[i];
  for (unsigned i = 0; i < rank && i < 5; ++i) c->element_strides[i] = element_strides[i];
  c->interleave = interleave;
  c->swizzle = swizzle;
  c->l2_promotion = l2;
  c->oob_fill = oob;
  c->aligned = (uintptr_t)map % 128 == 0;
  map->opaque[0] = (unsigned long long)(uintptr_t)address;
  map->opaque[1] = (unsigned long long)g_tm_count;
  map->opaque[2] = im2col ? kTmIm2colTag : kTmTiledTag;
  for (int i = 3; i < 16; ++i) map->opaque[i] = 0xd0d0d0d000000000ULL + (unsigned long long)i;
  *out = c;
  return g_tm_count == g_tm_fail_at ? 1 /* CUDA_ERROR_INVALID_VALUE */ : 0;
}
static CUresult f_tm_tiled(aotc_cu_tensor_map* map, int data_type, unsigned rank, void* address,
                           const unsigned long long* dims, const unsigned long long* strides, const unsigned* box,
                           const unsigned* element_strides, int interleave, int swizzle, int l2, int oob) {
  tm_call* c;
  CUresult r = tm_record(&c, map, 0, data_type, rank, address, dims, strides, element_strides, interleave, swizzle,
                         l2, oob);
  for (unsigned i = 0; i < rank && i < 5; ++i) c->box[i] = box[i];
  return r;
}
static CUresult f_tm_im2col(aotc_cu_tensor_map* map, int data_type, unsigned rank, void* address,
                            const unsigned long long* dims, const unsigned long long* strides, const int* lower,
                            const int* upper, unsigned channels, unsigned pixels, const unsigned* element_strides,
                            int interleave, int swizzle, int l2, int oob) {
  tm_call* c;
  CUresult r = tm_record(&c, map, 1, data_type, rank, address, dims, strides, element_strides, interleave, swizzle,
                         l2, oob);
  for (unsigned i = 0; i + 2 < rank && i < 3; ++i) {
    c->lower[i] = lower[i];
    c->upper[i] = upper[i];
  }
  c->channels = channels;
  c->pixels = pixels;
  return r;
}

static aotc_rt_handle* tm_handle(void) {
  aotc_rt_handle* h = fake_handle(&g_tm_desc); /* arena kTmArena */
  h->cu.tensor_map_encode_tiled = f_tm_tiled;
  h->cu.tensor_map_encode_im2col = f_tm_im2col;
  h->weights = kTmWeights;
  g_tm_count = 0;
  g_tm_fail_at = 0;
  return h;
}

/* The descriptor the fake wrote for call `call` of `address`, at `offset` of the last launch's
   params struct. */
static void expect_descriptor(int offset, unsigned long long address, int call, unsigned long long tag, int line) {
  unsigned long long q[16];
  memcpy(q, g_lib_params + offset, sizeof q);
  int ok = q[0] == address && q[1] == (unsigned long long)call && q[2] == tag;
  for (int i = 3; i < 16; ++i) ok = ok && q[i] == 0xd0d0d0d000000000ULL + (unsigned long long)i;
  if (!ok) {
    ++g_failures;
    fprintf(stderr, "%s:%d: descriptor at byte %d: 0x%llx #%llu tag 0x%llx, want 0x%llx #%d tag 0x%llx\n", __FILE__,
            line, offset, q[0], q[1], q[2], address, call, tag);
  }
}

/* A prebuilt library kernel: no builder looked up or launched, no scratch, the prebuilt header's
   launch shape (and cluster attribute); run() passes the prebuilt struct with the descriptors at
   the map offsets and the run's pointers in the slots, the rest as compiled. */
static void test_prebuilt_params(void) {
  tm_model();
  int lookups = g_builder_lookups, builders = g_builder_launches, allocs = g_allocs;
  aotc_rt_handle* h = tm_handle();
  g_attr_value = 0;
  g_cluster_attr_value = -1;
  CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
  CHECK(g_builder_lookups == lookups && g_builder_launches == builders && g_allocs == allocs);
  const aotc_rt_launch_shape* s = &h->shapes[0];
  CHECK(s->grid[0] == 6 && s->grid[1] == 2 && s->grid[2] == 1 && s->block[0] == 256 && s->block[1] == 1 &&
        s->block[2] == 1 && s->shared_bytes == 100000);
  CHECK(g_attr_value == 100000 && g_cluster_attr_value == 1);
  CHECK(aotc_rt_encode_tensor_maps(h) == AOTC_OK && g_tm_count == 2);
  CHECK(aotc_rt_registry_add(h));
  int launches = g_kernel_launches;
  CHECK(run(h, 0x1000, 0x2000, 0xabc) == AOTC_OK && g_kernel_launches == launches + 1);
  CHECK(g_lib_shape[0] == 6 && g_lib_shape[1] == 2 && g_lib_shape[2] == 1 && g_lib_shape[3] == 256 &&
        g_lib_shape[4] == 1 && g_lib_shape[5] == 1 && g_lib_shape[6] == 100000);
  CHECK(lib_slot(8) == 0x1000 && lib_slot(16) == 0x2000 && lib_slot(24) == kTmWeights + 1024);
  expect_descriptor(64, kTmArena + 512, 1, kTmTiledTag, __LINE__);
  expect_descriptor(192, kTmWeights + 1024, 2, kTmIm2colTag, __LINE__);
  int same = 1;
  for (int i = 0; i < 64; ++i)
    if (i < 8 || i >= 32) same = same && g_lib_params[i] == tm_struct_byte(i);
  CHECK(same); /* the prebuilt bytes outside the slots and the descriptors */
  /* Other pointers: the slots change, the descriptors do not (and are not encoded again). */
  CHECK(run(h, 0x1100, 0x3000, 0) == AOTC_OK && g_kernel_launches == launches + 2 && g_tm_count == 2);
  CHECK(lib_slot(8) == 0x1100 && lib_slot(16) == 0x3000 && lib_slot(24) == kTmWeights + 1024);
  expect_descriptor(64, kTmArena + 512, 1, kTmTiledTag, __LINE__);
  expect_descriptor(192, kTmWeights + 1024, 2, kTmIm2colTag, __LINE__);
  aotc_rt_release(h);
  /* A model without tensor maps needs no encoder (the fake's default has none). */
  good_header();
  h = new_handle();
  CHECK(h->cu.tensor_map_encode_tiled == NULL && aotc_rt_prepare_kernels(h) == AOTC_OK &&
        aotc_rt_encode_tensor_maps(h) == AOTC_OK);
  aotc_rt_release(h);
}

/* The encoders get exactly the recorded fields and the arena / weight addresses. */
static void test_tensor_map_encoder_arguments(void) {
  tm_model();
  aotc_rt_handle* h = tm_handle();
  CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK && aotc_rt_encode_tensor_maps(h) == AOTC_OK && g_tm_count == 2);
  const tm_call* t = &g_tm_calls[0];
  CHECK(t->im2col == 0 && t->aligned && t->address == kTmArena + 512 && t->data_type == 6 && t->rank == 3);
  CHECK(t->dims[0] == 64 && t->dims[1] == 128 && t->dims[2] == 2);
  CHECK(t->strides[0] == 128 && t->strides[1] == 16384 && t->strides[2] == 0);
  CHECK(t->box[0] == 64 && t->box[1] == 32 && t->box[2] == 1);
  CHECK(t->element_strides[0] == 1 && t->element_strides[1] == 1 && t->element_strides[2] == 1);
  CHECK(t->interleave == 0 && t->swizzle == 3 && t->l2_promotion == 2 && t->oob_fill == 0);
  const tm_call* c = &g_tm_calls[1];
  CHECK(c->im2col == 1 && c->aligned && c->address == kTmWeights + 1024 && c->data_type == 6 && c->rank == 4);
  CHECK(c->dims[0] == 64 && c->dims[1] == 16 && c->dims[2] == 16 && c->dims[3] == 2);
  CHECK(c->strides[0] == 128 && c->strides[1] == 2048 && c->strides[2] == 32768);
  CHECK(c->lower[0] == -1 && c->lower[1] == -2 && c->upper[0] == 1 && c->upper[1] == 2);
  CHECK(c->channels == 64 && c->pixels == 128);
  CHECK(c->element_strides[0] == 1 && c->element_strides[1] == 2 && c->element_strides[2] == 2 &&
        c->element_strides[3] == 1);
  CHECK(c->interleave == 0 && c->swizzle == 3 && c->l2_promotion == 1 && c->oob_fill == 1);
  aotc_rt_release(h);
}

enum { kTmNoTiled = 1, kTmNoIm2col = 2 };
/* Create (prepare_kernels, then encode_tensor_maps) must fail with `code` and a message holding
   `expected` and the kernel's name; then the good model is back for the next case. */
static void expect_tm_refusal(int absent, int fail_at, int code, const char* expected, int line) {
  aotc_rt_handle* h = tm_handle();
  if (absent & kTmNoTiled) h->cu.tensor_map_encode_tiled = NULL;
  if (absent & kTmNoIm2col) h->cu.tensor_map_encode_im2col = NULL;
  g_tm_fail_at = fail_at;
  int got = aotc_rt_prepare_kernels(h);
  if (got == AOTC_OK) got = aotc_rt_encode_tensor_maps(h);
  if (got != code || !strstr(h->message, expected) || !strstr(h->message, "kernel lib")) {
    ++g_failures;
    fprintf(stderr, "%s:%d: got %d '%s', want %d '%s'\n", __FILE__, line, got, h->message, code, expected);
  }
  CHECK(g_allocs == g_frees);
  g_tm_fail_at = 0;
  aotc_rt_release(h);
  tm_model();
}

static void test_tensor_map_refusals(void) {
  tm_model();
  g_tm_maps[0].arg = 0;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "tensor map 0 describes pointer argument 0, a graph input", __LINE__);
  g_tm_maps[1].arg = 1;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "tensor map 1 describes pointer argument 1, a graph output", __LINE__);
  g_tm_maps[0].arg = 4;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "tensor map 0 describes pointer argument 4 (the kernel has 4)", __LINE__);
  g_tm_maps[1].offset = 96;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "tensor map 1 at byte 96 is not 64-byte aligned", __LINE__);
  g_tm_maps[1].offset = 256; /* aligned, but 256 + 128 > 320 */
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "tensor map 1 at byte 256 is not 64-byte aligned or not inside the 320-byte",
                    __LINE__);
  tm_set_slot(3, 184); /* the weight pointer's slot inside map 0's bytes 64..191 */
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "tensor map 0 at byte 64 overlaps pointer slot 3 at byte 184", __LINE__);
  g_tm_maps[1].rank = 2;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "tensor map 1 of rank 2 (im2col: 3 to 5)", __LINE__);
  g_tm_maps[0].rank = 6;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "tensor map 0 of rank 6 (tiled: 1 to 5)", __LINE__);
  g_tm_kernel.first_tensor_map = 1;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "tensor maps 1 (+2) outside the model's 2", __LINE__);
  g_tm_kernel.library = 0;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "kernel lib: 2 tensor maps, but only a library kernel", __LINE__);
  expect_tm_refusal(kTmNoIm2col, 0, AOTC_ERROR_NO_DRIVER,
                    "the driver has no cuTensorMapEncodeIm2col (a CUDA 12+ driver is needed for kernel lib)",
                    __LINE__);
  expect_tm_refusal(kTmNoTiled, 0, AOTC_ERROR_NO_DRIVER,
                    "the driver has no cuTensorMapEncodeTiled (a CUDA 12+ driver is needed for kernel lib)",
                    __LINE__);
  expect_tm_refusal(0, 1, AOTC_ERROR_CUDA, "cuTensorMapEncodeTiled(kernel lib, tensor map 0) failed: CUDA_ERROR_FAKE",
                    __LINE__);
  expect_tm_refusal(0, 2, AOTC_ERROR_CUDA, "cuTensorMapEncodeIm2col(kernel lib, tensor map 1) failed: CUDA_ERROR_FAKE",
                    __LINE__);
  g_tm_kernel.prebuilt_bytes = AOTC_RT_PARAMS_OFFSET;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "prebuilt params of 256 bytes (257 to 4096 allowed", __LINE__);
  g_tm_kernel.prebuilt_bytes = AOTC_RT_PARAMS_MAX_BYTES + 1;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "prebuilt params of 4097 bytes (257 to 4096 allowed", __LINE__);
  g_tm_kernel.prebuilt_bytes = AOTC_RT_PARAMS_OFFSET + 100;
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "prebuilt params of 356 bytes end inside its 320-byte params struct",
                    __LINE__);
  g_tm_prebuilt[0] ^= 0xff; /* the magic's low byte: 0x41505248 -> 0x415052b7 */
  expect_tm_refusal(0, 0, AOTC_ERROR_CUDA, "its compile-time params builder wrote magic 0x415052b7", __LINE__);
}

int main(void) {
  test_env();
  test_library_kernel_and_graphs();
  test_capture_failure_and_graphs_off();
  test_header_validation();
  test_cluster_size();
  test_plain_cluster_size();
  test_profile(); /* after the tests that check absolute counts */
  test_pdl();
  test_matmul_tuning();
  test_aux_stream();
  test_aux_workspace();
  test_prebuilt_params();
  test_tensor_map_encoder_arguments();
  test_tensor_map_refusals();
  if (g_failures) {
    fprintf(stderr, "%d failures\n", g_failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
