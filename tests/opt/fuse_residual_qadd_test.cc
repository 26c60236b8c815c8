// fuse_residual_qadd: the int8 residual Add absorbed into the epilogue of the requantizing
// convolution that produces one operand (--int8-fuse-residual on), on either int8 tensor-core
// kernel (the sm_90a wgmma one, the Sm80 one when r has the output's type). The reference of the fused node must agree bit for bit with the two nodes it
// replaces (the unfused graph is the independent check: aotc.QLinearAdd's reference on the
// convolution's own output), on int8 and on uint8 activations, with either operand order and a
// fused ReLU; and the pass must not fire where the kernel cannot take it.
#include "ir/ops/op_helpers.h"
#include "opt/passes.h"
#include "opt_test_util.h"
#include "templates/int8_requant.cuh"

namespace aotc {
namespace {

using testing_util::op_list;

// x float [8, 32, 34, 34] -> QuantizeLinear -> 3x3 conv (32 -> 64, ReLU clamp: the block's
// input h) -> 1x1 conv (64 -> 64, no clamp: t) -> QLinearAdd(t, h) with a ReLU -> DequantizeLinear.
// 9248 rows: the wgmma kernel's tiles fill a wave of 132 SMs. `swap`: QLinearAdd(h, t).
// `runtime_scale`: the Add's output scale is a graph input (not a compile-time argument).
// `out_uint8`: the Add's output at a uint8 zero point (another type than r: the Sm80 kernel refuses).
std::string block(int zp, bool swap, const std::string& extra_output = "", bool runtime_scale = false,
                  bool out_uint8 = false) {
  const std::string z = std::to_string(zp);
  const std::string out_zp = out_uint8 ? "%zu" : "%z";
  const std::string add_args = swap ? "%h, %s, %z, %t, %st, %z" : "%t, %st, %z, %h, %s, %z";
  const std::string add_scale = runtime_scale ? "%sx" : "%sa";
  return std::string(runtime_scale ? "input %sx : float[scalar]\n" : "") + R"(
    input %x : float[8x32x34x34]
    const %s : float[scalar] = [0.03]
    const %st : float[scalar] = [0.05]
    const %sa : float[scalar] = [0.04]
    const %z : int8[scalar] = [)" + z + R"(]
    const %zu : uint8[scalar] = [0]
    const %w1 : int8[64x32x3x3] = random(1, -127, 128)
    const %ws1 : float[64] = random(2, 0.001, 0.01)
    const %b1 : int32[64] = random(3, -300, 300)
    const %w2 : int8[64x64x1x1] = random(4, -127, 128)
    const %ws2 : float[64] = random(5, 0.001, 0.01)
    const %b2 : int32[64] = random(6, -300, 300)
    %xq : int8[?] = QuantizeLinear(%x, %s, %z)  # q
    %h : int8[?] = aotc.QLinearConv(%xq, %s, %z, %w1, %ws1, _, %s, %z, %b1) {pads=[1,1,1,1], qmin=)" + z + R"(}  # conv1
    %t : int8[?] = aotc.QLinearConv(%h, %s, %z, %w2, %ws2, _, %st, %z, %b2)  # conv2
    %a : int8[?] = aotc.QLinearAdd()" + add_args + ", " + add_scale + ", " + out_zp + R"() {qmin=)" + std::to_string(out_uint8 ? 2 : zp + 2) + R"(}  # add
    %y : float[?] = DequantizeLinear(%a, )" + add_scale + ", " + out_zp + R"()  # dq
    output %y
  )" + extra_output;
}

// The pipeline's order up to the pass: uint8 re-encoding, NHWC with the epilogue words.
Graph prepared(const std::string& text, const std::vector<std::string>& archs, bool uint8) {
  auto g = testing_util::build(text);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  g->target = target_from_archs(archs);
  g->target.conv_wgmma_int8 = true;     // --conv-wgmma-int8 on (the default)
  g->target.int8_fuse_residual = Int8FuseResidual::kOn;  // --int8-fuse-residual on (default auto: GEMM mode only)
  if (uint8) {
    EXPECT_TRUE(reencode_uint8(*g).is_ok());
  }
  auto laid = layout_nhwc(*g);
  EXPECT_TRUE(laid.is_ok()) << laid.status().message();
  return std::move(*g);
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op ? 1 : 0;
  return n;
}

void expect_same_outputs(const Graph& before, const Graph& after, int64_t seeds) {
  // Inputs past the int8 range of the scale: saturation in the quantization too.
  for (uint64_t seed = 31; seed < 31 + static_cast<uint64_t>(seeds); ++seed)
    testing_util::expect_same_bytes(before, after, {seeded_random_tensor(DType::kFloat32, {8, 32, 34, 34}, seed, -5, 5)},
                                    "seed " + std::to_string(seed));
}

struct Case {
  int zp;
  bool swap, uint8;
  bool sm80;  // a target list with sm_87: the Sm80 int8 kernel
};

class FuseResidualQadd : public ::testing::TestWithParam<Case> {};

TEST_P(FuseResidualQadd, FiresAndMatchesTheUnfusedGraphBitForBit) {
  AOTC_REQUIRE_OPS("QuantizeLinear", "DequantizeLinear", "aotc.QLinearConv", "aotc.QLinearAdd");
  const Case c = GetParam();
  Graph g = prepared(block(c.zp, c.swap), c.sm80 ? std::vector<std::string>{"sm_87", "sm_90"} : std::vector<std::string>{"sm_90"},
                     c.uint8);
  const Graph before = g;
  auto changed = fuse_residual_qadd(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(infer_shapes(g).is_ok());
  ASSERT_TRUE(verify(g).is_ok());
  EXPECT_EQ(count(g, "QLinearAdd"), 0);
  EXPECT_EQ(count(g, "QLinearConv"), 2);
  const Node* fused = nullptr;
  for (const Node& n : g.nodes)
    if (n.op_type == "QLinearConv" && n.inputs.size() > 10) fused = &n;
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->name, "conv2");
  // r is the block's input h: conv1's output.
  const std::vector<int> producers = g.producers();
  const int hp = producers[static_cast<size_t>(fused->inputs[10])];
  ASSERT_GE(hp, 0);
  EXPECT_EQ(g.nodes[static_cast<size_t>(hp)].name, "conv1");
  EXPECT_EQ(fused->attr_int("add_qmin", -1000), c.uint8 ? 2 : c.zp + 2);  // the Add's ReLU bound
  auto lowered = default_registry().find("QLinearConv", "aotc")->lower(*fused, g);
  ASSERT_TRUE(lowered.is_ok()) << lowered.status().message();
  EXPECT_EQ(lowered->steps[0].kernel.template_name, c.sm80 ? "cutlass_conv2d_fprop_i8" : "cutlass_conv2d_fprop_sm90_i8");
  // The Add's scalars as the kernels' params builders decode them (int8_requant.cuh): t is conv2's
  // output (scale st), r is h (scale s), the output's scale sa; the division's reciprocal where
  // it is proven exact for these scales and zero points (0: the IEEE division).
  const std::vector<int64_t>& args = lowered->steps[0].kernel.builder_args;
  ASSERT_EQ(args.size(), 18u + kAotcFusedAddArgs);
  std::vector<long long> words(args.begin() + 18, args.end());
  const aotc_fused_add_scalars add = aotc_fused_add_unpack(words.data());
  EXPECT_EQ(add.t_scale, 0.05f);
  EXPECT_EQ(add.r_scale, 0.03f);
  EXPECT_EQ(add.out_scale, 0.04f);
  EXPECT_EQ(add.t_zp, add.r_zp);  // one zero point z in the graph (re-encoded alike for uint8)
  EXPECT_EQ(add.add_qmin, fused->attr_int("add_qmin", -1000));
  EXPECT_EQ(add.add_qmax, fused->attr_int("add_qmax", -1000));
  const DType t8 = c.uint8 ? DType::kUInt8 : DType::kInt8;
  const auto proven = qlinear_add_exact_reciprocal(0.05f, add.t_zp, 0.03f, add.r_zp, 0.04f, t8, t8);
  EXPECT_EQ(add.rcp, proven.value_or(0.0f));
  if (proven) {
    EXPECT_EQ(*proven, 1.0f / 0.04f);
  }
  std::string add_reciprocal = "(none)";
  for (const auto& [name, value] : lowered->steps[0].kernel.holes)
    if (name == "ADD_RECIPROCAL") add_reciprocal = value;
  EXPECT_EQ(add_reciprocal, proven ? "true" : "false");
  EXPECT_EQ(lowered->steps[0].kernel.args[3], fused->inputs[10]);
  expect_same_outputs(before, g, 2);
}

INSTANTIATE_TEST_SUITE_P(Cases, FuseResidualQadd,
                         ::testing::Values(Case{0, false, false, false}, Case{0, true, false, false},
                                           Case{-128, false, true, false}, Case{-128, true, true, false},
                                           Case{0, false, false, true}, Case{-128, true, true, true}));

TEST(FuseResidualQaddRefusals, MustNotFireWhereNoKernelTakesIt) {
  AOTC_REQUIRE_OPS("QuantizeLinear", "DequantizeLinear", "aotc.QLinearConv", "aotc.QLinearAdd");
  auto unchanged = [](Graph g, const std::string& why) {
    const size_t nodes = g.nodes.size();
    auto changed = fuse_residual_qadd(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_FALSE(*changed) << why;
    EXPECT_EQ(g.nodes.size(), nodes) << why;
  };
  // The Sm80 kernel reads r as its epilogue source, of the output's type: an Add writing uint8 from
  // an int8 r stays (the wgmma kernel, on an sm_90-only target, takes it).
  unchanged(prepared(block(0, false, "", false, true), {"sm_87", "sm_90"}, false), "Sm80, r of another type");
  // Off by default.
  Graph plain = prepared(block(0, false), {"sm_90"}, false);
  plain.target.int8_fuse_residual = Int8FuseResidual::kOff;
  unchanged(plain, "--int8-fuse-residual off");
  // t read by another node too (a graph output: its DequantizeLinear).
  unchanged(prepared(block(0, false, "%tq : float[?] = DequantizeLinear(%t, %st, %z)  # dqt\noutput %tq\n"), {"sm_90"}, false),
            "t has a second reader");
  // The Add's output scale computed at run time (not a compile-time argument).
  unchanged(prepared(block(0, false, "", true), {"sm_90"}, false), "run-time scale");
  // The wgmma kernel off, r of another type: the Sm80 kernel cannot take it either.
  Graph off = prepared(block(0, false, "", false, true), {"sm_90"}, false);
  off.target.conv_wgmma_int8 = false;
  unchanged(off, "wgmma off, r of another type");
}

// A fused node whose r has another type than its output, lowered for a target where only the Sm80
// kernel runs, is an error, not a silent drop of the Add.
TEST(FuseResidualQaddRefusals, LoweringRefusesWhatTheSm80KernelCannotRead) {
  AOTC_REQUIRE_OPS("QuantizeLinear", "DequantizeLinear", "aotc.QLinearConv", "aotc.QLinearAdd");
  Graph g = prepared(block(0, false, "", false, true), {"sm_90"}, false);
  auto changed = fuse_residual_qadd(g);
  ASSERT_TRUE(changed.is_ok() && *changed);
  g.target = target_from_archs({"sm_87", "sm_90"});
  int fused = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type != "QLinearConv" || n.inputs.size() <= 10) continue;
    ++fused;
    auto lowered = default_registry().find("QLinearConv", "aotc")->lower(n, g);
    ASSERT_FALSE(lowered.is_ok());
    EXPECT_NE(lowered.status().message().find("needs r of the output's type"), std::string::npos);
  }
  EXPECT_EQ(fused, 1);
}

}  // namespace
}  // namespace aotc
