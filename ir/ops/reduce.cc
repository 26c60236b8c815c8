// ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare. Canonical form after import: the
// axes (attribute before opset 18, or 13 for ReduceSum) become a constant int64 input 1, so every
// later stage reads one form; keepdims and noop_with_empty_axes stay attributes. The kernel
// (templates/reduce.cu.in) views the input as merged kept dims x merged reduced dims.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReduceOp {
  const char* name;
  ReduceKind kind;
};
const ReduceOp kReduceOps[] = {
    {"ReduceSum", ReduceKind::kSum},       {"ReduceMean", ReduceKind::kMean},
    {"ReduceMax", ReduceKind::kMax},       {"ReduceMin", ReduceKind::kMin},
    {"ReduceProd", ReduceKind::kProd},     {"ReduceL1", ReduceKind::kL1},
    {"ReduceL2", ReduceKind::kL2},         {"ReduceLogSum", ReduceKind::kLogSum},
    {"ReduceLogSumExp", ReduceKind::kLogSumExp}, {"ReduceSumSquare", ReduceKind::kSumSquare}};

ReduceKind kind_of(const Node& node) {
  for (const ReduceOp& op : kReduceOps)
    if (node.op_type == op.name) return op.kind;
  return ReduceKind::kSum;
}

std::vector<DType> allowed_types(ReduceKind k) {
  std::vector<DType> t = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16,
                          DType::kInt32,   DType::kInt64,   DType::kUInt32,  DType::kUInt64};
  if (k == ReduceKind::kMax || k == ReduceKind::kMin) {
    t.push_back(DType::kInt8);
    t.push_back(DType::kUInt8);
    t.push_back(DType::kBool);  // ReduceMax/Min-20: any / all
  }
  return t;
}

Status reduce_import(Node& node, Graph& graph, int64_t opset) {
  const int64_t input_since = node.op_type == "ReduceSum" ? 13 : 18;
  if (opset < input_since && node.num_present_inputs() > 1)
    return node_error(node, "takes 1 input before opset " + std::to_string(input_since));
  if (!node.has_attr("axes")) return Status::ok();
  if (opset >= input_since) return node_error(node, "the axes attribute was replaced by an input in opset " + std::to_string(input_since));
  std::vector<int64_t> axes = node.attr_ints("axes");
  node.attrs.erase("axes");
  node.inputs.resize(1);
  // An empty axes attribute means "all axes" (noop_with_empty_axes did not exist yet): leave the
  // input absent, which means the same.
  if (axes.empty()) return Status::ok();
  node.inputs.push_back(graph.add_constant(graph.unique_name(node.name + "_axes"),
                                           Tensor::from_int64s({static_cast<int64_t>(axes.size())}, axes)));
  return Status::ok();
}

// The reduced-axis mask for `rank`, from axes values (nullptr = input absent). With no axes and
// noop_with_empty_axes, no axis is reduced: each output element "reduces" its one input element,
// so the op's element map still applies (ReduceSumSquare squares), as in the ONNX reference.
Expected<std::vector<bool>> reduced_mask(const Node& node, const Tensor* axes, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  std::vector<int64_t> list = axes ? axes->to_int64s() : std::vector<int64_t>{};
  if (list.empty()) {
    if (node.attr_int("noop_with_empty_axes", 0) != 0) return mask;
    std::fill(mask.begin(), mask.end(), true);
    return mask;
  }
  for (int64_t a : list) {
    Expected<int64_t> n = normalize_axis(node, a, rank);
    if (!n) return n.status();
    if (mask[static_cast<size_t>(*n)]) return node_error(node, "axis " + std::to_string(a) + " is listed twice");
    mask[static_cast<size_t>(*n)] = true;
  }
  return mask;
}

Expected<std::vector<bool>> mask_from_graph(const Node& node, const Graph& graph) {
  const Tensor* axes = nullptr;
  if (node.input(1) != kNoValue) {
    AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt64}));
    if (graph.value(node.inputs[1]).shape.size() > 1) return node_error(node, "axes must be 1-D");
    Expected<const Tensor*> c = expect_constant(node, graph, 1, "axes decide the output shape; aotc compiles static shapes");
    if (!c) return c.status();
    axes = *c;
  }
  return reduced_mask(node, axes, static_cast<int64_t>(input_value(graph, node, 0).shape.size()));
}

Shape reduced_shape(const Node& node, const Shape& in, const std::vector<bool>& mask) {
  const bool keep = node.attr_int("keepdims", 1) != 0;
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!mask[d]) out.push_back(in[d]);
    else if (keep) out.push_back(1);
  }
  return out;
}

