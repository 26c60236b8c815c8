// Add, Sub, Mul, Div, Pow, Mod, PRelu, BitShift, BitwiseAnd/Or/Xor with numpy broadcasting (PRelu: slope
// broadcasts to X only), and SwiGLU-28 (Swish_alpha(A) * B, equal shapes, no broadcasting).
// Integer semantics are defined for every input, on the host and the GPU alike: +, -, * wrap
// modulo 2^bits; Div truncates toward zero (C), x / 0 == 0 and INT_MIN / -1 == INT_MIN (wraps);
// Mod by 0 is 0. Integer Pow: an integer exponent gives the exact power by repeated squaring,
// wrapping like Mul (negative n: 1/x^n truncated: 1 for x=1, +-1 for x=-1, else 0, also for x=0);
// a float exponent computes in double, snaps to an integer within 1e-12 relative (CUDA's pow is
// not exact, e.g. (-3)^1.0 = -2.99..), then truncates/saturates. So constant folding never traps.
// Floats follow IEEE; float16/bfloat16 compute in float.
#include <cmath>
#include <type_traits>

#include "ir/op_registry.h"
#include "ir/ops/elem_types.h"
#include "ir/ops/elementwise_common.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

enum class BinaryKind { kAdd, kSub, kMul, kDiv, kMod, kPRelu, kPow, kShiftLeft, kShiftRight, kBitAnd, kBitOr, kBitXor, kSwiGLU };

BinaryKind kind_of(const std::string& op_type) {
  if (op_type == "Add") return BinaryKind::kAdd;
  if (op_type == "Sub") return BinaryKind::kSub;
  if (op_type == "Mul") return BinaryKind::kMul;
  if (op_type == "Mod") return BinaryKind::kMod;
  if (op_type == "PRelu") return BinaryKind::kPRelu;
  if (op_type == "Pow") return BinaryKind::kPow;
  if (op_type == "BitShift") return BinaryKind::kShiftLeft;  // direction: see node_kind
  if (op_type == "SwiGLU") return BinaryKind::kSwiGLU;
  if (op_type == "BitwiseAnd") return BinaryKind::kBitAnd;
  if (op_type == "BitwiseOr") return BinaryKind::kBitOr;
  if (op_type == "BitwiseXor") return BinaryKind::kBitXor;
  return BinaryKind::kDiv;
}

// BitShift's direction attribute picks the kind (normalised to "LEFT"/"RIGHT" by the importer).
BinaryKind node_kind(const Node& node) {
  BinaryKind k = kind_of(node.op_type);
  if (k == BinaryKind::kShiftLeft && node.attr_string("direction", "") == "RIGHT") return BinaryKind::kShiftRight;
  return k;
}

const std::vector<DType> kNumericTypes = {
    DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt8,
    DType::kInt16,   DType::kInt32,   DType::kInt64,   DType::kUInt8,    DType::kUInt16,
    DType::kUInt32,  DType::kUInt64};
// PRelu-9/16: floats and 32/64-bit integers.
const std::vector<DType> kPReluTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16,
                                        DType::kInt32,   DType::kInt64,   DType::kUInt32,  DType::kUInt64};
// BitShift (signed since opset 28) and BitwiseAnd/Or/Xor-18: the integer types.
const std::vector<DType> kIntegerTypes = {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64,
                                          DType::kInt8,  DType::kInt16,  DType::kInt32,  DType::kInt64};
bool is_bitwise(BinaryKind k) { return k == BinaryKind::kBitAnd || k == BinaryKind::kBitOr || k == BinaryKind::kBitXor; }
const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
// Pow-15: the base (and output) type T.
const std::vector<DType> kPowBaseTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16,
                                          DType::kInt32,   DType::kInt64};
// CUDA's double pow is within a few ulp (2^-50 relative); 1e-12 is far above that and far below
// the distance of any non-integer power of an integer base that matters for truncation.
constexpr double kPowSnapRelative = 1e-12;
const char* const kPowSnapText = "1e-12";

