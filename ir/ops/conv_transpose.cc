// ConvTranspose (1-D to 3-D): strides, dilations, group, pads, output_padding, output_shape and
// auto_pad resolved as the ONNX reference implementation does (output_shape with explicit or zero
// pads keeps those pads; SAME_* derive them from the output size). The reference scatters each
// input element; the kernel (templates/conv_transpose.cu.in) gathers per output element.
#include <algorithm>
#include <initializer_list>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64};

struct TransposeGeometry {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, out;
  int64_t group = 1;
};

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

Expected<TransposeGeometry> geometry(const Node& node, const Shape& x, const Shape& w) {
  if (x.size() < 3 || x.size() > 5) return node_error(node, "input 0 has rank " + std::to_string(x.size()) + ", expected 3 to 5 (N, C, 1 to 3 spatial dims)");
  if (w.size() != x.size()) return node_error(node, "weight rank " + std::to_string(w.size()) + " differs from input rank " + std::to_string(x.size()));
  const size_t r = x.size() - 2;
  TransposeGeometry g;
  g.group = node.attr_int("group", 1);
  if (g.group < 1 || x[1] % g.group != 0 || w[0] != x[1])
    return node_error(node, "input channels " + std::to_string(x[1]) + ", weight " + shape_str(w) + " and group " + std::to_string(g.group) + " do not fit");
  g.in.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != g.kernel)
    return node_error(node, "kernel_shape does not match the weight's spatial dims " + shape_str(g.kernel));
  auto per_axis = [&](const char* name, int64_t fallback, size_t count) -> Expected<std::vector<int64_t>> {
    std::vector<int64_t> v = node.attr_ints(name, std::vector<int64_t>(count, fallback));
    if (v.size() != count) return node_error(node, std::string("attribute ") + name + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(count));
    return v;
  };
  auto strides = per_axis("strides", 1, r), dil = per_axis("dilations", 1, r), outpad = per_axis("output_padding", 0, r),
       pads = per_axis("pads", 0, 2 * r);
  for (auto* e : {&strides, &dil, &outpad, &pads}) if (!*e) return e->status();
  g.strides = *strides;
  g.dilations = *dil;
  for (size_t i = 0; i < r; ++i)
    if (g.strides[i] < 1 || g.dilations[i] < 1) return node_error(node, "strides and dilations must be >= 1");
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "NOTSET" && auto_pad != "VALID") return node_error(node, "unknown auto_pad '" + escape_for_message(auto_pad) + "'");
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  if (!out_shape.empty() && out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != r) return node_error(node, "output_shape has " + std::to_string(out_shape.size()) + " values, expected " + std::to_string(r));
  // Bounded, and the geometry computed in 128 bits: strides of 2^31 over a long input overflowed.
  const int64_t kMaxWindowValue = int64_t{1} << 31;
  for (const std::vector<int64_t>* v : std::initializer_list<const std::vector<int64_t>*>{&g.strides, &g.dilations, &*outpad, &*pads, &out_shape})
    for (int64_t x : *v)
      if (x > kMaxWindowValue || x < -kMaxWindowValue)
        return node_error(node, "strides, dilations, output_padding, pads and output_shape must each be within "
                                "[-2^31, 2^31], got " + std::to_string(x));
  for (size_t i = 0; i < r; ++i) {
    const __int128 natural128 = static_cast<__int128>(g.strides[i]) * (g.in[i] - 1) + (*outpad)[i] +
                                static_cast<__int128>(g.kernel[i] - 1) * g.dilations[i] + 1;
    const __int128 same128 = static_cast<__int128>(g.in[i]) * g.strides[i];
    if (natural128 > (int64_t{1} << 62) || same128 > (int64_t{1} << 62))
      return node_error(node, "output spatial dim " + std::to_string(i) + " would be over 2^62");
    const int64_t natural = static_cast<int64_t>(natural128);
    if (same && !node.has_attr("pads")) {
      const int64_t out = out_shape.empty() ? static_cast<int64_t>(same128) : out_shape[i];
      const int64_t total = natural - out;
      g.pad_begin.push_back(auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2));
      g.out.push_back(out);
    } else {
      const int64_t pb = auto_pad == "VALID" ? 0 : (*pads)[i], pe = auto_pad == "VALID" ? 0 : (*pads)[i + r];
      g.pad_begin.push_back(pb);
      g.out.push_back(out_shape.empty() ? natural - pb - pe : out_shape[i]);
    }
    if (g.out[i] < 1) return node_error(node, "output spatial dim " + std::to_string(i) + " would be " + std::to_string(g.out[i]));
  }
  return g;
}

Status conv_transpose_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  const Value& x = input_value(graph, node, 0);
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {x.dtype}));
  const Shape& w = input_value(graph, node, 1).shape;
  auto g = geometry(node, x.shape, w);
  if (!g) return g.status();
  const int64_t m = w[1] * g->group;
  if (node.input(2) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {x.dtype}));
    if (input_value(graph, node, 2).shape != Shape{m}) return node_error(node, "bias must have shape " + shape_str({m}));
  }
  Shape out = {x.shape[0], m};
  out.insert(out.end(), g->out.begin(), g->out.end());
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

