// fold_quantize_casts: the Casts the int8 precision path leaves at the edges of its int8 regions,
// folded into the QuantizeLinear / DequantizeLinear beside them (exact, one kernel and one tensor
// pass fewer each):
//  - a Cast from fp16 / bf16 to float32 whose every reader is a QuantizeLinear's x: the quantize
//    reads the 16-bit value (widening is exact; the division stays in float32, set by the float32
//    scale and the node's precision, not by x);
//  - a DequantizeLinear to float32 whose every reader is a Cast to one 16-bit float type: the
//    dequantize writes that type (output_dtype; its float32 product rounded once to nearest even,
//    as the Cast rounded it).
// Values that are graph outputs keep their producers. ResNet-50 in int8: the stem's fp16 output
// went through a float32 copy before its quantize, and the last block's two dequantized operands
// through float32 copies before their fp16 Add.
#include <vector>

#include "opt/passes.h"

namespace aotc {
namespace {

bool plain(const Node& n, const char* op) {
  return n.domain.empty() && n.op_type == op && !n.outputs.empty() && n.outputs[0] != kNoValue && !n.inputs.empty() &&
         n.inputs[0] != kNoValue;
}

bool is_16bit_float(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

}  // namespace

Expected<bool> fold_quantize_casts(Graph& graph) {
  bool changed = false;
  const std::vector<std::vector<int>> consumers = graph.consumers();
  std::vector<bool> drop(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& n = graph.nodes[i];
    const ValueId out = n.outputs.empty() ? kNoValue : n.outputs[0];
    if (out == kNoValue || graph.is_graph_output(out)) continue;
    const std::vector<int>& readers = consumers[static_cast<size_t>(out)];
    if (readers.empty()) continue;
    if (plain(n, "Cast") && n.inputs.size() == 1 && n.outputs.size() == 1 && is_16bit_float(graph.value(n.inputs[0]).dtype) &&
        graph.value(out).dtype == DType::kFloat32) {
      bool all_quantize = true;
      for (int r : readers) {
        const Node& q = graph.nodes[static_cast<size_t>(r)];
        all_quantize = all_quantize && plain(q, "QuantizeLinear") && q.inputs[0] == out;
        for (size_t k = 1; k < q.inputs.size(); ++k) all_quantize = all_quantize && q.inputs[k] != out;
      }
      if (!all_quantize) continue;
      for (int r : readers) graph.nodes[static_cast<size_t>(r)].inputs[0] = n.inputs[0];
      drop[i] = changed = true;
      continue;
    }
    if (plain(n, "DequantizeLinear") && n.outputs.size() == 1 && graph.value(out).dtype == DType::kFloat32) {
      DType to = DType::kUndefined;
      bool all_cast = true;
      for (int r : readers) {
        const Node& c = graph.nodes[static_cast<size_t>(r)];
        const bool cast = plain(c, "Cast") && c.inputs.size() == 1 && c.outputs.size() == 1 &&
                          is_16bit_float(graph.value(c.outputs[0]).dtype) && !graph.is_graph_output(c.outputs[0]);
        all_cast = all_cast && cast && (to == DType::kUndefined || graph.value(c.outputs[0]).dtype == to);
        if (cast) to = graph.value(c.outputs[0]).dtype;
      }
      if (!all_cast) continue;
      // The dequantize takes over the first Cast's output value; the other Casts' readers read it.
      const ValueId kept = graph.nodes[static_cast<size_t>(readers[0])].outputs[0];
      for (int r : readers) {
        const ValueId cast_out = graph.nodes[static_cast<size_t>(r)].outputs[0];
        if (cast_out != kept)
          for (Node& m : graph.nodes)
            for (ValueId& v : m.inputs)
              if (v == cast_out) v = kept;
        drop[static_cast<size_t>(r)] = true;
      }
      n.outputs[0] = kept;
      n.attrs["output_dtype"] = Attribute::of_int(static_cast<int64_t>(to));
      changed = true;
    }
  }
  if (!changed) return false;
  std::vector<Node> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
  return true;
}

}  // namespace aotc
