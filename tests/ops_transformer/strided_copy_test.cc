// aotc.StridedCopy and aotc.MatMulT (issue 7's data-movement fusion): references against values
// computed by hand and against the ops they replace (Mul's reference for the scale, MatMul of
// explicitly transposed operands), shape inference and its errors; every lowering (1) rendered
// and compiled with nvcc for sm_90, (2) run on the CPU through the CUDA emulation of
// tests/ops_compute (matmul steps through emulate_matmul, from the MatmulStep description) and
// (3) with a GPU, run there; outputs compared with the CPU reference.
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "tests/ops_basic/ops_test_util.h"
#include "tests/ops_compute/kernel_harness.h"

namespace aotc {
namespace {

using test::OneNode;
using Ints = std::vector<int64_t>;

Attribute ints(Ints v) { return Attribute::of_ints(std::move(v)); }

std::unique_ptr<OneNode> strided_copy(DType t, Shape in, Ints dims, Ints strides, int64_t base, Ints shape,
                                      std::optional<float> scale = std::nullopt) {
  auto n = std::make_unique<OneNode>("StridedCopy");
  n->node.domain = "aotc";
  n->input(t, std::move(in)).attr("dims", ints(std::move(dims))).attr("strides", ints(std::move(strides)));
  n->attr("base", Attribute::of_int(base)).attr("shape", ints(std::move(shape)));
  if (scale) n->attr("scale", Attribute::of_float(*scale));
  return n;
}

std::unique_ptr<OneNode> matmul_t(DType t, Shape a, Shape b, int ta, int tb) {
  auto n = std::make_unique<OneNode>("MatMulT");
  n->node.domain = "aotc";
  n->input(t, std::move(a)).input(t, std::move(b));
  n->attr("transA", Attribute::of_int(ta)).attr("transB", Attribute::of_int(tb));
  return n;
}

Tensor iota(DType t, Shape s) {
  Tensor x(t, std::move(s));
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i));
  return x;
}

Tensor lcg_tensor(DType t, Shape s, uint32_t seed) {
  Tensor x(t, std::move(s));
  std::vector<double> v = test::lcg_values(x.numel(), -2, 2, seed);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, v[static_cast<size_t>(i)]);
  return x;
}

TEST(StridedCopy, ReferenceByHand) {
  // x = 0..11 as [3, 4]; view dims [2, 3] strides [1, 4] from offset 1 reads 1, 5, 9, 2, 6, 10,
  // written as shape [3, 2].
  auto n = strided_copy(DType::kFloat32, {3, 4}, {2, 3}, {1, 4}, 1, {3, 2});
  ASSERT_TRUE(n->build().is_ok());
  EXPECT_EQ(n->out().shape, (Shape{3, 2}));
  auto y = n->run({iota(DType::kFloat32, {3, 4})});
  ASSERT_TRUE(y.is_ok()) << y.status().message();
  const std::vector<double> want = {1, 5, 9, 2, 6, 10};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ((*y)[0].get(i), want[static_cast<size_t>(i)]) << i;

  // Negative stride, int64, no dims at all (one element).
  auto r = strided_copy(DType::kInt64, {5}, {5}, {-1}, 4, {5});
  ASSERT_TRUE(r->build().is_ok());
  auto ry = r->run({iota(DType::kInt64, {5})});
  ASSERT_TRUE(ry.is_ok());
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ((*ry)[0].get_int(i), 4 - i);
  auto one = strided_copy(DType::kFloat16, {2, 3}, {}, {}, 4, {1, 1});
  ASSERT_TRUE(one->build().is_ok());
  auto oy = one->run({iota(DType::kFloat16, {2, 3})});
  ASSERT_TRUE(oy.is_ok());
  EXPECT_EQ((*oy)[0].get(0), 4.0);
}

