// Conv and aotc.FusedConv (Y = act(conv(X, W) + B + Residual)): checks and shape inference, an
// N-D CPU reference (1-, 2- and 3-D through one rank-3 loop), and the lowering to two templates:
// an implicit-GEMM kernel (templates/conv_implicit_gemm.cu.in) and, when every output channel reads
// one input channel (depthwise), a direct kernel (templates/conv_depthwise.cu.in).
// Attribute channels_last=1 (set by opt/layout_nhwc) stores X, Y and the residual as NHWC and W as
// KRSC; such a node lowers to a candidate from ir/ops/conv_configs.h (CUTLASS tensor cores) or to
// the NHWC depthwise kernel, chosen for graph.target.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/layout.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/window.h"

namespace aotc {
namespace {

const std::vector<DType> kConvTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
constexpr size_t kResidualInput = 3;

struct ConvShape {
  int64_t batch = 0, cin = 0, cout = 0, group = 1;
  WindowGeometry geo;  // spatial geometry of the node's own rank
  Shape out;
};

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
  if (has_activation(node) && !default_registry().find(load_activation(node).op_type))
    return node_error(node, "absorbed activation '" + escape_for_message(load_activation(node).op_type) + "' is unknown");
  set_output(graph, node, 0, t, out);
  return Status::ok();
}

// The NCHW reference; `node` is only read for its attributes (channels_last is handled outside).
Status conv_reference_nchw(const Node& node, const ConvShape* csp, const Tensor& x, const Tensor& w, const Tensor* b,
                           const Tensor* r, Tensor& y) {
  const ConvShape* cs = csp;
  WindowGeometry g = to_rank3(cs->geo);
  std::vector<double> xd = x.to_doubles(), wd = w.to_doubles();
  if (node.has_attr("input_max")) {
    // aotc.FusedConv input_max (opt/clip_into_depthwise): min(x, M) on every input element.
    const double m = node.attr_float("input_max", 0.0f);
    for (double& v : xd) v = m < v ? m : v;
  }
  const int64_t cin_g = cs->cin / cs->group, cout_g = cs->cout / cs->group;
  const int64_t in_sp = g.in[0] * g.in[1] * g.in[2], k_sp = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t out_sp = g.out[0] * g.out[1] * g.out[2];
  for (int64_t n = 0; n < cs->batch; ++n)
    for (int64_t oc = 0; oc < cs->cout; ++oc) {
      const int64_t ic0 = (oc / cout_g) * cin_g;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            double acc = 0;
            for (int64_t ic = 0; ic < cin_g; ++ic) {
              const double* xc = &xd[static_cast<size_t>((n * cs->cin + ic0 + ic) * in_sp)];
              const double* wc = &wd[static_cast<size_t>((oc * cin_g + ic) * k_sp)];
              for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
                int64_t id = od * g.strides[0] - g.pad_begin[0] + kd * g.dilations[0];
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
                  int64_t ih = oh * g.strides[1] - g.pad_begin[1] + kh * g.dilations[1];
                  if (ih < 0 || ih >= g.in[1]) continue;
                  for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                    int64_t iw = ow * g.strides[2] - g.pad_begin[2] + kw * g.dilations[2];
                    if (iw < 0 || iw >= g.in[2]) continue;
                    acc += xc[(id * g.in[1] + ih) * g.in[2] + iw] * wc[(kd * g.kernel[1] + kh) * g.kernel[2] + kw];
                  }
                }
              }
            }
            int64_t yi = (n * cs->cout + oc) * out_sp + (od * g.out[1] + oh) * g.out[2] + ow;
            if (b) acc += b->get(oc);
            if (r) acc += r->get(yi);
            y.set(yi, acc);
          }
    }
  return apply_activation_reference(node, y);
}

Status conv_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
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

Status check_activation_lowerable(const Node& node) {
  if (!has_activation(node)) return Status::ok();
  const OpDef* def = default_registry().find(load_activation(node).op_type);
  if (!def || !def->scalar_expr)
    return node_error(node, "absorbed activation '" + escape_for_message(load_activation(node).op_type) +
                                "' has no CUDA expression");
  return Status::ok();
}

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

std::string cutlass_element(DType t) { return t == DType::kBFloat16 ? "cutlass::bfloat16_t" : "cutlass::half_t"; }

