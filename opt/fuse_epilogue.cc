// Epilogue fusion: Conv/Gemm (+ per-channel constant bias Add) (+ residual Add of exactly the
// output shape, either operand order) (+ one epilogue activation) -> one aotc.FusedConv /
// aotc.FusedGemm with inputs (X, W, B|_, Residual|_) computing y = act(conv + b + r).
// The fused node takes the place of the LAST node of the chain: its inputs (X, W, the residual)
// are all defined before that point and the intermediates had no other consumer, so the order
// stays topological without moving anything else.
#include <vector>

#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {

namespace {

enum class Anchor { kNone, kConv, kGemm };

Anchor anchor_kind(const Node& n) {
  if (n.domain.empty() && n.op_type == "Conv") return Anchor::kConv;
  if (n.domain.empty() && n.op_type == "Gemm") return Anchor::kGemm;
  if (n.domain == "aotc" && n.op_type == "FusedConv") return Anchor::kConv;
  if (n.domain == "aotc" && n.op_type == "FusedGemm") return Anchor::kGemm;
  return Anchor::kNone;
}

// A two-input Add with `v` as one operand whose output has v's dtype and shape; returns the
// other operand (kNoValue if the node does not qualify).
ValueId add_partner(const Graph& graph, const Node& add, ValueId v) {
  if (!add.domain.empty() || add.op_type != "Add" || add.inputs.size() != 2 || add.outputs.size() != 1)
    return kNoValue;
  ValueId other = add.inputs[0] == v ? add.inputs[1] : add.inputs[1] == v ? add.inputs[0] : kNoValue;
  if (other == kNoValue || other == v) return kNoValue;
  const Value &a = graph.value(v), &out = graph.value(add.outputs[0]);
  if (out.dtype != a.dtype || out.shape != a.shape || graph.value(other).dtype != a.dtype) return kNoValue;
  return other;
}

// Per-output-channel view of constant `c` added to conv output shape `y` ([N, M, ...]): all
// dims of c (right-aligned) are 1 except possibly the channel dim, which is 1 or M. Returns the
// bias as a rank-1 [M] tensor, or an empty tensor if c is not of that form.
Tensor channel_bias(const Tensor& c, const Shape& y) {
  const int64_t r = static_cast<int64_t>(y.size()), k = c.rank();
  if (r < 2 || k > r) return Tensor();
  const int64_t m = y[1];
  bool per_channel = false;
  for (int64_t j = 0; j < k; ++j) {
    int64_t dim = j + (r - k), size = c.shape()[static_cast<size_t>(j)];
    if (dim == 1 && size == m) per_channel = true;
    else if (size != 1) return Tensor();
  }
  Tensor bias(c.dtype(), {m});
  for (int64_t i = 0; i < m; ++i) bias.set(i, c.get(per_channel ? i : 0));
  return bias;
}

// A constant Gemm bias that broadcasts along rows of the [M, N] output: [N], [1, N], [1], scalar.
bool is_row_bias(const Tensor& c, const Shape& y) {
  if (c.rank() > 2 || y.size() != 2) return false;
  if (c.rank() == 2 && c.shape()[0] != 1) return false;
  int64_t last = c.rank() == 0 ? 1 : c.shape().back();
  return last == 1 || last == y[1];
}

struct Chain {
  std::vector<int> nodes;       // chain node indices after the anchor, in order
  ValueId bias = kNoValue;      // a new bias input (constant), if absorbed
  Tensor bias_data;             // conv: [M] tensor to add as a constant
  ValueId residual = kNoValue;
  int activation = -1;
  ValueId output = kNoValue;
};

Chain match_chain(const Graph& graph, const std::vector<std::vector<int>>& consumers, const Node& anchor,
                  Anchor kind) {
  Chain ch;
  bool fused = anchor.domain == "aotc";
  bool has_bias = anchor.input(2) != kNoValue;
  bool has_residual = fused && anchor.input(3) != kNoValue;
  bool has_act = fused && has_activation(anchor);
  ValueId y = anchor.outputs.size() == 1 ? anchor.outputs[0] : kNoValue;
  ch.output = y;
  if (y == kNoValue || has_act) return ch;

  int next = graph.sole_reader(consumers, y);
  // 1. bias Add of a constant, only when there is no bias yet and nothing after it was absorbed.
  if (next >= 0 && !has_bias && !has_residual) {
    const Node& add = graph.nodes[static_cast<size_t>(next)];
    ValueId c = add_partner(graph, add, y);
    if (c != kNoValue && graph.value(c).is_constant()) {
      const Tensor& data = *graph.value(c).constant;
      const Shape& ys = graph.value(y).shape;
      bool ok = false;
      if (kind == Anchor::kConv) {
        ch.bias_data = channel_bias(data, ys);
        ok = ch.bias_data.rank() == 1;
      } else if (is_row_bias(data, ys)) {
        ch.bias = c;  // Gemm's C broadcasts unidirectionally: the constant is used as it is
        ok = true;
      }
      if (ok) {
        ch.nodes.push_back(next);
        y = add.outputs[0];
        next = graph.sole_reader(consumers, y);
      }
    }
  }
  // 2. residual Add of a tensor of exactly the output's shape.
  if (next >= 0 && !has_residual) {
    const Node& add = graph.nodes[static_cast<size_t>(next)];
    ValueId r = add_partner(graph, add, y);
    if (r != kNoValue && graph.value(r).shape == graph.value(y).shape) {
      ch.residual = r;
      ch.nodes.push_back(next);
      y = add.outputs[0];
      next = graph.sole_reader(consumers, y);
    }
  }
  // 3. one activation the epilogue can compute from attributes alone.
  if (next >= 0) {
    const Node& act = graph.nodes[static_cast<size_t>(next)];
    const bool on_gemm = kind == Anchor::kGemm ? gemm_activation_changes_kernel(graph) : conv_runs_as_gemm(graph, anchor);
    if (epilogue_may_absorb(graph, act, on_gemm) && act.outputs.size() == 1 && act.outputs[0] != kNoValue &&
        graph.value(act.outputs[0]).dtype == graph.value(y).dtype) {
      ch.activation = next;
      ch.nodes.push_back(next);
      y = act.outputs[0];
    }
  }
  ch.output = y;
  return ch;
}

// Fuses the chain starting at graph.nodes[index] if it absorbs something and the fused op's
// shape inference accepts the result; true if the graph changed.
bool try_fuse(Graph& graph, size_t index, Anchor kind, const OpRegistry& registry) {
  std::vector<std::vector<int>> consumers = graph.consumers();
  Chain ch = match_chain(graph, consumers, graph.nodes[index], kind);
  if (ch.nodes.empty()) return false;

  const Node& anchor = graph.nodes[index];
  Node fused;
  fused.name = anchor.name;
  fused.op_type = kind == Anchor::kConv ? "FusedConv" : "FusedGemm";
  fused.domain = "aotc";
  fused.attrs = anchor.attrs;
  fused.inputs = {anchor.input(0), anchor.input(1), anchor.input(2), anchor.input(3)};
  if (anchor.domain.empty()) fused.inputs[3] = kNoValue;
  if (kind == Anchor::kGemm && ch.bias != kNoValue) {
    fused.inputs[2] = ch.bias;
    fused.attrs["beta"] = Attribute::of_float(1.0f);  // beta had no effect without C
  }
  if (ch.residual != kNoValue) fused.inputs[3] = ch.residual;
  if (ch.activation >= 0) store_activation(fused, graph.nodes[static_cast<size_t>(ch.activation)]);
  fused.outputs = {ch.output};
  if (ch.bias_data.rank() == 1) {
    std::string base = graph.value(anchor.outputs[0]).name + "_bias";
    fused.inputs[2] = graph.add_constant(graph.unique_name(base), std::move(ch.bias_data));
  }
  // The fused op's own checks decide (dtype, layout...), its shape inference and its lowering
  // both: a fused node codegen could not emit would be worse than the unfused chain. On refusal
  // the chain stays as it was.
  Value saved = graph.value(ch.output);
  const OpDef* def = registry.find(fused.op_type, fused.domain);
  bool accepted = infer_node(fused, graph, registry).is_ok() && (!def->lower || def->lower(fused, graph).is_ok());
  if (!accepted) {
    graph.value(ch.output) = saved;
    return false;
  }
  const size_t last = static_cast<size_t>(ch.nodes.back());
  std::vector<char> drop(graph.nodes.size(), 0);
  drop[index] = 1;
  for (int n : ch.nodes) drop[static_cast<size_t>(n)] = 1;
  std::vector<Node> out;
  out.reserve(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (n == last) out.push_back(std::move(fused));
    else if (!drop[n]) out.push_back(std::move(graph.nodes[n]));
  }
  graph.nodes = std::move(out);
  return true;
}

}  // namespace

