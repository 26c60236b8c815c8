// The launch program and the generated sources, without running any compiler: pointer locations
// (arena, input/output slots, weights, scratch), output copies, weight blob layout, errors, and
// that hostile model text never reaches the emitted .cu / .c / .h unsanitized.
#include <gtest/gtest.h>

#include <cstring>

#include "codegen/device_source.h"
#include "codegen/embedded_files.h"
#include "codegen/host_source.h"
#include "codegen/launch_program.h"
#include "codegen_test_util.h"
#include "ir/ops/op_helpers.h"
#include "ir/text_ir.h"
#include "opt/passes.h"

namespace aotc {
namespace {

using test::linear_plan;
using test::relu_sigmoid_graph;

// A test op: out = in (elementwise, one kernel) reading every other input as extra pointer args,
// optionally with a scratch buffer. Lets the tests place constants and scratch where they want.
Status passthrough_infer(Node& node, Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  set_output(graph, node, 0, x.dtype, x.shape);
  return Status::ok();
}
Status passthrough_reference(const Node&, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) {
  out[0] = *in[0];
  return Status::ok();
}
Expected<Lowering> passthrough_lower(const Node& node, const Graph& graph) {
  const Value& x = input_value(graph, node, 0);
  KernelStep k;
  k.template_name = "unary_elementwise";
  k.holes = {{"T", "float"}, {"CT", "float"}, {"numel", int_literal(x.numel())}, {"expr", "x"},
             {"comment", "passthrough " + node.name}};
  k.args = {node.inputs[0], node.outputs[0]};
  for (size_t i = 1; i < node.inputs.size(); ++i) k.args.push_back(node.inputs[i]);
  Lowering l;
  if (node.attr_int("scratch", 0) > 0) {
    l.scratch_bytes = node.attr_int("scratch", 0);
    k.args.push_back(kScratchArg);
  }
  k.grid = grid_for(x.numel());
  k.block = Dim3{256, 1, 1};
  l.steps.push_back(LoweredStep{LoweredStep::Kind::kKernel, k, {}});
  return l;
}

OpRegistry test_registry() {
  OpRegistry r;
  register_all_ops(r);
  OpDef def;
  def.op_type = "TestPassthrough";
  def.domain = "test";
  def.infer = passthrough_infer;
  def.reference = passthrough_reference;
  def.lower = passthrough_lower;
  r.add(def);
  return r;
}

TEST(LaunchProgram, ReluSigmoidChainUsesInputArenaAndOutput) {
  Graph g = relu_sigmoid_graph({2, 3});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = linear_plan(g);
  auto p = build_launch_program(g, plan);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_EQ(p->kernels[0].name, "k0_relu");
  EXPECT_EQ(p->kernels[1].name, "k1_sigmoid");
  ASSERT_EQ(p->kernels[0].args.size(), 2u);
  EXPECT_EQ(p->kernels[0].args[0].space, Location::Space::kInput);
  EXPECT_EQ(p->kernels[0].args[1].space, Location::Space::kArena);
  EXPECT_EQ(p->kernels[0].args[1].symbol, "ARENA_V1_r");
  EXPECT_EQ(p->kernels[1].args[0].space, Location::Space::kArena);
  EXPECT_EQ(p->kernels[1].args[1].space, Location::Space::kOutput);
  EXPECT_TRUE(p->copies.empty());
  EXPECT_TRUE(p->weights.empty());
  EXPECT_EQ(p->arena_bytes, 256);  // one 24-byte buffer, aligned
  EXPECT_EQ(p->lt_workspace_bytes, 0);
}

TEST(LaunchProgram, MissingPlanIsAnErrorNamingTheNode) {
  Graph g = relu_sigmoid_graph({4});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan;  // nothing placed
  auto p = build_launch_program(g, plan);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("node 'relu' (Relu)"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("no storage"), std::string::npos);
}

TEST(LaunchProgram, OffsetOutsideArenaIsRejected) {
  Graph g = relu_sigmoid_graph({4});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = linear_plan(g);
  plan.arena_bytes = 8;  // smaller than the 16-byte intermediate
  auto p = build_launch_program(g, plan);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("outside the arena"), std::string::npos) << p.status().message();
}

TEST(LaunchProgram, OutputsThatDoNotOwnTheirBytesAreCopied) {
  // Outputs: the graph input itself, the relu result twice, and a constant.
  Graph g;
  ValueId x = g.add_value("x", DType::kFloat32, {3}, true);
  ValueId r = g.add_value("r");
  ValueId c = g.add_constant("c", Tensor::from_floats({2}, {1.f, 2.f}));
  g.inputs = {x};
  g.nodes.push_back(Node{"relu", "Relu", "", {x}, {r}, {}});
  g.outputs = {x, r, r, c};
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = linear_plan(g);
  auto p = build_launch_program(g, plan);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->copies.size(), 3u);
  // x -> output 0; output 1 (relu writes there) -> output 2; constant -> output 3.
  EXPECT_EQ(p->copies[0].src.space, Location::Space::kInput);
  EXPECT_EQ(p->copies[0].dst.index, 0);
  EXPECT_EQ(p->copies[0].bytes, 12);
  EXPECT_EQ(p->copies[1].src.space, Location::Space::kOutput);
  EXPECT_EQ(p->copies[1].src.index, 1);
  EXPECT_EQ(p->copies[1].dst.index, 2);
  EXPECT_EQ(p->copies[2].src.space, Location::Space::kWeights);
  EXPECT_EQ(p->copies[2].dst.index, 3);
  ASSERT_EQ(p->weights.size(), 8u);
  float w[2];
  std::memcpy(w, p->weights.data(), 8);
  EXPECT_EQ(w[0], 1.f);
  EXPECT_EQ(w[1], 2.f);
  EXPECT_EQ(p->kernels[0].args[1].space, Location::Space::kOutput);
  EXPECT_EQ(p->kernels[0].args[1].index, 1);
}

