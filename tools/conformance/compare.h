// Per-element comparison of a result tensor with the expected one, as the conformance runner and
// the GPU op tests define it: same dtype and shape; floats |got-expected| <= atol + rtol*|expected|
// (fp32/fp64: 1e-5/1e-4, fp16: 2.5e-3/1e-3), NaN and Inf positions equal; integers and bool exact.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace aotc::conformance {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// The tolerance for a dtype (zero for integers and bool).
Tolerance tolerance_for(DType dtype);

struct CompareResult {
  bool ok = true;
  int64_t mismatches = 0;
  std::string message;  // first mismatch: "index 17 (0,5,2): got 1.25 expected 1.5", or the dtype/shape problem
};

CompareResult compare_tensors(const Tensor& got, const Tensor& expected);

}  // namespace aotc::conformance
