// The kernels of this area (nll_loss, log_softmax for SCE, hardmax, one_hot, eye_like, top_k,
// scatter_elements) against the CPU reference: rendered and compiled by nvcc, run through the CPU
// emulation of CUDA (tests/ops_compute/cuda_emulation.h), and on the GPU when there is one (else
// skipped with "no CUDA GPU: ..."). Outputs are poisoned (0xFF) before each run so unwritten
// elements show. Shapes include 1, primes, ties (integral inputs) and duplicate scatter indices.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>

#include "tests/ops_basic/ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"

namespace aotc {
namespace {

using test::OneNode;

struct KernelCase {
  std::string label;  // starts with the op type
  int64_t opset;
  int outputs;
  std::map<size_t, std::pair<int64_t, int64_t>> ranges;  // input position -> integer values in [lo, hi)
  std::function<void(OneNode&)> build;
};

Attribute s_attr(const char* v) { return Attribute::of_string(v); }
Attribute i_attr(int64_t v) { return Attribute::of_int(v); }
Tensor k_const(int64_t k) { return Tensor::from_int64s({1}, {k}); }

std::vector<KernelCase> kernel_cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, f64 = DType::kFloat64, i64 = DType::kInt64,
              i32 = DType::kInt32;
  std::vector<KernelCase> c;
  auto add = [&](std::string label, int64_t opset, int outputs, std::map<size_t, std::pair<int64_t, int64_t>> ranges,
                 std::function<void(OneNode&)> f) {
    c.push_back({std::move(label), opset, outputs, std::move(ranges), std::move(f)});
  };
  add("NegativeLogLikelihoodLoss f32 none weight ignore 2", 13, 1, {{1, {0, 5}}}, [=](OneNode& n) {
    n.input(f32, {3, 5, 2, 3}).input(i64, {3, 2, 3}).input(f32, {5}).attr("reduction", s_attr("none"))
        .attr("ignore_index", i_attr(2));
  });
  add("NegativeLogLikelihoodLoss f32 mean", 13, 1, {{1, {0, 7}}}, [=](OneNode& n) { n.input(f32, {4, 7}).input(i64, {4}); });
  add("NegativeLogLikelihoodLoss f16 sum weight int32 target", 13, 1, {{1, {0, 3}}}, [=](OneNode& n) {
    n.input(f16, {2, 3, 5}).input(i32, {2, 5}).input(f16, {3}).attr("reduction", s_attr("sum"));
  });
  add("NegativeLogLikelihoodLoss f64 mean weight ignore 0 (many items)", 13, 1, {{1, {0, 4}}}, [=](OneNode& n) {
    n.input(f64, {5, 4, 131}).input(i64, {5, 131}).input(f64, {4}).attr("ignore_index", i_attr(0));
  });
  add("SoftmaxCrossEntropyLoss f32 mean with log_prob", 13, 2, {{1, {0, 5}}}, [=](OneNode& n) {
    n.input(f32, {3, 5, 4}).input(i64, {3, 4});
  });
  add("SoftmaxCrossEntropyLoss f32 none scratch row mode", 13, 1, {{1, {0, 257}}}, [=](OneNode& n) {
    n.input(f32, {2, 257}).input(i64, {2}).attr("reduction", s_attr("none"));
  });
  add("SoftmaxCrossEntropyLoss f16 sum ignore 1 weight", 13, 2, {{1, {0, 4}}}, [=](OneNode& n) {
    n.input(f16, {2, 4, 3}).input(i64, {2, 3}).input(f16, {4}).attr("reduction", s_attr("sum"))
        .attr("ignore_index", i_attr(1));
  });
  add("Hardmax f32 axis 1 ties", 13, 1, {{0, {-2, 2}}}, [=](OneNode& n) { n.input(f32, {3, 5, 4}).attr("axis", i_attr(1)); });
  add("Hardmax f16 opset 11 coerced", 11, 1, {}, [=](OneNode& n) { n.input(f16, {2, 3, 4}).attr("axis", i_attr(1)); });
  add("TopK f32 axis 1 k 3", 11, 2, {}, [=](OneNode& n) { n.input(f32, {4, 7, 3}).constant(k_const(3)).attr("axis", i_attr(1)); });
  add("TopK f32 smallest ties k 5", 11, 2, {{0, {-3, 3}}}, [=](OneNode& n) {
    n.input(f32, {3, 11}).constant(k_const(5)).attr("largest", i_attr(0));
  });
  add("TopK int64 ties k 4", 11, 2, {{0, {0, 3}}}, [=](OneNode& n) { n.input(i64, {5, 9}).constant(k_const(4)); });
  add("TopK f16 axis 0 k 2", 11, 2, {}, [=](OneNode& n) { n.input(f16, {6, 5}).constant(k_const(2)).attr("axis", i_attr(0)); });
  add("OneHot int64 axis 1", 11, 1, {{0, {-6, 6}}}, [=](OneNode& n) {
    n.input(i64, {2, 3}).constant(Tensor::scalar_float(5)).input(f32, {2}).attr("axis", i_attr(1));
  });
  add("OneHot f32 indices int32 values", 11, 1, {}, [=](OneNode& n) {
    n.input(f32, {7}).constant(k_const(4)).input(i32, {2});
  });
  add("EyeLike f32 k 2", 9, 1, {}, [=](OneNode& n) { n.input(f32, {4, 6}).attr("k", i_attr(2)); });
  add("EyeLike int64 to f16 k -1", 9, 1, {}, [=](OneNode& n) {
    n.input(i64, {5, 3}).attr("k", i_attr(-1)).attr("dtype", i_attr(10));
  });
  add("ScatterElements f32 none axis 0", 11, 1, {{1, {-5, 5}}}, [=](OneNode& n) {
    n.input(f32, {5, 4}).input(i64, {3, 4}).input(f32, {3, 4});
  });
  add("ScatterElements f32 add axis 1 duplicates", 16, 1, {{1, {-6, 6}}}, [=](OneNode& n) {
    n.input(f32, {3, 6}).input(i64, {3, 8}).input(f32, {3, 8}).attr("axis", i_attr(1)).attr("reduction", s_attr("add"));
  });
  add("ScatterElements int32 mul axis 0", 16, 1, {{1, {0, 4}}, {0, {-9, 9}}, {2, {-9, 9}}}, [=](OneNode& n) {
    n.input(i32, {4, 3}).input(i32, {3, 2}).input(i32, {3, 2}).attr("reduction", s_attr("mul"));
  });
  add("ScatterElements f16 max axis -1", 18, 1, {{1, {-5, 5}}}, [=](OneNode& n) {
    n.input(f16, {2, 3, 5}).input(i64, {2, 2, 7}).input(f16, {2, 2, 7}).attr("axis", i_attr(-1))
        .attr("reduction", s_attr("max"));
  });
  add("ScatterElements int64 min axis 1", 18, 1, {{1, {0, 3}}}, [=](OneNode& n) {
    n.input(i64, {2, 3}).input(i64, {2, 4}).input(i64, {2, 4}).attr("axis", i_attr(1)).attr("reduction", s_attr("min"));
  });
  add("Scatter f32 opset 10 axis 1", 10, 1, {{1, {0, 3}}}, [=](OneNode& n) {
    n.input(f32, {2, 3}).input(i64, {2, 2}).input(f32, {2, 2}).attr("axis", i_attr(1));
  });
  return c;
}

// Fresh pseudo-random input: integers (and floats where `ranges` names the input) are integral in
// [lo, hi); other floats are in [-4, 4).
Tensor random_input(const Value& v, size_t position, const KernelCase& c, uint32_t seed) {
  Tensor t(v.dtype, v.shape);
  auto it = c.ranges.find(position);
  double lo = -4, hi = 4;
  bool integral = !dtype_is_float(v.dtype);
  if (it != c.ranges.end()) {
    lo = static_cast<double>(it->second.first);
    hi = static_cast<double>(it->second.second);
    integral = true;
  } else if (integral) {
    lo = -100;
    hi = 100;
  }
  std::vector<double> x = test::lcg_values(t.numel(), lo, hi, seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, integral ? std::floor(x[static_cast<size_t>(i)]) : x[static_cast<size_t>(i)]);
  return t;
}

struct Prepared {
  std::unique_ptr<OneNode> node;
  Lowering lowering;
  std::vector<Tensor> inputs;
  std::map<ValueId, Tensor> values;  // inputs and constants; outputs added poisoned per run
};

std::vector<Prepared> prepare_all() {
  std::vector<Prepared> out;
  uint32_t seed = 11;
  for (const KernelCase& c : kernel_cases()) {
    SCOPED_TRACE(c.label);
    Prepared p;
    p.node = std::make_unique<OneNode>(c.label.substr(0, c.label.find(' ')), c.opset);
    c.build(*p.node);
    Status s = p.node->build(c.outputs);
    EXPECT_TRUE(s.is_ok()) << s.message();
    if (!s.is_ok()) continue;
    const Node& node = p.node->built();
    auto l = default_registry().find(node.op_type)->lower(node, p.node->graph);
    EXPECT_TRUE(l.is_ok()) << l.status().message();
    if (!l.is_ok()) continue;
    p.lowering = *l;
    for (size_t pos = 0; pos < node.inputs.size(); ++pos) {
      const ValueId id = node.inputs[pos];
      if (id == kNoValue) continue;
      const Value& v = p.node->graph.value(id);
      if (v.constant) {
        p.values[id] = *v.constant;
        continue;
      }
      Tensor t = random_input(v, pos, c, seed++);
      p.inputs.push_back(t);
      p.values[id] = t;
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Runs `run` on each prepared case with poisoned outputs and compares every output.
void check_all(std::vector<Prepared>& cases, const std::function<Status(size_t, Prepared&)>& run) {
  const std::vector<KernelCase> meta = kernel_cases();
  for (size_t r = 0; r < cases.size(); ++r) {
    Prepared& p = cases[r];
    SCOPED_TRACE(meta[r].label);
    auto want = p.node->run(p.inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    const Node& node = p.node->built();
    for (ValueId id : node.outputs) {
      Tensor poisoned(p.node->graph.value(id).dtype, p.node->graph.value(id).shape);
      if (poisoned.byte_size() > 0) std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
      p.values[id] = poisoned;
    }
    Status s = run(r, p);
    ASSERT_TRUE(s.is_ok()) << s.message();
    for (size_t i = 0; i < node.outputs.size(); ++i)
      EXPECT_EQ(test::compare_tensors(p.values[node.outputs[i]], want.value()[i]), "") << "output " << i;
  }
}

std::string render_all(const std::vector<Prepared>& cases) {
  std::string source;
  for (size_t r = 0; r < cases.size(); ++r)
    for (size_t i = 0; i < cases[r].lowering.steps.size(); ++i) {
      auto text = testing_util::render_kernel(cases[r].lowering.steps[i].kernel,
                                              "c" + std::to_string(r) + "_k" + std::to_string(i));
      EXPECT_TRUE(text.is_ok()) << text.status().message();
      if (text.is_ok()) source += *text + "\n";
    }
  return source;
}

TEST(LossKernels, EveryCaseLowersToKernels) {
  std::vector<Prepared> cases = prepare_all();
  ASSERT_EQ(cases.size(), kernel_cases().size());
  for (const Prepared& p : cases) EXPECT_FALSE(p.lowering.steps.empty()) << p.node->built().op_type;
}

TEST(LossKernels, TemplatesCompileWithNvcc) {
  const std::string nvcc = testing_util::find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  std::vector<Prepared> cases = prepare_all();
  const std::string out = ::testing::TempDir() + "/ops_loss_kernels.o";
  Status s = testing_util::nvcc_compile(render_all(cases), "sm_90", false, out);
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::remove(out.c_str());
}

TEST(LossKernels, EmulatedOnCpuMatchReference) {
  std::vector<Prepared> cases = prepare_all();
  ASSERT_EQ(cases.size(), kernel_cases().size());
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, render_all(cases));
  check_all(cases, [&](size_t r, Prepared& p) {
    return testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", p.lowering, p.values);
  });
}

TEST(LossKernels, MatchReferenceOnGpu) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no CUDA GPU toolchain: nvcc missing";
  std::vector<Prepared> cases = prepare_all();
  check_all(cases, [&](size_t, Prepared& p) { return gpu->run(p.lowering, p.values); });
}

}  // namespace
}  // namespace aotc
