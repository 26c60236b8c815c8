// Pooling: MaxPool (optional Indices output, storage_order), AveragePool (count_include_pad), LpPool
// ((sum of |x|^p over the window's elements inside the input)^(1/p)) and
// GlobalAveragePool / GlobalMaxPool. Window geometry comes from window.h (auto_pad, ceil_mode,
// dilations); references and kernels handle 1-, 2- and 3-D windows through one rank-3 form.
// Templates: templates/pool_window.cu.in and templates/pool_global.cu.in.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/window.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};
const std::vector<DType> kMaxPoolTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16, DType::kInt8,
                                          DType::kUInt8};

bool is_max(const Node& node) { return node.op_type == "MaxPool" || node.op_type == "GlobalMaxPool"; }
bool is_lp(const Node& node) { return node.op_type == "LpPool"; }
bool has_indices(const Node& node) { return node.outputs.size() > 1 && node.outputs[1] != kNoValue; }

// What MaxPool yields for a window that lies entirely in the padding.
double lowest_value(DType t) {
  if (t == DType::kInt8) return -128;
  if (t == DType::kUInt8) return 0;
  return -std::numeric_limits<double>::infinity();
}

std::string lowest_literal(DType t) {
  if (t == DType::kInt8) return "-128";
  if (t == DType::kUInt8) return "0";
  return float_literal(-std::numeric_limits<float>::infinity());
}

Expected<WindowGeometry> pool_geometry(const Node& node, const Shape& x) {
  if (x.size() < 3) return node_error(node, "input 0 has rank " + std::to_string(x.size()) + ", expected >= 3 (N, C, spatial...)");
  if (!node.has_attr("kernel_shape")) return node_error(node, "attribute kernel_shape is required");
  std::vector<int64_t> in(x.begin() + 2, x.end());
  WindowOptions options;
  options.allow_ceil_mode = true;
  return resolve_window(node, in, node.attr_ints("kernel_shape"), options);
}

Status window_pool_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  const bool max = is_max(node);
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, max ? kMaxPoolTypes : kFloatTypes));
  if (node.outputs.empty() || node.outputs.size() > (max ? 2u : 1u))
    return node_error(node, max ? "expects 1 or 2 outputs (Y, Indices)" : "expects 1 output");
  int64_t storage_order = node.attr_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1)
    return node_error(node, "storage_order " + std::to_string(storage_order) + " must be 0 or 1");
  int64_t count_include_pad = node.attr_int("count_include_pad", 0);
  if (count_include_pad != 0 && count_include_pad != 1)
    return node_error(node, "count_include_pad " + std::to_string(count_include_pad) + " must be 0 or 1");
  if (is_lp(node) && node.attr_int("p", 2) < 1)
    return node_error(node, "p " + std::to_string(node.attr_int("p", 2)) + " must be at least 1");
  const Value& x = input_value(graph, node, 0);
  if (channels_last(node) && (x.shape.size() != 4 || has_indices(node)))
    return node_error(node, "channels_last pooling is 2-D (rank 4) without Indices");
  const Shape xs = channels_last(node) ? nhwc_to_nchw(x.shape) : x.shape;
  auto geo = pool_geometry(node, xs);
  if (!geo) return geo.status();
  if (geo->rank() > 3) return node_error(node, std::to_string(geo->rank()) + "-D pooling is not supported (1-D to 3-D are)");
  Shape out = {xs[0], xs[1]};
  out.insert(out.end(), geo->out.begin(), geo->out.end());
  set_output(graph, node, 0, x.dtype, channels_last(node) ? nchw_to_nhwc(out) : out);
  if (has_indices(node)) set_output(graph, node, 1, DType::kInt64, out);
  return Status::ok();
}

