// Constant folding through the CPU reference: a node whose inputs are all constants is evaluated
// at compile time and its outputs become constants (the weight blob holds them). Shape-only ops
// (OpTraits::shape_only: Shape, Size) fold as soon as their input's shape is known, which is what
// makes shape subgraphs (Shape -> Gather -> Concat -> Reshape) vanish.
#include <memory>
#include <vector>

#include "ir/evaluator.h"
#include "ir/op_registry.h"
#include "opt/passes.h"

namespace aotc {

namespace {

// Bytes of all outputs, or -1 if some output's shape is unknown.
int64_t output_bytes(const Node& node, const Graph& graph) {
  int64_t total = 0;
  for (ValueId out : node.outputs) {
    if (out == kNoValue) continue;
    const Value& v = graph.value(out);
    if (!v.shape_known || v.dtype == DType::kUndefined) return -1;
    total += v.byte_size();
  }
  return total;
}

}  // namespace

Expected<bool> fold_constants(Graph& graph) {
  const OpRegistry& registry = default_registry();
  bool changed = false;
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size());
  for (Node& node : graph.nodes) {
    const OpDef* def = registry.find(node.op_type, node.domain);
    int64_t bytes = output_bytes(node, graph);
    bool foldable = def != nullptr && node.num_present_inputs() > 0 && bytes >= 0 && bytes <= kMaxFoldedBytes;
    bool all_constant = true, shapes_known = true;
    for (ValueId in : node.inputs) {
      if (in == kNoValue) continue;
      all_constant = all_constant && graph.value(in).is_constant();
      shapes_known = shapes_known && graph.value(in).shape_known;
    }
    // Shape-only ops read nothing but input 0's shape; their other inputs (none today) must be
    // constants. Random generators have no inputs, so num_present_inputs() > 0 keeps them.
    bool shape_fold = false;
    if (foldable && !all_constant && def->traits.shape_only && shapes_known) {
      shape_fold = true;
      for (size_t i = 1; i < node.inputs.size(); ++i)
        if (node.inputs[i] != kNoValue && !graph.value(node.inputs[i]).is_constant()) shape_fold = false;
    }
    if (!foldable || !(all_constant || shape_fold)) {
      kept.push_back(std::move(node));
      continue;
    }
    // Placeholders for non-constant inputs of shape-only ops: right dtype and shape, zero data. A
    // tensor too large to allocate gets a dtype-less placeholder (no bytes); shape-only
    // references read only shape().
    std::vector<Tensor> placeholders;
    placeholders.reserve(node.inputs.size());
    std::vector<const Tensor*> args;
    for (ValueId in : node.inputs) {
      if (in == kNoValue) {
        args.push_back(nullptr);
        continue;
      }
      const Value& v = graph.value(in);
      if (v.is_constant()) {
        args.push_back(v.constant.get());
        continue;
      }
      placeholders.emplace_back(v.byte_size() <= kMaxFoldedBytes ? v.dtype : DType::kUndefined, v.shape);
      args.push_back(&placeholders.back());
    }
    std::vector<Tensor> outs;
    Status s = evaluate_node(node, graph, args, outs, registry);
    if (!s) return Status::error("constant folding: " + s.message());
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      ValueId out = node.outputs[i];
      if (out == kNoValue) continue;
      graph.value(out).constant = std::make_shared<const Tensor>(std::move(outs[i]));
    }
    changed = true;
  }
  graph.nodes = std::move(kept);
  return changed;
}

}  // namespace aotc