Status reduce_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 1, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, allowed_types(kind_of(node))));
  int64_t keep = node.attr_int("keepdims", 1), noop_attr = node.attr_int("noop_with_empty_axes", 0);
  if ((keep != 0 && keep != 1) || (noop_attr != 0 && noop_attr != 1))
    return node_error(node, "keepdims and noop_with_empty_axes must be 0 or 1");
  auto mask = mask_from_graph(node, graph);
  if (!mask) return mask.status();
  const Value& x = input_value(graph, node, 0);
  set_output(graph, node, 0, x.dtype, reduced_shape(node, x.shape, *mask));
  return Status::ok();
}

// ---- reference ----

// Per output: the flat offset of its first input element; per reduction step: the offset added.
struct ReduceIndex {
  std::vector<int64_t> out_base, red_offset;
};

ReduceIndex reduce_index(const Shape& in, const std::vector<bool>& mask) {
  std::vector<int64_t> strides = shape_strides(in);
  ReduceIndex ix;
  ix.out_base = {0};
  ix.red_offset = {0};
  for (size_t d = 0; d < in.size(); ++d) {
    std::vector<int64_t>& list = mask[d] ? ix.red_offset : ix.out_base;
    std::vector<int64_t> next;
    for (int64_t base : list)
      for (int64_t i = 0; i < in[d]; ++i) next.push_back(base + i * strides[d]);
    list = std::move(next);
  }
  return ix;
}

double reduce_doubles(ReduceKind k, const std::vector<double>& v) {
  const double n = static_cast<double>(v.size());
  double acc = 0, m = -INFINITY;
  switch (k) {
    case ReduceKind::kMax:
      for (double x : v) m = (x > m || std::isnan(x)) ? x : m;
      return m;
    case ReduceKind::kMin:
      m = INFINITY;
      for (double x : v) m = (x < m || std::isnan(x)) ? x : m;
      return m;
    case ReduceKind::kProd:
      acc = 1;
      for (double x : v) acc *= x;
      return acc;
    case ReduceKind::kLogSumExp:
      for (double x : v) m = std::max(m, x);
      if (std::isinf(m)) {  // all -inf (or empty): -inf; any +inf: +inf
        for (double x : v) acc += std::exp(x);
        return std::log(acc);
      }
      for (double x : v) acc += std::exp(x - m);
      return m + std::log(acc);
    default: break;
  }
  for (double x : v) acc += k == ReduceKind::kL1 ? std::fabs(x) : (k == ReduceKind::kL2 || k == ReduceKind::kSumSquare) ? x * x : x;
  if (k == ReduceKind::kMean) return acc / n;
  if (k == ReduceKind::kL2) return std::sqrt(acc);
  if (k == ReduceKind::kLogSum) return std::log(acc);
  return acc;
}

// The identity of max (lowest) or min (highest) of an integer type: an empty reduction's result.
int64_t empty_extreme(DType t, bool lowest) {
  switch (t) {
    case DType::kInt8: return lowest ? -128 : 127;
    case DType::kUInt8: return lowest ? 0 : 255;
    case DType::kInt32: return lowest ? INT32_MIN : INT32_MAX;
    case DType::kUInt32: return lowest ? 0 : UINT32_MAX;
    case DType::kUInt64: return lowest ? 0 : -1;  // all bits set
    case DType::kBool: return lowest ? 0 : 1;
    default: return lowest ? INT64_MIN : INT64_MAX;
  }
}

