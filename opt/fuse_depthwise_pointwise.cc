// fuse_depthwise_pointwise: a channels_last depthwise convolution whose output only a pointwise
// convolution reads (1x1 window, stride 1, no padding, one group: MobileNet's depthwise ->
// projection pair) becomes one aotc.DepthwisePointwise node (ir/ops/conv_dw_pw.cc), which runs as
// one kernel (templates/conv_dw_pw_nhwc.cu.in), where ir/ops/conv_configs.h dw_pw_fuses says it
// measured faster (16-bit, sm_80+, C <= 256 and CO multiples of 8 in one column tile, a small
// depthwise output or stride 2 with C <= 128). The depthwise output - the block's expanded
// tensor - is then never stored and read back, and the pair is one launch. The depthwise filter
// is stored tap-major ([KH, KW, C]: one 16-byte load gives 8 channels of a tap). Exact: the
// kernel rounds the depthwise output to the storage type before the pointwise product, as the
// stored tensor was. Runs after clip_into_depthwise (the depthwise node's input clamp) and before
// concat_in_place.
#include <cstring>

#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"

namespace aotc {
namespace {

// Attributes the depthwise conv may carry: the window's, its absorbed activation, the layout flag
// and the input clamp. Anything else keeps the pair apart.
bool known_depthwise_attributes(const Node& n) {
  for (const auto& kv : n.attrs) {
    const std::string& a = kv.first;
    if (a == "channels_last" || a == "strides" || a == "pads" || a == "dilations" || a == "group" ||
        a == "kernel_shape" || a == "auto_pad" || a == "activation" || a.rfind("act.", 0) == 0 || a == "input_max")
      continue;
    return false;
  }
  return true;
}

// A 1x1, stride-1, unpadded, one-group channels_last convolution with its [K, 1, 1, C] filter.
bool is_pointwise(const Graph& graph, const Node& p) {
  if (!plain_pointwise_conv(p, true)) return false;
  const Shape& w = graph.value(p.inputs[1]).shape;
  return w.size() == 4 && w[1] == 1 && w[2] == 1;
}

// A 2-D channels_last depthwise convolution (group = C = output channels) with a constant filter
// and no residual.
bool is_depthwise(const Graph& graph, const Node& d) {
  if (!is_conv_node(d) || !channels_last(d) || d.outputs.size() != 1 || d.inputs.size() < 2 ||
      !known_depthwise_attributes(d))  // an absorbed pool's attributes are not among them
    return false;
  if (d.input(kConvResidualInput) != kNoValue) return false;
  const Value& x = graph.value(d.inputs[0]);
  const Value& w = graph.value(d.inputs[1]);
  if (x.shape.size() != 4 || w.shape.size() != 4 || !w.is_constant()) return false;
  const int64_t c = x.shape[3];
  return d.attr_int("group", 1) == c && w.shape[0] == c && w.shape[3] == 1;
}

// [C, KH, KW, 1] (KRSC) -> [KH, KW, C].
Tensor tap_major(const Tensor& w) {
  const int64_t c = w.shape()[0], taps = w.shape()[1] * w.shape()[2];
  const int64_t es = dtype_size(w.dtype());
  Tensor t(w.dtype(), {w.shape()[1], w.shape()[2], c});
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t k = 0; k < taps; ++k)
      std::memcpy(t.raw() + (k * c + ch) * es, w.raw() + (ch * taps + k) * es, static_cast<size_t>(es));
  return t;
}

}  // namespace

Expected<bool> fuse_depthwise_pointwise(Graph& graph) {
  const std::vector<std::vector<int>> consumers = graph.consumers();
  std::vector<int> producer(graph.values.size(), -1);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (ValueId v : graph.nodes[i].outputs)
      if (v != kNoValue) producer[static_cast<size_t>(v)] = static_cast<int>(i);
  bool changed = false;
  std::vector<bool> drop(graph.nodes.size(), false);
  for (size_t pi = 0; pi < graph.nodes.size(); ++pi) {
    if (!is_pointwise(graph, graph.nodes[pi])) continue;
    const ValueId mid = graph.nodes[pi].inputs[0];
    const int di = producer[static_cast<size_t>(mid)];
    if (di < 0 || drop[static_cast<size_t>(di)] || graph.sole_reader(consumers, mid) != static_cast<int>(pi)) continue;
    bool reads_mid_again = false;  // e.g. as its residual: the fused node would read a dropped value
    for (size_t k = 1; k < graph.nodes[pi].inputs.size(); ++k) reads_mid_again |= graph.nodes[pi].inputs[k] == mid;
    if (reads_mid_again) continue;
    const Node& d = graph.nodes[static_cast<size_t>(di)];
    if (!is_depthwise(graph, d)) continue;
    const Value& x = graph.value(d.inputs[0]);
    const Value& m = graph.value(mid);
    if (m.dtype != x.dtype || m.shape.size() != 4) continue;
    const int64_t c = x.shape[3], co = graph.value(graph.nodes[pi].inputs[1]).shape[0];
    const Shape& wd = graph.value(d.inputs[1]).shape;  // KRSC [C, KH, KW, 1]
    const std::vector<int64_t> st = d.attr_ints("strides", {1, 1}), dil = d.attr_ints("dilations", {1, 1});
    if (st.size() != 2 || dil.size() != 2) continue;
    const DwPwProblem prob{m.shape[0], m.shape[1], m.shape[2], wd[1], wd[2], st[0], st[1], dil[0], dil[1]};
    if (!dw_pw_fuses(graph.target, x.dtype, c, co, prob)) continue;
    const Node& p = graph.nodes[pi];
    Node fused;
    fused.name = p.name;
    fused.op_type = "DepthwisePointwise";
    fused.domain = "aotc";
    store_depthwise(fused, d);
    fused.attrs["channels_last"] = Attribute::of_int(1);
    if (has_activation(p)) store_activation(fused, load_activation(p));
    const ValueId wdw = graph.add_constant(graph.unique_name(graph.value(d.inputs[1]).name + "_taps"),
                                           tap_major(*graph.value(d.inputs[1]).constant));
    fused.inputs = {d.inputs[0], wdw, d.input(2), p.inputs[1], p.input(2), p.input(kConvResidualInput)};
    fused.outputs = p.outputs;
    const Shape out = graph.value(p.outputs[0]).shape;
    graph.nodes[pi] = std::move(fused);
    AOTC_RETURN_IF_ERROR(default_registry().find("DepthwisePointwise", "aotc")->infer(graph.nodes[pi], graph));
    if (graph.value(graph.nodes[pi].outputs[0]).shape != out)
      return node_error(graph.nodes[pi], "internal: the fused depthwise + pointwise output " +
                                             shape_str(graph.value(graph.nodes[pi].outputs[0]).shape) +
                                             " differs from the pointwise convolution's " + shape_str(out));
    drop[static_cast<size_t>(di)] = true;
    changed = true;
  }
  if (changed) graph.remove_nodes(drop);
  return changed;
}

}  // namespace aotc
