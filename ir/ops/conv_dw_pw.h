// aotc.DepthwisePointwise (ir/ops/conv_dw_pw.cc): its pointwise convolution as a stand-alone
// channels_last aotc.FusedConv (attributes only). The depthwise one is ir/ops/epilogue.h
// load_depthwise.
#pragma once

#include "ir/graph.h"

namespace aotc {

// The pointwise convolution: the fused node's attributes without the absorbed depthwise one's.
Node pointwise_part(const Node& fused);

}  // namespace aotc
