// clip_into_depthwise: in MobileNet-style blocks a pointwise expansion conv ends in ReLU6
// (Clip 0..M) and feeds only a depthwise conv. clip_into_pool (same file): the network's last 1x1
// conv, whose ReLU6 only the channels_last GlobalAveragePool before the classifier reads; the pool
// clamps the same way. cuBLASLt, which runs pointwise convolutions
// (ir/ops/conv_configs.h: conv_pointwise_gemm_applies), has a ReLU epilogue but no clamp, so the
// Clip would keep the expansion on the slower CUTLASS kernel. Clip(0, M)(v) = min(Relu(v), M): the
// producer keeps Relu (cuBLASLt's epilogue) and the depthwise conv applies min(., M) to every
// input element it reads (attribute input_max; zero padding is unchanged by it). Exact: M is
// applied to the stored (rounded) value, and rounding is monotonic, so min(round(r), M) equals
// round(min(r, M)) for any M the storage type holds exactly; the pass requires that.
#include <cmath>
#include <map>

#include "ir/ops/conv_nhwc.h"
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"

namespace aotc {
namespace {

bool is_nhwc_conv(const Node& n) { return is_conv_node(n) && channels_last(n); }

// M when `n` ends in Clip(min = 0, max = M) with a finite M > 0 that `t` represents exactly.
bool relu_clip_bound(const Node& n, DType t, double* m) {
  if (!has_activation(n)) return false;
  const Node act = load_activation(n);
  if (act.op_type != "Clip" || !act.has_attr("min") || !act.has_attr("max")) return false;
  const double lo = act.attr_float("min", -1.0f), hi = act.attr_float("max", 0.0f);
  if (lo != 0.0 || !(hi > 0.0) || !std::isfinite(hi)) return false;
  Tensor probe(t, {1});
  probe.set(0, hi);
  if (probe.get(0) != hi) return false;
  *m = hi;
  return true;
}

}  // namespace

namespace {

// Splits the ReLU6 of pointwise convs read only by a depthwise conv (`pool` false) or by a
// channels_last GlobalAveragePool (`pool` true).
Expected<bool> split_relu6(Graph& graph, bool to_pool) {
  std::map<ValueId, int> readers;
  std::map<ValueId, int> reader_node;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (ValueId v : graph.nodes[i].inputs)
      if (v != kNoValue) {
        ++readers[v];
        reader_node[v] = static_cast<int>(i);
      }
  bool changed = false;
  for (Node& p : graph.nodes) {
    if (!is_nhwc_conv(p) || p.outputs.size() != 1) continue;
    const ValueId v = p.outputs[0];
    const Value& out = graph.value(v);
    double m = 0;
    if (!relu_clip_bound(p, out.dtype, &m) || readers[v] != 1 || graph.is_graph_output(v)) continue;
    Node& d = graph.nodes[static_cast<size_t>(reader_node[v])];
    if (d.inputs.empty() || d.inputs[0] != v || d.has_attr("input_max")) continue;
    // The reader: a depthwise NHWC conv, or a channels_last GlobalAveragePool (MobileNetV2's last
    // 1x1 conv feeds the classifier's pool).
    const bool pool = d.op_type == "GlobalAveragePool" && d.domain.empty() && channels_last(d);
    if (pool != to_pool) continue;
    if (!pool) {
      if (!is_nhwc_conv(d)) continue;
      const Shape& dw = graph.value(d.input(1)).shape;  // KRSC [C, R, S, 1] for depthwise
      const int64_t channels = out.shape.size() == 4 ? out.shape[3] : 0;
      if (dw.size() != 4 || d.attr_int("group", 1) != channels || dw[0] != channels || dw[3] != 1) continue;
    }
    // Only worth it when the producer then runs on cuBLASLt.
    const Shape& pw = graph.value(p.input(1)).shape;  // KRSC [K, R, S, C]
    const Shape& px = graph.value(p.inputs[0]).shape;
    std::vector<int64_t> pads = p.attr_ints("pads", {0, 0, 0, 0});
    if (pw.size() != 4 || px.size() != 4 ||
        !conv_pointwise_gemm_applies(graph.target, out.dtype, p.attr_int("group", 1), px[3], pw[0], {pw[1], pw[2]},
                                     p.attr_ints("strides", {1, 1}), pads, /*relu_or_none=*/true))
      continue;
    for (auto it = p.attrs.begin(); it != p.attrs.end();)
      it = it->first.rfind("act.", 0) == 0 ? p.attrs.erase(it) : std::next(it);
    Node relu;
    relu.op_type = "Relu";
    store_activation(p, relu);
    d.attrs["input_max"] = Attribute::of_float(static_cast<float>(m));
    changed = true;
  }
  return changed;
}

}  // namespace

Expected<bool> clip_into_depthwise(Graph& graph) { return split_relu6(graph, false); }
Expected<bool> clip_into_pool(Graph& graph) { return split_relu6(graph, true); }

}  // namespace aotc
