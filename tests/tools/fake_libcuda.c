/* A fake libcuda.so.1 whose "GPU" is host memory, so a runtime built into a library (and
   tools/device/abi_stress.c driving it) runs end to end without a GPU: device allocations are
   aligned host blocks in a table (per device; FAKE_CUDA_DEVICES devices, default 2), kernels are
   C functions run at launch (fake_mul, fake_add: 256 floats), streams are synchronous, stream
   capture records launches into a graph that cuGraphLaunch replays (other streams join the
   capture by waiting on an event recorded in it, and must be joined back, as the real driver
   demands, or cuStreamEndCapture fails with CUDA_ERROR_STREAM_CAPTURE_UNJOINED and the context
   faults, so that a stress run reports the bug), and pointer
   attributes come from the table. Every pointer a kernel or copy touches must lie in a device allocation of the
   current context's device, or the context faults (CUDA_ERROR_ILLEGAL_ADDRESS, sticky), as a
   GPU would. Test hooks: fake_cuda_launches() counts kernels, copies and graph launches;
   fake_cuda_inject_fault() makes the context faulted; FAKE_CUDA_FLIP_EVERY=N flips one output bit
   of every Nth kernel. Thread-safe. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum { kN = 256, kMaxAllocs = 4096, kMaxOps = 64 };
enum { kTypeHost = 1, kTypeDevice = 2 };
enum { kOk = 0, kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100, kInvalidDevice = 101,
       kInvalidImage = 200, kInvalidContext = 201, kNotFound = 500, kIllegalAddress = 700 };

#define EXPORT __attribute__((visibility("default")))

typedef struct alloc {
  uintptr_t base;
  size_t size;
  int type;
  int device;
} alloc;
static alloc g_allocs[kMaxAllocs];
static int g_num_allocs;
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_sticky, g_launches, g_kernels;
static int g_flip_every = -1; /* read at the first cuInit */

static int num_devices(void) {
  const char* e = getenv("FAKE_CUDA_DEVICES");
  return e ? atoi(e) : 2;
}

/* Contexts are (device + 1); a stack per thread. */
static _Thread_local uintptr_t tl_ctx[16];
static _Thread_local int tl_depth;
static int current_device(void) { return tl_depth > 0 ? (int)tl_ctx[tl_depth - 1] - 1 : -1; }

static const alloc* find(uintptr_t p) { /* under g_mutex */
  for (int i = 0; i < g_num_allocs; ++i)
    if (p >= g_allocs[i].base && p - g_allocs[i].base < g_allocs[i].size) return &g_allocs[i];
  return NULL;
}
/* p .. p+bytes inside one device allocation of the current device; else a fault. */
static int device_span_ok(CUdeviceptr p, size_t bytes) {
  pthread_mutex_lock(&g_mutex);
  const alloc* a = find((uintptr_t)p);
  int ok = a && a->type == kTypeDevice && a->device == current_device() &&
           (uintptr_t)p - a->base + bytes <= a->size;
  pthread_mutex_unlock(&g_mutex);
  if (!ok) atomic_store(&g_sticky, 1);
  return ok;
}

EXPORT int fake_cuda_launches(void) { return atomic_load(&g_launches); }
EXPORT void fake_cuda_inject_fault(void) { atomic_store(&g_sticky, 1); }

EXPORT CUresult cuInit(unsigned flags) {
  (void)flags;
  if (g_flip_every < 0) {
    const char* e = getenv("FAKE_CUDA_FLIP_EVERY");
    g_flip_every = e ? atoi(e) : 0;
  }
  return kOk;
}
EXPORT CUresult cuDeviceGetCount(int* n) {
  if (atomic_load(&g_sticky)) return kIllegalAddress; /* as the first call of a create after a fault */
  *n = num_devices();
  return kOk;
}
EXPORT CUresult cuDeviceGet(int* d, int ordinal) {
  if (ordinal < 0 || ordinal >= num_devices()) return kInvalidDevice;
  *d = ordinal;
  return kOk;
}
/* Compute capability 9.0 (attributes 75 / 76); every other attribute reads 0. */
EXPORT CUresult cuDeviceGetAttribute(int* value, int attr, int d) {
  if (d < 0 || d >= num_devices()) return kInvalidDevice;
  *value = attr == 75 ? 9 : 0;
  return kOk;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) {
  if (d < 0 || d >= num_devices()) return kInvalidDevice;
  *ctx = (void*)(uintptr_t)(d + 1);
  return kOk;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return kOk; }
