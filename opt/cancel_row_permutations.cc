// cancel_row_permutations: a GEMM treats its rows independently, so a row permutation before it
// and the inverse permutation after it cancel. torch's sequence-first nn.MultiheadAttention (ViT
// exported by TorchScript) has exactly that around its output projection once the attention runs
// in [B, S, H*D] rows (fuse_attention_operands): the attention output is gathered into [S*B, E]
// rows (an aotc.StridedCopy), projected, and transposed back to [B, S, E]. Here the projection
// reads the attention rows as they are and writes [B*S, E] rows, which are the transposed result
// itself (a view); two copies of the activation vanish. Then a residual Add of the result (the
// block's skip connection) becomes the GEMM's residual input (aotc.FusedGemm input 3, as
// fuse_epilogue would have made it): one kernel less again.
//   Y -StridedCopy(row gather P)-> A [M, K] -Gemm-> G [M, N] -Reshape-> -Transpose(perm, last axis
//   kept)-> T  with T's row i = G's row q(i) and p(q(i)) = i for every row
// -> Gemm(Reshape(Y, [M, K])) [M, N] -Reshape-> T (a view).
// The index maps are checked row by row (M rows), not inferred from the pattern.
// Second form, the input projection of the same attention: a Gemm reading a row-permuted input
// (Transpose keeping the last axis, then the [M, K] reshape) whose output only aotc.StridedAttention
// nodes read through (batch, head, row) views: the Gemm reads its input rows in order and each
// view is rewritten for the permuted rows, where the new (batch, row) offsets are again affine
// (checked for every batch and row); the Transpose vanishes. Third form, the first's residual
// rule alone where no permutation is left to cancel (one batch): G -Reshape (rows kept)-> T, then
// Add(x, T) -> the GEMM's residual input.
#include <algorithm>
#include <numeric>
#include <optional>

