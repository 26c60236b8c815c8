// The conformance runner's and the GPU op tests' view of tools/compare.h (the one comparison
// implementation): the per-element rule with the dtype's default tolerance, reduced to a verdict
// and one message line that names the first mismatch, the count and the tolerance used.
#pragma once

#include <sstream>
#include <string>

#include "tools/compare.h"

namespace aotc::conformance {

struct CompareResult {
  bool ok = true;
  int64_t mismatches = 0;
  std::string message;  // "" when ok; else aotc::CompareResult::reason plus the dtype's tolerance
};

inline std::string number_text(double v) {
  std::ostringstream out;
  out << v;  // 1e-05, 0.0001, 0.0025
  return out.str();
}

// `tolerance_of`: the dtype whose tolerance applies when it is not the output's own (a 16-bit
// graph's Cast to float: the reference was rounded to 16 bits before the Cast).
inline CompareResult compare_tensors(const Tensor& got, const Tensor& expected, DType tolerance_of = DType::kUndefined) {
  const Tolerance tol = default_tolerance(tolerance_of == DType::kUndefined ? expected.dtype() : tolerance_of);
  const aotc::CompareResult c = aotc::compare_tensors(got, expected, tol);
  CompareResult r;
  r.ok = c.pass;
  r.mismatches = c.mismatches;
  if (!c.pass && c.mismatches > 0)
    r.message = c.reason + " (" + dtype_name(tolerance_of == DType::kUndefined ? expected.dtype() : tolerance_of) + " atol " + number_text(tol.atol) + " rtol " +
                number_text(tol.rtol) + ")";
  else if (!c.pass)
    r.message = c.reason;
  return r;
}

}  // namespace aotc::conformance
