// plan_memory on small graphs: hand-computed offsets for a chain, a Reshape view that aliases its
// input and stretches its lifetime, views of views, views of graph inputs and constants, and a
// view that is a graph output (not a view: codegen copies).
#include "opt/memory_plan.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

TEST(PlanMemory, ChainReusesTheFirstBufferHandComputed) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid");
  AOTC_BUILD(g, R"(
    input %x : float[1x64]
    %a : float[?] = Relu(%x)
    %b : float[?] = Sigmoid(%a)
    %c : float[?] = Relu(%b)
    %y : float[?] = Sigmoid(%c)
    output %y
  )");
  // 256 bytes each. a [0,1] -> 0; b [1,2] meets a -> 256; c [2,3] meets only b -> 0.
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_EQ(g.value(g.find_value("a")).arena_offset, 0);
  EXPECT_EQ(g.value(g.find_value("b")).arena_offset, 256);
  EXPECT_EQ(g.value(g.find_value("c")).arena_offset, 0);
  EXPECT_EQ(g.value(g.find_value("x")).arena_offset, -1);  // caller's buffer
  EXPECT_EQ(g.value(g.find_value("y")).arena_offset, -1);
  EXPECT_EQ(plan->arena_bytes, 512);
  EXPECT_EQ(plan->linear_bytes, 768);
  EXPECT_EQ(plan->lower_bound, 512);
  EXPECT_EQ(plan->scratch_offset, (std::vector<int64_t>{-1, -1, -1, -1}));
  EXPECT_NE(plan->text.find("arena 512 bytes (lower bound 512, linear 768)"), std::string::npos) << plan->text;
}

TEST(PlanMemory, ReshapeIsAViewThatExtendsItsRootsLifetime) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid", "Reshape");
  AOTC_BUILD(g, R"(
    input %x : float[1x64]
    const %s : int64[2] = [8, 8]
    %a : float[?] = Relu(%x)
    %v : float[?] = Reshape(%a, %s)
    %b : float[?] = Sigmoid(%v)
    %c : float[?] = Relu(%b)
    %y : float[?] = Sigmoid(%c)
    output %y
  )");
  // a lives [0,2] (its view v is read by node 2); b [2,3]; c [3,4].
  // a -> 0; b meets a -> 256; c meets b only -> 0. Without the extension b would take 0 and
  // overwrite v while Sigmoid reads it.
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const Value& v = g.value(g.find_value("v"));
  EXPECT_EQ(v.alias_of, g.find_value("a"));
  EXPECT_EQ(v.arena_offset, 0);
  EXPECT_EQ(g.value(g.find_value("a")).arena_offset, 0);
  EXPECT_EQ(g.value(g.find_value("b")).arena_offset, 256);
  EXPECT_EQ(g.value(g.find_value("c")).arena_offset, 0);
  EXPECT_EQ(plan->arena_bytes, 512);
  EXPECT_EQ(plan->linear_bytes, 768);  // the view takes no space
  EXPECT_NE(plan->text.find("view %v = %a"), std::string::npos) << plan->text;
}

TEST(PlanMemory, ViewOfAViewAliasesTheRoot) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid", "Reshape", "Flatten");
  AOTC_BUILD(g, R"(
    input %x : float[2x4x8]
    const %s : int64[3] = [8, 4, 2]
    %a : float[?] = Relu(%x)
    %v1 : float[?] = Reshape(%a, %s)
    %v2 : float[?] = Flatten(%v1) {axis=1}
    %b : float[?] = Sigmoid(%x)
    %c : float[?] = Relu(%b)
    %d : float[?] = Sigmoid(%v2)
    %y : float[?] = Relu(%d)
    output %y, %c
  )");
  // 256 bytes each. a [0,5] (v2 read by node 5); b [3,4]; d [5,6]. a -> 0; b meets a -> 256;
  // d meets a (at 5) -> 256 (b is dead by then).
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  ValueId a = g.find_value("a");
  EXPECT_EQ(g.value(g.find_value("v1")).alias_of, a);
  EXPECT_EQ(g.value(g.find_value("v2")).alias_of, a);
  EXPECT_EQ(g.value(a).arena_offset, 0);
  EXPECT_EQ(g.value(g.find_value("b")).arena_offset, 256);
  EXPECT_EQ(g.value(g.find_value("d")).arena_offset, 256);
  EXPECT_EQ(plan->arena_bytes, 512);
}

TEST(PlanMemory, ViewOfAGraphInputOrConstantAliasesIt) {
  AOTC_REQUIRE_OPS("Relu", "Reshape");
  AOTC_BUILD(g, R"(
    input %x : float[4x4]
    const %k : float[16] = random(1)
    const %s : int64[2] = [2, 8]
    %v : float[?] = Reshape(%x, %s)
    %y : float[?] = Relu(%v)
    %kv : float[?] = Reshape(%k, %s)
    %z : float[?] = Relu(%kv)
    output %y, %z
  )");
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_EQ(g.value(g.find_value("v")).alias_of, g.find_value("x"));
  EXPECT_EQ(g.value(g.find_value("v")).arena_offset, -1);
  EXPECT_EQ(g.value(g.find_value("kv")).alias_of, g.find_value("k"));
  EXPECT_EQ(g.value(g.find_value("kv")).arena_offset, -1);
  EXPECT_EQ(plan->arena_bytes, 0);
  EXPECT_EQ(plan->lower_bound, 0);
}

TEST(PlanMemory, AViewThatIsAGraphOutputIsNotAView) {
  AOTC_REQUIRE_OPS("Relu", "Reshape");
  AOTC_BUILD(g, R"(
    input %x : float[4x4]
    const %s : int64[1] = [16]
    %a : float[?] = Relu(%x)
    %y : float[?] = Reshape(%a, %s)
    output %y
  )");
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const Value& y = g.value(g.find_value("y"));
  EXPECT_EQ(y.alias_of, kNoValue);  // codegen copies a into the caller's output buffer
  EXPECT_EQ(y.arena_offset, -1);
  EXPECT_EQ(g.value(g.find_value("a")).arena_offset, 0);
  EXPECT_EQ(plan->arena_bytes, 256);
}

TEST(PlanMemory, ReplanningResetsPreviousResults) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid");
  AOTC_BUILD(g, R"(
    input %x : float[1x64]
    %a : float[?] = Relu(%x)
    %y : float[?] = Sigmoid(%a)
    output %y
  )");
  g.value(g.find_value("x")).arena_offset = 4096;  // stale
  g.value(g.find_value("y")).alias_of = g.find_value("a");
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_EQ(g.value(g.find_value("x")).arena_offset, -1);
  EXPECT_EQ(g.value(g.find_value("y")).alias_of, kNoValue);
  EXPECT_EQ(g.value(g.find_value("a")).arena_offset, 0);
}

}  // namespace
}  // namespace aotc
