// InstanceNormalization: for each (n, c) plane of an [N, C, spatial...] input, normalise with the
// plane's mean and (biased) variance, then y = scale[c] * norm + B[c]. GroupNormalization-21: the
// same over each (n, group) of num_groups groups of C / num_groups channels, scale and bias per
// channel. The kernel is templates/norm_rows.cu.in (shared with LayerNormalization) with per-row
// (channel) or per-channel-in-group scale and bias.
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
             {"GROUPS", "1"},
             {"CHANNEL_SP", "0"},
             {"SCALE_N", int_literal(c)},
             {"BIAS_N", int_literal(c)},
             {"THREADS", "256"}};
  k.args = {node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0], kNullArg, kNullArg};
  k.block = Dim3{256, 1, 1};
  k.grid = Dim3{std::min<int64_t>(planes, 65535LL * 16), 1, 1};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// GroupNormalization-21 (scale and bias per channel; the opset-18 per-group form is refused).
Expected<int64_t> groups_of(const Node& node, const Shape& x) {
  if (!node.has_attr("num_groups")) return node_error(node, "missing attribute 'num_groups'");
  const int64_t g = node.attr_int("num_groups", 0);
  if (g <= 0 || x[1] % g != 0)
    return node_error(node, "num_groups " + std::to_string(g) + " does not divide the " + std::to_string(x[1]) + " channels");
  return g;
}

Status group_norm_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kNormTypes));
  const Value& x = input_value(graph, node, 0);
  if (x.shape.size() < 3) return node_error(node, "input 0 has rank " + std::to_string(x.shape.size()) + ", expected >= 3 (N, C, spatial...)");
  auto g = groups_of(node, x.shape);
  if (!g) return g.status();
  for (size_t i = 1; i < 3; ++i) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {x.dtype}));
    if (input_value(graph, node, i).shape != Shape{x.shape[1]})
      return node_error(node, "input " + std::to_string(i) + " has shape " + shape_str(input_value(graph, node, i).shape) +
                                  ", expected [C] = " + shape_str({x.shape[1]}) +
                                  " (the opset-18 per-group scale and bias are not supported)");
  }
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

// In double; the spec's stash_type (float32 stage one) is within the tolerances of this.
Status group_norm_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  auto g = groups_of(node, x.shape());
  if (!g) return g.status();
  const int64_t c = x.shape()[1], rows = x.shape()[0] * *g;
  const int64_t row_n = rows == 0 ? 0 : x.numel() / rows, sp = x.numel() / std::max<int64_t>(x.shape()[0] * c, 1);
  const double eps = node.attr_float("epsilon", 1e-5f);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < row_n; ++j) mean += x.get(r * row_n + j);
    mean /= static_cast<double>(row_n);
    for (int64_t j = 0; j < row_n; ++j) var += (x.get(r * row_n + j) - mean) * (x.get(r * row_n + j) - mean);
    var /= static_cast<double>(row_n);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < row_n; ++j) {
      const int64_t ch = (r % *g) * (c / *g) + j / sp;
      outputs[0].set(r * row_n + j, (x.get(r * row_n + j) - mean) * inv * inputs[1]->get(ch) + inputs[2]->get(ch));
    }
  }
  return Status::ok();
}

Expected<Lowering> group_norm_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  auto g = groups_of(node, x.shape);
  if (!g) return g.status();
  const int64_t c = x.shape[1], rows = x.shape[0] * *g, row_n = x.numel() / rows, sp = x.numel() / (x.shape[0] * c);
  KernelStep k;
  k.template_name = "norm_rows";
  k.holes = {{"comment", "GroupNormalization " + shape_str(x.shape) + " " + std::to_string(*g) + " groups " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"ST", "float"},
             {"ROWS", int_literal(rows)},
             {"N", int_literal(row_n)},
             {"EPS", float_literal(node.attr_float("epsilon", 1e-5f))},
             {"SCALE_PER_ROW", "false"},
             {"GROUPS", int_literal(*g)},
             {"CHANNEL_SP", int_literal(sp)},
             {"SCALE_N", int_literal(c)},
             {"BIAS_N", int_literal(c)},
             {"THREADS", "256"}};
  k.args = {node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0], kNullArg, kNullArg};
  k.block = Dim3{256, 1, 1};
  k.grid = Dim3{std::min<int64_t>(rows, 65535LL * 16), 1, 1};
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
  OpDef group;
  group.op_type = "GroupNormalization";
  group.infer = group_norm_infer;
  group.reference = group_norm_reference;
  group.lower = group_norm_lower;
  registry.add(group);
}

}  // namespace aotc
