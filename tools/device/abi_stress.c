/* abi_stress: the threading and misuse promises of a generated library (docs/abi.md), checked
   against the library itself on the GPU (issue 10). Plain C + pthreads; the library is dlopen'ed by
   path and prefix and the driver through libcuda.so.1, so it builds with
   `cc -O2 -pthread abi_stress.c abi_misuse.c -ldl` and no CUDA headers (CMake target
   aotc-abi-stress; CTest runs it against tests/tools' fake driver).
   stress: one owner handle computes reference outputs for K seeded random inputs on one thread
     (graph replay, plain launches and run_host must agree); then H handles sharing its weights,
     each with its own cuMemAlloc'ed workspace, are driven by T threads x N runs (each thread holds
     2 handles and trades them through a locked pool every M runs), every output compared with
     memcmp; then the owner is destroyed first and every handle runs once more.
   misuse (abi_misuse.c): one row per misuse of docs/abi.md "Misuse".
   Exit 0 when every run matched / every row returned its code; 1 otherwise; 2 on setup errors. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi_stress.h"

aotc_cu_table cu;
aotc_lib_table lib;
int g_device, g_num_inputs, g_num_outputs;
unsigned long long g_in_bytes[kMaxIo], g_out_bytes[kMaxIo], g_arena;
void* g_ctx;

const char* cu_name(CUresult r) {
  const char* n = NULL;
  if (cu.get_error_name && cu.get_error_name(r, &n) == 0 && n) return n;
  return "?";
}
static void* need(void* so, const char* name, int optional) {
  void* p = dlsym(so, name);
  if (!p && !optional) {
    fprintf(stderr, "abi_stress: %s is missing\n", name);
    exit(2);
  }
  return p;
}

static void load(const char* path, const char* prefix) {
  void* so = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!so) {
    fprintf(stderr, "abi_stress: cannot open libcuda.so.1: %s\n", dlerror());
    exit(2);
  }
#define SYM(field, name) *(void**)&cu.field = need(so, name, 0)
#define OPT(field, name) *(void**)&cu.field = need(so, name, 1)
  SYM(init, "cuInit"); SYM(device_get_count, "cuDeviceGetCount");
  SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain"); SYM(ctx_set_current, "cuCtxSetCurrent");
  SYM(ctx_synchronize, "cuCtxSynchronize"); SYM(mem_alloc, "cuMemAlloc_v2"); SYM(mem_free, "cuMemFree_v2");
  SYM(htod, "cuMemcpyHtoD_v2"); SYM(dtoh, "cuMemcpyDtoH_v2"); SYM(memset_d8, "cuMemsetD8_v2");
  OPT(memset_d8_async, "cuMemsetD8Async"); SYM(stream_create, "cuStreamCreate");
  SYM(stream_synchronize, "cuStreamSynchronize"); SYM(stream_destroy, "cuStreamDestroy_v2");
  OPT(mem_host_alloc, "cuMemHostAlloc"); OPT(mem_free_host, "cuMemFreeHost");
  OPT(module_load_data, "cuModuleLoadData"); OPT(module_get_function, "cuModuleGetFunction");
  OPT(launch_kernel, "cuLaunchKernel"); SYM(get_error_name, "cuGetErrorName");
  OPT(fake_launches, "fake_cuda_launches"); OPT(fake_inject_fault, "fake_cuda_inject_fault");
  void* l = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!l) {
    fprintf(stderr, "abi_stress: cannot open %s: %s\n", path, dlerror());
    exit(2);
  }
  char name[256];
#define LIB(field, suffix) \
  (snprintf(name, sizeof name, "%s_%s", prefix, suffix), *(void**)&lib.field = need(l, name, 0))
  LIB(create, "create"); LIB(destroy, "destroy"); LIB(run, "run"); LIB(run_host, "run_host");
  LIB(last_error, "last_error"); LIB(num_inputs, "num_inputs"); LIB(num_outputs, "num_outputs");
  LIB(input_dtype, "input_dtype"); LIB(input_bytes, "input_bytes"); LIB(output_bytes, "output_bytes");
  LIB(arena_bytes, "arena_bytes");
  g_num_inputs = lib.num_inputs();
  g_num_outputs = lib.num_outputs();
  if (g_num_inputs > kMaxIo || g_num_outputs > kMaxIo) {
    fprintf(stderr, "abi_stress: more than %d inputs or outputs\n", kMaxIo);
    exit(2);
  }
  for (int i = 0; i < g_num_inputs; ++i) g_in_bytes[i] = lib.input_bytes(i);
  for (int i = 0; i < g_num_outputs; ++i) g_out_bytes[i] = lib.output_bytes(i);
  g_arena = lib.arena_bytes();
  CU(cu.init(0));
  CU(cu.primary_ctx_retain(&g_ctx, g_device));
  CU(cu.ctx_set_current(g_ctx));
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static uint64_t next(uint64_t* s) { /* xorshift64* */
  *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1Dull;
}
static uint16_t to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xff, m = x & 0x7fffffu;
  if (e < 113) return (uint16_t)sign; /* |f| < 2^-14: zero (inputs are in [-1, 1]) */
  return (uint16_t)(sign | ((e - 112) << 10) | (m >> 13));
}
/* Seeded random bytes for input i by its ONNX dtype: floats in [-1, 1], integers 0 or 1 (valid
   indices, token types and masks for every model we compile), other types random bytes. */
