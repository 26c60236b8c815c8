/* The model-independent half of every generated library: the table types that the generated
   <name>_model.c fills in (kernels, their pointer arguments, cuBLASLt matmuls, copies, the launch
   order, inputs and outputs) and the functions that implement the C ABI over those tables.
   Everything here is hidden (-fvisibility=hidden); only the prefixed wrappers are exported. */
#ifndef AOTC_RUNTIME_H
#define AOTC_RUNTIME_H

#include "aotc_cuda_api.h"

#ifndef AOTC_STATUS_CODES_DEFINED
#define AOTC_STATUS_CODES_DEFINED
enum {
  AOTC_OK = 0,
  AOTC_ERROR_INVALID_ARGUMENT = 1,
  AOTC_ERROR_NO_DRIVER = 2,
  AOTC_ERROR_NO_CUBLASLT = 3,
  AOTC_ERROR_OUT_OF_MEMORY = 4,
  AOTC_ERROR_CUDA = 5,
  AOTC_ERROR_STICKY = 6
};
#endif

/* Where a pointer argument lives at run time. */
enum {
  AOTC_LOC_NULL = 0,    /* nullptr (absent optional input) */
  AOTC_LOC_ARENA = 1,   /* arena base + offset */
  AOTC_LOC_WEIGHTS = 2, /* weight buffer base + offset */
  AOTC_LOC_INPUT = 3,   /* the caller's input pointer `index` + offset */
  AOTC_LOC_OUTPUT = 4   /* the caller's output pointer `index` + offset */
};

typedef struct aotc_rt_ref {
  int loc;
  int index;
  unsigned long long offset;
} aotc_rt_ref;

typedef struct aotc_rt_kernel {
  const char* name; /* the __global__ function in fatbin `module` */
  int module;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  int first_arg; /* into the kernel argument table */
  int num_args;
  /* 1: a library kernel: `name` takes one params struct that `name`_params builds at create from
     builder_args[first_builder_arg .. +num_builder_args); grid/block/shared_bytes above are then
     only informative (the builder reports the launch shape). */
  int library;
  int first_builder_arg;
  int num_builder_args;
  /* 1: the kernel starts with griddepcontrol.wait (templates/common.cuh AOTC_PDL_ENTER), so it
     may be launched with programmatic stream serialization (sm_90+, see aotc_rt_launch.c). */
  int pdl;
  /* A library kernel whose params aotc built at compile time (templates/host_params.cuh: CUTLASS's
     own host code, run on the build machine): `prebuilt` holds the params header and, at
     AOTC_PARAMS_OFFSET, the params struct (prebuilt_bytes in all); no builder runs at create.
     NULL: the device builder `name`_params. Its tensor maps (TMA descriptors, which hold device
     addresses) are tensor_maps[first_tensor_map .. +num_tensor_maps), encoded at create. */
  const unsigned char* prebuilt;
  unsigned prebuilt_bytes;
  int first_tensor_map;
  int num_tensor_maps;
  /* CTAs per cluster of a __cluster_dims__ kernel that is not a library kernel (those report it in
     their params header); over 8 (sm_90's non-portable sizes, up to 16) create() allows it on the
     function. 0: not said. */
  unsigned cluster_size;
} aotc_rt_kernel;
/* A CUDA tensor map (TMA descriptor) inside a prebuilt params struct: the arguments aotc recorded
   from CUTLASS's call of the driver's encoder at compile time. create() encodes it again with the
   real address of the kernel's pointer argument `arg` (it must live in the arena or the weights,
   whose addresses are fixed at create) and writes the 128 bytes at `offset` of the params struct. */
typedef struct aotc_rt_tensor_map {
  unsigned offset;
  int arg;          /* index among the kernel's pointer arguments */
  int im2col;       /* 0: cuTensorMapEncodeTiled, 1: cuTensorMapEncodeIm2col */
  int data_type;    /* CUtensorMapDataType */
  int rank;         /* tiled 1..5, im2col 3..5 */
  unsigned long long dims[5];
  unsigned long long strides[4]; /* bytes between elements of dims 1..rank-1 */
  unsigned box[5];               /* tiled: the box */
  int lower[3], upper[3];        /* im2col: the pixel box corners (rank - 2 used) */
  unsigned channels, pixels;     /* im2col: channels per pixel, pixels per column */
  unsigned element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
} aotc_rt_tensor_map;

enum { AOTC_MM_F32 = 0, AOTC_MM_F16 = 1, AOTC_MM_BF16 = 2 };
enum { AOTC_EPI_NONE = 0, AOTC_EPI_BIAS = 1, AOTC_EPI_RELU = 2, AOTC_EPI_BIAS_RELU = 3, AOTC_EPI_GELU = 4,
       AOTC_EPI_BIAS_GELU = 5, AOTC_EPI_COUNT = 6 };
#define AOTC_EPI_HAS_BIAS(e) ((e) == AOTC_EPI_BIAS || (e) == AOTC_EPI_BIAS_RELU || (e) == AOTC_EPI_BIAS_GELU)

