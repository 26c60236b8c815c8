// Pad: modes constant / edge / reflect / wrap (wrap from opset 19), negative pads crop. The
// canonical form: pads as a constant int64 input 1 (Pad-2's attribute moves there), the fill
// value as input 2 (Pad-2's `value` attribute becomes a constant; a run-time value is fine), and
// an optional constant axes input 3 (opset 18) that selects which dims the pads address.
// CenterCropPad-18 is imported as that canonical Pad: its constant target shape becomes centred
// pads (negative where it crops; an odd difference puts the extra element at the end), zero fill.
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

enum PadMode { kConstant = 0, kEdge = 1, kReflect = 2, kWrap = 3 };

Status pad_import(Node& node, Graph& graph, int64_t) {
  // Pad-1 called the attribute `paddings`.
  if (node.has_attr("paddings") && !node.has_attr("pads")) {
    node.attrs["pads"] = node.attrs["paddings"];
    node.attrs.erase("paddings");
  }
  if (node.has_attr("pads")) {
    if (node.num_present_inputs() > 1) return node_error(node, "has both a pads attribute and a pads input");
    std::vector<int64_t> pads = node.attr_ints("pads");
    node.inputs.resize(1);
    node.inputs.push_back(graph.add_constant(graph.unique_name(node.name + "_pads"),
                                             Tensor::from_int64s({static_cast<int64_t>(pads.size())}, pads)));
    node.attrs.erase("pads");
  }
  if (node.has_attr("value")) {
    float v = node.attr_float("value", 0.f);
    node.attrs.erase("value");
    if (v != 0.f && node.input(0) != kNoValue) {
      DType t = graph.value(node.inputs[0]).dtype;
      if (dtype_size(t) == 0 || t == DType::kString)
        return node_error(node, "input 0 has dtype " + dtype_name(t) + ", which aotc does not store");
      Tensor c(t, {});
      c.set(0, v);
      node.inputs.resize(2, kNoValue);
      node.inputs.push_back(graph.add_constant(graph.unique_name(node.name + "_value"), std::move(c)));
    }
  }
  return Status::ok();
}

Expected<PadMode> pad_mode(const Node& node, int64_t opset) {
  std::string m = node.attr_string("mode", "constant");
  if (m == "constant") return kConstant;
  if (m == "edge") return kEdge;
  if (m == "reflect") return kReflect;
  if (m == "wrap" && opset >= 19) return kWrap;
  return node_error(node, "mode '" + escape_for_message(m) + "' is not supported (constant, edge, reflect" +
                              std::string(opset >= 19 ? ", wrap" : "") + ")");
}

// Full begin/end pads (2 * rank entries) from the pads tensor and the optional axes tensor.
Expected<std::vector<int64_t>> full_pads(const Node& node, int64_t rank, const Tensor& pads_t, const Tensor* axes_t) {
  std::vector<int64_t> pads = pads_t.to_int64s();
  std::vector<int64_t> axes;
  if (axes_t) {
    for (int64_t a : axes_t->to_int64s()) {
      Expected<int64_t> n = normalize_axis(node, a, rank);
      if (!n) return n.status();
      axes.push_back(*n);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const size_t k = axes.size();
  if (pads.size() != 2 * k)
    return node_error(node, "pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * k));
  std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < k; ++i) {
    size_t a = static_cast<size_t>(axes[i]);
    if (seen[a]) return node_error(node, "axis " + std::to_string(axes[i]) + " is listed twice");
    seen[a] = true;
    full[a] = pads[i];
    full[a + static_cast<size_t>(rank)] = pads[i + k];
  }
  return full;
}

Status pad_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 4));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  Expected<PadMode> mode = pad_mode(node, graph.opset);
  if (!mode) return mode.status();
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 1, 1));
  Expected<const Tensor*> pads = expect_constant(node, graph, 1, "pads decide the output shape; aotc compiles static shapes");
  if (!pads) return pads.status();
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {x.dtype}));
    if (input_value(graph, node, 2).numel() != 1) return node_error(node, "constant_value must have one element");
  }
  const Tensor* axes = nullptr;
  if (node.input(3) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 3, {DType::kInt32, DType::kInt64}));
    Expected<const Tensor*> c = expect_constant(node, graph, 3, "axes decide the output shape; aotc compiles static shapes");
    if (!c) return c.status();
    axes = *c;
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  Expected<std::vector<int64_t>> full = full_pads(node, rank, **pads, axes);
  if (!full) return full.status();
  Shape out = x.shape;
  for (int64_t d = 0; d < rank; ++d) {
    size_t i = static_cast<size_t>(d);
    out[i] += (*full)[i] + (*full)[i + static_cast<size_t>(rank)];
    if (out[i] < 0) return node_error(node, "pads crop dim " + std::to_string(d) + " below size 0");
    if (*mode != kConstant && x.shape[i] == 0 && out[i] > 0)
      return node_error(node, "cannot pad the empty dim " + std::to_string(d) + " in a non-constant mode");
  }
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

