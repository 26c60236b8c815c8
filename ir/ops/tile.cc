// Tile: repeats input 0 `repeats[d]` times along each dim d (repeats: constant int64 input 1).
// Output dim d of size r*n, read as the pair (rep, j) in row-major order, is a strided gather
// over 2*rank dims with stride 0 on each rep dim.
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_gather.h"

namespace aotc {
namespace {

Status tile_infer(Node& node, Graph& graph) {
  if (graph.opset < 6) return node_error(node, "Tile before opset 6 (tiles/axis inputs) is not supported");
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Value& x = input_value(graph, node, 0);
  if (x.dtype == DType::kString || x.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(x.dtype) + ", which aotc does not store");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  AOTC_RETURN_IF_ERROR(expect_rank(node, graph, 1, 1));
  Expected<const Tensor*> reps = expect_constant(node, graph, 1, "repeats decide the output shape; aotc compiles static shapes");
  if (!reps) return reps.status();
  std::vector<int64_t> r = (*reps)->to_int64s();
  if (r.size() != x.shape.size())
    return node_error(node, "repeats has " + std::to_string(r.size()) + " entries for an input of rank " +
                                std::to_string(x.shape.size()));
  Shape out = x.shape;
  for (size_t d = 0; d < r.size(); ++d) {
    if (r[d] < 0) return node_error(node, "repeats has a negative entry " + std::to_string(r[d]));
    out[d] *= r[d];
  }
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

GatherView tile_view(const Shape& in, const Shape& out) {
  GatherView v;
  std::vector<int64_t> strides = shape_strides(in);
  for (size_t d = 0; d < in.size(); ++d) {
    v.dims.push_back(in[d] == 0 ? 0 : out[d] / in[d]);
    v.strides.push_back(0);
    v.dims.push_back(in[d]);
    v.strides.push_back(strides[d]);
  }
  return v;
}

Status tile_reference(const Node&, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  strided_gather_reference(*inputs[0], outputs[0], tile_view(inputs[0]->shape(), outputs[0].shape()));
  return Status::ok();
}

Expected<Lowering> tile_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  KernelStep k = strided_gather_step(node.inputs[0], node.outputs[0], x.dtype, x.numel(), tile_view(x.shape, y.shape),
                                     "Tile " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " " +
                                         dtype_name(x.dtype));
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_tile_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Tile";
  def.infer = tile_infer;
  def.reference = tile_reference;
  def.lower = tile_lower;
  registry.add(def);
}

}  // namespace aotc