Status binary_import(Node& node, Graph&, int64_t opset) {
  // Before opset 7 the second operand broadcast only with broadcast=1 and an `axis` aligning it
  // from the left: different semantics from numpy, which we do not implement.
  if (opset < 7 && node.attr_int("broadcast", 0) != 0)
    return node_error(node, "legacy broadcast attribute (opset " + std::to_string(opset) +
                                " < 7) is not supported; re-export the model with opset >= 7");
  node.attrs.erase("broadcast");
  node.attrs.erase("axis");
  node.attrs.erase("consumed_inputs");  // opset 1 only; meaningless for inference
  if (node.op_type == "Mod") {
    int64_t fmod = node.attr_int("fmod", 0);
    if (fmod != 0 && fmod != 1) return node_error(node, "fmod must be 0 or 1, got " + std::to_string(fmod));
    node.attrs["fmod"] = Attribute::of_int(fmod);
  }
  if (node.op_type == "BitShift") {
    std::string d = node.attr_string("direction", "");
    if (d != "LEFT" && d != "RIGHT")
      return node_error(node, "direction must be \"LEFT\" or \"RIGHT\", got \"" + escape_for_message(d) + "\"");
  }
  return Status::ok();
}

Status binary_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  BinaryKind kind = kind_of(node.op_type);
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kind == BinaryKind::kPow         ? kPowBaseTypes
                                                    : kind == BinaryKind::kPRelu     ? kPReluTypes
                                                    : kind == BinaryKind::kShiftLeft || is_bitwise(kind) ? kIntegerTypes
                                                    : kind == BinaryKind::kSwiGLU    ? kFloatTypes
                                                                                     : kNumericTypes));
  const Value& a = input_value(graph, node, 0);
  const Value& b = input_value(graph, node, 1);
  if (kind == BinaryKind::kPow) {
    // The exponent may have any numeric type (Pow-12+); before opset 12 it had the base's type.
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, kNumericTypes));
  } else if (a.dtype != b.dtype) {
    return node_error(node, "inputs have different dtypes " + dtype_name(a.dtype) + " and " +
                                dtype_name(b.dtype));
  }
  if (kind == BinaryKind::kSwiGLU && a.shape != b.shape)
    return node_error(node, "A of shape " + shape_str(a.shape) + " and B of shape " + shape_str(b.shape) +
                                " differ (SwiGLU does not broadcast)");
  Expected<Shape> out = broadcast_shapes(node, a.shape, b.shape);
  if (!out) return out.status();
  if (kind == BinaryKind::kPRelu && (b.shape.size() > a.shape.size() || *out != a.shape))
    return node_error(node, "slope of shape " + shape_str(b.shape) + " does not broadcast to X of shape " +
                                shape_str(a.shape) + " (unidirectional broadcasting)");
  set_output(graph, node, 0, a.dtype, *out);
  return Status::ok();
}

// Mod-28 with fmod=0 on floats: a - floor(a / b) * b, the sign of b, with the spec's special cases
// (what numpy's np.mod computes): NaN for an infinite a or a zero b; an infinite b gives a when a
// has b's sign (or a is zero, then zero with b's sign), else b.
template <class C>
C floor_mod(C a, C b) {
  if (std::isnan(a) || std::isnan(b) || std::isinf(a) || b == 0) return std::numeric_limits<C>::quiet_NaN();
  if (std::isinf(b)) return a == 0 ? std::copysign(C{0}, b) : std::signbit(a) == std::signbit(b) ? a : b;
  C r = std::fmod(a, b);
  if (r == 0) return std::copysign(C{0}, b);
  return (r < 0) != (b < 0) ? r + b : r;
}

