// Concat: joins any number of inputs of one dtype along `axis` (negative counts from the end).
// Seen as [outer, inner_i] slabs (outer = dims before axis, inner_i = the rest), each input is
// one strided copy into the output, so the GPU lowering is one kernel per non-empty input.
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

Status concat_import(Node& node, Graph&, int64_t opset) {
  // Concat-1 defaulted axis to 1; from opset 4 on it is required.
  if (opset < 4 && !node.has_attr("axis")) node.attrs["axis"] = Attribute::of_int(1);
  return Status::ok();
}

Status concat_infer(Node& node, Graph& graph) {
  if (node.inputs.empty()) return node_error(node, "expects at least 1 input");
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (node.inputs[i] == kNoValue) return node_error(node, "input " + std::to_string(i) + " is missing");
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  if (!node.has_attr("axis")) return node_error(node, "attribute 'axis' is required");
  const Value& first = input_value(graph, node, 0);
  if (first.dtype == DType::kString || first.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(first.dtype) + ", which aotc does not store");
  int64_t rank = static_cast<int64_t>(first.shape.size());
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  if (!axis) return axis.status();
  Shape out = first.shape;
  out[static_cast<size_t>(*axis)] = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& v = input_value(graph, node, i);
    if (v.dtype != first.dtype)
      return node_error(node, "input " + std::to_string(i) + " has dtype " + dtype_name(v.dtype) +
                                  ", input 0 has " + dtype_name(first.dtype));
    if (static_cast<int64_t>(v.shape.size()) != rank)
      return node_error(node, "input " + std::to_string(i) + " has rank " + std::to_string(v.shape.size()) +
                                  ", input 0 has rank " + std::to_string(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (d != *axis && v.shape[static_cast<size_t>(d)] != first.shape[static_cast<size_t>(d)])
        return node_error(node, "input " + std::to_string(i) + " has shape " + shape_str(v.shape) +
                                    ", which differs from input 0 (" + shape_str(first.shape) +
                                    ") outside axis " + std::to_string(*axis));
    }
    out[static_cast<size_t>(*axis)] += v.shape[static_cast<size_t>(*axis)];
  }
  set_output(graph, node, 0, first.dtype, out);
  return Status::ok();
}

// Elements before `axis` (outer) and from `axis` on (inner) of `shape`.
void split_at(const Shape& shape, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (size_t d = 0; d < shape.size(); ++d) (static_cast<int64_t>(d) < axis ? *outer : *inner) *= shape[d];
}

int64_t concat_axis(const Node& node, int64_t rank) {
  int64_t a = node.attr_int("axis", 0);
  return a < 0 ? a + rank : a;
}

Status concat_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                        std::vector<Tensor>& outputs) {
  Tensor& y = outputs[0];
  int64_t axis = concat_axis(node, y.rank());
  int64_t elem = dtype_size(y.dtype());
  int64_t outer, out_inner;
  split_at(y.shape(), axis, &outer, &out_inner);
  int64_t offset = 0;  // elements of the output row already filled by earlier inputs
  for (const Tensor* x : inputs) {
    int64_t x_outer, inner;
    split_at(x->shape(), axis, &x_outer, &inner);
    for (int64_t o = 0; o < outer && inner > 0; ++o)
      std::memcpy(y.raw() + (o * out_inner + offset) * elem, x->raw() + o * inner * elem,
                  static_cast<size_t>(inner * elem));
    offset += inner;
  }
  return Status::ok();
}

Expected<Lowering> concat_lower(const Node& node, const Graph& graph) {
  const Value& y = output_value(graph, node, 0);
  int64_t axis = concat_axis(node, static_cast<int64_t>(y.shape.size()));
  int64_t outer, out_inner;
  split_at(y.shape, axis, &outer, &out_inner);
  Lowering l;
  int64_t offset = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& x = input_value(graph, node, i);
    int64_t x_outer, inner;
    split_at(x.shape, axis, &x_outer, &inner);
    if (x.numel() > 0) {
      // 16-byte accesses where the slab's rows, the output's rows and the offset are whole vectors:
      // every buffer starts 256-byte aligned (arena values and weights by the planner / blob
      // layout, inputs and outputs checked by run(), views alias a buffer's start).
      const int64_t es = dtype_size(y.dtype), v = es > 0 && es < 16 ? 16 / es : 1;
      const int64_t vec = v > 1 && inner % v == 0 && out_inner % v == 0 && offset % v == 0 ? v : 1;
      KernelStep k;
      k.template_name = "concat_slab";
      k.holes = {{"T", bits_c_type(y.dtype)},
                 {"V", vec > 1 ? "uint4" : bits_c_type(y.dtype)},
                 {"VEC", int_literal(vec)},
                 {"I", y.numel() < (int64_t{1} << 31) - 1 ? "int" : "long long"},
                 {"in_inner", int_literal(inner)},
                 {"out_inner", int_literal(out_inner)},
                 {"out_offset", int_literal(offset)},
                 {"numel", int_literal(x.numel())},
                 {"comment", "Concat input " + std::to_string(i) + " " + shape_str(x.shape) + " into " +
                                 shape_str(y.shape) + " along axis " + std::to_string(axis)}};
      k.args = {node.inputs[i], node.outputs[0]};
      k.block = Dim3{256, 1, 1};
      k.grid = grid_for(x.numel() / vec, 256);
      l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    }
    offset += inner;
  }
  return l;
}

}  // namespace

void register_concat_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Concat";
  def.import = concat_import;
  def.infer = concat_infer;
  def.reference = concat_reference;
  def.lower = concat_lower;
  registry.add(def);
}

}  // namespace aotc
