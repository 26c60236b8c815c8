// Folding one node (see constant_folding.h).
#include "ir/constant_folding.h"

#include <memory>
#include <vector>

#include "ir/evaluator.h"

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

Expected<bool> try_fold_node(const Node& node, Graph& graph, const OpRegistry& registry, bool importing) {
  const OpDef* def = registry.find(node.op_type, node.domain);
  int64_t bytes = output_bytes(node, graph);
  if (def == nullptr || (importing && def->traits.fold_in_pipeline_only) || node.num_present_inputs() == 0 || bytes < 0 || bytes > kMaxFoldedBytes) return false;
  bool all_constant = true, shapes_known = true;
  for (ValueId in : node.inputs) {
    if (in == kNoValue) continue;
    all_constant = all_constant && graph.value(in).is_constant();
    shapes_known = shapes_known && graph.value(in).shape_known;
  }
  // Shape-only ops read nothing but input 0's shape; their other inputs must be constants.
  bool shape_fold = false;
  if (!all_constant && def->traits.shape_only && shapes_known) {
    shape_fold = true;
    for (size_t i = 1; i < node.inputs.size(); ++i)
      if (node.inputs[i] != kNoValue && !graph.value(node.inputs[i]).is_constant()) shape_fold = false;
  }
  if (!(all_constant || shape_fold)) return false;
  // A node whose outputs are all absent (empty names) produces nothing to fold: its reference
  // would only write into absent outputs (dead code removes the node later).
  bool any_output = false;
  for (ValueId out : node.outputs) any_output = any_output || out != kNoValue;
  if (!any_output) return false;
  // An expanding fold (a fill, Expand, Tile, Range: a few bytes in, megabytes out) only moves work
  // from a GPU kernel into the weight blob, the .so and the compile's memory; the op runs instead.
  if (all_constant && def->lower && bytes > kMaxExpandingFoldBytes) {
    int64_t in_bytes = 0;
    for (ValueId in : node.inputs)
      if (in != kNoValue) in_bytes += graph.value(in).byte_size();
    if (bytes > kExpandingFoldRatio * in_bytes) return false;
  }
  if (graph.folded_bytes + bytes > graph.max_folded_bytes_total)
    return Status::error("constant folding: this output (" + std::to_string(bytes) + " bytes) would take the folded "
                         "constants past " + std::to_string(graph.max_folded_bytes_total >> 20) +
                         " MiB in total, the limit (docs/reliability.md, Limits)");
  // The work cap: shape-only folds read shapes only; others are estimated before they run.
  if (!shape_fold) {
    const int64_t work = estimate_fold_work(node, graph);
    const bool over_total = work > kSmallFoldWork && work > graph.max_fold_work_total - graph.fold_work;
    if (work > kMaxFoldWork || over_total) {
      if (def->lower) return false;  // runs on the GPU instead
      return Status::error("constant folding: about " + std::to_string(work) + " multiply-adds, over " +
                           (over_total ? "what is left of the total of " + std::to_string(graph.max_fold_work_total)
                                       : "the limit of one fold, " + std::to_string(kMaxFoldWork)) +
                           ", and the op has no GPU kernel to run it instead (docs/reliability.md, Limits)");
    }
    graph.fold_work += work;
  }
  graph.folded_bytes += bytes;

  // Placeholders for non-constant inputs of shape-only ops: right shape, no bytes (dtype-less),
  // since shape-only references read only shape().
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
    placeholders.emplace_back(DType::kUndefined, v.shape);
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
  return true;
}

}  // namespace aotc
