// How a fused node (aotc.FusedConv, aotc.FusedGemm) records the activation it absorbed: the
// activation's op type in attribute "activation" and each of its attributes as "act.<name>".
// Only ops with OpTraits::epilogue_activation whose scalar_expr and reference depend on
// attributes alone (one input) can be absorbed; Clip qualifies because its importer turns
// constant min/max inputs into attributes.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

void store_activation(Node& fused, const Node& activation);
bool has_activation(const Node& fused);
// The absorbed activation as a stand-alone single-input node (op_type and attributes only).
Node load_activation(const Node& fused);
// CUDA expression of the activation applied to `x`; `x` itself when there is none.
std::string activation_expr(const Node& fused, const Graph& graph, const std::string& x);
// Apply the activation's reference in place (no-op when none).
Status apply_activation_reference(const Node& fused, Tensor& tensor);

// A max pooling absorbed after the activation (opt/fuse_stem_pool: aotc.FusedConv only): its op
// type in attribute "pool" and its attributes as "pool.<name>". The fused node's output is the
// pooled tensor.
void store_pool(Node& fused, const Node& pool);
bool has_pool(const Node& fused);
// The absorbed pool as a stand-alone single-input node (op_type and attributes only).
Node load_pool(const Node& fused);

}  // namespace aotc
