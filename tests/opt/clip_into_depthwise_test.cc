// clip_into_depthwise: a pointwise expansion conv ending in ReLU6 and read only by a depthwise
// conv keeps Relu (cuBLASLt can then run it) and the depthwise conv clamps its input; checked
// against the CPU reference of the graph before the passes, and where it must not fire.
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

// x -> 1x1 conv (24) + bias + Clip(LO, HI) -> [extra reader] -> depthwise 3x3 + bias + Clip(0, 6).
std::string block(const std::string& lo, const std::string& hi, bool second_reader = false,
                  const std::string& expansion_kernel = "1x1", const std::string& expansion_attrs = "") {
  std::string k = expansion_kernel == "1x1" ? "1x1" : "3x3";
  return std::string(R"(
    input %x : float16[2x16x7x9]
    const %w1 : float16[24x16x)") + k + R"(] = random(1, -0.5, 0.5)
    const %b1 : float16[24] = random(2, 0, 2)
    const %lo : float16[scalar] = [)" + lo + R"(]
    const %hi : float16[scalar] = [)" + hi + R"(]
    const %z : float16[scalar] = [0]
    const %six : float16[scalar] = [6]
    const %w2 : float16[24x1x3x3] = random(3)
    const %b2 : float16[24] = random(4)
    %e : float16[?] = Conv(%x, %w1, %b1) )" + expansion_attrs + R"(  # expand
    %r : float16[?] = Clip(%e, %lo, %hi)  # relu6
    %d : float16[?] = Conv(%r, %w2, %b2) {group=24, pads=[1,1,1,1]}  # dw
    %y : float16[?] = Clip(%d, %z, %six)  # relu6b
    output %y
  )" + (second_reader ? "    output %r\n" : "");
}

Expected<bool> passes(Graph& g) {
  auto f = fuse_epilogue(g);
  if (!f) return f.status();
  auto l = layout_nhwc(g);
  if (!l) return l.status();
  auto d = clip_into_depthwise(g);
  if (!d) return d.status();
  auto p = clip_into_pool(g);
  if (!p) return p.status();
  return *d || *p;
}

const Node* find_node(const Graph& g, const std::string& prefix) {
  for (const Node& n : g.nodes)
    if (n.name.rfind(prefix, 0) == 0 && (n.op_type == "FusedConv" || n.op_type == "Conv")) return &n;
  return nullptr;
}

