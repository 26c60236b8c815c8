/* The runtime's misuse checks against a fake driver (function pointers in the handle), without a
   GPU: the live-handle registry (use after destroy, double destroy, foreign handles, growth,
   concurrent lookups), the driver checks of the caller's pointers (host, pinned host, another
   device, too small, virtual-memory pieces) made once per pointer set and never on a replay,
   and a sticky fault. Every refused call must launch nothing.
   Compiled by runtime_test.cc with the embedded runtime sources (also with AddressSanitizer when
   the compiler has it: a read of a destroyed handle is then a failure); prints "ok". */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aotc_rt_internal.h"

static int g_failures;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++g_failures;                                                            \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)
#define CHECK_MSG(h, text)                                                                 \
  do {                                                                                     \
    const char* m_ = aotc_rt_last_error(h);                                                \
    if (!strstr(m_, text)) {                                                               \
      ++g_failures;                                                                        \
      fprintf(stderr, "%s:%d: message '%s' lacks '%s'\n", __FILE__, __LINE__, m_, text);   \
    }                                                                                      \
  } while (0)

/* ---- the fake driver: an address map and counters ---- */
typedef struct fake_range {
  CUdeviceptr base; /* what cuMemGetAddressRange reports: the allocation, or one mapped piece */
  size_t size;
  unsigned type; /* CUmemorytype */
  int device;
  unsigned managed;
  CUdeviceptr reserved_base; /* the range attributes: the reservation (0: the same as base) */
  size_t reserved_size;
} fake_range;
static const fake_range kRanges[] = {
    {0x100000, 0x100000, AOTC_CU_MEMORYTYPE_DEVICE, 0, 0, 0, 0}, /* ordinary buffers of device 0 */
    {0x400000, 0x1000, AOTC_CU_MEMORYTYPE_DEVICE, 1, 0, 0, 0},   /* device 1 */
    {0x500000, 0x1000, AOTC_CU_MEMORYTYPE_HOST, 0, 0, 0, 0},     /* pinned host memory */
    {0x700000, 0x100, AOTC_CU_MEMORYTYPE_DEVICE, 0, 0, 0, 0},    /* 256 bytes: too small for 400 */
    {0x700100, 0x100, AOTC_CU_MEMORYTYPE_DEVICE, 0, 0, 0, 0},    /* the next allocation: not counted */
    {0x800000, 0x100, AOTC_CU_MEMORYTYPE_DEVICE, 0, 0, 0x800000, 0x200}, /* two mapped pieces of */
    {0x800100, 0x100, AOTC_CU_MEMORYTYPE_DEVICE, 0, 0, 0x800000, 0x200}, /* one reservation */
    {0xa00000, 0x1000, AOTC_CU_MEMORYTYPE_DEVICE, 1, 1, 0, 0},   /* managed memory */
};
static int g_launches, g_queries, g_range_queries, g_no_range_attributes;
static CUresult g_launch_result, g_query_result;

