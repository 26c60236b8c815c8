// This area's kernels executed against the CPU reference: always through the CPU emulation of
// CUDA (tests/ops_compute/cuda_emulation.h: the rendered template code compiled by g++ and run
// with one thread per CUDA thread), and on the GPU when there is one (else skipped with "no CUDA
// GPU: ..."). Outputs are poisoned (0xFF) before each run so unwritten elements show. Shapes
// include 1, primes, negative strides, broadcast and multi-output nodes.
#include <cmath>
#include <cstring>
#include <functional>

#include "tests/ops_basic/ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"

namespace aotc {
namespace {

using test::OneNode;

Tensor i64(std::vector<int64_t> v) { return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v); }

struct KernelCase {
  std::string label;  // starts with the op type
  int64_t opset;
  int outputs;
  int64_t index_range;  // > 0: integer run-time inputs are indices in [-index_range, index_range)
  std::function<void(OneNode&)> build;
};

std::vector<KernelCase> kernel_cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16;
  std::vector<KernelCase> c;
  auto add = [&](std::string label, int64_t opset, int outputs, int64_t range, std::function<void(OneNode&)> f) {
    c.push_back({std::move(label), opset, outputs, range, std::move(f)});
  };
  add("Gather f32 axis 1 int64 indices", 17, 1, 5, [=](OneNode& n) {
    n.input(f32, {2, 5, 3}).input(DType::kInt64, {2, 3}).attr("axis", Attribute::of_int(1));
  });
  add("Gather f16 int32 indices", 17, 1, 11, [=](OneNode& n) { n.input(f16, {11}).input(DType::kInt32, {7}); });
  add("Gather bool scalar index axis -1", 17, 1, 2, [](OneNode& n) {
    n.input(DType::kBool, {3, 2}).input(DType::kInt64, {}).attr("axis", Attribute::of_int(-1));
  });
  add("GatherElements int64 axis 1", 17, 1, 5, [](OneNode& n) {
    n.input(DType::kInt64, {3, 5}).input(DType::kInt32, {3, 2}).attr("axis", Attribute::of_int(1));
  });
  add("GatherElements f32 axis 0 rank 3", 17, 1, 2, [=](OneNode& n) {
    n.input(f32, {2, 3, 4}).input(DType::kInt64, {2, 2, 3});
  });
  add("Slice f32 negative steps", 17, 1, 0, [=](OneNode& n) {
    n.input(f32, {7, 9}).constant(i64({5, 1})).constant(i64({0, 8})).constant(i64({0, 1})).constant(i64({-2, 3}));
  });
  add("Slice uint8 to INT64_MAX", 17, 1, 0, [](OneNode& n) {
    n.input(DType::kUInt8, {13}).constant(i64({2})).constant(i64({INT64_MAX}));
  });
  add("Split f16 3 outputs with empty", 17, 3, 0, [=](OneNode& n) {
    n.input(f16, {3, 10}).constant(i64({3, 0, 7})).attr("axis", Attribute::of_int(1));
  });
  add("Expand int32 bidirectional", 17, 1, 0, [](OneNode& n) { n.input(DType::kInt32, {3, 1}).constant(i64({2, 1, 5})); });
  add("Tile int8", 17, 1, 0, [](OneNode& n) { n.input(DType::kInt8, {2, 3}).constant(i64({3, 2})); });
  add("ConstantOfShape f32 1.5", 17, 1, 0, [](OneNode& n) {
    n.constant(i64({4, 5})).attr("value", Attribute::of_tensor(Tensor::from_floats({1}, {1.5f})));
  });
  add("Pad f32 constant value, negative pad", 18, 1, 0, [=](OneNode& n) {
    n.input(f32, {1, 3, 4, 5}).constant(i64({0, 0, 1, 2, 0, 0, 3, -1})).constant(Tensor::scalar_float(2.5f));
  });
  add("Pad f16 run-time value", 18, 1, 0, [=](OneNode& n) { n.input(f16, {4, 5}).constant(i64({1, 2, 0, 3})).input(f16, {}); });
  add("Pad int64 reflect beyond the dim", 18, 1, 0, [](OneNode& n) {
    n.input(DType::kInt64, {3, 5}).constant(i64({4, 3, 2, 6})).attr("mode", Attribute::of_string("reflect"));
  });
  add("Pad int32 edge axes", 18, 1, 0, [](OneNode& n) {
    n.input(DType::kInt32, {4, 5}).constant(i64({2, 3})).absent().constant(i64({1})).attr("mode", Attribute::of_string("edge"));
  });
  add("Pad f32 wrap", 19, 1, 0, [=](OneNode& n) {
    n.input(f32, {3, 2}).constant(i64({4, 1, 5, 2})).attr("mode", Attribute::of_string("wrap"));
  });
  add("Trilu f32 upper k -1", 17, 1, 0, [=](OneNode& n) { n.input(f32, {2, 5, 7}).constant(Tensor::scalar_int64(-1)); });
  add("Trilu int64 lower k 2", 17, 1, 0, [](OneNode& n) {
    n.input(DType::kInt64, {6, 4}).constant(Tensor::scalar_int64(2)).attr("upper", Attribute::of_int(0));
  });
  add("CumSum f32 axis 1", 17, 1, 0, [=](OneNode& n) { n.input(f32, {4, 7, 3}).constant(Tensor::scalar_int64(1)); });
  add("CumSum f16 exclusive", 17, 1, 0, [=](OneNode& n) {
    n.input(f16, {17}).constant(Tensor::scalar_int64(0)).attr("exclusive", Attribute::of_int(1));
  });
  add("CumSum int64 reverse exclusive", 17, 1, 0, [](OneNode& n) {
    n.input(DType::kInt64, {5, 3}).constant(Tensor::scalar_int64(0)).attr("reverse", Attribute::of_int(1))
        .attr("exclusive", Attribute::of_int(1));
  });
  add("CumSum f64 axis -1 reverse", 17, 1, 0, [](OneNode& n) {
    n.input(DType::kFloat64, {3, 11}).constant(Tensor::scalar_int64(-1)).attr("reverse", Attribute::of_int(1));
  });
  add("CumProd f32 axis 0", 26, 1, 0, [=](OneNode& n) { n.input(f32, {5, 7}).constant(Tensor::scalar_int64(0)); });
  add("CumProd int32 reverse exclusive", 26, 1, 0, [](OneNode& n) {
    n.input(DType::kInt32, {3, 13}).constant(Tensor::scalar_int64(1)).attr("reverse", Attribute::of_int(1))
        .attr("exclusive", Attribute::of_int(1));
  });
  add("CumProd f16 axis -1", 26, 1, 0, [=](OneNode& n) { n.input(f16, {2, 9}).constant(Tensor::scalar_int64(-1)); });
  add("DepthToSpace f32 DCR", 17, 1, 0, [=](OneNode& n) {
    n.input(f32, {1, 8, 3, 5}).attr("blocksize", Attribute::of_int(2));
  });
  add("DepthToSpace f16 CRD", 17, 1, 0, [=](OneNode& n) {
    n.input(f16, {2, 18, 2, 3}).attr("blocksize", Attribute::of_int(3)).attr("mode", Attribute::of_string("CRD"));
  });
  add("SpaceToDepth uint16", 17, 1, 0, [](OneNode& n) {
    n.input(DType::kUInt16, {1, 3, 4, 6}).attr("blocksize", Attribute::of_int(2));
  });
  add("SpaceToDepth f32 CRD", 17, 1, 0, [](OneNode& n) {
    n.input(DType::kFloat32, {2, 3, 6, 4}).attr("blocksize", Attribute::of_int(2)).attr("mode", Attribute::of_string("CRD"));
  });
  add("Dropout f16 with mask", 13, 2, 0, [=](OneNode& n) { n.input(f16, {5, 3}); });
  return c;
}

