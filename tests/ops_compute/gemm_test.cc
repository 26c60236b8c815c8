// Gemm / FusedGemm / MatMul: shapes (numpy MatMul rules, 1-D operands, broadcast batch dims),
// references against plain loops written here, error cases, and how the lowering splits the work
// between the cuBLASLt step and the epilogue / broadcast kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "tests/ops_compute/kernel_harness.h"
#include "tests/ops_compute/test_util.h"

namespace aotc {
namespace {

using testing_util::one_node;
using testing_util::random_tensor;
using testing_util::run_one;
using testing_util::tensors_close;

// y[i][j] = alpha * sum_p A'[i][p] B'[p][j] + beta * C[i % cr][j % cc] (+ R likewise)
std::vector<double> plain_gemm(const Tensor& a, const Tensor& b, const Tensor* c, const Tensor* r, bool ta, bool tb,
                               double alpha, double beta) {
  const int64_t m = ta ? a.shape()[1] : a.shape()[0], k = ta ? a.shape()[0] : a.shape()[1];
  const int64_t n = tb ? b.shape()[0] : b.shape()[1];
  auto at = [&](const Tensor* t, int64_t i, int64_t j) {
    Shape s = t->shape();
    while (s.size() < 2) s.insert(s.begin(), 1);
    return t->get((i % s[0]) * s[1] + j % s[1]);
  };
  std::vector<double> y;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += (ta ? a.get(p * m + i) : a.get(i * k + p)) * (tb ? b.get(j * k + p) : b.get(p * n + j));
      double v = alpha * s;
      if (c) v += beta * at(c, i, j);
      if (r) v += at(r, i, j);
      y.push_back(v);
    }
  return y;
}

TEST(Gemm, AllAttributesAndBroadcastC) {
  struct Case { Shape c; int ta, tb; float alpha, beta; };
  const Case cases[] = {{{5, 7}, 0, 0, 1.f, 1.f}, {{7}, 1, 0, 0.5f, 1.f}, {{1, 7}, 0, 1, 1.f, 2.5f},
                        {{5, 1}, 1, 1, -1.25f, 0.5f}, {{1}, 0, 0, 1.f, -2.f}, {{}, 1, 1, 3.f, 1.f}};
  int seed = 40;
  for (const Case& c : cases) {
    Shape as = c.ta ? Shape{3, 5} : Shape{5, 3}, bs = c.tb ? Shape{7, 3} : Shape{3, 7};
    auto g = one_node("Gemm", {{"a", as}, {"b", bs}, {"c", c.c}},
                      {{"transA", Attribute::of_int(c.ta)}, {"transB", Attribute::of_int(c.tb)},
                       {"alpha", Attribute::of_float(c.alpha)}, {"beta", Attribute::of_float(c.beta)}});
    Tensor a = random_tensor(DType::kFloat32, as, seed++), b = random_tensor(DType::kFloat32, bs, seed++);
    Tensor cc = random_tensor(DType::kFloat32, c.c, seed++);
    auto out = run_one(g, {a, b, cc});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value()[0].shape(), (Shape{5, 7}));
    EXPECT_TRUE(tensors_close(out.value()[0], plain_gemm(a, b, &cc, nullptr, c.ta, c.tb, c.alpha, c.beta), DType::kFloat32))
        << "C " << shape_str(c.c);
  }
}

TEST(Gemm, NoCAndFloat16) {
  auto g = one_node("Gemm", {{"a", {1, 13}}, {"b", {13, 2}}}, {}, 1, DType::kFloat16);
  Tensor a = random_tensor(DType::kFloat16, {1, 13}, 50), b = random_tensor(DType::kFloat16, {13, 2}, 51);
  auto out = run_one(g, {a, b});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_TRUE(tensors_close(out.value()[0], plain_gemm(a, b, nullptr, nullptr, false, false, 1, 0), DType::kFloat16));
}

