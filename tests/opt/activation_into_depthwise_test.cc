// activation_into_depthwise: an activation kernel read only by a channels_last depthwise conv
// becomes the conv's input activation (applied inside the image, padding zero); checked against
// the CPU reference of the graph before the passes, and where it must not fire.
#include "ir/layout.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

// x -> PRODUCER (24 channels) -> ACT -> depthwise 3x3 pad 1 + bias (READER attributes) -> y.
// `producer` "expand": a 1x1 conv, which keeps a SiLU out of its epilogue (cuBLASLt); "add": the
// 1x1 conv's output added to itself (an Add no epilogue takes), so the activation follows an Add.
std::string block(const std::string& act, const std::string& producer = "expand", const std::string& reader = "group=24",
                  bool second_reader = false) {
  std::string t = R"(
    input %x : float16[4x16x14x18]
    const %w1 : float16[24x16x1x1] = random(1, -0.5, 0.5)
    const %b1 : float16[24] = random(2, -1, 1)
    const %w2 : float16[24x)" + std::string(reader == "group=24" ? "1" : "24") + R"(x3x3] = random(3)
    const %b2 : float16[24] = random(4)
)";
  if (producer == "expand") {
    t += "    %e : float16[?] = Conv(%x, %w1, %b1)  # expand\n";
  } else {
    t += "    %p : float16[?] = Conv(%x, %w1, %b1)  # expand\n";
    t += "    %e : float16[?] = Add(%p, %p)  # twice\n";
  }
  t += "    %a : float16[?] = " + act + "(%e)  # act\n";
  t += "    %y : float16[?] = Conv(%a, %w2, %b2) {" + reader + ", pads=[1,1,1,1]}  # dw\n";
  t += "    output %y\n";
  if (second_reader) t += "    output %a\n";
  return t;
}

// Two SMs: the tile kernel's grid (4 images x 2 x 3 tiles of 7 x 8 x 24 channels) has 12 blocks
// an SM, over the pass's minimum of 4.
Expected<bool> passes(Graph& g, int sm_count = 2) {
  g.target.sm_count = sm_count;
  for (auto pass : {fuse_epilogue, layout_nhwc}) {
    auto r = pass(g);
    if (!r) return r.status();
  }
  return activation_into_depthwise(g);
}

const Node* find_node(const Graph& g, const std::string& prefix) {
  for (const Node& n : g.nodes)
    if (n.name.rfind(prefix, 0) == 0) return &n;
  return nullptr;
}

TEST(ActivationIntoDepthwise, SiluAfterTheExpansionMovesIntoTheDepthwiseInput) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Swish", "Sigmoid", "Add");
  // Swish (f(0) = 0) after the cuBLASLt expansion; Sigmoid (f(0) = 1/2) after an Add: the padding
  // must stay zero, not become the activation of zero.
  for (const auto& c : std::vector<std::pair<std::string, std::string>>{{"Swish", "expand"}, {"Sigmoid", "add"}}) {
    AOTC_BUILD(g, block(c.first, c.second));
    Graph before = g;
    auto changed = passes(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed) << c.first;
    ASSERT_TRUE(verify(g).is_ok());
    EXPECT_EQ(find_node(g, "act"), nullptr) << c.first << ": the activation's own kernel is gone";
    const Node* d = find_node(g, "dw");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->op_type, "FusedConv");
    EXPECT_TRUE(channels_last(*d));
    EXPECT_EQ(d->attr_string("input_activation", ""), c.first);
    const Node* producer = find_node(g, c.second == "expand" ? "expand" : "twice");
    ASSERT_NE(producer, nullptr);
    EXPECT_EQ(d->inputs[0], producer->outputs[0]) << "the depthwise reads the activation's input";
    EXPECT_TRUE(testing_util::same_outputs(before, g, 5, 2.5e-3, 1e-3)) << c.first;
  }
}

TEST(ActivationIntoDepthwise, MustNotFire) {
  AOTC_REQUIRE_OPS("Conv", "aotc.FusedConv", "Swish");
  struct Case {
    const char* why;
    std::string text;
    std::vector<std::string> exclude;
  };
  const std::vector<Case> cases = {
      {"the activation's output has another reader", block("Swish", "expand", "group=24", true), {}},
      {"the reader is not depthwise", block("Swish", "expand", "group=1"), {}},
      {"the activation is excluded from epilogues (--epilogue-exclude)", block("Swish", "expand", "group=24"), {"Swish"}},
  };
  for (const Case& c : cases) {
    AOTC_BUILD(g, c.text);
    g.target.epilogue_excluded = c.exclude;
    auto changed = passes(g);
    ASSERT_TRUE(changed.is_ok()) << c.why << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.why;
    EXPECT_NE(find_node(g, "act"), nullptr) << c.why;
  }
  // A grid under four blocks an SM (132 SMs: batch-1-like) keeps the activation's own kernel.
  {
    AOTC_BUILD(g, block("Swish"));
    auto small = passes(g, 132);
    ASSERT_TRUE(small.is_ok()) << small.status().message();
    EXPECT_FALSE(*small);
  }
  // A depthwise conv that is not channels_last (no layout pass) keeps the activation too.
  AOTC_BUILD(g, block("Swish"));
  auto changed = activation_into_depthwise(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace aotc
