// aotc.StridedCopy: y = reshape(gather(x, view), shape) [* scale]. The view is plain data
// (attributes dims, strides, base: ir/ops/strided_gather.h's GatherView), so one node stands for
// a whole chain of data-movement ops (Transpose, Reshape, Gather of one index, Slice, Split part...)
// composed by opt/fuse_copy_chains.cc. The optional float `scale` multiplies every element as the
// Mul kernel would for a scalar constant of that value (compute type float for 16-bit types,
// rounded once), so a trailing Mul folds in exactly. The optional int `to` (an ONNX float type
// number, as Cast spells it) converts every element as the Cast kernel would, so a trailing float
// Cast folds in (e.g. the padded LM head's Slice + the fp16 -> fp32 output Cast: one pass).
#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_gather.h"

namespace aotc {
namespace {

GatherView view_of(const Node& node) {
  return GatherView{node.attr_ints("dims"), node.attr_ints("strides"), node.attr_int("base", 0)};
}

DType to_of(const Node& node, DType input) {
  return node.has_attr("to") ? static_cast<DType>(node.attr_int("to", 0)) : input;
}

std::optional<float> scale_of(const Node& node) {
  if (!node.has_attr("scale")) return std::nullopt;
  return node.attr_float("scale", 1.0f);
}

Status strided_copy_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  for (const char* a : {"dims", "strides", "shape"})
    if (!node.has_attr(a) || node.attrs.at(a).kind != Attribute::Kind::kInts)
      return node_error(node, std::string("attribute '") + a + "' (ints) is required");
  if (node.has_attr("scale") && node.attrs.at("scale").kind != Attribute::Kind::kFloat)
    return node_error(node, "attribute 'scale' must be a float");
  if (node.has_attr("scale") && !dtype_is_float(x.dtype))
    return node_error(node, "a scale needs a float input, not " + dtype_name(x.dtype));
  if (node.has_attr("to")) {
    const int64_t t = node.attrs.at("to").kind == Attribute::Kind::kInt ? node.attr_int("to", 0) : -1;
    if (t < 0 || !dtype_is_known(static_cast<int32_t>(t)) || !dtype_is_float(static_cast<DType>(t)) ||
        !dtype_is_float(x.dtype) || node.has_attr("scale"))
      return node_error(node, "attribute 'to' must be a float type number, for a float input without a scale");
  }
  const GatherView v = view_of(node);
  const Shape shape = node.attr_ints("shape");
  if (v.dims.size() != v.strides.size())
    return node_error(node, "dims has " + std::to_string(v.dims.size()) + " entries, strides " +
                                std::to_string(v.strides.size()));
  for (int64_t d : v.dims)
    if (d < 0) return node_error(node, "dims " + shape_str(v.dims) + " has a negative entry");
  for (int64_t d : shape)
    if (d < 0) return node_error(node, "shape " + shape_str(shape) + " has a negative entry");
  if (shape_numel(v.dims) != shape_numel(shape))
    return node_error(node, "dims " + shape_str(v.dims) + " and shape " + shape_str(shape) + " differ in size");
  if (shape_numel(shape) > 0) {
    // The lowest and highest input offsets the view reads must lie inside x.
    int64_t lo = v.base, hi = v.base;
    for (size_t d = 0; d < v.dims.size(); ++d) {
      const int64_t reach = (v.dims[d] - 1) * v.strides[d];
      (reach < 0 ? lo : hi) += reach;
    }
    if (lo < 0 || hi >= x.numel())
      return node_error(node, "the view reads input offsets [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                  "] outside an input of " + std::to_string(x.numel()) + " elements");
  }
  set_output(graph, node, 0, to_of(node, x.dtype), shape);
  return Status::ok();
}

Status strided_copy_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                              std::vector<Tensor>& outputs) {
  if (outputs[0].dtype() != inputs[0]->dtype()) {  // `to`: gather in the input type, then convert
    Tensor gathered(inputs[0]->dtype(), outputs[0].shape());
    strided_gather_reference(*inputs[0], gathered, view_of(node));
    for (int64_t i = 0; i < gathered.numel(); ++i) outputs[0].set(i, gathered.get(i));
    return Status::ok();
  }
  strided_gather_reference(*inputs[0], outputs[0], view_of(node));
  std::optional<float> scale = scale_of(node);
  if (scale && !scale_reference(outputs[0], *scale))
    return node_error(node, "no scaled reference for dtype " + dtype_name(outputs[0].dtype()));
  return Status::ok();
}

Expected<Lowering> strided_copy_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const GatherView v = view_of(node);
  std::optional<float> scale = scale_of(node);
  std::string comment = "StridedCopy " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " " + dtype_name(x.dtype) +
                        " (view dims " + shape_str(v.dims) + " strides " + shape_str(v.strides) + " base " +
                        std::to_string(v.base) + (scale ? ", scaled" : "") +
                        (y.dtype != x.dtype ? ", to " + dtype_name(y.dtype) : "") + ")";
  KernelStep k = strided_gather_step(node.inputs[0], node.outputs[0], x.dtype, x.numel(), v, comment, scale, y.dtype);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_strided_copy_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "StridedCopy";
  def.domain = "aotc";
  def.infer = strided_copy_infer;
  def.reference = strided_copy_reference;
  def.lower = strided_copy_lower;
  registry.add(def);
}

}  // namespace aotc
