// DeformConv-19/22 (2-D): a convolution whose kernel taps are moved by learned offsets and scaled
// by an optional mask. For output (n, o, i, j) and tap (a, b) of input channel c (of o's group):
//   y = bias[o] + sum W[o, c', a, b] * mask[n, g, a, b, i, j] * X~[n, c](h, w),
//   h = i * stride_h - pad_top  + a * dilation_h + offset[n, g, a, b, 0, i, j]
//   w = j * stride_w - pad_left + b * dilation_w + offset[n, g, a, b, 1, i, j]
// with g = c / (C / offset_group) and X~ the bilinear interpolation of the input plane at (h, w),
// zero outside it (what the spec's GridSample with align_corners = 1 and zero padding samples).
// Offsets are [N, offset_group * kH * kW * 2, oH, oW] (channel ((g * kH + a) * kW + b) * 2 + {h, w}),
// the mask [N, offset_group * kH * kW, oH, oW]. One thread per output element on the GPU.
#include <cmath>
#include <string>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
enum { kX = 0, kW = 1, kOffset = 2, kBias = 3, kMask = 4 };

struct Dims {
  int64_t n = 0, c = 0, h = 0, w = 0, oc = 0, cg = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, group = 1, offset_group = 1;
};

Expected<Dims> dims_of(const Node& node, const std::vector<const Shape*>& in) {
  const Shape &x = *in[kX], &wt = *in[kW], &off = *in[kOffset];
  if (x.size() != 4) return node_error(node, "only 2-D deformable convolution ([N, C, H, W] input) is supported, got " + shape_str(x));
  if (wt.size() != 4) return node_error(node, "W must be [M, C / group, kH, kW], got " + shape_str(wt));
  Dims d;
  d.n = x[0], d.c = x[1], d.h = x[2], d.w = x[3], d.oc = wt[0], d.cg = wt[1];
  d.group = node.attr_int("group", 1);
  d.offset_group = node.attr_int("offset_group", 1);
  // group and offset_group are any int64 of the model: compared by division, not multiplied (a fuzz
  // find: W's C / group 4611686018427387904 * group 12 overflowed).
  if (d.group < 1 || d.offset_group < 1 || d.c % d.group != 0 || d.c / d.group != d.cg || d.oc % d.group != 0 ||
      d.c % d.offset_group != 0)
    return node_error(node, "channels do not split: C " + std::to_string(d.c) + ", W " + shape_str(wt) + ", group " +
                                std::to_string(d.group) + ", offset_group " + std::to_string(d.offset_group));
  const std::vector<int64_t> k = node.attr_ints("kernel_shape", {wt[2], wt[3]});
  const std::vector<int64_t> s = node.attr_ints("strides", {1, 1}), dl = node.attr_ints("dilations", {1, 1});
  const std::vector<int64_t> p = node.attr_ints("pads", {0, 0, 0, 0});
  if (k.size() != 2 || k[0] != wt[2] || k[1] != wt[3] || s.size() != 2 || dl.size() != 2 || p.size() != 4)
    return node_error(node, "kernel_shape / strides / dilations / pads do not fit a 2-D kernel of " + shape_str(wt));
  for (int64_t v : {s[0], s[1], dl[0], dl[1], k[0], k[1]})
    if (v < 1 || v > (int64_t{1} << 20)) return node_error(node, "kernel_shape, strides and dilations must be in [1, 2^20]");
  for (int64_t v : p)
    if (v < 0 || v > (int64_t{1} << 20)) return node_error(node, "pads must be in [0, 2^20]");
  d.kh = k[0], d.kw = k[1], d.sh = s[0], d.sw = s[1], d.dh = dl[0], d.dw = dl[1], d.pt = p[0], d.pl = p[1];
  const int64_t span_h = (d.kh - 1) * d.dh + 1, span_w = (d.kw - 1) * d.dw + 1;
  d.oh = (d.h + p[0] + p[2] - span_h) / d.sh + 1;
  d.ow = (d.w + p[1] + p[3] - span_w) / d.sw + 1;
  if (d.h + p[0] + p[2] < span_h || d.w + p[1] + p[3] < span_w || d.oh < 1 || d.ow < 1)
    return node_error(node, "the kernel does not fit the padded input");
  int64_t taps = 0, off_c = 0;  // offset_group * kH * kW (* 2): checked, each factor is the model's
  if (__builtin_mul_overflow(d.kh, d.kw, &taps) || __builtin_mul_overflow(taps, d.offset_group, &taps) ||
      __builtin_mul_overflow(taps, int64_t{2}, &off_c))
    return node_error(node, "offset_group * kernel taps overflows int64");
  const Shape off_want = {d.n, off_c, d.oh, d.ow};
  if (off != off_want) return node_error(node, "offset must be " + shape_str(off_want) + ", got " + shape_str(off));
  if (in[kBias] && *in[kBias] != Shape{d.oc})
    return node_error(node, "B must be [" + std::to_string(d.oc) + "], got " + shape_str(*in[kBias]));
  const Shape mask_want = {d.n, taps, d.oh, d.ow};
  if (in[kMask] && *in[kMask] != mask_want)
    return node_error(node, "mask must be " + shape_str(mask_want) + ", got " + shape_str(*in[kMask]));
  return d;
}

Status deform_conv_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 5));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, kX, kFloatTypes));
  const DType t = input_value(graph, node, kX).dtype;
  for (size_t i = 1; i < 5; ++i)
    if (node.input(i) != kNoValue && graph.value(node.inputs[i]).dtype != t)
      return node_error(node, "input " + std::to_string(i) + " must have X's dtype " + dtype_name(t));
  auto d = dims_of(node, optional_input_shapes(graph, node, 5));
  if (!d) return d.status();
  set_output(graph, node, 0, t, {d->n, d->oc, d->oh, d->ow});
  return Status::ok();
}