// Pads a geometry to 3 spatial axes (leading axes of size 1), as one rank-3 loop nest.
TransposeGeometry to_rank3(TransposeGeometry g) {
  while (g.in.size() < 3) {
    for (auto* v : {&g.in, &g.kernel, &g.strides, &g.dilations, &g.out}) v->insert(v->begin(), 1);
    g.pad_begin.insert(g.pad_begin.begin(), 0);
  }
  return g;
}

Status conv_transpose_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& w = *inputs[1];
  auto gg = geometry(node, x.shape(), w.shape());
  if (!gg) return gg.status();
  const TransposeGeometry g = to_rank3(*gg);
  const int64_t n = x.shape()[0], c = x.shape()[1], cg = c / g.group, mg = w.shape()[1], m = mg * g.group;
  const int64_t in_sp = g.in[0] * g.in[1] * g.in[2], out_sp = g.out[0] * g.out[1] * g.out[2];
  const int64_t k_sp = g.kernel[0] * g.kernel[1] * g.kernel[2];
  std::vector<double> y(static_cast<size_t>(n * m * out_sp), 0.0);
  std::vector<double> xd = x.to_doubles(), wd = w.to_doubles();
  // Scatter: input element (b, ci, i) times weight (ci, mo, k) lands at i * stride + k * dilation - pad.
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i0 = 0; i0 < g.in[0]; ++i0) for (int64_t i1 = 0; i1 < g.in[1]; ++i1) for (int64_t i2 = 0; i2 < g.in[2]; ++i2) {
        const double xv = xd[static_cast<size_t>((b * c + ci) * in_sp + (i0 * g.in[1] + i1) * g.in[2] + i2)];
        for (int64_t mo = 0; mo < mg; ++mo)
          for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
            const int64_t o0 = i0 * g.strides[0] + k0 * g.dilations[0] - g.pad_begin[0];
            const int64_t o1 = i1 * g.strides[1] + k1 * g.dilations[1] - g.pad_begin[1];
            const int64_t o2 = i2 * g.strides[2] + k2 * g.dilations[2] - g.pad_begin[2];
            if (o0 < 0 || o0 >= g.out[0] || o1 < 0 || o1 >= g.out[1] || o2 < 0 || o2 >= g.out[2]) continue;
            const int64_t oc = (ci / cg) * mg + mo;
            y[static_cast<size_t>((b * m + oc) * out_sp + (o0 * g.out[1] + o1) * g.out[2] + o2)] +=
                xv * wd[static_cast<size_t>((ci * mg + mo) * k_sp + (k0 * g.kernel[1] + k1) * g.kernel[2] + k2)];
          }
      }
  for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
    double v = y[static_cast<size_t>(i)];
    if (inputs.size() > 2 && inputs[2]) v += inputs[2]->get((i / out_sp) % m);
    outputs[0].set(i, v);
  }
  return Status::ok();
}

Expected<Lowering> conv_transpose_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& wv = input_value(graph, node, 1);
  auto gg = geometry(node, x.shape, wv.shape);
  if (!gg) return gg.status();
  const TransposeGeometry g = to_rank3(*gg);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  const bool has_bias = node.input(2) != kNoValue;
  KernelStep k;
  k.template_name = "conv_transpose";
  k.holes = {{"comment", "ConvTranspose " + shape_str(x.shape) + " w " + shape_str(wv.shape) + " -> " + shape_str(y.shape) + " group " + std::to_string(g.group)},
             {"T", dtype_c_type(x.dtype)},
             {"ACC", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"N", int_literal(x.shape[0])}, {"C", int_literal(x.shape[1])},
             {"M", int_literal(y.shape[1])}, {"GROUP", int_literal(g.group)},
             {"ID", int_literal(g.in[0])}, {"IH", int_literal(g.in[1])}, {"IW", int_literal(g.in[2])},
             {"KD", int_literal(g.kernel[0])}, {"KH", int_literal(g.kernel[1])}, {"KW", int_literal(g.kernel[2])},
             {"OD", int_literal(g.out[0])}, {"OH", int_literal(g.out[1])}, {"OW", int_literal(g.out[2])},
             {"SD", int_literal(g.strides[0])}, {"SH", int_literal(g.strides[1])}, {"SW", int_literal(g.strides[2])},
             {"DD", int_literal(g.dilations[0])}, {"DH", int_literal(g.dilations[1])}, {"DW", int_literal(g.dilations[2])},
             {"PD", int_literal(g.pad_begin[0])}, {"PH", int_literal(g.pad_begin[1])}, {"PW", int_literal(g.pad_begin[2])}};
  k.args = {node.inputs[0], node.inputs[1], has_bias ? node.inputs[2] : kNullArg, node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_conv_transpose_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "ConvTranspose";
  def.infer = conv_transpose_infer;
  def.reference = conv_transpose_reference;
  def.lower = conv_transpose_lower;
  registry.add(def);
}

}  // namespace aotc
