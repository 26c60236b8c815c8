// The GPU op-test harness (see gpu_harness.h). The reference runs on a copy of the graph before
// any pass, so fusion and layout rewrites are checked against the plain ONNX semantics.
#include "tests/gpu/gpu_harness.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "ir/evaluator.h"
#include "ir/op_registry.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "tools/conformance/compare.h"
#include "tools/conformance/gpu_exec.h"

namespace aotc::gpu_test {
namespace {

Tensor random_tensor(DType dtype, const Shape& shape, double lo, double hi, std::mt19937_64& rng) {
  Tensor t(dtype, shape);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, dist(rng));
  return t;
}

struct Probe {
  bool ok = false;
  std::string why, arch;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    Status s = conformance::probe_gpu(&r.arch);
    r.ok = s.is_ok();
    r.why = s.message();
    return r;
  }();
  return p;
}

}  // namespace

bool gpu_available(std::string* why) {
  if (!probe().ok && why != nullptr) *why = probe().why;
  return probe().ok;
}

std::string gpu_arch() { return probe().ok ? probe().arch : std::string(); }

ValueId GraphBuilder::input(const std::string& name, Shape shape, DType dtype) {
  ValueId v = graph_.add_value(name, dtype, std::move(shape), true);
  graph_.inputs.push_back(v);
  return v;
}

ValueId GraphBuilder::weight(const std::string& name, Shape shape, double lo, double hi, DType dtype) {
  return graph_.add_constant(name, random_tensor(dtype, shape, lo, hi, rng_));
}

ValueId GraphBuilder::node(const std::string& op, std::vector<ValueId> inputs, Attributes attrs,
                           const std::string& domain) {
  std::string id = std::to_string(counter_++);
  ValueId out = graph_.add_value(op + "_out" + id);
  graph_.nodes.push_back(Node{op + "_" + id, op, domain, std::move(inputs), {out}, std::move(attrs)});
  return out;
}

std::vector<ValueId> GraphBuilder::node_outputs(const std::string& op, std::vector<ValueId> inputs, int outputs,
                                                Attributes attrs) {
  std::string id = std::to_string(counter_++);
  std::vector<ValueId> outs;
  for (int i = 0; i < outputs; ++i) outs.push_back(graph_.add_value(op + "_out" + id + "_" + std::to_string(i)));
  graph_.nodes.push_back(Node{op + "_" + id, op, "", std::move(inputs), outs, std::move(attrs)});
  return outs;
}

