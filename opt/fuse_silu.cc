// fuse_silu: the SiLU exporters write out, y = Mul(x, Sigmoid(x)) (either operand order), with the
// Sigmoid read by that Mul alone and not a graph output, becomes one Swish(x) {alpha = 1} node
// (ONNX opset 24; the same function x / (1 + exp(-x))). One kernel that reads x once and rounds
// once, instead of Sigmoid writing a tensor the Mul reads back with x: EfficientNet writes about
// fifty of them (every expansion, depthwise and squeeze-excitation reduction). Runs after
// fuse_swiglu, which takes the gated form Mul(Mul(g, Sigmoid(g)), u) whole.
#include <set>

#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {

Expected<bool> fuse_silu(Graph& graph) {
  const OpRegistry& registry = default_registry();
  const std::vector<int> producers = graph.producers();
  const std::vector<std::vector<int>> consumers = graph.consumers();
  std::set<int> removed;
  bool changed = false;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& mul = graph.nodes[i];
    if (!mul.domain.empty() || mul.op_type != "Mul" || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    for (int side = 0; side < 2; ++side) {
      const ValueId x = mul.inputs[static_cast<size_t>(side)], sig = mul.inputs[static_cast<size_t>(1 - side)];
      if (x == kNoValue || sig == kNoValue || graph.is_graph_output(sig)) continue;
      const int p = producers[static_cast<size_t>(sig)];
      if (p < 0 || consumers[static_cast<size_t>(sig)].size() != 1 || removed.count(p)) continue;
      const Node& sn = graph.nodes[static_cast<size_t>(p)];
      if (!sn.domain.empty() || sn.op_type != "Sigmoid" || sn.inputs.size() != 1 || sn.inputs[0] != x) continue;
      const Value& xv = graph.value(x);
      const Value& yv = graph.value(mul.outputs[0]);
      if (!dtype_is_float(xv.dtype) || xv.dtype != yv.dtype || xv.shape != yv.shape) continue;
      Node s{mul.name, "Swish", "", {x}, {mul.outputs[0]}, {{"alpha", Attribute::of_float(1.0f)}}};
      if (!infer_node(s, graph, registry).is_ok()) continue;
      graph.nodes[i] = std::move(s);
      removed.insert(p);
      changed = true;
      break;
    }
  }
  if (!changed) return false;
  std::vector<Node> out;
  out.reserve(graph.nodes.size() - removed.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!removed.count(static_cast<int>(i))) out.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(out);
  return true;
}

}  // namespace aotc
