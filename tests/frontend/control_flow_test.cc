// Compile-time control flow (frontend/onnx_control_flow.cc): If on a constant condition becomes its
// taken branch, Loop with a constant trip count and Scan are unrolled, everything else is refused
// with one line. Expected values are computed here in plain C++ from the models' definitions
// (never from aotc's output); the imported graphs run on the CPU reference.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "frontend/onnx_loader.h"
#include "ir/evaluator.h"
#include "tests/frontend/model_builder.h"

namespace aotc {
namespace {

using test::ModelBuilder;
using test::TempDir;
constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kBool = onnx::TensorProto::BOOL;
constexpr int kInt64 = onnx::TensorProto::INT64;

onnx::GraphProto* add_graph(onnx::NodeProto* node, const std::string& name) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

void add_int_attr(onnx::NodeProto* node, const std::string& name, int64_t v) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void add_ints_attr(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

onnx::NodeProto* node_in(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

// A Constant node in `g` producing a scalar of `elem_type` (BOOL, INT64 or FLOAT).
void constant_in(onnx::GraphProto* g, const std::string& out, int elem_type, double v) {
  auto* n = node_in(g, "Constant", {}, {out});
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(elem_type);
  if (elem_type == kFloat) t->add_float_data(static_cast<float>(v));
  else if (elem_type == kInt64) t->add_int64_data(static_cast<int64_t>(v));
  else t->add_int32_data(static_cast<int32_t>(v));
}

void float_initializer_in(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                          const std::vector<float>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(kFloat);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

void graph_io(onnx::GraphProto* g, bool input, const std::string& name, int elem_type, const std::vector<std::string>& dims) {
  ModelBuilder::fill_value_info(input ? g->add_input() : g->add_output(), name, elem_type, dims);
}

Tensor ramp(Shape shape, double scale) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::sin(0.37 * static_cast<double>(i) + 0.1) * scale);
  return t;
}

bool has_op(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op_type == op) return true;
  return false;
}

void expect_near(const Tensor& got, const std::vector<double>& want) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.get(static_cast<int64_t>(i)), want[i], 1e-5 + 1e-4 * std::fabs(want[i])) << i;
}

// If(cond) { y = x + 1 (a branch initializer) } else { y = x * w (the outer initializer w) }.
ModelBuilder if_model(bool cond_constant, bool cond_value) {
  ModelBuilder m;
  m.add_input("x", kFloat, {"2", "3"});
  m.add_raw_float_initializer("w", {}, {2.5f});
  if (cond_constant) constant_in(m.graph(), "c", kBool, cond_value ? 1 : 0);
  else m.add_input("c", kBool, {});
  auto* node = m.add_node("If", {"c"}, {"y"}, "if_0");
  auto* then_g = add_graph(node, "then_branch");
  float_initializer_in(then_g, "one", {}, {1.0f});
  node_in(then_g, "Add", {"x", "one"}, {"t"}, "add");
  graph_io(then_g, false, "t", kFloat, {"2", "3"});
  auto* else_g = add_graph(node, "else_branch");
  node_in(else_g, "Mul", {"x", "w"}, {"e"}, "mul");
  graph_io(else_g, false, "e", kFloat, {"2", "3"});
  m.add_output("y");
  return m;
}

