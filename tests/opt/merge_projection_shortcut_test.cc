// merge_projection_shortcut: ResNet's first bottleneck (conv3(h) + a 1x1 projection of the block
// input, ReLU) becomes Concat(h, x) + one 1x1 conv with the filters concatenated along C and the
// biases summed; the CPU reference of the rewritten graph matches the original (fp32 tightly;
// fp16 within the rounding the residual no longer goes through), and the pass must not fire where
// it would move more bytes (K <= Ch + Cx), on a strided or padded projection, a projection with an
// activation or a second reader, or a 3x3 conv3. The merged conv runs as a cuBLASLt GEMM like any
// pointwise conv (tests/gpu: GpuConvFp16.MergedProjectionShortcut).
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
};

std::string block_text(const Block& b) {
  const std::string t = b.dtype, k = std::to_string(b.k);
  const bool three = b.conv3_window == "3x3";
  std::string s = "input %x : " + t + "[2x16x6x5]\n const %w1 : " + t + "[8x16x1x1] = random(1)\n const %b1 : " + t +
                  "[8] = random(2)\n const %w3 : " + t + "[" + k + "x8x" + b.conv3_window + "] = random(3)\n const %b3 : " + t +
                  "[" + k + "] = random(4)\n const %wd : " + t + "[" + k + "x16x1x1] = random(5)\n const %bd : " + t + "[" + k +
                  "] = random(6)\n";
  s += " %c1 : " + t + "[?] = Conv(%x, %w1, %b1)  # conv1\n %h : " + t + "[?] = Relu(%c1)  # relu1\n";
  s += " %c3 : " + t + "[?] = Conv(%h, %w3, %b3)" + (three ? " {pads=[1,1,1,1]}" : "") + "  # conv3\n";
  s += " %d : " + t + "[?] = Conv(%x, %wd, %bd)" + (b.proj_attrs.empty() ? "" : " {" + b.proj_attrs + "}") + "  # downsample\n";
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
Expected<bool> pipeline(Graph& g, bool large = true) {
  if (large) g.target.aux_stream_max_bytes = 0;
  else g.target.aux_streams = 1;
  auto e = fuse_epilogue(g);
  if (!e) return e;
  auto l = layout_nhwc(g);
  if (!l) return l;
  return merge_projection_shortcut(g);
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

}  // namespace
}  // namespace aotc
