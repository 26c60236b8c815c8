// End-to-end tests of aotc-run against a hand-written library with the generated ABI
// (fake_abi_library.c): introspection without a GPU, clear errors, and on a GPU the run, the
// comparison verdicts (exit 0 / 1), the 0xFF poison catching unwritten outputs, and --bench.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/tools/tool_test_util.h"
#include "tools/cuda_driver.h"

namespace {

using aotc_test::count_lines;
using aotc_test::file_exists;
using aotc_test::fresh_dir;
using aotc_test::read_file;
using aotc_test::run_program;

const std::string kRun = AOTC_RUN_BINARY;
const std::string kFake = AOTC_FAKE_LIBRARY;  // exports prefixes fake_identity and fake_half

// A NumPy .npy (format 1.0) of float32 [2, 3], written by hand from the format description.
void write_npy_2x3(const std::string& path, const float (&v)[6]) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(v), sizeof(v));
  std::ofstream(path, std::ios::binary) << bytes;
}

bool have_gpu() { return aotc::load_cuda_driver(0).is_ok(); }

TEST(AotcRun, InfoNeedsNoGpu) {
  std::string dir = fresh_dir("run_info");
  auto r = run_program({kRun, kFake, "--info"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("input  'x': float[2x3] (24 bytes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output 'y': float[2x3] (24 bytes)"), std::string::npos) << r.out;
  auto half = run_program({kRun, kFake, "--name", "fake_half", "--info"}, dir);
  EXPECT_EQ(half.exit_code, 0) << half.err;
}

TEST(AotcRun, ErrorsAreOneLineExit2) {
  std::string dir = fresh_dir("run_errors");
  std::string text = dir + "/libnotalib.so";
  std::ofstream(text) << "not an ELF file";
  std::string in = dir + "/x.npy";
  write_npy_2x3(in, {1, 2, 3, 4, 5, 6});
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {kRun},
           {kRun, dir + "/libmissing.so"},
           {kRun, text},
           {kRun, kFake, "--name", "wrong_prefix", "--info"},
           {kRun, kFake, "--input", "nosuch=" + in},
           {kRun, kFake, "--input", "x=" + dir + "/missing.npy"},
           {kRun, kFake, in, in},
           {kRun, kFake, "--bench", "-3"}}) {
    auto r = run_program(args, dir);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("aotc-run: error: ", 0), 0u) << r.err;
  }
  auto wrong = run_program({kRun, kFake, "--name", "wrong_prefix", "--info"}, dir);
  EXPECT_NE(wrong.err.find("--name"), std::string::npos) << wrong.err;
}

// A library without the optional profiling extension (older aotc): one line, exit 2, before any
// GPU is needed.
TEST(AotcRun, ProfileNeedsTheExtension) {
  std::string dir = fresh_dir("run_noprofile");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {kRun, kFake, "--profile"},
           {kRun, kFake, "--name", "fake_half", "--profile-json", dir + "/p.json"}}) {
    auto r = run_program(args, dir);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("aotc-run: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("no profiling extension"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("_profile_run"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(file_exists(dir + "/p.json"));
  auto bad = run_program({kRun, kFake, "--name", "fake_profiled", "--profile-iters", "0"}, dir);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  if (have_gpu()) return;
  // With the extension, the next thing missing here is the GPU.
  auto nogpu = run_program({kRun, kFake, "--name", "fake_profiled", "--profile"}, dir);
  EXPECT_EQ(nogpu.exit_code, 2);
  EXPECT_NE(nogpu.err.find("no CUDA GPU"), std::string::npos) << nogpu.err;
}

TEST(AotcRun, ProfilePrintsTableAndWritesJson) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU: aotc-run needs one to profile a library";
  std::string dir = fresh_dir("run_profile");
  auto r = run_program({kRun, kFake, "--name", "fake_profiled", "--profile", "--profile-iters", "5",
                        "--profile-json", dir + "/p.json"},
                       dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("profile fake_profiled: 2 steps, 5 iterations, total 1.0000 ms"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("k0_identity"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 75.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("by kind:"), std::string::npos) << r.out;
  std::string json = read_file(dir + "/p.json");
  EXPECT_NE(json.find("\"total_ms\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"copy0_output_0\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"tflops\""), std::string::npos) << json;
}

TEST(AotcRun, WithoutGpuSaysSo) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present; this test covers machines without one";
  std::string dir = fresh_dir("run_nogpu");
  auto r = run_program({kRun, kFake}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no CUDA GPU"), std::string::npos) << r.err;
}

TEST(AotcRun, IdentityPassesAndMismatchFails) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU: aotc-run needs one to run a library";
  std::string dir = fresh_dir("run_gpu");
  const float x[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 7.0f};
  float off[6];
  std::memcpy(off, x, sizeof(x));
  off[4] += 1e-3f;  // far outside 1e-5 + 1e-4 * 0.5
  write_npy_2x3(dir + "/x.npy", x);
  write_npy_2x3(dir + "/off.npy", off);
  auto pass = run_program({kRun, kFake, "--input", "x=" + dir + "/x.npy", "--expect", dir + "/x.npy",
                           "--output-dir", dir + "/out", "--bench", "5", "--warmup", "2", "--json",
                           dir + "/r.json"},
                          dir);
  EXPECT_EQ(pass.exit_code, 0) << pass.out << pass.err;
  EXPECT_NE(pass.out.find("median"), std::string::npos) << pass.out;
  ASSERT_TRUE(file_exists(dir + "/out/output_0.pb"));
  std::string npy = read_file(dir + "/out/output_0.npy");
  ASSERT_GE(npy.size(), sizeof(x));
  EXPECT_EQ(std::memcmp(npy.data() + npy.size() - sizeof(x), x, sizeof(x)), 0);
  std::string json = read_file(dir + "/r.json");
  EXPECT_NE(json.find("\"median_ms\""), std::string::npos);
  EXPECT_NE(json.find("\"p99_ms\""), std::string::npos);

  auto mismatch = run_program({kRun, kFake, dir + "/x.npy", "--expect", dir + "/off.npy"}, dir);
  EXPECT_EQ(mismatch.exit_code, 1) << mismatch.out << mismatch.err;
  EXPECT_NE(mismatch.out.find("FAIL"), std::string::npos);
  // Loosened on purpose by the caller: then it passes.
  auto loose = run_program({kRun, kFake, dir + "/x.npy", "--expect", dir + "/off.npy", "--atol", "1e-2"}, dir);
  EXPECT_EQ(loose.exit_code, 0) << loose.out << loose.err;
}

TEST(AotcRun, PoisonRevealsUnwrittenOutput) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU: aotc-run needs one to run a library";
  std::string dir = fresh_dir("run_poison");
  const float x[6] = {1, 2, 3, 4, 5, 6};
  write_npy_2x3(dir + "/x.npy", x);
  // fake_half copies only the first 3 elements; the rest keep the 0xFF poison (NaN).
  auto r = run_program({kRun, kFake, "--name", "fake_half", dir + "/x.npy", "--expect", dir + "/x.npy"}, dir);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
}

}  // namespace