TEST(ControlFlow, IfConstantTrueTakesThenBranch) {
  TempDir dir;
  auto g = load_onnx_model(if_model(true, true).write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_FALSE(has_op(*g, "If"));
  EXPECT_EQ(g->value(g->outputs[0]).name, "y");  // the C ABI names outputs after the model
  Tensor x = ramp({2, 3}, 2.0);
  auto out = evaluate_graph(*g, {x});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  std::vector<double> want;
  for (int64_t i = 0; i < 6; ++i) want.push_back(x.get(i) + 1.0);
  expect_near((*out)[0], want);
}

TEST(ControlFlow, IfConstantFalseTakesElseBranch) {
  TempDir dir;
  auto g = load_onnx_model(if_model(true, false).write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  Tensor x = ramp({2, 3}, 2.0);
  auto out = evaluate_graph(*g, {x});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  std::vector<double> want;
  for (int64_t i = 0; i < 6; ++i) want.push_back(x.get(i) * 2.5);
  expect_near((*out)[0], want);
}

TEST(ControlFlow, IfWithRuntimeConditionIsRefusedInOneLine) {
  TempDir dir;
  auto g = load_onnx_model(if_model(false, false).write(dir));
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().message(),
            "node 'if_0' (If): condition 'c' is not known at compile time; aotc compiles If only when its "
            "condition folds to a constant");
}

// cond = Shape(x)[0] > 1, as exporters write for a batch-dependent branch; then: Relu(x), else: Neg(x).
TEST(ControlFlow, IfOnShapeDerivedCondition) {
  for (int64_t batch : {1, 3}) {
    TempDir dir;
    ModelBuilder m;
    m.add_input("x", kFloat, {std::to_string(batch), "4"});
    m.add_node("Shape", {"x"}, {"s"});
    constant_in(m.graph(), "zero", kInt64, 0);
    constant_in(m.graph(), "one", kInt64, 1);
    m.add_node("Gather", {"s", "zero"}, {"n"});
    m.add_node("Greater", {"n", "one"}, {"c"});
    auto* node = m.add_node("If", {"c"}, {"y"}, "batch_if");
    auto* then_g = add_graph(node, "then_branch");
    node_in(then_g, "Relu", {"x"}, {"r"});
    graph_io(then_g, false, "r", kFloat, {});
    auto* else_g = add_graph(node, "else_branch");
    node_in(else_g, "Neg", {"x"}, {"r"});
    graph_io(else_g, false, "r", kFloat, {});
    m.add_output("y");
    auto g = load_onnx_model(m.write(dir));
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    Tensor x = ramp({batch, 4}, 3.0);
    auto out = evaluate_graph(*g, {x});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    std::vector<double> want;
    for (int64_t i = 0; i < x.numel(); ++i) want.push_back(batch > 1 ? std::max(x.get(i), 0.0) : -x.get(i));
    expect_near((*out)[0], want);
  }
}

// The branch defines 't' and 'u', names the outer graph uses too (before and after the If), and
// reads the outer 't'; the outer graph also has a value named like the branch's prefixed copy.
TEST(ControlFlow, BranchNamesDoNotCollideWithOuterNames) {
  TempDir dir;
  ModelBuilder m;
  m.add_input("x", kFloat, {"5"});
  m.add_node("Relu", {"x"}, {"t"}, "outer_relu");  // t = relu(x)
  constant_in(m.graph(), "c", kBool, 1);
  auto* node = m.add_node("If", {"c"}, {"y"}, "if_0");
  auto* then_g = add_graph(node, "then_branch");
  node_in(then_g, "Neg", {"t"}, {"u"}, "neg");   // reads the outer t: u = -relu(x)
  node_in(then_g, "Abs", {"x"}, {"t"}, "abs");   // a branch t shadows the outer one: |x|
  node_in(then_g, "Add", {"u", "t"}, {"v"}, "add");  // |x| - relu(x)
  graph_io(then_g, false, "v", kFloat, {});
  auto* else_g = add_graph(node, "else_branch");
  node_in(else_g, "Identity", {"x"}, {"v"});
  graph_io(else_g, false, "v", kFloat, {});
  m.add_node("Sigmoid", {"x"}, {"u"}, "outer_sigmoid");          // outer u after the If
  m.add_node("Mul", {"y", "u"}, {"if_0/then/u"}, "outer_mul");   // the name of the branch's u
  m.add_node("Add", {"if_0/then/u", "t"}, {"z"}, "outer_add");   // outer t again
  m.add_output("z");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  Tensor x = ramp({5}, 2.0);
  auto out = evaluate_graph(*g, {x});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  std::vector<double> want;
  for (int64_t i = 0; i < 5; ++i) {
    const double xi = x.get(i), relu = std::max(xi, 0.0), sig = 1.0 / (1.0 + std::exp(-xi));
    want.push_back((std::fabs(xi) - relu) * sig + relu);
  }
  expect_near((*out)[0], want);
}

// Loop: trip count M, carried h (h = tanh(h * a + x_i) with x_i = X[i] read through the iteration
// number), scan output h each step. `cond` "" or a constant true passed through Identity.
ModelBuilder rnn_loop_model(int64_t trip, bool with_cond) {
  ModelBuilder m;
  m.add_input("h0", kFloat, {"3"});
  m.add_input("X", kFloat, {"8", "3"});
  constant_in(m.graph(), "M", kInt64, static_cast<double>(trip));
  if (with_cond) constant_in(m.graph(), "keep", kBool, 1);
  auto* node = m.add_node("Loop", {"M", with_cond ? "keep" : "", "h0"}, {"h_final", "h_all"}, "loop_0");
  auto* body = add_graph(node, "body");
  graph_io(body, true, "i", kInt64, {});
  graph_io(body, true, "cond_in", kBool, {});
  graph_io(body, true, "h", kFloat, {"3"});
  float_initializer_in(body, "a", {}, {0.5f});
  node_in(body, "Identity", {"cond_in"}, {"cond_out"});
  node_in(body, "Gather", {"X", "i"}, {"x_i"}, "pick");  // X is an outer-scope value
  node_in(body, "Mul", {"h", "a"}, {"ha"});
  node_in(body, "Add", {"ha", "x_i"}, {"pre"});
  node_in(body, "Tanh", {"pre"}, {"h_out"});
  node_in(body, "Identity", {"h_out"}, {"h_scan"});
  graph_io(body, false, "cond_out", kBool, {});
  graph_io(body, false, "h_out", kFloat, {"3"});
  graph_io(body, false, "h_scan", kFloat, {"3"});
  m.add_output("h_final");
  m.add_output("h_all");
  return m;
}

TEST(ControlFlow, LoopWithConstantTripCountIsUnrolled) {
  for (bool with_cond : {false, true}) {
    TempDir dir;
    auto g = load_onnx_model(rnn_loop_model(6, with_cond).write(dir));
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    EXPECT_FALSE(has_op(*g, "Loop"));
    Tensor h0 = ramp({3}, 1.0), X = ramp({8, 3}, 1.5);
    auto out = evaluate_graph(*g, {h0, X});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    std::vector<double> h = {h0.get(0), h0.get(1), h0.get(2)}, all;
    for (int i = 0; i < 6; ++i) {
      for (int k = 0; k < 3; ++k) h[k] = std::tanh(h[k] * 0.5 + X.get(i * 3 + k));
      all.insert(all.end(), h.begin(), h.end());
    }
    EXPECT_EQ((*out)[1].shape(), (Shape{6, 3}));
    expect_near((*out)[0], h);
    expect_near((*out)[1], all);
  }
}

// The unroll caps (docs/reliability.md, Limits), each at its value and one beyond.
TEST(ImportLimits, UnrolledLoopAtAndBeyond) {
  TempDir dir;
  // The body has 6 nodes: 6 iterations need 36 unrolled nodes.
  ImportOptions at;
  at.limits.max_unrolled_nodes = 36;
  EXPECT_TRUE(load_onnx_model(rnn_loop_model(6, false).write(dir), at).is_ok());
  ImportOptions below = at;
  below.limits.max_unrolled_nodes = 35;
  auto refused = load_onnx_model(rnn_loop_model(6, false).write(dir), below);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().message(),
            "node 'loop_0' (Loop): unrolling 6 iterations of a 6-node body would take the unrolled subgraph "
            "nodes past 35, the limit (docs/reliability.md, Limits)");
  ImportOptions iterations;
  iterations.limits.max_loop_iterations = 6;
  EXPECT_TRUE(load_onnx_model(rnn_loop_model(6, false).write(dir), iterations).is_ok());
  iterations.limits.max_loop_iterations = 5;
  auto over = load_onnx_model(rnn_loop_model(6, false).write(dir), iterations);
  ASSERT_FALSE(over.is_ok());
  EXPECT_EQ(over.status().message(),
            "node 'loop_0' (Loop): trip count 6 is over the limit of 5 unrolled iterations (docs/reliability.md, Limits)");
  // The default caps: 4096 iterations.
  auto big = load_onnx_model(rnn_loop_model(4097, false).write(dir));
  ASSERT_FALSE(big.is_ok());
  EXPECT_NE(big.status().message().find("trip count 4097 is over the limit of 4096"), std::string::npos);
}

