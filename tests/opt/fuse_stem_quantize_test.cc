// fuse_stem_quantize: the wgmma stem + pool (ResNet's stem as the model writes it: a float input
// cast to fp16, conv + bias + ReLU, max pool) whose only reader is a per-tensor QuantizeLinear
// writes the quantized tensor itself (aotc.FusedConv with attribute "quantize", output the
// QuantizeLinear's); the fused node's CPU reference equals the nodes' byte for byte, and the pass
// must not fire on a second reader of the pooled value, a per-channel or non-constant scale, a
// float16 scale, a target list with sm_87 (the lowering would not take the wgmma stem) or
// --conv-stem-wgmma off. The kernel is compiled by nvcc in tests/codegen
// (CutlassConv.StemPoolWritesTheQuantizedTensorOnWgmma) and run in tests/gpu.
#include <cmath>

#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"
#include "ir/target.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// The stem, its pool and `tail` (lines reading %p; the scale %s and zero point %z are declared).
std::string stem_text(const std::string& tail, const std::string& scale = "const %s : float[scalar] = [0.0625]",
                      const std::string& zero_point = "const %z : int8[scalar] = [3]") {
  return "input %x : float[2x3x40x36]\n const %w : float16[64x3x7x7] = random(1)\n const %b : float16[64] = random(2)\n " +
         scale + "\n " + zero_point +
         "\n %h : float16[?] = Cast(%x) {to=10}  # cast\n"
         " %c : float16[?] = Conv(%h, %w, %b) {strides=[2,2], pads=[3,3,3,3]}  # conv1\n"
         " %r : float16[?] = Relu(%c)  # relu\n"
         " %p : float16[?] = MaxPool(%r) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}  # pool\n " +
         tail + "\n";
}

const std::string kQuantize = "%q : int8[?] = QuantizeLinear(%p, %s, %z)  # quant\n output %q";

Expected<bool> pipeline(Graph& g, const std::vector<std::string>& archs = {"sm_90"}, bool wgmma = true) {
  g.target = target_from_archs(archs);
  g.target.conv_stem_wgmma = wgmma;
  for (auto pass : {fuse_epilogue, layout_nhwc, fuse_stem_pool}) {
    auto r = pass(g);
    if (!r) return r;
  }
  return fuse_stem_quantize(g);
}

TEST(FuseStemQuantize, WgmmaStemWritesTheQuantizedTensor) {
  struct Case {
    std::string label, tail, zero_point;
    DType dtype;
  };
  const std::vector<Case> cases = {
      {"int8, zero point 3", kQuantize, "const %z : int8[scalar] = [3]", DType::kInt8},
      {"uint8, zero point 128", "%q : uint8[?] = QuantizeLinear(%p, %s, %z)  # quant\n output %q",
       "const %z : uint8[scalar] = [128]", DType::kUInt8},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    AOTC_BUILD(g, stem_text(c.tail, "const %s : float[scalar] = [0.0625]", c.zero_point));
    Graph before = g;
    auto changed = pipeline(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(op_list(g), "aotc.PackNhwc,aotc.FusedConv,Transpose");
    const Node& conv = g.nodes[1];
    ASSERT_TRUE(has_quantize(conv));
    EXPECT_TRUE(has_pool(conv));
    EXPECT_EQ(load_quantize(conv).scale, 0.0625f);
    EXPECT_EQ(load_quantize(conv).zero_point, c.dtype == DType::kUInt8 ? 128 : 3);
    EXPECT_EQ(load_quantize(conv).dtype, c.dtype);
    EXPECT_EQ(g.value(conv.outputs[0]).dtype, c.dtype);
    // Inputs spanning the int8 range at this scale (saturation both ways; 1/16 makes exact halves,
    // so rint's ties to even are exercised).
    for (uint64_t seed : {5u, 6u}) {
      std::vector<Tensor> feed = testing_util::random_inputs(before, seed);
      for (int64_t i = 0; i < feed[0].numel(); ++i) feed[0].set(i, feed[0].get(i) * 8.0);
      testing_util::expect_same_bytes(before, g, feed, "seed " + std::to_string(seed));
    }
  }
}

// The kernel's division by the scale as a product with its reciprocal only where all 65536 fp16
// values quantize alike: powers of two and many scales do; 0.03 does not (0.375 / 0.03f =
// 12.4999995 rounds to 12, 0.375 * (1 / 0.03f) = 12.500001 to 13), nor 0.3 (at 2.25).
TEST(FuseStemQuantize, ReciprocalOnlyWhereEveryFp16ValueQuantizesAlike) {
  EXPECT_EQ(fp16_quantize_reciprocal(0.0625f, 3.0f, -128.0f, 127.0f), std::optional<float>(16.0f));
  EXPECT_EQ(fp16_quantize_reciprocal(0.05f, 0.0f, -128.0f, 127.0f), std::optional<float>(1.0f / 0.05f));
  EXPECT_EQ(fp16_quantize_reciprocal(0.0371f, 128.0f, 0.0f, 255.0f), std::optional<float>(1.0f / 0.0371f));
  EXPECT_EQ(fp16_quantize_reciprocal(0.03f, 0.0f, -128.0f, 127.0f), std::nullopt);
  volatile float x = 0.375f, s = 0.03f;
  EXPECT_NE(std::nearbyint(x / s), std::nearbyint(x * (1.0f / s)));  // the case that refuses it
  EXPECT_EQ(fp16_quantize_reciprocal(0.3f, 0.0f, -128.0f, 127.0f), std::nullopt);
  EXPECT_EQ(fp16_quantize_reciprocal(0.0f, 0.0f, -128.0f, 127.0f), std::nullopt);
  EXPECT_EQ(fp16_quantize_reciprocal(1e-40f, 0.0f, -128.0f, 127.0f), std::nullopt);  // subnormal
}

TEST(FuseStemQuantize, MustNotFire) {
  struct Case {
    std::string label, text;
    std::vector<std::string> archs = {"sm_90"};
    bool wgmma = true;
  };
  const std::vector<Case> cases = {
      {"a second reader of the pooled value", stem_text("%q : int8[?] = QuantizeLinear(%p, %s, %z)  # quant\n"
                                                        " %o : float16[?] = Relu(%p)  # other\n output %q\n output %o")},
      {"a per-channel scale", stem_text("%q : int8[?] = QuantizeLinear(%p, %s, %z) {axis=1}  # quant\n output %q",
                                        "const %s : float[64] = random(3, 0.01, 0.1)", "const %z : int8[64] = random(4, -3, 3)")},
      {"a float16 scale", stem_text(kQuantize, "const %s : float16[scalar] = [0.0625]")},
      {"a scale known at run time", "input %s : float[scalar]\n " +
                                        stem_text(kQuantize, "", "const %z : int8[scalar] = [3]")},
      {"sm_87 in the target list", stem_text(kQuantize), {"sm_90", "sm_87"}},
      {"--conv-stem-wgmma off", stem_text(kQuantize), {"sm_90"}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    AOTC_BUILD(g, c.text);
    auto changed = pipeline(g, c.archs, c.wgmma);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_FALSE(*changed);
    for (const Node& n : g.nodes) EXPECT_FALSE(has_quantize(n)) << n.name;
    EXPECT_NE(op_list(g).find("QuantizeLinear"), std::string::npos);
  }
}

}  // namespace
}  // namespace aotc