void run_case(Graph graph, const std::string& label, const CaseOptions& options) {
  // AOTC_TEST_MATMUL_REFERENCE=1: every case's GEMMs on aotc's reference kernel (--matmul-impl
  // reference), so that a compute-sanitizer racecheck run of the suite launches no cuBLASLt
  // kernel (docs/reliability.md).
  if (const char* e = std::getenv("AOTC_TEST_MATMUL_REFERENCE"); e && *e && std::string(e) != "0")
    graph.target.matmul_reference = true;
  // AOTC_TEST_INT8_REQUANT=fp32|double: the int8 epilogues requantize on that route
  // (--int8-requant), which must give the reference's int8 outputs bit for bit as well.
  if (const char* e = std::getenv("AOTC_TEST_INT8_REQUANT"); e && std::string(e) == "fp32")
    graph.target.int8_requant = Int8Requant::kFp32;
  else if (e && std::string(e) == "double")
    graph.target.int8_requant = Int8Requant::kDouble;
  Status inferred = infer_shapes(graph);
  ASSERT_TRUE(inferred.is_ok()) << label << ": " << inferred.message();
  Status verified = verify(graph);
  ASSERT_TRUE(verified.is_ok()) << label << ": " << verified.message();

  // Two fresh input sets and their reference outputs.
  std::mt19937_64 rng(options.seed);
  std::vector<std::map<std::string, Tensor>> runs(2);
  std::vector<std::vector<Tensor>> want(2);
  for (int r = 0; r < 2; ++r) {
    std::vector<Tensor> ins;
    for (ValueId id : graph.inputs) {
      const Value& v = graph.value(id);
      ins.push_back(random_tensor(v.dtype, v.shape, options.input_lo, options.input_hi, rng));
      if (options.integer_inputs)
        for (int64_t i = 0; i < ins.back().numel(); ++i) ins.back().set(i, std::nearbyint(ins.back().get(i)));
      runs[r][v.name] = ins.back();
    }
    Expected<std::vector<Tensor>> ref = evaluate_graph(graph, ins);
    ASSERT_TRUE(ref.is_ok()) << label << ": reference: " << ref.status().message();
    want[r] = std::move(*ref);
  }
  std::vector<std::string> out_names;
  for (ValueId id : graph.outputs) out_names.push_back(graph.value(id).name);

  const std::string dir = ::testing::TempDir() + "/aotc_gpu_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  conformance::GpuBuildOptions build;
  build.output_path = dir + "/lib" + label + ".so";
  build.name = "m";
  build.archs = options.archs.empty() ? std::vector<std::string>{probe().arch} : options.archs;
  build.sm_count = options.sm_count;
  Graph compiled = graph;
  conformance::BuildOutcome b = conformance::build_library(compiled, build);
  ASSERT_EQ(b.kind, conformance::BuildOutcome::Kind::kBuilt) << label << ": " << b.message;
  for (const std::string& op : options.expect_ops_after_pipeline) {
    bool found = false;
    for (const Node& n : compiled.nodes) found = found || n.op_type == op;
    EXPECT_TRUE(found) << label << ": the pipeline produced no " << op << " node";
  }
  for (const std::string& op : options.absent_ops_after_pipeline)
    for (const Node& n : compiled.nodes)
      EXPECT_NE(n.op_type, op) << label << ": the pipeline left " << n.name << " (" << op << ")";
  if (options.expect_stored_values >= 0) {
    int stored = 0;
    for (const Value& v : compiled.values) stored += v.stored_in != kNoValue ? 1 : 0;
    EXPECT_EQ(stored, options.expect_stored_values) << label << ": values written into a Concat's rows";
  }
  if (!options.expect_templates.empty() || !options.absent_templates.empty() || !options.expect_holes.empty()) {
    std::set<std::string> ran;  // the templates of every kernel step of the compiled graph
    std::set<std::pair<std::string, std::string>> holes;  // and their holes' values
    for (const Node& n : compiled.nodes) {
      const OpDef* def = default_registry().find(n.op_type, n.domain);
      Expected<Lowering> low = def && def->lower ? def->lower(n, compiled) : Expected<Lowering>(Lowering{});
      if (!low) continue;
      for (const LoweredStep& s : low->steps)
        if (s.kind == LoweredStep::Kind::kKernel) {
          ran.insert(s.kernel.template_name);
          for (const auto& h : s.kernel.holes) holes.insert(h);
        }
    }
    for (const auto& [hole, value] : options.expect_holes)
      EXPECT_TRUE(holes.count({hole, value})) << label << ": no kernel step of the compiled graph has " << hole << " = " << value;
    for (const std::string& name : options.expect_templates)
      EXPECT_TRUE(ran.count(name)) << label << ": no step of the compiled graph runs template " << name;
    for (const std::string& name : options.absent_templates)
      EXPECT_FALSE(ran.count(name)) << label << ": a step of the compiled graph runs template " << name;
  }
  if (options.expect_side_nodes >= 0) {
    int side = 0;
    for (int j : compiled.side_join) side += j >= 0 ? 1 : 0;
    EXPECT_EQ(side, options.expect_side_nodes) << label << ": nodes on the auxiliary stream";
  }

  Expected<conformance::LibraryOutputs> got = conformance::run_library(build.output_path, build.name, runs);
  ASSERT_TRUE(got.is_ok()) << label << ": " << got.status().message();
  ASSERT_EQ(got->names.size(), out_names.size()) << label;
  for (int r = 0; r < 2; ++r)
    for (size_t k = 0; k < out_names.size(); ++k) {
      EXPECT_EQ(got->names[k], out_names[k]) << label;
      conformance::CompareResult c = conformance::compare_tensors(got->runs[r][k], want[r][k], options.tolerance_of);
      EXPECT_TRUE(c.ok) << label << " run " << r << " output '" << out_names[k] << "': " << c.message;
    }
  std::filesystem::remove(build.output_path);
}

}  // namespace aotc::gpu_test
