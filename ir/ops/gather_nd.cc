// GatherND (opsets 11-13): slices of `data` picked by index tuples in the last axis of `indices`,
// with `batch_dims` leading dims shared by both (exporters emit it for BERT's attention mask), and
// its inverse ScatterND (opsets 11-18: reduction none/add/mul/max/min). Indices are int64 run-time
// values: the references refuse one outside [-s, s); kernels, which cannot report, wrap negatives
// and clamp the rest so they never touch memory outside the tensors.
#include <cstring>
#include <string>

#include "ir/op_registry.h"
#include "ir/ops/copy_lowering.h"
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

// ScatterND: output = data, then for each index tuple t in order, the slice of the output at
// tuple t is replaced by (or combined with) updates[t]. Duplicate tuples apply in order, as in the
// spec's reference loop, so the kernel gives each slice element one thread walking the tuples.
struct ScatterGeometry {
  int64_t k = 0, tuples = 1, slice = 1;
  std::vector<int64_t> index_dims, index_strides;
};

ScatterGeometry scatter_geometry(const Shape& data, const Shape& indices) {
  GatherNdGeometry g = geometry(data, indices, 0);
  return ScatterGeometry{g.k, g.tuples, g.slice, g.index_dims, g.index_strides};
}

Status scatter_nd_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& data = input_value(graph, node, 0);
  if (data.dtype == DType::kString || data.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(data.dtype) + ", which aotc does not store");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {data.dtype}));
  const std::string reduction = node.attr_string("reduction", "none");
  const bool needs16 = reduction == "add" || reduction == "mul", needs18 = reduction == "max" || reduction == "min";
  if (!(reduction == "none" || needs16 || needs18))
    return node_error(node, "reduction '" + escape_for_message(reduction, 20) + "' is not none, add, mul, max or min");
  if ((needs16 && graph.opset < 16) || (needs18 && graph.opset < 18))
    return node_error(node, "reduction '" + reduction + "' needs opset " + (needs16 ? "16" : "18") + ", the model has " +
                                std::to_string(graph.opset));
  if (reduction != "none" && data.dtype == DType::kBool)
    return node_error(node, "reduction '" + reduction + "' on bool data is not supported");
  const Value& idx = input_value(graph, node, 1);
  const Value& upd = input_value(graph, node, 2);
  const int64_t r = static_cast<int64_t>(data.shape.size()), q = static_cast<int64_t>(idx.shape.size());
  if (r < 1) return node_error(node, "input 0 (data) must have rank >= 1");
  if (q < 1) return node_error(node, "input 1 (indices) must have rank >= 1");
  const int64_t k = idx.shape.back();
  if (k < 1 || k > r)
    return node_error(node, "indices' last dim is " + std::to_string(k) + ", must be in [1, rank(data) = " + std::to_string(r) + "]");
  Shape want(idx.shape.begin(), idx.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + k, data.shape.end());
  if (upd.shape != want)
    return node_error(node, "updates have shape " + shape_str(upd.shape) + ", expected " + shape_str(want));
  for (int64_t j = 0; j < k; ++j)
    if (data.shape[static_cast<size_t>(j)] == 0 && shape_numel(idx.shape) > 0)
      return node_error(node, "scatters into an empty axis");
  set_output(graph, node, 0, data.dtype, data.shape);
  return Status::ok();
}

double combine(const std::string& reduction, double a, double b) {
  if (reduction == "add") return a + b;
  if (reduction == "mul") return a * b;
  if (reduction == "max") return a > b ? a : b;
  if (reduction == "min") return a < b ? a : b;
  return b;
}

int64_t combine_int(const std::string& reduction, int64_t a, int64_t b) {
  // Unsigned wrap-around for add/mul: integer overflow wraps like the kernel's two's complement.
  if (reduction == "add") return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  if (reduction == "mul") return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  if (reduction == "max") return a > b ? a : b;
  if (reduction == "min") return a < b ? a : b;
  return b;
}

