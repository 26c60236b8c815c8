// patchify_conv: ViT's patch embedding - a Conv whose kernel equals its stride (no padding, no
// dilation, one group: the windows tile the image without overlap) followed by the flatten of its
// spatial dims - is a GEMM over the image's patches:
//   X [B,C,H,W] -Reshape-> [B,C,oh,kh,ow,kw] -Transpose(0,2,4,1,3,5)-> -Reshape-> [B*oh*ow, C*kh*kw]
//   Gemm(rows, W as [OC, C*kh*kw], bias, transB) -> [B*oh*ow, OC] -Reshape-> [B, oh*ow, OC]
//   -Transpose(0,2,1)-> [B, OC, oh*ow]   (the flatten's output)
// The patch gather becomes one strided copy (fuse_copy_chains), the GEMM runs on cuBLASLt with
// K = C*kh*kw (768 for 3 x 16 x 16) instead of a convolution over 3 channels padded for tensor
// cores (ViT-B/16 at batch 32: 432 us at 46 TFLOP/s, eighth session call 1), and the transpose
// back composes with the exporter's own flatten(2).transpose(1, 2) into a view. Exact: the same
// dot products. Only where the kernel covers at least 4 pixels and the conv output is read by
// nothing but that flatten (other layouts keep the convolution kernels).
#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {

Expected<bool> patchify_conv(Graph& graph) {
  const OpRegistry& registry = default_registry();
  bool changed = false;
  std::vector<int> producers = graph.producers();
  std::vector<std::vector<int>> consumers = graph.consumers();
  std::vector<Node> out;
  std::vector<char> drop(graph.nodes.size(), 0);
  std::vector<std::vector<Node>> insert_at(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& conv = graph.nodes[i];
    if (!conv.domain.empty() || conv.op_type != "Conv" || conv.outputs.size() != 1 || conv.inputs.size() < 2) continue;
    const Value& x = graph.value(conv.inputs[0]);
    const Value& w = graph.value(conv.inputs[1]);
    const ValueId bias = conv.input(2);
    if (x.shape.size() != 4 || !w.is_constant() || w.shape.size() != 4 || !dtype_is_float(x.dtype)) continue;
    if (bias != kNoValue && !graph.value(bias).is_constant()) continue;
    const int64_t b = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
    const int64_t oc = w.shape[0], kh = w.shape[2], kw = w.shape[3];
    const std::string pad = conv.attr_string("auto_pad", "NOTSET");
    const std::vector<int64_t> ks = conv.attr_ints("kernel_shape", {kh, kw});
    if (w.shape[1] != c || conv.attr_int("group", 1) != 1 || (pad != "NOTSET" && pad != "VALID")) continue;
    if (ks != std::vector<int64_t>{kh, kw} || conv.attr_ints("strides", {1, 1}) != std::vector<int64_t>{kh, kw}) continue;
    if (conv.attr_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) continue;
    bool zero_pads = true;
    for (int64_t p : conv.attr_ints("pads", {0, 0, 0, 0})) zero_pads = zero_pads && p == 0;
    if (!zero_pads || kh * kw < 4 || h % kh != 0 || wd % kw != 0 || b * c * h * wd == 0) continue;
    const int64_t oh = h / kh, ow = wd / kw, k = c * kh * kw;
    // x / w are references into graph.values, which the constants and values added below move.
    const std::shared_ptr<const Tensor> w_data = w.constant;
    const std::string w_name = w.name;
    // The only reader: a Reshape to [B, OC, oh*ow] (flatten(2)).
    const ValueId y = conv.outputs[0];
    if (graph.is_graph_output(y) || consumers[static_cast<size_t>(y)].size() != 1) continue;
    const int fi = consumers[static_cast<size_t>(y)][0];
    const Node& flat = graph.nodes[static_cast<size_t>(fi)];
    if (!flat.domain.empty() || flat.op_type != "Reshape" || flat.inputs[0] != y ||
        graph.value(flat.outputs[0]).shape != Shape{b, oc, oh * ow})
      continue;
    auto shape_const = [&](const std::string& name, std::vector<int64_t> v) {
      const int64_t n = static_cast<int64_t>(v.size());
      return graph.add_constant(graph.unique_name(conv.name + name), Tensor::from_int64s({n}, v));
    };
    auto value = [&](const std::string& name) { return graph.add_value(graph.unique_name(conv.name + name)); };
    std::vector<Node> nodes(6);
    const ValueId p6 = value("_patches6"), pt = value("_patches_t"), rows = value("_patch_rows"),
                  g = value("_patch_gemm"), g3 = value("_patch_tokens");
    nodes[0] = Node{conv.name + "_patches", "Reshape", "", {conv.inputs[0], shape_const("_p6", {b, c, oh, kh, ow, kw})}, {p6}, {}};
    nodes[1] = Node{conv.name + "_patch_order", "Transpose", "", {p6}, {pt}, {{"perm", Attribute::of_ints({0, 2, 4, 1, 3, 5})}}};
    nodes[2] = Node{conv.name + "_patch_rows", "Reshape", "", {pt, shape_const("_rows", {b * oh * ow, k})}, {rows}, {}};
    const ValueId wv = graph.add_constant(graph.unique_name(w_name + "_rows"), w_data->reshaped({oc, k}));
    nodes[3] = Node{conv.name, "Gemm", "", {rows, wv}, {g}, {{"transB", Attribute::of_int(1)}}};
    if (bias != kNoValue) nodes[3].inputs.push_back(bias);
    nodes[4] = Node{conv.name + "_tokens", "Reshape", "", {g, shape_const("_tok", {b, oh * ow, oc})}, {g3}, {}};
    nodes[5] = Node{conv.name + "_channels_first", "Transpose", "", {g3}, {flat.outputs[0]}, {{"perm", Attribute::of_ints({0, 2, 1})}}};
    Graph trial = graph;
    bool ok = true;
    for (Node& n : nodes) ok = ok && infer_node(n, trial, registry).is_ok();
    if (!ok || trial.value(flat.outputs[0]).shape != Shape{b, oc, oh * ow}) continue;
    for (Node& n : nodes) AOTC_RETURN_IF_ERROR(infer_node(n, graph, registry));
    insert_at[i] = std::move(nodes);
    drop[i] = 1;
    drop[static_cast<size_t>(fi)] = 1;
    changed = true;
  }
  if (!changed) return false;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (Node& n : insert_at[i]) out.push_back(std::move(n));
    if (!drop[i]) out.push_back(std::move(graph.nodes[i]));
  }
  graph.nodes = std::move(out);
  AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  return true;
}

}  // namespace aotc