// A convolution as one cuBLASLt GEMM over NHWC rows: D[M, K] = A[M, KK] x W[K, KK]^T, W the KRSC
// filter rows, with the node's bias and ReLU in the epilogue and its residual as C (beta 1).
// `a` is the input itself (1x1) or the im2col matrix in scratch.
LoweredStep conv_gemm_step(const Node& node, DType dtype, ValueId a, int64_t m, int64_t kk, int64_t k) {
  const bool has_bias = node.input(2) != kNoValue, has_res = node.input(kResidualInput) != kNoValue;
  MatmulStep mm;
  mm.dtype = dtype;
  mm.a = a;
  mm.b = node.inputs[1];
  mm.d = node.outputs[0];
  mm.m = m;
  mm.n = k;
  mm.k = kk;
  mm.trans_b = true;
  mm.lda = kk;
  mm.ldb = kk;
  mm.ldc = k;
  mm.ldd = k;
  if (has_res) {
    mm.c = node.inputs[kResidualInput];
    mm.beta = 1.0f;
  }
  if (has_bias) mm.bias = node.inputs[2];
  const bool relu = has_activation(node);
  mm.epilogue = has_bias ? (relu ? MatmulStep::Epilogue::kBiasRelu : MatmulStep::Epilogue::kBias)
                         : (relu ? MatmulStep::Epilogue::kRelu : MatmulStep::Epilogue::kNone);
  LoweredStep s;
  s.kind = LoweredStep::Kind::kMatmul;
  s.matmul = mm;
  return s;
}

// The 2-D window geometry holes the NHWC depthwise and im2col templates share.
std::vector<std::pair<std::string, std::string>> window_2d_holes(const ConvShape& cs) {
  const WindowGeometry& g = cs.geo;
  return {{"N", int_literal(cs.batch)}, {"C", int_literal(cs.cin)},
          {"H", int_literal(g.in[0])}, {"W", int_literal(g.in[1])},
          {"KH", int_literal(g.kernel[0])}, {"KW", int_literal(g.kernel[1])},
          {"OH", int_literal(g.out[0])}, {"OW", int_literal(g.out[1])},
          {"SH", int_literal(g.strides[0])}, {"SW", int_literal(g.strides[1])},
          {"PH", int_literal(g.pad_begin[0])}, {"PW", int_literal(g.pad_begin[1])},
          {"DH", int_literal(g.dilations[0])}, {"DW", int_literal(g.dilations[1])}};
}

constexpr int64_t kDepthwisePixelsPerThread = 4;
constexpr int64_t kDepthwiseVecThreadsPerSm = 1024;