TEST(LaunchProgram, AliasesAreFollowedAndViewsOfOutputsCopied) {
  // r = Relu(x); v is a view of r that the plan aliased and that is a graph output.
  Graph g = relu_sigmoid_graph({4});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  ValueId r = 1;
  ValueId v = g.add_value("v", DType::kFloat32, {2, 2}, true);
  g.outputs.push_back(v);
  MemoryPlan plan = linear_plan(g);
  g.value(v).alias_of = r;
  auto p = build_launch_program(g, plan);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_EQ(p->copies.size(), 1u);
  EXPECT_EQ(p->copies[0].src.space, Location::Space::kArena);
  EXPECT_EQ(p->copies[0].src.offset, g.value(r).arena_offset);
  EXPECT_EQ(p->copies[0].dst.space, Location::Space::kOutput);
  EXPECT_EQ(p->copies[0].dst.index, 1);
}

TEST(LaunchProgram, WeightsAreAlignedAndScratchComesFromThePlan) {
  OpRegistry reg = test_registry();
  Graph g;
  ValueId x = g.add_value("x", DType::kFloat32, {5}, true);
  ValueId w1 = g.add_constant("w1", Tensor::from_floats({3}, {1.f, 2.f, 3.f}));
  ValueId w2 = g.add_constant("w2", Tensor::from_floats({1}, {4.f}));
  ValueId y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  Node n{"pt", "TestPassthrough", "test", {x, w1, w2, w1}, {y}, {}};
  n.attrs["scratch"] = Attribute::of_int(100);
  g.nodes.push_back(n);
  ASSERT_TRUE(infer_shapes(g, reg).is_ok());
  MemoryPlan plan = linear_plan(g);
  auto missing = build_launch_program(g, plan, reg);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("scratch"), std::string::npos);
  plan.scratch_offset[0] = 512;
  plan.arena_bytes = 768;
  auto p = build_launch_program(g, plan, reg);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const auto& args = p->kernels[0].args;
  ASSERT_EQ(args.size(), 6u);  // x, y, w1, w2, w1, scratch
  EXPECT_EQ(args[2].space, Location::Space::kWeights);
  EXPECT_EQ(args[2].offset, 0);
  EXPECT_EQ(args[2].symbol, "WEIGHT_V1_w1");
  EXPECT_EQ(args[3].offset, 256);
  EXPECT_EQ(args[4].offset, 0);  // w1 again: stored once
  EXPECT_EQ(p->weights.size(), 260u);
  float v;
  std::memcpy(&v, p->weights.data() + 256, 4);
  EXPECT_EQ(v, 4.f);
  EXPECT_EQ(args[5].offset, 512);
  EXPECT_EQ(args[5].symbol, "SCRATCH_N0");
  EXPECT_EQ(p->kernels[0].args.back().space, Location::Space::kArena);
}

