// slab_into_producer: a channel Concat (or aotc.SubsampleConcat) one of whose inputs is written in
// place by its producer (opt/concat_in_place) has its other slabs copied by slab kernels, one
// launch each. Where that producer's kernel can also copy one of those slabs (today the batch-1
// cluster split-K convolution, templates/conv_cluster_splitk.cuh slab_copy), it does, and the
// Concat's slab kernel for it disappears: ResNet's merged projections at batch 1 (h written in
// place by the block's 3x3, x copied by a 1.3-1.7 us slab kernel in each of the four downsampling
// blocks, docs/perf_notes.md v47).
// Mechanism, as data on one node: the Concat gets slab_copied = [k, j] (input k is copied by the
// producer of input j, which is written in place); its lowering skips input k, and the producer's
// lowering derives the rest from the Concat (source, destination, step, column: conv_nhwc.cc
// slab_of). The pass sets the attribute, asks the producer's lowering, and keeps it only where it
// answers Lowering::slab_copied (every other strategy refuses to be asked, so a later lowering
// cannot drop the copy silently).
// Ordering: the producer runs after the slab's input is written (its producer comes earlier in
// the node order, on the main lane or on a side lane joined before the producer runs), and the
// output's buffer is live from the in-place input's producer on (concat_in_place's plan). Runs
// after side_branches, whose lanes it reads and does not change.
// Must not fire: no in-place input, an input whose producer comes later or joins later, a
// constant or strided input, a lowering that cannot copy (another convolution strategy, alignments
// below 16 bytes).
#include "ir/op_registry.h"
#include "opt/passes.h"

namespace aotc {

Expected<bool> slab_into_producer(Graph& graph) {
  const OpRegistry& registry = default_registry();
  const std::vector<int> producers = graph.producers();
  const std::vector<int>& join = graph.side_join;
  // Node q's writes are complete when node p starts: q runs before p on the main lane, or on a
  // side lane that joins at or before p.
  auto done_before = [&](int q, int p) {
    if (q >= p) return false;
    if (join.empty()) return true;
    const int jq = join[static_cast<size_t>(q)];
    return jq < 0 ? join[static_cast<size_t>(p)] < 0 : jq <= p;
  };
  bool changed = false;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    const bool concat = n.op_type == "Concat" && n.domain.empty();
    const bool sub = n.op_type == "SubsampleConcat" && n.domain == "aotc";
    if ((!concat && !sub) || n.outputs.size() != 1 || n.outputs[0] == kNoValue || n.has_attr("slab_copied")) continue;
    const ValueId out = n.outputs[0];
    const Shape& y_shape = graph.value(out).shape;
    if (y_shape.size() != 4) continue;
    if (concat) {
      const int64_t axis = n.attr_int("axis", 0);
      if (axis != 3 && axis != -1) continue;
    }
    if (sub && n.attr_ints("steps").size() != n.inputs.size()) continue;
    // Each in-place input (j) whose producer is free to take a slab, in input order; the first whose
    // lowering can copy one of the other inputs does.
    bool done = false;
    for (size_t j = 0; j < n.inputs.size() && !done; ++j) {
      const ValueId h = n.inputs[j];
      if (h == kNoValue || graph.value(h).stored_in != out) continue;
      const int host = producers[static_cast<size_t>(h)];
      if (host < 0) continue;  // (h lives in this Concat only: its producer is asked once)
      const Node& producer = graph.nodes[static_cast<size_t>(host)];
      const OpDef* def = registry.find(producer.op_type, producer.domain);
      if (!def || !def->lower) continue;
      for (size_t k = 0; k < n.inputs.size() && !done; ++k) {
        const ValueId x = n.inputs[k];
        const Value& xv = graph.value(x);
        if (x == kNoValue || xv.stored_in == out || xv.numel() == 0 || xv.is_constant() || graph.row_stride(x) != 0)
          continue;
        const int px = producers[static_cast<size_t>(x)];
        if (px >= 0 ? !done_before(px, host) : !graph.is_graph_input(x)) continue;
        graph.nodes[i].attrs["slab_copied"] = Attribute::of_ints({static_cast<int64_t>(k), static_cast<int64_t>(j)});
        Expected<Lowering> l = def->lower(producer, graph);  // asked through the Concat's attribute
        done = l && l->slab_copied;
        if (!done) graph.nodes[i].attrs.erase("slab_copied");
      }
    }
    changed = changed || done;
  }
  return changed;
}

}  // namespace aotc
