// fuse_attention: the attention that exporters write out (scores = Q K^T, a scalar scale, an
// additive mask, Softmax over the keys, times V, with the head split and merge as Reshape +
// Transpose around it) becomes one ONNX Attention node over the (B, S, H*D) projections, so the
// fused tensor-core kernel runs it (no score matrix in memory, no head transposes):
//   q3 [B,Sq,H*D] -Reshape-> [B,Sq,H,D] -Transpose(0,2,1,3)-> Q        (optionally * scalar)
//   k3 -Reshape-> [B,Sk,H,D] -Transpose(0,2,3,1)-> K^T                 (or (0,2,1,3) then (0,1,3,2))
//   v3 -Reshape-> [B,Sk,H,Dv] -Transpose(0,2,1,3)-> V
//   S = MatMul(Q, K^T) [* or / scalar] [+ mask]; P = Softmax(S, axis -1); O = MatMul(P, V)
//   O -Transpose(0,2,1,3)-> [B,Sq,H,Dv]
// -> Attention(q3, k3, v3, mask) {q_num_heads = kv_num_heads = H, scale = product of the scalars}
//    -> [B,Sq,H*Dv] -Reshape-> [B,Sq,H,Dv] (a view). The score-path intermediates must have no
// other reader. It fires only where the Attention lowering picks the fused kernel (Sm80+: 16-bit on
// tensor cores, fp32 on FFMA; exact cases; ir/ops/attention.cc). Runs after the
// precision pass (dtypes final) and drop_exact_casts. Semantics: identical except rows whose mask
// is -inf for every key, where Softmax gives NaN and the Attention op defines zeros.
// Second form, when the operands are not head splits of 3-D projections (torch's
// nn.MultiheadAttention, sequence-first): Q [B,H,Sq,D], K^T = Transpose(0,1,3,2) of K [B,H,Sk,D]
// and V [B,H,Sk,Dv] as they are -> Attention(Q, K, V, mask) writing O [B,H,Sq,Dv] in place of the
// second MatMul (the producers of Q/K/V stay; fuse_copy_chains later makes them strided copies).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "ir/op_registry.h"
#include "ir/ops/attention.h"
#include "ir/ops/op_helpers.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"
#include "opt/strided_view.h"

