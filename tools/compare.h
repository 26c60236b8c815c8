// Comparing an output tensor with a reference, and summarising benchmark timings: the one
// implementation for aotc-run, the conformance runner and the GPU op tests (library aotc_compare).
// Two verdicts: per element (|got-ref| <= atol + rtol*|ref|, the single-op rule) or the
// whole-model metric (relative L2 < 1e-4 and max abs < 1e-3 * max|ref|). Both require NaN and Inf
// positions (and Inf signs) to match; 64-bit integers compare exactly (not through double).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace aotc {

struct Tolerance {
  double atol = 1e-5, rtol = 1e-4;
  bool model_metric = false;
};

constexpr double kModelRelL2 = 1e-4;
constexpr double kModelMaxAbsFraction = 1e-3;

// fp32/f64: 1e-5/1e-4; fp16/bf16: 2.5e-3/1e-3 (bf16 has no looser rule of its own: the project
// tolerances are never loosened); integers and bool: exact (0/0).
Tolerance default_tolerance(DType dtype);

struct CompareResult {
  bool pass = false;
  std::string reason;          // why it failed ("" when it passed), one line; per element:
                               // "2 of 6 elements differ; first at index 4 (1,1): got 7, expected 4"
  int64_t elements = 0;
  int64_t mismatches = 0;      // elements outside the per-element tolerance (or NaN/Inf mismatch)
  int64_t nonfinite_mismatches = 0;
  double max_abs_error = 0;    // over elements finite in both
  double max_abs_ref = 0;
  double rel_l2 = 0;           // ||got-ref||_2 / ||ref||_2 (the absolute norm when ref is all 0)
  int64_t first_mismatch = -1; // flat index
  double first_got = 0, first_ref = 0;
};

CompareResult compare_tensors(const Tensor& got, const Tensor& ref, const Tolerance& tol);

// "index 17" or, for rank > 1, "index 17 (0,5,2)": where a flat index lies in `shape`.
std::string index_text(const Shape& shape, int64_t flat);

struct TimingSummary {
  int runs = 0;
  double median_ms = 0, p90_ms = 0, p99_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0;
};
// Median (mean of the two middle values for an even count) and nearest-rank percentiles.
TimingSummary summarize_timings(std::vector<double> ms);

}  // namespace aotc
