// LayerNormalization (opset 17): normalise over the dims from `axis` on, then Y = norm * Scale + B,
// with optional outputs Mean and InvStdDev (float, shaped like X with the normalised dims set to
// 1). Statistics are computed in float (stash_type 1, the only value the spec's U allows that
// aotc takes; double inputs compute in double). Kernel: templates/norm_rows.cu.in, a block per row.
// RMSNormalization (opset 23): Y = X / sqrt(mean(X^2 over the dims from `axis` on) + epsilon) * scale,
// same row structure and statistics precision; kernel templates/rms_norm_rows.cu.in.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kNormTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

bool has_output(const Node& node, size_t i) { return node.outputs.size() > i && node.outputs[i] != kNoValue; }

// Right-aligned broadcast of `s` to `target` (unidirectional: s may have fewer dims, or 1s).
bool broadcasts_to(const Shape& s, const Shape& target) {
  if (s.size() > target.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t a = s[s.size() - 1 - i], b = target[target.size() - 1 - i];
    if (a != 1 && a != b) return false;
  }
  return true;
}

// Flat index into `s` (broadcast to target) of target's flat element `j`.
int64_t broadcast_index(const Shape& s, const Shape& target, int64_t j) {
  int64_t idx = 0, mul = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    const size_t ti = target.size() - 1 - i;
    const int64_t coord = j % target[ti];
    j /= target[ti];
    if (i < s.size()) {
      const int64_t dim = s[s.size() - 1 - i];
      if (dim != 1) idx += coord * mul;
      mul *= dim;
    }
  }
  return idx;
}

Status layer_norm_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  if (node.outputs.empty() || node.outputs.size() > 3) return node_error(node, "expects 1 to 3 outputs (Y, Mean, InvStdDev)");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kNormTypes));
  const Value& x = input_value(graph, node, 0);
  for (size_t i = 1; i < 3; ++i)
    if (node.input(i) != kNoValue) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {x.dtype}));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) return node_error(node, "input 0 must have rank >= 1");
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), rank);
  if (!axis) return axis.status();
  const int64_t stash = node.attr_int("stash_type", 1);
  if (stash != 1) return node_error(node, "stash_type " + std::to_string(stash) + " is not supported (only 1, float)");
  const Shape norm(x.shape.begin() + *axis, x.shape.end());
  for (size_t i = 1; i < 3; ++i)
    if (node.input(i) != kNoValue && !broadcasts_to(input_value(graph, node, i).shape, norm))
      return node_error(node, "input " + std::to_string(i) + " of shape " + shape_str(input_value(graph, node, i).shape) +
                                  " does not broadcast to the normalized shape " + shape_str(norm));
  set_output(graph, node, 0, x.dtype, x.shape);
  Shape stat = x.shape;
  for (int64_t i = *axis; i < rank; ++i) stat[static_cast<size_t>(i)] = 1;
  for (size_t i = 1; i < 3; ++i)
    if (has_output(node, i)) set_output(graph, node, i, DType::kFloat32, stat);
  return Status::ok();
}

Status layer_norm_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), x.rank());
  if (!axis) return axis.status();
  const Shape norm(x.shape().begin() + *axis, x.shape().end());
  const int64_t n = shape_numel(norm), rows = n == 0 ? 0 : x.numel() / n;
  const double eps = node.attr_float("epsilon", 1e-5f);
  const Tensor* scale = inputs[1];
  const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mean += x.get(r * n + j);
    mean /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) var += (x.get(r * n + j) - mean) * (x.get(r * n + j) - mean);
    var /= static_cast<double>(n);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) {
      double v = (x.get(r * n + j) - mean) * inv * scale->get(broadcast_index(scale->shape(), norm, j));
      if (bias) v += bias->get(broadcast_index(bias->shape(), norm, j));
      outputs[0].set(r * n + j, v);
    }
    if (has_output(node, 1)) outputs[1].set(r, mean);
    if (has_output(node, 2)) outputs[2].set(r, inv);
  }
  return Status::ok();
}

