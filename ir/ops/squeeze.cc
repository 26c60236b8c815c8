// Squeeze and Unsqueeze: remove / insert size-1 dims. Views (no kernel; the memory plan aliases
// the output to the input). The canonical form has `axes` as a constant int64 input 1 (opsets
// before 13 had an attribute, which the import moves there).
#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Status axes_import(Node& node, Graph& graph, int64_t) {
  if (!node.has_attr("axes")) return Status::ok();
  if (node.num_present_inputs() > 1) return node_error(node, "has both an axes attribute and an axes input");
  std::vector<int64_t> axes = node.attr_ints("axes");
  node.inputs.resize(1);
  node.inputs.push_back(graph.add_constant(graph.unique_name(node.name + "_axes"),
                                           Tensor::from_int64s({static_cast<int64_t>(axes.size())}, axes)));
  node.attrs.erase("axes");
  return Status::ok();
}

// Input 1's values normalised against `rank`, checked for duplicates; empty when absent.
Expected<std::vector<int64_t>> read_axes(const Node& node, const Graph& graph, int64_t rank, bool required) {
  std::vector<int64_t> axes;
  if (node.input(1) == kNoValue) {
    if (required) return node_error(node, "input 1 (axes) is required");
    return axes;
  }
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  if (graph.value(node.inputs[1]).shape.size() > 1) return node_error(node, "axes must be a scalar or 1-D");
  Expected<const Tensor*> c = expect_constant(node, graph, 1, "axes decide the output shape; aotc compiles static shapes");
  if (!c) return c.status();
  // Duplicates through a mask over [0, rank): linear in the axes (a search per axis was quadratic,
  // and a model with tens of thousands of axes held the import for seconds: fuzz find).
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t a : (*c)->to_int64s()) {
    Expected<int64_t> n = normalize_axis(node, a, rank);
    if (!n) return n.status();
    if (seen[static_cast<size_t>(*n)]) return node_error(node, "axis " + std::to_string(a) + " is listed twice");
    seen[static_cast<size_t>(*n)] = true;
    axes.push_back(*n);
  }
  return axes;
}

Status squeeze_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_storable(node, graph, 0));
  const Value& x = input_value(graph, node, 0);
  Expected<std::vector<int64_t>> axes = read_axes(node, graph, static_cast<int64_t>(x.shape.size()), false);
  if (!axes) return axes.status();
  std::vector<bool> listed_axes(x.shape.size(), false);
  for (int64_t a : *axes) listed_axes[static_cast<size_t>(a)] = true;
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    const bool listed = listed_axes[d];
    if (listed && x.shape[d] != 1)
      return node_error(node, "cannot squeeze axis " + std::to_string(d) + " of size " + std::to_string(x.shape[d]));
    // Without axes (or with an empty list, as ONNX Runtime reads it), every size-1 dim goes.
    bool drop = axes->empty() ? x.shape[d] == 1 : listed;
    if (!drop) out.push_back(x.shape[d]);
  }
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

Status unsqueeze_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_storable(node, graph, 0));
  const Value& x = input_value(graph, node, 0);
  ValueId axes_id = node.input(1);
  int64_t count = graph.value(axes_id).numel();
  int64_t out_rank = static_cast<int64_t>(x.shape.size()) + count;
  Expected<std::vector<int64_t>> axes = read_axes(node, graph, out_rank, true);
  if (!axes) return axes.status();
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : *axes) inserted[static_cast<size_t>(a)] = true;
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) out.push_back(inserted[static_cast<size_t>(d)] ? 1 : x.shape[next++]);
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

Status view_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  if (x.byte_size() != y.byte_size() || x.dtype() != y.dtype())
    return node_error(node, "output does not match the input's bytes");
  if (x.byte_size() > 0) std::memcpy(y.raw(), x.raw(), static_cast<size_t>(x.byte_size()));
  return Status::ok();
}

Expected<Lowering> view_lower(const Node&, const Graph&) {
  Lowering l;
  l.is_view = true;
  return l;
}

OpDef view_def(const char* op_type, Status (*infer)(Node&, Graph&)) {
  OpDef def;
  def.op_type = op_type;
  def.traits.is_view = true;
  def.import = axes_import;
  def.infer = infer;
  def.reference = view_reference;
  def.lower = view_lower;
  return def;
}

}  // namespace

void register_squeeze_ops(OpRegistry& registry) {
  registry.add(view_def("Squeeze", squeeze_infer));
  registry.add(view_def("Unsqueeze", unsqueeze_infer));
}

}  // namespace aotc
