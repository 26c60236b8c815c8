// aotc-model-check's library (tools/model_check/model_check.h) on a model written here with the
// ONNX protobuf classes: y = x + c (c an initializer), batch dim symbolic. Expected outputs are
// computed by hand in the test; cases: a pass at two batch sizes bound from the data set's shapes,
// a reference off by more than the model metric, NaN positions that differ, unnamed inputs bound by
// position, a missing output file and an unsupported op (each must fail at the right stage).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "frontend/tensor_file.h"
#include "tools/model_check/model_check.h"

namespace aotc {
namespace {

const float kC[3] = {0.5f, -1.25f, 2.0f};

std::string make_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/model_check_" + name;
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

// model.onnx computing y = Op(x, c) with x: [batch, 3] float.
void write_model(const std::string& dir, const std::string& op = "Add") {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("add_const");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("add0");
  n->add_input("x");
  n->add_input("c");
  n->add_output("y");
  onnx::TensorProto* c = g->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(3);
  for (float v : kC) c->add_float_data(v);
  for (const char* name : {"x", "y"}) {
    onnx::ValueInfoProto* vi = std::string(name) == "x" ? g->add_input() : g->add_output();
    vi->set_name(name);
    onnx::TypeProto_Tensor* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    t->mutable_shape()->add_dim()->set_dim_value(3);
  }
  std::ofstream f(dir + "/model.onnx", std::ios::binary);
  ASSERT_TRUE(model.SerializeToOstream(&f));
}

// A data set of `batch` rows: x[i][j] = i - 0.5 j, expected y = x + c (by hand), `scale` applied to y.
std::string write_case(const std::string& dir, const std::string& name, int64_t batch, float scale = 1.0f,
                       bool named = true) {
  std::string d = dir + "/" + name;
  ::mkdir(d.c_str(), 0755);
  std::vector<float> x, y;
  for (int64_t i = 0; i < batch; ++i)
    for (int j = 0; j < 3; ++j) {
      x.push_back(static_cast<float>(i) - 0.5f * static_cast<float>(j));
      y.push_back((x.back() + kC[j]) * scale);
    }
  EXPECT_TRUE(save_tensor_pb(d + "/input_0.pb", Tensor::from_floats({batch, 3}, x), named ? "x" : "").is_ok());
  EXPECT_TRUE(save_tensor_pb(d + "/output_0.pb", Tensor::from_floats({batch, 3}, y), "y").is_ok());
  return d;
}

TEST(ModelCheck, PassesAtTwoBatchSizesAndLowers) {
  std::string dir = make_dir("pass");
  write_model(dir);
  write_case(dir, "test_data_set_bs1", 1);
  write_case(dir, "test_data_set_bs5", 5);
  std::vector<std::string> cases = find_case_dirs(dir);
  ASSERT_EQ(cases, (std::vector<std::string>{"test_data_set_bs1", "test_data_set_bs5"}));
  for (const std::string& c : cases) {
    ModelCheckOptions options;
    options.lower = true;
    ModelCheckResult r = check_model_case(dir + "/model.onnx", dir + "/" + c, options);
    EXPECT_TRUE(r.pass) << r.stage << ": " << r.error;
    EXPECT_EQ(r.stage, "done");
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].max_abs_error, 0.0);
    EXPECT_EQ(r.final_ops.count("Add"), 1u);
    EXPECT_TRUE(r.shape_ops_left.empty());
    EXPECT_GE(r.arena_bytes, 0);
    EXPECT_EQ(format_result_line("m", c, r).rfind("PASS m " + c + ":", 0), 0u);
  }
}

TEST(ModelCheck, FailsOnAReferenceOffByMoreThanTheMetric) {
  std::string dir = make_dir("off");
  write_model(dir);
  // 2e-4 relative everywhere: relative L2 2e-4 > 1e-4.
  std::string c = write_case(dir, "test_data_set_0", 4, 1.0002f);
  ModelCheckResult r = check_model_case(dir + "/model.onnx", c, {});
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.stage, "compare");
  EXPECT_NE(r.error.find("relative L2"), std::string::npos) << r.error;
  EXPECT_EQ(format_result_line("m", "test_data_set_0", r).rfind("FAIL ", 0), 0u);
  // 2e-5 relative passes (the metric, not exact equality, is the rule).
  std::string ok = write_case(dir, "test_data_set_1", 4, 1.00002f);
  EXPECT_TRUE(check_model_case(dir + "/model.onnx", ok, {}).pass);
}

TEST(ModelCheck, FailsWhenNanPositionsDiffer) {
  std::string dir = make_dir("nan");
  write_model(dir);
  std::string c = write_case(dir, "test_data_set_0", 2);
  Tensor y = *load_tensor_pb(c + "/output_0.pb");
  y.set(4, std::numeric_limits<double>::quiet_NaN());
  ASSERT_TRUE(save_tensor_pb(c + "/output_0.pb", y, "y").is_ok());
  ModelCheckResult r = check_model_case(dir + "/model.onnx", c, {});
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.error.find("NaN/Inf"), std::string::npos) << r.error;
}

TEST(ModelCheck, BindsUnnamedInputsByPosition) {
  std::string dir = make_dir("unnamed");
  write_model(dir);
  std::string c = write_case(dir, "test_data_set_0", 3, 1.0f, false);
  ModelCheckResult r = check_model_case(dir + "/model.onnx", c, {});
  EXPECT_TRUE(r.pass) << r.stage << ": " << r.error;
}

TEST(ModelCheck, ReportsTheFailingStage) {
  std::string dir = make_dir("stages");
  write_model(dir);
  std::string c = write_case(dir, "test_data_set_0", 1);
  std::remove((c + "/output_0.pb").c_str());
  ModelCheckResult missing = check_model_case(dir + "/model.onnx", c, {});
  EXPECT_FALSE(missing.pass);
  EXPECT_EQ(missing.stage, "inputs");

  std::string dir2 = make_dir("unsupported");
  write_model(dir2, "NoSuchOp");
  std::string c2 = write_case(dir2, "test_data_set_0", 1);
  ModelCheckResult r = check_model_case(dir2 + "/model.onnx", c2, {});
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.stage, "import");
  EXPECT_NE(r.error.find("NoSuchOp"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace aotc