TEST(ClipIntoDepthwise, ExpansionKeepsReluDepthwiseClampsItsInput) {
  // Bound 1 (not 6): with these weights many expansion outputs pass it, so the clamp matters.
  AOTC_BUILD(g, block("0", "1"));
  Graph before = g;
  auto changed = passes(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  const Node* e = find_node(g, "expand");
  const Node* d = find_node(g, "dw");
  ASSERT_TRUE(e && d);
  EXPECT_EQ(e->attr_string("activation", ""), "Relu");
  EXPECT_FALSE(e->has_attr("act.max"));
  EXPECT_EQ(d->attr_float("input_max", 0), 1.0f);
  EXPECT_EQ(d->attr_string("activation", ""), "Clip");  // its own ReLU6 stays in its epilogue
  EXPECT_TRUE(testing_util::same_outputs(before, g, 21, 2.5e-3, 1e-3));
}

TEST(ClipIntoDepthwise, MustNotFire) {
  struct Case {
    const char* why;
    std::string text;
    bool pointwise_gemm = true;
  };
  const std::vector<Case> cases = {
      {"lower bound not 0", block("-1", "6")},
      {"the clipped value has another reader", block("0", "6", true)},
      {"expansion is not pointwise", block("0", "6", false, "3x3", "{pads=[1,1,1,1]}")},
      {"pointwise GEMMs off", block("0", "6"), false},
  };
  for (const Case& c : cases) {
    AOTC_BUILD(g, c.text);
    g.target.conv_pointwise_gemm = c.pointwise_gemm;
    auto changed = passes(g);
    ASSERT_TRUE(changed.is_ok()) << c.why << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.why;
    const Node* d = find_node(g, "dw");
    ASSERT_NE(d, nullptr) << c.why;
    EXPECT_FALSE(d->has_attr("input_max")) << c.why;
  }
}

// MobileNetV2's head: the last 1x1 conv ends in ReLU6 and only the global average pool before the
// classifier reads it. The conv keeps Relu (cuBLASLt), the channels_last pool clamps what it reads.
std::string head(bool max_pool = false) {
  return std::string(R"(
    input %x : float16[2x16x7x9]
    const %w1 : float16[32x16x1x1] = random(1, -0.5, 0.5)
    const %b1 : float16[32] = random(2, 0, 2)
    const %z : float16[scalar] = [0]
    const %hi : float16[scalar] = [1]
    %e : float16[?] = Conv(%x, %w1, %b1)  # last_conv
    %r : float16[?] = Clip(%e, %z, %hi)  # relu6
    %p : float16[?] = )") + (max_pool ? "GlobalMaxPool" : "GlobalAveragePool") + R"((%r)  # pool
    output %p
  )";
}

TEST(ClipIntoDepthwise, LastConvKeepsReluGlobalAveragePoolClampsItsInput) {
  AOTC_BUILD(g, head());
  Graph before = g;
  auto changed = passes(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  const Node* e = find_node(g, "last_conv");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->attr_string("activation", ""), "Relu");
  const Node* pool = nullptr;
  for (const Node& n : g.nodes)
    if (n.op_type == "GlobalAveragePool") pool = &n;
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE(channels_last(*pool));
  EXPECT_EQ(pool->attr_float("input_max", 0), 1.0f);
  // Bound 1 with biases in [0, 2): many conv outputs pass it, so the pool's clamp matters.
  EXPECT_TRUE(testing_util::same_outputs(before, g, 21, 2.5e-3, 1e-3));
  // The pool's lowering carries the clamp into its kernel.
  auto low = default_registry().find("GlobalAveragePool", "")->lower(*pool, g);
  ASSERT_TRUE(low.is_ok()) << low.status().message();
  std::string has;
  for (const auto& h : low->steps[0].kernel.holes)
    if (h.first == "HAS_INPUT_MAX") has = h.second;
  EXPECT_EQ(has, "1");
}

TEST(ClipIntoDepthwise, EachPassSplitsItsOwnReader) {
  // clip_into_depthwise leaves the pool's ReLU6 alone and clip_into_pool the depthwise's, so
  // --disable-pass clip_into_pool measures the pool split alone.
  {
    AOTC_BUILD(g, head());
    ASSERT_TRUE(fuse_epilogue(g).is_ok());
    ASSERT_TRUE(layout_nhwc(g).is_ok());
    auto changed = clip_into_depthwise(g);
    ASSERT_TRUE(changed.is_ok());
    EXPECT_FALSE(*changed);
  }
  {
    AOTC_BUILD(g, block("0", "1"));
    ASSERT_TRUE(fuse_epilogue(g).is_ok());
    ASSERT_TRUE(layout_nhwc(g).is_ok());
    auto changed = clip_into_pool(g);
    ASSERT_TRUE(changed.is_ok());
    EXPECT_FALSE(*changed);
  }
}

TEST(ClipIntoDepthwise, MustNotFireOnAGlobalMaxPool) {
  AOTC_BUILD(g, head(true));
  auto changed = passes(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_FALSE(*changed);
  for (const Node& n : g.nodes) EXPECT_FALSE(n.has_attr("input_max")) << n.op_type;
}

TEST(ClipIntoDepthwise, InputMaxIsRefusedWhereNoKernelImplementsIt) {
  // An NCHW GlobalAveragePool given input_max (only passes set it; models cannot: the importer
  // refuses the name) fails shape inference instead of being ignored.
  AOTC_BUILD(g, R"(
    input %x : float[2x3x4x5]
    %p : float[?] = GlobalAveragePool(%x)
    output %p
  )");
  g.nodes[0].attrs["input_max"] = Attribute::of_float(6.0f);
  EXPECT_FALSE(default_registry().find("GlobalAveragePool", "")->infer(g.nodes[0], g).is_ok());
}

// A bound the fp16 storage cannot hold exactly (the fp32 model's 6.1 after the precision pass):
// min(round(r), M) would differ from round(min(r, M)).
TEST(ClipIntoDepthwise, MustNotFireOnABoundTheStorageCannotHold) {
  AOTC_BUILD(g, block("0", "6"));
  ASSERT_TRUE(fuse_epilogue(g).is_ok());
  ASSERT_TRUE(layout_nhwc(g).is_ok());
  for (Node& n : g.nodes)
    if (n.name.rfind("expand", 0) == 0) n.attrs["act.max"] = Attribute::of_float(6.1f);
  auto changed = clip_into_depthwise(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace aotc
