// fuse_pool_gemm: a batch-1 CNN's head (the last conv's ReLU, or ReLU6 split by clip_into_pool,
// the channels_last GlobalAveragePool, Flatten, the classifier Gemm) becomes one aotc.PoolGemm
// with --pool-gemm on where its cluster kernel applies. Its reference is the replaced nodes'
// references in order, so the whole pipeline's graph must give the unfused pipeline's outputs bit
// for bit (the unfused graph is the independent check); it must not fire where the kernel cannot
// run it (off, an sm_87 target, two images, fp32, a pool output read twice, K off 8).
#include "ir/ops/conv_configs.h"
#include "opt/passes.h"
#include "opt/pipeline.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

// x [B, 16, 7, 9] -> 1x1 conv 16 -> K, ReLU (or ReLU6) -> GlobalAveragePool -> Flatten -> Gemm
// (transB, bias) -> N classes; optionally the pooled row is a second graph output.
std::string head(int64_t batch, int64_t k, const std::string& dtype, bool relu6, bool pooled_output = false) {
  const std::string b = std::to_string(batch), ks = std::to_string(k);
  return R"(
    input %x : )" + dtype + "[" + b + R"(x16x7x9]
    const %w1 : )" + dtype + "[" + ks + R"(x16x1x1] = random(1, -0.5, 0.5)
    const %b1 : )" + dtype + "[" + ks + R"(] = random(2, -0.2, 1)
    const %z : )" + dtype + R"([scalar] = [0]
    const %hi : )" + dtype + R"([scalar] = [0.5]
    const %w2 : )" + dtype + "[37x" + ks + R"(] = random(3, -0.5, 0.5)
    const %b2 : )" + dtype + R"([37] = random(4, -1, 1)
    %e : )" + dtype + R"([?] = Conv(%x, %w1, %b1)  # last_conv
    %r : )" + dtype + "[?] = " + (relu6 ? "Clip(%e, %z, %hi)" : "Relu(%e)") + R"(  # act
    %p : )" + dtype + R"([?] = GlobalAveragePool(%r)  # pool
    %f : )" + dtype + R"([?] = Flatten(%p) {axis=1}  # flatten
    %y : )" + dtype + R"([?] = Gemm(%f, %w2, %b2) {transB=1}  # fc
    output %y
  )" + (pooled_output ? "output %p\n" : "");
}

Graph compiled(const std::string& text, const std::vector<std::string>& archs, bool on,
               DType precision = DType::kFloat16) {
  auto g = testing_util::build(text);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  Graph graph = std::move(*g);
  graph.target = target_from_archs(archs);
  graph.target.precision.dtype = precision;
  graph.target.pool_gemm = on;
  auto stats = run_pipeline(graph, PipelineOptions{});
  EXPECT_TRUE(stats.is_ok()) << stats.status().message();
  return graph;
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op ? 1 : 0;
  return n;
}

void expect_same_outputs(const Graph& before, const Graph& after, const std::string& dtype, int64_t batch) {
  const DType t = dtype == "float16" ? DType::kFloat16 : dtype == "bfloat16" ? DType::kBFloat16 : DType::kFloat32;
  for (uint64_t seed = 5; seed < 8; ++seed)
    testing_util::expect_same_bytes(before, after, {seeded_random_tensor(t, {batch, 16, 7, 9}, seed, -2, 2)},
                                    "seed " + std::to_string(seed));
}

struct Case {
  const char* dtype;
  bool relu6;
};

class FusePoolGemm : public ::testing::TestWithParam<Case> {};

TEST_P(FusePoolGemm, FiresAndMatchesTheUnfusedPipelineBitForBit) {
  AOTC_REQUIRE_OPS("GlobalAveragePool", "Gemm", "aotc.PoolGemm", "aotc.FusedGemm");
  const Case c = GetParam();
  const std::string text = head(1, 64, c.dtype, c.relu6);
  const Graph off = compiled(text, {"sm_90"}, false), on = compiled(text, {"sm_90"}, true);
  EXPECT_EQ(count(off, "PoolGemm"), 0);
  EXPECT_EQ(count(off, "GlobalAveragePool"), 1);
  ASSERT_EQ(count(on, "PoolGemm"), 1);
  EXPECT_EQ(count(on, "GlobalAveragePool"), 0);
  EXPECT_EQ(count(on, "Flatten"), 0);
  EXPECT_EQ(count(on, "Gemm") + count(on, "FusedGemm"), 0);
  const Node* fused = nullptr;
  for (const Node& n : on.nodes)
    if (n.op_type == "PoolGemm") fused = &n;
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->name, "fc");
  EXPECT_EQ(fused->has_attr("pool_input_max"), c.relu6);  // clip_into_pool's clamp came along
  auto lowered = default_registry().find("PoolGemm", "aotc")->lower(*fused, on);
  ASSERT_TRUE(lowered.is_ok()) << lowered.status().message();
  ASSERT_EQ(lowered->steps.size(), 1u);
  const KernelStep& k = lowered->steps[0].kernel;
  EXPECT_EQ(k.template_name, "pool_gemv_cluster");
  EXPECT_EQ(k.cluster_size, kPoolGemmCluster);
  EXPECT_EQ(k.grid.x % kPoolGemmCluster, 0);
  EXPECT_GE(k.grid.x * 8, 37);  // a warp a column
  expect_same_outputs(off, on, c.dtype, 1);
}

INSTANTIATE_TEST_SUITE_P(Cases, FusePoolGemm,
                         ::testing::Values(Case{"float16", false}, Case{"float16", true}, Case{"float", false}));

TEST(FusePoolGemmRefusals, MustNotFireWhereTheKernelCannotRunIt) {
  AOTC_REQUIRE_OPS("GlobalAveragePool", "Gemm", "aotc.PoolGemm");
  struct Refusal {
    const char* why;
    std::string text;
    std::vector<std::string> archs;
  };
  const std::vector<Refusal> cases = {
      {"an sm_87 target (no clusters)", head(1, 64, "float16", false), {"sm_87", "sm_90"}},
      {"two images", head(2, 64, "float16", false), {"sm_90"}},
      {"the pooled row is read twice", head(1, 64, "float16", false, true), {"sm_90"}},
      {"K = 12, not a multiple of 8", head(1, 12, "float16", false), {"sm_90"}},
  };
  for (const Refusal& r : cases) {
    const Graph g = compiled(r.text, r.archs, true);
    EXPECT_EQ(count(g, "PoolGemm"), 0) << r.why;
    EXPECT_EQ(count(g, "GlobalAveragePool"), 1) << r.why;
  }
  // fp32 (no GEMV kernel for float).
  const Graph fp32 = compiled(head(1, 64, "float", false), {"sm_90"}, true, DType::kFloat32);
  EXPECT_EQ(count(fp32, "PoolGemm"), 0);
  // --pool-gemm off (the default) never fires.
  Graph g = compiled(head(1, 64, "float16", false), {"sm_90"}, false);
  auto changed = fuse_pool_gemm(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace aotc
