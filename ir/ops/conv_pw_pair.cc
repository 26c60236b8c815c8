// aotc.PointwisePair: a channels_last pointwise convolution (1x1, stride 1, unpadded, one group;
// with bias, residual and activation) and the pointwise convolution that reads its output as its
// input 0 (ResNet: one block's conv3 + residual and the next block's conv1), as one node
// (opt/fuse_pointwise_pair), so that they run as one kernel (templates/conv_pw_pair_nhwc.cu.in).
// The first output is still produced (the next residual reads it).
// Inputs: 0 X [N, H, W, K1] (NHWC); 1 W1 [N1, 1, 1, K1] (KRSC); 2 B1 [N1] (optional); 3 a residual
// [N, H, W, N1] (optional); 4 W2 [N2, 1, 1, N1]; 5 B2 [N2] (optional).
// Outputs: 0 Y1 [N, H, W, N1], 1 Y2 [N, H, W, N2].
// Attributes: the first convolution's (its activation as "activation" / "act.*", channels_last =
// 1); the second one's as ir/ops/epilogue.h store_next records them ("next", "next.<name>").
// Semantics, as the two nodes had them: Y1 = round_T(act1(X W1^T + B1 + R)), Y2 = act2(Y1 W2^T +
// B2). The CPU reference is the two FusedConv references. Where the kernel's rule does not apply
// (ir/ops/conv_configs.h pw_pair_config), the node lowers as the two convolutions would.
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};

// The two convolutions as stand-alone channels_last aotc.FusedConv nodes over the pair's values.
Node first_part(const Node& pair) {
  Node n = load_own_conv(pair);
  n.inputs = {pair.input(0), pair.input(1), pair.inputs.size() > 2 ? pair.input(2) : kNoValue,
              pair.inputs.size() > 3 ? pair.input(3) : kNoValue};
  n.outputs = {pair.outputs.empty() ? kNoValue : pair.outputs[0]};
  return n;
}
Node second_part(const Node& pair) {
  Node n = load_next(pair);
  n.name = pair.name + "_next";
  n.inputs = {pair.outputs.empty() ? kNoValue : pair.outputs[0], pair.inputs.size() > 4 ? pair.input(4) : kNoValue,
              pair.inputs.size() > 5 ? pair.input(5) : kNoValue};
  n.outputs = {pair.outputs.size() > 1 ? pair.outputs[1] : kNoValue};
  return n;
}

struct PairShape {
  int64_t m = 0, k1 = 0, n1 = 0, n2 = 0;
  Shape y1, y2;
};

Expected<PairShape> pair_shape(const Node& node, const Shape& x, const Shape& w1, const Shape& w2) {
  if (x.size() != 4) return node_error(node, "input 0 (X) must be NHWC (rank 4), got rank " + std::to_string(x.size()));
  if (w1.size() != 4 || w1[1] != 1 || w1[2] != 1 || w1[3] != x[3])
    return node_error(node, "input 1 (first filter) must be [N1, 1, 1, " + std::to_string(x[3]) + "], got " + shape_str(w1));
  if (w2.size() != 4 || w2[1] != 1 || w2[2] != 1 || w2[3] != w1[0])
    return node_error(node, "input 4 (second filter) must be [N2, 1, 1, " + std::to_string(w1[0]) + "], got " +
                                shape_str(w2));
  for (const Node& part : {first_part(node), second_part(node)})
    if (!plain_pointwise_conv(part, true))
      return node_error(node, "both convolutions must be pointwise (1x1, stride 1, no padding, one group)");
  PairShape s;
  s.m = x[0] * x[1] * x[2], s.k1 = x[3], s.n1 = w1[0], s.n2 = w2[0];
  s.y1 = {x[0], x[1], x[2], s.n1};
  s.y2 = {x[0], x[1], x[2], s.n2};
  return s;
}

Status pair_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 6));  // X and W1 (W2 checked below); B1, R, B2 optional
  if (node.inputs.size() < 5) return node_error(node, "expects 5 or 6 inputs (X, W1, B1, R, W2[, B2])");
  if (node.outputs.size() != 2) return node_error(node, "expects 2 outputs");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kTypes));
  const DType t = input_value(graph, node, 0).dtype;
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.input(i) != kNoValue) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {t}));
  if (node.input(1) == kNoValue || node.input(4) == kNoValue) return node_error(node, "inputs 1 and 4 (the filters) are required");
  auto s = pair_shape(node, input_value(graph, node, 0).shape, input_value(graph, node, 1).shape,
                      input_value(graph, node, 4).shape);
  if (!s) return s.status();
  if (node.input(2) != kNoValue && input_value(graph, node, 2).shape != Shape{s->n1})
    return node_error(node, "input 2 (first bias) has shape " + shape_str(input_value(graph, node, 2).shape) +
                                ", expected " + std::to_string(s->n1));
  if (node.input(3) != kNoValue && input_value(graph, node, 3).shape != s->y1)
    return node_error(node, "input 3 (residual) has shape " + shape_str(input_value(graph, node, 3).shape) +
                                ", expected the first output's shape " + shape_str(s->y1));
  if (node.inputs.size() > 5 && node.input(5) != kNoValue && input_value(graph, node, 5).shape != Shape{s->n2})
    return node_error(node, "input 5 (second bias) has shape " + shape_str(input_value(graph, node, 5).shape) +
                                ", expected " + std::to_string(s->n2));
  for (const Node& part : {first_part(node), second_part(node)}) AOTC_RETURN_IF_ERROR(check_activation_known(node, part));
  set_output(graph, node, 0, t, s->y1);
  set_output(graph, node, 1, t, s->y2);
  return Status::ok();
}

