// Slice: per listed axis, elements start, start+step, ... before end (negative steps walk
// backwards; starts/ends are clamped per the ONNX rules, so INT64_MAX means "to the end"). The
// canonical form has starts/ends/axes/steps as constant inputs (Slice-1's attributes move there);
// the copy is a strided gather with step-scaled strides and a base offset.
#include <algorithm>
#include <limits>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/slice.h"
#include "ir/ops/strided_gather.h"

namespace aotc {
namespace {

ValueId add_int64_constant(Graph& graph, const Node& node, const std::string& what, const std::vector<int64_t>& v) {
  return graph.add_constant(graph.unique_name(node.name + "_" + what),
                            Tensor::from_int64s({static_cast<int64_t>(v.size())}, v));
}

// Slice-1 took starts, ends and (optional) axes as attributes; later opsets take inputs.
Status slice_import(Node& node, Graph& graph, int64_t) {
  if (!node.has_attr("starts") && !node.has_attr("ends")) return Status::ok();
  if (node.num_present_inputs() > 1) return node_error(node, "has both starts/ends attributes and inputs");
  if (!node.has_attr("starts") || !node.has_attr("ends"))
    return node_error(node, "attributes 'starts' and 'ends' must both be given");
  node.inputs.resize(1);
  node.inputs.push_back(add_int64_constant(graph, node, "starts", node.attr_ints("starts")));
  node.inputs.push_back(add_int64_constant(graph, node, "ends", node.attr_ints("ends")));
  if (node.has_attr("axes")) node.inputs.push_back(add_int64_constant(graph, node, "axes", node.attr_ints("axes")));
  for (const char* a : {"starts", "ends", "axes"}) node.attrs.erase(a);
  return Status::ok();
}

// The ONNX Slice rules for one node, from the tensors of inputs 1..4 (axes/steps may be null).
Expected<SliceParams> resolve_slice(const Node& node, const Shape& in, const Tensor& starts_t, const Tensor& ends_t,
                                    const Tensor* axes_t, const Tensor* steps_t) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts = starts_t.to_int64s(), ends = ends_t.to_int64s();
  if (starts.size() != ends.size())
    return node_error(node, "starts has " + std::to_string(starts.size()) + " entries, ends has " +
                                std::to_string(ends.size()));
  std::vector<int64_t> axes, steps;
  if (axes_t) axes = axes_t->to_int64s();
  else for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps_t) steps = steps_t->to_int64s();
  else steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return node_error(node, "starts, ends, axes and steps must have the same length");
  SliceParams p;
  p.out = in;
  p.start.assign(in.size(), 0);
  p.step.assign(in.size(), 1);
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    Expected<int64_t> axis = normalize_axis(node, axes[i], rank);
    if (!axis) return axis.status();
    size_t a = static_cast<size_t>(*axis);
    if (seen[a]) return node_error(node, "axis " + std::to_string(*axis) + " is listed twice");
    seen[a] = true;
    const int64_t dim = in[a], step = steps[i];
    if (step == 0) return node_error(node, "step " + std::to_string(i) + " is 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    p.out[a] = count;
    p.start[a] = count > 0 ? s : 0;
    p.step[a] = step;
  }
  return p;
}

GatherView slice_view(const Shape& in, const SliceParams& p) {
  GatherView v;
  v.dims = p.out;
  std::vector<int64_t> strides = shape_strides(in);
  for (size_t d = 0; d < in.size(); ++d) {
    v.strides.push_back(strides[d] * p.step[d]);
    v.base += p.start[d] * strides[d];
  }
  return v;
}

}  // namespace

Expected<SliceParams> slice_params(const Node& node, const Graph& graph) {
  const Tensor* t[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  static const char* const kNames[5] = {"data", "starts", "ends", "axes", "steps"};
  for (size_t i = 1; i < 5; ++i) {
    if (node.input(i) == kNoValue) continue;
    Expected<const Tensor*> c =
        expect_constant(node, graph, i, std::string(kNames[i]) + " decides the output shape; aotc compiles static shapes");
    if (!c) return c.status();
    t[i] = *c;
  }
  return resolve_slice(node, input_value(graph, node, 0).shape, *t[1], *t[2], t[3], t[4]);
}

namespace {

Status slice_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 5));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  for (size_t i = 1; i < 5; ++i) {
    if (node.input(i) == kNoValue) continue;
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {DType::kInt32, DType::kInt64}));
    AOTC_RETURN_IF_ERROR(expect_rank(node, graph, i, 1));
  }
  Expected<SliceParams> p = slice_params(node, graph);
  if (!p) return p.status();
  set_output(graph, node, 0, x.dtype, p->out);
  return Status::ok();
}

Status slice_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Expected<SliceParams> p = resolve_slice(node, x.shape(), *inputs[1], *inputs[2], inputs.size() > 3 ? inputs[3] : nullptr,
                                          inputs.size() > 4 ? inputs[4] : nullptr);
  if (!p) return p.status();
  strided_gather_reference(x, outputs[0], slice_view(x.shape(), *p));
  return Status::ok();
}

Expected<Lowering> slice_lower(const Node& node, const Graph& graph) {
  Expected<SliceParams> p = slice_params(node, graph);
  if (!p) return p.status();
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (shape_numel(p->out) == 0) return l;
  KernelStep k = strided_gather_step(node.inputs[0], node.outputs[0], x.dtype, x.numel(), slice_view(x.shape, *p),
                                     "Slice " + shape_str(x.shape) + " -> " + shape_str(p->out) + " " +
                                         dtype_name(x.dtype));
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_slice_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Slice";
  def.import = slice_import;
  def.infer = slice_infer;
  def.reference = slice_reference;
  def.lower = slice_lower;
  registry.add(def);
}

}  // namespace aotc
