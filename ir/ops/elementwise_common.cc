// Saturating conversion text and the broadcasting kernel steps shared by the elementwise
// families (see elementwise_common.h).
#include "ir/ops/elementwise_common.h"

#include <algorithm>

#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {

// Integer literal of the type's lowest and largest values, in C text.
void int_limits_text(DType t, std::string* lo, std::string* hi) {
  switch (t) {
    case DType::kInt8: *lo = "-128"; *hi = "127"; return;
    case DType::kInt16: *lo = "-32768"; *hi = "32767"; return;
    case DType::kInt32: *lo = "(-2147483647 - 1)"; *hi = "2147483647"; return;
    case DType::kInt64: *lo = "(-9223372036854775807LL - 1)"; *hi = "9223372036854775807LL"; return;
    case DType::kUInt8: *lo = "0"; *hi = "255"; return;
    case DType::kUInt16: *lo = "0"; *hi = "65535"; return;
    case DType::kUInt32: *lo = "0"; *hi = "4294967295U"; return;
    default: *lo = "0"; *hi = "18446744073709551615ULL"; return;
  }
}

}  // namespace

std::string saturating_int_expr(const std::string& expr, DType to) {
  std::string lo, hi;
  int_limits_text(to, &lo, &hi);
  const std::string t = dtype_c_type(to);
  const std::string e = "(" + expr + ")";
  // A float compared with an integer literal converts the literal to the float's type, exactly
  // as static_cast<F>(limit) in saturating_float_to_int.
  return "(" + e + " != " + e + " ? (" + t + ")0 : " + e + " <= " + lo + " ? (" + t + ")" + lo + " : " + e +
         " >= " + hi + " ? (" + t + ")" + hi + " : (" + t + ")" + e + ")";
}

std::string elementwise_compute_type(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 ? "float" : dtype_c_type(t);
}

namespace {

// The step both binary kernels start from: operands, one thread an element, the type holes; and in
// *vec the 16-byte vector width when the three element sizes are one of 2 or 4 bytes (else 1).
KernelStep binary_step_base(const Graph& graph, ValueId a, ValueId b, ValueId out, int64_t* vec) {
  const Value& va = graph.value(a);
  const Value& vb = graph.value(b);
  const Value& vy = graph.value(out);
  KernelStep k;
  k.args = {a, b, out};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(vy.numel(), 256);
  k.holes = {{"T", dtype_c_type(va.dtype)},
             {"TB", dtype_c_type(vb.dtype)},
             {"TO", dtype_c_type(vy.dtype)},
             {"CT", elementwise_compute_type(va.dtype)},
             {"CTB", elementwise_compute_type(vb.dtype)}};
  const int64_t es = dtype_size(vy.dtype);
  *vec = (es == 2 || es == 4) && dtype_size(va.dtype) == es && dtype_size(vb.dtype) == es ? 16 / es : 1;
  return k;
}

}  // namespace

KernelStep binary_kernel_step(const Graph& graph, ValueId a, ValueId b, ValueId out, const std::string& expr,
                              const std::string& comment) {
  const Value& va = graph.value(a);
  const Value& vb = graph.value(b);
  const Value& vy = graph.value(out);
  if (va.shape == vy.shape && vb.shape == vy.shape) {
    int64_t vec = 1;
    KernelStep k = binary_step_base(graph, a, b, out, &vec);
    if (vy.numel() % vec != 0) vec = 1;
    if (vec > 1) k.grid = grid_for(vy.numel() / vec, 256);
    k.template_name = "binary_same_shape";
    k.holes.insert(k.holes.end(), {{"numel", int_literal(vy.numel())}, {"vec", std::to_string(vec)}, {"expr", expr},
                                   {"comment", comment}});
    return k;
  }
  StridedLayout layout{vy.shape, {broadcast_strides(va.shape, vy.shape), broadcast_strides(vb.shape, vy.shape)}};
  return binary_strided_kernel_step(graph, a, b, out, layout, expr, comment);
}

KernelStep binary_strided_kernel_step(const Graph& graph, ValueId a, ValueId b, ValueId out, StridedLayout layout,
                                      const std::string& expr, const std::string& comment) {
  const Value& va = graph.value(a);
  const Value& vb = graph.value(b);
  const Value& vy = graph.value(out);
  int64_t vec = 1;
  KernelStep k = binary_step_base(graph, a, b, out, &vec);
  layout = collapse_layout(layout);
  // Both inputs contiguous in the innermost (collapsed) dim, its extent and every stride multiples
  // of the vector (so every vector's offsets are too).
  if (layout.dims.empty() || layout.dims.back() % vec != 0) vec = 1;
  for (const std::vector<int64_t>& st : layout.strides) {
    if (st.size() != layout.dims.size() || st.back() != 1) vec = 1;
    for (size_t d = 0; d + 1 < st.size(); ++d)
      if (st[d] % vec != 0) vec = 1;
  }
  if (vec > 1) k.grid = grid_for(vy.numel() / vec, 256);
  k.template_name = "binary_broadcast";
  k.holes.insert(k.holes.end(), {{"I", index_type_for(std::max({vy.numel(), va.numel(), vb.numel()}))},
                                 {"rank", std::to_string(layout.dims.size())},
                                 {"dims", dims_literal(layout.dims)},
                                 {"a_strides", dims_literal(layout.strides[0])},
                                 {"b_strides", dims_literal(layout.strides[1])},
                                 {"numel", int_literal(vy.numel())},
                                 {"vec", std::to_string(vec)},
                                 {"expr", expr},
                                 {"comment", comment}});
  return k;
}

KernelStep accumulate_kernel_step(const Graph& graph, ValueId b, ValueId out, const std::string& expr,
                                  const std::string& comment) {
  const Value& vb = graph.value(b);
  const Value& vy = graph.value(out);
  StridedLayout layout{vy.shape, {broadcast_strides(vb.shape, vy.shape)}};
  layout = collapse_layout(layout);
  KernelStep k;
  k.template_name = "elementwise_accumulate";
  k.args = {b, out};
  k.block = Dim3{256, 1, 1};
  k.grid = grid_for(vy.numel(), 256);
  k.holes = {{"TB", dtype_c_type(vb.dtype)},
             {"TO", dtype_c_type(vy.dtype)},
             {"CT", elementwise_compute_type(vy.dtype)},
             {"CTB", elementwise_compute_type(vb.dtype)},
             {"I", index_type_for(std::max(vy.numel(), vb.numel()))},
             {"rank", std::to_string(layout.dims.size())},
             {"dims", dims_literal(layout.dims)},
             {"b_strides", dims_literal(layout.strides[0])},
             {"numel", int_literal(vy.numel())},
             {"expr", expr},
             {"comment", comment}};
  return k;
}

}  // namespace aotc
