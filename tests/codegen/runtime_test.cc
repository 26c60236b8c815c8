// The runtime's C sources as they are embedded into aotc: they compile with -Wall -Wextra -Werror,
// the C copy of the library-kernel protocol agrees with templates/library_params.cuh, the
// library-kernel (builders, prebuilt params, tensor maps) and CUDA-graph logic behaves against a
// fake driver (runtime_fake_driver.c), and so do the misuse checks (runtime_checks_fake.c), all
// without a GPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "codegen/embedded_files.h"
#include "codegen/launch_program.h"
#include "codegen_test_util.h"

namespace aotc {
namespace {
namespace fs = std::filesystem;

// Writes every embedded runtime/* file and templates/library_params.cuh into a fresh directory.
fs::path write_runtime(const std::string& tag) {
  fs::path dir = fs::temp_directory_path() / ("aotc-runtime-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const EmbeddedFile& f : embedded_files()) {
    std::string path = f.path;
    if (path.rfind("runtime/", 0) == 0 || path == "templates/library_params.cuh")
      std::ofstream(dir / fs::path(path).filename(), std::ios::binary)
          .write(reinterpret_cast<const char*>(f.data), static_cast<std::streamsize>(f.size));
  }
  return dir;
}

std::vector<std::string> runtime_sources(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".c" && e.path().filename().string().rfind("aotc_rt_", 0) == 0)
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Runtime, FakeDriverLibraryKernelsAndGraphCache) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "cc not available";
  fs::path dir = write_runtime("fake");
  std::vector<std::string> argv = {"cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", dir.string(),
                                   std::string(AOTC_TEST_SOURCE_DIR) + "/runtime_fake_driver.c"};
  std::vector<std::string> sources = runtime_sources(dir);
  ASSERT_GE(sources.size(), 4u);  // driver, create, launch, graph
  argv.insert(argv.end(), sources.begin(), sources.end());
  for (const char* a : {"-ldl", "-o"}) argv.push_back(a);
  argv.push_back((dir / "fake_driver").string());
  auto cc = run_process(argv);
  ASSERT_TRUE(cc.is_ok());
  ASSERT_EQ(cc->exit_code, 0) << cc->output;
  auto run = run_process({(dir / "fake_driver").string()});
  ASSERT_TRUE(run.is_ok());
  EXPECT_EQ(run->exit_code, 0) << run->output;
  EXPECT_NE(run->output.find("ok"), std::string::npos) << run->output;
  fs::remove_all(dir);
}

// The misuse checks (runtime_checks_fake.c): live-handle registry, pointer checks once per set,
// sticky faults. Built twice: plainly, and with AddressSanitizer + UBSan, where a read of a
// destroyed handle is a report (the registry must answer before anything touches it).
void build_and_run_checks(const std::string& tag, const std::vector<std::string>& flags) {
  fs::path dir = write_runtime(tag);
  std::vector<std::string> argv = {"cc", "-std=c11", "-g", "-Wall", "-Wextra", "-Werror", "-I", dir.string()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(std::string(AOTC_TEST_SOURCE_DIR) + "/runtime_checks_fake.c");
  std::vector<std::string> sources = runtime_sources(dir);
  argv.insert(argv.end(), sources.begin(), sources.end());
  for (const char* a : {"-ldl", "-pthread", "-o"}) argv.push_back(a);
  argv.push_back((dir / "checks").string());
  auto cc = run_process(argv);
  ASSERT_TRUE(cc.is_ok());
  ASSERT_EQ(cc->exit_code, 0) << cc->output;
  auto run = run_process({(dir / "checks").string()});
  ASSERT_TRUE(run.is_ok());
  EXPECT_EQ(run->exit_code, 0) << run->output;
  EXPECT_NE(run->output.find("ok"), std::string::npos) << run->output;
  fs::remove_all(dir);
}

TEST(Runtime, FakeDriverMisuseChecks) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "cc not available";
  build_and_run_checks("checks", {});
}

