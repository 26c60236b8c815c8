// aotc.DepthwisePointwise: a channels_last depthwise convolution and the pointwise (1x1, stride 1,
// no padding, one group) convolution that alone reads its output, as one node
// (opt/fuse_depthwise_pointwise), so that they run as one kernel (templates/conv_dw_pw_nhwc.cu.in)
// and the depthwise output - MobileNet's expanded tensor - is never stored.
// Inputs: 0 X [N, H, W, C] (NHWC); 1 the depthwise filter, tap-major [KH, KW, C]; 2 its bias [C]
// (optional); 3 the pointwise filter [CO, 1, 1, C] (KRSC); 4 its bias [CO] (optional); 5 a residual
// [N, OH, OW, CO] (optional). Output [N, OH, OW, CO].
// Attributes: the depthwise node as ir/ops/epilogue.h store_depthwise records it ("depthwise" and
// its attributes as "dw.<name>": strides, pads, dilations, group, auto_pad, input_max, its
// absorbed activation "dw.activation" / "dw.act.*"); the pointwise node's activation as
// "activation" / "act.*"; channels_last = 1.
// Semantics, as the two nodes had them: D = round_T(act_dw(depthwise(min(X, input_max)) + B_dw)),
// Y = act(D x W_pw^T + B_pw + Residual). The CPU reference is the two FusedConv references.
#include <algorithm>

#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/conv_dw_pw.h"
#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/window.h"

namespace aotc {

Node pointwise_part(const Node& fused) { return load_own_conv(fused); }

namespace {

const std::vector<DType> kTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};

struct DwPwShape {
  int64_t n = 0, h = 0, w = 0, c = 0, kh = 0, kw = 0, co = 0;
  WindowGeometry geo;
  Shape mid() const { return {n, geo.out[0], geo.out[1], c}; }   // the depthwise output, NHWC
  Shape out() const { return {n, geo.out[0], geo.out[1], co}; }  // NHWC
};

Expected<DwPwShape> dw_pw_shape(const Node& node, const Shape& x, const Shape& wdw, const Shape& wpw) {
  if (x.size() != 4) return node_error(node, "input 0 (X) must be NHWC (rank 4), got rank " + std::to_string(x.size()));
  if (wdw.size() != 3 || wdw[2] != x[3])
    return node_error(node, "input 1 (depthwise filter) must be [KH, KW, C] with C " + std::to_string(x[3]) + ", got " +
                                shape_str(wdw));
  if (wpw.size() != 4 || wpw[1] != 1 || wpw[2] != 1 || wpw[3] != x[3])
    return node_error(node, "input 3 (pointwise filter) must be [CO, 1, 1, " + std::to_string(x[3]) + "], got " +
                                shape_str(wpw));
  DwPwShape s;
  s.n = x[0], s.h = x[1], s.w = x[2], s.c = x[3], s.kh = wdw[0], s.kw = wdw[1], s.co = wpw[0];
  const Node dw = load_depthwise(node);
  if (dw.attr_int("group", 1) != s.c)
    return node_error(node, "dw.group " + std::to_string(dw.attr_int("group", 1)) + " is not the channel count " +
                                std::to_string(s.c));
  auto geo = resolve_window(dw, {s.h, s.w}, {s.kh, s.kw}, WindowOptions{});
  if (!geo) return geo.status();
  s.geo = *geo;
  return s;
}

DwPwProblem dw_pw_problem(const DwPwShape& s) {
  DwPwProblem p;
  p.batch = s.n, p.oh = s.geo.out[0], p.ow = s.geo.out[1], p.kh = s.kh, p.kw = s.kw;
  p.sh = s.geo.strides[0], p.sw = s.geo.strides[1], p.dh = s.geo.dilations[0], p.dw = s.geo.dilations[1];
  return p;
}

Status dw_pw_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 4, 6));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kTypes));
  const DType t = input_value(graph, node, 0).dtype;
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.input(i) != kNoValue) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {t}));
  if (node.input(1) == kNoValue || node.input(3) == kNoValue) return node_error(node, "inputs 1 and 3 (the filters) are required");
  auto s = dw_pw_shape(node, input_value(graph, node, 0).shape, input_value(graph, node, 1).shape,
                       input_value(graph, node, 3).shape);
  if (!s) return s.status();
  if (node.input(2) != kNoValue && input_value(graph, node, 2).shape != Shape{s->c})
    return node_error(node, "input 2 (depthwise bias) has shape " + shape_str(input_value(graph, node, 2).shape) +
                                ", expected " + std::to_string(s->c));
  if (node.input(4) != kNoValue && input_value(graph, node, 4).shape != Shape{s->co})
    return node_error(node, "input 4 (pointwise bias) has shape " + shape_str(input_value(graph, node, 4).shape) +
                                ", expected " + std::to_string(s->co));
  if (node.input(5) != kNoValue && input_value(graph, node, 5).shape != s->out())
    return node_error(node, "input 5 (residual) has shape " + shape_str(input_value(graph, node, 5).shape) +
                                ", expected the output shape " + shape_str(s->out()));
  for (const Node& part : {load_depthwise(node), pointwise_part(node)})
    AOTC_RETURN_IF_ERROR(check_activation_known(node, part));
  set_output(graph, node, 0, t, s->out());
  return Status::ok();
}

