// The individual passes of the pipeline (opt/pipeline.h lists them in order). Each is a function
// Graph& -> Expected<bool changed>, defined in its own file opt/<name>.cc. Passes expect a graph
// whose shapes are inferred (the frontend runs infer_shapes) and keep it valid for verify().
#pragma once

#include "ir/constant_folding.h"  // kMaxFoldedBytes
#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

// DequantizeLinear -> Conv / MatMul / Gemm [-> Relu / Clip] -> QuantizeLinear (QDQ form) ->
// aotc.QLinearConv / aotc.QLinearMatMul on the int8 tensors (int32 sum, requantized once, the
// activation as a clamp); layers read by more than one QuantizeLinear keep a float output.
Expected<bool> fuse_qdq(Graph& graph);
// Evaluates nodes whose inputs are all constants (and shape-only ops whose input shape is known)
// with the CPU reference; their outputs become constants and the nodes disappear.
Expected<bool> fold_constants(Graph& graph);
// int8 activations with zero point -128 (ONNX Runtime's asymmetric ReLU outputs) -> the same bytes
// with the top bit flipped as uint8 with zero point 0, where every producer and reader agrees, so
// that the tensor-core convolution (zero point 0 only) takes them (opt/reencode_uint8.cc).
Expected<bool> reencode_uint8(Graph& graph);
// Drops nodes none of whose outputs reach a graph output.
Expected<bool> dead_code(Graph& graph);
// Conv (or aotc.FusedConv without activation/residual) -> BatchNormalization becomes one Conv
// with rescaled weights and a new bias, computed in double.
Expected<bool> fold_batchnorm(Graph& graph);
// MatMul / Gemm by constant weights [-> constant bias Add] -> Mul by a constant per-column scale
// (ConvNeXt's layer scale) -> one MatMul / Gemm with the scale folded into W and the bias.
Expected<bool> fold_matmul_scale(Graph& graph);
// A Conv whose kernel equals its stride (ViT's patch embedding), read only by the flatten of its
// spatial dims -> patch gather + Gemm (opt/patchify_conv.cc).
Expected<bool> patchify_conv(Graph& graph);
// A Conv over one pixel with a 1 x 1 kernel (squeeze-excitation's) -> Reshape + Gemm + Reshape
// (opt/pixel_conv_to_gemm.cc).
Expected<bool> pixel_conv_to_gemm(Graph& graph);
// The written-out GELU formulas (erf and tanh forms) -> one Gelu node (approximate none / tanh).
Expected<bool> fuse_gelu(Graph& graph);
// The written-out RMS normalisation (ReduceMean(Pow(x, 2)) + eps -> Sqrt -> reciprocal -> Mul by x
// [-> Mul by a weight]; also inside Casts to float) -> one RMSNormalization node (fuse_rms_norm.cc).
Expected<bool> fuse_rms_norm(Graph& graph);
// Mul(Mul(g, Sigmoid(g)), u) (LLaMA's gated SiLU MLP) -> one SwiGLU(g, u) node (fuse_swiglu.cc).
Expected<bool> fuse_swiglu(Graph& graph);
// Mul(x, Sigmoid(x)) (the written-out SiLU) -> one Swish(x) {alpha = 1} node (in fuse_swiglu.cc: the same match).
Expected<bool> fuse_silu(Graph& graph);
// The rotate_half rotary embedding written out (x*cos + cat(-x2, x1)*sin with constant tables of
// equal halves) -> one RotaryEmbedding; on a head split, on the [B,S,H*D] rows with the
// Transpose moved after it (opt/fuse_rotary.cc).
Expected<bool> fuse_rotary(Graph& graph);
// MatMul of activations by a constant [K, N] -> Gemm over the flattened rows (views), with the
// reshape back moved past the bias / residual Adds and activation that follow (for fuse_epilogue).
Expected<bool> matmul_to_gemm(Graph& graph);
// Conv/Gemm + bias Add + residual Add + one activation -> aotc.FusedConv / aotc.FusedGemm.
Expected<bool> fuse_epilogue(Graph& graph);
// float32 values -> graph.target.precision.dtype (fp16/bf16) per opt/precision_policy; constants
// converted at compile time, Casts only at precision boundaries; graph I/O keep their dtypes.
Expected<bool> convert_precision(Graph& graph);
// Casts that cannot change a value (to the same dtype; a round trip through a wider float type)
// are removed; their readers read the source.
Expected<bool> drop_exact_casts(Graph& graph);
// Cast(fp16/bf16 -> float32) read only by QuantizeLinear's x: the quantize reads the 16-bit value;
// DequantizeLinear -> float32 read only by Casts to one 16-bit type: it writes that type
// (output_dtype). Exact (opt/fold_quantize_casts.cc).
Expected<bool> fold_quantize_casts(Graph& graph);
// The written-out attention (MatMul, scalar scale, additive mask, Softmax, MatMul, with the head
// split/merge Reshape+Transposes) -> one Attention node over the 3-D projections, where the
// Attention lowering runs it as the fused tensor-core kernel.
Expected<bool> fuse_attention(Graph& graph);
// After fuse_copy_chains: a constant causal mask of an Attention node becomes is_causal, and Q / K / V
// made by a Split part or a strided copy of a packed projection are read in place
// (aotc.StridedAttention), where the fused kernel runs it.
Expected<bool> fuse_attention_operands(Graph& graph);
// A Gemm between a row gather and the inverse row permutation reads and writes the rows in order
// (both copies vanish); a residual Add of the result joins the Gemm (cancel_row_permutations.cc).
Expected<bool> cancel_row_permutations(Graph& graph);
// The Q / K / V projections of one Attention (Gemms of one input) -> one Gemm + Split
// (merge_qkv_projections.cc); fuse_attention_operands then reads the parts in place.
Expected<bool> merge_qkv_projections(Graph& graph);
// SwiGLU(g, u) of two projections of one input (same N), whose merged product is at most one wave
// of 128 x 128 tiles on the target -> one GEMM with the weights side by side and
// aotc.SwiGLUPacked over its rows (opt/merge_qkv_projections.cc).
Expected<bool> merge_swiglu_projections(Graph& graph);
// The same merge where an aotc.StridedAttention reads the projections' outputs in place: one Gemm,
// the operand views moved to its columns (merge_qkv_projections.cc).
Expected<bool> merge_strided_qkv_projections(Graph& graph);
// Conv chains -> channels_last (NHWC) where graph.target has an NHWC kernel for them; transposes
// only where an NCHW consumer needs the value.
Expected<bool> layout_nhwc(Graph& graph);
// An int8 residual aotc.QLinearAdd whose one operand is a requantizing tensor-core convolution's
// output, read by nothing else, becomes that convolution's epilogue (inputs 10-14, add_qmin /
// add_qmax) where the sm_90a int8 wgmma kernel takes it; bit for bit the unfused result
// (opt/fuse_residual_qadd.cc).
Expected<bool> fuse_residual_qadd(Graph& graph);