// A channels_last node: the candidates, in order of preference, each with its applicability check
// (TVM-style strategy): tensor-core implicit GEMM (ir/ops/conv_configs.h, configuration picked for
// graph.target), then the NHWC depthwise kernel.
Expected<Lowering> conv_lower_channels_last(const Node& node, const Graph& graph, const ConvShape& cs) {
  const Value& xv = input_value(graph, node, 0);
  const bool depthwise = cs.group == cs.cin && cs.cout == cs.cin;
  if (node.has_attr("input_max") && !depthwise)
    return node_error(node, "input_max is implemented by the depthwise NHWC kernels only");
  const Shape out = nchw_to_nhwc(cs.out);
  const WindowGeometry& g = cs.geo;
  const bool has_bias = node.input(2) != kNoValue, has_res = node.input(kResidualInput) != kNoValue;
  std::string comment = node.op_type + " NHWC X " + shape_str(xv.shape) + " W(KRSC) " +
                        shape_str(input_value(graph, node, 1).shape) + " -> " + shape_str(out) + " group " +
                        std::to_string(cs.group) + (has_activation(node) ? " act " + load_activation(node).op_type : "");
  std::vector<int64_t> pads = g.pad_begin;
  pads.insert(pads.end(), g.pad_end.begin(), g.pad_end.end());
  const bool relu_or_none =
      !has_activation(node) || (load_activation(node).op_type == "Relu" && load_activation(node).attrs.empty());
  if (conv_pointwise_gemm_applies(graph.target, xv.dtype, cs.group, cs.cin, cs.cout, g.kernel, g.strides, pads,
                                  relu_or_none)) {
    // Y[N*H*W, K] = X[N*H*W, C] x W[K, C]^T (+ bias) (+ residual as C, beta 1) (then ReLU).
    Lowering l;
    l.steps.push_back(conv_gemm_step(node, xv.dtype, node.inputs[0], cs.batch * g.out[0] * g.out[1], cs.cin, cs.cout));
    return l;
  }
  const int64_t gemm_m = cs.batch * g.out[0] * g.out[1], gemm_k = g.kernel[0] * g.kernel[1] * cs.cin;
  if (conv_im2col_gemm_applies(graph.target, xv.dtype, cs.group, cs.cin, cs.cout, gemm_m, gemm_k, relu_or_none)) {
    // im2col into this node's scratch, then Y[M, K] = A[M, R*S*C] x W[K, R*S*C]^T as above.
    Lowering l;
    l.scratch_bytes = gemm_m * gemm_k * dtype_size(xv.dtype);
    KernelStep im;
    im.template_name = "im2col_nhwc";
    im.holes = {{"comment", "im2col for " + comment},
                {"T", dtype_c_type(xv.dtype)},
                {"IDX", gemm_m * gemm_k < (int64_t{1} << 31) - (int64_t{1} << 20) && xv.numel() < (int64_t{1} << 31) - (int64_t{1} << 20) ? "int" : "long long"}};
    const auto window = window_2d_holes(cs);
    im.holes.insert(im.holes.end(), window.begin(), window.end());
    im.args = {node.inputs[0], kScratchArg};
    im.block = Dim3{256, 1, 1};
    im.grid = grid_for(gemm_m * gemm_k / 8, 256);
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, im, {}});
    l.steps.push_back(conv_gemm_step(node, xv.dtype, kScratchArg, gemm_m, gemm_k, cs.cout));
    return l;
  }
  KernelStep k;
  if (conv_tensor_core_applies(graph.target, xv.dtype, cs.group, cs.cin, cs.cout)) {
    const int64_t gemm_n = cs.cout;
    const ConvKernelConfig& c = pick_conv_config(graph.target, gemm_m, gemm_n);
    const int64_t split_k = pick_split_k(graph.target, c, gemm_m, gemm_n, g.kernel[0] * g.kernel[1] * cs.cin);
    const int64_t tiles = conv_config_tiles(c, gemm_m, gemm_n);
    k.template_name = "cutlass_conv2d_fprop";
    k.holes = {{"comment", comment + " config " + c.name},
               {"ELEMENT", cutlass_element(xv.dtype)},
               {"TB_M", int_literal(c.tb_m)}, {"TB_N", int_literal(c.tb_n)}, {"TB_K", int_literal(c.tb_k)},
               {"WARP_M", int_literal(c.warp_m)}, {"WARP_N", int_literal(c.warp_n)}, {"WARP_K", int_literal(c.warp_k)},
               {"STAGES", int_literal(c.stages)},
               {"SWIZZLE", "1"},
               {"ITERATOR", "kOptimized"},
               {"ALIGN_A", int_literal(kTensorCoreChannelAlign)},
               {"ALIGN_B", int_literal(kTensorCoreChannelAlign)},
               {"ALIGN_C", int_literal(kTensorCoreChannelAlign)},
               {"act_expr", activation_expr(node, graph, "v")}};
    k.library_params = true;
    k.builder_args = {cs.batch, g.in[0], g.in[1], cs.cin, cs.cout, g.kernel[0], g.kernel[1], g.out[0], g.out[1],
                      g.pad_begin[0], g.pad_begin[1], g.strides[0], g.strides[1], g.dilations[0], g.dilations[1],
                      split_k, has_res ? 1 : 0};
    // Only the begin pads reach CUTLASS: the output size is passed explicitly, so a larger end
    // pad only means reads past the input, which the iterators mask.
    k.args = {node.inputs[0], node.inputs[1], has_bias ? node.inputs[2] : kNullArg,
              has_res ? node.inputs[kResidualInput] : kNullArg, node.outputs[0],
              split_k > 1 ? kScratchArg : kNullArg};
    // Informative only: the builder reports the real launch shape.
    k.grid = Dim3{tiles, 1, split_k};
    k.block = Dim3{32 * (c.tb_m / c.warp_m) * (c.tb_n / c.warp_n), 1, 1};
    if (split_k > 1) {
      // Serial split-K: one semaphore per output tile in this node's scratch, zeroed first (one
      // small fill launch; the kernel leaves them zero, but the arena bytes are shared).
      Lowering l;
      l.scratch_bytes = tiles * 4;
      KernelStep z;
      z.template_name = "fill";
      z.holes = {{"comment", "zero the split-K semaphores of " + node.op_type}, {"T", "int"},
                 {"value_bits", "0"}, {"numel", int_literal(tiles)}};
      z.args = {kScratchArg};
      z.block = Dim3{128, 1, 1};
      z.grid = grid_for(tiles, 128);
      k.holes[0].second += " split-K " + std::to_string(split_k);
      l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, z, {}});
      l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
      return l;
    }
  } else if (cs.group == cs.cin && cs.cout == cs.cin) {
    // 16-bit values with C % 8 == 0 and enough work: the vectorised kernel (8 channels x OWT
    // columns per thread, 16-byte accesses, shared input columns loaded once, the 8 x KH x KW
    // filter taps loaded once per thread). OWT is 4, or 2 when 4 would not give one wave of
    // kDepthwiseVecThreadsPerSm threads per SM. With OWT = 1 its per-thread filter load is not
    // amortised and it measured slower than the scalar kernel (H100, MobileNetV2 bs32 late
    // layers: 14x14x384 29 vs 17 us; docs/perf_notes.md v4), so then the scalar kernel runs.
    auto vec_threads = [&](int64_t t) { return cs.batch * g.out[0] * ((g.out[1] + t - 1) / t) * (cs.cin / 8); };
    const int64_t wave = int64_t{graph.target.sm_count} * kDepthwiseVecThreadsPerSm;
    int64_t owt = 4;
    while (owt > 1 && vec_threads(owt) < wave) owt /= 2;
    const bool vec8 = dtype_size(xv.dtype) == 2 && cs.cin % 8 == 0 && owt >= 2;
    k.template_name = vec8 ? "conv_depthwise_nhwc_vec8" : "conv_depthwise_nhwc";
    k.holes = {{"comment", comment + (node.has_attr("input_max") ? " input_max" : "")},
               {"T", dtype_c_type(xv.dtype)},
               {"ACC", compute_type(xv.dtype)},
               {"HAS_INPUT_MAX", node.has_attr("input_max") ? "1" : "0"},
               {"INPUT_MAX", float_literal(node.attr_float("input_max", 0.0f))}};
    std::vector<std::pair<std::string, std::string>> shape_holes = window_2d_holes(cs);
    const std::vector<std::pair<std::string, std::string>> more_holes = {
        {"HAS_BIAS", has_bias ? "1" : "0"},
        {"HAS_RES", has_res ? "1" : "0"},
        {"IDX", shape_numel(out) < (int64_t{1} << 31) - (int64_t{1} << 20) && xv.numel() < (int64_t{1} << 31) - (int64_t{1} << 20) ? "int" : "long long"},
        {"act_expr", activation_expr(node, graph, "v")}};
    shape_holes.insert(shape_holes.end(), more_holes.begin(), more_holes.end());
    k.holes.insert(k.holes.end(), shape_holes.begin(), shape_holes.end());
    k.args = {node.inputs[0], node.inputs[1], has_bias ? node.inputs[2] : kNullArg,
              has_res ? node.inputs[kResidualInput] : kNullArg, node.outputs[0]};
    if (vec8) {
      k.holes.push_back({"OWT", int_literal(owt)});
      k.block = Dim3{256, 1, 1};
      k.grid = grid_for(cs.batch * g.out[0] * ((g.out[1] + owt - 1) / owt) * (cs.cin / 8), 256);
    } else {
      // Channels across a warp, output pixels across warps and blocks, the filter taps in
      // registers for all of a thread's pixels (kDepthwisePixelsPerThread of them while the grid
      // still fills two waves of the target, else 1).
      const int64_t pixels = cs.batch * g.out[0] * g.out[1];
      const int64_t chunks = (cs.cin + 31) / 32;
      int64_t ppt = kDepthwisePixelsPerThread;
      while (ppt > 1 && ((pixels + 8 * ppt - 1) / (8 * ppt)) * chunks < 2 * int64_t{graph.target.sm_count} * 8) ppt /= 2;
      k.block = Dim3{32, 8, 1};
      k.grid = Dim3{std::min<int64_t>((pixels + 8 * ppt - 1) / (8 * ppt), int64_t{1} << 30), chunks, 1};
      if (k.grid.y > 65535) return node_error(node, "too many channels for the depthwise kernel's grid");
    }
  } else {
    return node_error(node, "no NHWC implementation for this convolution on the target (dtype " +
                                dtype_name(xv.dtype) + ", group " + std::to_string(cs.group) + ", C " +
                                std::to_string(cs.cin) + ", K " + std::to_string(cs.cout) + ")");
  }
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

Expected<Lowering> conv_lower(const Node& node, const Graph& graph) {
  AOTC_RETURN_IF_ERROR(check_activation_lowerable(node));
  const Value& xv = input_value(graph, node, 0);
  auto cs = conv_shape(node, xv.shape, input_value(graph, node, 1).shape);
  if (!cs) return cs.status();
  if (channels_last(node)) return conv_lower_channels_last(node, graph, *cs);
  if (node.has_attr("input_max"))
    return node_error(node, "input_max is implemented by the depthwise NHWC kernels only");
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