TEST(Gemm, FusedGemmResidualAndActivation) {
  auto g = one_node("FusedGemm", {{"a", {4, 6}}, {"b", {3, 6}}, {"c", {3}}, {"r", {4, 3}}},
                    {{"transB", Attribute::of_int(1)}, {"alpha", Attribute::of_float(2.f)}}, 1, DType::kFloat32, "aotc");
  Node relu;
  relu.op_type = "Relu";
  store_activation(g.node(), relu);
  Tensor a = random_tensor(DType::kFloat32, {4, 6}, 52), b = random_tensor(DType::kFloat32, {3, 6}, 53);
  Tensor c = random_tensor(DType::kFloat32, {3}, 54), r = random_tensor(DType::kFloat32, {4, 3}, 55);
  auto out = run_one(g, {a, b, c, r});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  std::vector<double> want = plain_gemm(a, b, &c, &r, false, true, 2, 1);
  EXPECT_GT(std::count_if(want.begin(), want.end(), [](double v) { return v < 0; }), 0);
  for (double& v : want) v = std::max(v, 0.0);
  EXPECT_TRUE(tensors_close(out.value()[0], want, DType::kFloat32));
}

Status infer_status(const std::string& op, const std::vector<std::pair<std::string, Shape>>& in, Attributes a = {},
                    DType t = DType::kFloat32) {
  auto g = one_node(op, in, std::move(a), 1, t);
  return infer_shapes(g.graph);
}

void expect_error(const Status& s, const std::string& op, const std::string& part) {
  ASSERT_FALSE(s.is_ok()) << part;
  EXPECT_NE(s.message().find("node 'n0' (" + op + ")"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
}

TEST(Gemm, Errors) {
  expect_error(infer_status("Gemm", {{"a", {2, 3}}, {"b", {4, 5}}}), "Gemm", "inner dims");
  expect_error(infer_status("Gemm", {{"a", {2, 3}}, {"b", {3, 5}}, {"c", {2, 4}}}), "Gemm", "does not broadcast");
  expect_error(infer_status("Gemm", {{"a", {2, 3}}, {"b", {3, 5}}, {"c", {3, 5}}}), "Gemm", "does not broadcast");
  expect_error(infer_status("Gemm", {{"a", {2, 3, 1}}, {"b", {3, 5}}}), "Gemm", "rank 3");
  expect_error(infer_status("Gemm", {{"a", {2, 3}}, {"b", {3, 5}}}, {}, DType::kInt64), "Gemm", "int64");
  expect_error(infer_status("MatMul", {{"a", {2, 3}}, {"b", {4, 5}}}), "MatMul", "inner dims");
  expect_error(infer_status("MatMul", {{"a", {2, 2, 3}}, {"b", {3, 3, 5}}}), "MatMul", "do not broadcast");
  expect_error(infer_status("MatMul", {{"a", {2, 3}}, {"b", {3, 5}}}, {}, DType::kInt32), "MatMul", "int32");
}

// Numpy matmul by explicit index arithmetic over the broadcast batch.
std::vector<double> plain_matmul(const Tensor& a, const Tensor& b) {
  Shape as = a.shape(), bs = b.shape();
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  const size_t rank = std::max(as.size(), bs.size());
  while (as.size() < rank) as.insert(as.begin(), 1);
  while (bs.size() < rank) bs.insert(bs.begin(), 1);
  const int64_t m = as[rank - 2], k = as[rank - 1], n = bs[rank - 1];
  Shape batch;
  for (size_t i = 0; i + 2 < rank; ++i) batch.push_back(std::max(as[i], bs[i]));
  std::vector<double> y;
  for (int64_t flat = 0; flat < shape_numel(batch); ++flat) {
    std::vector<int64_t> idx(batch.size());
    for (int64_t i = static_cast<int64_t>(batch.size()) - 1, rest = flat; i >= 0; --i) {
      idx[static_cast<size_t>(i)] = rest % batch[static_cast<size_t>(i)];
      rest /= batch[static_cast<size_t>(i)];
    }
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      oa = oa * as[i] + (as[i] == 1 ? 0 : idx[i]);
      ob = ob * bs[i] + (bs[i] == 1 ? 0 : idx[i]);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += a.get((oa * m + i) * k + p) * b.get((ob * k + p) * n + j);
        y.push_back(s);
      }
  }
  return y;
}

TEST(MatMul, NumpySemantics) {
  struct Case { Shape a, b, out; };
  const Case cases[] = {
      {{3}, {3}, {}},                       // dot product
      {{3}, {3, 5}, {5}},                   // vector x matrix
      {{4, 3}, {3}, {4}},                   // matrix x vector
      {{2, 5, 3}, {3}, {2, 5}},             // batched x vector
      {{3}, {2, 3, 7}, {2, 7}},             // vector x batched
      {{2, 5, 3}, {3, 7}, {2, 5, 7}},       // shared B
      {{5, 3}, {2, 3, 7}, {2, 5, 7}},       // shared A
      {{2, 1, 5, 3}, {1, 3, 3, 7}, {2, 3, 5, 7}},  // both broadcast
      {{2, 3, 5, 3}, {3, 3, 7}, {2, 3, 5, 7}},     // B broadcast along the first dim only
      {{1, 1}, {1, 1}, {1, 1}},
  };
  int seed = 60;
  for (const Case& c : cases) {
    auto g = one_node("MatMul", {{"a", c.a}, {"b", c.b}});
    Tensor a = random_tensor(DType::kFloat32, c.a, seed++), b = random_tensor(DType::kFloat32, c.b, seed++);
    auto out = run_one(g, {a, b});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value()[0].shape(), c.out) << shape_str(c.a) << " x " << shape_str(c.b);
    EXPECT_TRUE(tensors_close(out.value()[0], plain_matmul(a, b), DType::kFloat32)) << shape_str(c.a) << " x " << shape_str(c.b);
  }
}

