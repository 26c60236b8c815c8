// pixel_conv_to_gemm: a Conv whose input has one pixel (every spatial dim 1) and whose kernel is
// 1 x 1 (no padding, one group: squeeze-excitation's two convolutions after the global pool, in
// EfficientNet, MobileNetV3, RegNet-Y) is a GEMM of the batch's rows against the filter:
//   X [B, C, 1, 1] -Reshape-> [B, C] -Gemm(W as [OC, C], bias, transB)-> [B, OC] -Reshape-> [B, OC, 1, 1]
// The reshapes are views, and in channels-last the pixel's channels are the same bytes, so no
// transpose appears either side. The GEMM then takes the GEMM lowering (the one-row GEMV at batch
// 1, cuBLASLt or the SIMT GEMM otherwise) instead of the convolution kernels, which tile output
// pixels: EfficientNet-B0's 672 -> 28 squeeze conv at batch 1 ran on one 256-thread block of the
// SIMT implicit GEMM (one output pixel) for 53 us (H200 trace, docs/perf_notes.md v65). The same
// dot products, so the same result up to summation order.
// Only where the convolution has no tensor-core implicit GEMM (conv_implicit_gemm_applies for the
// dtype the precision pass will give it: channels off the alignment, as SE's 28 or 10): a 1 x 1
// conv that has one runs as a pointwise GEMM already, with its residual Add in the epilogue (a
// ResNet at 32 x 32, whose last stage is one pixel, keeps its fused blocks).
// A unary epilogue activation that alone reads the conv's output (the SiLU after the squeeze, the
// Sigmoid after the excitation) moves before the reshape back, so fuse_epilogue finds it on the
// Gemm's output.
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/epilogue.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {

Expected<bool> pixel_conv_to_gemm(Graph& graph) {
  const OpRegistry& registry = default_registry();
  if (!registry.find("Gemm", "") || !registry.find("Reshape", "")) return false;
  bool changed = false;
  const std::vector<std::vector<int>> consumers = graph.consumers();
  std::vector<bool> moved(graph.nodes.size(), false);
  std::vector<std::vector<Node>> replace(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& conv = graph.nodes[i];
    if (!conv.domain.empty() || conv.op_type != "Conv" || conv.outputs.size() != 1 || conv.inputs.size() < 2 ||
        conv.inputs[0] == kNoValue || conv.inputs[1] == kNoValue)
      continue;
    const Value& x = graph.value(conv.inputs[0]);
    const Value& w = graph.value(conv.inputs[1]);
    const Value& y = graph.value(conv.outputs[0]);
    const ValueId bias = conv.input(2);
    const size_t rank = x.shape.size();
    if (rank < 3 || !dtype_is_float(x.dtype) || !w.is_constant() || w.shape.size() != rank || y.shape.size() != rank ||
        conv.attr_int("group", 1) != 1 || w.shape[1] != x.shape[1])
      continue;
    const std::string pad = conv.attr_string("auto_pad", "NOTSET");
    bool ok = pad == "NOTSET" || pad == "VALID";
    for (int64_t p : conv.attr_ints("pads", {})) ok = ok && p == 0;
    for (size_t d = 2; d < rank; ++d) ok = ok && x.shape[d] == 1 && w.shape[d] == 1 && y.shape[d] == 1;
    for (int64_t k : conv.attr_ints("kernel_shape", {})) ok = ok && k == 1;
    const int64_t b = x.shape[0], c = x.shape[1], oc = w.shape[0];
    ok = ok && b > 0 && c > 0 && oc > 0 && y.shape[0] == b && y.shape[1] == oc;
    if (ok && bias != kNoValue) ok = graph.value(bias).shape == Shape{oc};
    const DType planned = x.dtype == DType::kFloat32 ? graph.target.precision.dtype : x.dtype;
    if (!ok || (rank == 4 && conv_implicit_gemm_applies(graph.target, planned, 1, c, oc))) continue;
    // The activation to hoist: the sole reader of y, one the Gemm's epilogue may absorb, not moved yet.
    int act = graph.sole_reader(consumers, conv.outputs[0]);
    if (act >= 0) {
      const Node& a = graph.nodes[static_cast<size_t>(act)];
      if (!epilogue_may_absorb(graph, a, gemm_activation_changes_kernel(graph)) || a.outputs.size() != 1 || moved[act] ||
          !replace[static_cast<size_t>(act)].empty())
        act = -1;
    }
    // x / w / y are references into graph.values, which the constants and values added below move.
    const std::shared_ptr<const Tensor> w_data = w.constant;
    const std::string w_name = w.name;
    const ValueId out_id = conv.outputs[0];
    const Shape out_shape = y.shape;
    auto shape_const = [&](const std::string& suffix, const Shape& s) {
      return graph.add_constant(graph.unique_name(conv.name + suffix),
                                Tensor::from_int64s({static_cast<int64_t>(s.size())}, std::vector<int64_t>(s.begin(), s.end())));
    };
    const ValueId rows = graph.add_value(graph.unique_name(conv.name + "_rows"));
    const ValueId prod = graph.add_value(graph.unique_name(conv.name + "_gemm"));
    const ValueId wv = graph.add_constant(graph.unique_name(w_name + "_rows"), w_data->reshaped({oc, c}));
    std::vector<Node> repl(2);
    repl[0] = Node{conv.name + "_pixel_rows", "Reshape", "", {conv.inputs[0], shape_const("_rows_shape", {b, c})}, {rows}, {}};
    repl[1] = Node{conv.name, "Gemm", "", {rows, wv}, {prod}, {{"transB", Attribute::of_int(1)}}};
    if (bias != kNoValue) repl[1].inputs.push_back(bias);
    ValueId back_from = prod, back_to = out_id;
    if (act >= 0) {
      // Gemm -> activation on the rows -> reshape back into the activation's own output.
      Node a = graph.nodes[static_cast<size_t>(act)];
      back_to = a.outputs[0];
      back_from = graph.add_value(graph.unique_name(graph.value(back_to).name + "_rows"));
      a.inputs[0] = prod;
      a.outputs[0] = back_from;
      repl.push_back(std::move(a));
      moved[static_cast<size_t>(act)] = true;
    }
    const Shape back_shape = graph.value(back_to).shape;
    repl.push_back(Node{conv.name + "_pixel", "Reshape", "", {back_from, shape_const("_pixel_shape", back_shape)}, {back_to}, {}});
    for (Node& n : repl) AOTC_RETURN_IF_ERROR(infer_node(n, graph, registry));
    if (graph.value(back_to).shape != back_shape || back_shape != out_shape)
      return Status::error("node " + conv.name + " (Conv): pixel_conv_to_gemm's GEMM form has shape " +
                           shape_str(graph.value(back_to).shape) + ", the convolution " + shape_str(out_shape));
    replace[i] = std::move(repl);
    changed = true;
  }
  if (!changed) return false;
  std::vector<Node> out;
  out.reserve(graph.nodes.size() + 2);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (moved[i]) continue;  // now inside its convolution's replacement
    if (replace[i].empty()) {
      out.push_back(std::move(graph.nodes[i]));
    } else {
      for (Node& n : replace[i]) out.push_back(std::move(n));
    }
  }
  graph.nodes = std::move(out);
  return true;
}

}  // namespace aotc
