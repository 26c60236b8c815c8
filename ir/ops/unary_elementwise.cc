// Unary elementwise ops, one table row each: the dtypes the ONNX spec allows, the reference in
// double (and in int64 for integer dtypes, so int64 keeps every bit) and the CUDA expression used
// by the lowering and by epilogue/elementwise fusion.
// Adding an op = one row in kUnaryOps (+ its tests); all rows share import/infer/lower.
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64,
                                        DType::kBFloat16};
// Relu-14: the float types and the signed integers.
const std::vector<DType> kFloatAndSignedTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64,
                                                 DType::kBFloat16, DType::kInt8, DType::kInt16,
                                                 DType::kInt32, DType::kInt64};

struct UnaryOp {
  const char* op_type;
  bool epilogue_activation;
  const std::vector<DType>* dtypes;
  double (*reference)(double x, const Node& node);
  // For integer dtypes (nullptr when the op accepts none).
  int64_t (*int_reference)(int64_t x, const Node& node);
  // CUDA expression in terms of x (compute type float or double), e.g. "fmaxf(x, 0.f)".
  std::string (*expr)(const Node& node, const std::string& x);
};

const UnaryOp kUnaryOps[] = {
    // NaN < 0 is false, so NaN passes through like numpy's max(x, 0).
    {"Relu", true, &kFloatAndSignedTypes, [](double x, const Node&) { return x < 0 ? 0.0 : x; },
     [](int64_t x, const Node&) { return x < 0 ? int64_t{0} : x; },
     [](const Node&, const std::string& x) { return "(" + x + " < 0 ? 0 : " + x + ")"; }},
    {"Sigmoid", true, &kFloatTypes, [](double x, const Node&) { return 1.0 / (1.0 + std::exp(-x)); },
     nullptr,
     [](const Node&, const std::string& x) { return "(1 / (1 + exp(-(" + x + "))))"; }},
};

const UnaryOp* find_unary(const std::string& op_type) {
  for (const UnaryOp& op : kUnaryOps)
    if (op_type == op.op_type) return &op;
  return nullptr;
}

Status unary_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, *find_unary(node.op_type)->dtypes));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

Status unary_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                       std::vector<Tensor>& outputs) {
  const UnaryOp* op = find_unary(node.op_type);
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  if (dtype_is_integer(x.dtype())) {
    if (!op->int_reference) return node_error(node, "no integer reference for " + dtype_name(x.dtype()));
    // Results of the integer rows stay within the input's range, so set_int cannot overflow.
    for (int64_t i = 0; i < x.numel(); ++i) y.set_int(i, op->int_reference(x.get_int(i), node));
    return Status::ok();
  }
  for (int64_t i = 0; i < x.numel(); ++i) y.set(i, op->reference(x.get(i), node));
  return Status::ok();
}

// Integers compute in their own type; float16 and bfloat16 in float.
std::string compute_type(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 ? "float" : dtype_c_type(t);
}

std::string unary_scalar_expr(const Node& node, const Graph&, const std::string& x) {
  return find_unary(node.op_type)->expr(node, x);
}

Expected<Lowering> unary_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;  // nothing to compute
  KernelStep k;
  k.template_name = "unary_elementwise";
  k.holes = {{"T", dtype_c_type(x.dtype)},
             {"CT", compute_type(x.dtype)},
             {"numel", int_literal(x.numel())},
             {"expr", unary_scalar_expr(node, graph, "x")},
             {"comment", node.op_type + " over " + shape_str(x.shape)}};
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
    def.infer = unary_infer;
    def.reference = unary_reference;
    def.lower = unary_lower;
    def.scalar_expr = unary_scalar_expr;
    registry.add(def);
  }
}

}  // namespace aotc
