// aotc.QLinearAdd (internal; made by opt/fuse_qdq from DequantizeLinear(a) + DequantizeLinear(b)
// [-> Relu / Clip] -> QuantizeLinear, never read from a model): the residual Add of an int8
// network on the int8 tensors. Inputs a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point (zero points optional, every scale and zero point one value), a and b of one shape
// (no broadcasting). Each element is computed in float in the order the unfused graph computes
// it, so the two agree bit for bit:
//   y = clamp(rint(((a - a_zp) * a_scale + (b - b_zp) * b_scale) / y_scale) + y_zp, qmin, qmax)
// qmin / qmax: the attributes (a fused Relu or Clip in the quantized domain), else the type's range.
// The kernel's division by y_scale: IEEE (__fdiv_rn), or - where every scale and zero point is a
// constant and the result is proven the same for every pair of 8-bit inputs at compile time
// (qlinear_add_exact_reciprocal below) - the product with the rounded reciprocal and one FMA correction,
// three instructions instead of the division's sequence (an arithmetic-bound kernel,
// docs/perf_notes.md v24).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "templates/int8_requant.cuh"

namespace aotc {
namespace {

bool is_8bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

std::pair<int64_t, int64_t> add_clamp(const Node& node, DType y) { return quantized_clamp(node, y, true); }

Status qlinear_add_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 8));  // zero points optional; the rest checked below
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  for (size_t i : {size_t{0}, size_t{1}, size_t{3}, size_t{4}, size_t{6}})
    if (node.input(i) == kNoValue) return node_error(node, "required input " + std::to_string(i) + " is missing");
  const Value& a = input_value(graph, node, 0);
  const Value& b = input_value(graph, node, 3);
  if (!is_8bit(a.dtype) || !is_8bit(b.dtype)) return node_error(node, "a and b must be int8 or uint8");
  if (a.shape != b.shape) return node_error(node, "a " + shape_str(a.shape) + " and b " + shape_str(b.shape) + " must have one shape");
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}}) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {DType::kFloat32}));
    if (input_value(graph, node, i).numel() != 1) return node_error(node, "input " + std::to_string(i) + " must be one scale");
  }
  const std::pair<size_t, DType> zps[] = {{2, a.dtype}, {5, b.dtype}};
  for (auto [i, t] : zps)
    if (node.input(i) != kNoValue) {
      AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {t}));
      if (input_value(graph, node, i).numel() != 1) return node_error(node, "input " + std::to_string(i) + " must be one zero point");
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
  const auto [lo, hi] = add_clamp(node, y.dtype);
  // 16 one-byte elements per thread when all three tensors are 1-byte and the count divides
  // (arena and I/O pointers are 256-byte aligned, so every 16-element group is 16-byte aligned).
  const bool bytes = dtype_size(a.dtype) == 1 && dtype_size(input_value(graph, node, 3).dtype) == 1 && dtype_size(y.dtype) == 1;
  const int64_t vec = bytes && y.numel() % 16 == 0 && a.numel() == y.numel() && input_value(graph, node, 3).numel() == y.numel() ? 16 : 1;
  // The reciprocal route where every scale and zero point is a constant and it is exact.
  auto constant = [&](size_t i, double absent) { return constant_scalar(graph, node, i, absent); };
  std::optional<float> rcp;
  const auto sa = constant(1, 1), za = constant(2, 0), sb = constant(4, 1), zb = constant(5, 0), sy = constant(6, 1);
  if (sa && za && sb && zb && sy)
    rcp = qlinear_add_exact_reciprocal(static_cast<float>(*sa), static_cast<float>(*za), static_cast<float>(*sb),
                           static_cast<float>(*zb), static_cast<float>(*sy), a.dtype, input_value(graph, node, 3).dtype);
  uint32_t rcp_bits = 0;
  if (rcp) std::memcpy(&rcp_bits, &*rcp, sizeof rcp_bits);
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
             {"comment", "aotc.QLinearAdd " + shape_str(y.shape) + " " + dtype_name(y.dtype)}};
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
