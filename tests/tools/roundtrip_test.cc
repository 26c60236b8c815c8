// aotc and aotc-run together on ONNX backend node tests: compile model.onnx into a library (needs
// nvcc, present on CI and the GPU machine), check its signature with --info (no GPU), and on a GPU
// run it against the test's own expected outputs (test_data_set_0), an independent reference.
#include <gtest/gtest.h>

#include "tests/tools/tool_test_util.h"

namespace {

using aotc_test::file_exists;
using aotc_test::fresh_dir;
using aotc_test::run_program;

const std::string kAotc = AOTC_BINARY;
const std::string kRun = AOTC_RUN_BINARY;
const std::string kNodeTests = "/usr/include/onnx/backend/test/data/node";

class NodeTestRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(NodeTestRoundTrip, CompilesAndMatches) {
  std::string test_dir = kNodeTests + "/" + GetParam();
  if (!file_exists(test_dir + "/model.onnx")) GTEST_SKIP() << "no ONNX node test data at " << test_dir;
  std::string dir = fresh_dir(std::string("roundtrip_") + GetParam());
  std::string lib = dir + "/libnode.so";
  auto compiled = run_program({kAotc, test_dir + "/model.onnx", "-o", lib, "--quiet"}, dir);
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  ASSERT_TRUE(file_exists(lib));
  EXPECT_EQ(compiled.err, "");  // --quiet: no progress lines

  auto info = run_program({kRun, lib, "--info"}, dir);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("input  'x': float["), std::string::npos) << info.out;

  auto run = run_program({kRun, lib, "--expect-dir", test_dir + "/test_data_set_0"}, dir);
  if (run.exit_code == 2 && run.err.find("no CUDA GPU") != std::string::npos) {
    GTEST_SKIP() << "no CUDA GPU: the library was built; running it needs one";
  }
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("PASS"), std::string::npos) << run.out;
}

INSTANTIATE_TEST_SUITE_P(Ops, NodeTestRoundTrip, ::testing::Values("test_relu", "test_sigmoid", "test_add_bcast"));

}  // namespace
