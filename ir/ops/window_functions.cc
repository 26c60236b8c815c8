// BlackmanWindow, HammingWindow, HannWindow (opset 17): a generalised cosine window of `size`
// points, periodic (default) or symmetric. The size is a compile-time constant (the output shape
// depends on it), so every node folds to a constant while importing and needs no kernel.
#include <cmath>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kWindowOutTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16};

Status window_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kInt32, DType::kInt64}));
  if (input_value(graph, node, 0).numel() != 1) return node_error(node, "size must be a scalar");
  Expected<const Tensor*> size = expect_constant(node, graph, 0, "the window length is the output shape");
  if (!size) return size.status();
  const int64_t n = (*size)->get_int(0);
  if (n < 0) return node_error(node, "size must be >= 0, it is " + std::to_string(n));
  const int64_t dt = node.attr_int("output_datatype", 1);
  const DType out = static_cast<DType>(dt);
  bool allowed = false;
  for (DType t : kWindowOutTypes) allowed = allowed || (static_cast<int64_t>(t) == dt);
  if (!allowed)
    return node_error(node, "output_datatype " + std::to_string(dt) + " is not supported (float, float16, double, bfloat16)");
  if (node.attr_int("periodic", 1) != 0 && node.attr_int("periodic", 1) != 1)
    return node_error(node, "periodic must be 0 or 1");
  set_output(graph, node, 0, out, {n});
  return Status::ok();
}

// w[i] = a0 - a1 cos(2 pi i / M) + a2 cos(4 pi i / M), M = N (periodic) or N - 1 (symmetric).
Status cosine_window(const Node& node, Tensor& y, double a0, double a1, double a2) {
  const int64_t n = y.numel();
  const bool periodic = node.attr_int("periodic", 1) != 0;
  const double m = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
  const double kPi = 3.14159265358979323846;
  for (int64_t i = 0; i < n; ++i) {
    const double t = m > 0 ? 2.0 * kPi * static_cast<double>(i) / m : 0.0;
    y.set(i, a0 - a1 * std::cos(t) + a2 * std::cos(2.0 * t));
  }
  return Status::ok();
}

Status hann_reference(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& out) {
  return cosine_window(node, out[0], 0.5, 0.5, 0.0);
}
Status hamming_reference(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& out) {
  return cosine_window(node, out[0], 25.0 / 46.0, 21.0 / 46.0, 0.0);
}
Status blackman_reference(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>& out) {
  return cosine_window(node, out[0], 0.42, 0.5, 0.08);
}

}  // namespace

void register_window_function_ops(OpRegistry& registry) {
  struct Row {
    const char* name;
    Status (*reference)(const Node&, const std::vector<const Tensor*>&, std::vector<Tensor>&);
  };
  for (const Row& r : {Row{"HannWindow", hann_reference}, Row{"HammingWindow", hamming_reference},
                       Row{"BlackmanWindow", blackman_reference}}) {
    OpDef def;
    def.op_type = r.name;
    def.infer = window_infer;
    def.reference = r.reference;
    // No lower: infer() requires a constant size, so the node always folds while importing.
    registry.add(def);
  }
}

}  // namespace aotc