Status dw_pw_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  auto s = dw_pw_shape(node, inputs[0]->shape(), inputs[1]->shape(), inputs[3]->shape());
  if (!s) return s.status();
  // The tap-major filter back to KRSC [C, KH, KW, 1].
  const Tensor& wt = *inputs[1];
  Tensor w(wt.dtype(), {s->c, s->kh, s->kw, 1});
  for (int64_t c = 0; c < s->c; ++c)
    for (int64_t t = 0; t < s->kh * s->kw; ++t) w.set(c * s->kh * s->kw + t, wt.get(t * s->c + c));
  const OpDef* conv = default_registry().find("FusedConv", "aotc");
  if (!conv || !conv->reference) return node_error(node, "internal: aotc.FusedConv has no reference");
  std::vector<Tensor> mid = {Tensor(outputs[0].dtype(), s->mid())};  // stored as T, as the depthwise node's output was
  AOTC_RETURN_IF_ERROR(conv->reference(load_depthwise(node), {inputs[0], &w, inputs[2], nullptr}, mid));
  const Tensor* res = inputs.size() > 5 ? inputs[5] : nullptr;
  const Tensor* bias = inputs.size() > 4 ? inputs[4] : nullptr;
  return conv->reference(pointwise_part(node), {&mid[0], inputs[3], bias, res}, outputs);
}