EXPORT CUresult cuCtxPushCurrent_v2(void* ctx) {
  if (!ctx || tl_depth >= 16) return kInvalidContext;
  tl_ctx[tl_depth++] = (uintptr_t)ctx;
  return kOk;
}
EXPORT CUresult cuCtxPopCurrent_v2(void** ctx) {
  if (tl_depth == 0) return kInvalidContext;
  uintptr_t c = tl_ctx[--tl_depth];
  if (ctx) *ctx = (void*)c;
  return kOk;
}
EXPORT CUresult cuCtxSetCurrent(void* ctx) {
  if (tl_depth == 0) return cuCtxPushCurrent_v2(ctx);
  tl_ctx[tl_depth - 1] = (uintptr_t)ctx;
  return kOk;
}
EXPORT CUresult cuCtxSynchronize(void) { return atomic_load(&g_sticky) ? kIllegalAddress : kOk; }
EXPORT CUresult cuStreamSynchronize(void* s) { (void)s; return cuCtxSynchronize(); }
EXPORT CUresult cuStreamCreate(void** s, unsigned flags) {
  (void)flags;
  *s = malloc(1);
  return *s ? kOk : kOutOfMemory;
}
EXPORT CUresult cuStreamDestroy_v2(void* s) { free(s); return kOk; }

static const char kImage[] = "AOTCFAKE";
EXPORT CUresult cuModuleLoadData(void** m, const void* image) {
  if (atomic_load(&g_sticky)) return kIllegalAddress;
  if (current_device() < 0) return kInvalidContext;
  if (memcmp(image, kImage, sizeof kImage - 1) != 0) return kInvalidImage;
  *m = (void*)(uintptr_t)0x1;
  return kOk;
}
EXPORT CUresult cuModuleUnload(void* m) { (void)m; return kOk; }
enum { kFnMul = 1, kFnAdd = 2 };
EXPORT CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
  (void)m;
  if (atomic_load(&g_sticky)) return kIllegalAddress;
  if (strcmp(name, "fake_mul") == 0) *f = (void*)(uintptr_t)kFnMul;
  else if (strcmp(name, "fake_add") == 0) *f = (void*)(uintptr_t)kFnAdd;
  else return kNotFound;
  return kOk;
}
EXPORT CUresult cuFuncSetAttribute(void* f, int attr, int value) { (void)f; (void)attr; (void)value; return kOk; }

static CUresult add_alloc(void* p, size_t bytes, int type) {
  pthread_mutex_lock(&g_mutex);
  CUresult r = kOk;
  if (g_num_allocs == kMaxAllocs) r = kOutOfMemory;
  else g_allocs[g_num_allocs++] = (alloc){(uintptr_t)p, bytes, type, current_device()};
  pthread_mutex_unlock(&g_mutex);
  return r;
}
static CUresult remove_alloc(uintptr_t p, int type) {
  pthread_mutex_lock(&g_mutex);
  CUresult r = kInvalidValue;
  for (int i = 0; i < g_num_allocs; ++i)
    if (g_allocs[i].base == p && g_allocs[i].type == type) {
      g_allocs[i] = g_allocs[--g_num_allocs];
      r = kOk;
      break;
    }
  pthread_mutex_unlock(&g_mutex);
  return r;
}
static CUresult alloc_of(void** out, size_t bytes, int type) {
  if (atomic_load(&g_sticky)) return kIllegalAddress;
  if (current_device() < 0) return kInvalidContext;
  if (bytes == 0) return kInvalidValue;
  void* p = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
  if (!p) return kOutOfMemory;
  memset(p, 0xEE, bytes);
  CUresult r = add_alloc(p, bytes, type);
  if (r != kOk) free(p);
  else *out = p;
  return r;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  void* q = NULL;
  CUresult r = alloc_of(&q, bytes, kTypeDevice);
  if (r == kOk) *p = (CUdeviceptr)(uintptr_t)q;
  return r;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  CUresult r = remove_alloc((uintptr_t)p, kTypeDevice);
  if (r == kOk) free((void*)(uintptr_t)p);
  return r;
}
EXPORT CUresult cuMemHostAlloc(void** p, size_t bytes, unsigned flags) {
  (void)flags;
  return alloc_of(p, bytes, kTypeHost);
}
EXPORT CUresult cuMemFreeHost(void* p) {
  CUresult r = remove_alloc((uintptr_t)p, kTypeHost);
  if (r == kOk) free(p);
  return r;
}
EXPORT CUresult cuPointerGetAttributes(unsigned n, int* attrs, void** data, CUdeviceptr p) {
  if (atomic_load(&g_sticky)) return kIllegalAddress;
  pthread_mutex_lock(&g_mutex);
  const alloc* a = find((uintptr_t)p);
  alloc copy = a ? *a : (alloc){0, 0, 0, -2};
  pthread_mutex_unlock(&g_mutex);
  for (unsigned i = 0; i < n; ++i) {
    switch (attrs[i]) {
      case 2: *(unsigned*)data[i] = (unsigned)copy.type; break;  /* MEMORY_TYPE */
      case 8: *(unsigned*)data[i] = 0; break;                   /* IS_MANAGED */
      case 9: *(int*)data[i] = copy.device; break;              /* DEVICE_ORDINAL */
      case 11: *(CUdeviceptr*)data[i] = copy.base; break;       /* RANGE_START_ADDR */
      case 12: *(size_t*)data[i] = copy.size; break;            /* RANGE_SIZE */
      default: return kInvalidValue;
    }
  }
  return kOk;
}
EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  pthread_mutex_lock(&g_mutex);
  const alloc* a = find((uintptr_t)p);
  CUresult r = a && a->type == kTypeDevice ? kOk : kNotFound;
  if (a && r == kOk) {
    *base = a->base;
    *size = a->size;
  }
  pthread_mutex_unlock(&g_mutex);
  return r;
}