static void fill(unsigned char* p, int dtype, unsigned long long bytes, uint64_t* s) {
  unsigned long long n;
  switch (dtype) {
    case 1: n = bytes / 4;
      for (unsigned long long i = 0; i < n; ++i) { float f = (float)((double)(next(s) >> 11) / 4503599627370496.0 - 1.0); memcpy(p + 4 * i, &f, 4); }
      break;
    case 10: case 16: n = bytes / 2;
      for (unsigned long long i = 0; i < n; ++i) {
        float f = (float)((double)(next(s) >> 11) / 4503599627370496.0 - 1.0);
        uint32_t x; memcpy(&x, &f, 4);
        uint16_t h = dtype == 10 ? to_half(f) : (uint16_t)(x >> 16);
        memcpy(p + 2 * i, &h, 2);
      }
      break;
    case 6: case 7: case 9: case 2: case 3: case 4: case 5: case 12: case 13: {
      int size = dtype == 7 || dtype == 13 ? 8 : dtype == 6 || dtype == 12 ? 4 : dtype == 4 || dtype == 5 ? 2 : 1;
      memset(p, 0, bytes);
      for (unsigned long long i = 0; i < bytes / (unsigned long long)size; ++i) p[i * (unsigned long long)size] = (unsigned char)(next(s) & 1);
      break;
    }
    default:
      for (unsigned long long i = 0; i < bytes; ++i) p[i] = (unsigned char)next(s);
  }
}
CUdeviceptr dev_alloc(unsigned long long bytes) {
  CUdeviceptr p = 0;
  CU(cu.mem_alloc(&p, bytes ? bytes : 1));
  return p;
}

/* ---- stress ---- */
typedef struct options {
  int handles, threads, runs, inputs, migrate_every;
  double seconds;
  uint64_t seed;
  int no_fault, host_compare_every;
} options;
static options g_opt = {16, 8, 10000, 4, 1000, 0, 1, 0, 64};

static CUdeviceptr g_in[64][kMaxIo]; /* [input set][input] */
static unsigned char* g_ref[64][kMaxIo]; /* [input set][output] */
static model* g_pool[kMaxHandles];
static int g_pool_count;
static pthread_mutex_t g_pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static double g_deadline;

typedef struct thread_result {
  int index;
  long long runs, mismatches, errors, disagreements;
  char first_error[256];
} thread_result;

static void pool_put(model* m) {
  pthread_mutex_lock(&g_pool_mutex);
  g_pool[g_pool_count++] = m;
  pthread_mutex_unlock(&g_pool_mutex);
}
static model* pool_take(void) { /* FIFO: a returned handle goes to whoever asks later */
  pthread_mutex_lock(&g_pool_mutex);
  model* m = g_pool[0];
  memmove(g_pool, g_pool + 1, (size_t)(--g_pool_count) * sizeof g_pool[0]);
  pthread_mutex_unlock(&g_pool_mutex);
  return m;
}

/* Comparing on the device, so large outputs (GPT-2's logits) need not cross PCIe every run: a PTX
   kernel (JIT-compiled by the driver, no nvcc) sets a flag when two buffers differ in any 32-bit
   word; the last bytes % 4 are compared on the host. The fake driver cannot run PTX: there every
   output is copied back and memcmp'ed. Every --host-compare-every'th run is memcmp'ed on the host
   as well, and a disagreement between the two counts as a mismatch. */
