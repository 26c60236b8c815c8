// CumSum and CumProd: running sums / products along `axis` (int32/int64 scalar input 1, a
// constant: it is compiled into the kernel), with the exclusive and reverse attributes. Numeric
// dtypes of the spec (float, double, float16, bfloat16, int32, int64, uint32, uint64); 16-bit floats
// accumulate in float; integers wrap (two's complement) on the host and the GPU alike.
#include <type_traits>

#include "ir/op_registry.h"
#include "ir/ops/elem_types.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

const std::vector<DType> kCumSumTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                         DType::kInt32,   DType::kInt64,   DType::kUInt32,  DType::kUInt64};

Expected<int64_t> cumsum_axis(const Node& node, const Tensor& axis, int64_t rank) {
  if (axis.numel() != 1) return node_error(node, "axis must be a scalar");
  return normalize_axis(node, axis.get_int(0), rank);
}

Status cumsum_infer(Node& node, Graph& graph) {
  AOTC_RETURN_IF_ERROR(expect_inputs(node, 2, 2));
  if (node.outputs.size() != 1) return node_error(node, "expects 1 output");
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 0, kCumSumTypes));
  AOTC_RETURN_IF_ERROR(expect_dtype(node, graph, 1, {DType::kInt32, DType::kInt64}));
  Expected<const Tensor*> axis = expect_constant(node, graph, 1, "the axis is compiled into the kernel");
  if (!axis) return axis.status();
  const Value& x = input_value(graph, node, 0);
  Expected<int64_t> a = cumsum_axis(node, **axis, static_cast<int64_t>(x.shape.size()));
  if (!a) return a.status();
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}

void lines_of(const Shape& s, int64_t axis, int64_t* outer, int64_t* len, int64_t* inner) {
  *outer = *inner = 1;
  *len = s[static_cast<size_t>(axis)];
  for (size_t d = 0; d < s.size(); ++d) {
    if (static_cast<int64_t>(d) < axis) *outer *= s[d];
    if (static_cast<int64_t>(d) > axis) *inner *= s[d];
  }
}

// Integer sums and products wrap (two's complement), as the kernel's unsigned arithmetic does,
// instead of overflowing (UB).
template <class C>
C combine(bool product, C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    return static_cast<C>(product ? ua * ub : ua + ub);
  } else {
    return static_cast<C>(product ? a * b : a + b);
  }
}

bool is_product(const Node& node) { return node.op_type == "CumProd"; }

Status cumsum_reference(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) {
  const Tensor& x = *inputs[0];
  Tensor& y = outputs[0];
  Expected<int64_t> axis = cumsum_axis(node, *inputs[1], x.rank());
  if (!axis) return axis.status();
  int64_t outer, len, inner;
  lines_of(x.shape(), *axis, &outer, &len, &inner);
  const bool exclusive = node.attr_int("exclusive", 0) != 0, reverse = node.attr_int("reverse", 0) != 0;
  const bool product = is_product(node);
  bool ok = visit_numeric(x.dtype(), [&](auto tag) {
    using E = decltype(tag);
    using C = typename E::Compute;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        C acc = product ? C(1) : C(0);
        for (int64_t s = 0; s < len; ++s) {
          int64_t idx = (o * len + (reverse ? len - 1 - s : s)) * inner + in;
          C v = E::load(x, idx);
          if (exclusive) E::store(y, idx, acc);
          acc = combine(product, acc, v);
          if (!exclusive) E::store(y, idx, acc);
        }
      }
  });
  if (!ok) return node_error(node, "dtype " + dtype_name(x.dtype()) + " is not supported");
  return Status::ok();
}

std::string compute_type(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 ? "float" : dtype_c_type(t);
}

Expected<Lowering> cumsum_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  Lowering l;
  if (x.numel() == 0) return l;
  const Value& axis_v = graph.value(node.inputs[1]);
  if (!axis_v.constant) return node_error(node, "axis must be a constant");
  Expected<int64_t> axis = cumsum_axis(node, *axis_v.constant, static_cast<int64_t>(x.shape.size()));
  if (!axis) return axis.status();
  int64_t outer, len, inner;
  lines_of(x.shape, *axis, &outer, &len, &inner);
  const bool exclusive = node.attr_int("exclusive", 0) != 0, reverse = node.attr_int("reverse", 0) != 0;
  const bool product = is_product(node);
  const std::string c = compute_type(x.dtype);
  std::string step = product ? "acc * v" : "acc + v";
  if (dtype_is_integer(x.dtype))  // wrapping, like the reference
    step = "(" + c + ")((unsigned long long)acc " + (product ? "*" : "+") + " (unsigned long long)v)";
  KernelStep k;
  k.template_name = "cumsum";
  k.holes = {{"T", dtype_c_type(x.dtype)},
             {"C", c},
             {"init", product ? "1" : "0"},
             {"step", step},
             {"len", int_literal(len)},
             {"inner", int_literal(inner)},
             {"exclusive", exclusive ? "true" : "false"},
             {"reverse", reverse ? "true" : "false"},
             {"lines", int_literal(outer * inner)},
             {"comment", node.op_type + " " + shape_str(x.shape) + " axis " + std::to_string(*axis) +
                             (exclusive ? " exclusive" : "") + (reverse ? " reverse" : "") + " " + dtype_name(x.dtype)}};
  k.args = {node.inputs[0], node.outputs[0]};
  k.block = Dim3{128, 1, 1};
  k.grid = grid_for(outer * inner, 128);
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

}  // namespace

void register_cumsum_ops(OpRegistry& registry) {
  for (const char* op : {"CumSum", "CumProd"}) {
    OpDef def;
    def.op_type = op;
    def.infer = cumsum_infer;
    def.reference = cumsum_reference;
    def.lower = cumsum_lower;
    registry.add(def);
  }
}

}  // namespace aotc