namespace aotc {
namespace {

struct Ctx {
  Graph& g;
  std::vector<int> producers;
  std::vector<std::vector<int>> consumers;
};

const Node* producer(const Ctx& c, ValueId v, const char* op) {
  if (v == kNoValue) return nullptr;
  const int p = c.producers[static_cast<size_t>(v)];
  if (p < 0) return nullptr;
  const Node& n = c.g.nodes[static_cast<size_t>(p)];
  return n.domain.empty() && n.op_type == op ? &n : nullptr;
}

bool sole_reader_is(const Ctx& c, ValueId v, int node) {
  if (c.g.is_graph_output(v)) return false;
  const auto& r = c.consumers[static_cast<size_t>(v)];
  return r.size() == 1 && r[0] == node;
}

int index_of(const Ctx& c, const Node* n) { return static_cast<int>(n - c.g.nodes.data()); }

// A one-element floating constant's value, or nullptr.
bool scalar_constant(const Graph& g, ValueId v, double& out) {
  const Value& x = g.value(v);
  if (!x.is_constant() || x.numel() != 1 || !dtype_is_float(x.dtype)) return false;
  out = x.constant->get(0);
  return true;
}

// x = Mul(y, scalar) (either order) or Div(y, scalar): returns y and multiplies `scale`; else x.
ValueId strip_scale(const Ctx& c, ValueId x, double& scale, std::vector<int>* removed) {
  double s = 0;
  if (const Node* m = producer(c, x, "Mul")) {
    for (int i = 0; i < 2; ++i)
      if (m->inputs.size() == 2 && scalar_constant(c.g, m->inputs[static_cast<size_t>(1 - i)], s)) {
        if (removed) removed->push_back(index_of(c, m));
        scale *= s;
        return m->inputs[static_cast<size_t>(i)];
      }
  }
  if (const Node* d = producer(c, x, "Div")) {
    if (d->inputs.size() == 2 && scalar_constant(c.g, d->inputs[1], s) && s != 0) {
      if (removed) removed->push_back(index_of(c, d));
      scale /= s;
      return d->inputs[0];
    }
  }
  return x;
}

std::vector<int64_t> perm_of(const Node& t) { return t.attr_ints("perm"); }

// x4 = Transpose(perm)(Reshape(src3)) with src3 [B,S,H*D] and the reshape [B,S,H,D]: src3.
ValueId split_heads_source(const Ctx& c, ValueId x4, const std::vector<int64_t>& perm) {
  const Node* t = producer(c, x4, "Transpose");
  if (!t || perm_of(*t) != perm) return kNoValue;
  const Node* r = producer(c, t->inputs[0], "Reshape");
  if (!r) return kNoValue;
  const Shape& rs = c.g.value(r->outputs[0]).shape;
  const Shape& ss = c.g.value(r->inputs[0]).shape;
  if (rs.size() != 4 || ss.size() != 3 || ss[0] != rs[0] || ss[1] != rs[1] || ss[2] != rs[2] * rs[3]) return kNoValue;
  return r->inputs[0];
}

ValueId keys_source(const Ctx& c, ValueId kt) {
  ValueId s = split_heads_source(c, kt, {0, 2, 3, 1});
  if (s != kNoValue) return s;
  const Node* t = producer(c, kt, "Transpose");
  if (!t || perm_of(*t) != std::vector<int64_t>{0, 1, 3, 2}) return kNoValue;
  return split_heads_source(c, t->inputs[0], {0, 2, 1, 3});
}

struct Match {
  ValueId q3 = kNoValue, k3 = kNoValue, v3 = kNoValue, mask = kNoValue;
  double scale = 1.0;
  int64_t heads = 0;
  std::vector<int> chain;  // node indices replaced (the last is where the new nodes go)
  ValueId merged = kNoValue;  // the [B,Sq,H,Dv] value the head merge produced
};

// The backward part shared by both forms: [Add(mask)] <- [scalar scale] <- MatMul(A, B); fills
// mask, scale and chain, returns the MatMul or nullptr.
const Node* scores_matmul(const Ctx& c, const Node& sm, int softmax_index, Match& m) {
  if (sm.inputs.size() != 1 || sm.outputs.size() != 1) return nullptr;
  const Shape& ss = c.g.value(sm.inputs[0]).shape;
  const int64_t axis = sm.attr_int("axis", -1);
  if (ss.size() != 4 || (axis != -1 && axis != 3)) return nullptr;
  ValueId x = sm.inputs[0];
  int next = softmax_index;
  if (!sole_reader_is(c, x, next)) return nullptr;
  if (const Node* add = producer(c, x, "Add")) {
    for (int i = 0; i < 2 && m.mask == kNoValue; ++i) {
      double tmp = 1.0;
      ValueId scores = add->inputs[static_cast<size_t>(i)];
      if (producer(c, strip_scale(c, scores, tmp, nullptr), "MatMul") && add->inputs[static_cast<size_t>(1 - i)] != scores) {
        m.mask = add->inputs[static_cast<size_t>(1 - i)];
        m.chain.push_back(index_of(c, add));
        next = index_of(c, add);
        x = scores;
      }
    }
    if (m.mask == kNoValue || !sole_reader_is(c, x, next)) return nullptr;
  }
  std::vector<int> scale_nodes;
  const ValueId raw = strip_scale(c, x, m.scale, &scale_nodes);
  if (!scale_nodes.empty()) {
    m.chain.push_back(scale_nodes[0]);
    if (!sole_reader_is(c, raw, scale_nodes[0])) return nullptr;
  }
  const Node* mm1 = producer(c, raw, "MatMul");
  if (!mm1 || mm1->inputs.size() != 2) return nullptr;
  m.chain.push_back(index_of(c, mm1));
  return mm1;
}

bool match_at(const Ctx& c, int softmax_index, Match& m) {
  const Node& sm = c.g.nodes[static_cast<size_t>(softmax_index)];
  const Node* mm1 = scores_matmul(c, sm, softmax_index, m);
  if (!mm1) return false;
  // Operands: optional scalar scales on Q and K^T (SDPA's exported sqrt(scale) on both).
  ValueId q4 = strip_scale(c, mm1->inputs[0], m.scale, nullptr);
  ValueId kt = strip_scale(c, mm1->inputs[1], m.scale, nullptr);
  m.q3 = split_heads_source(c, q4, {0, 2, 1, 3});
  m.k3 = keys_source(c, kt);
  if (m.q3 == kNoValue || m.k3 == kNoValue) return false;
  // Forwards: MatMul(P, V) -> Transpose(0,2,1,3).
  const ValueId p = sm.outputs[0];
  if (c.g.is_graph_output(p) || c.consumers[static_cast<size_t>(p)].size() != 1) return false;
  const int mm2_index = c.consumers[static_cast<size_t>(p)][0];
  const Node& mm2 = c.g.nodes[static_cast<size_t>(mm2_index)];
  if (!mm2.domain.empty() || mm2.op_type != "MatMul" || mm2.inputs.size() != 2 || mm2.inputs[0] != p) return false;
  m.v3 = split_heads_source(c, mm2.inputs[1], {0, 2, 1, 3});
  if (m.v3 == kNoValue) return false;
  const ValueId o = mm2.outputs[0];
  if (c.g.is_graph_output(o) || c.consumers[static_cast<size_t>(o)].size() != 1) return false;
  const int merge_index = c.consumers[static_cast<size_t>(o)][0];
  const Node& merge = c.g.nodes[static_cast<size_t>(merge_index)];
  if (!merge.domain.empty() || merge.op_type != "Transpose" || perm_of(merge) != std::vector<int64_t>{0, 2, 1, 3})
    return false;
  m.merged = merge.outputs[0];
  m.heads = c.g.value(o).shape[1];
  const Shape& qs = c.g.value(m.q3).shape;
  if (m.heads <= 0 || qs.size() != 3 || qs[2] % m.heads != 0) return false;
  m.chain.push_back(softmax_index);
  m.chain.push_back(mm2_index);
  m.chain.push_back(merge_index);
  return true;
}

// Second form: dense 4-D operands; on success m.chain ends with the P V MatMul, whose output the
// Attention node writes (m.merged).
bool match_dense(const Ctx& c, int softmax_index, Match& m) {
  const Node& sm = c.g.nodes[static_cast<size_t>(softmax_index)];
  const Node* mm1 = scores_matmul(c, sm, softmax_index, m);
  if (!mm1) return false;
  m.q3 = strip_scale(c, mm1->inputs[0], m.scale, nullptr);
  const Node* t = producer(c, strip_scale(c, mm1->inputs[1], m.scale, nullptr), "Transpose");
  if (!t || perm_of(*t) != std::vector<int64_t>{0, 1, 3, 2}) return false;
  m.k3 = t->inputs[0];
  const ValueId p = sm.outputs[0];
  if (c.g.is_graph_output(p) || c.consumers[static_cast<size_t>(p)].size() != 1) return false;
  const int mm2_index = c.consumers[static_cast<size_t>(p)][0];
  const Node& mm2 = c.g.nodes[static_cast<size_t>(mm2_index)];
  if (!mm2.domain.empty() || mm2.op_type != "MatMul" || mm2.inputs.size() != 2 || mm2.inputs[0] != p) return false;
  m.v3 = mm2.inputs[1];
  const Shape &q = c.g.value(m.q3).shape, &k = c.g.value(m.k3).shape, &v = c.g.value(m.v3).shape;
  if (q.size() != 4 || k.size() != 4 || v.size() != 4 || q[0] != k[0] || q[1] != k[1] || q[3] != k[3] ||
      v[0] != k[0] || v[1] != k[1] || v[2] != k[2])
    return false;
  m.heads = q[1];
  m.merged = mm2.outputs[0];
  m.chain.push_back(softmax_index);
  m.chain.push_back(mm2_index);
  return true;
}

}  // namespace

Expected<bool> fuse_attention(Graph& graph) {
  const OpRegistry& registry = default_registry();
  if (!registry.find("Attention")) return false;
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    Ctx c{graph, graph.producers(), graph.consumers()};
    for (size_t i = 0; i < graph.nodes.size() && !again; ++i) {
      const Node& sm = graph.nodes[i];
      if (!sm.domain.empty() || sm.op_type != "Softmax") continue;
      Match m;
      bool dense = false;
      if (!match_at(c, static_cast<int>(i), m)) {
        m = Match();
        if (!match_dense(c, static_cast<int>(i), m)) continue;
        dense = true;
      }
      const Value merged = graph.value(m.merged);
      const Shape& ms = merged.shape;  // [B, Sq, H, Dv]; dense: [B, H, Sq, Dv]
      Node attn;
      attn.name = graph.nodes[static_cast<size_t>(m.chain.back())].name + "_attention";
      attn.op_type = "Attention";
      attn.inputs = {m.q3, m.k3, m.v3, m.mask};
      if (m.mask == kNoValue) attn.inputs.pop_back();
      if (!dense) {
        attn.attrs["q_num_heads"] = Attribute::of_int(m.heads);
        attn.attrs["kv_num_heads"] = Attribute::of_int(m.heads);
      }
      attn.attrs["scale"] = Attribute::of_float(static_cast<float>(m.scale));
      const ValueId y = dense ? graph.add_value(graph.unique_name(merged.name + "_attention"), merged.dtype, ms, true)
                              : graph.add_value(graph.unique_name(merged.name + "_rows"), merged.dtype,
                                                {ms[0], ms[1], ms[2] * ms[3]}, true);
      attn.outputs = {y};
      if (!infer_node(attn, graph, registry).is_ok()) continue;
      // Any fused strategy (the Sm80 kernel or the sm_90a FMHA; checking only the Sm80 template left
      // BERT's attention written out when the sm_90a FMHA applied: 263 kernels instead of 131, 1.7x
      // slower, and ViT's 2x of v61).
      if (!attention_runs_fused(attn, graph)) continue;
      if (dense) attn.outputs = {m.merged};
      Node back;
      if (!dense) {
        back.name = graph.unique_name(attn.name + "_heads");
        back.op_type = "Reshape";
        back.inputs = {y, graph.add_constant(graph.unique_name(attn.name + "_heads_shape"),
                                             Tensor::from_int64s({4}, ms))};
        back.outputs = {m.merged};
        AOTC_RETURN_IF_ERROR(infer_node(back, graph, registry));
      } else {
        AOTC_RETURN_IF_ERROR(infer_node(attn, graph, registry));
      }
      std::vector<char> drop(graph.nodes.size(), 0);
      for (int n : m.chain) drop[static_cast<size_t>(n)] = 1;
      const size_t last = static_cast<size_t>(m.chain.back());
      std::vector<Node> out;
      out.reserve(graph.nodes.size());
      for (size_t n = 0; n < graph.nodes.size(); ++n) {
        if (n == last) {
          out.push_back(std::move(attn));
          if (!dense) out.push_back(std::move(back));
        } else if (!drop[n]) {
          out.push_back(std::move(graph.nodes[n]));
        }
      }
      graph.nodes = std::move(out);
      again = changed = true;
    }
  }
  if (changed) AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  return changed;
}

