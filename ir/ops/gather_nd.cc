// GatherND (opsets 11-13): slices of `data` picked by index tuples in the last axis of `indices`,
// with `batch_dims` leading dims shared by both. Exporters emit it for BERT's attention-mask
// construction. Indices are int64 run-time values: the reference refuses one outside [-s, s) as
// ONNX requires; the kernel, which cannot report, wraps negatives and clamps the rest.
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

// The problem in flat terms: output [batches, tuples, slice] reads data viewed as
// [batches, d_b .. d_{b+k-1}, slice] at the k-tuple given by indices[batch, tuple, :].
struct GatherNdGeometry {
  int64_t batch_dims = 0, k = 0;
  int64_t batches = 1, tuples = 1, slice = 1;
  int64_t batch_stride = 0;            // elements of data per batch entry
  std::vector<int64_t> index_dims;     // data dims addressed by the tuple (k of them)
  std::vector<int64_t> index_strides;  // their element strides in data
};

GatherNdGeometry geometry(const Shape& data, const Shape& indices, int64_t batch_dims) {
  GatherNdGeometry g;
  g.batch_dims = batch_dims;
  g.k = indices.back();
  const size_t b = static_cast<size_t>(batch_dims), k = static_cast<size_t>(g.k);
  for (size_t d = 0; d < b; ++d) g.batches *= data[d];
  for (size_t d = b; d + 1 < indices.size(); ++d) g.tuples *= indices[d];
  for (size_t d = b + k; d < data.size(); ++d) g.slice *= data[d];
  std::vector<int64_t> strides = shape_strides(data);
  g.batch_stride = 1;
  for (size_t d = b; d < data.size(); ++d) g.batch_stride *= data[d];
  for (size_t j = 0; j < k; ++j) {
    g.index_dims.push_back(data[b + j]);
    g.index_strides.push_back(strides[b + j]);
  }
  return g;
}

Status gather_nd_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& data = input_value(graph, node, 0);
  if (data.dtype == DType::kString || data.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(data.dtype) + ", which aotc does not store");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  const Value& idx = input_value(graph, node, 1);
  const int64_t r = static_cast<int64_t>(data.shape.size()), q = static_cast<int64_t>(idx.shape.size());
  if (r < 1) return node_error(node, "input 0 (data) must have rank >= 1");
  if (q < 1) return node_error(node, "input 1 (indices) must have rank >= 1");
  const int64_t b = node.attr_int("batch_dims", 0);
  if (b < 0 || b >= std::min(r, q))
    return node_error(node, "batch_dims " + std::to_string(b) + " must be in [0, min(rank(data), rank(indices)) = " +
                                std::to_string(std::min(r, q)) + ")");
  for (size_t d = 0; d < static_cast<size_t>(b); ++d)
    if (data.shape[d] != idx.shape[d])
      return node_error(node, "batch dim " + std::to_string(d) + " differs: data " + shape_str(data.shape) +
                                  ", indices " + shape_str(idx.shape));
  const int64_t k = idx.shape.back();
  if (k < 1 || k > r - b)
    return node_error(node, "indices' last dim is " + std::to_string(k) + ", must be in [1, rank(data) - batch_dims = " +
                                std::to_string(r - b) + "]");
  Shape out(data.shape.begin(), data.shape.begin() + b);
  out.insert(out.end(), idx.shape.begin() + b, idx.shape.end() - 1);
  out.insert(out.end(), data.shape.begin() + b + k, data.shape.end());
  for (int64_t j = 0; j < k; ++j)
    if (data.shape[static_cast<size_t>(b + j)] == 0 && shape_numel(out) > 0)
      return node_error(node, "gathers from an empty axis");
  set_output(graph, node, 0, data.dtype, out);
  return Status::ok();
}

Status gather_nd_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& data = *inputs[0];
  const Tensor& idx = *inputs[1];
  Tensor& y = outputs[0];
  const GatherNdGeometry g = geometry(data.shape(), idx.shape(), node.attr_int("batch_dims", 0));
  const int64_t elem = dtype_size(data.dtype());
  for (int64_t bt = 0; bt < g.batches; ++bt) {
    for (int64_t t = 0; t < g.tuples; ++t) {
      const int64_t row = bt * g.tuples + t;
      int64_t src = bt * g.batch_stride;
      for (int64_t j = 0; j < g.k; ++j) {
        const int64_t v = idx.get_int(row * g.k + j), dim = g.index_dims[static_cast<size_t>(j)];
        const int64_t w = v < 0 ? v + dim : v;
        if (w < 0 || w >= dim)
          return node_error(node, "index " + std::to_string(v) + " is out of range for an axis of size " + std::to_string(dim));
        src += w * g.index_strides[static_cast<size_t>(j)];
      }
      if (g.slice > 0)
        std::memcpy(y.raw() + row * g.slice * elem, data.raw() + src * elem, static_cast<size_t>(g.slice * elem));
    }
  }
  return Status::ok();
}

Expected<Lowering> gather_nd_lower(const Node& node, const Graph& graph) {
  const Value& data = input_value(graph, node, 0);
  const Value& idx = input_value(graph, node, 1);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const GatherNdGeometry g = geometry(data.shape, idx.shape, node.attr_int("batch_dims", 0));
  KernelStep k;
  k.template_name = "gather_nd";
  k.holes = {{"T", bits_c_type(data.dtype)},
             {"I", index_type_for(std::max(std::max(data.numel(), y.numel()), idx.numel()))},
             {"k", std::to_string(g.k)},
             {"index_dims", dims_literal(g.index_dims)},
             {"index_strides", dims_literal(g.index_strides)},
             {"tuples", int_literal(g.tuples)},
             {"slice", int_literal(g.slice)},
             {"batch_stride", int_literal(g.batch_stride)},
             {"numel", int_literal(y.numel())},
             {"comment", "GatherND " + shape_str(data.shape) + " by " + shape_str(idx.shape) + " batch_dims " +
                             std::to_string(g.batch_dims) + " -> " + shape_str(y.shape) + " " + dtype_name(data.dtype)}};
  k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_gather_nd_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "GatherND";
  def.infer = gather_nd_infer;
  def.reference = gather_nd_reference;
  def.lower = gather_nd_lower;
  registry.add(def);
}

}  // namespace aotc
