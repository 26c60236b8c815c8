// fuse_gelu: the GELU formulas exporters write out op by op become one Gelu node (opset-20 op,
// approximate "none" or "tanh"), which fuse_epilogue can then absorb into a Gemm/Conv epilogue:
//   erf:  0.5 * x * (1 + Erf(x / sqrt(2)))       (Div by sqrt 2, or Mul by 1/sqrt 2)
//   tanh: 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * Pow(x, 3))))   (GPT-2's NewGELU)
// with either operand order of each Add/Mul and the three ways of applying the 0.5
// ((A * x) * 0.5, A * (x * 0.5), (A * 0.5) * x). Every intermediate must have exactly one reader
// and not be a graph output; every constant must equal the formula's to 1e-6 (relative), so the
// fused op computes the same function (with fewer roundings). GPT-2 at batch 32 spent 5.2 of
// 13.9 ms in the eight kernels of the written-out tanh form (H100, docs/perf_notes.md).
#include <algorithm>
#include <cmath>
#include <set>

#include "opt/passes.h"
#include "opt/pattern_match.h"

namespace aotc {
namespace {

class GeluMatcher : public ChainMatcher {
 public:
  explicit GeluMatcher(Graph& g) : ChainMatcher(g) {}

  struct Match {
    ValueId x = kNoValue;
    int last = -1;                // node whose output becomes the Gelu's
    std::set<int> nodes;          // every matched node (removed)
    std::string approximate;
  };

  // Tries the node at `i` (a Tanh or Erf) as the centre of a GELU.
  bool match(int i, Match* m) {
    const Node& c = g_.nodes[static_cast<size_t>(i)];
    if (!c.domain.empty() || c.inputs.size() != 1 || c.outputs.size() != 1) return false;
    *m = Match{};
    m->nodes.insert(i);
    if (c.op_type == "Erf") {
      m->approximate = "none";
      const int d = single_producer(c.inputs[0], &m->nodes);
      if (d < 0) return false;
      const Node& dn = node(d);
      if (is(dn, "Div") && near(dn.input(1), std::sqrt(2.0))) {
        m->x = dn.inputs[0];
      } else if (is(dn, "Mul")) {
        m->x = other_operand(dn, 1.0 / std::sqrt(2.0));
      }
      if (m->x == kNoValue) return false;
    } else if (c.op_type == "Tanh") {
      m->approximate = "tanh";
      // s = sqrt(2/pi) * r
      const int s = single_producer(c.inputs[0], &m->nodes);
      if (s < 0 || !is(node(s), "Mul")) return false;
      const ValueId r = other_operand(node(s), std::sqrt(2.0 / M_PI));
      // r = x + q
      const int ra = single_producer(r, &m->nodes);
      if (ra < 0 || !is(node(ra), "Add")) return false;
      for (int side = 0; side < 2 && m->x == kNoValue; ++side) {
        const ValueId x = node(ra).inputs[static_cast<size_t>(side)], q = node(ra).inputs[static_cast<size_t>(1 - side)];
        std::set<int> saved = m->nodes;
        // q = 0.044715 * p, p = Pow(x, 3)
        const int qm = single_producer(q, &m->nodes);
        if (qm >= 0 && is(node(qm), "Mul")) {
          const ValueId p = other_operand(node(qm), 0.044715);
          const int pw = single_producer(p, &m->nodes);
          if (pw >= 0 && is(node(pw), "Pow") && node(pw).inputs.size() == 2 && node(pw).inputs[0] == x &&
              near(node(pw).input(1), 3.0)) {
            m->x = x;
            break;
          }
        }
        m->nodes = saved;
      }
      if (m->x == kNoValue) return false;
    } else {
      return false;
    }
    // a = 1 + centre
    const int a = single_consumer(c.outputs[0]);
    if (a < 0 || !is(node(a), "Add") || other_operand(node(a), 1.0) != c.outputs[0]) return false;
    m->nodes.insert(a);
    return match_half_x_times(node(a).outputs[0], m);
  }

 private:
  static bool is(const Node& n, const char* op) {
    return n.op_type == op && n.domain.empty() && n.inputs.size() == 2 && n.outputs.size() == 1;
  }
  // Every constant of the formula to 1e-6 (relative).
  bool near(ValueId v, double want) const { return scalar_is(v, want, 1e-6); }
  // The operand of binary `n` that is not the scalar constant `c` (kNoValue if neither side is).
  ValueId other_operand(const Node& n, double c) const {
    if (near(n.input(1), c)) return n.inputs[0];
    if (near(n.input(0), c)) return n.inputs[1];
    return kNoValue;
  }
  // The rest: 0.5 * x * a, as (a * x) * 0.5, a * (x * 0.5) or (a * 0.5) * x.
  bool match_half_x_times(ValueId a, Match* m) {
    const int m1 = single_consumer(a);
    if (m1 < 0 || !is(node(m1), "Mul")) return false;
    m->nodes.insert(m1);
    const Node& n1 = node(m1);
    const ValueId other = n1.inputs[0] == a ? n1.inputs[1] : n1.inputs[0];
    if (other == m->x) {  // (a * x) * 0.5
      const int m2 = single_consumer(n1.outputs[0]);
      if (m2 < 0 || !is(node(m2), "Mul") || other_operand(node(m2), 0.5) != n1.outputs[0]) return false;
      m->nodes.insert(m2);
      m->last = m2;
      return true;
    }
    if (near(other, 0.5)) {  // (a * 0.5) * x
      const int m2 = single_consumer(n1.outputs[0]);
      if (m2 < 0 || !is(node(m2), "Mul")) return false;
      const Node& n2 = node(m2);
      const ValueId o2 = n2.inputs[0] == n1.outputs[0] ? n2.inputs[1] : n2.inputs[0];
      if (o2 != m->x) return false;
      m->nodes.insert(m2);
      m->last = m2;
      return true;
    }
    // a * (x * 0.5)
    const int h = single_producer(other, &m->nodes);
    if (h < 0 || !is(node(h), "Mul") || other_operand(node(h), 0.5) != m->x) return false;
    m->last = m1;
    return true;
  }

};

}  // namespace

Expected<bool> fuse_gelu(Graph& graph) {
  std::set<int> removed;
  std::vector<std::pair<int, Node>> replacements;  // at the last matched node's position
  {
    GeluMatcher matcher(graph);
    for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
      GeluMatcher::Match m;
      if (!matcher.match(i, &m)) continue;
      bool overlaps = false;
      for (int n : m.nodes) overlaps = overlaps || removed.count(n);
      if (overlaps) continue;
      // x must be available before the first matched node: it is (it feeds one of them).
      const Node& last = graph.nodes[static_cast<size_t>(m.last)];
      Node gelu;
      gelu.name = last.name;
      gelu.op_type = "Gelu";
      gelu.inputs = {m.x};
      gelu.outputs = {last.outputs[0]};
      gelu.attrs["approximate"] = Attribute::of_string(m.approximate);
      removed.insert(m.nodes.begin(), m.nodes.end());
      replacements.emplace_back(m.last, std::move(gelu));
    }
  }
  if (replacements.empty()) return false;
  replace_matched_nodes(graph, removed, std::move(replacements));
  return true;
}

}  // namespace aotc
