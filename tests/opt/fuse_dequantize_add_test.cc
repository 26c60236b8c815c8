// fuse_dequantize_add: DequantizeLinear(a) + DequantizeLinear(b) [-> Relu] with a float result
// -> one dequantizing aotc.QLinearAdd. The fused node's reference must give the unfused graph's
// bytes (the unfused DequantizeLinear / Add / Relu references are the independent check) in
// float32, float16 and bfloat16, and the pass must not fire where the pattern does not hold.
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// a, b int8 (or uint8 for b) [2, 16, 6, 6] -> DequantizeLinear each (to `to`) -> Add [-> Relu].
std::string block(int to, bool relu, const std::string& b_type = "int8", const std::string& extra = "") {
  const std::string t = to == 10 ? "float16" : to == 16 ? "bfloat16" : "float";
  return R"(
    input %a : int8[2x16x6x6]
    input %b : )" + b_type + R"([2x16x6x6]
    const %sa : float[scalar] = [0.05]
    const %za : int8[scalar] = [3]
    const %sb : float[scalar] = [0.0371]
    const %zb : )" + b_type + R"([scalar] = [)" + (b_type == "uint8" ? "128" : "-7") + R"(]
    %da : )" + t + R"([?] = DequantizeLinear(%a, %sa, %za) {output_dtype=)" + std::to_string(to) + R"(}  # dqa
    %db : )" + t + R"([?] = DequantizeLinear(%b, %sb, %zb) {output_dtype=)" + std::to_string(to) + R"(}  # dqb
    %s : )" + t + R"([?] = Add(%da, %db)  # add
  )" + (relu ? "%y : " + t + "[?] = Relu(%s)  # relu\n    output %y\n" : "    output %s\n") + extra;
}

std::vector<Tensor> feed(uint64_t seed, DType b = DType::kInt8) {
  return {seeded_random_tensor(DType::kInt8, {2, 16, 6, 6}, seed, -128, 128),
          seeded_random_tensor(b, {2, 16, 6, 6}, seed + 100, b == DType::kUInt8 ? 0 : -128, b == DType::kUInt8 ? 256 : 128)};
}

TEST(FuseDequantizeAdd, OneNodeWithTheUnfusedBytesInEachFloatType) {
  for (int to : {1, 10, 16})
    for (bool relu : {false, true})
      for (const std::string b_type : {"int8", "uint8"}) {
        SCOPED_TRACE("to " + std::to_string(to) + (relu ? " relu " : " ") + b_type);
        AOTC_BUILD(g, block(to, relu, b_type));
        const Graph before = g;
        auto changed = fuse_dequantize_add(g);
        ASSERT_TRUE(changed.is_ok()) << changed.status().message();
        EXPECT_TRUE(*changed);
        EXPECT_EQ(op_list(g), "aotc.QLinearAdd");
        EXPECT_EQ(g.nodes[0].attr_int("relu", -1), relu ? 1 : 0);
        EXPECT_EQ(g.nodes[0].attr_int("to", -1), to);
        EXPECT_EQ(g.value(g.outputs[0]).dtype, static_cast<DType>(to));
        EXPECT_TRUE(verify(g).is_ok());
        for (uint64_t seed = 1; seed < 4; ++seed)
          testing_util::expect_same_bytes(before, g, feed(seed, b_type == "uint8" ? DType::kUInt8 : DType::kInt8),
                                          "seed " + std::to_string(seed));
      }
}

TEST(FuseDequantizeAdd, MustNotFire) {
  const auto unchanged = [](const std::string& text, const std::string& what) {
    SCOPED_TRACE(what);
    auto g = testing_util::build(text);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    const std::string ops = op_list(*g);
    auto changed = fuse_dequantize_add(*g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_FALSE(*changed);
    EXPECT_EQ(op_list(*g), ops);
  };
  // A dequantized operand is also a graph output.
  unchanged(block(10, false, "int8", "    output %da\n"), "operand read elsewhere");
  // Per-axis scale on one operand.
  unchanged(R"(
    input %a : int8[2x16x6x6]
    input %b : int8[2x16x6x6]
    const %sa : float[16] = random(1, 0.01, 0.1)
    const %sb : float[scalar] = [0.04]
    %da : float[?] = DequantizeLinear(%a, %sa) {axis=1}
    %db : float[?] = DequantizeLinear(%b, %sb)
    %s : float[?] = Add(%da, %db)
    output %s
  )", "per-axis scale");
  // A scale that is a graph input.
  unchanged(R"(
    input %a : int8[2x16x6x6]
    input %b : int8[2x16x6x6]
    input %sa : float[scalar]
    const %sb : float[scalar] = [0.04]
    %da : float[?] = DequantizeLinear(%a, %sa)
    %db : float[?] = DequantizeLinear(%b, %sb)
    %s : float[?] = Add(%da, %db)
    output %s
  )", "runtime scale");
  // Broadcasting: b is per channel.
  unchanged(R"(
    input %a : int8[2x16x6x6]
    input %b : int8[1x16x1x1]
    const %sa : float[scalar] = [0.05]
    const %sb : float[scalar] = [0.04]
    %da : float[?] = DequantizeLinear(%a, %sa)
    %db : float[?] = DequantizeLinear(%b, %sb)
    %s : float[?] = Add(%da, %db)
    output %s
  )", "broadcast");
  // One operand is not dequantized.
  unchanged(R"(
    input %a : int8[2x16x6x6]
    input %f : float[2x16x6x6]
    const %sa : float[scalar] = [0.05]
    %da : float[?] = DequantizeLinear(%a, %sa)
    %s : float[?] = Add(%da, %f)
    output %s
  )", "float operand");
}

// The Add's result also a graph output: the Add fuses, its Relu stays a node of its own.
TEST(FuseDequantizeAdd, ReluStaysWhenTheSumIsAlsoAnOutput) {
  AOTC_BUILD(g, block(1, true, "int8", "    output %s\n"));
  const Graph before = g;
  auto changed = fuse_dequantize_add(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(op_list(g), "aotc.QLinearAdd,Relu");
  EXPECT_EQ(g.nodes[0].attr_int("relu", -1), 0);
  testing_util::expect_same_bytes(before, g, feed(7), "seed 7");
}

// Bad attributes of the dequantizing form are refused by shape inference with a reason.
TEST(FuseDequantizeAdd, DequantizingFormValidation) {
  for (const auto& [attrs, reason] : std::vector<std::pair<std::string, std::string>>{
           {"{to=6}", "attribute to"}, {"{relu=2}", "attribute relu"}}) {
    auto g = testing_util::build(R"(
      input %a : int8[4]
      input %b : int8[4]
      const %s : float[scalar] = [0.05]
      %y : float[?] = aotc.QLinearAdd(%a, %s, _, %b, %s) )" + attrs + R"(
      output %y
    )");
    ASSERT_FALSE(g.is_ok()) << attrs;
    EXPECT_NE(g.status().message().find(reason), std::string::npos) << g.status().message();
  }
}

}  // namespace
}  // namespace aotc