static const fake_range* find(CUdeviceptr p) {
  for (size_t i = 0; i < sizeof kRanges / sizeof kRanges[0]; ++i)
    if (p >= kRanges[i].base && p - kRanges[i].base < kRanges[i].size) return &kRanges[i];
  return NULL;
}
/* g_queries counts the calls asking for the memory type (one per pointer checked). */
static CUresult f_attrs(unsigned n, int* attrs, void** data, CUdeviceptr p) {
  if (n > 0 && attrs[0] == AOTC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE) ++g_queries;
  if (g_query_result) return g_query_result;
  const fake_range* r = find(p);
  for (unsigned i = 0; i < n; ++i) {
    int a = attrs[i];
    if (a == AOTC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE) *(unsigned*)data[i] = r ? r->type : 0;
    else if (a == AOTC_CU_POINTER_ATTRIBUTE_IS_MANAGED) *(unsigned*)data[i] = r ? r->managed : 0;
    else if (a == AOTC_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *(int*)data[i] = r ? r->device : -2;
    else if (g_no_range_attributes) return 1; /* a driver before CUDA 11.2 */
    else if (a == AOTC_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
      *(CUdeviceptr*)data[i] = !r ? 0 : r->reserved_size ? r->reserved_base : r->base;
    else if (a == AOTC_CU_POINTER_ATTRIBUTE_RANGE_SIZE)
      *(size_t*)data[i] = !r ? 0 : r->reserved_size ? r->reserved_size : r->size;
    else return 1;
  }
  return 0;
}
static CUresult f_range(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  ++g_range_queries;
  const fake_range* r = find(p);
  if (!r) return 500; /* CUDA_ERROR_NOT_FOUND */
  *base = r->base;
  *size = r->size;
  return 0;
}
static CUresult f_ok_ctx(CUcontext c) { (void)c; return 0; }
static CUresult f_pop(CUcontext* c) { *c = NULL; return 0; }
static CUresult f_release(CUdevice d) { (void)d; return 0; }
static CUresult f_get_function(CUfunction* f, CUmodule m, const char* name) {
  (void)m; (void)name;
  *f = (CUfunction)(uintptr_t)0x10;
  return 0;
}
static CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {
  (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)stream;
  (void)params; (void)extra;
  if (g_launch_result) return g_launch_result;
  ++g_launches;
  return 0;
}
static CUresult f_error_name(CUresult r, const char** name) {
  *name = r == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "CUDA_ERROR_FAKE";
  return 0;
}

/* ---- the model: y = plain(x), 100 floats each ---- */
static const aotc_rt_ref kArgs[] = {{AOTC_LOC_INPUT, 0, 0}, {AOTC_LOC_OUTPUT, 0, 0}};
static const aotc_rt_kernel kKernels[] = {{"plain", 0, {1u, 1u, 1u}, {64u, 1u, 1u}, 0u, 0, 2, 0, 0, 0, 0, NULL, 0u, 0, 0, 0u}};
static const aotc_rt_step kSteps[] = {{AOTC_STEP_KERNEL, 0, "k0_plain", 0ULL, 800ULL, 0, 0}};
static const long long kShape[] = {100};
static const aotc_rt_io kIn[] = {{"x", 1, 1, kShape, 400}};
static const aotc_rt_io kOut[] = {{"y", 1, 1, kShape, 400}};
static const unsigned char* const kNoFatbins[1];
static const aotc_rt_model_desc kDesc = {
    "fake", "sm_90", kNoFatbins, 1, NULL, 0, 4096, 0, 0, kKernels, 1, kArgs, 2, NULL, 0, NULL, 0,
    kSteps, 1, kIn, 1, kOut, 1, NULL, 0, 0, 0, NULL, 0};

static aotc_rt_handle* new_handle(void) {
  aotc_rt_handle* h = aotc_rt_handle_new(&kDesc, 0);
  CHECK(h != NULL);
  h->cu.ctx_push = f_ok_ctx;
  h->cu.ctx_pop = f_pop;
  h->cu.primary_ctx_release = f_release;
  h->cu.module_get_function = f_get_function;
  h->cu.launch_kernel = f_launch;
  h->cu.get_error_name = f_error_name;
  h->cu.pointer_get_attributes = f_attrs;
  h->cu.mem_get_address_range = f_range;
  h->ctx = (CUcontext)(uintptr_t)1;
  h->arena = 0x100000;
  h->graphs_enabled = 0; /* the pointer checks do not depend on the graph cache */
  CHECK(aotc_rt_prepare_kernels(h) == AOTC_OK);
  CHECK(aotc_rt_registry_add(h));
  return h;
}

static int run(aotc_rt_handle* h, uintptr_t x, uintptr_t y) {
  const void* ins[] = {(const void*)x};
  void* outs[] = {(void*)y};
  return aotc_rt_run(h, ins, outs, (void*)(uintptr_t)0xabc);
}

/* A refused run: the code, a message naming the pointer, no launch. */
static void expect_refused(aotc_rt_handle* h, uintptr_t x, uintptr_t y, const char* text) {
  int launches = g_launches;
  CHECK(run(h, x, y) == AOTC_ERROR_INVALID_ARGUMENT);
  CHECK(g_launches == launches);
  CHECK_MSG(h, text);
}

static void test_pointer_checks(void) {
  aotc_rt_handle* h = new_handle();
  /* A good set: one query per pointer, then none while the set repeats. */
  CHECK(run(h, 0x100000, 0x100200) == AOTC_OK && g_launches == 1 && g_queries == 2);
  for (int i = 0; i < 5; ++i) CHECK(run(h, 0x100000, 0x100200) == AOTC_OK);
  CHECK(g_launches == 6 && g_queries == 2);
  /* Misuse, each refused before any launch, and asked again on the next call (not remembered). */
  expect_refused(h, 0x600000, 0x100200, "run: input 0 (0x600000) is not CUDA device memory");
  int queries = g_queries;
  expect_refused(h, 0x600000, 0x100200, "input 0");
  CHECK(g_queries == queries + 1);
  expect_refused(h, 0x100000, 0x500000, "run: output 0 is pinned host memory");
  expect_refused(h, 0x400000, 0x100200, "run: input 0 is memory of device 1; this handle runs on device 0");
  expect_refused(h, 0x100000, 0x700000, "run: output 0 is too small: 400 bytes are needed, its allocation holds 256");
  expect_refused(h, 0x100000, 0x1fff00, "holds 256"); /* the end of a large allocation */
  /* Mapped pieces of one reservation count as one; adjacent allocations do not; managed memory
     of any device is accepted. */
  CHECK(run(h, 0x800000, 0x100200) == AOTC_OK);
  expect_refused(h, 0x700000, 0x100200, "input 0 is too small");
  CHECK(run(h, 0xa00000, 0x100200) == AOTC_OK);
  /* kAotcCheckedSets sets are remembered; the oldest goes first. */
  queries = g_queries;
  for (int i = 0; i < kAotcCheckedSets; ++i) CHECK(run(h, 0x100000, 0x101000 + 0x100 * (uintptr_t)i) == AOTC_OK);
  CHECK(g_queries == queries + 2 * kAotcCheckedSets);
  queries = g_queries;
  for (int i = 0; i < kAotcCheckedSets; ++i) CHECK(run(h, 0x100000, 0x101000 + 0x100 * (uintptr_t)i) == AOTC_OK);
  CHECK(g_queries == queries);
  CHECK(run(h, 0x100000, 0x100200) == AOTC_OK && g_queries == queries + 2); /* was evicted */
  /* The graph cache path checks the same way. */
  h->graphs_enabled = 0;
  aotc_rt_release(h);

  /* A driver without the entry points: pointers are not checked (old drivers keep working). */
  h = new_handle();
  h->cu.pointer_get_attributes = NULL;
  h->cu.mem_get_address_range = NULL;
  queries = g_queries;
  CHECK(run(h, 0x600000, 0x100200) == AOTC_OK && g_queries == queries);
  aotc_rt_release(h);

  /* create's workspace check (the same function). */
  h = new_handle();
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x100000, 4096, "create: workspace") == AOTC_OK);
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x700000, 4096, "create: workspace") ==
        AOTC_ERROR_INVALID_ARGUMENT);
  CHECK_MSG(h, "create: workspace is too small: 4096 bytes are needed, its allocation holds 256");
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x600000, 4096, "create: workspace") ==
        AOTC_ERROR_INVALID_ARGUMENT);
  CHECK_MSG(h, "create: workspace (0x600000) is not CUDA device memory");
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x400000, 4096, "create: workspace") ==
        AOTC_ERROR_INVALID_ARGUMENT);
  CHECK_MSG(h, "device 1");
  /* A driver without the range attributes: cuMemGetAddressRange gives the extent (so the pieces
     of a reservation are separate there); without either, the extent is unchecked. */
  g_no_range_attributes = 1;
  int ranges = g_range_queries;
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x700000, 400, "x") == AOTC_ERROR_INVALID_ARGUMENT);
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x800000, 400, "x") == AOTC_ERROR_INVALID_ARGUMENT);
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x100000, 400, "x") == AOTC_OK);
  CHECK(g_range_queries == ranges + 3);
  h->cu.mem_get_address_range = NULL;
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x700000, 400, "x") == AOTC_OK);
  h->cu.mem_get_address_range = f_range;
  g_no_range_attributes = 0;
  /* The driver cannot tell (INVALID_CONTEXT): refused as unknown memory; another error: unchecked. */
  g_query_result = 201;
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x100000, 8, "x") == AOTC_ERROR_INVALID_ARGUMENT);
  g_query_result = 999;
  CHECK(aotc_rt_check_device_pointer(h, (void*)(uintptr_t)0x600000, 8, "x") == AOTC_OK);
  g_query_result = 0;
  aotc_rt_release(h);
}