Expected<Lowering> dw_pw_lower(const Node& node, const Graph& graph) {
  const Value& xv = input_value(graph, node, 0);
  auto s = dw_pw_shape(node, xv.shape, input_value(graph, node, 1).shape, input_value(graph, node, 3).shape);
  if (!s) return s.status();
  const int64_t pixels = s->n * s->geo.out[0] * s->geo.out[1];
  if (pixels == 0 || s->co == 0) return Lowering{};
  const DwPwProblem prob = dw_pw_problem(*s);
  const std::optional<DwPwConfig> cfg = dw_pw_config(graph.target, xv.dtype, s->c, s->co, prob);
  if (!cfg)
    return node_error(node, "no kernel for a depthwise + pointwise pair of " + dtype_name(xv.dtype) + ", C " +
                                std::to_string(s->c) + ", CO " + std::to_string(s->co) + " on this target");
  const Node dw = load_depthwise(node), pw = pointwise_part(node);
  for (const Node& part : {dw, pw}) AOTC_RETURN_IF_ERROR(check_activation_lowerable(node, part));
  if (dw.has_attr("input_max") && !(dw.attr_float("input_max", 0.0f) >= 0.0f))
    return node_error(node, "dw.input_max must be >= 0 (the zero padding stays zero under it)");
  if (has_input_activation(dw)) return node_error(node, "dw.input_activation is not implemented by the depthwise + pointwise kernel");
  const int64_t y_stride = graph.row_stride(node.outputs[0]);
  const int64_t y_ld = y_stride != 0 ? y_stride : s->co;
  const bool has_dw_bias = node.input(2) != kNoValue, has_bias = node.input(4) != kNoValue, has_res = node.input(5) != kNoValue;
  const int64_t largest = std::max({xv.numel(), pixels * std::max(s->c, y_ld), s->co * s->c});
  const WindowGeometry& g = s->geo;
  KernelStep k;
  k.template_name = "conv_dw_pw_nhwc";
  k.holes = {
      {"comment", "DepthwisePointwise NHWC X " + shape_str(xv.shape) + " dw " + std::to_string(s->kh) + "x" +
                      std::to_string(s->kw) + " stride " + std::to_string(g.strides[0]) + " -> " + shape_str(s->mid()) +
                      " pw -> " + shape_str(s->out()) + " tile " + std::to_string(cfg->toh) + "x" +
                      std::to_string(cfg->tow) + "x" + std::to_string(cfg->cob()) + " warps " + std::to_string(cfg->wm()) + "x" +
                      std::to_string(cfg->wn)},
      {"T", dtype_c_type(xv.dtype)},
      {"IDX", largest < (int64_t{1} << 31) - (int64_t{1} << 20) ? "int" : "long long"},
      {"N", int_literal(s->n)}, {"C", int_literal(s->c)}, {"H", int_literal(s->h)}, {"W", int_literal(s->w)},
      {"KH", int_literal(s->kh)}, {"KW", int_literal(s->kw)},
      {"OH", int_literal(g.out[0])}, {"OW", int_literal(g.out[1])},
      {"SH", int_literal(g.strides[0])}, {"SW", int_literal(g.strides[1])},
      {"PH", int_literal(g.pad_begin[0])}, {"PW", int_literal(g.pad_begin[1])},
      {"DH", int_literal(g.dilations[0])}, {"DW", int_literal(g.dilations[1])},
      {"CO", int_literal(s->co)}, {"YLD", int_literal(y_ld)},
      {"TOH", int_literal(cfg->toh)}, {"TOW", int_literal(cfg->tow)},
      {"WM", int_literal(cfg->wm())}, {"WN", int_literal(cfg->wn)}, {"NT", int_literal(cfg->nt)},
      {"THREADS", int_literal(cfg->threads())},
      {"HAS_INPUT_MAX", dw.has_attr("input_max") ? "1" : "0"},
      {"INPUT_MAX", float_literal(dw.attr_float("input_max", 0.0f))},
      {"HAS_DW_BIAS", has_dw_bias ? "1" : "0"},
      {"HAS_BIAS", has_bias ? "1" : "0"},
      {"HAS_RES", has_res ? "1" : "0"},
      {"dw_act_expr", activation_expr(dw, graph, "v")},
      {"act_expr", activation_expr(pw, graph, "v")}};
  k.args = {node.inputs[0], node.inputs[1], has_dw_bias ? node.inputs[2] : kNullArg, node.inputs[3],
            has_bias ? node.inputs[4] : kNullArg, has_res ? node.inputs[5] : kNullArg, node.outputs[0]};
  k.block = Dim3{cfg->threads(), 1, 1};
  k.grid = Dim3{cfg->tiles(prob), (s->co + cfg->cob() - 1) / cfg->cob(), 1};
  k.shared_bytes = dw_pw_smem_bytes(*cfg, s->c, prob);
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  l.strided_output = y_stride != 0;
  return l;
}

}  // namespace

void register_conv_dw_pw_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "DepthwisePointwise";
  def.domain = "aotc";
  def.infer = dw_pw_infer;
  def.reference = dw_pw_reference;
  def.lower = dw_pw_lower;
  registry.add(def);
}

}  // namespace aotc
