// Sliding-window geometry shared by Conv and the pooling ops: reading kernel_shape, strides,
// dilations, pads, auto_pad and ceil_mode from a node and resolving them, for given input spatial
// dims, into explicit per-axis pads and output dims. One implementation, so infer(), the reference
// and the lowering of every window op agree on the ONNX rules (SAME_* splits, ceil_mode's rule).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace aotc {

struct WindowGeometry {
  std::vector<int64_t> in;          // input spatial dims
  std::vector<int64_t> kernel;      // kernel spatial dims
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pad_begin;   // resolved (auto_pad applied)
  std::vector<int64_t> pad_end;
  std::vector<int64_t> out;         // output spatial dims
  int64_t rank() const { return static_cast<int64_t>(in.size()); }
};

struct WindowOptions {
  bool allow_ceil_mode = false;  // pooling ops only
  bool allow_dilations = true;
};

// Resolves the node's window attributes for `in` spatial dims and `kernel` (taken from W for
// Conv, from kernel_shape for pooling; the caller checks kernel_shape against W). Errors name the
// node: bad attribute lengths, non-positive strides/dilations/kernel, negative pads, unknown
// auto_pad, or an empty output.
Expected<WindowGeometry> resolve_window(const Node& node, const std::vector<int64_t>& in,
                                        const std::vector<int64_t>& kernel,
                                        const WindowOptions& options);

// Pads a spatial geometry of rank <= 3 to rank 3 with neutral leading axes (size 1, kernel 1,
// stride 1, no pads), so one kernel template covers 1-D, 2-D and 3-D windows.
WindowGeometry to_rank3(const WindowGeometry& g);

}  // namespace aotc