Status window_pool_reference_nchw(const Node& node, const std::vector<const Tensor*>& inputs,
                                  std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  auto geo = pool_geometry(node, x.shape());
  if (!geo) return geo.status();
  const WindowGeometry g = to_rank3(*geo);
  const bool max = is_max(node);
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  const bool column_major = node.attr_int("storage_order", 0) == 1;
  const double lp = is_lp(node) ? static_cast<double>(node.attr_int("p", 2)) : 0.0;
  const int64_t nc = x.shape()[0] * x.shape()[1];
  const int64_t in_sp = g.in[0] * g.in[1] * g.in[2];
  std::vector<double> xd = x.to_doubles();
  Tensor* indices = has_indices(node) ? &outputs[1] : nullptr;
  int64_t yi = 0;
  for (int64_t p = 0; p < nc; ++p)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++yi) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int64_t best_index = -1, count_in = 0, count_padded = 0;
          const int64_t pos[3] = {od, oh, ow};
          int64_t k[3];
          for (k[0] = 0; k[0] < g.kernel[0]; ++k[0])
            for (k[1] = 0; k[1] < g.kernel[1]; ++k[1])
              for (k[2] = 0; k[2] < g.kernel[2]; ++k[2]) {
                int64_t at[3];
                bool inside = true, inside_padded = true;
                for (int a = 0; a < 3; ++a) {
                  at[a] = pos[a] * g.strides[a] - g.pad_begin[a] + k[a] * g.dilations[a];
                  inside = inside && at[a] >= 0 && at[a] < g.in[a];
                  inside_padded = inside_padded && at[a] < g.in[a] + g.pad_end[a];
                }
                count_padded += inside_padded;
                if (!inside) continue;
                ++count_in;
                const double v = xd[static_cast<size_t>(p * in_sp + (at[0] * g.in[1] + at[1]) * g.in[2] + at[2])];
                sum += lp > 0 ? std::pow(std::fabs(v), lp) : v;
                if (v > best) {
                  best = v;
                  // Row-major: the flat NCHW index. Column-major (storage_order 1): the spatial
                  // offset with the first spatial axis fastest, as ONNX Runtime computes it.
                  best_index = p * in_sp + (column_major ? at[0] + g.in[0] * (at[1] + g.in[1] * at[2])
                                                         : (at[0] * g.in[1] + at[1]) * g.in[2] + at[2]);
                }
              }
          if (max) {
            outputs[0].set(yi, best_index < 0 ? lowest_value(x.dtype()) : best);
            if (indices) indices->set_int(yi, best_index);
          } else if (lp > 0) {
            outputs[0].set(yi, std::pow(sum, 1.0 / lp));
          } else {
            const int64_t count = include_pad ? count_padded : count_in;
            outputs[0].set(yi, count > 0 ? sum / static_cast<double>(count) : 0.0);
          }
        }
  return Status::ok();
}

Status window_pool_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                             std::vector<Tensor>& outputs) {
  if (!channels_last(node)) return window_pool_reference_nchw(node, inputs, outputs);
  Tensor x = permute_channels(*inputs[0], true);
  std::vector<Tensor> y = {Tensor(outputs[0].dtype(), nhwc_to_nchw(outputs[0].shape()))};
  AOTC_RETURN_IF_ERROR(window_pool_reference_nchw(node, {&x}, y));
  outputs[0] = permute_channels(y[0], false);
  return Status::ok();
}

Status global_pool_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  const Value& x = input_value(graph, node, 0);
  if (x.shape.size() < 3) return node_error(node, "input 0 has rank " + std::to_string(x.shape.size()) + ", expected >= 3");
  if (channels_last(node) && x.shape.size() != 4) return node_error(node, "channels_last global pooling is 2-D (rank 4)");
  // input_max (opt/clip_into_depthwise: the ReLU6 of the conv before it, split into the conv's
  // ReLU epilogue and this clamp) exists on the channels_last average only.
  if (node.has_attr("input_max") && (!channels_last(node) || is_max(node) || !(node.attr_float("input_max", 0.0f) >= 0.0f)))
    return node_error(node, "input_max is implemented by the channels_last GlobalAveragePool only (M >= 0)");
  const Shape xs = channels_last(node) ? nhwc_to_nchw(x.shape) : x.shape;
  Shape out(xs.size(), 1);
  out[0] = xs[0];
  out[1] = xs[1];
  set_output(graph, node, 0, x.dtype, channels_last(node) ? nchw_to_nhwc(out) : out);
  return Status::ok();
}

Status global_pool_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                             std::vector<Tensor>& outputs) {
  Tensor permuted;
  if (channels_last(node)) permuted = permute_channels(*inputs[0], true);  // [N,1,1,C] out = same bytes as NCHW
  const Tensor& x = channels_last(node) ? permuted : *inputs[0];
  const int64_t nc = x.shape()[0] * x.shape()[1];
  const int64_t sp = nc == 0 ? 0 : x.numel() / nc;
  const bool clamp = node.has_attr("input_max");
  const double m = node.attr_float("input_max", 0.0f);
  for (int64_t p = 0; p < nc; ++p) {
    double sum = 0, best = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < sp; ++i) {
      double v = x.get(p * sp + i);
      if (clamp) v = m < v ? m : v;  // min(x, M), NaN kept (Clip's rule)
      sum += v;
      if (v > best) best = v;  // NaN is skipped, as in MaxPool
    }
    outputs[0].set(p, is_max(node) ? best : sum / static_cast<double>(sp));
  }
  return Status::ok();
}

std::string compute_type(DType t) { return t == DType::kFloat64 ? "double" : "float"; }