// A kernel's comment describes at most 8 inputs and 8 outputs of its node and counts the rest: a
// node lowered to one kernel per input (a Concat of an unrolled 4096-step Scan) described every
// input in every kernel's comment, quadratic in the inputs (fuzz find, model_mutator).
TEST(LaunchProgram, CommentsOfManyInputNodesAreBounded) {
  OpRegistry reg = test_registry();
  Graph g;
  ValueId x = g.add_value("x", DType::kFloat32, {5}, true);
  std::vector<ValueId> ins = {x};
  for (int i = 0; i < 20; ++i) ins.push_back(g.add_constant("w" + std::to_string(i), Tensor::from_floats({1}, {1.f})));
  ValueId y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(Node{"pt", "TestPassthrough", "test", ins, {y}, {}});
  ASSERT_TRUE(infer_shapes(g, reg).is_ok());
  auto p = build_launch_program(g, linear_plan(g), reg);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string& c = p->kernels[0].comment;
  EXPECT_NE(c.find("; in w6 "), std::string::npos) << c;   // the 8th input
  EXPECT_EQ(c.find("; in w7 "), std::string::npos) << c;   // the 9th is only counted
  EXPECT_NE(c.find("; and 13 more inputs"), std::string::npos) << c;
  EXPECT_NE(c.find("; out y "), std::string::npos) << c;
}

// --matmul-impl reference (Target::matmul_reference): every matmul step becomes aotc's own
// gemm_reference kernel with the same operands; no cuBLASLt call is left in the program.
TEST(LaunchProgram, ReferenceMatmulImplLeavesNoCublasLtCall) {
  for (const bool reference : {false, true}) {
    Graph g;
    ValueId x = g.add_value("x", DType::kFloat32, {4, 8}, true);
    ValueId w = g.add_constant("w", Tensor::from_floats({8, 16}, std::vector<float>(128, 0.5f)));
    ValueId bias = g.add_constant("bias", Tensor::from_floats({16}, std::vector<float>(16, 1.f)));
    ValueId y = g.add_value("y");
    g.inputs = {x};
    g.outputs = {y};
    g.nodes.push_back(Node{"fc", "Gemm", "", {x, w, bias}, {y}, {}});
    g.target.matmul_reference = reference;
    g.target.gemm_fp32_simt = false;  // else this few-row fp32 GEMM takes the CUTLASS SIMT GEMM
    ASSERT_TRUE(infer_shapes(g).is_ok());
    auto p = build_launch_program(g, linear_plan(g));
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    EXPECT_EQ(p->matmuls.size(), reference ? 0u : 1u);
    ASSERT_EQ(p->kernels.size(), reference ? 1u : 0u);
    if (!reference) continue;
    const ProgramKernel& k = p->kernels[0];
    EXPECT_EQ(k.template_name, "gemm_reference");
    ASSERT_EQ(k.args.size(), 5u);  // a, b, c (none), d, bias
    EXPECT_EQ(k.args[0].space, Location::Space::kInput);
    EXPECT_EQ(k.args[1].space, Location::Space::kWeights);
    EXPECT_EQ(k.args[2].space, Location::Space::kNull);
    EXPECT_EQ(k.args[3].space, Location::Space::kOutput);
    EXPECT_EQ(k.args[4].space, Location::Space::kWeights);
  }
}

TEST(LaunchProgram, UnknownOpIsRefused) {
  Graph g;
  ValueId x = g.add_value("x", DType::kFloat32, {2}, true);
  ValueId y = g.add_value("y", DType::kFloat32, {2}, true);
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(Node{"mystery\n", "NoSuchOp", "", {x}, {y}, {}});
  auto p = build_launch_program(g, MemoryPlan{});
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("node 'mystery\\x0a' (NoSuchOp)"), std::string::npos)
      << p.status().message();
}

// The sub-16-bit types have no GPU storage: a node reading or writing one is refused by name, even
// an op (Identity, a view) whose lowering would accept any dtype.
TEST(LaunchProgram, SmallStorageTypesAreRefused) {
  Graph g;
  ValueId x = g.add_value("x", DType::kInt4, {5}, true);
  ValueId y = g.add_value("y");
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(Node{"id", "Identity", "", {x}, {y}, {}});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  auto p = build_launch_program(g, linear_plan(g));
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("node 'id' (Identity): dtype int4 has no GPU storage"), std::string::npos)
      << p.status().message();
}

