// matmul_to_gemm: a MatMul of activations [..., K] by a constant [K, N] matrix (nn.Linear as the
// exporters write it: MatMul + Add(bias)) becomes a 2-D Gemm over the flattened rows, so the bias,
// a residual Add and an activation after it can join the GEMM's epilogue (fuse_epilogue anchors
// on Gemm; a separate bias Add re-reads and re-writes the whole output). The row flattening and
// the reshape back are views (no copy). The Reshape back to [..., N] is moved past the Adds and the
// activation that follow (sole consumers), so they see the Gemm's [M, N] output: a row-broadcast
// constant keeps its shape ([N], [1, N]...), a same-shape partner (the residual) gets a view.
// The same sinking applies to a 2-D Gemm whose output is only reshaped back to [..., N] (GPT-2's
// Conv1D exports as Reshape -> Gemm(bias) -> Reshape, then the GELU or the residual Add): the
// Reshape moves past them so fuse_epilogue can absorb them. A B operand that is a Transpose of a
// constant [N, K] matrix (a tied embedding read as the LM head) is read by the Gemm with transB
// instead. Exact: the same products and additions in the same order.
#include <vector>

#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {
namespace {

constexpr size_t kMaxSunk = 3;  // bias, residual, activation: what an epilogue can absorb

// A constant that broadcasts along the rows of an [M, N] matrix: all dims 1 except a last of N.
bool is_row_constant(const Value& c, int64_t n) {
  if (!c.is_constant()) return false;
  for (size_t i = 0; i + 1 < c.shape.size(); ++i)
    if (c.shape[i] != 1) return false;
  return c.shape.empty() || c.shape.back() == 1 || c.shape.back() == n;
}

// What a sunk node becomes: the node, and (for a residual) which input needs a [M, N] view.
struct Sunk {
  int node = -1;
  size_t chain_input = 0;  // the input that reads the previous value of the chain
  int view_input = -1;     // the input (a same-shape partner) that needs a [M, N] view, or -1
};

ValueId add_shape(Graph& g, const std::string& base, const Shape& s) {
  return g.add_constant(g.unique_name(base + "_shape"), Tensor::from_int64s({static_cast<int64_t>(s.size())}, s));
}

Node reshape(Graph& g, const std::string& name, ValueId in, ValueId out, const Shape& shape) {
  Node r;
  r.name = g.unique_name(name);
  r.op_type = "Reshape";
  r.inputs = {in, add_shape(g, name, shape)};
  r.outputs = {out};
  return r;
}

// W when `b` = Transpose(W) (perm [1, 0] or none) of a 2-D constant W and the MatMul is its only
// reader: an exporter's tied weight (GPT-2's LM head reads the token embedding transposed, and a
// 154 MB transpose is over the folding limit, so it would run as a kernel every call). kNoValue
// otherwise.
ValueId transposed_constant(const Graph& g, const std::vector<int>& producers,
                            const std::vector<std::vector<int>>& consumers, ValueId b) {
  const int p = producers[static_cast<size_t>(b)];
  if (p < 0 || g.sole_reader(consumers, b) < 0) return kNoValue;
  const Node& t = g.nodes[static_cast<size_t>(p)];
  if (!t.domain.empty() || t.op_type != "Transpose" || t.inputs.size() != 1) return kNoValue;
  if (t.has_attr("perm") && t.attr_ints("perm") != std::vector<int64_t>{1, 0}) return kNoValue;
  const Value& w = g.value(t.inputs[0]);
  return w.is_constant() && w.shape.size() == 2 ? t.inputs[0] : kNoValue;
}

}  // namespace