static void test_sticky(void) {
  aotc_rt_handle* h = new_handle();
  CHECK(run(h, 0x100000, 0x100200) == AOTC_OK);
  /* A fault reported by a launch: STICKY now and on every later call, nothing launched. */
  g_launch_result = 700;
  CHECK(run(h, 0x100000, 0x100200) == AOTC_ERROR_STICKY);
  g_launch_result = 0;
  CHECK_MSG(h, "CUDA_ERROR_ILLEGAL_ADDRESS");
  int launches = g_launches, queries = g_queries;
  CHECK(run(h, 0x100000, 0x100200) == AOTC_ERROR_STICKY);
  CHECK(run(h, 0x100000, 0x100400) == AOTC_ERROR_STICKY);
  CHECK(g_launches == launches && g_queries == queries);
  CHECK_MSG(h, "CUDA_ERROR_ILLEGAL_ADDRESS"); /* the first fault's message is kept */
  aotc_rt_release(h);
  /* A fault the pointer query reports (another library faulted the context): STICKY too. */
  h = new_handle();
  g_query_result = 700;
  launches = g_launches;
  CHECK(run(h, 0x100000, 0x100200) == AOTC_ERROR_STICKY && g_launches == launches);
  g_query_result = 0;
  CHECK(run(h, 0x100000, 0x100200) == AOTC_ERROR_STICKY && g_launches == launches);
  aotc_rt_release(h);
}