// ---- fuse_attention_operands ----
namespace {

enum { kQ = 0, kK = 1, kV = 2, kMask = 3 };

bool is_op(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// A constant mask that allows exactly the keys j <= i of query i (0 / -inf, or true / false) is
// what is_causal says; the fused kernel then skips the blocks above the diagonal and no row is
// ever fully masked (no fix-up kernel). Only without past / nonpad / windows (offset 0).
bool mask_is_causal(const Graph& g, const Node& n) {
  const ValueId m = n.input(kMask);
  if (m == kNoValue || !g.value(m).is_constant() || n.num_present_inputs() > 4 || n.outputs.size() > 1) return false;
  if (n.attr_int("left_window_size", -1) != -1 || n.attr_int("right_window_size", -1) != -1) return false;
  const Value& mv = g.value(m);
  const Shape& ms = mv.shape;
  const Shape& qs = g.value(n.inputs[kQ]).shape;
  const Shape& ks = g.value(n.inputs[kK]).shape;
  if (ms.size() < 2 || qs.size() < 3 || ks.size() < 3) return false;
  const int64_t sq = qs.size() == 4 ? qs[2] : qs[1], sk = ks.size() == 4 ? ks[2] : ks[1];
  if (ms.back() != sk || ms[ms.size() - 2] != sq || mv.numel() > (int64_t{1} << 26)) return false;
  const bool is_bool = mv.dtype == DType::kBool;
  if (!is_bool && !dtype_is_float(mv.dtype)) return false;
  const Tensor& t = *mv.constant;
  const int64_t plane = sq * sk;
  for (int64_t e = 0; e < mv.numel(); ++e) {
    const int64_t i = (e % plane) / sk, j = e % sk;
    const double x = t.get(e);
    const bool allowed = is_bool ? x != 0 : x == 0;
    const bool masked = is_bool ? x == 0 : (std::isinf(x) && x < 0);
    if (!(allowed || masked) || allowed != (j <= i)) return false;
  }
  return true;
}

// Whether the 4-D attention output y (B, H, Sq, Dv) is read only by a Transpose that puts the
// heads next to Dv as its last two axes (perm [0,2,1,3] or [2,0,1,3]: the head merge before an
// output projection, batch-first or sequence-first). Written as (B, Sq, H*Dv) rows instead, that
// Transpose composes with the head order into a row view (one batch) or a row gather, which
// fuse_copy_chains and cancel_row_permutations remove, where the 4-D output needs a copy.
bool feeds_head_merge(const Graph& g, const std::vector<std::vector<int>>& consumers, ValueId y) {
  const int r = g.sole_reader(consumers, y);
  if (r < 0 || g.is_graph_output(y)) return false;
  const Node& t = g.nodes[static_cast<size_t>(r)];
  if (!is_op(t, "Transpose") || !t.has_attr("perm")) return false;
  const std::vector<int64_t> p = t.attr_ints("perm");
  return p == std::vector<int64_t>{0, 2, 1, 3} || p == std::vector<int64_t>{2, 0, 1, 3};
}

// Logical dims of an operand with the head split out: [B, S, H*D] -> [B, S, H, D] (3-D inputs);
// [B, H, S, D] as they are. The view's strides for (batch, head, row) and the element base.
std::optional<std::array<int64_t, 4>> operand_layout(StridedView v, const Shape& logical, int64_t heads) {
  Shape refined = logical;
  const bool three_d = logical.size() == 3;
  if (three_d) {
    if (heads <= 0 || logical[2] % heads != 0) return std::nullopt;
    refined = {logical[0], logical[1], heads, logical[2] / heads};
  }
  if (refined.size() != 4 || shape_numel(refined) == 0 || !view_reshape(v, refined)) return std::nullopt;
  int64_t stride[4] = {0, 0, 0, 0};
  size_t atom = 0;
  for (size_t d = 0; d < 4; ++d) {
    if (v.spans[d] > 1) return std::nullopt;
    if (v.spans[d] == 1) stride[d] = v.strides[atom++];
  }
  if (refined[3] > 1 && stride[3] != 1) return std::nullopt;  // rows must be contiguous
  if (three_d) return std::array<int64_t, 4>{v.base, stride[0], stride[2], stride[1]};
  return std::array<int64_t, 4>{v.base, stride[0], stride[1], stride[2]};
}

bool only_read_by(const Graph& g, const std::vector<std::vector<int>>& consumers, ValueId v, int node) {
  if (g.is_graph_output(v)) return false;
  for (int r : consumers[static_cast<size_t>(v)])
    if (r != node) return false;
  return true;
}

// Where an operand's elements are, read through its producer: a part of a Split, an
// aotc.StridedCopy without scale or conversion, or any buffer that reaches the operand through
// Transposes and reshape views only (the dynamo exporter's head split: [B, S, H*D] -Reshape->
// [B, S, H, D] -Transpose(0,2,1,3)-> Q). nullopt when the operand stays a buffer of its own.
struct Source {
  ValueId buffer;
  std::array<int64_t, 4> view;
};
std::optional<Source> operand_source(const Graph& g, const std::vector<int>& producers,
                                     const std::vector<std::vector<int>>& consumers, int node, ValueId x, int64_t heads) {
  int p = producers[static_cast<size_t>(x)];
  if (p < 0 || !only_read_by(g, consumers, x, node)) return std::nullopt;
  const Shape& logical = g.value(x).shape;
  // The data movement between the source and the operand, each value read only by the next node
  // (so all of it goes away): reshape views and Transposes, in source-to-operand order.
  // A value with other readers ends the walk: it is the buffer read in place (it stays).
  std::vector<const Node*> chain;
  bool transposed = false;
  while (p >= 0) {
    const Node& r = g.nodes[static_cast<size_t>(p)];
    const bool transpose = is_op(r, "Transpose") && r.inputs.size() == 1;
    if (!transpose && !is_view_node(r)) break;
    transposed = transposed || transpose;
    chain.insert(chain.begin(), &r);
    const int r_index = p;
    x = r.inputs[0];
    p = producers[static_cast<size_t>(x)];
    if (!only_read_by(g, consumers, x, r_index)) p = -1;
  }
  auto follow_chain = [&](StridedView& v) {
    for (const Node* r : chain) {
      if (is_op(*r, "Transpose")) {
        const size_t rank = g.value(r->inputs[0]).shape.size();
        std::vector<int64_t> perm = r->has_attr("perm") ? r->attr_ints("perm") : std::vector<int64_t>{};
        if (perm.empty())
          for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
        view_permute(v, perm);
      } else if (!view_reshape(v, g.value(r->outputs[0]).shape)) {
        return false;
      }
    }
    return true;
  };
  const Node* pn = p >= 0 ? &g.nodes[static_cast<size_t>(p)] : nullptr;
  if (pn && is_op(*pn, "Split") && !pn->inputs.empty()) {
    const Shape& src = g.value(pn->inputs[0]).shape;
    const int64_t rank = static_cast<int64_t>(src.size());
    int64_t axis = pn->attr_int("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || shape_numel(src) == 0) return std::nullopt;
    // Every part goes to this node (directly or through its own reshapes), or the Split runs
    // anyway and nothing is saved.
    for (ValueId o : pn->outputs) {
      if (o == kNoValue || o == x) continue;
      ValueId v = o;
      while (!only_read_by(g, consumers, v, node)) {
        const auto& rs = consumers[static_cast<size_t>(v)];
        if (g.is_graph_output(v) || rs.size() != 1) return std::nullopt;
        const Node& r = g.nodes[static_cast<size_t>(rs[0])];
        if (!is_view_node(r) || r.inputs[0] != v) return std::nullopt;
        v = r.outputs[0];
      }
    }
    int64_t start = 0;
    size_t out = 0;
    for (; out < pn->outputs.size() && pn->outputs[out] != x; ++out)
      if (pn->outputs[out] != kNoValue) start += g.value(pn->outputs[out]).shape[static_cast<size_t>(axis)];
    if (out == pn->outputs.size()) return std::nullopt;
    StridedView v = contiguous_view(src);
    const Shape& part = g.value(x).shape;
    if (!view_slice(v, static_cast<size_t>(axis), src[static_cast<size_t>(axis)], start, 1,
                    part[static_cast<size_t>(axis)]) ||
        !follow_chain(v))
      return std::nullopt;
    auto layout = operand_layout(v, logical, heads);
    if (!layout) return std::nullopt;
    return Source{pn->inputs[0], *layout};
  }
  if (chain.empty() && pn && pn->domain == "aotc" && pn->op_type == "StridedCopy" && !pn->has_attr("scale") &&
      !pn->has_attr("to")) {
    const std::vector<int64_t> dims = pn->attr_ints("dims"), strides = pn->attr_ints("strides");
    if (dims.size() != strides.size() || shape_numel(dims) == 0) return std::nullopt;
    StridedView v;
    v.base = pn->attr_int("base", 0);
    for (size_t d = 0; d < dims.size(); ++d) {
      v.spans.push_back(dims[d] > 1 ? 1 : 0);
      if (dims[d] > 1) {
        v.dims.push_back(dims[d]);
        v.strides.push_back(strides[d]);
      }
    }
    auto layout = operand_layout(v, logical, heads);
    if (!layout) return std::nullopt;
    return Source{pn->inputs[0], *layout};
  }
  // Transposes (and reshapes) of a buffer: read the buffer itself through the composed view. A
  // chain of reshapes only reads the buffer as it is (nothing to save).
  if (!transposed || shape_numel(g.value(x).shape) == 0) return std::nullopt;
  StridedView v = contiguous_view(g.value(x).shape);
  if (!follow_chain(v)) return std::nullopt;
  auto layout = operand_layout(v, logical, heads);
  if (!layout) return std::nullopt;
  return Source{x, *layout};
}

// The exporters' repeat_kv in front of a 4-D Attention's K or V (transformers' LLaMA with SDPA):
// t [B, KV, S, D] -> Unsqueeze (or Reshape) to [B, KV, 1, S, D] -> Expand to [B, KV, G, S, D] ->
// Reshape to [B, KV*G, S, D]. Query head h = kv * G + g then reads KV head kv = h / G, which is
// what the op does itself with K/V of KV heads (grouped-query attention), so the Attention can
// read t and the copies go. Returns t, or kNoValue when x is not that chain (shapes decide: every
// step keeps row-major order, so only the inserted unit axis 2 and the Expand along it match).
ValueId repeated_kv_source(const Graph& g, const std::vector<int>& producers, ValueId x) {
  auto made_by = [&](ValueId v, const char* op, const char* op2 = nullptr) -> const Node* {
    const int p = producers[static_cast<size_t>(v)];
    if (p < 0) return nullptr;
    const Node& n = g.nodes[static_cast<size_t>(p)];
    return is_op(n, op) || (op2 && is_op(n, op2)) ? &n : nullptr;
  };
  const Node* merge = made_by(x, "Reshape");
  if (!merge) return kNoValue;
  const ValueId e = merge->inputs[0];
  const Node* expand = made_by(e, "Expand");
  if (!expand) return kNoValue;
  const ValueId u = expand->inputs[0];
  const Node* unit = made_by(u, "Unsqueeze", "Reshape");
  if (!unit) return kNoValue;
  const ValueId t = unit->inputs[0];
  const Shape &xs = g.value(x).shape, &es = g.value(e).shape, &us = g.value(u).shape, &ts = g.value(t).shape;
  if (ts.size() != 4 || xs.size() != 4 || es.size() != 5) return kNoValue;
  const int64_t b = ts[0], kv = ts[1], sl = ts[2], d = ts[3], group = es[2];
  if (us != Shape{b, kv, 1, sl, d} || es != Shape{b, kv, group, sl, d} || group < 1 ||
      xs != Shape{b, kv * group, sl, d} || g.value(t).dtype != g.value(x).dtype)
    return kNoValue;
  return t;
}

std::vector<int64_t> contiguous_layout(const Shape& s, int64_t heads) {
  if (s.size() == 3) return {0, s[1] * s[2], s[2] / heads, s[2]};
  return {0, s[1] * s[2] * s[3], s[2] * s[3], s[3]};
}

}  // namespace

Expected<bool> fuse_attention_operands(Graph& graph) {
  const OpRegistry& registry = default_registry();
  bool changed = false, reordered = false;
  std::vector<int> producers = graph.producers();
  std::vector<std::vector<int>> consumers = graph.consumers();
  std::vector<std::pair<ValueId, ValueId>> additive;  // boolean mask -> its additive form
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!is_op(graph.nodes[i], "Attention")) continue;
    if (mask_is_causal(graph, graph.nodes[i])) {
      Node& n = graph.nodes[i];
      n.inputs.resize(3);
      n.attrs["is_causal"] = Attribute::of_int(1);
      AOTC_RETURN_IF_ERROR(infer_node(n, graph, registry));
      changed = true;
    }
    // A boolean mask (the dynamo exporter's SDPA mask) becomes the additive one the fused kernel
    // reads: Where(mask, 0, -inf) in Q's dtype (16-bit on tensor cores, fp32 on FFMA). Exact: a
    // key that takes part adds 0, one that does not gets weight exp(-inf) = 0, and a row with no
    // key left is zeros under both forms.
    if (ValueId mb = graph.nodes[i].input(kMask); mb != kNoValue && graph.value(mb).dtype == DType::kBool &&
                                                   graph.target.has_sm80_tensor_cores()) {
      const DType t = graph.value(graph.nodes[i].inputs[kQ]).dtype;
      auto done = std::find_if(additive.begin(), additive.end(), [&](const auto& e) {
        return e.first == mb && graph.value(e.second).dtype == t;
      });
      if (done != additive.end()) {  // every layer reads the same mask: one Where for all of them
        graph.nodes[i].inputs[kMask] = done->second;
        AOTC_RETURN_IF_ERROR(infer_node(graph.nodes[i], graph, registry));
        changed = true;
      } else if (t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32) {
        const std::string base = graph.nodes[i].name.empty() ? graph.value(mb).name : graph.nodes[i].name;
        Tensor zero(t, {}), minus_inf(t, {});
        zero.set(0, 0.0);
        minus_inf.set(0, -std::numeric_limits<double>::infinity());
        const ValueId z = graph.add_constant(graph.unique_name(base + "_mask_keep"), std::move(zero));
        const ValueId m = graph.add_constant(graph.unique_name(base + "_mask_drop"), std::move(minus_inf));
        const ValueId add = graph.add_value(graph.unique_name(graph.value(mb).name + "_additive"), t, graph.value(mb).shape, true);
        Node w{base + "_additive_mask", "Where", "", {mb, z, m}, {add}, {}};
        AOTC_RETURN_IF_ERROR(infer_node(w, graph, registry));
        graph.nodes[i].inputs[kMask] = add;
        AOTC_RETURN_IF_ERROR(infer_node(graph.nodes[i], graph, registry));
        graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(w));
        ++i;
        additive.emplace_back(mb, add);
        changed = true;
        producers = graph.producers();
        consumers = graph.consumers();
      }
    }
    // The exporter's repeat_kv in front of K and V: the Attention reads the KV heads themselves
    // (grouped-query attention; the fused kernel reads KV head h / G for query head h in place).
    // Both or neither, so K and V keep one head count; not with past / present K/V, whose shapes
    // are the op's heads.
    {
      Node& n = graph.nodes[i];
      const bool plain = n.inputs.size() >= 3 && n.num_present_inputs() <= 4 && n.outputs.size() >= 1 &&
                         std::all_of(n.outputs.begin() + 1, n.outputs.end(), [](ValueId o) { return o == kNoValue; });
      if (plain && graph.value(n.inputs[kQ]).shape.size() == 4) {
        const ValueId kt = repeated_kv_source(graph, producers, n.inputs[kK]);
        const ValueId vt = repeated_kv_source(graph, producers, n.inputs[kV]);
        if (kt != kNoValue && vt != kNoValue && graph.value(kt).shape[1] == graph.value(vt).shape[1]) {
          Node cand = n;
          cand.inputs[kK] = kt;
          cand.inputs[kV] = vt;
          const Shape y_before = graph.value(n.outputs[0]).shape;
          if (infer_node(cand, graph, registry).is_ok() && graph.value(n.outputs[0]).shape == y_before) {
            n = std::move(cand);
            changed = true;
            producers = graph.producers();
            consumers = graph.consumers();
          } else {
            AOTC_RETURN_IF_ERROR(infer_node(n, graph, registry));  // the output's value as it was
          }
        }
      }
    }
    Node& n = graph.nodes[i];
    if (n.num_present_inputs() > 4 || n.outputs.size() != 1 || n.inputs.size() < 3) continue;
    const Shape& qs = graph.value(n.inputs[kQ]).shape;
    if (qs.size() != 3 && qs.size() != 4) continue;
    const int64_t q_heads = qs.size() == 3 ? n.attr_int("q_num_heads", 0) : qs[1];
    const int64_t kv_heads = qs.size() == 3 ? n.attr_int("kv_num_heads", 0) : graph.value(n.inputs[kK]).shape[1];
    if (q_heads <= 0 || kv_heads <= 0) continue;
    Node cand = n;
    cand.domain = "aotc";
    cand.op_type = "StridedAttention";
    bool any = false;
    const char* shape_attr[3] = {"q_shape", "k_shape", "v_shape"};
    const char* view_attr[3] = {"q_view", "k_view", "v_view"};
    for (int o = 0; o < 3; ++o) {
      const ValueId x = n.inputs[static_cast<size_t>(o)];
      const Shape& s = graph.value(x).shape;
      const int64_t heads = o == kQ ? q_heads : kv_heads;
      if (s.size() != qs.size() || (s.size() == 3 && s[2] % heads != 0)) break;
      cand.attrs[shape_attr[o]] = Attribute::of_ints(s);
      std::optional<Source> src = operand_source(graph, producers, consumers, static_cast<int>(i), x, heads);
      if (src) {
        cand.inputs[static_cast<size_t>(o)] = src->buffer;
        cand.attrs[view_attr[o]] = Attribute::of_ints({src->view[0], src->view[1], src->view[2], src->view[3]});
        any = true;
      } else {
        cand.attrs[view_attr[o]] = Attribute::of_ints(contiguous_layout(s, heads));
      }
    }
    if (!any || !cand.has_attr("v_view")) continue;
    if (!infer_node(cand, graph, registry).is_ok()) continue;
    // 4-D operands whose batch stride is not H head strides (torch's sequence-first
    // MultiheadAttention: q/k/v gathered from a [S, B, 3E] projection) cannot run as B*H
    // batches of one head. The same views as 3-D operands [B, S, H*D] (heads in the row) can:
    // Y is then written as (B, Sq, H*Dv) rows, and a head split + Transpose(0,2,1,3) gives the
    // 4-D output back, which fuse_copy_chains composes with the transposes that follow it. That
    // form is also preferred where both run and the 4-D output only feeds a head merge (the same
    // attention at batch 1: the merge becomes a view instead of a copy).
    const bool runs_4d = attention_runs_fused(cand, graph);
    const bool rows_first = qs.size() == 4 && feeds_head_merge(graph, consumers, n.outputs[0]);
    bool as_rows = false;
    if (qs.size() == 4 && (!runs_4d || rows_first)) {
      Node c3 = cand;
      for (int o = 0; o < 3; ++o) {
        const Shape s = graph.value(n.inputs[static_cast<size_t>(o)]).shape;
        c3.attrs[shape_attr[o]] = Attribute::of_ints({s[0], s[2], s[1] * s[3]});
      }
      c3.attrs["q_num_heads"] = Attribute::of_int(q_heads);
      c3.attrs["kv_num_heads"] = Attribute::of_int(kv_heads);
      const ValueId y4 = n.outputs[0];
      const Shape ys = graph.value(y4).shape;  // [B, H, Sq, Dv]
      const DType yt = graph.value(y4).dtype;
      const std::string yname = graph.value(y4).name;
      const ValueId y3 = graph.add_value(graph.unique_name(yname + "_rows"), yt, {ys[0], ys[2], ys[1] * ys[3]}, true);
      c3.outputs = {y3};
      as_rows = infer_node(c3, graph, registry).is_ok() && attention_runs_fused(c3, graph);
      if (as_rows) {
        const ValueId split = graph.add_value(graph.unique_name(yname + "_heads"));
        Node heads{c3.name + "_heads", "Reshape", "", {y3, graph.add_constant(graph.unique_name(yname + "_heads_shape"),
                                                                            Tensor::from_int64s({4}, {ys[0], ys[2], ys[1], ys[3]}))},
                   {split}, {}};
        Node order{c3.name + "_head_order", "Transpose", "", {split}, {y4}, {{"perm", Attribute::of_ints({0, 2, 1, 3})}}};
        AOTC_RETURN_IF_ERROR(infer_node(heads, graph, registry));
        AOTC_RETURN_IF_ERROR(infer_node(order, graph, registry));
        graph.nodes[i] = std::move(c3);
        graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, {std::move(heads), std::move(order)});
        i += 2;
        reordered = true;
      }
    }
    if (!as_rows) {
      if (!runs_4d) continue;
      graph.nodes[i] = std::move(cand);
    }
    changed = true;
    producers = graph.producers();
    consumers = graph.consumers();
  }
  if (changed) AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  // The head-order transposes added above compose with their readers' data movement.
  if (reordered) AOTC_RETURN_IF_ERROR(fuse_copy_chains(graph).status());
  return changed;
}

}  // namespace aotc
