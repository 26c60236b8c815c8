// LpNormalization-22: y = x / ||x||_p along `axis` (p = 1 or 2; default axis -1, p 2); a line whose
// norm is zero gives zeros (the spec's rule instead of 0/0). The norm uses |x| (the definition of
// an Lp norm). Kernel: templates/lp_normalization.cu.in, one thread per line.
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

struct Lines {
  int64_t outer = 1, len = 1, inner = 1;
};

Expected<Lines> lines_of(const Node& node, const Shape& x) {
  auto axis = normalize_axis(node, node.attr_int("axis", -1), static_cast<int64_t>(x.size()));
  if (!axis) return axis.status();
  Lines l;
  for (size_t d = 0; d < x.size(); ++d) {
    if (static_cast<int64_t>(d) < *axis) l.outer *= x[d];
    else if (static_cast<int64_t>(d) == *axis) l.len = x[d];
    else l.inner *= x[d];
  }
  return l;
}

Status lp_norm_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kFloatTypes));
  const int64_t p = node.attr_int("p", 2);
  if (p != 1 && p != 2) return node_error(node, "p " + std::to_string(p) + " is not 1 or 2");
  const Value& x = input_value(graph, node, 0);
  if (x.shape.empty()) return node_error(node, "input 0 is a scalar; it needs an axis");
  // Only the axis is checked here: the line counts are products of dims, formed once a tensor of
  // this shape exists (the reference), not for a shape no tensor could have (a fuzz find, UBSan).
  auto axis = normalize_axis(node, node.attr_int("axis", -1), static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

Status lp_norm_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  auto l = lines_of(node, x.shape());
  if (!l) return l.status();
  const bool l1 = node.attr_int("p", 2) == 1;
  for (int64_t o = 0; o < l->outer; ++o)
    for (int64_t in = 0; in < l->inner; ++in) {
      const int64_t base = o * l->len * l->inner + in;
      double sum = 0;
      for (int64_t k = 0; k < l->len; ++k) {
        const double v = x.get(base + k * l->inner);
        sum += l1 ? std::fabs(v) : v * v;
      }
      const double norm = l1 ? sum : std::sqrt(sum);
      for (int64_t k = 0; k < l->len; ++k)
        outputs[0].set(base + k * l->inner, norm == 0 ? 0.0 : x.get(base + k * l->inner) / norm);
    }
  return Status::ok();
}

Expected<Lowering> lp_norm_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering low;
  if (x.numel() == 0) return low;
  auto l = lines_of(node, x.shape);
  if (!l) return l.status();
  const bool l1 = node.attr_int("p", 2) == 1;
  KernelStep k;
  k.template_name = "lp_normalization";
  k.holes = {{"comment", "LpNormalization p " + std::string(l1 ? "1" : "2") + " over " + shape_str(x.shape) + " " +
                             dtype_name(x.dtype) + ", lines of " + std::to_string(l->len)},
             {"T", dtype_c_type(x.dtype)},
             {"CT", x.dtype == DType::kFloat64 ? "double" : "float"},
             {"L1", l1 ? "true" : "false"},
             {"len", int_literal(l->len)},
             {"inner", int_literal(l->inner)},
             {"lines", int_literal(l->outer * l->inner)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{128, 1, 1};
  k.grid = grid_for(l->outer * l->inner, 128);
  low.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return low;
}

}  // namespace

void register_lp_normalization_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "LpNormalization";
  def.infer = lp_norm_infer;
  def.reference = lp_norm_reference;
  def.lower = lp_norm_lower;
  registry.add(def);
}

}  // namespace aotc