// One element of the op in type C (the compute type), with the integer rules of this file.
template <class C>
C apply_binary(BinaryKind kind, C a, C b, bool fmod) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    switch (kind) {
      case BinaryKind::kMod: {
        if (b == 0) return 0;
        if constexpr (std::is_signed_v<C>) {
          if (b == -1) return 0;  // also INT_MIN % -1, which C leaves undefined
        }
        C r = static_cast<C>(a % b);
        // fmod=0: the result takes the divisor's sign (Python/numpy %); |r| < |b| so r + b fits.
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
        return r;
      }
      case BinaryKind::kPRelu:
        return a < 0 ? static_cast<C>(static_cast<uint64_t>(static_cast<U>(b)) * static_cast<uint64_t>(static_cast<U>(a)))
                     : a;
      case BinaryKind::kPow: return 0;  // computed by pow_reference
      case BinaryKind::kSwiGLU: return 0;  // floats only, computed in binary_reference
      // BitShift-28: a negative shift or one by the width or more gives what the sign fill alone
      // gives (-1 for a right shift of a negative x, else 0); signed right shifts are arithmetic,
      // signed left shifts discard the bits past the sign bit (through the unsigned type).
      case BinaryKind::kShiftLeft:
        return static_cast<uint64_t>(b) >= sizeof(C) * 8 ? C{0} : static_cast<C>(static_cast<U>(a) << b);
      case BinaryKind::kShiftRight:
        if constexpr (std::is_signed_v<C>) {
          if (static_cast<uint64_t>(b) >= sizeof(C) * 8) return a < 0 ? C{-1} : C{0};
          return static_cast<C>(a >> b);  // arithmetic (GCC, Clang, nvcc; C++20 requires it)
        }
        return static_cast<uint64_t>(b) >= sizeof(C) * 8 ? C{0} : static_cast<C>(static_cast<U>(a) >> b);
      case BinaryKind::kBitAnd: return static_cast<C>(a & b);
      case BinaryKind::kBitOr: return static_cast<C>(a | b);
      case BinaryKind::kBitXor: return static_cast<C>(a ^ b);
      // Unsigned arithmetic wraps without UB; converting back to C is modular (C++20, and what
      // GCC/Clang/nvcc do for C++17).
      case BinaryKind::kAdd: return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
      case BinaryKind::kSub: return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
      case BinaryKind::kMul:
        // Widen first: uint16 * uint16 promotes to (signed) int and could overflow.
        return static_cast<C>(static_cast<uint64_t>(static_cast<U>(a)) * static_cast<uint64_t>(static_cast<U>(b)));
      case BinaryKind::kDiv:
        if (b == 0) return 0;
        if constexpr (std::is_signed_v<C>) {
          if (b == -1) return static_cast<C>(U{0} - static_cast<U>(a));  // INT_MIN / -1 wraps
        }
        return static_cast<C>(a / b);
    }
    return 0;
  } else {
    switch (kind) {
      case BinaryKind::kAdd: return a + b;
      case BinaryKind::kSub: return a - b;
      case BinaryKind::kMul: return a * b;
      case BinaryKind::kDiv: return a / b;
      case BinaryKind::kMod: return fmod ? static_cast<C>(std::fmod(a, b)) : floor_mod(a, b);
      case BinaryKind::kPRelu: return a < 0 ? b * a : a;
      case BinaryKind::kPow: return 0;  // computed by pow_reference
      default: return 0;  // shifts, bitwise: integers only; SwiGLU: binary_reference
    }
    return 0;
  }
}

// Integer base x (int32/int64) to an integer exponent n; the CUDA text of int_pow_expr
// computes the same. Products wrap modulo 2^64, so the low bits (the stored type) are exact.
template <class C, class E>
C int_pow(C x, E n) {
  if constexpr (std::is_signed_v<E>) {
    if (n < 0) {
      if constexpr (std::is_signed_v<C>) return x == 1 ? C{1} : x == -1 ? ((n & 1) ? C{-1} : C{1}) : C{0};
      return x == 1 ? C{1} : C{0};  // unsigned bases: not accepted by binary_infer; defined anyway
    }
  }
  uint64_t base = static_cast<uint64_t>(x), r = 1;
  for (uint64_t e = static_cast<uint64_t>(n); e != 0; e >>= 1) {
    if (e & 1) r *= base;
    base *= base;
  }
  return static_cast<C>(r);
}

// A double power that should be an integer (integer base, float exponent) is snapped to it when
// within rounding error, so the truncation that follows does not turn 2.999.. into 2.
double snap_to_integer(double r) {
  double n = std::rint(r);
  return std::fabs(r - n) <= kPowSnapRelative * std::fabs(r) ? n : r;
}

