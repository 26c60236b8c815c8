// Loader tests on valid models built in C++: shapes, initializers (raw and typed fields),
// Constant nodes, inputs that are initializers, symbolic dims and external data (including the
// paths that must be refused because they leave the model's folder).
#include <cmath>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "frontend/onnx_loader.h"
#include "ir/evaluator.h"
#include "tests/frontend/model_builder.h"

namespace aotc {
namespace {

using test::ModelBuilder;
using test::TempDir;
constexpr int kFloat = onnx::TensorProto::FLOAT;

const Value& value_named(const Graph& g, const std::string& name) {
  ValueId id = g.find_value(name);
  EXPECT_NE(id, kNoValue) << name;
  return g.value(id);
}

TEST(OnnxLoader, SmallModelImportsWithShapesAndComputes) {
  TempDir dir;
  ModelBuilder m;
  m.add_input("x", kFloat, {"2", "3", "5"});
  m.add_node("Relu", {"x"}, {"r"}, "relu0");
  m.add_node("Sigmoid", {"r"}, {"y"}, "sig0");
  m.add_output("y");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->name, "test_graph");
  EXPECT_EQ(g->opset, 17);
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->value(g->inputs[0]).shape, (Shape{2, 3, 5}));
  EXPECT_EQ(g->value(g->inputs[0]).dtype, DType::kFloat32);
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].name, "relu0");
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->value(g->outputs[0]).shape, (Shape{2, 3, 5}));
  EXPECT_TRUE(g->value(g->outputs[0]).shape_known);

  // The imported graph computes sigmoid(max(x, 0)), checked against std::exp here.
  Tensor x(DType::kFloat32, {2, 3, 5});
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(0.7 * static_cast<double>(i)) * 3.0);
  auto out = evaluate_graph(*g, {x});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  for (int64_t i = 0; i < x.numel(); ++i) {
    double r = std::max(x.get(i), 0.0);
    double expect = 1.0 / (1.0 + std::exp(-r));
    EXPECT_NEAR((*out)[0].get(i), expect, 1e-5 + 1e-4 * std::fabs(expect)) << i;
  }
}

TEST(OnnxLoader, RawDataInitializerBecomesConstant) {
  TempDir dir;
  ModelBuilder m;
  m.add_raw_float_initializer("w", {2, 2}, {1.5f, -2.0f, 0.25f, 3.0f});
  m.add_node("Relu", {"w"}, {"y"});
  m.add_output("y");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const Value& w = value_named(*g, "w");
  ASSERT_TRUE(w.is_constant());
  EXPECT_EQ(w.shape, (Shape{2, 2}));
  EXPECT_EQ(w.constant->get(0), 1.5);
  EXPECT_EQ(w.constant->get(1), -2.0);
  EXPECT_EQ(w.constant->get(2), 0.25);
  EXPECT_EQ(w.constant->get(3), 3.0);
  EXPECT_TRUE(g->inputs.empty());
}

