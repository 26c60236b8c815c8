// The default pipeline and the memory plan on whole CNN topologies (ResNet-50 and MobileNetV2
// layouts from cnn_text.h): every BN folds, every conv epilogue fuses, the reference output is
// unchanged (whole-model tolerance of design.md: relative L2 < 1e-4, max error < 1e-3 x max|ref|),
// and the arena stays within 1.02x of the liveness lower bound at full size.
#include <cmath>
#include <cstdio>

#include <algorithm>

#include "cnn_text.h"
#include "opt/memory_plan.h"
#include "opt/pipeline.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

int count_ops(const Graph& g, const std::string& op_type) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op_type;
  return n;
}

::testing::AssertionResult model_close(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return ::testing::AssertionFailure() << "shapes differ";
  double err2 = 0, ref2 = 0, max_err = 0, max_ref = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = got.get(i) - want.get(i);
    if (!std::isfinite(got.get(i)) || !std::isfinite(want.get(i)))
      return ::testing::AssertionFailure() << "non-finite value at " << i;
    err2 += d * d;
    ref2 += want.get(i) * want.get(i);
    max_err = std::max(max_err, std::fabs(d));
    max_ref = std::max(max_ref, std::fabs(want.get(i)));
  }
  double rel_l2 = std::sqrt(err2 / ref2);
  if (rel_l2 >= 1e-4 || max_err >= 1e-3 * max_ref)
    return ::testing::AssertionFailure() << "relative L2 " << rel_l2 << ", max error " << max_err << " (max|ref| "
                                         << max_ref << ")";
  return ::testing::AssertionSuccess();
}

// `plain` convs absorb nothing but their BN (ResNet's downsample convs, MobileNetV2's projections
// without a residual): they stay Conv, with the folded bias. `merged`: projection shortcuts
// merge_projection_shortcut folds into their block's last conv (one Concat each); `subsampled`:
// strided ones merge_strided_projection folds (one aotc.SubsampleConcat each).
// `aux_streams`: the target's setting; `side`: how many nodes side_branches puts on the auxiliary
// stream.
void check_small_model(const std::string& text, int convs, int plain, int merged, int aux_streams = 1,
                       int side = 0, int subsampled = 0) {
  auto built = testing_util::build(text);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  Graph& g = *built;
  g.target.aux_streams = aux_streams;
  Graph before = g;
  ASSERT_EQ(count_ops(g, "Conv"), convs);
  auto stats = run_pipeline(g, PipelineOptions{});
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  EXPECT_EQ(count_ops(g, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(g, "Conv"), plain);
  EXPECT_EQ(count_ops(g, "FusedConv"), convs - plain - merged - subsampled);
  EXPECT_EQ(count_ops(g, "Concat"), merged);
  EXPECT_EQ(count_ops(g, "SubsampleConcat"), subsampled);
  EXPECT_EQ(std::count_if(g.side_join.begin(), g.side_join.end(), [](int j) { return j >= 0; }), side);
  for (const Node& n : g.nodes) {
    if (n.op_type == "Conv") {
      EXPECT_NE(n.input(2), kNoValue) << "BN folded into a bias";
    }
  }
  EXPECT_EQ(count_ops(g, "Relu") + count_ops(g, "Clip") + count_ops(g, "Add"), 0)
      << "every activation and residual Add follows a conv and is absorbed";

  std::vector<Tensor> in = testing_util::random_inputs(before, 7);
  auto want = evaluate_graph(before, in);
  ASSERT_TRUE(want.is_ok()) << want.status().message();
  auto got = evaluate_graph(g, in);
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  EXPECT_TRUE(model_close((*got)[0], (*want)[0]));

  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_LE(plan->lower_bound, plan->arena_bytes);
  EXPECT_LE(plan->arena_bytes, plan->linear_bytes);
}

TEST(CnnPipeline, SmallResNet50FusesEverythingAndKeepsTheOutput) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "BatchNormalization", "MaxPool", "GlobalAveragePool", "Flatten", "Gemm");
  // One stream: layer 1's stride-1 projection merged, and layers 2-4's strided ones (their h comes
  // from the block's 3x3, which writes it into the SubsampleConcat's rows, so the merge adds no
  // launch even where the merged GEMM is small). With the auxiliary stream (these activations are
  // small, as at batch 1): no merge, and all four projections run beside conv1 / conv2.
  check_small_model(testing_util::resnet50_text(2, 32, 8, 10), 53, 0, 1, 0, 0, 3);
  check_small_model(testing_util::resnet50_text(2, 32, 8, 10), 53, 4, 0, 1, 4);
}

