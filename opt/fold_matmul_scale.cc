// fold_matmul_scale: a per-output-column constant scale after a projection by constant weights
// (ConvNeXt's and DeiT-III's layer scale, y = (x W + b) * s) is folded into the weights and the
// bias at compile time:  W'[k, n] = W[k, n] * s[n],  b'[n] = b[n] * s[n]  (computed in double,
// stored in W's dtype), and the Mul disappears.
// Fires on MatMul(x, W) [-> Add(., b)] [-> Transpose] -> Mul(., s) and Gemm(x, W, C) [->
// Transpose] -> Mul(., s) (s then varies along the axis the permutation moved N to; alpha, beta,
// transA untouched; transB picks W's column axis) when W, b / C and s are constants of a float
// dtype, s and b broadcast along the last axis only (every other dim 1, the last N or 1, rank at
// most the output's), and each intermediate value is read by the next node alone and is not a
// graph output. With fp16 storage it does not fire where the folded values would round worse than
// the unfolded ones (ConvNeXt's layer scale starts at 1e-6: the products fall below fp16's range).
#include <cmath>
#include <vector>

#include "opt/passes.h"

namespace aotc {
namespace {

constexpr double kHalfMax = 65504.0;

// `c` scales or offsets only along the last axis of an output of rank `out_rank` whose last dim
// is `n`: rank <= out_rank, every dim but the last 1, the last n or 1.
// `c` varies only along axis `axis` of an output of rank `out_rank` (numpy broadcasting, right-
// aligned): rank <= out_rank, every other dim 1, that one n or 1.
bool along_axis(const Tensor& c, size_t out_rank, size_t axis, int64_t n) {
  const size_t rank = static_cast<size_t>(c.rank());
  if (rank > out_rank) return false;
  for (size_t d = 0; d < rank; ++d) {
    const size_t out_axis = out_rank - rank + d;
    const int64_t dim = c.shape()[d];
    if (dim != 1 && (out_axis != axis || dim != n)) return false;
  }
  return true;
}

bool along_last_axis(const Tensor& c, size_t out_rank, int64_t n) { return along_axis(c, out_rank, out_rank - 1, n); }

double column_value(const Tensor& c, int64_t j) { return c.get(c.numel() == 1 ? 0 : j); }

// The other operand of a two-input Mul/Add that reads `v`, if it is a constant; else kNoValue.
ValueId constant_partner(const Graph& g, const Node& node, ValueId v) {
  if (node.inputs.size() != 2 || node.outputs.size() != 1 || !node.domain.empty()) return kNoValue;
  ValueId other = node.inputs[0] == v ? node.inputs[1] : node.inputs[1] == v ? node.inputs[0] : kNoValue;
  if (other == kNoValue || other == v || !g.value(other).is_constant()) return kNoValue;
  return other;
}

bool try_fold(Graph& g, size_t index, const std::vector<std::vector<int>>& consumers) {
  const Node& mm = g.nodes[index];
  const bool gemm = mm.op_type == "Gemm";
  if (!mm.domain.empty() || (mm.op_type != "MatMul" && !gemm) || mm.outputs.size() != 1) return false;
  const ValueId w_id = mm.input(1);
  if (w_id == kNoValue || !g.value(w_id).is_constant()) return false;
  const Tensor& w = *g.value(w_id).constant;
  if (!dtype_is_float(w.dtype()) || w.rank() != 2) return false;
  const bool trans_b = gemm && mm.attr_int("transB", 0) != 0;
  const int64_t n = trans_b ? w.shape()[0] : w.shape()[1];
  const ValueId c_id = gemm ? mm.input(2) : kNoValue;
  if (c_id != kNoValue && !g.value(c_id).is_constant()) return false;

  ValueId y = mm.outputs[0];
  const size_t out_rank = g.value(y).shape.size();
  if (out_rank == 0 || g.value(y).shape.back() != n) return false;
  int next = g.sole_reader(consumers, y);
  if (next < 0) return false;
  int add_index = -1;
  ValueId bias_id = kNoValue;
  if (!gemm && g.nodes[static_cast<size_t>(next)].op_type == "Add") {
    bias_id = constant_partner(g, g.nodes[static_cast<size_t>(next)], y);
    if (bias_id == kNoValue) return false;
    add_index = next;
    y = g.nodes[static_cast<size_t>(next)].outputs[0];
    next = g.sole_reader(consumers, y);
    if (next < 0) return false;
  }
  // torchvision's ConvNeXt permutes back to NCHW before its layer scale [C, 1, 1]: the scale's
  // axis is then the output axis the permutation takes from the projection's last one.
  int transpose_index = -1;
  size_t scale_axis = out_rank - 1;
  if (g.nodes[static_cast<size_t>(next)].op_type == "Transpose" && g.nodes[static_cast<size_t>(next)].domain.empty()) {
    const Node& t = g.nodes[static_cast<size_t>(next)];
    std::vector<int64_t> perm = t.attr_ints("perm");
    if (perm.empty())
      for (size_t d = out_rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
    if (perm.size() != out_rank || t.outputs.size() != 1) return false;
    for (size_t d = 0; d < out_rank; ++d)
      if (perm[d] == static_cast<int64_t>(out_rank - 1)) scale_axis = d;
    transpose_index = next;
    y = t.outputs[0];
    next = g.sole_reader(consumers, y);
    if (next < 0) return false;
  }
  const Node& mul = g.nodes[static_cast<size_t>(next)];
  if (mul.op_type != "Mul") return false;
  const ValueId s_id = constant_partner(g, mul, y);
  if (s_id == kNoValue || g.value(mul.outputs[0]).shape != g.value(y).shape) return false;
  const Tensor& s = *g.value(s_id).constant;
  if (!dtype_is_float(s.dtype()) || !along_axis(s, out_rank, scale_axis, n)) return false;
  const ValueId b_id = gemm ? c_id : bias_id;
  const Tensor* b = b_id == kNoValue ? nullptr : g.value(b_id).constant.get();
  if (b && (!dtype_is_float(b->dtype()) || !along_last_axis(*b, out_rank, n))) return false;
  // Gemm's C may broadcast along columns too ([M, 1]): only a row bias scales per column.
  if (gemm && b && b->rank() == 2 && b->shape()[0] != 1) return false;

  // fp16 storage (the weights' dtype or the library's): the folded values are rounded to fp16
  // where the unfolded graph rounds W and then scales an O(1) GEMM output. Folding must not make
  // that rounding worse: with scales far below 1 (ConvNeXt initialises its layer scale to 1e-6)
  // the products fall into fp16's subnormals or flush to zero. The squared rounding error of the
  // folded values must stay within 2x that of the unfolded ones (scaled), and nothing may overflow.
  const bool half = w.dtype() == DType::kFloat16 || g.target.precision.dtype == DType::kFloat16;
  double err_folded = 0, err_unfolded = 0;
  bool overflows = false;
  auto scaled = [&](double v, double f) {
    const double p = v * f;
    if (half) {
      if (std::fabs(p) > kHalfMax) overflows = true;
      const double dp = static_cast<double>(half_to_float(float_to_half(static_cast<float>(p)))) - p;
      const double dv = (static_cast<double>(half_to_float(float_to_half(static_cast<float>(v)))) - v) * f;
      err_folded += dp * dp;
      err_unfolded += dv * dv;
    }
    return p;
  };
  Tensor new_w(w.dtype(), w.shape());
  const int64_t rows = w.shape()[0], cols = w.shape()[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      new_w.set(r * cols + c, scaled(w.get(r * cols + c), column_value(s, trans_b ? r : c)));
  Tensor new_b;
  if (b) {
    new_b = Tensor(b->dtype(), gemm && b->rank() == 2 ? Shape{1, n} : Shape{n});
    for (int64_t j = 0; j < n; ++j) new_b.set(j, scaled(column_value(*b, j), column_value(s, j)));
  }
  if (half && (overflows || err_folded > 2 * err_unfolded)) return false;

  // add_constant may reallocate graph.values: names are copied first.
  const std::string w_name = g.value(w_id).name;
  const ValueId mul_out = mul.outputs[0];
  const size_t mul_index = static_cast<size_t>(next);
  const ValueId nw = g.add_constant(g.unique_name(w_name + "_scaled"), std::move(new_w));
  g.nodes[index].inputs[1] = nw;
  if (b) {
    const ValueId nb = g.add_constant(g.unique_name(w_name + "_scaled_bias"), std::move(new_b));
    if (gemm) {
      g.nodes[index].inputs[2] = nb;
    } else {
      Node& add = g.nodes[static_cast<size_t>(add_index)];
      for (ValueId& in : add.inputs)
        if (in == bias_id) in = nb;
    }
  }
  // The node before the Mul now writes the Mul's output.
  const int before_mul = transpose_index >= 0 ? transpose_index : add_index >= 0 ? add_index : static_cast<int>(index);
  Node& last = g.nodes[static_cast<size_t>(before_mul)];
  last.outputs[0] = mul_out;
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(mul_index));
  return true;
}

}  // namespace

Expected<bool> fold_matmul_scale(Graph& graph) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    const std::vector<std::vector<int>> consumers = graph.consumers();
    for (size_t n = 0; n < graph.nodes.size() && !again; ++n) again = try_fold(graph, n, consumers);
    changed = changed || again;
  }
  return changed;
}

}  // namespace aotc