/* ---- operations: run now, or recorded while this thread captures the stream ---- */
typedef struct op {
  int kind; /* 0 kernel, 1 copy, 2 memset */
  uintptr_t fn;
  CUdeviceptr a, b, c;
  size_t bytes;
} op;
typedef struct graph {
  op ops[kMaxOps];
  int n;
} graph;
static _Thread_local void* tl_capture_stream;
static _Thread_local graph* tl_graph;

static CUresult execute(const op* o) {
  if (atomic_load(&g_sticky)) return kIllegalAddress;
  atomic_fetch_add(&g_launches, 1);
  if (o->kind == 0) {
    if (!device_span_ok(o->a, kN * 4) || !device_span_ok(o->b, kN * 4) || !device_span_ok(o->c, kN * 4))
      return kIllegalAddress;
    const float *x = (const float*)(uintptr_t)o->a, *y = (const float*)(uintptr_t)o->b;
    float* z = (float*)(uintptr_t)o->c;
    for (int i = 0; i < kN; ++i) z[i] = o->fn == kFnMul ? x[i] * y[i] : x[i] + y[i];
    /* FAKE_CUDA_FLIP_EVERY=N: every Nth kernel gets one bit wrong (to see that a stress run
       notices). */
    if (g_flip_every > 0 && atomic_fetch_add(&g_kernels, 1) % g_flip_every == g_flip_every - 1) {
      uint32_t bits;
      memcpy(&bits, &z[7], 4);
      bits ^= 1u;
      memcpy(&z[7], &bits, 4);
    }
  } else if (o->kind == 1) {
    if (!device_span_ok(o->a, o->bytes) || !device_span_ok(o->b, o->bytes)) return kIllegalAddress;
    memmove((void*)(uintptr_t)o->a, (const void*)(uintptr_t)o->b, o->bytes);
  } else {
    if (!device_span_ok(o->a, o->bytes)) return kIllegalAddress;
    memset((void*)(uintptr_t)o->a, (int)o->c, o->bytes);
  }
  return kOk;
}
/* Streams that joined this thread's capture (by waiting on an event recorded in it): the ops
   submitted to each, and how many of them an event waited on by another captured stream covered. */
