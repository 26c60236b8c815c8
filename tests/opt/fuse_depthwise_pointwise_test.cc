// fuse_depthwise_pointwise: a channels_last depthwise conv read only by a pointwise conv becomes one
// aotc.DepthwisePointwise node; checked against the CPU reference of the graph before the passes
// (bit for bit: the fused reference rounds the depthwise output to the storage type, as the
// stored tensor was), the node's contents, the kernel-shape rule, and where it must not fire.
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/conv_dw_pw.h"
#include "ir/ops/epilogue.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

struct Block {
  std::string dtype = "float16";
  int64_t c = 48, co = 24;  // depthwise channels, pointwise outputs
  int64_t h = 9, w = 11;    // the input's
  int64_t stride = 1;       // the depthwise conv's
  bool residual = true;     // Add(x, projection): needs co = 24 and stride 1
  std::string pw_extra;     // attributes of the pointwise conv
  std::string pw_kernel = "1x1";
  int64_t dw_group = -1;  // -1: c (depthwise)
  bool mid_output = false;  // the depthwise output is a graph output too
  bool mid_residual = false;  // Add(projection, depthwise output): the projection reads it twice
};

// MobileNetV2's inverted residual: x [2, 24, 9, 11] -> expand 1x1 (C) + ReLU6 -> depthwise 3x3 (stride S)
// + ReLU6 -> project 1x1 (CO) + bias [-> + x].
std::string block(const Block& b) {
  const std::string t = b.dtype, c = std::to_string(b.c), co = std::to_string(b.co);
  const int64_t group = b.dw_group < 0 ? b.c : b.dw_group;
  const std::string dw_cin = std::to_string(b.c / group);
  std::string s = R"(
    input %x : )" + t + "[2x24x" + std::to_string(b.h) + "x" + std::to_string(b.w) + R"(]
    const %w1 : )" + t + "[" + c + R"(x24x1x1] = random(1, -0.4, 0.4)
    const %b1 : )" + t + "[" + c + R"(] = random(2, -0.5, 1.5)
    const %z : )" + t + R"([scalar] = [0]
    const %six : )" + t + R"([scalar] = [1.5]
    const %w2 : )" + t + "[" + c + "x" + dw_cin + R"(x3x3] = random(3, -0.6, 0.6)
    const %b2 : )" + t + "[" + c + R"(] = random(4, -0.3, 0.3)
    const %w3 : )" + t + "[" + co + "x" + c + "x" + b.pw_kernel + R"(] = random(5, -0.3, 0.3)
    const %b3 : )" + t + "[" + co + R"(] = random(6, -0.5, 0.5)
    %e : )" + t + R"([?] = Conv(%x, %w1, %b1)  # expand
    %r : )" + t + R"([?] = Clip(%e, %z, %six)  # relu6
    %d : )" + t + R"([?] = Conv(%r, %w2, %b2) {group=)" + std::to_string(group) + ", pads=[1,1,1,1], strides=[" +
                  std::to_string(b.stride) + "," + std::to_string(b.stride) + R"(]}  # dw
    %dr : )" + t + R"([?] = Clip(%d, %z, %six)  # relu6b
    %p : )" + t + R"([?] = Conv(%dr, %w3, %b3) )" + b.pw_extra + R"(  # project
)";
  if (b.mid_residual) s += "    %y : " + t + "[?] = Add(%p, %dr)  # res\n    output %y\n";
  else if (b.residual) s += "    %y : " + t + "[?] = Add(%p, %x)  # res\n    output %y\n";
  else s += "    output %p\n";
  if (b.mid_output) s += "    output %dr\n";
  return s;
}

// The passes before this one; `mid` (when given) receives the graph as this pass finds it.
Expected<bool> passes(Graph& g, Graph* mid = nullptr) {
  for (auto pass : {fuse_epilogue, layout_nhwc, clip_into_depthwise}) {
    auto r = pass(g);
    if (!r) return r.status();
  }
  if (mid) *mid = g;
  return fuse_depthwise_pointwise(g);
}

const Node* fused_node(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op_type == "DepthwisePointwise" && n.domain == "aotc") return &n;
  return nullptr;
}

