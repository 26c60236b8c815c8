// ScatterElements (opsets 11-18: reduction none/add/mul/max/min) and the deprecated Scatter
// (opsets 9-10, same semantics without reduction). The output is data with updates written at
// `indices` along `axis`; duplicates apply in index order. The GPU lowering copies data, then one
// thread per line along `axis` applies that line's updates in order (no two lines collide).
#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/copy_lowering.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin, kInvalid };

Reduction reduction_of(const Node& node) {
  const std::string r = node.attr_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return Reduction::kInvalid;
}

Status scatter_elements_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& data = input_value(graph, node, 0);
  const Value& indices = input_value(graph, node, 1);
  const Value& updates = input_value(graph, node, 2);
  if (data.dtype == DType::kString || data.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(data.dtype) + ", which aotc does not store");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt32, DType::kInt64}));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {data.dtype}));
  const Reduction red = reduction_of(node);
  if (red == Reduction::kInvalid)
    return node_error(node, "reduction must be none, add, mul, max or min, got '" + node.attr_string("reduction", "") + "'");
  if (red != Reduction::kNone && data.dtype == DType::kBool)
    return node_error(node, "reduction '" + node.attr_string("reduction", "") + "' on bool data is not supported");
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (rank < 1) return node_error(node, "data must have rank >= 1");
  if (indices.shape.size() != data.shape.size())
    return node_error(node, "indices must have the rank of data (" + std::to_string(rank) + ")");
  if (updates.shape != indices.shape) return node_error(node, "updates must have the shape of indices");
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  if (!axis) return axis.status();
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && indices.shape[d] > data.shape[d])
      return node_error(node, "indices dim " + std::to_string(d) + " exceeds data's");
  set_output(graph, node, 0, data.dtype, data.shape);
  return Status::ok();
}

int64_t axis_of(const Node& node, int64_t rank) {
  int64_t a = node.attr_int("axis", 0);
  return a < 0 ? a + rank : a;
}

Status scatter_elements_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                                  std::vector<Tensor>& outputs) {
  const Tensor& data = *inputs[0];
  const Tensor& indices = *inputs[1];
  const Tensor& updates = *inputs[2];
  Tensor& out = outputs[0];
  // An empty data tensor has no buffer: memcpy of null pointers is undefined even for 0 bytes
  // (a fuzz find, UBSan, 2026-11-28).
  if (data.byte_size() > 0) std::memcpy(out.raw(), data.raw(), static_cast<size_t>(data.byte_size()));
  const int64_t rank = data.rank();
  const int64_t axis = axis_of(node, rank);
  const std::vector<int64_t> dstrides = shape_strides(data.shape());
  const Reduction red = reduction_of(node);
  const bool is_float = dtype_is_float(data.dtype());
  const bool is_u64 = data.dtype() == DType::kUInt64;  // max/min compare unsigned
  const int64_t elem = dtype_size(data.dtype());
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t rem = i, off = 0;
    int64_t idx = indices.get_int(i);
    const int64_t dim = data.shape()[axis];
    if (idx < 0) idx += dim;
    if (idx < 0 || idx >= dim)
      return node_error(node, "index " + std::to_string(indices.get_int(i)) + " is out of range for axis size " +
                                  std::to_string(dim));
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t c = rem % indices.shape()[d];
      rem /= indices.shape()[d];
      off += (d == axis ? idx : c) * dstrides[d];
    }
    if (red == Reduction::kNone) {
      std::memcpy(out.raw() + off * elem, updates.raw() + i * elem, static_cast<size_t>(elem));
    } else if (is_float) {
      const double a = out.get(off), u = updates.get(i);
      const double r = red == Reduction::kAdd ? a + u : red == Reduction::kMul ? a * u
                       : red == Reduction::kMax ? std::max(a, u) : std::min(a, u);
      out.set(off, r);
    } else {
      // Integers: wrap like the kernel's fixed-width arithmetic (unsigned to avoid signed overflow UB).
      const int64_t a = out.get_int(off), u = updates.get_int(i);
      const int64_t r = red == Reduction::kAdd ? static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(u))
                        : red == Reduction::kMul ? static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(u))
                        : red == Reduction::kMax ? (is_u64 ? static_cast<int64_t>(std::max<uint64_t>(a, u)) : std::max(a, u))
                        : (is_u64 ? static_cast<int64_t>(std::min<uint64_t>(a, u)) : std::min(a, u));
      out.set_int(off, r);
    }
  }
  return Status::ok();
}

std::string combine_expr(Reduction red, bool is_half) {
  const std::string ct = is_half ? "float" : "T";
  switch (red) {
    case Reduction::kAdd: return "(T)((" + ct + ")a + (" + ct + ")u)";
    case Reduction::kMul: return "(T)((" + ct + ")a * (" + ct + ")u)";
    case Reduction::kMax: return "(((" + ct + ")u > (" + ct + ")a) ? u : a)";
    case Reduction::kMin: return "(((" + ct + ")u < (" + ct + ")a) ? u : a)";
    default: return "u";
  }
}

Expected<Lowering> scatter_elements_lower(const Node& node, const Graph& graph) {
  const Value& data = input_value(graph, node, 0);
  const Value& indices = input_value(graph, node, 1);
  Lowering l;
  if (data.numel() == 0) return l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel,
                                copy_kernel_step(node.inputs[0], node.outputs[0], data.byte_size()), {}});
  if (indices.numel() == 0) return l;
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  const int64_t axis = axis_of(node, rank);
  const Reduction red = reduction_of(node);
  const bool is_half = data.dtype == DType::kFloat16 || data.dtype == DType::kBFloat16;
  // 8-bit integer reductions do integer arithmetic in int, then convert back: wraps like the reference.
  const std::string t = red == Reduction::kNone ? bits_c_type(data.dtype) : dtype_c_type(data.dtype);
  const int64_t lines = indices.numel() / indices.shape[axis];
  KernelStep k;
  k.template_name = "scatter_elements";
  k.holes = {{"comment", node.op_type + " reduction=" + node.attr_string("reduction", "none") + " axis=" +
                             std::to_string(axis) + " data " + shape_str(data.shape) + " indices " +
                             shape_str(indices.shape) + " " + dtype_name(data.dtype)},
             {"T", t},
             {"TI", dtype_c_type(indices.dtype)},
             {"RANK", std::to_string(rank)},
             {"AXIS", std::to_string(axis)},
             {"INDEX_DIMS", dims_literal(indices.shape)},
             {"INDEX_STRIDES", dims_literal(shape_strides(indices.shape))},
             {"DATA_STRIDES", dims_literal(shape_strides(data.shape))},
             {"AXIS_DIM", int_literal(data.shape[axis])},
             {"LINES", int_literal(lines)},
             {"COMBINE", combine_expr(red, is_half)}};
  k.args = {node.inputs[1], node.inputs[2], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(lines, 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_scatter_elements_ops(OpRegistry& registry) {
  for (const char* op : {"ScatterElements", "Scatter"}) {
    OpDef def;
    def.op_type = op;
    def.infer = scatter_elements_infer;
    def.reference = scatter_elements_reference;
    def.lower = scatter_elements_lower;
    registry.add(def);
  }
}

}  // namespace aotc
