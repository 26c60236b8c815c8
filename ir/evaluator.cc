// Reference evaluation, node by node; intermediate tensors are freed after their last use.
#include "ir/evaluator.h"

#include <memory>

namespace aotc {

Status evaluate_node(const Node& node, const Graph& graph, const std::vector<const Tensor*>& inputs,
                     std::vector<Tensor>& outputs, const OpRegistry& registry) {
  const OpDef* def = registry.find(node.op_type, node.domain);
  if (!def) return node_error(node, "unsupported op");
  outputs.clear();
  for (ValueId out : node.outputs) {
    if (out == kNoValue) {
      outputs.emplace_back();
      continue;
    }
    const Value& v = graph.value(out);
    outputs.emplace_back(v.dtype, v.shape);
  }
  return def->reference(node, inputs, outputs);
}

Expected<std::vector<Tensor>> evaluate_graph(const Graph& graph, const std::vector<Tensor>& inputs,
                                             const OpRegistry& registry) {
  return evaluate_graph(graph, inputs, registry, ValueObserver());
}

Expected<std::vector<Tensor>> evaluate_graph(const Graph& graph, const std::vector<Tensor>& inputs,
                                             const OpRegistry& registry, const ValueObserver& observe) {
  if (inputs.size() != graph.inputs.size())
    return Status::error("expected " + std::to_string(graph.inputs.size()) + " inputs, got " +
                         std::to_string(inputs.size()));
  std::vector<std::shared_ptr<const Tensor>> live(graph.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph.value(graph.inputs[i]);
    if (inputs[i].dtype() != v.dtype || inputs[i].shape() != v.shape)
      return Status::error("input '" + escape_for_message(v.name) + "' expects " + dtype_name(v.dtype) +
                           "[" + shape_str(v.shape) + "], got " + dtype_name(inputs[i].dtype()) + "[" +
                           shape_str(inputs[i].shape()) + "]");
    live[static_cast<size_t>(graph.inputs[i])] = std::make_shared<const Tensor>(inputs[i]);
    if (observe) observe(graph.inputs[i], inputs[i]);
  }
  for (size_t i = 0; i < graph.values.size(); ++i)
    if (graph.values[i].constant) live[i] = graph.values[i].constant;

  // Last node index that reads each value, so intermediates can be dropped early.
  std::vector<int> last_use(graph.values.size(), -1);
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    for (ValueId in : graph.nodes[n].inputs)
      if (in != kNoValue) last_use[static_cast<size_t>(in)] = static_cast<int>(n);
  for (ValueId out : graph.outputs) last_use[static_cast<size_t>(out)] = static_cast<int>(graph.nodes.size());

  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    std::vector<const Tensor*> args;
    for (ValueId in : node.inputs) {
      if (in == kNoValue) {
        args.push_back(nullptr);
        continue;
      }
      if (!live[static_cast<size_t>(in)])
        return node_error(node, "input '" + escape_for_message(graph.value(in).name) + "' has no value");
      args.push_back(live[static_cast<size_t>(in)].get());
    }
    std::vector<Tensor> outs;
    AOTC_RETURN_IF_ERROR(evaluate_node(node, graph, args, outs, registry));
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (node.outputs[i] != kNoValue) {
        live[static_cast<size_t>(node.outputs[i])] = std::make_shared<const Tensor>(std::move(outs[i]));
        if (observe) observe(node.outputs[i], *live[static_cast<size_t>(node.outputs[i])]);
      }
    for (ValueId in : node.inputs)
      if (in != kNoValue && last_use[static_cast<size_t>(in)] == static_cast<int>(n) &&
          !graph.value(in).constant)
        live[static_cast<size_t>(in)].reset();
  }
  std::vector<Tensor> result;
  for (ValueId out : graph.outputs) {
    if (!live[static_cast<size_t>(out)])
      return Status::error("graph output '" + escape_for_message(graph.value(out).name) + "' was not computed");
    result.push_back(*live[static_cast<size_t>(out)]);
  }
  return result;
}

}  // namespace aotc
