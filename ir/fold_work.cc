// The work estimate of one fold (see constant_folding.h): how many multiply-adds (or element
// visits) the CPU reference of a node will do, computed from shapes and attributes before it
// runs. Most references visit each input and output element a bounded number of times, which is
// the default. The table below holds the references whose work grows with a reduction or a window
// that the output's size does not show (contractions, windows, recurrences, naive DFTs): a MatMul
// of two 1024x1024 constants has a 4 MiB output but 2^30 multiply-adds. It sits here, next to its
// only reader, rather than in every op's OpDef: it describes the CPU references as a cost model
// for folding, not the ops. Every product saturates at INT64_MAX.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "ir/constant_folding.h"

namespace aotc {
namespace {

constexpr int64_t kSaturated = INT64_MAX;

int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0) return kSaturated;
  return __builtin_mul_overflow(a, b, &r) ? kSaturated : r;
}
int64_t add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kSaturated : r;
}

// shape_numel, saturating: the estimate may see shapes no tensor could have.
int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d == 0) return 0;
  for (int64_t d : shape) n = mul(n, d);
  return n;
}

const Shape* shape_of(const Node& node, const Graph& graph, size_t input) {
  if (input >= node.inputs.size() || node.inputs[input] == kNoValue) return nullptr;
  return &graph.value(node.inputs[input]).shape;
}
int64_t numel_of(const Node& node, const Graph& graph, size_t input) {
  const Shape* s = shape_of(node, graph, input);
  return s ? numel(*s) : 0;
}
int64_t out_numel(const Node& node, const Graph& graph) {
  int64_t n = 0;
  for (ValueId out : node.outputs)
    if (out != kNoValue) n = add(n, numel(graph.value(out).shape));
  return n;
}
int64_t largest_dim(const Node& node, const Graph& graph) {
  int64_t d = 1;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (const Shape* s = shape_of(node, graph, i))
      for (int64_t x : *s) d = std::max(d, x);
  return d;
}

