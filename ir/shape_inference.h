// Shape inference over a whole graph: calls each node's OpDef::infer in topological order.
// Shapes are computed once, here; passes that create nodes call infer_node for the new ones, and
// codegen only reads the results.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace aotc {

// The largest tensor a node may produce (the same 1 TiB as graph inputs and initializers).
constexpr int64_t kMaxValueBytes = int64_t{1} << 40;

// Infer one node's outputs. Fails with node_error if the op is unknown or the inputs are invalid.
Status infer_node(Node& node, Graph& graph, const OpRegistry& registry = default_registry());
Status infer_shapes(Graph& graph, const OpRegistry& registry = default_registry());

}  // namespace aotc