TEST(FuseDepthwisePointwise, InvertedResidualBlockIsOneNodeBitForBit) {
  AOTC_BUILD(g, block(Block{}));
  g.target = target_from_archs({"sm_90"});
  Graph before = g, mid;
  auto changed = passes(g, &mid);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  const Node* f = fused_node(g);
  ASSERT_NE(f, nullptr) << testing_util::op_list(g);
  // The expansion stays a FusedConv; the depthwise conv is gone.
  int convs = 0;
  for (const Node& n : g.nodes) convs += n.op_type == "FusedConv" ? 1 : 0;
  EXPECT_EQ(convs, 1) << testing_util::op_list(g);
  const Node dw = load_depthwise(*f), pw = pointwise_part(*f);
  EXPECT_EQ(dw.attr_int("group", 0), 48);
  EXPECT_EQ(dw.attr_float("input_max", 0), 1.5f);          // clip_into_depthwise's clamp, kept
  EXPECT_EQ(dw.attr_string("activation", ""), "Clip");     // its ReLU6
  EXPECT_FALSE(has_activation(pw));                         // the projection has none
  EXPECT_EQ(g.value(f->inputs[1]).shape, (Shape{3, 3, 48}));  // tap-major filter
  ASSERT_EQ(f->inputs.size(), 6u);
  EXPECT_NE(f->input(5), kNoValue);  // the residual
  EXPECT_EQ(g.value(f->outputs[0]).shape, (Shape{2, 9, 11, 24}));
  // Bit for bit against the graph this pass found; against the model (before fuse_epilogue
  // rounded the projection and the Add once instead of twice) within fp16's tolerance.
  EXPECT_TRUE(testing_util::same_outputs(mid, g, 17, 0.0, 0.0));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 17, 2.5e-3, 1e-3));
}

TEST(FuseDepthwisePointwise, StridedBf16AndAReluOnTheProjection) {
  Block b;
  b.dtype = "bfloat16";
  b.c = 40;  // C % 16 == 8: the kernel pads K to 48
  b.co = 56;
  b.stride = 2;
  b.residual = false;
  AOTC_BUILD(g, block(b) + "");
  g.target = target_from_archs({"sm_87"});
  // A Relu after the projection is fused into it and then into the node.
  std::string text = block(b);
  text.replace(text.find("    output %p\n"), 14, "    %q : bfloat16[?] = Relu(%p)  # act\n    output %q\n");
  AOTC_BUILD(h, text);
  h.target = target_from_archs({"sm_87"});
  for (Graph* graph : {&g, &h}) {
    Graph mid;
    auto changed = passes(*graph, &mid);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed);
    const Node* f = fused_node(*graph);
    ASSERT_NE(f, nullptr) << testing_util::op_list(*graph);
    EXPECT_EQ(load_depthwise(*f).attr_ints("strides", {}), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(graph->value(f->outputs[0]).shape, (Shape{2, 5, 6, 56}));
    EXPECT_EQ(has_activation(pointwise_part(*f)), graph == &h);
    EXPECT_TRUE(testing_util::same_outputs(mid, *graph, 5, 0.0, 0.0));
  }
}

TEST(FuseDepthwisePointwise, MustNotFire) {
  struct Case {
    const char* why;
    Block b;
    std::vector<std::string> archs = {"sm_90"};
  };
  Block fp32;
  fp32.dtype = "float";
  Block second_reader;
  second_reader.mid_output = true;
  Block strided_pw;
  strided_pw.residual = false;
  strided_pw.pw_extra = "{strides=[2,2]}";
  Block padded_pw;
  padded_pw.residual = false;
  padded_pw.pw_kernel = "3x3";
  padded_pw.pw_extra = "{pads=[1,1,1,1]}";
  Block grouped;  // two channels a group: not depthwise
  grouped.dw_group = 24;
  Block odd_channels;  // C = 12: not 16-byte channel vectors
  odd_channels.c = 12;
  Block odd_outputs;
  odd_outputs.co = 20;
  odd_outputs.residual = false;
  Block large;  // stride 1, P * C = 2 * 72 * 80 * 96 > 2^20: the depthwise tile kernel is faster
  large.c = 96;
  large.h = 72;
  large.w = 80;
  Block mid_residual;  // the projection's residual is the depthwise output itself (CO = C)
  mid_residual.co = 48;
  mid_residual.residual = false;
  mid_residual.mid_residual = true;
  Block wide;  // C 384 (slower fused, measured)
  wide.c = 384;
  wide.co = 64;
  wide.residual = false;
  const std::vector<Case> cases = {
      {"fp32", fp32},
      {"the depthwise output has another reader", second_reader},
      {"pointwise stride 2", strided_pw},
      {"the second conv is 3x3", padded_pw},
      {"grouped, not depthwise", grouped},
      {"C 12", odd_channels},
      {"CO 20", odd_outputs},
      {"C 384", wide},
      {"the projection also reads the depthwise output as its residual", mid_residual},
      {"large stride-1 pair", large},
      {"sm_75: no mma.sync bf16 / cp.async class", Block{}, {"sm_75"}},
  };
  for (const Case& c : cases) {
    AOTC_BUILD(g, block(c.b));
    g.target = target_from_archs(c.archs);
    auto changed = passes(g);
    ASSERT_TRUE(changed.is_ok()) << c.why << ": " << changed.status().message();
    EXPECT_FALSE(*changed) << c.why;
    EXPECT_EQ(fused_node(g), nullptr) << c.why;
  }
}

