// Output comparison and timing statistics (see compare.h). Elements are read through
// Tensor::get (doubles; every float width and integers up to 32 bits convert exactly), except
// 64-bit integers, which compare exactly through get_int.
#include "tools/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace aotc {

Tolerance default_tolerance(DType dtype) {
  Tolerance t;
  if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
    t.atol = 2.5e-3;
    t.rtol = 1e-3;
  } else if (!dtype_is_float(dtype)) {
    t.atol = 0;
    t.rtol = 0;
  }
  return t;
}

std::string index_text(const Shape& shape, int64_t flat) {
  std::string out = "index " + std::to_string(flat);
  if (shape.size() <= 1) return out;
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t dim = shape[d] > 0 ? shape[d] : 1;
    idx[d] = flat % dim;
    flat /= dim;
  }
  out += " (";
  for (size_t d = 0; d < idx.size(); ++d) out += (d ? "," : "") + std::to_string(idx[d]);
  return out + ")";
}

static std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

CompareResult compare_tensors(const Tensor& got, const Tensor& ref, const Tolerance& tol) {
  CompareResult r;
  if (got.dtype() != ref.dtype()) {
    r.reason = "dtype " + dtype_name(got.dtype()) + ", expected " + dtype_name(ref.dtype());
    return r;
  }
  if (got.shape() != ref.shape()) {
    r.reason = "shape " + shape_str(got.shape()) + ", expected " + shape_str(ref.shape());
    return r;
  }
  r.elements = ref.numel();
  const bool exact_ints = dtype_is_integer(ref.dtype()) && dtype_size(ref.dtype()) == 8;
  double err2 = 0, ref2 = 0;
  for (int64_t i = 0; i < r.elements; ++i) {
    bool bad = false;
    double g, e;
    if (exact_ints) {
      int64_t gi = got.get_int(i), ei = ref.get_int(i);
      g = static_cast<double>(gi);
      e = static_cast<double>(ei);
      bad = gi != ei && !(tol.atol > 0 && std::fabs(g - e) <= tol.atol + tol.rtol * std::fabs(e));
    } else {
      g = got.get(i);
      e = ref.get(i);
    }
    if (std::isnan(e) || std::isnan(g) || std::isinf(e) || std::isinf(g)) {
      bool same = (std::isnan(e) && std::isnan(g)) || (std::isinf(e) && std::isinf(g) && (e > 0) == (g > 0));
      if (!same) {
        bad = true;
        ++r.nonfinite_mismatches;
      }
    } else {
      double diff = std::fabs(g - e);
      r.max_abs_error = std::max(r.max_abs_error, diff);
      r.max_abs_ref = std::max(r.max_abs_ref, std::fabs(e));
      err2 += diff * diff;
      ref2 += e * e;
      if (!exact_ints && !(diff <= tol.atol + tol.rtol * std::fabs(e))) bad = true;
    }
    if (bad) {
      if (r.first_mismatch < 0) {
        r.first_mismatch = i;
        r.first_got = g;
        r.first_ref = e;
      }
      ++r.mismatches;
    }
  }
  r.rel_l2 = ref2 > 0 ? std::sqrt(err2) / std::sqrt(ref2) : std::sqrt(err2);
  if (tol.model_metric) {
    bool l2_ok = r.rel_l2 < kModelRelL2;
    bool max_ok = r.max_abs_error < kModelMaxAbsFraction * r.max_abs_ref || r.max_abs_error == 0;
    r.pass = l2_ok && max_ok && r.nonfinite_mismatches == 0;
    if (r.nonfinite_mismatches) {
      r.reason = std::to_string(r.nonfinite_mismatches) + " NaN/Inf positions differ (first at " +
                 std::to_string(r.first_mismatch) + ")";
    } else if (!l2_ok) {
      r.reason = "relative L2 error " + format_double(r.rel_l2) + " >= " + format_double(kModelRelL2);
    } else if (!max_ok) {
      r.reason = "max abs error " + format_double(r.max_abs_error) + " >= 1e-3 * max|ref| = " +
                 format_double(kModelMaxAbsFraction * r.max_abs_ref);
    }
  } else {
    r.pass = r.mismatches == 0;
    if (!r.pass) {
      r.reason = std::to_string(r.mismatches) + " of " + std::to_string(r.elements) +
                 " elements differ; first at " + index_text(ref.shape(), r.first_mismatch) + ": got " +
                 format_double(r.first_got) + ", expected " + format_double(r.first_ref);
    }
  }
  return r;
}

TimingSummary summarize_timings(std::vector<double> ms) {
  TimingSummary s;
  s.runs = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  s.median_ms = (n % 2) ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  auto nearest_rank = [&](double q) {
    size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
    return ms[std::min(n, std::max<size_t>(rank, 1)) - 1];
  };
  s.p90_ms = nearest_rank(0.90);
  s.p99_ms = nearest_rank(0.99);
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean_ms = sum / static_cast<double>(n);
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  return s;
}

}  // namespace aotc
