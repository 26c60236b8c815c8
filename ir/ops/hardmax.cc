// Hardmax: 1 at the first maximum of each row along `axis`, 0 elsewhere. Canonical form as
// LogSoftmax (log_softmax.cc): opset < 13 coerces the input to 2-D at axis (default 1), so a row
// spans every dim from axis on ("reduce_trailing" = 1); opset 13 uses one axis (default -1).
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kHardmaxTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

Status hardmax_import(Node& node, Graph&, int64_t opset) {
  if (opset < 13) {
    if (!node.has_attr("axis")) node.attrs["axis"] = Attribute::of_int(1);
    node.attrs["reduce_trailing"] = Attribute::of_int(1);
  } else if (!node.has_attr("axis")) {
    node.attrs["axis"] = Attribute::of_int(-1);
  }
  return Status::ok();
}

Status hardmax_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kHardmaxTypes));
  const Value& x = input_value(graph, node, 0);
  Expected<int64_t> axis = normalize_axis(node, node.attr_int("axis", -1), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

struct RowDims {
  int64_t outer = 1, n = 1, inner = 1;
};

RowDims row_dims(const Node& node, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  const bool trailing = node.attr_int("reduce_trailing", 0) != 0;
  RowDims d;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t v = shape[static_cast<size_t>(i)];
    if (i < axis) d.outer *= v;
    else if (i == axis || trailing) d.n *= v;
    else d.inner *= v;
  }
  return d;
}

Status hardmax_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const RowDims d = row_dims(node, x.shape());
  for (int64_t o = 0; o < d.outer; ++o)
    for (int64_t c = 0; c < d.inner; ++c) {
      const int64_t base = o * d.n * d.inner + c;
      if (d.n == 0) continue;
      int64_t best = 0;
      for (int64_t j = 1; j < d.n; ++j)
        if (x.get(base + j * d.inner) > x.get(base + best * d.inner)) best = j;  // strict: first max wins
      outputs[0].set(base + best * d.inner, 1.0);  // the rest stays zero
    }
  return Status::ok();
}

Expected<Lowering> hardmax_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  const RowDims d = row_dims(node, x.shape);
  KernelStep k;
  k.template_name = "hardmax";
  k.holes = {{"comment", "Hardmax over " + shape_str(x.shape) + " as [" + std::to_string(d.outer) + ", " +
                             std::to_string(d.n) + ", " + std::to_string(d.inner) + "] " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"OUTER", int_literal(d.outer)},
             {"N", int_literal(d.n)},
             {"INNER", int_literal(d.inner)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(d.outer * d.inner, 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_hardmax_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Hardmax";
  def.import = hardmax_import;
  def.infer = hardmax_infer;
  def.reference = hardmax_reference;
  def.lower = hardmax_lower;
  registry.add(def);
}

}  // namespace aotc