// Output elements x the contracted length: MatMul-like (K = the last dim of A).
int64_t matmul_work(const Node& node, const Graph& graph) {
  const Shape* a = shape_of(node, graph, 0);
  return mul(out_numel(node, graph), a && !a->empty() ? a->back() : 1);
}
int64_t gemm_work(const Node& node, const Graph& graph) {
  const Shape* a = shape_of(node, graph, 0);
  if (!a || a->size() != 2) return matmul_work(node, graph);
  return mul(out_numel(node, graph), node.attr_int("transA", 0) ? (*a)[0] : (*a)[1]);
}
// Convolutions: output elements x (C / group x kernel), i.e. the weight's elements per output channel.
int64_t conv_work_with_weight(const Node& node, const Graph& graph, size_t weight) {
  const Shape* w = shape_of(node, graph, weight);
  if (!w || w->empty() || (*w)[0] <= 0) return out_numel(node, graph);
  return mul(out_numel(node, graph), numel(*w) / (*w)[0]);
}
int64_t conv_work(const Node& node, const Graph& graph) { return conv_work_with_weight(node, graph, 1); }
int64_t qlinear_conv_work(const Node& node, const Graph& graph) { return conv_work_with_weight(node, graph, 3); }
// ConvTranspose scatters each input element through (M / group x kernel) weights: W is [C, M/g, k...].
int64_t conv_transpose_work(const Node& node, const Graph& graph) {
  const Shape* w = shape_of(node, graph, 1);
  if (!w || w->empty() || (*w)[0] <= 0) return out_numel(node, graph);
  return mul(numel_of(node, graph, 0), numel(*w) / (*w)[0]);
}
// Einsum's reference loops over every output element and every combination of the summed labels.
int64_t einsum_work(const Node& node, const Graph& graph) {
  std::string eq;
  for (char c : node.attr_string("equation", ""))
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::map<char, int64_t> extent, count;
  size_t operand = 0, start = 0;
  for (size_t p = 0; p <= lhs.size(); ++p) {
    if (p < lhs.size() && lhs[p] != ',') continue;
    const std::string term = lhs.substr(start, p - start);
    const Shape* s = shape_of(node, graph, operand);
    const size_t ellipsis = term.find("...");
    const std::string before = term.substr(0, ellipsis);
    const std::string after = ellipsis == std::string::npos ? "" : term.substr(ellipsis + 3);
    for (size_t i = 0; s && i < before.size(); ++i) {
      ++count[before[i]];
      if (i < s->size()) extent[before[i]] = std::max(extent[before[i]], (*s)[i]);
    }
    for (size_t i = 0; s && i < after.size(); ++i) {
      ++count[after[i]];
      if (after.size() - i <= s->size()) extent[after[i]] = std::max(extent[after[i]], (*s)[s->size() - (after.size() - i)]);
    }
    ++operand;
    start = p + 1;
  }
  const std::string rhs = arrow == std::string::npos ? "" : eq.substr(arrow + 2);
  int64_t summed = 1;
  for (const auto& kv : extent) {
    const bool in_output = arrow == std::string::npos ? count[kv.first] == 1 : rhs.find(kv.first) != std::string::npos;
    if (!in_output) summed = mul(summed, kv.second);
  }
  return mul(std::max<int64_t>(out_numel(node, graph), 1), summed);
}
// Attention: every query row meets every key (Q.K^T), every output row sums over every value.
int64_t attention_work(const Node& node, const Graph& graph) {
  const Shape* k = shape_of(node, graph, 1);
  const int64_t kv_len = !k ? 1 : k->size() == 4 ? (*k)[2] : k->size() == 3 ? (*k)[1] : 1;
  return mul(add(numel_of(node, graph, 0), out_numel(node, graph)), kv_len);
}
// RNN / GRU / LSTM: every time step of every sequence multiplies by W and R (X is [seq, batch,
// input] or batch-first; seq x batch = X's elements / input size).
int64_t rnn_work(const Node& node, const Graph& graph) {
  const Shape* x = shape_of(node, graph, 0);
  const int64_t steps = !x || x->empty() || x->back() <= 0 ? 1 : numel(*x) / x->back();
  return mul(steps, add(numel_of(node, graph, 1), numel_of(node, graph, 2)));
}
// The DFT and STFT references are direct sums: output elements x signal length.
int64_t dft_work(const Node& node, const Graph& graph) {
  int64_t len = largest_dim(node, graph);
  if (node.op_type == "DFT" && node.inputs.size() > 1 && node.inputs[1] != kNoValue) {
    const Value& n = graph.value(node.inputs[1]);
    if (n.is_constant() && n.constant->numel() > 0) len = std::max(len, n.constant->get_int(0));
  }
  return mul(out_numel(node, graph), len);
}
// Det: Gaussian elimination, n^3 per matrix (X is [..., n, n]).
int64_t det_work(const Node& node, const Graph& graph) {
  const Shape* x = shape_of(node, graph, 0);
  return mul(numel_of(node, graph, 0), x && !x->empty() ? x->back() : 1);
}
// Windowed ops: output elements x window.
int64_t pool_work(const Node& node, const Graph& graph) {
  int64_t window = 1;
  for (int64_t k : node.attr_ints("kernel_shape")) window = mul(window, k);
  return mul(out_numel(node, graph), window);
}
int64_t lrn_work(const Node& node, const Graph& graph) {
  return mul(out_numel(node, graph), node.attr_int("size", 1));
}
// RoiAlign samples sampling_ratio^2 points per output bin, or, adaptively, as many as the roi
// (a constant here) covers: ceil(roi height / bins) x ceil(roi width / bins).
int64_t roi_align_work(const Node& node, const Graph& graph) {
  const int64_t ratio = node.attr_int("sampling_ratio", 0);
  if (ratio > 0) return mul(out_numel(node, graph), mul(ratio, ratio));
  if (node.inputs.size() < 2 || node.inputs[1] == kNoValue || node.outputs.empty() || node.outputs[0] == kNoValue)
    return out_numel(node, graph);
  const Value& rois = graph.value(node.inputs[1]);
  const Shape& y = graph.value(node.outputs[0]).shape;
  if (!rois.is_constant() || y.size() != 4 || y[2] <= 0 || y[3] <= 0) return out_numel(node, graph);
  const double scale = std::fabs(node.attr_float("spatial_scale", 1.0f));
  double most = 1;
  for (int64_t r = 0; r + 3 < rois.constant->numel(); r += 4) {
    const double h = std::fabs(rois.constant->get(r + 3) - rois.constant->get(r + 1)) * scale / double(y[2]);
    const double w = std::fabs(rois.constant->get(r + 2) - rois.constant->get(r)) * scale / double(y[3]);
    const double points = (std::ceil(h) + 1) * (std::ceil(w) + 1);
    most = std::isnan(points) ? 1e300 : std::max(most, points);
  }
  const int64_t bin = y[0] > 0 ? out_numel(node, graph) / y[0] : 0;
  if (most >= 9.2e18) return kSaturated;
  return mul(mul(bin, y[0]), static_cast<int64_t>(most));
}

using WorkFn = int64_t (*)(const Node&, const Graph&);
const std::map<std::pair<std::string, std::string>, WorkFn>& work_table() {
  static const std::map<std::pair<std::string, std::string>, WorkFn> table = {
      {{"MatMul", ""}, matmul_work},          {{"MatMulT", "aotc"}, matmul_work},
      {{"MatMulInteger", ""}, matmul_work},   {{"QLinearMatMul", ""}, matmul_work},
      {{"Gemm", ""}, gemm_work},              {{"FusedGemm", "aotc"}, gemm_work},
      {{"Conv", ""}, conv_work},              {{"FusedConv", "aotc"}, conv_work},
      {{"ConvInteger", ""}, conv_work},       {{"QLinearConv", ""}, qlinear_conv_work},
      {{"ConvTranspose", ""}, conv_transpose_work},
      {{"Einsum", ""}, einsum_work},          {{"Attention", ""}, attention_work},
      {{"RNN", ""}, rnn_work},                {{"GRU", ""}, rnn_work},
      {{"LSTM", ""}, rnn_work},               {{"DFT", ""}, dft_work},
      {{"STFT", ""}, dft_work},               {{"Det", ""}, det_work},
      {{"MaxPool", ""}, pool_work},           {{"AveragePool", ""}, pool_work},
      {{"LpPool", ""}, pool_work},            {{"LRN", ""}, lrn_work},
      {{"RoiAlign", ""}, roi_align_work},
  };
  return table;
}

}  // namespace

int64_t estimate_fold_work(const Node& node, const Graph& graph) {
  int64_t visits = out_numel(node, graph);
  for (size_t i = 0; i < node.inputs.size(); ++i) visits = add(visits, numel_of(node, graph, i));
  auto it = work_table().find({node.op_type, node.domain});
  return it == work_table().end() ? visits : std::max(visits, it->second(node, graph));
}

}  // namespace aotc
