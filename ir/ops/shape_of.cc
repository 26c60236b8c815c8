// Shape and Size: int64 facts about input 0's static shape (Shape-15's start/end pick a range of
// dims). OpTraits::shape_only, so fold_constants evaluates them as soon as shapes are known and
// shape subgraphs (Shape -> Gather -> Concat -> Reshape) vanish; they never reach the GPU.
#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

// Shape-15: start/end clamp into [0, rank] after adding rank to negatives.
std::pair<int64_t, int64_t> dim_range(const Node& node, int64_t rank) {
  int64_t start = node.attr_int("start", 0), end = node.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

Status shape_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  auto r = dim_range(node, static_cast<int64_t>(input_value(graph, node, 0).shape.size()));
  set_output(graph, node, 0, DType::kInt64, {r.second - r.first});
  return Status::ok();
}

Status size_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  set_output(graph, node, 0, DType::kInt64, {});
  return Status::ok();
}

// Both read only inputs[0]->shape(): fold_constants may pass a data-less placeholder.
Status shape_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Shape& s = inputs[0]->shape();
  auto r = dim_range(node, static_cast<int64_t>(s.size()));
  for (int64_t d = r.first; d < r.second; ++d) outputs[0].set_int(d - r.first, s[static_cast<size_t>(d)]);
  return Status::ok();
}

Status size_reference(const Node&, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  outputs[0].set_int(0, shape_numel(inputs[0]->shape()));
  return Status::ok();
}

Expected<Lowering> folded_only_lower(const Node& node, const Graph&) {
  return node_error(node, "is evaluated at compile time from static shapes (fold_constants); it has no GPU kernel");
}

OpDef shape_def(const char* op_type, Status (*infer)(Node&, Graph&),
                Status (*reference)(const Node&, const std::vector<const Tensor*>&, std::vector<Tensor>&)) {
  OpDef def;
  def.op_type = op_type;
  def.traits.shape_only = true;
  def.infer = infer;
  def.reference = reference;
  def.lower = folded_only_lower;
  return def;
}

}  // namespace

void register_shape_of_ops(OpRegistry& registry) {
  registry.add(shape_def("Shape", shape_infer, shape_reference));
  registry.add(shape_def("Size", size_infer, size_reference));
}

}  // namespace aotc
