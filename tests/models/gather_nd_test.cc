// GatherND: shape inference and refusals, the reference against the worked examples of the ONNX
// operator spec (values written from the spec, not from our output), and the kernel (rendered
// template) run through the CPU emulation of CUDA and, when present, on the GPU, both compared
// with the reference on shapes with primes, size-1 dims, negative indices and batch_dims 0-2.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include "tests/ops_basic/ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"

namespace aotc {
namespace {

using test::OneNode;

Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_int64s(std::move(s), std::move(v)); }

// One GatherND node over constant data and indices, evaluated on the reference.
Expected<Tensor> gather_nd(const Tensor& data, const Tensor& indices, int64_t batch_dims) {
  OneNode n("GatherND", 13);
  n.constant(data).constant(indices);
  if (batch_dims != 0) n.attr("batch_dims", Attribute::of_int(batch_dims));
  AOTC_RETURN_IF_ERROR(n.build());
  auto out = n.run({});
  if (!out) return out.status();
  return out.value()[0];
}

void expect_values(const Tensor& got, const Shape& shape, const std::vector<double>& want) {
  ASSERT_EQ(got.shape(), shape);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.get(i), want[static_cast<size_t>(i)]) << "element " << i;
}

// The five examples of the ONNX GatherND specification.
TEST(GatherNd, SpecExamples) {
  Tensor d2 = i64({2, 2}, {0, 1, 2, 3});
  Tensor d3 = i64({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto e1 = gather_nd(d2, i64({2, 2}, {0, 0, 1, 1}), 0);
  ASSERT_TRUE(e1.is_ok()) << e1.status().message();
  expect_values(*e1, {2}, {0, 3});
  auto e2 = gather_nd(d2, i64({2, 1}, {1, 0}), 0);
  ASSERT_TRUE(e2.is_ok()) << e2.status().message();
  expect_values(*e2, {2, 2}, {2, 3, 0, 1});
  auto e3 = gather_nd(d3, i64({2, 2}, {0, 1, 1, 0}), 0);
  ASSERT_TRUE(e3.is_ok()) << e3.status().message();
  expect_values(*e3, {2, 2}, {2, 3, 4, 5});
  auto e4 = gather_nd(d3, i64({2, 1, 2}, {0, 1, 1, 0}), 0);
  ASSERT_TRUE(e4.is_ok()) << e4.status().message();
  expect_values(*e4, {2, 1, 2}, {2, 3, 4, 5});
  auto e5 = gather_nd(d3, i64({2, 1}, {1, 0}), 1);
  ASSERT_TRUE(e5.is_ok()) << e5.status().message();
  expect_values(*e5, {2, 2}, {2, 3, 4, 5});
}

TEST(GatherNd, NegativeIndicesAndFloatData) {
  // data[i][j] = 10*i + j over 3x4; (-1, -4) is (2, 0) -> 20; (0, -1) is (0, 3) -> 3.
  std::vector<float> v;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) v.push_back(static_cast<float>(10 * i + j));
  auto out = gather_nd(Tensor::from_floats({3, 4}, v), i64({2, 2}, {-1, -4, 0, -1}), 0);
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  expect_values(*out, {2}, {20, 3});
}

TEST(GatherNd, BatchDimsTwoFullTuple) {
  // data[a][b][c][d] = 1000a + 100b + 10c + d over 2x3x2x2; batch_dims 2, tuples of length 2 pick
  // single elements: indices[a][b] = (c, d).
  std::vector<float> v;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c)
        for (int d = 0; d < 2; ++d) v.push_back(static_cast<float>(1000 * a + 100 * b + 10 * c + d));
  Tensor idx = i64({2, 3, 2}, {0, 1, 1, 0, 1, 1, 0, 0, -1, -1, -2, 1});
  auto out = gather_nd(Tensor::from_floats({2, 3, 2, 2}, v), idx, 2);
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  expect_values(*out, {2, 3}, {1, 110, 211, 1000, 1111, 1201});
}

TEST(GatherNd, Refusals) {
  auto expect_error = [](const Tensor& d, const Tensor& idx, int64_t b, const std::string& part) {
    auto out = gather_nd(d, idx, b);
    ASSERT_FALSE(out.is_ok()) << "expected an error containing: " << part;
    EXPECT_TRUE(test::contains(out.status().message(), part)) << out.status().message();
    EXPECT_TRUE(test::contains(out.status().message(), "GatherND")) << out.status().message();
  };
  Tensor d = i64({2, 3}, {0, 1, 2, 3, 4, 5});
  expect_error(d, i64({1, 3}, {0, 0, 0}), 0, "last dim is 3");
  expect_error(d, i64({2, 1}, {0, 1}), 2, "batch_dims 2");
  expect_error(d, i64({3, 1}, {0, 1, 0}), 1, "batch dim 0 differs");
  expect_error(d, i64({1, 2}, {2, 0}), 0, "index 2 is out of range");
  expect_error(d, i64({1, 2}, {0, -4}), 0, "index -4 is out of range");
  OneNode n("GatherND", 13);
  n.constant(d).constant(Tensor(DType::kInt32, {1, 1}));
  Status s = n.build();
  EXPECT_FALSE(s.is_ok());
  EXPECT_TRUE(test::contains(s.message(), "input 1")) << s.message();
}

struct KernelCase {
  std::string label;
  DType dtype;
  Shape data, indices;
  int64_t batch_dims;
};

