/* A hand-written library with the C ABI of docs/abi.md, so aotc-run is tested without the
   compiler: three models in one .so. "fake_identity" copies x (float 2x3) to y on the GPU;
   "fake_half" writes only the first half of y, so the 0xFF poison must make aotc-run fail;
   "fake_profiled" is fake_identity plus the optional profiling extension (two made-up steps with
   fixed times), which the other two lack.
   Like generated libraries, it opens libcuda.so.1 at create time and links no CUDA library. */
#include <dlfcn.h>
#include <stddef.h>

typedef int (*copy_fn)(unsigned long long dst, unsigned long long src, size_t bytes, void* stream);
static copy_fn g_copy;
static const char* g_error = "";
static const long long kShape[2] = {2, 3};

typedef struct fake_model { int unused; } fake_model;
static fake_model g_model;

static int create_common(fake_model** out) {
  if (!out) { g_error = "out is NULL"; return 1; }
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) { g_error = "libcuda.so.1 not found"; return 2; }
  g_copy = (copy_fn)dlsym(cuda, "cuMemcpyDtoDAsync_v2");
  if (!g_copy) { g_error = "cuMemcpyDtoDAsync_v2 missing"; return 2; }
  *out = &g_model;
  return 0;
}

static int run_common(const void* const* in, void* const* out, void* stream, size_t bytes) {
  if (!in || !out || !in[0] || !out[0]) { g_error = "null pointer"; return 1; }
  if (g_copy((unsigned long long)out[0], (unsigned long long)in[0], bytes, stream) != 0) {
    g_error = "cuMemcpyDtoDAsync failed";
    return 5;
  }
  return 0;
}

#define FAKE_MODEL(P, COPY_BYTES)                                                              \
  int P##_create(fake_model** out, int device, void* ws, const fake_model* share) {            \
    (void)device; (void)ws; (void)share;                                                       \
    return create_common(out);                                                                 \
  }                                                                                            \
  void P##_destroy(fake_model* m) { (void)m; }                                                 \
  int P##_run(fake_model* m, const void* const* in, void* const* out, void* stream) {          \
    (void)m;                                                                                   \
    return run_common(in, out, stream, COPY_BYTES);                                            \
  }                                                                                            \
  int P##_run_host(fake_model* m, const void* const* in, void* const* out) {                   \
    (void)m; (void)in; (void)out;                                                              \
    g_error = "run_host is not used by aotc-run";                                              \
    return 1;                                                                                  \
  }                                                                                            \
  const char* P##_last_error(const fake_model* m) { (void)m; return g_error; }                 \
  int P##_num_inputs(void) { return 1; }                                                       \
  int P##_num_outputs(void) { return 1; }                                                      \
  const char* P##_input_name(int i) { return i == 0 ? "x" : NULL; }                            \
  const char* P##_output_name(int i) { return i == 0 ? "y" : NULL; }                           \
  int P##_input_dtype(int i) { return i == 0 ? 1 : -1; }                                       \
  int P##_output_dtype(int i) { return i == 0 ? 1 : -1; }                                      \
  int P##_input_rank(int i) { return i == 0 ? 2 : -1; }                                        \
  int P##_output_rank(int i) { return i == 0 ? 2 : -1; }                                       \
  const long long* P##_input_shape(int i) { return i == 0 ? kShape : NULL; }                   \
  const long long* P##_output_shape(int i) { return i == 0 ? kShape : NULL; }                  \
  unsigned long long P##_input_bytes(int i) { return i == 0 ? 24 : 0; }                        \
  unsigned long long P##_output_bytes(int i) { return i == 0 ? 24 : 0; }                       \
  unsigned long long P##_arena_bytes(void) { return 0; }                                       \
  unsigned long long P##_weight_bytes(void) { return 0; }

FAKE_MODEL(fake_identity, 24)
FAKE_MODEL(fake_half, 12)
FAKE_MODEL(fake_profiled, 24)

/* The profiling extension of fake_profiled: a "kernel" step (the copy) and a "copy" step. */
static const char* const kStepLabels[2] = {"k0_identity", "copy0_output_0"};
static const char* const kStepKinds[2] = {"kernel", "copy"};
int fake_profiled_profile_num_steps(void) { return 2; }
const char* fake_profiled_profile_step_label(int i) { return i >= 0 && i < 2 ? kStepLabels[i] : NULL; }
const char* fake_profiled_profile_step_kind(int i) { return i >= 0 && i < 2 ? kStepKinds[i] : NULL; }
unsigned long long fake_profiled_profile_step_flops(int i) { return i == 0 ? 6000000ULL : 0; }
unsigned long long fake_profiled_profile_step_bytes(int i) { return i >= 0 && i < 2 ? 48 : 0; }
int fake_profiled_profile_run(fake_model* m, const void* const* in, void* const* out, void* stream,
                              float* step_ms) {
  (void)m;
  if (!step_ms) { g_error = "step_ms is NULL"; return 1; }
  int code = run_common(in, out, stream, 24);
  step_ms[0] = 0.75f;
  step_ms[1] = 0.25f;
  return code;
}
