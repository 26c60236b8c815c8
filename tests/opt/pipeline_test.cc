// run_pipeline: per-pass stats, --dump-after (one pass or "all"), unknown pass names, errors
// from a pass and from verify() after it.
#include "ir/dump.h"
#include "opt/passes.h"
#include "opt/pipeline.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

const char* kSmallGraph = R"(
  input %x : float[2x3]
  const %c : float[3] = [1, -2, 3]
  %k : float[?] = Relu(%c)
  %a : float[?] = Relu(%x)
  %dead : float[?] = Sigmoid(%a)
  %y : float[?] = Sigmoid(%a)
  output %y, %k
)";

TEST(Pipeline, DefaultPipelineRunsEveryPassAndRecordsStats) {
  AOTC_BUILD(g, kSmallGraph);
  Graph before = g;
  auto stats = run_pipeline(g, PipelineOptions{});
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  ASSERT_EQ(stats->size(), default_pipeline().size());
  EXPECT_EQ((*stats)[0].name, "fuse_qdq");  // nothing quantized here
  EXPECT_FALSE((*stats)[0].changed);
  EXPECT_EQ((*stats)[1].name, "fold_constants");
  EXPECT_EQ((*stats)[1].nodes_before, 4);
  EXPECT_EQ((*stats)[1].nodes_after, 3);
  EXPECT_TRUE((*stats)[1].changed);
  EXPECT_EQ((*stats)[2].name, "dead_code");
  EXPECT_EQ((*stats)[2].nodes_after, 2);
  EXPECT_TRUE((*stats)[2].changed);
  for (size_t i = 3; i < stats->size(); ++i) EXPECT_FALSE((*stats)[i].changed) << (*stats)[i].name;
  for (const PassStats& s : *stats) EXPECT_GE(s.seconds, 0.0);
  EXPECT_TRUE(testing_util::same_outputs(before, g));
}

TEST(Pipeline, DumpAfterOnePass) {
  AOTC_BUILD(g, kSmallGraph);
  std::vector<std::string> dumped;
  PipelineOptions opt;
  opt.dump_after = "fold_constants";
  opt.on_dump = [&](const std::string& pass, const Graph& graph) {
    dumped.push_back(pass);
    // Right after folding, the dead Sigmoid is still there.
    EXPECT_EQ(graph.nodes.size(), 3u);
    EXPECT_NE(dump_graph(graph).find("Sigmoid(%a)"), std::string::npos);
  };
  ASSERT_TRUE(run_pipeline(g, opt).is_ok());
  EXPECT_EQ(dumped, (std::vector<std::string>{"fold_constants"}));
}

TEST(Pipeline, DumpAfterAll) {
  AOTC_BUILD(g, kSmallGraph);
  std::vector<std::string> dumped;
  PipelineOptions opt;
  opt.dump_after = "all";
  opt.on_dump = [&](const std::string& pass, const Graph&) { dumped.push_back(pass); };
  ASSERT_TRUE(run_pipeline(g, opt).is_ok());
  std::vector<std::string> names;
  for (const Pass& p : default_pipeline()) names.push_back(p.name);
  EXPECT_EQ(dumped, names);
}

TEST(Pipeline, UnknownDumpAfterListsThePasses) {
  AOTC_BUILD(g, kSmallGraph);
  PipelineOptions opt;
  opt.dump_after = "fold_everything";
  auto stats = run_pipeline(g, opt);
  ASSERT_FALSE(stats.is_ok());
  const std::string m = stats.status().message();
  EXPECT_NE(m.find("unknown pass 'fold_everything'"), std::string::npos) << m;
  for (const Pass& p : default_pipeline()) EXPECT_NE(m.find(p.name), std::string::npos) << m;
  EXPECT_EQ(g.nodes.size(), 4u) << "nothing may run before the option is checked";
}

Expected<bool> break_graph(Graph& graph) {
  // Reads a value that nothing defines: verify() must catch it.
  ValueId ghost = graph.add_value("ghost", DType::kFloat32, {2, 3}, true);
  graph.nodes[0].inputs[0] = ghost;
  return true;
}

Expected<bool> failing_pass(Graph&) { return Status::error("node 'n' (Op): no good"); }

TEST(Pipeline, VerifyAfterEachPassNamesThePass) {
  AOTC_BUILD(g, kSmallGraph);
  std::vector<Pass> passes = {{"dead_code", dead_code}, {"break_graph", break_graph}};
  auto stats = run_pipeline(g, PipelineOptions{}, passes);
  ASSERT_FALSE(stats.is_ok());
  EXPECT_NE(stats.status().message().find("after pass break_graph"), std::string::npos)
      << stats.status().message();

  AOTC_BUILD(g2, kSmallGraph);
  PipelineOptions no_verify;
  no_verify.verify_each = false;
  EXPECT_TRUE(run_pipeline(g2, no_verify, passes).is_ok());
}

TEST(Pipeline, FailingPassStopsThePipelineWithItsName) {
  AOTC_BUILD(g, kSmallGraph);
  std::vector<Pass> passes = {{"failing_pass", failing_pass}, {"dead_code", dead_code}};
  auto stats = run_pipeline(g, PipelineOptions{}, passes);
  ASSERT_FALSE(stats.is_ok());
  EXPECT_EQ(stats.status().message(), "pass failing_pass: node 'n' (Op): no good");
  EXPECT_EQ(g.nodes.size(), 4u);
}

}  // namespace
}  // namespace aotc
