// cuBLASLt matmul steps through the whole path (MatmulStep -> tables -> runtime -> cuBLASLt),
// independent of the Gemm/MatMul op files: a test-only op lowers straight to a MatmulStep, and the
// results are compared with a double-precision product computed here. Covers transposes, bias +
// ReLU epilogue, alpha/beta with C, and a batch with a broadcast (stride 0) operand.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/codegen.h"
#include "codegen/launch_program.h"
#include "codegen_test_util.h"
#include "ir/ops/op_helpers.h"

namespace aotc {
namespace {
namespace fs = std::filesystem;

struct Case {
  int64_t m, n, k, batch;
  bool ta, tb, bias, relu, with_c, bcast_b;
  float alpha, beta;
};

const Case kCases[] = {
    {3, 5, 7, 1, false, false, false, false, false, false, 1.f, 0.f},
    {4, 6, 5, 1, true, true, true, true, false, false, 0.5f, 0.f},
    {2, 3, 4, 3, false, false, false, false, true, true, 1.f, 0.75f},
    {17, 1, 33, 2, true, false, true, false, false, false, 1.f, 0.f},
};

Status mm_infer(Node& node, Graph& graph) {
  int64_t m = node.attr_int("m", 0), n = node.attr_int("n", 0), b = node.attr_int("batch", 1);
  set_output(graph, node, 0, DType::kFloat32, {b, m, n});
  return Status::ok();
}
Status mm_reference(const Node& node, const std::vector<const Tensor*>&, std::vector<Tensor>&) {
  return node_error(node, "test op: no reference (the test computes it)");
}
Expected<Lowering> mm_lower(const Node& node, const Graph&) {
  MatmulStep s;
  s.m = node.attr_int("m", 0);
  s.n = node.attr_int("n", 0);
  s.k = node.attr_int("k", 0);
  s.batch = node.attr_int("batch", 1);
  s.trans_a = node.attr_int("ta", 0) != 0;
  s.trans_b = node.attr_int("tb", 0) != 0;
  s.alpha = node.attr_float("alpha", 1.f);
  s.beta = node.attr_float("beta", 0.f);
  s.a = node.inputs[0];
  s.b = node.inputs[1];
  s.bias = node.input(2) == kNoValue ? kNullArg : node.inputs[2];
  s.c = node.input(3) == kNoValue ? kNullArg : node.inputs[3];
  s.d = node.outputs[0];
  bool relu = node.attr_int("relu", 0) != 0;
  s.epilogue = s.bias != kNullArg ? (relu ? MatmulStep::Epilogue::kBiasRelu : MatmulStep::Epilogue::kBias)
                                  : (relu ? MatmulStep::Epilogue::kRelu : MatmulStep::Epilogue::kNone);
  s.lda = s.trans_a ? s.m : s.k;
  s.ldb = s.trans_b ? s.k : s.n;
  s.ldc = s.ldd = s.n;
  s.stride_a = s.m * s.k;
  s.stride_b = node.attr_int("bcast_b", 0) ? 0 : s.k * s.n;
  s.stride_c = s.stride_d = s.m * s.n;
  Lowering l;
  LoweredStep step;
  step.kind = LoweredStep::Kind::kMatmul;
  step.matmul = s;
  l.steps.push_back(step);
  return l;
}

OpRegistry matmul_registry() {
  OpRegistry r;
  register_all_ops(r);
  OpDef def;
  def.op_type = "TestMatmul";
  def.domain = "test";
  def.infer = mm_infer;
  def.reference = mm_reference;
  def.lower = mm_lower;
  r.add(def);
  return r;
}

struct CaseData {
  std::vector<float> a, b, bias, c;
};

Graph matmul_graph(std::vector<CaseData>& data) {
  Graph g;
  g.name = "matmuls";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  auto fill = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
  };
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const Case& c = kCases[i];
    CaseData d;
    std::string s = std::to_string(i);
    Shape sa = c.ta ? Shape{c.batch, c.k, c.m} : Shape{c.batch, c.m, c.k};
    Shape sb = c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n};
    if (!c.bcast_b) sb.insert(sb.begin(), c.batch);
    d.a = fill(shape_numel(sa));
    d.b = fill(shape_numel(sb));
    ValueId a = g.add_value("a" + s, DType::kFloat32, sa, true);
    ValueId b = g.add_value("b" + s, DType::kFloat32, sb, true);
    g.inputs.push_back(a);
    g.inputs.push_back(b);
    Node node{"mm" + s, "TestMatmul", "test", {a, b}, {}, {}};
    if (c.bias) {
      d.bias = fill(c.n);
      node.inputs.push_back(g.add_constant("bias" + s, Tensor::from_floats({c.n}, d.bias)));
    }
    if (c.with_c) {
      if (!c.bias) node.inputs.push_back(kNoValue);
      d.c = fill(c.batch * c.m * c.n);
      ValueId cv = g.add_value("c" + s, DType::kFloat32, {c.batch, c.m, c.n}, true);
      g.inputs.push_back(cv);
      node.inputs.push_back(cv);
    }
    ValueId out = g.add_value("d" + s);
    node.outputs = {out};
    g.outputs.push_back(out);
    for (const char* key : {"m", "n", "k", "batch"}) {
      int64_t v = key[0] == 'm' ? c.m : key[0] == 'n' ? c.n : key[0] == 'k' ? c.k : c.batch;
      node.attrs[key] = Attribute::of_int(v);
    }
    node.attrs["ta"] = Attribute::of_int(c.ta);
    node.attrs["tb"] = Attribute::of_int(c.tb);
    node.attrs["relu"] = Attribute::of_int(c.relu);
    node.attrs["bcast_b"] = Attribute::of_int(c.bcast_b);
    node.attrs["alpha"] = Attribute::of_float(c.alpha);
    node.attrs["beta"] = Attribute::of_float(c.beta);
    g.nodes.push_back(node);
    data.push_back(d);
  }
  return g;
}

