// Model inspection for the conformance runner: inference-set exclusions, which inputs are bound
// as constants, the op label of a test, and the model rewrite that binds constants.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "tools/conformance/model_info.h"

namespace aotc::conformance {
namespace {

onnx::ValueInfoProto tensor_input(const std::string& name, std::vector<int64_t> dims) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* t = vi.mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  return vi;
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

std::string save(const onnx::ModelProto& m, const std::string& tag) {
  std::string path = ::testing::TempDir() + "/conformance_" + tag + ".onnx";
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

ModelInfo info_of(const onnx::ModelProto& m, const std::string& tag) {
  Expected<ModelInfo> info = read_model_info(save(m, tag));
  EXPECT_TRUE(info.is_ok()) << info.status().message();
  return info.is_ok() ? *info : ModelInfo{};
}

TEST(ModelInfo, PlainModelIsInInferenceSet) {
  onnx::ModelProto m;
  *m.mutable_graph()->add_input() = tensor_input("x", {2, 3});
  *m.mutable_graph()->add_output() = tensor_input("y", {2, 3});
  add_node(m.mutable_graph(), "Relu", {"x"}, {"y"});
  ModelInfo info = info_of(m, "plain");
  EXPECT_EQ(info.exclusion, "");
  EXPECT_EQ(info.op_types, std::vector<std::string>{"Relu"});
  EXPECT_EQ(info.input_names, std::vector<std::string>{"x"});
  EXPECT_TRUE(info.input_static[0]);
  EXPECT_TRUE(info.constant_inputs.empty());
}

TEST(ModelInfo, ExclusionCategories) {
  onnx::ModelProto loop;
  add_node(loop.mutable_graph(), "Loop", {"m", "c"}, {"y"});
  EXPECT_EQ(info_of(loop, "loop").exclusion.rfind("control flow: Loop", 0), 0u);

  onnx::ModelProto bn;
  auto* n = add_node(bn.mutable_graph(), "BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
  auto* a = n->add_attribute();
  a->set_name("training_mode");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  EXPECT_EQ(info_of(bn, "bn").exclusion.rfind("training:", 0), 0u);

  onnx::ModelProto seq;
  onnx::ValueInfoProto in;
  in.set_name("s");
  in.mutable_type()->mutable_sequence_type();
  *seq.mutable_graph()->add_input() = in;
  add_node(seq.mutable_graph(), "Identity", {"s"}, {"y"});
  EXPECT_EQ(info_of(seq, "seq").exclusion.rfind("sequence/optional/map/string types:", 0), 0u);

  onnx::ModelProto rnd;
  add_node(rnd.mutable_graph(), "RandomUniformLike", {"x"}, {"y"});
  EXPECT_EQ(info_of(rnd, "rnd").exclusion.rfind("random generator:", 0), 0u);

  onnx::ModelProto nz;
  add_node(nz.mutable_graph(), "NonZero", {"x"}, {"y"});
  EXPECT_EQ(info_of(nz, "nz").exclusion.rfind("data-dependent output shape: NonZero", 0), 0u);
}

onnx::GraphProto* graph_attribute(onnx::NodeProto* node, const std::string& name) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  return a->mutable_g();
}

onnx::ValueInfoProto scalar_input(const std::string& name, int elem_type) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* t = vi.mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  t->mutable_shape();
  return vi;
}

// Issue 9: control flow is excluded only when aotc cannot resolve it at compile time after the
// constant binding (an If on a run-time condition, a Loop ending on data); If on a Shape-derived
// condition, a Loop whose trip count is bound (a shape slot: it decides the scan outputs' length)
// and Scan from opset 9 are in the inference set.
TEST(ModelInfo, ControlFlowIsExcludedOnlyWhenNotKnownAtCompileTime) {
  auto opset = [](onnx::ModelProto& m, int64_t v) {
    auto* o = m.add_opset_import();
    o->set_version(v);
  };
  onnx::ModelProto runtime_if;
  opset(runtime_if, 17);
  *runtime_if.mutable_graph()->add_input() = scalar_input("c", onnx::TensorProto::BOOL);
  auto* n = add_node(runtime_if.mutable_graph(), "If", {"c"}, {"y"});
  graph_attribute(n, "then_branch");
  graph_attribute(n, "else_branch");
  ModelInfo info = info_of(runtime_if, "runtime_if");
  EXPECT_EQ(info.exclusion, "control flow: If condition 'c' is a run-time value");
  EXPECT_TRUE(info.constant_inputs.empty());

  onnx::ModelProto shape_if;
  opset(shape_if, 17);
  *shape_if.mutable_graph()->add_input() = tensor_input("x", {2, 3});
  add_node(shape_if.mutable_graph(), "Shape", {"x"}, {"s"});
  add_node(shape_if.mutable_graph(), "ReduceSum", {"s"}, {"t"});
  add_node(shape_if.mutable_graph(), "Greater", {"t", "s"}, {"c"});
  n = add_node(shape_if.mutable_graph(), "If", {"c"}, {"y"});
  add_node(graph_attribute(n, "then_branch"), "Relu", {"x"}, {"r"});
  add_node(graph_attribute(n, "else_branch"), "Neg", {"x"}, {"r"});
  info = info_of(shape_if, "shape_if");
  EXPECT_EQ(info.exclusion, "");
  EXPECT_TRUE(info.constant_inputs.empty());  // x's shape alone is read

  // A Loop whose trip count is a graph input: bound (Loop's input 0 is a shape slot); the body
  // reads x from the outer scope, which stays a run-time input. With a condition computed from the
  // carried value the end depends on data.
  for (bool data_end : {false, true}) {
    onnx::ModelProto loop;
    opset(loop, 17);
    onnx::GraphProto* g = loop.mutable_graph();
    *g->add_input() = scalar_input("M", onnx::TensorProto::INT64);
    *g->add_input() = tensor_input("x", {3});
    n = add_node(g, "Loop", {"M", data_end ? "keep" : "", "x"}, {"v"});
    if (data_end) {
      auto* keep = g->add_initializer();
      keep->set_name("keep");
      keep->set_data_type(onnx::TensorProto::BOOL);
      keep->add_int32_data(1);
    }
    onnx::GraphProto* body = graph_attribute(n, "body");
    *body->add_input() = scalar_input("i", onnx::TensorProto::INT64);
    *body->add_input() = scalar_input("cond_in", onnx::TensorProto::BOOL);
    *body->add_input() = tensor_input("v_in", {3});
    add_node(body, "Add", {"v_in", "x"}, {"v_out"});
    add_node(body, "ReduceSum", {"v_out"}, {"s"});
    add_node(body, "Less", {"s", "i"}, {"cond_out"});
    body->add_output()->set_name("cond_out");
    body->add_output()->set_name("v_out");
    info = info_of(loop, data_end ? "loop_data_end" : "loop");
    EXPECT_EQ(info.constant_inputs, std::vector<int>{0});
    EXPECT_EQ(info.exclusion, data_end ? "control flow: Loop body condition 'cond_out' depends on run-time data" : "");
  }

  onnx::ModelProto scan8;
  opset(scan8, 8);
  add_node(scan8.mutable_graph(), "Scan", {"", "s", "x"}, {"y"});
  EXPECT_EQ(info_of(scan8, "scan8").exclusion, "control flow: Scan before opset 9 (batched, with sequence_lens)");
}

TEST(ModelInfo, ShapeInputsBecomeConstantsOnlyWhenUsedOnlyAsShapes) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  *g->add_input() = tensor_input("x", {2, 3});
  *g->add_input() = tensor_input("shape", {2});
  *g->add_input() = tensor_input("both", {2});
  add_node(g, "Reshape", {"x", "shape"}, {"y"});
  add_node(g, "Reshape", {"x", "both"}, {"z"});
  add_node(g, "Add", {"both", "both"}, {"w"});
  *g->add_input() = tensor_input("lo", {});
  add_node(g, "Clip", {"x", "lo"}, {"c"});
  ModelInfo info = info_of(m, "slots");
  // "both" is read as data too, but it decides z's shape: a static-shape compile needs its value,
  // so it is bound as well (issue 9; before, such a test stayed unsupported).
  EXPECT_EQ(info.constant_inputs, (std::vector<int>{1, 2}));
  EXPECT_EQ(info.attribute_inputs, std::vector<int>{3});
}

// An input that reaches a shape slot through other nodes (a window length through Cast and Sub
// into Range's limit) is bound when it is small (rank <= 1, <= 16 elements); an input whose shape
// alone is read (through Shape) is not, nor is a large one.
TEST(ModelInfo, InputsReachingShapeSlotsThroughNodesBecomeConstants) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  *g->add_input() = tensor_input("size", {1});
  *g->add_input() = tensor_input("x", {2, 3});
  *g->add_input() = tensor_input("big", {32});
  add_node(g, "Cast", {"size"}, {"size_f"});
  add_node(g, "Sub", {"size_f", "size_f"}, {"limit"});
  add_node(g, "Range", {"limit", "limit", "limit"}, {"r"});
  add_node(g, "Mul", {"size_f", "size_f"}, {"data_use"});
  add_node(g, "Shape", {"x"}, {"x_shape"});
  add_node(g, "Reshape", {"x", "x_shape"}, {"y"});
  add_node(g, "Abs", {"big"}, {"big_abs"});
  add_node(g, "Expand", {"x", "big_abs"}, {"e"});
  ModelInfo info = info_of(m, "indirect");
  EXPECT_EQ(info.constant_inputs, std::vector<int>{0});
}