Tensor random_input(const Value& v, int64_t index_range, uint32_t seed) {
  Tensor t(v.dtype, v.shape);
  double lo = -4, hi = 4;
  if (index_range > 0 && dtype_is_integer(v.dtype)) {
    lo = static_cast<double>(-index_range);
    hi = static_cast<double>(index_range);
  } else if (v.dtype == DType::kUInt8 || v.dtype == DType::kUInt16 || v.dtype == DType::kBool) {
    lo = 0;
    hi = v.dtype == DType::kBool ? 2 : 200;
  } else if (dtype_is_integer(v.dtype)) {
    lo = -100;
    hi = 100;
  }
  std::vector<double> x = test::lcg_values(t.numel(), lo, hi, seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, dtype_is_float(v.dtype) ? x[static_cast<size_t>(i)] : std::floor(x[static_cast<size_t>(i)]));
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
  uint32_t seed = 7;
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
    EXPECT_FALSE(l->is_view);
    p.lowering = *l;
    for (ValueId id : node.inputs) {
      if (id == kNoValue) continue;
      const Value& v = p.node->graph.value(id);
      if (v.constant) {
        p.values[id] = *v.constant;
        continue;
      }
      Tensor t = random_input(v, c.index_range, seed++);
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
    for (size_t i = 0; i < node.outputs.size(); ++i) EXPECT_TENSOR_NEAR(p.values[node.outputs[i]], want.value()[i]);
  }
}

