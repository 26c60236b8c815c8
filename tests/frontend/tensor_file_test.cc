// Tensor files (.pb and .npy): round trips, hand-written .npy bytes per the NumPy format spec,
// interop with numpy itself when python3 has it, and real files from the ONNX backend node tests.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "frontend/onnx_loader.h"
#include "frontend/tensor_file.h"
#include "frontend/tensor_proto.h"
#include "ir/evaluator.h"
#include "tests/frontend/model_builder.h"

namespace aotc {
namespace {

using test::TempDir;
const std::string kNodeTests = "/usr/include/onnx/backend/test/data/node";

Tensor sample(DType dtype, Shape shape) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::kBool) t.set_int(i, i % 3 == 0);
    else if (dtype_is_float(dtype)) t.set(i, 0.5 * static_cast<double>(i) - 3.25);
    else t.set_int(i, (i * 37) % 100 - (dtype_is_signed(dtype) ? 50 : 0));
  }
  return t;
}

const DType kNpyTypes[] = {DType::kFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8,
                           DType::kInt16,   DType::kInt32,   DType::kInt64,   DType::kUInt8,
                           DType::kUInt16,  DType::kUInt32,  DType::kUInt64,  DType::kBool};

void expect_same(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.byte_size(), b.byte_size());
  // memcmp's pointers must not be null even for 0 bytes (an empty tensor has no buffer; UBSan).
  if (a.byte_size() > 0) {
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), static_cast<size_t>(a.byte_size())), 0);
  }
}

TEST(TensorFile, PbRoundTripAllTypes) {
  TempDir dir;
  for (DType dt : kNpyTypes) {
    Tensor t = sample(dt, {2, 3});
    ASSERT_TRUE(save_tensor_pb(dir.file("t.pb"), t, "named").is_ok());
    std::string name;
    auto back = load_tensor_pb(dir.file("t.pb"), &name);
    ASSERT_TRUE(back.is_ok()) << back.status().message();
    expect_same(t, *back);
    EXPECT_EQ(name, "named");
  }
  Tensor scalar = Tensor::scalar_float(2.5f);
  ASSERT_TRUE(save_tensor_pb(dir.file("s.pb"), scalar).is_ok());
  auto back = load_tensor_pb(dir.file("s.pb"));
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back->shape(), Shape{});
  EXPECT_EQ(back->get(0), 2.5);
  test::write_bytes(dir.file("bad.pb"), "\x0a\xff\xff");
  EXPECT_FALSE(load_tensor_pb(dir.file("bad.pb")).is_ok());
}

TEST(TensorFile, NpyRoundTripAllTypesAndShapes) {
  TempDir dir;
  for (DType dt : kNpyTypes)
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{2, 3, 5}, Shape{0, 4}}) {
      Tensor t = sample(dt, shape);
      ASSERT_TRUE(save_npy(dir.file("t.npy"), t).is_ok());
      std::string bytes = test::read_bytes(dir.file("t.npy"));
      // Format spec: magic, version 1.0, header length; data starts 64-byte aligned.
      ASSERT_GE(bytes.size(), 10u);
      EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
      size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
      EXPECT_EQ((10 + header_len) % 64, 0u);
      EXPECT_EQ(bytes[10 + header_len - 1], '\n');
      auto back = load_npy(dir.file("t.npy"));
      ASSERT_TRUE(back.is_ok()) << back.status().message();
      expect_same(t, *back);
    }
  EXPECT_FALSE(save_npy(dir.file("bf.npy"), Tensor(DType::kBFloat16, {2})).is_ok());
}

std::string npy_v1(const std::string& header, const std::string& data) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

TEST(TensorFile, NpyHandWrittenPerSpec) {
  TempDir dir;
  const float values[] = {1.0f, -2.0f, 0.5f, 8.0f, 3.0f, -0.25f};
  std::string data(reinterpret_cast<const char*>(values), sizeof values);
  test::write_bytes(dir.file("a.npy"), npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data));
  auto t = load_npy(dir.file("a.npy"));
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(t->dtype(), DType::kFloat32);
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t->get(i), values[i]);

  // Version 2 header (4-byte length).
  std::string h2 = "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }";
  while ((12 + h2.size() + 1) % 64) h2 += ' ';
  h2 += '\n';
  std::string v2("\x93NUMPY\x02\x00", 8);
  v2 += static_cast<char>(h2.size());
  v2 += std::string(3, '\0');
  test::write_bytes(dir.file("v2.npy"), v2 + h2 + "\x07\x08\xff");
  auto u = load_npy(dir.file("v2.npy"));
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  EXPECT_EQ(u->dtype(), DType::kUInt8);
  EXPECT_EQ(u->get_int(2), 255);

  struct Bad { std::string header; std::string data; const char* expect; };
  const Bad bad[] = {
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'), "big-endian"},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", std::string(4, '\0'), "Fortran"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", std::string(4, '\0'), "data bytes"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0'), "unsupported dtype"},
      {"{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", "\x02", "not 0 or 1"},
  };
  for (const Bad& b : bad) {
    test::write_bytes(dir.file("bad.npy"), npy_v1(b.header, b.data));
    auto r = load_npy(dir.file("bad.npy"));
    ASSERT_FALSE(r.is_ok()) << b.header;
    EXPECT_NE(r.status().message().find(b.expect), std::string::npos) << r.status().message();
  }
  test::write_bytes(dir.file("magic.npy"), "PK\x03\x04 not numpy");
  EXPECT_FALSE(load_npy(dir.file("magic.npy")).is_ok());
}

