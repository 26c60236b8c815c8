// merge_projection_shortcut: ResNet's first bottleneck (conv3(h) + a 1x1 projection of the block
// input, ReLU) becomes Concat(h, x) + one 1x1 conv with the filters concatenated along C and the
// biases summed; the CPU reference of the rewritten graph matches the original (fp32 tightly;
// fp16 within the rounding the residual no longer goes through), and the pass must not fire where
// it would move more bytes (K <= Ch + Cx), on a strided or padded projection, a projection with an
// activation or a second reader, or a 3x3 conv3. The merged conv runs as a cuBLASLt GEMM like any
// pointwise conv (tests/gpu: GpuConvFp16.MergedProjectionShortcut). merge_strided_projection: the
// same for a stride-2 projection through aotc.SubsampleConcat (and that op's reference and errors).
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

struct Block {
  std::string dtype = "float16";
  int64_t k = 64;                    // block output channels (conv3 and the projection)
  std::string proj_attrs;            // extra attributes of the projection
  std::string proj_act;              // e.g. "Relu": an activation on the projection's output
  std::string conv3_window = "1x1";  // conv3's window
  bool second_reader = false;        // the projection's output is also a graph output
  std::string x_hw = "6x5";          // the block input's spatial size
  int64_t stride = 1;                // conv1's and the projection's stride (ResNet layers 2-4: 2)
  std::string h_op;                  // e.g. "Abs": h = that op of relu1's output, not a conv's
};

std::string block_text(const Block& b) {
  const std::string t = b.dtype, k = std::to_string(b.k);
  const bool three = b.conv3_window == "3x3";
  std::string s = "input %x : " + t + "[2x16x" + b.x_hw + "]\n const %w1 : " + t + "[8x16x1x1] = random(1)\n const %b1 : " + t +
                  "[8] = random(2)\n const %w3 : " + t + "[" + k + "x8x" + b.conv3_window + "] = random(3)\n const %b3 : " + t +
                  "[" + k + "] = random(4)\n const %wd : " + t + "[" + k + "x16x1x1] = random(5)\n const %bd : " + t + "[" + k +
                  "] = random(6)\n";
  const std::string st = b.stride > 1 ? " {strides=[" + std::to_string(b.stride) + "," + std::to_string(b.stride) + "]}" : "";
  s += " %c1 : " + t + "[?] = Conv(%x, %w1, %b1)" + st + "  # conv1\n";
  if (b.h_op.empty()) {
    s += " %h : " + t + "[?] = Relu(%c1)  # relu1\n";
  } else {
    s += " %r1 : " + t + "[?] = Relu(%c1)  # relu1\n %h : " + t + "[?] = " + b.h_op + "(%r1)  # h_op\n";
  }
  s += " %c3 : " + t + "[?] = Conv(%h, %w3, %b3)" + (three ? " {pads=[1,1,1,1]}" : "") + "  # conv3\n";
  std::string proj = b.proj_attrs;
  if (b.stride > 1) proj += std::string(proj.empty() ? "" : ", ") + "strides=[" + std::to_string(b.stride) + "," + std::to_string(b.stride) + "]";
  s += " %d : " + t + "[?] = Conv(%x, %wd, %bd)" + (proj.empty() ? "" : " {" + proj + "}") + "  # downsample\n";
  std::string d = "%d";
  if (!b.proj_act.empty()) {
    s += " %da : " + t + "[?] = " + b.proj_act + "(%d)  # proj_act\n";
    d = "%da";
  }
  s += " %s : " + t + "[?] = Add(%c3, " + d + ")  # add\n %y : " + t + "[?] = Relu(%s)  # relu3\n output %y\n";
  if (b.second_reader) s += " output " + d + "\n";
  return s;
}

// As at a large batch: the projection's output exceeds what side_branches would run beside
// conv1 / conv2 (with auxiliary streams, a small projection is left alone; see MustNotFire).
Expected<bool> pipeline(Graph& g, bool large = true, bool strided = false) {
  if (large) g.target.aux_stream_max_bytes = 0;
  else g.target.aux_streams = 1;
  auto e = fuse_epilogue(g);
  if (!e) return e;
  auto l = layout_nhwc(g);
  if (!l) return l;
  return strided ? merge_strided_projection(g) : merge_projection_shortcut(g);
}

