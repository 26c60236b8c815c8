// merge_qkv_projections: the query, key and value projections of one attention (BERT: three
// nn.Linear of the same hidden states) become one GEMM with the weights side by side, [K, Nq+Nk+Nv]
// (and the biases concatenated), whose output a Split divides back into the three values. Runs
// after fuse_attention, only where the three (or two, when K and V share one) Gemm / FusedGemm
// outputs reach the Attention node's Q/K/V through reshape views alone: fuse_attention_operands
// then reads the Split's parts in place, so the Split costs nothing and the three launches become
// one (BERT-base: 36 GEMM launches fewer per run). Exact: the same dot products.
// merge_strided_qkv_projections (after fuse_attention_operands): the same merge where an
// aotc.StridedAttention already reads the three projections' outputs in place (the dynamo
// exporter's head split by Transpose): one [M, Nq+Nk+Nv] output, each operand's view moved to its
// columns, no Split at all.
#include <algorithm>
#include <cstring>
#include <optional>

#include "ir/op_registry.h"
#include "ir/ops/attention.h"
#include "ir/ops/epilogue.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {
namespace {

// The Gemm / FusedGemm whose output reaches `v` through reshape views read only by the next.
int projection_of(const Graph& g, const std::vector<int>& producers, const std::vector<std::vector<int>>& consumers,
                  ValueId v) {
  for (;;) {
    const int p = producers[static_cast<size_t>(v)];
    if (p < 0) return -1;
    const Node& n = g.nodes[static_cast<size_t>(p)];
    if (is_view_node(n)) {
      v = n.inputs[0];
      if (g.is_graph_output(v) || consumers[static_cast<size_t>(v)].size() != 1) return -1;
      continue;
    }
    const bool gemm = (n.domain.empty() && n.op_type == "Gemm") || (n.domain == "aotc" && n.op_type == "FusedGemm");
    if (!gemm || g.is_graph_output(n.outputs[0]) || consumers[static_cast<size_t>(n.outputs[0])].size() != 1) return -1;
    return p;
  }
}

// The value `v` is a reshape view of (through Reshapes), for comparing the projections' inputs
// (matmul_to_gemm gives each its own [M, K] view of the hidden states).
ValueId view_root(const Graph& g, const std::vector<int>& producers, ValueId v) {
  for (int p = producers[static_cast<size_t>(v)]; p >= 0 && is_view_node(g.nodes[static_cast<size_t>(p)]);
       p = producers[static_cast<size_t>(v)])
    v = g.nodes[static_cast<size_t>(p)].inputs[0];
  return v;
}

// Side by side along N: [K, N1] | [K, N2] (or [N1, K] over [N2, K] when transposed).
Tensor concat_weights(const std::vector<const Tensor*>& ws, bool trans_b) {
  const Shape& s0 = ws[0]->shape();
  const int64_t k = trans_b ? s0[1] : s0[0];
  int64_t n = 0;
  for (const Tensor* w : ws) n += trans_b ? w->shape()[0] : w->shape()[1];
  Tensor out(ws[0]->dtype(), trans_b ? Shape{n, k} : Shape{k, n});
  const size_t es = static_cast<size_t>(dtype_size(ws[0]->dtype()));
  int64_t at = 0;
  for (const Tensor* w : ws) {
    const int64_t ni = trans_b ? w->shape()[0] : w->shape()[1];
    if (trans_b) {
      std::memcpy(out.raw() + static_cast<size_t>(at * k) * es, w->raw(), static_cast<size_t>(ni * k) * es);
    } else {
      for (int64_t r = 0; r < k; ++r)
        std::memcpy(out.raw() + static_cast<size_t>(r * n + at) * es, w->raw() + static_cast<size_t>(r * ni) * es,
                    static_cast<size_t>(ni) * es);
    }
    at += ni;
  }
  return out;
}

// The projections `gs` (Gemm / FusedGemm of the same input) as one Gemm with the weights side by
// side; nullopt when they differ in anything but their weights and biases. `ns`: each one's N.
std::optional<Node> merged_projection(Graph& graph, const std::vector<int>& producers, const std::vector<int>& gs,
                                      std::vector<int64_t>& ns, const std::string& suffix = "_qkv") {
  const Node& g0 = graph.nodes[static_cast<size_t>(gs[0])];
  const bool trans_b = g0.attr_int("transB", 0) != 0;
  const bool with_bias = g0.input(2) != kNoValue;
  std::vector<const Tensor*> ws, bs;
  ns.clear();
  for (int p : gs) {
    const Node& n = graph.nodes[static_cast<size_t>(p)];
    const Value& b = graph.value(n.inputs[1]);
    const Value& y = graph.value(n.outputs[0]);
    const bool ok = view_root(graph, producers, n.inputs[0]) == view_root(graph, producers, g0.inputs[0]) &&
                    graph.value(n.inputs[0]).shape == graph.value(g0.inputs[0]).shape && n.attr_int("transA", 0) == 0 &&
                    (n.attr_int("transB", 0) != 0) == trans_b && n.attr_float("alpha", 1.0f) == g0.attr_float("alpha", 1.0f) &&
                    n.input(3) == kNoValue && !has_activation(n) && b.is_constant() && b.shape.size() == 2 &&
                    b.dtype == graph.value(g0.inputs[1]).dtype && y.shape.size() == 2 && (n.input(2) != kNoValue) == with_bias;
    if (!ok) return std::nullopt;
    if (with_bias) {
      const Value& c = graph.value(n.inputs[2]);
      if (!c.is_constant() || c.dtype != b.dtype || n.attr_float("beta", 1.0f) != 1.0f ||
          (c.shape != Shape{y.shape[1]} && c.shape != Shape{1, y.shape[1]}))
        return std::nullopt;
      bs.push_back(c.constant.get());
    }
    ws.push_back(b.constant.get());
    ns.push_back(y.shape[1]);
  }
  Node merged = g0;
  merged.name = g0.name + suffix;
  const std::string wname = graph.value(g0.inputs[1]).name;
  merged.inputs[1] = graph.add_constant(graph.unique_name(wname + suffix), concat_weights(ws, trans_b));
  if (with_bias) {
    int64_t total = 0;
    for (int64_t n : ns) total += n;
    Tensor bias(bs[0]->dtype(), {total});
    const size_t es = static_cast<size_t>(dtype_size(bias.dtype()));
    int64_t off = 0;
    for (size_t i = 0; i < bs.size(); ++i) {
      std::memcpy(bias.raw() + static_cast<size_t>(off) * es, bs[i]->raw(), static_cast<size_t>(ns[i]) * es);
      off += ns[i];
    }
    merged.inputs[2] = graph.add_constant(graph.unique_name(wname + suffix + "_bias"), std::move(bias));
  }
  merged.outputs = {graph.add_value(graph.unique_name(graph.value(g0.outputs[0]).name + suffix))};
  return merged;
}

// The graph's nodes with the first of `gs` replaced by `replacement` (then `extra`, in order) and
// the other nodes of `gs` dropped.
void replace_projections(Graph& graph, const std::vector<int>& gs, Node replacement, std::vector<Node> extra = {}) {
  const int first = *std::min_element(gs.begin(), gs.end());
  std::vector<Node> nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (static_cast<int>(i) == first) {
      nodes.push_back(std::move(replacement));
      for (Node& e : extra) nodes.push_back(std::move(e));
    } else if (std::find(gs.begin(), gs.end(), static_cast<int>(i)) == gs.end()) {
      nodes.push_back(std::move(graph.nodes[i]));
    }
  }
  graph.nodes = std::move(nodes);
}

