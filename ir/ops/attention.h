// What passes need to know about the Attention lowering (ir/ops/attention.cc).
#pragma once

#include "ir/graph.h"

namespace aotc {

// True when the Attention / aotc.StridedAttention node (shapes inferred) lowers to the fused
// tensor-core kernel on graph.target (CUTLASS's sm_90a FMHA or its memory-efficient attention).
bool attention_runs_fused(const Node& node, const Graph& graph);

}  // namespace aotc
