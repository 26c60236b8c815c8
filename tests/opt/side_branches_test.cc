// side_branches: which node goes to the auxiliary stream, where it moves, its join, the cases where
// it must not fire, and the memory plan's lifetimes over the concurrent region (without them a
// main-lane value reuses the bytes the side node still reads).
#include <algorithm>
#include <set>

#include "opt/memory_plan.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

// A block with a downsample-like branch: d = Neg(a) is read only by the final Add, so it may run
// beside Sigmoid and Tanh (nodes 1 and 2).
constexpr const char* kDiamond = R"(
    input %x : float[1x64]
    %a : float[?] = Relu(%x)
    %b : float[?] = Sigmoid(%a)
    %c : float[?] = Tanh(%b)
    %d : float[?] = Neg(%a)
    %y : float[?] = Add(%c, %d)
    output %y
  )";

std::vector<std::string> op_order(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  return ops;
}

// With auxiliary streams on, side_branches leaves `g` alone.
void expect_unchanged_with_aux_streams(Graph& g) {
  g.target.aux_streams = 1;
  auto changed = side_branches(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_FALSE(*changed);
  EXPECT_TRUE(g.side_join.empty());
}

TEST(SideBranches, TheBranchBesideTheMostWorkMovesAfterItsProducerAndJoinsAtItsReader) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid", "Tanh", "Neg", "Add");
  AOTC_BUILD(g, kDiamond);
  g.target.aux_streams = 1;
  auto changed = side_branches(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  // Neg (beside Sigmoid and Tanh) wins over Tanh (beside Neg only), whose region overlaps.
  EXPECT_EQ(op_order(g), (std::vector<std::string>{"Relu", "Neg", "Sigmoid", "Tanh", "Add"}));
  EXPECT_EQ(g.side_join, (std::vector<int>{-1, 4, -1, -1, -1}));
  EXPECT_TRUE(verify(g).is_ok());
}

TEST(SideBranches, PlanKeepsTheSideNodesValuesUntilTheJoin) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid", "Tanh", "Neg", "Add");
  AOTC_BUILD(g, kDiamond);
  g.target.aux_streams = 1;
  ASSERT_TRUE(side_branches(g).is_ok());
  // Order a, d, b, c, y (256 bytes each). a is read by d (1) and b (2) but held to the join (4),
  // d lives [1, 4], b [2, 3], c [3, 4]: all four meet, so 1024 bytes and no shared offsets.
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  std::set<int64_t> offsets;
  for (const char* v : {"a", "b", "c", "d"}) offsets.insert(g.value(g.find_value(v)).arena_offset);
  EXPECT_EQ(offsets.size(), 4u);
  EXPECT_EQ(plan->arena_bytes, 1024);
  // The same order as one lane: c may take a's bytes (a is dead after b), 768 bytes. On two lanes
  // that would let Tanh overwrite a while Neg may still read it.
  g.side_join.clear();
  auto one_lane = plan_memory(g);
  ASSERT_TRUE(one_lane.is_ok());
  EXPECT_EQ(one_lane->arena_bytes, 768);
  EXPECT_EQ(g.value(g.find_value("c")).arena_offset, g.value(g.find_value("a")).arena_offset);
}

TEST(SideBranches, ScratchOfASideNodeLivesUntilTheJoin) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid", "Tanh", "Add", "SoftmaxCrossEntropyLoss");
  // The loss (without its log_prob output) lowers with a scratch buffer of x's size.
  AOTC_BUILD(g, R"(
    input %x : float[4x16]
    input %t : int64[4]
    %a : float[?] = Relu(%x)
    %b : float[?] = Sigmoid(%a)
    %c : float[?] = Tanh(%b)
    %l : float[?] = SoftmaxCrossEntropyLoss(%a, %t)
    %y : float[?] = Add(%c, %l)
    output %y
  )");
  g.target.aux_streams = 1;
  ASSERT_TRUE(side_branches(g).is_ok());
  ASSERT_EQ(op_order(g)[1], "SoftmaxCrossEntropyLoss");
  ASSERT_EQ(g.side_join[1], 4);
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  const int64_t scratch = plan->scratch_offset[1];
  ASSERT_GE(scratch, 0);
  for (const char* v : {"a", "b", "c", "l"}) EXPECT_NE(g.value(g.find_value(v)).arena_offset, scratch) << v;
  // On one lane the scratch is live at node 1 only, and b or c takes its bytes.
  g.side_join.clear();
  auto one_lane = plan_memory(g);
  ASSERT_TRUE(one_lane.is_ok());
  const int64_t s1 = one_lane->scratch_offset[1];
  EXPECT_TRUE(g.value(g.find_value("b")).arena_offset == s1 || g.value(g.find_value("c")).arena_offset == s1);
}

