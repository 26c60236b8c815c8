// InstanceNormalization: for each (n, c) plane of an [N, C, spatial...] input, normalise with the
// plane's mean and (biased) variance, then y = scale[c] * norm + B[c]. The kernel is
// templates/norm_rows.cu.in (shared with LayerNormalization) with per-row (channel) scale and bias.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kNormTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

Status instance_norm_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kNormTypes));
  const Value& x = input_value(graph, node, 0);
  if (x.shape.size() < 3) return node_error(node, "input 0 has rank " + std::to_string(x.shape.size()) + ", expected >= 3 (N, C, spatial...)");
  for (size_t i = 1; i < 3; ++i) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {x.dtype}));
    if (input_value(graph, node, i).shape != Shape{x.shape[1]})
      return node_error(node, "input " + std::to_string(i) + " has shape " + shape_str(input_value(graph, node, i).shape) +
                                  ", expected [C] = " + shape_str({x.shape[1]}));
  }
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

Status instance_norm_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const int64_t c = x.shape()[1], planes = x.shape()[0] * c;
  const int64_t sp = planes == 0 ? 0 : x.numel() / planes;
  const double eps = node.attr_float("epsilon", 1e-5f);
  for (int64_t p = 0; p < planes; ++p) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < sp; ++j) mean += x.get(p * sp + j);
    mean /= static_cast<double>(sp);
    for (int64_t j = 0; j < sp; ++j) var += (x.get(p * sp + j) - mean) * (x.get(p * sp + j) - mean);
    var /= static_cast<double>(sp);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < sp; ++j)
      outputs[0].set(p * sp + j, (x.get(p * sp + j) - mean) * inv * inputs[1]->get(p % c) + inputs[2]->get(p % c));
  }
  return Status::ok();
}

Expected<Lowering> instance_norm_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  const int64_t c = x.shape[1], planes = x.shape[0] * c, sp = x.numel() / planes;
  KernelStep k;
  k.template_name = "norm_rows";
  k.holes = {{"comment", "InstanceNormalization " + shape_str(x.shape) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"ST", "float"},
             {"ROWS", int_literal(planes)},
             {"N", int_literal(sp)},
             {"EPS", float_literal(node.attr_float("epsilon", 1e-5f))},
             {"SCALE_PER_ROW", "true"},
             {"SCALE_N", int_literal(c)},
             {"BIAS_N", int_literal(c)},
             {"THREADS", "256"}};
  k.args = {node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0], kNullArg, kNullArg};
  k.block = Dim3{256, 1, 1};
  k.grid = Dim3{std::min<int64_t>(planes, 65535LL * 16), 1, 1};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_instance_norm_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "InstanceNormalization";
  def.infer = instance_norm_infer;
  def.reference = instance_norm_reference;
  def.lower = instance_norm_lower;
  registry.add(def);
}

}  // namespace aotc
