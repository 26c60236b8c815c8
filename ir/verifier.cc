// Structural checks of a Graph; see verifier.h for the list.
#include "ir/verifier.h"

#include <vector>

namespace aotc {

Status verify(const Graph& graph, const OpRegistry& registry) {
  const size_t nv = graph.values.size();
  std::vector<char> defined(nv, 0);
  auto in_range = [&](ValueId id) { return id >= 0 && static_cast<size_t>(id) < nv; };

  for (ValueId id : graph.inputs) {
    if (!in_range(id)) return Status::error("graph input id out of range");
    defined[static_cast<size_t>(id)] = 1;
  }
  for (size_t i = 0; i < nv; ++i)
    if (graph.values[i].is_constant()) defined[i] = 1;

  for (const Node& node : graph.nodes) {
    if (!registry.find(node.op_type, node.domain)) return node_error(node, "unsupported op");
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ValueId in = node.inputs[i];
      if (in == kNoValue) continue;
      if (!in_range(in)) return node_error(node, "input " + std::to_string(i) + " id out of range");
      if (!defined[static_cast<size_t>(in)])
        return node_error(node, "input " + std::to_string(i) + " ('" +
                                    escape_for_message(graph.value(in).name) +
                                    "') is not defined before use (dangling input or cycle)");
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      ValueId out = node.outputs[i];
      if (out == kNoValue) continue;
      if (!in_range(out)) return node_error(node, "output " + std::to_string(i) + " id out of range");
      if (defined[static_cast<size_t>(out)])
        return node_error(node, "output " + std::to_string(i) + " ('" +
                                    escape_for_message(graph.value(out).name) +
                                    "') is defined twice");
      defined[static_cast<size_t>(out)] = 1;
      const Value& v = graph.value(out);
      if (!v.shape_known) return node_error(node, "output " + std::to_string(i) + " has no shape");
      for (int64_t d : v.shape)
        if (d < 0) return node_error(node, "output " + std::to_string(i) + " has a negative dim");
    }
  }
  for (ValueId id : graph.outputs) {
    if (!in_range(id)) return Status::error("graph output id out of range");
    if (!defined[static_cast<size_t>(id)])
      return Status::error("graph output '" + escape_for_message(graph.value(id).name) +
                           "' is not produced by any node, input or constant");
  }
  return Status::ok();
}

}  // namespace aotc
