// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (uint8). Granularity: per tensor, per
// axis, or blocked (`block_size`: a scale per block of the axis), on the CPU and the GPU. Quantized
// types: int8/uint8, int16/uint16 and int32 (Dequantize only), int4/uint4/int2/uint2, the float8
// types and float4e2m1 (ir/small_dtypes.h; one byte per element on the GPU). Integer rounding is
// half to even (rintf) and results saturate, as the spec says; float8 follows Cast's tables
// (`saturate`). Arithmetic is float32 in the order of the ONNX reference (x / scale, + zero point;
// (x - zero point) * scale), or the `precision` attribute's type for the division (the CPU
// reference only), so the CPU reference and the kernels (templates/quantize_linear.cu.in, ...)
// give the same bits. Scales and zero points stay run-time inputs: the kernels read them through
// pointers.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/small_dtypes.h"

namespace aotc {
namespace {

// Which scale / zero point element x's element i uses: per tensor (index 0), per axis
// ((i / inner) % dim), or blocked (the element of the scale tensor whose axis coordinate is the
// block of i's axis coordinate).
struct AxisLayout {
  enum class Mode { kTensor, kAxis, kBlocked } mode = Mode::kTensor;
  int64_t inner = 1, dim = 1, block = 1, scale_dim = 1;
  int64_t channels() const { return mode == Mode::kAxis ? dim : 1; }
  int64_t index(int64_t i) const {
    switch (mode) {
      case Mode::kTensor: return 0;
      case Mode::kAxis: return (i / inner) % dim;
      case Mode::kBlocked: return ((i / (dim * inner)) * scale_dim + ((i / inner) % dim) / block) * inner + i % inner;
    }
    return 0;
  }
};

Expected<AxisLayout> axis_layout(const Node& node, const Shape& x, const Shape& scale, const Shape* zp) {
  AxisLayout l;
  // A zero point must have the scale's shape; a one-element zero point may go with a scalar scale.
  if (zp && *zp != scale && !(shape_numel(*zp) == 1 && shape_numel(scale) == 1 && zp->size() <= 1 && scale.size() <= 1))
    return node_error(node, "zero point shape " + shape_str(*zp) + " differs from scale shape " + shape_str(scale));
  const int64_t block = node.attr_int("block_size", 0);
  if (block < 0) return node_error(node, "block_size " + std::to_string(block) + " is negative");
  if (block == 0 && shape_numel(scale) == 1 && scale.size() <= 1) return l;
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 1), static_cast<int64_t>(x.size()));
  if (!axis) return axis.status();
  const size_t a = static_cast<size_t>(*axis);
  l.dim = x[a];
  for (size_t d = a + 1; d < x.size(); ++d) l.inner *= x[d];
  if (block == 0) {
    if (scale.size() != 1) return node_error(node, "scale must be a scalar or 1-D, got shape " + shape_str(scale));
    if (x[a] != scale[0])
      return node_error(node, "scale has " + std::to_string(scale[0]) + " elements, axis " + std::to_string(*axis) +
                                  " of the input has " + std::to_string(x[a]));
    l.mode = AxisLayout::Mode::kAxis;
    return l;
  }
  // Blocked: the scale has x's shape except ceil(D / block_size) on the axis.
  bool same = scale.size() == x.size();
  for (size_t d = 0; same && d < x.size(); ++d)
    if (d != a && scale[d] != x[d]) same = false;
  // ceil(D / block) without D + block - 1, which overflows for a block_size near 2^63 (fuzz find).
  if (!same || scale[a] != x[a] / block + (x[a] % block != 0 ? 1 : 0))
    return node_error(node, "blocked quantization needs a scale of shape " + shape_str(x) + " with ceil(" +
                                std::to_string(x[a]) + " / block_size " + std::to_string(block) + ") on axis " +
                                std::to_string(*axis) + ", got " + shape_str(scale));
  l.mode = AxisLayout::Mode::kBlocked;
  l.block = block;
  l.scale_dim = scale[a];
  return l;
}


