// Flatten, Reshape, Identity: the output is the input's bytes under another shape. They are views
// (OpTraits::is_view, Lowering::is_view): no kernel runs and the memory plan aliases the output
// to the input; codegen copies with copy_kernel_step (copy_lowering.h) only where it must.
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Status flatten_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_storable(node, graph, 0));
  const Value& x = input_value(graph, node, 0);
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = node.attr_int("axis", 1);
  // Flatten's axis ranges over [-r, r]: axis == r gives (numel, 1).
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > rank)
    return node_error(node, "axis " + std::to_string(axis) + " out of range [-" + std::to_string(rank) +
                                ", " + std::to_string(rank) + "]");
  // An empty input may have dims whose product on one side of the axis does not fit int64 (the
  // other side holds the zero): refused, not formed (a fuzz find, UBSan).
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t& side = d < a ? outer : inner;
    if (__builtin_mul_overflow(side, x.shape[static_cast<size_t>(d)], &side))
      return node_error(node, "input shape " + shape_str(x.shape) + " flattens to a dim over the int64 range");
  }
  set_output(graph, node, 0, x.dtype, {outer, inner});
  return Status::ok();
}

// Reshape-1/4 had the target shape as an attribute; the canonical form is the constant input.
Status reshape_import(Node& node, Graph& graph, int64_t) {
  if (!node.has_attr("shape")) return Status::ok();
  if (node.num_present_inputs() > 1)
    return node_error(node, "has both a shape attribute and a shape input");
  std::vector<int64_t> dims = node.attr_ints("shape");
  Tensor t = Tensor::from_int64s({static_cast<int64_t>(dims.size())}, dims);
  ValueId id = graph.add_constant(graph.unique_name(node.name + "_shape"), std::move(t));
  node.inputs.resize(1);
  node.inputs.push_back(id);
  node.attrs.erase("shape");
  node.attrs.erase("consumed_inputs");
  return Status::ok();
}

Status reshape_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_storable(node, graph, 0));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 1, 1));
  Expected<const Tensor*> shape_t = expect_constant(node, graph, 1, "aotc compiles static shapes");
  if (!shape_t) return shape_t.status();
  const Value& x = input_value(graph, node, 0);
  bool allow_zero = node.attr_int("allowzero", 0) != 0;
  std::vector<int64_t> dims = (*shape_t)->to_int64s();
  int infer_at = -1;
  bool has_zero = false;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    if (d == -1) {
      if (infer_at >= 0) return node_error(node, "shape has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (d < -1) return node_error(node, "shape has invalid dim " + std::to_string(d));
    if (d == 0 && !allow_zero) {
      if (i >= x.shape.size())
        return node_error(node, "shape dim " + std::to_string(i) + " is 0 (copy) but the input has rank " +
                                    std::to_string(x.shape.size()));
      dims[i] = x.shape[i];
    }
    if (d == 0) has_zero = true;
    // Overflow-checked: a shape of [2^40, 2^40] is a one-line error, not undefined behaviour.
    if (__builtin_mul_overflow(known, dims[i], &known))
      return node_error(node, "the product of shape " + shape_str(dims) + " overflows int64");
  }
  if (allow_zero && has_zero && infer_at >= 0)
    return node_error(node, "allowzero=1 forbids 0 and -1 in the same shape");
  if (infer_at >= 0) {
    if (known == 0 || x.numel() % known != 0)
      return node_error(node, "cannot infer the -1 dim: " + std::to_string(x.numel()) +
                                  " elements into known dims of product " + std::to_string(known));
    dims[static_cast<size_t>(infer_at)] = x.numel() / known;
  }
  if (shape_numel(dims) != x.numel())
    return node_error(node, "cannot reshape " + shape_str(x.shape) + " (" + std::to_string(x.numel()) +
                                " elements) into " + shape_str(dims));
  set_output(graph, node, 0, x.dtype, dims);
  return Status::ok();
}

Status identity_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_storable(node, graph, 0));
  const Value& x = input_value(graph, node, 0);
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

// All three: the output holds the input's bytes (its shape was set by infer).
Status view_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                      std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  if (x.byte_size() != y.byte_size() || x.dtype() != y.dtype())
    return node_error(node, "output does not match the input's bytes");
  if (x.byte_size() > 0) std::memcpy(y.raw(), x.raw(), static_cast<size_t>(x.byte_size()));
  return Status::ok();
}

Expected<Lowering> view_lower(const Node&, const Graph&) {
  Lowering l;
  l.is_view = true;
  return l;
}

OpDef view_def(const char* op_type, Status (*infer)(Node&, Graph&)) {
  OpDef def;
  def.op_type = op_type;
  def.traits.is_view = true;
  def.infer = infer;
  def.reference = view_reference;
  def.lower = view_lower;
  return def;
}

}  // namespace

void register_shape_view_ops(OpRegistry& registry) {
  registry.add(view_def("Flatten", flatten_infer));
  OpDef reshape = view_def("Reshape", reshape_infer);
  reshape.import = reshape_import;
  registry.add(reshape);
  registry.add(view_def("Identity", identity_infer));
}

}  // namespace aotc