// Input coordinate for output coordinate `c` - pad_begin along a dim of size `dim`; -1 = the value.
int64_t source_coord(int64_t c, int64_t dim, PadMode mode) {
  if (c >= 0 && c < dim) return c;
  switch (mode) {
    case kConstant: return -1;
    case kEdge: return c < 0 ? 0 : dim - 1;
    case kReflect: {
      int64_t period = 2 * (dim - 1);
      if (period == 0) return 0;
      c %= period;
      if (c < 0) c += period;
      return c >= dim ? period - c : c;
    }
    case kWrap: return ((c % dim) + dim) % dim;
  }
  return -1;
}

Status pad_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  // Opset differences in `mode` were checked by infer; wrap is accepted here.
  Expected<PadMode> mode = pad_mode(node, 19);
  if (!mode) return mode.status();
  const int64_t rank = x.rank();
  Expected<std::vector<int64_t>> full = full_pads(node, rank, *inputs[1], inputs.size() > 3 ? inputs[3] : nullptr);
  if (!full) return full.status();
  const int64_t elem = dtype_size(x.dtype());
  std::vector<uint8_t> value(static_cast<size_t>(elem), 0);
  if (inputs.size() > 2 && inputs[2]) std::memcpy(value.data(), inputs[2]->raw(), static_cast<size_t>(elem));
  std::vector<int64_t> x_strides = shape_strides(x.shape()), y_strides = shape_strides(y.shape());
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t src = 0;
    bool inside = true;
    for (int64_t d = 0; d < rank && inside; ++d) {
      size_t u = static_cast<size_t>(d);
      int64_t c = source_coord((i / y_strides[u]) % y.shape()[u] - (*full)[u], x.shape()[u], *mode);
      if (c < 0) inside = false;
      src += c * x_strides[u];
    }
    std::memcpy(y.raw() + i * elem, inside ? x.raw() + src * elem : value.data(), static_cast<size_t>(elem));
  }
  return Status::ok();
}