Expected<Lowering> window_pool_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  auto geo = pool_geometry(node, channels_last(node) ? nhwc_to_nchw(x.shape) : x.shape);
  if (!geo) return geo.status();
  const WindowGeometry g = to_rank3(*geo);
  const Value& y = output_value(graph, node, 0);
  KernelStep k;
  if (channels_last(node)) {
    const Shape xs = nhwc_to_nchw(x.shape);
    k.template_name = "pool_window_nhwc";
    k.holes = {{"comment", node.op_type + " NHWC " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " kernel " +
                               shape_str(geo->kernel)},
               {"T", dtype_c_type(x.dtype)},
               {"ACC", compute_type(x.dtype)},
               {"N", int_literal(xs[0])}, {"C", int_literal(xs[1])},
               {"H", int_literal(g.in[1])}, {"W", int_literal(g.in[2])},
               {"KH", int_literal(g.kernel[1])}, {"KW", int_literal(g.kernel[2])},
               {"OH", int_literal(g.out[1])}, {"OW", int_literal(g.out[2])},
               {"SH", int_literal(g.strides[1])}, {"SW", int_literal(g.strides[2])},
               {"PH", int_literal(g.pad_begin[1])}, {"PW", int_literal(g.pad_begin[2])},
               {"QH", int_literal(g.pad_end[1])}, {"QW", int_literal(g.pad_end[2])},
               {"DH", int_literal(g.dilations[1])}, {"DW", int_literal(g.dilations[2])},
               {"IS_MAX", is_max(node) ? "1" : "0"},
               {"LOWEST", lowest_literal(x.dtype)},
               {"COUNT_INCLUDE_PAD", node.attr_int("count_include_pad", 0) ? "1" : "0"}};
    k.args = {node.inputs[0], node.outputs[0]};
    k.block = Dim3{256, 1, 1};
    k.grid = grid_for(y.numel(), 256);
    Lowering l;
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    return l;
  }
  k.template_name = "pool_window";
  k.holes = {{"comment", node.op_type + " " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " kernel " +
                             shape_str(geo->kernel)},
             {"T", dtype_c_type(x.dtype)},
             {"ACC", compute_type(x.dtype)},
             {"NC", int_literal(x.shape[0] * x.shape[1])},
             {"D", int_literal(g.in[0])}, {"H", int_literal(g.in[1])}, {"W", int_literal(g.in[2])},
             {"KD", int_literal(g.kernel[0])}, {"KH", int_literal(g.kernel[1])}, {"KW", int_literal(g.kernel[2])},
             {"OD", int_literal(g.out[0])}, {"OH", int_literal(g.out[1])}, {"OW", int_literal(g.out[2])},
             {"SD", int_literal(g.strides[0])}, {"SH", int_literal(g.strides[1])}, {"SW", int_literal(g.strides[2])},
             {"PD", int_literal(g.pad_begin[0])}, {"PH", int_literal(g.pad_begin[1])}, {"PW", int_literal(g.pad_begin[2])},
             {"QD", int_literal(g.pad_end[0])}, {"QH", int_literal(g.pad_end[1])}, {"QW", int_literal(g.pad_end[2])},
             {"DD", int_literal(g.dilations[0])}, {"DH", int_literal(g.dilations[1])}, {"DW", int_literal(g.dilations[2])},
             {"IS_MAX", is_max(node) ? "1" : "0"},
             {"LOWEST", lowest_literal(x.dtype)},
             {"COUNT_INCLUDE_PAD", node.attr_int("count_include_pad", 0) ? "1" : "0"},
             {"HAS_INDICES", has_indices(node) ? "1" : "0"},
             {"LP", is_lp(node) ? int_literal(node.attr_int("p", 2)) : "0"},
             {"COLUMN_MAJOR", node.attr_int("storage_order", 0) ? "1" : "0"}};
  k.args = {node.inputs[0], node.outputs[0], has_indices(node) ? node.outputs[1] : kNullArg};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

constexpr int64_t kGlobalPoolThreads = 256;
// NHWC global pooling (templates/pool_global_nhwc.cu.in): the spatial rows are cut into slices
// until there are kGlobalPoolBlocksPerSm blocks an SM, each slice at least kGlobalPoolMinRows rows.
constexpr int64_t kGlobalPoolBlocksPerSm = 2, kGlobalPoolMinRows = 64;
constexpr int64_t kPoolVectorBytes = 16;  // one uint4 load a thread where the channels allow

struct GlobalPoolNhwcPlan {
  int64_t vec = 1, cvb = 1, chunks = 1, split = 1;
};

