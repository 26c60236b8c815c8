// RoiAlign (opsets 10 and 16): X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R]
// -> [R, C, output_height, output_width]; avg or max over a sampling grid of bilinear samples.
// Opset 10 has no coordinate_transformation_mode: the importer fills "output_half_pixel" (its
// semantics); opset 16 defaults to half_pixel. Follows onnx/reference/ops/op_roi_align.py.
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Status roi_align_import(Node& node, Graph&, int64_t opset) {
  if (!node.has_attr("coordinate_transformation_mode"))
    node.attrs["coordinate_transformation_mode"] = Attribute::of_string(opset < 16 ? "output_half_pixel" : "half_pixel");
  return Status::ok();
}

Status roi_align_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const std::vector<DType> floats = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, floats));
  const Value& x = input_value(graph, node, 0);
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {x.dtype}));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 2, {DType::kInt64}));
  if (x.shape.size() != 4) return node_error(node, "X must be [N, C, H, W]");
  const Value& rois = input_value(graph, node, 1);
  const Value& idx = input_value(graph, node, 2);
  if (rois.shape.size() != 2 || rois.shape[1] != 4) return node_error(node, "rois must be [num_rois, 4]");
  if (idx.shape != Shape{rois.shape[0]}) return node_error(node, "batch_indices must be [num_rois]");
  const std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") return node_error(node, "mode must be avg or max");
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return node_error(node, "coordinate_transformation_mode must be half_pixel or output_half_pixel");
  const int64_t oh = node.attr_int("output_height", 1), ow = node.attr_int("output_width", 1);
  if (oh < 1 || ow < 1) return node_error(node, "output_height and output_width must be >= 1");
  if (node.attr_int("sampling_ratio", 0) < 0) return node_error(node, "sampling_ratio must be >= 0");
  set_output(graph, node, 0, x.dtype, {rois.shape[0], x.shape[1], oh, ow});
  return Status::ok();
}

Status roi_align_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const Tensor& rois = *inputs[1];
  const Tensor& bidx = *inputs[2];
  Tensor& y = outputs[0];
  const int64_t channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  const int64_t num_rois = y.shape()[0], ph_n = y.shape()[2], pw_n = y.shape()[3];
  const bool half_pixel = node.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const bool avg = node.attr_string("mode", "avg") == "avg";
  const double scale = node.attr_float("spatial_scale", 1.0f);
  const int64_t ratio = node.attr_int("sampling_ratio", 0);
  for (int64_t r = 0; r < num_rois; ++r) {
    const int64_t b = bidx.get_int(r);
    if (b < 0 || b >= x.shape()[0]) return node_error(node, "batch index " + std::to_string(b) + " is out of range");
    const double off = half_pixel ? 0.5 : 0.0;
    const double sw = rois.get(r * 4 + 0) * scale - off, sh = rois.get(r * 4 + 1) * scale - off;
    const double ew = rois.get(r * 4 + 2) * scale - off, eh = rois.get(r * 4 + 3) * scale - off;
    double rw = ew - sw, rh = eh - sh;
    if (!half_pixel) { rw = std::max(rw, 1.0); rh = std::max(rh, 1.0); }
    const double bh = rh / static_cast<double>(ph_n), bw = rw / static_cast<double>(pw_n);
    const int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(ph_n)));
    const int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(pw_n)));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t base = (b * channels + c) * height * width;
      for (int64_t ph = 0; ph < ph_n; ++ph)
        for (int64_t pw = 0; pw < pw_n; ++pw) {
          double out = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = sh + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
              double xx = sw + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
              double v[4] = {0, 0, 0, 0};
              if (!(yy < -1.0 || yy > height || xx < -1.0 || xx > width)) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx), yh, xh;
                if (yl >= height - 1) { yh = yl = height - 1; yy = static_cast<double>(yl); } else yh = yl + 1;
                if (xl >= width - 1) { xh = xl = width - 1; xx = static_cast<double>(xl); } else xh = xl + 1;
                const double ly = yy - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
                v[0] = hy * hx * x.get(base + yl * width + xl);
                v[1] = hy * lx * x.get(base + yl * width + xh);
                v[2] = ly * hx * x.get(base + yh * width + xl);
                v[3] = ly * lx * x.get(base + yh * width + xh);
              }
              if (avg) {
                out += v[0] + v[1] + v[2] + v[3];
              } else {
                const double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                out = first ? m : std::max(out, m);
                first = false;
              }
            }
          if (avg) out /= count;
          y.set(((r * channels + c) * ph_n + ph) * pw_n + pw, out);
        }
    }
  }
  return Status::ok();
}


Expected<Lowering> roi_align_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  if (x.shape[0] == 0 || x.shape[2] == 0 || x.shape[3] == 0) return node_error(node, "X is empty but rois are not");
  KernelStep k;
  k.template_name = "roi_align";
  k.holes = {{"comment", "RoiAlign " + node.attr_string("mode", "avg") + " " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)}, {"ACC", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"N", int_literal(x.shape[0])}, {"C", int_literal(x.shape[1])}, {"H", int_literal(x.shape[2])},
             {"W", int_literal(x.shape[3])}, {"PH", int_literal(y.shape[2])}, {"PW", int_literal(y.shape[3])},
             {"OUT_N", int_literal(y.numel())}, {"RATIO", int_literal(node.attr_int("sampling_ratio", 0))},
             {"HALF_PIXEL", node.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel" ? "true" : "false"},
             {"MAX", node.attr_string("mode", "avg") == "max" ? "true" : "false"},
             {"SCALE", "(double)" + float_literal(node.attr_float("spatial_scale", 1.0f))}};
  k.args = {node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_roi_align_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "RoiAlign";
  def.import = roi_align_import;
  def.infer = roi_align_infer;
  def.reference = roi_align_reference;
  def.lower = roi_align_lower;
  registry.add(def);
}

}  // namespace aotc
