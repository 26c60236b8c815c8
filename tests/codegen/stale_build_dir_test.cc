// A build folder left by a killed aotc (aotc-build-<pid>-XXXXXX of a process that is gone) holds
// the model's sources and weights; the next compile removes it. Folders of live processes, other
// users' names and unrelated entries stay.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/codegen.h"
#include "codegen_test_util.h"

namespace aotc {
namespace {
namespace fs = std::filesystem;

pid_t dead_pid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;  // reaped: no such process any more
}

TEST(StaleBuildDirs, LeftoversOfDeadProcessesAreRemovedByTheNextCompile) {
  if (!test::tool_runs("cc")) GTEST_SKIP() << "no host compiler";
  const fs::path tmp = fs::temp_directory_path() / ("aotc-stale-test-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string saved = old_tmpdir ? old_tmpdir : "";
  setenv("TMPDIR", tmp.c_str(), 1);
  const fs::path stale = tmp / ("aotc-build-" + std::to_string(dead_pid()) + "-abc123");
  const fs::path live = tmp / ("aotc-build-" + std::to_string(getppid()) + "-def456");
  const fs::path other = tmp / "aotc-build-notapid-xyz";
  for (const fs::path& d : {stale, live, other}) {
    fs::create_directories(d);
    std::ofstream(d / "weights.bin") << "secret";
  }
  Graph g = test::relu_sigmoid_graph({2, 3});
  Status s = infer_shapes(g);
  ASSERT_TRUE(s.is_ok()) << s.message();
  CodegenOptions o;
  o.name = "stale";
  o.emit_source_dir = (tmp / "src").string();  // no nvcc needed: sources only
  o.aotc_version = "test";
  auto result = compile_library(g, test::linear_plan(g), o);
  if (old_tmpdir) setenv("TMPDIR", saved.c_str(), 1); else unsetenv("TMPDIR");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace aotc