TEST(StridedCopy, ScaleRoundsLikeTheMulKernel) {
  // fp16: 3 * 0.5 = 1.5 exactly; against Mul's reference on every element of a random input
  // with a scale that fp16 rounds (0.7071 -> 0.70703125).
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    Tensor sc(t, {});
    sc.set(0, t == DType::kFloat64 ? 0.70703125 : 0.7071);  // fp64: a value float holds exactly
    const float s = static_cast<float>(sc.get(0));
    auto n = strided_copy(t, {4, 6}, {6, 4}, {1, 6}, 0, {6, 4}, s);
    ASSERT_TRUE(n->build().is_ok()) << dtype_name(t);
    Tensor x = lcg_tensor(t, {4, 6}, 5);
    auto y = n->run({x});
    ASSERT_TRUE(y.is_ok()) << y.status().message();
    OneNode tr("Transpose");
    tr.input(t, {4, 6});
    ASSERT_TRUE(tr.build().is_ok());
    Tensor xt = (*tr.run({x}))[0];
    OneNode mul("Mul");
    mul.input(t, {6, 4}).constant(sc);
    ASSERT_TRUE(mul.build().is_ok());
    auto want = mul.run({xt});
    ASSERT_TRUE(want.is_ok());
    EXPECT_EQ(std::memcmp((*y)[0].raw(), (*want)[0].raw(), static_cast<size_t>((*want)[0].byte_size())), 0)
        << dtype_name(t) << ": not bit-identical to Transpose + Mul";
  }
  auto h = strided_copy(DType::kFloat16, {1}, {1}, {1}, 0, {1}, 0.5f);
  ASSERT_TRUE(h->build().is_ok());
  Tensor three(DType::kFloat16, {1});
  three.set(0, 3.0);
  EXPECT_EQ((*h->run({three}))[0].get(0), 1.5);
}

TEST(StridedCopy, InferenceErrors) {
  auto expect_error = [](std::unique_ptr<OneNode> n, const std::string& what) {
    Status s = n->build();
    ASSERT_FALSE(s.is_ok()) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  };
  expect_error(strided_copy(DType::kFloat32, {3, 4}, {2, 3}, {1}, 0, {6}), "strides 1");
  expect_error(strided_copy(DType::kFloat32, {3, 4}, {2, 3}, {1, 4}, 0, {5}), "differ in size");
  expect_error(strided_copy(DType::kFloat32, {3, 4}, {2, 3}, {1, 4}, 4, {6}), "outside an input of 12");
  expect_error(strided_copy(DType::kFloat32, {3, 4}, {2, 3}, {-1, 4}, 0, {6}), "outside");
  expect_error(strided_copy(DType::kInt32, {3, 4}, {2}, {1}, 0, {2}, 2.0f), "a scale needs a float input");
  auto missing = std::make_unique<OneNode>("StridedCopy");
  missing->node.domain = "aotc";
  missing->input(DType::kFloat32, {3});
  expect_error(std::move(missing), "attribute 'dims' (ints) is required");
}

