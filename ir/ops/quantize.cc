// QuantizeLinear, DequantizeLinear (per-tensor and per-axis; int8/uint8, and int32 for Dequantize)
// and DynamicQuantizeLinear (uint8). Rounding is half to even (rintf) and results saturate, as the
// spec says; arithmetic is float32 in the same order as the ONNX reference, so the CPU reference and
// the kernels (templates/quantize_linear.cu.in, ...) give the same bits. Scales and zero points
// stay run-time inputs: the kernels read them through pointers.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

// Where a per-axis parameter's index comes from: element i uses channel (i / inner) % channels.
struct AxisLayout {
  int64_t inner = 1, channels = 1;  // channels == 1: per tensor
};

Expected<AxisLayout> axis_layout(const Node& node, const Shape& x, const Shape& scale, const Shape* zp) {
  AxisLayout l;
  if (zp && *zp != scale) return node_error(node, "zero point shape " + shape_str(*zp) + " differs from scale shape " + shape_str(scale));
  if (node.has_attr("block_size") && node.attr_int("block_size", 0) != 0)
    return node_error(node, "blocked quantization (block_size) is not supported");
  if (shape_numel(scale) == 1 && scale.size() <= 1) return l;
  if (scale.size() != 1) return node_error(node, "scale must be a scalar or 1-D, got shape " + shape_str(scale));
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 1), static_cast<int64_t>(x.size()));
  if (!axis) return axis.status();
  if (x[static_cast<size_t>(*axis)] != scale[0])
    return node_error(node, "scale has " + std::to_string(scale[0]) + " elements, axis " + std::to_string(*axis) +
                                " of the input has " + std::to_string(x[static_cast<size_t>(*axis)]));
  l.channels = scale[0];
  for (size_t d = static_cast<size_t>(*axis) + 1; d < x.size(); ++d) l.inner *= x[d];
  return l;
}

void quant_range(DType t, float* lo, float* hi) {
  if (t == DType::kInt8) { *lo = -128.f; *hi = 127.f; }
  else { *lo = 0.f; *hi = 255.f; }
}

// The spec's saturate(round(x / scale) + zero_point), in float (exact for these ranges).
float quantize_value(float x, float scale, float zp, float lo, float hi) {
  float v = std::nearbyint(x / scale) + zp;
  return std::min(hi, std::max(lo, v));
}

const Shape* optional_shape(const Graph& graph, const Node& node, size_t index) {
  return node.input(index) == kNoValue ? nullptr : &input_value(graph, node, index).shape;
}

Status quantize_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kFloat32, DType::kFloat16, DType::kInt32}));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kFloat32, DType::kFloat16}));
  DType out = DType::kUInt8;
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {DType::kUInt8, DType::kInt8}));
    out = input_value(graph, node, 2).dtype;
  }
  if (node.has_attr("output_dtype") && node.attr_int("output_dtype", 0) != 0 &&
      node.attr_int("output_dtype", 0) != static_cast<int64_t>(out))
    return node_error(node, "output_dtype " + std::to_string(node.attr_int("output_dtype", 0)) +
                                " is not supported (only uint8/int8 matching the zero point)");
  if (node.has_attr("precision") && node.attr_int("precision", 0) != 0)
    return node_error(node, "the precision attribute is not supported");
  const Value& x = input_value(graph, node, 0);
  auto l = axis_layout(node, x.shape, input_value(graph, node, 1).shape, optional_shape(graph, node, 2));
  if (!l) return l.status();
  set_output(graph, node, 0, out, x.shape);
  return Status::ok();
}

Status quantize_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Tensor& x = *in[0];
  const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
  auto l = axis_layout(node, x.shape(), in[1]->shape(), zp ? &zp->shape() : nullptr);
  if (!l) return l.status();
  float lo, hi;
  quant_range(out[0].dtype(), &lo, &hi);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / l->inner) % l->channels;
    const float z = zp ? static_cast<float>(zp->get_int(c)) : 0.f;
    float xv = x.dtype() == DType::kInt32 ? static_cast<float>(x.get_int(i)) : static_cast<float>(x.get(i));
    out[0].set_int(i, static_cast<int64_t>(quantize_value(xv, static_cast<float>(in[1]->get(c)), z, lo, hi)));
  }
  return Status::ok();
}

Expected<Lowering> quantize_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  auto l = axis_layout(node, x.shape, input_value(graph, node, 1).shape, optional_shape(graph, node, 2));
  if (!l) return l.status();
  Lowering low;
  if (x.numel() == 0) return low;
  float lo, hi;
  quant_range(y.dtype, &lo, &hi);
  KernelStep k;
  k.template_name = "quantize_linear";
  k.holes = {{"T", dtype_c_type(x.dtype)}, {"S", dtype_c_type(input_value(graph, node, 1).dtype)},
             {"Q", dtype_c_type(y.dtype)}, {"has_zp", node.input(2) != kNoValue ? "true" : "false"},
             {"qmin", float_literal(lo)}, {"qmax", float_literal(hi)},
             {"n", int_literal(x.numel())}, {"inner", int_literal(l->inner)}, {"channels", int_literal(l->channels)},
             {"comment", "QuantizeLinear " + shape_str(x.shape) + " " + dtype_name(x.dtype) + " -> " + dtype_name(y.dtype) +
                             (l->channels > 1 ? " per-axis" : " per-tensor")}};
  k.args = {node.inputs[0], node.inputs[1], node.input(2) != kNoValue ? node.inputs[2] : kNullArg, node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel());
  low.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return low;
}