// Names an attacker might put into an ONNX file to break out of a comment, a string or an
// identifier in the generated code.
const char* const kHostileNode1 = "*/ #include \"evil.h\"\n int pwned1; /*";
const char* const kHostileNode2 = "sig\"moid'\\\n#define X ?" "?/ \xc3\xa9";
const char* const kHostileX = "x\"); system(\"rm -rf /\"); //";
const char* const kHostileMid = "#include <evil2>\nint pwned2;";
const char* const kHostileY = "y\\\n*/ pwned3 /*";

TEST(GeneratedSource, HostileNamesAreSanitizedEverywhere) {
  Graph g = relu_sigmoid_graph({2, 3}, kHostileX, kHostileMid, kHostileY, kHostileNode1, kHostileNode2);
  g.name = "model */ pwned4";
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = linear_plan(g);
  auto p = build_launch_program(g, plan);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  auto sources = render_device_sources(*p, g, {"0.1.0", "abc */ pwned5", g.name});
  ASSERT_TRUE(sources.is_ok()) << sources.status().message();
  ASSERT_EQ(sources->size(), 1u);
  const std::string* cu = &(*sources)[0];
  HostSources host = render_host_sources(*p, g, {"tiny", {"sm_90"}, "0.1.0", "abc", g.name});
  // Nothing can break out of a comment, a string or a line: no injected line starts a
  // declaration or directive, no comment is closed early, no line is continued, no trigraph.
  for (const std::string* text : std::vector<const std::string*>{cu, &host.model_c, &host.header}) {
    for (const char* bad : {"*/ pwned", "*/ int pwned", "*/ #include", "system(\"", "?" "?/", "\\\n", "\xc3"})
      EXPECT_EQ(text->find(bad), std::string::npos) << "found '" << bad << "' in:\n" << *text;
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      std::string trimmed = line.substr(std::min(line.size(), line.find_first_not_of(" \t")));
      for (const char* start : {"int pwned", "#include \"evil", "#include <evil", "#define X"})
        EXPECT_NE(trimmed.rfind(start, 0), 0u) << "injected line: " << line;
    }
  }
  // The kernel names are plain identifiers derived from the node names.
  EXPECT_NE(cu->find("k0_include_evil_h_int_pwned1"), std::string::npos) << *cu;
  EXPECT_NE(cu->find("void k1_sig_moid_define_X_"), std::string::npos);
  // Names reach the host tables only as escaped string literals.
  EXPECT_NE(host.model_c.find("\"x\\042\\051\\073\\040system"), std::string::npos) << host.model_c;
  // Every preprocessor line of the .cu is a line of common.cuh.
  const EmbeddedFile* common = find_embedded_file("templates/common.cuh");
  ASSERT_NE(common, nullptr);
  const std::string common_text = "\n" + common->text();
  std::istringstream lines(*cu);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == '#') {
      EXPECT_NE(common_text.find("\n" + line + "\n"), std::string::npos) << line;
    }
}

TEST(GeneratedSource, DeviceSourceHasProvenanceAndNodeComments) {
  Graph g = relu_sigmoid_graph({2, 3});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = linear_plan(g);
  auto p = build_launch_program(g, plan);
  ASSERT_TRUE(p.is_ok());
  auto sources = render_device_sources(*p, g, {"0.1.0", "sha256-1234", g.name});
  ASSERT_TRUE(sources.is_ok());
  const std::string* cu = &(*sources)[0];
  EXPECT_EQ(cu->rfind("// Generated by aotc 0.1.0 from model relu_sigmoid", 0), 0u) << *cu;
  EXPECT_NE(cu->find("sha256-1234"), std::string::npos);
  EXPECT_NE(cu->find("// ---- k0_relu: ONNX node relu (Relu); in x float 2x3; out r float 2x3"),
            std::string::npos)
      << *cu;
  EXPECT_NE(cu->find("extern \"C\" __global__ void k1_sigmoid("), std::string::npos);
  EXPECT_NE(cu->find("#include <cuda_fp16.h>"), std::string::npos);
  HostSources host = render_host_sources(*p, g, {"tiny", {"sm_90"}, "0.1.0", "sha256-1234", g.name});
  EXPECT_NE(host.model_c.find("#define ARENA_V1_r 0ULL"), std::string::npos) << host.model_c;
  EXPECT_NE(host.model_c.find("{AOTC_LOC_ARENA, 0, ARENA_V1_r}"), std::string::npos);
  EXPECT_NE(host.header.find("int tiny_run(tiny_model* model"), std::string::npos) << host.header;
  EXPECT_NE(host.header.find("0: x  float [2, 3]  24 bytes"), std::string::npos) << host.header;
  EXPECT_NE(host.blobs_s.find(".incbin \"tiny_dev0.fatbin\""), std::string::npos);
  EXPECT_NE(host.blobs_s.find(".hidden tiny_aotc_weights"), std::string::npos);
}

