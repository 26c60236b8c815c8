// TopK: the k largest (largest=1) or smallest elements along `axis`, values and int64 indices.
// k must be a constant (it sets the output shape); opset 1's attribute k becomes input 1 at import.
// Equal values keep the lower index first, as ONNX specifies; output is always sorted (valid for
// sorted=0 too). The kernel gives each element its rank in the row and writes it if rank < k.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Status top_k_import(Node& node, Graph& graph, int64_t opset) {
  if (opset < 10 && node.has_attr("k") && node.input(1) == kNoValue) {
    const ValueId k = graph.add_constant(graph.unique_name(node.name + "_k"),
                                         Tensor::from_int64s({1}, {node.attr_int("k", 0)}));
    node.inputs.resize(1);
    node.inputs.push_back(k);
    node.attrs.erase("k");
  }
  return Status::ok();
}

Status top_k_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 2) return node_error(node, "expects 2 outputs (values, indices)");
  const Value& x = input_value(graph, node, 0);
  if (!(dtype_is_float(x.dtype) || dtype_is_integer(x.dtype)))
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + "; TopK needs a numeric type");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  if (x.shape.empty()) return node_error(node, "input 0 must have rank >= 1");
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  Expected<const Tensor*> kt = expect_constant(node, graph, 1, "k sets the output shape");
  if (!kt) return kt.status();
  if ((*kt)->numel() != 1) return node_error(node, "K must have one element");
  const int64_t k = (*kt)->get_int(0);
  if (k < 0 || k > x.shape[*axis])
    return node_error(node, "k = " + std::to_string(k) + " must be in [0, " + std::to_string(x.shape[*axis]) + "]");
  Shape out = x.shape;
  out[*axis] = k;
  set_output(graph, node, 0, x.dtype, out);
  set_output(graph, node, 1, DType::kInt64, out);
  return Status::ok();
}

struct RowDims {
  int64_t outer = 1, n = 1, inner = 1;
};

RowDims row_dims(const Shape& shape, int64_t axis) {
  RowDims d;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    (i < axis ? d.outer : i == axis ? d.n : d.inner) *= shape[i];
  return d;
}

int64_t axis_of(const Node& node, size_t rank) {
  const int64_t a = node.attr_int("axis", -1);
  return a < 0 ? a + static_cast<int64_t>(rank) : a;
}

Status top_k_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const int64_t axis = axis_of(node, x.shape().size());
  const RowDims d = row_dims(x.shape(), axis);
  const int64_t k = inputs[1]->get_int(0);
  const bool largest = node.attr_int("largest", 1) != 0;
  const bool is_float = dtype_is_float(x.dtype());
  const bool is_u64 = x.dtype() == DType::kUInt64;
  const int64_t elem = dtype_size(x.dtype());
  // An output given an empty name is absent: a default (empty, undefined) tensor in `outputs`
  // (writing the indices there hit Tensor::set's assertion: a fuzz find, 2026-11-28).
  const bool has_values = !node.outputs.empty() && node.outputs[0] != kNoValue;
  const bool has_indices = node.outputs.size() > 1 && node.outputs[1] != kNoValue;
  std::vector<int64_t> order(static_cast<size_t>(d.n));
  for (int64_t o = 0; o < d.outer; ++o)
    for (int64_t c = 0; c < d.inner; ++c) {
      const int64_t base = o * d.n * d.inner + c;
      std::iota(order.begin(), order.end(), 0);
      // Integers compare exactly as int64 (get_int); floats as double. stable_sort keeps lower index first on ties.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const int64_t ia = base + a * d.inner, ib = base + b * d.inner;
        if (is_float) return largest ? x.get(ia) > x.get(ib) : x.get(ia) < x.get(ib);
        if (is_u64) {  // above 2^63 get_int wraps negative: compare the unsigned bits
          const uint64_t ua = static_cast<uint64_t>(x.get_int(ia)), ub = static_cast<uint64_t>(x.get_int(ib));
          return largest ? ua > ub : ua < ub;
        }
        return largest ? x.get_int(ia) > x.get_int(ib) : x.get_int(ia) < x.get_int(ib);
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dst = (o * k + j) * d.inner + c;
        if (has_values)
          std::memcpy(outputs[0].raw() + dst * elem, x.raw() + (base + order[j] * d.inner) * elem, static_cast<size_t>(elem));
        if (has_indices) outputs[1].set_int(dst, order[j]);
      }
    }
  return Status::ok();
}

Expected<Lowering> top_k_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const int64_t axis = axis_of(node, x.shape.size());
  const RowDims d = row_dims(x.shape, axis);
  const bool is_half = x.dtype == DType::kFloat16 || x.dtype == DType::kBFloat16;
  KernelStep k;
  k.template_name = "top_k";
  k.holes = {{"comment", "TopK k=" + std::to_string(y.shape[axis]) + " axis=" + std::to_string(axis) +
                             (node.attr_int("largest", 1) ? " largest " : " smallest ") + shape_str(x.shape) + " " +
                             dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", is_half ? "float" : dtype_c_type(x.dtype)},
             {"OUTER", int_literal(d.outer)},
             {"N", int_literal(d.n)},
             {"INNER", int_literal(d.inner)},
             {"K", int_literal(y.shape[axis])},
             {"LARGEST", node.attr_int("largest", 1) ? "true" : "false"}};
  k.args = {node.inputs[0], node.outputs[0], node.outputs[1]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(x.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_top_k_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "TopK";
  def.import = top_k_import;
  def.infer = top_k_infer;
  def.reference = top_k_reference;
  def.lower = top_k_lower;
  registry.add(def);
}

}  // namespace aotc
