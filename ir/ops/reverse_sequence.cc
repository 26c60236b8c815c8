// ReverseSequence: for each batch entry b, reverses the first sequence_lens[b] steps along
// time_axis (0 or 1; batch_axis is the other), leaving later steps in place. Any stored dtype;
// sequence_lens is a run-time int64 [batch] tensor (lengths are clamped into [0, time] by kernel
// and reference alike; the spec leaves larger values undefined).
#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

Status reverse_sequence_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  if (x.shape.size() < 2) return node_error(node, "input must have rank >= 2");
  const int64_t batch_axis = node.attr_int("batch_axis", 1), time_axis = node.attr_int("time_axis", 0);
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    return node_error(node, "batch_axis and time_axis must be 0 and 1 (either order)");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  const Value& lens = input_value(graph, node, 1);
  if (lens.shape != Shape{x.shape[static_cast<size_t>(batch_axis)]})
    return node_error(node, "sequence_lens must be [" + std::to_string(x.shape[static_cast<size_t>(batch_axis)]) + "], it is " + shape_str(lens.shape));
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

Status reverse_sequence_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& lens = *inputs[1];
  Tensor& y = outputs[0];
  const bool time_first = node.attr_int("time_axis", 0) == 0;
  const int64_t d0 = x.shape()[0], d1 = x.shape()[1];
  const int64_t inner = x.numel() / std::max<int64_t>(1, d0 * d1);
  const int64_t elem = dtype_size(x.dtype());
  const int64_t time = time_first ? d0 : d1;
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j) {
      const int64_t b = time_first ? j : i, t = time_first ? i : j;
      const int64_t len = std::clamp<int64_t>(lens.get_int(b), 0, time);
      const int64_t src_t = t < len ? len - 1 - t : t;
      const int64_t si = time_first ? src_t : i, sj = time_first ? j : src_t;
      std::memcpy(y.raw() + (i * d1 + j) * inner * elem, x.raw() + (si * d1 + sj) * inner * elem,
                  static_cast<size_t>(inner * elem));
    }
  return Status::ok();
}


Expected<Lowering> reverse_sequence_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  const int64_t d0 = x.shape[0], d1 = x.shape[1];
  KernelStep k;
  k.template_name = "reverse_sequence";
  k.holes = {{"comment", "ReverseSequence " + shape_str(x.shape) + " " + dtype_name(x.dtype)},
             {"T", bits_c_type(x.dtype)}, {"D0", int_literal(d0)}, {"D1", int_literal(d1)},
             {"INNER", int_literal(x.numel() / (d0 * d1))},
             {"TIME_FIRST", node.attr_int("time_axis", 0) == 0 ? "true" : "false"}};
  k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_reverse_sequence_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "ReverseSequence";
  def.infer = reverse_sequence_infer;
  def.reference = reverse_sequence_reference;
  def.lower = reverse_sequence_lower;
  registry.add(def);
}

}  // namespace aotc
