// Resize (opsets 10, 11, 13, 18, 19): modes nearest (every nearest_mode), linear and cubic (any
// rank, separable: per axis 1, 2 or 4 taps), every coordinate_transformation_mode, scales or sizes
// (constants; opset 18 `axes`), exclude_outside, extrapolation_value, keep_aspect_ratio_policy
// not_larger / not_smaller (one scale for every resized axis); antialias is refused. Follows the
// ONNX reference (onnx/reference/ops/op_resize.py) exactly. Opset 10 is canonicalised to [X, roi, scales] with
// asymmetric coordinates and floor rounding. Kernel: templates/resize.cu.in.
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kResizeTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16,
                                         DType::kInt8,    DType::kUInt8,   DType::kInt32,   DType::kInt64};
const char* const kCoordModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                   "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
const char* const kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
const char* const kModes[] = {"nearest", "linear", "cubic"};

int index_of(const char* const* names, size_t count, const std::string& s) {
  for (size_t i = 0; i < count; ++i)
    if (s == names[i]) return static_cast<int>(i);
  return -1;
}

struct ResizePlan {
  int mode = 0, coord = 0, nearest = 0;  // indices into kModes, kCoordModes, kNearestModes
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
  Shape in, out;
  std::vector<double> scale, roi_start, roi_end;
};

Status resize_import(Node& node, Graph&, int64_t opset) {
  if (opset < 11) {  // Resize-10: [X, scales], asymmetric coordinates, nearest rounds down
    if (node.inputs.size() != 2) return node_error(node, "Resize-10 takes 2 inputs (X, scales)");
    node.inputs = {node.inputs[0], kNoValue, node.inputs[1]};
    node.attrs["coordinate_transformation_mode"] = Attribute::of_string("asymmetric");
    node.attrs["nearest_mode"] = Attribute::of_string("floor");
  }
  return Status::ok();
}

Expected<ResizePlan> make_plan(const Node& node, const Shape& in, const Tensor* roi, const Tensor* scales, const Tensor* sizes) {
  ResizePlan p;
  p.mode = index_of(kModes, 3, node.attr_string("mode", "nearest"));
  p.coord = index_of(kCoordModes, 7, node.attr_string("coordinate_transformation_mode", "half_pixel"));
  p.nearest = index_of(kNearestModes, 4, node.attr_string("nearest_mode", "round_prefer_floor"));
  if (p.mode < 0) return node_error(node, "unknown mode '" + escape_for_message(node.attr_string("mode", "")) + "'");
  if (p.coord < 0) return node_error(node, "unknown coordinate_transformation_mode '" + escape_for_message(node.attr_string("coordinate_transformation_mode", "")) + "'");
  if (p.nearest < 0) return node_error(node, "unknown nearest_mode '" + escape_for_message(node.attr_string("nearest_mode", "")) + "'");
  if (node.attr_int("antialias", 0) != 0) return node_error(node, "antialias is not supported");
  const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return node_error(node, "keep_aspect_ratio_policy '" + escape_for_message(policy) + "' is not stretch, not_larger or not_smaller");
  p.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  const size_t r = in.size();
  p.in = in;
  // opset 18 `axes`: scales / sizes / roi list only these axes.
  std::vector<int64_t> axes;
  for (int64_t a : node.attr_ints("axes")) {
    Expected<int64_t> n = normalize_axis(node, a, static_cast<int64_t>(r));
    if (!n) return n.status();
    axes.push_back(*n);
  }
  if (axes.empty()) for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  p.scale.assign(r, 1.0);
  p.out = in;
  p.roi_start.assign(r, 0.0);
  p.roi_end.assign(r, 1.0);
  if (sizes && sizes->numel() > 0) {
    if (scales && scales->numel() > 0) return node_error(node, "only one of scales and sizes may be given");
    if (sizes->numel() != static_cast<int64_t>(axes.size())) return node_error(node, "sizes has " + std::to_string(sizes->numel()) + " values, expected " + std::to_string(axes.size()));
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(axes[i]);
      p.out[a] = sizes->get_int(static_cast<int64_t>(i));
      if (p.out[a] < 0) return node_error(node, "sizes must be >= 0");
      p.scale[a] = in[a] == 0 ? 1.0 : static_cast<double>(p.out[a]) / static_cast<double>(in[a]);
    }
    if (policy != "stretch") {
      // One scale for every resized axis: the smallest (not_larger) or largest (not_smaller)
      // sizes / in; out = round_half_up(scale * in), as the spec and the ONNX reference say.
      double one = p.scale[static_cast<size_t>(axes[0])];
      for (int64_t a : axes)
        one = policy == "not_larger" ? std::min(one, p.scale[static_cast<size_t>(a)]) : std::max(one, p.scale[static_cast<size_t>(a)]);
      for (int64_t a : axes) {
        p.scale[static_cast<size_t>(a)] = one;
        p.out[static_cast<size_t>(a)] = static_cast<int64_t>(one * static_cast<double>(in[static_cast<size_t>(a)]) + 0.5);
      }
    }
  } else if (scales && scales->numel() > 0) {
    if (scales->numel() != static_cast<int64_t>(axes.size())) return node_error(node, "scales has " + std::to_string(scales->numel()) + " values, expected " + std::to_string(axes.size()));
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(axes[i]);
      p.scale[a] = scales->get(static_cast<int64_t>(i));
      if (!(p.scale[a] > 0)) return node_error(node, "scales must be > 0");
      p.out[a] = static_cast<int64_t>(std::floor(p.scale[a] * static_cast<double>(in[a])));
    }
  } else {
    return node_error(node, "needs scales or sizes");
  }
  if (p.coord == 6) {
    if (!roi || roi->numel() != 2 * static_cast<int64_t>(axes.size()))
      return node_error(node, "tf_crop_and_resize needs roi with 2 values per resized axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      p.roi_start[static_cast<size_t>(axes[i])] = roi->get(static_cast<int64_t>(i));
      p.roi_end[static_cast<size_t>(axes[i])] = roi->get(static_cast<int64_t>(i + axes.size()));
    }
  }
  return p;
}