TEST(OnnxLoader, TypedFieldInitializers) {
  TempDir dir;
  ModelBuilder m;
  auto* f = m.add_initializer("f", onnx::TensorProto::FLOAT, {3});
  for (float v : {1.0f, -0.5f, 7.0f}) f->add_float_data(v);
  auto* d = m.add_initializer("d", onnx::TensorProto::DOUBLE, {2});
  d->add_double_data(0.1);
  d->add_double_data(-3.0);
  auto* i64 = m.add_initializer("i64", onnx::TensorProto::INT64, {2});
  i64->add_int64_data(int64_t{1} << 40);
  i64->add_int64_data(-5);
  auto* i32 = m.add_initializer("i32", onnx::TensorProto::INT32, {2});
  i32->add_int32_data(-70000);
  i32->add_int32_data(9);
  auto* i8 = m.add_initializer("i8", onnx::TensorProto::INT8, {2});
  i8->add_int32_data(-128);
  i8->add_int32_data(127);
  auto* u8 = m.add_initializer("u8", onnx::TensorProto::UINT8, {2});
  u8->add_int32_data(255);
  u8->add_int32_data(0);
  auto* i16 = m.add_initializer("i16", onnx::TensorProto::INT16, {1});
  i16->add_int32_data(-300);
  auto* u16 = m.add_initializer("u16", onnx::TensorProto::UINT16, {1});
  u16->add_int32_data(65535);
  auto* b = m.add_initializer("b", onnx::TensorProto::BOOL, {2});
  b->add_int32_data(1);
  b->add_int32_data(0);
  // IEEE half bit patterns: 0x3C00 = 1.0, 0xC000 = -2.0; bfloat16: 0x3F80 = 1.0, 0xC040 = -3.0.
  auto* h = m.add_initializer("h", onnx::TensorProto::FLOAT16, {2});
  h->add_int32_data(0x3C00);
  h->add_int32_data(0xC000);
  auto* bf = m.add_initializer("bf", onnx::TensorProto::BFLOAT16, {2});
  bf->add_int32_data(0x3F80);
  bf->add_int32_data(0xC040);
  auto* u32 = m.add_initializer("u32", onnx::TensorProto::UINT32, {1});
  u32->add_uint64_data(4000000000u);
  auto* u64 = m.add_initializer("u64", onnx::TensorProto::UINT64, {1});
  u64->add_uint64_data(uint64_t{1} << 63);
  m.add_initializer("empty", onnx::TensorProto::FLOAT, {0, 4});
  m.add_node("Relu", {"f"}, {"y"});
  m.add_output("y");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();

  const Tensor& tf = *value_named(*g, "f").constant;
  EXPECT_EQ(tf.dtype(), DType::kFloat32);
  EXPECT_EQ(tf.get(1), -0.5);
  const Tensor& td = *value_named(*g, "d").constant;
  EXPECT_EQ(td.data<double>()[0], 0.1);
  EXPECT_EQ(td.data<double>()[1], -3.0);
  const Tensor& ti64 = *value_named(*g, "i64").constant;
  EXPECT_EQ(ti64.data<int64_t>()[0], int64_t{1} << 40);
  EXPECT_EQ(ti64.data<int64_t>()[1], -5);
  EXPECT_EQ(value_named(*g, "i32").constant->data<int32_t>()[0], -70000);
  EXPECT_EQ(value_named(*g, "i8").constant->data<int8_t>()[0], -128);
  EXPECT_EQ(value_named(*g, "i8").constant->data<int8_t>()[1], 127);
  EXPECT_EQ(value_named(*g, "u8").constant->data<uint8_t>()[0], 255);
  EXPECT_EQ(value_named(*g, "i16").constant->data<int16_t>()[0], -300);
  EXPECT_EQ(value_named(*g, "u16").constant->data<uint16_t>()[0], 65535);
  EXPECT_EQ(value_named(*g, "b").constant->data<uint8_t>()[0], 1);
  EXPECT_EQ(value_named(*g, "b").constant->data<uint8_t>()[1], 0);
  EXPECT_EQ(value_named(*g, "h").constant->data<uint16_t>()[0], 0x3C00);
  EXPECT_EQ(value_named(*g, "h").constant->get(1), -2.0);
  EXPECT_EQ(value_named(*g, "bf").constant->get(0), 1.0);
  EXPECT_EQ(value_named(*g, "bf").constant->get(1), -3.0);
  EXPECT_EQ(value_named(*g, "u32").constant->data<uint32_t>()[0], 4000000000u);
  EXPECT_EQ(value_named(*g, "u64").constant->data<uint64_t>()[0], uint64_t{1} << 63);
  EXPECT_EQ(value_named(*g, "empty").shape, (Shape{0, 4}));
}