TEST(MergeProjectionShortcut, BottleneckProjectionBecomesOneConvOverAConcat) {
  for (const char* dtype : {"float", "float16"}) {
    SCOPED_TRACE(dtype);
    Block b;
    b.dtype = dtype;
    AOTC_BUILD(g, block_text(b));
    Graph before = g;
    auto changed = pipeline(g);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_TRUE(*changed);
    ASSERT_TRUE(verify(g).is_ok());
    int convs = 0, concats = 0;
    for (const Node& n : g.nodes) {
      convs += n.op_type == "Conv" || n.op_type == "FusedConv";
      if (n.op_type != "Concat") continue;
      ++concats;
      EXPECT_EQ(n.attr_int("axis", 0), 3);
      EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{2, 6, 5, 8 + 16}));
    }
    EXPECT_EQ(convs, 2) << op_list(g);
    EXPECT_EQ(concats, 1) << op_list(g);
    for (const Node& n : g.nodes) {
      if (n.op_type != "FusedConv" || g.value(n.inputs[0]).shape[3] != 24) continue;
      EXPECT_EQ(g.value(n.input(1)).shape, (Shape{64, 1, 1, 24}));
      EXPECT_TRUE(n.inputs.size() <= 3 || n.inputs[3] == kNoValue);
    }
    // The Concat's slabs (arena values, 8 / 16 channels) lower to 16-byte accesses.
    for (const Node& n : g.nodes) {
      if (n.op_type != "Concat") continue;
      auto l = default_registry().find("Concat", "")->lower(n, g);
      ASSERT_TRUE(l.is_ok()) << l.status().message();
      ASSERT_EQ(l->steps.size(), 2u);
      for (const LoweredStep& st : l->steps) {
        std::string vec;
        for (const auto& h : st.kernel.holes)
          if (h.first == "VEC") vec = h.second;
        EXPECT_EQ(vec, std::string(dtype) == "float" ? "4LL" : "8LL");
      }
    }
    const bool fp32 = std::string(dtype) == "float";
    EXPECT_TRUE(testing_util::same_outputs(before, g, 7, fp32 ? 1e-5 : 4e-3, fp32 ? 1e-5 : 4e-3));
  }
}

