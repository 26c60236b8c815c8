// Conv and aotc.FusedConv (Y = act(conv(X, W) + B + Residual)): checks and shape inference, an
// N-D CPU reference (1-, 2- and 3-D through one rank-3 loop), and the lowering to two templates:
// an implicit-GEMM kernel (templates/conv_implicit_gemm.cu.in) and, when every output channel reads
// one input channel (depthwise), a direct kernel (templates/conv_depthwise.cu.in).
// Attribute channels_last=1 (set by opt/layout_nhwc) stores X, Y and the residual as NHWC and W as
// KRSC; such a node lowers in ir/ops/conv_nhwc.cc (cuBLASLt, CUTLASS tensor-core or SIMT implicit
// GEMM, NHWC depthwise kernels), chosen for graph.target.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/layout.h"
#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/window.h"
#include "ir/parallel.h"

namespace aotc {
namespace {

const std::vector<DType> kConvTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
constexpr size_t kResidualInput = kConvResidualInput;

bool is_fused(const Node& node) { return node.op_type == "FusedConv"; }
// Everything infer checks about the inputs, shared with reference and lower (which see the same
// shapes, already validated, but recompute rather than trust attributes written elsewhere).
Expected<ConvShape> conv_shape(const Node& node, const Shape& x_physical, const Shape& w_physical) {
  ConvShape cs;
  if (channels_last(node) && (x_physical.size() != 4 || w_physical.size() != 4))
    return node_error(node, "channels_last convolutions are 2-D (rank 4), got X rank " + std::to_string(x_physical.size()));
  const Shape x = channels_last(node) ? nhwc_to_nchw(x_physical) : x_physical;
  const Shape w = channels_last(node) ? nhwc_to_nchw(w_physical) : w_physical;
  if (x.size() < 3) return node_error(node, "input 0 (X) has rank " + std::to_string(x.size()) + ", expected >= 3 (N, C, spatial...)");
  if (w.size() != x.size())
    return node_error(node, "input 1 (W) has rank " + std::to_string(w.size()) + ", X has rank " + std::to_string(x.size()));
  cs.batch = x[0];
  cs.cin = x[1];
  cs.cout = w[0];
  cs.group = node.attr_int("group", 1);
  if (cs.group <= 0) return node_error(node, "group " + std::to_string(cs.group) + " must be positive");
  if (cs.cin % cs.group != 0)
    return node_error(node, "input channels " + std::to_string(cs.cin) + " are not divisible by group " + std::to_string(cs.group));
  if (cs.cout % cs.group != 0)
    return node_error(node, "output channels " + std::to_string(cs.cout) + " are not divisible by group " + std::to_string(cs.group));
  if (w[1] != cs.cin / cs.group)
    return node_error(node, "W has " + std::to_string(w[1]) + " input channels per group, X gives " +
                                std::to_string(cs.cin / cs.group) + " (C " + std::to_string(cs.cin) + " / group " +
                                std::to_string(cs.group) + ")");
  std::vector<int64_t> in(x.begin() + 2, x.end());
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel)
    return node_error(node, "kernel_shape attribute does not match W's spatial dims " + shape_str(kernel));
  auto geo = resolve_window(node, in, kernel, WindowOptions{});
  if (!geo) return geo.status();
  cs.geo = *geo;
  cs.out = {cs.batch, cs.cout};
  cs.out.insert(cs.out.end(), cs.geo.out.begin(), cs.geo.out.end());
  return cs;
}

}  // namespace

Expected<WindowGeometry> absorbed_pool_geometry(const Node& node, int64_t conv_h, int64_t conv_w) {
  const Node pool = load_pool(node);
  if (pool.op_type != "MaxPool") return node_error(node, "absorbed pool '" + escape_for_message(pool.op_type) + "' is not MaxPool");
  if (!pool.has_attr("kernel_shape") || pool.attr_ints("kernel_shape").size() != 2)
    return node_error(node, "an absorbed MaxPool needs a 2-D kernel_shape");
  for (int64_t d : pool.attr_ints("dilations", {1, 1}))
    if (d != 1) return node_error(node, "an absorbed MaxPool has no dilations");
  WindowOptions options;
  options.allow_ceil_mode = true;
  return resolve_window(pool, {conv_h, conv_w}, pool.attr_ints("kernel_shape"), options);
}