// CUTLASS 3.x kernels (their code includes cute/tensor.hpp or the conv collectives) compile for
// ~25 s each, mostly parsing the same headers: all of them go to one file, the light kernels to
// the others (must not fire: with only light kernels the split stays round-robin, above).
TEST(GeneratedSource, HeavyKernelsShareOneFileLightOnesSpread) {
  Graph g;
  for (int i = 0; i < 12; ++i) {
    ValueId in = g.add_value("in" + std::to_string(i), DType::kFloat32, {10 + i}, true);
    ValueId out = g.add_value("s" + std::to_string(i));
    g.inputs.push_back(in);
    g.outputs.push_back(out);
    g.nodes.push_back(Node{"sig" + std::to_string(i), "Sigmoid", "", {in}, {out}, {}});
  }
  ASSERT_TRUE(infer_shapes(g).is_ok());
  auto p = build_launch_program(g, linear_plan(g));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const std::string name = p->kernels[0].template_name;
  const EmbeddedFile* t = find_embedded_file("templates/" + name + ".cu.in");
  ASSERT_NE(t, nullptr);
  std::map<std::string, std::string> extra = {{"heavy_probe", t->text() + "\n// #include \"cute/tensor.hpp\" (weight probe)\n"}};
  for (int i : {1, 2, 7}) p->kernels[static_cast<size_t>(i)].template_name = "heavy_probe";
  auto sources = render_device_sources(*p, g, {"0.1.0", "h", "m", &extra});
  ASSERT_TRUE(sources.is_ok()) << sources.status().message();
  ASSERT_EQ(sources->size(), 2u);  // 12 distinct kernels
  const int heavy = p->kernels[1].module;
  EXPECT_EQ(p->kernels[2].module, heavy);
  EXPECT_EQ(p->kernels[7].module, heavy);
  int light_elsewhere = 0;
  for (int i : {0, 3, 4, 5, 6, 8, 9, 10, 11}) light_elsewhere += p->kernels[static_cast<size_t>(i)].module != heavy ? 1 : 0;
  EXPECT_EQ(light_elsewhere, 9);  // 3 x 24 of weight against 9 x 1: the light ones all go to the other file
}

TEST(GeneratedSource, IdenticalKernelsAreEmittedOnceAndFilesSplit) {
  // 14 Relu nodes: shapes 3 and 5 alternate (2 distinct kernels), then 12 distinct Sigmoids.
  Graph g;
  ValueId prev = g.add_value("x", DType::kFloat32, {3}, true);
  g.inputs = {prev};
  for (int i = 0; i < 14; ++i) {
    ValueId in = g.add_value("in" + std::to_string(i), DType::kFloat32, {i % 2 ? 5 : 3}, true);
    ValueId out = g.add_value("r" + std::to_string(i));
    g.inputs.push_back(in);
    g.outputs.push_back(out);
    g.nodes.push_back(Node{"relu" + std::to_string(i), "Relu", "", {in}, {out}, {}});
  }
  for (int i = 0; i < 12; ++i) {
    ValueId in = g.add_value("s_in" + std::to_string(i), DType::kFloat32, {10 + i}, true);
    ValueId out = g.add_value("s" + std::to_string(i));
    g.inputs.push_back(in);
    g.outputs.push_back(out);
    g.nodes.push_back(Node{"sig" + std::to_string(i), "Sigmoid", "", {in}, {out}, {}});
  }
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = linear_plan(g);
  auto p = build_launch_program(g, plan);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  auto sources = render_device_sources(*p, g, {"0.1.0", "h", "m"});
  ASSERT_TRUE(sources.is_ok()) << sources.status().message();
  // 14 distinct kernels at 6 per file: 3 files, distinct kernel u in file u % 3.
  ASSERT_EQ(sources->size(), 3u);
  EXPECT_EQ(p->kernels[0].function, "k0_relu0");
  EXPECT_EQ(p->kernels[1].function, "k1_relu1");
  EXPECT_EQ(p->kernels[2].function, "k0_relu0");
  EXPECT_EQ(p->kernels[13].function, "k1_relu1");
  EXPECT_EQ(p->kernels[14].function, "k14_sig0");
  EXPECT_EQ(p->kernels[0].module, 0);
  EXPECT_EQ(p->kernels[13].module, 1);
  EXPECT_EQ(p->kernels[14].module, 2);  // distinct kernel 2
  int globals = 0;
  std::string all;
  for (const std::string& s : *sources) all += s;
  for (size_t at = all.find("__global__"); at != std::string::npos; at = all.find("__global__", at + 1)) ++globals;
  EXPECT_EQ(globals, 14);
  EXPECT_NE(all.find("// ---- k2_relu2: ONNX node relu2 (Relu)"), std::string::npos);
  EXPECT_EQ(all.find("void k2_relu2("), std::string::npos);
  HostSources host = render_host_sources(*p, g, {"m", {"sm_90"}, "0.1.0", "h", "m", 3});
  EXPECT_NE(host.model_c.find("{\"k0_relu0\", 0, {"), std::string::npos) << host.model_c;
  EXPECT_NE(host.model_c.find("/* k2_relu2 (runs k0_relu0) */"), std::string::npos);
  EXPECT_NE(host.blobs_s.find(".incbin \"m_dev2.fatbin\""), std::string::npos);
}

