// TfIdfVectorizer on int32/int64 input ([C] or [N, C]; string pools are refused): counts, per row,
// the occurrences of each pool n-gram (min_gram_length <= n <= max_gram_length) whose items are
// `skip + 1` apart for skip in [0, max_skip_count] (unigrams counted once), into output column
// ngram_indexes[gram], then applies mode TF / IDF / TFIDF with the weights per output column (as
// ONNX Runtime does). GPU: one thread per row, the pool compiled in (templates/tfidf.cu.in).
#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

struct TfIdfPlan {
  std::vector<int64_t> gram_len, gram_start, gram_out;  // the grams counted, in pool order
  std::vector<int64_t> pool;
  std::vector<float> weights;  // per output column; empty: all 1
  int64_t mode = 0;            // 0 TF, 1 IDF, 2 TFIDF
  int64_t max_skip = 0, out_size = 0, rows = 1, row_len = 0;
  bool batched = false;
};

Expected<TfIdfPlan> tfidf_plan(const Node& node, const Shape& x) {
  TfIdfPlan p;
  if (node.has_attr("pool_strings")) return node_error(node, "string pools (pool_strings) are not supported");
  if (x.size() == 1) p.row_len = x[0];
  else if (x.size() == 2) p.batched = true, p.rows = x[0], p.row_len = x[1];
  else return node_error(node, "input has shape " + shape_str(x) + ", expected [C] or [N, C]");
  const std::string mode = node.attr_string("mode", "");
  if (mode == "TF") p.mode = 0;
  else if (mode == "IDF") p.mode = 1;
  else if (mode == "TFIDF") p.mode = 2;
  else return node_error(node, "mode '" + escape_for_message(mode) + "' must be TF, IDF or TFIDF");
  const int64_t min_n = node.attr_int("min_gram_length", 0), max_n = node.attr_int("max_gram_length", 0);
  p.max_skip = node.attr_int("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n || p.max_skip < 0)
    return node_error(node, "needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  // Items `dist` apart fit a row only for dist < row_len: larger skips count nothing, so the loops
  // over distances stop there (max_skip_count INT64_MAX overflowed max_skip + 1 and would have
  // looped 2^63 times: a fuzz find).
  p.max_skip = std::min(p.max_skip, std::max<int64_t>(p.row_len, 0));
  p.pool = node.attr_ints("pool_int64s");
  const std::vector<int64_t> counts = node.attr_ints("ngram_counts"), indexes = node.attr_ints("ngram_indexes");
  if (indexes.empty()) return node_error(node, "ngram_indexes is empty");
  for (int64_t v : indexes)
    if (v < 0 || v > (int64_t{1} << 40))
      return node_error(node, "ngram_indexes has an entry outside [0, 2^40]");  // a fuzz find: INT64_MAX + 1
  p.out_size = *std::max_element(indexes.begin(), indexes.end()) + 1;
  size_t gram = 0;
  for (size_t g = 0; g < counts.size(); ++g) {
    const int64_t n = static_cast<int64_t>(g) + 1;
    const int64_t begin = counts[g], end = g + 1 < counts.size() ? counts[g + 1] : static_cast<int64_t>(p.pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(p.pool.size()) || (end - begin) % n != 0)
      return node_error(node, "ngram_counts does not split pool_int64s into whole " + std::to_string(n) + "-grams");
    for (int64_t s = begin; s < end; s += n, ++gram) {
      if (gram >= indexes.size()) return node_error(node, "ngram_indexes has fewer entries than the pool has n-grams");
      if (n < min_n || n > max_n) continue;
      p.gram_len.push_back(n);
      p.gram_start.push_back(s);
      p.gram_out.push_back(indexes[gram]);
    }
  }
  p.weights = node.attr_floats("weights");
  if (!p.weights.empty() && static_cast<int64_t>(p.weights.size()) < p.out_size)
    return node_error(node, "weights has " + std::to_string(p.weights.size()) + " entries, the output has " +
                                std::to_string(p.out_size) + " columns");
  return p;
}

Status tfidf_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 1));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, {DType::kInt32, DType::kInt64}));
  auto p = tfidf_plan(node, input_value(graph, node, 0).shape);
  if (!p) return p.status();
  set_output(graph, node, 0, DType::kFloat32, p->batched ? Shape{p->rows, p->out_size} : Shape{p->out_size});
  return Status::ok();
}

