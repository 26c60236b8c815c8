// Dropout at inference: output 0 is input 0 unchanged (ratio ignored) and the optional mask is
// all true (bool from opset 10; the input's dtype, i.e. ones, before). training_mode must be
// absent or a constant false: a constant true is refused, a run-time one too (it could be true).
// Without a mask the node is a view; with one it copies and fills the mask.
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/copy_lowering.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

bool has_mask(const Node& node) { return node.outputs.size() > 1 && node.outputs[1] != kNoValue; }

Status dropout_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 3));
  if (node.outputs.empty() || node.outputs.size() > 2 || node.outputs[0] == kNoValue)
    return node_error(node, "expects output 0 and an optional mask");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {DType::kBool}));
    Expected<const Tensor*> t = expect_constant(node, graph, 2, "aotc compiles inference; training_mode must be a constant false");
    if (!t) return t.status();
    if ((*t)->numel() != 1 || (*t)->get_int(0) != 0)
      return node_error(node, "training_mode is true: training-mode dropout is not supported");
  }
  if (graph.opset < 7 && node.has_attr("is_test") && node.attr_int("is_test", 0) == 0)
    return node_error(node, "is_test=0 asks for training-mode dropout, which is not supported");
  set_output(graph, node, 0, x.dtype, x.shape);
  if (has_mask(node)) set_output(graph, node, 1, graph.opset >= 10 ? DType::kBool : x.dtype, x.shape);
  return Status::ok();
}

// Bits of "true" / "1" in the mask's dtype.
uint64_t one_bits(DType t) {
  Tensor one(t, {});
  one.set(0, 1.0);
  uint64_t bits = 0;
  std::memcpy(&bits, one.raw(), static_cast<size_t>(dtype_size(t)));
  return bits;
}

Status dropout_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  if (x.byte_size() > 0) std::memcpy(outputs[0].raw(), x.raw(), static_cast<size_t>(x.byte_size()));
  // The node's outputs say whether the mask is asked for: an absent one is a default (scalar,
  // undefined) tensor in `outputs` (filling it hit Tensor::set's assertion: a fuzz find).
  if (has_mask(node))
    for (int64_t i = 0; i < outputs[1].numel(); ++i) outputs[1].set(i, 1.0);
  return Status::ok();
}

Expected<Lowering> dropout_lower(const Node& node, const Graph& graph) {
  Lowering l;
  if (!has_mask(node)) {
    l.is_view = true;
    return l;
  }
  const Value& x = input_value(graph, node, 0);
  const Value& mask = output_value(graph, node, 1);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, copy_kernel_step(node.inputs[0], node.outputs[0], x.byte_size()), {}});
  if (mask.numel() > 0) {
    KernelStep k;
    k.template_name = "fill";
    k.holes = {{"T", bits_c_type(mask.dtype)},
               {"value_bits", std::to_string(one_bits(mask.dtype)) + "ULL"},
               {"numel", int_literal(mask.numel())},
               {"comment", "Dropout mask (all kept) " + shape_str(mask.shape) + " " + dtype_name(mask.dtype)}};
    k.args = {node.outputs[1]};
    k.block = Dim3{256, 1, 1};
    k.grid = grid_for(mask.numel(), 256);
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  }
  return l;
}

}  // namespace

void register_dropout_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Dropout";
  def.infer = dropout_infer;
  def.reference = dropout_reference;
  def.lower = dropout_lower;
  registry.add(def);
}

}  // namespace aotc