TEST(CnnPipeline, SmallMobileNetV2FusesEverythingAndKeepsTheOutput) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "BatchNormalization", "Clip", "GlobalAveragePool", "Flatten", "Gemm");
  check_small_model(testing_util::mobilenet_v2_text(2, 32, 8, 10), 52, 7, 0);
}

// MobileNetV2's head: the last 1x1 conv's ReLU6 is split into its Relu (a cuBLASLt epilogue) and
// the global average pool's input clamp (clip_into_depthwise), as the expansions' are.
TEST(CnnPipeline, SmallMobileNetV2LastConvKeepsReluAndThePoolClamps) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "BatchNormalization", "Clip", "GlobalAveragePool", "Flatten", "Gemm");
  auto built = testing_util::build(testing_util::mobilenet_v2_text(2, 32, 8, 10));
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  Graph& g = *built;
  ASSERT_TRUE(run_pipeline(g, PipelineOptions{}).is_ok());
  const std::vector<int> producers = g.producers();
  int pools = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type != "GlobalAveragePool") continue;
    ++pools;
    EXPECT_EQ(n.attr_float("input_max", 0.0f), 6.0f);
    const Node& conv = g.nodes[static_cast<size_t>(producers[static_cast<size_t>(n.inputs[0])])];
    EXPECT_EQ(conv.attr_string("activation", ""), "Relu") << conv.name;
  }
  EXPECT_EQ(pools, 1);
}

// MobileNetV3 / EfficientNet squeeze-excitation: the gate's Mul reads the pooled path's
// [N, 1, 1, C] as it is (layout_nhwc's per-channel broadcast), so the whole network runs
// channels_last with no Transpose between its edges; the output is the reference's.
TEST(CnnPipeline, SqueezeExcitationBlocksRunChannelsLastWithoutTransposes) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "BatchNormalization", "HardSwish", "HardSigmoid", "Mul",
                   "GlobalAveragePool", "Flatten", "Gemm");
  auto built = testing_util::build(testing_util::squeeze_excitation_text(2, 16));
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  Graph& g = *built;
  Graph before = g;
  ASSERT_TRUE(run_pipeline(g, PipelineOptions{}).is_ok());
  EXPECT_EQ(count_ops(g, "Transpose"), 0) << testing_util::op_list(g);
  EXPECT_EQ(count_ops(g, "Mul"), 3);
  for (const Node& n : g.nodes) {
    if (n.op_type == "Mul") {
      EXPECT_EQ(g.value(n.inputs[0]).shape, (Shape{2, 1, 1, 64})) << n.name;
      EXPECT_EQ(g.value(n.inputs[1]).shape, (Shape{2, 8, 8, 64})) << n.name;
    }
  }
  std::vector<Tensor> in = testing_util::random_inputs(before, 5);
  auto want = evaluate_graph(before, in);
  ASSERT_TRUE(want.is_ok()) << want.status().message();
  auto got = evaluate_graph(g, in);
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  EXPECT_TRUE(model_close((*got)[0], (*want)[0]));
}

void check_full_size_arena(const std::string& name, const std::string& text) {
  auto built = testing_util::build(text);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  Graph& g = *built;
  auto stats = run_pipeline(g, PipelineOptions{});
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  std::printf("%s: %zu nodes, arena %lld bytes, lower bound %lld (%.4fx), linear %lld\n", name.c_str(),
              g.nodes.size(), static_cast<long long>(plan->arena_bytes), static_cast<long long>(plan->lower_bound),
              static_cast<double>(plan->arena_bytes) / static_cast<double>(plan->lower_bound),
              static_cast<long long>(plan->linear_bytes));
  EXPECT_LE(plan->arena_bytes, plan->lower_bound * 102 / 100) << name;
  EXPECT_GE(plan->arena_bytes, plan->lower_bound) << name;
}

TEST(CnnPipeline, FullSizeArenasAreWithin2PercentOfTheLowerBound) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "BatchNormalization", "MaxPool", "Clip", "GlobalAveragePool", "Flatten",
                   "Gemm");
  for (int batch : {1, 32}) {
    check_full_size_arena("resnet50 batch " + std::to_string(batch), testing_util::resnet50_text(batch, 224));
    check_full_size_arena("mobilenet_v2 batch " + std::to_string(batch), testing_util::mobilenet_v2_text(batch, 224));
  }
}

}  // namespace
}  // namespace aotc
