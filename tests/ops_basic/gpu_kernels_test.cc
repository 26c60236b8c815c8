// This area's kernels run on the GPU against the CPU reference, across dtypes and edge shapes
// (1, primes, broadcast, int wrap and x/0, fp16, empty concat inputs, strided softmax). Uses the
// driver-API kernel harness of tests/ops_compute (outputs poisoned before each run). Skips with
// "no CUDA GPU: ..." where there is none.
#include <cstring>
#include <functional>
#include <limits>

#include "ir/ops/copy_lowering.h"
#include "ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"

namespace aotc {
namespace {

using test::OneNode;

struct GpuCase {
  std::string label;
  std::function<void(OneNode&)> build;
};

std::vector<GpuCase> gpu_cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, f64 = DType::kFloat64;
  std::vector<GpuCase> c;
  auto add = [&](std::string label, std::function<void(OneNode&)> f) { c.push_back({std::move(label), std::move(f)}); };
  add("Add f32 same 1003", [=](OneNode& n) { n.input(f32, {1003}).input(f32, {1003}); });
  add("Add f16 broadcast", [=](OneNode& n) { n.input(f16, {2, 3, 5}).input(f16, {5}); });
  add("Sub f64 scalar", [=](OneNode& n) { n.input(f64, {}).input(f64, {7, 9}); });
  add("Mul f16 257x129", [=](OneNode& n) { n.input(f16, {257, 129}).input(f16, {129}); });
  add("Div f32 3-way broadcast", [=](OneNode& n) { n.input(f32, {7, 1, 3}).input(f32, {1, 11, 1}); });
  add("Mul int32 wrap", [](OneNode& n) { n.input(DType::kInt32, {5, 7}).input(DType::kInt32, {7}); });
  add("Div int32 specials", [](OneNode& n) { n.input(DType::kInt32, {64}).input(DType::kInt32, {64}); });
  add("Div int8 specials", [](OneNode& n) { n.input(DType::kInt8, {64}).input(DType::kInt8, {64}); });
  add("Div uint8", [](OneNode& n) { n.input(DType::kUInt8, {4, 16}).input(DType::kUInt8, {1, 16}); });
  add("Mul uint16", [](OneNode& n) { n.input(DType::kUInt16, {33}).input(DType::kUInt16, {33}); });
  add("Add int64", [](OneNode& n) { n.input(DType::kInt64, {3, 1}).input(DType::kInt64, {1, 5}); });
  add("Div uint64", [](OneNode& n) { n.input(DType::kUInt64, {19}).input(DType::kUInt64, {19}); });
  add("Sub int16", [](OneNode& n) { n.input(DType::kInt16, {19}).input(DType::kInt16, {1}); });
  add("Relu f32", [=](OneNode& n) { n.input(f32, {1}); });
  add("Relu int8", [](OneNode& n) { n.input(DType::kInt8, {257}); });
  add("Relu int64", [](OneNode& n) { n.input(DType::kInt64, {31}); });
  add("Relu f16", [=](OneNode& n) { n.input(f16, {3, 11}); });
  add("Sigmoid f16", [=](OneNode& n) { n.input(f16, {97}); });
  add("Sigmoid f32", [=](OneNode& n) { n.input(f32, {4099}); });
  add("Sigmoid f64", [=](OneNode& n) { n.input(f64, {13}); });
  add("Clip f32 relu6", [=](OneNode& n) {
    n.input(f32, {257}).attr("min", Attribute::of_float(0)).attr("max", Attribute::of_float(0.5f));
  });
  add("Clip int32 min only", [](OneNode& n) { n.input(DType::kInt32, {41}).attr("min", Attribute::of_float(-100)); });
  add("Clip f16 const inputs", [=](OneNode& n) {
    Tensor lo(f16, {}), hi(f16, {});
    lo.set(0, -0.25);
    hi.set(0, 0.75);
    n.input(f16, {67}).constant(lo).constant(hi);
  });
  add("Clip f32 runtime min", [=](OneNode& n) { n.input(f32, {53}).input(f32, {}).absent(); });
  add("Clip int64 runtime both", [](OneNode& n) {
    n.input(DType::kInt64, {53}).input(DType::kInt64, {}).input(DType::kInt64, {});
  });
  add("Concat f16 axis 1 with empty", [=](OneNode& n) {
    n.input(f16, {3, 2, 5}).input(f16, {3, 0, 5}).input(f16, {3, 7, 5}).attr("axis", Attribute::of_int(1));
  });
  add("Concat bool axis 0", [](OneNode& n) {
    n.input(DType::kBool, {4, 3}).input(DType::kBool, {1, 3}).attr("axis", Attribute::of_int(0));
  });
  add("Concat int64 axis -1", [](OneNode& n) {
    n.input(DType::kInt64, {2, 3, 1}).input(DType::kInt64, {2, 3, 4}).attr("axis", Attribute::of_int(-1));
  });
  add("Transpose f32 NCHW->NHWC", [=](OneNode& n) {
    n.input(f32, {2, 3, 4, 5}).attr("perm", Attribute::of_ints({0, 2, 3, 1}));
  });
  add("Transpose uint8 default", [](OneNode& n) { n.input(DType::kUInt8, {7, 13}); });
  add("Transpose f64 rank 5", [=](OneNode& n) {
    n.input(f64, {2, 3, 1, 5, 2}).attr("perm", Attribute::of_ints({3, 0, 4, 2, 1}));
  });
  add("Transpose int32 gather 102", [](OneNode& n) {
    n.input(DType::kInt32, {4, 6, 8}).attr("perm", Attribute::of_ints({1, 0, 2}));
  });
  add("Transpose f32 tiled 67x1x70 batch", [=](OneNode& n) {
    n.input(f32, {3, 67, 70}).attr("perm", Attribute::of_ints({0, 2, 1}));
  });
  add("Transpose f16 201", [=](OneNode& n) { n.input(f16, {67, 1, 13}).attr("perm", Attribute::of_ints({2, 0, 1})); });
  add("Softmax f32 rows 4099", [=](OneNode& n) { n.input(f32, {3, 4099}); });
  add("Softmax f32 rows 1000", [=](OneNode& n) { n.input(f32, {1, 1000}); });
  add("Softmax f16 rows 13", [=](OneNode& n) { n.input(f16, {5, 13}); });
  add("Softmax f64 rows 1", [=](OneNode& n) { n.input(f64, {2, 1}); });
  add("Softmax f32 columns axis 1", [=](OneNode& n) { n.input(f32, {2, 5, 3, 7}).attr("axis", Attribute::of_int(1)); });
  add("Softmax f16 columns axis 0", [=](OneNode& n) { n.input(f16, {9, 4}).attr("axis", Attribute::of_int(0)); });
  return c;
}

// Random values for input `index` of a case; integer division cases get 0, -1 and MIN planted.
Tensor gpu_input(const std::string& label, const Value& v, size_t index, uint32_t seed) {
  Tensor t(v.dtype, v.shape);
  if (dtype_is_float(v.dtype)) {
    bool divisor = index == 1 && label.rfind("Div", 0) == 0;
    std::vector<double> x = test::lcg_values(t.numel(), divisor ? 0.5 : -4, 4, seed);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, x[static_cast<size_t>(i)]);
    return t;
  }
  // Integers: the type's whole range (int64/uint64: a wide range), so wrapping shows.
  double lo = -128, hi = 128;
  switch (v.dtype) {
    case DType::kUInt8: lo = 0; hi = 256; break;
    case DType::kUInt16: lo = 0; hi = 65536; break;
    case DType::kInt16: lo = -32768; hi = 32768; break;
    case DType::kInt32: lo = -2147483648.0; hi = 2147483648.0; break;
    case DType::kInt64: lo = -4e18; hi = 4e18; break;
    case DType::kUInt64: lo = 0; hi = 1.8e19; break;
    default: break;
  }
  std::vector<double> x = test::lcg_values(t.numel(), lo, hi, seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double d = std::floor(x[static_cast<size_t>(i)]);
    if (v.dtype == DType::kUInt64) t.data<uint64_t>()[i] = static_cast<uint64_t>(d);
    else t.set_int(i, static_cast<int64_t>(d));
  }
  if (label.find("specials") != std::string::npos && t.numel() >= 4) {
    int64_t min = v.dtype == DType::kInt8 ? -128 : std::numeric_limits<int32_t>::min();
    if (index == 0) {
      t.set_int(0, min);
      t.set_int(1, min);
      t.set_int(2, 7);
    } else {
      t.set_int(0, -1);
      t.set_int(1, 0);
      t.set_int(2, -2);
      t.set_int(3, 0);
    }
  }
  return t;
}