static void test_registry(void) {
  aotc_rt_handle* h = new_handle();
  CHECK(aotc_rt_registry_contains(h));
  CHECK(run(h, 0x100000, 0x100200) == AOTC_OK);
  aotc_rt_destroy(h);
  CHECK(!aotc_rt_registry_contains(h));
  /* Use after destroy: codes, no launch, and (under AddressSanitizer) no read of the freed handle. */
  int launches = g_launches;
  CHECK(run(h, 0x100000, 0x100200) == AOTC_ERROR_INVALID_ARGUMENT && g_launches == launches);
  CHECK(strstr(aotc_rt_last_error(NULL), "not a live handle") != NULL);
  CHECK(strstr(aotc_rt_last_error(h), "not a live handle") != NULL);
  const void* ins[] = {(const void*)(uintptr_t)0x100000};
  void* outs[] = {(void*)(uintptr_t)0x100200};
  CHECK(aotc_rt_run_host(h, ins, outs) == AOTC_ERROR_INVALID_ARGUMENT);
  float ms[1];
  CHECK(aotc_rt_profile_run(h, ins, outs, NULL, ms) == AOTC_ERROR_INVALID_ARGUMENT);
  aotc_rt_destroy(h); /* double destroy: a no-op */
  aotc_rt_destroy(NULL);
  /* A pointer that never was a handle (another library's, or garbage). */
  int not_a_handle[64] = {0};
  CHECK(aotc_rt_run((aotc_rt_handle*)(void*)not_a_handle, ins, outs, NULL) == AOTC_ERROR_INVALID_ARGUMENT);
  aotc_rt_destroy((aotc_rt_handle*)(void*)not_a_handle);
  CHECK(not_a_handle[0] == 0 && not_a_handle[63] == 0);
  /* create refuses a share_weights_with that is not live, before reading it. */
  aotc_rt_handle* out = (aotc_rt_handle*)(uintptr_t)1;
  CHECK(aotc_rt_create(&out, &kDesc, 0, NULL, (aotc_rt_handle*)(void*)not_a_handle) ==
        AOTC_ERROR_INVALID_ARGUMENT);
  CHECK(out == NULL && strstr(aotc_rt_last_error(NULL), "share_weights_with") != NULL);

  /* Growth and tombstones: 3000 entries added, every other removed, the rest still found. */
  enum { kMany = 3000 };
  static char tokens[kMany][16];
  for (int i = 0; i < kMany; ++i) CHECK(aotc_rt_registry_add(tokens[i]));
  CHECK(aotc_rt_registry_add(tokens[0])); /* twice: still one entry */
  for (int i = 0; i < kMany; i += 2) CHECK(aotc_rt_registry_remove(tokens[i]));
  CHECK(!aotc_rt_registry_remove(tokens[0]));
  int wrong = 0;
  for (int i = 0; i < kMany; ++i) wrong += aotc_rt_registry_contains(tokens[i]) != (i % 2);
  CHECK(wrong == 0);
  for (int round = 0; round < 4; ++round) { /* churn: tombstones are reused or rebuilt away */
    for (int i = 0; i < kMany; i += 2) CHECK(aotc_rt_registry_add(tokens[i]));
    for (int i = 0; i < kMany; i += 2) CHECK(aotc_rt_registry_remove(tokens[i]));
  }
  wrong = 0;
  for (int i = 0; i < kMany; ++i) wrong += aotc_rt_registry_contains(tokens[i]) != (i % 2);
  CHECK(wrong == 0);
  for (int i = 1; i < kMany; i += 2) CHECK(aotc_rt_registry_remove(tokens[i]));
  CHECK(!aotc_rt_registry_contains(NULL) && !aotc_rt_registry_add(NULL));
}

