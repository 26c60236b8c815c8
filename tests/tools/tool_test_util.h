// Helpers for the end-to-end tool tests: run a program with its output captured, and write small
// ONNX models built with the ONNX protobuf classes (independent of aotc's own frontend).
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace aotc_test {

struct ProgramResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs argv through /bin/sh with every argument quoted; stdout and stderr go to files in `dir`.
inline ProgramResult run_program(const std::vector<std::string>& argv, const std::string& dir) {
  std::string cmd;
  for (const auto& a : argv) cmd += shell_quote(a) + " ";
  cmd += "> " + shell_quote(dir + "/stdout.txt") + " 2> " + shell_quote(dir + "/stderr.txt") + " < /dev/null";
  int status = std::system(cmd.c_str());
  ProgramResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = read_file(dir + "/stdout.txt");
  r.err = read_file(dir + "/stderr.txt");
  return r;
}

inline int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// A fresh empty directory under the test temp dir, removed when the test process exits.
inline std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/aotc_tools_" + name + "_" + std::to_string(::getpid());
  std::system(("rm -rf " + shell_quote(dir) + " && mkdir -p " + shell_quote(dir)).c_str());
  struct Cleanup {
    std::vector<std::string> dirs;
    ~Cleanup() {
      for (const std::string& d : dirs) std::system(("rm -rf " + shell_quote(d)).c_str());
    }
  };
  static Cleanup cleanup;
  cleanup.dirs.push_back(dir);
  return dir;
}

inline void add_float_io(onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

// x (float 1x4) -> op_types[0] -> ... -> y, one node per op type, named node_names[i].
inline onnx::ModelProto chain_model(const std::vector<std::string>& op_types,
                                    const std::vector<std::string>& node_names) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("aotc tools test");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("chain");
  add_float_io(g->add_input(), "x", {1, 4});
  std::string prev = "x";
  for (size_t i = 0; i < op_types.size(); ++i) {
    auto* n = g->add_node();
    n->set_op_type(op_types[i]);
    n->set_name(node_names[i]);
    n->add_input(prev);
    prev = (i + 1 == op_types.size()) ? "y" : "t" + std::to_string(i);
    n->add_output(prev);
  }
  add_float_io(g->add_output(), "y", {1, 4});
  return m;
}

// x (float 1x4) read by one node per op type, each output a graph output y0, y1, ...
inline onnx::ModelProto fan_model(const std::vector<std::string>& op_types,
                                  const std::vector<std::string>& node_names) {
  onnx::ModelProto m = chain_model({}, {});
  auto* g = m.mutable_graph();
  g->clear_output();
  for (size_t i = 0; i < op_types.size(); ++i) {
    auto* n = g->add_node();
    n->set_op_type(op_types[i]);
    n->set_name(node_names[i]);
    n->add_input("x");
    n->add_output("y" + std::to_string(i));
    add_float_io(g->add_output(), "y" + std::to_string(i), {1, 4});
  }
  return m;
}

inline void write_model(const onnx::ModelProto& m, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
}

}  // namespace aotc_test
