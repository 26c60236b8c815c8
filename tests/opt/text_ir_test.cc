// The text IR parser: values, constants (literal and seeded random), attributes of every kind,
// domains, node names, absent inputs, and one-line errors with line numbers.
#include <gtest/gtest.h>

#include "ir/dump.h"
#include "ir/text_ir.h"

namespace aotc {
namespace {

// The sub-16-bit types parse by their ONNX names, constants through their encode (int4 wraps).
TEST(TextIr, SmallStorageTypes) {
  auto g = parse_text_ir(R"(
    graph small (opset 21)
    input  %x : float8e4m3fn[3]
    const  %q : int4[2] = [7, -8]
    %y : float[?] = Cast(%x) {to=1}
    output %y
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->value(g->inputs[0]).dtype, DType::kFloat8E4M3FN);
  const Value& q = g->value(g->find_value("q"));
  EXPECT_EQ(q.dtype, DType::kInt4);
  EXPECT_EQ(q.constant->to_int64s(), (std::vector<int64_t>{7, -8}));
  EXPECT_FALSE(parse_text_ir("graph g (opset 21)\n input %x : float6e2m3[3]\n output %x\n").is_ok());
}

TEST(TextIr, ParsesValuesNodesAttributesAndNames) {
  auto g = parse_text_ir(R"(
    graph tiny (opset 13)
    input  %x : float[2x3]          # a comment
    const  %s : int64[2] = [3, -2]
    const  %h : float[scalar] = [0.5]
    %y : float[?] = Relu(%x)  # first relu
    %a : float[?], _ = aotc.Thing(%y, _, %s) {i=3, f=1e-5, s="a#b", ints=[1,2], fl=[0.5,2]}
    output %a, %y
  )");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->name, "tiny");
  EXPECT_EQ(g->opset, 13);
  ASSERT_EQ(g->inputs.size(), 1u);
  const Value& x = g->value(g->inputs[0]);
  EXPECT_EQ(x.dtype, DType::kFloat32);
  EXPECT_EQ(x.shape, (Shape{2, 3}));
  EXPECT_TRUE(x.shape_known);

  const Value& s = g->value(g->find_value("s"));
  ASSERT_TRUE(s.is_constant());
  EXPECT_EQ(s.constant->to_int64s(), (std::vector<int64_t>{3, -2}));
  const Value& h = g->value(g->find_value("h"));
  EXPECT_EQ(h.shape, Shape{});
  EXPECT_EQ(h.constant->get(0), 0.5);

  ASSERT_EQ(g->nodes.size(), 2u);
  const Node& relu = g->nodes[0];
  EXPECT_EQ(relu.op_type, "Relu");
  EXPECT_EQ(relu.domain, "");
  EXPECT_EQ(relu.name, "first relu");
  EXPECT_FALSE(g->value(relu.outputs[0]).shape_known);

  const Node& t = g->nodes[1];
  EXPECT_EQ(t.domain, "aotc");
  EXPECT_EQ(t.op_type, "Thing");
  EXPECT_EQ(t.inputs, (std::vector<ValueId>{relu.outputs[0], kNoValue, g->find_value("s")}));
  ASSERT_EQ(t.outputs.size(), 2u);
  EXPECT_EQ(t.outputs[1], kNoValue);
  EXPECT_EQ(t.attrs.at("i").kind, Attribute::Kind::kInt);
  EXPECT_EQ(t.attr_int("i", 0), 3);
  EXPECT_EQ(t.attrs.at("f").kind, Attribute::Kind::kFloat);
  EXPECT_FLOAT_EQ(t.attr_float("f", 0), 1e-5f);
  EXPECT_EQ(t.attr_string("s", ""), "a#b");
  EXPECT_EQ(t.attr_ints("ints"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(t.attrs.at("fl").kind, Attribute::Kind::kFloats);
  EXPECT_EQ(t.attr_floats("fl"), (std::vector<float>{0.5f, 2.f}));
  EXPECT_EQ(g->outputs, (std::vector<ValueId>{t.outputs[0], relu.outputs[0]}));
}

TEST(TextIr, DumpOfParsedGraphReadsBack) {
  const char* text =
      "graph g (opset 17)\n"
      "  input  %x : float[1x4]\n"
      "  %y : float[1x4] = Relu(%x)  # r\n"
      "  %z : float[1x4] = Sigmoid(%y)\n"
      "  output %z\n";
  auto g = parse_text_ir(text);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(dump_graph(*g), text);
}

TEST(TextIr, SeededRandomIsDeterministicAndInRange) {
  Tensor a = seeded_random_tensor(DType::kFloat32, {1000}, 7, 0.5, 2.0);
  Tensor b = seeded_random_tensor(DType::kFloat32, {1000}, 7, 0.5, 2.0);
  Tensor c = seeded_random_tensor(DType::kFloat32, {1000}, 8, 0.5, 2.0);
  bool differs = false;
  double lo = 10, hi = -10;
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(a.get(i), b.get(i));
    differs = differs || a.get(i) != c.get(i);
    lo = std::min(lo, a.get(i));
    hi = std::max(hi, a.get(i));
  }
  EXPECT_TRUE(differs);
  EXPECT_GE(lo, 0.5);
  EXPECT_LT(hi, 2.0);
  // Spread over the range, not stuck in a corner.
  EXPECT_LT(lo, 0.6);
  EXPECT_GT(hi, 1.9);

  Tensor ints = seeded_random_tensor(DType::kInt64, {200}, 3, 0, 10);
  for (int64_t i = 0; i < 200; ++i) {
    EXPECT_GE(ints.get_int(i), 0);
    EXPECT_LT(ints.get_int(i), 10);
  }
}

TEST(TextIr, RandomConstantsInText) {
  auto g = parse_text_ir("const %w : float[3x2] = random(5, -2, -1)\nconst %k : int32[4] = random(1)\n");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const Tensor& w = *g->value(g->find_value("w")).constant;
  Tensor expect = seeded_random_tensor(DType::kFloat32, {3, 2}, 5, -2, -1);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(w.get(i), expect.get(i));
    EXPECT_LT(w.get(i), -1.0);
  }
  const Tensor& k = *g->value(g->find_value("k")).constant;
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(k.get_int(i) >= 0 && k.get_int(i) < 10);
}

void expect_error(const std::string& text, const std::string& fragment) {
  auto g = parse_text_ir(text);
  ASSERT_FALSE(g.is_ok()) << "parsed: " << text;
  EXPECT_NE(g.status().message().find(fragment), std::string::npos) << g.status().message();
  EXPECT_EQ(g.status().message().find('\n'), std::string::npos);
}

TEST(TextIr, ErrorsNameLineAndReason) {
  expect_error("input %x : float[2]\n%y : float[?] = Relu(%q)\n", "line 2: value %q is used before");
  expect_error("input %x : float[2]\ninput %x : float[2]\n", "line 2: value %x is defined twice");
  expect_error("input %x : flaot[2]\n", "unknown dtype 'flaot'");
  expect_error("const %c : float[3] = [1, 2]\n", "literal has 2 elements, shape needs 3");
  expect_error("const %c : float[?] = [1]\n", "a const needs a known shape");
  expect_error("input %x : float[2]\n%y : float[?] = Relu(%x\n", "expected ')'");
  expect_error("input %x : float[2] extra\n", "unexpected text");
  expect_error("%y : float[?] = Op() {s=\"open}\n", "unterminated string");
  expect_error("output _\n", "an output cannot be absent");
}

}  // namespace
}  // namespace aotc