Status tfidf_reference(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  auto pe = tfidf_plan(node, in[0]->shape());
  if (!pe) return pe.status();
  const TfIdfPlan& p = *pe;
  std::vector<int64_t> x = in[0]->to_int64s();
  for (int64_t r = 0; r < p.rows; ++r) {
    std::vector<float> count(static_cast<size_t>(p.out_size), 0.f);
    const int64_t* row = x.data() + r * p.row_len;
    for (size_t g = 0; g < p.gram_len.size(); ++g) {
      const int64_t n = p.gram_len[g];
      const int64_t max_dist = n == 1 ? 1 : p.max_skip + 1;  // a unigram has no gaps to skip
      for (int64_t dist = 1; dist <= max_dist; ++dist)
        for (int64_t s = 0; s + (n - 1) * dist < p.row_len; ++s) {
          bool match = true;
          for (int64_t q = 0; q < n && match; ++q) match = row[s + q * dist] == p.pool[static_cast<size_t>(p.gram_start[g] + q)];
          if (match) count[static_cast<size_t>(p.gram_out[g])] += 1.f;
        }
    }
    for (int64_t c = 0; c < p.out_size; ++c) {
      const float w = p.weights.empty() ? 1.f : p.weights[static_cast<size_t>(c)], f = count[static_cast<size_t>(c)];
      out[0].data<float>()[r * p.out_size + c] = p.mode == 0 ? f : p.mode == 1 ? (f > 0.f ? w : 0.f) : f * w;
    }
  }
  return Status::ok();
}

std::string floats_literal(const std::vector<float>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + float_literal(v[i]);
  return s + "}";
}

// A non-empty brace list (device arrays cannot have length 0).
std::vector<int64_t> non_empty(std::vector<int64_t> v) { return v.empty() ? std::vector<int64_t>{0} : v; }

Expected<Lowering> tfidf_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  auto pe = tfidf_plan(node, x.shape);
  if (!pe) return pe.status();
  const TfIdfPlan& p = *pe;
  Lowering l;
  if (p.rows == 0) return l;
  std::vector<float> weights = p.weights.empty() ? std::vector<float>{1.f} : p.weights;
  KernelStep k;
  k.template_name = "tfidf";
  k.holes = {{"T", dtype_c_type(x.dtype)},
             {"rows", int_literal(p.rows)}, {"row_len", int_literal(p.row_len)}, {"out_size", int_literal(p.out_size)},
             {"num_grams", int_literal(static_cast<int64_t>(p.gram_len.size()))},
             {"gram_len", dims_literal(non_empty(p.gram_len))}, {"gram_start", dims_literal(non_empty(p.gram_start))},
             {"gram_out", dims_literal(non_empty(p.gram_out))}, {"pool", dims_literal(non_empty(p.pool))},
             {"weights", floats_literal(weights)}, {"has_weights", p.weights.empty() ? "false" : "true"},
             {"mode", int_literal(p.mode)}, {"max_skip", int_literal(p.max_skip)},
             {"comment", "TfIdfVectorizer " + shape_str(x.shape) + " -> " + std::to_string(p.out_size) + " columns, " +
                             std::to_string(p.gram_len.size()) + " n-grams"}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{64, 1, 1};
  k.grid = grid_for(p.rows, 64);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_tfidf_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "TfIdfVectorizer";
  def.infer = tfidf_infer;
  def.reference = tfidf_reference;
  def.lower = tfidf_lower;
  registry.add(def);
}

}  // namespace aotc
