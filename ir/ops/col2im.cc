// Col2Im-18: column blocks back into an image (PyTorch's fold). Input [N, C * prod(block_shape), L],
// image_shape and block_shape constant inputs (they decide the output shape), attributes dilations,
// pads (begin..., end...), strides; output [N, C, image...] where each pixel is the sum of every
// block element that lands on it. 1- to 3-D images (padded to rank 3). The kernel
// (templates/col2im.cu.in) gathers per output pixel: deterministic, no atomics.
#include <array>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

// Rank-3 geometry (leading dims of size 1 for 1-D and 2-D images).
struct Col2ImGeometry {
  int64_t n = 0, c = 0, k = 1, l = 1;
  std::array<int64_t, 3> image{1, 1, 1}, kernel{1, 1, 1}, blocks{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1}, pad{0, 0, 0};
};

Expected<Col2ImGeometry> geometry(const Node& node, const Shape& x, const Tensor& image, const Tensor& block) {
  const int64_t r = image.numel();
  if (r < 1 || r > 3) return node_error(node, "image_shape has " + std::to_string(r) + " dims (1 to 3 are supported)");
  if (block.numel() != r) return node_error(node, "block_shape has " + std::to_string(block.numel()) + " dims, image_shape " + std::to_string(r));
  if (x.size() != 3) return node_error(node, "input has shape " + shape_str(x) + ", expected [N, C * prod(block_shape), L]");
  auto attr = [&](const char* key, int64_t fallback, size_t count) -> Expected<std::vector<int64_t>> {
    std::vector<int64_t> v = node.attr_ints(key, std::vector<int64_t>(count, fallback));
    if (v.size() != count) return node_error(node, std::string(key) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(count));
    return v;
  };
  auto dil = attr("dilations", 1, static_cast<size_t>(r));
  if (!dil) return dil.status();
  auto strides = attr("strides", 1, static_cast<size_t>(r));
  if (!strides) return strides.status();
  auto pads = attr("pads", 0, static_cast<size_t>(2 * r));
  if (!pads) return pads.status();
  Col2ImGeometry g;
  g.n = x[0];
  for (int64_t d = 0; d < r; ++d) {
    const size_t at = static_cast<size_t>(3 - r + d);
    g.image[at] = image.get_int(d);
    g.kernel[at] = block.get_int(d);
    g.dilation[at] = (*dil)[static_cast<size_t>(d)];
    g.stride[at] = (*strides)[static_cast<size_t>(d)];
    g.pad[at] = (*pads)[static_cast<size_t>(d)];
    const int64_t pad_end = (*pads)[static_cast<size_t>(d + r)];
    if (g.image[at] < 1 || g.kernel[at] < 1 || g.dilation[at] < 1 || g.stride[at] < 1 || g.pad[at] < 0 || pad_end < 0)
      return node_error(node, "image_shape, block_shape, dilations and strides must be positive, pads non-negative");
    const int64_t span = g.image[at] + g.pad[at] + pad_end - g.dilation[at] * (g.kernel[at] - 1) - 1;
    if (span < 0) return node_error(node, "the block does not fit the padded image on axis " + std::to_string(d));
    g.blocks[at] = span / g.stride[at] + 1;
    g.k *= g.kernel[at];
    g.l *= g.blocks[at];
  }
  if (x[1] % g.k != 0)
    return node_error(node, "input dim 1 (" + std::to_string(x[1]) + ") is not a multiple of prod(block_shape) = " + std::to_string(g.k));
  if (x[2] != g.l)
    return node_error(node, "input dim 2 (" + std::to_string(x[2]) + ") is not the number of sliding blocks, " + std::to_string(g.l));
  g.c = x[1] / g.k;
  return g;
}

Status col2im_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {DType::kInt64}));
  Expected<const Tensor*> image = expect_constant(node, graph, 1, "image_shape decides the output shape; aotc compiles static shapes");
  if (!image) return image.status();
  Expected<const Tensor*> block = expect_constant(node, graph, 2, "block_shape is compiled into the kernel");
  if (!block) return block.status();
  const Value& x = input_value(graph, node, 0);
  auto g = geometry(node, x.shape, **image, **block);
  if (!g) return g.status();
  Shape out = {g->n, g->c};
  for (int64_t i = 0; i < (*image)->numel(); ++i) out.push_back((*image)->get_int(i));
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

Status col2im_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  auto g = geometry(node, x.shape(), *inputs[1], *inputs[2]);
  if (!g) return g.status();
  std::vector<double> acc(static_cast<size_t>(outputs[0].numel()), 0.0);
  const int64_t img = g->image[0] * g->image[1] * g->image[2];
  // Scatter form (the ONNX reference's loop), independent of the kernel's gather form.
  for (int64_t n = 0; n < g->n; ++n)
    for (int64_t row = 0; row < g->c * g->k; ++row) {
      const int64_t c = row / g->k, kk = row % g->k;
      const int64_t k0 = kk / (g->kernel[1] * g->kernel[2]), k1 = (kk / g->kernel[2]) % g->kernel[1], k2 = kk % g->kernel[2];
      for (int64_t b = 0; b < g->l; ++b) {
        const int64_t b0 = b / (g->blocks[1] * g->blocks[2]), b1 = (b / g->blocks[2]) % g->blocks[1], b2 = b % g->blocks[2];
        const int64_t p0 = b0 * g->stride[0] - g->pad[0] + k0 * g->dilation[0];
        const int64_t p1 = b1 * g->stride[1] - g->pad[1] + k1 * g->dilation[1];
        const int64_t p2 = b2 * g->stride[2] - g->pad[2] + k2 * g->dilation[2];
        if (p0 < 0 || p0 >= g->image[0] || p1 < 0 || p1 >= g->image[1] || p2 < 0 || p2 >= g->image[2]) continue;
        acc[static_cast<size_t>((n * g->c + c) * img + (p0 * g->image[1] + p1) * g->image[2] + p2)] +=
            x.get((n * g->c * g->k + row) * g->l + b);
      }
    }
  for (size_t i = 0; i < acc.size(); ++i) outputs[0].set(static_cast<int64_t>(i), acc[i]);
  return Status::ok();
}

Expected<Lowering> col2im_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const Value& image = graph.value(node.inputs[1]);
  const Value& block = graph.value(node.inputs[2]);
  if (!image.constant || !block.constant) return node_error(node, "image_shape and block_shape must be constants");
  auto g = geometry(node, x.shape, *image.constant, *block.constant);
  if (!g) return g.status();
  auto dims = [](const std::array<int64_t, 3>& a) { return dims_literal(std::vector<int64_t>(a.begin(), a.end())); };
  KernelStep k;
  k.template_name = "col2im";
  k.holes = {{"comment", "Col2Im " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"NC", int_literal(g->n * g->c)},
             {"K", int_literal(g->k)},
             {"L", int_literal(g->l)},
             {"IMAGE", dims(g->image)}, {"KERNEL", dims(g->kernel)}, {"BLOCKS", dims(g->blocks)},
             {"STRIDE", dims(g->stride)}, {"DILATION", dims(g->dilation)}, {"PAD", dims(g->pad)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_col2im_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Col2Im";
  def.infer = col2im_infer;
  def.reference = col2im_reference;
  def.lower = col2im_lower;
  registry.add(def);
}

}  // namespace aotc
