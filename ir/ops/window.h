// Sliding-window geometry shared by Conv and the pooling ops: reading kernel_shape, strides,
// dilations, pads, auto_pad and ceil_mode from a node and resolving them, for given input spatial
// dims, into explicit per-axis pads and output dims. One implementation, so infer(), the reference
// and the lowering of every window op agree on the ONNX rules (SAME_* splits, ceil_mode's rule).
#pragma once

#include <algorithm>
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

// The CPU references' convolution inner loop, one (input channel, output channel) pair of a rank-3
// geometry: plane[o] += x[window tap of o] * w[tap] over the output plane, tap by tap (kd, kh, kw in
// order) with the innermost loop along an output row; taps outside the input are skipped (padding
// contributes nothing). x points at the input channel's plane, w at its kernel taps. The float
// reference (Acc = double) and the integer one (x and w zero-point-shifted, Acc = int64_t) share it.
template <typename T, typename Acc>
void accumulate_conv_channel(const WindowGeometry& g, const T* x, const T* w, Acc* plane) {
  auto valid_range = [](int64_t out, int64_t in, int64_t stride, int64_t offset, int64_t* lo, int64_t* hi) {
    // o in [lo, hi) <=> 0 <= o * stride + offset < in
    *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    *hi = in - offset <= 0 ? 0 : std::min<int64_t>(out, (in - offset + stride - 1) / stride);
    if (*hi < *lo) *hi = *lo;
  };
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    int64_t od_lo, od_hi, oh_lo, oh_hi, ow_lo, ow_hi;
    valid_range(g.out[0], g.in[0], g.strides[0], kd * g.dilations[0] - g.pad_begin[0], &od_lo, &od_hi);
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      valid_range(g.out[1], g.in[1], g.strides[1], kh * g.dilations[1] - g.pad_begin[1], &oh_lo, &oh_hi);
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        valid_range(g.out[2], g.in[2], g.strides[2], kw * g.dilations[2] - g.pad_begin[2], &ow_lo, &ow_hi);
        const Acc wv = static_cast<Acc>(w[(kd * g.kernel[1] + kh) * g.kernel[2] + kw]);
        const int64_t sw = g.strides[2], iw0 = kw * g.dilations[2] - g.pad_begin[2];
        for (int64_t od = od_lo; od < od_hi; ++od) {
          const int64_t id = od * g.strides[0] - g.pad_begin[0] + kd * g.dilations[0];
          for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
            const int64_t ih = oh * g.strides[1] - g.pad_begin[1] + kh * g.dilations[1];
            const T* xrow = x + (id * g.in[1] + ih) * g.in[2];
            Acc* prow = plane + (od * g.out[1] + oh) * g.out[2];
            if (sw == 1) {
              for (int64_t ow = ow_lo; ow < ow_hi; ++ow) prow[ow] += static_cast<Acc>(xrow[ow + iw0]) * wv;
            } else {
              for (int64_t ow = ow_lo; ow < ow_hi; ++ow) prow[ow] += static_cast<Acc>(xrow[ow * sw + iw0]) * wv;
            }
          }
        }
      }
    }
  }
}

}  // namespace aotc
