// Where(condition, X, Y): X where condition else Y, numpy broadcasting of all three. Elements are
// moved, never computed, so every fixed-size dtype works (bool included) and the kernel moves raw
// bits of the element's width.
#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/elementwise_common.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Status where_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kBool}));
  const Value& c = input_value(graph, node, 0);
  const Value& x = input_value(graph, node, 1);
  const Value& y = input_value(graph, node, 2);
  if (x.dtype != y.dtype)
    return node_error(node, "X and Y have different dtypes " + dtype_name(x.dtype) + " and " + dtype_name(y.dtype));
  if (dtype_size(x.dtype) == 0) return node_error(node, "unsupported dtype " + dtype_name(x.dtype));
  Expected<Shape> xy = broadcast_shapes(node, x.shape, y.shape);
  if (!xy) return xy.status();
  Expected<Shape> out = broadcast_shapes(node, c.shape, *xy);
  if (!out) return out.status();
  set_output(graph, node, 0, x.dtype, *out);
  return Status::ok();
}

Status where_reference(const Node&, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& c = *inputs[0];
  const Tensor& x = *inputs[1];
  const Tensor& y = *inputs[2];
  Tensor& out = outputs[0];
  const size_t size = static_cast<size_t>(dtype_size(out.dtype()));
  int64_t i = 0;
  for_each_broadcast(out.shape(), {c.shape(), x.shape(), y.shape()}, [&](const std::vector<int64_t>& off) {
    const Tensor& src = c.data<uint8_t>()[off[0]] ? x : y;
    const int64_t at = c.data<uint8_t>()[off[0]] ? off[1] : off[2];
    std::memcpy(out.raw() + static_cast<size_t>(i++) * size, src.raw() + static_cast<size_t>(at) * size, size);
  });
  return Status::ok();
}

Expected<Lowering> where_lower(const Node& node, const Graph& graph) {
  const Value& c = input_value(graph, node, 0);
  const Value& x = input_value(graph, node, 1);
  const Value& y = input_value(graph, node, 2);
  const Value& out = output_value(graph, node, 0);
  Lowering l;
  if (out.numel() == 0) return l;
  StridedLayout layout{out.shape,
                       {broadcast_strides(c.shape, out.shape), broadcast_strides(x.shape, out.shape),
                        broadcast_strides(y.shape, out.shape)}};
  layout = collapse_layout(layout);
  KernelStep k;
  k.template_name = "where_broadcast";
  k.args = {node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(out.numel(), 256);
  k.holes = {{"T", bits_c_type(out.dtype)},
             {"I", index_type_for(std::max({out.numel(), c.numel(), x.numel(), y.numel()}))},
             {"rank", std::to_string(layout.dims.size())},
             {"dims", dims_literal(layout.dims)},
             {"c_strides", dims_literal(layout.strides[0])},
             {"x_strides", dims_literal(layout.strides[1])},
             {"y_strides", dims_literal(layout.strides[2])},
             {"numel", int_literal(out.numel())},
             {"comment", "Where " + shape_str(c.shape) + " ? " + shape_str(x.shape) + " : " + shape_str(y.shape) +
                             " -> " + shape_str(out.shape) + " " + dtype_name(out.dtype)}};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_where_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Where";
  def.traits.elementwise = true;
  def.infer = where_infer;
  def.reference = where_reference;
  def.lower = where_lower;
  registry.add(def);
}

}  // namespace aotc