// v reduced to the dtype's width with two's-complement wrap-around (what the kernel's integer
// conversion does), so Tensor::set_int never sees an out-of-range value.
int64_t wrap_to(DType t, int64_t v) {
  const int64_t bits = 8 * dtype_size(t);
  if (bits >= 64 || t == DType::kBool) return v;
  const uint64_t mask = (uint64_t{1} << bits) - 1, u = static_cast<uint64_t>(v) & mask;
  if (dtype_is_signed(t) && (u >> (bits - 1)) != 0) return static_cast<int64_t>(u | ~mask);
  return static_cast<int64_t>(u);
}

Status scatter_nd_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& data = *inputs[0];
  const Tensor& idx = *inputs[1];
  const Tensor& upd = *inputs[2];
  Tensor& y = outputs[0];
  if (data.byte_size() > 0) std::memcpy(y.raw(), data.raw(), static_cast<size_t>(data.byte_size()));
  const ScatterGeometry g = scatter_geometry(data.shape(), idx.shape());
  const std::string reduction = node.attr_string("reduction", "none");
  const bool integer = dtype_is_integer(data.dtype()) || data.dtype() == DType::kBool;
  for (int64_t t = 0; t < g.tuples; ++t) {
    int64_t dst = 0;
    for (int64_t j = 0; j < g.k; ++j) {
      const int64_t v = idx.get_int(t * g.k + j), dim = g.index_dims[static_cast<size_t>(j)];
      const int64_t w = v < 0 ? v + dim : v;
      if (w < 0 || w >= dim)
        return node_error(node, "index " + std::to_string(v) + " is out of range for an axis of size " + std::to_string(dim));
      dst += w * g.index_strides[static_cast<size_t>(j)];
    }
    for (int64_t s = 0; s < g.slice; ++s) {
      const int64_t o = dst + s, u = t * g.slice + s;
      if (integer) y.set_int(o, wrap_to(data.dtype(), combine_int(reduction, y.get_int(o), upd.get_int(u))));
      else y.set(o, combine(reduction, y.get(o), upd.get(u)));
    }
  }
  return Status::ok();
}

std::string combine_expr(const std::string& reduction) {
  if (reduction == "add") return "a + b";
  if (reduction == "mul") return "a * b";
  if (reduction == "max") return "(a > b ? a : b)";
  if (reduction == "min") return "(a < b ? a : b)";
  return "b";
}

Expected<Lowering> scatter_nd_lower(const Node& node, const Graph& graph) {
  const Value& data = input_value(graph, node, 0);
  const Value& idx = input_value(graph, node, 1);
  Lowering l;
  if (data.numel() == 0) return l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, copy_kernel_step(node.inputs[0], node.outputs[0], data.byte_size()), {}});
  const ScatterGeometry g = scatter_geometry(data.shape, idx.shape);
  if (g.tuples == 0 || g.slice == 0) return l;
  const bool half = data.dtype == DType::kFloat16 || data.dtype == DType::kBFloat16;
  // Unsigned arithmetic for integer add/mul, so overflow wraps (signed overflow is UB in C++).
  std::string ct = half ? "float" : dtype_c_type(data.dtype);
  const std::string reduction = node.attr_string("reduction", "none");
  if (dtype_is_integer(data.dtype) && (reduction == "add" || reduction == "mul"))
    ct = dtype_size(data.dtype) == 8 ? "unsigned long long" : "unsigned int";
  KernelStep k;
  k.template_name = "scatter_nd";
  k.holes = {{"T", dtype_c_type(data.dtype)},
             {"CT", ct},
             {"I", index_type_for(std::max(data.numel(), shape_numel(input_value(graph, node, 2).shape)))},
             {"k", std::to_string(g.k)},
             {"index_dims", dims_literal(g.index_dims)},
             {"index_strides", dims_literal(g.index_strides)},
             {"tuples", int_literal(g.tuples)},
             {"slice", int_literal(g.slice)},
             {"combine", combine_expr(reduction)},
             {"comment", "ScatterND " + shape_str(data.shape) + " by " + shape_str(idx.shape) + " reduction " +
                             reduction + " " + dtype_name(data.dtype)}};
  k.args = {node.inputs[1], node.inputs[2], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(g.slice, 256);
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
  OpDef scatter;
  scatter.op_type = "ScatterND";
  scatter.infer = scatter_nd_infer;
  scatter.reference = scatter_nd_reference;
  scatter.lower = scatter_nd_lower;
  registry.add(scatter);
}

}  // namespace aotc
