// drop_exact_casts: Casts that cannot change a value are removed and their readers read the
// source: a Cast to the dtype it already has, and a round trip through a wider float type
// (fp16 -> fp32 -> fp16, bf16 -> fp32 -> bf16, fp16/bf16/fp32 -> fp64 -> back): widening is exact
// and narrowing a value that came from the narrow type gives it back bit for bit (NaN included:
// the payload may differ, a NaN stays a NaN). GPT-2's exported `attn_weights.type(value.dtype)`
// plus the Casts the precision pass puts around it were three kernels over every attention score
// matrix. A Cast whose output is a graph output is kept (the output keeps its name).
#include <vector>

#include "opt/passes.h"

namespace aotc {
namespace {

bool is_cast(const Node& n) {
  return n.domain.empty() && n.op_type == "Cast" && n.inputs.size() == 1 && n.outputs.size() == 1 &&
         n.inputs[0] != kNoValue && n.outputs[0] != kNoValue;
}

int float_rank(DType t) {
  switch (t) {
    case DType::kFloat16: return 1;
    case DType::kBFloat16: return 1;
    case DType::kFloat32: return 2;
    case DType::kFloat64: return 3;
    default: return 0;
  }
}

// Every value of `narrow` is exactly representable in `wide`.
bool widening_is_exact(DType narrow, DType wide) {
  if (float_rank(narrow) == 0 || float_rank(wide) <= float_rank(narrow)) return false;
  return true;  // fp16 and bf16 both fit fp32 (and fp64); fp32 fits fp64
}

}  // namespace

Expected<bool> drop_exact_casts(Graph& graph) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    const std::vector<int> producers = graph.producers();
    for (size_t i = 0; i < graph.nodes.size() && !again; ++i) {
      const Node& c = graph.nodes[i];
      if (!is_cast(c) || graph.is_graph_output(c.outputs[0])) continue;
      const ValueId in = c.inputs[0], out = c.outputs[0];
      ValueId source = kNoValue;
      if (graph.value(in).dtype == graph.value(out).dtype) {
        source = in;
      } else {
        const int p = producers[static_cast<size_t>(in)];
        if (p >= 0 && is_cast(graph.nodes[static_cast<size_t>(p)])) {
          const ValueId first = graph.nodes[static_cast<size_t>(p)].inputs[0];
          if (graph.value(first).dtype == graph.value(out).dtype &&
              widening_is_exact(graph.value(first).dtype, graph.value(in).dtype))
            source = first;
        }
      }
      if (source == kNoValue) continue;
      for (Node& n : graph.nodes)
        for (ValueId& v : n.inputs)
          if (v == out) v = source;
      graph.nodes.erase(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      again = changed = true;
    }
  }
  // The widening Casts of removed round trips may now have no reader.
  if (changed) {
    const std::vector<std::vector<int>> consumers = graph.consumers();
    std::vector<Node> kept;
    for (Node& n : graph.nodes) {
      if (is_cast(n) && consumers[static_cast<size_t>(n.outputs[0])].empty() && !graph.is_graph_output(n.outputs[0]))
        continue;
      kept.push_back(std::move(n));
    }
    graph.nodes = std::move(kept);
  }
  return changed;
}

}  // namespace aotc