// Pow: base and exponent of any supported types, stored as the base type. Float bases compute
// in double; integer bases as described at the top of this file.
Status pow_reference(const Node& node, const Tensor& a, const Tensor& b, Tensor& y) {
  bool ok = true;
  visit_numeric(a.dtype(), [&](auto ta) {
    using EA = decltype(ta);
    using CA = typename EA::Compute;
    ok = visit_numeric(b.dtype(), [&](auto tb) {
      using EB = decltype(tb);
      using CB = typename EB::Compute;
      int64_t i = 0;
      for_each_broadcast(y.shape(), {a.shape(), b.shape()}, [&](const std::vector<int64_t>& off) {
        CA x = EA::load(a, off[0]);
        CB e = EB::load(b, off[1]);
        if constexpr (std::is_integral_v<CA> && std::is_integral_v<CB>) {
          EA::store(y, i++, int_pow(x, e));
        } else if constexpr (std::is_integral_v<CA>) {
          double r = snap_to_integer(std::pow(static_cast<double>(x), static_cast<double>(e)));
          EA::store(y, i++, convert_value<CA>(r));  // truncates, saturates, NaN -> 0
        } else {
          double r = std::pow(static_cast<double>(x), static_cast<double>(e));
          EA::store(y, i++, convert_value<CA>(r));  // 16-bit floats round through float, as the kernel
        }
      });
    });
  });
  if (!ok) return node_error(node, "no reference for dtypes " + dtype_name(a.dtype()) + ", " + dtype_name(b.dtype()));
  return Status::ok();
}

// CUDA text (an immediately invoked lambda over x and y) computing int_pow for base type `t`
// (compute type `ct`) and integer exponent type `te`.
std::string int_pow_expr(const std::string& ct, DType te) {
  std::string neg = dtype_is_signed(te) ? "if (y < 0) return x == 1 ? (" + ct + ")1 : x == -1 ? ((y & 1) ? (" + ct +
                                              ")-1 : (" + ct + ")1) : (" + ct + ")0; "
                                        : "";
  return "[&]() -> " + ct + " { " + neg +
         "unsigned long long base = (unsigned long long)x, r = 1ULL; "
         "for (unsigned long long e = (unsigned long long)y; e != 0ULL; e >>= 1) { "
         "if (e & 1ULL) r *= base; base *= base; } return (" + ct + ")r; }()";
}

// SwiGLU's reference value, Swish_alpha(g) * u = g / (1 + exp(-alpha g)) * u, in double (SwiGLU and
// aotc.SwiGLUPacked).
double swiglu_value(double g, double u, double alpha) { return g / (1.0 + std::exp(-alpha * g)) * u; }

Status binary_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                        std::vector<Tensor>& outputs) {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  Tensor& y = outputs[0];
  BinaryKind kind = node_kind(node);
  if (kind == BinaryKind::kPow) return pow_reference(node, a, b, y);
  if (kind == BinaryKind::kSwiGLU) {  // same shapes; in double, rounded once to the output type
    const double alpha = node.attr_float("alpha", 1.0f);
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double x = a.get(i);
      y.set(i, swiglu_value(x, b.get(i), alpha));
    }
    return Status::ok();
  }
  bool fmod = node.attr_int("fmod", 0) == 1;
  const Shape& out_shape = y.shape();
  std::vector<int64_t> sa = broadcast_strides(a.shape(), out_shape);
  std::vector<int64_t> sb = broadcast_strides(b.shape(), out_shape);
  std::vector<int64_t> out_strides = shape_strides(out_shape);
  bool ok = visit_numeric(y.dtype(), [&](auto tag) {
    using E = decltype(tag);
    for (int64_t i = 0; i < y.numel(); ++i) {
      int64_t ia = 0, ib = 0;
      for (size_t d = 0; d < out_shape.size(); ++d) {
        int64_t c = (i / out_strides[d]) % out_shape[d];
        ia += c * sa[d];
        ib += c * sb[d];
      }
      E::store(y, i, apply_binary<typename E::Compute>(kind, E::load(a, ia), E::load(b, ib), fmod));
    }
  });
  if (!ok) return node_error(node, "no reference for dtype " + dtype_name(y.dtype()));
  return Status::ok();
}

