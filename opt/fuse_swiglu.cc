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

// The SiLU at node `m`: Mul(g, Sigmoid(g)) in either operand order, the Sigmoid read by that Mul
// alone and not a graph output. Returns g and the Sigmoid's index in *sigmoid; else kNoValue.
ValueId silu_of(const Graph& graph, const std::vector<int>& producers, const std::vector<std::vector<int>>& consumers,
                int m, int* sigmoid) {
  const Node& mul = graph.nodes[static_cast<size_t>(m)];
  if (!is_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1) return kNoValue;
  for (int side = 0; side < 2; ++side) {
    const ValueId g = mul.inputs[static_cast<size_t>(side)], sig = mul.inputs[static_cast<size_t>(1 - side)];
    if (g == kNoValue || sig == kNoValue || graph.sole_reader(consumers, sig) != m) continue;
    const int p = producers[static_cast<size_t>(sig)];
    if (p < 0) continue;
    const Node& sn = graph.nodes[static_cast<size_t>(p)];
    if (!is_op(sn, "Sigmoid") || sn.inputs.size() != 1 || sn.inputs[0] != g) continue;
    *sigmoid = p;
    return g;
  }
  return kNoValue;
}

}  // namespace

Expected<bool> fuse_swiglu(Graph& graph) {
  const OpRegistry& registry = default_registry();
  const std::vector<int> producers = graph.producers();
  const std::vector<std::vector<int>> consumers = graph.consumers();
  auto producer = [&](ValueId v) { return v == kNoValue ? -1 : producers[static_cast<size_t>(v)]; };
  // The SiLU s = Mul(g, Sigmoid(g)) read only by `reader`: g, else kNoValue. Fills `nodes`.
  auto silu_input = [&](ValueId s, int reader, std::set<int>& nodes) -> ValueId {
    const int m = producer(s);
    int sigmoid = -1;
    if (m < 0 || graph.sole_reader(consumers, s) != reader) return kNoValue;
    const ValueId g = silu_of(graph, producers, consumers, m, &sigmoid);
    if (g == kNoValue) return kNoValue;
    nodes.insert(m);
    nodes.insert(sigmoid);
    return g;
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

// fuse_silu: the SiLU exporters write out, y = Mul(x, Sigmoid(x)) (either operand order, the
// Sigmoid read by that Mul alone and not a graph output), becomes one Swish(x) {alpha = 1} node
// (ONNX opset 24; the same function x / (1 + exp(-x))): one kernel that reads x once and rounds
// once, instead of a Sigmoid writing a tensor that the Mul reads back with x. EfficientNet writes
// about fifty (every expansion, depthwise and squeeze-excitation reduction). Runs after
// fuse_swiglu, which takes the gated form Mul(Mul(g, Sigmoid(g)), u) whole; the match is the one
// both passes share (silu_of).
Expected<bool> fuse_silu(Graph& graph) {
  const OpRegistry& registry = default_registry();
  const std::vector<int> producers = graph.producers();
  const std::vector<std::vector<int>> consumers = graph.consumers();
  std::vector<bool> drop(graph.nodes.size(), false);
  bool changed = false;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    int sigmoid = -1;
    const ValueId x = silu_of(graph, producers, consumers, static_cast<int>(i), &sigmoid);
    if (x == kNoValue) continue;
    const ValueId y = graph.nodes[i].outputs[0];
    const Value& xv = graph.value(x);
    const Value& yv = graph.value(y);
    if (!is_float(xv.dtype) || xv.dtype != yv.dtype || xv.shape != yv.shape) continue;
    Node s{graph.nodes[i].name, "Swish", "", {x}, {y}, {{"alpha", Attribute::of_float(1.0f)}}};
    if (!infer_node(s, graph, registry).is_ok()) continue;
    graph.nodes[i] = std::move(s);
    drop[static_cast<size_t>(sigmoid)] = true;
    changed = true;
  }
  if (changed) graph.remove_nodes(drop);
  return changed;
}

}  // namespace aotc
