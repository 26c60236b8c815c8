// fuse_rms_norm: the RMS normalisation that exporters before opset 23 write out op by op (LLaMA's,
// Mistral's and T5's LlamaRMSNorm / T5LayerNorm as TorchScript writes them),
//   v = ReduceMean(Pow(x, 2) | Mul(x, x), trailing axes, keepdims 1)
//   h = Mul(x, Div(1, Sqrt(Add(v, eps))))  |  Mul(x, Reciprocal(Sqrt(...)))  |  Div(x, Sqrt(...))
//   y = Mul(h, w)  (either operand order; w of x's trailing dims), or y = h (no weight)
// becomes one RMSNormalization(x, w) {axis, epsilon} node (opset 23; with no weight, w is a
// constant of ones). The form of a model exported in 16-bit, x = Cast(x0 -> float32) and
// y = Mul(Cast(h -> x0's type), w), becomes RMSNormalization(x0, w): the op computes its
// statistics in float32 anyway (stash_type 1). Every intermediate must have exactly one reader and
// not be a graph output; eps must be a scalar constant >= 0. The fused op computes the same
// function with fewer roundings (the written-out form rounds after each op).
// Why (H200, docs/perf_notes.md v67, profile events): TorchScript's LLaMA at batch 32 in fp16 ran
// each norm as 8 kernels (the Pow kept in float32 by the precision policy, with its Casts), ~89.5
// us a norm plus an 11.5 us float Cast of the residual: ~2.5 of 5.3 ms of step time; the dynamo
// export at opset 23 writes RMSNormalization, one 13.4 us kernel.
#include <algorithm>
#include <cmath>
#include <set>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/shape_inference.h"
#include "opt/passes.h"
#include "opt/pattern_match.h"

namespace aotc {
namespace {

bool is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat64;
}

class RmsNormMatcher : public ChainMatcher {
 public:
  explicit RmsNormMatcher(Graph& g) : ChainMatcher(g) {}

  struct Match {
    ValueId x = kNoValue;      // the normalised input (x0 in the Cast form)
    ValueId scale = kNoValue;  // w, or kNoValue (ones)
    ValueId y = kNoValue;      // the value the fused node writes
    int last = -1;             // the node producing y (the fused node takes its position)
    int64_t axis = 0;
    double eps = 0;
    std::set<int> nodes;       // matched nodes, removed
  };

