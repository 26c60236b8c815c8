// ArgMax / ArgMin: the int64 index of the largest / smallest element along `axis`, the first one
// on ties (or the last with select_last_index, opset >= 12); keepdims keeps the axis as size 1.
// The input is viewed as [outer, n, inner]; templates/arg_reduce.cu.in has a thread per column.
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kArgTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16,
                                      DType::kInt8,    DType::kInt16,   DType::kInt32,   DType::kInt64,
                                      DType::kUInt8,   DType::kUInt16,  DType::kUInt32,  DType::kUInt64};

struct ArgDims {
  int64_t outer = 1, n = 1, inner = 1;
};

ArgDims arg_dims(const Shape& s, int64_t axis) {
  ArgDims d;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < axis) d.outer *= s[static_cast<size_t>(i)];
    else if (i == axis) d.n = s[static_cast<size_t>(i)];
    else d.inner *= s[static_cast<size_t>(i)];
  }
  return d;
}

Status arg_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kArgTypes));
  const Value& x = input_value(graph, node, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) return node_error(node, "input 0 must have rank >= 1");
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  if (!axis) return axis.status();
  const int64_t keep = node.attr_int("keepdims", 1), last = node.attr_int("select_last_index", 0);
  if ((keep != 0 && keep != 1) || (last != 0 && last != 1))
    return node_error(node, "keepdims and select_last_index must be 0 or 1");
  if (x.shape[static_cast<size_t>(*axis)] == 0) return node_error(node, "cannot take the arg of an empty axis");
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != *axis) out.push_back(x.shape[static_cast<size_t>(i)]);
    else if (keep) out.push_back(1);
  }
  set_output(graph, node, 0, DType::kInt64, out);
  return Status::ok();
}

Status arg_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), x.rank());
  if (!axis) return axis.status();
  const ArgDims d = arg_dims(x.shape(), *axis);
  const bool is_max = node.op_type == "ArgMax", last = node.attr_int("select_last_index", 0) != 0;
  const bool is_float = dtype_is_float(x.dtype()), is_signed = dtype_is_signed(x.dtype()) || is_float;
  // Compare integers exactly (int64 and uint64 do not fit a double).
  auto better = [&](int64_t i, int64_t j) {  // element i beats the current best j
    int c;
    if (is_float) {
      const double a = x.get(i), b = x.get(j);
      c = a > b ? 1 : a < b ? -1 : 0;
    } else if (is_signed) {
      const int64_t a = x.get_int(i), b = x.get_int(j);
      c = a > b ? 1 : a < b ? -1 : 0;
    } else {
      const uint64_t a = static_cast<uint64_t>(x.get_int(i)), b = static_cast<uint64_t>(x.get_int(j));
      c = a > b ? 1 : a < b ? -1 : 0;
    }
    if (!is_max) c = -c;
    return c > 0 || (last && c == 0);
  };
  for (int64_t o = 0; o < d.outer; ++o)
    for (int64_t c = 0; c < d.inner; ++c) {
      const int64_t base = o * d.n * d.inner + c;
      int64_t best = 0;
      for (int64_t j = 1; j < d.n; ++j)
        if (better(base + j * d.inner, base + best * d.inner)) best = j;
      outputs[0].set_int(o * d.inner + c, best);
    }
  return Status::ok();
}

std::string compare_type(DType t) {
  if (t == DType::kFloat64) return "double";
  if (dtype_is_float(t)) return "float";
  return dtype_c_type(t);
}

Expected<Lowering> arg_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  const ArgDims d = arg_dims(x.shape, *axis);
  Lowering l;
  if (d.outer * d.inner == 0) return l;
  const bool is_max = node.op_type == "ArgMax", last = node.attr_int("select_last_index", 0) != 0;
  KernelStep k;
  k.template_name = "arg_reduce";
  k.holes = {{"comment", node.op_type + " " + shape_str(x.shape) + " axis " + std::to_string(*axis) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", compare_type(x.dtype)},
             {"OUTER", int_literal(d.outer)},
             {"N", int_literal(d.n)},
             {"INNER", int_literal(d.inner)},
             // "a beats b": strict for the first index on ties, non-strict for the last.
             {"BEATS", std::string("a ") + (is_max ? ">" : "<") + (last ? "=" : "") + " b"}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(d.outer * d.inner, 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_arg_reduce_ops(OpRegistry& registry) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    OpDef def;
    def.op_type = op;
    def.infer = arg_infer;
    def.reference = arg_reference;
    def.lower = arg_lower;
    registry.add(def);
  }
}

}  // namespace aotc
