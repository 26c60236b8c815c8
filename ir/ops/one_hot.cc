// OneHot: output[..., d, ...] (d inserted at `axis`) = values[1] where indices == d, else
// values[0]. Negative indices count from depth; indices outside [-depth, depth) give all-off rows
// (spec); non-integer indices are cast to int64 first. depth must be a constant (it sets the shape).
#include <cmath>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

Status one_hot_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& indices = input_value(graph, node, 0);
  const Value& depth = input_value(graph, node, 1);
  const Value& values = input_value(graph, node, 2);
  for (size_t i : {size_t{0}, size_t{1}}) {
    const DType t = input_value(graph, node, i).dtype;
    if (!(dtype_is_float(t) || dtype_is_integer(t)))
      return node_error(node, "input " + std::to_string(i) + " has dtype " + dtype_name(t) + "; OneHot needs a number");
  }
  if (values.dtype == DType::kString || values.dtype == DType::kUndefined)
    return node_error(node, "values has dtype " + dtype_name(values.dtype) + ", which aotc does not store");
  if (depth.numel() != 1 || depth.shape.size() > 1) return node_error(node, "depth must be a scalar or a 1-element tensor");
  if (values.shape != Shape{2}) return node_error(node, "values must have shape [2] (off, on)");
  Expected<const Tensor*> dt = expect_constant(node, graph, 1, "depth sets the output shape");
  if (!dt) return dt.status();
  const double dv = (*dt)->get(0);
  if (!(dv >= 1) || dv > 9.0e15) return node_error(node, "depth must be >= 1");
  const int64_t rank = static_cast<int64_t>(indices.shape.size());
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), rank + 1);
  if (!axis) return axis.status();
  Shape out = indices.shape;
  out.insert(out.begin() + *axis, static_cast<int64_t>(dv));
  set_output(graph, node, 0, values.dtype, out);
  return Status::ok();
}

int64_t axis_of(const Node& node, int64_t out_rank) {
  const int64_t a = node.attr_int("axis", -1);
  return a < 0 ? a + out_rank : a;
}

// Dims of the output as [outer, depth, inner].
struct OneHotDims {
  int64_t outer = 1, depth = 1, inner = 1;
};

OneHotDims dims_of(const Shape& out, int64_t axis) {
  OneHotDims d;
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i)
    (i < axis ? d.outer : i == axis ? d.depth : d.inner) *= out[i];
  return d;
}

Status one_hot_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& indices = *inputs[0];
  const Tensor& values = *inputs[2];
  Tensor& out = outputs[0];
  const OneHotDims d = dims_of(out.shape(), axis_of(node, out.rank()));
  const int64_t elem = dtype_size(values.dtype());
  const bool float_indices = dtype_is_float(indices.dtype());
  for (int64_t i = 0; i < out.numel(); ++i) {
    const int64_t o = i / (d.depth * d.inner), k = (i / d.inner) % d.depth, c = i % d.inner;
    const int64_t src = o * d.inner + c;
    int64_t idx = float_indices ? static_cast<int64_t>(std::trunc(indices.get(src))) : indices.get_int(src);
    if (idx < 0) idx += d.depth;
    std::memcpy(out.raw() + i * elem, values.raw() + (idx == k ? elem : 0), static_cast<size_t>(elem));
  }
  return Status::ok();
}

Expected<Lowering> one_hot_lower(const Node& node, const Graph& graph) {
  const Value& indices = input_value(graph, node, 0);
  const Value& values = input_value(graph, node, 2);
  const Value& out = output_value(graph, node, 0);
  Lowering l;
  if (out.numel() == 0) return l;
  const OneHotDims d = dims_of(out.shape, axis_of(node, static_cast<int64_t>(out.shape.size())));
  const bool half_indices = indices.dtype == DType::kFloat16 || indices.dtype == DType::kBFloat16;
  KernelStep k;
  k.template_name = "one_hot";
  k.holes = {{"comment", "OneHot " + shape_str(indices.shape) + " -> " + shape_str(out.shape) + " " +
                             dtype_name(values.dtype)},
             {"T", bits_c_type(values.dtype)},
             {"TI", dtype_c_type(indices.dtype)},
             {"CTI", half_indices ? "float" : dtype_c_type(indices.dtype)},
             {"OUTER", int_literal(d.outer)},
             {"DEPTH", int_literal(d.depth)},
             {"INNER", int_literal(d.inner)}};
  k.args = {node.inputs[0], node.inputs[2], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(out.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_one_hot_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "OneHot";
  def.infer = one_hot_infer;
  def.reference = one_hot_reference;
  def.lower = one_hot_lower;
  registry.add(def);
}

}  // namespace aotc
