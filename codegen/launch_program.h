// The launch sequence of a planned Graph as plain data: every node lowered through its OpDef, every
// pointer argument resolved to a location (arena + offset, weight blob + offset, the caller's input
// or output slot; views follow Value::alias_of), the weight blob assembled from the constants the
// steps read, and the copies a graph output needs when it does not own its bytes (a view, a graph
// input, a constant, a repeated output). Both the device and the host source are printed from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/template_renderer.h"
#include "ir/graph.h"
#include "ir/lowering.h"
#include "ir/op_registry.h"
#include "opt/memory_plan.h"

namespace aotc {

constexpr int64_t kWeightAlignment = 256;
// cuBLASLt workspace placed at the end of the arena when the model has matmuls: 4 bytes per
// element of the largest D (room for split-K partial sums), between 1 MiB and the 32 MiB NVIDIA
// recommends on Hopper, so small models do not carry 32 MiB they never use. The heuristic in
// create() only picks algorithms that fit.
constexpr int64_t kCublasLtWorkspaceMinBytes = 1LL << 20;
constexpr int64_t kCublasLtWorkspaceMaxBytes = 32LL << 20;
// Limits of a library kernel step (templates/library_params.cuh: AOTC_PARAMS_MAX_ARGS and
// AOTC_PARAMS_MAX_SLOTS; a test checks that the numbers agree).
constexpr size_t kLibraryMaxBuilderArgs = 24;
constexpr size_t kLibraryMaxPointerArgs = 8;
// The header's place, the protocol's size limit and its magic (AOTC_PARAMS_OFFSET,
// AOTC_PARAMS_MAX_BYTES, AOTC_PARAMS_MAGIC): what codegen checks in compile-time params.
constexpr size_t kLibraryParamsOffset = 256;
constexpr size_t kLibraryParamsMaxBytes = 4096;
constexpr uint32_t kLibraryParamsMagic = 0x41505248u;

struct Location {
  enum class Space { kNull, kArena, kWeights, kInput, kOutput };
  Space space = Space::kNull;
  int index = 0;        // input / output slot
  int64_t offset = 0;   // bytes from the base
  std::string symbol;   // named constant for arena / weight offsets, e.g. "ARENA_V3_relu_out"
  bool operator==(const Location& o) const {
    return space == o.space && index == o.index && offset == o.offset;
  }
};

// A TMA descriptor inside a host-params kernel's params struct: where it is, which pointer
// argument it describes, and the arguments of the driver's encoder that CUTLASS's host code
// called (runtime/aotc_runtime.h aotc_rt_tensor_map; the runtime encodes it again at create).
struct TensorMapRecord {
  uint32_t offset = 0;  // bytes into the params struct
  int arg = 0;          // index into ProgramKernel::args
  bool im2col = false;
  int data_type = 0, rank = 0;
  uint64_t dims[5] = {0, 0, 0, 0, 0};
  uint64_t strides[4] = {0, 0, 0, 0};
  uint32_t box[5] = {0, 0, 0, 0, 0};
  int lower[3] = {0, 0, 0}, upper[3] = {0, 0, 0};
  uint32_t channels = 0, pixels = 0;
  uint32_t element_strides[5] = {0, 0, 0, 0, 0};
  int interleave = 0, swizzle = 0, l2_promotion = 0, oob_fill = 0;
};

struct ProgramKernel {
  std::string name;           // k<index>_<node name reduced to [A-Za-z0-9_]> (k<index>_lib_... for library kernels)
  std::string function;       // the __global__ it launches: `name`, or an identical earlier kernel's
  int module = 0;             // which device file / fatbin holds `function`
  std::string template_name;
  Holes holes;                // the step's holes ("comment" already sanitized), without kernel_name
  std::string comment;        // sanitized: node, op, input and output shapes
  int node_index = -1;
  Dim3 grid, block;
  int64_t shared_bytes = 0;
  std::vector<Location> args;
  // A library kernel (KernelStep::library_params): `function` takes one params struct that
  // `function + "_params"` builds at create() from builder_args; grid/block/shared_bytes above are
  // then only informative (the builder reports the real ones). Kernels sharing a function keep
  // their own builder_args.
  bool library_params = false;
  std::vector<int64_t> builder_args;
  // A library kernel whose params aotc builds at compile time (KernelStep::host_params): the
  // rendered template of its function (set by render_device_sources on every kernel sharing it),
  // and what the compile-time builder made of this kernel's builder_args (codegen/host_params.h):
  // the header + params bytes create() copies, and the descriptors it encodes.
  bool host_params = false;
  std::string host_source;
  std::vector<uint8_t> prebuilt;
  std::vector<TensorMapRecord> tensor_maps;
  // The rendered code starts its kernel with AOTC_PDL_ENTER() (templates/common.cuh): the runtime
  // may launch it with programmatic dependent launch. Set by render_device_sources.
  bool pdl = false;
  // KernelStep::l2_prefetch_args: args' last two entries are the weight range to prefetch
  // (weights-space begin and end, or both null).
  bool l2_prefetch_args = false;
  // KernelStep::cluster_size (0: none said; over 8 the runtime allows the non-portable size).
  int64_t cluster_size = 0;
};

struct ProgramMatmul {
  MatmulStep step;
  Location a, b, c, d, bias;
  std::string label;          // sanitized node name
};

struct ProgramCopy {
  Location src, dst;
  int64_t bytes = 0;
  std::string label;          // sanitized
};

struct ProgramStep {
  enum class Kind { kKernel, kMatmul, kCopy };
  Kind kind = Kind::kKernel;
  int index = 0;              // into kernels / matmuls / copies
  // For the profiling extension (codegen/step_costs.h): a sanitized label ("k3_conv1",
  // "mm0_fc", "copy0_output_0"), estimated FLOPs (0: no estimate) and bytes read + written.
  std::string label;
  int64_t flops = 0;
  int64_t bytes = 0;
  // Concurrency (Graph::side_join, opt/side_branches.cc): lane 1 runs on the auxiliary stream.
  // wait on lane 1: the first step of a side node (forks from everything before it); on lane 0:
  // the first step of the node that joins the side lane back.
  int lane = 0;
  bool wait = false;
  int node_index = -1;        // the graph node it computes (-1: an output copy)
};

struct NamedOffset {
  std::string symbol;
  int64_t offset = 0;
  int64_t bytes = 0;
  std::string comment;        // sanitized value name, dtype, shape
};

struct LaunchProgram {
  std::vector<ProgramKernel> kernels;
  std::vector<ProgramMatmul> matmuls;
  std::vector<ProgramCopy> copies;
  std::vector<ProgramStep> steps;
  std::vector<uint8_t> weights;            // the blob, offsets kWeightAlignment-aligned
  std::vector<NamedOffset> weight_symbols;
  std::vector<NamedOffset> arena_symbols;  // values and scratch buffers the steps touch
  int64_t arena_bytes = 0;                 // plan.arena_bytes (aligned) + cuBLASLt workspace
  int64_t lt_workspace_offset = 0;
  int64_t lt_workspace_bytes = 0;
  int64_t lt_aux_workspace_offset = 0;     // a second workspace for lane 1 matmuls; 0: none
};

Expected<LaunchProgram> build_launch_program(const Graph& graph, const MemoryPlan& plan,
                                             const OpRegistry& registry = default_registry());

}  // namespace aotc
