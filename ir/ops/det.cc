// Det: determinants of the trailing [M, M] matrices of a float tensor [*, M, M] -> [*].
// CPU reference: LU decomposition with partial pivoting in double (exact for the small
// matrices models use). Kernel: templates/det.cu.in, one thread per matrix, same algorithm.
#include <cmath>
#include <utility>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

Status det_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16}));
  const Value& x = input_value(graph, node, 0);
  const size_t r = x.shape.size();
  if (r < 2 || x.shape[r - 1] != x.shape[r - 2])
    return node_error(node, "input must be [*, M, M], it is " + shape_str(x.shape));
  if (x.shape[r - 1] > 64) return node_error(node, "matrices larger than 64x64 are not supported");
  set_output(graph, node, 0, x.dtype, Shape(x.shape.begin(), x.shape.end() - 2));
  return Status::ok();
}

Status det_reference(const Node&, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  const int64_t m = x.shape().back();
  const int64_t count = outputs[0].numel();
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < count; ++b) {
    for (int64_t i = 0; i < m * m; ++i) a[i] = x.get(b * m * m + i);
    double det = 1.0;
    for (int64_t c = 0; c < m && det != 0.0; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[r * m + c]) > std::fabs(a[p * m + c])) p = r;
      if (a[p * m + c] == 0.0) { det = 0.0; break; }
      if (p != c) {
        for (int64_t k = 0; k < m; ++k) std::swap(a[p * m + k], a[c * m + k]);
        det = -det;
      }
      det *= a[c * m + c];
      for (int64_t r = c + 1; r < m; ++r) {
        const double f = a[r * m + c] / a[c * m + c];
        for (int64_t k = c; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
      }
    }
    outputs[0].set(b, det);
  }
  return Status::ok();
}


std::string acc_type(DType t) { return t == DType::kFloat64 ? "double" : "float"; }

LoweredStep kernel_step(KernelStep k) { return LoweredStep{LoweredStep::Kind::kKernel, std::move(k), {}}; }

Expected<Lowering> det_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  Lowering l;
  if (y.numel() == 0) return l;
  KernelStep k;
  k.template_name = "det";
  k.holes = {{"comment", "Det " + shape_str(x.shape) + " " + dtype_name(x.dtype)},
             {"T", dtype_c_type(x.dtype)}, {"ACC", acc_type(x.dtype)},
             {"M", std::to_string(x.shape.back())}, {"COUNT", int_literal(y.numel())}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{64, 1, 1};
  k.grid = grid_for(y.numel(), 64);
  l.steps.push_back(kernel_step(k));
  return l;
}

}  // namespace

void register_det_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Det";
  def.infer = det_infer;
  def.reference = det_reference;
  def.lower = det_lower;
  registry.add(def);
}

}  // namespace aotc
