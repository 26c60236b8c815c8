// The report of aotc-run --profile (see profile_report.h).
#include "tools/profile_report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "ir/graph.h"

namespace aotc {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void fill_rates(ProfileRow& r, double total_ms) {
  r.share = total_ms > 0 ? r.ms / total_ms : 0;
  r.gflop = static_cast<double>(r.flops) / 1e9;
  r.mb = static_cast<double>(r.bytes) / 1e6;
  // flops / (ms * 1e-3 s) / 1e12 and bytes / (ms * 1e-3 s) / 1e9.
  r.tflops = r.ms > 0 ? static_cast<double>(r.flops) / r.ms / 1e9 : 0;
  r.gbs = r.ms > 0 ? static_cast<double>(r.bytes) / r.ms / 1e6 : 0;
}

std::string row_text(const ProfileRow& r, const std::string& first) {
  char gflop[32] = "-", tflops[32] = "-";
  if (r.flops > 0) {
    std::snprintf(gflop, sizeof gflop, "%.3f", r.gflop);
    std::snprintf(tflops, sizeof tflops, "%.2f", r.tflops);
  }
  char line[512];
  std::snprintf(line, sizeof line, "%s %-7s %9.4f %6.1f%% %9s %8s %9.3f %8.1f\n", first.c_str(),
                r.kind.c_str(), r.ms, 100.0 * r.share, gflop, tflops, r.mb, r.gbs);
  return line;
}

void row_json(JsonWriter& j, const ProfileRow& r, bool step) {
  j.begin_object();
  if (step) j.key("index").value(r.index).key("label").value(r.label);
  j.key("kind").value(r.kind);
  if (!step) j.key("steps").value(r.steps);
  j.key("ms").value(r.ms).key("share").value(r.share);
  j.key("flops").value(static_cast<int64_t>(r.flops)).key("gflop").value(r.gflop).key("tflops").value(r.tflops);
  j.key("bytes").value(static_cast<int64_t>(r.bytes)).key("mb").value(r.mb).key("gbs").value(r.gbs);
  j.end_object();
}

}  // namespace

ProfileReport build_profile_report(const std::vector<ProfileStepInfo>& steps,
                                   const std::vector<std::vector<float>>& samples) {
  ProfileReport report;
  report.iterations = static_cast<int>(samples.size());
  std::map<std::string, ProfileRow> kinds;
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<double> ms;
    for (const auto& it : samples)
      if (s < it.size()) ms.push_back(it[s]);
    ProfileRow r;
    r.index = static_cast<int>(s);
    r.label = steps[s].label;
    r.kind = steps[s].kind;
    r.flops = steps[s].flops;
    r.bytes = steps[s].bytes;
    r.ms = median(ms);
    report.total_ms += r.ms;
    report.steps.push_back(r);
    ProfileRow& k = kinds[r.kind];
    if (k.kind.empty()) {
      k.kind = r.kind;
      k.steps = 0;
    }
    ++k.steps;
    k.ms += r.ms;
    k.flops += r.flops;
    k.bytes += r.bytes;
  }
  for (ProfileRow& r : report.steps) fill_rates(r, report.total_ms);
  for (auto& [name, k] : kinds) {
    fill_rates(k, report.total_ms);
    report.by_kind.push_back(k);
  }
  std::stable_sort(report.by_kind.begin(), report.by_kind.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.ms > b.ms; });
  return report;
}

std::string format_profile_table(const ProfileReport& report, const std::string& prefix, int top) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "profile %s: %zu steps, %d iterations, total %.4f ms (sum of per-step medians)\n",
                escape_for_message(prefix, 64).c_str(), report.steps.size(), report.iterations,
                report.total_ms);
  out += line;
  std::vector<ProfileRow> by_time = report.steps;
  std::stable_sort(by_time.begin(), by_time.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.ms > b.ms; });
  size_t shown = std::min(by_time.size(), static_cast<size_t>(std::max(top, 0)));
  std::snprintf(line, sizeof line, "top %zu of %zu steps by time:\n", shown, by_time.size());
  out += line;
  std::snprintf(line, sizeof line, "%5s  %-40s %-7s %9s %7s %9s %8s %9s %8s\n", "#", "step", "kind", "ms",
                "share", "GFLOP", "TFLOP/s", "MB", "GB/s");
  out += line;
  for (size_t i = 0; i < shown; ++i) {
    const ProfileRow& r = by_time[i];
    std::snprintf(line, sizeof line, "%5d  %-40s", r.index, escape_for_message(r.label, 40).c_str());
    out += row_text(r, line);
  }
  out += "by kind:\n";
  std::snprintf(line, sizeof line, "%5s  %-40s %-7s %9s %7s %9s %8s %9s %8s\n", "steps", "", "kind", "ms",
                "share", "GFLOP", "TFLOP/s", "MB", "GB/s");
  out += line;
  for (const ProfileRow& k : report.by_kind) {
    std::snprintf(line, sizeof line, "%5d  %-40s", k.steps, "");
    out += row_text(k, line);
  }
  return out;
}

void write_profile_json(JsonWriter& j, const ProfileReport& report, const std::string& library,
                        const std::string& prefix) {
  j.begin_object();
  j.key("library").value(library).key("prefix").value(prefix);
  j.key("iterations").value(report.iterations).key("total_ms").value(report.total_ms);
  j.key("steps").begin_array();
  for (const ProfileRow& r : report.steps) row_json(j, r, true);
  j.end_array();
  j.key("by_kind").begin_array();
  for (const ProfileRow& k : report.by_kind) row_json(j, k, false);
  j.end_array();
  j.end_object();
}

}  // namespace aotc
