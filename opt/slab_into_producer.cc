// slab_into_producer: a channel Concat (or aotc.SubsampleConcat) one of whose inputs is written in
// place by its producer (opt/concat_in_place) has its other slabs copied by slab kernels, one
// launch each. Where that producer's kernel can also copy one of those slabs (today the batch-1
// cluster split-K convolution, templates/conv_cluster_splitk.cuh slab_copy), it does, and the
// Concat's slab kernel for it disappears: ResNet's merged projections at batch 1 (h written in
// place by the block's 3x3, x copied by a 1.3-1.7 us slab kernel in each of the four downsampling
// blocks, docs/perf_notes.md v47).
// Mechanism, as data on the nodes: the producer gets slab_src / slab_dst (the value names of the
// slab's input and of the Concat's output), slab_step (the input's pixel step; 1 for Concat) and
// slab_offset (its first column in the output's rows); the Concat gets slab_copied (the input
// indices copied elsewhere), which its lowering skips. The pass asks the producer's lowering with
// the attributes set and keeps them only where it answers Lowering::slab_copied (every other
// strategy refuses them, so a later lowering cannot drop the copy silently).
// Ordering: the producer runs after the slab's input is written (its producer comes earlier in
// the node order, on the main lane or on a side lane joined before the producer runs), and the
// output's buffer is live from the in-place input's producer on (concat_in_place's plan). Runs
// after side_branches, whose lanes it reads and does not change.
// Must not fire: no in-place input, an input whose producer comes later or joins later, a
// constant or strided input, a producer that already copies a slab, a lowering that cannot copy
// (another convolution strategy, alignments below 16 bytes).
#include <algorithm>

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
    const std::vector<int64_t> steps = sub ? n.attr_ints("steps") : std::vector<int64_t>(n.inputs.size(), 1);
    if (steps.size() != n.inputs.size()) continue;
    // Each producer of an in-place input that is free to take a slab, in input order; the first
    // that can copy one of the other inputs does.
    std::vector<int> hosts;
    for (const ValueId v : n.inputs) {
      if (v == kNoValue || graph.value(v).stored_in != out) continue;
      const int p = producers[static_cast<size_t>(v)];
      if (p >= 0 && !graph.nodes[static_cast<size_t>(p)].has_attr("slab_src")) hosts.push_back(p);
    }
    bool done = false;
    for (size_t h = 0; h < hosts.size() && !done; ++h) {
      const int host = hosts[h];
      Node& producer = graph.nodes[static_cast<size_t>(host)];
      const OpDef* def = registry.find(producer.op_type, producer.domain);
      if (!def || !def->lower) continue;
      int64_t offset = 0;
      for (size_t k = 0; k < n.inputs.size() && !done; offset += graph.value(n.inputs[k]).shape.back(), ++k) {
        const ValueId x = n.inputs[k];
        const Value& xv = graph.value(x);
        if (xv.stored_in == out || xv.numel() == 0 || xv.is_constant() || graph.row_stride(x) != 0 || xv.name.empty() ||
            graph.find_value(xv.name) != x || graph.value(out).name.empty() ||
            graph.find_value(graph.value(out).name) != out)
          continue;
        const int px = producers[static_cast<size_t>(x)];
        if (px >= 0 ? !done_before(px, host) : !graph.is_graph_input(x)) continue;
        producer.attrs["slab_src"] = Attribute::of_string(xv.name);
        producer.attrs["slab_dst"] = Attribute::of_string(graph.value(out).name);
        producer.attrs["slab_step"] = Attribute::of_int(steps[k]);
        producer.attrs["slab_offset"] = Attribute::of_int(offset);
        Expected<Lowering> l = def->lower(producer, graph);
        if (l && l->slab_copied) {
          graph.nodes[i].attrs["slab_copied"] = Attribute::of_ints({static_cast<int64_t>(k)});
          changed = done = true;
        } else {
          for (const char* a : {"slab_src", "slab_dst", "slab_step", "slab_offset"}) producer.attrs.erase(a);
        }
      }
    }
  }
  return changed;
}

}  // namespace aotc
