// Unary elementwise ops, one table row each: the dtypes the op accepts, the output dtype, the
// float reference (in double), the integer rule, and the CUDA expression used by the lowering and
// by epilogue fusion. Integers follow defined rules on host and GPU alike (Neg/Abs of INT_MIN wrap).
// bfloat16 is accepted by every float row (computed in float), also where the spec lists only
// float16/float/double. Adding an op = one row in kUnaryOps (+ its tests).
#include <cmath>
#include <type_traits>

#include "ir/op_registry.h"
#include "ir/ops/elementwise_common.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
const std::vector<DType> kFloatAndSignedTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64,
                                                 DType::kBFloat16, DType::kInt8,   DType::kInt16,
                                                 DType::kInt32,   DType::kInt64};
const std::vector<DType> kNumericTypes = {
    DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt8,
    DType::kInt16,   DType::kInt32,   DType::kInt64,   DType::kUInt8,    DType::kUInt16,
    DType::kUInt32,  DType::kUInt64};
const std::vector<DType> kBoolType = {DType::kBool};
const std::vector<DType> kIntegerTypes = {DType::kInt8,  DType::kInt16,  DType::kInt32,  DType::kInt64,
                                          DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64};

// What an op does to integer (and bool) elements.
enum class IntRule { kNone, kRelu, kNeg, kAbs, kSign, kNot, kBitNot };

struct UnaryOp {
  const char* op_type;
  bool epilogue_activation;  // float activation computed from attributes alone
  const std::vector<DType>* dtypes;
  DType out_dtype;  // kUndefined: the input's dtype
  double (*reference)(double x, const Node& node);  // float inputs
  IntRule int_rule;
  // CUDA expression in terms of x (of compute type: float, double or the integer type).
  std::string (*expr)(const Node& node, const std::string& x, bool integer);
  bool not_on_gemm = false;  // OpTraits::epilogue_not_on_gemm
};

float attr(const Node& n, const char* key, float fallback) { return n.attr_float(key, fallback); }
std::string lit(const Node& n, const char* key, float fallback) { return float_literal(attr(n, key, fallback)); }

// Default attribute values, filled in by the importer (canonical form for fusion and dumps).
struct FloatDefault {
  const char* op;
  const char* key;
  float value;
};
const FloatDefault kDefaults[] = {
    {"LeakyRelu", "alpha", 0.01f},        {"Elu", "alpha", 1.0f},
    {"Selu", "alpha", 1.67326319217681884765625f}, {"Selu", "gamma", 1.05070102214813232421875f},
    {"HardSigmoid", "alpha", 0.2f},       {"HardSigmoid", "beta", 0.5f},
    {"ThresholdedRelu", "alpha", 1.0f},   {"Celu", "alpha", 1.0f},
    {"Shrink", "lambd", 0.5f},            {"Shrink", "bias", 0.0f},
    {"Swish", "alpha", 1.0f}};
float dflt(const char* op, const char* key) {
  for (const FloatDefault& d : kDefaults)
    if (std::string(op) == d.op && std::string(key) == d.key) return d.value;
  return 0;
}

#define AOTC_FN(name) [](const Node&, const std::string& x, bool) { return std::string(name "(") + x + ")"; }

const double kSqrt2OverPi = 0.79788456080286535588;

