// The GPU op-test harness: build a tiny Graph in C++, compile it to a .so through the same
// stages as aotc (pipeline, memory plan, codegen), run it on seeded random inputs through the C
// ABI and compare every output with the CPU reference evaluator on the unoptimised graph.
// Without a usable CUDA GPU each test skips with "no CUDA GPU: <why>".
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace aotc::gpu_test {

// Skip the current test when no GPU can run the libraries (call first in every test).
#define AOTC_REQUIRE_GPU()                                                  \
  do {                                                                      \
    std::string aotc_why_;                                                  \
    if (!::aotc::gpu_test::gpu_available(&aotc_why_)) {                     \
      GTEST_SKIP() << "no CUDA GPU: " << aotc_why_;                         \
    }                                                                       \
  } while (0)

// Probes once per process (dlopen libcuda.so.1, cuInit, device count).
bool gpu_available(std::string* why);
// The probed GPU's architecture as aotc's --arch spells it ("sm_90"); empty without a GPU.
std::string gpu_arch();

// Builds a graph node by node with seeded random weights.
class GraphBuilder {
 public:
  explicit GraphBuilder(uint64_t seed = 1) : rng_(seed) { graph_.opset = 17; }

  // A runtime input of the graph.
  ValueId input(const std::string& name, Shape shape, DType dtype = DType::kFloat32);
  // A constant (weight) with values uniform in [lo, hi).
  ValueId weight(const std::string& name, Shape shape, double lo = -1, double hi = 1,
                 DType dtype = DType::kFloat32);
  // A node with one output; returns the output value. `domain` "aotc" for internal ops.
  ValueId node(const std::string& op, std::vector<ValueId> inputs, Attributes attrs = {},
               const std::string& domain = "");
  // A node with `outputs` outputs (Split...); returns them in order.
  std::vector<ValueId> node_outputs(const std::string& op, std::vector<ValueId> inputs, int outputs,
                                    Attributes attrs = {});
  void output(ValueId v) { graph_.outputs.push_back(v); }
  Graph& graph() { return graph_; }

 private:
  Graph graph_;
  std::mt19937_64 rng_;
  int counter_ = 0;
};

struct CaseOptions {
  uint64_t seed = 7;
  double input_lo = -1, input_hi = 1;  // range of the random inputs
  bool integer_inputs = false;         // the random inputs rounded to integers
  // Ops that must appear in the graph the pipeline produced (e.g. "FusedConv"): proves that
  // the path under test (fusion) was taken, not only that the numbers match.
  std::vector<std::string> expect_ops_after_pipeline;
  // Ops that must not appear there (e.g. "Expand": the copies a fusion removes).
  std::vector<std::string> absent_ops_after_pipeline;
  // The tolerance of this dtype instead of each output's own: for outputs the reference computed
  // in a coarser dtype (a 16-bit graph whose float32 output is a Cast of a 16-bit value).
  DType tolerance_of = DType::kUndefined;
  // How many nodes side_branches must have put on the auxiliary stream (-1: not checked).
  int expect_side_nodes = -1;
  // How many values opt/concat_in_place must have stored in a Concat's rows (-1: not checked).
  int expect_stored_values = -1;
  // Kernel templates (templates/<name>.cu.in) some node of the compiled graph must lower to: proves
  // which implementation ran (e.g. "cutlass_gemm", not a cuBLASLt call).
  std::vector<std::string> expect_templates;
  // Template holes (name, rendered value) some kernel step must have: which mode of a template ran
  // (e.g. {"AS_GEMM", "1"}: the int8 wgmma template's GEMM mode).
  std::vector<std::pair<std::string, std::string>> expect_holes;
  // The SM count the library is planned for (GpuBuildOptions::sm_count; 0 = this GPU's).
  int sm_count = 0;
  // Kernel templates no step of the compiled graph may run (e.g. "gemm_splitk_reduce" where the
  // split-K slices are summed inside the GEMM kernel).
  std::vector<std::string> absent_templates;
  // The library's --arch list instead of this GPU's own (e.g. {"compute_87"}: Jetson's kernels as
  // PTX, JIT-compiled by the driver here, so their sm_87 code paths run).
  std::vector<std::string> archs;
};

// Infers shapes, evaluates the reference, compiles, runs twice (two input sets, host outputs
// poisoned before each run, so stale or unwritten elements show) and compares with gtest
// assertions. `label` names the .so and the failure messages.
void run_case(Graph graph, const std::string& label, const CaseOptions& options = {});

// Attribute shorthands.
inline Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
inline Attribute i64(int64_t v) { return Attribute::of_int(v); }
inline Attribute f32(float v) { return Attribute::of_float(v); }

}  // namespace aotc::gpu_test