TEST(MatMulT, ReferenceByHandAndAgainstMatMulOfTransposedOperands) {
  // A stored [[1, 2], [3, 4]] read transposed: [[1, 3], [2, 4]] x [[1, 0], [1, 1]] = [[4, 3], [6, 4]].
  auto n = matmul_t(DType::kFloat32, {2, 2}, {2, 2}, 1, 0);
  ASSERT_TRUE(n->build().is_ok());
  Tensor a = test::make_tensor(DType::kFloat32, {2, 2}, {1, 2, 3, 4});
  Tensor b = test::make_tensor(DType::kFloat32, {2, 2}, {1, 0, 1, 1});
  auto y = n->run({a, b});
  ASSERT_TRUE(y.is_ok());
  const std::vector<double> want = {4, 3, 6, 4};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((*y)[0].get(i), want[static_cast<size_t>(i)]);

  struct Case { Shape a, b; int ta, tb; };
  const Case cases[] = {{{3, 5}, {7, 3}, 1, 1}, {{2, 3, 5, 4}, {2, 3, 6, 4}, 0, 1}, {{4, 5}, {2, 3, 4, 7}, 1, 0},
                        {{2, 1, 4, 5}, {1, 3, 7, 5}, 0, 1}, {{9, 3, 5}, {3, 7}, 1, 0}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    auto t = matmul_t(DType::kFloat32, c.a, c.b, c.ta, c.tb);
    ASSERT_TRUE(t->build().is_ok()) << shape_str(c.a) << " x " << shape_str(c.b);
    Tensor ta = lcg_tensor(DType::kFloat32, c.a, seed++), tb = lcg_tensor(DType::kFloat32, c.b, seed++);
    // The independent computation: transpose the operands with Transpose, multiply with MatMul.
    auto swapped = [](const Tensor& x) {
      OneNode tr("Transpose");
      std::vector<int64_t> perm;
      for (int64_t i = 0; i < x.rank(); ++i) perm.push_back(i);
      std::swap(perm[perm.size() - 2], perm.back());
      tr.input(x.dtype(), x.shape()).attr("perm", Attribute::of_ints(perm));
      EXPECT_TRUE(tr.build().is_ok());
      return (*tr.run({x}))[0];
    };
    Tensor pa = c.ta ? swapped(ta) : ta, pb = c.tb ? swapped(tb) : tb;
    OneNode mm("MatMul");
    mm.input(DType::kFloat32, pa.shape()).input(DType::kFloat32, pb.shape());
    ASSERT_TRUE(mm.build().is_ok());
    auto want_t = mm.run({pa, pb});
    auto got = t->run({ta, tb});
    ASSERT_TRUE(got.is_ok() && want_t.is_ok());
    EXPECT_EQ((*got)[0].shape(), (*want_t)[0].shape());
    EXPECT_TRUE(test::compare_tensors((*got)[0], (*want_t)[0]).empty()) << shape_str(c.a) << " x " << shape_str(c.b);
  }
  Status bad = matmul_t(DType::kFloat32, {3}, {3, 2}, 1, 0)->build();
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("transA needs an operand of rank >= 2"), std::string::npos) << bad.message();
  Status inner = matmul_t(DType::kFloat32, {3, 5}, {3, 7}, 0, 0)->build();
  EXPECT_FALSE(inner.is_ok());
}

// ---- kernels: render, nvcc, CPU emulation, GPU ----

struct Built {
  std::string label;
  std::unique_ptr<OneNode> node;
  Lowering lowering;
};