namespace {

// The NCHW output shape of an absorbed max pool over the conv output `conv` (NCHW).
Expected<Shape> pooled_shape(const Node& node, const Shape& conv) {
  if (conv.size() != 4) return node_error(node, "an absorbed MaxPool needs a 2-D convolution");
  auto geo = absorbed_pool_geometry(node, conv[2], conv[3]);
  if (!geo) return geo.status();
  return Shape{conv[0], conv[1], geo->out[0], geo->out[1]};
}

Status conv_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, is_fused(node) ? 4 : 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kConvTypes));
  DType t = input_value(graph, node, 0).dtype;
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.input(i) != kNoValue) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {t}));
  auto cs = conv_shape(node, input_value(graph, node, 0).shape, input_value(graph, node, 1).shape);
  if (!cs) return cs.status();
  if (node.input(2) != kNoValue && input_value(graph, node, 2).shape != Shape{cs->cout})
    return node_error(node, "input 2 (B) has shape " + shape_str(input_value(graph, node, 2).shape) +
                                ", expected " + std::to_string(cs->cout));
  const Shape out = channels_last(node) ? nchw_to_nhwc(cs->out) : cs->out;
  if (node.input(kResidualInput) != kNoValue && input_value(graph, node, kResidualInput).shape != out)
    return node_error(node, "input 3 (Residual) has shape " + shape_str(input_value(graph, node, kResidualInput).shape) +
                                ", expected the output shape " + shape_str(out));
  AOTC_RETURN_IF_ERROR(check_activation_known(node, node));
  if (has_quantize(node) && !has_pool(node)) return node_error(node, "an absorbed QuantizeLinear needs an absorbed pool");
  if (has_pool(node)) {
    auto pooled = pooled_shape(node, cs->out);
    if (!pooled) return pooled.status();
    if (node.input(kResidualInput) != kNoValue) return node_error(node, "an absorbed pool with a residual input is not supported");
    DType stored = t;
    if (has_quantize(node)) {
      stored = load_quantize(node).dtype;
      if (stored != DType::kInt8 && stored != DType::kUInt8)
        return node_error(node, "an absorbed QuantizeLinear writes int8 or uint8, not " + dtype_name(stored));
    }
    set_output(graph, node, 0, stored, channels_last(node) ? nchw_to_nhwc(*pooled) : *pooled);
    return Status::ok();
  }
  set_output(graph, node, 0, t, out);
  return Status::ok();
}

