// aotc.PackNhwc: the layout pass's entry into channels-last for a network input: X [N, C, H, W]
// (float32/float16/bfloat16) -> Y [N, H, W, channels] in dtype `to`, channels >= C zero-filled.
// One kernel instead of Cast -> Transpose -> Pad (three passes over the input): one thread per
// pixel reads its C values (coalesced across neighbouring pixels) and writes the padded row.
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kPackTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

Status pack_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kPackTypes));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 0, 4));
  const DType to = static_cast<DType>(node.attr_int("to", 0));
  bool ok = false;
  for (DType t : kPackTypes) ok = ok || t == to;
  if (!ok) return node_error(node, "attribute 'to' must be float, float16 or bfloat16");
  const Shape& x = input_value(graph, node, 0).shape;
  const int64_t channels = node.attr_int("channels", x[1]);
  if (channels < x[1]) return node_error(node, "channels " + std::to_string(channels) + " < input channels " + std::to_string(x[1]));
  set_output(graph, node, 0, to, {x[0], x[2], x[3], channels});
  return Status::ok();
}

Status pack_reference(const Node&, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const Shape& s = x.shape();
  const int64_t cp = y.shape()[3];
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t h = 0; h < s[2]; ++h)
      for (int64_t w = 0; w < s[3]; ++w)
        for (int64_t c = 0; c < cp; ++c)
          y.set(((n * s[2] + h) * s[3] + w) * cp + c, c < s[1] ? x.get(((n * s[1] + c) * s[2] + h) * s[3] + w) : 0.0);
  return Status::ok();
}

Expected<Lowering> pack_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  KernelStep k;
  k.template_name = "pack_nhwc";
  k.holes = {{"comment", "PackNhwc " + shape_str(x.shape) + " " + dtype_name(x.dtype) + " -> " + shape_str(y.shape) +
                             " " + dtype_name(y.dtype)},
             {"TI", dtype_c_type(x.dtype)},
             {"TO", dtype_c_type(y.dtype)},
             {"N", int_literal(x.shape[0])}, {"C", int_literal(x.shape[1])},
             {"HW", int_literal(x.shape[2] * x.shape[3])},
             {"CP", int_literal(y.shape[3])}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.shape[0] * x.shape[2] * x.shape[3], 256);
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_pack_nhwc_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "PackNhwc";
  def.domain = "aotc";
  def.infer = pack_infer;
  def.reference = pack_reference;
  def.lower = pack_lower;
  registry.add(def);
}

}  // namespace aotc
