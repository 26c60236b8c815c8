// fuse_pointwise_pair: ResNet's block output (conv3 + residual + ReLU) and the next block's conv1
// (1x1 + ReLU), both channels_last pointwise convs, become one aotc.PointwisePair node with both
// outputs; checked against the CPU reference of the graph this pass found (bit for bit: the
// pair's reference rounds the first output to the storage type, as the stored tensor was), the
// node's contents, its kernel step (shape and shared memory counted by hand), the lowering as two
// convolutions where the kernel's rule does not apply, and where it must not fire.
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/conv_configs.h"
#include "ir/ops/epilogue.h"
#include "ir/ops/op_helpers.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

struct Tail {
  std::string dtype = "float16";
  int64_t batch = 1, hw = 14;
  int64_t k1 = 256, n1 = 1024, n2 = 256;  // conv3 in -> block out -> conv1 out
  bool residual = true;
  std::string conv1_attrs;          // e.g. "{strides=[2,2]}"
  std::string conv1_kernel = "1x1";
  bool conv1_residual = false;      // Add(conv1, a [n2] graph input) after conv1
  bool conv1_weight_input = false;  // conv1's filter is a graph input
};

// h (block i's 3x3 output) -> conv3 (+ s) -> ReLU = o (block i's output) -> conv1 -> ReLU = h1;
// o is read again by block i+1's conv3 as its residual (Add(c2, o)).
std::string tail(const Tail& t) {
  const std::string ty = t.dtype, b = std::to_string(t.batch), hw = std::to_string(t.hw);
  const std::string k1 = std::to_string(t.k1), n1 = std::to_string(t.n1), n2 = std::to_string(t.n2);
  const std::string img = "x" + hw + "x" + hw + "]";
  std::string s = "input %h : " + ty + "[" + b + "x" + k1 + img + "\n";
  if (t.residual) s += "input %s : " + ty + "[" + b + "x" + n1 + img + "\n";
  if (t.conv1_residual) s += "input %q : " + ty + "[" + b + "x" + n2 + img + "\n";
  s += "const %w3 : " + ty + "[" + n1 + "x" + k1 + "x1x1] = random(1, -0.08, 0.08)\n";
  s += "const %b3 : " + ty + "[" + n1 + "] = random(2, -0.5, 0.5)\n";
  if (t.conv1_weight_input) s += "input %w1 : " + ty + "[" + n2 + "x" + n1 + "x" + t.conv1_kernel + "]\n";
  else s += "const %w1 : " + ty + "[" + n2 + "x" + n1 + "x" + t.conv1_kernel + "] = random(3, -0.05, 0.05)\n";
  s += "const %b1 : " + ty + "[" + n2 + "] = random(4, -0.5, 0.5)\n";
  s += "const %w2 : " + ty + "[" + n1 + "x" + n2 + "x1x1] = random(5, -0.08, 0.08)\n";
  s += " %c3 : " + ty + "[?] = Conv(%h, %w3, %b3)  # conv3\n";
  if (t.residual) {
    s += " %a : " + ty + "[?] = Add(%c3, %s)  # add\n %o : " + ty + "[?] = Relu(%a)  # out\n";
  } else {
    s += " %o : " + ty + "[?] = Relu(%c3)  # out\n";
  }
  s += " %c1 : " + ty + "[?] = Conv(%o, %w1, %b1) " + t.conv1_attrs + " # conv1\n";
  std::string c1 = "%c1";
  if (t.conv1_residual) {
    s += " %c1q : " + ty + "[?] = Add(%c1, %q)  # conv1_add\n";
    c1 = "%c1q";
  }
  s += " %h1 : " + ty + "[?] = Relu(" + c1 + ")  # relu1\n output %h1\n";
  if (t.conv1_attrs.empty() && t.conv1_kernel == "1x1") {
    s += " %c2 : " + ty + "[?] = Conv(%h1, %w2)  # next_conv3\n %z : " + ty + "[?] = Add(%c2, %o)  # next_add\n output %z\n";
  } else {
    s += " output %o\n";
  }
  return s;
}