bool have_numpy() { return std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

TEST(TensorFile, NpyInteropWithNumpy) {
  if (!have_numpy()) GTEST_SKIP() << "python3 with numpy not available";
  TempDir dir;
  // numpy reads what we write ...
  Tensor t = sample(DType::kInt16, {3, 4});
  ASSERT_TRUE(save_npy(dir.file("ours.npy"), t).is_ok());
  std::string check = "python3 -c \"import numpy as np; a = np.load('" + dir.file("ours.npy") +
                      "'); e = (np.arange(12) * 37 % 100 - 50).astype(np.int16).reshape(3, 4); "
                      "assert a.dtype == np.int16 and a.shape == (3, 4) and (a == e).all()\"";
  EXPECT_EQ(std::system(check.c_str()), 0);
  // ... and we read what numpy writes.
  std::string make = "python3 -c \"import numpy as np; np.save('" + dir.file("theirs.npy") +
                     "', (np.arange(10, dtype=np.float64) * 0.25 - 1).reshape(2, 5)); np.save('" +
                     dir.file("bools.npy") + "', np.array([True, False, True]))\"";
  ASSERT_EQ(std::system(make.c_str()), 0);
  auto a = load_npy(dir.file("theirs.npy"));
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_EQ(a->dtype(), DType::kFloat64);
  EXPECT_EQ(a->shape(), (Shape{2, 5}));
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(a->get(i), static_cast<double>(i) * 0.25 - 1);
  auto b = load_npy(dir.file("bools.npy"));
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  EXPECT_EQ(b->dtype(), DType::kBool);
  EXPECT_EQ(b->to_int64s(), (std::vector<int64_t>{1, 0, 1}));
}

bool have_node_tests() { return std::filesystem::exists(kNodeTests + "/test_relu/model.onnx"); }

// Loads an ONNX node test (model + data set 0) and runs it on the reference evaluator; the
// expected output is the test's own output_0.pb.
void run_node_test(const std::string& test_name) {
  const std::string dir = kNodeTests + "/" + test_name;
  auto g = load_onnx_model(dir + "/model.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto input = load_tensor_pb(dir + "/test_data_set_0/input_0.pb");
  auto expected = load_tensor_pb(dir + "/test_data_set_0/output_0.pb");
  ASSERT_TRUE(input.is_ok()) << input.status().message();
  ASSERT_TRUE(expected.is_ok()) << expected.status().message();
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->value(g->inputs[0]).shape, input->shape());
  EXPECT_EQ(g->value(g->inputs[0]).dtype, input->dtype());
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->value(g->outputs[0]).shape, expected->shape());
  EXPECT_EQ(g->value(g->outputs[0]).dtype, expected->dtype());
  auto out = evaluate_graph(*g, {*input});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  for (int64_t i = 0; i < expected->numel(); ++i) {
    double e = expected->get(i);
    EXPECT_NEAR((*out)[0].get(i), e, 1e-5 + 1e-4 * std::fabs(e)) << test_name << " element " << i;
  }
}

TEST(NodeTestData, ReluAndSigmoidLoadAndMatch) {
  if (!have_node_tests()) GTEST_SKIP() << "ONNX backend node test data not installed at " << kNodeTests;
  run_node_test("test_relu");
  run_node_test("test_sigmoid");
  run_node_test("test_sigmoid_example");
  // Independent check of the .pb decoding itself: relu's output is max(input, 0) element-wise.
  auto in = load_tensor_pb(kNodeTests + "/test_relu/test_data_set_0/input_0.pb");
  auto out = load_tensor_pb(kNodeTests + "/test_relu/test_data_set_0/output_0.pb");
  ASSERT_TRUE(in.is_ok() && out.is_ok());
  EXPECT_EQ(in->shape(), (Shape{3, 4, 5}));
  for (int64_t i = 0; i < in->numel(); ++i) EXPECT_EQ(out->get(i), std::max(in->get(i), 0.0));
}

