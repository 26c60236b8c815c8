// ConstantOfShape: a tensor of the shape given by the constant int64 input 0, every element the
// one-element `value` attribute (default float32 0). Its input is a constant, so fold_constants
// usually turns it into a constant; only outputs over the folding limit run the fill kernel.
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

Expected<Tensor> fill_value(const Node& node) {
  if (!node.has_attr("value")) return Tensor(DType::kFloat32, {1});
  const Attribute& a = node.attrs.at("value");
  if (a.kind != Attribute::Kind::kTensor || !a.t) return node_error(node, "attribute 'value' must be a tensor");
  if (a.t->numel() != 1)
    return node_error(node, "attribute 'value' must have exactly 1 element, it has " + std::to_string(a.t->numel()));
  if (a.t->dtype() == DType::kString || dtype_size(a.t->dtype()) == 0)
    return node_error(node, "attribute 'value' has dtype " + dtype_name(a.t->dtype()) + ", which aotc does not store");
  return *a.t;
}

Status constant_of_shape_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kInt64}));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 0, 1));
  Expected<const Tensor*> shape = expect_constant(node, graph, 0, "it is the output shape; aotc compiles static shapes");
  if (!shape) return shape.status();
  Expected<Tensor> value = fill_value(node);
  if (!value) return value.status();
  Shape out = (*shape)->to_int64s();
  for (int64_t d : out)
    if (d < 0) return node_error(node, "shape has a negative dim " + std::to_string(d));
  set_output(graph, node, 0, value->dtype(), out);
  return Status::ok();
}

Status constant_of_shape_reference(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& outputs) {
  Expected<Tensor> value = fill_value(node);
  if (!value) return value.status();
  Tensor& y = outputs[0];
  const size_t elem = static_cast<size_t>(dtype_size(y.dtype()));
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(y.raw() + i * static_cast<int64_t>(elem), value->raw(), elem);
  return Status::ok();
}

Expected<Lowering> constant_of_shape_lower(const Node& node, const Graph& graph) {
  Expected<Tensor> value = fill_value(node);
  if (!value) return value.status();
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  uint64_t bits = 0;
  std::memcpy(&bits, value->raw(), static_cast<size_t>(dtype_size(y.dtype)));
  KernelStep k;
  k.template_name = "fill";
  k.holes = {{"T", bits_c_type(y.dtype)},
             {"value_bits", std::to_string(bits) + "ULL"},
             {"numel", int_literal(y.numel())},
             {"comment", "ConstantOfShape " + shape_str(y.shape) + " " + dtype_name(y.dtype)}};
  k.args = {node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_constant_of_shape_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "ConstantOfShape";
  def.infer = constant_of_shape_infer;
  def.reference = constant_of_shape_reference;
  def.lower = constant_of_shape_lower;
  registry.add(def);
}

}  // namespace aotc