const UnaryOp kUnaryOps[] = {
    // NaN < 0 is false, so NaN passes through like numpy's max(x, 0).
    {"Relu", true, &kFloatAndSignedTypes, DType::kUndefined, [](double x, const Node&) { return x < 0 ? 0.0 : x; },
     IntRule::kRelu, [](const Node&, const std::string& x, bool) { return "(" + x + " < 0 ? 0 : " + x + ")"; }},
    {"Sigmoid", true, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return 1.0 / (1.0 + std::exp(-x)); },
     IntRule::kNone, [](const Node&, const std::string& x, bool) { return "(1 / (1 + exp(-(" + x + "))))"; }},
    {"Tanh", true, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::tanh(x); }, IntRule::kNone,
     AOTC_FN("tanh")},
    {"Erf", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::erf(x); }, IntRule::kNone,
     AOTC_FN("erf")},
    {"Exp", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::exp(x); }, IntRule::kNone,
     AOTC_FN("exp")},
    {"Log", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::log(x); }, IntRule::kNone,
     AOTC_FN("log")},
    {"Sqrt", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::sqrt(x); }, IntRule::kNone,
     AOTC_FN("sqrt")},
    {"Sin", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::sin(x); }, IntRule::kNone,
     AOTC_FN("sin")},
    {"Cos", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::cos(x); }, IntRule::kNone,
     AOTC_FN("cos")},
    {"Tan", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::tan(x); }, IntRule::kNone,
     AOTC_FN("tan")},
    {"Asin", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::asin(x); }, IntRule::kNone,
     AOTC_FN("asin")},
    {"Acos", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::acos(x); }, IntRule::kNone,
     AOTC_FN("acos")},
    {"Atan", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::atan(x); }, IntRule::kNone,
     AOTC_FN("atan")},
    {"Sinh", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::sinh(x); }, IntRule::kNone,
     AOTC_FN("sinh")},
    {"Cosh", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::cosh(x); }, IntRule::kNone,
     AOTC_FN("cosh")},
    {"Asinh", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::asinh(x); },
     IntRule::kNone, AOTC_FN("asinh")},
    {"Acosh", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::acosh(x); },
     IntRule::kNone, AOTC_FN("acosh")},
    {"Atanh", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::atanh(x); },
     IntRule::kNone, AOTC_FN("atanh")},
    {"Floor", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::floor(x); },
     IntRule::kNone, AOTC_FN("floor")},
    {"Ceil", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::ceil(x); }, IntRule::kNone,
     AOTC_FN("ceil")},
    // Half to even: rint/nearbyint in the default rounding mode (never changed by aotc).
    {"Round", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return std::nearbyint(x); },
     IntRule::kNone, AOTC_FN("rint")},
    {"Reciprocal", false, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return 1.0 / x; },
     IntRule::kNone, [](const Node&, const std::string& x, bool) { return "(1 / " + x + ")"; }},
    {"Neg", false, &kFloatAndSignedTypes, DType::kUndefined, [](double x, const Node&) { return -x; }, IntRule::kNeg,
     [](const Node&, const std::string& x, bool integer) {
       return integer ? "(0ULL - (unsigned long long)" + x + ")" : "(-" + x + ")";
     }},
    {"Abs", false, &kNumericTypes, DType::kUndefined, [](double x, const Node&) { return std::fabs(x); }, IntRule::kAbs,
     [](const Node&, const std::string& x, bool integer) {
       // Unsigned: x < 0 is false, x stays. INT_MIN wraps to itself through the unsigned negation.
       return integer ? "(" + x + " < 0 ? (0ULL - (unsigned long long)" + x + ") : (unsigned long long)" + x + ")"
                      : "fabs(" + x + ")";
     }},
    // NaN and +-0 pass through (numpy's sign).
    {"Sign", false, &kNumericTypes, DType::kUndefined,
     [](double x, const Node&) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }, IntRule::kSign,
     [](const Node&, const std::string& x, bool integer) {
       return "(" + x + " > 0 ? 1 : " + x + " < 0 ? -1 : " + (integer ? std::string("0") : x) + ")";
     }},
    {"Not", false, &kBoolType, DType::kUndefined, nullptr, IntRule::kNot,
     [](const Node&, const std::string& x, bool) { return "(!" + x + ")"; }},
    {"BitwiseNot", false, &kIntegerTypes, DType::kUndefined, nullptr, IntRule::kBitNot,
     [](const Node&, const std::string& x, bool) { return "(~" + x + ")"; }},
    {"IsNaN", false, &kFloatTypes, DType::kBool, [](double x, const Node&) { return std::isnan(x) ? 1.0 : 0.0; },
     IntRule::kNone, [](const Node&, const std::string& x, bool) { return "(" + x + " != " + x + ")"; }},
    {"IsInf", false, &kFloatTypes, DType::kBool,
     [](double x, const Node& n) {
       bool pos = n.attr_int("detect_positive", 1) != 0, neg = n.attr_int("detect_negative", 1) != 0;
       return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg)) ? 1.0 : 0.0;
     },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       bool pos = n.attr_int("detect_positive", 1) != 0, neg = n.attr_int("detect_negative", 1) != 0;
       if (pos && neg) return "isinf(" + x + ")";
       if (pos) return "(" + x + " > 0 && isinf(" + x + "))";
       if (neg) return "(" + x + " < 0 && isinf(" + x + "))";
       return std::string("false");
     }},
    {"LeakyRelu", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node& n) { return x < 0 ? attr(n, "alpha", dflt("LeakyRelu", "alpha")) * x : x; },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       return "(" + x + " < 0 ? " + lit(n, "alpha", dflt("LeakyRelu", "alpha")) + " * " + x + " : " + x + ")";
     }},
    {"ThresholdedRelu", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node& n) { return x > attr(n, "alpha", dflt("ThresholdedRelu", "alpha")) ? x : 0.0; },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       return "(" + x + " > " + lit(n, "alpha", dflt("ThresholdedRelu", "alpha")) + " ? " + x + " : 0)";
     }},
    {"Elu", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node& n) { return x < 0 ? attr(n, "alpha", dflt("Elu", "alpha")) * std::expm1(x) : x; },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       return "(" + x + " < 0 ? " + lit(n, "alpha", dflt("Elu", "alpha")) + " * expm1(" + x + ") : " + x + ")";
     }},
    {"Celu", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node& n) {
       double a = attr(n, "alpha", dflt("Celu", "alpha"));
       return x < 0 ? a * std::expm1(x / a) : x;
     },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       std::string a = lit(n, "alpha", dflt("Celu", "alpha"));
       return "(" + x + " < 0 ? " + a + " * expm1(" + x + " / " + a + ") : " + x + ")";
     }},
    {"Selu", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node& n) {
       double g = attr(n, "gamma", dflt("Selu", "gamma")), a = attr(n, "alpha", dflt("Selu", "alpha"));
       return x <= 0 ? g * a * std::expm1(x) : g * x;
     },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       std::string g = lit(n, "gamma", dflt("Selu", "gamma")), a = lit(n, "alpha", dflt("Selu", "alpha"));
       return "(" + g + " * (" + x + " <= 0 ? " + a + " * expm1(" + x + ") : " + x + "))";
     }},
    // Clamped with comparisons, not fmin/fmax, so NaN propagates.
    {"HardSigmoid", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node& n) {
       double v = attr(n, "alpha", dflt("HardSigmoid", "alpha")) * x + attr(n, "beta", dflt("HardSigmoid", "beta"));
       return v < 0 ? 0.0 : v > 1 ? 1.0 : v;
     },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       std::string v = "(" + lit(n, "alpha", dflt("HardSigmoid", "alpha")) + " * " + x + " + " +
                       lit(n, "beta", dflt("HardSigmoid", "beta")) + ")";
       return "(" + v + " < 0 ? 0 : " + v + " > 1 ? 1 : " + v + ")";
     }},
    {"HardSwish", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node&) {
       double v = x / 6.0 + 0.5;
       return x * (v < 0 ? 0.0 : v > 1 ? 1.0 : v);
     },
     IntRule::kNone,
     [](const Node&, const std::string& x, bool) {
       std::string v = "(" + x + " / 6 + 0.5f)";
       return "(" + x + " * (" + v + " < 0 ? 0 : " + v + " > 1 ? 1 : " + v + "))";
     }},
    // Shrink-9 also allows integer inputs; aotc accepts the float types only.
    {"Shrink", false, &kFloatTypes, DType::kUndefined,
     [](double x, const Node& n) {
       double l = attr(n, "lambd", dflt("Shrink", "lambd")), b = attr(n, "bias", dflt("Shrink", "bias"));
       return x < -l ? x + b : x > l ? x - b : 0.0;
     },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       std::string l = lit(n, "lambd", dflt("Shrink", "lambd")), b = lit(n, "bias", dflt("Shrink", "bias"));
       return "(" + x + " < -" + l + " ? " + x + " + " + b + " : " + x + " > " + l + " ? " + x + " - " + b + " : 0)";
     }},
    // log(1 + e^x) without overflow for large x.
    {"Softplus", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node&) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); },
     IntRule::kNone,
     [](const Node&, const std::string& x, bool) {
       return "(" + x + " > 0 ? " + x + " + log1p(exp(-" + x + ")) : log1p(exp(" + x + ")))";
     }},
    {"Softsign", true, &kFloatTypes, DType::kUndefined, [](double x, const Node&) { return x / (1 + std::fabs(x)); },
     IntRule::kNone, [](const Node&, const std::string& x, bool) { return "(" + x + " / (1 + fabs(" + x + ")))"; }},
    {"Gelu", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node& n) {
       if (n.attr_string("approximate", "none") == "tanh")
         return 0.5 * x * (1 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
       return 0.5 * x * (1 + std::erf(x * M_SQRT1_2));
     },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       if (n.attr_string("approximate", "none") == "tanh")
         return "(0.5f * " + x + " * (1 + tanh(" + float_literal(static_cast<float>(kSqrt2OverPi)) + " * (" + x +
                " + 0.044715f * " + x + " * " + x + " * " + x + "))))";
       return "(0.5f * " + x + " * (1 + erf(" + x + " * " + float_literal(static_cast<float>(M_SQRT1_2)) + ")))";
     }},
    // Mish-18: x * tanh(softplus(x)), softplus without overflow as above.
    {"Mish", false, &kFloatTypes, DType::kUndefined,
     [](double x, const Node&) {
       return x * std::tanh(x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)));
     },
     IntRule::kNone,
     [](const Node&, const std::string& x, bool) {
       return "(" + x + " * tanh(" + x + " > 0 ? " + x + " + log1p(exp(-" + x + ")) : log1p(exp(" + x + "))))";
     }},
    // Swish-24: x * sigmoid(alpha * x). An epilogue activation of the convolutions that do not
    // run as GEMMs only (not_on_gemm): absorbed everywhere (the fortieth session), EfficientNet's
    // 1x1 expansions left cuBLASLt for CUTLASS kernels far slower than cuBLASLt + this op's own
    // kernel (B0 bs32 fp16 3.03 against 2.46 ms, H200, docs/perf_notes.md v64), while its stem and
    // depthwise convolutions gained (36.9 us against 24.5 + 40.2; 28.8 against 22.6 + 42.4).
    {"Swish", true, &kFloatTypes, DType::kUndefined,
     [](double x, const Node& n) { return x / (1.0 + std::exp(-static_cast<double>(attr(n, "alpha", 1.0f)) * x)); },
     IntRule::kNone,
     [](const Node& n, const std::string& x, bool) {
       return "(" + x + " / (1 + exp(-" + lit(n, "alpha", 1.0f) + " * " + x + ")))";
     },
     /*not_on_gemm=*/true},
};
#undef AOTC_FN