// The spec's saturate(round(x / scale) + zero_point), in float (exact for these ranges).
float quantize_value(float x, float scale, float zp, float lo, float hi) {
  float v = std::nearbyint(x / scale) + zp;
  return std::min(hi, std::max(lo, v));
}

const std::vector<DType> kQuantizedTypes = {
    DType::kUInt8, DType::kInt8, DType::kUInt16, DType::kInt16, DType::kUInt4, DType::kInt4, DType::kUInt2,
    DType::kInt2, DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ,
    DType::kFloat4E2M1};
const std::vector<DType> kScaleTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

bool is_quantized_type(DType t) { return std::find(kQuantizedTypes.begin(), kQuantizedTypes.end(), t) != kQuantizedTypes.end(); }

// The `precision` attribute: the type of the division x / scale (0: float32, as before).
Expected<DType> division_type(const Node& node) {
  const int64_t p = node.attr_int("precision", 0);
  if (p == 0 || p == static_cast<int64_t>(DType::kFloat32)) return DType::kFloat32;
  if (p == static_cast<int64_t>(DType::kFloat16) || p == static_cast<int64_t>(DType::kBFloat16) ||
      p == static_cast<int64_t>(DType::kFloat64))
    return static_cast<DType>(p);
  return node_error(node, "precision " + std::to_string(p) + " is not float, float16, bfloat16 or double");
}

// x / scale in `t` (operands and quotient rounded to t, like numpy in that type).
double divide_in(DType t, double x, double scale) {
  switch (t) {
    case DType::kFloat64: return x / scale;
    case DType::kFloat16:
      return half_to_float(float_to_half(half_to_float(float_to_half(static_cast<float>(x))) /
                                         half_to_float(float_to_half(static_cast<float>(scale)))));
    case DType::kBFloat16:
      return bfloat16_to_float(float_to_bfloat16(bfloat16_to_float(float_to_bfloat16(static_cast<float>(x))) /
                                                 bfloat16_to_float(float_to_bfloat16(static_cast<float>(scale)))));
    default: return static_cast<float>(x) / static_cast<float>(scale);
  }
}

Status quantize_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32}));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, kScaleTypes));
  const int64_t output_dtype = node.attr_int("output_dtype", 0);
  DType out = DType::kUInt8;
  if (output_dtype != 0) {
    if (!dtype_is_known(static_cast<int32_t>(output_dtype)) || !is_quantized_type(static_cast<DType>(output_dtype)))
      return node_error(node, "output_dtype " + std::to_string(output_dtype) + " is not a quantized type aotc supports");
    out = static_cast<DType>(output_dtype);
  }
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, kQuantizedTypes));
    const DType zp = input_value(graph, node, 2).dtype;
    if (output_dtype != 0 && zp != out)
      return node_error(node, "output_dtype " + dtype_name(out) + " differs from the zero point's dtype " + dtype_name(zp));
    out = zp;
  }
  auto div = division_type(node);
  if (!div) return div.status();
  const Value& x = input_value(graph, node, 0);
  auto l = axis_layout(node, x.shape, input_value(graph, node, 1).shape, optional_input_shape(graph, node, 2));
  if (!l) return l.status();
  set_output(graph, node, 0, out, x.shape);
  return Status::ok();
}

Status quantize_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Tensor& x = *in[0];
  const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
  auto l = axis_layout(node, x.shape(), in[1]->shape(), zp ? &zp->shape() : nullptr);
  if (!l) return l.status();
  auto div = division_type(node);
  if (!div) return div.status();
  Tensor& y = out[0];
  const DType t = y.dtype();
  const bool saturate = node.attr_int("saturate", 1) != 0;
  float lo = 0, hi = 0;
  const bool integer = quant_range(t, &lo, &hi);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = l->index(i);
    const double xv = x.dtype() == DType::kInt32 ? static_cast<double>(x.get_int(i)) : x.get(i);
    const double z = zp ? zp->get(c) : 0.0;
    if (integer && *div == DType::kFloat32) {
      y.set_int(i, static_cast<int64_t>(quantize_value(static_cast<float>(xv), static_cast<float>(in[1]->get(c)),
                                                       static_cast<float>(z), lo, hi)));
      continue;
    }
    const double q = divide_in(*div, xv, in[1]->get(c));
    if (integer) {
      y.set_int(i, static_cast<int64_t>(std::min<double>(hi, std::max<double>(lo, std::nearbyint(q) + z))));
    } else {  // float8 / float4: the Cast conversion of x / scale (+ a zero point, zero in practice)
      y.data<uint8_t>()[i] = small_float_encode(t, static_cast<float>(q + z), saturate);
    }
  }
  return Status::ok();
}