TEST(ModelInfo, DtypeOnlyAndUnusedInputsBecomeConstants) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  *g->add_input() = tensor_input("x", {3, 4});
  *g->add_input() = tensor_input("like", {3, 4});
  *g->add_input() = tensor_input("unused", {3, 4});
  add_node(g, "CastLike", {"x", "like"}, {"y"});
  ModelInfo info = info_of(m, "castlike");
  EXPECT_EQ(info.constant_inputs, (std::vector<int>{1, 2}));
  EXPECT_EQ(info.input_elem_types, (std::vector<int>{1, 1, 1}));
}

TEST(ModelInfo, Uint16DataDeclaredBFloat16KeepsItsBits) {
  Tensor u(DType::kUInt16, {2});
  uint16_t bits[2] = {0x3f80, 0xc040};  // bfloat16 1.0 and -3.0
  std::memcpy(u.raw(), bits, sizeof bits);
  Tensor b = as_declared_bfloat16(u, onnx::TensorProto::BFLOAT16);
  ASSERT_EQ(b.dtype(), DType::kBFloat16);
  EXPECT_EQ(b.get(0), 1.0);
  EXPECT_EQ(b.get(1), -3.0);
  EXPECT_EQ(as_declared_bfloat16(u, onnx::TensorProto::UINT16).dtype(), DType::kUInt16);
  Tensor f = Tensor::from_floats({1}, {2.f});
  EXPECT_EQ(as_declared_bfloat16(f, onnx::TensorProto::BFLOAT16).dtype(), DType::kFloat32);
}

