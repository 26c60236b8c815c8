// Tensor comparison for conformance and GPU op tests. Floats are compared in double (every
// float width converts exactly); the first mismatch is reported with its multi-index so a failure
// line in the log is enough to start debugging.
#include "tools/conformance/compare.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace aotc::conformance {
namespace {

std::string index_text(const Shape& shape, int64_t flat) {
  std::ostringstream out;
  out << "index " << flat;
  if (shape.size() > 1) {
    std::vector<int64_t> idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
      int64_t dim = shape[d] > 0 ? shape[d] : 1;
      idx[d] = flat % dim;
      flat /= dim;
    }
    out << " (";
    for (size_t d = 0; d < idx.size(); ++d) out << (d ? "," : "") << idx[d];
    out << ")";
  }
  return out.str();
}

std::string number_text(double v) {
  std::ostringstream out;
  out.precision(9);
  out << v;
  return out.str();
}

bool float_matches(double got, double want, const Tolerance& tol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

}  // namespace

Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat64: return {1e-5, 1e-4};
    case DType::kFloat16: return {2.5e-3, 1e-3};
    // bfloat16 has 8 significant bits: one unit in the last place is 2^-8 relative, so a
    // correctly rounded result can be 3.9e-3 off; fp16's rtol would fail correct results.
    case DType::kBFloat16: return {1e-2, 8e-3};
    default: return {0, 0};
  }
}

CompareResult compare_tensors(const Tensor& got, const Tensor& expected) {
  CompareResult r;
  if (got.dtype() != expected.dtype()) {
    r.ok = false;
    r.message = "dtype " + dtype_name(got.dtype()) + ", expected " + dtype_name(expected.dtype());
    return r;
  }
  if (got.shape() != expected.shape()) {
    r.ok = false;
    r.message = "shape " + shape_str(got.shape()) + ", expected " + shape_str(expected.shape());
    return r;
  }
  const DType t = expected.dtype();
  const Tolerance tol = tolerance_for(t);
  const int64_t n = expected.numel();
  const int64_t width = dtype_size(t);
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    std::string got_text, want_text;
    if (dtype_is_float(t)) {
      double a = got.get(i), b = expected.get(i);
      ok = float_matches(a, b, tol);
      if (!ok) got_text = number_text(a), want_text = number_text(b);
    } else if (t == DType::kUInt64) {
      uint64_t a, b;
      std::memcpy(&a, got.raw() + i * width, sizeof a);
      std::memcpy(&b, expected.raw() + i * width, sizeof b);
      ok = a == b;
      if (!ok) got_text = std::to_string(a), want_text = std::to_string(b);
    } else if (dtype_is_integer(t) || t == DType::kBool) {
      int64_t a = got.get_int(i), b = expected.get_int(i);
      ok = a == b;
      if (!ok) got_text = std::to_string(a), want_text = std::to_string(b);
    } else {
      ok = width > 0 && std::memcmp(got.raw() + i * width, expected.raw() + i * width, width) == 0;
      if (!ok) got_text = "(bytes)", want_text = "(bytes)";
    }
    if (!ok) {
      if (r.mismatches == 0)
        r.message = index_text(expected.shape(), i) + ": got " + got_text + " expected " + want_text;
      ++r.mismatches;
    }
  }
  if (r.mismatches > 0) {
    r.ok = false;
    r.message += " (" + std::to_string(r.mismatches) + " of " + std::to_string(n) +
                 " elements differ, " + dtype_name(t) + " atol " + number_text(tol.atol) +
                 " rtol " + number_text(tol.rtol) + ")";
  }
  return r;
}

}  // namespace aotc::conformance