// The GPU kernels cover per-tensor, per-axis and blocked quantization of every quantized type (the
// 4-bit / 2-bit integers and the float8 / float4 types one byte per element) with float32 division.
Status refuse_on_gpu(const Node& node, const Graph&, const AxisLayout&) {
  auto div = division_type(node);
  if (!div) return div.status();
  if (*div != DType::kFloat32)
    return node_error(node, "precision " + dtype_name(*div) + " has no GPU lowering (the CPU reference only)");
  return Status::ok();
}

// CUDA text of the scale / zero-point index of element i (AxisLayout::index).
std::string channel_expr(const AxisLayout& l) {
  switch (l.mode) {
    case AxisLayout::Mode::kTensor: return "0LL";
    case AxisLayout::Mode::kAxis: return "(i / " + int_literal(l.inner) + ") % " + int_literal(l.dim);
    case AxisLayout::Mode::kBlocked:
      return "((i / (" + int_literal(l.dim) + " * " + int_literal(l.inner) + ")) * " + int_literal(l.scale_dim) +
             " + ((i / " + int_literal(l.inner) + ") % " + int_literal(l.dim) + ") / " + int_literal(l.block) + ") * " +
             int_literal(l.inner) + " + i % " + int_literal(l.inner);
  }
  return "0LL";
}

// CUDA text of a quantized element `ref` (of type t) as float: small floats decoded.
std::string quantized_as_float(DType t, const std::string& ref) {
  if (dtype_is_small_float(t)) return "(float)aotc_sf_decode(" + std::to_string(static_cast<int>(t)) + ", " + ref + ")";
  return "static_cast<float>(" + ref + ")";
}

Expected<Lowering> quantize_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  auto l = axis_layout(node, x.shape, input_value(graph, node, 1).shape, optional_input_shape(graph, node, 2));
  if (!l) return l.status();
  AOTC_RETURN_IF_ERROR(refuse_on_gpu(node, graph, *l));
  Lowering low;
  if (x.numel() == 0) return low;
  float lo = 0, hi = 0;
  const bool integer = quant_range(y.dtype, &lo, &hi);
  const std::string id = std::to_string(static_cast<int>(y.dtype));
  const std::string store =
      integer ? "const float v = fminf(" + float_literal(hi) + ", fmaxf(" + float_literal(lo) +
                    ", rintf(q) + zp)); y[i] = static_cast<" + dtype_c_type(y.dtype) + ">(v);"
              : "y[i] = aotc_sf_encode(" + id + ", (double)(q + zp), " +
                    (node.attr_int("saturate", 1) != 0 ? "true" : "false") + ", 0);";
  // 16 elements a thread (one 16-byte store of an 8-bit y, 16 * sizeof(T) bytes of x in 16-byte
  // loads) for a per-tensor 8-bit quantization of a float x whose count divides, both values at
  // their own 256-byte aligned addresses (not inside another value's rows): ResNet-50 int8 bs32's
  // stem output (6.4 M halves) took 19 us one element a thread on an H200 (docs/perf_notes.md v55).
  const bool float_x = x.dtype == DType::kFloat32 || x.dtype == DType::kFloat16 || x.dtype == DType::kBFloat16;
  const bool vec = integer && dtype_size(y.dtype) == 1 && float_x && l->mode == AxisLayout::Mode::kTensor &&
                   x.numel() % 16 == 0 && graph.value(node.inputs[0]).stored_in == kNoValue &&
                   graph.value(node.outputs[0]).stored_in == kNoValue;
  KernelStep k;
  k.template_name = "quantize_linear";
  k.holes = {{"T", dtype_c_type(x.dtype)}, {"S", dtype_c_type(input_value(graph, node, 1).dtype)},
             {"Q", dtype_c_type(y.dtype)}, {"has_zp", node.input(2) != kNoValue ? "true" : "false"},
             {"zp_value", quantized_as_float(y.dtype, "zero_point[c]")}, {"store", store},
             {"VEC", vec ? "16LL" : "1LL"},
             {"value", integer ? "fminf(" + float_literal(hi) + ", fmaxf(" + float_literal(lo) + ", rintf(q) + zp))" : "0.f"},
             {"n", int_literal(x.numel())}, {"channel", channel_expr(*l)},
             {"comment", "QuantizeLinear " + shape_str(x.shape) + " " + dtype_name(x.dtype) + " -> " + dtype_name(y.dtype) +
                             (l->mode == AxisLayout::Mode::kBlocked ? " blocked" : l->channels() > 1 ? " per-axis" : " per-tensor")}};
  k.args = {node.inputs[0], node.inputs[1], node.input(2) != kNoValue ? node.inputs[2] : kNullArg, node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(vec ? x.numel() / 16 : x.numel());
  low.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return low;
}