Status dequantize_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kUInt8, DType::kInt8, DType::kInt32}));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kFloat32, DType::kFloat16}));
  const Value& x = input_value(graph, node, 0);
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {x.dtype}));
    const Value& zp = input_value(graph, node, 2);
    // The spec requires int32 zero points to be 0; a constant one we can check now.
    if (x.dtype == DType::kInt32 && zp.constant)
      for (int64_t i = 0; i < zp.constant->numel(); ++i)
        if (zp.constant->get_int(i) != 0) return node_error(node, "an int32 input needs a zero point of 0");
  }
  const DType out = input_value(graph, node, 1).dtype;
  if (node.has_attr("output_dtype") && node.attr_int("output_dtype", 0) != 0 &&
      node.attr_int("output_dtype", 0) != static_cast<int64_t>(out))
    return node_error(node, "output_dtype must equal the scale's dtype");
  auto l = axis_layout(node, x.shape, input_value(graph, node, 1).shape, optional_shape(graph, node, 2));
  if (!l) return l.status();
  set_output(graph, node, 0, out, x.shape);
  return Status::ok();
}

Status dequantize_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Tensor& x = *in[0];
  const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
  auto l = axis_layout(node, x.shape(), in[1]->shape(), zp ? &zp->shape() : nullptr);
  if (!l) return l.status();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / l->inner) % l->channels;
    const float z = zp ? static_cast<float>(zp->get_int(c)) : 0.f;
    const float v = (static_cast<float>(x.get_int(i)) - z) * static_cast<float>(in[1]->get(c));
    out[0].set(i, v);
  }
  return Status::ok();
}

Expected<Lowering> dequantize_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  auto l = axis_layout(node, x.shape, input_value(graph, node, 1).shape, optional_shape(graph, node, 2));
  if (!l) return l.status();
  Lowering low;
  if (x.numel() == 0) return low;
  KernelStep k;
  k.template_name = "dequantize_linear";
  k.holes = {{"Q", dtype_c_type(x.dtype)}, {"S", dtype_c_type(input_value(graph, node, 1).dtype)},
             {"T", dtype_c_type(y.dtype)}, {"has_zp", node.input(2) != kNoValue ? "true" : "false"},
             {"n", int_literal(x.numel())}, {"inner", int_literal(l->inner)}, {"channels", int_literal(l->channels)},
             {"comment", "DequantizeLinear " + shape_str(x.shape) + " " + dtype_name(x.dtype) + " -> " + dtype_name(y.dtype) +
                             (l->channels > 1 ? " per-axis" : " per-tensor")}};
  k.args = {node.inputs[0], node.inputs[1], node.input(2) != kNoValue ? node.inputs[2] : kNullArg, node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel());
  low.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return low;
}

Status dynamic_quantize_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 3) return node_error(node, "expects 3 outputs (y, y_scale, y_zero_point)");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kFloat32}));
  set_output(graph, node, 0, DType::kUInt8, input_value(graph, node, 0).shape);
  set_output(graph, node, 1, DType::kFloat32, {});
  set_output(graph, node, 2, DType::kUInt8, {});
  return Status::ok();
}

// The spec's formulas with the reference's guard: a range of zero (all x == 0) gives scale 1.
Status dynamic_quantize_reference(const Node&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Tensor& x = *in[0];
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, x.data<float>()[i]);
    hi = std::max(hi, x.data<float>()[i]);
  }
  const float scale = (hi == lo ? 1.f : hi - lo) / 255.f;
  const float zp = std::nearbyint(std::min(255.f, std::max(0.f, 0.f - lo / scale)));
  for (int64_t i = 0; i < x.numel(); ++i)
    out[0].data<uint8_t>()[i] = static_cast<uint8_t>(quantize_value(x.data<float>()[i], scale, zp, 0.f, 255.f));
  out[1].data<float>()[0] = scale;
  out[2].data<uint8_t>()[0] = static_cast<uint8_t>(zp);
  return Status::ok();
}

Expected<Lowering> dynamic_quantize_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering low;
  KernelStep k;
  k.template_name = "dynamic_quantize_linear";
  k.holes = {{"n", int_literal(x.numel())}, {"comment", "DynamicQuantizeLinear " + shape_str(x.shape) + " float -> uint8"}};
  k.args = {node.inputs[0], node.outputs[0], node.outputs[1], node.outputs[2]};
  // One block: the min/max reduction and the quantization share the block's synchronisation.
  k.block = Dim3{256, 1, 1};
  k.grid = Dim3{1, 1, 1};
  low.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return low;
}

}  // namespace

void register_quantize_ops(OpRegistry& registry) {
  OpDef q;
  q.op_type = "QuantizeLinear";
  q.infer = quantize_infer;
  q.reference = quantize_reference;
  q.lower = quantize_lower;
  registry.add(q);
  OpDef d;
  d.op_type = "DequantizeLinear";
  d.infer = dequantize_infer;
  d.reference = dequantize_reference;
  d.lower = dequantize_lower;
  registry.add(d);
  OpDef dq;
  dq.op_type = "DynamicQuantizeLinear";
  dq.infer = dynamic_quantize_infer;
  dq.reference = dynamic_quantize_reference;
  dq.lower = dynamic_quantize_lower;
  registry.add(dq);
}

}  // namespace aotc
