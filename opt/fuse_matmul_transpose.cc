// fuse_matmul_transpose: a MatMul operand made by a Transpose whose second-last output axis is the
// input's last axis (k -> k^T: perm [.., r-1, r-2], or the heads split [0, 2, 3, 1] of a key) is
// read by cuBLASLt in transposed layout instead: the MatMul becomes aotc.MatMulT with transA /
// transB toggled, and the Transpose keeps only the rest of its permutation (dropped when that is
// the identity; the remaining one reads rows contiguously). A scalar-constant Mul between the
// Transpose and the MatMul (the exporters' q * scale, k^T * scale) commutes with the swap and
// stays, on the swapped shape, where opt/fuse_copy_chains.cc folds it into a copy as an exact
// `scale`. The scale is deliberately not moved into the GEMM's alpha: alpha is applied in fp32 to
// the accumulated product, not to the rounded 16-bit operand, so results would change.
// Only where the transposed value (and the Mul's) has no other reader and is no graph output.
#include <algorithm>

#include "ir/op_registry.h"
#include "opt/passes.h"

namespace aotc {
namespace {

bool is_op(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }
bool is_matmul(const Node& n) {
  return n.outputs.size() == 1 && n.inputs.size() == 2 &&
         (is_op(n, "MatMul") || (n.domain == "aotc" && n.op_type == "MatMulT"));
}

// A Mul of a value by a single-element float constant that keeps the value's shape: its data input.
ValueId scalar_mul_data(const Graph& g, const Node& n) {
  if (!is_op(n, "Mul") || n.inputs.size() != 2 || n.outputs.size() != 1 || n.attr_int("channels_last", 0) != 0)
    return kNoValue;
  for (size_t s : {size_t{1}, size_t{0}}) {
    const ValueId c = n.inputs[s], d = n.inputs[1 - s];
    if (c == kNoValue || d == kNoValue) continue;
    const Value& cv = g.value(c);
    const Value& dv = g.value(d);
    if (cv.is_constant() && cv.numel() == 1 && !dv.is_constant() && dv.shape == g.value(n.outputs[0]).shape) return d;
  }
  return kNoValue;
}

std::vector<int64_t> perm_of(const Node& t, size_t rank) {
  if (t.has_attr("perm")) return t.attr_ints("perm");
  std::vector<int64_t> p;
  for (size_t i = rank; i-- > 0;) p.push_back(static_cast<int64_t>(i));
  return p;
}

Shape swap_last_two(Shape s) {
  std::swap(s[s.size() - 2], s[s.size() - 1]);
  return s;
}

class Rewriter {
 public:
  explicit Rewriter(Graph& g) : g_(g), producers_(g.producers()), readers_(g.values.size(), 0) {
    for (const Node& n : g.nodes)
      for (ValueId v : n.inputs)
        if (v != kNoValue) ++readers_[static_cast<size_t>(v)];
  }

  Expected<bool> run() {
    bool changed = false;
    drop_.assign(g_.nodes.size(), false);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!is_matmul(g_.nodes[i])) continue;
      for (size_t slot = 0; slot < 2; ++slot) {
        Expected<bool> done = absorb(i, slot);
        if (!done) return done.status();
        changed = changed || *done;
      }
    }
    g_.remove_nodes(drop_);
    return changed;
  }

 private:
  // The producer of `v` when v is read exactly once and is no graph output; -1 otherwise.
  int sole_producer(ValueId v) const {
    if (v == kNoValue || readers_[static_cast<size_t>(v)] != 1 || g_.is_graph_output(v)) return -1;
    return producers_[static_cast<size_t>(v)];
  }

  ValueId swapped_value(ValueId like) {
    const Value& v = g_.value(like);
    return g_.add_value(g_.unique_name(v.name + "_swapped"), v.dtype, swap_last_two(v.shape), true);
  }

  Expected<bool> absorb(size_t mm_index, size_t slot) {
    const ValueId operand = g_.nodes[mm_index].inputs[slot];
    int p = sole_producer(operand);
    if (p < 0) return false;
    int mul = -1, tr = p;
    if (!is_op(g_.nodes[static_cast<size_t>(p)], "Transpose")) {
      const ValueId data = scalar_mul_data(g_, g_.nodes[static_cast<size_t>(p)]);
      tr = sole_producer(data);
      if (tr < 0 || !is_op(g_.nodes[static_cast<size_t>(tr)], "Transpose")) return false;
      mul = p;
    }
    Node& t = g_.nodes[static_cast<size_t>(tr)];
    const size_t rank = g_.value(t.outputs[0]).shape.size();
    if (rank < 2 || t.attr_int("channels_last", 0) != 0) return false;
    std::vector<int64_t> q = perm_of(t, rank);
    if (q[rank - 2] != static_cast<int64_t>(rank) - 1) return false;  // the swap would make reads strided
    std::swap(q[rank - 2], q[rank - 1]);
    bool identity = true;
    for (size_t i = 0; i < rank; ++i) identity = identity && q[i] == static_cast<int64_t>(i);
    const OpRegistry& registry = default_registry();
    ValueId swapped;
    if (identity) {
      swapped = t.inputs[0];
      drop_[static_cast<size_t>(tr)] = true;
    } else {
      swapped = swapped_value(t.outputs[0]);
      t.attrs["perm"] = Attribute::of_ints(q);
      t.outputs[0] = swapped;
      AOTC_RETURN_IF_ERROR(registry.find("Transpose")->infer(t, g_));
    }
    if (mul >= 0) {
      Node& m = g_.nodes[static_cast<size_t>(mul)];
      const ValueId out = swapped_value(m.outputs[0]);
      for (ValueId& in : m.inputs)
        if (!g_.value(in).is_constant()) in = swapped;
      m.outputs[0] = out;
      AOTC_RETURN_IF_ERROR(registry.find("Mul")->infer(m, g_));
      swapped = out;
    }
    Node& mm = g_.nodes[mm_index];
    const char* attr = slot == 0 ? "transA" : "transB";
    const bool was = mm.domain == "aotc" && mm.attr_int(attr, 0) != 0;
    if (mm.domain.empty()) {
      mm.domain = "aotc";
      mm.op_type = "MatMulT";
      mm.attrs["transA"] = Attribute::of_int(0);
      mm.attrs["transB"] = Attribute::of_int(0);
    }
    mm.attrs[attr] = Attribute::of_int(was ? 0 : 1);
    mm.inputs[slot] = swapped;
    const Shape before = g_.value(mm.outputs[0]).shape;
    AOTC_RETURN_IF_ERROR(registry.find("MatMulT", "aotc")->infer(mm, g_));
    if (g_.value(mm.outputs[0]).shape != before)
      return node_error(mm, "internal: absorbing a transpose changed the output shape");
    return true;
  }

  Graph& g_;
  std::vector<int> producers_;
  std::vector<int> readers_;
  std::vector<bool> drop_;
};

}  // namespace

Expected<bool> fuse_matmul_transpose(Graph& graph) { return Rewriter(graph).run(); }

}  // namespace aotc
