// BatchNormalization in inference form: Y = (X - mean) / sqrt(var + epsilon) * scale + B, per
// channel (axis 1) for any input rank >= 2; opset < 9 models with spatial = 0 normalise per
// activation (parameters shaped like X without its batch dim). Training mode and the extra
// statistics outputs are refused. GPU: templates/batch_norm.cu.in; most BNs are folded into Conv.
// Attribute channels_last=1 (opt/layout_nhwc: a BN that no conv absorbs, e.g. DenseNet's after its
// Concat): X is stored [N, H, W, C] and the parameter index is the last dim.
#include <cmath>

#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64};
const char* const kParamNames[] = {"X", "scale", "B", "input_mean", "input_var"};

// Elements that share one parameter index: spatial size per channel (1 when spatial = 0).
struct BnLayout {
  int64_t channels = 0;  // parameter count
  int64_t inner = 1;     // consecutive elements of X using the same parameter
};

BnLayout bn_layout(const Node& node, const Shape& x) {
  BnLayout l;
  if (channels_last(node)) {  // NHWC storage (opt/layout_nhwc): the channel is the last dim
    l.channels = x.back();
    return l;
  }
  int64_t spatial = 1;
  for (size_t i = 2; i < x.size(); ++i) spatial *= x[i];
  if (node.attr_int("spatial", 1) != 0) {
    l.channels = x[1];
    l.inner = spatial;
  } else {
    l.channels = x[1] * spatial;
    l.inner = 1;
  }
  return l;
}

Status bn_import(Node& node, Graph&, int64_t opset) {
  // Opsets before 9 carried is_test / consumed_inputs (legacy training flags) and spatial; from
  // 9 on spatial no longer exists, so a stray one must not change the meaning.
  if (opset >= 9) node.attrs.erase("spatial");
  node.attrs.erase("is_test");
  node.attrs.erase("consumed_inputs");
  return Status::ok();
}

Status bn_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 5, 5));
  if (node.attr_int("training_mode", 0) != 0)
    return node_error(node, "training_mode=1 is not supported (inference only)");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue)
      return node_error(node, "has " + std::to_string(node.outputs.size()) +
                                  " outputs; only Y is supported (the running statistics outputs are training-only)");
  if (node.outputs.empty()) return node_error(node, "expects 1 output");
  for (size_t i = 0; i < 5; ++i) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, kFloatTypes));
  const Value& x = input_value(graph, node, 0);
  if (x.shape.size() < 2) return node_error(node, "input 0 (X) has rank " + std::to_string(x.shape.size()) + ", expected >= 2");
  if (channels_last(node) && (x.shape.size() != 4 || node.attr_int("spatial", 1) == 0))
    return node_error(node, "channels_last needs a 4-D input and per-channel (spatial) parameters");
  BnLayout l = bn_layout(node, x.shape);
  Shape expected = channels_last(node)                  ? Shape{x.shape[3]}
                   : node.attr_int("spatial", 1) != 0 ? Shape{x.shape[1]}
                                                      : Shape(x.shape.begin() + 1, x.shape.end());
  for (size_t i = 1; i < 5; ++i) {
    const Shape& s = input_value(graph, node, i).shape;
    if (shape_numel(s) != l.channels || (s != expected && s.size() != 1))
      return node_error(node, "input " + std::to_string(i) + " (" + kParamNames[i] + ") has shape " + shape_str(s) +
                                  ", expected " + shape_str(expected));
  }
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

Status bn_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  BnLayout l = bn_layout(node, x.shape());
  // epsilon is a float attribute: use the float value, widened, as ONNX Runtime does.
  const double eps = static_cast<double>(node.attr_float("epsilon", 1e-5f));
  std::vector<double> mul(static_cast<size_t>(l.channels)), add(static_cast<size_t>(l.channels));
  for (int64_t c = 0; c < l.channels; ++c) {
    double s = inputs[1]->get(c) / std::sqrt(inputs[4]->get(c) + eps);
    mul[static_cast<size_t>(c)] = s;
    add[static_cast<size_t>(c)] = inputs[2]->get(c) - inputs[3]->get(c) * s;
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    size_t c = static_cast<size_t>((i / l.inner) % l.channels);
    outputs[0].set(i, x.get(i) * mul[c] + add[c]);
  }
  return Status::ok();
}

std::string compute_type(DType t) { return t == DType::kFloat64 ? "double" : "float"; }

Expected<Lowering> bn_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  BnLayout l = bn_layout(node, x.shape);
  KernelStep k;
  k.template_name = "batch_norm";
  k.holes = {{"comment", "BatchNormalization " + shape_str(x.shape)},
             {"T", dtype_c_type(x.dtype)},
             {"TS", dtype_c_type(input_value(graph, node, 1).dtype)},
             {"TB", dtype_c_type(input_value(graph, node, 2).dtype)},
             {"TM", dtype_c_type(input_value(graph, node, 3).dtype)},
             {"TV", dtype_c_type(input_value(graph, node, 4).dtype)},
             {"ACC", compute_type(x.dtype)},
             {"numel", int_literal(x.numel())},
             {"INNER", int_literal(l.inner)},
             {"CH", int_literal(l.channels)},
             {"EPS", float_literal(node.attr_float("epsilon", 1e-5f))}};
  k.args = {node.inputs[0], node.inputs[1], node.inputs[2], node.inputs[3], node.inputs[4], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel(), 256);
  Lowering lw;
  lw.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return lw;
}

}  // namespace

void register_batch_norm_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "BatchNormalization";
  def.import = bn_import;
  def.infer = bn_infer;
  def.reference = bn_reference;
  def.lower = bn_lower;
  registry.add(def);
}

}  // namespace aotc
