// What an op asks codegen to emit for one node, as plain data: which template to instantiate with
// which hole values and launch shape, or which cuBLASLt matmul to call. ir/ops/* produce it;
// codegen/ consumes it. ir/ never includes codegen/.
//
// Conventions shared by every template in templates/:
//  - a kernel is declared `extern "C" __global__ void {{kernel_name}}(...)`; codegen fills
//    kernel_name, every other hole comes from KernelStep::holes (the renderer fails on a missing or
//    unused hole);
//  - the kernel's parameters are exactly one device pointer per entry of KernelStep::args, in order;
//    everything else (shapes, strides, attribute values) is a compile-time constant in a hole;
//  - element types appear in holes as C types from dtype_c_type() ("float", "__half", ...).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ir/dtype.h"

namespace aotc {

using ValueId = int32_t;
constexpr ValueId kScratchArg = -2;  // pointer to this node's scratch buffer (Lowering::scratch_bytes)
constexpr ValueId kNullArg = -1;     // nullptr (an absent optional input)

struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
};

struct KernelStep {
  std::string template_name;  // templates/<template_name>.cu.in
  std::vector<std::pair<std::string, std::string>> holes;
  std::vector<ValueId> args;  // one pointer parameter each, in the kernel's parameter order
  // Bytes added to each arg's address (empty: none; else one per arg, >= 0, not for null args): a
  // pointer into a buffer, e.g. K's columns of a packed QKV matrix for a kernel whose TMA
  // descriptors must start at the operand.
  std::vector<int64_t> arg_byte_offsets;
  Dim3 grid, block;
  int64_t shared_bytes = 0;
  // A library kernel (CUTLASS): the __global__ takes ONE parameter, a params struct that the
  // template's builder `<kernel_name>_params` (same module, one thread) builds at create() from
  // builder_args (see templates/library_params.cuh for the protocol). The builder also reports the
  // launch shape (grid/block/shared_bytes above are then only informative) and the byte offset of
  // each pointer in `args`, which run() patches into the struct. One instantiation (one set of
  // holes) serves every problem size: the sizes travel in builder_args, not in holes.
  bool library_params = false;
  std::vector<int64_t> builder_args;
  // A library kernel whose params struct only the library's host code can build (CUTLASS 3.x
  // sm90 kernels: TMA descriptors made by the driver's encoders): the template's AOTC_HOST_PARAMS
  // part registers `<kernel_name>_host_build` (templates/host_params.cuh), which aotc compiles
  // and runs when the model is compiled (codegen/host_params.cc); the library embeds the bytes and
  // create() re-encodes the descriptors with the real addresses. The operands a descriptor
  // describes must live in the arena or the weights (addresses fixed at create).
  bool host_params = false;
  // The template's last two pointer parameters (after `args`) are a byte range of the weight blob
  // that the kernel prefetches into L2 for the steps after it (codegen fills them,
  // codegen/launch_program.cc prefetch_following_weights; both null with Target::l2_prefetch off,
  // when no step after it reads weights, or when the range would pass 24 MiB). Not for library
  // kernels.
  bool l2_prefetch_args = false;
  // CTAs per thread-block cluster of a __cluster_dims__ kernel (0: none or not said). Over 8, sm_90's
  // non-portable size: the runtime allows it on the function at create.
  int64_t cluster_size = 0;
};

// A float in KernelStep::builder_args: its IEEE bits (the builder reads them back with
// __uint_as_float).
inline int64_t float_builder_arg(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<int64_t>(bits);
}

// D[b] = alpha * op(A[b]) x op(B[b]) + beta * C[b] (+ bias broadcast over rows) (then ReLU),
// described in ROW-MAJOR terms: A is m x k (k x m if trans_a), B is k x n (n x k if trans_b),
// C and D are m x n; ld* are row strides in elements; stride_* are batch strides in elements
// (0 broadcasts one matrix over the batch). bias has n elements. Codegen maps this onto cuBLASLt
// (column-major) by swapping operands. fp32 uses CUBLAS_COMPUTE_32F: no silent TF32. kGelu is
// cuBLASLt's GELU epilogue, the tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
struct MatmulStep {
  enum class Epilogue { kNone, kBias, kRelu, kBiasRelu, kGelu, kBiasGelu };
  static bool has_bias(Epilogue e) { return e == Epilogue::kBias || e == Epilogue::kBiasRelu || e == Epilogue::kBiasGelu; }
  DType dtype = DType::kFloat32;  // A and B (and C / D / bias unless d_dtype says otherwise)
  DType d_dtype = DType::kUndefined;  // C / D / bias when they differ (fp16 x fp16 -> fp32 D)
  ValueId a = kNullArg, b = kNullArg, c = kNullArg, d = kNullArg, bias = kNullArg;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;
  float alpha = 1.0f, beta = 0.0f;
  Epilogue epilogue = Epilogue::kNone;
};

struct LoweredStep {
  enum class Kind { kKernel, kMatmul };
  Kind kind = Kind::kKernel;
  KernelStep kernel;
  MatmulStep matmul;
};

struct Lowering {
  // Output 0 is input 0's bytes under another shape (Reshape, Flatten, Identity, Squeeze...):
  // no step runs, and the memory plan makes the output an alias of the input.
  bool is_view = false;
  std::vector<LoweredStep> steps;  // run in order
  int64_t scratch_bytes = 0;       // a scratch buffer live only while this node runs
  // The steps write output 0's rows Graph::row_stride elements apart (set only by lowerings that
  // do, when that stride is nonzero); codegen refuses a strided output whose lowering does not.
  bool strided_output = false;
  // The steps also copy the Concat slab the node's slab_* attributes name (opt/slab_into_producer;
  // set only by lowerings that do).
  bool slab_copied = false;
};

// The MatmulStep as aotc's own plain kernel (templates/gemm_reference.cu.in), the same
// arguments in the same order (a, b, c, d, bias; absent ones null): what --matmul-impl reference
// runs instead of cuBLASLt. Implemented in ir/ops/gemm.cc.
KernelStep matmul_reference_kernel(const MatmulStep& m, const std::string& comment);

// Launch helper: a 1-D grid of `threads` threads per block covering `n` items, capped so a
// grid-stride loop handles the rest.
inline Dim3 grid_for(int64_t n, int64_t threads = 256, int64_t max_blocks = 65535LL * 16) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > max_blocks) blocks = max_blocks;
  return Dim3{blocks, 1, 1};
}

}  // namespace aotc