// The cuBLASLt lowering (MatmulSteps): few-row fp32 GEMMs take the CUTLASS SIMT GEMM by default
// (Target::gemm_fp32_simt), which tests/codegen/cutlass_gemm_test.cc and the GPU tests check.
Expected<Lowering> lower(testing_util::OneNode& g) {
  g.graph.target.gemm_fp32_simt = false;
  Status s = infer_shapes(g.graph);
  if (!s.is_ok()) return s;
  return default_registry().find(g.node().op_type, g.node().domain)->lower(g.node(), g.graph);
}

TEST(Gemm, TanhGeluGoesToTheMatmulEpilogueErfGeluDoesNot) {
  for (const char* approximate : {"tanh", "none"}) {
    auto g = one_node("FusedGemm", {{"a", {8, 4}}, {"b", {4, 6}}, {"c", {6}}}, {}, 1, DType::kFloat16, "aotc");
    Node gelu;
    gelu.op_type = "Gelu";
    gelu.attrs["approximate"] = Attribute::of_string(approximate);
    store_activation(g.node(), gelu);
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    const bool tanh = std::string(approximate) == "tanh";
    // tanh: cuBLASLt's GELU_BIAS epilogue (its documented formula is the tanh form); erf: the
    // bias epilogue, then the epilogue kernel applies the exact GELU.
    ASSERT_EQ(l->steps.size(), tanh ? 1u : 2u) << approximate;
    EXPECT_EQ(l->steps[0].matmul.epilogue, tanh ? MatmulStep::Epilogue::kBiasGelu : MatmulStep::Epilogue::kBias);
    EXPECT_EQ(l->steps[0].matmul.bias, g.node().inputs[2]);
  }
}

