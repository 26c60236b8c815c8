// The ONNX backend node tests of this area's ops (Conv, Gemm, MatMul, BatchNormalization,
// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool), run through the frontend and the CPU
// reference evaluator with the project tolerances. Training-mode BatchNormalization tests must be
// refused with a clear error instead. Skipped when the test data is not installed.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "frontend/onnx_loader.h"
#include "frontend/tensor_file.h"
#include "ir/evaluator.h"
#include "tests/ops_compute/test_util.h"

namespace aotc {
namespace {

const char* const kPrefixes[] = {"test_averagepool_", "test_basic_conv_", "test_conv_with_", "test_batchnorm_",
                                 "test_gemm_",        "test_globalaveragepool", "test_globalmaxpool", "test_matmul_",
                                 "test_maxpool_"};

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) out.push_back(e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::vector<std::string> node_tests() {
  std::vector<std::string> out;
  for (const std::string& name : list_dir(AOTC_ONNX_NODE_TEST_DIR))
    for (const char* p : kPrefixes)
      if (name.rfind(p, 0) == 0) out.push_back(name);
  return out;
}

// The global pooling tests are opset-1 models, which the frontend refuses (it supports opset 7
// and newer); GlobalAveragePool / GlobalMaxPool have not changed since opset 1, so for them the
// same one-node graph is built here and the test data still checks the reference.
Expected<Graph> graph_for(const std::string& name, const std::string& dir) {
  auto graph = load_onnx_model(dir + "/model.onnx");
  if (graph || graph.status().message().find("opset 1;") == std::string::npos) return graph;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    std::string lower = op;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (name.rfind("test_" + lower, 0) != 0) continue;
    auto x = load_tensor_pb(dir + "/test_data_set_0/input_0.pb");
    if (!x) return x.status();
    testing_util::OneNode g = testing_util::one_node(op, {{"x", x->shape()}}, {}, 1, x->dtype());
    Status s = infer_shapes(g.graph);
    if (!s.is_ok()) return s;
    return g.graph;
  }
  return graph;
}

// Runs every data set of one test; returns "" on success or the first problem.
std::string run_node_test(const std::string& name) {
  const std::string dir = std::string(AOTC_ONNX_NODE_TEST_DIR) + "/" + name;
  auto graph = graph_for(name, dir);
  if (!graph) return "load: " + graph.status().message();
  int sets = 0;
  for (int s = 0; exists(dir + "/test_data_set_" + std::to_string(s)); ++s, ++sets) {
    const std::string set = dir + "/test_data_set_" + std::to_string(s);
    std::vector<Tensor> inputs, expected;
    for (size_t i = 0; i < graph->inputs.size(); ++i) {
      auto t = load_tensor_pb(set + "/input_" + std::to_string(i) + ".pb");
      if (!t) return "input: " + t.status().message();
      inputs.push_back(*t);
    }
    for (size_t i = 0; i < graph->outputs.size(); ++i) {
      auto t = load_tensor_pb(set + "/output_" + std::to_string(i) + ".pb");
      if (!t) return "output: " + t.status().message();
      expected.push_back(*t);
    }
    auto got = evaluate_graph(*graph, inputs);
    if (!got) return "evaluate: " + got.status().message();
    for (size_t i = 0; i < expected.size(); ++i) {
      auto close = testing_util::tensors_close(got.value()[i], expected[i]);
      if (!close) return "data set " + std::to_string(s) + " output " + std::to_string(i) + ": " + close.message();
    }
  }
  if (sets == 0) return "no test data sets";
  return "";
}

TEST(OnnxNodeTests, ReferencePassesEveryTestOfTheseOps) {
  std::vector<std::string> tests = node_tests();
  if (tests.empty()) GTEST_SKIP() << "ONNX node test data not found at " << AOTC_ONNX_NODE_TEST_DIR;
  int passed = 0, refused = 0;
  for (const std::string& name : tests) {
    std::string problem = run_node_test(name);
    if (name.find("training_mode") != std::string::npos) {
      // Inference only: the import must fail and say why.
      EXPECT_NE(problem.find("training"), std::string::npos) << name << ": " << (problem.empty() ? "accepted" : problem);
      ++refused;
      continue;
    }
    EXPECT_EQ(problem, "") << name;
    passed += problem.empty();
  }
  std::printf("node tests: %d passed, %d refused as training-mode, of %zu\n", passed, refused, tests.size());
  EXPECT_GE(tests.size(), 50u);  // the set this suite was written against has 57
}

}  // namespace
}  // namespace aotc
