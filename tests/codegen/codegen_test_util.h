// Shared helpers for the codegen tests: small graphs built in C++, a trivial linear memory plan
// (independent of opt/memory_plan), tool discovery and GPU detection through the driver API.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "codegen/cutlass_dir.h"
#include "codegen/process.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "ir/target.h"
#include "ir/text_ir.h"
#include "opt/memory_plan.h"
#include "opt/passes.h"

namespace aotc {
namespace test {

// Every value that is not a graph input, output or constant gets its own 256-aligned slot.
inline MemoryPlan linear_plan(Graph& g) {
  MemoryPlan plan;
  int64_t offset = 0;
  for (size_t i = 0; i < g.values.size(); ++i) {
    Value& v = g.values[i];
    ValueId id = static_cast<ValueId>(i);
    if (v.is_constant() || g.is_graph_input(id) || g.is_graph_output(id) || !v.shape_known) continue;
    v.arena_offset = offset;
    offset += (v.byte_size() + 255) / 256 * 256;
  }
  plan.arena_bytes = offset;
  plan.linear_bytes = offset;
  plan.scratch_offset.assign(g.nodes.size(), -1);
  return plan;
}

// A MatMul (+ bias, activation, residual) graph in text IR as the passes leave it: opset 20,
// shapes inferred, the target of `archs`, matmul_to_gemm and fuse_epilogue run (one aotc.FusedGemm).
inline Expected<Graph> fused_gemm_graph(const std::string& text, const std::vector<std::string>& archs) {
  auto g = parse_text_ir(text);
  if (!g) return g;
  g->opset = 20;
  AOTC_RETURN_IF_ERROR(infer_shapes(*g));
  g->target = target_from_archs(archs);
  for (auto pass : {matmul_to_gemm, fuse_epilogue}) {
    auto changed = pass(*g);
    if (!changed) return changed.status();
  }
  return g;
}

// x -> Relu -> Sigmoid -> y with the given names (hostile ones in some tests).
inline Graph relu_sigmoid_graph(const Shape& shape, const std::string& x_name = "x",
                                const std::string& mid_name = "r", const std::string& y_name = "y",
                                const std::string& relu_node = "relu",
                                const std::string& sigmoid_node = "sigmoid") {
  Graph g;
  g.name = "relu_sigmoid";
  g.opset = 17;
  ValueId x = g.add_value(x_name, DType::kFloat32, shape, true);
  ValueId r = g.add_value(mid_name);
  ValueId y = g.add_value(y_name);
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(Node{relu_node, "Relu", "", {x}, {r}, {}});
  g.nodes.push_back(Node{sigmoid_node, "Sigmoid", "", {r}, {y}, {}});
  return g;
}

// The default ops plus one test op `test.<op_type>` (float output of input 0's shape, lowered by
// `lower`) registered in `reg`, and the graph x[4] -> <op_type> (node `node_name`) -> y, inferred.
inline Expected<Graph> one_test_op_graph(OpRegistry& reg, const std::string& op_type,
                                         Expected<Lowering> (*lower)(const Node&, const Graph&),
                                         const std::string& node_name) {
  register_all_ops(reg);
  OpDef def;
  def.op_type = op_type;
  def.domain = "test";
  def.infer = [](Node& n, Graph& g) -> Status {
    Value& out = g.value(n.outputs[0]);
    out.dtype = DType::kFloat32;
    out.shape = g.value(n.inputs[0]).shape;
    out.shape_known = true;
    return Status::ok();
  };
  def.reference = [](const Node&, const std::vector<const Tensor*>&, std::vector<Tensor>&) {
    return Status::ok();
  };
  def.lower = lower;
  reg.add(def);
  Graph g;
  ValueId x = g.add_value("x", DType::kFloat32, {4}, true);
  ValueId y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(Node{node_name, op_type, "test", {x}, {y}, {}});
  AOTC_RETURN_IF_ERROR(infer_shapes(g, reg));
  return g;
}

// Removes `dir` when the test process exits normally: for a directory that a function-local
// static builds once and every test of the process reads (each CTest test is its own process, so
// without this every test left one directory behind in /tmp).
inline void remove_at_exit(const std::filesystem::path& dir) {
  struct Cleanup {
    std::vector<std::filesystem::path> dirs;
    ~Cleanup() {
      for (const std::filesystem::path& d : dirs) {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    }
  };
  static Cleanup cleanup;
  cleanup.dirs.push_back(dir);
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string find_nvcc() {
  const char* home = std::getenv("CUDA_HOME");
  for (std::string dir : {home ? std::string(home) : std::string(), std::string("/usr/local/cuda")})
    if (!dir.empty() && std::filesystem::exists(dir + "/bin/nvcc")) return dir + "/bin/nvcc";
  return "nvcc";
}

inline bool tool_runs(const std::string& tool) {
  auto r = run_process({tool, "--version"});
  return r.is_ok() && r->exit_code == 0;
}

// Why a test that compiles CUTLASS kernels cannot run here (nvcc or cc missing, no CUTLASS
// headers), or "" with `include` set to the headers' folder. AOTC_REQUIRE_CUTLASS_BUILD skips.
inline std::string cutlass_build_unavailable(std::string* include) {
  if (!tool_runs(find_nvcc()) || !tool_runs("cc")) return "nvcc or cc not available";
  auto dir = find_cutlass_include_dir("");
  if (!dir.is_ok() || dir->empty()) return "CUTLASS headers not found (pip install nvidia-cutlass, or CUTLASS_DIR)";
  *include = *dir;
  return "";
}

// A usable CUDA GPU: libcuda.so.1 loads, cuInit succeeds and at least one device exists.
inline bool have_gpu(std::string* why) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    *why = "libcuda.so.1 not found";
    return false;
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count_fn = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  int count = 0;
  if (!init || !count_fn || init(0) != 0 || count_fn(&count) != 0 || count == 0) {
    *why = "cuInit failed or no device";
    return false;
  }
  return true;
}

}  // namespace test

// In a test body: declares std::string `include` (the CUTLASS headers) or skips with the reason.
#define AOTC_REQUIRE_CUTLASS_BUILD(include)                                                            \
  std::string include;                                                                                 \
  if (const std::string aotc_why = ::aotc::test::cutlass_build_unavailable(&include); !aotc_why.empty()) \
  GTEST_SKIP() << aotc_why
}  // namespace aotc
