// aotc.PackNhwc: the layout pass's entry into channels-last for a network input: X [N, C, H, W]
// (float32/float16/bfloat16) -> Y [N, H, W, channels] in dtype `to`, channels >= C zero-filled.
// One kernel instead of Cast -> Transpose -> Pad (three passes over the input): one thread per
// pixel reads its C values (coalesced across neighbouring pixels) and writes the padded row.
//
// Optional space-to-depth (for a strided stem convolution, opt/layout_nhwc.cc): attribute
// `block` b > 1 with `pads` [top, left] and `spatial` [HS, WS]. X is zero-padded by top/left
// (and as far as needed at the bottom/right), then output pixel (i, j) holds the b x b patch at
// padded rows b*i + py, columns b*j + px in channel (py * b + px) * C + c; Y is [N, HS, WS,
// channels] with channels >= C*b*b. A stride-b convolution over X is then a stride-1
// convolution over Y with a ceil(R/b) x ceil(S/b) window.
#include "ir/op_registry.h"
#include "ir/ops/conv_nhwc.h"
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
  const int64_t block = node.attr_int("block", 1);
  if (block < 1 || block > 8) return node_error(node, "attribute 'block' must be 1 to 8");
  const int64_t channels = node.attr_int("channels", x[1] * block * block);
  if (channels < x[1] * block * block)
    return node_error(node, "channels " + std::to_string(channels) + " < input channels x block^2 " +
                                std::to_string(x[1] * block * block));
  std::vector<int64_t> pads = node.attr_ints("pads", {0, 0});
  std::vector<int64_t> spatial = node.attr_ints("spatial", {x[2], x[3]});
  if (pads.size() != 2 || spatial.size() != 2 || pads[0] < 0 || pads[1] < 0 || spatial[0] < 1 || spatial[1] < 1)
    return node_error(node, "attributes 'pads' and 'spatial' must be 2 non-negative / positive ints");
  if (block == 1 && (pads != std::vector<int64_t>{0, 0} || spatial != std::vector<int64_t>{x[2], x[3]}))
    return node_error(node, "'pads' and 'spatial' need block > 1");
  set_output(graph, node, 0, to, {x[0], spatial[0], spatial[1], channels});
  return Status::ok();
}

Status pack_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const Shape& s = x.shape();
  const int64_t b = node.attr_int("block", 1);
  const std::vector<int64_t> pads = node.attr_ints("pads", {0, 0});
  const int64_t hs = y.shape()[1], ws = y.shape()[2], cp = y.shape()[3];
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t i = 0; i < hs; ++i)
      for (int64_t j = 0; j < ws; ++j)
        for (int64_t c = 0; c < cp; ++c) {
          double v = 0.0;
          const int64_t tap = c / s[1], ch = c % s[1];
          if (tap < b * b) {
            const int64_t h = b * i + tap / b - pads[0], w = b * j + tap % b - pads[1];
            if (h >= 0 && h < s[2] && w >= 0 && w < s[3]) v = x.get(((n * s[1] + ch) * s[2] + h) * s[3] + w);
          }
          y.set(((n * hs + i) * ws + j) * cp + c, v);
        }
  return Status::ok();
}

Expected<Lowering> pack_lower(const Node& node, const Graph& graph) {
  if (stem_absorbs_pack(graph, node)) {  // the stem kernel reads the NCHW source (ir/ops/conv_nhwc.h)
    Lowering view;
    view.is_view = true;
    return view;
  }
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  KernelStep k;
  k.template_name = "pack_nhwc";
  k.holes = {{"comment", "PackNhwc " + shape_str(x.shape) + " " + dtype_name(x.dtype) + " -> " + shape_str(y.shape) +
                             " " + dtype_name(y.dtype)},
             {"TI", dtype_c_type(x.dtype)},
             {"TO", dtype_c_type(y.dtype)},
             {"N", int_literal(x.shape[0])}, {"C", int_literal(x.shape[1])},
             {"H", int_literal(x.shape[2])}, {"W", int_literal(x.shape[3])},
             {"HS", int_literal(y.shape[1])}, {"WS", int_literal(y.shape[2])},
             {"B", int_literal(node.attr_int("block", 1))},
             {"PT", int_literal(node.attr_ints("pads", {0, 0})[0])},
             {"PL", int_literal(node.attr_ints("pads", {0, 0})[1])},
             {"CP", int_literal(y.shape[3])}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.shape[0] * y.shape[1] * y.shape[2], 256);
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
