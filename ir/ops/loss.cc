// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference forms). Input [N, C, d1..dk],
// target [N, d1..dk] (int32/int64), optional weight [C], ignore_index, reduction none/sum/mean.
// SCE is log_softmax over axis 1 (optional output 1, log_prob) followed by the same NLL; the GPU
// lowering reuses templates/log_softmax.cu.in for that step and templates/nll_loss.cu.in for NLL.
#include <cmath>
#include <limits>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kLossTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
constexpr int64_t kLossThreads = 256;

bool is_sce(const Node& node) { return node.op_type == "SoftmaxCrossEntropyLoss"; }

// 0 none, 1 sum, 2 mean; -1 for anything else.
int reduction_code(const Node& node) {
  const std::string r = node.attr_string("reduction", "mean");
  return r == "none" ? 0 : r == "sum" ? 1 : r == "mean" ? 2 : -1;
}

bool has_log_prob(const Node& node) { return is_sce(node) && node.outputs.size() > 1 && node.outputs[1] != kNoValue; }

Status loss_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  const size_t max_outputs = is_sce(node) ? 2 : 1;
  if (node.outputs.empty() || node.outputs.size() > max_outputs)
    return node_error(node, "expects 1 to " + std::to_string(max_outputs) + " outputs");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kLossTypes));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt32, DType::kInt64}));
  if (reduction_code(node) < 0)
    return node_error(node, "reduction must be none, sum or mean, got '" + node.attr_string("reduction", "") + "'");
  const Value& x = input_value(graph, node, 0);
  const Value& t = input_value(graph, node, 1);
  if (x.shape.size() < 2) return node_error(node, "input 0 must have rank >= 2 ([N, C, d...])");
  Shape expect_t = {x.shape[0]};
  expect_t.insert(expect_t.end(), x.shape.begin() + 2, x.shape.end());
  if (t.shape != expect_t)
    return node_error(node, "target shape " + shape_str(t.shape) + " must be input 0's shape without axis 1 (" +
                                shape_str(expect_t) + ")");
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {x.dtype}));
    if (input_value(graph, node, 2).shape != Shape{x.shape[1]})
      return node_error(node, "weight must have shape [C] = [" + std::to_string(x.shape[1]) + "]");
  }
  set_output(graph, node, 0, x.dtype, reduction_code(node) == 0 ? t.shape : Shape{});
  if (has_log_prob(node)) set_output(graph, node, 1, x.dtype, x.shape);
  return Status::ok();
}

// Dimensions of the [N, C, D] view of input 0 (D = product of d1..dk).
struct LossDims {
  int64_t n = 1, c = 1, d = 1;
};

LossDims loss_dims(const Shape& x) {
  LossDims r;
  r.n = x[0];
  r.c = x[1];
  for (size_t i = 2; i < x.size(); ++i) r.d *= x[i];
  return r;
}

// log_prob = log_softmax(x, axis 1), computed in double.
void log_softmax_axis1(const Tensor& x, const LossDims& dims, Tensor& out) {
  for (int64_t n = 0; n < dims.n; ++n)
    for (int64_t d = 0; d < dims.d; ++d) {
      const int64_t base = n * dims.c * dims.d + d;
      double m = -INFINITY;
      for (int64_t c = 0; c < dims.c; ++c) m = std::max(m, x.get(base + c * dims.d));
      double s = 0;
      for (int64_t c = 0; c < dims.c; ++c) s += std::exp(x.get(base + c * dims.d) - m);
      const double shift = m + std::log(s);
      for (int64_t c = 0; c < dims.c; ++c) out.set(base + c * dims.d, x.get(base + c * dims.d) - shift);
    }
}