// Programmatic dependent launch: every kernel of every embedded template begins with
// AOTC_PDL_ENTER() (the wait must come before the kernel touches memory), the params builders of
// library kernels excepted; the kernel table marks what it renders, and only that.
TEST(GeneratedSource, EveryTemplateKernelStartsWithThePdlWait) {
  int kernels = 0;
  for (const EmbeddedFile& f : embedded_files()) {
    std::string path = f.path;
    if (path.rfind("templates/", 0) != 0 || path.size() < 6 || path.substr(path.size() - 6) != ".cu.in") continue;
    std::string text = f.text();
    for (size_t at = text.find("__global__"); at != std::string::npos; at = text.find("__global__", at + 1)) {
      size_t name = text.find("{{kernel_name}}", at);
      ASSERT_NE(name, std::string::npos) << path;
      if (text.compare(name + 15, 7, "_params") == 0) continue;
      // The body's opening brace: the first '{' after the parameter list that is not a hole.
      size_t open = text.find('(', name), depth = 0, i = open;
      for (; i < text.size(); ++i) {
        if (text[i] == '(') ++depth;
        if (text[i] == ')' && --depth == 0) break;
      }
      size_t brace = text.find('{', i);
      while (brace != std::string::npos && text.compare(brace, 2, "{{") == 0) brace = text.find('{', text.find("}}", brace) + 2);
      ASSERT_NE(brace, std::string::npos) << path;
      size_t first = text.find_first_not_of(" \n", brace + 1);
      EXPECT_EQ(text.compare(first, 18, "AOTC_PDL_ENTER();\n"), 0)
          << path << ": the kernel's first statement must be AOTC_PDL_ENTER();";
      ++kernels;
    }
  }
  EXPECT_GE(kernels, 60);
}