  // Tries the node at `i` as the ReduceMean of an RMS normalisation.
  bool match(int i, Match* m) {
    const Node& r = node(i);
    if (!is(r, "ReduceMean") || r.inputs.empty() || r.outputs.size() != 1) return false;
    if (r.attr_int("keepdims", 1) != 1 || r.attr_int("noop_with_empty_axes", 0) != 0) return false;
    *m = Match{};
    m->nodes.insert(i);
    // p = Pow(x, 2) or Mul(x, x)
    const int p = single_producer(r.inputs[0], &m->nodes);
    if (p < 0) return false;
    const Node& pn = node(p);
    if (is(pn, "Pow") && pn.inputs.size() == 2 && float_scalar_is(pn.input(1), 2.0)) {
      m->x = pn.inputs[0];
    } else if (is(pn, "Mul") && pn.inputs.size() == 2 && pn.inputs[0] == pn.inputs[1]) {
      m->x = pn.inputs[0];
    } else {
      return false;
    }
    const Value& xv = g_.value(m->x);
    if (!is_float(xv.dtype) || !xv.shape_known || xv.shape.empty()) return false;
    const int64_t rank = static_cast<int64_t>(xv.shape.size());
    if (!trailing_axes(r, rank, &m->axis)) return false;
    // a = Add(v, eps)
    const int a = single_consumer(r.outputs[0]);
    if (a < 0 || !is(node(a), "Add") || node(a).inputs.size() != 2) return false;
    const ValueId eps_v = node(a).inputs[0] == r.outputs[0] ? node(a).inputs[1] : node(a).inputs[0];
    if (!float_scalar(eps_v, &m->eps) || !(m->eps >= 0) || !std::isfinite(m->eps)) return false;
    m->nodes.insert(a);
    // s = Sqrt(a)
    const int s = single_consumer(node(a).outputs[0]);
    if (s < 0 || !is(node(s), "Sqrt") || node(s).inputs.size() != 1) return false;
    m->nodes.insert(s);
    // h = Div(x, s), or Mul(x, Div(1, s) | Reciprocal(s))
    const ValueId sv = node(s).outputs[0];
    const int d = single_consumer(sv);
    if (d < 0) return false;
    m->nodes.insert(d);
    const Node& dn = node(d);
    int h = -1;
    if (is(dn, "Div") && dn.inputs.size() == 2 && dn.inputs[1] == sv && dn.inputs[0] == m->x) {
      h = d;
    } else {
      const bool recip = (is(dn, "Div") && dn.inputs.size() == 2 && dn.inputs[1] == sv && float_scalar_is(dn.input(0), 1.0)) ||
                         (is(dn, "Reciprocal") && dn.inputs.size() == 1);
      if (!recip) return false;
      h = single_consumer(dn.outputs[0]);
      if (h < 0 || !is(node(h), "Mul") || node(h).inputs.size() != 2) return false;
      const Node& hn = node(h);
      const ValueId other = hn.inputs[0] == dn.outputs[0] ? hn.inputs[1] : hn.inputs[0];
      if (other != m->x) return false;
      m->nodes.insert(h);
    }
    ValueId hv = node(h).outputs[0];
    m->last = h;
    m->y = hv;
    // Every matched intermediate keeps x's dtype and the norm's shapes (no broadcasting beyond x).
    if (g_.value(hv).dtype != xv.dtype || g_.value(hv).shape != xv.shape) return false;
    for (int n : m->nodes)
      if (g_.value(node(n).outputs[0]).dtype != xv.dtype) return false;
    // Casts around the computation: x = Cast(x0 -> float) before it (a 16-bit export's upcast, or
    // TorchScript's `.to(float32)` of a float32 tensor, a Cast to the same type) and h -> Cast(to
    // x0's type) after it (`.to(input_dtype)`): the fused node reads x0 and writes x0's type. A
    // Cast before with none after to match keeps x as the input.
    const int xc = producers_[static_cast<size_t>(m->x)];
    DType out_dtype = xv.dtype;
    const int hc = single_consumer(hv);
    const bool cast_after = hc >= 0 && is(node(hc), "Cast") && node(hc).inputs.size() == 1;
    ValueId x_in = m->x;
    if (xc >= 0 && is(node(xc), "Cast") && node(xc).inputs.size() == 1) {
      const DType t0 = g_.value(node(xc).inputs[0]).dtype;
      if (is_float(t0) && dtype_size(t0) <= dtype_size(xv.dtype) &&
          (t0 == xv.dtype || (cast_after && g_.value(node(hc).outputs[0]).dtype == t0)))
        x_in = node(xc).inputs[0];
    }
    if (cast_after && g_.value(node(hc).outputs[0]).dtype == g_.value(x_in).dtype) {
      m->nodes.insert(hc);
      hv = node(hc).outputs[0];
      m->last = hc;
      m->y = hv;
      out_dtype = g_.value(x_in).dtype;
    } else if (g_.value(x_in).dtype != xv.dtype) {
      x_in = m->x;
    }
    if (x_in != m->x) {
      // The Cast before goes too when the pattern was its only reader.
      bool only_pattern = !g_.is_graph_output(m->x);
      for (int c : consumers_[static_cast<size_t>(m->x)]) only_pattern = only_pattern && m->nodes.count(c);
      if (only_pattern) m->nodes.insert(xc);
      m->x = x_in;
    }
    // y = Mul(h, w), w of the normalised dims' trailing shape and the output's dtype.
    const int wm = single_consumer(hv);
    if (wm >= 0 && is(node(wm), "Mul") && node(wm).inputs.size() == 2) {
      const Node& wn = node(wm);
      const ValueId w = wn.inputs[0] == hv ? wn.inputs[1] : wn.inputs[0];
      const Value& wv = g_.value(w);
      const Shape norm(xv.shape.begin() + m->axis, xv.shape.end());
      // More dims than the normalised shape (leading 1s, e.g. [1, N]): a constant is re-shaped.
      const bool fits = wv.shape.size() <= norm.size() || wv.is_constant();
      if (w != hv && wv.shape_known && fits && wv.dtype == out_dtype && trailing_broadcast(wv.shape, norm) &&
          g_.value(wn.outputs[0]).shape == xv.shape && g_.value(wn.outputs[0]).dtype == out_dtype) {
        m->nodes.insert(wm);
        m->scale = w;
        m->last = wm;
        m->y = wn.outputs[0];
      }
    }
    return true;
  }