TEST(GpuKernels, MatchReferenceOnGpu) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no CUDA GPU toolchain: nvcc missing";
  uint32_t seed = 1;
  for (const GpuCase& c : gpu_cases()) {
    SCOPED_TRACE(c.label);
    std::string op = c.label.substr(0, c.label.find(' '));
    OneNode n(op);
    c.build(n);
    Status s = n.build();
    ASSERT_TRUE(s.is_ok()) << s.message();
    auto l = default_registry().find(op)->lower(n.built(), n.graph);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    std::vector<Tensor> inputs;
    std::map<ValueId, Tensor> values;
    for (size_t i = 0; i < n.built().inputs.size(); ++i) {
      ValueId id = n.built().inputs[i];
      if (id == kNoValue) continue;
      const Value& v = n.graph.value(id);
      if (v.constant) {
        values[id] = *v.constant;
        continue;
      }
      Tensor t = gpu_input(c.label, v, i, seed++);
      inputs.push_back(t);
      values[id] = t;
    }
    auto want = n.run(inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    ValueId out = n.built().outputs[0];
    Tensor poisoned(n.out().dtype, n.out().shape);
    std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
    values[out] = poisoned;
    s = gpu->run(*l, values);
    ASSERT_TRUE(s.is_ok()) << s.message();
    EXPECT_TENSOR_NEAR(values[out], want.value()[0]);
  }
}

TEST(GpuKernels, CopyStepCopiesEveryByte) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no CUDA GPU toolchain: nvcc missing";
  const int64_t kBytes = 4099;
  std::map<ValueId, Tensor> values;
  values[0] = Tensor(DType::kUInt8, {kBytes});
  values[1] = Tensor(DType::kUInt8, {kBytes});
  for (int64_t i = 0; i < kBytes; ++i) values[0].data<uint8_t>()[i] = static_cast<uint8_t>(i * 31 + 7);
  std::memset(values[1].raw(), 0xFF, kBytes);
  Lowering l;
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, copy_kernel_step(0, 1, kBytes), {}});
  Status s = gpu->run(l, values);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(std::memcmp(values[0].raw(), values[1].raw(), kBytes), 0);
}

}  // namespace
}  // namespace aotc