const Tensor* constant_input(const Node& node, const Graph& graph, size_t i) {
  ValueId id = node.input(i);
  return id == kNoValue ? nullptr : graph.value(id).constant.get();
}

Expected<ResizePlan> plan_from_graph(const Node& node, const Graph& graph) {
  for (size_t i = 1; i < 4; ++i)
    if (node.input(i) != kNoValue && graph.value(node.inputs[i]).numel() > 0 && !graph.value(node.inputs[i]).constant)
      return node_error(node, "input " + std::to_string(i) + " (roi/scales/sizes) must be a constant (they decide the output shape; aotc compiles static shapes)");
  return make_plan(node, input_value(graph, node, 0).shape, constant_input(node, graph, 1), constant_input(node, graph, 2),
                   constant_input(node, graph, 3));
}

Status resize_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 4));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kResizeTypes));
  if (node.input(3) != kNoValue) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 3, {DType::kInt64}));
  if (node.input(2) != kNoValue) AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {DType::kFloat32}));
  auto p = plan_from_graph(node, graph);
  if (!p) return p.status();
  set_output(graph, node, 0, input_value(graph, node, 0).dtype, p->out);
  return Status::ok();
}

// Taps of one axis for output coordinate x: indices (clamped: edge padding) and weights; false
// when tf_crop_and_resize puts x outside the input (the output is extrapolation_value).
bool axis_taps(const ResizePlan& p, size_t axis, int64_t x, std::vector<int64_t>* idx, std::vector<double>* w) {
  const double len_in = static_cast<double>(p.in[axis]), s = p.scale[axis];
  const double width = s * len_in;  // the reference's output_width (not rounded)
  const double xd = static_cast<double>(x);
  double xo = 0;
  switch (p.coord) {
    case 0: xo = (xd + 0.5) / s - 0.5; break;
    case 1: {
      const double adjustment = static_cast<double>(p.out[axis]) / width, center = len_in / 2;
      xo = center * (1 - adjustment) + (xd + 0.5) / s - 0.5;
      break;
    }
    case 2: xo = width == 1 ? -0.5 : (xd + 0.5) / s - 0.5; break;
    case 3: xo = width == 1 ? 0.0 : xd * (len_in - 1) / (width - 1); break;
    case 4: xo = xd / s; break;
    case 5: xo = (xd + 0.5) / s; break;
    case 6: {
      const double a = p.roi_start[axis], b = p.roi_end[axis];
      xo = (width == 1 ? (b - a) * (len_in - 1) / 2 : xd * (b - a) * (len_in - 1) / (width - 1)) + a * (len_in - 1);
      if (xo < 0 || xo > len_in - 1) return false;
      break;
    }
  }
  const double fl = std::floor(xo);
  const int64_t i0 = static_cast<int64_t>(fl);
  const double t = xo - fl;
  idx->clear();
  w->clear();
  auto clamp = [&](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), p.in[axis] - 1); };
  if (p.mode == 0) {
    bool up;
    if (t == 0) up = false;
    else if (p.nearest == 0) up = t > 0.5;
    else if (p.nearest == 1) up = t >= 0.5;
    else up = p.nearest == 3;
    idx->push_back(clamp(i0 + (up ? 1 : 0)));
    w->push_back(1.0);
    return true;
  }
  std::vector<double> c;
  int64_t first;
  if (p.mode == 1) {
    c = {1 - t, t};
    first = i0;
  } else {
    const double a = p.cubic_a, u = t + 1, v = 1 - t, q = 2 - t;
    c = {((a * u - 5 * a) * u + 8 * a) * u - 4 * a, ((a + 2) * t - (a + 3)) * t * t + 1,
         ((a + 2) * v - (a + 3)) * v * v + 1, ((a * q - 5 * a) * q + 8 * a) * q - 4 * a};
    first = i0 - 1;
  }
  double sum = 0;
  for (size_t k = 0; k < c.size(); ++k) {
    const int64_t i = first + static_cast<int64_t>(k);
    if (p.exclude_outside && (i < 0 || i >= p.in[axis])) c[k] = 0;
    sum += c[k];
  }
  for (size_t k = 0; k < c.size(); ++k) {
    idx->push_back(clamp(first + static_cast<int64_t>(k)));
    w->push_back(p.exclude_outside ? c[k] / sum : c[k]);
  }
  return true;
}