#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {
namespace {

bool is(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// Source row of each output row of a strided copy that moves whole rows of K contiguous
// elements (nullopt when it is not such a row gather of an [M, K] source).
std::optional<std::vector<int64_t>> row_gather(const Node& sc, int64_t m, int64_t k, int64_t source_numel) {
  if (sc.has_attr("scale") || sc.has_attr("to")) return std::nullopt;
  std::vector<int64_t> dims = sc.attr_ints("dims"), strides = sc.attr_ints("strides");
  const int64_t base = sc.attr_int("base", 0);
  if (dims.size() != strides.size() || source_numel != m * k || base % k != 0) return std::nullopt;
  // Peel the contiguous row (innermost dims covering K elements with stride 1 overall).
  int64_t inner = 1;
  while (!dims.empty() && inner < k) {
    const int64_t d = dims.back(), s = strides.back();
    if (d != 1 && s != inner) return std::nullopt;
    inner *= d;
    dims.pop_back();
    strides.pop_back();
  }
  if (inner != k) return std::nullopt;
  for (int64_t s : strides)
    if (s % k != 0) return std::nullopt;
  std::vector<int64_t> rows(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    int64_t rest = r, src = base / k;
    for (size_t d = dims.size(); d-- > 0;) {
      src += (rest % dims[d]) * (strides[d] / k);
      rest /= dims[d];
    }
    if (src < 0 || src >= m) return std::nullopt;
    rows[static_cast<size_t>(r)] = src;
  }
  return rows;
}

// Row of `in` (shape `in_shape`, last axis kept in place by `perm`) that each row of the
// transposed output reads.
std::optional<std::vector<int64_t>> transposed_rows(const Shape& in_shape, const std::vector<int64_t>& perm) {
  const size_t r = in_shape.size();
  if (perm.size() != r || r < 2 || perm.back() != static_cast<int64_t>(r) - 1) return std::nullopt;
  Shape out(r);
  for (size_t i = 0; i < r; ++i) out[i] = in_shape[static_cast<size_t>(perm[i])];
  const int64_t m = shape_numel(in_shape) / in_shape.back();
  std::vector<int64_t> in_row_strides(r - 1, 1);
  for (size_t i = r - 1; i-- > 1;) in_row_strides[i - 1] = in_row_strides[i] * in_shape[i];
  std::vector<int64_t> rows(static_cast<size_t>(m));
  for (int64_t o = 0; o < m; ++o) {
    int64_t rest = o, src = 0;
    for (size_t d = r - 1; d-- > 0;) {
      const int64_t c = rest % out[d];
      rest /= out[d];
      src += c * in_row_strides[static_cast<size_t>(perm[d])];
    }
    rows[static_cast<size_t>(o)] = src;
  }
  return rows;
}

// A Gemm / FusedGemm whose rows commute with a row permutation: A [M, K] not transposed, no
// residual (it would need the permutation too), C absent or a row vector; Y [M, N].
bool row_gemm(const Graph& g, const Node& n, int64_t* m, int64_t* k, int64_t* cols) {
  const bool fused = n.domain == "aotc" && n.op_type == "FusedGemm";
  if (!(is(n, "Gemm") || fused) || n.outputs.size() != 1 || n.attr_int("transA", 0) != 0) return false;
  if (n.input(3) != kNoValue) return false;
  const Shape& as = g.value(n.inputs[0]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  if (as.size() != 2 || ys.size() != 2) return false;
  const ValueId c = n.input(2);
  if (c != kNoValue && g.value(c).shape != Shape{ys[1]} && g.value(c).shape != Shape{1, ys[1]}) return false;
  *m = as[0], *k = as[1], *cols = ys[1];
  return true;
}

// The skip connection of T: Add(x, T) as T's only reader, x of T's shape and dtype. Makes g2 (the
// GEMM that writes T's rows as [M, N]; no activation, which the residual would land inside) an
// aotc.FusedGemm with x's rows as its residual input and returns the Add's index (whose output is
// then g2's rows under T's shape), with *res_rows the Reshape of x to [M, N]; -1 (graph and g2
// untouched) when there is no such Add.
int fold_skip_add(Graph& graph, const std::vector<std::vector<int>>& consumers, ValueId t, int64_t m, int64_t n,
                  Node& g2, Node* res_rows) {
  const int addi = graph.sole_reader(consumers, t);
  if (addi < 0 || !is(graph.nodes[static_cast<size_t>(addi)], "Add") || has_activation(g2)) return -1;
  const Node& add = graph.nodes[static_cast<size_t>(addi)];
  if (add.inputs.size() != 2 || add.outputs.size() != 1) return -1;
  const ValueId x = add.inputs[0] == t ? add.inputs[1] : add.inputs[0];
  const DType dt = graph.value(t).dtype;
  if (x == t || graph.value(x).shape != graph.value(t).shape || graph.value(x).dtype != dt ||
      graph.value(add.outputs[0]).dtype != dt)
    return -1;
  const std::string& gname = g2.name;
  *res_rows = Node{gname + "_residual_rows", "Reshape", "",
                   {x, graph.add_constant(graph.unique_name(gname + "_residual_shape"), Tensor::from_int64s({2}, {m, n}))},
                   {graph.add_value(graph.unique_name(gname + "_residual_rows"))}, {}};
  if (g2.domain != "aotc") {
    g2.domain = "aotc";
    g2.op_type = "FusedGemm";
  }
  if (g2.input(2) != kNoValue) g2.attrs["beta"] = Attribute::of_float(g2.attr_float("beta", 1.0f));
  g2.inputs.resize(4, kNoValue);
  g2.inputs[3] = res_rows->outputs[0];
  return addi;
}

// The graph's nodes without those at `drop`, with `add` in place of node `at` (which is dropped).
void splice_nodes(Graph& graph, const std::vector<size_t>& drop, size_t at, std::vector<Node> add) {
  std::vector<Node> nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (i == at) {
      for (Node& a : add) nodes.push_back(std::move(a));
    } else if (std::find(drop.begin(), drop.end(), i) == drop.end()) {
      nodes.push_back(std::move(graph.nodes[i]));
    }
  }
  graph.nodes = std::move(nodes);
}

}  // namespace

Expected<bool> cancel_row_permutations(Graph& graph) {
  const OpRegistry& registry = default_registry();
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    std::vector<int> producers = graph.producers();
    std::vector<std::vector<int>> consumers = graph.consumers();
    for (size_t gi = 0; gi < graph.nodes.size() && !again; ++gi) {
      const Node& gemm = graph.nodes[gi];
      int64_t m = 0, k = 0, n = 0;
      if (!row_gemm(graph, gemm, &m, &k, &n)) continue;
      const ValueId a = gemm.inputs[0];
      // A = StridedCopy(Y), read only by the Gemm.
      const int sci = producers[static_cast<size_t>(a)];
      if (sci < 0 || graph.sole_reader(consumers, a) != static_cast<int>(gi)) continue;
      const Node& sc = graph.nodes[static_cast<size_t>(sci)];
      if (sc.domain != "aotc" || sc.op_type != "StridedCopy") continue;
      const ValueId y = sc.inputs[0];
      auto p = row_gather(sc, m, k, graph.value(y).numel());
      if (!p) continue;
      // G -Reshape-> -Transpose-> T, each read only by the next.
      const int ri = graph.sole_reader(consumers, gemm.outputs[0]);
      if (ri < 0 || !is(graph.nodes[static_cast<size_t>(ri)], "Reshape")) continue;
      const Node& rs = graph.nodes[static_cast<size_t>(ri)];
      const int ti = graph.sole_reader(consumers, rs.outputs[0]);
      if (ti < 0 || !is(graph.nodes[static_cast<size_t>(ti)], "Transpose")) continue;
      const Node& tr = graph.nodes[static_cast<size_t>(ti)];
      const Shape rshape = graph.value(rs.outputs[0]).shape;
      if (rshape.empty() || rshape.back() != n) continue;
      auto q = transposed_rows(rshape, tr.attr_ints("perm"));
      if (!q) continue;
      bool inverse = true;
      for (int64_t i = 0; i < m && inverse; ++i) inverse = (*p)[static_cast<size_t>((*q)[static_cast<size_t>(i)])] == i;
      if (!inverse) continue;
      // Rewrite: Gemm(Reshape(Y, [M, K])) -> G2 [M, N]; T = Reshape(G2) (a view).
      const ValueId t = tr.outputs[0];
      const Shape tshape = graph.value(t).shape;
      const DType dt = graph.value(t).dtype;
      const std::string gname = gemm.name;
      Node rows_in{gname + "_rows_in_order", "Reshape", "",
                   {y, graph.add_constant(graph.unique_name(gname + "_rows_shape"), Tensor::from_int64s({2}, {m, k}))},
                   {graph.add_value(graph.unique_name(gname + "_rows"))}, {}};
      Node g2 = graph.nodes[gi];
      g2.inputs[0] = rows_in.outputs[0];
      g2.outputs = {graph.add_value(graph.unique_name(gname + "_in_order"), dt, {m, n}, true)};
      // A residual Add of T (the skip connection) goes into the GEMM: Add(x, T) = Reshape(G2 + x rows).
      Node res_rows;
      const int addi = fold_skip_add(graph, consumers, t, m, n, g2, &res_rows);
      const ValueId out = addi >= 0 ? graph.nodes[static_cast<size_t>(addi)].outputs[0] : t;
      Node back{gname + "_rows_out", "Reshape", "",
                {g2.outputs[0], graph.add_constant(graph.unique_name(gname + "_out_shape"),
                                                   Tensor::from_int64s({static_cast<int64_t>(tshape.size())}, tshape))},
                {out}, {}};
      AOTC_RETURN_IF_ERROR(infer_node(rows_in, graph, registry));
      if (addi >= 0) AOTC_RETURN_IF_ERROR(infer_node(res_rows, graph, registry));
      if (!infer_node(g2, graph, registry).is_ok()) continue;
      AOTC_RETURN_IF_ERROR(infer_node(back, graph, registry));
      std::vector<Node> add;
      add.push_back(std::move(rows_in));
      if (addi >= 0) add.push_back(std::move(res_rows));
      add.push_back(std::move(g2));
      add.push_back(std::move(back));
      splice_nodes(graph, {static_cast<size_t>(sci), gi, static_cast<size_t>(ri), static_cast<size_t>(ti)},
                   static_cast<size_t>(addi >= 0 ? addi : ti), std::move(add));
      changed = again = true;
    }
  }
  // Second form: Transpose -> Reshape -> Gemm -> StridedAttention views.
  for (bool again = true; again;) {
    again = false;
    std::vector<int> producers = graph.producers();
    std::vector<std::vector<int>> consumers = graph.consumers();
    for (size_t gi = 0; gi < graph.nodes.size() && !again; ++gi) {
      const Node& gemm = graph.nodes[gi];
      int64_t m = 0, k = 0, n = 0;
      if (!row_gemm(graph, gemm, &m, &k, &n) || graph.is_graph_output(gemm.outputs[0])) continue;
      const ValueId a = gemm.inputs[0], g = gemm.outputs[0];
      // A = Reshape(Transpose(X)) (or the Transpose itself), each read only by the next.
      int ti = producers[static_cast<size_t>(a)];
      if (ti < 0 || graph.sole_reader(consumers, a) != static_cast<int>(gi)) continue;
      if (is(graph.nodes[static_cast<size_t>(ti)], "Reshape")) {
        const ValueId ta = graph.nodes[static_cast<size_t>(ti)].inputs[0];
        if (graph.sole_reader(consumers, ta) != ti) continue;
        ti = producers[static_cast<size_t>(ta)];
      }
      if (ti < 0 || !is(graph.nodes[static_cast<size_t>(ti)], "Transpose")) continue;
      const Node& tr = graph.nodes[static_cast<size_t>(ti)];
      const ValueId x = tr.inputs[0];
      const Shape xs = graph.value(x).shape;
      if (xs.empty() || xs.back() != k || shape_numel(xs) != m * k) continue;
      auto p = transposed_rows(xs, tr.attr_ints("perm"));
      if (!p) continue;
      // Every reader of G: StridedAttention operands 0-2 whose views stay affine after the permutation.
      std::vector<std::pair<int, Node>> rewritten;
      bool ok = !consumers[static_cast<size_t>(g)].empty();
      for (int ri : consumers[static_cast<size_t>(g)]) {
        if (!ok) break;
        if (std::any_of(rewritten.begin(), rewritten.end(), [&](const auto& e) { return e.first == ri; })) continue;
        const Node& at = graph.nodes[static_cast<size_t>(ri)];
        if (at.domain != "aotc" || at.op_type != "StridedAttention" || at.input(3) == g) {
          ok = false;
          break;
        }
        Node nat = at;
        const char* shape_attr[3] = {"q_shape", "k_shape", "v_shape"};
        const char* view_attr[3] = {"q_view", "k_view", "v_view"};
        for (int o = 0; o < 3 && ok; ++o) {
          if (at.inputs[static_cast<size_t>(o)] != g) continue;
          const Shape ls = at.attr_ints(shape_attr[o]);
          const std::vector<int64_t> v = at.attr_ints(view_attr[o]);
          if (v.size() != 4 || (ls.size() != 3 && ls.size() != 4)) {
            ok = false;
            break;
          }
          const int64_t heads = ls.size() == 4 ? ls[1] : at.attr_int(o == 0 ? "q_num_heads" : "kv_num_heads", 0);
          const int64_t bn = ls[0], rows = ls.size() == 4 ? ls[2] : ls[1];
          const int64_t dim = ls.size() == 4 ? ls[3] : (heads > 0 ? ls[2] / heads : 0);
          if (heads <= 0 || dim <= 0 || bn <= 0 || rows <= 0) {
            ok = false;
            break;
          }
          auto moved = [&](int64_t b, int64_t s, int64_t* out) {
            const int64_t off = v[0] + b * v[1] + s * v[3];
            const int64_t r = off / n, col = off % n;
            if (r < 0 || r >= m || col != v[0] % n || col + (heads - 1) * v[2] + dim > n) return false;
            *out = (*p)[static_cast<size_t>(r)] * n + col;
            return true;
          };
          int64_t base = 0, b1 = 0, s1 = 0;
          ok = moved(0, 0, &base) && (bn == 1 || moved(1, 0, &b1)) && (rows == 1 || moved(0, 1, &s1));
          const int64_t sb = bn == 1 ? 0 : b1 - base, ss = rows == 1 ? 0 : s1 - base;
          for (int64_t b = 0; b < bn && ok; ++b)
            for (int64_t s = 0; s < rows && ok; ++s) {
              int64_t off = 0;
              ok = moved(b, s, &off) && off == base + b * sb + s * ss;
            }
          if (ok && (sb < 0 || ss < 0)) ok = false;
          if (ok) nat.attrs[view_attr[o]] = Attribute::of_ints({base, sb, v[2], ss});
        }
        if (ok) rewritten.push_back({ri, std::move(nat)});
      }
      if (!ok || rewritten.empty()) continue;
      const std::string gname = gemm.name;
      Node rows_in{gname + "_rows_in_order", "Reshape", "",
                   {x, graph.add_constant(graph.unique_name(gname + "_rows_shape"), Tensor::from_int64s({2}, {m, k}))},
                   {graph.add_value(graph.unique_name(gname + "_rows"))}, {}};
      Node g2 = graph.nodes[gi];
      g2.inputs[0] = rows_in.outputs[0];
      AOTC_RETURN_IF_ERROR(infer_node(rows_in, graph, registry));
      AOTC_RETURN_IF_ERROR(infer_node(g2, graph, registry));
      bool accepted = true;
      for (auto& [ri, nat] : rewritten) accepted = accepted && infer_node(nat, graph, registry).is_ok();
      if (!accepted) {
        AOTC_RETURN_IF_ERROR(infer_node(graph.nodes[gi], graph, registry));  // G's value as before
        continue;
      }
      for (auto& [ri, nat] : rewritten) graph.nodes[static_cast<size_t>(ri)] = std::move(nat);
      std::vector<Node> add;
      add.push_back(std::move(rows_in));
      add.push_back(std::move(g2));
      splice_nodes(graph, {}, gi, std::move(add));
      AOTC_RETURN_IF_ERROR(dead_code(graph).status());  // the Transpose (and its reshape) now unread
      changed = again = true;
    }
  }
  // Third form, what the first leaves where the permutations are views already (one batch: the
  // batch-first transposes only move a unit axis, and the head merge is a view once the attention
  // writes rows): G [M, N] -Reshape-> T (rows kept, last dim N) -Add(x)->. The Add becomes the
  // GEMM's residual input as in the first form: Add(x, T) = Reshape(G2 + x rows).
  for (bool again = true; again;) {
    again = false;
    std::vector<std::vector<int>> consumers = graph.consumers();
    for (size_t gi = 0; gi < graph.nodes.size() && !again; ++gi) {
      const Node& gemm = graph.nodes[gi];
      int64_t m = 0, k = 0, n = 0;
      if (!row_gemm(graph, gemm, &m, &k, &n)) continue;
      const int ri = graph.sole_reader(consumers, gemm.outputs[0]);
      if (ri < 0 || !is(graph.nodes[static_cast<size_t>(ri)], "Reshape")) continue;
      const ValueId t = graph.nodes[static_cast<size_t>(ri)].outputs[0];
      const Shape tshape = graph.value(t).shape;
      const DType dt = graph.value(t).dtype;
      if (tshape.empty() || tshape.back() != n) continue;
      Node g2 = gemm, res_rows;
      const int addi = fold_skip_add(graph, consumers, t, m, n, g2, &res_rows);
      if (addi < 0) continue;
      const std::string gname = gemm.name;
      g2.outputs = {graph.add_value(graph.unique_name(gname + "_with_residual"), dt, {m, n}, true)};
      Node back{gname + "_residual_out", "Reshape", "",
                {g2.outputs[0], graph.add_constant(graph.unique_name(gname + "_residual_out_shape"),
                                                   Tensor::from_int64s({static_cast<int64_t>(tshape.size())}, tshape))},
                {graph.nodes[static_cast<size_t>(addi)].outputs[0]}, {}};
      AOTC_RETURN_IF_ERROR(infer_node(res_rows, graph, registry));
      if (!infer_node(g2, graph, registry).is_ok()) continue;
      AOTC_RETURN_IF_ERROR(infer_node(back, graph, registry));
      // The GEMM moves to the Add's place (after x's producer; its own inputs come before it).
      std::vector<Node> add;
      add.push_back(std::move(res_rows));
      add.push_back(std::move(g2));
      add.push_back(std::move(back));
      splice_nodes(graph, {gi, static_cast<size_t>(ri)}, static_cast<size_t>(addi), std::move(add));
      changed = again = true;
    }
  }
  if (changed) AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  return changed;
}

}  // namespace aotc
