/* A hand-written <prefix>_model.c in the shape codegen/host_source.cc emits (tables + exported
   wrappers over runtime/), for a model the fake driver (fake_libcuda.c) can execute:
   t = x * w (kernel fake_mul), y = t + w (kernel fake_add), z = t (a copy step on the auxiliary
   stream, beside fake_add, joined at the end), 256 floats each; w is 1 KiB of weights, t lives in
   the arena. Built with the real runtime sources into
   libfakemodel.so, so tools/device/abi_stress.c runs its stress and misuse modes here, through
   the same create / run / destroy code a generated library has. */
#include "aotc_runtime.h"

#define AOTC_API __attribute__((visibility("default")))

typedef struct fakemodel_model fakemodel_model;

static const unsigned char kFatbin[] = "AOTCFAKE";
static const unsigned char* const kFatbins[] = {kFatbin};
/* 256 floats 0.5, 0.75, 1.0, ... as bytes would need a generator; a fixed pattern of float bit
   patterns is as good for bit-exact comparisons: every 4 bytes 0x3f400000 (0.75f). */
#define W4 0x00, 0x00, 0x40, 0x3f
#define W16 W4, W4, W4, W4
#define W64 W16, W16, W16, W16
static const unsigned char kWeights[1024] = {W64, W64, W64, W64};
static const aotc_rt_ref kKernelArgs[] = {
    {AOTC_LOC_INPUT, 0, 0ULL}, {AOTC_LOC_WEIGHTS, 0, 0ULL}, {AOTC_LOC_ARENA, 0, 0ULL},  /* fake_mul */
    {AOTC_LOC_ARENA, 0, 0ULL}, {AOTC_LOC_WEIGHTS, 0, 0ULL}, {AOTC_LOC_OUTPUT, 0, 0ULL}, /* fake_add */
};
static const aotc_rt_kernel kKernels[] = {
    {"fake_mul", 0, {1u, 1u, 1u}, {256u, 1u, 1u}, 0u, 0, 3, 0, 0, 0, 0, NULL, 0u, 0, 0, 0u},
    {"fake_add", 0, {1u, 1u, 1u}, {256u, 1u, 1u}, 0u, 3, 3, 0, 0, 0, 0, NULL, 0u, 0, 0, 0u},
};
static const aotc_rt_copy kCopies[] = {{{AOTC_LOC_ARENA, 0, 0ULL}, {AOTC_LOC_OUTPUT, 1, 0ULL}, 1024ULL}};
static const aotc_rt_step kSteps[] = {
    {AOTC_STEP_KERNEL, 0, "k0_fake_mul", 256ULL, 3072ULL, 0, 0},
    {AOTC_STEP_COPY, 0, "copy0_z", 0ULL, 2048ULL, 1, 1},
    {AOTC_STEP_KERNEL, 1, "k1_fake_add", 256ULL, 3072ULL, 0, 0},
};
static const long long kShape[] = {16, 16};
static const aotc_rt_io kInputs[] = {{"x", 1, 2, kShape, 1024ULL}};
static const aotc_rt_io kOutputs[] = {{"y", 1, 2, kShape, 1024ULL}, {"z", 1, 2, kShape, 1024ULL}};
static const aotc_rt_model_desc kModel = {
    "fakemodel", "sm_90", kFatbins, 1, kWeights, 1024ULL, 2048ULL, 1024ULL, 0ULL,
    kKernels, 2, kKernelArgs, 6, NULL, 0, kCopies, 1, kSteps, 3, kInputs, 1, kOutputs, 2, NULL, 0, 0, 0, NULL, 0};

AOTC_API int fakemodel_create(fakemodel_model** out, int device, void* workspace,
                              const fakemodel_model* share_weights_with) {
  return aotc_rt_create((aotc_rt_handle**)out, &kModel, device, workspace,
                        (const aotc_rt_handle*)share_weights_with);
}
AOTC_API void fakemodel_destroy(fakemodel_model* model) { aotc_rt_destroy((aotc_rt_handle*)model); }
AOTC_API int fakemodel_run(fakemodel_model* model, const void* const* inputs, void* const* outputs,
                           void* stream) {
  return aotc_rt_run((aotc_rt_handle*)model, inputs, outputs, stream);
}
AOTC_API int fakemodel_run_host(fakemodel_model* model, const void* const* inputs, void* const* outputs) {
  return aotc_rt_run_host((aotc_rt_handle*)model, inputs, outputs);
}
AOTC_API const char* fakemodel_last_error(const fakemodel_model* model) {
  return aotc_rt_last_error((const aotc_rt_handle*)model);
}
AOTC_API int fakemodel_num_inputs(void) { return kModel.num_inputs; }
AOTC_API int fakemodel_num_outputs(void) { return kModel.num_outputs; }
#define IO_FUNCTIONS(s, table, count)                                                                           \
  AOTC_API const char* fakemodel_##s##_name(int i) {                                             \
    const aotc_rt_io* io = aotc_rt_io_at(kModel.table, kModel.count, i);                      \
    return io ? io->name : 0;                                                                     \
  }                                                                                               \
  AOTC_API int fakemodel_##s##_dtype(int i) {                                                     \
    const aotc_rt_io* io = aotc_rt_io_at(kModel.table, kModel.count, i);                      \
    return io ? io->dtype : -1;                                                                   \
  }                                                                                               \
  AOTC_API int fakemodel_##s##_rank(int i) {                                                      \
    const aotc_rt_io* io = aotc_rt_io_at(kModel.table, kModel.count, i);                      \
    return io ? io->rank : -1;                                                                    \
  }                                                                                               \
  AOTC_API const long long* fakemodel_##s##_shape(int i) {                                        \
    const aotc_rt_io* io = aotc_rt_io_at(kModel.table, kModel.count, i);                      \
    return io ? io->shape : 0;                                                                    \
  }                                                                                               \
  AOTC_API unsigned long long fakemodel_##s##_bytes(int i) {                                      \
    const aotc_rt_io* io = aotc_rt_io_at(kModel.table, kModel.count, i);                      \
    return io ? io->bytes : 0;                                                                    \
  }
IO_FUNCTIONS(input, inputs, num_inputs)
IO_FUNCTIONS(output, outputs, num_outputs)
AOTC_API unsigned long long fakemodel_arena_bytes(void) { return kModel.arena_bytes; }
AOTC_API unsigned long long fakemodel_weight_bytes(void) { return kModel.weight_bytes; }
