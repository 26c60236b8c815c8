// Shared between the two files of the Conv family: ir/ops/conv.cc (import, checks, shape
// inference, reference, NCHW lowering) and ir/ops/conv_nhwc.cc (the lowering of a channels_last
// node to its NHWC implementations). Not for other op families.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/graph.h"
#include "ir/lowering.h"
#include "ir/ops/window.h"

namespace aotc {

constexpr size_t kConvResidualInput = 3;

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

// A channels_last node (2-D): the first implementation of ir/ops/conv_configs.h's order that
// applies for graph.target and the node's dtype.
Expected<Lowering> conv_lower_channels_last(const Node& node, const Graph& graph, const ConvShape& cs);

}  // namespace aotc
