// Shape inference driver: the per-op logic lives in ir/ops/*.
#include "ir/shape_inference.h"

namespace aotc {

Status infer_node(Node& node, Graph& graph, const OpRegistry& registry) {
  const OpDef* def = registry.find(node.op_type, node.domain);
  if (!def) {
    return node_error(node, "unsupported op" +
                                (node.domain.empty() ? std::string() : " in domain '" + escape_for_message(node.domain) + "'"));
  }
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ValueId in = node.inputs[i];
    if (in == kNoValue) continue;
    const Value& v = graph.value(in);
    if (!v.shape_known)
      return node_error(node, "input " + std::to_string(i) + " ('" + escape_for_message(v.name) +
                                  "') has no known shape");
  }
  AOTC_RETURN_IF_ERROR(def->infer(node, graph));
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    ValueId out = node.outputs[i];
    if (out == kNoValue) continue;
    const Value& v = graph.value(out);
    if (!v.shape_known || v.dtype == DType::kUndefined)
      return node_error(node, "shape inference left output " + std::to_string(i) + " unknown");
    for (int64_t d : v.shape)
      if (d < 0) return node_error(node, "output " + std::to_string(i) + " has a negative dim");
  }
  return Status::ok();
}

Status infer_shapes(Graph& graph, const OpRegistry& registry) {
  for (Node& node : graph.nodes) AOTC_RETURN_IF_ERROR(infer_node(node, graph, registry));
  return Status::ok();
}

}  // namespace aotc
