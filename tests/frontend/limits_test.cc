// The caps of docs/reliability.md "Limits" (frontend/onnx_loader.h ImportLimits, the protobuf
// nesting cap, the opset range and the constant-folding total): each at its limit (accepted) and
// one beyond (one-line error naming what is over). Caps that need large models are tested with a
// lowered limit; the defaults are pinned so the documentation stays true.
#include <gtest/gtest.h>

#include "frontend/onnx_loader.h"
#include "ir/graph.h"
#include "tests/frontend/model_builder.h"

namespace aotc {
namespace {

using test::ModelBuilder;
using test::TempDir;
constexpr int kFloat = onnx::TensorProto::FLOAT;

void expect_ok(const std::string& path, const ImportOptions& options = {}) {
  auto g = load_onnx_model(path, options);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
}

void expect_error(const std::string& path, const std::vector<std::string>& fragments,
                  const ImportOptions& options = {}) {
  auto g = load_onnx_model(path, options);
  ASSERT_FALSE(g.is_ok()) << "loaded but should have failed: " << path;
  const std::string msg = g.status().message();
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 600u) << msg;
  for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
}

// x -> Relu -> ... -> Relu (n nodes) -> output.
ModelBuilder relu_chain(int n) {
  ModelBuilder m;
  m.add_input("x", kFloat, {"4"});
  for (int k = 0; k < n; ++k)
    m.add_node("Relu", {k == 0 ? "x" : "v" + std::to_string(k - 1)}, {"v" + std::to_string(k)});
  m.add_output("v" + std::to_string(n - 1));
  return m;
}

TEST(ImportLimits, DefaultsAreTheDocumentedOnes) {
  ImportLimits limits;
  EXPECT_EQ(limits.max_nodes, 1000000);
  EXPECT_EQ(limits.max_values, 4000000);
  EXPECT_EQ(limits.max_graph_inputs, 4096);
  EXPECT_EQ(limits.max_graph_outputs, 4096);
  EXPECT_EQ(limits.max_node_inputs, 4096);
  EXPECT_EQ(limits.max_node_outputs, 4096);
  EXPECT_EQ(limits.max_name_bytes, 4096u);
  EXPECT_EQ(limits.max_folded_bytes, int64_t{2} << 30);
  EXPECT_EQ(Graph().max_folded_bytes_total, int64_t{2} << 30);
  EXPECT_EQ(limits.max_loop_iterations, 4096);
  EXPECT_EQ(limits.max_unrolled_nodes, 100000);
}

TEST(ImportLimits, NodesAndValuesAtAndBeyond) {
  TempDir dir;
  ImportOptions o;
  o.limits.max_nodes = 50;
  expect_ok(relu_chain(50).write(dir), o);
  expect_error(relu_chain(51).write(dir), {"51 nodes", "at most 50"}, o);
  ImportOptions v;
  v.limits.max_values = 11;  // x + 10 node outputs
  expect_ok(relu_chain(10).write(dir), v);
  expect_error(relu_chain(11).write(dir), {"12 values", "at most 11"}, v);
}

TEST(ImportLimits, GraphInputsAndOutputsAtAndBeyondTheDefault) {
  TempDir dir;
  for (int n : {4096, 4097}) {
    ModelBuilder m;
    std::vector<std::string> names;
    for (int k = 0; k < n; ++k) {
      names.push_back("i" + std::to_string(k));
      m.add_input(names.back(), kFloat, {"1"});
    }
    m.add_node("Sum", {"i0", "i1"}, {"y"});
    m.add_output("y");
    if (n == 4096) expect_ok(m.write(dir));
    else expect_error(m.write(dir), {"4097 graph inputs", "at most 4096"});
  }
  for (int n : {4096, 4097}) {
    ModelBuilder m;
    m.add_input("x", kFloat, {"1"});
    for (int k = 0; k < n; ++k) {
      m.add_node("Identity", {"x"}, {"o" + std::to_string(k)});
      m.add_output("o" + std::to_string(k));
    }
    if (n == 4096) expect_ok(m.write(dir));
    else expect_error(m.write(dir), {"4097 graph outputs", "at most 4096"});
  }
}

TEST(ImportLimits, NodeInputsAndOutputsAtAndBeyondTheDefault) {
  TempDir dir;
  for (int n : {4096, 4097}) {
    ModelBuilder m;
    m.add_input("x", kFloat, {"1"});
    m.add_node("Sum", std::vector<std::string>(static_cast<size_t>(n), "x"), {"y"}, "wide_sum");
    m.add_output("y");
    if (n == 4096) expect_ok(m.write(dir));
    else expect_error(m.write(dir), {"node 'wide_sum' (Sum)", "4097 inputs", "at most 4096"});
  }
  for (int n : {4096, 4097}) {
    ModelBuilder m(18);
    m.add_input("x", kFloat, {std::to_string(n)});
    std::vector<std::string> outs;
    for (int k = 0; k < n; ++k) outs.push_back("o" + std::to_string(k));
    onnx::NodeProto* split = m.add_node("Split", {"x"}, outs, "wide_split");
    auto* a = split->add_attribute();
    a->set_name("num_outputs");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(n);
    m.add_output("o0");
    if (n == 4096) expect_ok(m.write(dir));
    else expect_error(m.write(dir), {"node 'wide_split' (Split)", "4097 outputs", "at most 4096"});
  }
}

TEST(ImportLimits, NameLengthAtAndBeyondTheDefault) {
  TempDir dir;
  for (size_t n : {size_t{4096}, size_t{4097}}) {
    const std::string name(n, 'n');
    ModelBuilder node = relu_chain(1);
    node.graph()->mutable_node(0)->set_name(name);
    ModelBuilder value = relu_chain(2);
    value.graph()->mutable_node(0)->set_output(0, name);
    value.graph()->mutable_node(1)->set_input(0, name);
    ModelBuilder input = relu_chain(1);
    input.graph()->mutable_input(0)->set_name(name);
    input.graph()->mutable_node(0)->set_input(0, name);
    ModelBuilder op = relu_chain(1);
    op.graph()->mutable_node(0)->set_op_type(name);
    for (ModelBuilder* m : {&node, &value, &input, &op}) {
      if (n == 4096 && m != &op) expect_ok(m->write(dir));
      if (n == 4097) expect_error(m->write(dir), {"4097 bytes long", "at most 4096 bytes"});
    }
  }
}

// If inside If: three message levels each; the outermost If is the graph's node.
// `depth` Ifs, each the then-branch of the next, on a condition `c` that is a graph input
// (refused: not known at compile time) or a constant true (the branches inline: y = x).
std::string nested_if(int depth, bool constant_condition) {
  onnx::GraphProto leaf;
  auto* id = leaf.add_node();
  id->set_op_type("Identity");
  id->add_input("x");
  id->add_output("o");
  ModelBuilder::fill_value_info(leaf.add_output(), "o", kFloat, {"1"});
  onnx::GraphProto g = leaf;
  for (int k = 0; k < depth; ++k) {
    onnx::GraphProto outer;
    auto* node = outer.add_node();
    node->set_op_type("If");
    node->set_name(k == depth - 1 ? "outermost" : "inner");
    node->add_input("c");
    node->add_output("o");
    auto* then_branch = node->add_attribute();
    then_branch->set_name("then_branch");
    then_branch->set_type(onnx::AttributeProto::GRAPH);
    *then_branch->mutable_g() = g;
    auto* else_branch = node->add_attribute();
    else_branch->set_name("else_branch");
    else_branch->set_type(onnx::AttributeProto::GRAPH);
    *else_branch->mutable_g() = leaf;
    ModelBuilder::fill_value_info(outer.add_output(), "o", kFloat, {"1"});
    g = std::move(outer);
  }
  ModelBuilder m;
  *m.graph() = g;
  ModelBuilder::fill_value_info(m.graph()->add_input(), "x", kFloat, {"1"});
  if (constant_condition) {
    onnx::TensorProto* c = m.add_initializer("c", onnx::TensorProto::BOOL, {1});
    c->add_int32_data(1);
  } else {
    ModelBuilder::fill_value_info(m.graph()->add_input(), "c", onnx::TensorProto::BOOL, {"1"});
  }
  std::string bytes;
  EXPECT_TRUE(m.model.SerializeToString(&bytes));
  return bytes;
}

TEST(ImportLimits, MessageNestingAtAndBeyond) {
  TempDir dir;
  // ModelProto > GraphProto > (NodeProto > AttributeProto > GraphProto) x 31 > NodeProto >
  // ValueInfoProto... stays within 100 levels: parsed; on a constant condition the 31 Ifs inline,
  // on a graph input the outermost is refused by name.
  test::write_bytes(dir.file("d31.onnx"), nested_if(31, true));
  expect_ok(dir.file("d31.onnx"));
  test::write_bytes(dir.file("d31_input.onnx"), nested_if(31, false));
  expect_error(dir.file("d31_input.onnx"), {"node 'outermost' (If)", "condition 'c' is not known at compile time"});
  test::write_bytes(dir.file("d32.onnx"), nested_if(32, true));
  expect_error(dir.file("d32.onnx"), {"not a valid ONNX protobuf", "nested deeper than 100"});
}

TEST(ImportLimits, OpsetRange) {
  TempDir dir;
  ModelBuilder newest(28);
  newest.add_input("x", kFloat, {"4"});
  newest.add_node("Relu", {"x"}, {"y"});
  newest.add_output("y");
  expect_ok(newest.write(dir));
  newest.model.mutable_opset_import(0)->set_version(29);
  expect_error(newest.write(dir), {"opset 29", "newest opset aotc knows is 28"});
  newest.model.mutable_opset_import(0)->set_version(17);
  auto* again = newest.model.add_opset_import();
  again->set_domain("ai.onnx");
  again->set_version(18);
  expect_error(newest.write(dir), {"opset_import lists domain 'ai.onnx' twice"});
  for (int opset : {19, 20}) {
    ModelBuilder gelu(opset);
    gelu.add_input("x", kFloat, {"4"});
    gelu.add_node("Gelu", {"x"}, {"y"}, "gelu");
    gelu.add_output("y");
    if (opset == 20) expect_ok(gelu.write(dir));
    else expect_error(gelu.write(dir), {"node 'gelu' (Gelu)", "defined from opset 20", "imports opset 19"});
  }
}

// ConstantOfShape nodes of 1 MiB each fold while importing; the total is capped.
TEST(ImportLimits, FoldedBytesAtAndBeyond) {
  TempDir dir;
  auto model = [&](int count) {
    ModelBuilder m;
    onnx::TensorProto* shape = m.add_initializer("shape", onnx::TensorProto::INT64, {1});
    shape->add_int64_data(int64_t{1} << 18);  // 2^18 floats = 1 MiB
    std::vector<std::string> outs;
    for (int k = 0; k < count; ++k) {
      outs.push_back("c" + std::to_string(k));
      m.add_node("ConstantOfShape", {"shape"}, {outs.back()}, "fill" + std::to_string(k));
    }
    m.add_node("Sum", outs, {"y"}, "sum");  // folds too: one more MiB
    m.add_output("y");
    return m.write(dir);
  };
  ImportOptions o;
  o.limits.max_folded_bytes = int64_t{4} << 20;
  expect_ok(model(3), o);  // 3 fills + the sum = 4 MiB
  expect_error(model(4), {"node 'sum' (Sum)", "past 4 MiB in total"}, o);
}

// Window attributes are bounded so that output sizes stay inside int64 (pads of 2^62 overflowed).
TEST(ImportLimits, WindowAttributesAtAndBeyond) {
  TempDir dir;
  for (int64_t stride : {int64_t{1} << 31, (int64_t{1} << 31) + 1}) {
    ModelBuilder m;
    m.add_input("x", kFloat, {"1", "1", "4", "4"});
    m.add_raw_float_initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
    onnx::NodeProto* conv = m.add_node("Conv", {"x", "w"}, {"y"}, "conv");
    auto* a = conv->add_attribute();
    a->set_name("strides");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(stride);
    a->add_ints(stride);
    m.add_output("y");
    if (stride == int64_t{1} << 31) expect_ok(m.write(dir));  // one 3x3 window: output 1x1
    else expect_error(m.write(dir), {"node 'conv' (Conv)", "must each be at most 2^31"});
  }
}

TEST(ImportLimits, RangeCountOverflowingInt64) {
  TempDir dir;
  ModelBuilder m;
  const int64_t values[3] = {INT64_MIN, INT64_MAX, 1};
  const char* names[3] = {"start", "limit", "delta"};
  for (int k = 0; k < 3; ++k) m.add_initializer(names[k], onnx::TensorProto::INT64, {})->add_int64_data(values[k]);
  m.add_node("Range", {"start", "limit", "delta"}, {"y"}, "range");
  m.add_output("y", onnx::TensorProto::INT64);
  // limit - start is 2^64 - 1: it used to wrap to -1 and give an empty Range.
  expect_error(m.write(dir), {"node 'range' (Range)", "more than 2^63 elements"});
}

}  // namespace
}  // namespace aotc
