// reencode_uint8: int8 values with zero point -128 that every producer and reader agrees on become
// uint8 with zero point 0 (the same bytes, top bit flipped). The CPU reference before and after
// must agree bit for bit (every op computes q - zp and saturates to its type's range), the fused
// ReLU bound moves with the zero point, and where one participant disagrees nothing changes.
#include <algorithm>

#include "opt/passes.h"
#include "opt/pipeline.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// QuantizeLinear -> conv (ReLU clamp) -> MaxPool -> conv -> residual QLinearAdd (ReLU) ->
// DequantizeLinear, every activation at zero point -128 as ONNX Runtime writes a ReLU output.
constexpr const char* kChain = R"(
    input %x : float[2x8x6x6]
    const %s : float[scalar] = [0.03]
    const %z : int8[scalar] = [-128]
    const %w1 : int8[8x8x3x3] = random(1, -127, 128)
    const %ws1 : float[8] = random(2, 0.001, 0.01)
    const %b1 : int32[8] = random(3, -300, 300)
    const %w2 : int8[8x8x1x1] = random(4, -127, 128)
    const %ws2 : float[8] = random(5, 0.001, 0.01)
    %xq : int8[?] = QuantizeLinear(%x, %s, %z)  # q
    %c1 : int8[?] = aotc.QLinearConv(%xq, %s, %z, %w1, %ws1, _, %s, %z, %b1) {pads=[1,1,1,1], qmin=-128}  # conv1
    %p : int8[?] = MaxPool(%c1) {kernel_shape=[2,2], strides=[1,1]}  # pool
    %c2 : int8[?] = aotc.QLinearConv(%p, %s, %z, %w2, %ws2, _, %s, %z)  # conv2
    %a : int8[?] = aotc.QLinearAdd(%c2, %s, %z, %p, %s, %z, %s, %z) {qmin=-100}  # add
    %y : float[?] = DequantizeLinear(%a, %s, %z)  # dq
    output %y
)";

TEST(ReencodeUint8, ZeroPointMinus128ChainBecomesUint8BitExactly) {
  AOTC_REQUIRE_OPS("QuantizeLinear", "DequantizeLinear", "MaxPool", "aotc.QLinearConv", "aotc.QLinearAdd");
  AOTC_BUILD(g, kChain);
  Graph before = g;
  auto changed = reencode_uint8(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(op_list(g), op_list(before));
  for (const char* v : {"xq", "c1", "p", "c2", "a"}) EXPECT_EQ(g.value(g.find_value(v)).dtype, DType::kUInt8) << v;
  for (const Node& n : g.nodes) {
    for (size_t i : {size_t{2}, size_t{5}, size_t{7}}) {
      const ValueId z = n.input(i);
      if (z == kNoValue || n.op_type == "MaxPool" || (i != 2 && n.op_type != "QLinearConv" && n.op_type != "QLinearAdd")) continue;
      if (n.op_type == "QLinearConv" && i == 5) continue;  // the weight's zero point (absent here)
      EXPECT_EQ(g.value(z).dtype, DType::kUInt8) << n.name << " input " << i;
      EXPECT_EQ(g.value(z).constant->get_int(0), 0) << n.name << " input " << i;
    }
  }
  EXPECT_EQ(g.nodes[1].attr_int("qmin", -1), 0);     // the ReLU: Q(0) is now 0
  EXPECT_EQ(g.nodes[4].attr_int("qmin", -1), 28);    // -100 + 128
  EXPECT_EQ(g.value(g.find_value("z")).dtype, DType::kInt8);  // the shared constant is untouched
  for (uint64_t seed : {21u, 22u, 23u}) {
    testing_util::expect_same_bytes(before, g, {seeded_random_tensor(DType::kFloat32, {2, 8, 6, 6}, seed, -3, 4)},
                                    "seed " + std::to_string(seed));
  }
}

TEST(ReencodeUint8, MustNotFireWhereAParticipantDisagrees) {
  AOTC_REQUIRE_OPS("QuantizeLinear", "DequantizeLinear", "MaxPool", "aotc.QLinearConv");
  // (1) a reader with another zero point; (2) the value is a graph output; (3) a MaxPool whose
  // output is read at zero point -127, so its input cannot change either; (4) zero point 0 already.
  AOTC_BUILD(g, R"(
    input %x : float[1x8x4x4]
    const %s : float[scalar] = [0.05]
    const %z : int8[scalar] = [-128]
    const %z127 : int8[scalar] = [-127]
    const %z0 : int8[scalar] = [0]
    const %w : int8[8x8x1x1] = random(1, -127, 128)
    const %ws : float[8] = random(2, 0.001, 0.01)
    %q1 : int8[?] = QuantizeLinear(%x, %s, %z)  # q1
    %d1 : float[?] = DequantizeLinear(%q1, %s, %z127)  # d1
    %q2 : int8[?] = QuantizeLinear(%x, %s, %z)  # q2
    %q3 : int8[?] = QuantizeLinear(%x, %s, %z)  # q3
    %p3 : int8[?] = MaxPool(%q3) {kernel_shape=[2,2]}  # pool3
    %d3 : float[?] = DequantizeLinear(%p3, %s, %z127)  # d3
    %q4 : int8[?] = QuantizeLinear(%x, %s, %z0)  # q4
    %c4 : float[?] = aotc.QLinearConv(%q4, %s, %z0, %w, %ws)  # conv4
    output %d1
    output %q2
    output %d3
    output %c4
  )");
  Graph before = g;
  auto changed = reencode_uint8(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_FALSE(*changed);
  for (size_t i = 0; i < g.values.size(); ++i) EXPECT_EQ(g.values[i].dtype, before.values[i].dtype) << g.values[i].name;
}

TEST(ReencodeUint8, RunsInThePipelineBeforeTheLayoutPass) {
  std::vector<std::string> names;
  for (const Pass& p : default_pipeline()) names.push_back(p.name);
  auto at = [&](const char* n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  EXPECT_LT(at("fuse_qdq"), at("reencode_uint8"));
  EXPECT_LT(at("reencode_uint8"), at("layout_nhwc"));
}

}  // namespace
}  // namespace aotc