enum { kMaxJoined = 8 };
typedef struct joined_stream {
  void* stream;
  int ops, covered, rejoined;
} joined_stream;
static _Thread_local joined_stream tl_joined[kMaxJoined];
static _Thread_local int tl_num_joined;
static joined_stream* joined(void* stream) {
  for (int i = 0; i < tl_num_joined; ++i)
    if (tl_joined[i].stream == stream) return &tl_joined[i];
  return NULL;
}
typedef struct event {
  void* stream;
  int captured, ops;
} event;
EXPORT CUresult cuEventCreate(void** e, unsigned flags) {
  (void)flags;
  return (*e = calloc(1, sizeof(event))) ? kOk : kOutOfMemory;
}
EXPORT CUresult cuEventDestroy_v2(void* e) { free(e); return kOk; }
EXPORT CUresult cuEventSynchronize(void* e) { (void)e; return cuCtxSynchronize(); }
EXPORT CUresult cuEventElapsedTime(float* ms, void* a, void* b) { (void)a; (void)b; *ms = 0.0f; return kOk; }
EXPORT CUresult cuEventRecord(void* e, void* stream) {
  event* ev = (event*)e;
  joined_stream* j = joined(stream);
  ev->stream = stream;
  ev->captured = (stream && stream == tl_capture_stream) || j != NULL;
  ev->ops = j ? j->ops : 0;
  return kOk;
}
EXPORT CUresult cuStreamWaitEvent(void* stream, void* e, unsigned flags) {
  (void)flags;
  const event* ev = (const event*)e;
  if (!ev->captured) return kOk; /* streams are synchronous: nothing to wait for */
  joined_stream* from = joined(ev->stream);
  if (stream != tl_capture_stream && !joined(stream)) { /* a fork: the stream joins the capture */
    if (tl_num_joined == kMaxJoined) return kOutOfMemory;
    tl_joined[tl_num_joined++] = (joined_stream){stream, 0, 0, 0};
  }
  if (from && stream == tl_capture_stream) { /* a join back into the origin */
    from->covered = ev->ops;
    from->rejoined = 1;
  }
  return kOk;
}
static CUresult submit(const op* o, void* stream) {
  if (atomic_load(&g_sticky)) return kIllegalAddress;
  joined_stream* j = stream ? joined(stream) : NULL;
  if (j) ++j->ops;
  if (stream && (stream == tl_capture_stream || j)) {
    if (tl_graph->n == kMaxOps) return kOutOfMemory;
    tl_graph->ops[tl_graph->n++] = *o;
    return kOk;
  }
  return execute(o);
}
EXPORT CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, void* stream, void** params, void** extra) {
  (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)extra;
  uintptr_t fn = (uintptr_t)f;
  if (fn != kFnMul && fn != kFnAdd) return kInvalidValue;
  op o = {0, fn, *(CUdeviceptr*)params[0], *(CUdeviceptr*)params[1], *(CUdeviceptr*)params[2], 0};
  return submit(&o, stream);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void* stream) {
  op o = {1, 0, dst, src, 0, bytes};
  return submit(&o, stream);
}
EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t bytes, void* stream) {
  op o = {2, 0, dst, 0, v, bytes};
  return submit(&o, stream);
}
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t bytes) {
  op o = {2, 0, dst, 0, v, bytes};
  return execute(&o);
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  if (atomic_load(&g_sticky)) return kIllegalAddress;
  if (!device_span_ok(dst, bytes)) return kIllegalAddress;
  memcpy((void*)(uintptr_t)dst, src, bytes);
  return kOk;
}
EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  if (atomic_load(&g_sticky)) return kIllegalAddress;
  if (!device_span_ok(src, bytes)) return kIllegalAddress;
  memcpy(dst, (const void*)(uintptr_t)src, bytes);
  return kOk;
}

EXPORT CUresult cuStreamBeginCapture_v2(void* stream, int mode) {
  (void)mode;
  if (!stream || tl_capture_stream) return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
  if (!(tl_graph = (graph*)calloc(1, sizeof *tl_graph))) return kOutOfMemory;
  tl_capture_stream = stream;
  return kOk;
}
EXPORT CUresult cuStreamEndCapture(void* stream, void** g) {
  if (stream != tl_capture_stream) return 901;
  int unjoined = 0;
  for (int i = 0; i < tl_num_joined; ++i)
    unjoined |= !tl_joined[i].rejoined || tl_joined[i].covered < tl_joined[i].ops;
  tl_num_joined = 0;
  tl_capture_stream = NULL;
  if (unjoined) { /* a runtime bug: fault the context so that every later call reports it */
    atomic_store(&g_sticky, 1);
    free(tl_graph);
    tl_graph = NULL;
    *g = NULL;
    return 904; /* CUDA_ERROR_STREAM_CAPTURE_UNJOINED */
  }
  *g = tl_graph;
  tl_graph = NULL;
  return kOk;
}
EXPORT CUresult cuStreamIsCapturing(void* stream, int* status) {
  *status = stream && stream == tl_capture_stream;
  return kOk;
}
EXPORT CUresult cuGraphInstantiateWithFlags(void** exec, void* g, unsigned long long flags) {
  (void)flags;
  graph* copy = (graph*)malloc(sizeof *copy);
  if (!copy) return kOutOfMemory;
  *copy = *(graph*)g;
  *exec = copy;
  return kOk;
}
EXPORT CUresult cuGraphLaunch(void* exec, void* stream) {
  (void)stream;
  const graph* g = (const graph*)exec;
  for (int i = 0; i < g->n; ++i) {
    CUresult r = execute(&g->ops[i]);
    if (r != kOk) return r;
  }
  return kOk;
}
EXPORT CUresult cuGraphExecDestroy(void* exec) { free(exec); return kOk; }
EXPORT CUresult cuGraphDestroy(void* g) { free(g); return kOk; }

EXPORT CUresult cuGetErrorName(CUresult r, const char** name) {
  switch (r) {
    case kOk: *name = "CUDA_SUCCESS"; break;
    case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case kNoDevice: *name = "CUDA_ERROR_NO_DEVICE"; break;
    case kInvalidDevice: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case kInvalidImage: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case kInvalidContext: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case kNotFound: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case kIllegalAddress: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    default: *name = "CUDA_ERROR_UNKNOWN"; return kInvalidValue;
  }
  return kOk;
}
