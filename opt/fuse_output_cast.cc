// fuse_output_cast: a 16-bit Gemm (or aotc.FusedGemm with nothing but the product) whose result
// is only converted to float32 - through reshape-like views, typically the model's float32 output
// after the precision pass - writes float32 itself: aotc.FusedGemm {output_dtype = float,
// output_shape = the Cast's shape} producing the Cast's output value directly (cuBLASLt with
// 16-bit A/B and a float32 D: the fp32 accumulator rounded once instead of twice, and no
// conversion kernel re-reading the result). Only where N is a multiple of 8 (LLaMA's 32000-word
// head): with an odd N (GPT-2's 50257, padded by pad_gemm_n) cuBLASLt writing the unaligned float32
// rows itself took 2.75 ms at batch 32 against 0.51 ms for the padded fp16 GEMM + 0.67 ms for the
// Slice + Cast copy (device call 1 of the eighth session), so those keep the copy.
#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"

namespace aotc {
namespace {

// The Gemm can write fp32 D with cuBLASLt alone: no C / residual / activation (their types would
// have to be D's), 2 inputs present.
bool plain_product(const Node& n) {
  const bool gemm = n.domain.empty() && n.op_type == "Gemm";
  const bool fused = n.domain == "aotc" && n.op_type == "FusedGemm";
  if (!gemm && !fused) return false;
  if (n.num_present_inputs() != 2 || n.outputs.size() != 1) return false;
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
    if (!ok || drop[static_cast<size_t>(p)] || !plain_product(graph.nodes[static_cast<size_t>(p)])) continue;
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
    if (!registry.find("FusedGemm", "aotc")->infer(fused, graph).is_ok()) continue;
    graph.nodes[static_cast<size_t>(p)] = std::move(fused);
    for (int c : chain) drop[static_cast<size_t>(c)] = 1;
    changed = true;
  }
  if (!changed) return false;
  std::vector<Node> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
  AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  return true;
}

}  // namespace aotc
