// Add, Sub, Mul, Div with numpy (multidirectional) broadcasting over every numeric dtype.
// Integer semantics are defined for every input, on the host and the GPU alike: +, -, * wrap
// modulo 2^bits; Div truncates toward zero (C), x / 0 == 0 and INT_MIN / -1 == INT_MIN (wraps),
// so constant folding never traps. Floats follow IEEE; float16/bfloat16 compute in float.
#include <algorithm>
#include <type_traits>

#include "ir/op_registry.h"
#include "ir/ops/elem_types.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

enum class BinaryKind { kAdd, kSub, kMul, kDiv };

BinaryKind kind_of(const std::string& op_type) {
  if (op_type == "Add") return BinaryKind::kAdd;
  if (op_type == "Sub") return BinaryKind::kSub;
  if (op_type == "Mul") return BinaryKind::kMul;
  return BinaryKind::kDiv;
}

const std::vector<DType> kNumericTypes = {
    DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt8,
    DType::kInt16,   DType::kInt32,   DType::kInt64,   DType::kUInt8,    DType::kUInt16,
    DType::kUInt32,  DType::kUInt64};

Status binary_import(Node& node, Graph&, int64_t opset) {
  // Before opset 7 the second operand broadcast only with broadcast=1 and an `axis` aligning it
  // from the left: different semantics from numpy, which we do not implement.
  if (opset < 7 && node.attr_int("broadcast", 0) != 0)
    return node_error(node, "legacy broadcast attribute (opset " + std::to_string(opset) +
                                " < 7) is not supported; re-export the model with opset >= 7");
  node.attrs.erase("broadcast");
  node.attrs.erase("axis");
  node.attrs.erase("consumed_inputs");  // opset 1 only; meaningless for inference
  return Status::ok();
}

Status binary_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kNumericTypes));
  const Value& a = input_value(graph, node, 0);
  const Value& b = input_value(graph, node, 1);
  if (a.dtype != b.dtype)
    return node_error(node, "inputs have different dtypes " + dtype_name(a.dtype) + " and " +
                                dtype_name(b.dtype));
  Expected<Shape> out = broadcast_shapes(node, a.shape, b.shape);
  if (!out) return out.status();
  set_output(graph, node, 0, a.dtype, *out);
  return Status::ok();
}

// One element of the op in type C (the compute type), with the integer rules of this file.
template <class C>
C apply_binary(BinaryKind kind, C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    switch (kind) {
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
    }
    return 0;
  }
}

Status binary_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                        std::vector<Tensor>& outputs) {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  Tensor& y = outputs[0];
  BinaryKind kind = kind_of(node.op_type);
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
      E::store(y, i, apply_binary<typename E::Compute>(kind, E::load(a, ia), E::load(b, ib)));
    }
  });
  if (!ok) return node_error(node, "no reference for dtype " + dtype_name(y.dtype()));
  return Status::ok();
}

// The CUDA expression for one element from `x` and `y` of compute type `ct`, with the same
// integer rules as apply_binary.
std::string binary_expr(BinaryKind kind, DType t, const std::string& ct) {
  if (!dtype_is_integer(t)) {
    const char* op = kind == BinaryKind::kAdd ? "+" : kind == BinaryKind::kSub ? "-"
                     : kind == BinaryKind::kMul ? "*" : "/";
    return "(x " + std::string(op) + " y)";
  }
  // Wrapping arithmetic through unsigned long long: no signed overflow UB, low bits exact.
  const std::string u = "(unsigned long long)";
  switch (kind) {
    case BinaryKind::kAdd: return "(" + ct + ")(" + u + "x + " + u + "y)";
    case BinaryKind::kSub: return "(" + ct + ")(" + u + "x - " + u + "y)";
    case BinaryKind::kMul: return "(" + ct + ")(" + u + "x * " + u + "y)";
    case BinaryKind::kDiv:
      if (dtype_is_signed(t))
        return "(y == 0 ? (" + ct + ")0 : y == (" + ct + ")-1 ? (" + ct + ")(0ULL - " + u +
               "x) : (" + ct + ")(x / y))";
      return "(y == 0 ? (" + ct + ")0 : (" + ct + ")(x / y))";
  }
  return "";
}

Expected<Lowering> binary_lower(const Node& node, const Graph& graph) {
  const Value& a = input_value(graph, node, 0);
  const Value& b = input_value(graph, node, 1);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;  // nothing to compute
  // 16-bit floats compute in float (templates/common.cuh brings cuda_fp16.h and cuda_bf16.h).
  std::string ct = y.dtype == DType::kFloat16 || y.dtype == DType::kBFloat16 ? "float" : dtype_c_type(y.dtype);
  KernelStep k;
  k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  std::string comment = node.op_type + " " + shape_str(a.shape) + " , " + shape_str(b.shape) +
                        " -> " + shape_str(y.shape) + " " + dtype_name(y.dtype);
  std::string expr = binary_expr(kind_of(node.op_type), y.dtype, ct);
  if (a.shape == b.shape) {
    k.template_name = "binary_same_shape";
    k.holes = {{"T", dtype_c_type(y.dtype)}, {"TO", dtype_c_type(y.dtype)}, {"CT", ct},
               {"numel", int_literal(y.numel())}, {"expr", expr}, {"comment", comment}};
  } else {
    StridedLayout layout{y.shape, {broadcast_strides(a.shape, y.shape), broadcast_strides(b.shape, y.shape)}};
    layout = collapse_layout(layout);
    k.template_name = "binary_broadcast";
    k.holes = {{"T", dtype_c_type(y.dtype)},
               {"TO", dtype_c_type(y.dtype)},
               {"CT", ct},
               {"I", index_type_for(std::max({y.numel(), a.numel(), b.numel()}))},
               {"rank", std::to_string(layout.dims.size())},
               {"dims", dims_literal(layout.dims)},
               {"a_strides", dims_literal(layout.strides[0])},
               {"b_strides", dims_literal(layout.strides[1])},
               {"numel", int_literal(y.numel())},
               {"expr", expr},
               {"comment", comment}};
  }
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_binary_elementwise_ops(OpRegistry& registry) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    OpDef def;
    def.op_type = op;
    def.traits.elementwise = true;
    def.traits.commutative = kind_of(op) == BinaryKind::kAdd || kind_of(op) == BinaryKind::kMul;
    def.import = binary_import;
    def.infer = binary_infer;
    def.reference = binary_reference;
    def.lower = binary_lower;
    registry.add(def);
  }
}

}  // namespace aotc
