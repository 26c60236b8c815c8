// patchify_conv: a Conv with kernel == stride read only by the flatten of its spatial dims (ViT's
// patch embedding) becomes a patch gather + Gemm; same outputs, and where it must not fire.
#include <algorithm>

#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// 2 images of 3 x 12 x 8, 4 x 4 patches (kernel == stride), 5 output channels, bias; CONV_ATTRS
// and the flatten's shape replaceable.
std::string patch_embed(const std::string& conv_attrs = "{kernel_shape=[4,4], strides=[4,4]}",
                        const std::string& flat_shape = "[2,5,6]", const std::string& extra = "") {
  const size_t rank = static_cast<size_t>(std::count(flat_shape.begin(), flat_shape.end(), ',')) + 1;
  return R"(
    input %x : float[2x3x12x8]
    const %w : float[5x3x4x4] = random(1)
    const %b : float[5] = random(2)
    const %fs : int64[)" + std::to_string(rank) + "] = " + flat_shape + R"(
    %c : float[?] = Conv(%x, %w, %b) )" + conv_attrs + R"(
    %f : float[?] = Reshape(%c, %fs)
  )" + (extra.empty() ? "  output %f\n" : extra);
}

TEST(PatchifyConv, PatchEmbeddingBecomesPatchGatherAndGemm) {
  AOTC_REQUIRE_OPS("Conv", "Gemm", "Transpose", "Reshape");
  AOTC_BUILD(g, patch_embed("{kernel_shape=[4,4], strides=[4,4]}", "[2,5,6]",
                            "%t : float[?] = Transpose(%f) {perm=[0,2,1]}\n    output %t\n"));
  Graph before = g;
  auto changed = patchify_conv(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), "Reshape,Transpose,Reshape,Gemm,Reshape,Transpose,Transpose");
  const Node& gemm = g.nodes[3];
  EXPECT_EQ(g.value(gemm.inputs[0]).shape, (Shape{12, 48}));  // 2 images x 3 x 2 patches, 3 x 4 x 4
  EXPECT_EQ(g.value(gemm.inputs[1]).shape, (Shape{5, 48}));
  EXPECT_EQ(gemm.attr_int("transB", 0), 1);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3));
  // fuse_copy_chains then composes the transpose back with the exporter's own into a view.
  ASSERT_TRUE(fuse_copy_chains(g).is_ok());
  EXPECT_EQ(op_list(g), "Reshape,Transpose,Reshape,Gemm,Reshape");
  EXPECT_TRUE(testing_util::same_outputs(before, g, 4));
}

TEST(PatchifyConv, MustNotFire) {
  AOTC_REQUIRE_OPS("Conv", "Gemm", "Transpose", "Reshape");
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"overlapping windows (stride < kernel)", patch_embed("{kernel_shape=[4,4], strides=[2,2]}", "[2,5,15]")},
      {"padding", patch_embed("{kernel_shape=[4,4], strides=[4,4], pads=[2,0,2,0]}", "[2,5,8]")},
      {"grouped", R"(
    input %x : float[2x4x8x8]
    const %w : float[4x2x4x4] = random(1)
    const %fs : int64[3] = [2,4,4]
    %c : float[?] = Conv(%x, %w) {kernel_shape=[4,4], strides=[4,4], group=2}
    %f : float[?] = Reshape(%c, %fs)
    output %f
  )"},
      {"a 1x1 kernel (pointwise: the NHWC convolution path)", R"(
    input %x : float[2x3x4x4]
    const %w : float[5x3x1x1] = random(1)
    const %fs : int64[3] = [2,5,16]
    %c : float[?] = Conv(%x, %w) {kernel_shape=[1,1], strides=[1,1]}
    %f : float[?] = Reshape(%c, %fs)
    output %f
  )"},
      {"the conv output read by something else than the flatten", patch_embed("{kernel_shape=[4,4], strides=[4,4]}", "[2,5,6]",
                                                                              "%r : float[?] = Relu(%c)\n    output %r\n    output %f\n")},
      {"a reshape that is not the spatial flatten", patch_embed("{kernel_shape=[4,4], strides=[4,4]}", "[2,30]")},
      {"image size not a multiple of the patch (the conv drops the rest)", R"(
    input %x : float[2x3x13x8]
    const %w : float[5x3x4x4] = random(1)
    const %fs : int64[3] = [2,5,6]
    %c : float[?] = Conv(%x, %w) {kernel_shape=[4,4], strides=[4,4]}
    %f : float[?] = Reshape(%c, %fs)
    output %f
  )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    auto changed = patchify_conv(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first << ": " << op_list(g);
  }
}

}  // namespace
}  // namespace aotc
