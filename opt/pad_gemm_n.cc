// pad_gemm_n: a 16-bit MatMul (or plain Gemm without C, B as [K, N] or transposed [N, K]) by a
// constant matrix whose N is not a multiple of 8 (GPT-2's
// tied-embedding LM head: N = 50257) has row strides cuBLASLt cannot use with its aligned tensor-core
// kernels (an align-1 kernel ran GPT-2's LM head at 126 TFLOP/s on an H100, 2.5 ms of 8.2 at batch
// 32). The constant is zero-padded to N' = N rounded up to 8 at compile time, the MatMul writes
// [..., N'] and a Slice takes the first N columns (one copy of the output). Exact: the extra
// columns are separate dot products that the Slice drops. Only for outputs of at least
// kPadMinOutputBytes, where the copy costs less than the slow kernel.
#include <cstring>

#include "ir/op_registry.h"
#include "opt/passes.h"

namespace aotc {
namespace {

constexpr int64_t kPadAlign = 8;
constexpr int64_t kPadMinOutputBytes = int64_t{1} << 20;

ValueId add_ints(Graph& g, const std::string& base, std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return g.add_constant(g.unique_name(base), Tensor::from_int64s({n}, v));
}

}  // namespace

Expected<bool> pad_gemm_n(Graph& graph) {
  const OpRegistry& registry = default_registry();
  std::vector<Node> nodes = std::move(graph.nodes);
  graph.nodes.clear();
  bool changed = false;
  for (Node& node : nodes) {
    const bool is_gemm = node.op_type == "Gemm" && node.domain.empty() && node.input(2) == kNoValue &&
                         node.attr_int("transA", 0) == 0;
    const bool candidate = (node.op_type == "MatMul" || is_gemm) && node.domain.empty() &&
                           node.num_present_inputs() == 2 && node.outputs.size() == 1;
    if (!candidate) {
      graph.nodes.push_back(std::move(node));
      continue;
    }
    const Value& a = graph.value(node.inputs[0]);
    const Value& b = graph.value(node.inputs[1]);
    const Value& y = graph.value(node.outputs[0]);
    const bool low = y.dtype == DType::kFloat16 || y.dtype == DType::kBFloat16;
    const bool trans_b = is_gemm && node.attr_int("transB", 0) != 0;
    const int64_t n = b.shape.size() == 2 ? b.shape[trans_b ? 0 : 1] : 0;
    if (!low || !b.is_constant() || b.shape.size() != 2 || a.shape.size() < 2 || n % kPadAlign == 0 || n < kPadAlign ||
        y.numel() * dtype_size(y.dtype) < kPadMinOutputBytes) {
      graph.nodes.push_back(std::move(node));
      continue;
    }
    const int64_t k = b.shape[trans_b ? 1 : 0], np = (n + kPadAlign - 1) / kPadAlign * kPadAlign;
    const size_t es = static_cast<size_t>(dtype_size(b.dtype));
    Tensor padded(b.dtype, trans_b ? Shape{np, k} : Shape{k, np});  // zero-filled
    if (trans_b) {
      std::memcpy(padded.raw(), b.constant->raw(), static_cast<size_t>(n * k) * es);  // extra rows stay 0
    } else {
      for (int64_t r = 0; r < k; ++r)
        std::memcpy(padded.raw() + static_cast<size_t>(r * np) * es, b.constant->raw() + static_cast<size_t>(r * n) * es,
                    static_cast<size_t>(n) * es);
    }
    Shape wide_shape = y.shape;
    wide_shape.back() = np;
    const ValueId wide = graph.add_value(graph.unique_name(y.name + "_padded_n"), y.dtype, wide_shape, true);
    Node mm = node;
    mm.inputs[1] = graph.add_constant(graph.unique_name(b.name + "_padded_n"), std::move(padded));
    mm.outputs[0] = wide;
    AOTC_RETURN_IF_ERROR(registry.find(node.op_type)->infer(mm, graph));
    Node slice;
    slice.name = graph.unique_name(node.name + "_unpad");
    slice.op_type = "Slice";
    slice.inputs = {wide, add_ints(graph, node.name + "_starts", {0}), add_ints(graph, node.name + "_ends", {n}),
                    add_ints(graph, node.name + "_axes", {-1})};
    slice.outputs = {node.outputs[0]};
    AOTC_RETURN_IF_ERROR(registry.find("Slice")->infer(slice, graph));
    graph.nodes.push_back(std::move(mm));
    graph.nodes.push_back(std::move(slice));
    changed = true;
  }
  return changed;
}

}  // namespace aotc