// Integers: exact, wrapping arithmetic (unsigned), integer division for the mean, the float
// functions (sqrt, log, exp) through double and truncated back, as ONNX Runtime does.
int64_t reduce_ints(ReduceKind k, const std::vector<int64_t>& v, DType t) {
  uint64_t acc = 0;
  switch (k) {
    case ReduceKind::kMax:
    case ReduceKind::kMin: {
      if (v.empty()) return empty_extreme(t, k == ReduceKind::kMax);
      int64_t m = v[0];
      for (int64_t x : v) {
        bool better = dtype_is_signed(t) ? (k == ReduceKind::kMax ? x > m : x < m)
                                         : (k == ReduceKind::kMax ? static_cast<uint64_t>(x) > static_cast<uint64_t>(m)
                                                                  : static_cast<uint64_t>(x) < static_cast<uint64_t>(m));
        if (better) m = x;
      }
      return m;
    }
    case ReduceKind::kProd:
      acc = 1;
      for (int64_t x : v) acc *= static_cast<uint64_t>(x);
      return static_cast<int64_t>(acc);
    case ReduceKind::kLogSumExp: {
      std::vector<double> d(v.begin(), v.end());
      return saturating_float_to_int<int64_t>(reduce_doubles(k, d));  // log of 0 terms: -inf
    }
    default: break;
  }
  for (int64_t x : v) {
    uint64_t u = static_cast<uint64_t>(x);
    if (k == ReduceKind::kL1 && dtype_is_signed(t) && x < 0) u = static_cast<uint64_t>(-x);
    acc += (k == ReduceKind::kL2 || k == ReduceKind::kSumSquare) ? u * u : u;
  }
  const int64_t s = static_cast<int64_t>(acc);
  if (k == ReduceKind::kMean) {
    if (v.empty()) return 0;
    return dtype_is_signed(t) ? s / static_cast<int64_t>(v.size()) : static_cast<int64_t>(acc / v.size());
  }
  // log 0 is -inf and the root or log of a wrapped (negative) sum NaN: converted as the GPU's
  // cvt does (saturating, NaN -> 0) instead of an undefined cast (a fuzz find: ReduceLogSum of int
  // zeros, UBSan).
  if (k == ReduceKind::kL2) return saturating_float_to_int<int64_t>(std::sqrt(static_cast<double>(s)));
  if (k == ReduceKind::kLogSum) return saturating_float_to_int<int64_t>(std::log(static_cast<double>(s)));
  return s;
}

Status reduce_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  auto mask = reduced_mask(node, inputs.size() > 1 ? inputs[1] : nullptr, x.rank());
  if (!mask) return mask.status();
  Tensor& y = outputs[0];
  ReduceIndex ix = reduce_index(x.shape(), *mask);
  const ReduceKind k = kind_of(node);
  const bool is_float = dtype_is_float(x.dtype());
  for (size_t o = 0; o < ix.out_base.size() && static_cast<int64_t>(o) < y.numel(); ++o) {
    if (is_float) {
      std::vector<double> v;
      for (int64_t r : ix.red_offset) v.push_back(x.get(ix.out_base[o] + r));
      y.set(static_cast<int64_t>(o), reduce_doubles(k, v));
    } else {
      std::vector<int64_t> v;
      for (int64_t r : ix.red_offset) v.push_back(x.get_int(ix.out_base[o] + r));
      y.set_int(static_cast<int64_t>(o), reduce_ints(k, v, x.dtype()));
    }
  }
  return Status::ok();
}

// ---- lowering ----

std::string acc_type(DType t) {
  if (t == DType::kFloat64) return "double";
  if (dtype_is_float(t)) return "float";
  return dtype_is_signed(t) ? "long long" : "unsigned long long";
}

// The identity of max / min for the accumulator type, as a literal.
std::string extreme_literal(DType t, bool lowest) {
  if (dtype_is_float(t)) return lowest ? "(-__int_as_float(0x7f800000))" : "__int_as_float(0x7f800000)";
  switch (t) {
    case DType::kInt8: return lowest ? "-128LL" : "127LL";
    case DType::kUInt8: return lowest ? "0ULL" : "255ULL";
    case DType::kInt32: return lowest ? "(-2147483647LL - 1)" : "2147483647LL";
    case DType::kUInt32: return lowest ? "0ULL" : "4294967295ULL";
    case DType::kUInt64: return lowest ? "0ULL" : "18446744073709551615ULL";
    case DType::kBool: return lowest ? "0ULL" : "1ULL";
    default: return lowest ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
  }
}

struct ReduceExprs {
  std::string init, map, combine, final_expr;
  bool two_pass = false;
};

ReduceExprs reduce_exprs(ReduceKind k, DType t) {
  const bool is_float = dtype_is_float(t), is_signed = dtype_is_signed(t);
  const std::string sum = "a + b";
  ReduceExprs e{"(ACC)0", "v", sum, "acc"};
  switch (k) {
    case ReduceKind::kSum: break;
    case ReduceKind::kMean: e.final_expr = "acc / (ACC)kRed"; break;
    case ReduceKind::kMax:
      e.init = extreme_literal(t, true);
      e.combine = "((b > a || b != b) ? b : a)";
      break;
    case ReduceKind::kMin:
      e.init = extreme_literal(t, false);
      e.combine = "((b < a || b != b) ? b : a)";
      break;
    case ReduceKind::kProd: e.init = "(ACC)1"; e.combine = "a * b"; break;
    case ReduceKind::kL1: e.map = is_float || !is_signed ? (is_float ? "fabs(v)" : "v") : "(v < 0 ? -v : v)"; break;
    case ReduceKind::kL2: e.map = "v * v"; e.final_expr = "sqrt((double)acc)"; break;
    case ReduceKind::kSumSquare: e.map = "v * v"; break;
    case ReduceKind::kLogSum: e.final_expr = "log((double)acc)"; break;
    case ReduceKind::kLogSumExp:
      // Max first, for range; an infinite max (all -inf, or a +inf) sums the plain exponentials.
      e.two_pass = true;
      e.map = "(ACC)exp((double)v - mxs)";
      e.final_expr = "(mxs + log((double)acc))";
      break;
  }
  return e;
}

