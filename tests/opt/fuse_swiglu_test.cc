// fuse_swiglu: Mul(Mul(g, Sigmoid(g)), u) -> SwiGLU(g, u) {alpha = 1}; the CPU reference before
// and after on random inputs (fp32 and fp16), and where it must not fire.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

std::string typed(std::string text, const std::string& t) {
  for (size_t at = text.find("T["); at != std::string::npos; at = text.find("T[", at + 1)) text.replace(at, 1, t);
  return text;
}

TEST(FuseSwiglu, GatedSiluBecomesOneNode) {
  AOTC_REQUIRE_OPS("Mul", "Sigmoid", "SwiGLU", "Relu");
  // Both operand orders of both Muls.
  const std::vector<std::string> forms = {
      "%sg : T[?] = Sigmoid(%g)\n    %s : T[?] = Mul(%g, %sg)\n    %y : T[?] = Mul(%s, %u)",
      "%sg : T[?] = Sigmoid(%g)\n    %s : T[?] = Mul(%sg, %g)\n    %y : T[?] = Mul(%u, %s)",
  };
  for (const char* t : {"float", "float16"}) {
    for (const std::string& form : forms) {
      AOTC_BUILD(g, typed(R"(
    input %a : T[2x5x24]
    input %u : T[2x5x24]
    %g : T[?] = Relu(%a)
    )" + form + R"(
    output %y
  )", t));
      Graph before = g;
      auto changed = fuse_swiglu(g);
      ASSERT_TRUE(changed.is_ok()) << changed.status().message();
      EXPECT_TRUE(*changed) << t << ": " << form;
      ASSERT_TRUE(verify(g).is_ok());
      EXPECT_EQ(op_list(g), "Relu,SwiGLU") << t;
      EXPECT_EQ(g.nodes[1].inputs, (std::vector<ValueId>{g.find_value("g"), g.find_value("u")}));
      EXPECT_EQ(g.nodes[1].attr_float("alpha", 0.0f), 1.0f);
      EXPECT_EQ(g.nodes[1].outputs[0], g.find_value("y"));
      if (std::string(t) == "float")
        EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 1e-5, 1e-4));
      else
        EXPECT_TRUE(testing_util::same_outputs(before, g, 3, 2.5e-3, 1e-3));
    }
  }
}

TEST(FuseSwiglu, MustNotFire) {
  AOTC_REQUIRE_OPS("Mul", "Sigmoid", "Relu");
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"the SiLU is also read elsewhere", R"(
    input %g : float[2x8]
    input %u : float[2x8]
    %sg : float[?] = Sigmoid(%g)
    %s : float[?] = Mul(%g, %sg)
    %y : float[?] = Mul(%s, %u)
    %z : float[?] = Relu(%s)
    output %y
    output %z
  )"},
      {"the Sigmoid is a graph output", R"(
    input %g : float[2x8]
    input %u : float[2x8]
    %sg : float[?] = Sigmoid(%g)
    %s : float[?] = Mul(%g, %sg)
    %y : float[?] = Mul(%s, %u)
    output %y
    output %sg
  )"},
      {"Sigmoid of another value (not x * sigmoid(x))", R"(
    input %g : float[2x8]
    input %h : float[2x8]
    input %u : float[2x8]
    %sg : float[?] = Sigmoid(%h)
    %s : float[?] = Mul(%g, %sg)
    %y : float[?] = Mul(%s, %u)
    output %y
  )"},
      {"u broadcasts (SwiGLU takes equal shapes)", R"(
    input %g : float[2x8]
    input %u : float[8]
    %sg : float[?] = Sigmoid(%g)
    %s : float[?] = Mul(%g, %sg)
    %y : float[?] = Mul(%s, %u)
    output %y
  )"},
      {"a plain SiLU without the gate", R"(
    input %g : float[2x8]
    %sg : float[?] = Sigmoid(%g)
    %y : float[?] = Mul(%g, %sg)
    output %y
  )"},
  };
  for (const auto& c : cases) {
    AOTC_BUILD(g, c.second);
    const std::string ops = op_list(g);
    auto changed = fuse_swiglu(g);
    ASSERT_TRUE(changed.is_ok()) << c.first << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.first;
    EXPECT_EQ(op_list(g), ops) << c.first;
  }
}

}  // namespace
}  // namespace aotc
