// fuse_silu: Mul(x, Sigmoid(x)) -> Swish(x) {alpha = 1}; the CPU reference before and after on
// random inputs (fp32 and fp16), where it must not fire, and the pipeline's order (the gated form
// stays one SwiGLU).
#include "opt/passes.h"
#include "opt/pipeline.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

TEST(FuseSilu, WrittenOutSiluBecomesOneSwish) {
  AOTC_REQUIRE_OPS("Mul", "Sigmoid", "Swish", "Relu");
  for (const char* form : {"Mul(%x, %s)", "Mul(%s, %x)"}) {
    for (const char* t : {"float", "float16"}) {
      AOTC_BUILD(g, std::string(R"(
    input %a : )") + t + R"([2x3x5x7]
    %x : )" + t + R"([?] = Relu(%a)
    %s : )" + t + R"([?] = Sigmoid(%x)
    %y : )" + t + "[?] = " + form + R"(
    output %y
  )");
      Graph before = g;
      auto changed = fuse_silu(g);
      ASSERT_TRUE(changed.is_ok()) << changed.status().message();
      EXPECT_TRUE(*changed) << t << " " << form;
      ASSERT_TRUE(verify(g).is_ok());
      EXPECT_EQ(op_list(g), "Relu,Swish");
      EXPECT_EQ(g.nodes[1].inputs, (std::vector<ValueId>{g.find_value("x")}));
      EXPECT_EQ(g.nodes[1].attr_float("alpha", 0.0f), 1.0f);
      EXPECT_EQ(g.nodes[1].outputs[0], g.find_value("y"));
      const bool half = std::string(t) == "float16";
      EXPECT_TRUE(testing_util::same_outputs(before, g, 3, half ? 2.5e-3 : 1e-5, half ? 1e-3 : 1e-4)) << t;
    }
  }
}

TEST(FuseSilu, MustNotFire) {
  AOTC_REQUIRE_OPS("Mul", "Sigmoid", "Swish", "Relu");
  // The Sigmoid read twice; the Sigmoid a graph output; Sigmoid of another value.
  AOTC_BUILD(g, R"(
    input %x : float[4x6]
    input %z : float[4x6]
    %s1 : float[?] = Sigmoid(%x)
    %y1 : float[?] = Mul(%x, %s1)
    %r1 : float[?] = Relu(%s1)
    %s2 : float[?] = Sigmoid(%x)
    %y2 : float[?] = Mul(%x, %s2)
    %s3 : float[?] = Sigmoid(%z)
    %y3 : float[?] = Mul(%x, %s3)
    output %y1
    output %r1
    output %y2
    output %s2
    output %y3
  )");
  const std::string ops = op_list(g);
  auto changed = fuse_silu(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(op_list(g), ops);
}

// In the pipeline fuse_swiglu runs first: LLaMA's gated form stays one SwiGLU, and an ungated
// SiLU beside it becomes a Swish.
TEST(FuseSilu, GatedFormStaysSwigluInThePipeline) {
  AOTC_REQUIRE_OPS("Mul", "Sigmoid", "Swish", "SwiGLU", "Relu");
  AOTC_BUILD(g, R"(
    input %g : float[2x8]
    input %u : float[2x8]
    %sg : float[?] = Sigmoid(%g)
    %s : float[?] = Mul(%g, %sg)
    %y : float[?] = Mul(%s, %u)
    %su : float[?] = Sigmoid(%u)
    %z : float[?] = Mul(%su, %u)
    output %y
    output %z
  )");
  Graph before = g;
  ASSERT_TRUE(run_pipeline(g, PipelineOptions{}).is_ok());
  int swiglu = 0, swish = 0;
  for (const Node& n : g.nodes) {
    swiglu += n.op_type == "SwiGLU";
    swish += n.op_type == "Swish";
  }
  EXPECT_EQ(swiglu, 1) << op_list(g);
  EXPECT_EQ(swish, 1) << op_list(g);
  EXPECT_TRUE(testing_util::same_outputs(before, g, 4));
}

}  // namespace
}  // namespace aotc
