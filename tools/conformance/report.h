// What the conformance runner writes: the per-test line log, the per-op summary and pass rates on
// stdout, and the JSON that tools/conformance/gen_ops_md.py turns into docs/ops.md.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/conformance/runner.h"

namespace aotc::conformance {

struct PassRate {
  int passed = 0;
  int total = 0;
  std::string text() const;  // "93.4% (612/655)"
};

struct Totals {
  PassRate all, inference;  // over the tests that ran
  int not_run = 0;          // cut by --deadline or a signal: in neither rate
};

Totals compute_totals(const std::vector<TestResult>& results);

// "passed  test_relu  Relu  [excluded: ...]  detail"
std::string log_line(const TestResult& r);

// Per-op table, excluded tests by reason, and the two pass-rate lines; `label` is
// "CPU reference" or "GPU".
void print_summary(std::ostream& out, const std::vector<TestResult>& results, const std::string& label);

struct JsonHeader {
  std::string mode, label, data_dir, command, date;
};
void write_json(std::ostream& out, const JsonHeader& header, const std::vector<TestResult>& results);

}  // namespace aotc::conformance
