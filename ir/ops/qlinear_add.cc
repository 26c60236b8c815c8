// aotc.QLinearAdd (internal; made by opt/fuse_qdq from DequantizeLinear(a) + DequantizeLinear(b)
// [-> Relu / Clip] -> QuantizeLinear, never read from a model): the residual Add of an int8
// network on the int8 tensors. Inputs a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point (zero points optional, every scale and zero point one value), a and b of one shape
// (no broadcasting). Each element is computed in float in the order the unfused graph computes
// it, so the two agree bit for bit:
//   y = clamp(rint(((a - a_zp) * a_scale + (b - b_zp) * b_scale) / y_scale) + y_zp, qmin, qmax)
// qmin / qmax: the attributes (a fused Relu or Clip in the quantized domain), else the type's range.
// Dequantizing form (opt/fuse_dequantize_add: DequantizeLinear(a) + DequantizeLinear(b) [-> Relu]
// with a float result, as an int8 network's last residual Add before its float head): y_scale and
// y_zero_point absent, attribute `to` = y's float type (float, float16 or bfloat16), `relu` = 1 for
// a fused Relu; each operand is dequantized and rounded to y's type as DequantizeLinear stores it,
// then added in float and rounded again, as the unfused graph computes it:
//   y = relu?(T(T((a - a_zp) * a_scale) + T((b - b_zp) * b_scale)))
// The kernel's division by y_scale: IEEE (__fdiv_rn), or - where every scale and zero point is a
// constant and the result is proven the same for every pair of 8-bit inputs at compile time
// (qlinear_add_exact_reciprocal below) - the product with the rounded reciprocal and one FMA correction,
// three instructions instead of the division's sequence (an arithmetic-bound kernel,
// docs/perf_notes.md v24).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "templates/int8_requant.cuh"

namespace aotc {
namespace {

bool is_8bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
bool is_float_out(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// The dequantizing form: no y_scale.
bool dequantizing(const Node& node) { return node.input(6) == kNoValue; }

// v rounded to t's precision (float, float16 or bfloat16), as a float.
float round_to(DType t, float v) {
  if (t == DType::kFloat16) return half_to_float(float_to_half(v));
  if (t == DType::kBFloat16) return bfloat16_to_float(float_to_bfloat16(v));
  return v;
}

std::pair<int64_t, int64_t> add_clamp(const Node& node, DType y) { return quantized_clamp(node, y, true); }

Status qlinear_add_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 8));  // zero points optional; the rest checked below
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  for (size_t i : {size_t{0}, size_t{1}, size_t{3}, size_t{4}})
    if (node.input(i) == kNoValue) return node_error(node, "required input " + std::to_string(i) + " is missing");
  const Value& a = input_value(graph, node, 0);
  const Value& b = input_value(graph, node, 3);
  if (!is_8bit(a.dtype) || !is_8bit(b.dtype)) return node_error(node, "a and b must be int8 or uint8");
  if (a.shape != b.shape) return node_error(node, "a " + shape_str(a.shape) + " and b " + shape_str(b.shape) + " must have one shape");
  if (dequantizing(node)) {
    if (node.input(7) != kNoValue) return node_error(node, "a y_zero_point needs a y_scale");
    const DType to = static_cast<DType>(node.attr_int("to", static_cast<int64_t>(DType::kFloat32)));
    if (!is_float_out(to)) return node_error(node, "attribute to must be float, float16 or bfloat16");
    const int64_t relu = node.attr_int("relu", 0);
    if (relu != 0 && relu != 1) return node_error(node, "attribute relu must be 0 or 1");
  }
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}}) {
    if (node.input(i) == kNoValue) continue;  // y_scale: the dequantizing form
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {DType::kFloat32}));
    if (input_value(graph, node, i).numel() != 1) return node_error(node, "input " + std::to_string(i) + " must be one scale");
  }
  const std::pair<size_t, DType> zps[] = {{2, a.dtype}, {5, b.dtype}};
  for (auto [i, t] : zps)
    if (node.input(i) != kNoValue) {
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {t}));
      if (input_value(graph, node, i).numel() != 1) return node_error(node, "input " + std::to_string(i) + " must be one zero point");
    }
  if (dequantizing(node)) {
    set_output(graph, node, 0, static_cast<DType>(node.attr_int("to", static_cast<int64_t>(DType::kFloat32))), a.shape);
    return Status::ok();
  }
  DType y = DType::kUInt8;
  if (node.input(7) != kNoValue) {
    y = input_value(graph, node, 7).dtype;
    if (!is_8bit(y) || input_value(graph, node, 7).numel() != 1) return node_error(node, "y_zero_point must be one int8 or uint8");
  }
  const auto [lo, hi] = add_clamp(node, y);
  if (lo > hi) return node_error(node, "qmin " + std::to_string(lo) + " is above qmax " + std::to_string(hi));
  set_output(graph, node, 0, y, a.shape);
  return Status::ok();
}

