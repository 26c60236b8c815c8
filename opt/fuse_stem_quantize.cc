// fuse_stem_quantize: the stem + max pool (opt/fuse_stem_pool) whose pooled output only a
// per-tensor QuantizeLinear reads - a constant float32 scale and a constant int8 / uint8 zero
// point, float32 division - writes the quantized tensor itself, where the lowering runs it on
// sm_90a's wgmma stem kernel (templates/conv_stem_pool_wgmma_nhwc.cu.in; the lowering is asked).
// ResNet-50's int8 libraries otherwise quantize the stem's output in a kernel of their own (9.3 us
// at batch 32 on an H200, 12.8 MB of fp16 read and 6.4 MB written: docs/perf_notes.md v56), and
// the stem writes half the bytes. Exact: the kernel rounds each pooled value to its storage type
// and quantizes it as QuantizeLinear's kernel does (float division, round half to even, the
// type's saturation); the fused node's CPU reference is the two nodes' references in turn.
#include <optional>

#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"
#include "opt/passes.h"

namespace aotc {
namespace {

// The QuantizeLinear that the pass absorbs: input 0 is `v` (and no other input is), one output,
// per-tensor constant scale (float32) and zero point (int8 / uint8, the output's type), the
// default float32 division.
std::optional<AbsorbedQuantize> absorbable_quantize(const Graph& graph, const Node& q, ValueId v) {
  if (q.op_type != "QuantizeLinear" || !q.domain.empty() || q.outputs.size() != 1) return std::nullopt;
  if (q.inputs.size() != 3 || q.inputs[0] != v || q.inputs[1] == v || q.inputs[2] == v) return std::nullopt;
  if (q.attr_int("precision", 0) != 0 && q.attr_int("precision", 0) != static_cast<int64_t>(DType::kFloat32))
    return std::nullopt;
  if (q.attr_int("block_size", 0) != 0) return std::nullopt;
  const Value& s = graph.value(q.inputs[1]);
  const Value& z = graph.value(q.inputs[2]);
  const DType y = graph.value(q.outputs[0]).dtype;
  if (s.dtype != DType::kFloat32 || (y != DType::kInt8 && y != DType::kUInt8) || z.dtype != y) return std::nullopt;
  const auto scale = constant_scalar(graph, q, 1, 1.0), zero_point = constant_scalar(graph, q, 2, 0.0);
  if (!scale || !zero_point) return std::nullopt;
  return AbsorbedQuantize{static_cast<float>(*scale), static_cast<int64_t>(*zero_point), y};
}

bool lowers_to(const Expected<Lowering>& l, const std::string& template_name) {
  if (!l) return false;
  for (const LoweredStep& s : l->steps)
    if (s.kind == LoweredStep::Kind::kKernel && s.kernel.template_name == template_name) return true;
  return false;
}

}  // namespace

Expected<bool> fuse_stem_quantize(Graph& graph) {
  const std::vector<std::vector<int>> consumers = graph.consumers();
  bool changed = false;
  std::vector<bool> drop(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& c = graph.nodes[i];
    if (c.op_type != "FusedConv" || c.domain != "aotc" || !has_pool(c) || has_quantize(c)) continue;
    const ValueId v = c.outputs[0];
    const std::vector<int>& readers = consumers[static_cast<size_t>(v)];
    if (readers.size() != 1 || graph.is_graph_output(v)) continue;
    const size_t qi = static_cast<size_t>(readers[0]);
    const Node& q = graph.nodes[qi];
    const std::optional<AbsorbedQuantize> absorbed = absorbable_quantize(graph, q, v);
    if (!absorbed) continue;
    Node fused = c;
    store_quantize(fused, *absorbed);
    fused.outputs[0] = q.outputs[0];
    const OpDef* def = default_registry().find(fused.op_type, fused.domain);
    if (!def || !def->lower || !lowers_to(def->lower(fused, graph), "conv_stem_pool_wgmma_nhwc")) continue;
    const Shape quantized = graph.value(q.outputs[0]).shape;
    c = std::move(fused);
    AOTC_RETURN_IF_ERROR(def->infer(c, graph));
    if (graph.value(c.outputs[0]).shape != quantized)
      return node_error(c, "internal: the absorbed QuantizeLinear's shape " + shape_str(graph.value(c.outputs[0]).shape) +
                               " differs from its own " + shape_str(quantized));
    drop[qi] = true;
    changed = true;
  }
  if (changed) graph.remove_nodes(drop);
  return changed;
}

}  // namespace aotc
