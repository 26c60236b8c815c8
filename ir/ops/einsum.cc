// Einsum: any equation (explicit "->" or implicit output, "..." broadcast dims, repeated labels
// as diagonals) in the reference and in a generic kernel (templates/einsum.cu.in: a thread per
// output element sums over the contracted labels; one or two operands). The batched-matmul forms
// exporters emit ("bij,bjk->bik", "bhid,bhjd->bhij", ...) become one cuBLASLt MatmulStep.
#include <algorithm>
#include <cctype>
#include <map>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kEinsumTypes = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16,
                                         DType::kInt32,   DType::kInt64,   DType::kUInt32,  DType::kUInt64};

// The equation resolved against the operand shapes. Labels are ints: letters map to their
// character, ellipsis dims to 256 + k (k counts from the leftmost broadcast dim).
struct EinsumPlan {
  std::vector<std::vector<int>> operand_labels;  // one label per operand dim
  std::vector<int> out_labels;
  std::vector<int> sum_labels;                   // labels not in the output
  std::map<int, int64_t> size;                   // label -> extent
  // Element strides of each operand per label (summed over repeated labels: a diagonal; 0 where
  // the operand broadcasts that label).
  std::vector<std::map<int, int64_t>> strides;
  Shape out_shape;
};

Expected<EinsumPlan> plan_einsum(const Node& node, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char ch : node.attr_string("equation", "")) if (ch != ' ') eq += ch;
  if (eq.empty()) return node_error(node, "attribute equation is required");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t p = 0; p <= lhs.size(); ++p)
    if (p == lhs.size() || lhs[p] == ',') { terms.push_back(lhs.substr(start, p - start)); start = p + 1; }
  if (terms.size() != shapes.size())
    return node_error(node, "equation has " + std::to_string(terms.size()) + " operand terms but the node has " + std::to_string(shapes.size()) + " inputs");
  EinsumPlan plan;
  int64_t ellipsis_rank = 0;
  std::vector<std::vector<int>> raw(terms.size());  // -1 marks the ellipsis
  auto parse = [&](const std::string& term, std::vector<int>* out) -> Status {
    for (size_t p = 0; p < term.size(); ++p) {
      if (term.compare(p, 3, "...") == 0) {
        if (std::find(out->begin(), out->end(), -1) != out->end()) return node_error(node, "a term has two ellipses");
        out->push_back(-1);
        p += 2;
      } else if (std::isalpha(static_cast<unsigned char>(term[p]))) {
        out->push_back(static_cast<unsigned char>(term[p]));
      } else {
        return node_error(node, "equation has an invalid character '" + escape_for_message(term.substr(p, 1)) + "'");
      }
    }
    return Status::ok();
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    AOTC_RETURN_IF_ERROR(parse(terms[i], &raw[i]));
    const bool ell = std::find(raw[i].begin(), raw[i].end(), -1) != raw[i].end();
    const int64_t letters = static_cast<int64_t>(raw[i].size()) - (ell ? 1 : 0), rank = static_cast<int64_t>(shapes[i].size());
    if (ell ? rank < letters : rank != letters)
      return node_error(node, "term '" + escape_for_message(terms[i]) + "' does not match input " + std::to_string(i) + " of rank " + std::to_string(rank));
    if (ell) ellipsis_rank = std::max(ellipsis_rank, rank - letters);
  }
  // Expand ellipses into their labels, right-aligned; then sizes (1 broadcasts within "...").
  plan.strides.resize(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    const int64_t letters = static_cast<int64_t>(std::count_if(raw[i].begin(), raw[i].end(), [](int l) { return l != -1; }));
    std::vector<int> labels;
    for (int l : raw[i]) {
      if (l != -1) { labels.push_back(l); continue; }
      const int64_t e = rank - letters;
      for (int64_t k = 0; k < e; ++k) labels.push_back(256 + static_cast<int>(ellipsis_rank - e + k));
    }
    // Index arithmetic over this operand (its strides and their sums) must fit int64: an empty
    // operand can declare dims whose product does not (a fuzz find, 2026-11-27).
    int64_t span = 1;
    for (int64_t d : shapes[i])
      if (d > 1 && (__builtin_mul_overflow(span, d, &span) || span > (int64_t{1} << 62)))
        return node_error(node, "input " + std::to_string(i) + " of shape " + shape_str(shapes[i]) +
                                    " is too large for Einsum's index arithmetic");
    std::vector<int64_t> st = shape_strides(shapes[i]);
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d];
      const int64_t dim = shapes[i][d];
      auto it = plan.size.find(l);
      if (it == plan.size.end() || it->second == 1) plan.size[l] = dim;
      else if (dim != it->second && !(l >= 256 && dim == 1))
        return node_error(node, "label '" + (l >= 256 ? std::string("...") : std::string(1, static_cast<char>(l))) +
                                    "' has sizes " + std::to_string(it->second) + " and " + std::to_string(dim));
      plan.strides[i][l] += dim == 1 ? 0 : st[d];
    }
    plan.operand_labels.push_back(labels);
  }
  if (arrow != std::string::npos) {
    std::vector<int> out;
    AOTC_RETURN_IF_ERROR(parse(eq.substr(arrow + 2), &out));
    for (int l : out) {
      if (l == -1) {
        for (int64_t k = 0; k < ellipsis_rank; ++k) plan.out_labels.push_back(256 + static_cast<int>(k));
        continue;
      }
      if (!plan.size.count(l)) return node_error(node, std::string("output label '") + static_cast<char>(l) + "' is in no input");
      if (std::find(plan.out_labels.begin(), plan.out_labels.end(), l) != plan.out_labels.end())
        return node_error(node, std::string("output label '") + static_cast<char>(l) + "' is repeated");
      plan.out_labels.push_back(l);
    }
  } else {
    // Implicit output: the broadcast dims, then the labels used exactly once, alphabetically.
    for (int64_t k = 0; k < ellipsis_rank; ++k) plan.out_labels.push_back(256 + static_cast<int>(k));
    std::map<int, int> count;
    for (const auto& labels : raw) for (int l : labels) if (l != -1) ++count[l];
    for (const auto& kv : count) if (kv.second == 1) plan.out_labels.push_back(kv.first);
  }
  for (const auto& kv : plan.size) {
    if (std::find(plan.out_labels.begin(), plan.out_labels.end(), kv.first) == plan.out_labels.end())
      plan.sum_labels.push_back(kv.first);
  }
  // Ellipsis dims absent from every operand's term (rank 0 ellipsis) still need a size.
  for (int l : plan.out_labels) {
    if (!plan.size.count(l)) plan.size[l] = 1;
    plan.out_shape.push_back(plan.size[l]);
  }
  return plan;
}

