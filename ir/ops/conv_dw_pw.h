// aotc.DepthwisePointwise (ir/ops/conv_dw_pw.cc): the two convolutions it holds, as stand-alone
// aotc.FusedConv nodes (attributes only; channels_last), and how the fusing pass records the
// depthwise one.
#pragma once

#include "ir/graph.h"

namespace aotc {

// The depthwise convolution: the fused node's "dw."-prefixed attributes.
Node depthwise_part(const Node& fused);
// The pointwise convolution: the fused node's other attributes (its activation).
Node pointwise_part(const Node& fused);
// Records `dw`'s attributes (all but channels_last) on `fused` under the "dw." prefix.
void store_depthwise_part(Node& fused, const Node& dw);

}  // namespace aotc