// DequantizeLinear(a) + DequantizeLinear(b) [-> Relu] with a float result -> one dequantizing
// aotc.QLinearAdd (no y_scale; attributes to / relu): the same roundings as the unfused kernels
// (opt/fuse_dequantize_add.cc).
Expected<bool> fuse_dequantize_add(Graph& graph);
// A channels_last conv ending in Clip(0, M) read only by a depthwise channels_last conv keeps
// Relu (so it can run on cuBLASLt) and the depthwise conv clamps its input at M (input_max).
Expected<bool> clip_into_depthwise(Graph& graph);
// The same split where a channels_last GlobalAveragePool alone reads the clipped conv output
// (MobileNetV2's last 1x1 conv): the pool clamps (input_max). Its own pass so that it can be
// measured alone (--disable-pass clip_into_pool).
Expected<bool> clip_into_pool(Graph& graph);
// The stem kernel's conv absorbs the channels_last MaxPool that alone reads it (fuse_stem_pool.cc).
Expected<bool> fuse_stem_pool(Graph& graph);
// The wgmma stem + pool writes the quantized tensor of the QuantizeLinear that alone reads it
// (fuse_stem_quantize.cc).
Expected<bool> fuse_stem_quantize(Graph& graph);
// An activation kernel read only by a channels_last depthwise conv becomes the conv's input
// activation (attribute input_activation; activation_into_depthwise.cc).
Expected<bool> activation_into_depthwise(Graph& graph);
// A channels_last depthwise conv and the pointwise conv that alone reads it become one
// aotc.DepthwisePointwise node where the target has its kernel (fuse_depthwise_pointwise.cc).
Expected<bool> fuse_depthwise_pointwise(Graph& graph);
// A pointwise convolution and the pointwise convolution that reads its output -> one
// aotc.PointwisePair node where the target has a configuration for its kernel
// (fuse_pointwise_pair.cc).
Expected<bool> fuse_pointwise_pair(Graph& graph);