const UnaryOp* find_unary(const std::string& op_type) {
  for (const UnaryOp& op : kUnaryOps)
    if (op_type == op.op_type) return &op;
  return nullptr;
}

Status unary_import(Node& node, Graph&, int64_t) {
  node.attrs.erase("consumed_inputs");  // opset-1 forms; meaningless for inference
  for (const FloatDefault& d : kDefaults)
    if (node.op_type == d.op && !node.has_attr(d.key)) node.attrs[d.key] = Attribute::of_float(d.value);
  if (node.op_type == "Gelu") {
    std::string a = node.attr_string("approximate", "none");
    if (a != "none" && a != "tanh") return node_error(node, "approximate must be 'none' or 'tanh', got '" + escape_for_message(a) + "'");
    node.attrs["approximate"] = Attribute::of_string(a);
  }
  if (node.op_type == "IsInf") {
    for (const char* k : {"detect_positive", "detect_negative"})
      node.attrs[k] = Attribute::of_int(node.attr_int(k, 1) != 0 ? 1 : 0);
  }
  return Status::ok();
}

Status unary_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  const UnaryOp* op = find_unary(node.op_type);
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, *op->dtypes));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  set_output(graph, node, 0, op->out_dtype == DType::kUndefined ? x.dtype : op->out_dtype, x.shape);
  return Status::ok();
}

