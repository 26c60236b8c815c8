// Window geometry resolution (see window.h). Output-size rules follow the ONNX operator specs:
// explicit pads: floor((in + pads - eff) / stride) + 1, eff = (k - 1) * dilation + 1; ceil_mode
// rounds up but the last window must start inside the input or the left padding; SAME_*: out =
// ceil(in / stride), the odd pad goes at the end (UPPER) or the beginning (LOWER).
#include "ir/ops/window.h"

#include <initializer_list>
#include <string>

namespace aotc {
namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}


// floor or ceil of (span / stride) + 1, then the ceil_mode rule (last window starts in bounds).
int64_t explicit_out(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t eff, int64_t stride,
                     bool ceil_mode) {
  int64_t span = in + pad_begin + pad_end - eff;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

}  // namespace

Expected<WindowGeometry> resolve_window(const Node& node, const std::vector<int64_t>& in,
                                        const std::vector<int64_t>& kernel,
                                        const WindowOptions& options) {
  const size_t rank = in.size();
  // Every reference and kernel runs windows as one rank-3 loop nest (to_rank3): 1 to 3 spatial
  // dims (a 4-D window reached the reference through constant folding: a fuzz find).
  if (rank < 1 || rank > 3)
    return node_error(node, "input has " + std::to_string(rank) + " spatial dims; aotc supports 1, 2 or 3");
  WindowGeometry g;
  g.in = in;
  g.kernel = kernel;
  if (kernel.size() != rank)
    return node_error(node, "kernel has " + std::to_string(kernel.size()) + " spatial dims, input has " +
                                std::to_string(rank));
  for (int64_t k : kernel)
    if (k <= 0) return node_error(node, "kernel_shape " + list_str(kernel) + " has a non-positive dim");
  g.strides = node.attr_ints("strides", std::vector<int64_t>(rank, 1));
  g.dilations = node.attr_ints("dilations", std::vector<int64_t>(rank, 1));
  if (g.strides.size() != rank)
    return node_error(node, "strides " + list_str(g.strides) + " must have " + std::to_string(rank) + " values");
  if (g.dilations.size() != rank)
    return node_error(node, "dilations " + list_str(g.dilations) + " must have " + std::to_string(rank) + " values");
  for (int64_t s : g.strides)
    if (s <= 0) return node_error(node, "strides " + list_str(g.strides) + " must be positive");
  for (int64_t d : g.dilations)
    if (d <= 0) return node_error(node, "dilations " + list_str(g.dilations) + " must be positive");
  if (!options.allow_dilations)
    for (int64_t d : g.dilations)
      if (d != 1) return node_error(node, "dilations other than 1 are not supported by this op");
  bool ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  if (ceil_mode && !options.allow_ceil_mode) return node_error(node, "ceil_mode is not an attribute of this op");

  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
  if (pads.size() != 2 * rank)
    return node_error(node, "pads " + list_str(pads) + " must have " + std::to_string(2 * rank) + " values");
  for (int64_t p : pads)
    if (p < 0) return node_error(node, "pads " + list_str(pads) + " must not be negative");
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    return node_error(node, "auto_pad '" + escape_for_message(auto_pad) + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  if (auto_pad != "NOTSET")
    for (int64_t p : pads)
      if (p != 0) return node_error(node, "explicit pads cannot be combined with auto_pad " + auto_pad);

  // Bounded so that the geometry below, (k - 1) * dilation + 1 and in + pads - eff, cannot overflow
  // int64 (pads of 2^62 did); no real window comes near.
  const int64_t kMaxWindowValue = int64_t{1} << 31;
  for (const std::vector<int64_t>* v : std::initializer_list<const std::vector<int64_t>*>{&kernel, &g.strides, &g.dilations, &pads})
    for (int64_t x : *v)
      if (x > kMaxWindowValue)
        return node_error(node, "kernel " + list_str(kernel) + ", strides " + list_str(g.strides) + ", dilations " +
                                    list_str(g.dilations) + " and pads " + list_str(pads) +
                                    " must each be at most 2^31");
  g.pad_begin.assign(rank, 0);
  g.pad_end.assign(rank, 0);
  g.out.assign(rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    int64_t eff = (kernel[i] - 1) * g.dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t out = (in[i] + g.strides[i] - 1) / g.strides[i];
      int64_t total = (out - 1) * g.strides[i] + eff - in[i];
      if (total < 0) total = 0;
      int64_t small = total / 2;
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      g.pad_end[i] = total - g.pad_begin[i];
      g.out[i] = out;
    } else {
      if (auto_pad == "NOTSET") {
        g.pad_begin[i] = pads[i];
        g.pad_end[i] = pads[i + rank];
      }
      g.out[i] = explicit_out(in[i], g.pad_begin[i], g.pad_end[i], eff, g.strides[i], ceil_mode);
    }
    if (g.out[i] <= 0)
      return node_error(node, "window " + list_str(kernel) + " (dilations " + list_str(g.dilations) +
                                  ") does not fit input " + list_str(in) + " with pads " + list_str(pads));
  }
  return g;
}

WindowGeometry to_rank3(const WindowGeometry& g) {
  WindowGeometry r;
  size_t lead = 3 - g.in.size();
  auto pad = [lead](const std::vector<int64_t>& v, int64_t fill) {
    std::vector<int64_t> out(lead, fill);
    out.insert(out.end(), v.begin(), v.end());
    return out;
  };
  r.in = pad(g.in, 1);
  r.kernel = pad(g.kernel, 1);
  r.strides = pad(g.strides, 1);
  r.dilations = pad(g.dilations, 1);
  r.pad_begin = pad(g.pad_begin, 0);
  r.pad_end = pad(g.pad_end, 0);
  r.out = pad(g.out, 1);
  return r;
}

}  // namespace aotc