std::vector<KernelCase> kernel_cases() {
  return {{"f32 k1 primes", DType::kFloat32, {7, 5, 3}, {11, 1}, 0},
          {"f16 k2 rank3", DType::kFloat16, {3, 5, 2}, {2, 3, 2}, 0},
          {"int64 batch1 k1", DType::kInt64, {4, 13}, {4, 5, 1}, 1},
          {"bool full tuple", DType::kBool, {3, 1, 5}, {7, 3}, 0},
          {"uint8 batch2 k1", DType::kUInt8, {2, 3, 5, 2}, {2, 3, 4, 1}, 2},
          {"f32 bert mask shape", DType::kFloat32, {2, 32, 64}, {2, 1, 1}, 1}};
}

struct Prepared {
  std::unique_ptr<OneNode> node;
  Lowering lowering;
  std::vector<Tensor> inputs;
  std::map<ValueId, Tensor> values;
};

// Indices in [-dim, dim) of the data dim each tuple position addresses (so negatives occur).
Tensor random_indices(const KernelCase& c, uint32_t seed) {
  Tensor t(DType::kInt64, c.indices);
  const int64_t k = c.indices.back();
  std::vector<double> u = test::lcg_values(t.numel(), 0, 1, seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t dim = c.data[static_cast<size_t>(c.batch_dims + i % k)];
    t.set_int(i, static_cast<int64_t>(u[static_cast<size_t>(i)] * 2 * static_cast<double>(dim)) - dim);
  }
  return t;
}

std::vector<Prepared> prepare_all() {
  std::vector<Prepared> out;
  uint32_t seed = 3;
  for (const KernelCase& c : kernel_cases()) {
    SCOPED_TRACE(c.label);
    Prepared p;
    p.node = std::make_unique<OneNode>("GatherND", 13);
    p.node->input(c.dtype, c.data).input(DType::kInt64, c.indices);
    if (c.batch_dims) p.node->attr("batch_dims", Attribute::of_int(c.batch_dims));
    Status s = p.node->build();
    EXPECT_TRUE(s.is_ok()) << s.message();
    if (!s.is_ok()) continue;
    const Node& node = p.node->built();
    auto l = default_registry().find("GatherND")->lower(node, p.node->graph);
    EXPECT_TRUE(l.is_ok()) << l.status().message();
    if (!l.is_ok()) continue;
    p.lowering = *l;
    Tensor data(c.dtype, c.data);
    std::vector<double> x = test::lcg_values(data.numel(), -50, 50, seed++);
    for (int64_t i = 0; i < data.numel(); ++i) {
      const double xi = x[static_cast<size_t>(i)];
      if (c.dtype == DType::kBool) data.set(i, xi > 0 ? 1 : 0);
      else if (c.dtype == DType::kUInt8) data.set(i, static_cast<double>(i % 251));
      else data.set(i, std::floor(xi) + (dtype_is_float(c.dtype) ? 0.25 : 0.0));  // exact in f16 too
    }
    Tensor idx = random_indices(c, seed++);
    p.inputs = {data, idx};
    p.values[node.inputs[0]] = data;
    p.values[node.inputs[1]] = idx;
    out.push_back(std::move(p));
  }
  return out;
}

void check_all(std::vector<Prepared>& cases, const std::function<Status(size_t, Prepared&)>& run) {
  const std::vector<KernelCase> meta = kernel_cases();
  for (size_t r = 0; r < cases.size(); ++r) {
    Prepared& p = cases[r];
    SCOPED_TRACE(meta[r].label);
    auto want = p.node->run(p.inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    ValueId y = p.node->built().outputs[0];
    Tensor poisoned(p.node->graph.value(y).dtype, p.node->graph.value(y).shape);
    std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
    p.values[y] = poisoned;
    Status s = run(r, p);
    ASSERT_TRUE(s.is_ok()) << s.message();
    EXPECT_TENSOR_NEAR(p.values[y], want.value()[0]);
  }
}

TEST(GatherNdKernel, EmulatedOnCpuMatchesReference) {
  std::vector<Prepared> cases = prepare_all();
  ASSERT_EQ(cases.size(), kernel_cases().size());
  std::string source;
  for (size_t r = 0; r < cases.size(); ++r) {
    ASSERT_EQ(cases[r].lowering.steps.size(), 1u);
    auto text = testing_util::render_kernel(cases[r].lowering.steps[0].kernel, "c" + std::to_string(r) + "_k0");
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    source += *text + "\n";
  }
  auto handle = testing_util::compile_for_cpu(source);
  if (!handle && handle.status().message().find("g++ failed") == std::string::npos)
    GTEST_SKIP() << "no host compiler for the emulation: " << handle.status().message();
  ASSERT_TRUE(handle.is_ok()) << handle.status().message();
  check_all(cases, [&](size_t r, Prepared& p) {
    return testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", p.lowering, p.values);
  });
}

TEST(GatherNdKernel, CompilesWithNvcc) {
  std::string nvcc = testing_util::find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  std::vector<Prepared> cases = prepare_all();
  std::string source;
  for (size_t r = 0; r < cases.size(); ++r) {
    auto text = testing_util::render_kernel(cases[r].lowering.steps[0].kernel, "c" + std::to_string(r) + "_k0");
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    source += *text + "\n";
  }
  std::string out = ::testing::TempDir() + "/gather_nd_render_check.o";
  Status s = testing_util::nvcc_compile(source, "sm_90", false, out);
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::remove(out.c_str());
}

TEST(GatherNdKernel, MatchesReferenceOnGpu) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no CUDA GPU toolchain: nvcc missing";
  std::vector<Prepared> cases = prepare_all();
  check_all(cases, [&](size_t, Prepared& p) { return gpu->run(p.lowering, p.values); });
}

}  // namespace
}  // namespace aotc