// The passes before this one; `mid` (when given) receives the graph as this pass finds it.
Expected<bool> passes(Graph& g, Graph* mid = nullptr) {
  for (auto pass : {fuse_epilogue, layout_nhwc}) {
    auto r = pass(g);
    if (!r) return r.status();
  }
  if (mid) *mid = g;
  return fuse_pointwise_pair(g);
}

const Node* pair_node(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op_type == "PointwisePair" && n.domain == "aotc") return &n;
  return nullptr;
}

std::map<std::string, std::string> holes_of(const KernelStep& k) { return {k.holes.begin(), k.holes.end()}; }

TEST(FusePointwisePair, ResNetBlockBoundaryIsOneNodeBitForBit) {
  AOTC_BUILD(g, tail(Tail{}));
  g.target = target_from_archs({"sm_90"});
  g.target.conv_pw_pair = true;  // --conv-pw-pair on (off by default)
  Graph before = g, mid;
  auto changed = passes(g, &mid);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  const Node* p = pair_node(g);
  ASSERT_NE(p, nullptr) << testing_util::op_list(g);
  // conv3 and conv1 are one node; the next block's conv3 (residual o) stays a FusedConv.
  int convs = 0;
  for (const Node& n : g.nodes) convs += n.op_type == "FusedConv" ? 1 : 0;
  EXPECT_EQ(convs, 1) << testing_util::op_list(g);
  ASSERT_EQ(p->inputs.size(), 6u);
  ASSERT_EQ(p->outputs.size(), 2u);
  EXPECT_NE(p->input(3), kNoValue);  // conv3's residual
  EXPECT_EQ(g.value(p->outputs[0]).shape, (Shape{1, 14, 14, 1024}));
  EXPECT_EQ(g.value(p->outputs[1]).shape, (Shape{1, 14, 14, 256}));
  EXPECT_EQ(load_activation(*p).op_type, "Relu");
  EXPECT_EQ(load_activation(load_next(*p)).op_type, "Relu");
  // The block output is still read by the next conv3 as its residual.
  bool read_again = false;
  for (const Node& n : g.nodes) read_again |= n.op_type == "FusedConv" && n.input(3) == p->outputs[0];
  EXPECT_TRUE(read_again);
  EXPECT_TRUE(testing_util::same_outputs(mid, g, 11, 0.0, 0.0));
  EXPECT_TRUE(testing_util::same_outputs(before, g, 11, 4e-3, 2e-3));

  // One kernel: M = 196 rows in 7 tiles of 32, clusters of 16 (64 columns of Y1 a CTA, the K
  // range of its 32 x 256 partial product); shared memory: X and W1 rows (32 + 64) x 264 halves,
  // R's 32 x 64 block, the Y1 block and W2's columns (32 + 256) x 72 halves, the fp32 partial
  // product 32 x 260 and 16 KB of K-split sums.
  auto l = default_registry().find("PointwisePair", "aotc")->lower(*p, g);
  ASSERT_TRUE(l.is_ok()) << l.status().message();
  ASSERT_EQ(l->steps.size(), 1u);
  ASSERT_EQ(l->steps[0].kind, LoweredStep::Kind::kKernel);
  const KernelStep& k = l->steps[0].kernel;
  EXPECT_EQ(k.template_name, "conv_pw_pair_nhwc");
  EXPECT_EQ(k.grid.x, 16);
  EXPECT_EQ(k.grid.y, 7);
  EXPECT_EQ(k.block.x, 256);
  EXPECT_EQ(k.cluster_size, 16);
  EXPECT_EQ(k.shared_bytes, 2 * ((32 + 64) * 264 + 32 * 64 + (32 + 256) * 72) + 4 * 32 * 260 + 16384);
  auto h = holes_of(k);
  EXPECT_EQ(h["BM"], int_literal(32));
  EXPECT_EQ(h["CS"], int_literal(16));
  EXPECT_EQ(h["HAS_RES"], "1");
  EXPECT_EQ(k.args.size(), 8u);

  // Where the rule has no configuration (a GPU of 8 SMs: 7 x 16 CTAs would not fit), the node
  // lowers as the two convolutions would: two cuBLASLt GEMMs.
  Graph small = g;
  small.target.sm_count = 8;
  auto two = default_registry().find("PointwisePair", "aotc")->lower(*pair_node(small), small);
  ASSERT_TRUE(two.is_ok()) << two.status().message();
  ASSERT_EQ(two->steps.size(), 2u);
  EXPECT_EQ(two->steps[0].kind, LoweredStep::Kind::kMatmul);
  EXPECT_EQ(two->steps[1].kind, LoweredStep::Kind::kMatmul);
}