Status nll(const Node& node, const Tensor& logp, const Tensor& target, const Tensor* weight, Tensor& out) {
  const LossDims dims = loss_dims(logp.shape());
  const bool has_ignore = node.has_attr("ignore_index");
  const int64_t ignore = node.attr_int("ignore_index", 0);
  const int reduction = reduction_code(node);
  double sum = 0, weight_sum = 0;
  for (int64_t i = 0; i < dims.n * dims.d; ++i) {
    const int64_t t = target.get_int(i);
    double loss = 0, w = 0;
    if (!(has_ignore && t == ignore)) {
      if (t < 0 || t >= dims.c)
        return node_error(node, "target value " + std::to_string(t) + " at flat index " + std::to_string(i) +
                                    " is outside [0, " + std::to_string(dims.c) + ") and not ignore_index");
      w = weight ? weight->get(t) : 1.0;
      const int64_t n = i / dims.d, d = i % dims.d;
      loss = -logp.get((n * dims.c + t) * dims.d + d) * w;
    }
    if (reduction == 0) out.set(i, loss);
    sum += loss;
    weight_sum += w;
  }
  if (reduction == 1) out.set(0, sum);
  if (reduction == 2) out.set(0, sum / weight_sum);  // all ignored: 0/0 = NaN, as the ONNX reference
  return Status::ok();
}

Status loss_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const Tensor* weight = inputs.size() > 2 ? inputs[2] : nullptr;
  if (!is_sce(node)) return nll(node, x, *inputs[1], weight, outputs[0]);
  Tensor local;
  Tensor* logp = &local;
  if (has_log_prob(node)) logp = &outputs[1];
  else local = Tensor(x.dtype(), x.shape());
  log_softmax_axis1(x, loss_dims(x.shape()), *logp);
  // The NLL reads log_prob rounded to the output dtype, like an fp16 model would.
  return nll(node, *logp, *inputs[1], weight, outputs[0]);
}

Expected<Lowering> loss_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& t = input_value(graph, node, 1);
  const LossDims dims = loss_dims(x.shape);
  const int reduction = reduction_code(node);
  Lowering l;
  ValueId logp = node.inputs[0];
  if (is_sce(node)) {
    logp = has_log_prob(node) ? node.outputs[1] : kScratchArg;
    if (!has_log_prob(node)) l.scratch_bytes = x.numel() * dtype_size(x.dtype);
    if (x.numel() > 0) {
      KernelStep k;
      k.template_name = "log_softmax";
      k.holes = {{"comment", "SoftmaxCrossEntropyLoss log_softmax over axis 1 of " + shape_str(x.shape) + " " +
                                 dtype_name(x.dtype)},
                 {"T", dtype_c_type(x.dtype)},
                 {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
                 {"OUTER", int_literal(dims.n)},
                 {"N", int_literal(dims.c)},
                 {"INNER", int_literal(dims.d)},
                 {"THREADS", std::to_string(kLossThreads)},
                 {"ROW_MODE", dims.d == 1 ? "true" : "false"}};
      k.args = {node.inputs[0], logp};
      k.block = Dim3{kLossThreads, 1, 1};
      k.grid = dims.d == 1 ? Dim3{std::min<int64_t>(dims.n, 65535LL * 16), 1, 1} : grid_for(dims.n * dims.d, kLossThreads);
      l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    }
  }
  const int64_t items = dims.n * dims.d;
  if (reduction == 0 && items == 0) return l;
  KernelStep k;
  k.template_name = "nll_loss";
  const bool has_weight = node.input(2) != kNoValue;
  k.holes = {{"comment", node.op_type + " NLL reduction=" + node.attr_string("reduction", "mean") + " over [" +
                             std::to_string(dims.n) + ", " + std::to_string(dims.c) + ", " + std::to_string(dims.d) +
                             "] " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"TI", dtype_c_type(t.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"N", int_literal(dims.n)},
             {"C", int_literal(dims.c)},
             {"D", int_literal(dims.d)},
             {"HAS_IGNORE", node.has_attr("ignore_index") ? "true" : "false"},
             {"IGNORE", int_literal(node.attr_int("ignore_index", 0))},
             {"HAS_WEIGHT", has_weight ? "true" : "false"},
             {"REDUCTION", std::to_string(reduction)},
             {"THREADS", std::to_string(kLossThreads)}};
  k.args = {logp, node.inputs[1], has_weight ? node.inputs[2] : kNullArg, node.outputs[0]};
  k.block = Dim3{kLossThreads, 1, 1};
  // Reductions run in one block (a deterministic order); "none" is a grid-stride loop.
  k.grid = reduction == 0 ? grid_for(items, kLossThreads) : Dim3{1, 1, 1};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_loss_ops(OpRegistry& registry) {
  for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
    OpDef def;
    def.op_type = op;
    def.infer = loss_infer;
    def.reference = loss_reference;
    def.lower = loss_lower;
    registry.add(def);
  }
}

}  // namespace aotc