TEST(Runtime, FakeDriverMisuseChecksUnderAddressSanitizer) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "cc not available";
  // Whether this cc links sanitized programs at all (libasan / libubsan installed).
  fs::path probe = fs::temp_directory_path() / ("aotc-asan-probe-" + std::to_string(getpid()));
  fs::create_directories(probe);
  std::ofstream(probe / "p.c") << "int main(void) { return 0; }\n";
  auto cc = run_process({"cc", "-fsanitize=address,undefined", (probe / "p.c").string(), "-o",
                         (probe / "p").string()});
  fs::remove_all(probe);
  if (!cc.is_ok() || cc->exit_code != 0) GTEST_SKIP() << "cc cannot link -fsanitize=address,undefined";
  build_and_run_checks("checks-asan", {"-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                                       "-fno-omit-frame-pointer"});
}

TEST(Runtime, ProtocolCopyMatchesLibraryParamsHeader) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "cc not available";
  fs::path dir = write_runtime("protocol");
  std::ofstream(dir / "protocol.c") << R"C(
#include <stddef.h>
#include "library_params.cuh"
#include "aotc_rt_internal.h"
#define SAME(a, b) _Static_assert((a) == (b), #a " != " #b)
SAME(AOTC_PARAMS_MAGIC, AOTC_RT_PARAMS_MAGIC);
SAME(AOTC_PARAMS_OFFSET, AOTC_RT_PARAMS_OFFSET);
SAME(AOTC_PARAMS_MAX_BYTES, AOTC_RT_PARAMS_MAX_BYTES);
SAME(AOTC_PARAMS_MAX_SLOTS, AOTC_RT_PARAMS_MAX_SLOTS);
SAME(AOTC_PARAMS_MAX_ARGS, AOTC_RT_PARAMS_MAX_ARGS);
SAME(AOTC_SLOT_UNUSED, AOTC_RT_SLOT_UNUSED);
SAME(sizeof(struct aotc_builder_args), sizeof(aotc_rt_builder_args));
SAME(sizeof(struct aotc_params_header), sizeof(aotc_rt_params_header));
#define FIELD(f) SAME(offsetof(struct aotc_params_header, f), offsetof(aotc_rt_params_header, f))
FIELD(magic); FIELD(params_bytes); FIELD(grid); FIELD(block); FIELD(shared_bytes);
FIELD(num_slots); FIELD(slot_offset); FIELD(status); FIELD(cluster_size);
int main(void) { return 0; }
)C";
  auto cc = run_process({"cc", "-std=c11", "-Wall", "-Werror", "-I", dir.string(),
                         (dir / "protocol.c").string(), "-o", (dir / "protocol").string()});
  ASSERT_TRUE(cc.is_ok());
  EXPECT_EQ(cc->exit_code, 0) << cc->output;
  fs::remove_all(dir);
}

// The codegen side of the same limits (launch_program.h) agrees with the header too.
TEST(Runtime, CodegenLimitsMatchLibraryParamsHeader) {
  const EmbeddedFile* f = find_embedded_file("templates/library_params.cuh");
  ASSERT_NE(f, nullptr);
  std::string text = f->text();
  EXPECT_NE(text.find("#define AOTC_PARAMS_MAX_SLOTS " + std::to_string(kLibraryMaxPointerArgs) + "\n"),
            std::string::npos);
  EXPECT_NE(text.find("#define AOTC_PARAMS_MAX_ARGS " + std::to_string(kLibraryMaxBuilderArgs) + "\n"),
            std::string::npos);
  EXPECT_NE(text.find("#define AOTC_PARAMS_OFFSET " + std::to_string(kLibraryParamsOffset) + "\n"), std::string::npos);
  EXPECT_NE(text.find("#define AOTC_PARAMS_MAX_BYTES " + std::to_string(kLibraryParamsMaxBytes) + " "),
            std::string::npos);
  char magic[32];
  std::snprintf(magic, sizeof magic, "0x%08xu", kLibraryParamsMagic);
  EXPECT_NE(text.find(std::string("#define AOTC_PARAMS_MAGIC ") + magic), std::string::npos);
}

}  // namespace
}  // namespace aotc