TEST(GeneratedSource, KernelTableMarksPdlKernels) {
  Graph g = relu_sigmoid_graph({2, 3});
  ASSERT_TRUE(infer_shapes(g).is_ok());
  MemoryPlan plan = linear_plan(g);
  auto p = build_launch_program(g, plan);
  ASSERT_TRUE(p.is_ok());
  // One template replaced by a copy without the wait: that kernel must not be marked.
  const EmbeddedFile* unary = find_embedded_file("templates/unary_elementwise.cu.in");
  ASSERT_NE(unary, nullptr);
  std::string no_wait = unary->text();
  size_t at = no_wait.find("AOTC_PDL_ENTER();");
  ASSERT_NE(at, std::string::npos);
  no_wait.erase(at, 17);
  std::map<std::string, std::string> extra = {{"unary_elementwise", no_wait}};
  auto sources = render_device_sources(*p, g, {"0.1.0", "h", "m", &extra, PdlMode::kWait});
  ASSERT_TRUE(sources.is_ok()) << sources.status().message();
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_FALSE(p->kernels[0].pdl);
  EXPECT_FALSE(p->kernels[1].pdl);
  sources = render_device_sources(*p, g, {"0.1.0", "h", "m", nullptr, PdlMode::kWait});
  ASSERT_TRUE(sources.is_ok());
  EXPECT_TRUE(p->kernels[0].pdl);
  EXPECT_TRUE(p->kernels[1].pdl);
  EXPECT_NE((*sources)[0].find("extern \"C\" __device__ int aotc_pdl_arch"), std::string::npos);
  // --pdl early: the same kernels (nvcc gets -DAOTC_PDL_EARLY_TRIGGER=1); --pdl off: nothing marked.
  auto early = render_device_sources(*p, g, {"0.1.0", "h", "m", nullptr, PdlMode::kEarly});
  ASSERT_TRUE(early.is_ok());
  EXPECT_TRUE(p->kernels[0].pdl && p->kernels[1].pdl);
  auto off = render_device_sources(*p, g, {"0.1.0", "h", "m", nullptr, PdlMode::kOff});
  ASSERT_TRUE(off.is_ok());
  EXPECT_FALSE(p->kernels[0].pdl || p->kernels[1].pdl);
  sources = render_device_sources(*p, g, {"0.1.0", "h", "m", nullptr, PdlMode::kWait});
  ASSERT_TRUE(sources.is_ok());
  HostSources host = render_host_sources(*p, g, {"m", {"sm_90"}, "0.1.0", "h", "m"});
  // {name, module, grid, block, shared, first_arg, num_args, library, first_builder, num_builder, pdl,
  //  prebuilt params, their bytes, first_tensor_map, num_tensor_maps, cluster_size}
  EXPECT_NE(host.model_c.find(", 0, 2, 0, 0, 0, 1, 0, 0u, 0, 0, 0u},"), std::string::npos) << host.model_c;
}

}  // namespace
}  // namespace aotc