TEST(SideBranches, PlanRefusesASideJoinOfTheWrongLength) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid", "Tanh", "Neg", "Add");
  AOTC_BUILD(g, kDiamond);
  g.target.aux_streams = 1;
  g.side_join = {-1, 4};
  EXPECT_FALSE(plan_memory(g).is_ok());
}

TEST(SideBranches, MustNotFire) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid", "Tanh", "Neg", "Add");
  {  // switched off (the default)
    AOTC_BUILD(g, kDiamond);
    EXPECT_EQ(g.target.aux_streams, 0);
    auto changed = side_branches(g);
    ASSERT_TRUE(changed.is_ok());
    EXPECT_FALSE(*changed);
    EXPECT_TRUE(g.side_join.empty());
    EXPECT_EQ(op_order(g), (std::vector<std::string>{"Relu", "Sigmoid", "Tanh", "Neg", "Add"}));
  }
  {  // outputs larger than the cap
    AOTC_BUILD(g, kDiamond);
    g.target.aux_stream_max_bytes = 255;
    expect_unchanged_with_aux_streams(g);
  }
  {  // a chain: nothing runs beside anything
    AOTC_BUILD(g, R"(
      input %x : float[1x64]
      %a : float[?] = Relu(%x)
      %b : float[?] = Sigmoid(%a)
      %c : float[?] = Tanh(%b)
      %y : float[?] = Neg(%c)
      output %y
    )");
    expect_unchanged_with_aux_streams(g);
  }
  {  // the branch's output is a graph output (and its other candidate has no work beside it)
    AOTC_BUILD(g, R"(
      input %x : float[1x64]
      %a : float[?] = Relu(%x)
      %b : float[?] = Sigmoid(%a)
      %c : float[?] = Tanh(%b)
      %d : float[?] = Neg(%a)
      output %c, %d
    )");
    expect_unchanged_with_aux_streams(g);
  }
  {  // beside a view only (Reshape launches nothing): no concurrency to gain
    AOTC_BUILD(g, R"(
      input %x : float[1x64]
      const %s : int64[2] = [8, 8]
      %a : float[?] = Relu(%x)
      %v : float[?] = Reshape(%a, %s)
      %w : float[?] = Reshape(%v, %s)
      %d : float[?] = Neg(%a)
      %e : float[?] = Reshape(%d, %s)
      %y : float[?] = Add(%w, %e)
      output %y
    )");
    expect_unchanged_with_aux_streams(g);
  }
}

TEST(SideBranches, ARegionWithMoreThanEightNodesBesideIsNotTaken) {
  AOTC_REQUIRE_OPS("Relu", "Sigmoid", "Neg", "Add");
  std::string text = "input %x : float[1x64]\n%a : float[?] = Relu(%x)\n%m0 : float[?] = Sigmoid(%a)\n";
  const int chain = 9;  // nodes beside the Neg: the 9 Sigmoids
  for (int i = 1; i < chain; ++i)
    text += "%m" + std::to_string(i) + " : float[?] = Sigmoid(%m" + std::to_string(i - 1) + ")\n";
  text += "%d : float[?] = Neg(%a)\n%y : float[?] = Add(%m" + std::to_string(chain - 1) + ", %d)\noutput %y\n";
  AOTC_BUILD(g, text.c_str());
  g.target.aux_streams = 1;
  auto changed = side_branches(g);
  ASSERT_TRUE(changed.is_ok());
  // The Neg has 9 nodes beside it (too many); the last Sigmoid has only the Neg beside it.
  ASSERT_TRUE(*changed);
  const std::vector<std::string> ops = op_order(g);
  const size_t neg = static_cast<size_t>(std::find(ops.begin(), ops.end(), "Neg") - ops.begin());
  ASSERT_LT(neg, ops.size());
  EXPECT_EQ(g.side_join[neg], -1);
  EXPECT_EQ(std::count_if(g.side_join.begin(), g.side_join.end(), [](int j) { return j >= 0; }), 1);
}

}  // namespace
}  // namespace aotc