TEST(MergeProjectionShortcut, MustNotFire) {
  struct Case {
    std::string label;
    Block b;
  };
  std::vector<Case> cases;
  {
    Block b;
    b.k = 24;  // K = Ch + Cx: no bytes saved
    cases.push_back({"K <= Ch + Cx", b});
  }
  {
    Block b;
    b.proj_attrs = "strides=[2,2]";
    b.conv3_window = "1x1";
    cases.push_back({"strided projection (another pixel grid)", b});
  }
  {
    Block b;
    b.proj_act = "Relu";
    cases.push_back({"projection with an activation", b});
  }
  {
    Block b;
    b.second_reader = true;
    cases.push_back({"projection output also a graph output", b});
  }
  {
    Block b;
    b.conv3_window = "3x3";
    cases.push_back({"3x3 conv3", b});
  }
  cases.push_back({"small projection with auxiliary streams on (side_branches runs it beside)", Block{}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    std::string text = block_text(c.b);
    if (c.label.rfind("strided", 0) == 0) {
      // conv3 on the strided grid too: h from a stride-2 conv1.
      const std::string from = "Conv(%x, %w1, %b1)";
      text.replace(text.find(from), from.size(), "Conv(%x, %w1, %b1) {strides=[2,2]}");
    }
    AOTC_BUILD(g, text);
    auto changed = pipeline(g, c.label.rfind("small projection", 0) != 0);
    ASSERT_TRUE(changed.is_ok()) << changed.status().message();
    EXPECT_FALSE(*changed) << op_list(g);
    for (const Node& n : g.nodes) EXPECT_NE(n.op_type, "Concat");
  }
}

// ResNet's downsampling bottleneck (layers 2-4): conv1 and the projection stride 2, x on the finer
// grid. merge_strided_projection reads x at the stride through one aotc.SubsampleConcat (also
// checked where the stride does not divide x's size: ceil(11 / 2) = 6 rows), fires where the
// merged GEMM has at least one 128 x 128 tile per SM (M x K = 2 x 12 x 10 x 128 = 30720: one SM's
// worth, not two) or, below that, where h is a convolution's output, and leaves stride-1 blocks to
// merge_projection_shortcut and vice versa.
TEST(MergeStridedProjection, DownsamplingBlockBecomesOneConvOverASubsampleConcat) {
  for (const char* hw : {"24x20", "23x19"}) {
    for (const char* dtype : {"float", "float16"}) {
      SCOPED_TRACE(std::string(dtype) + " x " + hw);
      Block b;
      b.dtype = dtype;
      b.k = 128;
      b.x_hw = hw;
      b.stride = 2;
      AOTC_BUILD(g, block_text(b));
      g.target.sm_count = 1;
      Graph before = g;
      Graph stride1_pass = g;
      auto untouched = pipeline(stride1_pass, true, false);
      ASSERT_TRUE(untouched.is_ok()) << untouched.status().message();
      EXPECT_FALSE(*untouched) << "merge_projection_shortcut takes stride 1 only";
      auto changed = pipeline(g, true, true);
      ASSERT_TRUE(changed.is_ok()) << changed.status().message();
      EXPECT_TRUE(*changed);
      ASSERT_TRUE(verify(g).is_ok());
      int convs = 0, concats = 0;
      for (const Node& n : g.nodes) {
        convs += n.op_type == "Conv" || n.op_type == "FusedConv";
        EXPECT_NE(n.op_type, "Concat");
        if (n.op_type != "SubsampleConcat") continue;
        ++concats;
        EXPECT_EQ(n.domain, "aotc");
        EXPECT_EQ(n.attr_ints("steps"), (std::vector<int64_t>{1, 2}));
        EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{2, 12, 10, 8 + 16}));
        auto l = default_registry().find(n.op_type, n.domain)->lower(n, g);
        ASSERT_TRUE(l.is_ok()) << l.status().message();
        ASSERT_EQ(l->steps.size(), 2u);
      }
      EXPECT_EQ(convs, 2) << op_list(g);
      EXPECT_EQ(concats, 1) << op_list(g);
      const bool fp32 = std::string(dtype) == "float";
      EXPECT_TRUE(testing_util::same_outputs(before, g, 7, fp32 ? 1e-5 : 4e-3, fp32 ? 1e-5 : 4e-3));

      // Two SMs: 30720 < 2 x 16384, the GEMM would not fill them (batch 1): merged only because
      // h is a convolution's output (conv1 + relu1 fused), which concat_in_place lets write h
      // into the Concat's rows, so the copy of x's pixels replaces the projection's launch.
      AOTC_BUILD(small, block_text(b));
      small.target.sm_count = 2;
      Graph small_before = small;
      auto yes = pipeline(small, true, true);
      ASSERT_TRUE(yes.is_ok()) << yes.status().message();
      EXPECT_TRUE(*yes) << op_list(small);
      EXPECT_TRUE(testing_util::same_outputs(small_before, small, 7, fp32 ? 1e-5 : 4e-3, fp32 ? 1e-5 : 4e-3));
      // ... and left alone when h is not a convolution's output (an Abs after relu1: the copy
      // of h would be a launch more), though merged where the GEMM fills the GPU.
      Block abs_h = b;
      abs_h.h_op = "Abs";
      AOTC_BUILD(small_abs, block_text(abs_h));
      small_abs.target.sm_count = 2;
      auto no = pipeline(small_abs, true, true);
      ASSERT_TRUE(no.is_ok()) << no.status().message();
      EXPECT_FALSE(*no) << op_list(small_abs);
      AOTC_BUILD(large_abs, block_text(abs_h));
      large_abs.target.sm_count = 1;
      auto merged = pipeline(large_abs, true, true);
      ASSERT_TRUE(merged.is_ok()) << merged.status().message();
      EXPECT_TRUE(*merged) << op_list(large_abs);
    }
  }
  // Stride-1 blocks are merge_projection_shortcut's, unequal strides nobody's.
  Block one;
  one.k = 128;
  one.x_hw = "24x20";
  AOTC_BUILD(g1, block_text(one));
  g1.target.sm_count = 1;
  auto c1 = pipeline(g1, true, true);
  ASSERT_TRUE(c1.is_ok()) << c1.status().message();
  EXPECT_FALSE(*c1) << op_list(g1);
  std::string text = block_text(one);
  for (const char* conv : {"Conv(%x, %w1, %b1)", "Conv(%x, %wd, %bd)"}) {
    const size_t at = text.find(conv);
    text.replace(at, std::string(conv).size(), std::string(conv) + " {strides=[2,1]}");
  }
  AOTC_BUILD(g2, text);
  g2.target.sm_count = 1;
  auto c2 = pipeline(g2, true, true);
  ASSERT_TRUE(c2.is_ok()) << c2.status().message();
  EXPECT_FALSE(*c2) << op_list(g2);
}

