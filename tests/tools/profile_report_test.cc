// aotc-run --profile's report, from made-up step tables and times (no GPU): medians per step over
// the iterations, shares of the total, GFLOP / TFLOP/s / MB / GB/s, the summary by kind, the table
// (top N by time, escaped labels, "-" without a FLOPs estimate) and the JSON fields.
#include <gtest/gtest.h>

#include "tools/profile_report.h"

namespace aotc {
namespace {

std::vector<ProfileStepInfo> steps() {
  return {{"k0_conv1", "kernel", 2000000000ULL, 4000000ULL},  // 2 GFLOP, 4 MB
          {"mm0_fc", "matmul", 1000000000ULL, 2000000ULL},
          {"k1_relu", "kernel", 0, 8000000ULL},
          {"copy0_output_0\n\"x", "copy", 0, 1000000ULL}};
}

// 3 iterations; step medians 1.0, 0.5, 0.4, 0.1 ms (the outliers do not count).
std::vector<std::vector<float>> samples() {
  return {{1.0f, 0.5f, 0.4f, 0.1f}, {9.0f, 0.4f, 0.4f, 0.1f}, {0.9f, 0.6f, 0.5f, 3.0f}};
}

TEST(ProfileReport, MediansSharesAndRates) {
  ProfileReport r = build_profile_report(steps(), samples());
  EXPECT_EQ(r.iterations, 3);
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_NEAR(r.steps[0].ms, 1.0, 1e-6);
  EXPECT_NEAR(r.steps[1].ms, 0.5, 1e-6);
  EXPECT_NEAR(r.steps[2].ms, 0.4, 1e-6);
  EXPECT_NEAR(r.steps[3].ms, 0.1, 1e-6);
  EXPECT_NEAR(r.total_ms, 2.0, 1e-6);
  EXPECT_NEAR(r.steps[0].share, 0.5, 1e-6);
  // 2 GFLOP in 1 ms = 2 TFLOP/s; 4 MB in 1 ms = 4 GB/s.
  EXPECT_NEAR(r.steps[0].gflop, 2.0, 1e-9);
  EXPECT_NEAR(r.steps[0].tflops, 2.0, 1e-5);
  EXPECT_NEAR(r.steps[0].mb, 4.0, 1e-9);
  EXPECT_NEAR(r.steps[0].gbs, 4.0, 1e-5);
  EXPECT_NEAR(r.steps[1].tflops, 2.0, 1e-5);  // 1 GFLOP in 0.5 ms
  EXPECT_EQ(r.steps[2].tflops, 0.0);
  EXPECT_NEAR(r.steps[2].gbs, 20.0, 1e-4);  // 8 MB in 0.4 ms
  // By kind, longest first: kernel (2 steps, 1.4 ms), matmul, copy.
  ASSERT_EQ(r.by_kind.size(), 3u);
  EXPECT_EQ(r.by_kind[0].kind, "kernel");
  EXPECT_EQ(r.by_kind[0].steps, 2);
  EXPECT_NEAR(r.by_kind[0].ms, 1.4, 1e-6);
  EXPECT_NEAR(r.by_kind[0].share, 0.7, 1e-6);
  EXPECT_EQ(r.by_kind[0].flops, 2000000000ULL);
  EXPECT_EQ(r.by_kind[0].bytes, 12000000ULL);
  EXPECT_EQ(r.by_kind[1].kind, "matmul");
  EXPECT_EQ(r.by_kind[2].kind, "copy");
}

TEST(ProfileReport, EvenIterationCountAveragesTheMiddleTwo) {
  ProfileReport r = build_profile_report({{"a", "kernel", 0, 0}}, {{1.0f}, {2.0f}, {3.0f}, {10.0f}});
  EXPECT_NEAR(r.steps[0].ms, 2.5, 1e-6);
  EXPECT_EQ(r.steps[0].gbs, 0.0);
}

TEST(ProfileReport, TableShowsTopStepsAndKinds) {
  ProfileReport r = build_profile_report(steps(), samples());
  std::string t = format_profile_table(r, "net", 2);
  EXPECT_NE(t.find("profile net: 4 steps, 3 iterations, total 2.0000 ms"), std::string::npos) << t;
  EXPECT_NE(t.find("top 2 of 4 steps by time"), std::string::npos) << t;
  for (const char* col : {"step", "kind", "ms", "share", "GFLOP", "TFLOP/s", "MB", "GB/s"})
    EXPECT_NE(t.find(col), std::string::npos) << col;
  EXPECT_NE(t.find("k0_conv1"), std::string::npos);
  EXPECT_NE(t.find("mm0_fc"), std::string::npos);
  EXPECT_EQ(t.find("k1_relu"), std::string::npos);  // third by time: not in the top 2
  EXPECT_NE(t.find(" 50.0%"), std::string::npos) << t;
  EXPECT_NE(t.find("by kind:"), std::string::npos);
  EXPECT_NE(t.find(" 70.0%"), std::string::npos) << t;
  // Every step: the hostile label is escaped (one line per row), rows without FLOPs show "-".
  std::string all = format_profile_table(r, "net", 100);
  EXPECT_EQ(all.find("copy0_output_0\n"), std::string::npos) << all;
  EXPECT_NE(all.find("copy0_output_0\\x0a"), std::string::npos) << all;
  size_t lines = 0;
  for (char c : all) lines += c == '\n';
  EXPECT_EQ(lines, 2u + 1u + 4u + 2u + 3u);
  size_t relu = all.find("k1_relu");
  ASSERT_NE(relu, std::string::npos);
  std::string relu_line = all.substr(relu, all.find('\n', relu) - relu);
  EXPECT_NE(relu_line.find(" - "), std::string::npos) << relu_line;
}

TEST(ProfileReport, JsonHasTheSameFields) {
  ProfileReport r = build_profile_report(steps(), samples());
  JsonWriter j;
  write_profile_json(j, r, "libnet.so", "net");
  const std::string& s = j.str();
  for (const char* key : {"\"library\"", "\"prefix\"", "\"iterations\"", "\"total_ms\"", "\"steps\"",
                          "\"by_kind\"", "\"index\"", "\"label\"", "\"kind\"", "\"ms\"", "\"share\"",
                          "\"flops\"", "\"gflop\"", "\"tflops\"", "\"bytes\"", "\"mb\"", "\"gbs\""})
    EXPECT_NE(s.find(key), std::string::npos) << key;
  EXPECT_NE(s.find("\"k0_conv1\""), std::string::npos);
  EXPECT_NE(s.find("copy0_output_0\\n\\\"x"), std::string::npos) << s;  // escaped, not dropped
}

}  // namespace
}  // namespace aotc