namespace aotc {
namespace {

// side_branches' result in the launch table: the side node's steps on lane 1, its first step
// forking, the join node's first step waiting, and the output copies waiting too; a lane 1
// matmul gets a second cuBLASLt workspace (tests/opt/side_branches_test.cc has the pass itself).
// --l2-prefetch: a batch-1 cluster split-K convolution gets as its last two arguments the blob
// range of the weights the steps after it read, up to and including the next such convolution
// (here: the 1x1's GEMM weight and bias, then the second 3x3's filter and bias); the last one has
// nothing after it, and without the option both stay null.
TEST(LaunchProgram, L2PrefetchRangeCoversTheFollowingStepsWeights) {
  for (bool on : {true, false}) {
    auto g = parse_text_ir(R"(
      input %x : float16[1x64x14x14]
      const %w1 : float16[64x64x3x3] = random(1)
      const %b1 : float16[64] = random(2)
      const %w2 : float16[256x64x1x1] = random(3)
      const %b2 : float16[256] = random(4)
      const %w3 : float16[64x256x3x3] = random(5)
      const %b3 : float16[64] = random(6)
      %c1 : float16[?] = Conv(%x, %w1, %b1) {pads=[1,1,1,1]}  # conv1
      %r1 : float16[?] = Relu(%c1)  # relu1
      %c2 : float16[?] = Conv(%r1, %w2, %b2)  # conv2
      %r2 : float16[?] = Relu(%c2)  # relu2
      %c3 : float16[?] = Conv(%r2, %w3, %b3) {pads=[1,1,1,1]}  # conv3
      output %c3
    )");
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    g->opset = 17;
    ASSERT_TRUE(infer_shapes(*g).is_ok());
    g->target = target_from_archs({"sm_90"});
    g->target.l2_prefetch = on;
    ASSERT_TRUE(fuse_epilogue(*g).is_ok());
    ASSERT_TRUE(layout_nhwc(*g).is_ok());
    auto plan = plan_memory(*g);
    ASSERT_TRUE(plan.is_ok()) << plan.status().message();
    auto p = build_launch_program(*g, *plan);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    std::vector<const ProgramKernel*> cluster;
    for (const ProgramStep& s : p->steps)
      if (s.kind == ProgramStep::Kind::kKernel &&
          p->kernels[static_cast<size_t>(s.index)].template_name == "conv_cluster_splitk_nhwc")
        cluster.push_back(&p->kernels[static_cast<size_t>(s.index)]);
    ASSERT_EQ(cluster.size(), 2u);
    ASSERT_EQ(p->matmuls.size(), 1u);  // the 1x1 between them
    for (const ProgramKernel* k : cluster) {
      ASSERT_EQ(k->args.size(), 9u);  // x, w, bias, res, y, the Concat slab's two (null here), pf, pf_end
      EXPECT_EQ(k->args[5].space, Location::Space::kNull);
      EXPECT_EQ(k->args[6].space, Location::Space::kNull);
      EXPECT_TRUE(k->l2_prefetch_args);
    }
    const Location& begin = cluster[0]->args[7];
    const Location& end = cluster[0]->args[8];
    if (!on) {
      EXPECT_EQ(begin.space, Location::Space::kNull);
      EXPECT_EQ(end.space, Location::Space::kNull);
      continue;
    }
    // The weights of the GEMM (B = w2, bias b2) and of the second 3x3 (w3, b3), by their own
    // locations and the blob's sizes.
    auto bytes_at = [&](const Location& l) {
      for (const NamedOffset& w : p->weight_symbols)
        if (w.offset == l.offset) return w.bytes;
      return int64_t{-1};
    };
    const ProgramMatmul& mm = p->matmuls[0];
    const Location* after[] = {&mm.b, &mm.bias, &cluster[1]->args[1], &cluster[1]->args[2]};
    int64_t lo = INT64_MAX, hi = 0;
    for (const Location* l : after) {
      ASSERT_EQ(l->space, Location::Space::kWeights);
      lo = std::min(lo, l->offset);
      hi = std::max(hi, l->offset + bytes_at(*l));
    }
    // w2, b2, w3, b3 back to back (each size but the last a multiple of the 256-byte alignment).
    EXPECT_EQ(hi - lo, 256 * 64 * 2 + 256 * 2 + 64 * 256 * 9 * 2 + 64 * 2);
    EXPECT_EQ(begin.space, Location::Space::kWeights);
    EXPECT_EQ(end.space, Location::Space::kWeights);
    EXPECT_EQ(begin.offset, lo);
    EXPECT_EQ(end.offset, hi);
    EXPECT_EQ(cluster[1]->args[7].space, Location::Space::kNull);  // nothing after the last one
    EXPECT_EQ(cluster[1]->args[8].space, Location::Space::kNull);
  }
}

TEST(LaunchProgram, SideNodeStepsRunOnTheAuxiliaryLane) {
  auto parsed = parse_text_ir(R"(
    input %x : float[1x64]
    %a : float[?] = Relu(%x)
    %b : float[?] = Sigmoid(%a)
    %c : float[?] = Tanh(%b)
    %d : float[?] = Neg(%a)
    %y : float[?] = Add(%c, %d)
    output %y
  )");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  Graph& g = *parsed;
  g.opset = 17;
  ASSERT_TRUE(infer_shapes(g).is_ok());
  g.target.aux_streams = 1;
  ASSERT_TRUE(side_branches(g).is_ok());
  ASSERT_EQ(g.side_join, (std::vector<int>{-1, 4, -1, -1, -1}));
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  auto program = build_launch_program(g, *plan);
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  ASSERT_EQ(program->steps.size(), 5u);
  std::vector<int> lanes, waits;
  for (const ProgramStep& s : program->steps) {
    lanes.push_back(s.lane);
    waits.push_back(s.wait ? 1 : 0);
  }
  EXPECT_EQ(lanes, (std::vector<int>{0, 1, 0, 0, 0}));
  EXPECT_EQ(waits, (std::vector<int>{0, 1, 0, 0, 1}));
  EXPECT_EQ(program->lt_aux_workspace_offset, 0);  // no matmul on lane 1
  HostSourceInfo info;
  info.prefix = "m";
  info.archs = {"sm_90"};
  std::string c = render_host_sources(*program, g, info).model_c;
  EXPECT_NE(c.find("\"k1_Neg\", 0ULL, 512ULL, 1, 1}, /* k1_Neg; auxiliary stream, forked here */"), std::string::npos) << c;
  EXPECT_NE(c.find("LT_AUX_WORKSPACE_OFFSET"), std::string::npos);
  // A side_join naming an earlier node is refused with the node named.
  g.side_join = {-1, 0, -1, -1, -1};
  auto bad = build_launch_program(g, *plan);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("not a later main-lane node"), std::string::npos);
}

}  // namespace
}  // namespace aotc
