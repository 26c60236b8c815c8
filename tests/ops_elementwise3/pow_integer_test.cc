// Integer Pow: exact powers for an integer exponent (the GPU's double pow turned (-3)^1 into
// -2.99.. and truncation gave -2), the documented negative-exponent rule, wrap-around like Mul,
// and float exponents snapped before truncation. Expected values are worked by hand here; the
// kernel text is run through the CPU emulation of CUDA and on the GPU (skipped without one).
#include <cstring>
#include <limits>

#include "tests/ops_basic/ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"

namespace aotc {
namespace {

using test::OneNode;
using test::make_tensor;

struct PowCase {
  DType base, exp;
  std::vector<double> x, n;
  std::vector<int64_t> want;
};

std::vector<PowCase> pow_cases() {
  const int64_t i32_min = std::numeric_limits<int32_t>::min();
  return {
      // (-3)^1, (-3)^3, (-2)^4, 7^0, 0^0, 0^5, 2^30, 2^31 (wraps to INT_MIN), 2^32 (wraps to 0),
      // 3^21 = 10460353203 mod 2^32 = 1870418611, 1^-5, (-1)^-3, (-1)^-2, 2^-1, 0^-1, -5^-2.
      {DType::kInt32, DType::kInt32,
       {-3, -3, -2, 7, 0, 0, 2, 2, 2, 3, 1, -1, -1, 2, 0, -5},
       {1, 3, 4, 0, 0, 5, 30, 31, 32, 21, -5, -3, -2, -1, -1, -2},
       {-3, -27, 16, 1, 1, 0, 1073741824, i32_min, 0, 1870418611, 1, -1, 1, 0, 0, 0}},
      // int64 base, int8 exponent: 3^39 = 4052555153018976267 is exact in int64, not in double.
      {DType::kInt64, DType::kInt8, {-3, 3, -7, 10, -1}, {1, 39, 3, 18, 127}, {-3, 4052555153018976267LL, -343, 1000000000000000000LL, -1}},
      // uint8 exponent (never negative).
      {DType::kInt32, DType::kUInt8, {-3, 5, -1}, {1, 3, 255}, {-3, 125, -1}},
      // Float exponents: integral ones give exact powers; others truncate toward zero.
      {DType::kInt64, DType::kFloat32, {-3, -3, 9, 4, 10, 2, 7}, {1, 3, 0.5, 0.5, -1, 0.5, 2}, {-3, -27, 3, 2, 0, 1, 49}},
  };
}

Tensor int_tensor(DType t, const std::vector<int64_t>& v) {
  Tensor r(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) r.set_int(static_cast<int64_t>(i), v[i]);
  return r;
}

Tensor input_tensor(DType t, const std::vector<double>& v) {
  if (dtype_is_float(t)) return make_tensor(t, {static_cast<int64_t>(v.size())}, v);
  std::vector<int64_t> iv(v.begin(), v.end());
  return int_tensor(t, iv);
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_int(i));
  return v;
}

TEST(PowInteger, ReferenceGivesExactPowers) {
  for (const PowCase& c : pow_cases()) {
    SCOPED_TRACE(dtype_name(c.base) + " ^ " + dtype_name(c.exp));
    OneNode n("Pow");
    const int64_t len = static_cast<int64_t>(c.x.size());
    n.input(c.base, {len}).input(c.exp, {len});
    ASSERT_TRUE(n.build().is_ok());
    auto out = n.run({input_tensor(c.base, c.x), input_tensor(c.exp, c.n)});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(ints(out.value()[0]), c.want);
  }
}

// Runs every case's kernel through `run` (CPU emulation or GPU) and compares with the hand values.
void check_kernels(const std::function<Status(size_t, const Lowering&, std::map<ValueId, Tensor>&)>& run,
                   std::vector<std::unique_ptr<OneNode>>& nodes, std::vector<Lowering>& lowerings) {
  std::vector<PowCase> cases = pow_cases();
  for (size_t r = 0; r < cases.size(); ++r) {
    const PowCase& c = cases[r];
    SCOPED_TRACE(dtype_name(c.base) + " ^ " + dtype_name(c.exp));
    const Node& node = nodes[r]->built();
    std::map<ValueId, Tensor> values;
    values[node.inputs[0]] = input_tensor(c.base, c.x);
    values[node.inputs[1]] = input_tensor(c.exp, c.n);
    Tensor poisoned(c.base, {static_cast<int64_t>(c.x.size())});
    std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
    values[node.outputs[0]] = poisoned;
    Status s = run(r, lowerings[r], values);
    ASSERT_TRUE(s.is_ok()) << s.message();
    EXPECT_EQ(ints(values[node.outputs[0]]), c.want);
  }
}

void lower_all(std::vector<std::unique_ptr<OneNode>>& nodes, std::vector<Lowering>& lowerings) {
  for (const PowCase& c : pow_cases()) {
    nodes.push_back(std::make_unique<OneNode>("Pow"));
    const int64_t len = static_cast<int64_t>(c.x.size());
    nodes.back()->input(c.base, {len}).input(c.exp, {len});
    ASSERT_TRUE(nodes.back()->build().is_ok());
    const Node& node = nodes.back()->built();
    auto l = default_registry().find("Pow")->lower(node, nodes.back()->graph);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    lowerings.push_back(*l);
  }
}

TEST(PowInteger, KernelEmulatedOnCpuGivesExactPowers) {
  std::vector<std::unique_ptr<OneNode>> nodes;
  std::vector<Lowering> lowerings;
  lower_all(nodes, lowerings);
  std::string source = "#include <cmath>\n";
  for (size_t r = 0; r < lowerings.size(); ++r) {
    ASSERT_EQ(lowerings[r].steps.size(), 1u);
    auto text = testing_util::render_kernel(lowerings[r].steps[0].kernel, "p" + std::to_string(r) + "_k0");
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    source += *text + "\n";
  }
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, source);
  check_kernels([&](size_t r, const Lowering& l, std::map<ValueId, Tensor>& v) {
    return testing_util::run_on_cpu(*handle, "p" + std::to_string(r) + "_", l, v);
  }, nodes, lowerings);
}

TEST(PowInteger, KernelOnGpuGivesExactPowers) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  std::vector<std::unique_ptr<OneNode>> nodes;
  std::vector<Lowering> lowerings;
  lower_all(nodes, lowerings);
  check_kernels([&](size_t, const Lowering& l, std::map<ValueId, Tensor>& v) { return gpu->run(l, v); }, nodes,
                lowerings);
}

}  // namespace
}  // namespace aotc
