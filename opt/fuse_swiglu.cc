// fuse_swiglu: the gated SiLU that LLaMA-style MLPs write out op by op,
//   y = Mul(Mul(g, Sigmoid(g)), u)      (any operand order of both Muls)
// with g and u of one shape, becomes one SwiGLU(g, u) {alpha = 1} node (ONNX opset 28:
// Swish_alpha(A) * B): one kernel that reads g and u once, instead of three that write and re-read
// two intermediates (LLaMA's MLP at batch 32: Sigmoid 24 us + Mul 23 us + Mul a layer, H200,
// docs/results.md ninth session). The same function: x * sigmoid(x) = x / (1 + exp(-x)); the fused
// kernel rounds once (in fp32 for 16-bit storage) where the written-out form rounds three times.
// Every intermediate must have exactly one reader and not be a graph output. Runs before
// matmul_to_gemm, which would otherwise sink the gate GEMM's reshape past the Sigmoid alone.
#include <set>

#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {
namespace {

bool is_op(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

bool is_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

}  // namespace

Expected<bool> fuse_swiglu(Graph& graph) {
  const OpRegistry& registry = default_registry();
  const std::vector<int> producers = graph.producers();
  const std::vector<std::vector<int>> consumers = graph.consumers();
  auto sole_reader = [&](ValueId v, int reader) {
    if (v == kNoValue || graph.is_graph_output(v)) return false;
    const auto& c = consumers[static_cast<size_t>(v)];
    return c.size() == 1 && c[0] == reader;
  };
  auto producer = [&](ValueId v) { return v == kNoValue ? -1 : producers[static_cast<size_t>(v)]; };
  // The SiLU s = Mul(g, Sigmoid(g)) read only by `reader`: g, else kNoValue. Fills `nodes`.
  auto silu_input = [&](ValueId s, int reader, std::set<int>& nodes) -> ValueId {
    const int m = producer(s);
    if (m < 0 || !sole_reader(s, reader)) return kNoValue;
    const Node& mul = graph.nodes[static_cast<size_t>(m)];
    if (!is_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1) return kNoValue;
    for (int side = 0; side < 2; ++side) {
      const ValueId g = mul.inputs[static_cast<size_t>(side)], sig = mul.inputs[static_cast<size_t>(1 - side)];
      const int p = producer(sig);
      if (p < 0 || !sole_reader(sig, m)) continue;
      const Node& sn = graph.nodes[static_cast<size_t>(p)];
      if (!is_op(sn, "Sigmoid") || sn.inputs.size() != 1 || sn.inputs[0] != g) continue;
      nodes.insert(m);
      nodes.insert(p);
      return g;
    }
    return kNoValue;
  };
  std::set<int> removed;
  std::vector<std::pair<int, Node>> replaced;  // at the outer Mul's index
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& y = graph.nodes[i];
    if (!is_op(y, "Mul") || y.inputs.size() != 2 || y.outputs.size() != 1 || removed.count(static_cast<int>(i))) continue;
    for (int side = 0; side < 2; ++side) {
      std::set<int> nodes;
      const ValueId g = silu_input(y.inputs[static_cast<size_t>(side)], static_cast<int>(i), nodes);
      const ValueId u = y.inputs[static_cast<size_t>(1 - side)];
      if (g == kNoValue || u == kNoValue) continue;
      const Value& gv = graph.value(g);
      const Value& uv = graph.value(u);
      const Value& yv = graph.value(y.outputs[0]);
      if (!is_float(gv.dtype) || gv.dtype != uv.dtype || gv.dtype != yv.dtype || gv.shape != uv.shape ||
          gv.shape != yv.shape)
        continue;
      bool taken = false;
      for (int n : nodes) taken = taken || removed.count(n);
      if (taken) continue;
      Node s{y.name, "SwiGLU", "", {g, u}, {y.outputs[0]}, {{"alpha", Attribute::of_float(1.0f)}}};
      if (!infer_node(s, graph, registry).is_ok()) continue;
      removed.insert(nodes.begin(), nodes.end());
      removed.insert(static_cast<int>(i));
      replaced.emplace_back(static_cast<int>(i), std::move(s));
      break;
    }
  }
  if (replaced.empty()) return false;
  std::vector<Node> out;
  out.reserve(graph.nodes.size());
  size_t next = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (next < replaced.size() && replaced[next].first == static_cast<int>(i)) {
      out.push_back(std::move(replaced[next++].second));
    } else if (!removed.count(static_cast<int>(i))) {
      out.push_back(std::move(graph.nodes[i]));
    }
  }
  graph.nodes = std::move(out);
  return true;
}

}  // namespace aotc