std::vector<Shape> input_shapes(const Node& node, const Graph& graph) {
  std::vector<Shape> s;
  for (size_t i = 0; i < node.inputs.size(); ++i) s.push_back(input_value(graph, node, i).shape);
  return s;
}

Status einsum_infer(Node& node, Graph& graph) {
  if (node.inputs.empty()) return node_error(node, "expects at least 1 input");
  AOTC_RETURN_IF_ERROR(expect_inputs(node, static_cast<int>(node.inputs.size()), static_cast<int>(node.inputs.size())));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kEinsumTypes));
  for (size_t i = 1; i < node.inputs.size(); ++i)
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, i, {input_value(graph, node, 0).dtype}));
  auto plan = plan_einsum(node, input_shapes(node, graph));
  if (!plan) return plan.status();
  set_output(graph, node, 0, input_value(graph, node, 0).dtype, plan->out_shape);
  return Status::ok();
}

Status einsum_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  std::vector<Shape> shapes;
  for (const Tensor* t : inputs) shapes.push_back(t->shape());
  auto plan = plan_einsum(node, shapes);
  if (!plan) return plan.status();
  const bool is_float = dtype_is_float(inputs[0]->dtype());
  std::vector<int> all = plan->out_labels;
  all.insert(all.end(), plan->sum_labels.begin(), plan->sum_labels.end());
  int64_t sum_n = 1;
  for (int l : plan->sum_labels) sum_n *= plan->size[l];
  Tensor& y = outputs[0];
  std::vector<int64_t> coord(all.size());
  for (int64_t o = 0; o < y.numel(); ++o) {
    double acc = 0;
    uint64_t iacc = 0;
    for (int64_t r = 0; r < sum_n; ++r) {
      // Coordinates of every label for (output o, reduction step r).
      int64_t rest = r;
      for (size_t k = all.size(); k-- > plan->out_labels.size();) { coord[k] = rest % plan->size[all[k]]; rest /= plan->size[all[k]]; }
      rest = o;
      for (size_t k = plan->out_labels.size(); k-- > 0;) { coord[k] = rest % plan->size[all[k]]; rest /= plan->size[all[k]]; }
      double p = 1;
      uint64_t ip = 1;
      for (size_t i = 0; i < inputs.size(); ++i) {
        int64_t off = 0;
        for (size_t k = 0; k < all.size(); ++k) {
          auto it = plan->strides[i].find(all[k]);
          if (it != plan->strides[i].end()) off += coord[k] * it->second;
        }
        if (is_float) p *= inputs[i]->get(off);
        else ip *= static_cast<uint64_t>(inputs[i]->get_int(off));
      }
      acc += p;
      iacc += ip;
    }
    if (is_float) y.set(o, acc);
    else y.set_int(o, static_cast<int64_t>(iacc));
  }
  return Status::ok();
}