Expected<Lowering> pad_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  Expected<PadMode> mode = pad_mode(node, graph.opset);
  if (!mode) return mode.status();
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const Tensor* axes = node.input(3) != kNoValue ? graph.value(node.inputs[3]).constant.get() : nullptr;
  const Tensor* pads = graph.value(node.inputs[1]).constant.get();
  if (!pads || (node.input(3) != kNoValue && !axes)) return node_error(node, "pads and axes must be constants");
  Expected<std::vector<int64_t>> full = full_pads(node, rank, *pads, axes);
  if (!full) return full.status();
  const std::string bits = bits_c_type(x.dtype);
  std::string value_expr = "static_cast<" + bits + ">(0ULL)";
  ValueId value_arg = kNullArg;
  if (node.input(2) != kNoValue) {
    const Value& v = graph.value(node.inputs[2]);
    if (v.constant) {
      uint64_t raw = 0;
      std::memcpy(&raw, v.constant->raw(), static_cast<size_t>(dtype_size(x.dtype)));
      value_expr = "static_cast<" + bits + ">(" + std::to_string(raw) + "ULL)";
    } else {
      value_expr = "value_ptr[0]";
      value_arg = node.inputs[2];
    }
  }
  // A rank-0 input has nothing to pad; give the template one dim of size 1.
  Shape in_dims = rank ? x.shape : Shape{1}, out_dims = rank ? y.shape : Shape{1};
  std::vector<int64_t> begin(full->begin(), full->begin() + rank);
  if (!rank) begin = {0};
  KernelStep k;
  k.template_name = "pad";
  k.holes = {{"T", bits},
             {"rank", std::to_string(in_dims.size())},
             {"mode", std::to_string(static_cast<int>(*mode))},
             {"out_dims", dims_literal(out_dims)},
             {"in_dims", dims_literal(in_dims)},
             {"in_strides", dims_literal(shape_strides(in_dims))},
             {"pad_begin", dims_literal(begin)},
             {"value_expr", value_expr},
             {"numel", int_literal(y.numel())},
             {"comment", "Pad " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " mode " +
                             node.attr_string("mode", "constant") + " " + dtype_name(x.dtype)}};
  k.args = {node.inputs[0], value_arg, node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

// CenterCropPad -> Pad with constant pads: begin = floor-toward-zero half of the difference
// (shape - dim), end = the rest, as the spec's centring rule says for both crop and pad.
Status center_crop_pad_import(Node& node, Graph& graph, int64_t) {
  // Both inputs are required: an empty name (absent) in either place is refused here, before
  // graph.value() reads them (an absent input_data was read at index -1; found by fuzzing).
  if (node.inputs.size() != 2 || node.inputs[0] == kNoValue || node.inputs[1] == kNoValue ||
      node.outputs.size() != 1)
    return node_error(node, "expects inputs (input_data, shape) and 1 output");
  const Value& x = graph.value(node.inputs[0]);
  const Value& shape = graph.value(node.inputs[1]);
  if (shape.dtype != DType::kInt64 && shape.dtype != DType::kInt32)
    return node_error(node, "input 1 has dtype " + dtype_name(shape.dtype) + ", expected int32 or int64");
  if (!shape.constant)
    return node_error(node, "input 1 must be a constant (the target shape decides the output shape; aotc compiles static shapes)");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> axes = node.attr_ints("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  if (shape.constant->numel() != static_cast<int64_t>(axes.size()))
    return node_error(node, "shape has " + std::to_string(shape.constant->numel()) + " values for " +
                                std::to_string(axes.size()) + " axes");
  std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = normalize_axis(node, axes[i], rank);
    if (!a) return a.status();
    if (seen[static_cast<size_t>(*a)]) return node_error(node, "axis " + std::to_string(axes[i]) + " is listed twice");
    seen[static_cast<size_t>(*a)] = true;
    const int64_t target = shape.constant->get_int(static_cast<int64_t>(i));
    if (target < 0) return node_error(node, "target dim " + std::to_string(target) + " is negative");
    const int64_t diff = target - x.shape[static_cast<size_t>(*a)];
    const int64_t begin = diff >= 0 ? diff / 2 : -((-diff) / 2);
    pads[static_cast<size_t>(*a)] = begin;
    pads[static_cast<size_t>(*a + rank)] = diff - begin;
  }
  node.op_type = "Pad";
  node.attrs.clear();  // mode: constant (the default), value 0
  node.inputs = {node.inputs[0], graph.add_constant(graph.unique_name(node.name + "_pads"),
                                                    Tensor::from_int64s({2 * rank}, pads))};
  return Status::ok();
}

Status center_crop_pad_infer(Node& node, Graph&) {
  return node_error(node, "is rewritten to Pad when imported; it cannot be inferred as it is");
}

// Never reached (the import rewrites the node); registered because every op has a reference
// (OpRegistry::add asserts it: builds with assertions on stopped at the first registry use).
Status center_crop_pad_reference(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>&) {
  return node_error(node, "is rewritten to Pad when imported; it cannot be evaluated as it is");
}

}  // namespace

void register_pad_ops(OpRegistry& registry) {
  OpDef crop;
  crop.op_type = "CenterCropPad";
  crop.import = center_crop_pad_import;
  crop.infer = center_crop_pad_infer;
  crop.reference = center_crop_pad_reference;
  registry.add(crop);
  OpDef def;
  def.op_type = "Pad";
  def.import = pad_import;
  def.infer = pad_infer;
  def.reference = pad_reference;
  def.lower = pad_lower;
  registry.add(def);
}

}  // namespace aotc