// One integer (or bool) element under `rule`, wrapping like the kernel's unsigned arithmetic.
template <class C>
C apply_int_rule(IntRule rule, C x) {
  if constexpr (std::is_same_v<C, bool>) {
    return rule == IntRule::kNot ? !x : x;
  } else {
    using U = std::make_unsigned_t<C>;
    const C neg = static_cast<C>(U{0} - static_cast<U>(x));
    switch (rule) {
      case IntRule::kRelu: return x < 0 ? C{0} : x;
      case IntRule::kNeg: return neg;
      case IntRule::kAbs: return x < 0 ? neg : x;
      case IntRule::kSign: return static_cast<C>(x > 0 ? 1 : x < 0 ? -1 : 0);
      case IntRule::kBitNot: return static_cast<C>(~static_cast<U>(x));
      default: return x;
    }
  }
}

Status unary_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const UnaryOp* op = find_unary(node.op_type);
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  if (dtype_is_float(x.dtype())) {
    for (int64_t i = 0; i < x.numel(); ++i) y.set(i, op->reference(x.get(i), node));
    return Status::ok();
  }
  if (op->int_rule == IntRule::kNone || y.dtype() != x.dtype())
    return node_error(node, "no integer reference for " + dtype_name(x.dtype()));
  bool ok = visit_numeric_or_bool(x.dtype(), [&](auto tag) {
    using E = decltype(tag);
    if constexpr (std::is_integral_v<typename E::Compute>) {
      for (int64_t i = 0; i < x.numel(); ++i) E::store(y, i, apply_int_rule(op->int_rule, E::load(x, i)));
    }
  });
  if (!ok) return node_error(node, "no reference for dtype " + dtype_name(x.dtype()));
  return Status::ok();
}