Status dequantize_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  std::vector<DType> inputs = kQuantizedTypes;
  inputs.push_back(DType::kInt32);
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, inputs));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, kScaleTypes));
  const Value& x = input_value(graph, node, 0);
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {x.dtype}));
    const Value& zp = input_value(graph, node, 2);
    // The spec requires int32 (and float8) zero points to be 0; a constant one we can check now.
    if ((x.dtype == DType::kInt32 || dtype_is_small_float(x.dtype)) && zp.constant)
      for (int64_t i = 0; i < zp.constant->numel(); ++i)
        if (zp.constant->get(i) != 0) return node_error(node, "an " + dtype_name(x.dtype) + " input needs a zero point of 0");
  }
  DType out = input_value(graph, node, 1).dtype;
  const int64_t output_dtype = node.attr_int("output_dtype", 0);
  if (output_dtype != 0) {
    if (output_dtype != static_cast<int64_t>(DType::kFloat32) && output_dtype != static_cast<int64_t>(DType::kFloat16) &&
        output_dtype != static_cast<int64_t>(DType::kBFloat16))
      return node_error(node, "output_dtype " + std::to_string(output_dtype) + " is not float, float16 or bfloat16");
    out = static_cast<DType>(output_dtype);
  }
  auto l = axis_layout(node, x.shape, input_value(graph, node, 1).shape, optional_input_shape(graph, node, 2));
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
    const int64_t c = l->index(i);
    const float z = zp ? static_cast<float>(zp->get(c)) : 0.f;
    const float xv = x.dtype() == DType::kInt32 ? static_cast<float>(x.get_int(i)) : static_cast<float>(x.get(i));
    out[0].set(i, (xv - z) * static_cast<float>(in[1]->get(c)));
  }
  return Status::ok();
}