// Input dims as alternating runs of kept / reduced dims (size-1 dims dropped, neighbours of the
// same kind merged; the stride of a run is that of its innermost dim).
void merged_dims(const Shape& in, const std::vector<bool>& mask, std::vector<int64_t>* kept, std::vector<int64_t>* kept_strides,
                 std::vector<int64_t>* red, std::vector<int64_t>* red_strides) {
  std::vector<int64_t> strides = shape_strides(in);
  int last = -1;  // 0 kept, 1 reduced
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    const int kind = mask[d] ? 1 : 0;
    auto* dims = kind ? red : kept;
    auto* st = kind ? red_strides : kept_strides;
    if (kind == last) {
      dims->back() *= in[d];
      st->back() = strides[d];
    } else {
      dims->push_back(in[d]);
      st->push_back(strides[d]);
    }
    last = kind;
  }
  // CUDA has no zero-length arrays: a neutral dim keeps each list non-empty.
  if (kept->empty()) { kept->push_back(1); kept_strides->push_back(0); }
  if (red->empty()) { red->push_back(1); red_strides->push_back(0); }
}

constexpr int64_t kBlockThreads = 256;
constexpr int64_t kBlockModeMinReduction = 64;  // below this, a thread per output is enough

Expected<Lowering> reduce_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  const Value& y = output_value(graph, node, 0);
  auto mask = mask_from_graph(node, graph);
  if (!mask) return mask.status();
  Lowering l;
  if (y.numel() == 0) return l;
  const std::vector<bool>& m = *mask;
  std::vector<int64_t> kept, kept_strides, red, red_strides;
  merged_dims(x.shape, m, &kept, &kept_strides, &red, &red_strides);
  const int64_t n_red = x.numel() == 0 ? 0 : shape_numel(red);
  const ReduceKind k = kind_of(node);
  ReduceExprs e = reduce_exprs(k, x.dtype);
  const bool block_mode = n_red >= kBlockModeMinReduction;
  KernelStep s;
  s.template_name = "reduce";
  s.holes = {{"comment", node.op_type + " " + shape_str(x.shape) + " -> " + shape_str(y.shape) + " " + dtype_name(x.dtype) },
             {"T", dtype_c_type(x.dtype)},
             {"ACC", acc_type(x.dtype)},
             {"OUT_N", int_literal(y.numel())},
             {"RED_N", int_literal(n_red)},
             {"KEPT_RANK", std::to_string(kept.size())},
             {"KEPT_DIMS", dims_literal(kept)},
             {"KEPT_STRIDES", dims_literal(kept_strides)},
             {"RED_RANK", std::to_string(red.size())},
             {"RED_DIMS", dims_literal(red)},
             {"RED_STRIDES", dims_literal(red_strides)},
             {"THREADS", std::to_string(kBlockThreads)},
             {"BLOCK_PER_OUTPUT", block_mode ? "true" : "false"},
             {"TWO_PASS", e.two_pass ? "true" : "false"},
             {"INIT", e.init},
             {"MAX_INIT", "(ACC)" + extreme_literal(x.dtype, true)},
             {"MAP", e.map},
             {"COMBINE", e.combine},
             {"FINAL", e.final_expr}};
  s.args = {node.inputs[0], node.outputs[0]};
  s.block = Dim3{kBlockThreads, 1, 1};
  s.grid = block_mode ? Dim3{std::min<int64_t>(y.numel(), 65535LL * 16), 1, 1} : grid_for(y.numel(), kBlockThreads);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, s, {}});
  return l;
}

}  // namespace

void register_reduce_ops(OpRegistry& registry) {
  for (const ReduceOp& op : kReduceOps) {
    OpDef def;
    def.op_type = op.name;
    def.import = reduce_import;
    def.infer = reduce_infer;
    def.reference = reduce_reference;
    def.lower = reduce_lower;
    registry.add(def);
  }
}

}  // namespace aotc
