// Ops whose output shape depends on input values (NonZero, Compress, Unique, NonMaxSuppression).
// A static-shape compiler cannot size their outputs, so they are registered (aotc check and the
// conformance runner name them) and refused unless every input is a constant; then NonZero and
// Compress are computed by their references and fold_constants removes them. Unique and
// NonMaxSuppression are refused even then (no reference yet).
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const char kRefusal[] = "output shape depends on input values; not supported unless the inputs are constants";

// Every present input is a constant; else the standard refusal.
Status expect_all_constant(const Node& node, const Graph& graph) {
  for (ValueId in : node.inputs)
    if (in != kNoValue && !graph.value(in).is_constant()) return node_error(node, kRefusal);
  return Status::ok();
}

bool nonzero_at(const Tensor& x, int64_t i) {
  if (dtype_is_float(x.dtype())) return x.get(i) != 0.0;  // NaN counts as non-zero, as in numpy
  return x.get_int(i) != 0;
}

Status nonzero_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_all_constant(node, graph));
  const Tensor& x = *input_value(graph, node, 0).constant;
  if (x.dtype() == DType::kString || dtype_size(x.dtype()) == 0)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype()) + ", which aotc does not store");
  int64_t count = 0;
  for (int64_t i = 0; i < x.numel(); ++i) count += nonzero_at(x, i);
  set_output(graph, node, 0, DType::kInt64, {x.rank(), count});
  return Status::ok();
}

// Output [rank, count]: row d holds coordinate d of each non-zero element, in row-major order.
Status nonzero_reference(const Node&, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const int64_t count = y.shape()[1];
  std::vector<int64_t> strides = shape_strides(x.shape());
  int64_t k = 0;
  for (int64_t i = 0; i < x.numel() && k < count; ++i) {
    if (!nonzero_at(x, i)) continue;
    for (size_t d = 0; d < strides.size(); ++d)
      y.set_int(static_cast<int64_t>(d) * count + k, (i / strides[d]) % x.shape()[d]);
    ++k;
  }
  return Status::ok();
}

// Selected positions along the axis (or the flattened input without an axis).
std::vector<int64_t> compress_picks(const Tensor& cond, int64_t limit) {
  std::vector<int64_t> picks;
  for (int64_t i = 0; i < cond.numel() && i < limit; ++i)
    if (cond.get_int(i) != 0) picks.push_back(i);
  return picks;
}

Status compress_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_all_constant(node, graph));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kBool}));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 1, 1));
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  const Tensor& cond = *input_value(graph, node, 1).constant;
  if (!node.has_attr("axis")) {
    set_output(graph, node, 0, x.dtype, {static_cast<int64_t>(compress_picks(cond, x.numel()).size())});
    return Status::ok();
  }
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  Shape out = x.shape;
  out[static_cast<size_t>(*axis)] =
      static_cast<int64_t>(compress_picks(cond, x.shape[static_cast<size_t>(*axis)]).size());
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

Status compress_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const int64_t elem = dtype_size(x.dtype());
  // Without an axis the input is read flat: one "row" of size 1 per element.
  int64_t outer = 1, dim = x.numel(), inner = 1;
  if (node.has_attr("axis")) {
    int64_t a = node.attr_int("axis", 0);
    if (a < 0) a += x.rank();
    dim = x.shape()[static_cast<size_t>(a)];
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d < a) outer *= x.shape()[static_cast<size_t>(d)];
      if (d > a) inner *= x.shape()[static_cast<size_t>(d)];
    }
  }
  std::vector<int64_t> picks = compress_picks(*inputs[1], dim);
  const int64_t n = static_cast<int64_t>(picks.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(y.raw() + ((o * n + j) * inner) * elem, x.raw() + ((o * dim + picks[static_cast<size_t>(j)]) * inner) * elem,
                  static_cast<size_t>(inner * elem));
  return Status::ok();
}

// Unique, NonMaxSuppression: refused with the standard reason, or, with constant inputs, because
// their compile-time evaluation is not implemented.
Status refused_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_all_constant(node, graph));
  return node_error(node, "output shape depends on input values; evaluating it at compile time is not implemented");
}

Status refused_reference(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>&) {
  return node_error(node, "no reference implementation");
}

Expected<Lowering> folded_only_lower(const Node& node, const Graph&) {
  return node_error(node, std::string(kRefusal) + " (and then it is folded at compile time)");
}

OpDef data_dependent_def(const char* op, Status (*infer)(Node&, Graph&),
                         Status (*reference)(const Node&, const std::vector<const Tensor*>&, std::vector<Tensor>&)) {
  OpDef def;
  def.op_type = op;
  def.traits.data_dependent_shape = true;
  def.infer = infer;
  def.reference = reference;
  def.lower = folded_only_lower;
  return def;
}

}  // namespace

void register_data_dependent_ops(OpRegistry& registry) {
  registry.add(data_dependent_def("NonZero", nonzero_infer, nonzero_reference));
  registry.add(data_dependent_def("Compress", compress_infer, compress_reference));
  registry.add(data_dependent_def("Unique", refused_infer, refused_reference));
  registry.add(data_dependent_def("NonMaxSuppression", refused_infer, refused_reference));
}

}  // namespace aotc