Status deform_conv_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  std::vector<Shape> shapes(5);
  std::vector<const Shape*> ptrs(5, nullptr);
  for (size_t i = 0; i < 5 && i < in.size(); ++i)
    if (in[i]) shapes[i] = in[i]->shape(), ptrs[i] = &shapes[i];
  auto dd = dims_of(node, ptrs);
  if (!dd) return dd.status();
  const Dims& d = *dd;
  const Tensor &x = *in[kX], &w = *in[kW], &off = *in[kOffset];
  const Tensor* bias = in.size() > kBias ? in[kBias] : nullptr;
  const Tensor* mask = in.size() > kMask ? in[kMask] : nullptr;
  const int64_t oc_per_group = d.oc / d.group, c_per_og = d.c / d.offset_group;
  auto sample = [&](int64_t n, int64_t c, double h, double wc) {
    const double h0 = std::floor(h), w0 = std::floor(wc);
    double v = 0;
    for (int dy = 0; dy < 2; ++dy)
      for (int dx = 0; dx < 2; ++dx) {
        const int64_t yy = static_cast<int64_t>(h0) + dy, xx = static_cast<int64_t>(w0) + dx;
        if (yy < 0 || yy >= d.h || xx < 0 || xx >= d.w) continue;
        const double wy = dy ? h - h0 : 1 - (h - h0), wx = dx ? wc - w0 : 1 - (wc - w0);
        v += wy * wx * x.get(((n * d.c + c) * d.h + yy) * d.w + xx);
      }
    return v;
  };
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t o = 0; o < d.oc; ++o)
      for (int64_t i = 0; i < d.oh; ++i)
        for (int64_t j = 0; j < d.ow; ++j) {
          double acc = bias ? bias->get(o) : 0.0;
          const int64_t g = o / oc_per_group;
          for (int64_t cc = 0; cc < d.cg; ++cc) {
            const int64_t c = g * d.cg + cc, og = c / c_per_og;
            for (int64_t a = 0; a < d.kh; ++a)
              for (int64_t b = 0; b < d.kw; ++b) {
                const int64_t tap = (og * d.kh + a) * d.kw + b;
                const double oy = off.get(((n * off.shape()[1] + tap * 2) * d.oh + i) * d.ow + j);
                const double ox = off.get(((n * off.shape()[1] + tap * 2 + 1) * d.oh + i) * d.ow + j);
                const double m = mask ? mask->get(((n * mask->shape()[1] + tap) * d.oh + i) * d.ow + j) : 1.0;
                const double hy = static_cast<double>(i * d.sh - d.pt + a * d.dh) + oy;
                const double wx = static_cast<double>(j * d.sw - d.pl + b * d.dw) + ox;
                acc += w.get(((o * d.cg + cc) * d.kh + a) * d.kw + b) * m * sample(n, c, hy, wx);
              }
          }
          out[0].set(((n * d.oc + o) * d.oh + i) * d.ow + j, acc);
        }
  return Status::ok();
}

Expected<Lowering> deform_conv_lower(const Node& node, const Graph& graph) {
  auto dd = dims_of(node, optional_input_shapes(graph, node, 5));
  if (!dd) return dd.status();
  const Dims& d = *dd;
  const DType t = input_value(graph, node, kX).dtype;
  Lowering low;
  const int64_t total = d.n * d.oc * d.oh * d.ow;
  if (total == 0) return low;
  auto arg = [&](size_t i) { return node.input(i) == kNoValue ? kNullArg : node.inputs[i]; };
  KernelStep k;
  k.template_name = "deform_conv";
  k.holes = {{"comment", "DeformConv " + shape_str(input_value(graph, node, kX).shape) + " -> " +
                             shape_str({d.n, d.oc, d.oh, d.ow}) + " " + dtype_name(t)},
             {"T", dtype_c_type(t)},
             {"CT", t == DType::kFloat64 ? "double" : "float"},
             {"TOTAL", int_literal(total)},
             {"C", int_literal(d.c)}, {"H", int_literal(d.h)}, {"W", int_literal(d.w)},
             {"OC", int_literal(d.oc)}, {"CG", int_literal(d.cg)}, {"KH", int_literal(d.kh)}, {"KW", int_literal(d.kw)},
             {"OH", int_literal(d.oh)}, {"OW", int_literal(d.ow)}, {"SH", int_literal(d.sh)}, {"SW", int_literal(d.sw)},
             {"DH", int_literal(d.dh)}, {"DW", int_literal(d.dw)}, {"PT", int_literal(d.pt)}, {"PL", int_literal(d.pl)},
             {"OC_PER_GROUP", int_literal(d.oc / d.group)}, {"C_PER_OG", int_literal(d.c / d.offset_group)},
             {"OG", int_literal(d.offset_group)},
             {"HAS_BIAS", node.input(kBias) != kNoValue ? "true" : "false"},
             {"HAS_MASK", node.input(kMask) != kNoValue ? "true" : "false"}};
  k.args = {node.inputs[kX], node.inputs[kW], node.inputs[kOffset], arg(kBias), arg(kMask), node.outputs[0]};
  k.block = Dim3{128, 1, 1};
  k.grid = grid_for(total, 128);
  low.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return low;
}

}  // namespace

void register_deform_conv_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "DeformConv";
  def.infer = deform_conv_infer;
  def.reference = deform_conv_reference;
  def.lower = deform_conv_lower;
  registry.add(def);
}

}  // namespace aotc
