// fuse_pointwise_pair: a channels_last pointwise convolution A (1x1, stride 1, unpadded, one group;
// bias, residual, activation allowed) and a pointwise convolution B that reads A's output as its
// input 0 (no residual, nothing else of A's output) become one aotc.PointwisePair node
// (ir/ops/conv_pw_pair.cc) producing both outputs, which runs as one cluster kernel
// (templates/conv_pw_pair_nhwc.cu.in) where ir/ops/conv_configs.h pw_pair_config has a
// configuration: ResNet's block output (conv3 + residual) and the next block's conv1 at batch 1,
// two launch-bound GEMMs that become one launch, B reading A's output from shared memory. A's
// output keeps its other readers (the next residual). Exact: the kernel rounds A's output to the
// storage type before B's product, as the stored tensor was.
// Must not fire: B with a residual, a window, stride, padding, group or other attribute; B reading
// A's output twice; A or B with a non-constant filter or bias; A already part of another fusion
// (an absorbed pool or depthwise: their attributes); different dtypes; 32-bit types; a target or
// problem without a configuration (sm_87 in the --arch list, a batch whose tiles need more than
// one wave of clusters, shares that do not fit in shared memory).
// Runs after the projection merges (the merged conv3 may be A) and before concat_in_place.
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"

namespace aotc {
namespace {

// A pointwise conv with a constant [K, 1, 1, C] filter and a constant (or no) bias.
bool constant_pointwise(const Graph& graph, const Node& p) {
  if (!plain_pointwise_conv(p, true)) return false;
  const Value& w = graph.value(p.inputs[1]);
  if (!w.is_constant() || w.shape.size() != 4 || w.shape[1] != 1 || w.shape[2] != 1) return false;
  return p.input(2) == kNoValue || graph.value(p.input(2)).is_constant();
}

}  // namespace

Expected<bool> fuse_pointwise_pair(Graph& graph) {
  const std::vector<std::vector<int>> consumers = graph.consumers();
  bool changed = false;
  std::vector<bool> drop(graph.nodes.size(), false), fused(graph.nodes.size(), false);
  for (size_t ai = 0; ai < graph.nodes.size(); ++ai) {
    if (drop[ai] || fused[ai] || !constant_pointwise(graph, graph.nodes[ai])) continue;
    const Node& a = graph.nodes[ai];
    const ValueId y1 = a.outputs[0];
    if (y1 == kNoValue) continue;
    const Value& xv = graph.value(a.inputs[0]);
    const Value& yv = graph.value(y1);
    if (xv.dtype != yv.dtype || xv.shape.size() != 4 || yv.shape.size() != 4) continue;
    int bi = -1;
    for (int c : consumers[static_cast<size_t>(y1)]) {
      const Node& b = graph.nodes[static_cast<size_t>(c)];
      if (static_cast<size_t>(c) <= ai || drop[static_cast<size_t>(c)] || fused[static_cast<size_t>(c)]) continue;
      if (!constant_pointwise(graph, b) || b.inputs[0] != y1 || b.input(kConvResidualInput) != kNoValue) continue;
      bool again = false;
      for (size_t k = 1; k < b.inputs.size(); ++k) again |= b.inputs[k] == y1;
      if (again || graph.value(b.outputs[0]).dtype != yv.dtype) continue;
      bi = c;
      break;
    }
    if (bi < 0) continue;
    const Node& b = graph.nodes[static_cast<size_t>(bi)];
    const int64_t m = yv.shape[0] * yv.shape[1] * yv.shape[2], k1 = xv.shape[3], n1 = yv.shape[3];
    const int64_t n2 = graph.value(b.inputs[1]).shape[0];
    if (!pw_pair_config(graph.target, yv.dtype, m, k1, n1, n2)) continue;
    Node pair;
    pair.name = a.name;
    pair.op_type = "PointwisePair";
    pair.domain = "aotc";
    pair.attrs = a.attrs;
    pair.attrs["channels_last"] = Attribute::of_int(1);
    store_next(pair, b);
    pair.inputs = {a.inputs[0], a.inputs[1], a.input(2), a.input(kConvResidualInput), b.inputs[1], b.input(2)};
    pair.outputs = {y1, b.outputs[0]};
    const Shape s1 = yv.shape, s2 = graph.value(b.outputs[0]).shape;
    graph.nodes[ai] = std::move(pair);
    AOTC_RETURN_IF_ERROR(default_registry().find("PointwisePair", "aotc")->infer(graph.nodes[ai], graph));
    if (graph.value(graph.nodes[ai].outputs[0]).shape != s1 || graph.value(graph.nodes[ai].outputs[1]).shape != s2)
      return node_error(graph.nodes[ai], "internal: the pointwise pair's outputs differ from the two convolutions'");
    fused[ai] = true;
    drop[static_cast<size_t>(bi)] = true;
    changed = true;
  }
  if (changed) graph.remove_nodes(drop);
  return changed;
}

}  // namespace aotc
