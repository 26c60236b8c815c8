// MaxUnpool: scatters X into a zero tensor at the flat positions given by I (MaxPool's indices,
// flat over the inferred shape [N, C, (in - 1) * stride - pad_begin - pad_end + kernel ...]).
// With the constant output_shape input the inferred tensor is placed at the origin of the larger
// (or cropped by a smaller) output, as the ONNX reference and the node test data do. Indices
// outside the inferred shape are an error in the reference (the spec leaves them undefined).
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Shape inferred_shape(const Node& node, const Shape& x) {
  const size_t r = x.size();
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  const std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(r - 2, 1));
  const std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * (r - 2), 0));
  Shape out = x;
  // In 128 bits: the attributes are the model's and may be anything; a dim outside [0, 2^62] is
  // given as -1, which the inference refuses (a fuzz find: kernel_shape INT64_MAX, UBSan).
  for (size_t d = 0; d + 2 < r; ++d) {
    const __int128 dim = (static_cast<__int128>(x[d + 2]) - 1) * strides[d] - pads[d] - pads[d + r - 2] + kernel[d];
    out[d + 2] = dim < 0 || dim > (static_cast<__int128>(1) << 62) ? -1 : static_cast<int64_t>(dim);
  }
  return out;
}

// Flat index in `out` of the element at flat index `at` of `inferred`; -1 when cropped away.
int64_t place(int64_t at, const Shape& inferred, const Shape& out) {
  int64_t result = 0, stride = 1;
  for (size_t d = inferred.size(); d-- > 0;) {
    const int64_t i = at % inferred[d];
    at /= inferred[d];
    if (i >= out[d]) return -1;
    result += i * stride;
    stride *= out[d];
  }
  return result;
}

Status max_unpool_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16}));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  const Value& x = input_value(graph, node, 0);
  if (input_value(graph, node, 1).shape != x.shape) return node_error(node, "I must have X's shape");
  const size_t r = x.shape.size();
  if (r < 3) return node_error(node, "X must be [N, C, spatial...]");
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  if (kernel.size() != r - 2) return node_error(node, "kernel_shape must have one entry per spatial dim");
  const std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(r - 2, 1));
  const std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * (r - 2), 0));
  if (strides.size() != r - 2 || pads.size() != 2 * (r - 2)) return node_error(node, "strides/pads have the wrong length");
  Shape out = inferred_shape(node, x.shape);
  for (int64_t d : out)
    if (d < 0)
      return node_error(node, "the shape inferred from kernel_shape, strides and pads (" + shape_str(out) +
                                  ", -1: below 0 or over 2^62) is not a valid shape");
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {DType::kInt64}));
    Expected<const Tensor*> s = expect_constant(node, graph, 2, "output_shape is the output's static shape");
    if (!s) return s.status();
    std::vector<int64_t> given = (*s)->to_int64s();
    if (given.size() != r) return node_error(node, "output_shape must have X's rank");
    if (given[0] != x.shape[0] || given[1] != x.shape[1]) return node_error(node, "output_shape must keep N and C");
    out = given;
  }
  for (int64_t d : out)
    if (d < 0) return node_error(node, "the output shape " + shape_str(out) + " has a negative dim");
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

Status max_unpool_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& idx = *inputs[1];
  Tensor& y = outputs[0];
  const Shape inferred = inferred_shape(node, x.shape());
  const int64_t inferred_n = shape_numel(inferred);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t at = idx.get_int(i);
    if (at < 0 || at >= inferred_n)
      return node_error(node, "index " + std::to_string(at) + " is outside the unpooled tensor (" + std::to_string(inferred_n) + " elements)");
    const int64_t to = place(at, inferred, y.shape());
    if (to >= 0) y.set(to, x.get(i));
  }
  return Status::ok();
}


Expected<Lowering> max_unpool_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  for (int phase = 0; phase < 2; ++phase) {
    if (phase == 1 && x.numel() == 0) break;
    KernelStep k;
    k.template_name = "max_unpool";
    k.holes = {{"comment", std::string("MaxUnpool ") + (phase ? "scatter " : "zero fill ") + shape_str(x.shape) + " -> " +
                               shape_str(y.shape) + " " + dtype_name(x.dtype)},
               {"T", dtype_c_type(x.dtype)}, {"PHASE", std::to_string(phase)},
               {"IN_N", int_literal(x.numel())}, {"OUT_N", int_literal(y.numel())},
               {"RANK", std::to_string(x.shape.size())}, {"INF_DIMS", dims_literal(inferred_shape(node, x.shape))},
               {"OUT_DIMS", dims_literal(y.shape)}};
    k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
    k.block = Dim3{256, 1, 1};
    k.grid = grid_for(phase ? x.numel() : y.numel(), 256);
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  }
  return l;
}

}  // namespace

void register_max_unpool_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "MaxUnpool";
  def.infer = max_unpool_infer;
  def.reference = max_unpool_reference;
  def.lower = max_unpool_lower;
  registry.add(def);
}

}  // namespace aotc