// The NCHW reference; `node` is only read for its attributes (channels_last is handled outside).
Status conv_reference_nchw(const Node& node, const ConvShape* csp, const Tensor& x, const Tensor& w, const Tensor* b,
                           const Tensor* r, Tensor& y) {
  const ConvShape* cs = csp;
  WindowGeometry g = to_rank3(cs->geo);
  std::vector<double> xd, wd = w.to_doubles();
  if (has_input_activation(node)) {
    // aotc.FusedConv input_activation (opt/activation_into_depthwise): the activation's reference
    // in X's type on every input element; the taps outside the image stay zero (skipped below).
    Tensor xa = x;
    AOTC_RETURN_IF_ERROR(apply_input_activation_reference(node, xa));
    xd = xa.to_doubles();
  } else {
    xd = x.to_doubles();
  }
  if (node.has_attr("input_max")) {
    // aotc.FusedConv input_max (opt/clip_into_depthwise): min(x, M) on every input element.
    const double m = node.attr_float("input_max", 0.0f);
    for (double& v : xd) v = m < v ? m : v;
  }
  const int64_t cin_g = cs->cin / cs->group, cout_g = cs->cout / cs->group;
  const int64_t in_sp = g.in[0] * g.in[1] * g.in[2], k_sp = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t out_sp = g.out[0] * g.out[1] * g.out[2];
  // Each output plane (n, oc) accumulates its terms in the order of the textbook loop (input
  // channel, then kd, kh, kw; taps outside the input skipped), tap by tap over the whole plane so
  // the innermost loop runs along a row; planes are independent, so they run in parallel and the
  // result is the same as a serial loop's, bit for bit.
  parallel_for(cs->batch * cs->cout, cin_g * k_sp * out_sp, [&](int64_t begin, int64_t end) {
    std::vector<double> plane(static_cast<size_t>(out_sp));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / cs->cout, oc = item % cs->cout;
      const int64_t ic0 = (oc / cout_g) * cin_g;
      std::fill(plane.begin(), plane.end(), 0.0);
      for (int64_t ic = 0; ic < cin_g; ++ic)
        accumulate_conv_channel(g, &xd[static_cast<size_t>((n * cs->cin + ic0 + ic) * in_sp)],
                                &wd[static_cast<size_t>((oc * cin_g + ic) * k_sp)], plane.data());
      const int64_t y0 = (n * cs->cout + oc) * out_sp;
      for (int64_t p = 0; p < out_sp; ++p) {
        double acc = plane[static_cast<size_t>(p)];
        if (b) acc += b->get(oc);
        if (r) acc += r->get(y0 + p);
        y.set(y0 + p, acc);
      }
    }
  });
  return apply_activation_reference(node, y);
}

Status conv_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs);

// An absorbed max pool: the conv output (rounded to its dtype, as a separate Conv would store it)
// through MaxPool's own reference.
Status conv_pool_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  Node conv = node;
  for (auto it = conv.attrs.begin(); it != conv.attrs.end();)
    it = it->first == "pool" || it->first.rfind("pool.", 0) == 0 ? conv.attrs.erase(it) : std::next(it);
  auto cs = conv_shape(conv, inputs[0]->shape(), inputs[1]->shape());
  if (!cs) return cs.status();
  std::vector<Tensor> full = {Tensor(outputs[0].dtype(), channels_last(node) ? nchw_to_nhwc(cs->out) : cs->out)};
  AOTC_RETURN_IF_ERROR(conv_reference(conv, inputs, full));
  Node pool = load_pool(node);
  if (channels_last(node)) pool.attrs["channels_last"] = Attribute::of_int(1);
  const OpDef* def = default_registry().find(pool.op_type);
  if (!def || !def->reference) return node_error(node, "absorbed pool '" + escape_for_message(pool.op_type) + "' has no reference");
  return def->reference(pool, {&full[0]}, outputs);
}

// An absorbed QuantizeLinear (opt/fuse_stem_quantize): the convolution and pool's output in the
// convolution's own type, as the two nodes stored it, through QuantizeLinear's reference.
Status conv_quantize_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const AbsorbedQuantize q = load_quantize(node);
  std::vector<Tensor> stored = {Tensor(inputs[0]->dtype(), outputs[0].shape())};
  AOTC_RETURN_IF_ERROR(conv_reference(without_quantize(node), inputs, stored));
  Tensor scale(DType::kFloat32, Shape{}), zero_point(q.dtype, Shape{});
  scale.set(0, q.scale);
  zero_point.set_int(0, q.zero_point);
  Node quantize;
  quantize.name = node.name;
  quantize.op_type = "QuantizeLinear";
  const OpDef* def = default_registry().find("QuantizeLinear");
  if (!def || !def->reference) return node_error(node, "QuantizeLinear has no reference");
  return def->reference(quantize, {&stored[0], &scale, &zero_point}, outputs);
}