// Moves a StridedAttention operand view [base, b, h, s] of a [M, n] buffer into column `offset`
// of a [M, total] buffer. Only views whose batch and row steps are whole rows and whose heads stay
// inside one row (what a projection's head split is); nullopt otherwise.
std::optional<std::vector<int64_t>> widen_view(const std::vector<int64_t>& v, int64_t heads, int64_t head_dim, int64_t n,
                                               int64_t offset, int64_t total) {
  if (v.size() != 4 || n <= 0 || heads <= 0 || v[0] < 0 || v[2] < 0) return std::nullopt;
  const int64_t col = v[0] % n;
  if (v[1] % n != 0 || v[3] % n != 0 || col + (heads - 1) * v[2] + head_dim > n) return std::nullopt;
  return std::vector<int64_t>{v[0] / n * total + col + offset, v[1] / n * total, v[2], v[3] / n * total};
}

}  // namespace

// Both passes: `merge_at(ai, producers, consumers)` tries the attention node at ai and returns true
// when it rewrote the graph; the scan then starts again on fresh producer / consumer lists, until
// a whole scan changes nothing. Dead code is removed at the end.
template <typename MergeAt>
Expected<bool> merge_until_stable(Graph& graph, const char* domain, const char* op_type, MergeAt merge_at) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    const std::vector<int> producers = graph.producers();
    const std::vector<std::vector<int>> consumers = graph.consumers();
    for (size_t ai = 0; ai < graph.nodes.size() && !again; ++ai) {
      const Node& at = graph.nodes[ai];
      if (at.domain != domain || at.op_type != op_type || at.inputs.size() < 3) continue;
      Expected<bool> merged = merge_at(ai, producers, consumers);
      if (!merged) return merged.status();
      if (*merged) changed = again = true;
    }
  }
  if (changed) AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  return changed;
}