// aotc.SubsampleConcat on its own: the CPU reference against a direct indexing of its definition,
// and the errors of malformed nodes.
TEST(SubsampleConcat, ReferenceAndErrors) {
  Graph g;
  const ValueId a = g.add_value("a", DType::kFloat32, {2, 3, 4, 5}, true);
  const ValueId b = g.add_value("b", DType::kFloat32, {2, 5, 7, 3}, true);
  Node n;
  n.name = "cat";
  n.op_type = "SubsampleConcat";
  n.domain = "aotc";
  n.inputs = {a, b};
  n.attrs["steps"] = Attribute::of_ints({1, 2});
  n.outputs = {g.add_value("y")};
  const OpDef* def = default_registry().find("SubsampleConcat", "aotc");
  ASSERT_NE(def, nullptr);
  ASSERT_TRUE(def->infer(n, g).is_ok());
  ASSERT_EQ(g.value(n.outputs[0]).shape, (Shape{2, 3, 4, 8}));
  Tensor ta(DType::kFloat32, {2, 3, 4, 5}), tb(DType::kFloat32, {2, 5, 7, 3});
  for (int64_t i = 0; i < ta.numel(); ++i) ta.set(i, static_cast<double>(i));
  for (int64_t i = 0; i < tb.numel(); ++i) tb.set(i, 1000.0 + static_cast<double>(i));
  std::vector<Tensor> out;
  out.emplace_back(DType::kFloat32, Shape{2, 3, 4, 8});
  ASSERT_TRUE(def->reference(n, {&ta, &tb}, out).is_ok());
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t q = 0; q < 4; ++q)
        for (int64_t c = 0; c < 8; ++c) {
          const double want = c < 5 ? ta.get(((s * 3 + p) * 4 + q) * 5 + c)
                                    : tb.get(((s * 5 + 2 * p) * 7 + 2 * q) * 3 + (c - 5));
          ASSERT_EQ(out[0].get(((s * 3 + p) * 4 + q) * 8 + c), want) << s << " " << p << " " << q << " " << c;
        }
  Node bad = n;
  bad.attrs["steps"] = Attribute::of_ints({1, 3});  // ceil(5 / 3) = 2 rows, not 3
  auto e = def->infer(bad, g);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.message().find("pixel grid"), std::string::npos) << e.message();
  bad.attrs["steps"] = Attribute::of_ints({1});
  e = def->infer(bad, g);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.message().find("'steps' has 1 entries for 2 inputs"), std::string::npos) << e.message();
  bad.attrs["steps"] = Attribute::of_ints({0, 2});
  EXPECT_FALSE(def->infer(bad, g).is_ok());
}

}  // namespace
}  // namespace aotc
