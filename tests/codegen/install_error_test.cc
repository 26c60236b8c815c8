// compile_library with an output folder that does not exist: the build succeeds up to installing
// the header and the .so, and the error must name the path and the real reason (it used to say
// "cannot write /tmp/nodir/q.h: Success": the cleanup overwrote the error code).
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "codegen/codegen.h"
#include "codegen_test_util.h"

namespace aotc {
namespace {
namespace fs = std::filesystem;

TEST(LibraryInstall, MissingOutputFolderGivesTheRealReason) {
  if (!test::tool_runs(test::find_nvcc()) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
  Graph g = test::relu_sigmoid_graph({4});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = test::linear_plan(g);
  const fs::path missing = fs::temp_directory_path() / ("aotc-nodir-" + std::to_string(getpid()));
  fs::remove_all(missing);
  CodegenOptions o;
  o.output_path = (missing / "libq.so").string();
  o.nvcc = test::find_nvcc();
  o.archs = {"sm_90"};
  auto r = compile_library(g, plan, o);
  ASSERT_FALSE(r.is_ok());
  const std::string m = r.status().message();
  EXPECT_NE(m.find("cannot write " + (missing / "q.h").string()), std::string::npos) << m;
  EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;
  EXPECT_EQ(m.find("Success"), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(missing));
}

// The library cannot be installed (its path is a non-empty folder) after the header could be:
// the previous header must stay as it was (it used to be deleted; issue-10 probe).
TEST(LibraryInstall, FailedLibraryInstallKeepsThePreviousHeader) {
  if (!test::tool_runs(test::find_nvcc()) || !test::tool_runs("cc")) GTEST_SKIP() << "nvcc or cc not available";
  Graph g = test::relu_sigmoid_graph({4});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = test::linear_plan(g);
  const fs::path dir = fs::temp_directory_path() / ("aotc-keephdr-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "libq.so" / "occupied");
  {
    std::ofstream h(dir / "q.h");
    h << "previous header";
  }
  CodegenOptions o;
  o.output_path = (dir / "libq.so").string();
  o.nvcc = test::find_nvcc();
  o.archs = {"sm_90"};
  auto r = compile_library(g, plan, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("libq.so"), std::string::npos) << r.status().message();
  EXPECT_EQ(test::read_file(dir / "q.h"), "previous header");
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.path().filename() != "" ? 1 : 0;
  EXPECT_EQ(entries, 2u);  // q.h and the folder: no temp or backup files left
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aotc