Expected<bool> fuse_epilogue(Graph& graph) {
  const OpRegistry& registry = default_registry();
  const bool have_conv = registry.find("FusedConv", "aotc") != nullptr;
  const bool have_gemm = registry.find("FusedGemm", "aotc") != nullptr;
  bool changed = false;
  // Anchors whose chain was refused are remembered by output value, so they are not retried.
  std::vector<char> refused;
  for (bool again = true; again;) {
    again = false;
    refused.resize(graph.values.size(), 0);
    for (size_t n = 0; n < graph.nodes.size() && !again; ++n) {
      const Node& node = graph.nodes[n];
      Anchor kind = anchor_kind(node);
      if (kind == Anchor::kNone || (kind == Anchor::kConv && !have_conv) ||
          (kind == Anchor::kGemm && !have_gemm) || node.outputs.size() != 1 || node.outputs[0] == kNoValue ||
          refused[static_cast<size_t>(node.outputs[0])])
        continue;
      ValueId anchor_out = node.outputs[0];
      again = try_fuse(graph, n, kind, registry);
      if (!again) {
        refused.resize(graph.values.size(), 0);
        refused[static_cast<size_t>(anchor_out)] = 1;
      }
    }
    changed = changed || again;
  }
  return changed;
}

}  // namespace aotc