std::vector<Built> build_all() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, f64 = DType::kFloat64;
  std::vector<std::pair<std::string, std::unique_ptr<OneNode>>> c;
  // The ViT head split at S=7 (prime), B=3, E=12, H=3, D=4: [B, H, S, D] from [S, B, 3E].
  c.push_back({"copy f16 head split scaled",
               strided_copy(f16, {7, 3, 36}, {3, 3, 7, 4}, {36, 4, 108, 1}, 12, {3, 3, 7, 4}, 0.70703125f)});
  c.push_back({"copy f32 transpose unscaled", strided_copy(f32, {5, 13}, {13, 5}, {1, 13}, 0, {13, 5})});
  c.push_back({"copy f64 reversed scaled", strided_copy(f64, {2, 9}, {2, 9}, {9, -1}, 8, {18}, -1.5f)});
  {  // GPT-2's padded logits: drop the padding columns and convert fp16 -> fp32 in one pass
    auto n = strided_copy(f16, {6, 16}, {6, 13}, {16, 1}, 0, {6, 13});
    n->attr("to", Attribute::of_int(static_cast<int64_t>(f32)));
    c.push_back({"copy f16 slice to f32", std::move(n)});
    auto d = strided_copy(f32, {4, 10}, {10, 4}, {1, 10}, 0, {10, 4});
    d->attr("to", Attribute::of_int(static_cast<int64_t>(f16)));
    c.push_back({"copy f32 transpose to f16 (rounds)", std::move(d)});
  }
  {  // the same at sizes that take the row kernel (rows of at least one 2048-element tile): 2049 of
     // 2056 padded columns (a last tile of one element, a partial 8-element chunk)
    auto n = strided_copy(f16, {2, 2056}, {2, 2049}, {2056, 1}, 0, {2, 2049});
    n->attr("to", Attribute::of_int(static_cast<int64_t>(f32)));
    c.push_back({"copy f16 rows to f32 (row kernel)", std::move(n)});
    c.push_back({"copy f16 rows from offset 8 (row kernel, raw bits)",
                 strided_copy(f16, {3, 2064}, {2, 2050}, {2064, 1}, 8, {2, 2050})});
    auto w = strided_copy(f16, {3, 2112}, {3, 2101}, {2112, 1}, 0, {3, 2101});  // two tiles a row
    w->attr("to", Attribute::of_int(static_cast<int64_t>(f32)));
    c.push_back({"copy f16 long rows to f32 (row kernel, 2 tiles)", std::move(w)});
  }
  c.push_back({"copy int64 pieces", strided_copy(DType::kInt64, {4, 6}, {3, 2, 4}, {1, 3, 6}, 0, {6, 4})});
  c.push_back({"copy f16 one element", strided_copy(f16, {3}, {}, {}, 2, {1})});
  c.push_back({"matmulT f32 transB batched", matmul_t(f32, {2, 3, 5, 4}, {2, 3, 6, 4}, 0, 1)});
  c.push_back({"matmulT f16 transA, B shared", matmul_t(f16, {3, 4, 5}, {4, 7}, 1, 0)});
  c.push_back({"matmulT f32 both, broadcast batch (kernel)", matmul_t(f32, {2, 1, 4, 5}, {1, 3, 7, 4}, 1, 1)});
  c.push_back({"matmulT f64 transB (kernel)", matmul_t(f64, {17, 5}, {3, 5}, 0, 1)});
  std::vector<Built> out;
  for (auto& [label, n] : c) {
    Status s = n->build();
    EXPECT_TRUE(s.is_ok()) << label << ": " << s.message();
    if (!s.is_ok()) continue;
    const OpDef* def = default_registry().find(n->built().op_type, "aotc");
    auto l = def->lower(n->built(), n->graph);
    EXPECT_TRUE(l.is_ok()) << label << ": " << l.status().message();
    if (!l.is_ok()) continue;
    out.push_back({label, std::move(n), *l});
  }
  return out;
}

void check_all(std::vector<Built>& built,
               const std::function<Status(size_t, const Lowering&, std::map<ValueId, Tensor>&)>& runner) {
  uint32_t seed = 21;
  for (size_t r = 0; r < built.size(); ++r) {
    OneNode& g = *built[r].node;
    std::vector<Tensor> inputs;
    std::map<ValueId, Tensor> values;
    for (ValueId id : g.graph.inputs) {
      Tensor t = lcg_tensor(g.graph.value(id).dtype, g.graph.value(id).shape, seed++);
      inputs.push_back(t);
      values[id] = t;
    }
    auto want = g.run(inputs);
    ASSERT_TRUE(want.is_ok()) << built[r].label << ": " << want.status().message();
    const ValueId y = g.built().outputs[0];
    Tensor poisoned(g.graph.value(y).dtype, g.graph.value(y).shape);
    std::memset(poisoned.raw(), 0xFF, static_cast<size_t>(poisoned.byte_size()));
    values[y] = poisoned;
    Status s = runner(r, built[r].lowering, values);
    ASSERT_TRUE(s.is_ok()) << built[r].label << ": " << s.message();
    EXPECT_EQ(test::compare_tensors(values[y], (*want)[0]), "") << built[r].label;
  }
}