Expected<bool> merge_qkv_projections(Graph& graph) {
  const OpRegistry& registry = default_registry();
  return merge_until_stable(graph, "", "Attention", [&](size_t ai, const std::vector<int>& producers,
                                                        const std::vector<std::vector<int>>& consumers) -> Expected<bool> {
      const Node& at = graph.nodes[ai];
      // Only where the fused kernel runs it (and so reads the Split's parts in place).
      if (!attention_runs_fused(at, graph)) return false;
      std::vector<int> gs;
      bool ok = true;
      for (int o = 0; o < 3 && ok; ++o) {
        const int p = projection_of(graph, producers, consumers, at.inputs[static_cast<size_t>(o)]);
        ok = p >= 0;
        if (ok && std::find(gs.begin(), gs.end(), p) == gs.end()) gs.push_back(p);
      }
      if (!ok || gs.size() < 2) return false;
      std::vector<int64_t> ns;
      std::optional<Node> merged = merged_projection(graph, producers, gs, ns);
      if (!merged) return false;
      // The merged product and the Split into the original values.
      const Node& g0 = graph.nodes[static_cast<size_t>(gs[0])];
      const std::string wname = graph.value(g0.inputs[1]).name;
      Node split{g0.name + "_qkv_split", "Split", "",
                 {merged->outputs[0], graph.add_constant(graph.unique_name(wname + "_qkv_split"),
                                                         Tensor::from_int64s({static_cast<int64_t>(ns.size())}, ns))},
                 {}, {{"axis", Attribute::of_int(1)}}};
      for (int p : gs) split.outputs.push_back(graph.nodes[static_cast<size_t>(p)].outputs[0]);
      if (!infer_node(*merged, graph, registry).is_ok()) return false;
      AOTC_RETURN_IF_ERROR(infer_node(split, graph, registry));
      // Placed where the first projection was (all of them read the same input, defined by then).
      std::vector<Node> extra;
      extra.push_back(std::move(split));
      replace_projections(graph, gs, std::move(*merged), std::move(extra));
      return true;
  });
}

Expected<bool> merge_strided_qkv_projections(Graph& graph) {
  const OpRegistry& registry = default_registry();
  return merge_until_stable(graph, "aotc", "StridedAttention", [&](size_t ai, const std::vector<int>& producers,
                                                                   const std::vector<std::vector<int>>& consumers) -> Expected<bool> {
      const Node& at = graph.nodes[ai];
      // Each operand is a projection's whole [M, N] output, read by this node alone.
      std::vector<int> gs, of(3, -1);
      bool ok = true;
      for (int o = 0; o < 3 && ok; ++o) {
        const ValueId x = at.inputs[static_cast<size_t>(o)];
        const int p = producers[static_cast<size_t>(x)];
        ok = p >= 0 && !graph.is_graph_output(x);
        if (!ok) break;
        for (int r : consumers[static_cast<size_t>(x)]) ok = ok && r == static_cast<int>(ai);
        const Node& n = graph.nodes[static_cast<size_t>(p)];
        ok = ok && ((n.domain.empty() && n.op_type == "Gemm") || (n.domain == "aotc" && n.op_type == "FusedGemm"));
        if (!ok) break;
        const auto it = std::find(gs.begin(), gs.end(), p);
        of[static_cast<size_t>(o)] = static_cast<int>(it - gs.begin());
        if (it == gs.end()) gs.push_back(p);
      }
      if (!ok || gs.size() < 2) return false;
      std::vector<int64_t> ns;
      std::optional<Node> merged = merged_projection(graph, producers, gs, ns);
      if (!merged) return false;
      int64_t total = 0;
      std::vector<int64_t> offsets;
      for (int64_t n : ns) {
        offsets.push_back(total);
        total += n;
      }
      Node rewritten = at;
      const char* shape_attr[3] = {"q_shape", "k_shape", "v_shape"};
      const char* view_attr[3] = {"q_view", "k_view", "v_view"};
      for (int o = 0; o < 3 && ok; ++o) {
        const std::vector<int64_t> shape = at.attr_ints(shape_attr[o]);
        const bool three_d = shape.size() == 3;
        const int64_t heads = three_d ? at.attr_int(o == 0 ? "q_num_heads" : "kv_num_heads", 0) : (shape.size() == 4 ? shape[1] : 0);
        const int64_t head_dim = three_d ? (heads > 0 ? shape[2] / heads : 0) : (shape.size() == 4 ? shape[3] : 0);
        const size_t g = static_cast<size_t>(of[static_cast<size_t>(o)]);
        auto v = widen_view(at.attr_ints(view_attr[o]), heads, head_dim, ns[g], offsets[g], total);
        ok = v.has_value();
        if (!ok) break;
        rewritten.inputs[static_cast<size_t>(o)] = merged->outputs[0];
        rewritten.attrs[view_attr[o]] = Attribute::of_ints(*v);
      }
      if (!ok || !infer_node(*merged, graph, registry).is_ok() || !infer_node(rewritten, graph, registry).is_ok() ||
          !attention_runs_fused(rewritten, graph))
        return false;
      graph.nodes[ai] = std::move(rewritten);
      replace_projections(graph, gs, std::move(*merged));
      return true;
  });
}

