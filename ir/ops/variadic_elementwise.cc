// Variadic elementwise ops Min, Max, Sum, Mean: 1..N inputs of one dtype, numpy broadcasting of
// all of them. Computed as a left fold through the output buffer (out = f(in0, in1), then
// out = f(out, in_k)), on the host and the GPU alike, so 16-bit results round at the same steps.
// Min/Max propagate NaN (numpy's minimum/maximum); Mean divides in the last step.
#include "ir/op_registry.h"
#include "ir/ops/elementwise_common.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

enum class FoldKind { kMin, kMax, kSum, kMean };

FoldKind kind_of(const std::string& op) {
  if (op == "Min") return FoldKind::kMin;
  if (op == "Max") return FoldKind::kMax;
  if (op == "Sum") return FoldKind::kSum;
  return FoldKind::kMean;
}

const std::vector<DType> kNumericTypes = {
    DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt8,
    DType::kInt16,   DType::kInt32,   DType::kInt64,   DType::kUInt8,    DType::kUInt16,
    DType::kUInt32,  DType::kUInt64};
const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

Status variadic_import(Node& node, Graph&, int64_t) {
  node.attrs.erase("consumed_inputs");  // opset-1 forms
  return Status::ok();
}

Status variadic_infer(Node& node, Graph& graph) {
  if (node.inputs.empty()) return node_error(node, "expects at least 1 input");
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  FoldKind kind = kind_of(node.op_type);
  const std::vector<DType>& allowed = kind == FoldKind::kMin || kind == FoldKind::kMax ? kNumericTypes : kFloatTypes;
  Shape out;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == kNoValue) return node_error(node, "input " + std::to_string(i) + " is absent");
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, allowed));
    const Value& v = input_value(graph, node, i);
    if (v.dtype != input_value(graph, node, 0).dtype)
      return node_error(node, "input " + std::to_string(i) + " has dtype " + dtype_name(v.dtype) + ", input 0 has " +
                                  dtype_name(input_value(graph, node, 0).dtype));
    if (i == 0) {
      out = v.shape;
      continue;
    }
    Expected<Shape> s = broadcast_shapes(node, out, v.shape);
    if (!s) return s.status();
    out = *s;
  }
  set_output(graph, node, 0, input_value(graph, node, 0).dtype, out);
  return Status::ok();
}

template <class C>
C fold(FoldKind kind, C acc, C v, bool last, int64_t count) {
  switch (kind) {
    case FoldKind::kMin: return (acc < v || acc != acc) ? acc : v;
    case FoldKind::kMax: return (acc > v || acc != acc) ? acc : v;
    case FoldKind::kSum: return static_cast<C>(acc + v);
    case FoldKind::kMean: return last ? static_cast<C>((acc + v) / static_cast<C>(count)) : static_cast<C>(acc + v);
  }
  return acc;
}

Status variadic_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  Tensor& y = outputs[0];
  FoldKind kind = kind_of(node.op_type);
  const int64_t count = static_cast<int64_t>(inputs.size());
  bool ok = visit_numeric(y.dtype(), [&](auto tag) {
    using E = decltype(tag);
    int64_t i = 0;
    for_each_broadcast(y.shape(), {inputs[0]->shape()}, [&](const std::vector<int64_t>& off) {
      E::store(y, i++, E::load(*inputs[0], off[0]));
    });
    for (int64_t k = 1; k < count; ++k) {
      i = 0;
      const Tensor& b = *inputs[static_cast<size_t>(k)];
      for_each_broadcast(y.shape(), {b.shape()}, [&](const std::vector<int64_t>& off) {
        E::store(y, i, fold<typename E::Compute>(kind, E::load(y, i), E::load(b, off[0]), k == count - 1, count));
        ++i;
      });
    }
  });
  if (!ok) return node_error(node, "no reference for dtype " + dtype_name(y.dtype()));
  return Status::ok();
}

// CUDA text of fold() for x = partial result, y = next operand.
std::string fold_expr(FoldKind kind, bool last, int64_t count, const std::string& ct) {
  switch (kind) {
    case FoldKind::kMin: return "((x < y || x != x) ? x : y)";
    case FoldKind::kMax: return "((x > y || x != x) ? x : y)";
    case FoldKind::kSum: return "(x + y)";
    case FoldKind::kMean: return last ? "((x + y) / (" + ct + ")" + int_literal(count) + ")" : "(x + y)";
  }
  return "";
}

Expected<Lowering> variadic_lower(const Node& node, const Graph& graph) {
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  FoldKind kind = kind_of(node.op_type);
  const int64_t count = static_cast<int64_t>(node.inputs.size());
  const std::string ct = elementwise_compute_type(y.dtype);
  const std::string head = node.op_type + " of " + std::to_string(count) + " " + dtype_name(y.dtype) + " -> " +
                           shape_str(y.shape);
  if (count == 1) {
    // One input: the output is a copy of it (same shape by shape inference).
    KernelStep k;
    k.template_name = "unary_elementwise";
    k.holes = {{"T", dtype_c_type(y.dtype)}, {"CT", ct}, {"numel", int_literal(y.numel())}, {"expr", "x"},
               {"comment", head + " (copy)"}};
    k.args = {node.inputs[0], node.outputs[0]};
    k.block = Dim3{256, 1, 1};
    k.grid = grid_for(y.numel(), 256);
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    return l;
  }
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel,
                                binary_kernel_step(graph, node.inputs[0], node.inputs[1], node.outputs[0],
                                                   fold_expr(kind, count == 2, count, ct), head + ": inputs 0, 1"),
                                {}});
  for (int64_t k = 2; k < count; ++k)
    l.steps.push_back(LoweredStep{
        LoweredStep::Kind::kKernel,
        accumulate_kernel_step(graph, node.inputs[static_cast<size_t>(k)], node.outputs[0],
                               fold_expr(kind, k == count - 1, count, ct), head + ": input " + std::to_string(k)),
        {}});
  return l;
}

}  // namespace

void register_variadic_elementwise_ops(OpRegistry& registry) {
  for (const char* op : {"Min", "Max", "Sum", "Mean"}) {
    OpDef def;
    def.op_type = op;
    def.traits.elementwise = true;
    def.import = variadic_import;
    def.infer = variadic_infer;
    def.reference = variadic_reference;
    def.lower = variadic_lower;
    registry.add(def);
  }
}

}  // namespace aotc