// The CUDA expression for one element from `x` (type of a) and `y` (type of b) with the same
// rules as apply_binary / pow_reference; `ct` is the compute type of the output, `te` the type of b.
std::string binary_expr(const Node& node, BinaryKind kind, DType t, DType te, const std::string& ct) {
  if (kind == BinaryKind::kPow) {
    const std::string p = "pow((double)x, (double)y)";
    if (!dtype_is_integer(t)) return ct == "double" ? p : "(float)" + p;
    if (dtype_is_integer(te)) return int_pow_expr(ct, te);
    // snap_to_integer, then the saturating truncation of convert_value.
    return "[&]() -> " + ct + " { double p = " + p + ", n = rint(p); double r = fabs(p - n) <= " +
           kPowSnapText + " * fabs(p) ? n : p; return " + saturating_int_expr("r", t) + "; }()";
  }
  if (!dtype_is_integer(t)) {
    switch (kind) {
      case BinaryKind::kSwiGLU:
        return "(x / (1 + exp(-" + float_literal(node.attr_float("alpha", 1.0f)) + " * x)) * y)";
      case BinaryKind::kMod:
        if (node.attr_int("fmod", 0) == 1) return "fmod(x, y)";
        // floor_mod, in the compute type.
        return "[&]() -> " + ct + " { if (isnan(x) || isnan(y) || isinf(x) || y == 0) return (" + ct +
               ")nan(\"\"); if (isinf(y)) return x == 0 ? copysign((" + ct + ")0, y) : (signbit(x) == signbit(y) ? x : y); " +
               ct + " r = fmod(x, y); if (r == 0) return copysign((" + ct + ")0, y); return (r < 0) != (y < 0) ? r + y : r; }()";
      case BinaryKind::kPRelu: return "(x < 0 ? y * x : x)";
      default: break;
    }
    const char* op = kind == BinaryKind::kAdd ? "+" : kind == BinaryKind::kSub ? "-"
                     : kind == BinaryKind::kMul ? "*" : "/";
    return "(x " + std::string(op) + " y)";
  }
  // Wrapping arithmetic through unsigned long long: no signed overflow UB, low bits exact.
  const std::string u = "(unsigned long long)";
  const std::string c = "(" + ct + ")";
  switch (kind) {
    case BinaryKind::kAdd: return c + "(" + u + "x + " + u + "y)";
    case BinaryKind::kSub: return c + "(" + u + "x - " + u + "y)";
    case BinaryKind::kMul: return c + "(" + u + "x * " + u + "y)";
    case BinaryKind::kPRelu: return "(x < 0 ? " + c + "(" + u + "y * " + u + "x) : x)";
    case BinaryKind::kDiv:
      if (dtype_is_signed(t))
        return "(y == 0 ? " + c + "0 : y == " + c + "-1 ? " + c + "(0ULL - " + u + "x) : " + c + "(x / y))";
      return "(y == 0 ? " + c + "0 : " + c + "(x / y))";
    case BinaryKind::kMod: {
      std::string r = c + "(x % y)";
      std::string zero = dtype_is_signed(t) ? "y == 0 || y == " + c + "-1" : "y == 0";
      if (node.attr_int("fmod", 0) == 1 || !dtype_is_signed(t)) return "((" + zero + ") ? " + c + "0 : " + r + ")";
      return "((" + zero + ") ? " + c + "0 : (" + r + " != 0 && ((" + r + " < 0) != (y < 0))) ? " + c + "(" + r +
             " + y) : " + r + ")";
    }
    case BinaryKind::kShiftLeft:
    case BinaryKind::kShiftRight: {
      const std::string width = std::to_string(dtype_size(t) * 8) + "ULL";
      if (kind == BinaryKind::kShiftRight && dtype_is_signed(t))  // arithmetic, sign fill when out of range
        return "((unsigned long long)y >= " + width + " ? (x < 0 ? " + c + "-1 : " + c + "0) : " + c + "(x >> y))";
      return "((unsigned long long)y >= " + width + " ? " + c + "0 : " + c + "(" + u + "x " +
             (kind == BinaryKind::kShiftLeft ? "<<" : ">>") + " y))";
    }
    case BinaryKind::kBitAnd: return c + "(x & y)";
    case BinaryKind::kBitOr: return c + "(x | y)";
    case BinaryKind::kBitXor: return c + "(x ^ y)";
    case BinaryKind::kPow:
    case BinaryKind::kSwiGLU: break;
  }
  return "";
}