TEST(OnnxLoader, ConstantNodeKinds) {
  TempDir dir;
  ModelBuilder m;
  auto* c1 = m.add_node("Constant", {}, {"c_tensor"}, "c1");
  auto* a1 = c1->add_attribute();
  a1->set_name("value");
  a1->set_type(onnx::AttributeProto::TENSOR);
  a1->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a1->mutable_t()->add_dims(2);
  a1->mutable_t()->add_float_data(-1.0f);
  a1->mutable_t()->add_float_data(2.5f);
  auto add_const = [&](const std::string& out, const std::string& attr,
                       onnx::AttributeProto::AttributeType type) {
    auto* a = m.add_node("Constant", {}, {out})->add_attribute();
    a->set_name(attr);
    a->set_type(type);
    return a;
  };
  add_const("c_float", "value_float", onnx::AttributeProto::FLOAT)->set_f(0.75f);
  auto* fs = add_const("c_floats", "value_floats", onnx::AttributeProto::FLOATS);
  fs->add_floats(1.0f);
  fs->add_floats(-4.0f);
  add_const("c_int", "value_int", onnx::AttributeProto::INT)->set_i(-9);
  auto* is = add_const("c_ints", "value_ints", onnx::AttributeProto::INTS);
  for (int64_t v : {3, 1, 4}) is->add_ints(v);
  m.add_node("Relu", {"c_tensor"}, {"y"}, "relu");
  m.add_output("y");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  // Constant nodes became constants, and the Relu of a constant folded while importing.
  ASSERT_EQ(g->nodes.size(), 0u);
  const Value& ct = value_named(*g, "c_tensor");
  ASSERT_TRUE(ct.is_constant());
  EXPECT_EQ(ct.shape, (Shape{2}));
  EXPECT_EQ(ct.constant->get(1), 2.5);
  const Value& cf = value_named(*g, "c_float");
  EXPECT_EQ(cf.shape, Shape{});
  EXPECT_EQ(cf.dtype, DType::kFloat32);
  EXPECT_EQ(cf.constant->get(0), 0.75);
  EXPECT_EQ(value_named(*g, "c_floats").constant->get(1), -4.0);
  const Value& ci = value_named(*g, "c_int");
  EXPECT_EQ(ci.dtype, DType::kInt64);
  EXPECT_EQ(ci.shape, Shape{});
  EXPECT_EQ(ci.constant->get_int(0), -9);
  EXPECT_EQ(value_named(*g, "c_ints").constant->to_int64s(), (std::vector<int64_t>{3, 1, 4}));
  const Value& y = value_named(*g, "y");
  EXPECT_EQ(y.shape, (Shape{2}));
  ASSERT_TRUE(y.is_constant());
  EXPECT_EQ(y.constant->get(0), 0.0);  // relu(-1)
  EXPECT_EQ(y.constant->get(1), 2.5);
}

TEST(OnnxLoader, ConstantNodeRefusals) {
  struct Case { const char* attr; onnx::AttributeProto::AttributeType type; const char* expect; };
  const Case cases[] = {{"value_string", onnx::AttributeProto::STRING, "string constants are not supported"},
                        {"sparse_value", onnx::AttributeProto::SPARSE_TENSOR, "sparse tensors are not supported"},
                        {"value_float", onnx::AttributeProto::INT, "must be float"}};
  for (const Case& c : cases) {
    TempDir dir;
    ModelBuilder m;
    auto* a = m.add_node("Constant", {}, {"c"}, "const_node")->add_attribute();
    a->set_name(c.attr);
    a->set_type(c.type);
    m.add_node("Relu", {"c"}, {"y"});
    m.add_output("y");
    auto g = load_onnx_model(m.write(dir));
    ASSERT_FALSE(g.is_ok()) << c.attr;
    EXPECT_NE(g.status().message().find("node 'const_node' (Constant): "), std::string::npos)
        << g.status().message();
    EXPECT_NE(g.status().message().find(c.expect), std::string::npos) << g.status().message();
  }
}

TEST(OnnxLoader, InputThatIsAlsoInitializerIsConstant) {
  TempDir dir;
  ModelBuilder m;
  m.add_input("x", kFloat, {"4"});
  m.add_input("w", kFloat, {"3"});
  m.add_raw_float_initializer("w", {3}, {-1.0f, 0.0f, 1.0f});
  m.add_node("Relu", {"w"}, {"y"});
  m.add_node("Relu", {"x"}, {"z"});
  m.add_output("y");
  m.add_output("z");
  auto g = load_onnx_model(m.write(dir));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->value(g->inputs[0]).name, "x");
  EXPECT_TRUE(value_named(*g, "w").is_constant());
  EXPECT_FALSE(g->is_graph_input(g->find_value("w")));
  // A value fixed by the caller replaces the initializer's default.
  ImportOptions fixed;
  fixed.constant_inputs["w"] = Tensor::from_floats({3}, {5.0f, 6.0f, 7.0f});
  g = load_onnx_model(dir.file("model.onnx"), fixed);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(value_named(*g, "w").constant->get(2), 7.0);
  EXPECT_EQ(value_named(*g, "y").shape, (Shape{3}));
}

