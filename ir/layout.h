// Channels-last (NHWC) storage, as the layout pass (opt/layout_nhwc) assigns it: a node with
// attribute channels_last=1 reads and writes its 4-D activations as [N, H, W, C] (filters as
// [K, R, S, C]) while keeping the NCHW semantics of its op. These helpers convert shapes and
// tensors between the two orders for shape inference and the CPU references.
#pragma once

#include "ir/graph.h"
#include "ir/tensor.h"

namespace aotc {

inline bool channels_last(const Node& node) { return node.attr_int("channels_last", 0) != 0; }

inline Shape nhwc_to_nchw(const Shape& s) { return s.size() == 4 ? Shape{s[0], s[3], s[1], s[2]} : s; }
inline Shape nchw_to_nhwc(const Shape& s) { return s.size() == 4 ? Shape{s[0], s[2], s[3], s[1]} : s; }

// Copies a 4-D tensor into the other order (to_nchw: NHWC -> NCHW; else NCHW -> NHWC).
Tensor permute_channels(const Tensor& t, bool to_nchw);

}  // namespace aotc
