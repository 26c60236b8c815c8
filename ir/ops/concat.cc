// Concat: joins any number of inputs of one dtype along `axis` (negative counts from the end).
// Seen as [outer, inner_i] slabs (outer = dims before axis, inner_i = the rest), each input is
// one strided copy into the output, so the GPU lowering is one kernel per non-empty input.
// aotc.SubsampleConcat (below): the same along NHWC channels, each input read at a pixel step.
#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/strided_layout.h"

namespace aotc {
namespace {

Status concat_import(Node& node, Graph&, int64_t opset) {
  // Concat-1 defaulted axis to 1; from opset 4 on it is required.
  if (opset < 4 && !node.has_attr("axis")) node.attrs["axis"] = Attribute::of_int(1);
  return Status::ok();
}

Status concat_infer(Node& node, Graph& graph) {
  if (node.inputs.empty()) return node_error(node, "expects at least 1 input");
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (node.inputs[i] == kNoValue) return node_error(node, "input " + std::to_string(i) + " is missing");
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  if (!node.has_attr("axis")) return node_error(node, "attribute 'axis' is required");
  const Value& first = input_value(graph, node, 0);
  if (first.dtype == DType::kString || first.dtype == DType::kUndefined)
    return node_error(node, "input 0 has dtype " + dtype_name(first.dtype) + ", which aotc does not store");
  int64_t rank = static_cast<int64_t>(first.shape.size());
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  if (!axis) return axis.status();
  Shape out = first.shape;
  out[static_cast<size_t>(*axis)] = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& v = input_value(graph, node, i);
    if (v.dtype != first.dtype)
      return node_error(node, "input " + std::to_string(i) + " has dtype " + dtype_name(v.dtype) +
                                  ", input 0 has " + dtype_name(first.dtype));
    if (static_cast<int64_t>(v.shape.size()) != rank)
      return node_error(node, "input " + std::to_string(i) + " has rank " + std::to_string(v.shape.size()) +
                                  ", input 0 has rank " + std::to_string(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (d != *axis && v.shape[static_cast<size_t>(d)] != first.shape[static_cast<size_t>(d)])
        return node_error(node, "input " + std::to_string(i) + " has shape " + shape_str(v.shape) +
                                    ", which differs from input 0 (" + shape_str(first.shape) +
                                    ") outside axis " + std::to_string(*axis));
    }
    out[static_cast<size_t>(*axis)] += v.shape[static_cast<size_t>(*axis)];
  }
  set_output(graph, node, 0, first.dtype, out);
  return Status::ok();
}

// Elements before `axis` (outer) and from `axis` on (inner) of `shape`.
void split_at(const Shape& shape, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (size_t d = 0; d < shape.size(); ++d) (static_cast<int64_t>(d) < axis ? *outer : *inner) *= shape[d];
}

int64_t concat_axis(const Node& node, int64_t rank) {
  int64_t a = node.attr_int("axis", 0);
  return a < 0 ? a + rank : a;
}

Status concat_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                        std::vector<Tensor>& outputs) {
  Tensor& y = outputs[0];
  int64_t axis = concat_axis(node, y.rank());
  int64_t elem = dtype_size(y.dtype());
  int64_t outer, out_inner;
  split_at(y.shape(), axis, &outer, &out_inner);
  int64_t offset = 0;  // elements of the output row already filled by earlier inputs
  for (const Tensor* x : inputs) {
    int64_t x_outer, inner;
    split_at(x->shape(), axis, &x_outer, &inner);
    for (int64_t o = 0; o < outer && inner > 0; ++o)
      std::memcpy(y.raw() + (o * out_inner + offset) * elem, x->raw() + o * inner * elem,
                  static_cast<size_t>(inner * elem));
    offset += inner;
  }
  return Status::ok();
}

// Vectors a thread of the slab kernel moves per iteration (loads first, then stores).
constexpr int64_t kSlabUnroll = 4;

struct Subsample {
  int64_t step = 1, in_h = 1, in_w = 1, out_h = 1, out_w = 1;
};

// One input's slab: `inner` elements a row written at column `offset` of the output's rows of
// `out_inner`. `sub` (aotc.SubsampleConcat): the input is [N, in_h, in_w, inner] read at pixels
// (n, p*step, q*step) of the output's [N, out_h, out_w] grid; step 1 reads it in order.
KernelStep slab_step(const Node& node, size_t i, const Value& x, const Value& y, int64_t slab_numel, int64_t inner,
                     int64_t out_inner, int64_t offset, const Subsample& sub, const std::string& comment) {
  // 16-byte accesses where the slab's rows, the output's rows and the offset are whole vectors:
  // every buffer starts 256-byte aligned (arena values and weights by the planner / blob
  // layout, inputs and outputs checked by run(), views alias a buffer's start).
  const int64_t es = dtype_size(y.dtype), v = es > 0 && es < 16 ? 16 / es : 1;
  const int64_t vec = v > 1 && inner % v == 0 && out_inner % v == 0 && offset % v == 0 ? v : 1;
  const int64_t reach = std::max(y.numel(), x.numel());
  KernelStep k;
  k.template_name = "concat_slab";
  k.holes = {{"T", bits_c_type(y.dtype)},
             {"V", vec > 1 ? "uint4" : bits_c_type(y.dtype)},
             {"VEC", int_literal(vec)},
             {"I", reach < (int64_t{1} << 31) - 1 ? "int" : "long long"},
             {"in_inner", int_literal(inner)},
             {"out_inner", int_literal(out_inner)},
             {"out_offset", int_literal(offset)},
             {"numel", int_literal(slab_numel)},
             {"STEP", int_literal(sub.step)},
             {"IN_H", int_literal(sub.in_h)},
             {"IN_W", int_literal(sub.in_w)},
             {"OUT_H", int_literal(sub.out_h)},
             {"OUT_W", int_literal(sub.out_w)},
             {"UNROLL", int_literal(kSlabUnroll)},
             {"comment", comment}};
  k.args = {node.inputs[i], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for((slab_numel / vec + kSlabUnroll - 1) / kSlabUnroll, 256);
  return k;
}

// Input i's slab is copied by the kernel that writes another input in place: the Concat's
// attribute slab_copied = [i, j] (input i copied by input j's producer; opt/slab_into_producer.cc).
bool slab_copied_elsewhere(const Node& node, size_t i) {
  const std::vector<int64_t> copied = node.attr_ints("slab_copied");
  return !copied.empty() && copied[0] == static_cast<int64_t>(i);
}

Expected<Lowering> concat_lower(const Node& node, const Graph& graph) {
  const Value& y = output_value(graph, node, 0);
  int64_t axis = concat_axis(node, static_cast<int64_t>(y.shape.size()));
  int64_t outer, out_inner;
  split_at(y.shape, axis, &outer, &out_inner);
  Lowering l;
  int64_t offset = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& x = input_value(graph, node, i);
    int64_t x_outer, inner;
    split_at(x.shape, axis, &x_outer, &inner);
    // An input its producer wrote into the output's rows already (opt/concat_in_place.cc), or one
    // that kernel copies besides (opt/slab_into_producer.cc).
    if (x.numel() > 0 && x.stored_in != node.outputs[0] && !slab_copied_elsewhere(node, i)) {
      const std::string comment = "Concat input " + std::to_string(i) + " " + shape_str(x.shape) + " into " +
                                  shape_str(y.shape) + " along axis " + std::to_string(axis);
      KernelStep k = slab_step(node, i, x, y, x.numel(), inner, out_inner, offset, Subsample{}, comment);
      l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    }
    offset += inner;
  }
  return l;
}

// aotc.SubsampleConcat: inputs [N, H_i, W_i, C_i] (one dtype, rank 4), attribute `steps` (one int
// >= 1 per input); output [N, P, Q, sum C_i] with
//   y[n, p, q, off_i + c] = x_i[n, p * steps[i], q * steps[i], c],  off_i = C_0 + ... + C_(i-1),
// where P = ceil(H_i / steps[i]) and Q = ceil(W_i / steps[i]) agree for every input. A channel
// concatenation that also takes the pixels a strided 1x1 convolution would read, so that
// opt/merge_projection_shortcut can merge a stride-2 projection shortcut (ResNet's downsample in
// layers 2-4) into its block's last convolution without a separate subsampling pass.
Status subsample_concat_infer(Node& node, Graph& graph) {
  if (node.inputs.empty()) return node_error(node, "expects at least 1 input");
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const std::vector<int64_t> steps = node.attr_ints("steps");
  if (steps.size() != node.inputs.size())
    return node_error(node, "attribute 'steps' has " + std::to_string(steps.size()) + " entries for " +
                                std::to_string(node.inputs.size()) + " inputs");
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (node.inputs[i] == kNoValue) return node_error(node, "input " + std::to_string(i) + " is missing");
  const DType dtype = input_value(graph, node, 0).dtype;
  Shape out;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& v = input_value(graph, node, i);
    if (v.dtype == DType::kString || v.dtype == DType::kUndefined || v.dtype != dtype)
      return node_error(node, "input " + std::to_string(i) + " has dtype " + dtype_name(v.dtype) +
                                  ", input 0 has " + dtype_name(dtype));
    if (v.shape.size() != 4)
      return node_error(node, "input " + std::to_string(i) + " has rank " + std::to_string(v.shape.size()) +
                                  ", expected 4 ([N, H, W, C])");
    if (steps[i] < 1) return node_error(node, "steps[" + std::to_string(i) + "] must be >= 1");
    const Shape grid = {v.shape[0], (v.shape[1] + steps[i] - 1) / steps[i], (v.shape[2] + steps[i] - 1) / steps[i]};
    if (i == 0) {
      out = {grid[0], grid[1], grid[2], 0};
    } else if (grid[0] != out[0] || grid[1] != out[1] || grid[2] != out[2]) {
      return node_error(node, "input " + std::to_string(i) + " " + shape_str(v.shape) + " at step " +
                                  std::to_string(steps[i]) + " covers pixel grid " + shape_str(grid) + ", input 0 covers " +
                                  shape_str({out[0], out[1], out[2]}));
    }
    out[3] += v.shape[3];
  }
  set_output(graph, node, 0, dtype, out);
  return Status::ok();
}

