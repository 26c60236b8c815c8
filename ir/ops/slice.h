// Slice's resolved parameters (ONNX clamping applied) as plain data, for passes that compose a
// Slice with other data movement (opt/fuse_copy_chains.cc) without re-deriving the ONNX rules.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

struct SliceParams {
  Shape out;
  std::vector<int64_t> start, step;  // per input dim (start clamped; step 1 on unlisted dims)
};

// The parameters of a Slice node whose starts/ends/axes/steps are constants in `graph` (an error
// naming the node otherwise); input 0's shape must be known.
Expected<SliceParams> slice_params(const Node& node, const Graph& graph);

}  // namespace aotc
