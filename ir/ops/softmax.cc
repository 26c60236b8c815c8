// Softmax, numerically stable (x - max). Canonical form after import: attribute "axis" (always
// set) and "reduce_trailing" = 1 for opset < 13, whose input was coerced to 2-D at axis so one
// softmax spans every dim from axis on; opset >= 13 reduces over `axis` alone. Either way the
// input is [outer, n, inner] with the reduction over n.
#include <algorithm>
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/elem_types.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kSoftmaxTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64,
                                          DType::kBFloat16};

Status softmax_import(Node& node, Graph&, int64_t opset) {
  if (opset < 13) {
    if (!node.has_attr("axis")) node.attrs["axis"] = Attribute::of_int(1);
    node.attrs["reduce_trailing"] = Attribute::of_int(1);
  } else if (!node.has_attr("axis")) {
    node.attrs["axis"] = Attribute::of_int(-1);
  }
  return Status::ok();
}

Status softmax_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kSoftmaxTypes));
  const Value& x = input_value(graph, node, 0);
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

struct SoftmaxDims {
  int64_t outer = 1, n = 1, inner = 1;
};

SoftmaxDims softmax_dims(const Node& node, const Shape& shape) {
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  bool trailing = node.attr_int("reduce_trailing", 0) != 0;
  SoftmaxDims d;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t v = shape[static_cast<size_t>(i)];
    if (i < axis) d.outer *= v;
    else if (i == axis || trailing) d.n *= v;
    else d.inner *= v;
  }
  return d;
}

Status softmax_reference(const Node& node, const std::vector<const Tensor*>& inputs,
                         std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  SoftmaxDims d = softmax_dims(node, x.shape());
  // Computed in double (exact for every input dtype) and rounded once on store.
  std::vector<double> e(static_cast<size_t>(d.n));
  for (int64_t o = 0; o < d.outer; ++o) {
    for (int64_t c = 0; c < d.inner; ++c) {
      int64_t base = o * d.n * d.inner + c;
      double m = -INFINITY;
      for (int64_t j = 0; j < d.n; ++j) m = std::max(m, x.get(base + j * d.inner));
      double sum = 0;
      for (int64_t j = 0; j < d.n; ++j) {
        e[static_cast<size_t>(j)] = std::exp(x.get(base + j * d.inner) - m);
        sum += e[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < d.n; ++j) y.set(base + j * d.inner, e[static_cast<size_t>(j)] / sum);
    }
  }
  return Status::ok();
}

Expected<Lowering> softmax_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  SoftmaxDims d = softmax_dims(node, x.shape);
  std::string comment = "Softmax over " + shape_str(x.shape) + " as [" + std::to_string(d.outer) + ", " +
                        std::to_string(d.n) + ", " + std::to_string(d.inner) + "] " + dtype_name(x.dtype);
  std::string ct = x.dtype == DType::kFloat64 ? "double" : "float";
  KernelStep k;
  k.args = {node.inputs[0], node.outputs[0]};
  if (d.inner == 1) {
    // A block per row: the row's elements are contiguous, threads stride through them and
    // reduce with warp shuffles; small rows get one warp, long rows 256 threads.
    int64_t block = std::min<int64_t>(256, std::max<int64_t>(32, (d.n + 31) / 32 * 32));
    k.template_name = "softmax_rows";
    k.holes = {{"T", dtype_c_type(x.dtype)}, {"CT", ct},          {"block", std::to_string(block)},
               {"rows", int_literal(d.outer)}, {"n", int_literal(d.n)}, {"comment", comment}};
    k.block = Dim3{block, 1, 1};
    k.grid = Dim3{std::min<int64_t>(d.outer, 65535LL * 16), 1, 1};
  } else {
    // Reduction over a strided axis: a thread per (outer, inner) column walks the axis; adjacent
    // threads read adjacent columns, so every pass is coalesced.
    k.template_name = "softmax_columns";
    k.holes = {{"T", dtype_c_type(x.dtype)}, {"CT", ct},
               {"outer", int_literal(d.outer)},  {"n", int_literal(d.n)},
               {"inner", int_literal(d.inner)},  {"comment", comment}};
    k.block = Dim3{256, 1, 1};
    k.grid = grid_for(d.outer * d.inner, 256);
  }
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_softmax_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Softmax";
  def.import = softmax_import;
  def.infer = softmax_infer;
  def.reference = softmax_reference;
  def.lower = softmax_lower;
  registry.add(def);
}

}  // namespace aotc