Status subsample_concat_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                                  std::vector<Tensor>& outputs) {
  Tensor& y = outputs[0];
  const std::vector<int64_t> steps = node.attr_ints("steps");
  const int64_t es = dtype_size(y.dtype()), n = y.shape()[0], ph = y.shape()[1], qw = y.shape()[2], cy = y.shape()[3];
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = *inputs[i];
    const int64_t h = x.shape()[1], w = x.shape()[2], c = x.shape()[3], s = steps[i];
    for (int64_t b = 0; b < n; ++b)
      for (int64_t p = 0; p < ph; ++p)
        for (int64_t q = 0; q < qw; ++q)
          std::memcpy(y.raw() + (((b * ph + p) * qw + q) * cy + offset) * es, x.raw() + (((b * h + p * s) * w + q * s) * c) * es,
                      static_cast<size_t>(c * es));
    offset += c;
  }
  return Status::ok();
}

Expected<Lowering> subsample_concat_lower(const Node& node, const Graph& graph) {
  const Value& y = output_value(graph, node, 0);
  const std::vector<int64_t> steps = node.attr_ints("steps");
  const int64_t pixels = y.shape[0] * y.shape[1] * y.shape[2];
  Lowering l;
  int64_t offset = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& x = input_value(graph, node, i);
    const int64_t c = x.shape[3];
    if (pixels * c > 0 && x.stored_in != node.outputs[0] && !slab_copied_elsewhere(node, i)) {
      const Subsample sub{steps[i], x.shape[1], x.shape[2], y.shape[1], y.shape[2]};
      const std::string comment = "SubsampleConcat input " + std::to_string(i) + " " + shape_str(x.shape) + " at step " +
                                  std::to_string(steps[i]) + " into " + shape_str(y.shape);
      KernelStep k = slab_step(node, i, x, y, pixels * c, c, y.shape[3], offset, sub, comment);
      l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
    }
    offset += c;
  }
  return l;
}

}  // namespace

void register_concat_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Concat";
  def.import = concat_import;
  def.infer = concat_infer;
  def.reference = concat_reference;
  def.lower = concat_lower;
  registry.add(def);

  OpDef sub;
  sub.op_type = "SubsampleConcat";
  sub.domain = "aotc";
  sub.infer = subsample_concat_infer;
  sub.reference = subsample_concat_reference;
  sub.lower = subsample_concat_lower;
  registry.add(sub);
}

}  // namespace aotc