TEST(Shape3Kernels, EmulatedOnCpuMatchReference) {
  std::vector<Prepared> cases = prepare_all();
  ASSERT_EQ(cases.size(), kernel_cases().size());
  std::string source;
  for (size_t r = 0; r < cases.size(); ++r)
    for (size_t i = 0; i < cases[r].lowering.steps.size(); ++i) {
      auto text = testing_util::render_kernel(cases[r].lowering.steps[i].kernel,
                                              "c" + std::to_string(r) + "_k" + std::to_string(i));
      ASSERT_TRUE(text.is_ok()) << text.status().message();
      source += *text + "\n";
    }
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, source);
  // The emulator launches kernels of 2 to 6 pointer parameters. The one-parameter fill kernel
  // (ConstantOfShape, Dropout's mask) is checked here through its holes instead: the value bits
  // must be those of the reference output's elements, and it must cover the output; the GPU test
  // runs it for real.
  check_all(cases, [&](size_t r, Prepared& p) {
    Lowering runnable;
    for (const LoweredStep& step : p.lowering.steps) {
      const KernelStep& k = step.kernel;
      if (k.args.size() >= 2) {
        runnable.steps.push_back(step);
        continue;
      }
      std::map<std::string, std::string> holes(k.holes.begin(), k.holes.end());
      Tensor& out = p.values.at(k.args.at(0));
      auto want = p.node->run(p.inputs);
      if (!want.is_ok()) return want.status();
      size_t slot = 0;
      while (p.node->built().outputs[slot] != k.args[0]) ++slot;
      const Tensor& ref = want.value()[slot];
      uint64_t bits = 0;
      std::memcpy(&bits, ref.raw(), static_cast<size_t>(dtype_size(ref.dtype())));
      EXPECT_EQ(holes["value_bits"], std::to_string(bits) + "ULL");
      EXPECT_EQ(holes["numel"], std::to_string(ref.numel()) + "LL");
      out = ref;  // the fill kernel itself runs in MatchReferenceOnGpu
    }
    // Kernels keep their index in the full lowering: look them up through a renumbered copy.
    std::string prefix = "c" + std::to_string(r) + "_";
    for (size_t i = 0, kept = 0; i < p.lowering.steps.size(); ++i) {
      if (p.lowering.steps[i].kernel.args.size() < 2) continue;
      EXPECT_EQ(i, kept) << "a runnable kernel after a fill kernel would be looked up under the wrong name";
      ++kept;
    }
    return testing_util::run_on_cpu(*handle, prefix, runnable, p.values);
  });
}

TEST(Shape3Kernels, MatchReferenceOnGpu) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no CUDA GPU toolchain: nvcc missing";
  std::vector<Prepared> cases = prepare_all();
  check_all(cases, [&](size_t, Prepared& p) { return gpu->run(p.lowering, p.values); });
}

}  // namespace
}  // namespace aotc
