// fuse_rotary: the rotate_half rotary embedding that PyTorch exporters write out (HF LLaMA's
// apply_rotary_pos_emb) becomes one RotaryEmbedding node (opset 23, halves form):
//   y = Add(Mul(x, C), Mul(Concat(Neg(Slice(x, h:D)), Slice(x, 0:h), axis -1), S))   (h = D/2)
// with x [B, H, S, D] (or [B, S, D], one head) and C / S constant cos / sin tables that
// broadcast to x, depend on (s, d) only and have equal halves (cat(freqs, freqs)): every element
// is checked. -> RotaryEmbedding(x, cos[S, h], sin[S, h], position_ids = 0..S-1 per row), which
// computes x1*c - x2*s and x2*c + x1*s: the same products and sums as x*C + cat(-x2, x1)*S.
// Where x is the head split Transpose(0,2,1,3) of Reshape([B,S,H,D]) read by nothing else, the
// rotary runs on the [B, S, H*D] projection (num_heads = H) and the head transpose moves after it,
// so fuse_attention / fuse_attention_operands read the Attention operand as a view of the rotary
// output. Every intermediate must have one reader and not be a graph output. LLaMA's decoder ran
// the written-out form as 14 elementwise kernels per layer (H200, docs/perf_notes.md).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "ir/op_registry.h"
#include "ir/ops/slice.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"

