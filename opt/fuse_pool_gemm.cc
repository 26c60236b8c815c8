// fuse_pool_gemm: the head of a batch-1 CNN - a channels_last GlobalAveragePool of [1, H, W, C]
// whose output only a Gemm / aotc.FusedGemm reads (through views: the [1, 1, 1, C] row reshaped to
// [1, C]) - becomes one aotc.PoolGemm node (ir/ops/pool_gemm.cc) where its kernel applies
// (ir/ops/conv_configs.h pool_gemm_applies: --pool-gemm on, every target sm_90+, 16-bit, the GEMV's
// shape: transB, a bias row). One launch instead of two (templates/pool_gemv_cluster.cu.in), bit
// for bit the same: its reference is the two nodes' references in order. After fuse_output_cast
// (the GEMM's float output) and the other Gemm rewrites.
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "opt/passes.h"

namespace aotc {

Expected<bool> fuse_pool_gemm(Graph& graph) {
  if (!graph.target.pool_gemm) return false;
  const OpRegistry& registry = default_registry();
  if (!registry.find("PoolGemm", "aotc")) return false;
  const std::vector<int> producers = graph.producers();
  const std::vector<std::vector<int>> consumers = graph.consumers();
  auto only_reader = [&](ValueId v, size_t reader) {
    const std::vector<int>& r = consumers[static_cast<size_t>(v)];
    return r.size() == 1 && static_cast<size_t>(r[0]) == reader && !graph.is_graph_output(v);
  };
  bool changed = false;
  std::vector<bool> drop(graph.nodes.size(), false);
  for (size_t gi = 0; gi < graph.nodes.size(); ++gi) {
    const Node& g = graph.nodes[gi];
    const bool gemm = (g.domain.empty() && g.op_type == "Gemm") || (g.domain == "aotc" && g.op_type == "FusedGemm");
    if (!gemm || g.inputs.size() < 2 || (g.inputs.size() > 3 && g.inputs[3] != kNoValue)) continue;
    // Back from A through views, each read only by the next step, to the pool.
    std::vector<size_t> chain;
    size_t reader = gi;
    ValueId v = g.inputs[0];
    int p = producers[static_cast<size_t>(v)];
    while (p >= 0 && only_reader(v, reader) && is_view_node(graph.nodes[static_cast<size_t>(p)])) {
      chain.push_back(static_cast<size_t>(p));
      reader = static_cast<size_t>(p);
      v = graph.nodes[reader].inputs[0];
      p = producers[static_cast<size_t>(v)];
    }
    if (p < 0 || !only_reader(v, reader)) continue;
    const Node& pool = graph.nodes[static_cast<size_t>(p)];
    if (pool.op_type != "GlobalAveragePool" || !pool.domain.empty() || !channels_last(pool)) continue;
    const Value& x = graph.value(pool.inputs[0]);
    const Value& a = graph.value(g.inputs[0]);
    if (x.shape.size() != 4 || x.shape[0] != 1 || a.shape != Shape{1, x.shape[3]}) continue;
    Node fused = g;
    fused.op_type = "PoolGemm";
    fused.domain = "aotc";
    fused.inputs.resize(3, kNoValue);
    fused.inputs[0] = pool.inputs[0];
    if (pool.has_attr("input_max")) fused.attrs["pool_input_max"] = pool.attrs.at("input_max");
    const Value before = graph.value(g.outputs[0]);
    if (!registry.find("PoolGemm", "aotc")->infer(fused, graph).is_ok() || graph.value(g.outputs[0]).dtype != before.dtype ||
        graph.value(g.outputs[0]).shape != before.shape || !registry.find("PoolGemm", "aotc")->lower(fused, graph).is_ok()) {
      graph.value(g.outputs[0]) = before;  // infer() may have set it; the Gemm stays
      continue;
    }
    graph.nodes[gi] = std::move(fused);
    drop[static_cast<size_t>(p)] = true;
    for (size_t c : chain) drop[c] = true;
    changed = true;
  }
  if (changed) graph.remove_nodes(drop);
  return changed;
}

}  // namespace aotc