Expected<bool> matmul_to_gemm(Graph& graph) {
  const OpRegistry& registry = default_registry();
  const std::vector<std::vector<int>> consumers = graph.consumers();
  const size_t count = graph.nodes.size();
  // Per node: -1 keep; otherwise the index of the MatMul whose replacement is emitted here (at
  // the last node of its chain) or -2 (dropped: part of a chain emitted elsewhere).
  std::vector<int> plan(count, -1);
  std::vector<std::vector<Sunk>> chains(count);
  std::vector<int> reshape_of(count, -1);  // Gemm candidates: the Reshape after them
  // MatMuls whose B is Transpose(W) of a constant [N, K] matrix: the Gemm reads W with transB.
  std::vector<ValueId> read_transposed(count, kNoValue);
  const std::vector<int> producers = graph.producers();
  for (size_t i = 0; i < count; ++i) {
    const Node& mm = graph.nodes[i];
    if (!mm.domain.empty() || mm.inputs.size() < 2 || mm.outputs.size() != 1) continue;
    const bool is_matmul = mm.op_type == "MatMul" && mm.inputs.size() == 2;
    if (!is_matmul && mm.op_type != "Gemm") continue;
    const Value& a = graph.value(mm.inputs[0]);
    const Value& b = graph.value(mm.inputs[1]);
    const bool floating = a.dtype == DType::kFloat32 || a.dtype == DType::kFloat16 || a.dtype == DType::kBFloat16;
    if (!floating || graph.value(mm.outputs[0]).numel() == 0) continue;
    ValueId start = mm.outputs[0];
    int64_t n = 0;
    if (is_matmul) {
      if (a.shape.size() < 2 || a.is_constant() || b.shape.size() != 2 || b.shape[0] == 0) continue;
      if (!b.is_constant()) {
        const ValueId w = transposed_constant(graph, producers, consumers, mm.inputs[1]);
        if (w == kNoValue) continue;
        read_transposed[i] = w;
      }
      n = b.shape[1];
    } else {
      // Gemm [M, N] read only by a Reshape to [..., N]: the sinking starts after that Reshape.
      const Shape& g2 = graph.value(mm.outputs[0]).shape;
      const int r = graph.sole_reader(consumers, mm.outputs[0]);
      if (g2.size() != 2 || r < 0) continue;
      const Node& rs = graph.nodes[static_cast<size_t>(r)];
      if (!rs.domain.empty() || rs.op_type != "Reshape" || rs.outputs.size() != 1) continue;
      const Shape& ys = graph.value(rs.outputs[0]).shape;
      if (ys.size() < 3 || ys.back() != g2[1]) continue;
      n = g2[1];
      start = rs.outputs[0];
      reshape_of[i] = r;
    }
    const Value& y = graph.value(start);
    std::vector<Sunk> sunk;
    ValueId cur = start;
    bool has_act = false;
    while (sunk.size() < kMaxSunk && !has_act) {
      int next = graph.sole_reader(consumers, cur);
      if (next < 0) break;
      const Node& c = graph.nodes[static_cast<size_t>(next)];
      if (c.outputs.size() != 1 || c.outputs[0] == kNoValue) break;
      const Value& out = graph.value(c.outputs[0]);
      if (out.shape != y.shape || out.dtype != y.dtype) break;
      Sunk s;
      s.node = next;
      s.chain_input = c.inputs[0] == cur ? 0 : 1;
      if (c.domain.empty() && c.op_type == "Add" && c.inputs.size() == 2 && c.inputs[0] != c.inputs[1]) {
        const ValueId other = c.inputs[0] == cur ? c.inputs[1] : c.inputs[0];
        const Value& o = graph.value(other);
        if (o.dtype != y.dtype) break;
        if (is_row_constant(o, n)) {
          // kept as it is: it broadcasts to [M, N] the same way
        } else if (o.shape == y.shape) {
          s.view_input = c.inputs[0] == cur ? 1 : 0;
        } else {
          break;
        }
      } else {
        if (!epilogue_may_absorb(graph, c, gemm_activation_changes_kernel(graph))) break;
        has_act = true;
      }
      sunk.push_back(s);
      cur = c.outputs[0];
    }
    if (!is_matmul && sunk.empty()) {  // a Gemm with nothing to absorb stays as it is
      reshape_of[i] = -1;
      continue;
    }
    const size_t last = sunk.empty() ? i : static_cast<size_t>(sunk.back().node);
    if (plan[last] != -1 || plan[i] != -1 || (reshape_of[i] >= 0 && plan[static_cast<size_t>(reshape_of[i])] != -1)) {
      reshape_of[i] = -1;
      continue;  // already claimed (cannot happen with sole readers; be safe)
    }
    plan[i] = -2;
    if (reshape_of[i] >= 0) plan[static_cast<size_t>(reshape_of[i])] = -2;
    for (const Sunk& s : sunk) plan[static_cast<size_t>(s.node)] = -2;
    plan[last] = static_cast<int>(i);
    chains[i] = std::move(sunk);
  }

  bool changed = false, dropped_transposes = false;
  std::vector<Node> out;
  out.reserve(count + 8);
  std::vector<Node> old = std::move(graph.nodes);
  graph.nodes.clear();
  for (size_t i = 0; i < count; ++i) {
    if (plan[i] == -1) {
      out.push_back(std::move(old[i]));
      continue;
    }
    if (plan[i] == -2) continue;
    const size_t m_index = static_cast<size_t>(plan[i]);
    const std::vector<Sunk>& sunk = chains[m_index];
    // The value the whole replacement ends in (read before any node of the chain is moved).
    const ValueId final_out =
        sunk.empty() ? old[m_index].outputs[0] : old[static_cast<size_t>(sunk.back().node)].outputs[0];
    ValueId cur = kNoValue;
    Shape y_shape, flat;
    DType t = DType::kUndefined;
    bool needs_views = true;
    if (reshape_of[m_index] >= 0) {
      // A Gemm already: it keeps its 2-D output; the Reshape after it moves to the chain's end.
      Node gemm = std::move(old[m_index]);
      const Node& rs = old[static_cast<size_t>(reshape_of[m_index])];
      y_shape = graph.value(rs.outputs[0]).shape;
      flat = graph.value(gemm.outputs[0]).shape;
      t = graph.value(gemm.outputs[0]).dtype;
      cur = gemm.outputs[0];
      out.push_back(std::move(gemm));
    } else {
      const Node& mm = old[m_index];
      const Value a = graph.value(mm.inputs[0]);
      y_shape = graph.value(mm.outputs[0]).shape;
      t = a.dtype;
      const int64_t k = a.shape.back(), n = graph.value(mm.inputs[1]).shape[1];
      const int64_t rows = a.numel() / k;
      flat = {rows, n};
      needs_views = a.shape.size() != 2;
      ValueId a2 = mm.inputs[0];
      if (needs_views) {
        a2 = graph.add_value(graph.unique_name(a.name + "_rows"), t, {rows, k}, true);
        out.push_back(reshape(graph, mm.name + "_rows", mm.inputs[0], a2, {rows, k}));
      }
      Node gemm;
      gemm.name = mm.name;
      gemm.op_type = "Gemm";
      gemm.inputs = {a2, mm.inputs[1]};
      if (read_transposed[m_index] != kNoValue) {
        gemm.inputs[1] = read_transposed[m_index];
        gemm.attrs["transB"] = Attribute::of_int(1);
        dropped_transposes = true;
      }
      cur = needs_views ? graph.add_value(graph.unique_name(graph.value(mm.outputs[0]).name + "_2d"), t, flat, true)
                        : mm.outputs[0];
      gemm.outputs = {cur};
      AOTC_RETURN_IF_ERROR(infer_node(gemm, graph, registry));
      out.push_back(std::move(gemm));
    }
    auto new_flat = [&](const std::string& base) {
      return needs_views ? graph.add_value(graph.unique_name(base + "_2d"), t, flat, true) : kNoValue;
    };
    for (const Sunk& s : sunk) {
      Node node = std::move(old[static_cast<size_t>(s.node)]);
      const ValueId orig_out = node.outputs[0];
      if (s.view_input >= 0 && needs_views) {
        const ValueId r = node.inputs[static_cast<size_t>(s.view_input)];
        const ValueId r2 = graph.add_value(graph.unique_name(graph.value(r).name + "_2d"), t, flat, true);
        out.push_back(reshape(graph, node.name + "_residual_rows", r, r2, flat));
        node.inputs[static_cast<size_t>(s.view_input)] = r2;
      }
      node.inputs[s.chain_input] = cur;
      cur = needs_views ? new_flat(graph.value(orig_out).name) : orig_out;
      node.outputs = {cur};
      AOTC_RETURN_IF_ERROR(infer_node(node, graph, registry));
      out.push_back(std::move(node));
    }
    if (needs_views) {
      Node back = reshape(graph, graph.value(final_out).name + "_unflatten", cur, final_out, y_shape);
      AOTC_RETURN_IF_ERROR(infer_node(back, graph, registry));
      out.push_back(std::move(back));
    }
    changed = true;
  }
  graph.nodes = std::move(out);
  // The Transposes of constants that Gemms now read with transB have no reader left.
  if (dropped_transposes) AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  return changed;
}

}  // namespace aotc