Status qlinear_add_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  auto scalar = [&](size_t i) { return in.size() > i && in[i] ? static_cast<float>(in[i]->get(0)) : 0.f; };
  const float sa = scalar(1), za = scalar(2), sb = scalar(4), zb = scalar(5), sy = scalar(6), zy = scalar(7);
  Tensor& y = out[0];
  // The dequantizing form by its arguments (a caller's node may carry none: the fused residual
  // Add's reference in ir/ops/integer_matmul.cc passes y_scale as a tensor only).
  if (in.size() <= 6 || in[6] == nullptr) {
    const DType t = y.dtype();
    const bool relu = node.attr_int("relu", 0) == 1;
    for (int64_t i = 0; i < y.numel(); ++i) {
      const float fa = round_to(t, (static_cast<float>(in[0]->get(i)) - za) * sa);
      const float fb = round_to(t, (static_cast<float>(in[3]->get(i)) - zb) * sb);
      const float s = round_to(t, fa + fb);
      y.set(i, relu && !(s > 0.f) ? 0.0 : static_cast<double>(s));
    }
    return Status::ok();
  }
  const auto [lo, hi] = add_clamp(node, y.dtype());
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float fa = (static_cast<float>(in[0]->get(i)) - za) * sa;
    const float fb = (static_cast<float>(in[3]->get(i)) - zb) * sb;
    const float s = fa + fb;
    const double q = std::nearbyint(static_cast<double>(s / sy)) + static_cast<double>(zy);
    y.set_int(i, static_cast<int64_t>(std::min<double>(static_cast<double>(hi), std::max<double>(static_cast<double>(lo), q))));
  }
  return Status::ok();
}

