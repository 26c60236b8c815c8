// CausalConvWithState-27: a causal depthwise 1-D convolution with a carried state (Mamba, Gated
// DeltaNet). With P = concat(past_state or zeros [B, C, k-1], input [B, C, L]) along the length:
//   output[b, c, t]        = act(bias[c] + sum_j weight[c, 0, j] * P[b, c, t + j]),  t < L
//   present_state[b, c, j] = P[b, c, L + j],                                         j < k - 1
// act is the identity or SiLU ("silu" / "swish": x * sigmoid(x)). One kernel writes both outputs.
#include <cmath>
#include <string>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

struct Dims {
  int64_t batch = 0, channels = 0, len = 0, k = 0;
  bool silu = false;
};

Expected<Dims> dims_of(const Node& node, const Shape& x, const Shape& w, const Shape* bias, const Shape* past) {
  const std::string act = node.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    return node_error(node, "activation '" + escape_for_message(act, 40) + "' is not one of none, silu, swish");
  if (x.size() != 3) return node_error(node, "input must be [batch, channels, length], got " + shape_str(x));
  Dims d{x[0], x[1], x[2], 0, act != "none"};
  if (w.size() != 3 || w[0] != d.channels || w[1] != 1 || w[2] < 1)
    return node_error(node, "weight must be [channels, 1, k] with k >= 1 for " + std::to_string(d.channels) +
                                " channels, got " + shape_str(w));
  d.k = w[2];
  if (bias && (bias->size() != 1 || (*bias)[0] != d.channels))
    return node_error(node, "bias must be [" + std::to_string(d.channels) + "], got " + shape_str(*bias));
  if (past && *past != Shape{d.batch, d.channels, d.k - 1})
    return node_error(node, "past_state must be " + shape_str({d.batch, d.channels, d.k - 1}) + ", got " +
                                shape_str(*past));
  return d;
}

Status causal_conv_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 4));
  if (node.outputs.empty() || node.outputs.size() > 2) return node_error(node, "expects 1 or 2 outputs");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  const Value& x = input_value(graph, node, 0);
  for (size_t i = 1; i < 4; ++i)
    if (node.input(i) != kNoValue && graph.value(node.inputs[i]).dtype != x.dtype)
      return node_error(node, "input " + std::to_string(i) + " must have the input's dtype " + dtype_name(x.dtype));
  auto d = dims_of(node, x.shape, input_value(graph, node, 1).shape, optional_input_shape(graph, node, 2),
                   optional_input_shape(graph, node, 3));
  if (!d) return d.status();
  set_output(graph, node, 0, x.dtype, x.shape);
  set_output(graph, node, 1, x.dtype, {d->batch, d->channels, d->k - 1});
  return Status::ok();
}

Status causal_conv_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  const Tensor &x = *in[0], &w = *in[1];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  const Tensor* past = in.size() > 3 ? in[3] : nullptr;
  Shape bias_shape = bias ? bias->shape() : Shape{}, past_shape = past ? past->shape() : Shape{};
  auto d = dims_of(node, x.shape(), w.shape(), bias ? &bias_shape : nullptr, past ? &past_shape : nullptr);
  if (!d) return d.status();
  const int64_t pad = d->k - 1;
  for (int64_t b = 0; b < d->batch; ++b)
    for (int64_t c = 0; c < d->channels; ++c) {
      const int64_t row = b * d->channels + c;
      // P[p] for p in [0, L + k - 1): the state, then the input.
      auto padded = [&](int64_t p) {
        if (p >= pad) return x.get(row * d->len + p - pad);
        return past ? past->get(row * pad + p) : 0.0;
      };
      for (int64_t t = 0; t < d->len; ++t) {
        double acc = bias ? bias->get(c) : 0.0;
        for (int64_t j = 0; j < d->k; ++j) acc += w.get(c * d->k + j) * padded(t + j);
        out[0].set(row * d->len + t, d->silu ? acc / (1.0 + std::exp(-acc)) : acc);
      }
      if (node.outputs.size() > 1 && node.outputs[1] != kNoValue)  // present_state asked for
        for (int64_t j = 0; j < pad; ++j) out[1].set(row * pad + j, padded(d->len + j));
    }
  return Status::ok();
}

Expected<Lowering> causal_conv_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  auto d = dims_of(node, x.shape, input_value(graph, node, 1).shape, optional_input_shape(graph, node, 2),
                   optional_input_shape(graph, node, 3));
  if (!d) return d.status();
  Lowering low;
  const bool present = node.outputs.size() > 1 && node.outputs[1] != kNoValue;
  const int64_t rows = d->batch * d->channels, pad = d->k - 1;
  const int64_t items = rows * (d->len + (present ? pad : 0));
  if (items == 0) return low;
  auto arg = [&](size_t i) { return node.input(i) == kNoValue ? kNullArg : node.inputs[i]; };
  KernelStep k;
  k.template_name = "causal_conv_with_state";
  k.holes = {{"comment", "CausalConvWithState " + shape_str(x.shape) + " k " + std::to_string(d->k) + " " +
                             dtype_name(x.dtype) + (d->silu ? " silu" : "")},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"CHANNELS", int_literal(d->channels)},
             {"LEN", int_literal(d->len)},
             {"K", int_literal(d->k)},
             {"ROWS", int_literal(rows)},
             {"HAS_BIAS", node.input(2) != kNoValue ? "true" : "false"},
             {"HAS_PAST", node.input(3) != kNoValue ? "true" : "false"},
             {"HAS_PRESENT", present ? "true" : "false"},
             {"SILU", d->silu ? "true" : "false"}};
  k.args = {node.inputs[0], node.inputs[1], arg(2), arg(3), node.outputs[0], present ? node.outputs[1] : kNullArg};
  k.block = Dim3{128, 1, 1};
  k.grid = grid_for(items, 128);
  low.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return low;
}

}  // namespace

void register_causal_conv_with_state_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "CausalConvWithState";
  def.infer = causal_conv_infer;
  def.reference = causal_conv_reference;
  def.lower = causal_conv_lower;
  registry.add(def);
}

}  // namespace aotc