namespace aotc {
namespace {

struct Ctx {
  Graph& g;
  std::vector<int> producers;
  std::vector<std::vector<int>> consumers;
};

struct Match {
  ValueId x = kNoValue, cos = kNoValue, sin = kNoValue;
  int add = -1;
  std::vector<int> nodes;  // every matched node (removed); the Add's position gets the new nodes
};

bool is_op(const Node& n, const char* op, size_t inputs) {
  return n.domain.empty() && n.op_type == op && n.inputs.size() >= inputs && n.num_present_inputs() >= static_cast<int>(inputs) &&
         n.outputs.size() == 1;
}

// The producer of `v` if it is `op` and v has no other reader and is not a graph output.
int private_producer(const Ctx& c, ValueId v, const char* op, size_t inputs) {
  if (v == kNoValue || c.g.is_graph_output(v) || c.consumers[static_cast<size_t>(v)].size() != 1) return -1;
  const int p = c.producers[static_cast<size_t>(v)];
  if (p < 0 || !is_op(c.g.nodes[static_cast<size_t>(p)], op, inputs)) return -1;
  return p;
}

// Mul(a, b) with exactly one constant operand: the other one and the constant.
bool split_constant_mul(const Ctx& c, const Node& mul, ValueId& other, ValueId& constant) {
  if (mul.inputs.size() != 2) return false;
  const bool c0 = c.g.value(mul.inputs[0]).is_constant(), c1 = c.g.value(mul.inputs[1]).is_constant();
  if (c0 == c1) return false;
  other = mul.inputs[c0 ? 1 : 0];
  constant = mul.inputs[c0 ? 0 : 1];
  return true;
}

// Slice node `s` takes x[..., start:start+h] (step 1, every other dim whole) of x.
bool is_half_slice(const Ctx& c, const Node& s, ValueId x, int64_t start, int64_t h) {
  if (s.inputs[0] != x) return false;
  Expected<SliceParams> p = slice_params(s, c.g);
  if (!p) return false;
  const Shape& in = c.g.value(x).shape;
  const size_t last = in.size() - 1;
  for (size_t d = 0; d < in.size(); ++d) {
    if (p->step[d] != 1) return false;
    if (d == last ? (p->start[d] != start || p->out[d] != h) : (p->start[d] != 0 || p->out[d] != in[d])) return false;
  }
  return true;
}

// v = Mul(Concat(Neg(Slice(x, h:D)), Slice(x, 0:h), axis -1), S) with S constant: fills x, sin.
bool match_rotated(const Ctx& c, ValueId v, Match& m) {
  const int mul = private_producer(c, v, "Mul", 2);
  if (mul < 0) return false;
  ValueId cat_v = kNoValue, sin = kNoValue;
  if (!split_constant_mul(c, c.g.nodes[static_cast<size_t>(mul)], cat_v, sin)) return false;
  const int cat = private_producer(c, cat_v, "Concat", 2);
  if (cat < 0) return false;
  const Node& cn = c.g.nodes[static_cast<size_t>(cat)];
  const Shape& cs = c.g.value(cn.outputs[0]).shape;
  const int64_t rank = static_cast<int64_t>(cs.size());
  int64_t axis = cn.attr_int("axis", 0);
  if (cn.inputs.size() != 2 || rank < 3 || (axis != -1 && axis != rank - 1)) return false;
  // cat(-x2, x1): the negated upper half first (rotate_half); cat(x1, -x2) is another function.
  const int neg = private_producer(c, cn.inputs[0], "Neg", 1);
  if (neg < 0) return false;
  const int upper = private_producer(c, c.g.nodes[static_cast<size_t>(neg)].inputs[0], "Slice", 3);
  const int lower = private_producer(c, cn.inputs[1], "Slice", 3);
  if (upper < 0 || lower < 0) return false;
  const ValueId x = c.g.nodes[static_cast<size_t>(lower)].inputs[0];
  const Shape& xs = c.g.value(x).shape;
  if (xs != cs || xs.back() % 2 != 0 || xs.back() < 2) return false;
  const int64_t h = xs.back() / 2;
  if (!is_half_slice(c, c.g.nodes[static_cast<size_t>(lower)], x, 0, h) ||
      !is_half_slice(c, c.g.nodes[static_cast<size_t>(upper)], x, h, h))
    return false;
  m.x = x;
  m.sin = sin;
  m.nodes.insert(m.nodes.end(), {mul, cat, neg, upper, lower});
  return true;
}

bool match_at(const Ctx& c, int add_index, Match& m) {
  const Node& add = c.g.nodes[static_cast<size_t>(add_index)];
  if (!is_op(add, "Add", 2) || add.inputs.size() != 2) return false;
  const Value& y = c.g.value(add.outputs[0]);
  if (y.dtype != DType::kFloat32 && y.dtype != DType::kFloat16 && y.dtype != DType::kBFloat16 &&
      y.dtype != DType::kFloat64)
    return false;
  for (int side = 0; side < 2; ++side) {
    m = Match{};
    if (!match_rotated(c, add.inputs[static_cast<size_t>(1 - side)], m)) continue;
    const int mul = private_producer(c, add.inputs[static_cast<size_t>(side)], "Mul", 2);
    ValueId x = kNoValue, cos = kNoValue;
    if (mul < 0 || !split_constant_mul(c, c.g.nodes[static_cast<size_t>(mul)], x, cos) || x != m.x) continue;
    const Shape& xs = c.g.value(x).shape;
    if (xs.size() != 3 && xs.size() != 4) continue;
    // Neither table may broadcast x to a larger shape.
    if (c.g.value(add.inputs[0]).shape != xs || c.g.value(add.inputs[1]).shape != xs || y.shape != xs) continue;
    m.cos = cos;
    m.add = add_index;
    m.nodes.push_back(mul);
    m.nodes.push_back(add_index);
    return true;
  }
  return false;
}

// The [S, D/2] cache that table `t` (broadcast to x's shape xs, [.., S, D]) holds, if every
// element depends only on (s, d) and t[.., s, d] == t[.., s, d + D/2]; else an empty optional.
std::optional<Tensor> rotary_cache(const Value& t, const Shape& xs) {
  const Shape& ts = t.shape;
  if (!t.is_constant() || ts.size() > xs.size()) return std::nullopt;
  const size_t off = xs.size() - ts.size();
  for (size_t k = 0; k < ts.size(); ++k)
    if (ts[k] != 1 && ts[k] != xs[k + off]) return std::nullopt;
  const int64_t seq = xs[xs.size() - 2], h = xs.back() / 2;
  const std::vector<int64_t> strides = shape_strides(ts);
  // The table's own seq / dim axes (size 1 or absent: the value does not vary along them).
  const int seq_axis = static_cast<int>(xs.size()) - 2 - static_cast<int>(off);
  const int dim_axis = static_cast<int>(ts.size()) - 1;
  const bool seq_varies = seq_axis >= 0 && ts[static_cast<size_t>(seq_axis)] > 1;
  const bool dim_varies = dim_axis >= 0 && ts[static_cast<size_t>(dim_axis)] > 1;
  const Tensor& data = *t.constant;
  Tensor cache(t.dtype, {seq, h});
  for (int64_t s = 0; s < seq; ++s)
    for (int64_t i = 0; i < h; ++i)
      cache.set(s * h + i, data.get((seq_varies ? s * strides[static_cast<size_t>(seq_axis)] : 0) +
                                    (dim_varies ? i * strides[static_cast<size_t>(dim_axis)] : 0)));
  // Every element of the table against the cache: equal halves, nothing varies with batch / head.
  for (int64_t e = 0; e < data.numel(); ++e) {
    const int64_t s = seq_varies ? (e / strides[static_cast<size_t>(seq_axis)]) % seq : 0;
    const int64_t d = dim_varies ? (e / strides[static_cast<size_t>(dim_axis)]) % (2 * h) : 0;
    if (data.get(e) != cache.get(s * h + d % h)) return std::nullopt;
  }
  return cache;
}

}  // namespace

Expected<bool> fuse_rotary(Graph& graph) {
  const OpRegistry& registry = default_registry();
  if (!registry.find("RotaryEmbedding")) return false;
  std::set<int> removed;
  std::map<int, std::vector<Node>> inserted;  // at the matched Add's position
  // (C, S tables, seq, head size) -> the caches; (batch, seq) -> the position ids.
  std::map<std::tuple<ValueId, ValueId, int64_t, int64_t>, std::pair<ValueId, ValueId>> caches;
  std::map<std::pair<int64_t, int64_t>, ValueId> positions;
  Ctx c{graph, graph.producers(), graph.consumers()};
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    Match m;
    if (!match_at(c, i, m)) continue;
    bool overlaps = false;
    for (int n : m.nodes) overlaps = overlaps || removed.count(n);
    if (overlaps) continue;
    const Shape xs = graph.value(m.x).shape;
    const DType dtype = graph.value(m.x).dtype;
    if (graph.value(m.cos).dtype != dtype || graph.value(m.sin).dtype != dtype) continue;
    const auto key = std::make_tuple(m.cos, m.sin, xs[xs.size() - 2], xs.back());
    auto cached = caches.find(key);
    if (cached == caches.end()) {
      std::optional<Tensor> cos = rotary_cache(graph.value(m.cos), xs), sin = rotary_cache(graph.value(m.sin), xs);
      if (!cos || !sin) continue;
      const ValueId cv = graph.add_constant(graph.unique_name(graph.value(m.cos).name + "_rotary_cache"), std::move(*cos));
      const ValueId sv = graph.add_constant(graph.unique_name(graph.value(m.sin).name + "_rotary_cache"), std::move(*sin));
      cached = caches.emplace(key, std::make_pair(cv, sv)).first;
    }
    const int64_t batch = xs[0], seq = xs[xs.size() - 2];
    auto pos = positions.find({batch, seq});
    if (pos == positions.end()) {
      std::vector<int64_t> ids;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t s = 0; s < seq; ++s) ids.push_back(s);
      const ValueId p = graph.add_constant(graph.unique_name("rotary_position_ids"), Tensor::from_int64s({batch, seq}, ids));
      pos = positions.emplace(std::make_pair(batch, seq), p).first;
    }
    const Node& add = graph.nodes[static_cast<size_t>(m.add)];
    const ValueId y = add.outputs[0];
    const std::string name = add.name.empty() ? graph.value(y).name : add.name;
    Node rotary{name + "_rotary", "RotaryEmbedding", "", {m.x, cached->second.first, cached->second.second, pos->second},
                {y}, {{"interleaved", Attribute::of_int(0)}}};
    std::vector<Node> added;
    // The head split x = Transpose(0,2,1,3)(t [B,S,H,D]) read only by the pattern: rotate the
    // [B, S, H*D] rows (num_heads H) and transpose the result instead.
    const int t = c.producers[static_cast<size_t>(m.x)];
    const Node* tn = t >= 0 ? &graph.nodes[static_cast<size_t>(t)] : nullptr;
    int readers_in_match = 0;
    for (int r : c.consumers[static_cast<size_t>(m.x)])
      readers_in_match += std::find(m.nodes.begin(), m.nodes.end(), r) != m.nodes.end() ? 1 : 0;
    if (xs.size() == 4 && tn && is_op(*tn, "Transpose", 1) && tn->attr_ints("perm") == std::vector<int64_t>{0, 2, 1, 3} &&
        !graph.is_graph_output(m.x) && readers_in_match == static_cast<int>(c.consumers[static_cast<size_t>(m.x)].size()) &&
        !removed.count(t)) {
      const ValueId split = tn->inputs[0];  // [B, S, H, D]
      const Shape rows = {xs[0], xs[2], xs[1] * xs[3]}, heads = {xs[0], xs[2], xs[1], xs[3]};
      ValueId src = kNoValue;
      const int r = c.producers[static_cast<size_t>(split)];
      if (r >= 0 && is_view_node(graph.nodes[static_cast<size_t>(r)]) &&
          graph.value(graph.nodes[static_cast<size_t>(r)].inputs[0]).shape == rows)
        src = graph.nodes[static_cast<size_t>(r)].inputs[0];
      if (src == kNoValue) {  // a view of the split heads
        src = graph.add_value(graph.unique_name(graph.value(split).name + "_rows"));
        added.push_back(Node{name + "_rotary_rows", "Reshape", "",
                             {split, graph.add_constant(graph.unique_name(name + "_rotary_rows_shape"),
                                                        Tensor::from_int64s({3}, rows))},
                             {src}, {}});
      }
      const std::string yname = graph.value(y).name;
      const ValueId r3 = graph.add_value(graph.unique_name(yname + "_rows"));
      const ValueId r4 = graph.add_value(graph.unique_name(yname + "_heads"));
      rotary.inputs[0] = src;
      rotary.outputs = {r3};
      rotary.attrs["num_heads"] = Attribute::of_int(xs[1]);
      added.push_back(std::move(rotary));
      added.push_back(Node{name + "_rotary_heads", "Reshape", "",
                           {r3, graph.add_constant(graph.unique_name(name + "_rotary_heads_shape"),
                                                   Tensor::from_int64s({4}, heads))},
                           {r4}, {}});
      added.push_back(Node{name + "_rotary_head_order", "Transpose", "", {r4}, {y}, {{"perm", Attribute::of_ints({0, 2, 1, 3})}}});
      m.nodes.push_back(t);
    } else {
      if (xs.size() == 3) rotary.attrs["num_heads"] = Attribute::of_int(1);
      added.push_back(std::move(rotary));
    }
    for (Node& n : added) AOTC_RETURN_IF_ERROR(infer_node(n, graph, registry));
    removed.insert(m.nodes.begin(), m.nodes.end());
    inserted[m.add] = std::move(added);
  }
  if (inserted.empty()) return false;
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size());
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    auto at = inserted.find(i);
    if (at != inserted.end())
      for (Node& n : at->second) nodes.push_back(std::move(n));
    else if (!removed.count(i))
      nodes.push_back(std::move(graph.nodes[static_cast<size_t>(i)]));
  }
  graph.nodes = std::move(nodes);
  // The head-split Reshapes that fed the moved Transposes may have no reader left.
  AOTC_RETURN_IF_ERROR(dead_code(graph).status());
  return true;
}

}  // namespace aotc