TEST(Gemm, LoweringUsesMatmulEpilogueWhereExact) {
  {  // C as a row vector with beta 1 and Relu: one cuBLASLt call with the bias+ReLU epilogue.
    auto g = one_node("FusedGemm", {{"a", {8, 4}}, {"b", {6, 4}}, {"c", {6}}}, {{"transB", Attribute::of_int(1)}}, 1,
                      DType::kFloat32, "aotc");
    Node relu;
    relu.op_type = "Relu";
    store_activation(g.node(), relu);
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    ASSERT_EQ(l->steps.size(), 1u);
    const MatmulStep& m = l->steps[0].matmul;
    EXPECT_EQ(l->steps[0].kind, LoweredStep::Kind::kMatmul);
    EXPECT_EQ(m.epilogue, MatmulStep::Epilogue::kBiasRelu);
    EXPECT_EQ(m.bias, g.node().inputs[2]);
    EXPECT_TRUE(m.trans_b);
    EXPECT_EQ(m.m, 8);
    EXPECT_EQ(m.n, 6);
    EXPECT_EQ(m.k, 4);
    EXPECT_EQ(m.lda, 4);
    EXPECT_EQ(m.ldb, 4);
    EXPECT_EQ(m.ldd, 6);
  }
  {  // Column-vector C with beta 0.5: the product, then the epilogue kernel adds beta * C.
    auto g = one_node("Gemm", {{"a", {8, 4}}, {"b", {4, 6}}, {"c", {8, 1}}}, {{"beta", Attribute::of_float(0.5f)}});
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    ASSERT_EQ(l->steps.size(), 2u);
    EXPECT_EQ(l->steps[0].matmul.c, kNullArg);
    EXPECT_EQ(l->steps[0].matmul.beta, 0.f);
    const KernelStep& k = l->steps[1].kernel;
    EXPECT_EQ(k.template_name, "gemm_epilogue");
    EXPECT_EQ(k.args, (std::vector<ValueId>{g.node().outputs[0], g.node().inputs[2], kNullArg}));
  }
  {  // Full C: cuBLASLt's own beta * C.
    auto g = one_node("Gemm", {{"a", {8, 4}}, {"b", {4, 6}}, {"c", {8, 6}}}, {{"beta", Attribute::of_float(0.5f)}});
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok());
    ASSERT_EQ(l->steps.size(), 1u);
    EXPECT_EQ(l->steps[0].matmul.c, g.node().inputs[2]);
    EXPECT_EQ(l->steps[0].matmul.beta, 0.5f);
  }
}