std::string kernel_source(const std::vector<Built>& built) {
  std::string source;
  for (size_t r = 0; r < built.size(); ++r)
    for (size_t i = 0; i < built[r].lowering.steps.size(); ++i) {
      const LoweredStep& step = built[r].lowering.steps[i];
      if (step.kind != LoweredStep::Kind::kKernel) continue;
      auto text = testing_util::render_kernel(step.kernel, "c" + std::to_string(r) + "_k" + std::to_string(i));
      EXPECT_TRUE(text.is_ok()) << built[r].label << ": " << text.status().message();
      if (text.is_ok()) source += *text + "\n";
    }
  return source;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(StridedCopyKernels, LoweringsHaveTheExpectedShape) {
  std::vector<Built> built = build_all();
  ASSERT_EQ(built.size(), 14u);
  for (const Built& b : built) ASSERT_EQ(b.lowering.steps.size(), 1u) << b.label;
  EXPECT_EQ(built[0].lowering.steps[0].kernel.template_name, "strided_gather");
  EXPECT_EQ(built[3].lowering.steps[0].kernel.template_name, "strided_gather");  // the converting copy
  EXPECT_EQ(built[5].lowering.steps[0].kernel.template_name, "strided_rows");
  EXPECT_EQ(built[6].lowering.steps[0].kernel.template_name, "strided_rows");
  EXPECT_EQ(built[7].lowering.steps[0].kernel.template_name, "strided_rows");
  const MatmulStep& m = built[10].lowering.steps[0].matmul;
  ASSERT_EQ(built[10].lowering.steps[0].kind, LoweredStep::Kind::kMatmul);
  EXPECT_TRUE(m.trans_b);
  EXPECT_FALSE(m.trans_a);
  EXPECT_EQ(m.ldb, 4);  // B stored [N=6, K=4]
  EXPECT_EQ(m.batch, 6);
  EXPECT_EQ(m.stride_b, 24);
  const MatmulStep& shared = built[11].lowering.steps[0].matmul;
  EXPECT_TRUE(shared.trans_a);
  EXPECT_EQ(shared.lda, 5);      // A stored [K=4, M=5] per batch
  EXPECT_EQ(shared.batch, 3);    // not folded into one tall GEMM: A^T's rows are not consecutive
  EXPECT_EQ(shared.stride_b, 0);
  EXPECT_EQ(built[12].lowering.steps[0].kernel.template_name, "gemm_batched_broadcast");
}

TEST(StridedCopyKernels, AllCompileWithNvcc) {
  std::vector<Built> built = build_all();
  std::string source = read_text(std::string(AOTC_SOURCE_DIR) + "/templates/common.cuh") + "\n" + kernel_source(built);
  // bf16 is not in the CPU emulation: compiled only.
  auto bf = strided_copy(DType::kBFloat16, {4, 6}, {6, 4}, {1, 6}, 0, {6, 4}, 0.375f);
  ASSERT_TRUE(bf->build().is_ok());
  auto bl = default_registry().find("StridedCopy", "aotc")->lower(bf->built(), bf->graph);
  ASSERT_TRUE(bl.is_ok());
  auto text = testing_util::render_kernel(bl->steps[0].kernel, "bf16_scaled");
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  source += *text + "\n";
  if (testing_util::find_nvcc().empty()) GTEST_SKIP() << "no nvcc: rendered, not compiled";
  const std::string out = "/tmp/aotc_strided_copy_" + std::to_string(getpid()) + ".o";
  Status s = testing_util::nvcc_compile(source, "sm_90", false, out);
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::remove(out.c_str());
}

TEST(StridedCopyKernels, EmulatedOnCpuMatchReference) {
  std::vector<Built> built = build_all();
  AOTC_COMPILE_FOR_CPU_OR_SKIP(handle, kernel_source(built));
  check_all(built, [&](size_t r, const Lowering& l, std::map<ValueId, Tensor>& values) {
    return testing_util::run_on_cpu(*handle, "c" + std::to_string(r) + "_", l, values);
  });
}

TEST(StridedCopyKernels, GpuMatchesReference) {
  std::string why;
  auto gpu = testing_util::Gpu::open(&why);
  if (!gpu) GTEST_SKIP() << "no CUDA GPU: " << why;
  std::vector<Built> built = build_all();
  check_all(built, [&](size_t, const Lowering& l, std::map<ValueId, Tensor>& values) { return gpu->run(l, values); });
}

}  // namespace
}  // namespace aotc
