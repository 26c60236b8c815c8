// dead_code: nodes that reach no graph output go (whole chains in one run); everything that
// feeds an output stays, also a multi-output node with one unused output.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

TEST(DeadCode, RemovesAChainThatReachesNoOutput) {
  AOTC_BUILD(g, R"(
    input %x : float[2x3]
    %a : float[?] = Relu(%x)
    %dead1 : float[?] = Sigmoid(%x)
    %dead2 : float[?] = Relu(%dead1)
    %b : float[?] = Sigmoid(%a)
    output %b
  )");
  Graph before = g;
  auto changed = dead_code(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "Relu,Sigmoid");
  EXPECT_EQ(g.nodes[0].outputs[0], g.find_value("a"));
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(DeadCode, DoesNotFireWhenEverythingIsUsed) {
  AOTC_BUILD(g, R"(
    input %x : float[4]
    %a : float[?] = Relu(%x)
    %b : float[?] = Sigmoid(%a)
    %c : float[?] = Relu(%a)
    output %b, %c
  )");
  auto changed = dead_code(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(op_list(g), "Relu,Sigmoid,Relu");
}

TEST(DeadCode, KeepsANodeThatIsAGraphOutputEvenIfNothingReadsIt) {
  AOTC_BUILD(g, R"(
    input %x : float[4]
    %a : float[?] = Relu(%x)
    %b : float[?] = Sigmoid(%x)
    output %a
    output %b
  )");
  auto changed = dead_code(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(g.nodes.size(), 2u);
}

TEST(DeadCode, EverythingDeadLeavesAnEmptyGraph) {
  AOTC_BUILD(g, R"(
    input %x : float[4]
    %a : float[?] = Relu(%x)
    output %x
  )");
  auto changed = dead_code(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_TRUE(*changed);
  EXPECT_TRUE(g.nodes.empty());
  EXPECT_TRUE(verify(g).is_ok());
}

}  // namespace
}  // namespace aotc