Expected<Lowering> binary_lower(const Node& node, const Graph& graph) {
  const Value& a = input_value(graph, node, 0);
  const Value& b = input_value(graph, node, 1);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;  // nothing to compute
  std::string comment = node.op_type + " " + shape_str(a.shape) + " " + dtype_name(a.dtype) + " , " +
                        shape_str(b.shape) + " " + dtype_name(b.dtype) + " -> " + shape_str(y.shape);
  std::string expr = binary_expr(node, node_kind(node), y.dtype, b.dtype, elementwise_compute_type(y.dtype));
  KernelStep k = binary_kernel_step(graph, node.inputs[0], node.inputs[1], node.outputs[0], expr, comment);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// aotc.SwiGLUPacked(X) {alpha}: SwiGLU of the two halves of X's last dim, Y[.., f] =
// swish_alpha(X[.., f]) * X[.., F + f] with 2F the last dim: what opt/merge_swiglu_projections
// writes for a gate and an up projection merged into one GEMM (weights side by side). One
// binary_broadcast kernel reads the two column ranges of each row in place (16-byte vectors where
// F allows), with the SwiGLU's expression and rounding.
Status swiglu_packed_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  const Value& x = input_value(graph, node, 0);
  if (x.shape.empty() || x.shape.back() % 2 != 0)
    return node_error(node, "X of shape " + shape_str(x.shape) + " has no even last dim to halve");
  Shape y = x.shape;
  y.back() /= 2;
  set_output(graph, node, 0, x.dtype, y);
  return Status::ok();
}

Status swiglu_packed_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const int64_t f = x.shape().back() / 2;
  const double alpha = node.attr_float("alpha", 1.0f);
  for (int64_t i = 0; i < y.numel(); ++i) {  // in double, rounded once to the output type
    const int64_t r = i / f, c = i % f;
    y.set(i, swiglu_value(x.get(r * 2 * f + c), x.get(r * 2 * f + f + c), alpha));
  }
  return Status::ok();
}

Expected<Lowering> swiglu_packed_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const int64_t f = y.shape.back(), rows = y.numel() / f;
  const std::string comment = "aotc.SwiGLUPacked " + shape_str(x.shape) + " " + dtype_name(x.dtype) + " -> " + shape_str(y.shape);
  const std::string expr = binary_expr(node, BinaryKind::kSwiGLU, y.dtype, x.dtype, elementwise_compute_type(y.dtype));
  StridedLayout layout{{rows, f}, {{2 * f, 1}, {2 * f, 1}}};
  KernelStep k = binary_strided_kernel_step(graph, node.inputs[0], node.inputs[0], node.outputs[0], layout, expr, comment);
  k.arg_byte_offsets = {0, f * dtype_size(x.dtype), 0};  // the up half starts F elements into each row
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_binary_elementwise_ops(OpRegistry& registry) {
  {
    OpDef def;
    def.op_type = "SwiGLUPacked";
    def.domain = "aotc";
    def.traits.elementwise = false;  // reads two elements of X per output element
    def.infer = swiglu_packed_infer;
    def.reference = swiglu_packed_reference;
    def.lower = swiglu_packed_lower;
    registry.add(def);
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "PRelu", "BitShift", "BitwiseAnd", "BitwiseOr",
                         "BitwiseXor", "SwiGLU"}) {
    OpDef def;
    def.op_type = op;
    def.traits.elementwise = true;
    def.traits.commutative = kind_of(op) == BinaryKind::kAdd || kind_of(op) == BinaryKind::kMul || is_bitwise(kind_of(op));
    def.import = binary_import;
    def.infer = binary_infer;
    def.reference = binary_reference;
    def.lower = binary_lower;
    registry.add(def);
  }
}

}  // namespace aotc
