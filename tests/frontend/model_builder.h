// Test helpers: build ONNX models in C++ with onnx::ModelProto and write them into a fresh
// temporary folder, so every loader test states its model in a few lines.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

namespace aotc::test {

// A fresh folder under the test temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "aotc_frontend_XXXXXX";
    char* made = ::mkdtemp(&tmpl[0]);
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model.set_ir_version(8);
    model.set_producer_name("aotc-frontend-test");
    auto* op = model.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    graph()->set_name("test_graph");
  }
  onnx::GraphProto* graph() { return model.mutable_graph(); }

  // Dims as text: "7" a fixed dim (may be negative, for malformed tests), "?" a dim with no
  // value, any other text a dim_param.
  onnx::ValueInfoProto* add_input(const std::string& name, int elem_type,
                                  const std::vector<std::string>& dims) {
    auto* vi = graph()->add_input();
    fill_value_info(vi, name, elem_type, dims);
    return vi;
  }
  onnx::ValueInfoProto* add_output(const std::string& name, int elem_type = onnx::TensorProto::FLOAT) {
    auto* vi = graph()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    return vi;
  }
  onnx::NodeProto* add_node(const std::string& op, const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  onnx::TensorProto* add_raw_float_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                               const std::vector<float>& values) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    return t;
  }
  onnx::TensorProto* add_initializer(const std::string& name, int data_type, const std::vector<int64_t>& dims) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(data_type);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  }

  std::string write(const TempDir& dir, const std::string& file = "model.onnx") const {
    std::string bytes;
    EXPECT_TRUE(model.SerializeToString(&bytes));
    write_bytes(dir.file(file), bytes);
    return dir.file(file);
  }

  static void fill_value_info(onnx::ValueInfoProto* vi, const std::string& name, int elem_type,
                              const std::vector<std::string>& dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (d == "?") continue;
      char* end = nullptr;
      long long v = std::strtoll(d.c_str(), &end, 10);
      if (!d.empty() && *end == '\0') dim->set_dim_value(v);
      else dim->set_dim_param(d);
    }
  }

  onnx::ModelProto model;
};

}  // namespace aotc::test