static const char kComparePtx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry aotc_compare(.param .u64 a, .param .u64 b, .param .u64 n, .param .u64 flag)\n{\n"
    "  .reg .pred %p<3>;\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<12>;\n"
    "  ld.param.u64 %rd1, [a];\n  ld.param.u64 %rd2, [b];\n  ld.param.u64 %rd3, [n];\n"
    "  ld.param.u64 %rd4, [flag];\n  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n"
    "  mov.u32 %r3, %tid.x;\n  mul.wide.u32 %rd5, %r1, %r2;\n  cvt.u64.u32 %rd6, %r3;\n"
    "  add.u64 %rd5, %rd5, %rd6;\n  setp.ge.u64 %p1, %rd5, %rd3;\n  @%p1 bra DONE;\n"
    "  shl.b64 %rd7, %rd5, 2;\n  add.u64 %rd8, %rd1, %rd7;\n  add.u64 %rd9, %rd2, %rd7;\n"
    "  ld.global.u32 %r4, [%rd8];\n  ld.global.u32 %r5, [%rd9];\n  setp.eq.u32 %p2, %r4, %r5;\n"
    "  @%p2 bra DONE;\n  mov.u32 %r6, 1;\n  st.global.u32 [%rd4], %r6;\nDONE:\n  ret;\n}\n";
static void* g_compare_fn;
static CUdeviceptr g_ref_dev[64][kMaxIo];

/* Queues the comparison of every 4-byte word of a and b (flag set to 1 on a difference). */
static void queue_compare(CUdeviceptr a, CUdeviceptr b, unsigned long long bytes, CUdeviceptr flag, void* stream) {
  unsigned long long words = bytes / 4;
  if (words == 0) return;
  void* params[] = {&a, &b, &words, &flag};
  CU(cu.launch_kernel(g_compare_fn, (unsigned)((words + 255) / 256), 1, 1, 256, 1, 1, 0, stream, params, NULL));
}
static int tails_equal(CUdeviceptr out, const unsigned char* ref, unsigned long long bytes) {
  unsigned char tail[4];
  unsigned long long t = bytes % 4;
  if (t == 0) return 1;
  CU(cu.dtoh(tail, out + bytes - t, t));
  return memcmp(tail, ref + bytes - t, t) == 0;
}
static int host_equal(CUdeviceptr const* out, unsigned char* const* host, int k) {
  int same = 1;
  for (int o = 0; o < g_num_outputs; ++o) {
    CU(cu.dtoh(host[o], out[o], g_out_bytes[o]));
    if (memcmp(host[o], g_ref[k][o], g_out_bytes[o]) != 0) same = 0;
  }
  return same;
}

/* The compare kernel, loaded and checked on the reference: equal to itself, and a copy with one
   flipped bit differs. 0: not available (host comparisons); -1: it gave a wrong answer. */
static int setup_device_compare(void) {
  void* module = NULL;
  if (!cu.module_load_data || !cu.module_get_function || !cu.launch_kernel ||
      cu.module_load_data(&module, kComparePtx) != 0 ||
      cu.module_get_function(&g_compare_fn, module, "aotc_compare") != 0) {
    g_compare_fn = NULL;
    return 0;
  }
  for (int k = 0; k < g_opt.inputs; ++k)
    for (int o = 0; o < g_num_outputs; ++o) {
      g_ref_dev[k][o] = dev_alloc(g_out_bytes[o]);
      CU(cu.htod(g_ref_dev[k][o], g_ref[k][o], g_out_bytes[o]));
    }
  int o = 0;
  while (o < g_num_outputs && g_out_bytes[o] < 4) ++o;
  if (o == g_num_outputs) return 0;
  unsigned long long bytes = g_out_bytes[o];
  unsigned char* flipped = (unsigned char*)malloc(bytes);
  memcpy(flipped, g_ref[0][o], bytes);
  flipped[(bytes / 4 - 1) * 4] ^= 0x10;
  CUdeviceptr copy = dev_alloc(bytes), flag = dev_alloc(4);
  CU(cu.htod(copy, flipped, bytes));
  unsigned same_flag = 9, diff_flag = 9;
  CU(cu.memset_d8(flag, 0, 4));
  queue_compare(g_ref_dev[0][o], g_ref_dev[0][o], bytes, flag, NULL);
  CU(cu.ctx_synchronize());
  CU(cu.dtoh(&same_flag, flag, 4));
  CU(cu.memset_d8(flag, 0, 4));
  queue_compare(g_ref_dev[0][o], copy, bytes, flag, NULL);
  CU(cu.ctx_synchronize());
  CU(cu.dtoh(&diff_flag, flag, 4));
  cu.mem_free(copy);
  cu.mem_free(flag);
  free(flipped);
  return same_flag == 0 && diff_flag == 1 ? 1 : -1;
}

static void* stress_thread(void* arg) {
  thread_result* res = (thread_result*)arg;
  CU(cu.ctx_set_current(g_ctx));
  void* stream = NULL;
  CU(cu.stream_create(&stream, 1 /* CU_STREAM_NON_BLOCKING */));
  CUdeviceptr out[kMaxIo];
  unsigned char* host[kMaxIo];
  for (int o = 0; o < g_num_outputs; ++o) {
    out[o] = dev_alloc(g_out_bytes[o]);
    host[o] = (unsigned char*)malloc(g_out_bytes[o] ? g_out_bytes[o] : 1);
  }
  CUdeviceptr flag = g_compare_fn ? dev_alloc(4) : 0;
  uint64_t rng = g_opt.seed * 7919u + (uint64_t)res->index * 104729u + 1;
  model* mine[2] = {pool_take(), pool_take()};
  for (int r = 0; r < g_opt.runs; ++r) {
    if (g_opt.seconds > 0 && (r & 63) == 0 && now() > g_deadline) break;
    if (r > 0 && g_opt.migrate_every > 0 && r % g_opt.migrate_every == 0) {
      pool_put(mine[0]); pool_put(mine[1]);
      mine[0] = pool_take(); mine[1] = pool_take();
    }
    model* m = mine[r & 1];
    int k = (int)(next(&rng) % (uint64_t)g_opt.inputs);
    const void* ins[kMaxIo];
    void* outs[kMaxIo];
    for (int i = 0; i < g_num_inputs; ++i) ins[i] = (const void*)(uintptr_t)g_in[k][i];
    for (int o = 0; o < g_num_outputs; ++o) {
      outs[o] = (void*)(uintptr_t)out[o];
      if (cu.memset_d8_async) CU(cu.memset_d8_async(out[o], 0xA5, g_out_bytes[o], stream)); /* poison */
    }
    int rc = lib.run(m, ins, outs, stream);
    ++res->runs;
    if (rc != 0) {
      if (res->errors++ == 0) snprintf(res->first_error, sizeof res->first_error, "run returned %d: %s", rc, lib.last_error(m));
      continue;
    }
    int same = 1;
    if (g_compare_fn) {
      unsigned differs = 1;
      CU(cu.memset_d8_async(flag, 0, 4, stream));
      for (int o = 0; o < g_num_outputs; ++o) queue_compare(out[o], g_ref_dev[k][o], g_out_bytes[o], flag, stream);
      CU(cu.stream_synchronize(stream));
      CU(cu.dtoh(&differs, flag, 4));
      same = differs == 0;
      for (int o = 0; o < g_num_outputs; ++o) same &= tails_equal(out[o], g_ref[k][o], g_out_bytes[o]);
      if (g_opt.host_compare_every > 0 && r % g_opt.host_compare_every == 0 && host_equal(out, host, k) != same) {
        same = 0;
        ++res->disagreements;
      }
    } else {
      CU(cu.stream_synchronize(stream));
      same = host_equal(out, host, k);
    }
    if (!same && res->mismatches++ == 0 && res->errors == 0)
      snprintf(res->first_error, sizeof res->first_error, "run %d (input set %d): outputs differ from the reference", r, k);
  }
  pool_put(mine[0]); pool_put(mine[1]);
  for (int o = 0; o < g_num_outputs; ++o) { cu.mem_free(out[o]); free(host[o]); }
  if (flag) cu.mem_free(flag);
  cu.stream_destroy(stream);
  return NULL;
}

/* Runs m once on input set k (stream: NULL = plain launches) and compares with the reference;
   store: write the outputs as the reference instead. Returns 1 when they match. */
static int run_once(model* m, int k, void* stream, int host_api, int store) {
  const void* ins[kMaxIo];
  void* outs[kMaxIo];
  CUdeviceptr out[kMaxIo];
  unsigned char* host[kMaxIo];
  unsigned char* host_in[kMaxIo];
  for (int o = 0; o < g_num_outputs; ++o) {
    out[o] = dev_alloc(g_out_bytes[o]);
    CU(cu.memset_d8(out[o], 0xA5, g_out_bytes[o]));
    host[o] = (unsigned char*)calloc(1, g_out_bytes[o] ? g_out_bytes[o] : 1);
    outs[o] = host_api ? (void*)host[o] : (void*)(uintptr_t)out[o];
  }
  for (int i = 0; i < g_num_inputs; ++i) {
    host_in[i] = (unsigned char*)malloc(g_in_bytes[i] ? g_in_bytes[i] : 1);
    CU(cu.dtoh(host_in[i], g_in[k][i], g_in_bytes[i]));
    ins[i] = host_api ? (const void*)host_in[i] : (const void*)(uintptr_t)g_in[k][i];
  }
  int rc = host_api ? lib.run_host(m, ins, outs) : lib.run(m, ins, outs, stream);
  int same = rc == 0;
  if (rc != 0) fprintf(stderr, "abi_stress: run returned %d: %s\n", rc, lib.last_error(m));
  CU(cu.ctx_synchronize());
  for (int o = 0; same && o < g_num_outputs; ++o) {
    if (!host_api) CU(cu.dtoh(host[o], out[o], g_out_bytes[o]));
    if (store) {
      g_ref[k][o] = host[o];
      host[o] = NULL;
    } else if (memcmp(host[o], g_ref[k][o], g_out_bytes[o]) != 0) {
      same = 0;
    }
  }
  for (int o = 0; o < g_num_outputs; ++o) { cu.mem_free(out[o]); free(host[o]); }
  for (int i = 0; i < g_num_inputs; ++i) free(host_in[i]);
  return same;
}

static int stress(void) {
  if (g_opt.inputs < 1 || g_opt.inputs > 64 || g_opt.handles < 2 || g_opt.handles > kMaxHandles ||
      g_opt.threads < 1 || g_opt.threads > kMaxThreads || 2 * g_opt.threads > g_opt.handles) {
    fprintf(stderr, "abi_stress: need 1..64 inputs, 2 handles per thread, at most %d handles\n", kMaxHandles);
    return 2;
  }
  uint64_t rng = g_opt.seed;
  for (int k = 0; k < g_opt.inputs; ++k)
    for (int i = 0; i < g_num_inputs; ++i) {
      unsigned char* h = (unsigned char*)malloc(g_in_bytes[i] ? g_in_bytes[i] : 1);
      fill(h, lib.input_dtype(i), g_in_bytes[i], &rng);
      g_in[k][i] = dev_alloc(g_in_bytes[i]);
      CU(cu.htod(g_in[k][i], h, g_in_bytes[i]));
      free(h);
    }
  model* owner = NULL;
  if (lib.create(&owner, g_device, NULL, NULL) != 0) {
    fprintf(stderr, "abi_stress: create failed: %s\n", lib.last_error(NULL));
    return 2;
  }
  void* s0 = NULL;
  CU(cu.stream_create(&s0, 1));
  /* The reference, single-threaded on a stream (graph capture + replay); then plain launches
     (NULL stream) and run_host must give the same bits. */
  int agree = 1;
  for (int k = 0; k < g_opt.inputs; ++k) {
    if (!run_once(owner, k, s0, 0, 1)) return 2;
    agree &= run_once(owner, k, s0, 0, 0) & run_once(owner, k, NULL, 0, 0);
  }
  agree &= run_once(owner, 0, NULL, 1, 0);
  printf("reference: %d input sets; graph replay, plain launches and run_host %s\n", g_opt.inputs,
         agree ? "agree bit for bit" : "DIFFER");
  int compare = setup_device_compare();
  if (compare < 0) {
    printf("the device compare kernel failed its self-test: FAILED\n");
    return 2;
  }
  printf("comparison: %s\n", compare ? "on the device (PTX kernel, self-tested), memcmp on the host every "
                                        "--host-compare-every runs"
                                      : "memcmp on the host, every run");
  CUdeviceptr ws[kMaxHandles];
  model* handles[kMaxHandles];
  for (int j = 0; j < g_opt.handles; ++j) {
    ws[j] = g_arena ? dev_alloc(g_arena) : 0;
    if (lib.create(&handles[j], g_device, (void*)(uintptr_t)ws[j], owner) != 0) {
      fprintf(stderr, "abi_stress: create (shared weights, own workspace) failed: %s\n", lib.last_error(NULL));
      return 2;
    }
    pool_put(handles[j]);
  }
  thread_result res[kMaxThreads];
  pthread_t tid[kMaxThreads];
  double t0 = now();
  g_deadline = t0 + g_opt.seconds;
  for (int t = 0; t < g_opt.threads; ++t) {
    memset(&res[t], 0, sizeof res[t]);
    res[t].index = t;
    if (pthread_create(&tid[t], NULL, stress_thread, &res[t]) != 0) { fprintf(stderr, "abi_stress: pthread_create failed\n"); return 2; }
  }
  long long runs = 0, mismatches = 0, errors = 0, disagreements = 0;
  for (int t = 0; t < g_opt.threads; ++t) {
    pthread_join(tid[t], NULL);
    runs += res[t].runs; mismatches += res[t].mismatches; errors += res[t].errors;
    disagreements += res[t].disagreements;
    if (res[t].first_error[0]) printf("thread %d: %s\n", t, res[t].first_error);
  }
  double dt = now() - t0;
  long long planned = (long long)g_opt.threads * g_opt.runs;
  /* The owner goes first: the handles keep its weights (freed by the last one). */
  lib.destroy(owner);
  int after = 0;
  for (int j = 0; j < g_opt.handles; ++j) after += run_once(handles[j], j % g_opt.inputs, s0, 0, 0);
  for (int j = 0; j < g_opt.handles; ++j) lib.destroy(handles[j]);
  for (int j = 0; j < g_opt.handles; ++j) if (ws[j]) cu.mem_free(ws[j]);
  cu.stream_destroy(s0);
  int ok = agree && mismatches == 0 && errors == 0 && after == g_opt.handles;
  if (disagreements) printf("the device and host comparisons disagreed %lld times\n", disagreements);
  printf("stress: %d handles (shared weights, own workspaces) x %d threads: %lld runs of %lld planned%s, "
         "%lld mismatches, %lld errors, %.1f s (%.0f runs/s); after the owner was destroyed %d of %d "
         "handles matched; %s\n",
         g_opt.handles, g_opt.threads, runs, planned, runs < planned ? " (time cap)" : "", mismatches,
         errors, dt, dt > 0 ? (double)runs / dt : 0.0, after, g_opt.handles, ok ? "passed" : "FAILED");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: abi_stress stress|misuse LIB PREFIX [--device N] [--handles 16] [--threads 8]\n"
            "       [--runs 10000 (per thread)] [--inputs 4] [--migrate-every 1000] [--seconds S]\n"
            "       [--seed 1] [--host-compare-every 64] [--no-fault (misuse: skip the sticky-fault rows)]\n");
    return 2;
  }
  for (int a = 4; a < argc; ++a) {
    const char* v = a + 1 < argc ? argv[a + 1] : "0";
    if (!strcmp(argv[a], "--device")) g_device = atoi(v), ++a;
    else if (!strcmp(argv[a], "--handles")) g_opt.handles = atoi(v), ++a;
    else if (!strcmp(argv[a], "--threads")) g_opt.threads = atoi(v), ++a;
    else if (!strcmp(argv[a], "--runs")) g_opt.runs = atoi(v), ++a;
    else if (!strcmp(argv[a], "--inputs")) g_opt.inputs = atoi(v), ++a;
    else if (!strcmp(argv[a], "--migrate-every")) g_opt.migrate_every = atoi(v), ++a;
    else if (!strcmp(argv[a], "--seconds")) g_opt.seconds = atof(v), ++a;
    else if (!strcmp(argv[a], "--seed")) g_opt.seed = strtoull(v, NULL, 10), ++a;
    else if (!strcmp(argv[a], "--no-fault")) g_opt.no_fault = 1;
    else if (!strcmp(argv[a], "--host-compare-every")) g_opt.host_compare_every = atoi(v), ++a;
    else { fprintf(stderr, "abi_stress: unknown option %s\n", argv[a]); return 2; }
  }
  load(argv[2], argv[3]);
  if (!strcmp(argv[1], "stress")) return stress();
  if (!strcmp(argv[1], "misuse")) return misuse(g_opt.no_fault);
  fprintf(stderr, "abi_stress: unknown mode %s\n", argv[1]);
  return 2;
}
