// A Jetson library built on this x86 machine: device code for sm_87 from nvcc, host code from
// Debian's aarch64 cross compiler. Running it needs a Jetson; here we check that the .so is an
// aarch64 ELF whose only NEEDED entries are the C library's (no CUDA library at link time).
#include <gtest/gtest.h>

#include <cstdint>

#include "codegen/codegen.h"
#include "codegen_test_util.h"

namespace aotc {
namespace {
namespace fs = std::filesystem;

constexpr uint16_t kElfMachineAarch64 = 183;  // EM_AARCH64

TEST(CrossCompile, Aarch64HostCodeWithSm87DeviceCode) {
  const std::string cross_cc = "aarch64-linux-gnu-gcc";
  if (!test::tool_runs(cross_cc)) GTEST_SKIP() << "no " << cross_cc << " (apt-get install gcc-aarch64-linux-gnu)";
  if (!test::tool_runs(test::find_nvcc())) GTEST_SKIP() << "no nvcc";
  fs::path dir = fs::temp_directory_path() / ("aotc-cross-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Graph g = test::relu_sigmoid_graph({3, 5});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = test::linear_plan(g);
  CodegenOptions o;
  o.output_path = (dir / "libjetson.so").string();
  o.name = "jetson";
  o.nvcc = test::find_nvcc();
  o.archs = {"sm_87"};
  o.host_cc = cross_cc;
  o.aotc_version = "test";
  auto stats = compile_library(g, plan, o);
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();

  std::string elf = test::read_file(dir / "libjetson.so");
  ASSERT_GT(elf.size(), 20u);
  ASSERT_EQ(elf.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(static_cast<unsigned char>(elf[4]), 2u) << "expected a 64-bit ELF";
  uint16_t machine = static_cast<uint16_t>(static_cast<unsigned char>(elf[18]) |
                                           (static_cast<unsigned char>(elf[19]) << 8));
  EXPECT_EQ(machine, kElfMachineAarch64);

  auto re = run_process({"readelf", "-d", (dir / "libjetson.so").string()});
  ASSERT_TRUE(re.is_ok());
  std::istringstream lines(re->output);
  std::string line;
  int needed = 0;
  while (std::getline(lines, line)) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    ++needed;
    EXPECT_TRUE(line.find("libc.so") != std::string::npos || line.find("ld-linux") != std::string::npos)
        << "unexpected dependency: " << line;
  }
  EXPECT_GE(needed, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aotc