/* Lookups of live entries never fail while another thread adds and removes others (and the
   table grows under them). */
enum { kStable = 64, kChurn = 2000 };
static char g_stable[kStable][16], g_churn[kChurn][16];
static _Atomic int g_stop, g_missed;
static void* lookup_thread(void* arg) {
  (void)arg;
  while (!g_stop)
    for (int i = 0; i < kStable; ++i)
      if (!aotc_rt_registry_contains(g_stable[i])) ++g_missed;
  return NULL;
}
static void test_registry_threads(void) {
  for (int i = 0; i < kStable; ++i) CHECK(aotc_rt_registry_add(g_stable[i]));
  pthread_t t[3];
  for (int i = 0; i < 3; ++i) CHECK(pthread_create(&t[i], NULL, lookup_thread, NULL) == 0);
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < kChurn; ++i) aotc_rt_registry_add(g_churn[i]);
    for (int i = 0; i < kChurn; ++i) aotc_rt_registry_remove(g_churn[i]);
  }
  g_stop = 1;
  for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
  CHECK(g_missed == 0);
  for (int i = 0; i < kStable; ++i) CHECK(aotc_rt_registry_remove(g_stable[i]));
}

int main(void) {
  test_pointer_checks();
  test_sticky();
  test_registry();
  test_registry_threads();
  if (g_failures) {
    fprintf(stderr, "%d failures\n", g_failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
