// EyeLike: a 2-D tensor of input 0's shape with ones on the k-th diagonal (out[i, j] = 1 where
// j - i == k) and zeros elsewhere; dtype from the `dtype` attribute, else input 0's. Only the
// input's shape is read.
#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

Status eye_like_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 0, 2));
  const Value& x = input_value(graph, node, 0);
  const int32_t code = static_cast<int32_t>(node.attr_int("dtype", static_cast<int64_t>(x.dtype)));
  if (!dtype_is_known(code)) return node_error(node, "dtype " + std::to_string(code) + " is not a known type");
  const DType t = static_cast<DType>(code);
  if (!(dtype_is_float(t) || dtype_is_integer(t) || t == DType::kBool))
    return node_error(node, "output dtype " + dtype_name(t) + " is not supported");
  set_output(graph, node, 0, t, x.shape);
  return Status::ok();
}

Status eye_like_reference(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& outputs) {
  Tensor& y = outputs[0];
  const int64_t k = node.attr_int("k", 0);
  const int64_t rows = y.shape()[0], cols = y.shape()[1];
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < cols) y.set(i * cols + j, 1.0);  // the rest stays zero
  }
  return Status::ok();
}

Expected<Lowering> eye_like_lower(const Node& node, const Graph& graph) {
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const int64_t rows = y.shape[0], cols = y.shape[1];
  // Clamp k into a range that decides every element the same way, so the literal stays small.
  const int64_t k = std::max<int64_t>(-rows - 1, std::min<int64_t>(node.attr_int("k", 0), cols + 1));
  KernelStep ks;
  ks.template_name = "eye_like";
  ks.holes = {{"comment", "EyeLike k=" + std::to_string(k) + " " + shape_str(y.shape) + " " + dtype_name(y.dtype)},
              {"TIN", bits_c_type(input_value(graph, node, 0).dtype)},
              {"T", dtype_c_type(y.dtype)},
              {"COLS", int_literal(cols)},
              {"K", int_literal(k)},
              {"NUMEL", int_literal(y.numel())}};
  ks.args = {node.inputs[0], node.outputs[0]};  // input 0 only for the kernel's uniform signature
  ks.block = Dim3{256, 1, 1};
  ks.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, ks, {}});
  return l;
}

}  // namespace

void register_eye_like_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "EyeLike";
  def.infer = eye_like_infer;
  def.reference = eye_like_reference;
  def.lower = eye_like_lower;
  registry.add(def);
}

}  // namespace aotc
