// slab_into_producer: in ResNet's merged projection at batch 1, h (the block's 3x3 output) is
// written in place by the cluster split-K convolution (concat_in_place), and that kernel also
// copies x's slab of the Concat, so the Concat lowers to no kernel. Checked on the nodes, the
// lowerings (the cluster kernel's slab holes and arguments, the Concat's empty step list), the CPU
// reference (the rewrite is physical only) and the memory plan. Must not fire: other convolution
// strategies (im2col + GEMM, CUTLASS), no in-place input, an input whose producer comes after the
// host. The lowering refuses slabs it cannot copy and strategies other than the cluster kernel
// refuse to be asked. GPU: GpuConvFp16.ConcatInPlaceEveryConvStrategy (variant 0) and
// GpuConvFp16.MergedStridedProjectionBatch1 run the copy; ResNet-50 batch 1 in the device script.
#include "ir/op_registry.h"
#include "opt/memory_plan.h"
#include "opt/passes.h"
#include "opt_test_util.h"

namespace aotc {
namespace {

using testing_util::op_list;

// x [1, 64, 14, 14]: h = relu(conv3x3(x)), y = relu(conv1x1(h) + conv1x1(x)) with 256 outputs:
// merge_projection_shortcut makes Concat(h, x) (128 channels, x at column 64 = 128 bytes).
const char* kBlock = R"(
  input %x : float16[1x64x14x14]
  const %w1 : float16[64x64x3x3] = random(1)
  const %b1 : float16[64] = random(2)
  const %w3 : float16[256x64x1x1] = random(3)
  const %b3 : float16[256] = random(4)
  const %wd : float16[256x64x1x1] = random(5)
  const %bd : float16[256] = random(6)
  %c1 : float16[?] = Conv(%x, %w1, %b1) {pads=[1,1,1,1]}  # conv1
  %h : float16[?] = Relu(%c1)  # relu1
  %c3 : float16[?] = Conv(%h, %w3, %b3)  # conv3
  %d : float16[?] = Conv(%x, %wd, %bd)  # downsample
  %s : float16[?] = Add(%c3, %d)  # add
  %y : float16[?] = Relu(%s)  # relu3
  output %y
)";

// The graph up to concat_in_place; `cluster` / `im2col`: the target's convolution strategies.
Graph prepared(bool cluster, bool im2col, bool in_place = true) {
  Graph g;
  auto parsed = testing_util::build(kBlock);
  EXPECT_TRUE(parsed.is_ok()) << parsed.status().message();
  if (parsed.is_ok()) g = std::move(*parsed);
  g.target.aux_stream_max_bytes = 0;
  g.target.conv_cluster_splitk = cluster;
  g.target.conv_im2col_gemm = im2col;
  for (auto pass : {fuse_epilogue, layout_nhwc, merge_projection_shortcut}) EXPECT_TRUE(pass(g).is_ok());
  if (in_place) {
    EXPECT_TRUE(concat_in_place(g).is_ok());
  }
  return g;
}

const Node* find_op(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

const Node& producer_of(const Graph& g, ValueId v) {
  return g.nodes[static_cast<size_t>(g.producers()[static_cast<size_t>(v)])];
}

std::string hole(const KernelStep& k, const std::string& name) {
  for (const auto& [h, v] : k.holes)
    if (h == name) return v;
  return "(none)";
}

TEST(SlabIntoProducer, TheClusterConvolutionCopiesXsSlab) {
  Graph g = prepared(true, true);
  const Node* cat = find_op(g, "Concat");
  ASSERT_NE(cat, nullptr) << op_list(g);
  const ValueId h = cat->inputs[0], x = cat->inputs[1], out = cat->outputs[0];
  ASSERT_EQ(g.value(h).stored_in, out) << "concat_in_place placed h";
  Graph before = g;
  auto changed = slab_into_producer(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().message();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(verify(g).is_ok());
  cat = find_op(g, "Concat");
  // The one record: input 1 (x) is copied by the producer of input 0 (h). The producer's node is
  // unchanged; its lowering derives source, destination, step and column from the Concat.
  EXPECT_EQ(cat->attr_ints("slab_copied"), (std::vector<int64_t>{1, 0}));
  const Node& conv = producer_of(g, h);
  EXPECT_EQ(conv.attrs.size(), producer_of(before, h).attrs.size());
  // The Concat copies nothing; the cluster kernel copies x into columns 64.. of out's rows.
  auto cl = default_registry().find("Concat", "")->lower(*cat, g);
  ASSERT_TRUE(cl.is_ok()) << cl.status().message();
  EXPECT_TRUE(cl->steps.empty());
  auto pl = default_registry().find(conv.op_type, conv.domain)->lower(conv, g);
  ASSERT_TRUE(pl.is_ok()) << pl.status().message();
  EXPECT_TRUE(pl->slab_copied);
  ASSERT_EQ(pl->steps.size(), 1u);
  const KernelStep& k = pl->steps[0].kernel;
  EXPECT_EQ(k.template_name, "conv_cluster_splitk_nhwc");
  EXPECT_EQ(hole(k, "SLAB"), "true");
  EXPECT_EQ(hole(k, "SLAB_C"), "64LL");
  EXPECT_EQ(hole(k, "SLAB_OUT_INNER"), "128LL");
  EXPECT_EQ(hole(k, "SLAB_OFFSET"), "64LL");
  EXPECT_EQ(hole(k, "SLAB_STEP"), "1LL");
  ASSERT_GE(k.args.size(), 7u);
  EXPECT_EQ(k.args[5], x);
  EXPECT_EQ(k.args[6], out);
  // The plan keeps out live from the convolution on (h lives in it) and x until the Concat.
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_TRUE(testing_util::same_outputs(before, g, 7, 0.0, 0.0));
  auto again = slab_into_producer(g);
  ASSERT_TRUE(again.is_ok());
  EXPECT_FALSE(*again) << "a second run changes nothing";
}

TEST(SlabIntoProducer, MustNotFire) {
  for (int variant = 1; variant < 3; ++variant) {
    SCOPED_TRACE(variant == 1 ? "im2col + cuBLASLt writes h: no slab copy there" : "CUTLASS writes h");
    Graph g = prepared(false, variant == 1);
    ASSERT_NE(find_op(g, "Concat"), nullptr) << op_list(g);
    auto c = slab_into_producer(g);
    ASSERT_TRUE(c.is_ok());
    EXPECT_FALSE(*c);
    for (const Node& n : g.nodes) EXPECT_FALSE(n.has_attr("slab_copied")) << n.name << ": a refused trial leaves nothing";
  }
  {
    SCOPED_TRACE("no input written in place (concat_in_place not run)");
    Graph g = prepared(true, true, false);
    auto c = slab_into_producer(g);
    ASSERT_TRUE(c.is_ok());
    EXPECT_FALSE(*c);
  }
  {
    SCOPED_TRACE("the slab's input is written after the host runs");
    Graph g = prepared(true, true);
    Node* cat = nullptr;
    for (Node& n : g.nodes)
      if (n.op_type == "Concat") cat = &n;
    ASSERT_NE(cat, nullptr);
    // Replace x by a value a node after the host (the 3x3) produces: Relu(x) placed just before
    // the Concat.
    const size_t at = static_cast<size_t>(std::find_if(g.nodes.begin(), g.nodes.end(),
                                                       [](const Node& n) { return n.op_type == "Concat"; }) -
                                          g.nodes.begin());
    Node late;
    late.op_type = "Relu";
    late.name = "late";
    late.inputs = {g.nodes[at].inputs[1]};
    const DType dt = g.value(late.inputs[0]).dtype;
    const Shape sh = g.value(late.inputs[0]).shape;
    const ValueId v = g.add_value(g.unique_name("late_x"), dt, sh);
    late.outputs = {v};
    g.nodes[at].inputs[1] = v;
    ASSERT_TRUE(default_registry().find("Relu", "")->infer(late, g).is_ok());
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(at), late);
    auto ok = verify(g);
    ASSERT_TRUE(ok.is_ok()) << ok.message();
    auto c = slab_into_producer(g);
    ASSERT_TRUE(c.is_ok());
    EXPECT_FALSE(*c);
  }
}

TEST(SlabIntoProducer, LoweringsRefuseWhatTheyCannotCopy) {
  Graph g = prepared(true, true);
  Node* cat = nullptr;
  for (Node& n : g.nodes)
    if (n.op_type == "Concat") cat = &n;
  ASSERT_NE(cat, nullptr);
  // Inputs z and w of 4 channels at columns 128 and 132 (rows of 136): z's pixels are 8 bytes, not
  // whole 16-byte vectors.
  const ValueId h = cat->inputs[0];
  for (const char* name : {"z", "w"}) {
    const ValueId v = g.add_value(name, DType::kFloat16, {1, 14, 14, 4});
    g.inputs.push_back(v);
    cat->inputs.push_back(v);
  }
  ASSERT_TRUE(default_registry().find("Concat", "")->infer(*cat, g).is_ok());
  const int p = g.producers()[static_cast<size_t>(h)];
  const Node& conv = g.nodes[static_cast<size_t>(p)];
  const OpDef* def = default_registry().find(conv.op_type, conv.domain);
  {
    SCOPED_TRACE("a slab that is not whole 16-byte vectors");
    cat->attrs["slab_copied"] = Attribute::of_ints({2, 0});
    auto l = def->lower(conv, g);
    ASSERT_FALSE(l.is_ok());
    EXPECT_NE(l.status().message().find("is not one this convolution kernel can copy"), std::string::npos)
        << l.status().message();
  }
  {
    SCOPED_TRACE("another strategy (im2col + cuBLASLt) refuses to be asked");
    cat->attrs["slab_copied"] = Attribute::of_ints({1, 0});
    auto ok = def->lower(conv, g);
    ASSERT_TRUE(ok.is_ok()) << ok.status().message() << ": positive control, the cluster kernel takes x";
    EXPECT_TRUE(ok->slab_copied);
    g.target.conv_cluster_splitk = false;
    auto l = def->lower(conv, g);
    ASSERT_FALSE(l.is_ok());
    EXPECT_NE(l.status().message().find("cluster split-K convolution only"), std::string::npos)
        << l.status().message();
  }
  {
    SCOPED_TRACE("an attribute naming another input's producer: this convolution is not asked");
    g.target.conv_cluster_splitk = true;
    cat->attrs["slab_copied"] = Attribute::of_ints({0, 1});
    auto l = def->lower(conv, g);
    ASSERT_TRUE(l.is_ok()) << l.status().message();
    EXPECT_FALSE(l->slab_copied);
  }
}

}  // namespace
}  // namespace aotc
