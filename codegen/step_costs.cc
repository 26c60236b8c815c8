// Compile-time FLOPs and bytes of launch steps (see step_costs.h).
#include "codegen/step_costs.h"

#include <string>

#include "ir/ops/conv_nhwc.h"
#include "ir/ops/epilogue.h"

namespace aotc {
namespace {

bool reads(const KernelStep& k, ValueId id) {
  for (ValueId a : k.args)
    if (a == id) return true;
  return false;
}

// Library conv kernels (templates/cutlass_conv2d_fprop.cu.in): builder args N, H, W, C, K, R, S,
// P, Q, ... (ir/ops/conv_nhwc.cc); group 1.
constexpr size_t kConvBuilderArgs = 9;

}  // namespace

int64_t matmul_step_flops(const MatmulStep& m) { return 2 * m.m * m.n * m.k * m.batch; }

int64_t matmul_step_bytes(const MatmulStep& m) {
  const int64_t e = dtype_size(m.dtype), ed = m.d_dtype == DType::kUndefined ? e : dtype_size(m.d_dtype);
  auto batched = [&](int64_t stride) { return stride != 0 ? m.batch : 1; };
  int64_t in = m.m * m.k * batched(m.stride_a) + m.k * m.n * batched(m.stride_b);
  int64_t out = m.m * m.n * m.batch;
  if (m.c != kNullArg) out += m.m * m.n * batched(m.stride_c);
  if (m.bias != kNullArg) out += m.n;
  return in * e + out * ed;
}

int64_t kernel_step_bytes(const Graph& graph, const KernelStep& k, int64_t scratch_bytes) {
  int64_t bytes = 0;
  for (ValueId a : k.args) {
    if (a == kScratchArg) {
      bytes += scratch_bytes;
    } else if (a >= 0 && static_cast<size_t>(a) < graph.values.size()) {
      // A view's bytes are its root's (the memory plan's alias_of): for a stem conv reading an
      // absorbed PackNhwc, the NCHW source it actually reads.
      ValueId root = a;
      while (graph.value(root).alias_of != kNoValue) root = graph.value(root).alias_of;
      bytes += graph.value(root).byte_size();
    }
  }
  return bytes;
}

int64_t kernel_step_flops(const Node& node, const Graph& graph, const KernelStep& k) {
  // The CUTLASS GEMM (templates/cutlass_gemm.cu.in): builder args M, N, K, ... (ir/ops/gemm.cc).
  // The sm_90a GEMM (templates/cutlass_gemm_sm90.cu.in) too: builder args M, N, K, ...
  if (k.library_params && (k.template_name == "cutlass_gemm" || k.template_name == "cutlass_gemm_sm90"))
    return k.builder_args.size() >= 3 ? 2 * k.builder_args[0] * k.builder_args[1] * k.builder_args[2] : 0;
  // The one-row GEMM (templates/gemv_rows.cu.in): A [M][K] x B [N][K]^T.
  if (k.template_name == "gemv_rows" && node.inputs.size() >= 2) {
    const Shape& b = graph.value(node.inputs[1]).shape;
    if (b.size() != 2 || b[1] == 0) return 0;
    return 2 * b[0] * b[1] * (graph.value(node.inputs[0]).numel() / b[1]);
  }
  // A depthwise + pointwise pair (templates/conv_dw_pw_nhwc.cu.in, ir/ops/conv_dw_pw.cc): the
  // depthwise part's 2*KH*KW per element of the [N, OH, OW, C] it keeps on chip, and the
  // pointwise part's 2*C per output element.
  if (k.template_name == "conv_dw_pw_nhwc" && node.inputs.size() >= 4) {
    const Shape& wdw = graph.value(node.inputs[1]).shape;  // [KH, KW, C]
    const Value& y = graph.value(node.outputs[0]);
    if (wdw.size() != 3 || y.shape.size() != 4 || y.shape[3] == 0) return 0;
    const int64_t pixels = y.numel() / y.shape[3];
    return 2 * pixels * wdw[2] * wdw[0] * wdw[1] + 2 * y.numel() * wdw[2];
  }
  // Two pointwise convolutions (templates/conv_pw_pair_nhwc.cu.in, ir/ops/conv_pw_pair.cc): 2*K1 per
  // element of Y1 and 2*N1 per element of Y2.
  if (k.template_name == "conv_pw_pair_nhwc" && node.inputs.size() >= 5 && node.outputs.size() == 2) {
    const Value& x = graph.value(node.inputs[0]);
    const Value& y1 = graph.value(node.outputs[0]);
    if (x.shape.size() != 4 || y1.shape.size() != 4) return 0;
    return 2 * y1.numel() * x.shape[3] + 2 * graph.value(node.outputs[1]).numel() * y1.shape[3];
  }
  // The sm_90a int8 convolution (aotc.QLinearConv or QLinearMatMul as a 1x1 convolution): its
  // builder args N H W C K R S pad_h pad_w pad_h_end pad_w_end stride_h stride_w dilation_h
  // dilation_w ..., P and Q from them.
  if (k.template_name == "cutlass_conv2d_fprop_sm90_i8") {
    const std::vector<int64_t>& b = k.builder_args;
    if (b.size() < 15 || b[11] <= 0 || b[12] <= 0) return 0;
    const int64_t p = (b[1] + b[7] + b[9] - ((b[5] - 1) * b[13] + 1)) / b[11] + 1;
    const int64_t q = (b[2] + b[8] + b[10] - ((b[6] - 1) * b[14] + 1)) / b[12] + 1;
    return p > 0 && q > 0 ? 2 * b[0] * p * q * b[4] * b[3] * b[5] * b[6] : 0;
  }
  if (!is_conv_node(node) || node.inputs.size() < 2 || node.outputs.empty()) return 0;
  // The CUTLASS 2.x convolutions' builder args (N H W C K R S P Q ...); the sm_90a one's differ
  // (no P, Q) and take the generic count below.
  if (k.library_params && k.template_name != "cutlass_conv2d_fprop_sm90") {
    if (k.builder_args.size() < kConvBuilderArgs) return 0;
    const std::vector<int64_t>& b = k.builder_args;
    return 2 * b[0] * b[4] * b[7] * b[8] * b[3] * b[5] * b[6];
  }
  // The step that reads the weights and writes the output computes the convolution (im2col and
  // split-K semaphore fills do not). Weights are [K, C/group, R, S] (or KRSC when channels_last),
  // so out.numel() * weights.numel() / K = N*K*P*Q * C/group*R*S either way.
  const ValueId w = node.inputs[1], y = node.outputs[0];
  if (w == kNoValue || y == kNoValue || !reads(k, w) || !reads(k, y)) return 0;
  const Value& wv = graph.value(w);
  if (wv.shape.empty() || wv.shape[0] <= 0) return 0;
  auto hole = [&](const std::string& name) -> int64_t {
    for (const auto& h : k.holes)
      if (h.first == name) return std::stoll(h.second);
    return 0;
  };
  // The model's work, not the padded: a stem that read its NCHW input itself (an absorbed
  // PackNhwc) runs on channels padded to C from the source's CI (3 -> 4 for RGB).
  const int64_t c = hole("C"), ci = hole("CI");
  const bool padded = hole("PACKED") == 1 && ci > 0 && c > ci;
  auto real = [&](int64_t flops) { return padded ? flops / c * ci : flops; };
  if (has_pool(node)) {
    // An absorbed pool (opt/fuse_stem_pool): Y is pooled; the convolution's outputs are N*OH*OW*K
    // (the kernel's holes).
    return real(2 * hole("N") * hole("OH") * hole("OW") * wv.shape[0] * (wv.numel() / wv.shape[0]));
  }
  return real(2 * graph.value(y).numel() * (wv.numel() / wv.shape[0]));
}

}  // namespace aotc
