// The CPU reference evaluator: runs a Graph node by node through each op's reference function.
// It is the numerical truth for tests, constant folding and (later) calibration. Slow by design:
// clarity over speed.
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace aotc {

// Run one node. `inputs` has one entry per node input (nullptr for absent); outputs are allocated
// from the output values' dtype and shape.
Status evaluate_node(const Node& node, const Graph& graph, const std::vector<const Tensor*>& inputs,
                     std::vector<Tensor>& outputs, const OpRegistry& registry = default_registry());

// Run the whole graph; `inputs` are in the order of graph.inputs and must match their dtype and
// shape. Returns the graph outputs in order.
Expected<std::vector<Tensor>> evaluate_graph(const Graph& graph, const std::vector<Tensor>& inputs,
                                             const OpRegistry& registry = default_registry());

// Same, calling `observe` with every graph input and every node output as it is computed
// (calibration collects its statistics this way); constants are not observed.
using ValueObserver = std::function<void(ValueId, const Tensor&)>;
Expected<std::vector<Tensor>> evaluate_graph(const Graph& graph, const std::vector<Tensor>& inputs,
                                             const OpRegistry& registry, const ValueObserver& observe);

}  // namespace aotc