Expected<Lowering> dequantize_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  auto l = axis_layout(node, x.shape, input_value(graph, node, 1).shape, optional_input_shape(graph, node, 2));
  if (!l) return l.status();
  AOTC_RETURN_IF_ERROR(refuse_on_gpu(node, graph, *l));
  Lowering low;
  if (x.numel() == 0) return low;
  KernelStep k;
  k.template_name = "dequantize_linear";
  k.holes = {{"Q", dtype_c_type(x.dtype)}, {"S", dtype_c_type(input_value(graph, node, 1).dtype)},
             {"T", dtype_c_type(y.dtype)}, {"has_zp", node.input(2) != kNoValue ? "true" : "false"},
             {"x_value", quantized_as_float(x.dtype, "x[i]")}, {"zp_value", quantized_as_float(x.dtype, "zero_point[c]")},
             {"n", int_literal(x.numel())}, {"channel", channel_expr(*l)},
             {"comment", "DequantizeLinear " + shape_str(x.shape) + " " + dtype_name(x.dtype) + " -> " + dtype_name(y.dtype) +
                             (l->mode == AxisLayout::Mode::kBlocked ? " blocked" : l->channels() > 1 ? " per-axis" : " per-tensor")}};
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
Status dynamic_quantize_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Tensor& x = *in[0];
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, x.data<float>()[i]);
    hi = std::max(hi, x.data<float>()[i]);
  }
  const float scale = (hi == lo ? 1.f : hi - lo) / 255.f;
  const float zp = std::nearbyint(std::min(255.f, std::max(0.f, 0.f - lo / scale)));
  // An output given an empty name is absent: a default (empty) tensor in `out`, not written (a
  // fuzz find: all three absent on a folded input stored through a null pointer, UBSan, 2026-11-28).
  auto present = [&](size_t i) { return node.outputs.size() > i && node.outputs[i] != kNoValue; };
  if (present(0))
    for (int64_t i = 0; i < x.numel(); ++i)
      out[0].data<uint8_t>()[i] = static_cast<uint8_t>(quantize_value(x.data<float>()[i], scale, zp, 0.f, 255.f));
  if (present(1)) out[1].data<float>()[0] = scale;
  if (present(2)) out[2].data<uint8_t>()[0] = static_cast<uint8_t>(zp);
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

bool quant_range(DType t, float* lo, float* hi) {
  switch (t) {
    case DType::kInt8: *lo = -128.f; *hi = 127.f; return true;
    case DType::kUInt8: *lo = 0.f; *hi = 255.f; return true;
    case DType::kInt16: *lo = -32768.f; *hi = 32767.f; return true;
    case DType::kUInt16: *lo = 0.f; *hi = 65535.f; return true;
    case DType::kInt4: case DType::kUInt4: case DType::kInt2: case DType::kUInt2:
      *lo = static_cast<float>(small_int_min(t));
      *hi = static_cast<float>(small_int_max(t));
      return true;
    default: return false;  // the float types: rounded by small_float_encode
  }
}

std::optional<float> fp16_quantize_reciprocal(float scale, float zp, float lo, float hi) {
  const float r = 1.0f / scale;
  if (!std::isnormal(scale) || !std::isnormal(r)) return std::nullopt;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float x = half_to_float(static_cast<uint16_t>(bits));
    volatile float product = x * r;  // one rounding, as the kernel's __fmul_rn
    const float by_product = std::min(hi, std::max(lo, std::nearbyint(static_cast<float>(product)) + zp));
    const float by_division = quantize_value(x, scale, zp, lo, hi);
    if (!(by_product == by_division)) return std::nullopt;  // every x clamps to a number: no NaN here
  }
  return r;
}

void register_quantize_ops(OpRegistry& registry) {
  OpDef q;
  q.op_type = "QuantizeLinear";
  q.infer = quantize_infer;
  q.reference = quantize_reference;
  q.lower = quantize_lower;
  // Per tensor (a scalar scale), which is what the layout pass checks before moving it to NHWC.
  q.traits.elementwise = true;
  q.traits.gpu_small_dtypes = true;
  registry.add(q);
  OpDef d;
  d.op_type = "DequantizeLinear";
  d.infer = dequantize_infer;
  d.reference = dequantize_reference;
  d.lower = dequantize_lower;
  d.traits.fold_in_pipeline_only = true;
  d.traits.elementwise = true;  // per tensor; see QuantizeLinear
  d.traits.gpu_small_dtypes = true;
  registry.add(d);
  OpDef dq;
  dq.op_type = "DynamicQuantizeLinear";
  dq.infer = dynamic_quantize_infer;
  dq.reference = dynamic_quantize_reference;
  dq.lower = dynamic_quantize_lower;
  registry.add(dq);
}

}  // namespace aotc