// The kernel-shape rule (ir/ops/conv_configs.h dw_pw_config / dw_pw_fuses) on MobileNetV2's
// pairs, counted by hand for 132 SMs.
TEST(FuseDepthwisePointwise, KernelShapeRule) {
  const Target t = target_from_archs({"sm_90"});
  auto problem = [](int64_t batch, int64_t oh, int64_t ow, int64_t stride) {
    return DwPwProblem{batch, oh, ow, 3, 3, stride, stride, 1, 1};
  };
  // features.1 at batch 1: 112 x 112 outputs, C 32 -> CO 16: one column tile of 16 (32 would be
  // half past CO); 8 x 8 tiles give 14 x 14 = 196 blocks, the largest tile that fills 132 SMs
  // (8 GEMM warps: 4 x 2). Shared memory: (64 + 16) rows of 40 halves + (10 x 10 + 9) x 32.
  auto a = dw_pw_config(t, DType::kFloat16, 32, 16, problem(1, 112, 112, 1));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->toh, 8);
  EXPECT_EQ(a->tow, 8);
  EXPECT_EQ(a->cob(), 16);
  EXPECT_EQ(a->gemm_warps(), 8);
  EXPECT_EQ(dw_pw_smem_bytes(*a, 32, problem(1, 112, 112, 1)), ((64 + 16) * 40 + (100 + 9) * 32) * 2);
  // 14 x 14, C 384 -> CO 64: COB 64; within 96 KB only 4 x 4 tiles fit ((16 + 64) x 392 + (36 +
  // 9) x 384 halves = 97280 bytes; 8 x 2 needs 100352): 16 blocks, none fills.
  auto m = dw_pw_config(t, DType::kFloat16, 384, 64, problem(1, 14, 14, 1));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->toh, 4);
  EXPECT_EQ(m->tow, 4);
  EXPECT_EQ(m->cob(), 64);
  // 7 x 7, C 960 -> CO 320: no column tile of 320 (COB is at most 256).
  EXPECT_FALSE(dw_pw_config(t, DType::kFloat16, 960, 320, problem(1, 7, 7, 1)).has_value());
  EXPECT_FALSE(dw_pw_config(t, DType::kFloat32, 32, 16, problem(1, 10, 10, 1)).has_value());
  EXPECT_FALSE(dw_pw_config(target_from_archs({"sm_75"}), DType::kFloat16, 32, 16, problem(1, 10, 10, 1)).has_value());
  // A 5 x 5 stride-2 pair with C 240 -> CO 80 needs more than 96 KB (COB 128: (16 + 128) x 248
  // halves + a window of 11 x 11 pixels): it takes the target's per-block limit instead (227 KB on
  // sm_90, 99 KB on sm_86: none fits there).
  const DwPwProblem p5{1, 14, 14, 5, 5, 2, 2, 1, 1};
  auto f = dw_pw_config(t, DType::kFloat16, 240, 80, p5);
  ASSERT_TRUE(f.has_value());
  EXPECT_GT(dw_pw_smem_bytes(*f, 240, p5), kDwPwMaxSmem);
  EXPECT_FALSE(dw_pw_config(target_from_archs({"sm_86"}), DType::kFloat16, 240, 80, p5).has_value());
  // Where it fuses: batch 1's pairs with C up to 256 (28 x 28 x 192 = 150528 elements); at batch
  // 32 a stride-1 pair is past 2^20 elements and stays apart, a strided one fuses with C 96
  // (features.2) but not with C 144; never C 384 (slower in one column tile too).
  EXPECT_TRUE(dw_pw_fuses(t, DType::kFloat16, 192, 32, problem(1, 28, 28, 1)));
  EXPECT_TRUE(dw_pw_fuses(t, DType::kFloat16, 192, 64, problem(1, 14, 14, 2)));
  EXPECT_FALSE(dw_pw_fuses(t, DType::kFloat16, 192, 32, problem(32, 28, 28, 1)));
  EXPECT_TRUE(dw_pw_fuses(t, DType::kFloat16, 96, 24, problem(32, 56, 56, 2)));
  EXPECT_FALSE(dw_pw_fuses(t, DType::kFloat16, 144, 32, problem(32, 28, 28, 2)));
  EXPECT_FALSE(dw_pw_fuses(t, DType::kFloat16, 384, 64, problem(1, 14, 14, 1)));
}

}  // namespace
}  // namespace aotc