// Rows the warp-per-row kernel takes: 16-bit, a multiple of 8 elements (16-byte vectors; arena,
// weight and caller buffers are 256-byte aligned, docs/abi.md, so every such row is), at most 2048
// (the row in one warp's registers), per-element scale (and bias) of `per_element` elements.
bool warp_rows_fit(DType t, int64_t n, bool per_element) {
  return (t == DType::kFloat16 || t == DType::kBFloat16) && n % 8 == 0 && n <= 2048 && per_element;
}

// The warp-per-row kernel (templates/norm_rows_warp.cu.in) over `rows` rows of `n` 16-bit
// elements: LayerNormalization, or with `rms` RMSNormalization (the mean taken as 0). `args`: x,
// scale, bias, y, mean, inv_std (kNullArg where absent).
LoweredStep norm_rows_warp_step(const Node& node, const Value& x, int64_t rows, int64_t n, int64_t axis, bool rms,
                                std::vector<ValueId> args) {
  KernelStep k;
  k.template_name = "norm_rows_warp";
  k.holes = {{"comment", node.op_type + " " + shape_str(x.shape) + " axis " + std::to_string(axis) + " " +
                             dtype_name(x.dtype) + ", a warp per row"},
             {"T", dtype_c_type(x.dtype)},
             {"ST", "float"},
             {"ROWS", int_literal(rows)},
             {"N", int_literal(n)},
             {"PER_LANE", int_literal((n / 8 + 31) / 32)},
             {"EPS", float_literal(node.attr_float("epsilon", 1e-5f))},
             {"RMS", rms ? "true" : "false"}};
  k.args = std::move(args);
  k.block = Dim3{256, 1, 1};
  k.grid = Dim3{(rows + 7) / 8, 1, 1};
  return LoweredStep{LoweredStep::Kind::kKernel, k, {}};
}

Expected<Lowering> layer_norm_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  const Shape norm(x.shape.begin() + *axis, x.shape.end());
  const int64_t n = shape_numel(norm), rows = n == 0 ? 0 : x.numel() / n;
  Lowering l;
  if (x.numel() == 0) return l;
  const ValueId b = node.input(2);
  for (ValueId v : {node.inputs[1], b})
    if (v != kNoValue && !trailing_broadcast(graph.value(v).shape, norm))
      return node_error(node, "Scale/B of shape " + shape_str(graph.value(v).shape) +
                                  " broadcasts in the middle of the normalized shape; the GPU kernel takes trailing broadcasts only");
  // Rows warp_rows_fit takes: one warp per row, held in registers, 16-byte accesses.
  const int64_t scale_n = graph.value(node.inputs[1]).numel(), bias_n = b == kNoValue ? n : graph.value(b).numel();
  if (warp_rows_fit(x.dtype, n, scale_n == n && bias_n == n)) {
    l.steps.push_back(norm_rows_warp_step(node, x, rows, n, *axis, false,
                                          {node.inputs[0], node.inputs[1], b == kNoValue ? kNullArg : b, node.outputs[0],
                                           has_output(node, 1) ? node.outputs[1] : kNullArg,
                                           has_output(node, 2) ? node.outputs[2] : kNullArg}));
    return l;
  }
  KernelStep k;
  k.template_name = "norm_rows";
  k.holes = {{"comment", "LayerNormalization " + shape_str(x.shape) + " axis " + std::to_string(*axis) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"ST", "float"},
             {"ROWS", int_literal(rows)},
             {"N", int_literal(n)},
             {"EPS", float_literal(node.attr_float("epsilon", 1e-5f))},
             {"SCALE_PER_ROW", "false"},
             {"GROUPS", "1"},
             {"CHANNEL_SP", "0"},
             {"SCALE_N", int_literal(graph.value(node.inputs[1]).numel())},
             {"BIAS_N", int_literal(b == kNoValue ? 1 : graph.value(b).numel())},
             {"THREADS", "256"}};
  k.args = {node.inputs[0], node.inputs[1], b == kNoValue ? kNullArg : b, node.outputs[0],
            has_output(node, 1) ? node.outputs[1] : kNullArg, has_output(node, 2) ? node.outputs[2] : kNullArg};
  k.block = Dim3{256, 1, 1};
  k.grid = Dim3{std::min<int64_t>(rows, 65535LL * 16), 1, 1};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}


