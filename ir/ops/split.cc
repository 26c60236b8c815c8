// Split: cuts input 0 along `axis` into the node's outputs. Sizes come from the `split` input
// (canonical; Split-2..12's attribute moves there), or, without it, equal parts: Split-18's
// num_outputs allows a smaller last part, older opsets need an exact division. Each output is a
// strided gather (one kernel per non-empty output).
#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_gather.h"

namespace aotc {
namespace {

Status split_import(Node& node, Graph& graph, int64_t) {
  if (!node.has_attr("split")) return Status::ok();
  if (node.num_present_inputs() > 1) return node_error(node, "has both a split attribute and a split input");
  std::vector<int64_t> sizes = node.attr_ints("split");
  node.inputs.resize(1);
  node.inputs.push_back(graph.add_constant(graph.unique_name(node.name + "_split"),
                                           Tensor::from_int64s({static_cast<int64_t>(sizes.size())}, sizes)));
  node.attrs.erase("split");
  return Status::ok();
}

// The part sizes along the axis, from the split tensor (may be null) and the attributes.
Expected<std::vector<int64_t>> part_sizes(const Node& node, int64_t dim, const Tensor* split) {
  const int64_t outputs = static_cast<int64_t>(node.outputs.size());
  std::vector<int64_t> sizes;
  if (split) {
    if (node.has_attr("num_outputs")) return node_error(node, "has both a split input and num_outputs");
    sizes = split->to_int64s();
    if (static_cast<int64_t>(sizes.size()) != outputs)
      return node_error(node, "split has " + std::to_string(sizes.size()) + " entries for " +
                                  std::to_string(outputs) + " outputs");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) return node_error(node, "split has a negative size " + std::to_string(s));
      sum += s;
    }
    if (sum != dim)
      return node_error(node, "split sizes add up to " + std::to_string(sum) + ", the axis has " + std::to_string(dim));
    return sizes;
  }
  if (node.has_attr("num_outputs")) {
    int64_t n = node.attr_int("num_outputs", 0);
    if (n != outputs)
      return node_error(node, "num_outputs is " + std::to_string(n) + " but the node has " + std::to_string(outputs) +
                                  " outputs");
    int64_t part = (dim + n - 1) / n;  // ceil: the last part takes what is left
    for (int64_t i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(part, dim - i * part)));
    return sizes;
  }
  if (outputs == 0 || dim % outputs != 0)
    return node_error(node, "axis of size " + std::to_string(dim) + " does not split into " + std::to_string(outputs) +
                                " equal parts");
  sizes.assign(static_cast<size_t>(outputs), dim / outputs);
  return sizes;
}

GatherView part_view(const Shape& in, int64_t axis, int64_t offset, int64_t size) {
  GatherView v;
  v.dims = in;
  v.dims[static_cast<size_t>(axis)] = size;
  v.strides = shape_strides(in);
  v.base = offset * v.strides[static_cast<size_t>(axis)];
  return v;
}

Status split_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 2));
  if (node.outputs.empty()) return node_error(node, "expects at least 1 output");
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if (node.outputs[i] == kNoValue) return node_error(node, "output " + std::to_string(i) + " is missing");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  const Tensor* split = nullptr;
  if (node.input(1) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
    AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 1, 1));
    Expected<const Tensor*> c = expect_constant(node, graph, 1, "split decides the output shapes; aotc compiles static shapes");
    if (!c) return c.status();
    split = *c;
  }
  Expected<std::vector<int64_t>> sizes = part_sizes(node, x.shape[static_cast<size_t>(*axis)], split);
  if (!sizes) return sizes.status();
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Shape s = x.shape;
    s[static_cast<size_t>(*axis)] = (*sizes)[i];
    set_output(graph, node, i, x.dtype, s);
  }
  return Status::ok();
}

int64_t split_axis(const Node& node, size_t rank) {
  int64_t a = node.attr_int("axis", 0);
  return a < 0 ? a + static_cast<int64_t>(rank) : a;
}

Status split_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  int64_t axis = split_axis(node, x.shape().size());
  int64_t offset = 0;
  for (Tensor& y : outputs) {
    int64_t size = y.shape()[static_cast<size_t>(axis)];
    strided_gather_reference(x, y, part_view(x.shape(), axis, offset, size));
    offset += size;
  }
  return Status::ok();
}

Expected<Lowering> split_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  int64_t axis = split_axis(node, x.shape.size());
  Lowering l;
  int64_t offset = 0;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const Value& y = output_value(graph, node, i);
    int64_t size = y.shape[static_cast<size_t>(axis)];
    if (y.numel() > 0) {
      KernelStep k = strided_gather_step(node.inputs[0], node.outputs[i], x.dtype, x.numel(),
                                         part_view(x.shape, axis, offset, size),
                                         "Split " + shape_str(x.shape) + " output " + std::to_string(i) + " " +
                                             shape_str(y.shape) + " " + dtype_name(x.dtype));
      l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    }
    offset += size;
  }
  return l;
}

}  // namespace

void register_split_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Split";
  def.import = split_import;
  def.infer = split_infer;
  def.reference = split_reference;
  def.lower = split_lower;
  registry.add(def);
}

}  // namespace aotc
