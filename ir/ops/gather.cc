// Gather (rows of one axis picked by an index tensor) and GatherElements (one element per index,
// same shape as the indices). Indices are int32/int64 and may be run-time values: the reference
// refuses an index outside [-n, n) as ONNX requires; the kernels, which cannot report, wrap
// negative indices and clamp the rest so they never read outside the input.
#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

Status expect_data_and_indices(const Node& node, const Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  DType t = input_value(graph, node, 0).dtype;
  if (t == DType::kString || t == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(t) + ", which aotc does not store");
  return expect_dtype(node, graph, 1, {DType::kInt32, DType::kInt64});
}

int64_t axis_of(const Node& node, size_t rank) {
  int64_t a = node.attr_int("axis", 0);
  return a < 0 ? a + static_cast<int64_t>(rank) : a;
}

// Index value i of `indices` mapped into [0, dim), or an error naming the bad index.
Expected<int64_t> checked_index(const Node& node, const Tensor& indices, int64_t i, int64_t dim) {
  int64_t v = indices.get_int(i);
  int64_t w = v < 0 ? v + dim : v;
  if (w < 0 || w >= dim)
    return node_error(node, "index " + std::to_string(v) + " is out of range for an axis of size " + std::to_string(dim));
  return w;
}

Status gather_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_data_and_indices(node, graph));
  const Value& x = input_value(graph, node, 0);
  const Value& idx = input_value(graph, node, 1);
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  Shape out(x.shape.begin(), x.shape.begin() + *axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + *axis + 1, x.shape.end());
  if (x.shape[static_cast<size_t>(*axis)] == 0 && shape_numel(out) > 0)
    return node_error(node, "gathers from an empty axis");
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

// [outer, axis_dim, inner] of the data around `axis`.
void around_axis(const Shape& s, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) *outer *= s[d];
    if (static_cast<int64_t>(d) > axis) *inner *= s[d];
  }
}

Status gather_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& idx = *inputs[1];
  Tensor& y = outputs[0];
  int64_t axis = axis_of(node, x.shape().size());
  int64_t outer, inner;
  around_axis(x.shape(), axis, &outer, &inner);
  const int64_t dim = x.shape()[static_cast<size_t>(axis)], n = idx.numel();
  const int64_t elem = dtype_size(x.dtype());
  for (int64_t j = 0; j < n && outer * inner > 0; ++j) {
    Expected<int64_t> w = checked_index(node, idx, j, dim);
    if (!w) return w.status();
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y.raw() + ((o * n + j) * inner) * elem, x.raw() + ((o * dim + *w) * inner) * elem,
                  static_cast<size_t>(inner * elem));
  }
  return Status::ok();
}

Expected<Lowering> gather_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& idx = input_value(graph, node, 1);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  int64_t axis = axis_of(node, x.shape.size());
  int64_t outer, inner;
  around_axis(x.shape, axis, &outer, &inner);
  KernelStep k;
  k.template_name = "gather_axis";
  k.holes = {{"T", bits_c_type(x.dtype)},
             {"IDX", dtype_c_type(idx.dtype)},
             {"I", index_type_for(std::max(x.numel(), y.numel()))},
             {"inner", int_literal(inner)},
             {"num_indices", int_literal(idx.numel())},
             {"axis_dim", int_literal(x.shape[static_cast<size_t>(axis)])},
             {"numel", int_literal(y.numel())},
             {"comment", "Gather " + shape_str(x.shape) + " axis " + std::to_string(axis) + " by " +
                             shape_str(idx.shape) + " -> " + shape_str(y.shape) + " " + dtype_name(x.dtype)}};
  k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

Status gather_elements_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_data_and_indices(node, graph));
  const Value& x = input_value(graph, node, 0);
  const Value& idx = input_value(graph, node, 1);
  if (x.shape.empty()) return node_error(node, "input 0 must have rank >= 1");
  if (idx.shape.size() != x.shape.size())
    return node_error(node, "indices have rank " + std::to_string(idx.shape.size()) + ", data has rank " +
                                std::to_string(x.shape.size()));
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (static_cast<int64_t>(d) != *axis && idx.shape[d] > x.shape[d])
      return node_error(node, "indices shape " + shape_str(idx.shape) + " exceeds data shape " + shape_str(x.shape) +
                                  " outside the axis");
  if (x.shape[static_cast<size_t>(*axis)] == 0 && idx.numel() > 0) return node_error(node, "gathers from an empty axis");
  set_output(graph, node, 0, x.dtype, idx.shape);
  return Status::ok();
}

Status gather_elements_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                                 std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& idx = *inputs[1];
  Tensor& y = outputs[0];
  const size_t axis = static_cast<size_t>(axis_of(node, x.shape().size()));
  std::vector<int64_t> x_strides = shape_strides(x.shape()), y_strides = shape_strides(y.shape());
  const int64_t elem = dtype_size(x.dtype());
  for (int64_t i = 0; i < y.numel(); ++i) {
    Expected<int64_t> w = checked_index(node, idx, i, x.shape()[axis]);
    if (!w) return w.status();
    int64_t src = 0;
    for (size_t d = 0; d < y_strides.size(); ++d)
      src += (d == axis ? *w : (i / y_strides[d]) % y.shape()[d]) * x_strides[d];
    std::memcpy(y.raw() + i * elem, x.raw() + src * elem, static_cast<size_t>(elem));
  }
  return Status::ok();
}

Expected<Lowering> gather_elements_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& idx = input_value(graph, node, 1);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  int64_t axis = axis_of(node, x.shape.size());
  KernelStep k;
  k.template_name = "gather_elements";
  k.holes = {{"T", bits_c_type(x.dtype)},
             {"IDX", dtype_c_type(idx.dtype)},
             {"I", index_type_for(std::max(x.numel(), y.numel()))},
             {"rank", std::to_string(y.shape.size())},
             {"axis", std::to_string(axis)},
             {"dims", dims_literal(y.shape)},
             {"in_strides", dims_literal(shape_strides(x.shape))},
             {"axis_dim", int_literal(x.shape[static_cast<size_t>(axis)])},
             {"numel", int_literal(y.numel())},
             {"comment", "GatherElements " + shape_str(x.shape) + " axis " + std::to_string(axis) + " by " +
                             shape_str(idx.shape) + " " + dtype_name(x.dtype)}};
  k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

OpDef gather_def(const char* op, Status (*infer)(Node&, Graph&),
                 Status (*reference)(const Node&, const std::vector<const Tensor*>&, std::vector<Tensor>&),
                 Expected<Lowering> (*lower)(const Node&, const Graph&)) {
  OpDef def;
  def.op_type = op;
  def.infer = infer;
  def.reference = reference;
  def.lower = lower;
  return def;
}

}  // namespace

void register_gather_ops(OpRegistry& registry) {
  registry.add(gather_def("Gather", gather_infer, gather_reference, gather_lower));
  registry.add(gather_def("GatherElements", gather_elements_infer, gather_elements_reference, gather_elements_lower));
}

}  // namespace aotc