TEST(OnnxLoader, ModelNamesWinOverNamesInventedByImport) {
  // Reshape's import turns a legacy `shape` attribute into a constant input named after the
  // node ("r_shape"); a later model value with that very name must keep it.
  TempDir dir;
  ModelBuilder m;
  m.add_input("x", kFloat, {"2", "2"});
  auto* r = m.add_node("Reshape", {"x"}, {"flat"}, "r");
  auto* a = r->add_attribute();
  a->set_name("shape");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(4);
  m.add_node("Relu", {"flat"}, {"r_shape"}, "relu");
  m.add_output("r_shape");
  auto g = load_onnx_model(m.write(dir));
  if (!g.is_ok()) GTEST_SKIP() << "Reshape no longer takes the attribute form: " << g.status().message();
  std::set<std::string> names;
  for (const Value& v : g->values) EXPECT_TRUE(names.insert(v.name).second) << "duplicate " << v.name;
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->value(g->nodes[1].outputs[0]).name, "r_shape");
  EXPECT_EQ(g->value(g->outputs[0]).name, "r_shape");
  ASSERT_EQ(g->nodes[0].inputs.size(), 2u);
  EXPECT_NE(g->value(g->nodes[0].inputs[1]).name, "r_shape");
  EXPECT_EQ(g->value(g->outputs[0]).shape, (Shape{4}));
}

std::string symbolic_model(const TempDir& dir, const std::vector<std::string>& dims) {
  ModelBuilder m;
  m.add_input("x", kFloat, dims);
  m.add_node("Relu", {"x"}, {"y"});
  m.add_output("y");
  return m.write(dir);
}

TEST(OnnxLoader, SymbolicBatchDefaultsAndOverrides) {
  TempDir dir;
  const std::string path = symbolic_model(dir, {"batch", "3", "8"});
  auto g = load_onnx_model(path);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->value(g->inputs[0]).shape, (Shape{1, 3, 8}));
  EXPECT_EQ(g->value(g->outputs[0]).shape, (Shape{1, 3, 8}));

  ImportOptions batch4;
  batch4.default_batch = 4;
  g = load_onnx_model(path, batch4);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->value(g->inputs[0]).shape, (Shape{4, 3, 8}));

  ImportOptions given;
  given.input_shapes["x"] = {16, 3, 8};
  g = load_onnx_model(path, given);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->value(g->outputs[0]).shape, (Shape{16, 3, 8}));

  ImportOptions wrong_rank;
  wrong_rank.input_shapes["x"] = {16, 3};
  g = load_onnx_model(path, wrong_rank);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("rank 2"), std::string::npos) << g.status().message();

  ImportOptions not_an_input;
  not_an_input.input_shapes["nope"] = {1};
  g = load_onnx_model(path, not_an_input);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("'nope'"), std::string::npos) << g.status().message();
}

TEST(OnnxLoader, SymbolicInnerDimNeedsInputShape) {
  TempDir dir;
  const std::string path = symbolic_model(dir, {"batch", "seq"});
  auto g = load_onnx_model(path);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("--input-shape x:"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("'seq'"), std::string::npos) << g.status().message();
  ImportOptions given;
  given.input_shapes["x"] = {2, 128};
  g = load_onnx_model(path, given);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->value(g->inputs[0]).shape, (Shape{2, 128}));
  // A dim with neither value nor name is symbolic too.
  TempDir dir2;
  g = load_onnx_model(symbolic_model(dir2, {"?", "5"}));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->value(g->inputs[0]).shape, (Shape{1, 5}));
}

