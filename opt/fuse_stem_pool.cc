// fuse_stem_pool: a channels_last convolution that runs on the stem kernel (ir/ops/conv_configs.h:
// conv_stem_applies, its input packed to 4 channels by layout_nhwc) and whose output only a
// channels_last MaxPool reads (2-D, no dilation, no Indices output) absorbs the pool: the node
// becomes an aotc.FusedConv with attribute "pool" (ir/ops/epilogue.h) writing the pooled tensor,
// and lowers to templates/conv_stem_pool_nhwc.cu.in, so the full-resolution stem output (ResNet-50
// at batch 32: 51 MB written, then read by the pool) never reaches global memory. Exact: the
// kernel pools the conv outputs after rounding them to the storage type, as the two nodes did.
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"

namespace aotc {
namespace {

bool absorbable_pool(const Node& p) {
  if (p.op_type != "MaxPool" || !p.domain.empty() || !channels_last(p) || p.inputs.size() != 1) return false;
  if (p.outputs.size() > 1 && p.outputs[1] != kNoValue) return false;  // Indices
  for (int64_t d : p.attr_ints("dilations", {1, 1}))
    if (d != 1) return false;
  return p.attr_ints("kernel_shape", {}).size() == 2;
}

}  // namespace

Expected<bool> fuse_stem_pool(Graph& graph) {
  const std::vector<std::vector<int>> consumers = graph.consumers();
  bool changed = false;
  std::vector<bool> drop(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& c = graph.nodes[i];
    if (has_pool(c) || !node_runs_on_stem_kernel(graph, c)) continue;
    const ValueId v = c.outputs[0];
    const std::vector<int>& readers = consumers[static_cast<size_t>(v)];
    if (readers.size() != 1 || graph.is_graph_output(v)) continue;
    const size_t pi = static_cast<size_t>(readers[0]);
    const Node& p = graph.nodes[pi];
    if (!absorbable_pool(p)) continue;
    Node pool;
    pool.op_type = p.op_type;
    for (const auto& kv : p.attrs)
      if (kv.first != "channels_last") pool.attrs[kv.first] = kv.second;
    Node fused = c;
    if (fused.op_type == "Conv") {
      fused.op_type = "FusedConv";
      fused.domain = "aotc";
      fused.inputs.resize(kConvResidualInput + 1, kNoValue);
    }
    store_pool(fused, pool);
    fused.outputs[0] = p.outputs[0];
    const Shape pooled = graph.value(p.outputs[0]).shape;
    c = std::move(fused);
    AOTC_RETURN_IF_ERROR(default_registry().find(c.op_type, c.domain)->infer(c, graph));
    if (graph.value(c.outputs[0]).shape != pooled)
      return node_error(c, "internal: the absorbed pool's shape " + shape_str(graph.value(c.outputs[0]).shape) +
                               " differs from the MaxPool's " + shape_str(pooled));
    drop[pi] = true;
    changed = true;
  }
  if (changed) graph.remove_nodes(drop);
  return changed;
}

}  // namespace aotc