// RMSNormalization: X (T) and scale (V) must share a dtype here (the kernel has one element type);
// the output has scale's dtype, as the spec says.
Status rms_norm_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output (Y)");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kNormTypes));
  const Value& x = input_value(graph, node, 0);
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, kNormTypes));
  if (input_value(graph, node, 1).dtype != x.dtype)
    return node_error(node, "scale of dtype " + dtype_name(input_value(graph, node, 1).dtype) + " differs from X's " +
                                dtype_name(x.dtype) + "; aotc takes one dtype for both");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) return node_error(node, "input 0 must have rank >= 1");
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), rank);
  if (!axis) return axis.status();
  const int64_t stash = node.attr_int("stash_type", 1);
  if (stash != 1) return node_error(node, "stash_type " + std::to_string(stash) + " is not supported (only 1, float)");
  const Shape norm(x.shape.begin() + *axis, x.shape.end());
  if (!broadcasts_to(input_value(graph, node, 1).shape, norm))
    return node_error(node, "scale of shape " + shape_str(input_value(graph, node, 1).shape) +
                                " does not broadcast to the normalized shape " + shape_str(norm));
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

Status rms_norm_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& scale = *inputs[1];
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), x.rank());
  if (!axis) return axis.status();
  const Shape norm(x.shape().begin() + *axis, x.shape().end());
  const int64_t n = shape_numel(norm), rows = n == 0 ? 0 : x.numel() / n;
  const double eps = node.attr_float("epsilon", 1e-5f);
  for (int64_t r = 0; r < rows; ++r) {
    double sq = 0;
    for (int64_t j = 0; j < n; ++j) sq += x.get(r * n + j) * x.get(r * n + j);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
    for (int64_t j = 0; j < n; ++j)
      outputs[0].set(r * n + j, x.get(r * n + j) * inv * scale.get(broadcast_index(scale.shape(), norm, j)));
  }
  return Status::ok();
}

Expected<Lowering> rms_norm_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  const Shape norm(x.shape.begin() + *axis, x.shape.end());
  const int64_t n = shape_numel(norm), rows = n == 0 ? 0 : x.numel() / n;
  Lowering l;
  if (x.numel() == 0) return l;
  const Value& scale = graph.value(node.inputs[1]);
  if (!trailing_broadcast(scale.shape, norm))
    return node_error(node, "scale of shape " + shape_str(scale.shape) +
                                " broadcasts in the middle of the normalized shape; the GPU kernel takes trailing broadcasts only");
  // 16-bit rows of up to 2048 elements (multiples of 8) with a per-element scale: LayerNorm's
  // warp-per-row kernel with the mean taken as 0 (a block per row and a shared-memory tree ran
  // LLaMA's 4096 x 768 fp16 norm at 0.94 TB/s, 13.4 us, on an H200: docs/perf_notes.md v67).
  if (warp_rows_fit(x.dtype, n, scale.numel() == n)) {
    l.steps.push_back(norm_rows_warp_step(node, x, rows, n, *axis, true,
                                          {node.inputs[0], node.inputs[1], kNullArg, node.outputs[0], kNullArg, kNullArg}));
    return l;
  }
  KernelStep k;
  k.template_name = "rms_norm_rows";
  k.holes = {{"comment", "RMSNormalization " + shape_str(x.shape) + " axis " + std::to_string(*axis) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"ROWS", int_literal(rows)},
             {"N", int_literal(n)},
             {"EPS", float_literal(node.attr_float("epsilon", 1e-5f))},
             {"SCALE_N", int_literal(scale.numel())},
             {"THREADS", "256"}};
  k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = Dim3{std::min<int64_t>(rows, 65535LL * 16), 1, 1};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_layer_norm_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "LayerNormalization";
  def.infer = layer_norm_infer;
  def.reference = layer_norm_reference;
  def.lower = layer_norm_lower;
  registry.add(def);
  OpDef rms;
  rms.op_type = "RMSNormalization";
  rms.infer = rms_norm_infer;
  rms.reference = rms_norm_reference;
  rms.lower = rms_norm_lower;
  registry.add(rms);
}

}  // namespace aotc