Status pair_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  auto s = pair_shape(node, inputs[0]->shape(), inputs[1]->shape(), inputs[4]->shape());
  if (!s) return s.status();
  const OpDef* conv = default_registry().find("FusedConv", "aotc");
  if (!conv || !conv->reference) return node_error(node, "internal: aotc.FusedConv has no reference");
  std::vector<Tensor> y1 = {Tensor(outputs[0].dtype(), s->y1)};  // stored as T, as the first node's output was
  AOTC_RETURN_IF_ERROR(conv->reference(first_part(node), {inputs[0], inputs[1], inputs[2], inputs[3]}, y1));
  std::vector<Tensor> y2 = {Tensor(outputs[1].dtype(), s->y2)};
  AOTC_RETURN_IF_ERROR(conv->reference(second_part(node), {&y1[0], inputs[4], inputs.size() > 5 ? inputs[5] : nullptr}, y2));
  outputs[0] = std::move(y1[0]);
  outputs[1] = std::move(y2[0]);
  return Status::ok();
}

// The two convolutions' own lowerings, one after the other (the rule's fallback).
Expected<Lowering> lower_as_two(const Node& node, const Graph& graph) {
  const OpDef* conv = default_registry().find("FusedConv", "aotc");
  if (!conv || !conv->lower) return node_error(node, "internal: aotc.FusedConv has no lowering");
  Lowering out;
  for (const Node& part : {first_part(node), second_part(node)}) {
    auto l = conv->lower(part, graph);
    if (!l) return l.status();
    if (l->is_view) return node_error(node, "internal: a convolution of the pair lowered to a view");
    out.scratch_bytes = std::max(out.scratch_bytes, l->scratch_bytes);
    for (LoweredStep& step : l->steps) out.steps.push_back(std::move(step));
  }
  return out;
}

Expected<Lowering> pair_lower(const Node& node, const Graph& graph) {
  const Value& xv = input_value(graph, node, 0);
  auto s = pair_shape(node, xv.shape, input_value(graph, node, 1).shape, input_value(graph, node, 4).shape);
  if (!s) return s.status();
  if (s->m == 0 || s->n1 == 0 || s->n2 == 0) return Lowering{};
  const Node first = first_part(node), second = second_part(node);
  for (const Node& part : {first, second}) AOTC_RETURN_IF_ERROR(check_activation_lowerable(node, part));
  // Output rows written at another stride (concat_in_place) stay with the two convolutions.
  const int64_t x_ld = graph.row_stride(node.input(0)), y1_ld = graph.row_stride(node.outputs[0]),
                y2_ld = graph.row_stride(node.outputs[1]);
  const bool has_res = node.input(3) != kNoValue;
  const int64_t r_ld = has_res ? graph.row_stride(node.input(3)) : 0;
  const std::optional<PwPairConfig> cfg = pw_pair_config(graph.target, xv.dtype, s->m, s->k1, s->n1, s->n2);
  if (!cfg || y1_ld != 0 || y2_ld != 0 || (x_ld != 0 && x_ld % 8 != 0) || (r_ld != 0 && r_ld % 8 != 0))
    return lower_as_two(node, graph);
  const bool has_b1 = node.input(2) != kNoValue, has_b2 = node.inputs.size() > 5 && node.input(5) != kNoValue;
  const int64_t smem = pw_pair_smem_bytes(*cfg, s->k1, s->n1, s->n2);
  KernelStep k;
  k.template_name = "conv_pw_pair_nhwc";
  k.holes = {{"comment", "PointwisePair NHWC X " + shape_str(xv.shape) + " -> " + shape_str(s->y1) + " -> " +
                             shape_str(s->y2) + " rows " + std::to_string(cfg->bm) + " cluster " + std::to_string(cfg->cs)},
             {"T", dtype_c_type(xv.dtype)},
             {"M", int_literal(s->m)},
             {"K1", int_literal(s->k1)},
             {"N1", int_literal(s->n1)},
             {"N2", int_literal(s->n2)},
             {"BM", int_literal(cfg->bm)},
             {"CS", int_literal(cfg->cs)},
             {"SMEM_BYTES", int_literal(smem)},
             {"XLD", int_literal(x_ld != 0 ? x_ld : s->k1)},
             {"RLD", int_literal(r_ld != 0 ? r_ld : s->n1)},
             {"Y1LD", int_literal(s->n1)},
             {"Y2LD", int_literal(s->n2)},
             {"HAS_B1", has_b1 ? "1" : "0"},
             {"HAS_RES", has_res ? "1" : "0"},
             {"HAS_B2", has_b2 ? "1" : "0"},
             {"act1_expr", activation_expr(first, graph, "v")},
             {"act2_expr", activation_expr(second, graph, "v")}};
  k.args = {node.inputs[0], node.inputs[1], has_b1 ? node.inputs[2] : kNullArg, has_res ? node.inputs[3] : kNullArg,
            node.inputs[4], has_b2 ? node.inputs[5] : kNullArg, node.outputs[0], node.outputs[1]};
  k.grid = Dim3{cfg->cs, (s->m + cfg->bm - 1) / cfg->bm, 1};
  k.block = Dim3{kPwPairThreads, 1, 1};
  k.shared_bytes = smem;
  k.cluster_size = cfg->cs;
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_conv_pw_pair_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "PointwisePair";
  def.domain = "aotc";
  def.infer = pair_infer;
  def.reference = pair_reference;
  def.lower = pair_lower;
  registry.add(def);
}

}  // namespace aotc