Status conv_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  if (has_quantize(node)) return conv_quantize_reference(node, inputs, outputs);
  if (has_pool(node)) return conv_pool_reference(node, inputs, outputs);
  const Tensor* b = inputs.size() > 2 ? inputs[2] : nullptr;
  const Tensor* r = inputs.size() > kResidualInput ? inputs[kResidualInput] : nullptr;
  auto cs = conv_shape(node, inputs[0]->shape(), inputs[1]->shape());
  if (!cs) return cs.status();
  if (!channels_last(node)) return conv_reference_nchw(node, &*cs, *inputs[0], *inputs[1], b, r, outputs[0]);
  Tensor x = permute_channels(*inputs[0], true), w = permute_channels(*inputs[1], true);
  Tensor rn = r ? permute_channels(*r, true) : Tensor();
  Tensor y(outputs[0].dtype(), cs->out);
  AOTC_RETURN_IF_ERROR(conv_reference_nchw(node, &*cs, x, w, b, r ? &rn : nullptr, y));
  outputs[0] = permute_channels(y, false);
  return Status::ok();
}

std::string compute_type(DType t) { return t == DType::kFloat64 ? "double" : "float"; }

// Implicit-GEMM tile configurations: (BM, BN, TM, TN), 256 threads each. The short one keeps
// threads busy when a group has few output channels; the large one halves shared-memory traffic
// per FMA but only pays off when there are enough tiles to fill the GPU (kLargeTileMinBlocks,
// about two waves on an H100/H200's 132 SMs).
struct TileConfig { int64_t bm, bn, tm, tn; };
constexpr TileConfig kWideTile{64, 64, 4, 4};
constexpr TileConfig kShortTile{16, 128, 1, 8};
constexpr TileConfig kLargeTile{128, 128, 8, 8};
constexpr int64_t kLargeTileMinBlocks = 264;
constexpr int64_t kConvBK = 16;

TileConfig pick_tile(int64_t cout_per_group, int64_t gemm_n, int64_t groups) {
  if (cout_per_group <= 16) return kShortTile;
  const int64_t large_blocks = ((cout_per_group + 127) / 128) * ((gemm_n + 127) / 128) * groups;
  if (cout_per_group >= 128 && large_blocks >= kLargeTileMinBlocks) return kLargeTile;
  return kWideTile;
}