// A pointwise conv whose residual is another pointwise conv (ResNet's first bottleneck: conv3 +
// downsample) becomes one conv over Concat(h, x) where that moves fewer bytes
// (merge_projection_shortcut.cc).
Expected<bool> merge_projection_shortcut(Graph& graph);
// The same for a strided projection (ResNet's downsample in layers 2-4): the conv reads
// aotc.SubsampleConcat(h, x at the stride), only where the merged GEMM fills the GPU.
Expected<bool> merge_strided_projection(Graph& graph);
// A Concat input read by nothing else is written into the Concat's rows by its producer, where
// the producer's lowering can write strided rows (concat_in_place.cc).
Expected<bool> concat_in_place(Graph& graph);
// A Concat / SubsampleConcat whose in-place input's producer can also copy another input's slab
// (the cluster split-K convolution) gets that slab copied there instead of by a slab kernel
// (slab_into_producer.cc; after side_branches, whose lanes it respects).
Expected<bool> slab_into_producer(Graph& graph);
// A 16-bit Gemm whose result is only converted to float32 (through views) writes float32 itself
// (aotc.FusedGemm output_dtype), the Cast's output value in place.
Expected<bool> fuse_output_cast(Graph& graph);
// A batch-1 CNN's channels_last GlobalAveragePool read only (through views) by a Gemm becomes one
// aotc.PoolGemm with it where its cluster kernel applies (fuse_pool_gemm.cc; --pool-gemm on).
Expected<bool> fuse_pool_gemm(Graph& graph);
// A 16-bit MatMul (or Gemm without C) by a constant [K, N] with N % 8 != 0 (large outputs): B zero-padded to a multiple
// of 8 at compile time, then a Slice of the first N columns (aligned cuBLASLt kernels).
Expected<bool> pad_gemm_n(Graph& graph);
// A MatMul operand made by a Transpose whose second-last output axis is the input's last (k^T,
// possibly through a scalar Mul) -> aotc.MatMulT reading it transposed (cuBLASLt transA/transB);
// the Transpose keeps the rest of its permutation, or goes when that is the identity.
Expected<bool> fuse_matmul_transpose(Graph& graph);
// Chains of Transpose / Reshape-like / Gather(one constant index) / Slice / Split (+ one trailing
// scalar Mul) whose intermediates nothing else reads -> one aotc.StridedCopy from the source (or a
// Reshape view when the composition is the identity).
Expected<bool> fuse_copy_chains(Graph& graph);

// Last: nodes that can run beside other work move to just after their last producer and run on
// the auxiliary stream (Graph::side_join; opt/side_branches.cc), when target.aux_streams is 1.
Expected<bool> side_branches(Graph& graph);

}  // namespace aotc
