// What each step of the launch program costs, estimated at compile time for the profiling
// extension (docs/abi.md): floating-point operations and bytes read + written. Matmuls:
// 2*m*n*k*batch FLOPs and the bytes of A, B, C, D and bias. Kernels: the sizes of the values their
// pointer arguments point to (inputs read, outputs written, scratch), and FLOPs where the op is
// known to be compute-bound (convolutions; CUTLASS library kernels from their builder args), else 0.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "ir/lowering.h"

namespace aotc {

int64_t matmul_step_flops(const MatmulStep& m);
int64_t matmul_step_bytes(const MatmulStep& m);
// `scratch_bytes`: the node's scratch buffer (Lowering::scratch_bytes), for kScratchArg.
int64_t kernel_step_bytes(const Graph& graph, const KernelStep& k, int64_t scratch_bytes);
int64_t kernel_step_flops(const Node& node, const Graph& graph, const KernelStep& k);

}  // namespace aotc
