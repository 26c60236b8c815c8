// Shared pieces of the elementwise op families (binary, compare/logic, variadic, Where, Cast):
// the numpy broadcast walk used by the CPU references, the typed visitor that also covers bool,
// saturating float->integer conversion (host and CUDA text agree) and the broadcasting kernel step.
// One place, so every family broadcasts and converts by the same rules.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/graph.h"
#include "ir/lowering.h"
#include "ir/ops/elem_types.h"
#include "ir/ops/strided_layout.h"

namespace aotc {

// Calls f(offsets) for each output element in row-major order, where offsets[k] is the flat
// index into operand k (numpy broadcasting of `shapes[k]` to `out`).
template <class F>
void for_each_broadcast(const Shape& out, const std::vector<Shape>& shapes, F&& f) {
  std::vector<std::vector<int64_t>> strides;
  for (const Shape& s : shapes) strides.push_back(broadcast_strides(s, out));
  std::vector<int64_t> coord(out.size(), 0), offsets(shapes.size(), 0);
  int64_t n = shape_numel(out);
  for (int64_t i = 0; i < n; ++i) {
    f(static_cast<const std::vector<int64_t>&>(offsets));
    // Odometer step: advance the last coordinate, carrying into earlier ones.
    for (size_t d = out.size(); d-- > 0;) {
      for (size_t k = 0; k < shapes.size(); ++k) offsets[k] += strides[k][d];
      if (++coord[d] < out[d]) break;
      for (size_t k = 0; k < shapes.size(); ++k) offsets[k] -= strides[k][d] * out[d];
      coord[d] = 0;
    }
  }
}

// visit_numeric plus bool (stored as one byte, computed as bool).
template <class F>
bool visit_numeric_or_bool(DType t, F&& f) {
  if (t == DType::kBool) {
    f(ElemType<uint8_t, bool>{});
    return true;
  }
  return visit_numeric(t, f);
}

// saturating_float_to_int (ir/tensor.h): the CUDA text of saturating_int_expr computes the same.

// C++ conversion of one compute value to another with the rules above: float -> integer
// saturates, everything else is the C++ conversion (integers wrap, floats round to nearest).
template <class To, class From>
To convert_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return saturating_float_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// CUDA text converting `expr` (a float/double value) to integer dtype `to` as
// saturating_float_to_int does.
std::string saturating_int_expr(const std::string& expr, DType to);

// Compute type of a dtype in generated code: float for float16/bfloat16, else its C type.
std::string elementwise_compute_type(DType t);

// A kernel step computing output `out` (dtype `out_type`, shape `out_shape`) from operands
// `a` and `b` with numpy broadcasting: binary_same_shape when both have the output's shape,
// binary_broadcast otherwise. `expr` reads `x` (a, as compute type of a) and `y` (b, as compute
// type of b); its value is converted to the output type.
KernelStep binary_kernel_step(const Graph& graph, ValueId a, ValueId b, ValueId out,
                              const std::string& expr, const std::string& comment);

// binary_broadcast over an explicit layout: output dims (row-major, `out`'s element count) and each
// operand's element stride per dim (0 = broadcast), e.g. two column ranges of one buffer (the
// caller adds the operands' start offsets through KernelStep::arg_byte_offsets).
KernelStep binary_strided_kernel_step(const Graph& graph, ValueId a, ValueId b, ValueId out, StridedLayout layout,
                                      const std::string& expr, const std::string& comment);

// out[i] = expr(x = out[i], y = b[broadcast i]): folds one more operand into an output that
// already holds a partial result (variadic Min/Max/Sum/Mean).
KernelStep accumulate_kernel_step(const Graph& graph, ValueId b, ValueId out, const std::string& expr,
                                  const std::string& comment);

}  // namespace aotc