/* D = alpha * op(A) x op(B) + beta * C (+bias) (relu), ROW-MAJOR terms (see ir/lowering.h). */
typedef struct aotc_rt_matmul {
  const char* label;
  int dtype;
  aotc_rt_ref a, b, c, d, bias;
  long long m, n, k, batch;
  int trans_a, trans_b;
  long long lda, ldb, ldc, ldd;
  long long stride_a, stride_b, stride_c, stride_d;
  float alpha, beta;
  int epilogue;
  int d_dtype; /* AOTC_MM_*: C, D and bias (fp32 D from 16-bit A/B: one rounding, no cast kernel) */
} aotc_rt_matmul;

typedef struct aotc_rt_copy {
  aotc_rt_ref src, dst;
  unsigned long long bytes;
} aotc_rt_copy;

enum { AOTC_STEP_KERNEL = 0, AOTC_STEP_MATMUL = 1, AOTC_STEP_COPY = 2 };
typedef struct aotc_rt_step {
  int kind;
  int index; /* into kernels / matmuls / copies */
  /* For the profiling extension, computed at compile time: a sanitized label ([A-Za-z0-9_ ]),
     the step's floating-point operations (0 where codegen has no estimate) and the bytes it
     reads and writes. */
  const char* label;
  unsigned long long flops;
  unsigned long long bytes;
  /* Concurrency (opt/side_branches.cc): lane 1 steps may run beside the lane 0 steps issued
     after them, on the handle's auxiliary stream, while run() captures its CUDA graph. `wait` on a
     lane 1 step: it starts after every step before it (the fork); on a lane 0 step: it starts
     after every lane 1 step before it (the join). Plain launches run the table in order. */
  int lane;
  int wait;
} aotc_rt_step;

typedef struct aotc_rt_io {
  const char* name;
  int dtype; /* ONNX TensorProto.DataType */
  int rank;
  const long long* shape;
  unsigned long long bytes;
} aotc_rt_io;

typedef struct aotc_rt_model_desc {
  const char* model_name;
  const char* archs; /* e.g. "sm_90 sm_87", for error messages */
  const unsigned char* const* fatbins; /* one per device source file */
  int num_fatbins;
  const unsigned char* weights;
  unsigned long long weight_bytes;
  unsigned long long arena_bytes; /* includes the cuBLASLt workspace */
  unsigned long long lt_workspace_offset;
  unsigned long long lt_workspace_bytes;
  const aotc_rt_kernel* kernels;
  int num_kernels;
  const aotc_rt_ref* kernel_args;
  int num_kernel_args;
  const aotc_rt_matmul* matmuls;
  int num_matmuls;
  const aotc_rt_copy* copies;
  int num_copies;
  const aotc_rt_step* steps;
  int num_steps;
  const aotc_rt_io* inputs;
  int num_inputs;
  const aotc_rt_io* outputs;
  int num_outputs;
  const long long* builder_args; /* library kernels' params builder arguments */
  int num_builder_args;
  /* 1: create() times cuBLASLt's candidate algorithms per matmul and keeps the fastest (aotc
     --tune-matmuls on); AOTC_MATMUL_TUNE=1 / AOTC_NO_MATMUL_TUNE=1 override it at run time. */
  int tune_matmuls;
  /* The cuBLASLt workspace (lt_workspace_bytes) of lane 1 matmuls, so that they never share one
     with a concurrent lane 0 matmul; 0 when no lane 1 step is a matmul. */
  unsigned long long lt_aux_workspace_offset;
  /* Tensor maps of prebuilt library kernels (aotc_rt_kernel::first_tensor_map). */
  const aotc_rt_tensor_map* tensor_maps;
  int num_tensor_maps;
} aotc_rt_model_desc;

typedef struct aotc_rt_handle aotc_rt_handle;

#define AOTC_RT_HIDDEN __attribute__((visibility("hidden")))

AOTC_RT_HIDDEN int aotc_rt_create(aotc_rt_handle** out, const aotc_rt_model_desc* desc, int device,
                                  void* workspace, const aotc_rt_handle* share_weights_with);
AOTC_RT_HIDDEN void aotc_rt_destroy(aotc_rt_handle* h);
AOTC_RT_HIDDEN int aotc_rt_run(aotc_rt_handle* h, const void* const* inputs, void* const* outputs,
                               void* stream);
AOTC_RT_HIDDEN int aotc_rt_run_host(aotc_rt_handle* h, const void* const* inputs,
                                    void* const* outputs);
AOTC_RT_HIDDEN const char* aotc_rt_last_error(const aotc_rt_handle* h);

/* Introspection over the tables (index checked; out of range -> NULL / -1 / 0). */
AOTC_RT_HIDDEN const aotc_rt_io* aotc_rt_io_at(const aotc_rt_io* table, int count, int i);

/* The profiling extension (aotc_rt_profile.c): the launch sequence without CUDA graphs, an event
   recorded before and after every step on `stream`, one synchronisation at the end; step_ms gets
   desc->num_steps entries. Creates its events at the first call (kept until destroy). */
AOTC_RT_HIDDEN int aotc_rt_profile_run(aotc_rt_handle* h, const void* const* inputs,
                                       void* const* outputs, void* stream, float* step_ms);
AOTC_RT_HIDDEN const aotc_rt_step* aotc_rt_step_at(const aotc_rt_model_desc* desc, int i);
AOTC_RT_HIDDEN const char* aotc_rt_step_kind_name(int kind); /* "kernel", "matmul", "copy" */

#endif /* AOTC_RUNTIME_H */
