// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual) and logic (And, Or, Xor) with
// numpy broadcasting; the output is bool. Both inputs have one dtype; comparisons of integers
// compare in the integer type (no float rounding of int64), 16-bit floats compare in float, and
// any comparison with NaN is false except that NaN != NaN (IEEE), as numpy does.
#include <type_traits>

#include "ir/op_registry.h"
#include "ir/ops/elementwise_common.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

enum class CompareKind { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual, kAnd, kOr, kXor };

struct CompareOp {
  const char* op_type;
  CompareKind kind;
  const char* cuda;  // infix operator on x and y
};

const CompareOp kCompareOps[] = {
    {"Equal", CompareKind::kEqual, "=="},           {"Less", CompareKind::kLess, "<"},
    {"Greater", CompareKind::kGreater, ">"},        {"LessOrEqual", CompareKind::kLessOrEqual, "<="},
    {"GreaterOrEqual", CompareKind::kGreaterOrEqual, ">="}, {"And", CompareKind::kAnd, "&&"},
    {"Or", CompareKind::kOr, "||"},                 {"Xor", CompareKind::kXor, "!="}};

const CompareOp& find_compare(const std::string& op_type) {
  for (const CompareOp& op : kCompareOps)
    if (op_type == op.op_type) return op;
  return kCompareOps[0];
}

const std::vector<DType> kNumericTypes = {
    DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt8,
    DType::kInt16,   DType::kInt32,   DType::kInt64,   DType::kUInt8,    DType::kUInt16,
    DType::kUInt32,  DType::kUInt64};
const std::vector<DType> kEqualTypes = {
    DType::kBool,  DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt8,
    DType::kInt16, DType::kInt32,   DType::kInt64,   DType::kUInt8,   DType::kUInt16,   DType::kUInt32,
    DType::kUInt64};
const std::vector<DType> kBoolType = {DType::kBool};

bool is_logic(CompareKind k) { return k == CompareKind::kAnd || k == CompareKind::kOr || k == CompareKind::kXor; }

Status compare_import(Node& node, Graph&, int64_t opset) {
  // Before opset 7 the second operand broadcast with broadcast=1 and `axis` (not numpy rules).
  if (opset < 7 && node.attr_int("broadcast", 0) != 0)
    return node_error(node, "legacy broadcast attribute (opset " + std::to_string(opset) +
                                " < 7) is not supported; re-export the model with opset >= 7");
  node.attrs.erase("broadcast");
  node.attrs.erase("axis");
  return Status::ok();
}

Status compare_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  CompareKind kind = find_compare(node.op_type).kind;
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, is_logic(kind) ? kBoolType
                                                    : kind == CompareKind::kEqual ? kEqualTypes
                                                                                  : kNumericTypes));
  const Value& a = input_value(graph, node, 0);
  const Value& b = input_value(graph, node, 1);
  if (a.dtype != b.dtype)
    return node_error(node, "inputs have different dtypes " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype));
  Expected<Shape> out = broadcast_shapes(node, a.shape, b.shape);
  if (!out) return out.status();
  set_output(graph, node, 0, DType::kBool, *out);
  return Status::ok();
}

template <class C>
bool apply_compare(CompareKind kind, C x, C y) {
  switch (kind) {
    case CompareKind::kEqual: return x == y;
    case CompareKind::kLess: return x < y;
    case CompareKind::kGreater: return x > y;
    case CompareKind::kLessOrEqual: return x <= y;
    case CompareKind::kGreaterOrEqual: return x >= y;
    case CompareKind::kAnd: return x && y;
    case CompareKind::kOr: return x || y;
    case CompareKind::kXor: return x != y;
  }
  return false;
}

Status compare_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& a = *inputs[0];
  const Tensor& b = *inputs[1];
  Tensor& y = outputs[0];
  CompareKind kind = find_compare(node.op_type).kind;
  uint8_t* out = y.data<uint8_t>();
  bool ok = visit_numeric_or_bool(a.dtype(), [&](auto tag) {
    using E = decltype(tag);
    int64_t i = 0;
    for_each_broadcast(y.shape(), {a.shape(), b.shape()}, [&](const std::vector<int64_t>& off) {
      out[i++] = apply_compare(kind, E::load(a, off[0]), E::load(b, off[1])) ? 1 : 0;
    });
  });
  if (!ok) return node_error(node, "no reference for dtype " + dtype_name(a.dtype()));
  return Status::ok();
}

Expected<Lowering> compare_lower(const Node& node, const Graph& graph) {
  const Value& a = input_value(graph, node, 0);
  const Value& b = input_value(graph, node, 1);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  std::string expr = std::string("(x ") + find_compare(node.op_type).cuda + " y)";
  std::string comment = node.op_type + " " + shape_str(a.shape) + " , " + shape_str(b.shape) + " " +
                        dtype_name(a.dtype) + " -> " + shape_str(y.shape) + " bool";
  l.steps.push_back(LoweredStep{
      LoweredStep::Kind::kKernel,
      binary_kernel_step(graph, node.inputs[0], node.inputs[1], node.outputs[0], expr, comment), {}});
  return l;
}

}  // namespace

void register_compare_logic_ops(OpRegistry& registry) {
  for (const CompareOp& op : kCompareOps) {
    OpDef def;
    def.op_type = op.op_type;
    def.traits.elementwise = true;
    def.traits.commutative = op.kind == CompareKind::kEqual || is_logic(op.kind);
    def.import = compare_import;
    def.infer = compare_infer;
    def.reference = compare_reference;
    def.lower = compare_lower;
    registry.add(def);
  }
}

}  // namespace aotc
