// fuse_gelu: the erf and tanh GELU formulas as exporters write them become one Gelu node; the
// outputs match the written-out graph on the CPU reference; and where it must not fire.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// GPT-2's NewGELU as torch exports it (and models/tiny_transformers.py writes it).
const char* kTanhGelu = R"(
    input %x : float[3x7]
    const %three : float[scalar] = [3.0]
    const %k : float[scalar] = [0.044715]
    const %c : float[scalar] = [0.7978845608028654]
    const %one : float[scalar] = [1.0]
    const %half : float[scalar] = [0.5]
    %p : float[?] = Pow(%x, %three)  # pow
    %q : float[?] = Mul(%p, %k)  # mul_k
    %r : float[?] = Add(%x, %q)  # add_x
    %s : float[?] = Mul(%r, %c)  # mul_c
    %t : float[?] = Tanh(%s)  # tanh
    %a : float[?] = Add(%t, %one)  # add_1
    %h : float[?] = Mul(%x, %half)  # half
    %y : float[?] = Mul(%h, %a)  # out
    output %y
  )";

TEST(FuseGelu, TanhFormBecomesOneGelu) {
  AOTC_REQUIRE_OPS("Gelu", "Pow", "Tanh");
  AOTC_BUILD(g, kTanhGelu);
  Graph before = g;
  auto changed = fuse_gelu(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  ASSERT_EQ(op_list(g), "Gelu");
  EXPECT_EQ(g.nodes[0].attr_string("approximate", ""), "tanh");
  EXPECT_EQ(g.nodes[0].inputs[0], g.find_value("x"));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 1e-5, 1e-4));
}

// The erf form with each way of applying the 0.5 and both ways of dividing by sqrt(2).
TEST(FuseGelu, ErfFormsBecomeOneGelu) {
  AOTC_REQUIRE_OPS("Gelu", "Erf");
  const std::vector<std::string> tails = {
      // (a * x) * 0.5
      "%m : float[?] = Mul(%a, %x)  # m1\n    %y : float[?] = Mul(%m, %half)  # out\n",
      // (a * 0.5) * x
      "%m : float[?] = Mul(%half, %a)  # m1\n    %y : float[?] = Mul(%x, %m)  # out\n",
      // a * (x * 0.5)
      "%h : float[?] = Mul(%half, %x)  # h\n    %y : float[?] = Mul(%a, %h)  # out\n"};
  const std::vector<std::string> scales = {"%d : float[?] = Div(%x, %sqrt2)  # div\n",
                                           "%d : float[?] = Mul(%inv_sqrt2, %x)  # mul_inv\n"};
  for (const std::string& scale : scales)
    for (const std::string& tail : tails) {
      const std::string text = std::string(R"(
    input %x : float[2x5x3]
    const %sqrt2 : float[scalar] = [1.4142135623730951]
    const %inv_sqrt2 : float[scalar] = [0.7071067811865476]
    const %one : float[scalar] = [1.0]
    const %half : float[scalar] = [0.5]
    )") + scale + R"(    %e : float[?] = Erf(%d)  # erf
    %a : float[?] = Add(%one, %e)  # add_1
    )" + tail + "    output %y\n";
      AOTC_BUILD(g, text);
      Graph before = g;
      auto changed = fuse_gelu(g);
      ASSERT_TRUE(changed.is_ok()) << changed.status().message();
      EXPECT_TRUE(*changed) << scale << tail;
      EXPECT_EQ(op_list(g), "Gelu") << scale << tail;
      EXPECT_EQ(g.nodes[0].attr_string("approximate", ""), "none");
      EXPECT_TRUE(testing_util::same_outputs(before, g, 4, 1e-5, 1e-4)) << scale << tail;
    }
}

// Must not fire: a constant that is not the formula's, an intermediate read twice, the final
// product taken with another value than x.
TEST(FuseGelu, MustNotFire) {
  AOTC_REQUIRE_OPS("Gelu", "Pow", "Tanh");
  struct Case {
    const char* why;
    std::string from, to;
  };
  const std::vector<Case> cases = {
      {"coefficient 0.04 instead of 0.044715", "[0.044715]", "[0.04]"},
      {"sqrt(2/pi) rounded to 0.7979", "[0.7978845608028654]", "[0.7979]"},
      {"tanh output also a graph output", "    output %y\n", "    output %y\n    output %t\n"},
      {"final product with another input", "%y : float[?] = Mul(%h, %a)", "%y : float[?] = Mul(%z, %a)"},
  };
  for (const Case& c : cases) {
    std::string text = kTanhGelu;
    text.replace(text.find(c.from), c.from.size(), c.to);
    if (std::string(c.why).find("another input") != std::string::npos)
      text.replace(text.find("input %x : float[3x7]"), 21, "input %x : float[3x7]\n    input %z : float[3x7]");
    AOTC_BUILD(g, text);
    const std::string ops = op_list(g);
    auto changed = fuse_gelu(g);
    ASSERT_TRUE(changed.is_ok()) << c.why;
    EXPECT_FALSE(*changed) << c.why;
    EXPECT_EQ(op_list(g), ops) << c.why;
  }
}

}  // namespace
}  // namespace aotc
