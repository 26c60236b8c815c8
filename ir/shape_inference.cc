// Shape inference driver: the per-op logic lives in ir/ops/*.
#include "ir/shape_inference.h"

#include <algorithm>

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
    // Bounded like graph inputs and initializers: no size arithmetic later (folding, the memory
    // plan, the header's byte counts) can overflow, and a Tile/Expand/Range of 2^60 elements is an
    // error here instead of a heap overflow or a library that declares "0 bytes".
    int64_t numel = 1, bytes = 0, nonzero = 1;
    bool zero = false, over = false, nonzero_over = false;
    for (int64_t d : v.shape) {
      zero = zero || d == 0;
      over = over || __builtin_mul_overflow(numel, d, &numel);
      if (d != 0) nonzero_over = nonzero_over || __builtin_mul_overflow(nonzero, d, &nonzero);
    }
    // An empty output's other dims too must multiply within int64 (as graph inputs' must): the
    // ops reading it multiply subsets of its dims.
    if (zero && nonzero_over)
      return node_error(node, "output " + std::to_string(i) + " has shape " + shape_str(v.shape) +
                                  ": an empty tensor whose other dims multiply past int64");
    if (!zero && (over || __builtin_mul_overflow(numel, std::max<int64_t>(dtype_size(v.dtype), 1), &bytes) ||
                  bytes > kMaxValueBytes))
      return node_error(node, "output " + std::to_string(i) + " has shape " + shape_str(v.shape) + " of " +
                                  dtype_name(v.dtype) + ": over the 1 TiB limit on one tensor");
  }
  return Status::ok();
}

Status infer_shapes(Graph& graph, const OpRegistry& registry) {
  for (Node& node : graph.nodes) AOTC_RETURN_IF_ERROR(infer_node(node, graph, registry));
  return Status::ok();
}

}  // namespace aotc
