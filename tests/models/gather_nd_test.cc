// GatherND and ScatterND: shape inference and refusals, the references against the worked
// examples of the ONNX operator spec and hand-computed cases (values written by hand, not from our
// output), and the kernels (rendered templates) run through the CPU emulation of CUDA and, when
// present, on the GPU, compared with the reference on shapes with primes, size-1 dims, negative
// indices, duplicate tuples, batch_dims 0-2 and every ScatterND reduction.
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


Expected<Tensor> scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates,
                            const std::string& reduction, int64_t opset = 18) {
  OneNode n("ScatterND", opset);
  n.constant(data).constant(indices).constant(updates);
  if (!reduction.empty()) n.attr("reduction", Attribute::of_string(reduction));
  AOTC_RETURN_IF_ERROR(n.build());
  auto out = n.run({});
  if (!out) return out.status();
  return out.value()[0];
}

TEST(ScatterNd, SpecExampleAndReductions) {
  Tensor d8 = Tensor::from_floats({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto e1 = scatter_nd(d8, i64({4, 1}, {4, 3, 1, 7}), Tensor::from_floats({4}, {9, 10, 11, 12}), "");
  ASSERT_TRUE(e1.is_ok()) << e1.status().message();
  expect_values(*e1, {8}, {1, 11, 3, 10, 9, 6, 7, 12});
  Tensor d4 = Tensor::from_floats({4}, {1, 2, 3, 4});
  Tensor dup = i64({3, 1}, {1, 1, -1});
  Tensor u = Tensor::from_floats({3}, {10, 20, 30});
  auto none = scatter_nd(d4, dup, u, "none");  // duplicates apply in order: the last one wins
  ASSERT_TRUE(none.is_ok()) << none.status().message();
  expect_values(*none, {4}, {1, 20, 3, 30});
  auto add = scatter_nd(d4, dup, u, "add");
  ASSERT_TRUE(add.is_ok()) << add.status().message();
  expect_values(*add, {4}, {1, 32, 3, 34});
  auto mul = scatter_nd(d4, dup, u, "mul");
  ASSERT_TRUE(mul.is_ok()) << mul.status().message();
  expect_values(*mul, {4}, {1, 400, 3, 120});
  auto mx = scatter_nd(d4, dup, Tensor::from_floats({3}, {-5, 7, 2}), "max");
  ASSERT_TRUE(mx.is_ok()) << mx.status().message();
  expect_values(*mx, {4}, {1, 7, 3, 4});
  auto mn = scatter_nd(d4, dup, Tensor::from_floats({3}, {-5, 7, 2}), "min");
  ASSERT_TRUE(mn.is_ok()) << mn.status().message();
  expect_values(*mn, {4}, {1, -5, 3, 2});
  // Slices: rows of a 3x2 matrix.
  auto rows = scatter_nd(i64({3, 2}, {0, 1, 2, 3, 4, 5}), i64({1, 1}, {2}), i64({1, 2}, {8, 9}), "add");
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  expect_values(*rows, {3, 2}, {0, 1, 2, 3, 12, 14});
}

TEST(ScatterNd, Refusals) {
  auto expect_error = [](Expected<Tensor> out, const std::string& part) {
    ASSERT_FALSE(out.is_ok()) << "expected an error containing: " << part;
    EXPECT_TRUE(test::contains(out.status().message(), part)) << out.status().message();
    EXPECT_TRUE(test::contains(out.status().message(), "ScatterND")) << out.status().message();
  };
  Tensor d = Tensor::from_floats({4}, {1, 2, 3, 4});
  Tensor u = Tensor::from_floats({1}, {5});
  expect_error(scatter_nd(d, i64({1, 1}, {4}), u, ""), "index 4 is out of range");
  expect_error(scatter_nd(d, i64({1, 1}, {0}), Tensor::from_floats({2}, {5, 6}), ""), "updates have shape 2");
  expect_error(scatter_nd(d, i64({1, 2}, {0, 0}), u, ""), "last dim is 2");
  expect_error(scatter_nd(d, i64({1, 1}, {0}), u, "add", 13), "needs opset 16");
  expect_error(scatter_nd(d, i64({1, 1}, {0}), u, "max", 16), "needs opset 18");
  expect_error(scatter_nd(d, i64({1, 1}, {0}), u, "sum"), "is not none, add, mul, max or min");
}

struct KernelCase {
  std::string label;  // starts with the op type
  DType dtype;
  Shape data, indices;
  int64_t batch_dims;     // GatherND
  std::string reduction;  // ScatterND ("" = attribute absent)
};

std::vector<KernelCase> kernel_cases() {
  return {{"GatherND f32 k1 primes", DType::kFloat32, {7, 5, 3}, {11, 1}, 0, ""},
          {"GatherND f16 k2 rank3", DType::kFloat16, {3, 5, 2}, {2, 3, 2}, 0, ""},
          {"GatherND int64 batch1 k1", DType::kInt64, {4, 13}, {4, 5, 1}, 1, ""},
          {"GatherND bool full tuple", DType::kBool, {3, 1, 5}, {7, 3}, 0, ""},
          {"GatherND uint8 batch2 k1", DType::kUInt8, {2, 3, 5, 2}, {2, 3, 4, 1}, 2, ""},
          {"GatherND f32 bert mask shape", DType::kFloat32, {2, 32, 64}, {2, 1, 1}, 1, ""},
          {"ScatterND f32 none duplicates", DType::kFloat32, {5, 7}, {9, 1}, 0, ""},
          {"ScatterND f16 add k2", DType::kFloat16, {3, 4, 5}, {6, 2}, 0, "add"},
          {"ScatterND int64 mul full tuple", DType::kInt64, {3, 5}, {4, 2}, 0, "mul"},
          {"ScatterND int8 add wraps", DType::kInt8, {11}, {13, 1}, 0, "add"},
          {"ScatterND f32 max", DType::kFloat32, {4, 3}, {5, 1}, 0, "max"},
          {"ScatterND int32 min", DType::kInt32, {2, 3, 2}, {3, 2}, 0, "min"},
          {"ScatterND bool none", DType::kBool, {6, 2}, {2, 1}, 0, ""}};
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

// Values exact in every dtype used (quarter-integers for floats, small integers, 0/1 for bool);
// int8 values up to +-100 so that ScatterND add overflows and must wrap.
Tensor random_values(DType dtype, const Shape& shape, uint32_t seed) {
  Tensor t(dtype, shape);
  std::vector<double> x = test::lcg_values(t.numel(), -100, 100, seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double xi = x[static_cast<size_t>(i)];
    if (dtype == DType::kBool) t.set(i, xi > 0 ? 1 : 0);
    else if (dtype == DType::kUInt8) t.set(i, static_cast<double>(i % 251));
    else if (dtype == DType::kInt64 || dtype == DType::kInt32) t.set(i, std::floor(xi / 20));
    else if (dtype == DType::kInt8) t.set(i, std::floor(xi));
    else t.set(i, std::floor(xi / 8) + 0.25);
  }
  return t;
}

std::vector<Prepared> prepare_all() {
  std::vector<Prepared> out;
  uint32_t seed = 3;
  for (const KernelCase& c : kernel_cases()) {
    SCOPED_TRACE(c.label);
    const std::string op = c.label.substr(0, c.label.find(' '));
    Prepared p;
    p.node = std::make_unique<OneNode>(op, 18);
    p.node->input(c.dtype, c.data).input(DType::kInt64, c.indices);
    Shape upd(c.indices.begin(), c.indices.end() - 1);
    upd.insert(upd.end(), c.data.begin() + c.indices.back(), c.data.end());
    if (op == "ScatterND") p.node->input(c.dtype, upd);
    if (c.batch_dims) p.node->attr("batch_dims", Attribute::of_int(c.batch_dims));
    if (!c.reduction.empty()) p.node->attr("reduction", Attribute::of_string(c.reduction));
    Status s = p.node->build();
    EXPECT_TRUE(s.is_ok()) << s.message();
    if (!s.is_ok()) continue;
    const Node& node = p.node->built();
    auto l = default_registry().find(op)->lower(node, p.node->graph);
    EXPECT_TRUE(l.is_ok()) << l.status().message();
    if (!l.is_ok()) continue;
    p.lowering = *l;
    p.inputs = {random_values(c.dtype, c.data, seed++), random_indices(c, seed++)};
    if (op == "ScatterND") p.inputs.push_back(random_values(c.dtype, upd, seed++));
    for (size_t i = 0; i < p.inputs.size(); ++i) p.values[node.inputs[i]] = p.inputs[i];
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

// Every kernel of every case, step i of case r named c<r>_k<i>.
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

TEST(GatherScatterNdKernels, EmulatedOnCpuMatchReference) {
  std::vector<Prepared> cases = prepare_all();
  ASSERT_EQ(cases.size(), kernel_cases().size());
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, render_all(cases));
  check_all(cases, [&](size_t r, Prepared& p) {
    return testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", p.lowering, p.values);
  });
}

TEST(GatherScatterNdKernels, CompileWithNvcc) {
  std::string nvcc = testing_util::find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  std::vector<Prepared> cases = prepare_all();
  std::string out = ::testing::TempDir() + "/gather_scatter_nd_render_check.o";
  Status s = testing_util::nvcc_compile(render_all(cases), "sm_90", false, out);
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::remove(out.c_str());
}

TEST(GatherScatterNdKernels, MatchReferenceOnGpu) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no CUDA GPU toolchain: nvcc missing";
  std::vector<Prepared> cases = prepare_all();
  check_all(cases, [&](size_t, Prepared& p) { return gpu->run(p.lowering, p.values); });
}

}  // namespace
}  // namespace aotc
