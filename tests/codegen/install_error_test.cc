// compile_library with an output folder that does not exist: the build succeeds up to installing
// the header and the .so, and the error must name the path and the real reason (it used to say
// "cannot write /tmp/nodir/q.h: Success": the cleanup overwrote the error code).
#include <gtest/gtest.h>

#include <unistd.h>

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

}  // namespace
}  // namespace aotc