Expected<Lowering> qlinear_add_lower(const Node& node, const Graph& graph) {
  const Value& a = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const bool float_out = dequantizing(node);
  const auto [lo, hi] = float_out ? std::pair<int64_t, int64_t>{0, 0} : add_clamp(node, y.dtype);
  // 16 elements per thread when both operands are 1-byte and the count divides: one 16-byte load
  // of each and 16 bytes of y a store (arena and I/O pointers are 256-byte aligned, so every
  // 16-element group is 16-byte aligned).
  const bool bytes = dtype_size(a.dtype) == 1 && dtype_size(input_value(graph, node, 3).dtype) == 1 &&
                     (float_out || dtype_size(y.dtype) == 1);
  const int64_t vec = bytes && y.numel() % 16 == 0 && a.numel() == y.numel() && input_value(graph, node, 3).numel() == y.numel() ? 16 : 1;
  // The reciprocal route where every scale and zero point is a constant and it is exact.
  auto constant = [&](size_t i, double absent) { return constant_scalar(graph, node, i, absent); };
  std::optional<float> rcp;
  const auto sa = constant(1, 1), za = constant(2, 0), sb = constant(4, 1), zb = constant(5, 0), sy = constant(6, 1);
  if (sa && za && sb && zb && sy && !float_out)
    rcp = qlinear_add_exact_reciprocal(static_cast<float>(*sa), static_cast<float>(*za), static_cast<float>(*sb),
                           static_cast<float>(*zb), static_cast<float>(*sy), a.dtype, input_value(graph, node, 3).dtype);
  uint32_t rcp_bits = 0;
  if (rcp) std::memcpy(&rcp_bits, &*rcp, sizeof rcp_bits);
  // The integer form where every scale and zero point is a constant and it is proven exact.
  std::optional<QLinearAddFixed> fixed;
  const auto zy = constant(7, 0);
  if (sa && za && sb && zb && sy && zy && !float_out)
    fixed = qlinear_add_exact_fixed(static_cast<float>(*sa), static_cast<float>(*za), static_cast<float>(*sb),
                                    static_cast<float>(*zb), static_cast<float>(*sy), static_cast<int>(*zy),
                                    static_cast<int>(lo), static_cast<int>(hi), a.dtype, input_value(graph, node, 3).dtype);
  const QLinearAddFixed fx = fixed.value_or(QLinearAddFixed{});
  KernelStep k;
  k.template_name = "qlinear_add";
  k.holes = {{"TA", dtype_c_type(a.dtype)}, {"TB", dtype_c_type(input_value(graph, node, 3).dtype)},
             {"TY", dtype_c_type(y.dtype)},
             {"has_a_zp", node.input(2) != kNoValue ? "true" : "false"},
             {"has_b_zp", node.input(5) != kNoValue ? "true" : "false"},
             {"has_y_zp", node.input(7) != kNoValue ? "true" : "false"},
             {"qmin", std::to_string(lo) + ".0"}, {"qmax", std::to_string(hi) + ".0"},
             {"n", int_literal(y.numel())},
             {"VEC", int_literal(vec)},
             {"RECIPROCAL", rcp ? "true" : "false"},
             {"rcp_bits", std::to_string(rcp_bits) + "u"},
             {"FLOAT_OUT", float_out ? "true" : "false"},
             {"FIXED", fixed ? "true" : "false"},
             {"fx_a", std::to_string(fx.a)}, {"fx_b", std::to_string(fx.b)}, {"fx_c", std::to_string(fx.c)},
             {"fx_k", std::to_string(fx.k)},
             {"RELU", float_out && node.attr_int("relu", 0) == 1 ? "true" : "false"},
             {"comment", "aotc.QLinearAdd " + shape_str(y.shape) + " " + dtype_name(y.dtype) +
                             (float_out ? " (dequantizing)" : "")}};
  auto arg = [&](size_t i) { return node.input(i) != kNoValue ? node.inputs[i] : kNullArg; };
  k.args = {arg(0), arg(1), arg(2), arg(3), arg(4), arg(5), arg(6), arg(7), node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel() / vec);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

// (op_helpers.h)
std::optional<float> qlinear_add_exact_reciprocal(float sa, float za, float sb, float zb, float sy, DType ta, DType tb) {
  if (!std::isnormal(sy) || !std::isfinite(sa) || !std::isfinite(sb)) return std::nullopt;
  const float r = 1.0f / sy;
  if (!std::isnormal(r)) return std::nullopt;
  const int a_lo = ta == DType::kInt8 ? -128 : 0, b_lo = tb == DType::kInt8 ? -128 : 0;
  for (int a = a_lo; a < a_lo + 256; ++a)
    for (int b = b_lo; b < b_lo + 256; ++b) {
      const float fa = static_cast<float>(a), fb = static_cast<float>(b);
      if (aotc_qlinear_add_rint(fa, za, sa, fb, zb, sb, sy, false, 0.0f) !=
          aotc_qlinear_add_rint(fa, za, sa, fb, zb, sb, sy, true, r))
        return std::nullopt;
    }
  return r;
}

// (op_helpers.h)
std::optional<QLinearAddFixed> qlinear_add_exact_fixed(float sa, float za, float sb, float zb, float sy, int zy,
                                                       int qmin, int qmax, DType ta, DType tb) {
  if (!std::isnormal(sy) || !std::isfinite(sa) || !std::isfinite(sb) || qmin > qmax) return std::nullopt;
  const int a_lo = ta == DType::kInt8 ? -128 : 0, b_lo = tb == DType::kInt8 ? -128 : 0;
  std::vector<int32_t> want(256 * 256);
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < 256; ++j)
      want[static_cast<size_t>(i * 256 + j)] = aotc_rq_clamp(
          aotc_qlinear_add_rint(static_cast<float>(a_lo + i), za, sa, static_cast<float>(b_lo + j), zb, sb, sy, false, 0.0f) + zy,
          qmin, qmax);
  const double ra = static_cast<double>(sa) / sy, rb = static_cast<double>(sb) / sy;
  const double r0 = (-static_cast<double>(za) * sa - static_cast<double>(zb) * sb) / sy + zy;
  if (!std::isfinite(ra) || !std::isfinite(rb) || !std::isfinite(r0)) return std::nullopt;
  auto reach = [](long long m, int lo) { return std::max(std::llabs(m * lo), std::llabs(m * (lo + 255))); };
  for (int k = 24; k >= 8; --k) {
    const double unit = std::ldexp(1.0, k);
    if (std::fabs(ra) * unit > 1e12 || std::fabs(rb) * unit > 1e12 || std::fabs(r0) * unit > 1e12) continue;
    const long long a = std::llround(ra * unit), b = std::llround(rb * unit);
    const long long c0 = std::llround(r0 * unit + unit / 2);  // + 1/2: floor as round half up
    for (int dc : {0, -1, 1, -2, 2}) {
      const long long c = c0 + dc;
      if (reach(a, a_lo) + reach(b, b_lo) + std::llabs(c) >= (1LL << 31)) continue;
      bool same = true;
      for (int i = 0; i < 256 && same; ++i)
        for (int j = 0; j < 256; ++j)
          if (aotc_rq_clamp(aotc_qlinear_add_fixed(a_lo + i, b_lo + j, static_cast<int32_t>(a), static_cast<int32_t>(b),
                                                   static_cast<int32_t>(c), k),
                            qmin, qmax) != want[static_cast<size_t>(i * 256 + j)]) {
            same = false;
            break;
          }
      if (same) return QLinearAddFixed{static_cast<int32_t>(a), static_cast<int32_t>(b), static_cast<int32_t>(c), k};
    }
  }
  return std::nullopt;
}

void register_qlinear_add_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "QLinearAdd";
  def.domain = "aotc";
  def.infer = qlinear_add_infer;
  def.reference = qlinear_add_reference;
  def.lower = qlinear_add_lower;
  def.traits.elementwise = true;  // one shape, scalar parameters: it follows NHWC chains
  registry.add(def);
}

}  // namespace aotc
