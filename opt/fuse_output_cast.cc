// fuse_output_cast: a 16-bit Gemm (or aotc.FusedGemm with nothing but the product) whose result
// is only converted to float32 - through reshape-like views, typically the model's float32 output
// after the precision pass - writes float32 itself: aotc.FusedGemm {output_dtype = float,
// output_shape = the Cast's shape} producing the Cast's output value directly (cuBLASLt with
// 16-bit A/B and a float32 D: the fp32 accumulator rounded once instead of twice, and no
// conversion kernel re-reading the result). A constant bias row (Gemm's C of shape [N] or [1, N]
// with beta 1: a classifier's FC) comes along converted to float32 at compile time, since
// cuBLASLt's bias epilogue reads the bias in D's type (ResNet-50 / MobileNetV2: one launch less a
// run). Only where N is a multiple of 8 (LLaMA's 32000-word
// head): with an odd N (GPT-2's 50257, padded by pad_gemm_n) cuBLASLt writing the unaligned float32
// rows itself took 2.75 ms at batch 32 against 0.51 ms for the padded fp16 GEMM + 0.67 ms for the
// Slice + Cast copy (device call 1 of the eighth session), so those keep the copy.
#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"

namespace aotc {
namespace {

// A constant row vector [N] / [1, N] added with beta 1: what cuBLASLt's bias epilogue adds.
bool constant_bias_row(const Graph& graph, const Node& n) {
  const ValueId c = n.input(2);
  if (c == kNoValue || !graph.value(c).is_constant() || n.attr_float("beta", 1.0f) != 1.0f) return false;
  const Shape& cs = graph.value(c).shape;
  const Shape& b = graph.value(n.inputs[1]).shape;
  if (b.size() != 2) return false;
  const int64_t cols = n.attr_int("transB", 0) ? b[0] : b[1];
  return cs == Shape{cols} || cs == Shape{1, cols};
}

// The Gemm can write fp32 D with cuBLASLt alone: no residual or activation and no C other than a
// constant bias row (their types would have to be D's; the bias is converted).
bool plain_product(const Graph& graph, const Node& n) {
  const bool gemm = n.domain.empty() && n.op_type == "Gemm";
  const bool fused = n.domain == "aotc" && n.op_type == "FusedGemm";
  if (!gemm && !fused) return false;
  if (n.outputs.size() != 1 || n.input(0) == kNoValue || n.input(1) == kNoValue) return false;
  const int present = n.num_present_inputs();
  if (present != 2 && !(present == 3 && constant_bias_row(graph, n))) return false;
  if (fused && (has_activation(n) || n.has_attr("output_dtype") || n.has_attr("output_shape"))) return false;
  return true;
}

}  // namespace

Expected<bool> fuse_output_cast(Graph& graph) {
  const OpRegistry& registry = default_registry();
  bool changed = false;
  std::vector<int> producers = graph.producers();
  std::vector<std::vector<int>> consumers = graph.consumers();
  std::vector<char> drop(graph.nodes.size(), 0);
  bool added = false;  // a float32 bias constant was made (unused if its Gemm was then kept)
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& cast = graph.nodes[i];
    if (!cast.domain.empty() || cast.op_type != "Cast" || cast.inputs.size() != 1 || cast.outputs.size() != 1 ||
        cast.attr_int("to", 0) != static_cast<int64_t>(DType::kFloat32))
      continue;
    // Walk back through views read only by the next node of the chain.
    std::vector<int> chain = {static_cast<int>(i)};
    ValueId x = cast.inputs[0];
    int p = producers[static_cast<size_t>(x)];
    auto sole = [&](ValueId v, int reader) {
      const auto& r = consumers[static_cast<size_t>(v)];
      return !graph.is_graph_output(v) && r.size() == 1 && r[0] == reader;
    };
    bool ok = p >= 0 && sole(x, static_cast<int>(i));
    while (ok && is_view_node(graph.nodes[static_cast<size_t>(p)])) {
      const Node& v = graph.nodes[static_cast<size_t>(p)];
      chain.push_back(p);
      x = v.inputs[0];
      ok = x != kNoValue && sole(x, p);
      p = ok ? producers[static_cast<size_t>(x)] : -1;
      ok = ok && p >= 0;
    }
    if (!ok || drop[static_cast<size_t>(p)] || !plain_product(graph, graph.nodes[static_cast<size_t>(p)])) continue;
    const DType t = graph.value(x).dtype;
    if (t != DType::kFloat16 && t != DType::kBFloat16) continue;
    const Shape& ys = graph.value(x).shape;
    if (ys.size() != 2 || ys[1] % 8 != 0) continue;  // aligned rows only (see above)
    Node fused = graph.nodes[static_cast<size_t>(p)];
    fused.domain = "aotc";
    fused.op_type = "FusedGemm";
    fused.attrs["output_dtype"] = Attribute::of_int(static_cast<int64_t>(DType::kFloat32));
    const Value& out = graph.value(cast.outputs[0]);
    if (out.shape != graph.value(x).shape) fused.attrs["output_shape"] = Attribute::of_ints(out.shape);
    fused.outputs = {cast.outputs[0]};
    if (fused.input(2) != kNoValue) {  // the bias row, in float32 (exact: a 16-bit value widens)
      const ValueId c = fused.inputs[2];
      Tensor wide = convert_tensor(*graph.value(c).constant, DType::kFloat32);
      fused.inputs[2] = graph.add_constant(graph.unique_name(graph.value(c).name + "_float"), std::move(wide));
      added = true;
    }
    if (!registry.find("FusedGemm", "aotc")->infer(fused, graph).is_ok()) continue;
    graph.nodes[static_cast<size_t>(p)] = std::move(fused);
    for (int c : chain) drop[static_cast<size_t>(c)] = 1;
    changed = true;
  }
  if (!changed) {
    if (added) AOTC_RETURN_IF_ERROR(dead_code(graph).status());
    return false;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
  AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  return true;
}

}  // namespace aotc