// cond_out = ReduceSum(h) < 10: the end depends on the data.
TEST(ControlFlow, LoopEndingOnDataIsRefused) {
  TempDir dir;
  ModelBuilder m;
  m.add_input("h0", kFloat, {"3"});
  constant_in(m.graph(), "M", kInt64, 10);
  constant_in(m.graph(), "keep", kBool, 1);
  auto* node = m.add_node("Loop", {"M", "keep", "h0"}, {"h_final"}, "while_0");
  auto* body = add_graph(node, "body");
  graph_io(body, true, "i", kInt64, {});
  graph_io(body, true, "cond_in", kBool, {});
  graph_io(body, true, "h", kFloat, {"3"});
  float_initializer_in(body, "ten", {}, {10.0f});
  node_in(body, "Add", {"h", "h"}, {"h_out"});
  node_in(body, "ReduceSum", {"h_out"}, {"s"});
  node_in(body, "Less", {"s", "ten"}, {"cond_out"});
  graph_io(body, false, "cond_out", kBool, {});
  graph_io(body, false, "h_out", kFloat, {"3"});
  m.add_output("h_final");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().message(),
            "node 'while_0' (Loop): the body's condition output 'cond_out' is not known at compile time (the loop "
            "ends on data); aotc unrolls Loop only when its end is known at compile time");
  EXPECT_EQ(g.status().message().find('\n'), std::string::npos);
}

