// AffineGrid-20: the sampling grid of an affine transform, for GridSample. theta [N, 2, 3] (2-D,
// size [N, C, H, W] -> grid [N, H, W, 2]) or [N, 3, 4] (3-D, size [N, C, D, H, W] -> grid
// [N, D, H, W, 3]); grid[n, ..] = theta[n] @ (x, y[, z], 1) with x along W, y along H, z along D and
// normalised coordinates -1 + (2i + 1) / size (align_corners 0) or -1 + 2i / (size - 1) (1; a size
// of 1 gives -1), as the ONNX reference builds them. size is a constant (it decides the output
// shape). Kernel: templates/affine_grid.cu.in, one thread per grid point.
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

// Spatial sizes (H, W) or (D, H, W) from the constant size input, checked against theta.
Expected<std::vector<int64_t>> spatial_of(const Node& node, const Shape& theta, const Tensor& size) {
  if (theta.size() != 3 || !((theta[1] == 2 && theta[2] == 3) || (theta[1] == 3 && theta[2] == 4)))
    return node_error(node, "theta has shape " + shape_str(theta) + ", expected [N, 2, 3] or [N, 3, 4]");
  const int64_t dims = theta[1];
  if (size.numel() != dims + 2)
    return node_error(node, "size has " + std::to_string(size.numel()) + " values, expected " + std::to_string(dims + 2) +
                                " for theta " + shape_str(theta));
  if (size.get_int(0) != theta[0])
    return node_error(node, "size's N " + std::to_string(size.get_int(0)) + " differs from theta's " + std::to_string(theta[0]));
  std::vector<int64_t> sp;
  for (int64_t i = 2; i < size.numel(); ++i) {
    if (size.get_int(i) < 0) return node_error(node, "size has a negative dim");
    sp.push_back(size.get_int(i));
  }
  return sp;
}

Status affine_grid_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  Expected<const Tensor*> size = expect_constant(node, graph, 1, "the size decides the output shape; aotc compiles static shapes");
  if (!size) return size.status();
  const Value& theta = input_value(graph, node, 0);
  auto sp = spatial_of(node, theta.shape, **size);
  if (!sp) return sp.status();
  Shape out = {theta.shape[0]};
  out.insert(out.end(), sp->begin(), sp->end());
  out.push_back(theta.shape[1]);
  set_output(graph, node, 0, theta.dtype, out);
  return Status::ok();
}

double coordinate(int64_t i, int64_t size, bool align_corners) {
  if (align_corners) return size == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(size - 1);
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(size);
}

Status affine_grid_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& theta = *inputs[0];
  auto sp = spatial_of(node, theta.shape(), *inputs[1]);
  if (!sp) return sp.status();
  const bool align = node.attr_int("align_corners", 0) != 0;
  const int64_t dims = theta.shape()[1], cols = dims + 1;
  const int64_t d_n = dims == 3 ? (*sp)[0] : 1, h_n = (*sp)[dims == 3 ? 1 : 0], w_n = (*sp)[dims == 3 ? 2 : 1];
  int64_t o = 0;
  for (int64_t n = 0; n < theta.shape()[0]; ++n)
    for (int64_t d = 0; d < d_n; ++d)
      for (int64_t h = 0; h < h_n; ++h)
        for (int64_t w = 0; w < w_n; ++w) {
          const double p[4] = {coordinate(w, w_n, align), coordinate(h, h_n, align),
                               dims == 3 ? coordinate(d, d_n, align) : 1.0, 1.0};
          for (int64_t r = 0; r < dims; ++r) {
            double acc = 0;
            for (int64_t c = 0; c < cols; ++c) acc += theta.get((n * dims + r) * cols + c) * p[c];
            outputs[0].set(o++, acc);
          }
        }
  return Status::ok();
}

Expected<Lowering> affine_grid_lower(const Node& node, const Graph& graph) {
  const Value& theta = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const Value& size = graph.value(node.inputs[1]);
  if (!size.constant) return node_error(node, "size must be a constant");
  auto sp = spatial_of(node, theta.shape, *size.constant);
  if (!sp) return sp.status();
  const int64_t dims = theta.shape[1];
  const int64_t d_n = dims == 3 ? (*sp)[0] : 1, h_n = (*sp)[dims == 3 ? 1 : 0], w_n = (*sp)[dims == 3 ? 2 : 1];
  const int64_t points = theta.shape[0] * d_n * h_n * w_n;
  KernelStep k;
  k.template_name = "affine_grid";
  k.holes = {{"comment", "AffineGrid " + shape_str(theta.shape) + " -> " + shape_str(y.shape) + " " + dtype_name(theta.dtype)},
             {"T", dtype_c_type(theta.dtype)},
             {"CT", theta.dtype == DType::kFloat64 ? "double" : "float"},
             {"DIMS", int_literal(dims)},
             {"D", int_literal(d_n)}, {"H", int_literal(h_n)}, {"W", int_literal(w_n)},
             {"ALIGN", node.attr_int("align_corners", 0) != 0 ? "true" : "false"},
             {"POINTS", int_literal(points)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(points, 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_affine_grid_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "AffineGrid";
  def.infer = affine_grid_infer;
  def.reference = affine_grid_reference;
  def.lower = affine_grid_lower;
  registry.add(def);
}

}  // namespace aotc