// ResNet-50's layer-2 shape at batch 1 in bf16 without a residual: 784 rows, K1 128, N1 512, N2
// 128 -> clusters of 8 (16 x 8 or 16 x 16 CTAs would pass 132 SMs) over 13 tiles of 64 rows.
TEST(FusePointwisePair, Layer2ShapeBf16NoResidual) {
  Tail t;
  t.dtype = "bfloat16";
  t.hw = 28;
  t.k1 = 128;
  t.n1 = 512;
  t.n2 = 128;
  t.residual = false;
  AOTC_BUILD(g, tail(t));
  g.target = target_from_archs({"sm_90"});
  g.target.conv_pw_pair = true;  // --conv-pw-pair on (off by default)
  Graph mid;
  auto changed = passes(g, &mid);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed) << testing_util::op_list(mid);
  const Node* p = pair_node(g);
  ASSERT_NE(p, nullptr) << testing_util::op_list(g);
  EXPECT_EQ(p->input(3), kNoValue);
  EXPECT_TRUE(testing_util::same_outputs(mid, g, 5, 0.0, 0.0));
  auto l = default_registry().find("PointwisePair", "aotc")->lower(*p, g);
  ASSERT_TRUE(l.is_ok()) << l.status().message();
  ASSERT_EQ(l->steps.size(), 1u);
  const KernelStep& k = l->steps[0].kernel;
  EXPECT_EQ(k.grid.x, 8);
  EXPECT_EQ(k.grid.y, 13);
  EXPECT_EQ(k.cluster_size, 8);
  EXPECT_EQ(k.shared_bytes, 2 * ((64 + 64) * 136 + 64 * 64 + (64 + 128) * 72) + 4 * 64 * 132 + 16384);
  EXPECT_EQ(holes_of(k)["T"], "__nv_bfloat16");
}

TEST(FusePointwisePair, MustNotFire) {
  struct Case {
    const char* why;
    Tail t;
    std::vector<std::string> archs = {"sm_90"};
  };
  std::vector<Case> cases;
  Tail fp32;
  fp32.dtype = "float";
  cases.push_back({"fp32", fp32});
  cases.push_back({"Jetson's sm_87 in the target list (no clusters)", Tail{}, {"sm_90", "sm_87"}});
  Tail res1;
  res1.conv1_residual = true;
  cases.push_back({"conv1 with a residual", res1});
  Tail k3;
  k3.conv1_kernel = "3x3";
  k3.conv1_attrs = "{pads=[1,1,1,1]}";
  cases.push_back({"conv1 a 3x3", k3});
  Tail s2;
  s2.conv1_attrs = "{strides=[2,2]}";
  cases.push_back({"conv1 strided", s2});
  Tail big;
  big.batch = 8;  // M = 1568: no cluster configuration within one wave and the shared memory
  cases.push_back({"batch 8", big});
  Tail dyn;
  dyn.conv1_weight_input = true;
  cases.push_back({"conv1's filter a graph input", dyn});
  cases.push_back({"--conv-pw-pair off (the default)", Tail{}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    AOTC_BUILD(g, tail(c.t));
    g.target = target_from_archs(c.archs);
    g.target.conv_pw_pair = std::string(c.why) != "--conv-pw-pair off (the default)";
    auto changed = passes(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_FALSE(*changed) << testing_util::op_list(g);
    EXPECT_EQ(pair_node(g), nullptr);
  }
  // The positive control of the list: the default tail on sm_90 fires.
  AOTC_BUILD(g, tail(Tail{}));
  g.target = target_from_archs({"sm_90"});
  g.target.conv_pw_pair = true;  // --conv-pw-pair on (off by default)
  auto changed = passes(g);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_TRUE(*changed);
}

}  // namespace
}  // namespace aotc
