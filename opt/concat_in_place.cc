// concat_in_place: a Concat along the last dim (or an aotc.SubsampleConcat input read at step 1)
// whose input is read by nothing else gets that input written straight into its own rows by the
// input's producer, and the Concat's copy of it disappears (TensorRT's concat elimination). In
// ResNet's merged projections (opt/merge_projection_shortcut.cc) that is h, the output of the
// block's 3x3 convolution: one slab kernel less per downsampling block, and h's bytes written
// once instead of written, read and written again.
// Mechanism, as data on the values: the input gets Value::stored_in / stored_at = the Concat's
// output and the input's column offset (so its Graph::row_stride is the Concat's row); the memory
// plan gives it no buffer of its own (its address is the output's plus the offset, the output
// live from the input's producer on); the Concat lowering skips it; the producer's lowering
// writes rows of that stride and says so (Lowering::strided_output): the pass asks it by
// lowering the producer with the placement set, and keeps it only where the answer is yes
// (CUTLASS / cuBLASLt / cluster convolutions: yes; the stem, depthwise and every other op: no).
// Must not fire: another axis, a graph input / output / constant input, an input read by
// another node or twice by this one, an output that is a graph output, a column offset that is
// not a whole 256 bytes (the arena's alignment, which kernels rely on), a SubsampleConcat input
// at a step > 1, a producer whose lowering does not write strided rows.
#include <algorithm>

#include "ir/op_registry.h"
#include "opt/memory_plan.h"
#include "opt/passes.h"

namespace aotc {

Expected<bool> concat_in_place(Graph& graph) {
  const std::vector<std::vector<int>> consumers = graph.consumers();
  const std::vector<int> producers = graph.producers();
  const OpRegistry& registry = default_registry();
  bool changed = false;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    const bool concat = n.op_type == "Concat" && n.domain.empty();
    const bool sub = n.op_type == "SubsampleConcat" && n.domain == "aotc";
    if ((!concat && !sub) || n.outputs.size() != 1 || n.outputs[0] == kNoValue) continue;
    const ValueId out = n.outputs[0];
    if (graph.is_graph_output(out) || graph.value(out).stored_in != kNoValue) continue;
    const Shape y_shape = graph.value(out).shape;
    const int64_t rank = static_cast<int64_t>(y_shape.size());
    if (rank < 2) continue;
    if (concat) {
      const int64_t axis = n.attr_int("axis", 0);
      if (axis != rank - 1 && axis != -1) continue;
    }
    const std::vector<int64_t> steps = sub ? n.attr_ints("steps") : std::vector<int64_t>{};
    if (sub && steps.size() != n.inputs.size()) continue;
    const int64_t row = y_shape.back(), es = dtype_size(graph.value(out).dtype);
    int64_t offset = 0;
    for (size_t k = 0; k < n.inputs.size(); offset += graph.value(n.inputs[k]).shape.back(), ++k) {
      const ValueId v = n.inputs[k];
      const Value& x = graph.value(v);
      if ((sub && steps[k] != 1) || x.numel() == 0 || x.shape.back() >= row || (offset * es) % kArenaAlignment != 0)
        continue;
      if (graph.is_graph_input(v) || graph.is_graph_output(v) || x.is_constant() || x.stored_in != kNoValue ||
          consumers[static_cast<size_t>(v)] != std::vector<int>{static_cast<int>(i)})
        continue;
      if (std::count(n.inputs.begin(), n.inputs.end(), v) != 1) continue;  // one slab per value
      const int p = producers[static_cast<size_t>(v)];
      if (p < 0) continue;
      const Node& producer = graph.nodes[static_cast<size_t>(p)];
      if (producer.outputs.empty() || producer.outputs[0] != v) continue;
      const OpDef* def = registry.find(producer.op_type, producer.domain);
      if (!def || !def->lower) continue;
      graph.value(v).stored_in = out;  // ask the producer's lowering with the placement set
      graph.value(v).stored_at = offset;
      Expected<Lowering> l = def->lower(producer, graph);
      if (!l || l->is_view || !l->strided_output) {
        graph.value(v).stored_in = kNoValue;
        graph.value(v).stored_at = 0;
        continue;
      }
      changed = true;
    }
  }
  return changed;
}

}  // namespace aotc