TEST(MatMul, LoweringBatchStridesOrBroadcastKernel) {
  {  // [2,5,3] x [3,7]: folded into one 10 x 7 GEMM.
    auto g = one_node("MatMul", {{"a", {2, 5, 3}}, {"b", {3, 7}}});
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok());
    EXPECT_EQ(l->steps[0].matmul.m, 10);
    EXPECT_EQ(l->steps[0].matmul.batch, 1);
  }
  {  // [5,3] x [4,3,7]: strided batch with A shared.
    auto g = one_node("MatMul", {{"a", {5, 3}}, {"b", {4, 3, 7}}});
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok());
    const MatmulStep& m = l->steps[0].matmul;
    EXPECT_EQ(m.batch, 4);
    EXPECT_EQ(m.stride_a, 0);
    EXPECT_EQ(m.stride_b, 21);
    EXPECT_EQ(m.stride_d, 35);
  }
  {  // [2,1,5,3] x [1,3,3,7]: no single stride; the broadcast kernel.
    auto g = one_node("MatMul", {{"a", {2, 1, 5, 3}}, {"b", {1, 3, 3, 7}}});
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok());
    ASSERT_EQ(l->steps.size(), 1u);
    EXPECT_EQ(l->steps[0].kind, LoweredStep::Kind::kKernel);
    EXPECT_EQ(l->steps[0].kernel.template_name, "gemm_batched_broadcast");
    EXPECT_EQ(l->steps[0].kernel.grid.z, 6);
  }
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// Lowerings made only of MatmulSteps, executed on the CPU exactly as ir/lowering.h documents
// MatmulStep (testing_util::emulate_matmul), must reproduce the reference: this checks m/n/k,
// leading dims, transposes, batch strides and the batch folding without a GPU.
TEST(MatMul, MatmulStepsReproduceReferenceWhenEmulated) {
  struct Case { std::string op; Shape a, b, c; Attributes attrs; };
  const Case cases[] = {
      {"MatMul", {3}, {3}, {}, {}},
      {"MatMul", {3}, {3, 5}, {}, {}},
      {"MatMul", {4, 3}, {3}, {}, {}},
      {"MatMul", {2, 5, 3}, {3, 7}, {}, {}},
      {"MatMul", {5, 3}, {2, 3, 7}, {}, {}},
      {"MatMul", {2, 3, 5, 3}, {2, 3, 3, 7}, {}, {}},
      {"MatMul", {3}, {2, 3, 7}, {}, {}},
      {"Gemm", {3, 5}, {7, 3}, {5, 7}, {{"transA", Attribute::of_int(1)}, {"transB", Attribute::of_int(1)}, {"beta", Attribute::of_float(0.5f)}}},
      {"Gemm", {5, 3}, {3, 7}, {1, 7}, {{"alpha", Attribute::of_float(-2.f)}}},
      {"Gemm", {5, 3}, {3, 7}, {}, {}},
  };
  uint32_t seed = 90;
  for (const Case& c : cases) {
    std::vector<std::pair<std::string, Shape>> ins = {{"a", c.a}, {"b", c.b}};
    if (c.op == "Gemm" && !c.c.empty()) ins.push_back({"c", c.c});
    auto g = one_node(c.op, ins, c.attrs);
    auto l = lower(g);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    std::vector<Tensor> inputs;
    std::map<ValueId, Tensor> values;
    for (ValueId id : g.graph.inputs) {
      inputs.push_back(random_tensor(DType::kFloat32, g.graph.value(id).shape, seed++));
      values[id] = inputs.back();
    }
    auto want = evaluate_graph(g.graph, inputs);
    ASSERT_TRUE(want.is_ok());
    const Value& y = g.graph.value(g.node().outputs[0]);
    Tensor poisoned(y.dtype, y.shape);
    for (int64_t i = 0; i < poisoned.numel(); ++i) poisoned.set(i, std::nan(""));
    values[g.node().outputs[0]] = poisoned;
    for (const LoweredStep& s : l->steps) {
      ASSERT_EQ(s.kind, LoweredStep::Kind::kMatmul) << shape_str(c.a) << " x " << shape_str(c.b);
      ASSERT_TRUE(testing_util::emulate_matmul(s.matmul, values).is_ok());
    }
    EXPECT_TRUE(tensors_close(values[g.node().outputs[0]], want.value()[0])) << c.op << " " << shape_str(c.a) << " x " << shape_str(c.b);
  }
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

TEST(MatMul, DoubleUsesKernelAndDoubleGemmIsRefused) {
  auto mm = one_node("MatMul", {{"a", {4, 3}}, {"b", {3, 2}}}, {}, 1, DType::kFloat64);
  auto l = lower(mm);
  ASSERT_TRUE(l.is_ok()) << l.status().message();
  ASSERT_EQ(l->steps.size(), 1u);
  EXPECT_EQ(l->steps[0].kernel.template_name, "gemm_batched_broadcast");
  auto gm = one_node("Gemm", {{"a", {4, 3}}, {"b", {3, 2}}}, {}, 1, DType::kFloat64);
  auto l2 = lower(gm);
  ASSERT_FALSE(l2.is_ok());
  EXPECT_NE(l2.status().message().find("node 'n0' (Gemm): double"), std::string::npos) << l2.status().message();
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// --matmul-impl reference: each MatmulStep as aotc's own kernel (templates/gemm_reference.cu.in,
// ir/ops/gemm.cc matmul_reference_kernel) must compute what the step describes - checked on the
// CPU emulation against testing_util::emulate_matmul (the step's documented semantics, which the
// cuBLASLt path is tested against on the GPU) over transposes, leading dims, batch strides (a
// shared B), C with beta (in place: C = D), bias, ReLU and tanh GELU, fp16 with a float32 D.
TEST(MatMul, ReferenceKernelComputesWhatTheMatmulStepSays) {
  using E = MatmulStep::Epilogue;
  struct Case {
    const char* label;
    MatmulStep m;
  };
  auto step = [](DType t, int64_t m, int64_t n, int64_t k, int64_t batch, bool ta, bool tb) {
    MatmulStep s;
    s.dtype = t;
    s.a = 0, s.b = 1, s.d = 3;
    s.m = m, s.n = n, s.k = k, s.batch = batch;
    s.trans_a = ta, s.trans_b = tb;
    s.lda = (ta ? m : k) + 3;  // padded rows: the leading dims are read, not assumed
    s.ldb = (tb ? k : n) + 1;
    s.ldc = s.ldd = n + 2;
    s.stride_a = (ta ? k * s.lda : m * s.lda) + 5;
    s.stride_b = (tb ? n * s.ldb : k * s.ldb);
    s.stride_c = s.stride_d = m * s.ldd + 7;
    return s;
  };
  std::vector<Case> cases;
  {
    MatmulStep s = step(DType::kFloat32, 5, 7, 3, 1, false, false);
    cases.push_back({"fp32 plain", s});
  }
  {
    MatmulStep s = step(DType::kFloat32, 4, 6, 9, 3, true, true);
    s.alpha = -1.5f;
    s.c = 2, s.beta = 0.5f;
    s.bias = 4, s.epilogue = E::kBiasRelu;
    cases.push_back({"fp32 batched transposed, C beta 0.5, bias, ReLU", s});
  }
  {
    MatmulStep s = step(DType::kFloat16, 6, 8, 16, 2, false, true);
    s.stride_b = 0;  // one B for every batch
    s.c = 3, s.beta = 1.0f;  // the residual in place: C is D
    s.bias = 4, s.epilogue = E::kBiasGelu;
    cases.push_back({"fp16 shared B, C = D, bias, GELU", s});
  }
  {
    MatmulStep s = step(DType::kFloat16, 3, 16, 8, 1, false, false);
    s.d_dtype = DType::kFloat32;
    s.bias = 4, s.epilogue = E::kBias;
    cases.push_back({"fp16 x fp16 -> float32 D with a float32 bias", s});
  }
  {
    MatmulStep s = step(DType::kFloat32, 1, 1, 1, 1, false, false);
    s.epilogue = E::kRelu;
    cases.push_back({"1x1x1 ReLU", s});
  }
  std::string source;
  for (size_t r = 0; r < cases.size(); ++r) {
    auto text = testing_util::render_kernel(matmul_reference_kernel(cases[r].m, cases[r].label), "c" + std::to_string(r) + "_k0");
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    source += *text + "\n";
  }
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, source);
  uint32_t seed = 300;
  for (size_t r = 0; r < cases.size(); ++r) {
    SCOPED_TRACE(cases[r].label);
    const MatmulStep& m = cases[r].m;
    const DType td = m.d_dtype == DType::kUndefined ? m.dtype : m.d_dtype;
    const int64_t a_size = (m.batch - 1) * m.stride_a + (m.trans_a ? m.k * m.lda : m.m * m.lda);
    const int64_t b_size = (m.batch - 1) * m.stride_b + (m.trans_b ? m.n * m.ldb : m.k * m.ldb);
    const int64_t d_size = (m.batch - 1) * m.stride_d + m.m * m.ldd;
    std::map<ValueId, Tensor> want;
    want[0] = random_tensor(m.dtype, {a_size}, seed++);
    want[1] = random_tensor(m.dtype, {b_size}, seed++);
    if (m.c == 2) want[2] = random_tensor(td, {d_size}, seed++);
    want[3] = random_tensor(td, {d_size}, seed++);  // D's padding must stay as it was; C = D reads it
    if (m.bias == 4) want[4] = random_tensor(td, {m.n}, seed++);
    std::map<ValueId, Tensor> got = want;
    ASSERT_TRUE(testing_util::emulate_matmul(m, want).is_ok());
    Lowering l;
    l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, matmul_reference_kernel(m, cases[r].label), {}});
    ASSERT_TRUE(testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", l, got).is_ok());
    EXPECT_TRUE(tensors_close(got[3], want[3]));
  }
}

}  // namespace
}  // namespace aotc