// D[b][i][j] = alpha * sum_p op(A)[i][p] op(B)[p][j] + beta * C + bias[j], then ReLU; in double.
std::vector<double> reference(const Case& c, const CaseData& d) {
  std::vector<double> out(static_cast<size_t>(c.batch * c.m * c.n));
  for (int64_t bt = 0; bt < c.batch; ++bt)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          double a = c.ta ? d.a[static_cast<size_t>(bt * c.m * c.k + p * c.m + i)]
                          : d.a[static_cast<size_t>(bt * c.m * c.k + i * c.k + p)];
          int64_t boff = c.bcast_b ? 0 : bt * c.k * c.n;
          double b = c.tb ? d.b[static_cast<size_t>(boff + j * c.k + p)]
                          : d.b[static_cast<size_t>(boff + p * c.n + j)];
          acc += a * b;
        }
        size_t o = static_cast<size_t>(bt * c.m * c.n + i * c.n + j);
        double v = c.alpha * acc;
        if (c.with_c) v += c.beta * d.c[o];
        if (c.bias) v += d.bias[static_cast<size_t>(j)];
        if (c.relu && v < 0) v = 0;
        out[o] = v;
      }
  return out;
}

TEST(Matmul, ProgramPlacesWorkspaceAndWeights) {
  OpRegistry reg = matmul_registry();
  std::vector<CaseData> data;
  Graph g = matmul_graph(data);
  ASSERT_TRUE(infer_shapes(g, reg).is_ok());
  MemoryPlan plan = test::linear_plan(g);
  auto p = build_launch_program(g, plan, reg);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->matmuls.size(), std::size(kCases));
  // The largest D has 17 x 1 x 2 elements: the 1 MiB floor applies.
  EXPECT_EQ(p->lt_workspace_bytes, kCublasLtWorkspaceMinBytes);
  EXPECT_EQ(p->arena_bytes, kCublasLtWorkspaceMinBytes);  // nothing else lives in the arena
  EXPECT_EQ(p->matmuls[1].bias.space, Location::Space::kWeights);
  EXPECT_EQ(p->matmuls[3].bias.offset, 256);  // second constant, aligned
}

TEST(Matmul, CompilesAndMatchesDoubleReferenceOnGpu) {
  if (!test::tool_runs(test::find_nvcc()) || !test::tool_runs("cc"))
    GTEST_SKIP() << "nvcc or cc not available";
  OpRegistry reg = matmul_registry();
  std::vector<CaseData> data;
  Graph g = matmul_graph(data);
  ASSERT_TRUE(infer_shapes(g, reg).is_ok());
  MemoryPlan plan = test::linear_plan(g);
  fs::path dir = fs::temp_directory_path() / ("aotc-matmul-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  test::remove_at_exit(dir);
  CodegenOptions o;
  o.output_path = (dir / "libmm.so").string();
  o.nvcc = test::find_nvcc();
  o.registry = &reg;
  auto stats = compile_library(g, plan, o);
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  EXPECT_EQ(stats->matmul_calls, static_cast<int>(std::size(kCases)));
  EXPECT_EQ(stats->kernels, 0);
  std::string why;
  if (!test::have_gpu(&why)) GTEST_SKIP() << "no CUDA GPU: " << why << " (library built, not run)";
  void* lib = dlopen(o.output_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using Create = int (*)(void**, int, void*, const void*);
  using RunHost = int (*)(void*, const void* const*, void* const*);
  using LastError = const char* (*)(const void*);
  auto create = reinterpret_cast<Create>(dlsym(lib, "mm_create"));
  auto run_host = reinterpret_cast<RunHost>(dlsym(lib, "mm_run_host"));
  auto last_error = reinterpret_cast<LastError>(dlsym(lib, "mm_last_error"));
  auto destroy = reinterpret_cast<void (*)(void*)>(dlsym(lib, "mm_destroy"));
  ASSERT_TRUE(create && run_host && last_error && destroy);
  void* m = nullptr;
  ASSERT_EQ(create(&m, 0, nullptr, nullptr), 0) << last_error(nullptr);
  std::vector<const void*> ins;
  std::vector<std::vector<float>> outs;
  std::vector<void*> out_ptrs;
  for (size_t i = 0; i < std::size(kCases); ++i) {
    ins.push_back(data[i].a.data());
    ins.push_back(data[i].b.data());
    if (kCases[i].with_c) ins.push_back(data[i].c.data());
    outs.emplace_back(static_cast<size_t>(kCases[i].batch * kCases[i].m * kCases[i].n), NAN);
  }
  for (auto& v : outs) out_ptrs.push_back(v.data());
  ASSERT_EQ(run_host(m, ins.data(), out_ptrs.data()), 0) << last_error(m);
  for (size_t i = 0; i < std::size(kCases); ++i) {
    std::vector<double> ref = reference(kCases[i], data[i]);
    for (size_t e = 0; e < ref.size(); ++e)
      ASSERT_NEAR(outs[i][e], ref[e], 1e-5 + 1e-4 * std::fabs(ref[e])) << "case " << i << " element " << e;
  }
  destroy(m);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace aotc
