// Shared between the two files of the Conv family: ir/ops/conv.cc (import, checks, shape
// inference, reference, NCHW lowering) and ir/ops/conv_nhwc.cc (the lowering of a channels_last
// node to its NHWC implementations), and the passes that rewrite convolutions. Not for other op
// families, except ir/ops/pack_nhwc.cc's use of stem_absorbs_pack.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/graph.h"
#include "ir/lowering.h"
#include "ir/ops/window.h"

namespace aotc {

constexpr size_t kConvResidualInput = 3;

// A node of this family: ONNX Conv or aotc.FusedConv (what the passes rewrite and the lowering
// here takes).
inline bool is_conv_node(const Node& n) {
  return (n.op_type == "Conv" && n.domain.empty()) || (n.op_type == "FusedConv" && n.domain == "aotc");
}

// A channels_last 1x1 / unpadded / group 1 convolution whose attributes are only the window's and
// (when `activation_ok`) an absorbed activation, with stride 1 or (`strided`) any equal stride in
// both directions, returned in *stride (opt/merge_projection_shortcut, opt/fuse_depthwise_pointwise).
bool plain_pointwise_conv(const Node& n, bool activation_ok, bool strided = false, int64_t* stride = nullptr);

// A convolution's sizes after the checks of conv.cc's conv_shape (logical NCHW order).
struct ConvShape {
  int64_t batch = 0, cin = 0, cout = 0, group = 1;
  WindowGeometry geo;  // spatial geometry of the node's own rank
  Shape out;
};

// The geometry of a max pool absorbed by opt/fuse_stem_pool (ir/ops/epilogue.h: load_pool) over
// a conv output of conv_h x conv_w pixels: MaxPool, 2-D, kernel_shape given, no dilation. Shape
// inference (the pooled output) and the stem lowering (tile, pads, strides) both read it.
Expected<WindowGeometry> absorbed_pool_geometry(const Node& node, int64_t conv_h, int64_t conv_w);

// A channels_last Conv / aotc.FusedConv node that lowers to a stem kernel (its stored input has
// kStemChannels channels: ir/ops/conv_configs.h, conv_runs_on_stem_kernel). opt/fuse_stem_pool
// and the absorbed-pack rule below both ask this.
bool node_runs_on_stem_kernel(const Graph& graph, const Node& node);

// The aotc.PackNhwc (no space-to-depth, kStemChannels channels) whose output only `conv` reads,
// when `conv` runs on a stem kernel: the stem kernel then reads the pack's NCHW source itself
// (converting and zero-padding channels while it stages its input window) and the pack lowers to
// a view of its source (no kernel, no buffer). Null otherwise. The pack's lowering asks
// stem_absorbs_pack, the conv's stem_pack_of: one rule for both.
const Node* stem_pack_of(const Graph& graph, const Node& conv);
bool stem_absorbs_pack(const Graph& graph, const Node& pack);

// The node's output is written in place into a Concat whose slab_copied names this node's kernel
// as the copier of another input (opt/slab_into_producer): only the NHWC cluster split-K kernel does.
bool conv_asked_to_copy_slab(const Node& node, const Graph& graph);

// A channels_last node (2-D): the first implementation of ir/ops/conv_configs.h's order that
// applies for graph.target and the node's dtype.
Expected<Lowering> conv_lower_channels_last(const Node& node, const Graph& graph, const ConvShape& cs);

}  // namespace aotc