TEST(ControlFlow, LoopWithRuntimeTripCountIsRefused) {
  TempDir dir;
  ModelBuilder m = rnn_loop_model(3, false);
  // Replace the constant M by a graph input.
  m.graph()->mutable_node()->DeleteSubrange(0, 1);
  m.add_input("M", kInt64, {});
  auto g = load_onnx_model(m.write(dir));
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().message().rfind("node 'loop_0' (Loop): trip count 'M' is not known at compile time", 0), 0u)
      << g.status().message();
}

// A while loop whose condition folds in every iteration: cond_out = i < 2 runs iterations 0, 1, 2;
// inside, a nested If on i (a constant per copy) picks Add or Sub: s = ((0 + 1) + 1) - 1 per element.
TEST(ControlFlow, WhileLoopWithFoldingConditionAndNestedIf) {
  TempDir dir;
  ModelBuilder m;
  m.add_input("s0", kFloat, {"2"});
  constant_in(m.graph(), "keep", kBool, 1);
  auto* node = m.add_node("Loop", {"", "keep", "s0"}, {"s_final", "trace"}, "while_1");
  auto* body = add_graph(node, "body");
  graph_io(body, true, "i", kInt64, {});
  graph_io(body, true, "cond_in", kBool, {});
  graph_io(body, true, "s", kFloat, {"2"});
  constant_in(body, "two", kInt64, 2);
  float_initializer_in(body, "step", {}, {1.0f});
  node_in(body, "Less", {"i", "two"}, {"cond_out"});
  auto* inner_if = node_in(body, "If", {"cond_out"}, {"s_out"}, "pick");
  auto* then_g = add_graph(inner_if, "then_branch");
  node_in(then_g, "Add", {"s", "step"}, {"r"});  // s and step: the Loop body's scope
  graph_io(then_g, false, "r", kFloat, {});
  auto* else_g = add_graph(inner_if, "else_branch");
  node_in(else_g, "Sub", {"s", "step"}, {"r"});
  graph_io(else_g, false, "r", kFloat, {});
  graph_io(body, false, "cond_out", kBool, {});
  graph_io(body, false, "s_out", kFloat, {"2"});
  graph_io(body, false, "s_out", kFloat, {"2"});
  m.add_output("s_final");
  m.add_output("trace");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  Tensor s0 = ramp({2}, 1.0);
  auto out = evaluate_graph(*g, {s0});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const double a = s0.get(0), b = s0.get(1);
  expect_near((*out)[0], {a + 1, b + 1});
  EXPECT_EQ((*out)[1].shape(), (Shape{3, 2}));
  expect_near((*out)[1], {a + 1, b + 1, a + 2, b + 2, a + 1, b + 1});
}

