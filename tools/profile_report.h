// aotc-run --profile: from the per-step times of a library's profiling extension (docs/abi.md)
// over several iterations to a report: per step the median time, its share of the total (the sum
// of the step medians), FLOPs and bytes (computed by aotc at compile time), achieved TFLOP/s and
// GB/s; a summary by kind (kernel, matmul, copy); printed as a short table (top N by time) and
// written as JSON. Pure computation and formatting, tested without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/json_writer.h"

namespace aotc {

struct ProfileStepInfo {
  std::string label, kind;
  uint64_t flops = 0, bytes = 0;
};

struct ProfileRow {
  int index = 0;  // launch order
  std::string label, kind;
  int steps = 1;  // by-kind rows: how many steps
  uint64_t flops = 0, bytes = 0;
  double ms = 0, share = 0;            // share of total_ms, 0..1
  double gflop = 0, tflops = 0;        // TFLOP/s achieved (0 without a FLOPs estimate)
  double mb = 0, gbs = 0;              // MB = 1e6 bytes; GB/s = 1e9 bytes per second
};

struct ProfileReport {
  int iterations = 0;
  double total_ms = 0;              // sum of the per-step medians
  std::vector<ProfileRow> steps;    // launch order
  std::vector<ProfileRow> by_kind;  // by time, longest first
};

// samples[i][s]: milliseconds of step s in iteration i (every row has steps.size() entries).
ProfileReport build_profile_report(const std::vector<ProfileStepInfo>& steps,
                                   const std::vector<std::vector<float>>& samples);

// The table: total, the `top` longest steps, then the summary by kind. Labels are escaped.
std::string format_profile_table(const ProfileReport& report, const std::string& prefix, int top);

// {"library", "prefix", "iterations", "total_ms", "steps": [...], "by_kind": [...]}.
void write_profile_json(JsonWriter& j, const ProfileReport& report, const std::string& library,
                        const std::string& prefix);

}  // namespace aotc
