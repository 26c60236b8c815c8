// Text and JSON output of the conformance runner. The JSON is the interface to gen_ops_md.py
// (docs/ops.md), so its keys are stable: header fields, totals, and one object per test.
#include "tools/conformance/report.h"

#include <cstdio>
#include <iomanip>
#include <map>
#include <sstream>

namespace aotc::conformance {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void json_rate(std::ostream& out, const char* key, const PassRate& r) {
  out << "    " << json_string(key) << ": {\"passed\": " << r.passed << ", \"total\": " << r.total << "}";
}

struct OpCounts {
  int tests = 0, passed = 0, failed = 0, unsupported = 0, excluded = 0;
  std::string note;  // first non-passing detail
};

}  // namespace

std::string PassRate::text() const {
  std::ostringstream out;
  double pct = total > 0 ? 100.0 * passed / total : 0.0;
  out << std::fixed << std::setprecision(1) << pct << "% (" << passed << "/" << total << ")";
  return out.str();
}

Totals compute_totals(const std::vector<TestResult>& results) {
  Totals t;
  for (const TestResult& r : results) {
    if (r.status == "not run") {
      t.not_run++;
      continue;
    }
    bool pass = r.status == "passed";
    t.all.total++;
    t.all.passed += pass;
    if (r.exclusion.empty()) {
      t.inference.total++;
      t.inference.passed += pass;
    }
  }
  return t;
}

std::string log_line(const TestResult& r) {
  std::ostringstream out;
  out << std::left << std::setw(12) << r.status << " " << r.name << "  [" << r.op << "]";
  if (!r.exclusion.empty()) out << "  {excluded: " << r.exclusion << "}";
  if (!r.detail.empty()) out << "  " << r.detail;
  if (r.seconds > 0) {
    out << "  (" << std::fixed << std::setprecision(1) << r.seconds << " s";
    if (r.build_seconds > 0 || r.run_seconds > 0)
      out << ": build " << r.build_seconds << ", run " << r.run_seconds;
    out << ")";
  }
  return out.str();
}

void print_summary(std::ostream& out, const std::vector<TestResult>& results, const std::string& label) {
  std::map<std::string, OpCounts> ops;
  std::map<std::string, std::vector<std::string>> excluded;
  for (const TestResult& r : results) {
    if (r.status == "not run") continue;  // counted in the totals' last line
    OpCounts& c = ops[r.op];
    c.tests++;
    if (r.status == "passed") c.passed++;
    else if (r.status == "failed") c.failed++;
    else c.unsupported++;
    if (!r.exclusion.empty()) {
      c.excluded++;
      excluded[r.exclusion.substr(0, r.exclusion.find(':'))].push_back(r.name);
    }
    if (c.note.empty() && r.status != "passed") c.note = r.status + ": " + r.detail;
  }
  out << "\nper-op summary (" << label << ")\n";
  out << std::left << std::setw(28) << "op" << std::right << std::setw(6) << "tests" << std::setw(8)
      << "passed" << std::setw(8) << "failed" << std::setw(8) << "unsupp" << std::setw(9) << "excluded"
      << "  first problem\n";
  for (const auto& [op, c] : ops) {
    std::string note = c.note.size() > 110 ? c.note.substr(0, 107) + "..." : c.note;
    out << std::left << std::setw(28) << op << std::right << std::setw(6) << c.tests << std::setw(8)
        << c.passed << std::setw(8) << c.failed << std::setw(8) << c.unsupported << std::setw(9)
        << c.excluded << "  " << note << "\n";
  }
  out << "\nexcluded from the inference set, by reason (details per test in the log / JSON):\n";
  for (const auto& [reason, names] : excluded) {
    out << "  " << reason << ": " << names.size() << " tests:";
    for (const std::string& n : names) out << " " << n;
    out << "\n";
  }
  Totals t = compute_totals(results);
  out << "\nall node tests (" << label << "): " << t.all.text() << "\n";
  out << "inference set (" << label << "): " << t.inference.text() << "\n";
  if (t.not_run > 0)
    out << "not run (--deadline or stopped; in neither rate): " << t.not_run << " of " << results.size()
        << " tests\n";
}

void write_json(std::ostream& out, const JsonHeader& header, const std::vector<TestResult>& results) {
  Totals t = compute_totals(results);
  out << "{\n";
  out << "  \"mode\": " << json_string(header.mode) << ",\n";
  out << "  \"label\": " << json_string(header.label) << ",\n";
  out << "  \"data_dir\": " << json_string(header.data_dir) << ",\n";
  out << "  \"command\": " << json_string(header.command) << ",\n";
  out << "  \"date\": " << json_string(header.date) << ",\n";
  out << "  \"totals\": {\n";
  json_rate(out, "all", t.all);
  out << ",\n";
  json_rate(out, "inference", t.inference);
  out << ",\n    \"not_run\": " << t.not_run;
  out << "\n  },\n  \"tests\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const TestResult& r = results[i];
    out << "    {\"name\": " << json_string(r.name) << ", \"op\": " << json_string(r.op)
        << ", \"status\": " << json_string(r.status) << ", \"exclusion\": " << json_string(r.exclusion)
         << ", \"seconds\": " << std::fixed << std::setprecision(3) << r.seconds
        << ", \"build_seconds\": " << r.build_seconds << ", \"run_seconds\": " << r.run_seconds << ", \"ops\": [";
    for (size_t k = 0; k < r.ops.size(); ++k) out << (k ? ", " : "") << json_string(r.ops[k]);
    out << "], \"detail\": " << json_string(r.detail) << "}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
}

}  // namespace aotc::conformance