// ---- lowering ----

// A contiguous run of `labels` inside `term`, in the same order; returns its start or -1.
int64_t find_run(const std::vector<int>& term, const std::vector<int>& labels) {
  if (labels.empty()) return -1;
  auto it = std::search(term.begin(), term.end(), labels.begin(), labels.end());
  return it == term.end() ? -1 : it - term.begin();
}

// Two operands as [batch, m, k] x [batch, k, n] -> [batch, m, n] (either operand possibly
// transposed), every group contiguous and in the same order as the output's: one MatmulStep.
bool as_matmul(const EinsumPlan& p, MatmulStep* mm) {
  if (p.operand_labels.size() != 2) return false;
  const auto& a = p.operand_labels[0];
  const auto& b = p.operand_labels[1];
  auto in = [](const std::vector<int>& t, int l) { return std::count(t.begin(), t.end(), l); };
  std::vector<int> batch, m, n, k;
  for (int l : p.out_labels) {
    const auto ca = in(a, l), cb = in(b, l);
    if (ca == 1 && cb == 1) batch.push_back(l);
    else if (ca == 1 && cb == 0) m.push_back(l);
    else if (ca == 0 && cb == 1) n.push_back(l);
    else return false;
  }
  for (int l : a) if (!std::count(p.out_labels.begin(), p.out_labels.end(), l)) { if (in(a, l) != 1 || in(b, l) != 1) return false; k.push_back(l); }
  for (int l : b) if (!std::count(p.out_labels.begin(), p.out_labels.end(), l) && !in(a, l)) return false;
  // Output must be batch, m, n; operands batch then (m,k | k,m) and (k,n | n,k).
  std::vector<int> want = batch;
  want.insert(want.end(), m.begin(), m.end());
  want.insert(want.end(), n.begin(), n.end());
  if (want != p.out_labels) return false;
  if (!batch.empty() && (find_run(a, batch) != 0 || find_run(b, batch) != 0)) return false;
  const int64_t nb = static_cast<int64_t>(batch.size());
  auto rest = [&](const std::vector<int>& t) { return std::vector<int>(t.begin() + nb, t.end()); };
  auto cat = [](std::vector<int> x, const std::vector<int>& y) { x.insert(x.end(), y.begin(), y.end()); return x; };
  const std::vector<int> ra = rest(a), rb = rest(b);
  bool ta, tb;
  if (ra == cat(m, k)) ta = false; else if (ra == cat(k, m)) ta = true; else return false;
  if (rb == cat(k, n)) tb = false; else if (rb == cat(n, k)) tb = true; else return false;
  auto prod = [&](const std::vector<int>& ls) { int64_t v = 1; for (int l : ls) v *= p.size.at(l); return v; };
  // A broadcast dim (stride 0 for a label of size > 1) is not a plain stride: the kernel takes it.
  for (size_t i = 0; i < 2; ++i)
    for (int l : p.operand_labels[i])
      if (p.size.at(l) > 1 && p.strides[i].at(l) == 0) return false;
  const int64_t M = prod(m), N = prod(n), K = prod(k), B = prod(batch);
  mm->m = M; mm->n = N; mm->k = K; mm->batch = B;
  mm->trans_a = ta; mm->trans_b = tb;
  mm->lda = ta ? M : K; mm->ldb = tb ? K : N; mm->ldc = N; mm->ldd = N;
  mm->stride_a = M * K; mm->stride_b = K * N; mm->stride_c = mm->stride_d = M * N;
  return true;
}