// merge_swiglu_projections: a SwiGLU(g, u) whose gate and up operands are two projections of one
// input with the same N (Gemm / FusedGemm without activation or residual, constant weights, each
// reached through reshape views read by the SwiGLU alone) becomes one GEMM with the weights side
// by side, [K, 2F], and aotc.SwiGLUPacked over its [M, 2F] rows, reshaped (a view) to the
// SwiGLU's output: one GEMM launch fewer per gated MLP and no copy, where the merged product is
// at most one wave of 128 x 128 tiles (LLaMA bs1 on the H200: -41 us of 0.578 ms; docs/perf_notes.md
// v67). Exact: the same dot products and the same SwiGLU expression.
Expected<bool> merge_swiglu_projections(Graph& graph) {
  const OpRegistry& registry = default_registry();
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    const std::vector<int> producers = graph.producers();
    const std::vector<std::vector<int>> consumers = graph.consumers();
    for (size_t si = 0; si < graph.nodes.size() && !again; ++si) {
      const Node& sw = graph.nodes[si];
      if (!sw.domain.empty() || sw.op_type != "SwiGLU" || sw.inputs.size() != 2 || sw.outputs.size() != 1) continue;
      if (sw.inputs[0] == sw.inputs[1]) continue;
      const int gp = projection_of(graph, producers, consumers, sw.inputs[0]);
      const int up = projection_of(graph, producers, consumers, sw.inputs[1]);
      if (gp < 0 || up < 0 || gp == up) continue;
      // At most one wave of 128 x 128 output tiles on the target's SMs: measured on the H200
      // (docs/perf_notes.md v67), LLaMA's batch 1 (1 x 32 tiles) ran 41 us faster with one GEMM
      // than with two latency-bound ones, and its batch 32 (32 x 32 tiles) 20 us slower than with
      // the two products, which then keep their own launches (side_branches may run them side by
      // side).
      const Shape& gshape = graph.value(graph.nodes[static_cast<size_t>(gp)].outputs[0]).shape;
      if (gshape.size() != 2) continue;
      const int64_t tiles = (gshape[0] + 127) / 128 * ((2 * gshape[1] + 127) / 128);
      if (tiles > graph.target.sm_count) continue;
      const std::vector<int> gs = {gp, up};
      std::vector<int64_t> ns;
      std::optional<Node> merged = merged_projection(graph, producers, gs, ns, "_gate_up");
      if (!merged || ns[0] != ns[1]) continue;
      if (!infer_node(*merged, graph, registry).is_ok()) continue;
      // Copies: adding values below may move the graph's value storage.
      const Shape merged_shape = graph.value(merged->outputs[0]).shape;
      const Shape out_shape = graph.value(sw.outputs[0]).shape;
      const std::string out_name = graph.value(sw.outputs[0]).name;
      if (merged_shape.size() != 2 || merged_shape[1] != 2 * ns[0] || merged_shape[0] * ns[0] != shape_numel(out_shape) ||
          graph.value(merged->outputs[0]).dtype != graph.value(sw.outputs[0]).dtype)
        continue;
      const ValueId rows = graph.add_value(graph.unique_name(out_name + "_packed"));
      Node packed{sw.name, "SwiGLUPacked", "aotc", {merged->outputs[0]}, {rows},
                  {{"alpha", Attribute::of_float(sw.attr_float("alpha", 1.0f))}}};
      AOTC_RETURN_IF_ERROR(infer_node(packed, graph, registry));
      const ValueId shape_value = graph.add_constant(
          graph.unique_name(out_name + "_shape"), Tensor::from_int64s({static_cast<int64_t>(out_shape.size())}, out_shape));
      Node unflatten{sw.name + "_unflatten", "Reshape", "", {rows, shape_value}, {sw.outputs[0]}, {}};
      AOTC_RETURN_IF_ERROR(infer_node(unflatten, graph, registry));
      // The merged GEMM, the packed SwiGLU and its view where the first projection was (both
      // projections read one input, defined by then); the other projection and the SwiGLU go.
      std::vector<Node> extra;
      extra.push_back(std::move(packed));
      extra.push_back(std::move(unflatten));
      replace_projections(graph, {gp, up, static_cast<int>(si)}, std::move(*merged), std::move(extra));
      changed = again = true;
    }
  }
  if (changed) AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  return changed;
}

}  // namespace aotc
