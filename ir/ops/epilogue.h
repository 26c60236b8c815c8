// How a fused node (aotc.FusedConv, aotc.FusedGemm, aotc.DepthwisePointwise) records what it
// absorbed. The activation: the
// activation's op type in attribute "activation" and each of its attributes as "act.<name>".
// Only ops with OpTraits::epilogue_activation whose scalar_expr and reference depend on
// attributes alone (one input) can be absorbed; Clip qualifies because its importer turns
// constant min/max inputs into attributes.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

void store_activation(Node& fused, const Node& activation);
bool has_activation(const Node& fused);
// The absorbed activation as a stand-alone single-input node (op_type and attributes only).
Node load_activation(const Node& fused);
// CUDA expression of the activation applied to `x`; `x` itself when there is none.
std::string activation_expr(const Node& fused, const Graph& graph, const std::string& x);
// Apply the activation's reference in place (no-op when none).
Status apply_activation_reference(const Node& fused, Tensor& tensor);
// The checks every fused op makes of its absorbed activation: a registered op (shape inference),
// with a CUDA expression (lowering). Errors name `node`: the fused node itself, or the node that
// holds `fused` (aotc.DepthwisePointwise's parts).
Status check_activation_known(const Node& node, const Node& fused);
Status check_activation_lowerable(const Node& node, const Node& fused);
// Whether a conv / GEMM epilogue may absorb `act` (a single-input node): its op's traits say it is
// an epilogue activation with a CUDA expression (and, for an anchor that runs as a library GEMM the
// activation would move it off - a convolution for which conv_runs_as_gemm holds, a Gemm / MatMul
// where gemm_activation_changes_kernel - not epilogue_not_on_gemm), and the
// target does not exclude its op type (Target::epilogue_excluded, --epilogue-exclude).
bool epilogue_may_absorb(const Graph& graph, const Node& act, bool anchor_is_gemm);
// A Conv / FusedConv whose weights are 1 x 1 (every spatial dim), strides 1, no padding, group 1:
// the lowering's pointwise GEMM (cuBLASLt, NHWC) candidate.
bool conv_runs_as_gemm(const Graph& graph, const Node& conv);
// Whether an activation cuBLASLt's epilogue lacks moves a Gemm to another kernel when absorbed
// (the anchor_is_gemm of epilogue_may_absorb for Gemm / MatMul anchors): only with --gemm-wgmma on,
// whose CUTLASS 3.x GEMM takes it. Otherwise the activation runs in the kernel that computes the
// product anyway (the one-row GEMV, the SIMT GEMM) or in the epilogue kernel after cuBLASLt, which
// costs what the activation's own kernel would.
bool gemm_activation_changes_kernel(const Graph& graph);

// An activation absorbed *before* a channels_last depthwise convolution (opt/activation_into_depthwise:
// the SiLU after a pointwise expansion that cuBLASLt runs without it): attribute
// "input_activation" (its op type) and "in_act.<name>". The convolution applies it to every input
// element inside the image and rounds the result to the input's type, as the activation's own
// kernel stored it; the zero padding stays zero (it pads the activated tensor).
void store_input_activation(Node& fused, const Node& activation);
bool has_input_activation(const Node& fused);
Node load_input_activation(const Node& fused);
// CUDA expression of the input activation applied to `x`; `x` itself when there is none.
std::string input_activation_expr(const Node& fused, const Graph& graph, const std::string& x);
// The input activation's reference applied to `tensor` in place (its dtype kept; no-op when none).
Status apply_input_activation_reference(const Node& fused, Tensor& tensor);

// A max pooling absorbed after the activation (opt/fuse_stem_pool: aotc.FusedConv only): its op
// type in attribute "pool" and its attributes as "pool.<name>". The fused node's output is the
// pooled tensor.
void store_pool(Node& fused, const Node& pool);
bool has_pool(const Node& fused);
// The absorbed pool as a stand-alone single-input node (op_type and attributes only).
Node load_pool(const Node& fused);

// A per-tensor QuantizeLinear absorbed after the pool (opt/fuse_stem_quantize: aotc.FusedConv with
// a pool only): attributes "quantize" (= "QuantizeLinear"), "quantize.scale" (float32),
// "quantize.zero_point" and "quantize.dtype" (int8 or uint8). The fused node's output is the
// quantized tensor; the value before it has the convolution's own type.
struct AbsorbedQuantize {
  float scale = 1.0f;
  int64_t zero_point = 0;
  DType dtype = DType::kInt8;
};
void store_quantize(Node& fused, const AbsorbedQuantize& q);
bool has_quantize(const Node& fused);
AbsorbedQuantize load_quantize(const Node& fused);
// The node without it (the convolution and pool whose output the quantization reads).
Node without_quantize(const Node& fused);

// A depthwise convolution absorbed before the pointwise one that alone read it
// (opt/fuse_depthwise_pointwise: aotc.DepthwisePointwise): attribute "depthwise" and its
// attributes (all but channels_last) as "dw.<name>". load_depthwise gives it back as a
// stand-alone channels_last aotc.FusedConv (attributes only).
void store_depthwise(Node& fused, const Node& depthwise);
Node load_depthwise(const Node& fused);
// Removes that encoding: what is left are the pointwise convolution's own attributes.
void erase_depthwise(Node& fused);

// A pointwise convolution absorbed after the node (opt/fuse_pointwise_pair:
// aotc.PointwisePair): the next convolution, which reads the node's output as its input 0, as
// attribute "next" and its attributes (all but channels_last) as "next.<name>". load_next gives
// it back as a stand-alone channels_last aotc.FusedConv (attributes only); erase_next leaves the
// first convolution's own attributes.
void store_next(Node& fused, const Node& next);
Node load_next(const Node& fused);
void erase_next(Node& fused);
// The fused node's own convolution: its attributes without an absorbed depthwise or next
// convolution's encoding, as a stand-alone channels_last aotc.FusedConv (attributes only).
Node load_own_conv(const Node& fused);

}  // namespace aotc
