// aotc.PoolGemm (internal; made by opt/fuse_pool_gemm, never read from a model): the head of a
// batch-1 CNN in one node - y = act(alpha * mean(X) B^T + C) for X [1, H, W, K] channels-last (the
// GlobalAveragePool's input), B [N, K] (the Gemm's transposed weight), C an optional bias row [N]
// or [1, N]. Attributes: the aotc.FusedGemm ones it came from (alpha, beta = 1, transB = 1,
// activation, output_dtype, output_shape) and `pool_input_max` where the pool clamped its input
// (opt/clip_into_depthwise: clip_into_pool). Its reference is the two references it replaces, in
// order - GlobalAveragePool's (its mean rounded to X's dtype) then FusedGemm's - and its kernel
// (templates/pool_gemv_cluster.cu.in) is bit for bit the two kernels they lowered to.
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

// The GlobalAveragePool node the fused one replaced (channels_last, its input clamp).
Node pool_of(const Node& node) {
  Node pool;
  pool.op_type = "GlobalAveragePool";
  pool.name = node.name;
  pool.attrs["channels_last"] = Attribute::of_int(1);
  if (node.has_attr("pool_input_max")) pool.attrs["input_max"] = node.attrs.at("pool_input_max");
  return pool;
}

// The aotc.FusedGemm it replaced (every attribute but the pool's).
Node gemm_of(const Node& node) {
  Node gemm = node;
  gemm.op_type = "FusedGemm";
  gemm.domain = "aotc";
  gemm.attrs.erase("pool_input_max");
  return gemm;
}

Status pool_gemm_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kFloat16, DType::kBFloat16, DType::kFloat32}));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 0, 4));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 1, 2));
  const Value& x = input_value(graph, node, 0);
  const Value& b = input_value(graph, node, 1);
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {x.dtype}));
  if (x.shape[0] != 1) return node_error(node, "X " + shape_str(x.shape) + " must be one image [1, H, W, K]");
  if (node.attr_int("transA", 0) != 0 || node.attr_int("transB", 0) != 1)
    return node_error(node, "expects transA = 0 and transB = 1 (B stored [N, K])");
  const int64_t k = x.shape[3], n = b.shape[0];
  if (b.shape[1] != k) return node_error(node, "B " + shape_str(b.shape) + " must be [N, " + std::to_string(k) + "]");
  if (node.has_attr("pool_input_max") && !(node.attr_float("pool_input_max", 0.0f) >= 0.0f))
    return node_error(node, "pool_input_max must be >= 0");
  if (node.input(2) != kNoValue) {
    const Value& c = input_value(graph, node, 2);
    if (node.attr_float("beta", 1.0f) != 1.0f || !(c.shape == Shape{n} || c.shape == Shape{1, n}))
      return node_error(node, "C must be a bias row [N] or [1, N] added with beta 1, not " + shape_str(c.shape));
  }
  AOTC_RETURN_IF_ERROR(check_activation_known(node, node));
  DType out = x.dtype;
  if (node.has_attr("output_dtype")) {
    if (node.attr_int("output_dtype", 0) != static_cast<int64_t>(DType::kFloat32) || has_activation(node))
      return node_error(node, "output_dtype must be float (1), without activation");
    out = DType::kFloat32;
  }
  if (node.input(2) != kNoValue) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {out}));
  Shape y_shape = {1, n};
  if (node.has_attr("output_shape")) {
    const Shape s = node.attr_ints("output_shape");
    if (s.empty() || s.back() != n || shape_numel(s) != n)
      return node_error(node, "output_shape " + shape_str(s) + " must hold the [1, " + std::to_string(n) + "] row");
    y_shape = s;
  }
  set_output(graph, node, 0, out, y_shape);
  return Status::ok();
}

Status pool_gemm_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const OpRegistry& registry = default_registry();
  std::vector<Tensor> pooled;
  pooled.emplace_back(x.dtype(), Shape{1, 1, 1, x.shape()[3]});
  AOTC_RETURN_IF_ERROR(registry.find("GlobalAveragePool", "")->reference(pool_of(node), {&x}, pooled));
  const Tensor a = pooled[0].reshaped({1, x.shape()[3]});
  std::vector<const Tensor*> gemm_inputs = {&a, inputs[1], inputs.size() > 2 ? inputs[2] : nullptr};
  return registry.find("FusedGemm", "aotc")->reference(gemm_of(node), gemm_inputs, outputs);
}

Expected<Lowering> pool_gemm_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  const int64_t k = x.shape[3], n = input_value(graph, node, 1).shape[0], sp = x.shape[1] * x.shape[2];
  if (!pool_gemm_applies(graph.target, x.dtype, x.shape[0], n, k))
    return node_error(node, "no kernel for this pooled GEMM on these targets (pool_gemm_applies: --pool-gemm on, every "
                            "target sm_90+, 16-bit, one image, K a multiple of 8 up to 4096)");
  const bool bias = node.input(2) != kNoValue;
  KernelStep s;
  s.template_name = "pool_gemv_cluster";
  s.holes = {{"comment", "aotc.PoolGemm GlobalAveragePool " + shape_str(x.shape) + " then 1 x " + std::to_string(n) +
                             " K " + std::to_string(k) + " as a GEMV"},
             {"T", dtype_c_type(x.dtype)},
             {"TD", dtype_c_type(y.dtype)},
             {"TBIAS", dtype_c_type(bias ? input_value(graph, node, 2).dtype : x.dtype)},
             {"N", int_literal(n)}, {"C", int_literal(k)}, {"SP", int_literal(sp)},
             {"CL", int_literal(kPoolGemmCluster)},
             {"HAS_BIAS", bias ? "1" : "0"},
             {"ALPHA", float_literal(node.attr_float("alpha", 1.0f))},
             {"HAS_INPUT_MAX", node.has_attr("pool_input_max") ? "1" : "0"},
             {"INPUT_MAX", float_literal(node.attr_float("pool_input_max", 0.0f))},
             {"act_expr", has_activation(node) ? activation_expr(node, graph, "v") : "v"}};
  s.args = {node.inputs[0], node.inputs[1], bias ? node.inputs[2] : kNullArg, node.outputs[0]};
  s.block = Dim3{256, 1, 1};
  s.grid = Dim3{((n + 7) / 8 + kPoolGemmCluster - 1) / kPoolGemmCluster * kPoolGemmCluster, 1, 1};
  s.cluster_size = kPoolGemmCluster;
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, s, {}});
  return l;
}

}  // namespace

void register_pool_gemm_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "PoolGemm";
  def.domain = "aotc";
  def.infer = pool_gemm_infer;
  def.reference = pool_gemm_reference;
  def.lower = pool_gemm_lower;
  registry.add(def);
}

}  // namespace aotc