Expected<Lowering> einsum_lower(const Node& node, const Graph& graph) {
  auto plan = plan_einsum(node, input_shapes(node, graph));
  if (!plan) return plan.status();
  const Value& y = output_value(graph, node, 0);
  const DType t = y.dtype;
  Lowering l;
  if (y.numel() == 0) return l;
  if (node.inputs.size() > 2) return node_error(node, "Einsum with more than 2 operands is not supported on the GPU");
  MatmulStep mm;
  if ((t == DType::kFloat32 || t == DType::kFloat16) && as_matmul(*plan, &mm) && mm.k > 0) {
    mm.dtype = t;
    mm.a = node.inputs[0];
    mm.b = node.inputs[1];
    mm.d = node.outputs[0];
    LoweredStep s;
    s.kind = LoweredStep::Kind::kMatmul;
    s.matmul = mm;
    l.steps.push_back(s);
    return l;
  }
  std::vector<int64_t> out_dims, sum_dims, s0, s1, r0, r1;
  auto stride = [&](size_t i, int label) -> int64_t {
    if (i >= plan->strides.size()) return 0;
    auto it = plan->strides[i].find(label);
    return it == plan->strides[i].end() ? 0 : it->second;
  };
  for (int lb : plan->out_labels) { out_dims.push_back(plan->size[lb]); s0.push_back(stride(0, lb)); s1.push_back(stride(1, lb)); }
  for (int lb : plan->sum_labels) { sum_dims.push_back(plan->size[lb]); r0.push_back(stride(0, lb)); r1.push_back(stride(1, lb)); }
  auto pad = [](std::vector<int64_t>& v, int64_t fill) { if (v.empty()) v.push_back(fill); };
  pad(out_dims, 1); pad(s0, 0); pad(s1, 0); pad(sum_dims, 1); pad(r0, 0); pad(r1, 0);
  const bool two = node.inputs.size() == 2;
  std::string acc = t == DType::kFloat64 ? "double" : dtype_is_float(t) ? "float" : dtype_is_signed(t) ? "long long" : "unsigned long long";
  KernelStep k;
  k.template_name = "einsum";
  k.holes = {{"comment", "Einsum '" + escape_for_message(node.attr_string("equation", "")) + "' -> " + shape_str(y.shape) + " " + dtype_name(t)},
             {"T", dtype_c_type(t)},
             {"ACC", acc},
             {"OUT_N", int_literal(y.numel())},
             {"SUM_N", int_literal(shape_numel(sum_dims))},
             {"OUT_RANK", std::to_string(out_dims.size())},
             {"OUT_DIMS", dims_literal(out_dims)},
             {"A_OUT_STRIDES", dims_literal(s0)},
             {"B_OUT_STRIDES", dims_literal(s1)},
             {"SUM_RANK", std::to_string(sum_dims.size())},
             {"SUM_DIMS", dims_literal(sum_dims)},
             {"A_SUM_STRIDES", dims_literal(r0)},
             {"B_SUM_STRIDES", dims_literal(r1)},
             {"TWO_OPERANDS", two ? "true" : "false"}};
  k.args = {node.inputs[0], two ? node.inputs[1] : kNullArg, node.outputs[0]};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(y.numel(), 256);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_einsum_ops(OpRegistry& registry) {
  OpDef def;
  def.op_type = "Einsum";
  def.infer = einsum_infer;
  def.reference = einsum_reference;
  def.lower = einsum_lower;
  registry.add(def);
}

}  // namespace aotc
