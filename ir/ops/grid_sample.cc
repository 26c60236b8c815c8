// GridSample (opsets 16 and 20) on 4-D input [N, C, H, W] with grid [N, Ho, Wo, 2] (x, y in
// [-1, 1]) and, from opset 20, volumetric 5-D input [N, C, D, H, W] with grid [N, Do, Ho, Wo, 3]
// (x, y, z): modes bilinear/linear, nearest (round half to even), bicubic/cubic (Keys, a = -0.75;
// 4-D only, as the spec says); padding zeros, border, reflection; align_corners. Follows
// onnx/reference/ops/op_grid_sample.py.
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

enum class GsMode { kLinear, kNearest, kCubic };
enum class GsPad { kZeros, kBorder, kReflection };

struct GsAttrs {
  GsMode mode = GsMode::kLinear;
  GsPad pad = GsPad::kZeros;
  bool align = false;
};

Expected<GsAttrs> gs_attrs(const Node& node) {
  GsAttrs a;
  const std::string mode = node.attr_string("mode", "bilinear");
  if (mode == "bilinear" || mode == "linear") a.mode = GsMode::kLinear;
  else if (mode == "nearest") a.mode = GsMode::kNearest;
  else if (mode == "bicubic" || mode == "cubic") a.mode = GsMode::kCubic;
  else return node_error(node, "unknown mode '" + escape_for_message(mode) + "'");
  const std::string pad = node.attr_string("padding_mode", "zeros");
  if (pad == "zeros") a.pad = GsPad::kZeros;
  else if (pad == "border") a.pad = GsPad::kBorder;
  else if (pad == "reflection") a.pad = GsPad::kReflection;
  else return node_error(node, "unknown padding_mode '" + escape_for_message(pad) + "'");
  a.align = node.attr_int("align_corners", 0) != 0;
  return a;
}

Status grid_sample_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const std::vector<DType> floats = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, floats));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, floats));
  Expected<GsAttrs> a = gs_attrs(node);
  if (!a) return a.status();
  const Value& x = input_value(graph, node, 0);
  const Value& g = input_value(graph, node, 1);
  const size_t rank = x.shape.size();
  if (rank != 4 && rank != 5)
    return node_error(node, "input must be [N, C, H, W] or [N, C, D, H, W], it is " + shape_str(x.shape));
  if (rank == 5 && graph.opset > 0 && graph.opset < 20)
    return node_error(node, "volumetric (5-D) input needs GridSample-20");
  if (rank == 5 && a->mode == GsMode::kCubic) return node_error(node, "cubic mode supports 4-D input only");
  const int64_t r = static_cast<int64_t>(rank) - 2;
  if (g.shape.size() != rank || g.shape[0] != x.shape[0] || g.shape[rank - 1] != r)
    return node_error(node, std::string("grid must be ") + (r == 2 ? "[N, H_out, W_out, 2]" : "[N, D_out, H_out, W_out, 3]") +
                                ", it is " + shape_str(g.shape));
  Shape out = {x.shape[0], x.shape[1]};
  for (int64_t d = 0; d < r; ++d) out.push_back(g.shape[static_cast<size_t>(d + 1)]);
  set_output(graph, node, 0, x.dtype, out);
  return Status::ok();
}

