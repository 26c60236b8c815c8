// Expand: broadcasts input 0 to the shape given by the constant int64 input 1, numpy style in
// both directions (a 1 in the shape keeps the input's dim). A strided gather with stride 0 on
// broadcast dims.
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_gather.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

Status expand_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 1, 1));
  Expected<const Tensor*> shape = expect_constant(node, graph, 1, "it decides the output shape; aotc compiles static shapes");
  if (!shape) return shape.status();
  Shape target = (*shape)->to_int64s();
  for (int64_t d : target)
    if (d < 0) return node_error(node, "shape has a negative dim " + std::to_string(d));
  Expected<Shape> out = broadcast_shapes(node, x.shape, target);
  if (!out) return out.status();
  set_output(graph, node, 0, x.dtype, *out);
  return Status::ok();
}

GatherView expand_view(const Shape& in, const Shape& out) { return GatherView{out, broadcast_strides(in, out), 0}; }

Status expand_reference(const Node&, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  strided_gather_reference(*inputs[0], outputs[0], expand_view(inputs[0]->shape(), outputs[0].shape()));
  return Status::ok();
}

Expected<Lowering> expand_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  KernelStep k = strided_gather_step(node.inputs[0], node.outputs[0], x.dtype, x.numel(), expand_view(x.shape, y.shape),
                                     "Expand " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " " +
                                         dtype_name(x.dtype));
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_expand_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Expand";
  def.infer = expand_infer;
  def.reference = expand_reference;
  def.lower = expand_lower;
  registry.add(def);
}

}  // namespace aotc