std::string unary_scalar_expr(const Node& node, const Graph&, const std::string& x) {
  return find_unary(node.op_type)->expr(node, x, false);
}

Expected<Lowering> unary_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;  // nothing to compute
  bool integer = dtype_is_integer(x.dtype);
  KernelStep k;
  k.template_name = y.dtype == x.dtype ? "unary_elementwise" : "unary_convert";
  std::string ct = elementwise_compute_type(x.dtype);
  std::string expr = find_unary(node.op_type)->expr(node, "x", integer);
  // Integer rows compute through unsigned long long or int: bring the value back to the type.
  if (integer) expr = "(" + ct + ")" + expr;
  k.holes = {{"T", dtype_c_type(x.dtype)}, {"CT", ct}, {"numel", int_literal(x.numel())}, {"expr", expr},
             {"comment", node.op_type + " over " + shape_str(x.shape) + " " + dtype_name(x.dtype)}};
  if (y.dtype != x.dtype) k.holes.push_back({"TO", dtype_c_type(y.dtype)});
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_unary_elementwise_ops(OpRegistry& registry) {
  for (const UnaryOp& op : kUnaryOps) {
    OpDef def;
    def.op_type = op.op_type;
    def.traits.elementwise = true;
    def.traits.epilogue_activation = op.epilogue_activation;
    def.traits.epilogue_not_on_gemm = op.not_on_gemm;
    def.import = unary_import;
    def.infer = unary_infer;
    def.reference = unary_reference;
    def.lower = unary_lower;
    // Only rows whose output has the input's dtype can be fused as expressions.
    if (op.out_dtype == DType::kUndefined) def.scalar_expr = unary_scalar_expr;
    registry.add(def);
  }
}

}  // namespace aotc