double reflect(double v, double lo, double hi) {
  const double range = hi - lo;
  if (v < lo) {
    const double d = lo - v;
    const int64_t n = static_cast<int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (v > hi) {
    const double d = v - hi;
    const int64_t n = static_cast<int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return v;
}

void cubic_coeffs(double x, double c[4]) {
  const double a = -0.75;
  x = std::fabs(x);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

Status grid_sample_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  Expected<GsAttrs> attrs = gs_attrs(node);
  if (!attrs) return attrs.status();
  const GsAttrs a = *attrs;
  const Tensor& x = *inputs[0];
  const Tensor& g = *inputs[1];
  Tensor& y = outputs[0];
  const int r = static_cast<int>(x.shape().size()) - 2;  // 2 or 3 spatial dims
  const int64_t n = x.shape()[0], c = x.shape()[1];
  int64_t dims[3] = {1, 1, 1}, odims[3] = {1, 1, 1};
  int64_t plane = 1, opoints = 1;
  for (int d = 0; d < r; ++d) {
    dims[d] = x.shape()[static_cast<size_t>(d + 2)];
    odims[d] = g.shape()[static_cast<size_t>(d + 1)];
    plane *= dims[d];
    opoints *= odims[d];
  }
  double lo[3], hi[3];
  for (int d = 0; d < r; ++d) {
    lo[d] = a.align ? 0.0 : -0.5;
    hi[d] = a.align ? static_cast<double>(dims[d] - 1) : static_cast<double>(dims[d]) - 0.5;
  }
  // Index i along dim d after padding; -1 means "a zero pixel".
  auto map_index = [&](int64_t i, int d) -> int64_t {
    if (a.pad == GsPad::kZeros) return (i >= 0 && i < dims[d]) ? i : -1;
    if (a.pad == GsPad::kBorder) return std::min<int64_t>(std::max<int64_t>(i, 0), dims[d] - 1);
    return static_cast<int64_t>(reflect(static_cast<double>(i), lo[d], hi[d]));
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t op = 0; op < opoints; ++op) {
      const int64_t gi = (b * opoints + op) * r;
      double p[3];
      for (int d = 0; d < r; ++d) {
        const double nrm = g.get(gi + (r - 1 - d));  // the grid stores the last dim's coordinate first
        const double len = static_cast<double>(dims[d]);
        p[d] = a.align ? (nrm + 1) / 2.0 * (len - 1) : ((nrm + 1) * len - 1) / 2.0;
        if (a.mode == GsMode::kNearest) p[d] = std::nearbyint(p[d]);  // half to even
        if (p[d] < lo[d] || p[d] > hi[d]) {
          if (a.pad == GsPad::kBorder) p[d] = std::min(std::max(p[d], 0.0), len - 1);
          else if (a.pad == GsPad::kReflection) p[d] = reflect(p[d], lo[d], hi[d]);
        }
      }
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t base = (b * c + ch) * plane;
        auto pixel = [&](const int64_t* idx) -> double {
          int64_t flat = 0;
          for (int d = 0; d < r; ++d) {
            const int64_t m = map_index(idx[d], d);
            if (m < 0) return 0.0;
            flat = flat * dims[d] + m;
          }
          return x.get(base + flat);
        };
        double v = 0;
        if (a.mode == GsMode::kNearest) {
          int64_t idx[3];
          for (int d = 0; d < r; ++d) idx[d] = static_cast<int64_t>(p[d]);
          v = pixel(idx);
        } else if (a.mode == GsMode::kLinear) {
          double f[3];
          for (int d = 0; d < r; ++d) f[d] = std::floor(p[d]);
          for (int corner = 0; corner < (1 << r); ++corner) {
            int64_t idx[3];
            double wgt = 1;
            for (int d = 0; d < r; ++d) {
              const int bit = (corner >> (r - 1 - d)) & 1;
              idx[d] = static_cast<int64_t>(f[d]) + bit;
              wgt *= bit ? p[d] - f[d] : 1 - (p[d] - f[d]);
            }
            v += wgt * pixel(idx);
          }
        } else {  // cubic, 2-D only (inference refuses it for 5-D input)
          double cy[4], cx[4];
          const double fy = std::floor(p[0]), fx = std::floor(p[1]);
          cubic_coeffs(p[0] - fy, cy);
          cubic_coeffs(p[1] - fx, cx);
          for (int i = 0; i < 4; ++i) {
            double row = 0;
            for (int j = 0; j < 4; ++j) {
              const int64_t idx[2] = {static_cast<int64_t>(fy) - 1 + i, static_cast<int64_t>(fx) - 1 + j};
              row += cx[j] * pixel(idx);
            }
            v += cy[i] * row;
          }
        }
        y.set((b * c + ch) * opoints + op, v);
      }
    }
  return Status::ok();
}


Expected<Lowering> grid_sample_lower(const Node& node, const Graph& graph) {
  Expected<GsAttrs> a = gs_attrs(node);
  if (!a) return a.status();
  const Value& x = input_value(graph, node, 0);
  const Value& g = input_value(graph, node, 1);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  for (size_t d = 2; d < x.shape.size(); ++d)
    if (x.shape[d] == 0) return node_error(node, "an empty spatial input cannot be sampled");
  const bool wide = x.dtype == DType::kFloat64 || g.dtype == DType::kFloat64;
  KernelStep k;
  if (x.shape.size() == 5) {  // volumetric: templates/grid_sample_3d.cu.in (linear and nearest)
    k.template_name = "grid_sample_3d";
    k.holes = {{"comment", "GridSample " + node.attr_string("mode", "bilinear") + " " + node.attr_string("padding_mode", "zeros") +
                               " " + shape_str(x.shape) + " grid " + shape_str(g.shape) + " " + dtype_name(x.dtype)},
               {"T", dtype_c_type(x.dtype)}, {"TG", dtype_c_type(g.dtype)}, {"ACC", wide ? "double" : "float"},
               {"C", int_literal(x.shape[1])}, {"D", int_literal(x.shape[2])}, {"H", int_literal(x.shape[3])},
               {"W", int_literal(x.shape[4])}, {"DO", int_literal(g.shape[1])}, {"HO", int_literal(g.shape[2])},
               {"WO", int_literal(g.shape[3])}, {"OUT_N", int_literal(y.numel())},
               {"MODE", std::to_string(static_cast<int>(a->mode))}, {"PAD", std::to_string(static_cast<int>(a->pad))},
               {"ALIGN", a->align ? "true" : "false"}};
    k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
    k.block = Dim3{256, 1, 1};
    k.grid = grid_for(y.numel(), 256);
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    return l;
  }
  k.template_name = "grid_sample";
  k.holes = {{"comment", "GridSample " + node.attr_string("mode", "bilinear") + " " + node.attr_string("padding_mode", "zeros") +
                             " " + shape_str(x.shape) + " grid " + shape_str(g.shape) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)}, {"TG", dtype_c_type(g.dtype)}, {"ACC", wide ? "double" : "float"},
             {"C", int_literal(x.shape[1])}, {"H", int_literal(x.shape[2])}, {"W", int_literal(x.shape[3])},
             {"HO", int_literal(g.shape[1])}, {"WO", int_literal(g.shape[2])}, {"OUT_N", int_literal(y.numel())},
             {"MODE", std::to_string(static_cast<int>(a->mode))}, {"PAD", std::to_string(static_cast<int>(a->pad))},
             {"ALIGN", a->align ? "true" : "false"}};
  k.args = {node.inputs[0], node.inputs[1], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_grid_sample_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "GridSample";
  def.infer = grid_sample_infer;
  def.reference = grid_sample_reference;
  def.lower = grid_sample_lower;
  registry.add(def);
}

}  // namespace aotc
