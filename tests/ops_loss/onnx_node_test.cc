// The ONNX backend node tests of the loss, Hardmax, OneHot, EyeLike, TopK and Scatter ops, run
// through the frontend and the CPU reference and compared with the expected outputs shipped with
// the test data (per-element tolerances). Inputs that decide shapes (TopK's K, OneHot's depth)
// are bound as constants of each data set, as the conformance runner does.
#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "tests/ops_basic/ops_test_util.h"

#ifdef AOTC_HAVE_FRONTEND
#include "frontend/onnx_loader.h"
#include "frontend/tensor_file.h"
#endif

namespace aotc {
namespace {

const char* const kPrefixes[] = {"test_nllloss_", "test_sce_",  "test_hardmax_", "test_onehot_",
                                 "test_eyelike_", "test_top_k", "test_scatter_elements_", "test_scatter_with",
                                 "test_scatter_without"};

// The _expanded forms use only other ops (and NegativeLogLikelihoodLoss for the sce ones): they
// run here too, since they exercise this file's ops inside the function bodies.
bool excluded(const std::string&, std::string*) { return false; }

std::vector<std::string> node_test_names() {
  std::vector<std::string> names;
  DIR* dir = opendir(AOTC_ONNX_NODE_TEST_DIR);
  if (!dir) return names;
  while (dirent* e = readdir(dir)) {
    std::string n = e->d_name;
    for (const char* p : kPrefixes)
      if (n.rfind(p, 0) == 0) {
        names.push_back(n);
        break;  // "test_scatter_with" is also a prefix of "test_scatter_without"
      }
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

class LossNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LossNodeTest, MatchesExpectedOutputs) {
  const std::string name = GetParam();
  std::string why;
  if (excluded(name, &why)) GTEST_SKIP() << name << ": " << why;
#ifndef AOTC_HAVE_FRONTEND
  GTEST_SKIP() << "frontend not built";
#else
  const std::string dir = std::string(AOTC_ONNX_NODE_TEST_DIR) + "/" + name;
  int sets = 0;
  for (int s = 0; file_exists(dir + "/test_data_set_" + std::to_string(s) + "/output_0.pb"); ++s, ++sets) {
    const std::string set_dir = dir + "/test_data_set_" + std::to_string(s);
    std::map<std::string, Tensor> data;
    for (int i = 0; file_exists(set_dir + "/input_" + std::to_string(i) + ".pb"); ++i) {
      std::string input_name;
      Expected<Tensor> t = load_tensor_pb(set_dir + "/input_" + std::to_string(i) + ".pb", &input_name);
      ASSERT_TRUE(t.is_ok()) << t.status().message();
      data[input_name] = *t;
    }
    Expected<Graph> g = load_onnx_model(dir + "/model.onnx");
    if (!g.is_ok() && g.status().message().find("must be a constant") != std::string::npos) {
      // Static shapes: small integer inputs and scalars that decide shapes or are compiled into
      // kernels (starts, axes, pads, repeats, Range's bounds, CumSum's axis, k...) are bound as
      // constants of this data set, as the conformance runner does.
      ImportOptions options;
      for (const auto& kv : data)
        if ((dtype_is_integer(kv.second.dtype()) && kv.second.numel() <= 16) || kv.second.numel() == 1)
          options.constant_inputs[kv.first] = kv.second;
      g = load_onnx_model(dir + "/model.onnx", options);
    }
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    std::vector<Tensor> inputs;
    for (ValueId id : g->inputs) {
      auto it = data.find(g->value(id).name);
      ASSERT_NE(it, data.end()) << "no test data for input " << g->value(id).name;
      inputs.push_back(it->second);
    }
    auto out = evaluate_graph(*g, inputs);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    ASSERT_EQ(out->size(), g->outputs.size());
    for (size_t i = 0; i < out->size(); ++i) {
      Expected<Tensor> want = load_tensor_pb(set_dir + "/output_" + std::to_string(i) + ".pb");
      ASSERT_TRUE(want.is_ok()) << want.status().message();
      std::string mismatch = test::compare_tensors((*out)[i], *want);
      EXPECT_TRUE(mismatch.empty()) << name << " set " << s << " output " << i << ": " << mismatch;
    }
  }
  EXPECT_GT(sets, 0) << "no test data sets in " << dir;
#endif
}

INSTANTIATE_TEST_SUITE_P(Node, LossNodeTest, ::testing::ValuesIn(node_test_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(LossNodeTests, DataIsPresent) {
  EXPECT_GE(node_test_names().size(), 127u) << "ONNX node test data missing at " << AOTC_ONNX_NODE_TEST_DIR;
}

}  // namespace
}  // namespace aotc