TEST(NodeTestData, ConstantInputsMakeShapeInputsCompileTime) {
  if (!have_node_tests()) GTEST_SKIP() << "ONNX backend node test data not installed at " << kNodeTests;
  const std::string dir = kNodeTests + "/test_reshape_negative_dim";
  auto data = load_tensor_pb(dir + "/test_data_set_0/input_0.pb");
  auto shape = load_tensor_pb(dir + "/test_data_set_0/input_1.pb");
  auto expected = load_tensor_pb(dir + "/test_data_set_0/output_0.pb");
  ASSERT_TRUE(data.is_ok() && shape.is_ok() && expected.is_ok());
  ImportOptions options;
  options.constant_inputs["shape"] = *shape;
  auto g = load_onnx_model(dir + "/model.onnx", options);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  ASSERT_EQ(g->inputs.size(), 1u);  // "shape" is a constant now
  EXPECT_EQ(g->value(g->outputs[0]).shape, expected->shape());
  auto out = evaluate_graph(*g, {*data});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  for (int64_t i = 0; i < expected->numel(); ++i) EXPECT_EQ((*out)[0].get(i), expected->get(i));
  // A constant that contradicts the declaration, or names no input, is refused.
  ImportOptions wrong;
  wrong.constant_inputs["shape"] = Tensor::from_int64s({2}, {6, 4});
  auto bad = load_onnx_model(dir + "/model.onnx", wrong);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("graph input 'shape'"), std::string::npos) << bad.status().message();
  ImportOptions stray;
  stray.constant_inputs["nope"] = Tensor::scalar_int64(1);
  stray.constant_inputs["shape"] = *shape;
  bad = load_onnx_model(dir + "/model.onnx", stray);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("'nope'"), std::string::npos) << bad.status().message();
}

TEST(NodeTestData, EveryModelLoadsOrFailsWithOneLine) {
  if (!have_node_tests()) GTEST_SKIP() << "ONNX backend node test data not installed at " << kNodeTests;
  int loaded = 0, refused = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kNodeTests)) {
    const std::string model = entry.path().string() + "/model.onnx";
    if (!std::filesystem::exists(model)) continue;
    auto g = load_onnx_model(model);
    if (g.is_ok()) {
      ++loaded;
      continue;
    }
    ++refused;
    const std::string msg = g.status().message();
    EXPECT_FALSE(msg.empty()) << model;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << model << ": " << msg;
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(loaded + refused, 900);
}


// Sub-16-bit types in TensorProto (onnx.numpy_helper.from_array / to_array): 4-bit and 2-bit
// elements packed low bits first in raw_data, or one packed byte per int32_data entry; float8 one
// byte per element. Bytes below written by hand from that rule.
TEST(TensorProto, PackedSmallTypesDecodeAndEncode) {
  onnx::TensorProto p;
  p.set_data_type(static_cast<int32_t>(DType::kInt4));  // the sub-16-bit types are not in onnx 1.12's proto
  p.add_dims(3);
  p.set_raw_data(std::string("\x78\x0F", 2));  // -8, 7 | -1, padding
  auto t = tensor_from_proto(p, "", "int4 tensor");
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  EXPECT_EQ(t->dtype(), DType::kInt4);
  EXPECT_EQ(t->get(0), -8);
  EXPECT_EQ(t->get(1), 7);
  EXPECT_EQ(t->get(2), -1);
  onnx::TensorProto back;
  ASSERT_TRUE(tensor_to_proto(*t, "x", &back).is_ok());
  EXPECT_EQ(back.raw_data(), std::string("\x78\x0F", 2));
  // int32_data: one packed byte per entry.
  onnx::TensorProto q;
  q.set_data_type(static_cast<int32_t>(DType::kUInt2));
  q.add_dims(5);
  q.add_int32_data(0x39);
  q.add_int32_data(0x03);
  auto u = tensor_from_proto(q, "", "uint2 tensor");
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  EXPECT_EQ(u->to_int64s(), (std::vector<int64_t>{1, 2, 3, 0, 3}));
  // float8: one byte per element in int32_data.
  onnx::TensorProto f;
  f.set_data_type(static_cast<int32_t>(DType::kFloat8E4M3FN));
  f.add_dims(2);
  f.add_int32_data(0x7E);
  f.add_int32_data(0xBC);
  auto e = tensor_from_proto(f, "", "float8 tensor");
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  EXPECT_EQ(e->to_doubles(), (std::vector<double>{448, -1.5}));
  // Wrong sizes are refused with the packed byte count.
  p.set_raw_data(std::string("\x78", 1));
  auto bad = tensor_from_proto(p, "", "int4 tensor");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("raw_data has 1 bytes, dims and dtype imply 2"), std::string::npos)
      << bad.status().message();
  q.add_int32_data(0x01);
  auto bad2 = tensor_from_proto(q, "", "uint2 tensor");
  ASSERT_FALSE(bad2.is_ok());
  EXPECT_NE(bad2.status().message().find("int32_data has 3 elements, dims imply 2"), std::string::npos)
      << bad2.status().message();
  f.set_int32_data(0, 300);
  auto bad3 = tensor_from_proto(f, "", "float8 tensor");
  ASSERT_FALSE(bad3.is_ok());
  EXPECT_NE(bad3.status().message().find("not a byte of float8e4m3fn"), std::string::npos) << bad3.status().message();
}

}  // namespace
}  // namespace aotc