GlobalPoolNhwcPlan global_pool_nhwc_plan(const Target& target, DType dtype, int64_t n, int64_t sp, int64_t c) {
  GlobalPoolNhwcPlan p;
  const int64_t esize = dtype_size(dtype);
  p.vec = esize <= kPoolVectorBytes && c % (kPoolVectorBytes / esize) == 0 ? kPoolVectorBytes / esize : 1;
  const int64_t cv = c / p.vec;
  p.cvb = std::min<int64_t>(cv, kGlobalPoolThreads);
  p.chunks = (cv + p.cvb - 1) / p.cvb;
  const int64_t blocks = std::max<int64_t>(1, n * p.chunks);
  const int64_t want = (kGlobalPoolBlocksPerSm * std::max(1, target.sm_count) + blocks - 1) / blocks;
  p.split = std::max<int64_t>(1, std::min(want, sp / kGlobalPoolMinRows));
  const int64_t rows = (sp + p.split - 1) / p.split;
  if (rows > 0) p.split = (sp + rows - 1) / rows;  // no empty slice (no rows at all: one slice)
  return p;
}

Expected<Lowering> global_pool_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  if (channels_last(node)) {
    const int64_t n = x.shape[0], sp = x.shape[1] * x.shape[2], c = x.shape[3];
    Lowering l;
    if (n * c == 0) return l;  // nothing to write
    if (n > 65535) return node_error(node, "batch " + std::to_string(n) + " is over one launch's grid (65535)");
    const GlobalPoolNhwcPlan p = global_pool_nhwc_plan(graph.target, x.dtype, n, sp, c);
    const std::string acc = compute_type(x.dtype);
    const std::string comment = node.op_type + " NHWC " + shape_str(x.shape);
    KernelStep k;
    k.template_name = "pool_global_nhwc";
    k.holes = {{"comment", comment + (p.split > 1 ? ", " + std::to_string(p.split) + " row slices" : "")},
               {"T", dtype_c_type(x.dtype)},
               {"ACC", acc},
               {"OUT_T", p.split > 1 ? acc : dtype_c_type(x.dtype)},
               {"C", int_literal(c)},
               {"SP", int_literal(sp)},
               {"VEC", int_literal(p.vec)},
               {"CVB", int_literal(p.cvb)},
               {"SPLIT", int_literal(p.split)},
               {"IS_MAX", is_max(node) ? "1" : "0"},
               {"HAS_INPUT_MAX", node.has_attr("input_max") ? "1" : "0"},
               {"INPUT_MAX", float_literal(node.attr_float("input_max", 0.0f))}};
    k.args = {node.inputs[0], p.split > 1 ? kScratchArg : node.outputs[0]};
    k.block = Dim3{kGlobalPoolThreads, 1, 1};
    k.grid = Dim3{p.split, n, p.chunks};
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    if (p.split == 1) return l;
    l.scratch_bytes = n * p.split * c * static_cast<int64_t>(acc == "double" ? sizeof(double) : sizeof(float));
    KernelStep f;
    f.template_name = "pool_global_nhwc_finish";
    f.holes = {{"comment", comment + ": the " + std::to_string(p.split) + " slices combined"},
               {"T", dtype_c_type(x.dtype)},
               {"ACC", acc},
               {"N", int_literal(n)}, {"C", int_literal(c)}, {"SP", int_literal(sp)},
               {"SPLIT", int_literal(p.split)},
               {"IS_MAX", is_max(node) ? "1" : "0"}};
    f.args = {kScratchArg, node.outputs[0]};
    f.block = Dim3{256, 1, 1};
    f.grid = grid_for(n * c, 256);
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, f, {}});
    return l;
  }
  const int64_t nc = x.shape[0] * x.shape[1];
  KernelStep k;
  k.template_name = "pool_global";
  k.holes = {{"comment", node.op_type + " " + shape_str(x.shape)},
             {"T", dtype_c_type(x.dtype)},
             {"ACC", compute_type(x.dtype)},
             {"NC", int_literal(nc)},
             {"SP", int_literal(nc == 0 ? 0 : x.numel() / nc)},
             {"THREADS", int_literal(kGlobalPoolThreads)},
             {"IS_MAX", is_max(node) ? "1" : "0"}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{kGlobalPoolThreads, 1, 1};
  k.grid = Dim3{std::max<int64_t>(nc, 1), 1, 1};
  if (nc > 2147483647LL) return node_error(node, "too many channels for one launch");
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_pool_ops(OpRegistry& registry) {
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
    OpDef def;
    def.op_type = op;
    def.infer = window_pool_infer;
    def.reference = window_pool_reference;
    def.lower = window_pool_lower;
    registry.add(def);
  }
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    OpDef def;
    def.op_type = op;
    def.infer = global_pool_infer;
    def.reference = global_pool_reference;
    def.lower = global_pool_lower;
    registry.add(def);
  }
}

}  // namespace aotc
