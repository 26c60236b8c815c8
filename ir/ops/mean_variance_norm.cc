// MeanVarianceNormalization: y = (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over `axes`
// (default [0, 2, 3]), exactly the ONNX function body (population variance, epsilon 1e-9).
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Expected<std::vector<bool>> reduced_axes(const Node& node, int64_t rank) {
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : node.attr_ints("axes", {0, 2, 3})) {
    Expected<int64_t> n = normalize_axis(node, a, rank);
    if (!n) return n.status();
    reduced[static_cast<size_t>(*n)] = true;
  }
  return reduced;
}

Status mvn_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16}));
  const Value& x = input_value(graph, node, 0);
  Expected<std::vector<bool>> r = reduced_axes(node, static_cast<int64_t>(x.shape.size()));
  if (!r) return r.status();
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

Status mvn_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Expected<std::vector<bool>> red = reduced_axes(node, x.rank());
  if (!red) return red.status();
  // Group each element by its index over the kept axes.
  const std::vector<int64_t> strides = shape_strides(x.shape());
  std::vector<int64_t> group(static_cast<size_t>(x.numel()));
  int64_t groups = 1;
  std::vector<int64_t> kept_stride(static_cast<size_t>(x.rank()), 0);
  for (int64_t d = x.rank() - 1; d >= 0; --d)
    if (!(*red)[d]) { kept_stride[d] = groups; groups *= x.shape()[d]; }
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t g = 0;
    for (int64_t d = 0; d < x.rank(); ++d) g += (i / strides[d]) % x.shape()[d] * kept_stride[d];
    group[i] = g;
  }
  std::vector<double> sum(groups, 0.0), sq(groups, 0.0), cnt(groups, 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.get(i);
    sum[group[i]] += v;
    sq[group[i]] += v * v;
    cnt[group[i]] += 1;
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t g = group[i];
    const double mean = sum[g] / cnt[g], var = sq[g] / cnt[g] - mean * mean;
    outputs[0].set(i, (x.get(i) - mean) / (std::sqrt(std::max(var, 0.0)) + 1e-9));
  }
  return Status::ok();
}


Expected<Lowering> mvn_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  Expected<std::vector<bool>> red = reduced_axes(node, static_cast<int64_t>(x.shape.size()));
  if (!red) return red.status();
  if (x.shape.empty()) return node_error(node, "a scalar input has nothing to normalise over");
  std::string flags = "{";
  int64_t reduced_n = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    flags += std::string(d ? ", " : "") + ((*red)[d] ? "true" : "false");
    if ((*red)[d]) reduced_n *= x.shape[d];
  }
  flags += "}";
  KernelStep k;
  k.template_name = "mean_variance_norm";
  k.holes = {{"comment", "MeanVarianceNormalization " + shape_str(x.shape) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)}, {"ACC", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"RANK", std::to_string(x.shape.size())}, {"DIMS", dims_literal(x.shape)}, {"REDUCED", flags},
             {"NUMEL", int_literal(x.numel())}, {"REDUCED_N", int_literal(reduced_n)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_mean_variance_norm_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "MeanVarianceNormalization";
  def.infer = mvn_infer;
  def.reference = mvn_reference;
  def.lower = mvn_lower;
  registry.add(def);
}

}  // namespace aotc