// A model whose one initializer "w" (4 floats) lives in an external file at `location`.
std::string external_model(const std::string& dir, const std::string& location, int64_t offset,
                           int64_t length) {
  ModelBuilder m;
  auto* t = m.add_initializer("w", onnx::TensorProto::FLOAT, {4});
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  if (offset >= 0) {
    kv = t->add_external_data();
    kv->set_key("offset");
    kv->set_value(std::to_string(offset));
  }
  if (length >= 0) {
    kv = t->add_external_data();
    kv->set_key("length");
    kv->set_value(std::to_string(length));
  }
  m.add_node("Relu", {"w"}, {"y"});
  m.add_output("y");
  std::string bytes;
  EXPECT_TRUE(m.model.SerializeToString(&bytes));
  test::write_bytes(dir + "/model.onnx", bytes);
  return dir + "/model.onnx";
}

std::string float_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST(OnnxLoader, ExternalDataInsideFolder) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("sub"));
  test::write_bytes(dir.file("sub/weights.bin"),
                    std::string(8, 'x') + float_bytes({0.5f, -1.0f, 2.0f, 4.0f}) + "tail");
  auto g = load_onnx_model(external_model(dir.path(), "sub/weights.bin", 8, 16));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const Tensor& w = *value_named(*g, "w").constant;
  EXPECT_EQ(w.get(0), 0.5);
  EXPECT_EQ(w.get(1), -1.0);
  EXPECT_EQ(w.get(3), 4.0);
  // No offset/length: the whole file from 0, as many bytes as dims imply.
  test::write_bytes(dir.file("plain.bin"), float_bytes({1.0f, 2.0f, 3.0f, 4.0f}));
  g = load_onnx_model(external_model(dir.path(), "plain.bin", -1, -1));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(value_named(*g, "w").constant->get(2), 3.0);
}

void expect_external_refused(const std::string& model_path, const std::string& fragment) {
  auto g = load_onnx_model(model_path);
  ASSERT_FALSE(g.is_ok()) << model_path;
  const std::string msg = g.status().message();
  EXPECT_NE(msg.find("initializer 'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(OnnxLoader, ExternalDataEscapingFolderIsRefused) {
  TempDir outer;
  const std::string model_dir = outer.file("model");
  std::filesystem::create_directory(model_dir);
  // The escaping targets exist, so each refusal is about the path, not a missing file.
  test::write_bytes(outer.file("x.bin"), float_bytes({1, 2, 3, 4}));
  expect_external_refused(external_model(model_dir, "../x.bin", 0, 16), "outside the model's folder");
  expect_external_refused(external_model(model_dir, "/etc/passwd", 0, 16), "absolute path");
  std::filesystem::create_symlink(outer.file("x.bin"), model_dir + "/link.bin");
  expect_external_refused(external_model(model_dir, "link.bin", 0, 16), "outside the model's folder");
  std::filesystem::create_directory(model_dir + "/sub");
  expect_external_refused(external_model(model_dir, "sub/../../x.bin", 0, 16), "outside the model's folder");
  // Inside, but the range or file is wrong.
  test::write_bytes(model_dir + "/short.bin", float_bytes({1, 2}));
  expect_external_refused(external_model(model_dir, "short.bin", 0, -1), "exceeds file");
  expect_external_refused(external_model(model_dir, "short.bin", 4, 16), "exceeds file");
  expect_external_refused(external_model(model_dir, "short.bin", 0, 8), "does not match");
  expect_external_refused(external_model(model_dir, "missing.bin", 0, 16), "does not exist");
  expect_external_refused(external_model(model_dir, "sub", 0, 16), "not a regular file");
  // A hard link in the folder names the outside file itself: refused by its link count, and the
  // same bytes read through the (singly linked) copy are accepted.
  const std::string hard = model_dir + "/hard.bin";
  std::error_code ec;
  std::filesystem::create_hard_link(outer.file("x.bin"), hard, ec);
  ASSERT_FALSE(ec) << ec.message();
  expect_external_refused(external_model(model_dir, "hard.bin", 0, 16), "2 hard links");
  std::filesystem::remove(outer.file("x.bin"));
  auto g = load_onnx_model(external_model(model_dir, "hard.bin", 0, 16));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(value_named(*g, "w").constant->get(3), 4.0);
}

}  // namespace
}  // namespace aotc