 private:
  static bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty() && n.outputs.size() == 1; }
  // A float scalar constant (eps, the exponent 2, the numerator 1).
  bool float_scalar(ValueId v, double* out) const {
    return v != kNoValue && is_float(g_.value(v).dtype) && scalar_value(v, out);
  }
  bool float_scalar_is(ValueId v, double want) const {
    double got = 0;
    return float_scalar(v, &got) && got == want;
  }
  // The ReduceMean's axes (constant input 1 after import; absent = every axis) are the trailing
  // dims from some axis on: that axis in *axis.
  bool trailing_axes(const Node& r, int64_t rank, int64_t* axis) const {
    std::vector<int64_t> axes;
    if (r.input(1) != kNoValue) {
      const Value& a = g_.value(r.input(1));
      if (!a.is_constant()) return false;
      axes = a.constant->to_int64s();
    }
    if (axes.empty()) {
      *axis = 0;
      return true;
    }
    for (int64_t& v : axes) {
      if (v < -rank || v >= rank) return false;
      if (v < 0) v += rank;
    }
    std::sort(axes.begin(), axes.end());
    for (size_t k = 0; k < axes.size(); ++k)
      if (axes[k] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(k)) return false;
    *axis = axes[0];
    return true;
  }
};

}  // namespace

Expected<bool> fuse_rms_norm(Graph& graph) {
  const OpRegistry& registry = default_registry();
  std::set<int> removed;
  std::vector<std::pair<int, Node>> replacements;  // at the last matched node's position
  {
    RmsNormMatcher matcher(graph);
    for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
      RmsNormMatcher::Match m;
      if (!matcher.match(i, &m)) continue;
      bool overlaps = false;
      for (int n : m.nodes) overlaps = overlaps || removed.count(n);
      if (overlaps) continue;
      const Node& last = graph.nodes[static_cast<size_t>(m.last)];
      const Value& xv = graph.value(m.x);
      ValueId scale = m.scale;
      const size_t norm_rank = xv.shape.size() - static_cast<size_t>(m.axis);
      if (scale != kNoValue && graph.value(scale).shape.size() > norm_rank) {
        const Value& w = graph.value(scale);
        const Shape trailing(w.shape.end() - static_cast<std::ptrdiff_t>(norm_rank), w.shape.end());
        scale = graph.add_constant(graph.unique_name(last.name + "_rms_scale"), w.constant->reshaped(trailing));
      }
      if (scale == kNoValue) {
        const Shape norm(xv.shape.begin() + m.axis, xv.shape.end());
        Tensor ones(xv.dtype, norm);
        for (int64_t j = 0; j < ones.numel(); ++j) ones.set(j, 1.0);
        scale = graph.add_constant(graph.unique_name(last.name + "_rms_scale"), std::move(ones));
      }
      Node rms{last.name, "RMSNormalization", "", {m.x, scale}, {m.y},
               {{"axis", Attribute::of_int(m.axis)},
                {"epsilon", Attribute::of_float(static_cast<float>(m.eps))},
                {"stash_type", Attribute::of_int(1)}}};
      if (!infer_node(rms, graph, registry).is_ok()) continue;
      removed.insert(m.nodes.begin(), m.nodes.end());
      replacements.emplace_back(m.last, std::move(rms));
    }
  }
  if (replacements.empty()) return false;
  replace_matched_nodes(graph, removed, std::move(replacements));
  return true;
}

}  // namespace aotc
