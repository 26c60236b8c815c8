// LogSoftmax: x - max - log(sum(exp(x - max))), numerically stable. Same canonical form as
// Softmax (softmax.cc): attribute "axis" always set, "reduce_trailing" = 1 for opset < 13 (the
// input was coerced to 2-D at axis, so one row spans every dim from axis on). The input is
// [outer, n, inner]; templates/log_softmax.cu.in has a block per row (inner 1) or a thread per column.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kLogSoftmaxTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

Status log_softmax_import(Node& node, Graph&, int64_t opset) {
  if (opset < 13) {
    if (!node.has_attr("axis")) node.attrs["axis"] = Attribute::of_int(1);
    node.attrs["reduce_trailing"] = Attribute::of_int(1);
  } else if (!node.has_attr("axis")) {
    node.attrs["axis"] = Attribute::of_int(-1);
  }
  return Status::ok();
}

Status log_softmax_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kLogSoftmaxTypes));
  const Value& x = input_value(graph, node, 0);
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

struct RowDims {
  int64_t outer = 1, n = 1, inner = 1;
};

RowDims row_dims(const Node& node, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  const bool trailing = node.attr_int("reduce_trailing", 0) != 0;
  RowDims d;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t v = shape[static_cast<size_t>(i)];
    if (i < axis) d.outer *= v;
    else if (i == axis || trailing) d.n *= v;
    else d.inner *= v;
  }
  return d;
}

Status log_softmax_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const RowDims d = row_dims(node, x.shape());
  for (int64_t o = 0; o < d.outer; ++o)
    for (int64_t c = 0; c < d.inner; ++c) {
      const int64_t base = o * d.n * d.inner + c;
      double m = -INFINITY;
      for (int64_t j = 0; j < d.n; ++j) m = std::max(m, x.get(base + j * d.inner));
      double sum = 0;
      for (int64_t j = 0; j < d.n; ++j) sum += std::exp(x.get(base + j * d.inner) - m);
      // (x - m) - log(sum), the order the kernel uses (m + log(sum) would round at m's magnitude).
      const double log_sum = std::log(sum);
      for (int64_t j = 0; j < d.n; ++j) outputs[0].set(base + j * d.inner, (x.get(base + j * d.inner) - m) - log_sum);
    }
  return Status::ok();
}

constexpr int64_t kRowThreads = 256;

Expected<Lowering> log_softmax_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  const RowDims d = row_dims(node, x.shape);
  const bool row_mode = d.inner == 1;
  KernelStep k;
  k.template_name = "log_softmax";
  k.holes = {{"comment", "LogSoftmax over " + shape_str(x.shape) + " as [" + std::to_string(d.outer) + ", " +
                             std::to_string(d.n) + ", " + std::to_string(d.inner) + "] " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"OUTER", int_literal(d.outer)},
             {"N", int_literal(d.n)},
             {"INNER", int_literal(d.inner)},
             {"THREADS", std::to_string(kRowThreads)},
             {"ROW_MODE", row_mode ? "true" : "false"}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{kRowThreads, 1, 1};
  k.grid = row_mode ? Dim3{std::min<int64_t>(d.outer, 65535LL * 16), 1, 1} : grid_for(d.outer * d.inner, kRowThreads);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_log_softmax_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "LogSoftmax";
  def.import = log_softmax_import;
  def.infer = log_softmax_infer;
  def.reference = log_softmax_reference;
  def.lower = log_softmax_lower;
  registry.add(def);
}

}  // namespace aotc
