// Range: start, start+delta, ... up to (not including) limit; inputs are scalars of one dtype
// (float, double, float16, bfloat16, int16, int32, int64) and must be constants, since they decide the output
// length. So a Range always folds to a constant; element i is start + i * delta, as numpy's
// arange computes it (exact for the integer types).
#include <cmath>
#include <cstdint>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kRangeTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                        DType::kInt16,   DType::kInt32,   DType::kInt64};

// Number of elements: max(ceil((limit - start) / delta), 0).
Expected<int64_t> range_count(const Node& node, const Tensor& start, const Tensor& limit, const Tensor& delta) {
  if (dtype_is_integer(start.dtype())) {
    int64_t s = start.get_int(0), l = limit.get_int(0), d = delta.get_int(0);
    if (d == 0) return node_error(node, "delta is 0");
    // In 128 bits: limit - start of two int64 values overflows int64 (the corpus's full-range
    // Range read as 0 elements).
    const __int128 span = static_cast<__int128>(l) - s;
    if ((span > 0) != (d > 0) || span == 0) return int64_t{0};
    const __int128 n = (span + d + (d > 0 ? -1 : 1)) / d;
    if (n > INT64_MAX) return node_error(node, "output would have more than 2^63 elements");
    return static_cast<int64_t>(n);
  }
  double s = start.get(0), l = limit.get(0), d = delta.get(0);
  if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
    return node_error(node, "start, limit and delta must be finite and delta non-zero");
  double n = std::ceil((l - s) / d);
  if (n > 1e12) return node_error(node, "output would have " + std::to_string(n) + " elements");
  return n > 0 ? static_cast<int64_t>(n) : int64_t{0};
}

Status range_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 3, 3));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  const Tensor* t[3];
  for (size_t i = 0; i < 3; ++i) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, kRangeTypes));
    if (input_value(graph, node, i).dtype != input_value(graph, node, 0).dtype)
      return node_error(node, "start, limit and delta must have one dtype");
    if (input_value(graph, node, i).numel() != 1) return node_error(node, "input " + std::to_string(i) + " must be a scalar");
    Expected<const Tensor*> c = expect_constant(node, graph, i, "it decides the output length; aotc compiles static shapes");
    if (!c) return c.status();
    t[i] = *c;
  }
  Expected<int64_t> n = range_count(node, *t[0], *t[1], *t[2]);
  if (!n) return n.status();
  set_output(graph, node, 0, input_value(graph, node, 0).dtype, {*n});
  return Status::ok();
}

Status range_reference(const Node&, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  Tensor& y = outputs[0];
  if (dtype_is_integer(y.dtype())) {
    int64_t s = inputs[0]->get_int(0), d = inputs[2]->get_int(0);
    for (int64_t i = 0; i < y.numel(); ++i) y.set_int(i, s + i * d);
  } else if (y.dtype() != DType::kFloat64) {
    // In float, as the ONNX reference (numpy arange on float32 inputs) does; float16 / bfloat16
    // values are then rounded to the output type (numpy's half arange fills through float too).
    float s = static_cast<float>(inputs[0]->get(0)), d = static_cast<float>(inputs[2]->get(0));
    for (int64_t i = 0; i < y.numel(); ++i) y.set(i, s + static_cast<float>(i) * d);
  } else {
    double s = inputs[0]->get(0), d = inputs[2]->get(0);
    for (int64_t i = 0; i < y.numel(); ++i) y.set(i, s + static_cast<double>(i) * d);
  }
  return Status::ok();
}

Expected<Lowering> range_lower(const Node& node, const Graph&) {
  return node_error(node, "is evaluated at compile time (its inputs are constants); an output over the "
                          "constant-folding limit has no GPU kernel");
}

}  // namespace

void register_range_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Range";
  def.infer = range_infer;
  def.reference = range_reference;
  def.lower = range_lower;
  registry.add(def);
}

}  // namespace aotc
