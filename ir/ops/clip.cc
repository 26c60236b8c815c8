// Clip: y = min(max(x, lo), hi), over every numeric dtype. Canonical IR form (ir/ops/epilogue.h):
// constant bounds live in float attributes "min"/"max" so conv/gemm epilogues can absorb the op;
// a bound that is not constant (or not exactly a float) stays an input. NaN propagates; when
// lo > hi every element becomes hi, as the spec says (max applied after min).
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/op_registry.h"
#include "ir/ops/elem_types.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kClipTypes = {
    DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt8,
    DType::kInt16,   DType::kInt32,   DType::kInt64,   DType::kUInt8,    DType::kUInt16,
    DType::kUInt32,  DType::kUInt64};

const char* bound_attr(size_t input_index) { return input_index == 1 ? "min" : "max"; }

// The value of a one-element constant bound as a float attribute, when that is exact.
bool exact_float_bound(const Tensor& t, float* out) {
  if (t.numel() != 1) return false;
  if (dtype_is_integer(t.dtype())) {
    int64_t v = t.get_int(0);
    if (t.dtype() == DType::kUInt64 && v < 0) return false;  // above INT64_MAX
    float f = static_cast<float>(v);
    // 2^63 is a float but no int64: check the range before converting back.
    if (!(f >= -9223372036854775808.0f && f < 9223372036854775808.0f)) return false;
    if (static_cast<int64_t>(f) != v) return false;
    *out = f;
    return true;
  }
  double v = t.get(0);
  float f = static_cast<float>(v);
  if (!(static_cast<double>(f) == v) && !std::isnan(v)) return false;
  *out = f;
  return true;
}

Status clip_import(Node& node, Graph& graph, int64_t opset) {
  if (opset < 11) {
    // Clip-1/6: bounds are attributes with defaults -/+FLT_MAX (which do change +-inf).
    if (!node.has_attr("min")) node.attrs["min"] = Attribute::of_float(std::numeric_limits<float>::lowest());
    if (!node.has_attr("max")) node.attrs["max"] = Attribute::of_float(std::numeric_limits<float>::max());
    node.attrs.erase("consumed_inputs");
    return Status::ok();
  }
  for (size_t i = 1; i <= 2 && i < node.inputs.size(); ++i) {
    ValueId id = node.inputs[i];
    if (id == kNoValue || !graph.value(id).constant) continue;
    float f;
    if (!exact_float_bound(*graph.value(id).constant, &f)) continue;  // stays an input
    node.attrs[bound_attr(i)] = Attribute::of_float(f);
    node.inputs[i] = kNoValue;
  }
  while (node.inputs.size() > 1 && node.inputs.back() == kNoValue) node.inputs.pop_back();
  return Status::ok();
}

Status clip_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kClipTypes));
  const Value& x = input_value(graph, node, 0);
  for (size_t i = 1; i <= 2; ++i) {
    if (node.input(i) == kNoValue) continue;
    const Value& b = input_value(graph, node, i);
    if (b.dtype != x.dtype)
      return node_error(node, std::string(bound_attr(i)) + " input has dtype " + dtype_name(b.dtype) +
                                  ", expected " + dtype_name(x.dtype) + " like the input");
    if (b.numel() != 1)
      return node_error(node, std::string(bound_attr(i)) + " input must be a scalar, has shape " +
                                  shape_str(b.shape));
    if (node.has_attr(bound_attr(i)))
      return node_error(node, std::string(bound_attr(i)) + " is given both as attribute and input");
  }
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

// double -> C without UB: saturates at C's range (NaN stays NaN for floats, 0 for integers).
template <class C>
C saturate_to(double v) {
  if constexpr (std::is_integral_v<C>) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<C>::lowest())) return std::numeric_limits<C>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
  }
  return static_cast<C>(v);
}

Status clip_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                      std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const Tensor* lo_t = inputs.size() > 1 ? inputs[1] : nullptr;
  const Tensor* hi_t = inputs.size() > 2 ? inputs[2] : nullptr;
  bool ok = visit_numeric(x.dtype(), [&](auto tag) {
    using E = decltype(tag);
    using C = typename E::Compute;
    bool has_lo = lo_t || node.has_attr("min");
    bool has_hi = hi_t || node.has_attr("max");
    C lo = lo_t ? E::load(*lo_t, 0) : saturate_to<C>(node.attr_float("min", 0));
    C hi = hi_t ? E::load(*hi_t, 0) : saturate_to<C>(node.attr_float("max", 0));
    for (int64_t i = 0; i < x.numel(); ++i) {
      C v = E::load(x, i);
      if (has_lo && v < lo) v = lo;  // NaN compares false: stays NaN
      if (has_hi && v > hi) v = hi;
      E::store(y, i, v);
    }
  });
  if (!ok) return node_error(node, "no reference for dtype " + dtype_name(x.dtype()));
  return Status::ok();
}

// The clip of `x` by the attribute bounds, optionally comparing in C type `ct` (integer lowering
// must not compare through float). Bounds given as inputs use `lo_ref`/`hi_ref` instead.
std::string clip_expr(const Node& node, const std::string& x, const std::string& ct,
                      const std::string& lo_ref, const std::string& hi_ref) {
  auto bound = [&](const char* name, const std::string& ref) -> std::string {
    if (!ref.empty()) return ref;
    if (!node.has_attr(name)) return "";
    std::string lit = float_literal(node.attr_float(name, 0));
    return ct.empty() ? lit : "static_cast<" + ct + ">(" + lit + ")";
  };
  std::string lo = bound("min", lo_ref), hi = bound("max", hi_ref);
  std::string e = x;
  if (!lo.empty()) e = "(" + e + " < " + lo + " ? " + lo + " : " + e + ")";
  if (!hi.empty()) e = "(" + e + " > " + hi + " ? " + hi + " : " + e + ")";
  return e;
}

std::string clip_scalar_expr(const Node& node, const Graph&, const std::string& x) {
  return clip_expr(node, x, "", "", "");
}

Expected<Lowering> clip_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  std::string ct = x.dtype == DType::kFloat16 || x.dtype == DType::kBFloat16 ? "float" : dtype_c_type(x.dtype);
  bool dynamic = node.input(1) != kNoValue || node.input(2) != kNoValue;
  KernelStep k;
  k.holes = {{"T", dtype_c_type(x.dtype)},
             {"CT", ct},
             {"numel", int_literal(x.numel())},
             {"comment", "Clip over " + shape_str(x.shape) + " " + dtype_name(x.dtype)}};
  if (dynamic) {
    // Bounds read once per thread from device memory; an absent bound is a null pointer that
    // the expression never touches.
    k.template_name = "clip_dynamic";
    k.holes.push_back({"expr", clip_expr(node, "x", ct, node.input(1) != kNoValue ? "lo" : "",
                                         node.input(2) != kNoValue ? "hi" : "")});
    k.args = {node.inputs[0], node.input(1) == kNoValue ? kNullArg : node.input(1),
              node.input(2) == kNoValue ? kNullArg : node.input(2), node.outputs[0]};
  } else {
    k.template_name = "unary_elementwise";
    k.holes.push_back({"expr", clip_expr(node, "x", ct, "", "")});
    k.args = {node.inputs[0], node.outputs[0]};
  }
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_clip_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Clip";
  def.traits.elementwise = true;
  def.traits.epilogue_activation = true;  // only when it has one input: see epilogue.h
  def.import = clip_import;
  def.infer = clip_infer;
  def.reference = clip_reference;
  def.lower = clip_lower;
  def.scalar_expr = clip_scalar_expr;
  registry.add(def);
}

}  // namespace aotc