Expected<Lowering> conv_lower(const Node& node, const Graph& graph) {
  AOTC_RETURN_IF_ERROR(check_activation_lowerable(node, node));
  const Value& xv = input_value(graph, node, 0);
  auto cs = conv_shape(node, xv.shape, input_value(graph, node, 1).shape);
  if (!cs) return cs.status();
  // An empty output (batch 0, a zero-sized window result): nothing to compute, no launch (the tile
  // arithmetic below divides by the tile count; a fuzz find: batch 0 reached pick_split_k).
  if (shape_numel(cs->out) == 0) return Lowering{};
  if (channels_last(node)) return conv_lower_channels_last(node, graph, *cs);
  if (conv_asked_to_copy_slab(node, graph))  // opt/slab_into_producer: the NHWC cluster kernel's only
    return node_error(node, "a Concat's slab_copied is implemented by the cluster split-K convolution only");
  if (has_pool(node)) return node_error(node, "an absorbed pool runs only on the channels_last stem kernel");
  if (node.has_attr("input_max") || has_input_activation(node))
    return node_error(node, "input_max and input_activation are implemented by the depthwise NHWC kernels only");
  if (cs->geo.rank() > 3)
    return node_error(node, "the GPU kernel supports 1-, 2- and 3-D convolutions, not " + std::to_string(cs->geo.rank()) + "-D");
  WindowGeometry g = to_rank3(cs->geo);
  const int64_t cin_g = cs->cin / cs->group, cout_g = cs->cout / cs->group;
  const bool depthwise = cin_g == 1;
  const bool has_bias = node.input(2) != kNoValue, has_res = node.input(kResidualInput) != kNoValue;
  KernelStep k;
  k.template_name = depthwise ? "conv_depthwise" : "conv_implicit_gemm";
  std::string comment = node.op_type + (depthwise ? " (depthwise)" : " (implicit GEMM)") + " X " +
                        shape_str(xv.shape) + " W " + shape_str(input_value(graph, node, 1).shape) + " -> " +
                        shape_str(cs->out) + " group " + std::to_string(cs->group) +
                        (has_activation(node) ? " act " + load_activation(node).op_type : "");
  k.holes = {{"comment", comment},
             {"T", dtype_c_type(xv.dtype)},
             {"ACC", compute_type(xv.dtype)},
             {"N", int_literal(cs->batch)},
             {"C", int_literal(cs->cin)},
             {"K", int_literal(cs->cout)},
             {"G", int_literal(cs->group)},
             {"D", int_literal(g.in[0])}, {"H", int_literal(g.in[1])}, {"W", int_literal(g.in[2])},
             {"KD", int_literal(g.kernel[0])}, {"KH", int_literal(g.kernel[1])}, {"KW", int_literal(g.kernel[2])},
             {"OD", int_literal(g.out[0])}, {"OH", int_literal(g.out[1])}, {"OW", int_literal(g.out[2])},
             {"SD", int_literal(g.strides[0])}, {"SH", int_literal(g.strides[1])}, {"SW", int_literal(g.strides[2])},
             {"PD", int_literal(g.pad_begin[0])}, {"PH", int_literal(g.pad_begin[1])}, {"PW", int_literal(g.pad_begin[2])},
             {"DD", int_literal(g.dilations[0])}, {"DH", int_literal(g.dilations[1])}, {"DW", int_literal(g.dilations[2])},
             {"HAS_BIAS", has_bias ? "1" : "0"},
             {"HAS_RES", has_res ? "1" : "0"},
             {"act_expr", activation_expr(node, graph, "v")}};
  k.args = {node.inputs[0], node.inputs[1], has_bias ? node.inputs[2] : kNullArg,
            has_res ? node.inputs[kResidualInput] : kNullArg, node.outputs[0]};
  const int64_t out_sp = g.out[0] * g.out[1] * g.out[2];
  // 32-bit index arithmetic is much cheaper; it is exact while every tensor stays below 2^31
  // elements (the margin covers the loop bound overshooting by one tile).
  const int64_t largest = std::max({xv.numel(), input_value(graph, node, 1).numel(), shape_numel(cs->out)});
  k.holes.push_back({"IDX", largest < (int64_t{1} << 31) - (int64_t{1} << 20) ? "int" : "long long"});
  if (depthwise) {
    k.block = Dim3{256, 1, 1};
    k.grid = grid_for(cs->batch * cs->cout * out_sp, 256);
  } else {
    const int64_t gemm_n = cs->batch * out_sp;
    const TileConfig t = pick_tile(cout_g, gemm_n, cs->group);
    k.holes.push_back({"BM", int_literal(t.bm)});
    k.holes.push_back({"BN", int_literal(t.bn)});
    k.holes.push_back({"BK", int_literal(kConvBK)});
    k.holes.push_back({"TM", int_literal(t.tm)});
    k.holes.push_back({"TN", int_literal(t.tn)});
    k.block = Dim3{(t.bm / t.tm) * (t.bn / t.tn), 1, 1};
    k.grid = Dim3{(gemm_n + t.bn - 1) / t.bn, (cout_g + t.bm - 1) / t.bm, cs->group};
    if (k.grid.x > 2147483647LL || k.grid.y > 65535 || k.grid.z > 65535)
      return node_error(node, "convolution too large for one launch (grid " + std::to_string(k.grid.x) + "x" +
                                  std::to_string(k.grid.y) + "x" + std::to_string(k.grid.z) + ")");
  }
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_conv_ops(OpRegistry& registry) {
  for (const char* domain : {"", "aotc"}) {
    OpDef def;
    def.op_type = std::string(domain).empty() ? "Conv" : "FusedConv";
    def.domain = domain;
    def.infer = conv_infer;
    def.reference = conv_reference;
    def.lower = conv_lower;
    registry.add(def);
  }
}

}  // namespace aotc