// Scan (opset 9+): running sum over axis 1 of x [2, 3] read in reverse, scan output stacked on
// axis 1 in reverse, and a second scan input read forward along axis 0.
TEST(ControlFlow, ScanIsUnrolledWithAxesAndDirections) {
  TempDir dir;
  ModelBuilder m(11);
  m.add_input("init", kFloat, {"2"});
  m.add_input("x", kFloat, {"2", "3"});
  m.add_input("w", kFloat, {"3"});
  auto* node = m.add_node("Scan", {"init", "x", "w"}, {"sum", "partial", "scaled"}, "scan_0");
  add_int_attr(node, "num_scan_inputs", 2);
  add_ints_attr(node, "scan_input_axes", {1, 0});
  add_ints_attr(node, "scan_input_directions", {1, 0});
  add_ints_attr(node, "scan_output_axes", {-1, 0});
  add_ints_attr(node, "scan_output_directions", {1, 0});
  auto* body = add_graph(node, "body");
  graph_io(body, true, "acc", kFloat, {"2"});
  graph_io(body, true, "col", kFloat, {"2"});
  graph_io(body, true, "wt", kFloat, {});
  node_in(body, "Add", {"acc", "col"}, {"acc_out"});
  node_in(body, "Mul", {"acc_out", "wt"}, {"scaled_t"});
  node_in(body, "Identity", {"acc_out"}, {"partial_t"});
  graph_io(body, false, "acc_out", kFloat, {});
  graph_io(body, false, "partial_t", kFloat, {});
  graph_io(body, false, "scaled_t", kFloat, {});
  m.add_output("sum");
  m.add_output("partial");
  m.add_output("scaled");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_FALSE(has_op(*g, "Scan"));
  Tensor init = ramp({2}, 1.0), x = ramp({2, 3}, 2.0), w = ramp({3}, 1.3);
  auto out = evaluate_graph(*g, {init, x, w});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  // Step t reads column 2 - t of x and w[t].
  double acc[2] = {init.get(0), init.get(1)};
  double partial[3][2], scaled[3][2];
  for (int t = 0; t < 3; ++t)
    for (int r = 0; r < 2; ++r) {
      acc[r] += x.get(r * 3 + (2 - t));
      partial[t][r] = acc[r];
      scaled[t][r] = acc[r] * w.get(t);
    }
  expect_near((*out)[0], {acc[0], acc[1]});
  // partial: [2, 3], column j holds step 2 - j (reverse output direction, axis -1 = 1).
  EXPECT_EQ((*out)[1].shape(), (Shape{2, 3}));
  std::vector<double> want_partial, want_scaled;
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 3; ++j) want_partial.push_back(partial[2 - j][r]);
  for (int t = 0; t < 3; ++t)
    for (int r = 0; r < 2; ++r) want_scaled.push_back(scaled[t][r]);
  expect_near((*out)[1], want_partial);
  EXPECT_EQ((*out)[2].shape(), (Shape{3, 2}));
  expect_near((*out)[2], want_scaled);
}

TEST(ControlFlow, ScanBeforeOpset9IsRefused) {
  TempDir dir;
  ModelBuilder m(8);
  m.add_input("init", kFloat, {"1", "2"});
  m.add_input("x", kFloat, {"1", "3", "2"});
  auto* node = m.add_node("Scan", {"", "init", "x"}, {"y", "z"}, "scan8");
  add_int_attr(node, "num_scan_inputs", 1);
  auto* body = add_graph(node, "body");
  graph_io(body, true, "a", kFloat, {"2"});
  graph_io(body, true, "b", kFloat, {"2"});
  node_in(body, "Add", {"a", "b"}, {"c"});
  node_in(body, "Identity", {"c"}, {"d"});
  graph_io(body, false, "c", kFloat, {});
  graph_io(body, false, "d", kFloat, {});
  m.add_output("y");
  m.add_output("z");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().message().rfind("node 'scan8' (Scan): Scan before opset 9", 0), 0u) << g.status().message();
}

// An error inside a branch names the inner node with the If's prefix.
TEST(ControlFlow, ErrorInsideABranchNamesTheInnerNode) {
  TempDir dir;
  ModelBuilder m = if_model(true, true);
  auto* then_g = m.graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
  node_in(then_g, "NoSuchOp", {"x"}, {"q"}, "bad");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().message(), "node 'if_0/then/bad' (NoSuchOp): unsupported op");
}

}  // namespace
}  // namespace aotc