Status resize_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  auto at = [&](size_t i) { return i < inputs.size() ? inputs[i] : nullptr; };
  auto pp = make_plan(node, inputs[0]->shape(), at(1), at(2), at(3));
  if (!pp) return pp.status();
  const ResizePlan& p = *pp;
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  const size_t r = p.in.size();
  std::vector<int64_t> in_strides = shape_strides(p.in);
  std::vector<std::vector<int64_t>> idx(r);
  std::vector<std::vector<double>> w(r);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t rest = o;
    bool inside = true;
    for (size_t a = r; a-- > 0;) {
      inside = axis_taps(p, a, rest % p.out[a], &idx[a], &w[a]) && inside;
      rest /= p.out[a];
    }
    if (!inside) {
      y.set(o, p.extrapolation);
      continue;
    }
    // Sum over every combination of per-axis taps.
    double acc = 0;
    std::vector<size_t> k(r, 0);
    while (true) {
      double weight = 1;
      int64_t off = 0;
      for (size_t a = 0; a < r; ++a) {
        weight *= w[a][k[a]];
        off += idx[a][k[a]] * in_strides[a];
      }
      if (weight != 0) acc += weight * x.get(off);
      size_t a = r;
      while (a > 0 && ++k[a - 1] == idx[a - 1].size()) k[--a] = 0;
      if (a == 0) break;
    }
    // Integer outputs truncate, as the ONNX reference's astype does.
    y.set(o, acc);
  }
  return Status::ok();
}

Expected<Lowering> resize_lower(const Node& node, const Graph& graph) {
  auto pp = plan_from_graph(node, graph);
  if (!pp) return pp.status();
  const ResizePlan& p = *pp;
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  if (x.numel() == 0) return node_error(node, "resizing an empty input to a non-empty output is not supported");
  if (p.in.size() > 6) return node_error(node, "rank above 6 is not supported on the GPU");
  std::vector<double> widths;
  std::vector<std::string> sc, wd, rs, re;
  auto dlit = [](double v) { char b[64]; std::snprintf(b, sizeof b, "%a", v); return std::string(b); };
  auto list = [](const std::vector<std::string>& v) { std::string s = "{"; for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i]; return s + "}"; };
  for (size_t a = 0; a < p.in.size(); ++a) {
    sc.push_back(dlit(p.scale[a]));
    wd.push_back(dlit(p.scale[a] * static_cast<double>(p.in[a])));
    rs.push_back(dlit(p.roi_start[a]));
    re.push_back(dlit(p.roi_end[a]));
  }
  KernelStep k;
  k.template_name = "resize";
  k.holes = {{"comment", "Resize " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " " + kModes[p.mode] + " " + kCoordModes[p.coord] + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"ACC", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"RANK", std::to_string(p.in.size())},
             {"IN_DIMS", dims_literal(p.in)},
             {"OUT_DIMS", dims_literal(p.out)},
             {"SCALES", list(sc)},
             {"WIDTHS", list(wd)},
             {"ROI_START", list(rs)},
             {"ROI_END", list(re)},
             {"OUT_N", int_literal(y.numel())},
             {"MODE", std::to_string(p.mode)},
             {"COORD", std::to_string(p.coord)},
             {"NEAREST", std::to_string(p.nearest)},
             {"CUBIC_A", dlit(p.cubic_a)},
             {"EXCLUDE_OUTSIDE", p.exclude_outside ? "true" : "false"},
             {"EXTRAPOLATION", dlit(p.extrapolation)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_resize_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Resize";
  def.import = resize_import;
  def.infer = resize_infer;
  def.reference = resize_reference;
  def.lower = resize_lower;
  registry.add(def);
}

}  // namespace aotc
