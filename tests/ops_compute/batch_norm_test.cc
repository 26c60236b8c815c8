// BatchNormalization (inference): per-channel values against the formula evaluated here, rank 2
// and rank 5 inputs, the legacy spatial = 0 form, channels_last storage, and the refusals
// (training mode, extra outputs).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/ops_compute/test_util.h"

namespace aotc {
namespace {

using testing_util::one_node;
using testing_util::random_tensor;
using testing_util::run_one;
using testing_util::tensors_close;

void check_bn(Shape x_shape, Shape param_shape, int64_t params_per, int64_t inner, Attributes attrs, DType t) {
  auto g = one_node("BatchNormalization", {{"x", x_shape}, {"s", param_shape}, {"b", param_shape}, {"m", param_shape}, {"v", param_shape}},
                    attrs, 1, t);
  Tensor x = random_tensor(t, x_shape, 70), s = random_tensor(t, param_shape, 71), b = random_tensor(t, param_shape, 72);
  Tensor m = random_tensor(t, param_shape, 73), v = random_tensor(t, param_shape, 74, 0.1, 2.0);
  auto out = run_one(g, {x, s, b, m, v});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const double eps = attrs.count("epsilon") ? attrs["epsilon"].f : 1e-5f;
  std::vector<double> want;
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = (i / inner) % params_per;
    want.push_back((x.get(i) - m.get(c)) / std::sqrt(v.get(c) + eps) * s.get(c) + b.get(c));
  }
  EXPECT_TRUE(tensors_close(out.value()[0], want, t));
}

TEST(BatchNorm, PerChannelAnyRank) {
  check_bn({2, 3, 5, 7}, {3}, 3, 35, {}, DType::kFloat32);
  check_bn({4, 5}, {5}, 5, 1, {{"epsilon", Attribute::of_float(0.25f)}}, DType::kFloat32);
  check_bn({1, 2, 3, 2, 3}, {2}, 2, 18, {}, DType::kFloat16);
  check_bn({2, 3, 4}, {3}, 3, 4, {}, DType::kFloat64);
}

// channels_last (opt/layout_nhwc: a BN after DenseNet's Concat): X stored [N, H, W, C], the
// parameter index is the last dim; refused on other ranks.
TEST(BatchNorm, ChannelsLastIndexesTheLastDim) {
  check_bn({2, 5, 7, 3}, {3}, 3, 1, {{"channels_last", Attribute::of_int(1)}}, DType::kFloat16);
  check_bn({1, 2, 3, 40}, {40}, 40, 1, {{"channels_last", Attribute::of_int(1)}}, DType::kFloat32);
  auto g = one_node("BatchNormalization", {{"x", {2, 3, 4}}, {"s", {4}}, {"b", {4}}, {"m", {4}}, {"v", {4}}},
                    {{"channels_last", Attribute::of_int(1)}});
  Status st = infer_shapes(g.graph);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("channels_last needs a 4-D input"), std::string::npos) << st.message();
}

TEST(BatchNorm, LegacySpatialZeroIsPerActivation) {
  check_bn({2, 3, 4}, {3, 4}, 12, 1, {{"spatial", Attribute::of_int(0)}}, DType::kFloat32);
}

TEST(BatchNorm, RefusesTrainingAndExtraOutputs) {
  auto g = one_node("BatchNormalization", {{"x", {1, 2, 3}}, {"s", {2}}, {"b", {2}}, {"m", {2}}, {"v", {2}}},
                    {{"training_mode", Attribute::of_int(1)}});
  Status s = infer_shapes(g.graph);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'n0' (BatchNormalization)"), std::string::npos);
  EXPECT_NE(s.message().find("training_mode"), std::string::npos);
  auto g2 = one_node("BatchNormalization", {{"x", {1, 2, 3}}, {"s", {2}}, {"b", {2}}, {"m", {2}}, {"v", {2}}}, {}, 3);
  Status s2 = infer_shapes(g2.graph);
  ASSERT_FALSE(s2.is_ok());
  EXPECT_NE(s2.message().find("outputs"), std::string::npos) << s2.message();
  auto g3 = one_node("BatchNormalization", {{"x", {1, 2, 3}}, {"s", {3}}, {"b", {2}}, {"m", {2}}, {"v", {2}}});
  Status s3 = infer_shapes(g3.graph);
  ASSERT_FALSE(s3.is_ok());
  EXPECT_NE(s3.message().find("(scale)"), std::string::npos) << s3.message();
}

}  // namespace
}  // namespace aotc
