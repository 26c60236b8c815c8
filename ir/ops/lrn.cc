// LRN (local response normalisation across channels) of [N, C, ...] float tensors:
// y = x / (bias + alpha / size * sum of x^2 over channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta.
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Status lrn_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16}));
  const Value& x = input_value(graph, node, 0);
  if (x.shape.size() < 2) return node_error(node, "input must be [N, C, ...]");
  if (!node.has_attr("size")) return node_error(node, "the size attribute is required");
  if (node.attr_int("size", 0) < 1) return node_error(node, "size must be >= 1");
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

Status lrn_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const int64_t size = node.attr_int("size", 1);
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
               bias = node.attr_float("bias", 1.0f);
  const int64_t n = x.shape()[0], c = x.shape()[1], inner = x.numel() / std::max<int64_t>(1, n * c);
  const int64_t lo = (size - 1) / 2, hi = size / 2;  // floor and ceil of (size-1)/2
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min<int64_t>(c - 1, ch + hi); ++k) {
          const double v = x.get((b * c + k) * inner + i);
          sum += v * v;
        }
        const int64_t at = (b * c + ch) * inner + i;
        outputs[0].set(at, x.get(at) / std::pow(bias + alpha / static_cast<double>(size) * sum, beta));
      }
  return Status::ok();
}


Expected<Lowering> lrn_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  const int64_t size = node.attr_int("size", 1);
  const float alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f), bias = node.attr_float("bias", 1.0f);
  KernelStep k;
  k.template_name = "lrn";
  k.holes = {{"comment", "LRN size=" + std::to_string(size) + " " + shape_str(x.shape) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)}, {"ACC", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"C", int_literal(x.shape[1])}, {"INNER", int_literal(x.numel() / (x.shape[0] * x.shape[1]))},
             {"NUMEL", int_literal(x.numel())}, {"LO", int_literal((size - 1) / 2)}, {"HI", int_literal(size / 2)},
             {"ALPHA_OVER_SIZE", float_literal(alpha / static_cast<float>(size))},
             {"BETA", float_literal(beta)}, {"BIAS", float_literal(bias)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_lrn_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "LRN";
  def.infer = lrn_infer;
  def.reference = lrn_reference;
  def.lower = lrn_lower;
  registry.add(def);
}

}  // namespace aotc