TEST(ModelInfo, PrimaryOp) {
  std::set<std::string> known = {"Softmax", "SoftmaxCrossEntropyLoss", "Exp", "ReduceSum", "Reshape"};
  ModelInfo single;
  single.op_types = {"Reshape"};
  EXPECT_EQ(primary_op("test_reshape_reduced_dims", single, known), "Reshape");
  ModelInfo expanded;
  expanded.op_types = {"Exp", "ReduceSum", "Reshape"};
  EXPECT_EQ(primary_op("test_softmax_axis_0_expanded", expanded, known), "Softmax");
  EXPECT_EQ(primary_op("test_reduce_sum_keepdims", expanded, known), "ReduceSum");
  EXPECT_EQ(primary_op("test_unrelated", expanded, known), "Exp+ReduceSum+Reshape");
}

TEST(ModelInfo, BindingConstantsMovesInputToInitializer) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  *g->add_input() = tensor_input("x", {2, 3});
  *g->add_input() = tensor_input("shape", {2});
  add_node(g, "Reshape", {"x", "shape"}, {"y"});
  std::string model = save(m, "bind_src");
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(2);
  t.add_int64_data(3);
  t.add_int64_data(2);
  std::string pb = ::testing::TempDir() + "/conformance_shape.pb";
  {
    std::ofstream out(pb, std::ios::binary);
    t.SerializeToOstream(&out);
  }
  std::string bound = ::testing::TempDir() + "/conformance_bound.onnx";
  ASSERT_TRUE(write_model_with_constants(model, {"shape"}, {pb}, bound).is_ok());
  Expected<ModelInfo> info = read_model_info(bound);
  ASSERT_TRUE(info.is_ok());
  EXPECT_EQ(info->input_names, std::vector<std::string>{"x"});
  onnx::ModelProto back;
  std::ifstream in(bound, std::ios::binary);
  ASSERT_TRUE(back.ParseFromIstream(&in));
  ASSERT_EQ(back.graph().initializer_size(), 1);
  EXPECT_EQ(back.graph().initializer(0).name(), "shape");
  EXPECT_EQ(back.graph().initializer(0).int64_data(1), 2);
  EXPECT_FALSE(write_model_with_constants(model, {"shape"}, {"/nonexistent.pb"}, bound).is_ok());
}

}  // namespace
}  // namespace aotc::conformance
